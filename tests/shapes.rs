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

mod common;

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

/// Writes `value` through the typed collection of `T`, reads it back by the id the server
/// reports (the model's own or the one the server assigned) and returns what was read, with the
/// `_id` removed when the model has none. `Ok(None)`: a generated id was already taken.
async fn write_and_read<T>(db: &mongodb::Database, value: &T) -> Result<Option<T>, String>
where
    T: mongo_schema::Document + Serialize + serde::de::DeserializeOwned + Send + Sync + Debug,
{
    let typed = T::collection(db);
    let id = match typed.insert_one(value).await.in_collection(T::COLLECTION) {
        Ok(result) => result.inserted_id,
        Err(e) if duplicate(&e) => return Ok(None),
        Err(e) => return Err(format!("{e}\n{value:?}")),
    };
    let read = typed
        .find_one(doc! { "_id": id })
        .await
        .map_err(|e| format!("{e}\n{value:?}"))?
        .ok_or_else(|| format!("not found: {value:?}"))?;
    Ok(Some(read))
}

/// One value of every model.
type AllModels = (
    (
        User,
        AuditEvent,
        Notification,
        Contact,
        Job,
        Member,
        Profile,
    ),
    (
        Preferences,
        Invoice,
        PageView,
        Comment,
        Payment,
        Ticket,
        TenantSettings,
    ),
    Reminder,
    (Activity, CatalogItem, Shipment),
);

/// Every value of every model, written and read back.
async fn round_trip_all(db: &mongodb::Database, values: AllModels) -> Result<(), TestCaseError> {
    let ((user, audit, notification, contact, job, member, profile), rest, reminder, probes) =
        values;
    let (activity, catalog_item, shipment) = probes;
    let (preferences, invoice, page_view, comment, payment, ticket, settings) = rest;
    macro_rules! check {
        ($value:expr) => {{
            let value = $value;
            match write_and_read(db, &value)
                .await
                .map_err(TestCaseError::fail)?
            {
                Some(read) => prop_assert_eq!(read, value),
                None => {}
            }
        }};
    }
    check!(user);
    check!(audit);
    // no `_id` in the kinds: serde ignores the server's `_id` when reading back
    check!(notification);
    check!(contact);
    check!(job);
    check!(member);
    check!(profile);
    check!(preferences);
    check!(invoice);
    // no `_id` field: read back by the id the server assigned
    check!(page_view);
    // `None` is not written: the server assigns the id, read back as `Some(id)`
    {
        let typed = Comment::collection(db);
        let id = typed
            .insert_one(&comment)
            .await
            .in_collection(Comment::COLLECTION)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{comment:?}")))?
            .inserted_id;
        let read = typed.find_one(doc! { "_id": &id }).await.unwrap().unwrap();
        let expected = Comment {
            id: Some(id.as_object_id().expect("an ObjectId")),
            ..comment
        };
        prop_assert_eq!(read, expected);
    }
    check!(payment);
    check!(ticket);
    check!(settings);
    check!(activity);
    check!(catalog_item);
    check!(shipment);
    // a kind whose `_id` is `None`: the server assigns it, read back as `Some(id)`
    {
        let typed = Reminder::collection(db);
        let id = typed
            .insert_one(&reminder)
            .await
            .in_collection(Reminder::COLLECTION)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{reminder:?}")))?
            .inserted_id
            .as_object_id()
            .expect("an ObjectId");
        if let Some(own) = reminder.id() {
            prop_assert_eq!(own, id);
        }
        let read = typed.find_one(doc! { "_id": id }).await.unwrap().unwrap();
        prop_assert_eq!(read, reminder.with_id(id));
    }
    Ok(())
}

#[test]
fn generated_values_of_every_model_are_accepted_and_read_back_equal() {
    let live = live("shapes_ok");
    let accepted = std::cell::Cell::new(0);
    let models = (
        (
            user(),
            audit_event(),
            notification(),
            contact(),
            job(),
            member(),
            profile(),
        ),
        (
            preferences(),
            invoice(),
            page_view(),
            comment(),
            payment(),
            ticket(),
            tenant_settings(),
        ),
        reminder(),
        (activity(), catalog_item(), shipment()),
    );
    proptest!(config(), |(values in models)| {
        live.runtime.block_on(round_trip_all(&live.db, values))?;
        accepted.set(accepted.get() + 1);
    });
    println!(
        "{} generated values of each of the 18 models accepted and read back equal",
        accepted.get()
    );
    assert_eq!(accepted.get(), 40, "every one of the 40 cases");
}

