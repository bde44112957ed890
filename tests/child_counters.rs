//! `#[counter(of = C)]`: the count of a parent's children kept on the parent, without previews
//! (a subset that keeps no preview). Live: `add` and `delete` write the child and move the count
//! in one transaction (both really happen, or, when the transaction aborts, neither); a filter
//! counts the matching children only; an `i32` count bounded by `#[schema(maximum)]` is refused
//! past it, with nothing written; reconcile recounts with one aggregation per batch of parents
//! and repairs a count set wrong by hand; every query the counter sends is fitted to an index
//! and proven; the worker follows children written with plain driver calls
//! (`sync = "async"`).

mod common;

use std::time::Duration;

use common::{eventually, shut_down};
use mongo_schema::bson::{doc, Bson};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "posts")]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: i64,
    pub title: String,
    /// Every like.
    #[counter(of = Like)]
    pub like_count: i64,
    /// The likes of kind "super" only.
    #[counter(of = Like, filter = r#"{ "kind": "super" }"#)]
    pub super_likes: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "likes")]
pub struct Like {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub post_id: Ref<Post>,
    pub user: String,
    pub kind: String,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Post>()
        .model::<Like>()
        .build()
        .unwrap()
}

fn post(id: i64) -> Post {
    Post {
        id,
        title: format!("post {id}"),
        like_count: 0,
        super_likes: 0,
    }
}

fn like(id: i64, post: i64, kind: &str) -> Like {
    Like {
        id,
        post_id: Ref::new(post),
        user: format!("user {id}"),
        kind: kind.into(),
    }
}

async fn stored(db: &mongodb::Database, id: i64) -> Post {
    Post::collection(db)
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .expect("the post")
}

async fn likes_of(db: &mongodb::Database, post: i64) -> u64 {
    Like::collection(db)
        .count_documents(doc! { "post_id": post })
        .await
        .unwrap()
}

async fn setup(name: &str) -> (mongodb::Database, Schema) {
    let db = mongo_schema_testkit::database(name).await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    Post::collection(&db)
        .insert_many([post(1), post(2)])
        .await
        .unwrap();
    (db, schema)
}

#[tokio::test]
async fn three_likes_added_and_one_removed_leave_two_with_two_stored() {
    let (db, _schema) = setup("counter_add_delete").await;
    for (id, kind) in [(10, "plain"), (11, "super"), (12, "plain")] {
        let before = stored(&db, 1).await.like_count;
        Post::LIKE_COUNT
            .add_with(&db, &like(id, 1, kind), &[&Post::SUPER_LIKES])
            .await
            .unwrap();
        // the count really moved, and the child was really written
        assert_eq!(stored(&db, 1).await.like_count, before + 1);
        assert!(Like::collection(&db)
            .find_one(doc! { "_id": id })
            .await
            .unwrap()
            .is_some());
    }
    let three = stored(&db, 1).await;
    assert_eq!((three.like_count, three.super_likes), (3, 1));
    assert_eq!(likes_of(&db, 1).await, 3);

    assert!(Post::LIKE_COUNT
        .delete_with(&db, &Ref::new(11), &[&Post::SUPER_LIKES])
        .await
        .unwrap());
    let two = stored(&db, 1).await;
    assert_eq!((two.like_count, two.super_likes), (2, 0));
    assert_eq!(likes_of(&db, 1).await, 2, "two likes stored");
    // the other post was never touched
    let other = stored(&db, 2).await;
    assert_eq!((other.like_count, other.super_likes), (0, 0));
    // deleting a like that is not there changes nothing
    assert!(!Post::LIKE_COUNT.delete(&db, &Ref::new(11)).await.unwrap());
    assert_eq!(stored(&db, 1).await.like_count, 2);
    // the count keeps its BSON type (`long`, as the validator says)
    let raw = db
        .collection::<mongo_schema::bson::Document>("posts")
        .find_one(doc! { "_id": 1 })
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(raw.get("like_count"), Some(Bson::Int64(2))),
        "{raw}"
    );
}

