//! References on the real server: seed 000's `productsReferenced` `$lookup`, the followers
//! model with keyset pages, child/parent lookups, batch resolution, and `explain` of every
//! query shape the library emits.

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{explain, Action, Error, ExplainSummary, IndexReason, PageCursor, Warning};
use serde::{Deserialize, Serialize};

// ---- seed 000: products and parts ---------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "parts")]
#[index(keys(name = 1))]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "productsReferenced")]
pub struct ProductReferenced {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[serde(rename = "partIds")]
    #[reference(max = 200)]
    pub part_ids: Vec<Ref<Part>>,
}

// ---- seed 000: followers ------------------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

// two indexes on the same fields trip clippy's `duplicated_attributes`, which does not know
// what `#[index]` means (rust-lang/rust-clippy#13238)
#[allow(clippy::duplicated_attributes)]
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "follows")]
#[index(keys(followed_id = 1, follower_id = 1), unique)]
#[index(keys(follower_id = 1, followed_id = 1))]
#[serde(rename_all = "camelCase")]
pub struct Follow {
    #[reference]
    pub followed_id: Ref<User>,
    #[reference]
    pub follower_id: Ref<User>,
}

// ---- seed 003: tickets and messages --------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "agents")]
pub struct Agent {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    #[reference]
    pub assignee_id: Option<Ref<Agent>>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "messages", shard_key(ticket_id = 1, at = 1))]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub body: String,
    pub at: DateTime,
}

// ---- children whose sort key may be missing -----------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "sensors")]
pub struct Sensor {
    #[serde(rename = "_id")]
    pub id: i64,
}

/// Readings paged by `at` newest first per sensor, and oldest first per site; some have no `at`
/// at all and some hold `null`: both sort before every date.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "readings")]
#[index(keys(sensor_id = 1, at = -1))]
#[index(keys(site_id = 1, at = 1))]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub sensor_id: Ref<Sensor>,
    #[reference]
    pub site_id: Ref<Sensor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime>,
}

// ---- issue 20: the library-lending shape of the rustdoc's paging example ------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

/// A member's loans, newest first: the declared index is the page's, extended with `_id`.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "loans")]
#[index(keys(member_id = 1, loaned_at = -1))]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    pub loaned_at: DateTime,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Member>()
        .model::<Loan>()
        .model::<Part>()
        .model::<ProductReferenced>()
        .model::<User>()
        .model::<Follow>()
        .model::<Agent>()
        .model::<Ticket>()
        .model::<Message>()
        .model::<Sensor>()
        .model::<Reading>()
        .build()
        .unwrap()
}

async fn applied(prefix: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    schema().apply(&db).await.unwrap();
    db
}

use mongo_schema_testkit::is_secantus;

/// Every query shape must be served by an index. A real mongod also stops its index scan at the
/// limit (docs examined <= returned + 1); SecantusDB 0.7.0b3 reports the whole matching index
/// range as examined for a sorted or limited query, so on it that bound is printed, not required.
async fn assert_indexed(
    db: &mongodb::Database,
    what: &str,
    command: BsonDocument,
    returned: usize,
) -> ExplainSummary {
    let summary = explain(db, command.clone()).await.unwrap();
    println!("{what}: {summary}");
    assert!(
        summary.uses_index(),
        "{what} is not served by an index: {summary}\n{command}"
    );
    let bound = returned as i64 + 1;
    if summary.docs_examined > bound {
        assert!(
            is_secantus(db).await,
            "{what} examined {} documents for {returned} returned: {summary}",
            summary.docs_examined
        );
        println!(
            "  (SecantusDB examined {} for {returned} returned; mongod stops at the limit)",
            summary.docs_examined
        );
    }
    summary
}

