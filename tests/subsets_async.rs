//! `#[subset(sync = "async")]`: the sync worker follows the child collection and keeps every
//! parent's previews and count equal to what its children say, whoever writes the children
//! (plain driver calls here, no helper). Convergence is checked by this test's own reads of
//! the children. Also: `apply` enables the pre-images the worker reads a deleted child's parent
//! from, and a standby worker takes over from a killed one.

mod common;

use std::future::IntoFuture;
use std::time::Duration;

use common::{eventually, shut_down, within};
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "channels")]
pub struct Channel {
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    /// The two newest posts (i64 count of all).
    #[subset(of = Post, max = 2, sort = "-at", count = "posts", sync = "async")]
    pub newest: Vec<PostPreview>,
    pub posts: i64,
    /// The newest pinned post (i32 count of the pinned ones).
    #[subset(of = Post, max = 1, sort = "-at", count = "pinned", sync = "async", filter = r#"{ "pinned": true }"#)]
    pub last_pinned: Option<PostPreview>,
    pub pinned: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "posts")]
#[index(keys(channel_id = 1, at = -1))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub channel_id: Ref<Channel>,
    pub text: String,
    pub at: i64,
    pub pinned: bool,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PostPreview {
    pub text: String,
    pub at: i64,
}

impl From<&Post> for PostPreview {
    fn from(post: &Post) -> Self {
        PostPreview {
            text: post.text.clone(),
            at: post.at,
        }
    }
}

fn schema() -> Schema {
    Schema::new()
        .model::<Channel>()
        .model::<Post>()
        .build()
        .unwrap()
}

fn channel(id: i64) -> Channel {
    Channel {
        id,
        title: "general".into(),
        newest: vec![],
        posts: 0,
        last_pinned: None,
        pinned: 0,
    }
}

fn post(id: i64, channel: i64, at: i64, pinned: bool) -> Post {
    Post {
        id,
        channel_id: Ref::new(channel),
        text: format!("post {id}"),
        at,
        pinned,
    }
}

/// What `channel` must show, from a plain read of its posts.
async fn expected(db: &mongodb::Database, channel: i64) -> Channel {
    let mut posts: Vec<Post> =
        common::all(Post::collection(db).find(doc! { "channel_id": channel })).await;
    posts.sort_by_key(|p| std::cmp::Reverse(p.at));
    let pinned: Vec<&Post> = posts.iter().filter(|p| p.pinned).collect();
    Channel {
        id: channel,
        title: "general".into(),
        newest: posts.iter().take(2).map(PostPreview::from).collect(),
        posts: posts.len() as i64,
        last_pinned: pinned.first().map(|p| PostPreview::from(*p)),
        pinned: pinned.len() as i32,
    }
}

async fn stored(db: &mongodb::Database, channel: i64) -> Channel {
    Channel::collection(db)
        .find_one(doc! { "_id": channel })
        .await
        .unwrap()
        .expect("the channel")
}

/// A fresh database named after `prefix` with the schema applied, holding `channels` (no posts
/// yet), and the schema.
async fn with_channels(prefix: &str, channels: &[i64]) -> (mongodb::Database, Schema) {
    let db = mongo_schema_testkit::database(prefix).await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    for &id in channels {
        Channel::collection(&db)
            .insert_one(channel(id))
            .await
            .unwrap();
    }
    (db, schema)
}

/// Turns off the pre-images of `posts` (as an operator might, after apply enabled them).
async fn without_pre_images(db: &mongodb::Database) {
    db.run_command(
        doc! { "collMod": "posts", "changeStreamPreAndPostImages": { "enabled": false } },
    )
    .await
    .unwrap();
}

/// The schema's sync worker named `name`, ready (within 30 s).
async fn start_worker(
    schema: &Schema,
    db: &mongodb::Database,
    name: &str,
) -> mongo_schema::SyncWorkerHandle {
    common::ready_worker(schema, db, name).await
}

/// Shuts `worker` down, failing the test if it is not stopped within 30 s.
async fn stop(worker: mongo_schema::SyncWorkerHandle) {
    shut_down(worker).await;
}