#[tokio::test]
async fn a_like_outside_the_filter_moves_only_the_plain_count_and_an_update_moves_it_across() {
    let (db, _schema) = setup("counter_filter").await;
    Post::SUPER_LIKES
        .add_with(&db, &like(20, 1, "plain"), &[&Post::LIKE_COUNT])
        .await
        .unwrap();
    let after = stored(&db, 1).await;
    assert_eq!((after.like_count, after.super_likes), (1, 0));
    // the like becomes a super like: it enters the filtered count, the plain one stays
    assert!(Post::SUPER_LIKES
        .update(&db, &Ref::new(20), doc! { "$set": { "kind": "super" } })
        .await
        .unwrap());
    let after = stored(&db, 1).await;
    assert_eq!((after.like_count, after.super_likes), (1, 1));
    // and moves to post 2: both counts follow it
    assert!(Post::SUPER_LIKES
        .update(&db, &Ref::new(20), doc! { "$set": { "post_id": 2_i64 } })
        .await
        .unwrap());
    assert_eq!(stored(&db, 1).await.super_likes, 0);
    assert_eq!(stored(&db, 2).await.super_likes, 1);
}

#[tokio::test]
async fn an_aborted_transaction_leaves_neither_the_like_nor_the_count() {
    let (db, _schema) = setup("counter_abort").await;
    // the caller's transaction, aborted: nothing of the add is stored
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    Post::LIKE_COUNT
        .add(&db, &like(30, 1, "plain"))
        .session(&mut session)
        .await
        .unwrap();
    // inside the transaction both are there (the control that the add did write)
    let inside = Post::collection(&db)
        .find_one(doc! { "_id": 1 })
        .session(&mut session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(inside.like_count, 1);
    session.abort_transaction().await.unwrap();
    assert_eq!(stored(&db, 1).await.like_count, 0);
    assert_eq!(likes_of(&db, 1).await, 0);

    // the library's own transaction, failing on its first write (a like with a taken `_id`):
    // the count does not move
    Post::LIKE_COUNT
        .add(&db, &like(31, 1, "plain"))
        .await
        .unwrap();
    let again = Post::LIKE_COUNT.add(&db, &like(31, 1, "plain")).await;
    assert!(matches!(again, Err(Error::Duplicate { .. })), "{again:?}");
    assert_eq!(stored(&db, 1).await.like_count, 1);
    assert_eq!(likes_of(&db, 1).await, 1);
}

/// An `i32` count bounded by the validator: the like past the bound is refused (code 121 on
/// the count) and, the transaction aborted, the like itself is not stored either.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "polls")]
pub struct Poll {
    #[serde(rename = "_id")]
    pub id: i64,
    #[counter(of = Vote)]
    #[schema(maximum = 2)]
    pub votes: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "votes")]
pub struct Vote {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub poll_id: Ref<Poll>,
}

#[tokio::test]
async fn a_bounded_i32_count_refuses_the_child_past_its_maximum_and_stores_neither() {
    let db = mongo_schema_testkit::database("counter_bounded").await;
    let schema = Schema::new()
        .model::<Poll>()
        .model::<Vote>()
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    Poll::collection(&db)
        .insert_one(Poll { id: 1, votes: 0 })
        .await
        .unwrap();
    for id in [1, 2] {
        Poll::VOTES
            .add(
                &db,
                &Vote {
                    id,
                    poll_id: Ref::new(1),
                },
            )
            .await
            .unwrap();
    }
    let third = Poll::VOTES
        .add(
            &db,
            &Vote {
                id: 3,
                poll_id: Ref::new(1),
            },
        )
        .await;
    assert!(matches!(third, Err(Error::Validation(_))), "{third:?}");
    let raw = db
        .collection::<mongo_schema::bson::Document>("polls")
        .find_one(doc! { "_id": 1 })
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(raw.get("votes"), Some(Bson::Int32(2))), "{raw}");
    assert_eq!(
        Vote::collection(&db)
            .count_documents(doc! {})
            .await
            .unwrap(),
        2
    );
}

