//! Workers of one name that share the stream (`SyncWorker::partitions`): each applies the
//! events of its share of the partitions, every copy ends right, and the partitions of a worker
//! that shuts down, or is killed, are taken by the others.

mod common;

use std::time::{Duration, Instant};

use common::{authors, eventually, ready_within, shut_down_within, within};
use mongo_schema::bson::{doc, oid::ObjectId, Bson, Document as BsonDocument};
use mongo_schema::{SyncWorker, SyncWorkerHandle};

const NAME: &str = "posts";
const PARTITIONS: usize = 4;
const LEASE: Duration = Duration::from_secs(2);
const SHUTDOWN: Duration = Duration::from_secs(60);
const AUTHORS: usize = 40;
const POSTS_EACH: i64 = 3;

/// A database with `AUTHORS` authors, each copied by `POSTS_EACH` posts.
async fn seeded(prefix: &str) -> (mongodb::Database, Vec<ObjectId>) {
    let db = mongo_schema_testkit::database(prefix).await;
    authors::schema().apply(&db).await.unwrap();
    let authors: Vec<ObjectId> = (0..AUTHORS).map(|_| ObjectId::new()).collect();
    db.collection::<BsonDocument>("authors")
        .insert_many(authors.iter().map(|id| doc! { "_id": *id, "name": "v0" }))
        .await
        .unwrap();
    let posts: Vec<BsonDocument> = authors
        .iter()
        .enumerate()
        .flat_map(|(a, id)| {
            (0..POSTS_EACH).map(move |p| {
                doc! { "_id": a as i64 * POSTS_EACH + p, "author": { "_id": *id, "name": "v0" } }
            })
        })
        .collect();
    db.collection::<BsonDocument>("posts")
        .insert_many(posts)
        .await
        .unwrap();
    (db, authors)
}

fn worker(db: &mongodb::Database) -> SyncWorker {
    authors::schema()
        .sync_worker(db)
        .name(NAME)
        .partitions(PARTITIONS)
        .lease(LEASE)
        .max_await_time(Duration::from_millis(100))
        // `caught_up` on one worker reads the others' partitions from their saved tokens
        .token_save_interval(Duration::from_millis(200))
        .ready_timeout(Duration::from_secs(120))
}

async fn rename(db: &mongodb::Database, author: ObjectId, name: &str) {
    db.collection::<BsonDocument>("authors")
        .update_one(doc! { "_id": author }, doc! { "$set": { "name": name } })
        .await
        .unwrap();
}

/// The posts whose copy differs from their author's name.
async fn stale(db: &mongodb::Database, authors: &[ObjectId], names: &[String]) -> Vec<i64> {
    let mut stale = Vec::new();
    for (author, name) in authors.iter().zip(names) {
        let mut cursor = db
            .collection::<BsonDocument>("posts")
            .find(doc! { "author._id": *author, "author.name": { "$ne": name } })
            .await
            .unwrap();
        while cursor.advance().await.unwrap() {
            stale.push(
                cursor
                    .deserialize_current()
                    .unwrap()
                    .get_i64("_id")
                    .unwrap(),
            );
        }
    }
    stale
}

/// Renames every author to `name`, waits until `by` has caught up, and checks every copy.
async fn rename_all_and_check(
    db: &mongodb::Database,
    authors: &[ObjectId],
    name: &str,
    by: &SyncWorkerHandle,
) {
    for author in authors {
        rename(db, *author, name).await;
    }
    within(Duration::from_secs(120), "caught up", by.caught_up())
        .await
        .unwrap();
    let names = vec![name.to_owned(); authors.len()];
    assert_eq!(
        stale(db, authors, &names).await,
        Vec::<i64>::new(),
        "every copy holds `{name}` once caught_up returned"
    );
}

fn held(workers: &[&SyncWorkerHandle]) -> Vec<usize> {
    workers
        .iter()
        .map(|w| w.stats().partitions_held())
        .collect()
}

