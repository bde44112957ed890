//! Processes paused, not killed: a worker held in the middle of its fan-out for several leases
//! while a standby takes over, and a reconcile held between its lookup of a deleted source and
//! its repair while the source is recreated, and a worker held in its fresh-start repair of an
//! async subset while a standby takes over and a child is deleted. Each pause is a command
//! held in command monitoring, which stops the paused task where a VM pause or SIGSTOP would.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::cases::*;
use common::{command_on, eventually, held_database, ready, shut_down, within};
use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::TOKENS_COLLECTION;

const LEASE: Duration = Duration::from_millis(600);
const WORKER: &str = "fenced";

/// The schema's worker `name` on `db`, with the tests' short lease.
fn fenced_worker(
    schema: &Schema,
    db: &mongodb::Database,
    name: &str,
) -> mongo_schema::SyncWorkerHandle {
    schema
        .sync_worker(db)
        .name(name)
        .lease(LEASE)
        .max_await_time(Duration::from_millis(100))
        .spawn()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_paused_past_its_lease_never_writes_over_the_new_holder() {
    let db = applied("fence_pause").await;
    let schema = schema();
    let (_, agent, _, _) = desk(&db, 3).await;

    // the first worker's first fan-out of an agent rename is held (its whole task with it: the
    // renewals of its lease stop too, as in a VM pause)
    let (held_db, held, release) = held_database(&db, agent_fan_out).await;
    let paused = fenced_worker(&schema, &held_db, WORKER);
    ready(&paused).await;
    assert!(paused.stats().is_active());
    let standby = fenced_worker(&schema, &db, WORKER);
    ready(&standby).await;
    assert!(standby.stats().is_standby());

    // the paused worker looks up "Older" and is held sending it; the standby takes over and
    // applies a newer rename
    take_over_from_a_paused_fan_out(
        &db,
        agent.id,
        held,
        &standby,
        "the new holder writes the newer name",
    )
    .await;
    // several leases pass with the first worker still paused
    tokio::time::sleep(LEASE * 4).await;

    // it resumes: its held write goes out, inside a transaction whose fence no longer holds
    let fenced_writes = |db: mongodb::Database| async move {
        common::all(
            db.collection::<BsonDocument>(TOKENS_COLLECTION)
                .find(doc! { "_id.lease": WORKER }),
        )
        .await
    };
    let lanes_before = fenced_writes(db.clone()).await;
    common::resumed_and_standing_by(&release, &paused, "the paused worker").await;
    // a few renewals of the new holder later, the copies still hold the newer name
    tokio::time::sleep(LEASE * 2).await;
    assert_eq!(
        copied_names(&db, "agent").await,
        vec![Some("Newer".to_owned()); 3],
        "the paused worker's older name never landed"
    );
    assert!(standby.stats().is_active(), "the new holder kept the lease");
    // every lane belongs to the new holder's epoch, which is newer than the paused one's
    let lanes = fenced_writes(db.clone()).await;
    assert_eq!(lanes.len(), 8, "one lane per concurrent fan-out: {lanes:?}");
    let epochs: Vec<i64> = lanes.iter().map(|l| l.get_i64("epoch").unwrap()).collect();
    assert!(epochs.windows(2).all(|w| w[0] == w[1]), "{lanes:?}");
    assert_eq!(
        lanes, lanes_before,
        "nothing was committed through a lane meanwhile"
    );
    let lease = db
        .collection::<BsonDocument>(TOKENS_COLLECTION)
        .find_one(doc! { "_id": WORKER })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease.get_i64("epoch").unwrap(), epochs[0]);
    assert!(epochs[0] >= 2, "the takeover raised the epoch: {lease}");
    assert!(standby.stats().snapshot().takeovers >= 1);

    // the worker that was paused is a good standby: it takes over when the holder stops
    shut_down(standby).await;
    eventually(
        Duration::from_secs(20),
        "the worker that was paused takes over again",
        || async { paused.stats().is_ready() },
    )
    .await;
    rename_agent(&db, agent.id, "Newest").await;
    agent_copies_become(
        &db,
        3,
        "Newest",
        Duration::from_secs(20),
        "it applies the next rename",
    )
    .await;
    shut_down(paused).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deleted_source_recreated_before_the_repair_keeps_its_copies() {
    let db = applied("fence_recreated").await;
    let schema = schema();
    let (_, agent, _, _) = desk(&db, 3).await;
    // the agent is deleted behind the library's back: its copies (on_delete = "unset") drift
    Agent::collection(&db)
        .delete_one(doc! { "_id": agent.id })
        .await
        .unwrap();
    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    let agents = dry.edges.iter().find(|e| e.copy == "cases.agent").unwrap();
    assert_eq!((agents.missing_sources, agents.drifted), (3, 3), "{dry}");

    // reconcile is held after its lookup of the agents found none: at its second `find` of the
    // agents, just before the repair
    let agent_finds = AtomicUsize::new(0);
    let (held_db, held, release) = held_database(&db, move |started| {
        started.command_name == "find"
            && started.command.get_str("find").ok() == Some("agents")
            && agent_finds.fetch_add(1, Ordering::SeqCst) == 1
    })
    .await;
    let repair = {
        let schema = schema.clone();
        tokio::spawn(async move { schema.reconcile(&held_db).await })
    };
    common::wait_until_held(
        held,
        "reconcile looked the deleted agent up again before its repair",
    )
    .await;
    // meanwhile the agent is recreated with the same `_id`
    Agent::collection(&db)
        .insert_one(&Agent {
            id: agent.id,
            name: "Bo".into(),
        })
        .await
        .unwrap();
    release.send(()).unwrap();
    let report = within(Duration::from_secs(60), "reconcile", repair)
        .await
        .unwrap()
        .unwrap();
    println!("{report}");
    let agents = report
        .edges
        .iter()
        .find(|e| e.copy == "cases.agent")
        .unwrap();
    assert_eq!(agents.missing_sources, 3, "it saw the source missing");
    assert_eq!(
        agents.repaired, 0,
        "and left the copies of the recreated source alone"
    );
    assert_eq!(
        copied_names(&db, "agent").await,
        vec![Some("Bo".to_owned()); 3],
        "the copies of the recreated agent were not unset"
    );
    // the positive control: with the source still gone, the same reconcile unsets them
    Agent::collection(&db)
        .delete_one(doc! { "_id": agent.id })
        .await
        .unwrap();
    let report = schema.reconcile(&db).await.unwrap();
    let agents = report
        .edges
        .iter()
        .find(|e| e.copy == "cases.agent")
        .unwrap();
    assert_eq!(agents.repaired, 3, "{report}");
    assert_eq!(copied_names(&db, "agent").await, vec![None; 3]);
    let unset = db
        .collection::<BsonDocument>("cases")
        .count_documents(doc! { "agent": Bson::Null })
        .await
        .unwrap();
    assert_eq!(unset, 3);
}

/// A channel keeping its newest posts, kept by the sync worker (`async`).
mod channels {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "channels")]
    pub struct Channel {
        #[serde(rename = "_id")]
        pub id: i64,
        #[subset(of = Post, max = 2, sort = "-at", count = "posts", sync = "async")]
        pub newest: Vec<PostPreview>,
        pub posts: i64,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "posts")]
    #[index(keys(channel_id = 1, at = -1))]
    pub struct Post {
        #[serde(rename = "_id")]
        pub id: i64,
        #[reference]
        pub channel_id: Ref<Channel>,
        pub at: i64,
    }

    #[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct PostPreview {
        pub at: i64,
    }

    impl From<&Post> for PostPreview {
        fn from(post: &Post) -> Self {
            PostPreview { at: post.at }
        }
    }

    pub fn schema() -> Schema {
        Schema::new()
            .model::<Channel>()
            .model::<Post>()
            .build()
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_paused_in_its_fresh_start_subset_repair_never_writes_back_a_deleted_child() {
    use channels::{Channel, Post};
    const NAME: &str = "fenced_subsets";
    let db = mongo_schema_testkit::database("fence_subsets").await;
    let schema = channels::schema();
    schema.apply(&db).await.unwrap();
    let posts = |db: mongodb::Database| async move {
        Channel::collection(&db)
            .find_one(doc! { "_id": 1 })
            .await
            .unwrap()
            .expect("the channel")
            .posts
    };
    // the channel is stale before any worker runs: a post written with a plain driver call
    Channel::collection(&db)
        .insert_one(Channel {
            id: 1,
            newest: vec![],
            posts: 0,
        })
        .await
        .unwrap();
    Post::collection(&db)
        .insert_one(Post {
            id: 1,
            channel_id: Ref::new(1),
            at: 10,
        })
        .await
        .unwrap();

    // the first worker starts fresh, reads the post and is held writing the channel's repair
    let (held_db, held, release) = held_database(&db, command_on("update", "channels")).await;
    let paused = fenced_worker(&schema, &held_db, NAME);
    common::wait_until_held(held, "the first worker reached its repair of the channel").await;

    // a standby takes over, repairs the channel itself, then follows the post's deletion: the
    // channel is back to what the paused worker read (no post, count 0)
    let standby = fenced_worker(&schema, &db, NAME);
    eventually(
        Duration::from_secs(20),
        "the standby takes over and repairs the channel",
        || async { standby.stats().is_ready() && posts(db.clone()).await == 1 },
    )
    .await;
    Post::collection(&db)
        .delete_one(doc! { "_id": 1 })
        .await
        .unwrap();
    eventually(
        Duration::from_secs(20),
        "the standby follows the deletion",
        || async { posts(db.clone()).await == 0 },
    )
    .await;

    // the paused worker resumes: its repair, which would write the deleted post back (the
    // channel again holds what it read), is fenced off
    common::resumed_and_standing_by(&release, &paused, "the paused worker").await;
    tokio::time::sleep(LEASE * 2).await;
    let channel: Channel = common::stored(&db, 1).await;
    assert_eq!(
        (channel.newest.len(), channel.posts),
        (0, 0),
        "the deleted post was not written back: {channel:?}"
    );
    assert!(standby.stats().is_active(), "the new holder kept the lease");
    for worker in [standby, paused] {
        shut_down(worker).await;
    }
}
