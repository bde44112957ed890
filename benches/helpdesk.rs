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
//!    with its preview (transaction), deleting the newest message (its preview refilled from the
//!    next one, in the transaction), a batch of references, a keyset page (the first, and the
//!    next one inside a run of equal keys), renaming a customer with its transactional copies,
//!    appending to a bucket, a like added and deleted with its post's `#[counter]` (asserted to
//!    send as many commands as the hand-written transaction). Each line also prints the
//!    commands one call of each side sends (driver command monitoring).
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
use mongo_schema_testkit::CommandLog;
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

/// The commands one call of `f` sends (driver command monitoring), without the driver's own
/// `endSessions`.
async fn commands_of<F: Future<Output = ()>>(log: &CommandLog, f: impl FnOnce() -> F) -> usize {
    log.clear();
    f().await;
    log.names().iter().filter(|n| *n != "endSessions").count()
}

/// Runs `a` and `b` alternately, `iterations` times per round, and prints the medians per call
/// with the commands one call of each sends; returns the ratio and the two command counts.
async fn compare<A, FA, B, FB>(
    what: &str,
    iterations: usize,
    log: &CommandLog,
    mut a: A,
    mut b: B,
) -> (f64, (usize, usize))
where
    A: FnMut() -> FA,
    FA: Future<Output = ()>,
    B: FnMut() -> FB,
    FB: Future<Output = ()>,
{
    let commands = (
        commands_of(log, &mut a).await,
        commands_of(log, &mut b).await,
    );
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
    let ratio = ma.as_secs_f64() / mb.as_secs_f64();
    println!(
        "{what:<68} {:>9.3} ms {:>9.3} ms   ratio {ratio:.2}   commands {} / {}",
        ma.as_secs_f64() * 1e3,
        mb.as_secs_f64() * 1e3,
        commands.0,
        commands.1
    );
    (ratio, commands)
}

/// A post with its like count (`#[counter]`), for the counter's lines.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "posts")]
pub struct Post {
    #[serde(rename = "_id")]
    id: ObjectId,
    title: String,
    #[counter(of = Like)]
    like_count: i64,
}

/// A like of a post.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "likes")]
pub struct Like {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference]
    post_id: Ref<Post>,
    user: String,
}

/// One thing an agent did, kept in buckets of 200 per agent (the bucket pattern).
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone)]
pub struct Activity {
    at: DateTime,
    ticket: ObjectId,
}

/// An agent's activity bucket.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "agentActivity")]
#[bucket(parent = agent_id, entries = events, count = count, key = "at", first = first_at, last = last_at)]
pub struct AgentActivity {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference]
    agent_id: Ref<Agent>,
    #[embed(max = 200)]
    events: Vec<Activity>,
    count: i64,
    first_at: DateTime,
    last_at: DateTime,
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

/// An agent's reply to `ticket`.
fn reply(ticket: &Ticket, author: ObjectId) -> Message {
    Message {
        id: ObjectId::new(),
        ticket_id: ticket.to_ref(),
        from: Author::Agent,
        author_id: author,
        body: "Thanks, fixed.".into(),
        attachments: vec![],
        at: DateTime::now(),
    }
}