/// A keyset page: served by an IXSCAN of `index` on every server, and on mongod read in index
/// order (no SORT stage). SecantusDB 0.7.0b3 adds an in-memory SORT where mongod walks the
/// index (SPEC §10), so on it the stage is printed, not refused.
async fn assert_keyset_page(
    db: &mongodb::Database,
    what: &str,
    command: BsonDocument,
    returned: usize,
    index: &str,
) -> ExplainSummary {
    let summary = assert_indexed(db, what, command, returned).await;
    assert_ixscan_of(what, &summary, index);
    if summary.stages.iter().any(|s| s == "SORT") {
        assert!(
            is_secantus(db).await,
            "{what} sorts in memory instead of walking its index: {summary}"
        );
        println!("  (SecantusDB adds a SORT stage; mongod reads the index in order)");
    }
    summary
}

/// The plan has an IXSCAN, no COLLSCAN, and every index it scans is `index`.
fn assert_ixscan_of(what: &str, summary: &ExplainSummary, index: &str) {
    assert!(
        summary.stages.iter().any(|s| s == "IXSCAN") && summary.uses_index(),
        "{what}: no IXSCAN: {summary}"
    );
    assert!(
        !summary.indexes.is_empty() && summary.indexes.iter().all(|i| i == index),
        "{what}: not served by `{index}`: {summary}"
    );
}

/// A page after a cursor is a rooted `$or` of ranges. SecantusDB 0.7.0b3 plans no filter with a
/// top-level operator on an index (SPEC §10), but it plans each range: so on every server each
/// range, as a `find` of its own with the page's sort and limit, is an IXSCAN of `index`; on
/// mongod the whole page is also one (each branch walks `index`, merged in index order, no
/// SORT). On SecantusDB the plan of the whole `$or` is printed.
async fn assert_ranges_page(
    db: &mongodb::Database,
    what: &str,
    command: BsonDocument,
    returned: usize,
    index: &str,
) {
    let filter = command.get_document("filter").unwrap();
    let ranges = filter.get_array("$or").expect("a rooted $or");
    for (i, range) in ranges.iter().enumerate() {
        let mut one = command.clone();
        one.insert("filter", range.clone());
        let summary = explain(db, one.clone()).await.unwrap();
        println!("{what}, range {i}: {summary}");
        assert_ixscan_of(&format!("{what}, range {i} {range}"), &summary, index);
    }
    if is_secantus(db).await {
        let summary = explain(db, command).await.unwrap();
        println!("{what}: {summary}\n  (SecantusDB plans no rooted $or on an index; mongod merges the index ranges)");
    } else {
        assert_keyset_page(db, what, command, returned, index).await;
    }
}

/// A page after a cursor on a key that is not unique: one `find` whose filter is a rooted `$or`
/// of two ranges of the reference index `{ reference, key, _id }`, each with the parent in it,
/// each range read from that index (see [`assert_ranges_page`]).
async fn assert_tie_page(db: &mongodb::Database, command: BsonDocument, returned: usize) {
    let filter = command.get_document("filter").unwrap();
    let branches = filter.get_array("$or").expect("a rooted $or");
    assert_eq!(filter.len(), 1, "nothing beside the $or: {filter}");
    assert_eq!(branches.len(), 2, "{filter}");
    for branch in branches {
        let keys: Vec<&str> = branch
            .as_document()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            &keys[..2],
            ["ticket_id", "at"],
            "parent, then key: {branch}"
        );
        assert!(keys[2..].iter().all(|k| *k == "_id"), "{branch}");
    }
    assert_ranges_page(db, "tied children", command, returned, MESSAGE_PAGES).await;
}

/// The reference index of `messages.ticket_id`, extended with the page key and `_id`.
const MESSAGE_PAGES: &str = "ticket_id_1_at_1__id_1";

