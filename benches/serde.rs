//! The generated serde of copy types and `Ref<T>` against `#[derive(Serialize, Deserialize)]` of
//! the same stored shape: CPU only, no server. Both sides run in one process, interleaved, so
//! machine noise hits both alike; the ratios (ours / serde) are what to read.
//!
//! A typed filter (`mongo_schema::query::Filter` on `field!` paths) is priced against the
//! hand-written `doc!` it replaces; the budget is 1.05x.
//!
//! The last lines price `T::check` (the validator evaluated in the library) of the help desk's
//! ticket (`examples/helpdesk`) against serializing it as the driver does: the budget is 2x.
//!
//! ```text
//! cargo bench --bench serde              # 20,000 calls per round, best of 7 rounds
//! cargo bench --bench serde -- --quick   # or BENCH_QUICK=1: a smoke run for CI
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "../examples/helpdesk/model.rs"]
mod helpdesk;

use mongo_schema::bson::{self, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub tier: Option<String>,
    pub email: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "agents")]
pub struct Agent {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub team: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tags")]
pub struct Tag {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub label: String,
}

/// The help desk's ticket: two generated copy types (3 and 2 fields with `_id`).
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    #[extended_ref(to = Customer, fields = "name, tier", sync = "transactional")]
    pub customer: TicketCustomer,
    #[extended_ref(to = Agent, fields = "name", sync = "async")]
    pub assignee: Option<TicketAssignee>,
    pub priority: i32,
}

/// The same stored shape with serde's derives only.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PlainTicket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    pub customer: PlainCustomer,
    pub assignee: Option<PlainAssignee>,
    pub priority: i32,
}

/// Named as the copy type it stands for: bson's encoder compares every struct name with its
/// 14-character `$codeWithScope` and `$numberDecimal`, so a name's length alone moves the
/// figures (see the control line).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename = "TicketCustomer")]
pub struct PlainCustomer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub tier: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename = "TicketAssignee")]
pub struct PlainAssignee {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

/// A twin of [`PlainTicket`] whose nested structs have 12-character names, for the control line:
/// serde's derive against itself, the names' length alone differing, shows what bson's struct
/// name match costs (`TicketCustomer` and `TicketAssignee` have 14 characters, as two of the
/// names bson looks for).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct TwinTicket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    pub customer: TwinCustomer,
    pub assignee: Option<TwinAssignee>,
    pub priority: i32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct TwinCustomer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub tier: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct TwinAssignee {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

/// References typed by `Ref<T>`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Referencing {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub customer: Ref<Customer>,
    pub tags: Vec<Ref<Tag>>,
}

/// The same references as bare ids.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BareIds {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub customer: ObjectId,
    pub tags: Vec<ObjectId>,
}

/// The generated visitor reads the way serde's derive does: unknown keys ignored, a missing
/// `Option` is `None`, a missing or repeated field is an error.
fn check_decoding() {
    use mongo_schema::bson::{doc, RawDocumentBuf};

    let id = ObjectId::new();
    let copy: TicketCustomer =
        bson::from_document(doc! { "_id": id, "name": "Ada", "extra": 1, "tier": "gold" })
            .expect("an unknown key is ignored");
    assert_eq!(copy.tier.as_deref(), Some("gold"));
    let copy: TicketCustomer = bson::from_document(doc! { "_id": id, "name": "Ada" })
        .expect("a missing `Option` reads as `None`");
    assert_eq!(copy.tier, None);
    let error = bson::from_document::<TicketCustomer>(doc! { "_id": id, "tier": "gold" })
        .expect_err("`name` is required");
    assert!(
        error.to_string().contains("missing field `name`"),
        "{error}"
    );
    let error = bson::from_document::<TicketAssignee>(doc! { "name": "Grace" })
        .expect_err("`_id` is required");
    assert!(error.to_string().contains("missing field `_id`"), "{error}");
    let mut repeated = RawDocumentBuf::new();
    repeated.append("_id", id);
    repeated.append("name", "Ada");
    repeated.append("name", "Grace");
    let error = bson::from_slice::<TicketAssignee>(repeated.as_bytes())
        .expect_err("a repeated field is refused");
    assert!(
        error.to_string().contains("duplicate field `name`"),
        "{error}"
    );
}

