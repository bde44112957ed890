//! Data migrations that belong to a schema version: declared with
//! [`SchemaBuilder::migration`](crate::SchemaBuilder::migration), run once each by
//! [`Schema::apply`](crate::Schema::apply), in version order, under its lock, and recorded in a
//! changelog ([`MIGRATIONS_COLLECTION`]).
//!
//! Built-in steps ([`set_default`], [`reference_to_copy`], [`fill_copies`], [`rename_field`],
//! [`truncate`], [`dedupe`]) are typed against the model (their fields are checked by
//! `Schema::build`), idempotent, and send their writes server-side in batches: an update
//! command per batch, never one round trip per document. A step of your own is [`custom`]: it
//! receives a [`StepContext`] with the database, a batch helper and a checkpoint.
//!
//! A step that fails leaves its record `failed` with the error, and `apply` returns
//! [`Error::Migration`](crate::Error::Migration); the next `apply` runs it again from its
//! checkpoint. A step recorded `done` never runs again, even if its description changed since
//! (the record keeps the checksum of the description it ran with; `plan` warns about the
//! difference).

mod builtin;
pub(crate) mod changelog;
mod context;
pub(crate) mod run;

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use mongodb::Database;

#[allow(deprecated)]
pub use builtin::{
    custom, dedupe, dedupe_by_name, fill_copies, fill_copies_by_name, reference_to_copy,
    reference_to_copy_by_name, rename_field, rename_field_by_name, set_default,
    set_default_by_name, truncate, truncate_by_name, DedupeKeys, FillCopies, Keep, TextField,
};
pub use changelog::{MigrationRecord, MigrationState, MIGRATIONS_COLLECTION};
pub use context::StepContext;

use crate::model::collection::CollectionSpec;
use crate::query::QuerySpec;
use crate::Result;

/// What a step did: documents matched by its filters and documents changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepCounts {
    /// Documents the step's writes matched.
    pub matched: u64,
    /// Documents they changed.
    pub changed: u64,
}

impl StepCounts {
    /// `matched` and `changed` documents.
    pub fn new(matched: u64, changed: u64) -> Self {
        StepCounts { matched, changed }
    }
}

impl std::ops::AddAssign for StepCounts {
    fn add_assign(&mut self, other: StepCounts) {
        self.matched += other.matched;
        self.changed += other.changed;
    }
}

/// The work of one migration step.
pub(crate) trait Work: Send + Sync {
    /// What the step does, in words (its checksum is recorded).
    fn describe(&self) -> String;
    /// The collection it writes (for `plan` and the report).
    fn collection(&self) -> &str;
    /// Problems of the step against the schema's collections (`Schema::build` errors).
    fn problems(&self, collections: &[CollectionSpec]) -> Vec<String>;
    /// The documents a run would touch now (for `plan`; the built-in steps count within
    /// [`crate::concern::OPERATOR_TIME_LIMIT`]).
    fn pending<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>>;
    /// The keys of the unique index a step removes duplicates for (`apply` runs it again when
    /// the build of a unique index on exactly these keys still meets some); `None` for the
    /// other steps.
    fn dedupes(&self) -> Option<&[String]> {
        None
    }
    /// Whether the step may run again from the start over data it already migrated (every
    /// built-in step; a [`custom`] one is only asked to resume from its checkpoint): a version
    /// applied again after it was rolled back runs such steps again.
    fn reruns(&self) -> bool {
        true
    }
    /// The batched reads and updates the step sends, as `(collection, query)`: described to
    /// the fit like the library's other queries (`Schema::build` derives an index for one no
    /// index serves; the report and `prove` list them). A step's whole-collection `updateMany`
    /// and the dedupe's grouping are one scan per run by design, and the dedupe's reads of a
    /// group's members run before the unique index they prepare for exists (a scan per group,
    /// which no index the schema keeps would serve): none of them is listed.
    fn queries(&self, _collections: &[CollectionSpec]) -> Vec<(String, QuerySpec)> {
        Vec::new()
    }
    /// Runs the step (again from `cx`'s checkpoint after an interruption).
    fn run<'a>(&'a self, cx: &'a mut StepContext) -> BoxFuture<'a, Result<StepCounts>>;
}

