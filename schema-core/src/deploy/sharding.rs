//! Sharding the collections that declare a shard key, when the database is behind a mongos.
//!
//! Pure planning first ([`plan_sharding`]: declared keys + observed topology and keys ->
//! `shardCollection` actions and a status per collection), then the two reads it needs: `hello`
//! (a mongos answers `msg: "isdbgrid"`) and, on a mongos, `config.collections` for the keys
//! collections are already sharded by.

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;

use super::plan::{Action, Observed, Plan, Warning};
use crate::{json_schema, CollectionSpec, Result};

/// What kind of deployment the database is on, as `hello` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Topology {
    /// A mongos router of a sharded cluster (`hello.msg == "isdbgrid"`).
    Mongos,
    /// A replica set member (`hello.setName`).
    ReplicaSet,
    /// A single server outside any replica set.
    Standalone,
}

impl Topology {
    /// Reads a `hello` reply.
    pub fn from_hello(hello: &BsonDocument) -> Topology {
        if hello.get_str("msg").ok() == Some("isdbgrid") {
            Topology::Mongos
        } else if hello.contains_key("setName") {
            Topology::ReplicaSet
        } else {
            Topology::Standalone
        }
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Topology::Mongos => "a mongos (sharded cluster)",
            Topology::ReplicaSet => "a replica set",
            Topology::Standalone => "a standalone server",
        })
    }
}

/// The sharding of one collection that declares a shard key.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ShardingStatus {
    /// Collection name.
    pub collection: String,
    /// The declared shard key.
    pub key: BsonDocument,
    /// Where it stands.
    pub state: ShardState,
}

/// Where the sharding of a collection stands.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ShardState {
    /// Not a sharded cluster (a replica set or a standalone server): nothing to shard. The key is
    /// declared for the day the data moves behind a mongos; its index exists already.
    NotAShardedCluster(Topology),
    /// Sharded by the declared key.
    Sharded,
    /// `apply(..).shard_collections(true)` shards it (after its index exists).
    ToShard,
    /// On a mongos and not sharded; `apply` shards it only with `shard_collections(true)`.
    NotRequested,
    /// Sharded by another key; left alone (`reshardCollection` is an operator's decision).
    OtherKey(BsonDocument),
    /// No index starts with the key (a conflicting index was left alone), so it cannot be
    /// sharded yet.
    NoSupportingIndex,
}

impl fmt::Display for ShardingStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (collection, key) = (&self.collection, &self.key);
        match &self.state {
            ShardState::NotAShardedCluster(topology) => write!(
                f,
                "`{collection}` declares the shard key {key}; the database is on {topology}: nothing to shard"
            ),
            ShardState::Sharded => write!(f, "`{collection}` is sharded by {key}"),
            ShardState::ToShard => write!(f, "`{collection}` will be sharded by {key}"),
            ShardState::NotRequested => write!(
                f,
                "`{collection}` declares the shard key {key} and is not sharded: apply with `shard_collections(true)` to shard it"
            ),
            ShardState::OtherKey(other) => write!(
                f,
                "`{collection}` is sharded by {other}, not by the declared {key}: left alone"
            ),
            ShardState::NoSupportingIndex => write!(
                f,
                "`{collection}` declares the shard key {key}, but no index starts with it: not sharded"
            ),
        }
    }
}

/// Adds to `plan` the sharding of every collection of `desired` that declares a shard key:
/// a status for each, and, on a mongos with `shard`, a `shardCollection` action right after
/// the collection's other actions (so its collection and index exist first). Does nothing when
/// the topology was not observed.
pub(crate) fn plan_sharding(
    plan: &mut Plan,
    desired: &[CollectionSpec],
    observed: &Observed,
    shard: bool,
) {
    let Some(topology) = observed.topology else {
        return;
    };
    for spec in desired {
        let Some(key) = &spec.shard_key else {
            continue;
        };
        let server = observed.collection(&spec.name);
        if server.is_some_and(|c| c.kind != "collection") {
            continue; // a view: reported as such by the collection's plan
        }
        let state = if topology != Topology::Mongos {
            ShardState::NotAShardedCluster(topology)
        } else {
            match server.and_then(|c| c.shard_key.as_ref()) {
                Some(sharded) if json_schema::same_ordered(sharded, key) => ShardState::Sharded,
                Some(sharded) => {
                    plan.warnings.push(Warning::ShardKeyDiffers {
                        collection: spec.name.clone(),
                        declared: key.clone(),
                        sharded: sharded.clone(),
                    });
                    ShardState::OtherKey(sharded.clone())
                }
                None if !shard => ShardState::NotRequested,
                None if !has_supporting_index(plan, spec, observed, key) => {
                    ShardState::NoSupportingIndex
                }
                None => {
                    let after = plan
                        .actions
                        .iter()
                        .rposition(|a| a.collection() == spec.name)
                        .map_or(plan.actions.len(), |i| i + 1);
                    plan.actions.insert(
                        after,
                        Action::ShardCollection {
                            collection: spec.name.clone(),
                            key: key.clone(),
                        },
                    );
                    ShardState::ToShard
                }
            }
        };
        plan.sharding.push(ShardingStatus {
            collection: spec.name.clone(),
            key: key.clone(),
            state,
        });
    }
}

