//! Runtime of [mongo-schema](https://docs.rs/mongo-schema): the traits the derives implement,
//! the schema model, `$jsonSchema` and index descriptions, and the start-up [`Schema::apply`].
//!
//! Most users depend on the facade crate `mongo-schema` and never name this crate directly.
//! Everything here is plain Rust: the derive macros emit small tables and calls into this crate,
//! so the logic is testable without a macro in sight.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![warn(clippy::missing_errors_doc)]

pub mod action;
pub mod bson_compat;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
mod concern;
mod deploy;
pub mod error;
mod explain;
pub mod geo;
mod json_schema;
mod lease;
mod literal;
mod model;
mod progress;
pub mod query;
mod random;
mod relations;
mod schema;
pub mod serde_helpers;
mod sync;
mod terms;
pub mod testing;
mod validation;

pub use deploy::migrate;
pub use deploy::{
    Action, AppliedAction, ApplyAction, ApplyReport, ArrayPressure, AuditReport, ChildAudit,
    CollectionAudit, Observed, ObservedCollection, OnNewer, OnViolations, PartAudit, Plan,
    PlanAction, PlanOptions, RanEntry, RecordedVersion, ShardState, ShardingStatus, Topology,
    VersionStatus, Violations, Warning, APPLY_DEADLINE, DEFAULT_SCHEMA_NAME, META_COLLECTION,
};
pub use error::{Error, Result, ResultExt};
pub use explain::{explain, ExplainSummary};
pub use model::bson_schema::{BoundedCollection, BsonSchema, MapKey, Unbounded};
pub use model::collation::Collation;
pub use model::collection::{
    CollectionSpec, RefKind, ReferenceSpec, ValidationAction, ValidationLevel,
};
pub use model::copy::{
    CopyShape, CopySpec, EmbedSpec, OnDelete, SubsetEdge, SubsetSpec, SyncEdge, SyncGraph,
    SyncStrategy,
};
pub use model::document::Document;
pub use model::index::{IndexReason, IndexSpec};
pub use model::part::PartSpec;
pub use model::size::{human as human_bytes, SizeBound, MAX_DOCUMENT_BYTES};
pub use model::sort::SortDirection;
pub use model::timeseries::{Granularity, TimeSeries};
pub use progress::PROGRESS_TARGET;
#[allow(deprecated)]
pub use relations::bucket::EntryPage;
pub use relations::bucket::{Bucket, EntryCursor};
pub use relations::embedded::{EmbeddedArray, PushOutcome};
pub use relations::reference::{Identified, Ref};
pub use relations::subset::{
    Counter, CounterType, ParentUpdate, PreviewFn, RebuildProgress, RuleOf, Subset, SubsetOf,
    SubsetReconcile,
};
pub use relations::{
    Attached, ChildOrder, ChildPage, Detached, Joined, Lookup, Page, PageCursor, PartOf, Relation,
    Resolved, SortKey, Unordered, MAX_PAGE_SIZE, RELATED_FIELD,
};
pub use schema::{Schema, SchemaBuilder, SchemaError};
pub use sync::{
    EdgeReconcile, PartReconcile, ReconcileReport, RetryReport, SourceDelete, SourceUpdate,
    StepOutcome, SyncFailure, SyncWorker, SyncWorkerHandle, Transaction, TransactionReport,
    WorkerSnapshot, WorkerStats, DEFAULT_LEASE, DEFAULT_MAX_BATCH, DEFAULT_READY_TIMEOUT,
    DEFAULT_STALL_TIMEOUT, DEFAULT_TOKEN_SAVE_INTERVAL, FAILURES_COLLECTION, FAILURE_RECORD_TTL,
    FAN_OUT_CHUNK, TOKENS_COLLECTION, TRANSACTION_DEADLINE,
};
pub use validation::{BatchFailure, LocalValidator, RuleFailure, ValidationError};

/// The sync worker's metrics (`mongo_schema_sync_*`) and their names.
pub use sync::metrics as sync_metrics;

/// The driver this crate is built on, re-exported so versions cannot diverge.
pub use mongodb;
/// BSON types, re-exported from the driver (`mongodb::bson`).
pub use mongodb::bson;

#[doc(hidden)]
pub mod __private;