#[tokio::test]
async fn reconcile_recounts_with_one_aggregation_per_batch_and_repairs_a_count_set_by_hand() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(&format!("counter_reconcile_{}", std::process::id()));
    db.drop().await.unwrap();
    let schema = schema();
    schema.apply(&db).await.unwrap();
    // 1,200 posts: three batches of parents
    let posts: Vec<Post> = (1..=1200).map(post).collect();
    Post::collection(&db).insert_many(&posts).await.unwrap();
    for (id, kind) in [(1, "plain"), (2, "super"), (3, "plain")] {
        Post::LIKE_COUNT
            .add_with(&db, &like(id, 1, kind), &[&Post::SUPER_LIKES])
            .await
            .unwrap();
    }
    Post::LIKE_COUNT
        .add(&db, &like(4, 1100, "plain"))
        .await
        .unwrap();

    log.clear();
    let clean = schema.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(clean.drifted(), 0, "{clean}");
    let like_count = clean
        .subsets
        .iter()
        .find(|s| s.subset == "posts.like_count")
        .expect("the counter is reconciled");
    assert!(like_count.counter);
    assert_eq!(like_count.checked, 1200);
    assert!(
        clean
            .to_string()
            .contains("posts.like_count (counter, transactional)"),
        "{clean}"
    );
    // one aggregation of the likes per batch of 500 posts and counter, no query per post
    let on_likes = |name: &str| {
        log.commands()
            .iter()
            .filter(|c| c.name == name && c.command.get_str(name).ok() == Some("likes"))
            .count()
    };
    assert_eq!(on_likes("aggregate"), 2 * 3, "{:?}", log.names());
    assert_eq!(on_likes("count"), 0);
    assert_eq!(on_likes("find"), 0);

    // drift by hand: one count too high, one missing (past the validator)
    Post::collection(&db)
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "like_count": 7_i64 } })
        .await
        .unwrap();
    Post::collection(&db)
        .update_one(
            doc! { "_id": 1100 },
            doc! { "$unset": { "like_count": "" } },
        )
        .bypass_document_validation(true)
        .await
        .unwrap();
    let found = schema.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(found.drifted(), 2, "{found}");
    assert_eq!(
        stored_raw_count(&db, 1).await,
        Some(Bson::Int64(7)),
        "a dry run"
    );
    let repaired = schema.reconcile(&db).await.unwrap();
    assert_eq!(repaired.repaired(), 2, "{repaired}");
    assert_eq!(stored(&db, 1).await.like_count, 3);
    assert_eq!(stored(&db, 1100).await.like_count, 1);
    assert_eq!(stored(&db, 1).await.super_likes, 1);
    assert_eq!(
        schema.reconcile(&db).dry_run(true).await.unwrap().drifted(),
        0
    );
    // and the audit that found it drifted before is clean now
    assert_eq!(schema.audit(&db).await.unwrap().drift.drifted(), 0);
    db.drop().await.unwrap();
}

async fn stored_raw_count(db: &mongodb::Database, id: i64) -> Option<Bson> {
    db.collection::<mongo_schema::bson::Document>("posts")
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .unwrap()
        .get("like_count")
        .cloned()
}

#[tokio::test]
async fn every_query_of_a_counter_is_a_library_query_with_its_index() {
    let db = mongo_schema_testkit::database("counter_queries").await;
    let schema = schema();
    let likes = schema.collection("likes").unwrap();
    let names: Vec<&str> = likes
        .library_queries
        .iter()
        .map(|q| q.name.as_str())
        .collect();
    for wanted in [
        "count of posts.like_count",
        "recount of posts.like_count (reconcile, a batch of parents)",
        "count of posts.super_likes",
        "recount of posts.super_likes (reconcile, a batch of parents)",
    ] {
        let query = likes
            .library_queries
            .iter()
            .find(|q| q.name == wanted)
            .unwrap_or_else(|| panic!("`{wanted}` in {names:?}"));
        let fit = query.fit.as_ref().expect("fitted");
        assert!(fit.index.is_some(), "{wanted}: {fit:?}");
    }
    // no refill: a counter reads no preview
    assert!(
        !names.iter().any(|n| n.starts_with("refill of posts.")),
        "{names:?}"
    );
    // reconcile's walk of the posts, in `_id` order
    let walk = schema
        .collection("posts")
        .unwrap()
        .library_queries
        .iter()
        .find(|q| q.name == "reconcile of posts.like_count")
        .expect("the walk of the parents is a library query");
    assert_eq!(walk.fit.as_ref().unwrap().index.as_deref(), Some("_id_"));
    schema.apply(&db).await.unwrap();
    let proof = schema.prove(&db).await.unwrap();
    assert!(proof.clone().into_result().is_ok(), "{proof}");
    // the report and the sync graph name the counters with their strategy
    let report = schema.report();
    assert!(
        report.contains("like_count: count (counter, transactional)"),
        "{report}"
    );
    assert!(report.contains("counter + reference"), "{report}");
    let graph = schema.sync_graph().to_string();
    assert!(
        graph.contains("likes -> posts.super_likes (counter of the matching, transactional)"),
        "{graph}"
    );
}