/// Whether the server has, or the plan creates, an index whose keys start with `key`.
fn has_supporting_index(
    plan: &Plan,
    spec: &CollectionSpec,
    observed: &Observed,
    key: &BsonDocument,
) -> bool {
    let starts_with_key = |keys: &BsonDocument| {
        keys.len() >= key.len()
            && keys
                .iter()
                .zip(key.iter())
                .all(|((a, va), (b, vb))| a == b && json_schema::same(va, vb))
    };
    let existing = observed
        .collection(&spec.name)
        .into_iter()
        .flat_map(|c| &c.indexes)
        .filter_map(|index| index.get_document("key").ok())
        .any(starts_with_key);
    let planned = plan.actions.iter().any(|action| match action {
        Action::CreateIndexes {
            collection,
            indexes,
        } => collection == &spec.name && indexes.iter().any(|i| starts_with_key(&i.keys)),
        _ => false,
    });
    existing || planned
}

/// Asks the server what it is (`hello`).
pub(crate) async fn observe_topology(db: &Database) -> Result<Topology> {
    let hello = db.run_command(doc! { "hello": 1 }).await?;
    Ok(Topology::from_hello(&hello))
}

/// On a mongos, reads the shard keys of the schema's collections from `config.collections`.
pub(crate) async fn observe_shard_keys(db: &Database, observed: &mut Observed) -> Result<()> {
    if observed.topology != Some(Topology::Mongos) || observed.collections.is_empty() {
        return Ok(());
    }
    let namespaces: Vec<String> = observed
        .collections
        .iter()
        .map(|c| format!("{}.{}", db.name(), c.name))
        .collect();
    let entries: Vec<BsonDocument> = db
        .client()
        .database("config")
        .collection::<BsonDocument>("collections")
        .find(doc! { "_id": { "$in": &namespaces }, "dropped": { "$ne": true } })
        .await?
        .try_collect()
        .await?;
    for entry in entries {
        let Some(name) = entry
            .get_str("_id")
            .ok()
            .and_then(|ns| ns.strip_prefix(db.name()))
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            continue;
        };
        if let (Some(collection), Ok(key)) = (
            observed.collections.iter_mut().find(|c| c.name == name),
            entry.get_document("key"),
        ) {
            collection.shard_key = Some(key.clone());
        }
    }
    Ok(())
}

