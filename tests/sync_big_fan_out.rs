//! After a rename that fans out to 100,000 holders, a rename of another source lands within 2 s
//! while the fan-out still runs, and every later rename lands. Its own test binary, so its own
//! test server: the 2 s are the worker's, not the other live tests' sharing the server's one
//! Python process and the machine's cores (cargo runs test binaries one after another).

mod common;

use std::time::{Duration, Instant};

use common::{authors, eventually, ready_within, shut_down_within};
use mongo_schema::bson::{doc, oid::ObjectId, Document as BsonDocument};

const SHUTDOWN: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_fan_out_to_100000_holders_the_next_rename_lands() {
    const HOLDERS: i64 = 100_000;
    let db = mongo_schema_testkit::database("live_big_fan_out").await;
    let schema = authors::schema();
    schema.apply(&db).await.unwrap();
    let (prolific, occasional) = (ObjectId::new(), ObjectId::new());
    db.collection::<BsonDocument>("authors")
        .insert_many([
            doc! { "_id": prolific, "name": "Pro" },
            doc! { "_id": occasional, "name": "Occ" },
        ])
        .await
        .unwrap();
    let started = Instant::now();
    let posts = db.collection::<BsonDocument>("posts");
    let docs: Vec<BsonDocument> = (0..HOLDERS)
        .map(|i| doc! { "_id": i, "author": { "_id": prolific, "name": "Pro" } })
        .chain([doc! { "_id": -1_i64, "author": { "_id": occasional, "name": "Occ" } }])
        .collect();
    for part in docs.chunks(10_000) {
        posts.insert_many(part.to_vec()).await.unwrap();
    }
    println!("{} posts inserted in {:?}", HOLDERS + 1, started.elapsed());

    let worker = schema
        .sync_worker(&db)
        .name("big")
        .ready_timeout(Duration::from_secs(300))
        .spawn();
    ready_within(&worker, Duration::from_secs(300)).await;
    let started = Instant::now();
    authors::rename_author(&db, prolific, "Pro 2").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let small = Instant::now();
    authors::rename_author(&db, occasional, "Occ 2").await;
    let landed = eventually(
        Duration::from_secs(300),
        "the one-post author's rename lands during the big fan-out",
        || async {
            posts
                .count_documents(doc! { "_id": -1_i64, "author.name": "Occ 2" })
                .await
                .unwrap()
                == 1
        },
    )
    .await;
    let big_then = posts
        .count_documents(doc! { "author.name": "Pro 2" })
        .await
        .unwrap();
    println!(
        "the small rename landed {landed:?} after it was made ({:?} after the big one), when \
         {big_then} of {HOLDERS} big holders had; {:?}",
        small.elapsed(),
        worker.stats().snapshot()
    );
    assert!(
        big_then < HOLDERS as u64,
        "the big fan-out was still running when the small rename landed (the control: it did \
         not wait for it)"
    );
    assert!(
        landed < Duration::from_secs(2),
        "a one-holder rename lands in under 2 s while a 100,000-holder fan-out runs: {landed:?}"
    );
    // SecantusDB projects every event of the stream with its looked-up document before the
    // worker's `$match` (mongod filters on the namespace first), so the stream read during the
    // fan-out costs it a lookup per rewritten post: minutes on a busy 2-core machine
    eventually(
        Duration::from_secs(900),
        "every post of the prolific author is renamed",
        || async {
            posts
                .count_documents(doc! { "author.name": "Pro 2" })
                .await
                .unwrap()
                == HOLDERS as u64
        },
    )
    .await;
    println!("all renamed after {:?}", started.elapsed());
    // and later renames too
    for round in 3..5 {
        let name = format!("Occ {round}");
        authors::rename_author(&db, occasional, &name).await;
        eventually(Duration::from_secs(30), "a later rename lands", || async {
            posts
                .count_documents(doc! { "_id": -1_i64, "author.name": &name })
                .await
                .unwrap()
                == 1
        })
        .await;
    }
    shut_down_within(worker, SHUTDOWN).await;
}
