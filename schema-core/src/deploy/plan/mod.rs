//! Pure planning: desired state (the schema) + observed state (the server) -> actions.
//!
//! Nothing here talks to a server, so every decision `apply` makes is unit-tested.
//!
//! One file per part of the plan:
//!
//! - `mod.rs` (this file): [`Plan`] and its options ([`PlanOptions`], [`OnViolations`]);
//! - `action.rs`: [`Action`], the writes;
//! - `warning.rs`: [`Warning`], what is reported and left alone;
//! - `collections.rs`: the plan of each collection ([`Plan::compute`], [`Plan::for_collection`]),
//!   its time series options;
//! - `indexes.rs`: the declared indexes against the server's, prefixes of longer indexes;
//! - `validators.rs`: validator changes;
//! - `versions.rs`: the plan stage of one pass of `apply` ([`OnNewer`], the migration steps,
//!   drift, held-back drops, the writes of validator changes once violations are known);
//! - `text.rs`: the text of a plan, its actions and warnings;
//! - `tests.rs`, `drift_tests.rs`, `drop_tests.rs`, `prefix_tests.rs`, `held_back_tests.rs`,
//!   `sharding_tests.rs`: the unit tests.

use crate::deploy::record::VersionStatus;
use crate::deploy::sharding::ShardingStatus;

mod action;
mod collections;
mod indexes;
mod text;
mod validators;
mod versions;
mod warning;
pub use action::Action;
#[cfg(feature = "cli")]
pub(crate) use text::missing_after_apply;
#[cfg(test)]
pub(crate) use versions::drifted_collections;
pub use versions::OnNewer;
pub(crate) use versions::{drift, hold_back_drops, plan_apply, Deciding, Next, Staged};
pub(crate) use warning::not_as_declared;
pub use warning::Warning;

/// What `apply` does when a validator change would reject existing documents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnViolations {
    /// Leave the collection's validator as it is and report it (the default): nothing is
    /// tightened over data that does not fit.
    #[default]
    Refuse,
    /// Apply the new validator with `validationLevel: "moderate"`, so existing invalid documents
    /// can still be updated while a migration fixes them; apply again afterwards for `strict`.
    Moderate,
    /// Apply the new validator as declared; the violating documents stay as they are and fail
    /// their next update.
    Override,
}

/// Choices that change what a plan contains.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanOptions {
    /// Drop indexes the schema does not declare (never `_id_`, never a conflicting one).
    pub drop_stale_indexes: bool,
    /// What to do with a validator change that existing documents violate.
    pub on_violations: OnViolations,
    /// On a mongos, shard the collections that declare a shard key and are not sharded.
    pub shard_collections: bool,
}

/// The actions that would bring the server to the schema, and what will be left alone.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Plan {
    /// Writes to perform, in order.
    pub actions: Vec<Action>,
    /// Differences reported but not acted on.
    pub warnings: Vec<Warning>,
    /// How the schema's version relates to the one recorded in the database (filled by
    /// [`crate::Schema::plan`]; `None` in a plan computed without a server).
    pub version: Option<VersionStatus>,
    /// The sharding of each collection that declares a shard key (filled when the topology was
    /// observed: by [`crate::Schema::plan`] whenever a collection declares a key).
    pub sharding: Vec<ShardingStatus>,
    /// The migration steps `apply` would run, in order, with the documents each would touch
    /// (filled by [`crate::Schema::plan`]).
    pub migrations: Vec<crate::migrate::PendingStep>,
    /// What of the declared state an `apply` with the same options would leave off the server
    /// (a validator change it refuses or holds at `moderate` over violating documents, a
    /// conflicting index; filled by [`crate::Schema::plan`]): that apply would record the
    /// version `partial`, and the CLI's `plan` exits 3.
    pub missing: Vec<String>,
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod drift_tests;

#[cfg(test)]
mod drop_tests;

#[cfg(test)]
mod prefix_tests;

#[cfg(test)]
mod held_back_tests;

#[cfg(test)]
mod sharding_tests;