/// Hand-written values: every variant of every enum at least once, whatever the generator draws.
#[test]
fn every_variant_written_by_hand_is_accepted_and_read_back_equal() {
    let live = live("shapes_variants");
    let at = DateTime::from_millis(1_700_000_000_000);
    let users: Vec<User> = [
        EmailStatus::Verified,
        EmailStatus::Pending {
            token: "t".into(),
            expiry: at,
        },
        EmailStatus::Moving {
            new_email: "b@c.io".into(),
            token: "t".into(),
            expiry: at,
        },
    ]
    .into_iter()
    .map(|email_status| User {
        id: ObjectId::new(),
        email: "a@b.io".into(),
        email_status,
        display_name: Some("Ada".into()),
        roles: vec![Role::Admin, Role::Member, Role::Guest],
    })
    .collect();
    let audit = vec![
        AuditEvent::Login {
            id: ObjectId::new(),
            user: "ada".into(),
            at,
            ip: "10.0.0.1".into(),
            mfa: true,
        },
        AuditEvent::PasswordChanged {
            id: ObjectId::new(),
            user: "ada".into(),
            at,
        },
        AuditEvent::RoleGranted {
            id: ObjectId::new(),
            user: "bob".into(),
            role: Role::Admin,
            by: "ada".into(),
            at,
        },
        AuditEvent::DataExported {
            id: ObjectId::new(),
            user: "ada".into(),
            at,
            tables: vec!["users".into(), "orders".into()],
        },
    ];
    let notifications = vec![
        Notification::Mention {
            user_id: 1,
            comment_id: 2,
            read: false,
        },
        Notification::Digest {
            user_id: 1,
            items: vec!["a".into(); 5],
        },
        Notification::System {
            message: "maintenance at noon".into(),
        },
    ];
    let contacts = vec![
        Contact::Person {
            id: 1,
            first: "Ada".into(),
            last: "Lovelace".into(),
        },
        Contact::Company {
            id: 2,
            name: "ACME".into(),
            vat: "DE12345678".into(),
        },
    ];
    let jobs: Vec<Job> = [
        JobState::Queued,
        JobState::Running {
            worker: "w1".into(),
            started_at: at,
        },
        JobState::Failed {
            error: "timeout".into(),
            attempts: u32::MAX,
        },
        JobState::Done { finished_at: at },
    ]
    .into_iter()
    .enumerate()
    .map(|(i, status)| Job {
        id: format!("job{i}"),
        kind: "email".into(),
        status,
        times: Timestamps {
            created_at: at,
            updated_at: at,
        },
    })
    .collect();
    let channels: HashMap<String, Channel> = [
        (
            "work".to_owned(),
            Channel::Email {
                address: "a@b.io".into(),
            },
        ),
        (
            "mobile".to_owned(),
            Channel::Sms {
                phone_number: "+4912345".into(),
            },
        ),
        (
            "phone".to_owned(),
            Channel::Push {
                device_token: "abc".into(),
                show_badge: true,
            },
        ),
        ("fax".to_owned(), Channel::Off),
    ]
    .into_iter()
    .collect();
    let actions = [
        Action::Notify(Channel::Push {
            device_token: "abc".into(),
            show_badge: false,
        }),
        Action::Notify(Channel::Off),
        Action::Webhook {
            url: "https://x.io/hook".into(),
            secret: Some("s3cret".into()),
        },
        Action::Webhook {
            url: "https://x.io/hook".into(),
            secret: None,
        },
        Action::Ignore,
    ];
    let preferences = |on_alert: Action| Preferences {
        id: ObjectId::new(),
        on_alert,
        channels: channels.clone(),
        tags: [
            Tag {
                name: "vip".into(),
                color: Color::Red,
            },
            Tag {
                name: "vip".into(),
                color: Color::Green,
            },
            Tag {
                name: "beta".into(),
                color: Color::Blue,
            },
        ]
        .into_iter()
        .collect(),
    };
    let payments: Vec<Payment> = [
        PaymentMethod::Cash,
        PaymentMethod::Card {
            last4: "4242".into(),
            brand: CardBrand::Amex,
        },
        PaymentMethod::BankTransfer("DE89370400440532013000".into()),
        PaymentMethod::Split(100, -5),
        PaymentMethod::Voucher(Voucher {
            code: "X1".into(),
            value: 5,
        }),
        PaymentMethod::Wallets(vec!["apple".into(), "google".into(), "paypal".into()]),
    ]
    .into_iter()
    .map(|method| Payment {
        id: ObjectId::new(),
        method,
        events: vec![
            PaymentEvent::Created,
            PaymentEvent::Authorized {
                amount: 100,
                currency: "EUR".into(),
            },
            PaymentEvent::Captured(100),
            PaymentEvent::Refunded(5, "damaged".into()),
        ],
        last_event: PaymentEvent::Refunded(5, "damaged".into()),
    })
    .collect();
    let tickets = vec![
        Ticket {
            id: 1,
            title: "a".into(),
            assignee: Some(Assignee::Id(7)),
            priority: Some(Priority::VeryHigh),
            previous_state: Some(JobState::Failed {
                error: "x".into(),
                attempts: 2,
            }),
            reopen_count: 0,
            watchers: vec![Assignee::Id(1), Assignee::Name("bob".into())],
            created_at: at,
            source: Source::Email,
        },
        Ticket {
            id: 2,
            title: "b".into(),
            assignee: Some(Assignee::Name("ada".into())),
            priority: None,
            previous_state: None,
            reopen_count: 3,
            watchers: vec![],
            created_at: at,
            source: Source::Web,
        },
        Ticket {
            id: 3,
            title: "c".into(),
            assignee: None,
            priority: Some(Priority::Low),
            previous_state: Some(JobState::Queued),
            reopen_count: -1,
            watchers: vec![],
            created_at: at,
            source: Source::Other("phone".into()),
        },
    ];
    live.runtime.block_on(async {
        let db = &live.db;
        macro_rules! check_all {
            ($values:expr) => {
                for value in $values {
                    let read = write_and_read(db, &value)
                        .await
                        .unwrap()
                        .expect("a fresh id");
                    assert_eq!(read, value);
                }
            };
        }
        check_all!(users);
        check_all!(audit);
        check_all!(notifications);
        check_all!(contacts);
        check_all!(jobs);
        check_all!([Member {
            id: MemberKey { server: 1, user: 2 },
            nickname: None,
            roles: [1, 2, 3, 4].into_iter().collect(),
            joined_at: at,
        }]);
        check_all!([Profile {
            id: UserId("u_ada".into()),
            handle: Handle("ada".into()),
            referrer: Some(UserId("u_bob".into())),
            location: Some(GeoPoint(52.5, 13.4)),
            friends: vec![UserId("u_bob".into())],
        }]);
        check_all!(actions.into_iter().map(preferences));
        check_all!([Invoice {
            id: 1,
            total: -1205,
            due: DateTime::from_millis(1_700_000_000_000),
            api_version: SemVer {
                major: 1,
                minor: 22,
                patch: 3,
            },
            sku: Sku {
                vendor: "ACME".into(),
                code: "x-1".into(),
            },
        }]);
        check_all!([PageView {
            path: "/".into(),
            at,
            referrers: vec![],
            duration_ms: None,
        }]);
        check_all!([Comment {
            id: Some(ObjectId::new()),
            author: "ada".into(),
            body: "hi".into(),
            likes: 0,
        }]);
        check_all!(payments);
        check_all!(tickets);
        check_all!([TenantSettings {
            id: "t1".into(),
            plan: Role::Guest,
            extra: [("x_a".to_owned(), "1".to_owned())].into_iter().collect(),
        }]);
        let base = ActivityBase {
            actor: "ada".into(),
            at,
        };
        check_all!([
            Activity::Commented {
                id: ObjectId::new(),
                base: base.clone(),
                text: "nice".into(),
                reply_to: Some(ObjectId::new()),
            },
            Activity::Commented {
                id: ObjectId::new(),
                base: base.clone(),
                text: "nice".into(),
                reply_to: None,
            },
            Activity::Liked {
                id: ObjectId::new(),
                base,
            },
        ]);
        let item = |packaging, price, meta| CatalogItem {
            id: ObjectId::new(),
            packaging,
            price,
            attributes: vec![Attr("weight".into(), 3), Attr("colour".into(), -1)],
            warehouse: Some(Box::new(Address {
                city: "Lyon".into(),
            })),
            meta,
        };
        let meta = Some(Meta {
            source: "erp".into(),
            imported_at: at,
        });
        check_all!([
            item(Packaging::Loose, Price::Fixed { amount: 5 }, None),
            item(
                Packaging::InABox(Boxed {
                    label: "A4".into(),
                    size: Dimensions {
                        width: 21.0,
                        height: 29.7,
                    },
                }),
                Price::Range { min: 1, max: 9 },
                meta.clone(),
            ),
            item(
                Packaging::OnPallet {
                    stacked_with: vec![],
                },
                Price::Fixed { amount: -5 },
                meta.clone(),
            ),
            item(
                Packaging::OnPallet {
                    stacked_with: vec!["a".into(), "b".into()],
                },
                Price::Fixed { amount: 0 },
                None,
            ),
        ]);
        check_all!(
            [None, Some(DateTime::from_millis(7_000))].map(|delivered_at| {
                Shipment {
                    id: ShipmentId(ObjectId::new()),
                    tracking: mongo_schema::bson::Uuid::new(),
                    delivered_at,
                    level: Level::Medium,
                }
            })
        );
        check_all!([
            Reminder::OnceAt {
                id: Some(ObjectId::new()),
                user_id: 1,
                at,
            },
            Reminder::Daily {
                id: Some(ObjectId::new()),
                user_id: 1,
                hour: 23,
            },
        ]);
    });
}

