//! A follow holds two references to `User` (`follower`, `followed`): `via = followed` says
//! which one a subset and a counter follow. Live: a follow of Ada by Bo and by Cy moves Ada's
//! preview and count, not Bo's or Cy's; an unfollow refills Ada's preview from her remaining
//! follows (the refill reads the `followed` reference); the sync worker follows follows written
//! with plain driver calls, on the chosen reference; reconcile repairs both from it.

mod common;

use std::time::Duration;

use common::{eventually, shut_down};
use futures_util::StreamExt;
use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    /// The two newest followers.
    #[subset(of = Follow, via = followed, max = 2, sort = "-at")]
    pub newest_followers: Vec<FollowerPreview>,
    /// How many follow this user.
    #[counter(of = Follow, via = followed)]
    pub follower_count: i64,
    /// How many this user follows: the same children, through the other reference.
    #[counter(of = Follow, via = follower)]
    pub following_count: i64,
}

/// A follow of one `User` by another (of the module's own `User`).
macro_rules! follow_model {
    () => {
        #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[collection(name = "follows")]
        #[index(keys(followed = 1, at = -1))]
        pub struct Follow {
            #[serde(rename = "_id")]
            pub id: i64,
            #[reference]
            pub follower: Ref<User>,
            #[reference]
            pub followed: Ref<User>,
            pub follower_name: String,
            pub at: DateTime,
        }
    };
}

follow_model!();

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct FollowerPreview {
    pub follower_name: String,
    pub at: DateTime,
}

impl From<&Follow> for FollowerPreview {
    fn from(follow: &Follow) -> Self {
        FollowerPreview {
            follower_name: follow.follower_name.clone(),
            at: follow.at,
        }
    }
}

fn user(id: i64, name: &str) -> User {
    User {
        id,
        name: name.into(),
        newest_followers: Vec::new(),
        follower_count: 0,
        following_count: 0,
    }
}

fn follow(id: i64, follower: &User, followed: &User, at: i64) -> Follow {
    Follow {
        id,
        follower: follower.to_ref(),
        followed: followed.to_ref(),
        follower_name: follower.name.clone(),
        at: DateTime::from_millis(at),
    }
}

async fn stored(db: &mongodb::Database, id: i64) -> User {
    User::collection(db)
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .expect("the user")
}

fn names(user: &User) -> Vec<&str> {
    user.newest_followers
        .iter()
        .map(|p| p.follower_name.as_str())
        .collect()
}

async fn setup(db: &mongodb::Database) -> (User, User, User, User) {
    let (ada, bo, cy, di) = (user(1, "Ada"), user(2, "Bo"), user(3, "Cy"), user(4, "Di"));
    User::collection(db)
        .insert_many([&ada, &bo, &cy, &di])
        .await
        .unwrap();
    (ada, bo, cy, di)
}

#[tokio::test]
async fn a_follow_of_ada_by_bo_and_cy_moves_adas_preview_and_count_not_theirs() {
    let db = mongo_schema_testkit::database("follows_via").await;
    let schema = Schema::new()
        .model::<User>()
        .model::<Follow>()
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    let (ada, bo, cy, di) = setup(&db).await;
    // the subset's and counters' parent fields are the ones `via` names
    let users = schema.collection("users").unwrap();
    let parent_fields: Vec<(&str, &str)> = users
        .subsets
        .iter()
        .map(|s| (s.path.as_str(), s.parent_field.as_str()))
        .collect();
    assert_eq!(
        parent_fields,
        [
            ("newest_followers", "followed"),
            ("follower_count", "followed"),
            ("following_count", "follower")
        ]
    );

    for (id, follower, at) in [(10, &bo, 1_000), (11, &cy, 2_000), (12, &di, 3_000)] {
        User::NEWEST_FOLLOWERS
            .add_with(
                &db,
                &follow(id, follower, &ada, at),
                &[&User::FOLLOWER_COUNT, &User::FOLLOWING_COUNT],
            )
            .await
            .unwrap();
    }
    let ada_now = stored(&db, 1).await;
    assert_eq!(ada_now.follower_count, 3);
    assert_eq!(names(&ada_now), ["Di", "Cy"], "newest first, two kept");
    assert_eq!(ada_now.following_count, 0, "Ada follows no one");
    for id in [2, 3, 4] {
        let other = stored(&db, id).await;
        assert_eq!(other.follower_count, 0, "{}", other.name);
        assert!(other.newest_followers.is_empty(), "{}", other.name);
        assert_eq!(other.following_count, 1, "{} follows Ada", other.name);
    }
    assert_eq!(
        Follow::collection(&db)
            .count_documents(doc! { "followed": 1 })
            .await
            .unwrap(),
        3,
        "the follows were written"
    );

    // Di unfollows: Ada's preview is refilled from her remaining follows (Bo comes back),
    // her count goes down, and Di's own following count too
    assert!(User::NEWEST_FOLLOWERS
        .delete_with(
            &db,
            &Ref::new(12),
            &[&User::FOLLOWER_COUNT, &User::FOLLOWING_COUNT]
        )
        .await
        .unwrap());
    let ada_after = stored(&db, 1).await;
    assert_eq!(names(&ada_after), ["Cy", "Bo"]);
    assert_eq!(ada_after.follower_count, 2);
    assert_eq!(stored(&db, 4).await.following_count, 0);
    assert!(stored(&db, 4).await.newest_followers.is_empty());

    // drift by hand on Ada and on Bo; reconcile repairs each from the reference it follows
    User::collection(&db)
        .update_one(
            doc! { "_id": 1 },
            doc! { "$set": { "newest_followers": [], "follower_count": 9_i64 } },
        )
        .await
        .unwrap();
    User::collection(&db)
        .update_one(
            doc! { "_id": 2 },
            doc! { "$set": { "following_count": 5_i64 } },
        )
        .await
        .unwrap();
    let repaired = schema.reconcile(&db).await.unwrap();
    assert_eq!(repaired.repaired(), 3, "{repaired}");
    assert_eq!(stored(&db, 1).await, ada_after);
    assert_eq!(stored(&db, 2).await.following_count, 1);
    assert_eq!(stored(&db, 2).await.follower_count, 0);
}

