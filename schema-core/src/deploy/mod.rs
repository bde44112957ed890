//! Start-up and operations: everything that brings a database to the schema or looks at how far
//! it is from it.
//!
//! - [`plan`]: pure planning, desired state + observed state -> actions;
//! - [`apply`]: observing the server and carrying out a plan;
//! - [`mongosh`]: the same setup as a mongosh script, for review;
//! - [`audit`]: a read-only look at a live database against the schema.

pub(crate) mod apply;
pub(crate) mod audit;
pub(crate) mod mongosh;
pub(crate) mod plan;

pub use apply::{AppliedAction, ApplyReport};
pub use audit::{ArrayPressure, AuditReport, CollectionAudit};
pub use plan::{
    Action, Observed, ObservedCollection, OnViolations, Plan, PlanOptions, Violations, Warning,
};