#[test]
fn the_index_declared_on_one_kind_is_partial_on_its_tag() {
    let live = live("shapes_index");
    live.runtime.block_on(async {
        use futures_util::TryStreamExt;
        for (collection, keys, partial) in [
            (
                AuditEvent::COLLECTION,
                doc! { "user": 1, "at": -1 },
                doc! { "type": "login" },
            ),
            (
                Reminder::COLLECTION,
                doc! { "user_id": 1, "at": 1 },
                doc! { "kind": "onceAt" },
            ),
        ] {
            let indexes: Vec<_> = live
                .db
                .collection::<BsonDocument>(collection)
                .list_indexes()
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            let index = indexes
                .iter()
                .find(|i| i.keys == keys)
                .unwrap_or_else(|| panic!("{collection}: no index on {keys}: {indexes:?}"));
            let filter = index
                .options
                .as_ref()
                .and_then(|o| o.partial_filter_expression.clone());
            assert_eq!(filter, Some(partial), "{collection}: {index:?}");
        }
    });
}

// ---------------------------------------------------------------------------------------------
// broken documents

/// `valid` with the value at each dotted path set (or removed, with `None`).
fn edit(valid: &BsonDocument, edits: &[(&str, Option<Bson>)]) -> BsonDocument {
    let mut doc = Bson::Document(valid.clone());
    for (path, value) in edits {
        set_path(
            &mut doc,
            &path.split('.').collect::<Vec<_>>(),
            value.clone(),
        );
    }
    let Bson::Document(doc) = doc else {
        unreachable!("the root stays a document")
    };
    doc
}

/// One document broken one way, and the failure the typed error must report for it.
struct Broken {
    what: &'static str,
    document: BsonDocument,
    /// The path and rule of a failure the typed error must hold.
    failure: (&'static str, &'static str),
}

fn broken(
    what: &'static str,
    document: BsonDocument,
    failure: (&'static str, &'static str),
) -> Broken {
    Broken {
        what,
        document,
        failure,
    }
}

/// A model's valid document (as the driver writes it), built for a fresh id each call, and the
/// ways it is broken.
struct Model {
    collection: &'static str,
    valid: fn() -> BsonDocument,
    broken: fn(BsonDocument) -> Vec<Broken>,
}

fn to_doc<T: Serialize>(value: &T) -> BsonDocument {
    mongo_schema::bson::to_document(value).unwrap()
}

/// A number that differs every call, for ids that are not ObjectIds.
fn fresh() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static NEXT: AtomicI64 = AtomicI64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn s(text: &str) -> Option<Bson> {
    Some(Bson::String(text.into()))
}