#[tokio::test]
async fn seed_000_products_referenced_lookup_gives_the_seed_result() {
    let db = applied("ref_products").await;
    // db.parts.insertMany([...]); db.productsReferenced.insertOne({...})
    Part::collection(&db)
        .insert_many([
            Part {
                id: "wheel-1".into(),
                name: "Wheel".into(),
            },
            Part {
                id: "brake-1".into(),
                name: "Disc Brake".into(),
            },
        ])
        .await
        .unwrap();
    let bike = ProductReferenced {
        id: "bike-1".into(),
        name: "City Bike".into(),
        part_ids: vec![Ref::new("wheel-1".into()), Ref::new("brake-1".into())],
    };
    ProductReferenced::collection(&db)
        .insert_one(&bike)
        .await
        .unwrap();

    // the seed's own pipeline, verbatim
    let seed: Vec<BsonDocument> = common::all(
        db.collection::<BsonDocument>("productsReferenced").aggregate([
            doc! { "$match": { "_id": "bike-1" } },
            doc! { "$lookup": { "from": "parts", "localField": "partIds", "foreignField": "_id", "as": "parts" } },
        ]),
    )
    .await;

    let lookup = ProductReferenced::PART_IDS
        .lookup_in(&db)
        .filter(doc! { "_id": "bike-1" });
    assert_eq!(
        lookup.pipeline(),
        [
            doc! { "$match": { "_id": "bike-1" } },
            doc! { "$lookup": { "from": "parts", "localField": "partIds", "foreignField": "_id", "as": "__related" } },
        ]
    );
    let outer_command = lookup.aggregate_command();
    let join_command =
        lookup.related_find_command(Bson::Array(vec!["wheel-1".into(), "brake-1".into()]));
    let ours = lookup.await.unwrap();
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].doc, bike);
    let seed_parts: Vec<Part> = seed[0]
        .get_array("parts")
        .unwrap()
        .iter()
        .map(|p| mongo_schema::bson_compat::from_bson(p.clone()).unwrap())
        .collect();
    let mut sorted_ours = ours[0].related.clone();
    sorted_ours.sort_by(|a, b| a.id.cmp(&b.id));
    let mut sorted_seed = seed_parts.clone();
    sorted_seed.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(
        sorted_ours, sorted_seed,
        "same parts as the seed's pipeline"
    );
    // and in the order of the product's partIds
    assert_eq!(
        ours[0]
            .related
            .iter()
            .map(|p| p.id.as_str())
            .collect::<Vec<_>>(),
        ["wheel-1", "brake-1"]
    );

    assert_indexed(&db, "product lookup (outer)", outer_command, 1).await;
    assert_indexed(&db, "product lookup (join into parts)", join_command, 2).await;
    // the parts catalog searched by name, with its declared index
    assert_indexed(
        &db,
        "parts by name",
        doc! { "find": "parts", "filter": { "name": "Wheel" } },
        1,
    )
    .await;
}

