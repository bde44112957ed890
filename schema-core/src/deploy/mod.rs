//! Start-up and operations: everything that brings a database to the schema or looks at how far
//! it is from it.
//!
//! - [`plan`]: pure planning, desired state + observed state -> actions;
//! - [`apply`]: observing the server and carrying out a plan under the apply lock, re-planning
//!   after races and retrying transient faults within a deadline;
//! - [`versions`]: the schema version record, the fingerprint of a desired state, the lock;
//! - [`sharding`]: `shardCollection` for declared shard keys on a mongos;
//! - [`mongosh`]: the same setup as a mongosh script, for review;
//! - [`audit`]: a read-only look at a live database against the schema;
//! - [`report`]: the schema report for review (validators, size bounds, indexes and their
//!   reasons, the seeds' checklist and warnings, a Mermaid diagram), and [`report_html`]: the
//!   same as one self-contained HTML page with an SVG diagram.

pub(crate) mod apply;
pub(crate) mod audit;
pub mod migrate;
pub(crate) mod mongosh;
pub(crate) mod observe;
pub(crate) mod plan;
pub(crate) mod report;
pub(crate) mod report_html;
pub(crate) mod sharding;
pub(crate) mod versions;

pub use apply::{AppliedAction, ApplyAction, ApplyReport, OnNewer, PlanAction, APPLY_DEADLINE};
pub use audit::{ArrayPressure, AuditReport, CollectionAudit};
pub use plan::{
    Action, Observed, ObservedCollection, OnViolations, Plan, PlanOptions, Violations, Warning,
};
pub use sharding::{ShardState, ShardingStatus, Topology};
pub use versions::{RecordedVersion, VersionStatus, DEFAULT_SCHEMA_NAME, META_COLLECTION};
