//! Sharding the collections that declare a shard key. SecantusDB is a single-node replica set,
//! not a mongos: live, these tests show that `plan` and `apply(..).shard_collections(true)` find
//! nothing to shard there and send no `shardCollection`. What would happen on a mongos is
//! checked against the pure planning (the topology given, not observed) and against the mongosh
//! script, which must shard the same collections by the same keys after the same indexes. No
//! sharded cluster was available: live sharding is not tested here.

#[path = "../examples/helpdesk/model.rs"]
mod helpdesk;

use mongo_schema::bson::{Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, Observed, Plan, PlanOptions, ShardState, Topology};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "follows", shard_key(follower = 1))]
#[index(keys(follower = 1, followee = 1), unique)]
pub struct Follow {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub follower: String,
    pub followee: String,
}

fn schema() -> Schema {
    Schema::new().model::<Follow>().build().unwrap()
}

const WRITES: [&str; 5] = [
    "create",
    "collMod",
    "createIndexes",
    "shardCollection",
    "findAndModify",
];

#[tokio::test]
async fn on_a_replica_set_plan_and_apply_find_nothing_to_shard() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(mongo_schema_testkit::database("shard_rs").await.name());
    let schema = schema();

    let plan = schema.plan(&db).await.unwrap();
    println!("{plan}");
    assert_eq!(plan.sharding.len(), 1);
    assert_eq!(
        plan.sharding[0].state,
        ShardState::NotAShardedCluster(Topology::ReplicaSet)
    );
    // display-text: the plan's sentence, read by a person
    assert!(plan.to_string().contains(
        "`follows` declares the shard key { \"follower\": 1 }; the database is on a replica set: nothing to shard"
    ));
    assert!(log.names().contains(&"hello".to_owned()));
    assert!(!log.names().iter().any(|n| WRITES.contains(&n.as_str())));

    // a start-up that does not ask to shard does not even ask what the server is
    log.clear();
    let report = schema.apply(&db).await.unwrap();
    assert!(
        !log.names().contains(&"hello".to_owned()),
        "{:?}",
        log.names()
    );
    assert!(report.sharding.is_empty());

    log.clear();
    let report = schema.apply(&db).shard_collections(true).await.unwrap();
    println!("{report}");
    assert!(
        report.is_noop(),
        "nothing to shard, nothing else to do: {report}"
    );
    assert_eq!(
        report.sharding[0].state,
        ShardState::NotAShardedCluster(Topology::ReplicaSet)
    );
    let names = log.names();
    println!("apply(..).shard_collections(true) on a replica set sent: {names:?}");
    assert!(names.contains(&"hello".to_owned()));
    assert!(
        !names.iter().any(|n| WRITES.contains(&n.as_str())),
        "{names:?}"
    );
}

/// `(collection, key)` of every `sh.shardCollection` of a script, and the number of
/// `createIndex` lines of that collection before it.
fn script_shards(script: &str) -> Vec<(String, BsonDocument, usize)> {
    let mut indexes_seen = std::collections::HashMap::<String, usize>::new();
    let mut out = Vec::new();
    for line in script.lines() {
        if let Some(rest) = line.strip_prefix("db.getCollection(") {
            let name: String = serde_json::from_str(&rest[..rest.find(')').unwrap()]).unwrap();
            *indexes_seen.entry(name).or_default() += 1;
        }
        if let Some(rest) = line.strip_prefix(
            "if (db.hello().msg === \"isdbgrid\") sh.shardCollection(db.getName() + \".\" + ",
        ) {
            let (name, rest) = rest.split_at(rest.find(", EJSON.parse('").unwrap());
            let name: String = serde_json::from_str(name).unwrap();
            let json = &rest[", EJSON.parse('".len()..rest.rfind("')").unwrap()];
            // the simple collation stated: mongod refuses the command without it on a
            // collection of another default, and takes it on any
            assert!(
                rest.ends_with("'), false, { collation: { locale: \"simple\" } });"),
                "{line}"
            );
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            let Bson::Document(key) = Bson::try_from(value).unwrap() else {
                panic!("not a document")
            };
            let seen = indexes_seen.get(&name).copied().unwrap_or(0);
            out.push((name, key, seen));
        }
    }
    out
}

#[test]
fn the_script_shards_what_apply_would_shard_on_a_mongos() {
    for schema in [schema(), helpdesk::schema()] {
        let mut observed = Observed::default();
        observed.topology = Some(Topology::Mongos);
        let mut options = PlanOptions::default();
        options.shard_collections = true;
        let plan = Plan::compute_with(schema.collections(), &observed, options);
        let mut by_apply = Vec::new();
        for (i, action) in plan.actions.iter().enumerate() {
            if let Action::ShardCollection { collection, key } = action {
                // right after the collection's indexes
                assert!(
                    matches!(&plan.actions[i - 1], Action::CreateIndexes { collection: c, .. } if c == collection),
                    "{plan}"
                );
                let indexes = schema.collection(collection).unwrap().indexes.len();
                by_apply.push((collection.clone(), key.clone(), indexes));
            }
        }
        let by_script = script_shards(&schema.mongosh_script());
        println!(
            "shardCollection by apply on a mongos: {by_apply:?}; by the script: {by_script:?}"
        );
        assert!(!by_apply.is_empty());
        let relaxed = |v: &Vec<(String, BsonDocument, usize)>| {
            v.iter()
                .map(|(c, k, n)| {
                    (
                        c.clone(),
                        Bson::Document(k.clone()).into_relaxed_extjson(),
                        *n,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(relaxed(&by_apply), relaxed(&by_script));
        // and on a replica set neither shards anything
        observed.topology = Some(Topology::ReplicaSet);
        let plan = Plan::compute_with(schema.collections(), &observed, options);
        assert!(!plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::ShardCollection { .. })));
        assert!(plan
            .sharding
            .iter()
            .all(|s| s.state == ShardState::NotAShardedCluster(Topology::ReplicaSet)));
    }
}