#[tokio::test]
async fn followers_unique_follow_and_pages_of_50_in_follower_order() {
    let db = applied("ref_followers").await;
    let follows = Follow::collection(&db);
    let u1: Ref<User> = Ref::new("u1".into());
    // 1,000 followers of u1, inserted out of order, and some noise on u2
    let mut batch: Vec<Follow> = (0..1000)
        .map(|i| Follow {
            followed_id: u1.clone(),
            follower_id: Ref::new(format!("f{:04}", (i * 7919) % 1000)),
        })
        .collect();
    batch.extend((0..100).map(|i| Follow {
        followed_id: Ref::new("u2".into()),
        follower_id: Ref::new(format!("f{i:04}")),
    }));
    follows.insert_many(&batch).await.unwrap();

    // a duplicate follow is refused by the unique compound index
    let duplicate = follows
        .insert_one(Follow {
            followed_id: u1.clone(),
            follower_id: Ref::new("f0042".into()),
        })
        .await
        .in_collection(Follow::COLLECTION)
        .unwrap_err();
    match &duplicate {
        Error::Duplicate {
            collection,
            index,
            key,
            source,
            ..
        } => {
            assert_eq!(collection, Follow::COLLECTION);
            assert_eq!(index, "followedId_1_followerId_1", "{duplicate}");
            assert!(key.contains("f0042"), "the duplicated key: {key}");
            assert_eq!(duplicate.code(), Some(11000));
            assert!(
                matches!(source.kind.as_ref(), mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) if e.code == 11000),
                "the driver's error is kept"
            );
        }
        other => panic!("expected a duplicate key error, got {other}"),
    }

    // pages of 50 by followerId, continuing with $gt on the last key
    let mut seen = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = Follow::FOLLOWED_ID.page(&u1).after(after.clone());
        let result = Follow::FOLLOWED_ID
            .page_in(&db, &u1)
            .after(after.take())
            .await
            .unwrap();
        assert!(result.items.len() <= 50);
        pages += 1;
        if pages == 2 {
            let filter = page.find_filter();
            assert_eq!(
                filter
                    .get_document("followerId")
                    .unwrap()
                    .get_str("$gt")
                    .unwrap(),
                "f0049"
            );
            assert_keyset_page(
                &db,
                "follower page 2",
                page.find_command(),
                result.items.len(),
                "followedId_1_followerId_1",
            )
            .await;
        }
        seen.extend(result.items.iter().map(|f| f.follower_id.id().clone()));
        match result.next {
            Some(cursor) => after = Some(cursor),
            None => break,
        }
    }
    let expected: Vec<String> = (0..1000).map(|i| format!("f{i:04}")).collect();
    assert_eq!(seen, expected, "every follower once, in followerId order");
    assert_eq!(pages, 20, "20 full pages, no empty last one");

    // "who does f0042 follow?" uses the reversed index
    let f42: Ref<User> = Ref::new("f0042".into());
    let following = Follow::FOLLOWER_ID.page_in(&db, &f42).await.unwrap();
    assert_eq!(
        following
            .items
            .iter()
            .map(|f| f.followed_id.id().as_str())
            .collect::<Vec<_>>(),
        ["u1", "u2"]
    );
    assert_keyset_page(
        &db,
        "who f0042 follows",
        Follow::FOLLOWER_ID.page(&f42).find_command(),
        2,
        "followerId_1_followedId_1",
    )
    .await;
}

