//! Start-up and operations: everything that brings a database to the schema or looks at how far
//! it is from it.
//!
//! - [`apply`]: `plan` and `apply`, and the apply path as one pipeline whose stages are, in order:
//!   - [`observe`]: what the server has (the record, collections, indexes, violators);
//!   - [`plan`]: pure planning, desired state + observed state -> actions;
//!   - [`lock`]: the apply lock, a lease in the record;
//!   - [`crate::migrate`]: the versioned migration steps;
//!   - [`execute`]: sending the planned writes;
//!   - [`record`]: the version record, its states and fingerprints;
//! - [`sharding`]: the sharding of declared shard keys on a mongos (pure);
//! - [`mongosh`]: the same setup as a mongosh script, for review;
//! - [`audit`]: a read-only look at a live database against the schema;
//! - [`report`]: the schema report for review (validators, size bounds, indexes and their
//!   reasons, the seeds' checklist and warnings, a Mermaid diagram), and [`report_html`]: the
//!   same as one self-contained HTML page with an SVG diagram.

pub(crate) mod apply;
pub(crate) mod audit;
pub(crate) mod execute;
pub(crate) mod lock;
pub mod migrate;
pub(crate) mod mongosh;
pub(crate) mod observe;
pub(crate) mod plan;
pub(crate) mod record;
pub(crate) mod report;
pub(crate) mod report_html;
pub(crate) mod sharding;
pub(crate) mod violations;

pub use apply::{ApplyAction, ApplyReport, PlanAction, RanEntry, APPLY_DEADLINE};
pub use audit::{ArrayPressure, AuditReport, ChildAudit, CollectionAudit, PartAudit};
pub use execute::AppliedAction;
pub use observe::{Observed, ObservedCollection, Topology, Violations};
pub use plan::{Action, OnNewer, OnViolations, Plan, PlanOptions, Warning};
pub use record::{RecordedVersion, VersionStatus, DEFAULT_SCHEMA_NAME, META_COLLECTION};
pub use sharding::{ShardState, ShardingStatus};

/// A collection of two typed fields with two indexes, for the stages' unit tests.
#[cfg(test)]
pub(crate) fn test_spec(name: &str) -> crate::CollectionSpec {
    use mongodb::bson::doc;
    crate::CollectionSpec::new(
        name,
        doc! { "$jsonSchema": { "bsonType": "object", "required": ["a", "b"], "properties": {
            "a": { "bsonType": "string", "maxLength": 10_i64 },
            "b": { "bsonType": "int" },
        } } },
    )
    .index(crate::IndexSpec::new(doc! { "a": 1, "b": -1 }))
    .index(crate::IndexSpec::new(doc! { "b": 1 }).unique(true))
}
