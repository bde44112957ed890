//! Models shaped like the ones real Rust services store (issue 16, item 7): an internally tagged
//! state machine inside a user, a whole-document enum collection (an audit log with an index on
//! one kind, notifications without `_id`, untagged contacts), a flattened status enum, a
//! composite and a newtype `_id`, a bounded map of tagged enums and a bounded set of structs,
//! serde helpers described by `#[schema(stored_as = T)]`, roots with no `_id` or an optional
//! one, externally and adjacently tagged payment data, an untagged enum with `Option<Enum>`,
//! `#[serde(default)]` and `rename_all = "camelCase"`, and a flattened bounded map.
//!
//! For each one, on the real server: the schema is applied; generated and hand-written values
//! covering every variant, written through the typed collection, are accepted and read back
//! equal; and documents broken one way each (a wrong tag, a missing field of a kind, a wrong
//! type, an over-bound collection, a field of another kind where closed) are refused, the typed
//! error naming the path and the rule, next to a valid control document that is accepted.

mod broken;
#[path = "../common/mod.rs"]
mod common;
mod server;

use common::live::{set_path, Live};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Debug;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::ValidationError;
use proptest::collection::{btree_set, hash_map, vec};
use proptest::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

// ---------------------------------------------------------------------------------------------
// (1) an internally tagged state machine inside a user document

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "status")]
pub enum EmailStatus {
    Verified,
    Pending {
        token: String,
        expiry: DateTime,
    },
    Moving {
        new_email: String,
        token: String,
        expiry: DateTime,
    },
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Member,
    Guest,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_users", additional_properties = false)]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(max_length = 100)]
    pub email: String,
    pub email_status: EmailStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[embed(max = 3)]
    pub roles: Vec<Role>,
}

// ---------------------------------------------------------------------------------------------
// (2) whole-document enums: an audit log (closed, an index on one kind), notifications whose
// kinds hold no `_id`, and untagged contacts

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_audit_log", additional_properties = false)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuditEvent {
    #[index(keys(user = 1, at = -1))]
    Login {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
        ip: String,
        mfa: bool,
    },
    PasswordChanged {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
    },
    RoleGranted {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        role: Role,
        by: String,
        at: DateTime,
    },
    #[serde(rename = "export")]
    DataExported {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
        #[embed(max = 3)]
        tables: Vec<String>,
    },
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_notifications")]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum Notification {
    Mention {
        user_id: i64,
        comment_id: i64,
        read: bool,
    },
    Digest {
        user_id: i64,
        #[embed(max = 5)]
        items: Vec<String>,
    },
    System {
        #[schema(max_length = 200)]
        message: String,
    },
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_contacts", additional_properties = false)]
#[serde(untagged)]
pub enum Contact {
    Person {
        #[serde(rename = "_id")]
        id: i64,
        first: String,
        last: String,
    },
    Company {
        #[serde(rename = "_id")]
        id: i64,
        name: String,
        vat: String,
    },
}

