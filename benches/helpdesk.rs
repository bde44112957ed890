//! Side-by-side measurements on a real server (SecantusDB, or `MONGODB_URI`), run in one
//! process and interleaved so machine noise hits both sides alike; ratios are what to read.
//!
//! ```text
//! cargo bench --bench helpdesk
//! BENCH_QUICK=1 cargo bench --bench helpdesk   # 3 rounds of 2 calls: keeps it running in CI
//! ```
//!
//! 1. The agent queue as seed 003 designs it (copies on the ticket, one query) against the
//!    normalised design (`$lookup` of customer, agent and last message for the same page).
//! 2. The generated helpers against the hand-written driver code they replace: adding a message
//!    with its preview (transaction), a batch of references, a keyset page.
//! 3. The copy type's generated serde against `#[derive(Serialize, Deserialize)]` of the same
//!    shape.

#[path = "../examples/helpdesk/model.rs"]
mod model;
#[path = "../examples/helpdesk/seed.rs"]
mod seed;

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use model::*;
use mongo_schema::bson::{doc, DateTime, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

const ROUNDS: usize = 7;

/// `BENCH_QUICK` set: a few calls per measurement, so CI keeps the benchmark building and
/// running; its figures are not to be read.
fn quick() -> bool {
    std::env::var_os("BENCH_QUICK").is_some()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `a` and `b` alternately, `iterations` times per round, and prints the medians per call.
async fn compare<A, FA, B, FB>(what: &str, iterations: usize, mut a: A, mut b: B)
where
    A: FnMut() -> FA,
    FA: Future<Output = ()>,
    B: FnMut() -> FB,
    FB: Future<Output = ()>,
{
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    let (rounds, iterations) = if quick() {
        (3, 2)
    } else {
        (ROUNDS, iterations)
    };
    for round in 0..rounds {
        let time = |first: bool| first == (round % 2 == 0);
        for first in [true, false] {
            let start = Instant::now();
            if time(first) {
                for _ in 0..iterations {
                    a().await;
                }
                sa.push(start.elapsed() / iterations as u32);
            } else {
                for _ in 0..iterations {
                    b().await;
                }
                sb.push(start.elapsed() / iterations as u32);
            }
        }
    }
    let (ma, mb) = (median(sa), median(sb));
    println!(
        "{what:<58} {:>10.3} ms {:>10.3} ms   ratio {:.2}",
        ma.as_secs_f64() * 1e3,
        mb.as_secs_f64() * 1e3,
        ma.as_secs_f64() / mb.as_secs_f64()
    );
}

/// The same ticket, normalised: ids only.
#[derive(Serialize, Deserialize)]
struct NormalisedTicket {
    #[serde(rename = "_id")]
    id: ObjectId,
    subject: String,
    team: String,
    status: String,
    priority: i32,
    #[serde(rename = "customerId")]
    customer_id: ObjectId,
    #[serde(rename = "assigneeId")]
    assignee_id: Option<ObjectId>,
    #[serde(rename = "updatedAt")]
    updated_at: DateTime,
}

/// A serde-derived struct of the same shape as the generated `TicketCustomer`.
#[derive(Serialize, Deserialize, Clone)]
struct PlainCustomerCopy {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = mongodb::Client::with_uri_str(mongo_schema_testkit::uri()).await?;
    let db = client.database("mongo_schema_bench");
    db.drop().await?;
    model::schema().apply(&db).await?;
    let seeded = seed::seed(&db, 4000).await?;

    // the normalised design of the same data, for the $lookup side
    let normalised: Vec<NormalisedTicket> = seeded
        .tickets
        .iter()
        .map(|t| NormalisedTicket {
            id: t.id,
            subject: t.subject.clone(),
            team: t.team.clone(),
            status: t.status.as_str().to_owned(),
            priority: t.priority,
            customer_id: t.customer.id,
            assignee_id: t.assignee.as_ref().map(|a| a.id),
            updated_at: t.updated_at,
        })
        .collect();
    let plain = db.collection::<NormalisedTicket>("ticketsNormalised");
    plain.insert_many(&normalised).await?;
    plain
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "team": 1, "status": 1, "priority": -1, "updatedAt": -1 })
                .build(),
        )
        .await?;

    println!("{:<58} {:>13} {:>13}", "", "ours", "baseline");

    // 1. the queue: one query on copies vs three $lookups
    let (filter, sort) = queue_query("billing");
    let tickets = Ticket::collection(&db);
    compare(
        "agent queue, 20 rows: copies on the ticket vs $lookup x3",
        30,
        || async {
            let rows: Vec<Ticket> = tickets.find(filter.clone()).sort(sort.clone()).limit(20).await.unwrap().try_collect().await.unwrap();
            assert_eq!(rows.len(), 20);
        },
        || async {
            let rows: Vec<BsonDocument> = db
                .collection::<BsonDocument>("ticketsNormalised")
                .aggregate([
                    doc! { "$match": filter.clone() },
                    doc! { "$sort": sort.clone() },
                    doc! { "$limit": 20 },
                    doc! { "$lookup": { "from": "customers", "localField": "customerId", "foreignField": "_id", "as": "customer" } },
                    doc! { "$lookup": { "from": "agents", "localField": "assigneeId", "foreignField": "_id", "as": "assignee" } },
                    doc! { "$lookup": { "from": "messages", "localField": "_id", "foreignField": "ticketId",
                        "pipeline": [{ "$sort": { "at": -1 } }, { "$limit": 1 }], "as": "lastMessage" } },
                ])
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            assert_eq!(rows.len(), 20);
        },
    )
    .await;

    // 2a. adding a message: generated transaction vs hand-written driver transaction
    let ticket = seeded.tickets[0].clone();
    let author = seeded.agents[0].id;
    compare(
        "add a message + preview + count (transaction)",
        20,
        || async {
            let message = Message {
                id: ObjectId::new(),
                ticket_id: ticket.to_ref(),
                from: Author::Agent,
                author_id: author,
                body: "Thanks, fixed.".into(),
                attachments: vec![],
                at: DateTime::now(),
            };
            Ticket::LAST_MESSAGE.add(&db, &message).await.unwrap();
        },
        || async {
            let message = Message {
                id: ObjectId::new(),
                ticket_id: ticket.to_ref(),
                from: Author::Agent,
                author_id: author,
                body: "Thanks, fixed.".into(),
                attachments: vec![],
                at: DateTime::now(),
            };
            let mut session = client.start_session().await.unwrap();
            session.start_transaction().await.unwrap();
            Message::collection(&db)
                .insert_one(&message)
                .session(&mut session)
                .await
                .unwrap();
            let preview = mongo_schema::bson::to_bson(&MessagePreview::from(&message)).unwrap();
            db.collection::<BsonDocument>("tickets")
                .update_one(
                    doc! { "_id": ticket.id },
                    doc! { "$set": { "lastMessage": preview }, "$inc": { "messageCount": 1_i64 } },
                )
                .session(&mut session)
                .await
                .unwrap();
            session.commit_transaction().await.unwrap();
        },
    )
    .await;

    // 2b. a batch of 50 references
    let refs: Vec<Ref<Customer>> = seeded
        .customers
        .iter()
        .step_by(16)
        .take(50)
        .map(|c| c.to_ref())
        .collect();
    let ids: Vec<ObjectId> = refs.iter().map(|r| *r.id()).collect();
    compare(
        "resolve 50 references (ordered, missing reported) vs $in",
        30,
        || async {
            let resolved = Ref::resolve_all(&db, &refs).await.unwrap();
            assert_eq!(resolved.documents.len(), 50);
        },
        || async {
            let found: Vec<Customer> = Customer::collection(&db)
                .find(doc! { "_id": { "$in": &ids } })
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            assert_eq!(found.len(), 50);
        },
    )
    .await;

    // 2c. a keyset page of a ticket's messages
    let busy = seeded
        .tickets
        .iter()
        .max_by_key(|t| t.message_count)
        .unwrap()
        .clone();
    compare(
        "a page of 20 messages: Relation::page vs find().sort().limit()",
        30,
        || async {
            let page = Message::TICKET_ID
                .page(&busy.to_ref())
                .limit(20)
                .fetch(&db)
                .await
                .unwrap();
            assert!(!page.items.is_empty());
        },
        || async {
            let page: Vec<Message> = Message::collection(&db)
                .find(doc! { "ticketId": busy.id })
                .sort(doc! { "at": 1, "_id": 1 })
                .limit(20)
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            assert!(!page.is_empty());
        },
    )
    .await;

    // 3. generated copy serde vs serde derive (CPU only, batched)
    let copies: Vec<TicketCustomer> = seeded.customers.iter().map(Into::into).collect();
    let plains: Vec<PlainCustomerCopy> = copies
        .iter()
        .map(|c| PlainCustomerCopy {
            id: c.id,
            name: c.name.clone(),
        })
        .collect();
    compare(
        "serialize + deserialize 800 copies: generated vs serde derive",
        20,
        || async {
            for copy in &copies {
                let doc = mongo_schema::bson::to_document(copy).unwrap();
                let back: TicketCustomer = mongo_schema::bson::from_document(doc).unwrap();
                std::hint::black_box(back);
            }
        },
        || async {
            for copy in &plains {
                let doc = mongo_schema::bson::to_document(copy).unwrap();
                let back: PlainCustomerCopy = mongo_schema::bson::from_document(doc).unwrap();
                std::hint::black_box(back);
            }
        },
    )
    .await;
    Ok(())
}