fn models() -> Vec<Model> {
    vec![
        Model {
            collection: User::COLLECTION,
            valid: || {
                to_doc(&User {
                    id: ObjectId::new(),
                    email: "a@b.io".into(),
                    email_status: EmailStatus::Moving {
                        new_email: "c@d.io".into(),
                        token: "t".into(),
                        expiry: DateTime::from_millis(0),
                    },
                    display_name: None,
                    roles: vec![Role::Member],
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "wrong tag",
                        edit(&v, &[("email_status.status", s("Lost"))]),
                        ("email_status", "oneOf"),
                    ),
                    broken(
                        "a missing field of its kind",
                        edit(&v, &[("email_status.expiry", None)]),
                        ("email_status.expiry", "required"),
                    ),
                    broken(
                        "the tag of another kind, its field missing",
                        edit(
                            &v,
                            &[
                                ("email_status.status", s("Pending")),
                                ("email_status.new_email", None),
                                ("email_status.expiry", None),
                            ],
                        ),
                        ("email_status.expiry", "required"),
                    ),
                    broken(
                        "a wrong type inside a kind",
                        edit(&v, &[("email_status.expiry", s("tomorrow"))]),
                        ("email_status.expiry", "bsonType"),
                    ),
                    broken(
                        "over-bound roles",
                        edit(
                            &v,
                            &[(
                                "roles",
                                Some(Bson::from(vec!["admin", "admin", "guest", "member"])),
                            )],
                        ),
                        ("roles", "maxItems"),
                    ),
                    broken(
                        "a field the closed root does not have",
                        edit(&v, &[("token", s("t"))]),
                        ("token", "additionalProperties"),
                    ),
                ]
            },
        },
        Model {
            collection: AuditEvent::COLLECTION,
            valid: || {
                to_doc(&AuditEvent::Login {
                    id: ObjectId::new(),
                    user: "ada".into(),
                    at: DateTime::from_millis(0),
                    ip: "10.0.0.1".into(),
                    mfa: false,
                })
            },
            broken: |v| {
                let granted = to_doc(&AuditEvent::RoleGranted {
                    id: ObjectId::new(),
                    user: "bob".into(),
                    role: Role::Admin,
                    by: "ada".into(),
                    at: DateTime::from_millis(0),
                });
                let exported = to_doc(&AuditEvent::DataExported {
                    id: ObjectId::new(),
                    user: "bob".into(),
                    at: DateTime::from_millis(0),
                    tables: vec![],
                });
                vec![
                    broken(
                        "an unknown kind",
                        edit(&v, &[("type", s("logout"))]),
                        ("", "oneOf"),
                    ),
                    broken(
                        "a missing field of its kind",
                        edit(&v, &[("ip", None)]),
                        ("ip", "required"),
                    ),
                    broken(
                        "a field of another kind (closed)",
                        edit(&granted, &[("ip", s("10.0.0.1"))]),
                        ("ip", "additionalProperties"),
                    ),
                    broken(
                        "the fields of one kind under another's tag",
                        edit(&v, &[("type", s("password_changed"))]),
                        ("mfa", "additionalProperties"),
                    ),
                    broken(
                        "a wrong unit variant",
                        edit(&granted, &[("role", s("root"))]),
                        ("role", "enum"),
                    ),
                    broken(
                        "over-bound tables",
                        edit(
                            &exported,
                            &[("tables", Some(Bson::from(vec!["a", "b", "c", "d"])))],
                        ),
                        ("tables", "maxItems"),
                    ),
                    broken("no tag", edit(&v, &[("type", None)]), ("type", "required")),
                ]
            },
        },
        Model {
            collection: Notification::COLLECTION,
            valid: || {
                to_doc(&Notification::Digest {
                    user_id: 1,
                    items: vec!["a".into()],
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an unknown kind",
                        edit(&v, &[("type", s("Reminder"))]),
                        ("", "oneOf"),
                    ),
                    broken(
                        "a field renamed by rename_all_fields written as in Rust",
                        edit(&v, &[("userId", None), ("user_id", Some(Bson::Int64(1)))]),
                        ("userId", "required"),
                    ),
                    broken(
                        "over-bound items",
                        edit(&v, &[("items", Some(Bson::from(vec!["a"; 6])))]),
                        ("items", "maxItems"),
                    ),
                    broken(
                        "a bound inside another kind",
                        edit(
                            &v,
                            &[
                                ("type", s("System")),
                                ("userId", None),
                                ("items", None),
                                ("message", s(&"x".repeat(201))),
                            ],
                        ),
                        ("message", "maxLength"),
                    ),
                ]
            },
        },
        Model {
            collection: Contact::COLLECTION,
            valid: || {
                to_doc(&Contact::Person {
                    id: fresh(),
                    first: "Ada".into(),
                    last: "Lovelace".into(),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "neither shape",
                        edit(&v, &[("last", None)]),
                        ("last", "required"),
                    ),
                    broken(
                        "a field of neither shape (closed)",
                        edit(&v, &[("vat", s("DE1"))]),
                        ("vat", "additionalProperties"),
                    ),
                    broken(
                        "a wrong id type",
                        edit(&v, &[("_id", s("c1"))]),
                        ("_id", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Job::COLLECTION,
            valid: || {
                to_doc(&Job {
                    id: format!("job-{}", fresh()),
                    kind: "email".into(),
                    status: JobState::Failed {
                        error: "timeout".into(),
                        attempts: 3,
                    },
                    times: Timestamps {
                        created_at: DateTime::from_millis(0),
                        updated_at: DateTime::from_millis(0),
                    },
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an unknown state",
                        edit(&v, &[("state", s("paused"))]),
                        ("", "oneOf"),
                    ),
                    broken(
                        "a missing field of its state",
                        edit(
                            &v,
                            &[("state", s("running")), ("error", None), ("attempts", None)],
                        ),
                        ("worker", "required"),
                    ),
                    broken(
                        "a wrong type inside its state",
                        edit(&v, &[("attempts", s("three"))]),
                        ("attempts", "bsonType"),
                    ),
                    broken(
                        "a u32 out of range",
                        edit(&v, &[("attempts", Some(Bson::Int64(-1)))]),
                        ("attempts", "minimum"),
                    ),
                    broken("no state", edit(&v, &[("state", None)]), ("", "oneOf")),
                    broken(
                        "a flattened struct's field missing",
                        edit(&v, &[("updated_at", None)]),
                        ("updated_at", "required"),
                    ),
                    broken(
                        "a field of another state (closed)",
                        edit(&v, &[("worker", s("w1"))]),
                        ("worker", "additionalProperties"),
                    ),
                ]
            },
        },
        Model {
            collection: Member::COLLECTION,
            valid: || {
                to_doc(&Member {
                    id: MemberKey {
                        server: fresh(),
                        user: 7,
                    },
                    nickname: Some("ada".into()),
                    roles: [1, 2].into_iter().collect(),
                    joined_at: DateTime::from_millis(0),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a wrong type in the composite id",
                        edit(&v, &[("_id.user", s("7"))]),
                        ("_id.user", "bsonType"),
                    ),
                    broken(
                        "a missing part of the composite id",
                        edit(&v, &[("_id.server", None)]),
                        ("_id.server", "required"),
                    ),
                    broken(
                        "an extra part of the closed composite id",
                        edit(&v, &[("_id.shard", Some(Bson::Int64(1)))]),
                        ("_id.shard", "additionalProperties"),
                    ),
                    broken(
                        "an ObjectId for the composite id",
                        edit(&v, &[("_id", Some(Bson::ObjectId(ObjectId::new())))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "duplicate roles in a set",
                        edit(&v, &[("roles", Some(Bson::from(vec![1i64, 1])))]),
                        ("roles", "uniqueItems"),
                    ),
                ]
            },
        },
        Model {
            collection: Profile::COLLECTION,
            valid: || {
                to_doc(&Profile {
                    id: UserId(format!("u_{}", fresh())),
                    handle: Handle("ada".into()),
                    referrer: None,
                    location: Some(GeoPoint(1.0, 2.0)),
                    friends: vec![UserId("u_bob".into())],
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a number for the newtype id",
                        edit(&v, &[("_id", Some(Bson::Int64(1)))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "the newtype id's pattern",
                        edit(&v, &[("_id", s("User-1"))]),
                        ("_id", "pattern"),
                    ),
                    broken(
                        "the newtype's pattern inside an Option",
                        edit(&v, &[("referrer", s("bob"))]),
                        ("referrer", "pattern"),
                    ),
                    broken(
                        "a plain newtype's bound",
                        edit(&v, &[("handle", s("a-handle-too-long"))]),
                        ("handle", "maxLength"),
                    ),
                    broken(
                        "a tuple struct of the wrong length",
                        edit(&v, &[("location", Some(Bson::from(vec![1.0, 2.0, 3.0])))]),
                        ("location", "maxItems"),
                    ),
                    broken(
                        "a newtype element of the wrong type",
                        edit(&v, &[("friends", Some(Bson::from(vec![1i64])))]),
                        ("friends.0", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Preferences::COLLECTION,
            valid: || {
                let mut channels = HashMap::new();
                channels.insert(
                    "mobile".to_owned(),
                    Channel::Sms {
                        phone_number: "+49123".into(),
                    },
                );
                channels.insert("fax".to_owned(), Channel::Off);
                to_doc(&Preferences {
                    id: ObjectId::new(),
                    on_alert: Action::Notify(Channel::Email {
                        address: "a@b.io".into(),
                    }),
                    channels,
                    tags: [Tag {
                        name: "vip".into(),
                        color: Color::Red,
                    }]
                    .into_iter()
                    .collect(),
                })
            },
            broken: |v| {
                let eleven: BsonDocument = (0..11)
                    .map(|i| (format!("c{i}"), Bson::Document(doc! { "kind": "off" })))
                    .collect();
                let tag = doc! { "name": "vip", "color": "Red" };
                vec![
                    broken(
                        "the inner tag of a nested internally tagged enum",
                        edit(&v, &[("on_alert.kind", s("pager"))]),
                        ("on_alert", "oneOf"),
                    ),
                    broken(
                        "a missing field of the inner kind",
                        edit(&v, &[("on_alert.address", None)]),
                        ("on_alert.address", "required"),
                    ),
                    // a variant wrapping another tagged enum is not the kind meant: the
                    // failure inside `webhook` is named
                    broken(
                        "an optional field of a kind of the wrong type",
                        edit(
                            &v,
                            &[(
                                "on_alert",
                                Some(doc! { "action": "webhook", "url": "u", "secret": 1 }.into()),
                            )],
                        ),
                        ("on_alert.secret", "bsonType"),
                    ),
                    broken(
                        "over-bound map",
                        edit(&v, &[("channels", Some(Bson::Document(eleven)))]),
                        ("channels", "maxProperties"),
                    ),
                    broken(
                        "an unknown kind in the map",
                        edit(&v, &[("channels.fax.kind", s("fax"))]),
                        ("channels.fax", "oneOf"),
                    ),
                    broken(
                        "a missing field of its kind in the map",
                        edit(&v, &[("channels.mobile.phoneNumber", None)]),
                        ("channels.mobile.phoneNumber", "required"),
                    ),
                    broken(
                        "a duplicate in the set",
                        edit(
                            &v,
                            &[("tags", Some(Bson::from(vec![tag.clone(), tag.clone()])))],
                        ),
                        ("tags", "uniqueItems"),
                    ),
                    broken(
                        "over-bound set",
                        edit(
                            &v,
                            &[(
                                "tags",
                                Some(Bson::from(
                                    (0..5)
                                        .map(|i| doc! { "name": format!("t{i}"), "color": "Red" })
                                        .collect::<Vec<_>>(),
                                )),
                            )],
                        ),
                        ("tags", "maxItems"),
                    ),
                    broken(
                        "a wrong unit variant in a set element",
                        edit(&v, &[("tags.0.color", s("Pink"))]),
                        ("tags.0.color", "enum"),
                    ),
                    broken(
                        "a missing field of a set element",
                        edit(&v, &[("tags.0.name", None)]),
                        ("tags.0.name", "required"),
                    ),
                ]
            },
        },
        Model {
            collection: Invoice::COLLECTION,
            valid: || {
                to_doc(&Invoice {
                    id: fresh(),
                    total: 1234,
                    due: DateTime::from_millis(1_000),
                    api_version: SemVer {
                        major: 1,
                        minor: 2,
                        patch: 3,
                    },
                    sku: Sku {
                        vendor: "ACME".into(),
                        code: "1".into(),
                    },
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "the cents as a number",
                        edit(&v, &[("total", Some(Bson::Int64(1234)))]),
                        ("total", "bsonType"),
                    ),
                    broken(
                        "the pattern of a serialize_with field",
                        edit(&v, &[("total", s("12.3"))]),
                        ("total", "pattern"),
                    ),
                    broken(
                        "a with = field written as a date",
                        edit(&v, &[("due", Some(Bson::DateTime(DateTime::now())))]),
                        ("due", "bsonType"),
                    ),
                    broken(
                        "a hand-written Serialize's value as a document",
                        edit(&v, &[("api_version", Some(doc! { "major": 1 }.into()))]),
                        ("api_version", "bsonType"),
                    ),
                    broken(
                        "an into = String value as a document",
                        edit(
                            &v,
                            &[("sku", Some(doc! { "vendor": "A", "code": "1" }.into()))],
                        ),
                        ("sku", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: PageView::COLLECTION,
            valid: || {
                to_doc(&PageView {
                    path: "/home".into(),
                    at: DateTime::from_millis(0),
                    referrers: vec!["https://a.com".into()],
                    duration_ms: Some(5),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a wrong type",
                        edit(&v, &[("path", Some(Bson::Int32(1)))]),
                        ("path", "bsonType"),
                    ),
                    broken(
                        "a missing field",
                        edit(&v, &[("at", None)]),
                        ("at", "required"),
                    ),
                    broken(
                        "over-bound referrers",
                        edit(&v, &[("referrers", Some(Bson::from(vec!["a"; 4])))]),
                        ("referrers", "maxItems"),
                    ),
                    broken(
                        "a field the closed root does not have",
                        edit(&v, &[("user", s("ada"))]),
                        ("user", "additionalProperties"),
                    ),
                    broken(
                        "an _id other than the server's ObjectId",
                        edit(&v, &[("_id", s("view-1"))]),
                        ("_id", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Comment::COLLECTION,
            valid: || {
                to_doc(&Comment {
                    id: None,
                    author: "ada".into(),
                    body: "hi".into(),
                    likes: 1,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a string id",
                        edit(&v, &[("_id", s("c1"))]),
                        ("_id", "bsonType"),
                    ),
                    // serde never writes a null `_id` for a skipped `Option`: refused
                    broken(
                        "a null id",
                        edit(&v, &[("_id", Some(Bson::Null))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "a missing field",
                        edit(&v, &[("body", None)]),
                        ("body", "required"),
                    ),
                    broken(
                        "an i32 out of range",
                        edit(&v, &[("likes", Some(Bson::Int64(1 << 40)))]),
                        ("likes", "bsonType"),
                    ),
                    broken(
                        "a field the closed root does not have",
                        edit(&v, &[("title", s("x"))]),
                        ("title", "additionalProperties"),
                    ),
                ]
            },
        },
        Model {
            collection: Payment::COLLECTION,
            valid: || {
                to_doc(&Payment {
                    id: ObjectId::new(),
                    method: PaymentMethod::Card {
                        last4: "4242".into(),
                        brand: CardBrand::Visa,
                    },
                    events: vec![PaymentEvent::Created, PaymentEvent::Captured(5)],
                    last_event: PaymentEvent::Authorized {
                        amount: 5,
                        currency: "EUR".into(),
                    },
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an unknown variant",
                        edit(&v, &[("method", Some(doc! { "Crypto": "btc" }.into()))]),
                        ("method", "oneOf"),
                    ),
                    broken(
                        "an unknown unit variant",
                        edit(&v, &[("method", s("Cheque"))]),
                        ("method", "enum"),
                    ),
                    broken(
                        "a missing field of a struct variant",
                        edit(&v, &[("method.Card.last4", None)]),
                        ("method.Card.last4", "required"),
                    ),
                    broken(
                        "a pattern inside a struct variant",
                        edit(&v, &[("method.Card.last4", s("42"))]),
                        ("method.Card.last4", "pattern"),
                    ),
                    broken(
                        "a tuple variant of the wrong length",
                        edit(&v, &[("method", Some(doc! { "Split": [1i64] }.into()))]),
                        ("method.Split", "minItems"),
                    ),
                    broken(
                        "an over-bound newtype collection",
                        edit(
                            &v,
                            &[(
                                "method",
                                Some(doc! { "Wallets": ["a", "b", "c", "d"] }.into()),
                            )],
                        ),
                        ("method.Wallets", "maxItems"),
                    ),
                    broken(
                        "adjacent content of another kind",
                        edit(&v, &[("last_event.data", s("five"))]),
                        ("last_event.data", "bsonType"),
                    ),
                    broken(
                        "an unknown adjacent tag",
                        edit(&v, &[("last_event.type", s("voided"))]),
                        ("last_event", "oneOf"),
                    ),
                    broken(
                        "an adjacent unit with content",
                        edit(
                            &v,
                            &[(
                                "events.0",
                                Some(doc! { "type": "created", "data": 1 }.into()),
                            )],
                        ),
                        ("events.0.data", "additionalProperties"),
                    ),
                    broken(
                        "over-bound events",
                        edit(
                            &v,
                            &[(
                                "events",
                                Some(Bson::from(vec![doc! { "type": "created" }; 5])),
                            )],
                        ),
                        ("events", "maxItems"),
                    ),
                ]
            },
        },
        Model {
            collection: Ticket::COLLECTION,
            valid: || {
                to_doc(&Ticket {
                    id: fresh(),
                    title: "printer".into(),
                    assignee: Some(Assignee::Name("ada".into())),
                    priority: Some(Priority::VeryHigh),
                    previous_state: Some(JobState::Queued),
                    reopen_count: 0,
                    watchers: vec![Assignee::Id(1)],
                    created_at: DateTime::from_millis(0),
                    source: Source::Other("phone".into()),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an untagged fallback variant over its bound",
                        edit(&v, &[("source", s(&"x".repeat(21)))]),
                        // a long string could be a misspelt unit variant as well as an over-long
                        // fallback: no branch is named, the `anyOf` is
                        ("source", "anyOf"),
                    ),
                    broken(
                        "an untagged fallback variant of the wrong type",
                        edit(&v, &[("source", Some(Bson::Int32(1)))]),
                        ("source", "anyOf"),
                    ),
                    broken(
                        "an untagged value of neither shape",
                        edit(&v, &[("assignee", Some(Bson::Boolean(true)))]),
                        ("assignee", "anyOf"),
                    ),
                    broken(
                        "an untagged branch's bound",
                        edit(&v, &[("assignee", s(&"x".repeat(31)))]),
                        ("assignee", "maxLength"),
                    ),
                    broken(
                        "a unit variant spelled in Rust instead of camelCase",
                        edit(&v, &[("priority", s("VeryHigh"))]),
                        ("priority", "enum"),
                    ),
                    broken(
                        "a field spelled in Rust instead of camelCase",
                        edit(
                            &v,
                            &[
                                ("createdAt", None),
                                ("created_at", Some(Bson::DateTime(DateTime::now()))),
                            ],
                        ),
                        ("createdAt", "required"),
                    ),
                    broken(
                        "a #[serde(default)] field of the wrong type",
                        edit(&v, &[("reopenCount", s("0"))]),
                        ("reopenCount", "bsonType"),
                    ),
                    broken(
                        "an Option<Enum> of an unknown state",
                        edit(
                            &v,
                            &[("previousState", Some(doc! { "state": "paused" }.into()))],
                        ),
                        ("previousState", "oneOf"),
                    ),
                    broken(
                        "over-bound watchers",
                        edit(&v, &[("watchers", Some(Bson::from(vec![1i64; 4])))]),
                        ("watchers", "maxItems"),
                    ),
                ]
            },
        },
        Model {
            collection: TenantSettings::COLLECTION,
            valid: || {
                to_doc(&TenantSettings {
                    id: format!("t{}", fresh()),
                    plan: Role::Admin,
                    extra: [("x_theme".to_owned(), "dark".to_owned())]
                        .into_iter()
                        .collect(),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a flattened map's value of the wrong type",
                        edit(&v, &[("x_theme", Some(Bson::Int32(1)))]),
                        ("x_theme", "bsonType"),
                    ),
                    broken(
                        "an over-bound flattened map",
                        edit(&v, &[("x_a", s("1")), ("x_b", s("2")), ("x_c", s("3"))]),
                        ("", "maxProperties"),
                    ),
                    broken(
                        "a missing field next to the map",
                        edit(&v, &[("plan", None)]),
                        ("plan", "required"),
                    ),
                ]
            },
        },
        Model {
            collection: Reminder::COLLECTION,
            valid: || {
                to_doc(&Reminder::Daily {
                    id: None,
                    user_id: 1,
                    hour: 7,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a bound inside a kind",
                        edit(&v, &[("hour", Some(Bson::Int32(24)))]),
                        ("hour", "maximum"),
                    ),
                    broken(
                        "a string id in a kind",
                        edit(&v, &[("_id", s("r1"))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "a field of another kind (closed)",
                        edit(&v, &[("at", Some(Bson::DateTime(DateTime::now())))]),
                        ("at", "additionalProperties"),
                    ),
                    broken(
                        "a variant spelled in Rust instead of camelCase",
                        edit(&v, &[("kind", s("Daily"))]),
                        ("", "oneOf"),
                    ),
                ]
            },
        },
        Model {
            collection: Activity::COLLECTION,
            valid: || {
                to_doc(&Activity::Commented {
                    id: ObjectId::new(),
                    base: ActivityBase {
                        actor: "ada".into(),
                        at: DateTime::from_millis(0),
                    },
                    text: "hi".into(),
                    reply_to: None,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a flattened common field missing in a kind",
                        edit(&v, &[("actor", None)]),
                        ("actor", "required"),
                    ),
                    broken(
                        "a flattened common field of the wrong type",
                        edit(&v, &[("at", s("now"))]),
                        ("at", "bsonType"),
                    ),
                    broken(
                        "a field of another kind (closed)",
                        edit(&v, &[("kind", s("liked"))]),
                        ("text", "additionalProperties"),
                    ),
                    broken(
                        "an optional field of the wrong type",
                        edit(&v, &[("reply_to", s("x"))]),
                        ("reply_to", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: CatalogItem::COLLECTION,
            valid: || {
                to_doc(&CatalogItem {
                    id: ObjectId::new(),
                    packaging: Packaging::InABox(Boxed {
                        label: "A4".into(),
                        size: Dimensions {
                            width: 1.0,
                            height: 2.0,
                        },
                    }),
                    price: Price::Range { min: 1, max: 2 },
                    attributes: vec![Attr("w".into(), 1)],
                    warehouse: Some(Box::new(Address {
                        city: "Lyon".into(),
                    })),
                    meta: Some(Meta {
                        source: "erp".into(),
                        imported_at: DateTime::from_millis(0),
                    }),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a kebab-case tag spelled in Rust",
                        edit(&v, &[("packaging.type", s("InABox"))]),
                        ("packaging", "oneOf"),
                    ),
                    broken(
                        "a field the wrapped struct flattens, missing",
                        edit(&v, &[("packaging.height", None)]),
                        ("packaging.height", "required"),
                    ),
                    broken(
                        "an over-bound array skipped when empty",
                        edit(
                            &v,
                            &[(
                                "packaging",
                                Some(
                                    doc! { "type": "on-pallet", "stacked_with": ["a", "b", "c", "d"] }
                                        .into(),
                                ),
                            )],
                        ),
                        ("packaging.stacked_with", "maxItems"),
                    ),
                    broken(
                        "an untagged struct of neither shape",
                        edit(&v, &[("price", Some(doc! { "min": 1_i64 }.into()))]),
                        ("price", "anyOf"),
                    ),
                    broken(
                        "a pair of the wrong shape",
                        edit(&v, &[("attributes.0", Some(Bson::from(vec!["w"])))]),
                        ("attributes.0", "minItems"),
                    ),
                    broken(
                        "a boxed struct's field of the wrong type",
                        edit(&v, &[("warehouse.city", Some(Bson::Int32(1)))]),
                        ("warehouse.city", "bsonType"),
                    ),
                    broken(
                        "half of a flattened Option struct",
                        edit(&v, &[("imported_at", s("yesterday"))]),
                        ("imported_at", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Shipment::COLLECTION,
            valid: || {
                to_doc(&Shipment {
                    id: ShipmentId(ObjectId::new()),
                    tracking: mongo_schema::bson::Uuid::new(),
                    delivered_at: Some(DateTime::from_millis(5_000)),
                    level: Level::High,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a string for the ObjectId newtype id",
                        edit(&v, &[("_id", s("s1"))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "a string for the UUID",
                        edit(&v, &[("tracking", s("0000"))]),
                        ("tracking", "bsonType"),
                    ),
                    broken(
                        "an optional with = helper's value as a date",
                        edit(
                            &v,
                            &[("delivered_at", Some(Bson::DateTime(DateTime::now())))],
                        ),
                        ("delivered_at", "bsonType"),
                    ),
                    broken(
                        "a hand-written enum written by name",
                        edit(&v, &[("level", s("High"))]),
                        ("level", "bsonType"),
                    ),
                ]
            },
        },
    ]
}

/// Inserts `document` raw and returns the typed validation error, or what went wrong.
async fn refused(
    db: &mongodb::Database,
    collection: &str,
    document: &BsonDocument,
) -> Result<ValidationError, String> {
    let error = db
        .collection::<BsonDocument>(collection)
        .insert_one(document)
        .await
        .in_collection(collection)
        .err()
        .ok_or_else(|| format!("accepted: {document}"))?;
    error
        .as_validation()
        .cloned()
        .ok_or_else(|| format!("not a validation error: {error}"))
}

#[test]
fn documents_broken_one_way_are_refused_naming_path_and_rule() {
    let live = live("shapes_broken");
    live.runtime.block_on(async {
        let db = &live.db;
        let mut checked = 0;
        let mut problems = Vec::new();
        for model in models() {
            let raw = db.collection::<BsonDocument>(model.collection);
            let cases = (model.broken)((model.valid)());
            for case in &cases {
                // the control: a valid document of the same model is accepted
                raw.insert_one((model.valid)()).await.unwrap_or_else(|e| {
                    panic!(
                        "{}: {}: the valid control: {e}",
                        model.collection, case.what
                    )
                });
                let (path, rule) = case.failure;
                match refused(db, model.collection, &case.document).await {
                    Ok(v) if v.failures.iter().any(|f| f.path == path && f.rule == rule) => {
                        println!("{}: {}: {v}", model.collection, case.what);
                        checked += 1;
                    }
                    Ok(v) => problems.push(format!(
                        "{}: {}: expected `{path}` fails `{rule}`, got {v}",
                        model.collection, case.what
                    )),
                    Err(e) => problems.push(format!("{}: {}: {e}", model.collection, case.what)),
                }
            }
            assert_eq!(
                raw.count_documents(doc! {}).await.unwrap(),
                cases.len() as u64,
                "{}: only the controls were stored",
                model.collection
            );
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        println!("{checked} broken documents refused, each naming its path and rule");
    });
}