/// A data step of a migration: one of the built-ins of this module, or [`custom`].
#[derive(Clone)]
pub struct Step(pub(crate) Arc<dyn Work>);

impl Step {
    /// What the step does, in words.
    pub fn describe(&self) -> String {
        self.0.describe()
    }

    /// The collection it writes.
    pub fn collection(&self) -> &str {
        self.0.collection()
    }
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A step declared for a schema version ([`crate::SchemaBuilder::migration`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Migration {
    /// The schema version the step belongs to.
    pub version: u64,
    /// Its name, unique within the version.
    pub name: String,
    /// The step.
    pub step: Step,
}

impl Migration {
    /// The changelog key of the step in the schema named `schema`.
    pub(crate) fn key(&self, schema: &str) -> String {
        format!("{schema}/{}/{}", self.version, self.name)
    }

    /// The checksum of the step's description (FNV-1a, hex).
    pub fn checksum(&self) -> String {
        checksum(&self.step.describe())
    }
}

pub(crate) fn checksum(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// A step `plan` found pending: not recorded `done`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PendingStep {
    /// Version of the step.
    pub version: u64,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The collection it writes.
    pub collection: String,
    /// Documents it would touch now.
    pub documents: u64,
    /// The state recorded by an earlier run (`failed`, `running`), if any.
    pub recorded: Option<MigrationState>,
}

impl fmt::Display for PendingStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "migration v{} `{}`: {} ({} document(s) to touch)",
            self.version, self.name, self.description, self.documents
        )?;
        match &self.recorded {
            Some(MigrationState::Done) => write!(
                f,
                ", recorded done before its version was rolled back: it runs again"
            )?,
            Some(state) => write!(f, ", recorded {state} by an earlier apply: it resumes")?,
            None => {}
        }
        Ok(())
    }
}

/// A step `apply` ran.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RanStep {
    /// Version of the step.
    pub version: u64,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Documents matched and changed.
    pub counts: StepCounts,
    /// Whether it resumed an earlier, interrupted or failed run.
    pub resumed: bool,
}

impl fmt::Display for RanStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "migration v{} `{}`: {}: {} matched, {} changed{}",
            self.version,
            self.name,
            self.description,
            self.counts.matched,
            self.counts.changed,
            if self.resumed { " (resumed)" } else { "" }
        )
    }
}

/// The problems of `migrations` against `collections` and each other (`Schema::build`).
/// The queries the steps of `version` (the schema's own) send in batches, by collection (see
/// `Work::queries`), each named after its version and step. An older version's steps are left
/// out: they have run on every database already at that version, and an index derived for
/// them would stay for good (a database that skips versions runs them without it).
pub(crate) fn queries(
    migrations: &[Migration],
    version: u64,
    collections: &[CollectionSpec],
) -> Vec<(String, QuerySpec)> {
    migrations
        .iter()
        .filter(|m| m.version == version)
        .flat_map(|m| {
            m.step
                .0
                .queries(collections)
                .into_iter()
                .map(move |(collection, mut query)| {
                    query.name = format!("migration {} `{}`: {}", m.version, m.name, query.name);
                    (collection, query)
                })
        })
        .collect()
}

pub(crate) fn problems(migrations: &[Migration], collections: &[CollectionSpec]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, migration) in migrations.iter().enumerate() {
        if migration.name.trim().is_empty() {
            problems.push(format!(
                "a migration of version {} has an empty name",
                migration.version
            ));
        }
        if migrations[..i]
            .iter()
            .any(|m| m.version == migration.version && m.name == migration.name)
        {
            problems.push(format!(
                "two migrations of version {} are named `{}`",
                migration.version, migration.name
            ));
        }
        problems.extend(
            migration
                .step
                .0
                .problems(collections)
                .into_iter()
                .map(|p| format!("migration v{} `{}`: {p}", migration.version, migration.name)),
        );
    }
    problems
}