// ---------------------------------------------------------------------------------------------
// (3) a flattened status enum (`tag = "state"`) next to a flattened struct

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running {
        worker: String,
        started_at: DateTime,
    },
    Failed {
        error: String,
        attempts: u32,
    },
    Done {
        finished_at: DateTime,
    },
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Timestamps {
    pub created_at: DateTime,
    pub updated_at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_jobs", additional_properties = false)]
pub struct Job {
    #[serde(rename = "_id")]
    pub id: String,
    pub kind: String,
    #[serde(flatten)]
    pub status: JobState,
    #[serde(flatten)]
    pub times: Timestamps,
}

// ---------------------------------------------------------------------------------------------
// (4) a composite `_id`

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[schema(additional_properties = false)]
pub struct MemberKey {
    pub server: i64,
    pub user: i64,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: MemberKey,
    pub nickname: Option<String>,
    #[embed(max = 4)]
    pub roles: BTreeSet<i64>,
    pub joined_at: DateTime,
}

// ---------------------------------------------------------------------------------------------
// (5) a newtype `_id` (transparent), a plain newtype and a tuple struct

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(transparent)]
pub struct UserId(#[schema(pattern = "^u_[a-z0-9]+$")] String);

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Handle(#[schema(max_length = 15)] String);

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GeoPoint(f64, f64);

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_profiles")]
pub struct Profile {
    #[serde(rename = "_id")]
    pub id: UserId,
    pub handle: Handle,
    pub referrer: Option<UserId>,
    pub location: Option<GeoPoint>,
    #[embed(max = 3)]
    pub friends: Vec<UserId>,
}

// ---------------------------------------------------------------------------------------------
// (6) a bounded map of internally tagged enums and a bounded set of structs

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Channel {
    Email {
        address: String,
    },
    Sms {
        phone_number: String,
    },
    Push {
        device_token: String,
        show_badge: bool,
    },
    Off,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Color {
    Red,
    Green,
    Blue,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tag {
    #[schema(max_length = 20)]
    pub name: String,
    pub color: Color,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_preferences")]
pub struct Preferences {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[embed(max = 10)]
    pub channels: HashMap<String, Channel>,
    #[embed(max = 4)]
    pub tags: BTreeSet<Tag>,
    pub on_alert: Action,
}

/// Internally tagged, wrapping another internally tagged enum (two tags in one document), with
/// an optional field skipped when `None`.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    Notify(Channel),
    Webhook {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secret: Option<String>,
    },
    Ignore,
}

// ---------------------------------------------------------------------------------------------
// (7) serde helpers: custom `serialize_with`/`with`, a hand-written `Serialize`, `into`

mod cents {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(cents: &i64, s: S) -> Result<S::Ok, S::Error> {
        let sign = if *cents < 0 { "-" } else { "" };
        let abs = cents.unsigned_abs();
        s.serialize_str(&format!("{sign}{}.{:02}", abs / 100, abs % 100))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        let text = String::deserialize(d)?;
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.as_str()),
        };
        let (units, hundredths) = digits
            .split_once('.')
            .ok_or_else(|| serde::de::Error::custom("no decimal point"))?;
        let units: i64 = units.parse().map_err(serde::de::Error::custom)?;
        let hundredths: i64 = hundredths.parse().map_err(serde::de::Error::custom)?;
        let abs = units * 100 + hundredths;
        Ok(if negative { -abs } else { abs })
    }
}

/// A `DateTime` stored as whole seconds since the epoch (an `i64`).
mod unix_seconds {
    use mongo_schema::bson::DateTime;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &DateTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(at.timestamp_millis() / 1000)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime, D::Error> {
        Ok(DateTime::from_millis(i64::deserialize(d)? * 1000))
    }
}

/// A version with a hand-written `Serialize`: stored as `"major.minor.patch"`.
#[derive(BsonSchema, Clone, Debug, PartialEq)]
#[schema(stored_as = String)]
pub struct SemVer {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl Serialize for SemVer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}.{}.{}", self.major, self.minor, self.patch))
    }
}

impl<'de> Deserialize<'de> for SemVer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let parts: Vec<u16> = text
            .split('.')
            .map(|p| p.parse().map_err(serde::de::Error::custom))
            .collect::<Result<_, _>>()?;
        match parts[..] {
            [major, minor, patch] => Ok(SemVer {
                major,
                minor,
                patch,
            }),
            _ => Err(serde::de::Error::custom("not major.minor.patch")),
        }
    }
}

/// Stored as the string `vendor-code` through `into`/`try_from`.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(into = "String", try_from = "String")]
pub struct Sku {
    pub vendor: String,
    pub code: String,
}

impl From<Sku> for String {
    fn from(sku: Sku) -> String {
        format!("{}-{}", sku.vendor, sku.code)
    }
}