async fn converged(db: &mongodb::Database, channels: &[i64]) -> bool {
    for &id in channels {
        if stored(db, id).await != expected(db, id).await {
            return false;
        }
    }
    true
}

#[tokio::test]
async fn apply_enables_the_pre_images_the_worker_reads() {
    let db = mongo_schema_testkit::database("subsets_async_apply").await;
    let schema = schema();
    let plan = schema.plan(&db).await.unwrap();
    assert!(
        plan.to_string()
            .contains("collMod `posts`: changeStreamPreAndPostImages enabled"),
        "{plan}"
    );
    schema.apply(&db).await.unwrap();
    let listed = db
        .run_command(doc! { "listCollections": 1, "filter": { "name": "posts" } })
        .await
        .unwrap();
    let first: &BsonDocument = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()[0]
        .as_document()
        .unwrap();
    let options = first.get_document("options").unwrap();
    assert_eq!(
        options
            .get_document("changeStreamPreAndPostImages")
            .unwrap(),
        &doc! { "enabled": true }
    );
    // the parent collection is not followed: no pre-images there
    assert!(!Channel::collection_spec().change_stream_pre_images);
    // nothing left to do
    assert!(schema.plan(&db).await.unwrap().actions.is_empty());
    // the sync graph and the report name the strategy
    let graph = schema.sync_graph().to_string();
    assert!(
        graph.contains("posts -> channels.newest (subset of the newest 2, async)"),
        "{graph}"
    );
    assert!(
        graph.contains("posts -> channels.last_pinned (subset of the newest 1 matching, async)"),
        "{graph}"
    );
    let report = schema.report();
    assert!(
        report.contains("last_pinned: newest 1 matching (subset, async)"),
        "{report}"
    );
    assert!(
        report.contains("the sync worker refreshes the parent (async)"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_keeps_subsets_current_through_plain_driver_writes() {
    let (db, schema) = with_channels("subsets_async_follow", &[1, 2]).await;
    let worker = start_worker(&schema, &db, "subsets").await;
    let posts = Post::collection(&db);
    for (id, pinned) in [(1, true), (2, false), (3, true), (4, false), (5, false)] {
        posts
            .insert_one(post(id, 1, id * 10, pinned))
            .await
            .unwrap();
    }
    eventually(Duration::from_secs(20), "five inserted posts", || {
        converged(&db, &[1, 2])
    })
    .await;
    let shown = stored(&db, 1).await;
    assert_eq!(
        shown.newest.iter().map(|p| p.at).collect::<Vec<_>>(),
        [50, 40]
    );
    assert_eq!((shown.posts, shown.pinned), (5, 2));
    assert_eq!(shown.last_pinned.map(|p| p.at), Some(30));

    // an edit of a previewed field, a deletion of the newest (refilled from the third), a
    // post pinned (enters the filtered subset), another unpinned (leaves it), one moved
    posts
        .update_one(doc! { "_id": 4 }, doc! { "$set": { "text": "edited" } })
        .await
        .unwrap();
    posts.delete_one(doc! { "_id": 5 }).await.unwrap();
    posts
        .update_one(doc! { "_id": 2 }, doc! { "$set": { "pinned": true } })
        .await
        .unwrap();
    posts
        .update_one(doc! { "_id": 3 }, doc! { "$set": { "pinned": false } })
        .await
        .unwrap();
    posts
        .replace_one(doc! { "_id": 1 }, post(1, 2, 10, true))
        .await
        .unwrap();
    eventually(
        Duration::from_secs(20),
        "edits, a deletion and a move",
        || converged(&db, &[1, 2]),
    )
    .await;
    let (one, two) = (stored(&db, 1).await, stored(&db, 2).await);
    assert_eq!(
        one.newest
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>(),
        ["edited", "post 3"]
    );
    assert_eq!((one.posts, one.pinned), (3, 1));
    assert_eq!(one.last_pinned.map(|p| p.at), Some(20));
    assert_eq!((two.posts, two.pinned), (1, 1));
    let stats = worker.stats();
    assert!(stats.snapshot().previews_refreshed >= 2);
    // the pre-images were there for every change
    assert_eq!(stats.snapshot().unknown_parents, 0);
    stop(worker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_worker_takes_over_the_subsets_of_a_killed_one() {
    let (db, schema) = with_channels("subsets_async_takeover", &[1]).await;
    let start = |db: &mongodb::Database| {
        schema
            .sync_worker(db)
            .name("subsets")
            .lease(Duration::from_millis(600))
            .max_await_time(Duration::from_millis(100))
            .spawn()
    };
    let first = start(&db);
    tokio::time::timeout(Duration::from_secs(30), first.ready())
        .await
        .expect("ready within 30 s")
        .unwrap();
    let second = start(&db);
    tokio::time::timeout(Duration::from_secs(30), second.ready())
        .await
        .expect("standing by within 30 s")
        .unwrap();
    assert!(second.stats().is_standby());
    let posts = Post::collection(&db);
    posts.insert_one(post(1, 1, 10, false)).await.unwrap();
    eventually(Duration::from_secs(20), "the first post", || {
        converged(&db, &[1])
    })
    .await;
    first.kill();
    for id in 2..=4 {
        posts
            .insert_one(post(id, 1, id * 10, id == 3))
            .await
            .unwrap();
    }
    posts.delete_one(doc! { "_id": 4 }).await.unwrap();
    eventually(Duration::from_secs(30), "the standby's catch-up", || {
        converged(&db, &[1])
    })
    .await;
    assert!(second.stats().is_active());
    // it resumed from the killed worker's token: no reconcile of its own
    assert_eq!(second.stats().snapshot().reconciles, 0);
    assert_eq!(second.stats().snapshot().takeovers, 1);
    let shown = stored(&db, 1).await;
    assert_eq!((shown.posts, shown.pinned), (3, 1));
    assert_eq!(
        shown.newest.iter().map(|p| p.at).collect::<Vec<_>>(),
        [30, 20]
    );
    stop(second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_cannot_take_its_previews_is_recorded_and_retried() {
    let (db, schema) = with_channels("subsets_async_records", &[1]).await;
    // channel 2 is stored by another writer with a title its validator rejects: every update
    // of it fails validation
    db.collection::<BsonDocument>("channels")
        .insert_one(doc! { "_id": 2_i64, "title": 7, "newest": [], "posts": 0_i64, "last_pinned": null, "pinned": 0 })
        .bypass_document_validation(true)
        .await
        .unwrap();
    let worker = start_worker(&schema, &db, "records").await;
    let posts = Post::collection(&db);
    posts.insert_one(post(1, 2, 10, false)).await.unwrap();
    posts.insert_one(post(2, 1, 20, false)).await.unwrap();
    // the good parent is refreshed, the bad one recorded
    eventually(Duration::from_secs(20), "channel 1 refreshed", || {
        converged(&db, &[1])
    })
    .await;
    eventually(Duration::from_secs(20), "channel 2 recorded", || async {
        schema
            .sync_failures(&db)
            .await
            .unwrap()
            .iter()
            .any(|f| f.copy == "channels.newest" && f.holder == mongo_schema::bson::Bson::Int64(2))
    })
    .await;
    assert!(worker.stats().snapshot().failed >= 1);
    stop(worker).await;
    // mended: retry_failures sets the previews from the children and removes the records
    db.collection::<BsonDocument>("channels")
        .update_one(
            doc! { "_id": 2_i64 },
            doc! { "$set": { "title": "general" } },
        )
        .bypass_document_validation(true)
        .await
        .unwrap();
    let retried = schema.retry_failures(&db).await.unwrap();
    assert_eq!(
        (retried.unknown_copies, retried.still_failing),
        (0, 0),
        "{retried}"
    );
    assert!(retried.resolved >= 1, "{retried}");
    assert!(converged(&db, &[1, 2]).await);
    assert!(schema.sync_failures(&db).await.unwrap().is_empty());
}

/// A parent's subsets are refreshed in one update; when its validator refuses one of them (here
/// `newest` past a `maxItems` of 1 an operator set), each is tried alone: the pinned preview and
/// its count land, and only `newest` is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_refuses_one_subset_still_takes_the_others() {
    let (db, schema) = with_channels("subsets_async_one_refused", &[1]).await;
    db.run_command(doc! {
        "collMod": "channels",
        "validator": { "$jsonSchema": { "properties": { "newest": { "maxItems": 1_i64 } } } },
    })
    .await
    .unwrap();
    let worker = start_worker(&schema, &db, "one-refused").await;
    let posts = Post::collection(&db);
    for (id, pinned) in [(1, false), (2, false), (3, true)] {
        posts
            .insert_one(post(id, 1, id * 10, pinned))
            .await
            .unwrap();
    }
    // the pinned post's refresh of both subsets is refused as one update (`newest` would hold
    // 2); the pinned preview alone lands
    eventually(
        Duration::from_secs(20),
        "the pinned preview lands",
        || async {
            let shown = stored(&db, 1).await;
            shown.pinned == 1 && shown.last_pinned.as_ref().is_some_and(|p| p.at == 30)
        },
    )
    .await;
    eventually(Duration::from_secs(20), "`newest` recorded", || async {
        schema
            .sync_failures(&db)
            .await
            .unwrap()
            .iter()
            .any(|f| f.copy == "channels.newest" && f.holder == mongo_schema::bson::Bson::Int64(1))
    })
    .await;
    let shown = stored(&db, 1).await;
    assert!(shown.newest.len() <= 1, "{shown:?}");
    assert!(
        !schema
            .sync_failures(&db)
            .await
            .unwrap()
            .iter()
            .any(|f| f.copy == "channels.last_pinned"),
        "the pinned preview was not refused"
    );
    shut_down(worker).await;
}

/// Without pre-images (an operator turned them off, or the server no longer has them), an
/// update that takes a child out of a filtered subset still refreshes the parent it names: the
/// parent stops showing it and counts one fewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_leaving_the_filter_without_a_pre_image_refreshes_its_parent() {
    let (db, schema) = with_channels("subsets_async_no_pre_image", &[1]).await;
    without_pre_images(&db).await;
    let worker = start_worker(&schema, &db, "no-pre-image").await;
    let posts = Post::collection(&db);
    for (id, pinned) in [(1, true), (2, true)] {
        posts
            .insert_one(post(id, 1, id * 10, pinned))
            .await
            .unwrap();
    }
    eventually(Duration::from_secs(20), "two pinned posts", || {
        converged(&db, &[1])
    })
    .await;
    assert_eq!(stored(&db, 1).await.pinned, 2);
    // the newest pinned post is unpinned: it leaves the filter
    posts
        .update_one(doc! { "_id": 2 }, doc! { "$set": { "pinned": false } })
        .await
        .unwrap();
    eventually(
        Duration::from_secs(20),
        "the unpinned post leaves the subset",
        || converged(&db, &[1]),
    )
    .await;
    let shown = stored(&db, 1).await;
    assert_eq!(shown.pinned, 1);
    assert_eq!(shown.last_pinned.map(|p| p.at), Some(10));
    // the parent may have converged through the insert's refresh running after the update
    // (batches run on lanes, and a refresh reads the children as they are): the update's own
    // event, without a pre-image, is counted once the worker has caught up
    within(Duration::from_secs(30), "caught up", worker.caught_up())
        .await
        .unwrap();
    assert!(worker.stats().snapshot().unknown_parents >= 1);
    stop(worker).await;
}

/// Without pre-images, the parent of a deleted child cannot be known: the worker counts the
/// change, leaves the parent as it was (it still shows the deleted post), and `reconcile`
/// repairs it from the children.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_child_without_a_pre_image_leaves_its_parent_to_reconcile() {
    let (db, schema) = with_channels("subsets_async_unknown_parent", &[1, 2]).await;
    without_pre_images(&db).await;
    let worker = start_worker(&schema, &db, "unknown-parent").await;
    let posts = Post::collection(&db);
    for (id, channel) in [(1, 1), (2, 1), (3, 2)] {
        posts
            .insert_one(post(id, channel, id * 10, false))
            .await
            .unwrap();
    }
    eventually(Duration::from_secs(20), "three inserted posts", || {
        converged(&db, &[1, 2])
    })
    .await;
    assert_eq!(worker.stats().snapshot().unknown_parents, 0);
    // the newest post of channel 1 is deleted, then a post is added to channel 2: once
    // channel 2 shows it, the worker has read the deletion (one stream, in order)
    posts.delete_one(doc! { "_id": 2 }).await.unwrap();
    posts.insert_one(post(4, 2, 40, false)).await.unwrap();
    eventually(Duration::from_secs(20), "channel 2's new post", || {
        converged(&db, &[2])
    })
    .await;
    assert!(worker.stats().snapshot().unknown_parents >= 1);
    let stale = stored(&db, 1).await;
    assert_eq!(stale.posts, 2, "{stale:?}");
    assert_eq!(
        stale.newest.iter().map(|p| p.at).collect::<Vec<_>>(),
        [20, 10],
        "channel 1 still shows the deleted post"
    );
    assert_ne!(stale, expected(&db, 1).await);
    stop(worker).await;
    let report = within(
        Duration::from_secs(30),
        "reconcile",
        schema.reconcile(&db).into_future(),
    )
    .await
    .unwrap();
    let newest = report
        .subsets
        .iter()
        .find(|s| s.subset == "channels.newest")
        .unwrap_or_else(|| panic!("no channels.newest in {report}"));
    assert_eq!((newest.drifted, newest.repaired), (1, 1), "{report}");
    assert!(converged(&db, &[1, 2]).await);
    let repaired = stored(&db, 1).await;
    assert_eq!(repaired.posts, 1);
    assert_eq!(
        repaired.newest.iter().map(|p| p.at).collect::<Vec<_>>(),
        [10]
    );
}

/// `shutdown()` during a first start's reconcile of the subsets returns between two parents
/// (the reconcile walks them with the shared walk, which stops between two batches): the
/// parents after the one being repaired when it was asked are left as they were, and the next
/// worker of the name repairs them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_a_first_starts_subset_reconcile_between_two_parents() {
    const CHANNELS: i64 = 200;
    let ids: Vec<i64> = (0..CHANNELS).collect();
    let (db, schema) = with_channels("subsets_async_shutdown", &ids).await;
    // one post in every channel, written with no worker running: every channel has drifted
    Post::collection(&db)
        .insert_many((0..CHANNELS).map(|id| post(id, id, id, false)))
        .await
        .unwrap();
    let counted = || async {
        Channel::collection(&db)
            .count_documents(doc! { "posts": 1 })
            .await
            .unwrap()
    };
    // the first worker's first repair of a channel is held: its reconcile is under way
    let (held_db, held, release) =
        common::held_database(&db, common::command_on("update", "channels")).await;
    let first = schema.sync_worker(&held_db).name("subsets_stop").spawn();
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .expect("the reconcile's first repair is held within 60 s");
    let stopping = tokio::spawn(first.shutdown());
    tokio::time::sleep(Duration::from_millis(300)).await;
    release.send(()).unwrap();
    within(
        Duration::from_secs(60),
        "shutdown returns at the reconcile's next parent",
        stopping,
    )
    .await
    .unwrap()
    .unwrap();
    let at_shutdown = counted().await;
    // the positive control: the reconcile was cut, not finished behind the shutdown
    assert!(
        at_shutdown < CHANNELS as u64,
        "shutdown waited for the whole reconcile: {at_shutdown} of {CHANNELS} repaired"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        counted().await,
        at_shutdown,
        "nothing is written after shutdown returned"
    );

    // the next worker of the name reconciles the rest
    let second = start_worker(&schema, &db, "subsets_stop").await;
    eventually(
        Duration::from_secs(120),
        "every channel is repaired by the next worker",
        || async { counted().await == CHANNELS as u64 },
    )
    .await;
    assert!(converged(&db, &ids).await);
    stop(second).await;
}