/// The `shardCollection` command (run against `admin`) for `collection` of `db`.
pub(crate) fn shard_command(db: &str, collection: &str, key: &BsonDocument) -> BsonDocument {
    doc! { "shardCollection": format!("{db}.{collection}"), "key": Bson::Document(key.clone()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::plan::{ObservedCollection, PlanOptions};
    use crate::IndexSpec;

    fn messages() -> CollectionSpec {
        CollectionSpec::new("messages", doc! {})
            .index(IndexSpec::new(doc! { "ticket_id": 1, "at": 1 }))
            .shard_key(doc! { "ticket_id": 1, "at": 1 })
    }

    fn plan(topology: Topology, server: Option<ObservedCollection>, shard: bool) -> Plan {
        let mut plain = ObservedCollection::new("plain");
        plain.validator = Some(doc! {});
        let observed = Observed {
            collections: match server {
                Some(server) => vec![server, plain],
                None => Vec::new(),
            },
            topology: Some(topology),
        };
        let options = PlanOptions {
            shard_collections: shard,
            ..PlanOptions::default()
        };
        Plan::compute_with(
            &[messages(), CollectionSpec::new("plain", doc! {})],
            &observed,
            options,
        )
    }

    fn existing(shard_key: Option<BsonDocument>) -> ObservedCollection {
        let mut c = ObservedCollection::new("messages");
        c.validator = Some(doc! {});
        c.indexes
            .push(doc! { "key": { "ticket_id": 1, "at": 1 }, "name": "ticket_id_1_at_1" });
        c.shard_key = shard_key;
        c
    }

    #[test]
    fn hello_tells_a_mongos_from_a_replica_set() {
        assert_eq!(
            Topology::from_hello(&doc! { "ismaster": true, "msg": "isdbgrid" }),
            Topology::Mongos
        );
        assert_eq!(
            Topology::from_hello(&doc! { "isWritablePrimary": true, "setName": "rs0" }),
            Topology::ReplicaSet
        );
        assert_eq!(
            Topology::from_hello(&doc! { "isWritablePrimary": true }),
            Topology::Standalone
        );
    }

    #[test]
    fn on_a_mongos_a_new_collection_is_sharded_after_its_index() {
        let plan = plan(Topology::Mongos, None, true);
        let kinds: Vec<String> = plan
            .actions
            .iter()
            .map(|a| format!("{} {}", kind(a), a.collection()))
            .collect();
        assert_eq!(
            kinds,
            [
                "create messages",
                "createIndexes messages",
                "shardCollection messages",
                "create plain"
            ]
        );
        assert_eq!(plan.sharding.len(), 1, "only collections with a key");
        assert_eq!(plan.sharding[0].state, ShardState::ToShard);
    }

    fn kind(action: &Action) -> &'static str {
        match action {
            Action::CreateCollection { .. } => "create",
            Action::CreateIndexes { .. } => "createIndexes",
            Action::ShardCollection { .. } => "shardCollection",
            Action::UpdateValidator { .. } => "collMod",
            Action::DropIndex { .. } => "dropIndexes",
            Action::EnablePreImages { .. } => "collMod",
        }
    }

    #[test]
    fn on_a_mongos_only_when_asked_and_not_twice() {
        let plan_unasked = plan(Topology::Mongos, Some(existing(None)), false);
        assert!(plan_unasked.is_empty());
        assert_eq!(plan_unasked.sharding[0].state, ShardState::NotRequested);
        // display-text: the plan's advice, read by a person
        assert!(plan_unasked.to_string().contains("shard_collections(true)"));

        let asked = plan(Topology::Mongos, Some(existing(None)), true);
        assert!(
            matches!(&asked.actions[..], [Action::ShardCollection { key, .. }] if key == &doc! { "ticket_id": 1, "at": 1 })
        );

        let done = plan(
            Topology::Mongos,
            Some(existing(Some(doc! { "ticket_id": 1_i64, "at": 1_i64 }))),
            true,
        );
        assert!(done.is_empty(), "{done}");
        assert_eq!(done.sharding[0].state, ShardState::Sharded);
    }

    #[test]
    fn another_key_is_reported_and_left_alone() {
        let plan = plan(
            Topology::Mongos,
            Some(existing(Some(doc! { "_id": "hashed" }))),
            true,
        );
        assert!(plan.is_empty());
        assert!(matches!(plan.sharding[0].state, ShardState::OtherKey(_)));
        assert!(matches!(
            &plan.warnings[..],
            [Warning::ShardKeyDiffers { .. }]
        ));
    }

    #[test]
    fn without_a_supporting_index_nothing_is_sharded() {
        let mut server = existing(None);
        server.indexes.truncate(1);
        // the schema's index conflicts with one of the server's (same name, other keys)
        server
            .indexes
            .push(doc! { "key": { "at": 1 }, "name": "ticket_id_1_at_1" });
        let plan = plan(Topology::Mongos, Some(server), true);
        assert!(plan.is_empty(), "{plan}");
        assert_eq!(plan.sharding[0].state, ShardState::NoSupportingIndex);
    }

    #[test]
    fn on_a_replica_set_there_is_nothing_to_shard() {
        for shard in [false, true] {
            let plan = plan(Topology::ReplicaSet, Some(existing(None)), shard);
            assert!(plan.is_empty());
            assert_eq!(
                plan.sharding[0].state,
                ShardState::NotAShardedCluster(Topology::ReplicaSet)
            );
            // display-text: the plan's advice, read by a person
            assert!(plan.to_string().contains(
                "`messages` declares the shard key { \"ticket_id\": 1, \"at\": 1 }; the database is on a replica set: nothing to shard"
            ), "{plan}");
        }
    }

    #[test]
    fn unobserved_topology_plans_no_sharding() {
        let observed = Observed::default();
        let plan = Plan::compute_with(
            &[messages()],
            &observed,
            PlanOptions {
                shard_collections: true,
                ..PlanOptions::default()
            },
        );
        assert!(plan.sharding.is_empty());
        assert!(!plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::ShardCollection { .. })));
    }
}