struct Settings {
    iterations: usize,
    rounds: usize,
}

/// Runs `ours` and `serde` alternately (which goes first flips each round), `iterations` calls
/// per round, and prints the best time per call of each and their ratio.
fn compare(settings: &Settings, what: &str, mut ours: impl FnMut(), mut serde: impl FnMut()) {
    let mut best = [Duration::MAX; 2];
    for round in 0..settings.rounds {
        for turn in 0..2 {
            let side = (round + turn) % 2;
            let start = Instant::now();
            for _ in 0..settings.iterations {
                if side == 0 {
                    ours()
                } else {
                    serde()
                }
            }
            best[side] = best[side].min(start.elapsed());
        }
    }
    let per_call = |d: Duration| d.as_secs_f64() * 1e9 / settings.iterations as f64;
    println!(
        "{what:<48} {:>9.0} ns {:>9.0} ns   ratio {:.2}",
        per_call(best[0]),
        per_call(best[1]),
        best[0].as_secs_f64() / best[1].as_secs_f64()
    );
}

/// A document holding an internally tagged enum with data and a flattened struct: its serde is
/// serde's own derive (the derives of this crate generate none for it), so it must cost what the
/// same type costs without them.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "accounts")]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
    pub state: AccountState,
    #[serde(flatten)]
    pub audit: Audit,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AccountState {
    Verified,
    Pending { token: String, expiry: DateTime },
    Moving { new_email: String, token: String },
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Audit {
    pub created_by: String,
    pub revision: i32,
}

/// The same types with serde's derives only.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PlainAccount {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
    pub state: PlainAccountState,
    #[serde(flatten)]
    pub audit: PlainAudit,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PlainAccountState {
    Verified,
    Pending { token: String, expiry: DateTime },
    Moving { new_email: String, token: String },
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PlainAudit {
    pub created_by: String,
    pub revision: i32,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let settings = if quick {
        Settings {
            iterations: 500,
            rounds: 3,
        }
    } else {
        Settings {
            iterations: 20_000,
            rounds: 7,
        }
    };

    check_decoding();

    let ticket = Ticket {
        id: ObjectId::new(),
        subject: "The printer on the third floor prints only blank pages".into(),
        customer: TicketCustomer {
            id: ObjectId::new(),
            name: "Ada Lovelace".into(),
            tier: Some("gold".into()),
        },
        assignee: Some(TicketAssignee {
            id: ObjectId::new(),
            name: "Grace Hopper".into(),
        }),
        priority: 2,
    };
    let plain = PlainTicket {
        id: ticket.id,
        subject: ticket.subject.clone(),
        customer: PlainCustomer {
            id: ticket.customer.id,
            name: ticket.customer.name.clone(),
            tier: ticket.customer.tier.clone(),
        },
        assignee: ticket.assignee.as_ref().map(|a| PlainAssignee {
            id: a.id,
            name: a.name.clone(),
        }),
        priority: ticket.priority,
    };
    let twin: TwinTicket = bson::from_slice(&bson::to_vec(&plain).expect("a ticket encodes"))
        .expect("the twin decodes");
    let bytes = bson::to_vec(&ticket).expect("a ticket encodes");
    assert_eq!(bytes, bson::to_vec(&plain).expect("a ticket encodes"));
    let document: BsonDocument = bson::from_slice(&bytes).expect("a ticket decodes");
    let decoded: Ticket = bson::from_slice(&bytes).expect("a ticket decodes");
    assert_eq!(decoded, ticket);

    let referencing = Referencing {
        id: ObjectId::new(),
        customer: Ref::new(ticket.customer.id),
        tags: (0..5).map(|_| Ref::new(ObjectId::new())).collect(),
    };
    let bare = BareIds {
        id: referencing.id,
        customer: *referencing.customer.id(),
        tags: referencing.tags.iter().map(|t| *t.id()).collect(),
    };
    let ref_bytes = bson::to_vec(&referencing).expect("references encode");
    assert_eq!(ref_bytes, bson::to_vec(&bare).expect("ids encode"));

    let account = Account {
        id: ObjectId::new(),
        email: "ada@example.org".into(),
        state: AccountState::Moving {
            new_email: "ada@example.com".into(),
            token: "7f3a9c".into(),
        },
        audit: Audit {
            created_by: "admin".into(),
            revision: 3,
        },
    };
    let account_bytes = bson::to_vec(&account).expect("an account encodes");
    let plain_account: PlainAccount =
        bson::from_slice(&account_bytes).expect("the plain account decodes");
    assert_eq!(
        account_bytes,
        bson::to_vec(&plain_account).expect("an account encodes")
    );

    println!(
        "{} calls per round, best of {} rounds; ours, serde derive, ours / serde",
        settings.iterations, settings.rounds
    );
    compare(
        &settings,
        "ticket: decode from bytes (bson::from_slice)",
        || {
            drop(black_box(
                bson::from_slice::<Ticket>(black_box(&bytes)).unwrap(),
            ))
        },
        || {
            drop(black_box(
                bson::from_slice::<PlainTicket>(black_box(&bytes)).unwrap(),
            ))
        },
    );
    compare(
        &settings,
        "ticket: decode from a Document",
        || {
            drop(black_box(
                bson::from_document::<Ticket>(black_box(document.clone())).unwrap(),
            ))
        },
        || {
            drop(black_box(
                bson::from_document::<PlainTicket>(black_box(document.clone())).unwrap(),
            ))
        },
    );
    compare(
        &settings,
        "ticket: encode to bytes (bson::to_vec)",
        || drop(black_box(bson::to_vec(black_box(&ticket)).unwrap())),
        || drop(black_box(bson::to_vec(black_box(&plain)).unwrap())),
    );
    compare(
        &settings,
        "control: serde derive, names of 12 vs 14 chars",
        || drop(black_box(bson::to_vec(black_box(&twin)).unwrap())),
        || drop(black_box(bson::to_vec(black_box(&plain)).unwrap())),
    );
    compare(
        &settings,
        "ticket: encode to a Document",
        || drop(black_box(bson::to_document(black_box(&ticket)).unwrap())),
        || drop(black_box(bson::to_document(black_box(&plain)).unwrap())),
    );
    compare(
        &settings,
        "Ref<T> x6: decode from bytes",
        || {
            drop(black_box(
                bson::from_slice::<Referencing>(black_box(&ref_bytes)).unwrap(),
            ))
        },
        || {
            drop(black_box(
                bson::from_slice::<BareIds>(black_box(&ref_bytes)).unwrap(),
            ))
        },
    );
    compare(
        &settings,
        "Ref<T> x6: encode to bytes",
        || drop(black_box(bson::to_vec(black_box(&referencing)).unwrap())),
        || drop(black_box(bson::to_vec(black_box(&bare)).unwrap())),
    );
    compare(
        &settings,
        "account (tagged enum + flatten): decode from bytes",
        || {
            drop(black_box(
                bson::from_slice::<Account>(black_box(&account_bytes)).unwrap(),
            ))
        },
        || {
            drop(black_box(
                bson::from_slice::<PlainAccount>(black_box(&account_bytes)).unwrap(),
            ))
        },
    );
    compare(
        &settings,
        "account (tagged enum + flatten): encode to bytes",
        || drop(black_box(bson::to_vec(black_box(&account)).unwrap())),
        || drop(black_box(bson::to_vec(black_box(&plain_account)).unwrap())),
    );

    // a typed filter against the hand-written `doc!` it replaces: the same document, byte for
    // byte, for the help desk's agent queue and a customer's tickets in a date range
    let team = String::from("billing");
    let customer_id = ObjectId::new();
    let since = bson::DateTime::from_millis(1_700_000_000_000);
    let typed = || {
        mongo_schema::query::Filter::new()
            .eq(mongo_schema::field!(helpdesk::Ticket, team), team.as_str())
            .eq(
                mongo_schema::field!(helpdesk::Ticket, status),
                &helpdesk::Status::Open,
            )
            .eq(
                mongo_schema::field!(helpdesk::Ticket, customer.id),
                &customer_id,
            )
            .gte(mongo_schema::field!(helpdesk::Ticket, updated_at), &since)
            .build()
            .unwrap()
    };
    let hand = || {
        bson::doc! {
            "team": team.as_str(),
            "status": "open",
            "customer._id": customer_id,
            "updatedAt": { "$gte": since },
        }
    };
    assert_eq!(
        bson::to_vec(&typed()).unwrap(),
        bson::to_vec(&hand()).unwrap(),
        "the typed filter is the hand-written document, byte for byte"
    );
    compare(
        &settings,
        "filter: typed builder vs hand-written doc!",
        || drop(black_box(typed())),
        || drop(black_box(hand())),
    );

    let desk = helpdesk_ticket();
    helpdesk::Ticket::check(&desk).expect("the help desk ticket is valid");
    let raw = bson::to_raw_document_buf(&desk).expect("a ticket encodes");
    let local = mongo_schema::LocalValidator::new(&<helpdesk::Ticket as Document>::validator())
        .expect("the ticket's validator compiles");
    compare(
        &settings,
        "helpdesk ticket: T::check vs serialize (driver)",
        || helpdesk::Ticket::check(black_box(&desk)).unwrap(),
        || {
            drop(black_box(
                bson::to_raw_document_buf(black_box(&desk)).unwrap(),
            ))
        },
    );
    compare(
        &settings,
        "helpdesk ticket: check_raw alone vs serialize",
        || local.check_raw(black_box(&raw)).unwrap(),
        || {
            drop(black_box(
                bson::to_raw_document_buf(black_box(&desk)).unwrap(),
            ))
        },
    );
}

/// A ticket of the help desk example with every field filled: an assignee, 3 tags, 12 status
/// changes and a last message.
fn helpdesk_ticket() -> helpdesk::Ticket {
    use helpdesk::{MessagePreview, Status, StatusChange, Ticket, TicketAssignee, TicketCustomer};
    let statuses = [Status::Open, Status::Pending, Status::Closed];
    Ticket {
        id: ObjectId::new(),
        subject: "The printer on the third floor prints only blank pages".into(),
        team: "facilities".into(),
        status: Status::Pending,
        priority: 2,
        customer: TicketCustomer {
            id: ObjectId::new(),
            name: "Ada Lovelace".into(),
        },
        assignee: Some(TicketAssignee {
            id: ObjectId::new(),
            name: "Grace Hopper".into(),
        }),
        tags: ["printer", "third-floor", "hardware"]
            .iter()
            .map(|t| Ref::new((*t).to_owned()))
            .collect(),
        history: (0..12)
            .map(|i| StatusChange {
                status: statuses[i % 3],
                at: DateTime::from_millis(1_700_000_000_000 + i as i64 * 60_000),
            })
            .collect(),
        last_message: Some(MessagePreview {
            from: helpdesk::Author::Agent,
            preview: "We replaced the toner; please try again and tell us".into(),
            at: DateTime::from_millis(1_700_000_900_000),
        }),
        message_count: 7,
        updated_at: DateTime::from_millis(1_700_000_900_000),
    }
}
