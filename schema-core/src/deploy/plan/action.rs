//! [`Action`]: a write `apply` performs (its text is in `text.rs`).

use mongodb::bson::Document;

use crate::deploy::observe::Violations;
use crate::{IndexSpec, ValidationAction, ValidationLevel};

/// A write `apply` performs. Reads are not actions: a plan with no action means a start-up that
/// sends no write command at all.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// `create` the collection with its validator.
    CreateCollection {
        /// Collection name.
        collection: String,
        /// Validator document.
        validator: Document,
        /// `validationLevel`.
        level: ValidationLevel,
        /// `validationAction`.
        action: ValidationAction,
        /// The collection's default collation (`collation`), which mongod cannot change later.
        collation: Option<crate::Collation>,
        /// A time series collection's options (`timeseries`, `expireAfterSeconds`): then no
        /// validator, level or action is sent (mongod refuses them on one).
        timeseries: Option<crate::TimeSeries>,
    },
    /// `collMod` of a time series collection's options mongod can change: the granularity
    /// (upward only) and the expiry of its measurements.
    ModifyTimeSeries {
        /// Collection name.
        collection: String,
        /// The new granularity (`None`: unchanged).
        granularity: Option<crate::Granularity>,
        /// The new expiry (`None`: unchanged; `Some(None)`: measurements kept forever, `"off"`).
        expire_after_secs: Option<Option<u64>>,
        /// What changes, in words.
        changes: Vec<String>,
    },
    /// `collMod` to the schema's validator, level and action.
    UpdateValidator {
        /// Collection name.
        collection: String,
        /// The server's current validator (`None`: it has none).
        current: Option<Document>,
        /// Validator document.
        validator: Document,
        /// `validationLevel`.
        level: ValidationLevel,
        /// `validationAction`.
        action: ValidationAction,
        /// What differs, in words.
        changes: Vec<String>,
        /// Existing documents the new validator would reject (counted by `plan` and `apply`
        /// against the server; `None` in a plan computed without one).
        violations: Option<Violations>,
    },
    /// `createIndexes` for the indexes the server does not have.
    CreateIndexes {
        /// Collection name.
        collection: String,
        /// Missing indexes.
        indexes: Vec<IndexSpec>,
    },
    /// `dropIndexes` of an index the schema does not declare; only planned with
    /// `drop_stale_indexes(true)`, never for `_id_`.
    DropIndex {
        /// Collection name.
        collection: String,
        /// Index name.
        name: String,
        /// Its keys, for the report.
        keys: Document,
    },
    /// `shardCollection` by the declared shard key, on a mongos, after the collection and an
    /// index that starts with the key exist; only with `shard_collections(true)`.
    ShardCollection {
        /// Collection name.
        collection: String,
        /// The declared shard key.
        key: Document,
    },
    /// `collMod` with `changeStreamPreAndPostImages: { enabled: true }`: the sync worker of a
    /// `#[subset(sync = "async")]` reads a deleted (or moved) child's parent from its pre-image.
    /// Never disabled by `apply`.
    EnablePreImages {
        /// Collection name.
        collection: String,
    },
}

impl Action {
    /// The collection the action writes to.
    pub fn collection(&self) -> &str {
        match self {
            Action::CreateCollection { collection, .. }
            | Action::ModifyTimeSeries { collection, .. }
            | Action::UpdateValidator { collection, .. }
            | Action::CreateIndexes { collection, .. }
            | Action::DropIndex { collection, .. }
            | Action::ShardCollection { collection, .. }
            | Action::EnablePreImages { collection } => collection,
        }
    }
}