/// A counter the worker keeps: children written with plain driver calls.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "videos")]
pub struct Video {
    #[serde(rename = "_id")]
    pub id: i64,
    #[counter(of = View, sync = "async")]
    pub views: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "views")]
pub struct View {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub video_id: Ref<Video>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_counts_children_written_with_plain_driver_calls() {
    let db = mongo_schema_testkit::database("counter_async").await;
    let schema = Schema::new()
        .model::<Video>()
        .model::<View>()
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    Video::collection(&db)
        .insert_many([Video { id: 1, views: 0 }, Video { id: 2, views: 0 }])
        .await
        .unwrap();
    let worker = common::ready_worker(&schema, &db, "views").await;
    let views = View::collection(&db);
    for id in 1..=4 {
        views
            .insert_one(View {
                id,
                video_id: Ref::new(1),
            })
            .await
            .unwrap();
    }
    views
        .insert_one(View {
            id: 5,
            video_id: Ref::new(2),
        })
        .await
        .unwrap();
    let count = |id: i64| {
        let db = db.clone();
        async move { common::stored::<Video>(&db, id).await.views }
    };
    eventually(Duration::from_secs(20), "four views of video 1", || async {
        count(1).await == 4 && count(2).await == 1
    })
    .await;
    // a deletion (its parent read from the pre-image) and a move to the other video
    views.delete_one(doc! { "_id": 1 }).await.unwrap();
    views
        .update_one(doc! { "_id": 2 }, doc! { "$set": { "video_id": 2_i64 } })
        .await
        .unwrap();
    eventually(Duration::from_secs(20), "a deletion and a move", || async {
        count(1).await == 2 && count(2).await == 2
    })
    .await;
    assert_eq!(worker.stats().snapshot().unknown_parents, 0);
    shut_down(worker).await;
}

/// A filter on a value the child never stores (the Rust variant name of an enum serde stores in
/// snake_case, text for a number) would count nothing, and reconcile, counting with the same
/// filter, would agree: `Schema::build` refuses it with what the field stores. The stored value
/// and a number of another width build (the control).
mod filter_values {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
    #[serde(rename_all = "snake_case")]
    pub enum Kind {
        Verified,
        Guest,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "venues")]
    pub struct Venue {
        #[serde(rename = "_id")]
        pub id: i64,
        #[counter(of = Review, filter = r#"{ "kind": "Verified" }"#)]
        pub verified: i64,
        #[counter(of = Review, filter = r#"{ "stars": "5" }"#)]
        pub five_stars: i64,
        #[counter(of = Review, filter = r#"{ "kind": "guest", "stars": 4 }"#)]
        pub guest_fours: i64,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "venue_reviews")]
    pub struct Review {
        #[serde(rename = "_id")]
        pub id: i64,
        #[reference]
        pub venue_id: Ref<Venue>,
        pub kind: Kind,
        pub stars: i32,
    }

    #[test]
    fn a_filter_value_the_child_never_stores_is_refused_at_build() {
        let problems = match Schema::new().model::<Venue>().model::<Review>().build() {
            Err(e) => e.problems,
            Ok(_) => panic!("built a counter whose filter matches nothing"),
        };
        assert_eq!(problems.len(), 2, "{problems:#?}");
        let text = problems.join("\n");
        // display-text: each names the value, the field, and what the field stores
        assert!(
            text.contains("matches `kind` = \"Verified\", which `venue_reviews` never stores in `kind` (it stores \"verified\", \"guest\")"),
            "{text}"
        );
        assert!(
            text.contains("matches `stars` = \"5\", which `venue_reviews` never stores in `stars` (it stores int)"),
            "{text}"
        );
    }
}