#[tokio::test]
async fn child_to_parent_and_parent_to_children_lookups() {
    let db = applied("ref_messages").await;
    let ana = Agent {
        id: ObjectId::new(),
        name: "Ana".into(),
    };
    Agent::collection(&db).insert_one(&ana).await.unwrap();
    let tickets: Vec<Ticket> = (0..30)
        .map(|i| Ticket {
            id: ObjectId::new(),
            subject: format!("ticket {i}"),
            assignee_id: (i % 3 == 0).then(|| ana.to_ref()),
        })
        .collect();
    Ticket::collection(&db).insert_many(&tickets).await.unwrap();
    let start = DateTime::now().timestamp_millis();
    let messages: Vec<Message> = (0..300)
        .map(|i| Message {
            id: ObjectId::new(),
            ticket_id: tickets[i % 30].to_ref(),
            body: format!("message {i}"),
            at: DateTime::from_millis(start + i as i64),
        })
        .collect();
    Message::collection(&db)
        .insert_many(&messages)
        .await
        .unwrap();

    // child -> parent: a page of messages with their ticket
    let with_ticket = Message::TICKET_ID
        .lookup_in(&db)
        .filter(doc! { "ticket_id": tickets[4].id })
        .sort(doc! { "ticket_id": 1, "at": -1 })
        .limit(5)
        .await
        .unwrap();
    assert_eq!(with_ticket.len(), 5);
    for joined in &with_ticket {
        assert_eq!(joined.one().unwrap(), &tickets[4]);
    }
    assert_eq!(with_ticket[0].doc.body, "message 274", "newest first");

    // parent -> children: two tickets with their 3 newest messages
    let lookup = Message::TICKET_ID
        .children_in(&db)
        .filter(doc! { "_id": { "$in": [tickets[1].id, tickets[2].id] } })
        .sort(doc! { "_id": 1 })
        .related_sort(doc! { "at": -1 })
        .related_limit(3);
    // the commands, for explain, before the lookup is awaited (and consumed)
    let pipeline = lookup.pipeline();
    let outer_command = lookup.aggregate_command();
    let join_command = lookup.related_find_command(Bson::ObjectId(tickets[1].id));
    let threads = lookup.await.unwrap();
    assert_eq!(threads.len(), 2);
    for thread in &threads {
        assert_eq!(thread.related.len(), 3);
        assert!(thread
            .related
            .iter()
            .all(|m| m.ticket_id.id() == &thread.doc.id));
        assert!(thread.related.windows(2).all(|w| w[0].at > w[1].at));
    }
    let stages: Vec<&str> = pipeline
        .iter()
        .map(|s| s.keys().next().unwrap().as_str())
        .collect();
    assert_eq!(
        stages,
        ["$match", "$sort", "$lookup"],
        "the input is reduced before the join"
    );

    assert_indexed(&db, "tickets with messages (outer)", outer_command, 2).await;
    assert_indexed(&db, "tickets with messages (join)", join_command, 3).await;

    // optional reference: the agent's tickets, through the reference index
    let queue = Ticket::ASSIGNEE_ID
        .children_in(&db)
        .filter(doc! { "_id": ana.id })
        .await
        .unwrap();
    assert_eq!(queue[0].related.len(), 10);
    assert_indexed(
        &db,
        "agent's tickets (join)",
        Ticket::ASSIGNEE_ID
            .children()
            .related_find_command(Bson::ObjectId(ana.id)),
        10,
    )
    .await;

    // keyset page of a ticket's messages by `at` (not unique: _id breaks ties)
    let mut after = None;
    let mut bodies = Vec::new();
    loop {
        let result = Message::TICKET_ID
            .page_in(&db, &tickets[7].to_ref())
            .limit(4)
            .after(after.take())
            .await
            .unwrap();
        bodies.extend(result.items.into_iter().map(|m| m.body));
        match result.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let expected: Vec<String> = (0..10).map(|k| format!("message {}", 7 + 30 * k)).collect();
    assert_eq!(bodies, expected);
    assert_keyset_page(
        &db,
        "message page",
        Message::TICKET_ID
            .page(&tickets[7].to_ref())
            .limit(4)
            .find_command(),
        4,
        MESSAGE_PAGES,
    )
    .await;
}

#[tokio::test]
async fn a_batch_of_references_is_one_in_query_in_reference_order_with_missing_reported() {
    let db = applied("ref_resolve").await;
    let parts: Vec<Part> = ["a", "b", "c", "d"]
        .iter()
        .map(|id| Part {
            id: (*id).into(),
            name: format!("part {id}"),
        })
        .collect();
    Part::collection(&db).insert_many(&parts).await.unwrap();
    let refs: Vec<Ref<Part>> = ["c", "zz", "a", "c", "d"]
        .iter()
        .map(|id| Ref::new((*id).into()))
        .collect();

    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let monitored = client.database(db.name());
    let resolved = Ref::resolve_all(&monitored, &refs).await.unwrap();
    assert_eq!(log.count("find"), 1, "one query for the whole batch");
    assert_eq!(
        resolved
            .documents
            .iter()
            .map(|p| p.id.as_str())
            .collect::<Vec<_>>(),
        ["c", "a", "d"]
    );
    assert_eq!(resolved.missing, [Ref::<Part>::new("zz".into())]);

    assert_indexed(&db, "batch resolve", Ref::resolve_command(&refs), 3).await;
}

#[tokio::test]
async fn build_rejects_a_reference_to_a_model_outside_the_schema() {
    let error = Schema::new().model::<Message>().build().unwrap_err();
    assert_eq!(error.problems.len(), 1, "{error}");
    assert!(
        error.problems[0].contains("`messages.ticket_id` references `Ticket`"),
        "{error}"
    );
    assert!(error.problems[0].contains(".model::<Ticket>()"), "{error}");
}

#[tokio::test]
async fn relationship_indexes_are_created_once_and_stale_ones_dropped_only_on_request() {
    let db = applied("ref_indexes").await;
    let names = |coll: &'static str| {
        let db = db.clone();
        async move {
            let mut names = db
                .collection::<BsonDocument>(coll)
                .list_index_names()
                .await
                .unwrap();
            names.sort();
            names
        }
    };
    assert_eq!(
        names("messages").await,
        ["_id_", "ticket_id_1_at_1__id_1"],
        "one index serves the shard key and the pages by `at` with an `_id` tie-break"
    );
    assert_eq!(names("tickets").await, ["_id_", "assignee_id_1"]);
    assert_eq!(
        names("follows").await,
        [
            "_id_",
            "followedId_1_followerId_1",
            "followerId_1_followedId_1"
        ]
    );

    db.collection::<BsonDocument>("tickets")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "subject": 1 })
                .build(),
        )
        .await
        .unwrap();
    let schema = schema();
    assert!(
        schema.apply(&db).await.unwrap().is_noop(),
        "kept unless asked"
    );
    let plan = schema.plan(&db).drop_stale_indexes(true).await.unwrap();
    assert!(
        matches!(&plan.actions[..], [Action::DropIndex { name, .. }] if name == "subject_1"),
        "{plan}"
    );
    let report = schema.apply(&db).drop_stale_indexes(true).await.unwrap();
    println!("{report}");
    assert_eq!(names("tickets").await, ["_id_", "assignee_id_1"]);
    assert!(schema
        .plan(&db)
        .drop_stale_indexes(true)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn pages_on_a_key_that_is_not_unique_return_every_tied_child_once() {
    let db = applied("ref_ties").await;
    let ticket = Ticket {
        id: ObjectId::new(),
        subject: "ties".into(),
        assignee_id: None,
    };
    Ticket::collection(&db).insert_one(&ticket).await.unwrap();
    let at = DateTime::now();
    // 7 messages at the same instant, then 3 later: pages of 3 cross the tie
    let mut messages: Vec<Message> = (0..10)
        .map(|i| Message {
            id: ObjectId::new(),
            ticket_id: ticket.to_ref(),
            body: format!("m{i}"),
            at: if i < 7 {
                at
            } else {
                DateTime::from_millis(at.timestamp_millis() + i)
            },
        })
        .collect();
    Message::collection(&db)
        .insert_many(&messages)
        .await
        .unwrap();
    messages.sort_by_key(|m| (m.at, m.id));
    let mut read = Vec::new();
    let mut after = None;
    loop {
        let result = Message::TICKET_ID
            .page_in(&db, &ticket.to_ref())
            .limit(3)
            .after(after.take())
            .await
            .unwrap();
        read.extend(result.items.into_iter().map(|m| m.id));
        match result.next {
            Some(next) => {
                let page = Message::TICKET_ID
                    .page(&ticket.to_ref())
                    .limit(3)
                    .after(next.clone());
                assert_tie_page(&db, page.find_command(), 3).await;
                after = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(
        read,
        messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        "every child once, in (at, _id) order"
    );
}

#[tokio::test]
async fn pages_cross_from_dates_to_missing_and_null_keys_in_both_directions() {
    let db = applied("ref_null_keys").await;
    let sensor = Sensor { id: 1 };
    Sensor::collection(&db).insert_one(&sensor).await.unwrap();
    // 5 dated readings (two share a date), 3 with no `at`, 2 with `at: null`
    let readings: Vec<Reading> = (0..10)
        .map(|i| Reading {
            id: i,
            sensor_id: sensor.to_ref(),
            site_id: sensor.to_ref(),
            at: (i < 5).then(|| DateTime::from_millis(1_000 + i.min(3) * 10)),
        })
        .collect();
    Reading::collection(&db)
        .insert_many(&readings)
        .await
        .unwrap();
    db.collection::<BsonDocument>("readings")
        .update_many(
            doc! { "_id": { "$in": [8_i64, 9_i64] } },
            doc! { "$set": { "at": Bson::Null } },
        )
        .await
        .unwrap();
    // index order: (at, _id) with missing and null together below every date
    let mut ascending: Vec<(Option<i64>, i64)> = readings
        .iter()
        .map(|r| (r.at.map(|a| a.timestamp_millis()), r.id))
        .collect();
    ascending.sort();
    let descending: Vec<(Option<i64>, i64)> = ascending.iter().rev().cloned().collect();

    for (what, relation, expected) in [
        ("newest first", Reading::SENSOR_ID, descending),
        ("oldest first", Reading::SITE_ID, ascending),
    ] {
        for limit in [1, 2, 3, 4] {
            let mut read = Vec::new();
            let mut next: Option<PageCursor> = None;
            for _ in 0..20 {
                let result = relation
                    .page_in(&db, &sensor.to_ref())
                    .limit(limit)
                    .after(next.take())
                    .await
                    .unwrap();
                read.extend(
                    result
                        .items
                        .iter()
                        .map(|r| (r.at.map(|a| a.timestamp_millis()), r.id)),
                );
                match result.next {
                    Some(cursor) => next = Some(cursor),
                    None => break,
                }
            }
            assert_eq!(
                read, expected,
                "{what}, pages of {limit}: every reading once, in index order"
            );
        }
    }

    // after a date, newest first: the ties, the older dates, and the null-or-missing range,
    // which `$lt` on a date never matches; each a range of `{ sensor_id, at, _id }`
    let page = Reading::SENSOR_ID
        .page(&sensor.to_ref())
        .limit(2)
        .after(PageCursor {
            key: Bson::DateTime(DateTime::from_millis(1_010)),
            id: Bson::Int64(1),
        });
    let filter = page.find_filter();
    let ranges = filter.get_array("$or").expect("a rooted $or");
    assert_eq!(ranges.len(), 3, "{filter}");
    assert_eq!(
        ranges[2],
        Bson::Document(doc! { "sensor_id": 1_i64, "at": Bson::Null }),
        "{filter}"
    );
    assert_ranges_page(
        &db,
        "readings after a date, newest first",
        page.find_command(),
        2,
        "sensor_id_1_at_-1__id_-1",
    )
    .await;
}

/// Issue 20: the declared `{ member_id: 1, loaned_at: -1 }` and the `{ member_id, loaned_at,
/// _id }` the pages need are one index, which serves every page in index order (no SORT on
/// mongod); a deployment that has the old declared index as well is told it is redundant.
#[tokio::test]
async fn one_index_serves_a_declared_order_and_the_pages_of_the_children() {
    let spec = Loan::collection_spec();
    let names: Vec<&str> = spec.indexes.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["member_id_1_loaned_at_-1__id_-1"], "{spec:?}");
    assert_eq!(
        spec.indexes[0].keys,
        doc! { "member_id": 1, "loaned_at": -1, "_id": -1 }
    );
    assert_eq!(
        spec.indexes[0].reasons,
        [
            IndexReason::Declared,
            IndexReason::Reference {
                field: "member_id".into(),
                target: "members".into()
            }
        ]
    );
    assert_eq!(Loan::indexes().len(), 1);

    let db = applied("ref_loans").await;
    let loan_indexes = || {
        let db = db.clone();
        async move {
            let mut names = db
                .collection::<BsonDocument>("loans")
                .list_index_names()
                .await
                .unwrap();
            names.sort();
            names
        }
    };
    assert_eq!(
        loan_indexes().await,
        ["_id_", "member_id_1_loaned_at_-1__id_-1"]
    );

    let member = Member {
        id: ObjectId::new(),
        name: "Ada".into(),
    };
    let other = Member {
        id: ObjectId::new(),
        name: "Grace".into(),
    };
    Member::collection(&db)
        .insert_many([&member, &other])
        .await
        .unwrap();
    // 9 loans of Ada (three share an instant), 2 of Grace
    let base = DateTime::now().timestamp_millis();
    let mut loans: Vec<Loan> = (0..9)
        .map(|i| Loan {
            id: ObjectId::new(),
            member_id: member.to_ref(),
            loaned_at: DateTime::from_millis(base - i.min(6) * 1000),
        })
        .collect();
    let others: Vec<Loan> = (0..2)
        .map(|i| Loan {
            id: ObjectId::new(),
            member_id: other.to_ref(),
            loaned_at: DateTime::from_millis(base - i),
        })
        .collect();
    Loan::collection(&db)
        .insert_many(loans.iter().chain(&others))
        .await
        .unwrap();
    loans.sort_by_key(|l| std::cmp::Reverse((l.loaned_at, l.id)));

    let mut read = Vec::new();
    let mut page = Loan::MEMBER_ID.page(&member.to_ref()).limit(2);
    assert_keyset_page(
        &db,
        "a member's first page of loans",
        page.find_command(),
        2,
        "member_id_1_loaned_at_-1__id_-1",
    )
    .await;
    let mut after = None;
    loop {
        let result = Loan::MEMBER_ID
            .page_in(&db, &member.to_ref())
            .limit(2)
            .after(after.take())
            .await
            .unwrap();
        read.extend(result.items.into_iter().map(|l| l.id));
        match result.next {
            Some(next) => {
                after = Some(next.clone());
                page = Loan::MEMBER_ID.page(&member.to_ref()).limit(2).after(next);
                assert_ranges_page(
                    &db,
                    "a member's next page of loans",
                    page.find_command(),
                    2,
                    "member_id_1_loaned_at_-1__id_-1",
                )
                .await;
            }
            None => break,
        }
    }
    assert_eq!(
        read,
        loans.iter().map(|l| l.id).collect::<Vec<_>>(),
        "every loan of the member once, newest first"
    );

    // a deployment made before: the declared index was created as declared, beside the page's
    db.collection::<BsonDocument>("loans")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "member_id": 1, "loaned_at": -1 })
                .build(),
        )
        .await
        .unwrap();
    let schema = schema();
    let plan = schema.plan(&db).await.unwrap();
    println!("{plan}");
    assert!(plan.is_empty(), "{plan}");
    assert!(
        plan.warnings.iter().any(|w| matches!(
            w,
            Warning::PrefixIndex { collection, name, served_by, .. }
                if collection == "loans"
                    && name == "member_id_1_loaned_at_-1"
                    && served_by == "member_id_1_loaned_at_-1__id_-1"
        )),
        "{plan}"
    );
    assert!(
        !plan
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::PrefixIndex { collection, .. } if collection != "loans")),
        "no other collection has a prefix index: {plan}"
    );
    let plan = schema.plan(&db).drop_stale_indexes(true).await.unwrap();
    assert!(
        matches!(&plan.actions[..], [Action::DropIndex { name, .. }] if name == "member_id_1_loaned_at_-1"),
        "{plan}"
    );
    schema.apply(&db).drop_stale_indexes(true).await.unwrap();
    assert_eq!(
        loan_indexes().await,
        ["_id_", "member_id_1_loaned_at_-1__id_-1"]
    );
    let plan = schema.plan(&db).await.unwrap();
    assert!(
        plan.is_empty()
            && !plan
                .warnings
                .iter()
                .any(|w| matches!(w, Warning::PrefixIndex { .. })),
        "{plan}"
    );
}