/// One author of each partition.
fn one_of_each_partition(authors: &[ObjectId]) -> Vec<ObjectId> {
    (0..PARTITIONS)
        .map(|p| {
            *authors
                .iter()
                .find(|a| SyncWorker::__partition_of(&Bson::ObjectId(**a), PARTITIONS) == p)
                .expect("an author in every partition")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_share_the_partitions_and_one_takes_over_when_the_other_shuts_down() {
    let (db, authors) = seeded("partitions_two").await;
    let a = worker(&db).spawn();
    let b = worker(&db).spawn();
    ready_within(&a, Duration::from_secs(120)).await;
    ready_within(&b, Duration::from_secs(120)).await;
    eventually(
        Duration::from_secs(30),
        "the two workers hold two partitions each",
        || async { held(&[&a, &b]) == [2, 2] },
    )
    .await;
    within(Duration::from_secs(120), "caught up", a.caught_up())
        .await
        .unwrap();

    rename_all_and_check(&db, &authors, "v1", &a).await;
    let (sa, sb) = (a.stats().snapshot(), b.stats().snapshot());
    println!("after v1: a {sa:?}\n b {sb:?}");
    assert!(sa.applied > 0, "the first worker applied events: {sa:?}");
    assert!(sb.applied > 0, "the second worker applied events: {sb:?}");
    assert!(
        sa.applied + sb.applied >= AUTHORS as u64,
        "between them they applied every rename"
    );

    // `status` lists each partition with its holder
    let tokens = db.collection::<BsonDocument>(mongo_schema::TOKENS_COLLECTION);
    let partitions = tokens
        .count_documents(doc! { "_id.worker": NAME, "_id.of": PARTITIONS as i64 })
        .await
        .unwrap();
    assert_eq!(partitions, PARTITIONS as u64);
    assert!(
        tokens
            .find_one(doc! { "_id": NAME })
            .await
            .unwrap()
            .is_none(),
        "a split name keeps no unsplit token document"
    );

    // b shuts down: it releases its partitions, and a takes them within the lease
    shut_down_within(b, SHUTDOWN).await;
    let left = Instant::now();
    let took = eventually(LEASE * 5, "a takes every partition", || async {
        a.stats().partitions_held() == PARTITIONS
    })
    .await;
    println!("a held every partition {took:?} after b shut down");
    assert!(
        left.elapsed() < LEASE,
        "a took b's partitions within the lease ({LEASE:?}): {took:?}"
    );
    // a rename of a source of each partition lands
    let each = one_of_each_partition(&authors);
    for author in &each {
        rename(&db, *author, "v2").await;
    }
    within(Duration::from_secs(60), "caught up", a.caught_up())
        .await
        .unwrap();
    assert_eq!(
        stale(&db, &each, &vec!["v2".to_owned(); PARTITIONS]).await,
        Vec::<i64>::new(),
        "the rename of a source of each partition landed"
    );
    shut_down_within(a, SHUTDOWN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_third_worker_takes_a_share_and_a_killed_ones_partitions_are_taken_once_its_leases_lapse()
{
    let (db, authors) = seeded("partitions_three").await;
    let a = worker(&db).spawn();
    let b = worker(&db).spawn();
    ready_within(&a, Duration::from_secs(120)).await;
    ready_within(&b, Duration::from_secs(120)).await;
    eventually(Duration::from_secs(30), "two and two", || async {
        held(&[&a, &b]) == [2, 2]
    })
    .await;

    let c = worker(&db).spawn();
    ready_within(&c, Duration::from_secs(120)).await;
    eventually(
        Duration::from_secs(30),
        "the third worker takes a share: 2, 1, 1 in some order",
        || async {
            let mut shares = held(&[&a, &b, &c]);
            shares.sort_unstable();
            shares == [1, 1, 2]
        },
    )
    .await;
    let before = c.stats().snapshot().applied;
    rename_all_and_check(&db, &authors, "v1", &a).await;
    assert!(
        c.stats().snapshot().applied > before,
        "the third worker applies the events of its share: {:?}",
        c.stats().snapshot()
    );

    // c is killed: it neither releases its partitions nor leaves; once its leases and its
    // heartbeat lapse, a and b take its share
    let c_held = c.stats().partitions_held();
    c.kill();
    let killed = Instant::now();
    let took = eventually(LEASE * 10, "a and b hold every partition again", || async {
        held(&[&a, &b]).iter().sum::<usize>() == PARTITIONS
    })
    .await;
    println!(
        "the {c_held} partition(s) of the killed worker were taken {took:?} after the kill \
         (lease {LEASE:?}): {:?}",
        held(&[&a, &b])
    );
    assert!(
        killed.elapsed() < LEASE * 4,
        "taken within a few leases: {took:?}"
    );
    let mut shares = held(&[&a, &b]);
    shares.sort_unstable();
    assert_eq!(shares, [2, 2]);
    rename_all_and_check(&db, &authors, "v2", &b).await;

    shut_down_within(a, SHUTDOWN).await;
    shut_down_within(b, SHUTDOWN).await;
}