/// The same relations kept by the worker, for follows written with plain driver calls.
mod by_the_worker {
    use super::*;

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "users")]
    pub struct User {
        #[serde(rename = "_id")]
        pub id: i64,
        #[subset(of = Follow, via = followed, max = 2, sort = "-at", sync = "async")]
        pub newest_followers: Vec<FollowerPreview>,
        #[counter(of = Follow, via = followed, sync = "async")]
        pub follower_count: i64,
    }

    follow_model!();

    #[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct FollowerPreview {
        pub follower_name: String,
    }

    impl From<&Follow> for FollowerPreview {
        fn from(follow: &Follow) -> Self {
            FollowerPreview {
                follower_name: follow.follower_name.clone(),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_worker_follows_plain_follows_on_the_followed_reference() {
        let db = mongo_schema_testkit::database("follows_via_async").await;
        let schema = Schema::new()
            .model::<User>()
            .model::<Follow>()
            .build()
            .unwrap();
        schema.apply(&db).await.unwrap();
        User::collection(&db)
            .insert_many((1..=3).map(|id| User {
                id,
                newest_followers: Vec::new(),
                follower_count: 0,
            }))
            .await
            .unwrap();
        let worker = common::ready_worker(&schema, &db, "follows").await;
        let follows = Follow::collection(&db);
        let plain = |id: i64, follower: i64, followed: i64, name: &str| Follow {
            id,
            follower: Ref::new(follower),
            followed: Ref::new(followed),
            follower_name: name.into(),
            at: DateTime::from_millis(id * 1000),
        };
        // Bo and Cy follow Ada
        follows
            .insert_many([plain(10, 2, 1, "Bo"), plain(11, 3, 1, "Cy")])
            .await
            .unwrap();
        let read = |id: i64| {
            let db = db.clone();
            async move { common::stored::<User>(&db, id).await }
        };
        eventually(Duration::from_secs(20), "Ada's two followers", || async {
            let ada = read(1).await;
            ada.follower_count == 2 && ada.newest_followers.len() == 2
        })
        .await;
        let ada = read(1).await;
        assert_eq!(
            ada.newest_followers
                .iter()
                .map(|p| p.follower_name.as_str())
                .collect::<Vec<_>>(),
            ["Cy", "Bo"]
        );
        for id in [2, 3] {
            let other = read(id).await;
            assert_eq!(
                (other.follower_count, other.newest_followers.len()),
                (0, 0),
                "user {id}"
            );
        }
        // the users' own changes from here: a parent's subset and counter come in one update
        let mut changes = User::collection(&db)
            .clone_with_type::<mongo_schema::bson::Document>()
            .watch()
            .await
            .unwrap();
        // Cy unfollows (the pre-image names Ada), Ada follows Bo
        follows.delete_one(doc! { "_id": 11 }).await.unwrap();
        follows.insert_one(plain(12, 1, 2, "Ada")).await.unwrap();
        eventually(
            Duration::from_secs(20),
            "an unfollow and a follow back",
            || async {
                let (ada, bo) = (read(1).await, read(2).await);
                ada.follower_count == 1 && bo.follower_count == 1
            },
        )
        .await;
        assert_eq!(
            read(1).await.newest_followers,
            [FollowerPreview {
                follower_name: "Bo".into()
            }]
        );
        assert_eq!(
            read(2).await.newest_followers,
            [FollowerPreview {
                follower_name: "Ada".into()
            }]
        );
        assert_eq!(read(3).await.follower_count, 0);
        // Ada's and Bo's refreshes, each one update of both fields (two rules of one parent in
        // one transaction): a reader never saw Ada's count at 1 beside Cy still in her preview
        let mut refreshed = std::collections::BTreeSet::new();
        while refreshed.len() < 2 {
            let event = tokio::time::timeout(Duration::from_secs(20), changes.next())
                .await
                .expect("the users' two refreshes within 20 s")
                .expect("a change")
                .unwrap();
            let id = event.document_key.as_ref().unwrap().get_i64("_id").unwrap();
            let fields = event
                .update_description
                .as_ref()
                .unwrap()
                .updated_fields
                .clone();
            if fields.is_empty() {
                continue; // a refresh that changed nothing (a retry of one that landed)
            }
            let sets = |field: &str| {
                fields
                    .keys()
                    .any(|k| k == field || k.starts_with(&format!("{field}.")))
            };
            assert!(
                sets("newest_followers") && sets("follower_count"),
                "user {id}: one update of the preview and the count, not {fields:?}"
            );
            refreshed.insert(id);
        }
        assert_eq!(refreshed.into_iter().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(worker.stats().snapshot().unknown_parents, 0);
        shut_down(worker).await;
    }
}