/// The baseline's writes of a reply in `session`: the message, then the ticket's preview and
/// count, as a service would write them with the driver alone.
async fn insert_with_preview_by_hand(
    db: &mongodb::Database,
    session: &mut mongodb::ClientSession,
    ticket: &Ticket,
    message: &Message,
) {
    Message::collection(db)
        .insert_one(message)
        .session(&mut *session)
        .await
        .unwrap();
    let preview = mongo_schema::bson::to_bson(&MessagePreview::from(message)).unwrap();
    db.collection::<BsonDocument>("tickets")
        .update_one(
            doc! { "_id": ticket.id },
            doc! { "$set": { "lastMessage": preview }, "$inc": { "messageCount": 1_i64 } },
        )
        .session(&mut *session)
        .await
        .unwrap();
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, log) =
        mongo_schema_testkit::monitored_client_at(&mongo_schema_testkit::uri()).await;
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

    println!(
        "{:<68} {:>12} {:>12}   {:<11} commands per call (ours / baseline)",
        "", "ours", "baseline", ""
    );

    // 1. the queue: one query on copies vs three $lookups
    // ours is the declared query (`#[query(name = "agent_queue", ...)]`); the baseline's filter
    // and sort are written by hand
    let filter = doc! { "team": "billing", "status": "open" };
    let sort = doc! { "priority": -1, "updatedAt": -1 };
    compare(
        "agent queue, 20 rows: copies on the ticket vs $lookup x3",
        30,
        &log,
        || async {
            let rows: Vec<Ticket> = Ticket::agent_queue(&db, "billing", &Status::Open).limit(20).await.unwrap();
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
        &log,
        || async {
            let message = reply(&ticket, author);
            Ticket::LAST_MESSAGE.add(&db, &message).await.unwrap();
        },
        || async {
            let message = reply(&ticket, author);
            let mut session = client.start_session().await.unwrap();
            session.start_transaction().await.unwrap();
            insert_with_preview_by_hand(&db, &mut session, &ticket, &message).await;
            session.commit_transaction().await.unwrap();
        },
    )
    .await;

    // 2a'. the same, with a write of the service's own in the transaction (the ticket's
    // `updatedAt`): Schema::transaction vs the hand-written driver transaction
    let schema = model::schema();
    compare(
        "add a message + the service's own write (Schema::transaction)",
        20,
        &log,
        || async {
            let message = reply(&ticket, author);
            schema
                .transaction(&db)
                .add(&Ticket::LAST_MESSAGE, &message)
                .update_one::<Ticket>(
                    doc! { "_id": ticket.id },
                    doc! { "$set": { "updatedAt": message.at } },
                )
                .await
                .unwrap();
        },
        || async {
            let message = reply(&ticket, author);
            let mut session = client.start_session().await.unwrap();
            session.start_transaction().await.unwrap();
            insert_with_preview_by_hand(&db, &mut session, &ticket, &message).await;
            db.collection::<BsonDocument>("tickets")
                .update_one(
                    doc! { "_id": ticket.id },
                    doc! { "$set": { "updatedAt": message.at } },
                )
                .session(&mut session)
                .await
                .unwrap();
            session.commit_transaction().await.unwrap();
        },
    )
    .await;

    // 2a''. deleting the newest message: Subset::delete (the message, the preview refilled from
    // the next newest, the count) vs the hand-written transaction of the same three commands
    let pool = |n: usize| {
        (0..n)
            .map(|_| reply(&ticket, author))
            .collect::<Vec<Message>>()
    };
    let calls = ROUNDS * 20 + 2;
    let (ours, theirs) = (pool(calls), pool(calls));
    Message::collection(&db)
        .insert_many(ours.iter().chain(&theirs))
        .await?;
    db.collection::<BsonDocument>("tickets")
        .update_one(
            doc! { "_id": ticket.id },
            doc! { "$inc": { "messageCount": (2 * calls) as i64 } },
        )
        .await?;
    let ours = std::sync::Mutex::new(ours);
    let theirs = std::sync::Mutex::new(theirs);
    compare(
        "delete the newest message, preview refilled + count (transaction)",
        20,
        &log,
        || async {
            let message = ours.lock().unwrap().pop().expect("a message to delete");
            assert!(Ticket::LAST_MESSAGE
                .delete(&db, &message.to_ref())
                .await
                .unwrap());
        },
        || async {
            let message = theirs.lock().unwrap().pop().expect("a message to delete");
            let mut session = client.start_session().await.unwrap();
            session.start_transaction().await.unwrap();
            let messages = db.collection::<BsonDocument>("messages");
            messages
                .find_one_and_delete(doc! { "_id": message.id })
                .session(&mut session)
                .await
                .unwrap()
                .expect("the message");
            let newest = messages
                .find_one(doc! { "ticketId": ticket.id })
                .sort(doc! { "at": -1 })
                .session(&mut session)
                .await
                .unwrap();
            let preview = match newest {
                Some(raw) => {
                    let m: Message = mongo_schema::bson::from_document(raw).unwrap();
                    mongo_schema::bson::to_bson(&MessagePreview::from(&m)).unwrap()
                }
                None => mongo_schema::bson::Bson::Null,
            };
            db.collection::<BsonDocument>("tickets")
                .update_one(
                    doc! { "_id": ticket.id },
                    doc! { "$set": { "lastMessage": preview }, "$inc": { "messageCount": -1_i64 } },
                )
                .session(&mut session)
                .await
                .unwrap();
            session.commit_transaction().await.unwrap();
        },
    )
    .await;

    // 2d. a like: the counter's add (the like and the post's `$inc` in one transaction) vs the
    // hand-written transaction of the same two writes; then the delete of a like
    let likes_schema = Schema::new().model::<Post>().model::<Like>().build()?;
    likes_schema.apply(&db).await?;
    let post = Post {
        id: ObjectId::new(),
        title: "a post".into(),
        like_count: 0,
    };
    Post::collection(&db).insert_one(&post).await?;
    let like = |user: &str| Like {
        id: ObjectId::new(),
        post_id: post.to_ref(),
        user: user.into(),
    };
    let liked = std::sync::Mutex::new(Vec::new());
    let liked_by_hand = std::sync::Mutex::new(Vec::new());
    let (ratio, commands) = compare(
        "add a like + the post's count (Post::LIKE_COUNT.add)",
        20,
        &log,
        || async {
            let like = like("ours");
            Post::LIKE_COUNT.add(&db, &like).await.unwrap();
            liked.lock().unwrap().push(like.id);
        },
        || async {
            let like = like("theirs");
            let mut session = client.start_session().await.unwrap();
            session.start_transaction().await.unwrap();
            Like::collection(&db)
                .insert_one(&like)
                .session(&mut session)
                .await
                .unwrap();
            db.collection::<BsonDocument>("posts")
                .update_one(
                    doc! { "_id": post.id },
                    doc! { "$inc": { "like_count": 1_i64 } },
                )
                .session(&mut session)
                .await
                .unwrap();
            session.commit_transaction().await.unwrap();
            liked_by_hand.lock().unwrap().push(like.id);
        },
    )
    .await;
    assert_eq!(
        commands.0, commands.1,
        "the counter sends the hand-written commands"
    );
    println!("    Post::LIKE_COUNT.add / hand-written transaction: {ratio:.3}");
    let (ratio, commands) = compare(
        "delete a like + the post's count (Post::LIKE_COUNT.delete)",
        20,
        &log,
        || async {
            let id = liked.lock().unwrap().pop().expect("a like to delete");
            assert!(Post::LIKE_COUNT.delete(&db, &Ref::new(id)).await.unwrap());
        },
        || async {
            let id = liked_by_hand
                .lock()
                .unwrap()
                .pop()
                .expect("a like to delete");
            let mut session = client.start_session().await.unwrap();
            session.start_transaction().await.unwrap();
            Like::collection(&db)
                .find_one_and_delete(doc! { "_id": id })
                .session(&mut session)
                .await
                .unwrap()
                .expect("the like");
            db.collection::<BsonDocument>("posts")
                .update_one(
                    doc! { "_id": post.id },
                    doc! { "$inc": { "like_count": -1_i64 } },
                )
                .session(&mut session)
                .await
                .unwrap();
            session.commit_transaction().await.unwrap();
        },
    )
    .await;
    assert_eq!(
        commands.0, commands.1,
        "the counter sends the hand-written commands"
    );
    println!("    Post::LIKE_COUNT.delete / hand-written transaction: {ratio:.3}");

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
        &log,
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
        &log,
        || async {
            let page = Message::TICKET_ID
                .page_in(&db, &busy.to_ref())
                .limit(20)
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

    // 2d. the page after a cursor inside a run of equal keys (`at` is not unique): the rooted
    // `$or` of two ranges of `{ ticketId, at, _id }`. mongod merges the two index ranges;
    // SecantusDB 0.7 plans no rooted `$or` on an index and scans the collection, for both sides.
    let tied = seeded.tickets[1].clone();
    let at = DateTime::now();
    let ties: Vec<Message> = (0..60)
        .map(|i| Message {
            id: ObjectId::new(),
            ticket_id: tied.to_ref(),
            from: Author::Customer,
            author_id: tied.customer.id,
            body: format!("tied {i}"),
            attachments: vec![],
            at,
        })
        .collect();
    Message::collection(&db).insert_many(&ties).await?;
    let first = Message::TICKET_ID
        .page_in(&db, &tied.to_ref())
        .limit(20)
        .await?;
    let cursor = first.next.clone().expect("a second page");
    let (key, id) = (cursor.key.clone(), cursor.id.clone());
    compare(
        "the next page of 20, inside equal keys: Relation::page vs $or find",
        30,
        &log,
        || async {
            let page = Message::TICKET_ID
                .page_in(&db, &tied.to_ref())
                .limit(20)
                .after(cursor.clone())
                .await
                .unwrap();
            assert_eq!(page.items.len(), 20);
        },
        || async {
            let page: Vec<Message> = Message::collection(&db)
                .find(doc! { "$or": [
                    { "ticketId": tied.id, "at": key.clone(), "_id": { "$gt": id.clone() } },
                    { "ticketId": tied.id, "at": { "$gt": key.clone() } },
                ] })
                .sort(doc! { "at": 1, "_id": 1 })
                .limit(20)
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            assert_eq!(page.len(), 20);
        },
    )
    .await;

    // 2e. renaming a customer with its copies on the tickets, in one transaction
    let schema = model::schema();
    let renamed = seeded.customers[0].id;
    let n = std::cell::Cell::new(0);
    compare(
        "rename a customer + copies (transaction): update_source vs driver",
        20,
        &log,
        || {
            n.set(n.get() + 1);
            let (schema, db, name) = (&schema, &db, format!("Customer {}", n.get()));
            async move {
                schema
                    .update_source::<Customer>(db, &renamed, doc! { "$set": { "name": name } })
                    .await
                    .unwrap();
            }
        },
        || {
            n.set(n.get() + 1);
            let (client, db, name) = (&client, &db, format!("Customer {}", n.get()));
            async move {
                let mut session = client.start_session().await.unwrap();
                session.start_transaction().await.unwrap();
                db.collection::<BsonDocument>("customers")
                    .find_one_and_update(
                        doc! { "_id": renamed },
                        doc! { "$set": { "name": &name } },
                    )
                    .return_document(mongodb::options::ReturnDocument::After)
                    .session(&mut session)
                    .await
                    .unwrap();
                db.collection::<BsonDocument>("tickets")
                    .update_many(
                        doc! { "customer._id": renamed },
                        doc! { "$set": { "customer.name": &name } },
                    )
                    .session(&mut session)
                    .await
                    .unwrap();
                session.commit_transaction().await.unwrap();
            }
        },
    )
    .await;

    // 2f. appending to an agent's activity bucket: one upsert either way
    let buckets = client.database("mongo_schema_bench_buckets");
    buckets.drop().await?;
    Schema::new()
        .model::<Agent>()
        .model::<AgentActivity>()
        .build()?
        .apply(&buckets)
        .await?;
    // one agent per side, so both fill buckets of the same sizes in the same order
    let (agent, other) = (seeded.agents[0].to_ref(), seeded.agents[1].to_ref());
    let event = || Activity {
        at: DateTime::now(),
        ticket: ObjectId::new(),
    };
    compare(
        "append to a bucket of 200: Bucket::append vs upsert",
        30,
        &log,
        || async {
            AgentActivity::BUCKET
                .append(&buckets, &agent, &event())
                .await
                .unwrap();
        },
        || async {
            let event = event();
            buckets
                .collection::<BsonDocument>("agentActivity")
                .update_one(
                    doc! { "agent_id": other.id(), "count": { "$lt": 200_i64 } },
                    doc! {
                        "$push": { "events": mongo_schema::bson::to_bson(&event).unwrap() },
                        "$inc": { "count": 1_i64 },
                        "$min": { "first_at": event.at },
                        "$max": { "last_at": event.at },
                    },
                )
                .upsert(true)
                .await
                .unwrap();
        },
    )
    .await;
    buckets.drop().await?;

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
        &log,
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
