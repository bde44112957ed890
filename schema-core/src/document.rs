//! Collection roots and the desired state of their collection.

use std::fmt;

use mongodb::bson::{doc, Document as BsonDocument};
use mongodb::IndexModel;

use crate::{BsonSchema, IndexSpec};

/// A collection root: a type stored as whole documents of one collection.
///
/// Implemented by `#[derive(Document)]` together with [`BsonSchema`], from the
/// `#[collection(...)]` and `#[index(...)]` attributes and the field attributes.
pub trait Document: BsonSchema {
    /// The name of the collection.
    const COLLECTION: &'static str;

    /// The collection's validator: `{ "$jsonSchema": <Self::bson_schema()> }`.
    fn validator() -> BsonDocument {
        doc! { "$jsonSchema": Self::bson_schema() }
    }

    /// The indexes of the collection as driver models: the declared ones plus every index a
    /// relationship or the shard key requires. See [`Document::collection_spec`] for the reason
    /// each one exists.
    fn indexes() -> Vec<IndexModel> {
        Self::collection_spec()
            .indexes
            .iter()
            .map(IndexSpec::to_model)
            .collect()
    }

    /// The whole desired state of the collection: name, validator, validation level and action,
    /// and indexes with the reason each exists.
    fn collection_spec() -> CollectionSpec;

    /// The typed driver handle of this collection in `db`.
    fn collection(db: &mongodb::Database) -> mongodb::Collection<Self>
    where
        Self: Sized + Send + Sync,
    {
        db.collection(Self::COLLECTION)
    }
}

/// How strictly the server applies a collection's validator (`validationLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ValidationLevel {
    /// Every insert and update is validated (the server default).
    #[default]
    Strict,
    /// Updates to documents that are already invalid are not validated.
    Moderate,
}

impl ValidationLevel {
    /// The server's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationLevel::Strict => "strict",
            ValidationLevel::Moderate => "moderate",
        }
    }
}

/// What the server does with an invalid write (`validationAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ValidationAction {
    /// Reject the write with code 121 (the server default).
    #[default]
    Error,
    /// Accept the write and log a warning.
    Warn,
}

impl ValidationAction {
    /// The server's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationAction::Error => "error",
            ValidationAction::Warn => "warn",
        }
    }
}

impl fmt::Display for ValidationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ValidationAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The desired state of one collection, as the derive describes it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CollectionSpec {
    /// Collection name.
    pub name: String,
    /// The full validator document (`{ "$jsonSchema": ... }`).
    pub validator: BsonDocument,
    /// `validationLevel`.
    pub validation_level: ValidationLevel,
    /// `validationAction`.
    pub validation_action: ValidationAction,
    /// Indexes, declared and derived, without duplicates.
    pub indexes: Vec<IndexSpec>,
    /// The shard key, if declared with `#[collection(shard_key(...))]`.
    pub shard_key: Option<BsonDocument>,
}

impl CollectionSpec {
    /// A collection with a validator, default level and action and no index.
    pub fn new(name: impl Into<String>, validator: BsonDocument) -> Self {
        CollectionSpec {
            name: name.into(),
            validator,
            validation_level: ValidationLevel::default(),
            validation_action: ValidationAction::default(),
            indexes: Vec::new(),
            shard_key: None,
        }
    }

    /// Sets `validationLevel`.
    pub fn validation_level(mut self, level: ValidationLevel) -> Self {
        self.validation_level = level;
        self
    }

    /// Sets `validationAction`.
    pub fn validation_action(mut self, action: ValidationAction) -> Self {
        self.validation_action = action;
        self
    }

    /// Declares the shard key; it gets an index unless one with the same keys exists.
    pub fn shard_key(mut self, keys: BsonDocument) -> Self {
        self.shard_key = Some(keys.clone());
        self.index(IndexSpec::new(keys).reason(crate::IndexReason::ShardKey))
    }

    /// Adds an index. An index whose keys are the same as an existing one's is merged into it
    /// (the first keeps its name and options; the reasons are combined), so a relationship index
    /// that a declared index already provides is not created twice.
    pub fn index(mut self, index: IndexSpec) -> Self {
        match self.indexes.iter_mut().find(|i| i.same_keys(&index)) {
            Some(existing) => existing.merge_reasons(&index),
            None => self.indexes.push(index),
        }
        self
    }
}
