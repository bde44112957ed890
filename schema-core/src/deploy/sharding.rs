//! Sharding the collections that declare a shard key, when the database is behind a mongos.
//!
//! Pure: declared keys + the observed topology and keys -> a status per collection
//! ([`sharding_of`]); the plan turns [`ShardState::ToShard`] into a `shardCollection` action. The
//! reads it needs (`hello`, `config.collections`) are the observe stage's.

use std::fmt;

use mongodb::bson::{doc, Bson, Document as BsonDocument};

use super::observe::{Observed, Topology};
use crate::{json_schema, CollectionSpec};

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
                "`{collection}` declares the shard key {key} and is not sharded: apply with {} to shard it",
                crate::terms::SHARD_COLLECTIONS
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

/// The sharding of every collection of `desired` that declares a shard key, in their order.
/// `planned_index(collection, starts_with_key)`: whether the plan creates an index of that
/// collection whose keys satisfy the test. Empty when the topology was not observed.
pub(crate) fn sharding_of(
    desired: &[CollectionSpec],
    observed: &Observed,
    shard: bool,
    planned_index: impl Fn(&str, &dyn Fn(&BsonDocument) -> bool) -> bool,
) -> Vec<ShardingStatus> {
    let Some(topology) = observed.topology else {
        return Vec::new();
    };
    let mut statuses = Vec::new();
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
                Some(sharded) => ShardState::OtherKey(sharded.clone()),
                None if !shard => ShardState::NotRequested,
                None if !has_supporting_index(spec, observed, key, &planned_index) => {
                    ShardState::NoSupportingIndex
                }
                None => ShardState::ToShard,
            }
        };
        statuses.push(ShardingStatus {
            collection: spec.name.clone(),
            key: key.clone(),
            state,
        });
    }
    statuses
}

/// Whether the server has, or the plan creates, an index whose keys start with `key`.
fn has_supporting_index(
    spec: &CollectionSpec,
    observed: &Observed,
    key: &BsonDocument,
    planned_index: &impl Fn(&str, &dyn Fn(&BsonDocument) -> bool) -> bool,
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
    existing || planned_index(&spec.name, &starts_with_key)
}

/// The `shardCollection` command (run against `admin`) for `collection` of `db`. It states
/// the simple collation, always: mongod refuses the command on a collection of a non-simple
/// default collation without it ("Collection has default collation: ... Must specify collation
/// {locale: 'simple'}", BadValue) and accepts it on any other (a shard key compares exactly).
pub(crate) fn shard_command(db: &str, collection: &str, key: &BsonDocument) -> BsonDocument {
    doc! {
        "shardCollection": format!("{db}.{collection}"),
        "key": Bson::Document(key.clone()),
        "collation": { "locale": "simple" },
    }
}

#[cfg(test)]
mod shard_command_tests {
    use super::*;

    #[test]
    fn the_shard_command_states_the_simple_collation() {
        let command = shard_command("clinic", "patients", &doc! { "clinic": 1, "email": 1 });
        assert_eq!(
            command,
            doc! {
                "shardCollection": "clinic.patients",
                "key": { "clinic": 1, "email": 1 },
                "collation": { "locale": "simple" },
            }
        );
    }
}