impl TryFrom<String> for Sku {
    type Error = String;
    fn try_from(text: String) -> Result<Sku, String> {
        let (vendor, code) = text.split_once('-').ok_or("no dash")?;
        Ok(Sku {
            vendor: vendor.to_owned(),
            code: code.to_owned(),
        })
    }
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_invoices", additional_properties = false)]
pub struct Invoice {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(
        serialize_with = "cents::serialize",
        deserialize_with = "cents::deserialize"
    )]
    #[schema(stored_as = String, pattern = "^-?[0-9]+\\.[0-9]{2}$")]
    pub total: i64,
    #[serde(with = "unix_seconds")]
    #[schema(stored_as = i64)]
    pub due: DateTime,
    pub api_version: SemVer,
    pub sku: Sku,
}

// ---------------------------------------------------------------------------------------------
// (8) a root with no `_id` field, and one with `Option<ObjectId>` skipped when `None`

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_page_views", additional_properties = false)]
pub struct PageView {
    #[schema(max_length = 200)]
    pub path: String,
    pub at: DateTime,
    #[embed(max = 3)]
    pub referrers: Vec<String>,
    pub duration_ms: Option<i64>,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_comments", additional_properties = false)]
pub struct Comment {
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub id: Option<ObjectId>,
    pub author: String,
    pub body: String,
    pub likes: i32,
}

// ---------------------------------------------------------------------------------------------
// (9) an externally tagged payment method and an adjacently tagged event payload

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum CardBrand {
    Visa,
    Mastercard,
    Amex,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Voucher {
    pub code: String,
    #[schema(minimum = 0)]
    pub value: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum PaymentMethod {
    Cash,
    Card {
        #[schema(pattern = "^[0-9]{4}$")]
        last4: String,
        brand: CardBrand,
    },
    BankTransfer(#[schema(max_length = 34)] String),
    Split(i64, i64),
    Voucher(Voucher),
    Wallets(#[embed(max = 3)] Vec<String>),
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum PaymentEvent {
    Created,
    Authorized { amount: i64, currency: String },
    Captured(i64),
    Refunded(i64, String),
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_payments")]
pub struct Payment {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub method: PaymentMethod,
    #[embed(max = 4)]
    pub events: Vec<PaymentEvent>,
    pub last_event: PaymentEvent,
}

// ---------------------------------------------------------------------------------------------
// (10) an untagged enum, `Option<Enum>` fields, `#[serde(default)]`, `rename_all = "camelCase"`

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Assignee {
    Id(i64),
    Name(#[schema(max_length = 30)] String),
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub enum Priority {
    Low,
    Normal,
    VeryHigh,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_tickets", additional_properties = false)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(alias = "name")]
    pub title: String,
    pub assignee: Option<Assignee>,
    pub priority: Option<Priority>,
    pub previous_state: Option<JobState>,
    #[serde(default)]
    pub reopen_count: i32,
    #[serde(default)]
    #[embed(max = 3)]
    pub watchers: Vec<Assignee>,
    pub created_at: DateTime,
    pub source: Source,
}

/// Known unit variants and an untagged fallback for any other string.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum Source {
    Email,
    Web,
    #[serde(untagged)]
    Other(#[schema(max_length = 20)] String),
}

// ---------------------------------------------------------------------------------------------
// (11) a flattened bounded map: a tenant's settings with free-form extra keys

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_tenant_settings")]
pub struct TenantSettings {
    #[serde(rename = "_id")]
    pub id: String,
    pub plan: Role,
    #[serde(flatten)]
    #[embed(max = 3)]
    pub extra: BTreeMap<String, String>,
}

// ---------------------------------------------------------------------------------------------
// (12) a closed whole-document enum whose kinds hold `Option<ObjectId>` skipped when `None`

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_reminders", additional_properties = false)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Reminder {
    #[index(keys(user_id = 1, at = 1))]
    OnceAt {
        #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
        id: Option<ObjectId>,
        user_id: i64,
        at: DateTime,
    },
    Daily {
        #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
        id: Option<ObjectId>,
        user_id: i64,
        #[schema(maximum = 23)]
        hour: u8,
    },
}

impl Reminder {
    fn with_id(self, new: ObjectId) -> Reminder {
        match self {
            Reminder::OnceAt { user_id, at, .. } => Reminder::OnceAt {
                id: Some(new),
                user_id,
                at,
            },
            Reminder::Daily { user_id, hour, .. } => Reminder::Daily {
                id: Some(new),
                user_id,
                hour,
            },
        }
    }

    fn id(&self) -> Option<ObjectId> {
        match self {
            Reminder::OnceAt { id, .. } | Reminder::Daily { id, .. } => *id,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (13) a whole-document enum whose kinds flatten a common part, and (14) a catalog item with a
// flattened `Option` struct, a tagged newtype variant wrapping a struct that flattens another,
// a bounded array of pairs, a boxed optional struct, a kebab-case enum skipping an empty array
// and an untagged enum of struct shapes

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ActivityBase {
    pub actor: String,
    pub at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_activities", additional_properties = false)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Activity {
    Commented {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[serde(flatten)]
        base: ActivityBase,
        #[schema(max_length = 500)]
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<ObjectId>,
    },
    Liked {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[serde(flatten)]
        base: ActivityBase,
    },
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Meta {
    pub source: String,
    pub imported_at: DateTime,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Dimensions {
    pub width: f64,
    pub height: f64,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Boxed {
    pub label: String,
    #[serde(flatten)]
    pub size: Dimensions,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Packaging {
    Loose,
    InABox(Boxed),
    OnPallet {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[embed(max = 3)]
        stacked_with: Vec<String>,
    },
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Price {
    Fixed { amount: i64 },
    Range { min: i64, max: i64 },
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Attr(String, i64);

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Address {
    pub city: String,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_catalog")]
pub struct CatalogItem {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub packaging: Packaging,
    pub price: Price,
    // a plain tuple `(String, i64)` has no `BsonSchema` (only tuple structs do)
    #[embed(max = 3)]
    pub attributes: Vec<Attr>,
    pub warehouse: Option<Box<Address>>,
    #[serde(flatten)]
    pub meta: Option<Meta>,
}

// ---------------------------------------------------------------------------------------------
// (15) a transparent newtype of ObjectId as `_id`, a UUID, an optional `with =` helper and an
// enum with a hand-written `Serialize` stored as a number

#[derive(BsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(transparent)]
pub struct ShipmentId(ObjectId);

/// An optional `DateTime` stored as whole seconds (`None`: the field is skipped).
mod opt_seconds {
    use mongo_schema::bson::DateTime;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &Option<DateTime>, s: S) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => s.serialize_i64(at.timestamp_millis() / 1000),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime>, D::Error> {
        Ok(Option::<i64>::deserialize(d)?.map(|s| DateTime::from_millis(s * 1000)))
    }
}

/// Stored as its numeric code.
#[derive(BsonSchema, Clone, Copy, Debug, PartialEq)]
#[schema(stored_as = i32)]
pub enum Level {
    Low = 1,
    Medium = 2,
    High = 3,
}

impl Serialize for Level {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(*self as i32)
    }
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match i32::deserialize(d)? {
            1 => Ok(Level::Low),
            2 => Ok(Level::Medium),
            3 => Ok(Level::High),
            n => Err(serde::de::Error::custom(format!("no level {n}"))),
        }
    }
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "shape_shipments", additional_properties = false)]
pub struct Shipment {
    #[serde(rename = "_id")]
    pub id: ShipmentId,
    pub tracking: mongo_schema::bson::Uuid,
    #[serde(default, with = "opt_seconds", skip_serializing_if = "Option::is_none")]
    #[schema(stored_as = Option<i64>)]
    pub delivered_at: Option<DateTime>,
    // neither `#[schema(stored_as = i32, minimum = 1, maximum = 3)]` on `Level` nor
    // `#[schema(minimum = 1, maximum = 3)]` here is accepted: a type stored as a number cannot be
    // given a range, so any int passes (a code serde cannot read among them)
    pub level: Level,
}

// ---------------------------------------------------------------------------------------------
// strategies

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Z0-9 é-]{{0,{max}}}")).unwrap()
}

fn date() -> impl Strategy<Value = DateTime> {
    (0i64..4_102_444_800_000).prop_map(DateTime::from_millis)
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Admin), Just(Role::Member), Just(Role::Guest)]
}

fn email_status() -> impl Strategy<Value = EmailStatus> {
    prop_oneof![
        Just(EmailStatus::Verified),
        (text(20), date()).prop_map(|(token, expiry)| EmailStatus::Pending { token, expiry }),
        ("[a-z]{1,8}@[a-z]{1,8}\\.io", text(20), date()).prop_map(|(new_email, token, expiry)| {
            EmailStatus::Moving {
                new_email,
                token,
                expiry,
            }
        }),
    ]
}

fn user() -> impl Strategy<Value = User> {
    (
        "[a-z]{1,20}@[a-z]{1,20}\\.org",
        email_status(),
        proptest::option::of(text(20)),
        vec(role(), 0..=3),
    )
        .prop_map(|(email, email_status, display_name, roles)| User {
            id: ObjectId::new(),
            email,
            email_status,
            display_name,
            roles,
        })
}

fn audit_event() -> impl Strategy<Value = AuditEvent> {
    let user = || "[a-z]{1,10}";
    prop_oneof![
        (
            user(),
            date(),
            "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}",
            any::<bool>()
        )
            .prop_map(|(user, at, ip, mfa)| AuditEvent::Login {
                id: ObjectId::new(),
                user,
                at,
                ip,
                mfa
            }),
        (user(), date()).prop_map(|(user, at)| AuditEvent::PasswordChanged {
            id: ObjectId::new(),
            user,
            at
        }),
        (user(), role(), user(), date()).prop_map(|(user, role, by, at)| {
            AuditEvent::RoleGranted {
                id: ObjectId::new(),
                user,
                role,
                by,
                at,
            }
        }),
        (user(), date(), vec("[a-z_]{1,10}", 0..=3)).prop_map(|(user, at, tables)| {
            AuditEvent::DataExported {
                id: ObjectId::new(),
                user,
                at,
                tables,
            }
        }),
    ]
}

fn notification() -> impl Strategy<Value = Notification> {
    prop_oneof![
        (any::<i64>(), any::<i64>(), any::<bool>()).prop_map(|(user_id, comment_id, read)| {
            Notification::Mention {
                user_id,
                comment_id,
                read,
            }
        }),
        (any::<i64>(), vec(text(10), 0..=5))
            .prop_map(|(user_id, items)| Notification::Digest { user_id, items }),
        text(200).prop_map(|message| Notification::System { message }),
    ]
}

fn contact() -> impl Strategy<Value = Contact> {
    prop_oneof![
        (any::<i64>(), text(10), text(10)).prop_map(|(id, first, last)| Contact::Person {
            id,
            first,
            last
        }),
        (any::<i64>(), text(10), "[A-Z]{2}[0-9]{8}")
            .prop_map(|(id, name, vat)| { Contact::Company { id, name, vat } }),
    ]
}

fn job_state() -> impl Strategy<Value = JobState> {
    prop_oneof![
        Just(JobState::Queued),
        (text(10), date())
            .prop_map(|(worker, started_at)| JobState::Running { worker, started_at }),
        (text(30), any::<u32>()).prop_map(|(error, attempts)| JobState::Failed { error, attempts }),
        date().prop_map(|finished_at| JobState::Done { finished_at }),
    ]
}

fn job() -> impl Strategy<Value = Job> {
    ("[a-z0-9]{12}", text(10), job_state(), date(), date()).prop_map(
        |(id, kind, status, created_at, updated_at)| Job {
            id,
            kind,
            status,
            times: Timestamps {
                created_at,
                updated_at,
            },
        },
    )
}

fn member() -> impl Strategy<Value = Member> {
    (
        any::<i64>(),
        any::<i64>(),
        proptest::option::of(text(12)),
        btree_set(any::<i64>(), 0..=4),
        date(),
    )
        .prop_map(|(server, user, nickname, roles, joined_at)| Member {
            id: MemberKey { server, user },
            nickname,
            roles,
            joined_at,
        })
}

fn user_id() -> impl Strategy<Value = UserId> {
    "u_[a-z0-9]{1,12}".prop_map(UserId)
}

fn profile() -> impl Strategy<Value = Profile> {
    (
        user_id(),
        "[a-z_]{0,15}",
        proptest::option::of(user_id()),
        proptest::option::of((-90.0f64..90.0, -180.0f64..180.0)),
        vec(user_id(), 0..=3),
    )
        .prop_map(|(id, handle, referrer, location, friends)| Profile {
            id,
            handle: Handle(handle),
            referrer,
            location: location.map(|(a, b)| GeoPoint(a, b)),
            friends,
        })
}

fn channel() -> impl Strategy<Value = Channel> {
    prop_oneof![
        "[a-z]{1,8}@[a-z]{1,8}\\.io".prop_map(|address| Channel::Email { address }),
        "\\+[0-9]{6,12}".prop_map(|phone_number| Channel::Sms { phone_number }),
        ("[a-f0-9]{16}", any::<bool>()).prop_map(|(device_token, show_badge)| Channel::Push {
            device_token,
            show_badge
        }),
        Just(Channel::Off),
    ]
}

fn tag() -> impl Strategy<Value = Tag> {
    (
        "[a-z]{0,20}",
        prop_oneof![Just(Color::Red), Just(Color::Green), Just(Color::Blue)],
    )
        .prop_map(|(name, color)| Tag { name, color })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        channel().prop_map(Action::Notify),
        (
            "https://[a-z]{1,10}\\.io/[a-z]{0,8}",
            proptest::option::of("[a-f0-9]{8}")
        )
            .prop_map(|(url, secret)| Action::Webhook { url, secret }),
        Just(Action::Ignore),
    ]
}

fn preferences() -> impl Strategy<Value = Preferences> {
    (
        hash_map("[a-z]{1,8}", channel(), 0..=10),
        btree_set(tag(), 0..=4),
        action(),
    )
        .prop_map(|(channels, tags, on_alert)| Preferences {
            id: ObjectId::new(),
            channels,
            tags,
            on_alert,
        })
}

fn source() -> impl Strategy<Value = Source> {
    prop_oneof![
        Just(Source::Email),
        Just(Source::Web),
        // any other name reads back as `Other` (a known name would read back as its variant)
        "[a-z][a-z0-9]{0,19}".prop_map(Source::Other),
    ]
}

fn activity() -> impl Strategy<Value = Activity> {
    let base = || ("[a-z]{1,8}", date()).prop_map(|(actor, at)| ActivityBase { actor, at });
    prop_oneof![
        (base(), text(500), any::<bool>()).prop_map(|(base, text, reply)| {
            Activity::Commented {
                id: ObjectId::new(),
                base,
                text,
                reply_to: reply.then(ObjectId::new),
            }
        }),
        base().prop_map(|base| Activity::Liked {
            id: ObjectId::new(),
            base
        }),
    ]
}

fn catalog_item() -> impl Strategy<Value = CatalogItem> {
    let packaging = prop_oneof![
        Just(Packaging::Loose),
        (text(10), 0.0f64..1e3, 0.0f64..1e3).prop_map(|(label, width, height)| {
            Packaging::InABox(Boxed {
                label,
                size: Dimensions { width, height },
            })
        }),
        vec("[a-z]{1,5}", 0..=3).prop_map(|stacked_with| Packaging::OnPallet { stacked_with }),
    ];
    let price = prop_oneof![
        any::<i64>().prop_map(|amount| Price::Fixed { amount }),
        (any::<i64>(), any::<i64>()).prop_map(|(min, max)| Price::Range { min, max }),
    ];
    (
        packaging,
        price,
        vec(
            ("[a-z]{1,6}", any::<i64>()).prop_map(|(k, v)| Attr(k, v)),
            0..=3,
        ),
        proptest::option::of(text(10).prop_map(|city| Box::new(Address { city }))),
        proptest::option::of((text(10), date()).prop_map(|(source, imported_at)| Meta {
            source,
            imported_at,
        })),
    )
        .prop_map(
            |(packaging, price, attributes, warehouse, meta)| CatalogItem {
                id: ObjectId::new(),
                packaging,
                price,
                attributes,
                warehouse,
                meta,
            },
        )
}

fn shipment() -> impl Strategy<Value = Shipment> {
    (
        any::<[u8; 16]>(),
        proptest::option::of((0i64..4_000_000_000).prop_map(|s| DateTime::from_millis(s * 1000))),
        prop_oneof![Just(Level::Low), Just(Level::Medium), Just(Level::High)],
    )
        .prop_map(|(bytes, delivered_at, level)| Shipment {
            id: ShipmentId(ObjectId::new()),
            tracking: mongo_schema::bson::Uuid::from_bytes(bytes),
            delivered_at,
            level,
        })
}

fn reminder() -> impl Strategy<Value = Reminder> {
    prop_oneof![
        (any::<bool>(), any::<i64>(), date()).prop_map(|(with_id, user_id, at)| {
            Reminder::OnceAt {
                id: with_id.then(ObjectId::new),
                user_id,
                at,
            }
        }),
        (any::<bool>(), any::<i64>(), 0u8..=23).prop_map(|(with_id, user_id, hour)| {
            Reminder::Daily {
                id: with_id.then(ObjectId::new),
                user_id,
                hour,
            }
        }),
    ]
}

fn invoice() -> impl Strategy<Value = Invoice> {
    (
        any::<i64>(),
        any::<i64>(),
        (-1_000_000_000i64..1_000_000_000).prop_map(|s| DateTime::from_millis(s * 1000)),
        any::<(u16, u16, u16)>(),
        ("[A-Z]{2,4}", "[a-z0-9-]{1,8}"),
    )
        .prop_map(
            |(id, total, due, (major, minor, patch), (vendor, code))| Invoice {
                id,
                total,
                due,
                api_version: SemVer {
                    major,
                    minor,
                    patch,
                },
                sku: Sku { vendor, code },
            },
        )
}

fn page_view() -> impl Strategy<Value = PageView> {
    (
        "/[a-z/]{0,40}",
        date(),
        vec("https://[a-z]{1,10}\\.com", 0..=3),
        proptest::option::of(0i64..1_000_000),
    )
        .prop_map(|(path, at, referrers, duration_ms)| PageView {
            path,
            at,
            referrers,
            duration_ms,
        })
}

fn comment() -> impl Strategy<Value = Comment> {
    (any::<bool>(), text(10), text(100), any::<i32>()).prop_map(|(with_id, author, body, likes)| {
        Comment {
            id: with_id.then(ObjectId::new),
            author,
            body,
            likes,
        }
    })
}

fn payment_method() -> impl Strategy<Value = PaymentMethod> {
    prop_oneof![
        Just(PaymentMethod::Cash),
        (
            "[0-9]{4}",
            prop_oneof![
                Just(CardBrand::Visa),
                Just(CardBrand::Mastercard),
                Just(CardBrand::Amex)
            ]
        )
            .prop_map(|(last4, brand)| PaymentMethod::Card { last4, brand }),
        "[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}".prop_map(PaymentMethod::BankTransfer),
        (any::<i64>(), any::<i64>()).prop_map(|(a, b)| PaymentMethod::Split(a, b)),
        ("[A-Z0-9]{6}", 0i64..i64::MAX)
            .prop_map(|(code, value)| PaymentMethod::Voucher(Voucher { code, value })),
        vec("[a-z]{1,8}", 0..=3).prop_map(PaymentMethod::Wallets),
    ]
}

fn payment_event() -> impl Strategy<Value = PaymentEvent> {
    prop_oneof![
        Just(PaymentEvent::Created),
        (any::<i64>(), "[A-Z]{3}")
            .prop_map(|(amount, currency)| PaymentEvent::Authorized { amount, currency }),
        any::<i64>().prop_map(PaymentEvent::Captured),
        (any::<i64>(), text(20)).prop_map(|(a, why)| PaymentEvent::Refunded(a, why)),
    ]
}

fn payment() -> impl Strategy<Value = Payment> {
    (
        payment_method(),
        vec(payment_event(), 0..=4),
        payment_event(),
    )
        .prop_map(|(method, events, last_event)| Payment {
            id: ObjectId::new(),
            method,
            events,
            last_event,
        })
}

fn assignee() -> impl Strategy<Value = Assignee> {
    prop_oneof![
        any::<i64>().prop_map(Assignee::Id),
        // a name that reads back as a name (not a number)
        "[a-z][a-z ]{0,29}".prop_map(Assignee::Name),
    ]
}

fn ticket() -> impl Strategy<Value = Ticket> {
    (
        any::<i64>(),
        text(40),
        proptest::option::of(assignee()),
        proptest::option::of(prop_oneof![
            Just(Priority::Low),
            Just(Priority::Normal),
            Just(Priority::VeryHigh)
        ]),
        proptest::option::of(job_state()),
        any::<i32>(),
        vec(assignee(), 0..=3),
        date(),
        source(),
    )
        .prop_map(
            |(
                id,
                title,
                assignee,
                priority,
                previous_state,
                reopen_count,
                watchers,
                created_at,
                source,
            )| {
                Ticket {
                    source,
                    id,
                    title,
                    assignee,
                    priority,
                    previous_state,
                    reopen_count,
                    watchers,
                    created_at,
                }
            },
        )
}

fn tenant_settings() -> impl Strategy<Value = TenantSettings> {
    (
        "[a-z0-9]{10}",
        role(),
        proptest::collection::btree_map("x_[a-z]{1,6}", text(10), 0..=3),
    )
        .prop_map(|(id, plan, extra)| TenantSettings { id, plan, extra })
}

// ---------------------------------------------------------------------------------------------
// the server

fn live(prefix: &str) -> Live {
    Live::new(
        prefix,
        Schema::new()
            .model::<User>()
            .model::<AuditEvent>()
            .model::<Notification>()
            .model::<Contact>()
            .model::<Job>()
            .model::<Member>()
            .model::<Profile>()
            .model::<Preferences>()
            .model::<Invoice>()
            .model::<PageView>()
            .model::<Comment>()
            .model::<Payment>()
            .model::<Ticket>()
            .model::<TenantSettings>()
            .model::<Reminder>()
            .model::<Activity>()
            .model::<CatalogItem>()
            .model::<Shipment>()
            .build()
            .unwrap(),
    )
}

fn config() -> ProptestConfig {
    common::live::config(40)
}

/// Whether a driver error is a duplicate key (two generated values can share an id).
fn duplicate(error: &mongo_schema::Error) -> bool {
    matches!(error, mongo_schema::Error::Duplicate { .. })
}
