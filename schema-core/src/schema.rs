//! The set of models of a service.

use std::fmt;

use mongodb::Database;

use std::time::Duration;

use crate::sync::failures::FailureLog;
use crate::{
    json_schema, CollectionSpec, Document, ReconcileReport, Result, RetryReport, SyncEdge,
    SyncFailure, SyncGraph, SyncWorker, TRANSACTION_DEADLINE,
};

/// The collections of a service: built once from its `Document` types, then planned against or
/// applied to a database at start-up.
///
/// ```no_run
/// # use mongo_schema_core::{Schema, Document};
/// # async fn start<A: Document, B: Document>(db: &mongodb::Database) -> mongo_schema_core::Result<()> {
/// let schema = Schema::new().model::<A>().model::<B>().build()?;
/// let report = schema.apply(db).await?;
/// println!("{report}");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Schema {
    collections: Vec<CollectionSpec>,
    migrations: Vec<crate::migrate::Migration>,
    graph: SyncGraph,
    transaction_deadline: Duration,
    version: Option<u64>,
    name: String,
}

/// Collects models; [`SchemaBuilder::build`] checks the rules that span them.
#[derive(Debug, Default)]
#[must_use = "call `.build()` to get a `Schema`"]
pub struct SchemaBuilder {
    collections: Vec<CollectionSpec>,
    migrations: Vec<crate::migrate::Migration>,
    transaction_deadline: Option<Duration>,
    version: Option<u64>,
    name: Option<String>,
    server_rules: crate::query::fit::ServerRules,
}

/// Why a set of models does not make a schema. Every problem is listed, not only the first.
///
/// `Debug` shows the same text as `Display`, one problem per line, so that `build()?` in a
/// `main` returning `Result` prints sentences; `{:#?}` shows the structure.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct SchemaError {
    /// One sentence per problem.
    pub problems: Vec<String>,
}

impl fmt::Debug for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return f
                .debug_struct("SchemaError")
                .field("problems", &self.problems)
                .finish();
        }
        write!(f, "invalid schema:")?;
        for problem in &self.problems {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid schema: {}", self.problems.join("; "))
    }
}

impl std::error::Error for SchemaError {}

impl Schema {
    /// Starts a schema: add each collection root with [`SchemaBuilder::model`].
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> SchemaBuilder {
        SchemaBuilder::default()
    }

    /// The collections, in the order the models were added.
    pub fn collections(&self) -> &[CollectionSpec] {
        &self.collections
    }

    /// The collection called `name`.
    pub fn collection(&self, name: &str) -> Option<&CollectionSpec> {
        self.collections.iter().find(|c| c.name == name)
    }

    /// Every copied field: for each source collection and field, which collections and paths
    /// hold copies and by which strategy.
    pub fn sync_graph(&self) -> &SyncGraph {
        &self.graph
    }

    /// The total time a transaction's attempts and commit retries may take.
    pub(crate) fn transaction_deadline_value(&self) -> Duration {
        self.transaction_deadline
    }

    /// The total time the library's transactions of this schema may take
    /// ([`SchemaBuilder::transaction_deadline`], 120 s by default): past it a transaction still
    /// running its writes returns [`crate::Error::Timeout`], one whose commit is in flight
    /// [`crate::Error::CommitUnknown`].
    pub fn transaction_deadline(&self) -> Duration {
        self.transaction_deadline
    }

    /// Applies `update` (an operator document such as `{ "$set": { "name": .. } }`) to the `T`
    /// document `id` and, in the same multi-document transaction, rewrites every
    /// `transactional` copy it touches; so readers never see the source and its transactional
    /// copies disagree after the commit. Transient errors (write conflicts, a primary that went
    /// away) retry the transaction, with back-off, within
    /// [`SchemaBuilder::transaction_deadline`] (120 s by default); past it the last error is
    /// returned with its labels. A commit whose outcome is unknown (cut at the deadline while in
    /// flight, or failed after the driver's retry) is [`crate::Error::CommitUnknown`]: it may
    /// have committed, so read the document back before retrying an update that is not
    /// idempotent (`$inc`). `async` copies follow through the [`SyncWorker`], `frozen` ones
    /// never change.
    ///
    /// With [`.session(&mut s)`](crate::action::UpdateSource::session) the update and its
    /// fan-outs run inside the caller's transaction instead
    /// (`schema.update_source::<Customer>(&db, &id, update).session(&mut s).await`).
    ///
    /// # Errors
    ///
    /// An id that does not serialize ([`crate::Error::Serialization`], nothing sent), the
    /// driver's errors ([`crate::Error::Validation`] of the source or a holder), and without a
    /// session [`crate::Error::Timeout`] and [`crate::Error::CommitUnknown`].
    pub fn update_source<'a, T: Document>(
        &self,
        db: &'a Database,
        id: &T::Id,
        update: mongodb::bson::Document,
    ) -> crate::action::UpdateSource<'a>
    where
        T::Id: serde::Serialize,
    {
        crate::action::UpdateSource::new::<T>(
            db,
            &self.graph,
            self.transaction_deadline,
            id,
            update,
        )
    }

    /// Deletes the `T` document `id` and, in the same transaction, its parts (the documents
    /// of every `#[collection(same_id_as = T)]` under that `_id`, whether or not the owner
    /// was found: an orphan part goes too) and sets to `null` every `transactional` copy of it
    /// declared `on_delete = "unset"` (copies that `keep` stay as they were; `async` copies are
    /// unset by the [`SyncWorker`], `reconcile` ones by [`Schema::reconcile`]). Retried like
    /// [`Schema::update_source`].
    ///
    /// With [`.session(&mut s)`](crate::action::DeleteSource::session) it runs inside the
    /// caller's transaction.
    ///
    /// # Errors
    ///
    /// An id that does not serialize ([`crate::Error::Serialization`], nothing sent), the
    /// driver's errors, and without a session [`crate::Error::Timeout`] and
    /// [`crate::Error::CommitUnknown`].
    pub fn delete_source<'a, T: Document>(
        &self,
        db: &'a Database,
        id: &T::Id,
    ) -> crate::action::DeleteSource<'a>
    where
        T::Id: serde::Serialize,
    {
        let parts = self
            .collections
            .iter()
            .filter(|c| c.part_of.as_ref().is_some_and(|p| p.owner == T::COLLECTION))
            .map(|c| c.name.clone())
            .collect();
        crate::action::DeleteSource::new::<T>(db, &self.graph, self.transaction_deadline, id, parts)
    }

    /// Compares every non-frozen copy with its source and rewrites the drifted ones (the
    /// `reconcile` strategy, and the safety net of `async`). With `dry_run` it only counts.
    ///
    /// Each repair is conditional on the copy value it read: a copy rewritten meanwhile by a
    /// transaction or the worker is left alone, so a repair never writes an older value over a
    /// newer one. Copies of a deleted source count as missing sources; those declared
    /// `on_delete = "unset"` are unset. A holder that cannot take its repair is recorded in
    /// [`crate::FAILURES_COLLECTION`] and the others go on; the report counts them per copy.
    ///
    /// Subsets too: each parent's previews and count are compared with its (matching)
    /// children, the newest `max` in sort order and their number, and rewritten when they
    /// differ, on condition that the parent still holds what was read (one indexed query of the
    /// children per parent; [`ReconcileReport::subsets`]).
    ///
    /// Awaited directly, it repairs; `.dry_run(true)` only counts:
    /// `schema.reconcile(&db).dry_run(true).await?`.
    ///
    /// Moving from 0.1: there the dry run was a second argument, `schema.reconcile(&db, true)`.
    /// That call no longer compiles, and removing the argument as rustc suggests turns the dry
    /// run into a repair: write `schema.reconcile(&db).dry_run(true)` (or, for one release, the
    /// deprecated [`Schema::reconcile_dry_run`]`(&db, true)`).
    ///
    /// # Errors
    ///
    /// The driver's errors of the reads and of a repair's transaction (a holder that cannot
    /// take its repair is recorded, not an error).
    pub fn reconcile<'a>(&'a self, db: &'a Database) -> Reconcile<'a> {
        Reconcile {
            schema: self,
            db,
            dry_run: false,
        }
    }

    /// The reconcile of the previous release, the dry run positional.
    ///
    /// # Errors
    ///
    /// As [`Schema::reconcile`].
    #[deprecated(
        since = "0.2.0",
        note = "use `reconcile(&db).dry_run(dry_run)` and await it"
    )]
    pub async fn reconcile_dry_run(&self, db: &Database, dry_run: bool) -> Result<ReconcileReport> {
        self.reconcile(db).dry_run(dry_run).await
    }

    async fn reconcile_now(&self, db: &Database, dry_run: bool) -> Result<ReconcileReport> {
        let db = &crate::concern::pinned(db);
        // the server's time as the pass begins: the change events the worker skipped before it
        // are repaired by this pass, and their records go once it completes
        let began = if dry_run {
            None
        } else {
            db.run_command(mongodb::bson::doc! { "hello": 1 })
                .await?
                .get_datetime("localTime")
                .ok()
                .copied()
        };
        let edges: Vec<&SyncEdge> = self.graph.edges.iter().collect();
        let mut report = crate::sync::reconcile::reconcile(
            db,
            &edges,
            dry_run,
            &FailureLog::new("reconcile"),
            crate::sync::fan_out::Writer::Transaction,
            None,
        )
        .await?;
        let rules = crate::relations::subset::reconcile::rules(&self.collections);
        report.subsets =
            crate::relations::subset::reconcile::reconcile(db, &rules, dry_run, None, None).await?;
        // the parts whose owner is gone (`audit` counts them): deleted by the repair
        for spec in &self.collections {
            let Some(part) = &spec.part_of else { continue };
            report.parts.push(
                crate::sync::reconcile::reconcile_parts(db, &spec.name, &part.owner, dry_run)
                    .await?,
            );
        }
        if let Some(began) = began {
            let mut followed: Vec<String> = self
                .graph
                .edges
                .iter()
                .filter(|e| e.copy.strategy == crate::SyncStrategy::Async)
                .map(|e| e.copy.source.to_string())
                .collect();
            followed.extend(rules.iter().map(|r| r.children.to_string()));
            FailureLog::clear_unreadable_before(db, &followed, began).await?;
        }
        Ok(report)
    }

    /// The holders a sync path could not rewrite, as recorded in
    /// [`crate::FAILURES_COLLECTION`], all in memory: for many records use
    /// [`Schema::sync_failure_stream`].
    ///
    /// # Errors
    ///
    /// The driver's errors of the read, and [`crate::Error::Serialization`] for a record that
    /// does not decode.
    pub async fn sync_failures(&self, db: &Database) -> Result<Vec<SyncFailure>> {
        crate::sync::failures::list(db).await
    }

    /// The recorded sync failures, by copy, holder and source, read from the server 1,000 at a
    /// time: the memory held is one batch, however many there are.
    ///
    /// ```no_run
    /// # async fn f(schema: &mongo_schema_core::Schema, db: &mongodb::Database) -> mongo_schema_core::Result<()> {
    /// use futures_util::TryStreamExt;
    /// let mut failures = schema.sync_failure_stream(db);
    /// while let Some(failure) = failures.try_next().await? {
    ///     eprintln!("{failure}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn sync_failure_stream(
        &self,
        db: &Database,
    ) -> futures_util::stream::BoxStream<'static, Result<SyncFailure>> {
        crate::sync::failures::stream(db)
    }

    /// Re-applies each recorded sync failure to its holder (the source's current values, or
    /// `on_delete` if the source is gone) and removes the records that now succeed; those that
    /// fail again stay, with their error updated. The records are read 1,000 at a time.
    ///
    /// # Errors
    ///
    /// The driver's errors of reading the records or of writing them back; a holder that fails
    /// again is counted in the report, not an error.
    pub async fn retry_failures(&self, db: &Database) -> Result<RetryReport> {
        crate::sync::retry_failures::retry(&crate::concern::pinned(db), &self.graph).await
    }

    /// The `update` command that brings the copies of `edge` in line with the source document
    /// `source`: what every strategy but `frozen` sends. It matches every holder of the source
    /// (filtering on the copied id alone, which the fan-out index serves; a holder already equal
    /// is matched and not modified). The sync worker and reconcile send it in chunks of at most
    /// [`crate::FAN_OUT_CHUNK`] holders, each restricted to a range of holder `_id`s.
    pub fn fan_out_command(
        &self,
        edge: &SyncEdge,
        source: &mongodb::bson::Document,
    ) -> Option<mongodb::bson::Document> {
        crate::sync::FanOut::new(edge, source).map(|f| f.command(&edge.holder))
    }

    /// Audits a live database against the schema: per collection the largest documents
    /// (`$bsonSize`) against 16 MiB and any above 1 MiB, arrays at or above 80% of their bound,
    /// documents the current validator rejects, missing, unexpected and conflicting indexes;
    /// copies that drifted from their source (a reconcile dry run); and collections the schema
    /// does not know. Only reads. The result prints as a report section.
    ///
    /// # Errors
    ///
    /// The driver's errors of the reads (an audit only reads).
    pub async fn audit(&self, db: &Database) -> Result<crate::AuditReport> {
        self.audit_with_threshold(db, 1024 * 1024).await
    }

    /// [`Schema::audit`] flagging documents above `oversized_bytes`.
    ///
    /// # Errors
    ///
    /// As [`Schema::audit`].
    pub async fn audit_with_threshold(
        &self,
        db: &Database,
        oversized_bytes: u64,
    ) -> Result<crate::AuditReport> {
        crate::deploy::audit::audit(self, &crate::concern::pinned(db), oversized_bytes).await
    }

    /// The change-stream worker of the `async` copies and subsets.
    pub fn sync_worker(&self, db: &Database) -> SyncWorker {
        let subsets = crate::relations::subset::reconcile::rules(&self.collections)
            .into_iter()
            .filter(|rule| rule.strategy == crate::SyncStrategy::Async)
            .collect();
        SyncWorker::new(db.clone(), self.graph.clone()).follow_subsets(subsets)
    }

    /// What [`Schema::apply`] would do to `db`, without doing it. Sends only reads: the
    /// version record (`find` on [`crate::META_COLLECTION`]), `listCollections`, `listIndexes`,
    /// a count of the documents a changed validator would reject, and, when a collection
    /// declares a shard key, `hello` (and on a mongos `config.collections`). The plan shows how
    /// the schema's version relates to the recorded one ([`crate::VersionStatus`]) and, per
    /// declared shard key, what there is to shard. Await it, or set options first:
    /// `schema.plan(&db).drop_stale_indexes(true).await`.
    pub fn plan<'a>(&'a self, db: &'a Database) -> crate::PlanAction<'a> {
        crate::PlanAction::new(&self.collections, db, self.target())
            .with_migrations(&self.migrations)
    }

    /// Brings `db` to the schema: creates missing collections with their validator, runs
    /// `collMod` where the validator, level or action differ, and creates missing indexes. It never
    /// drops or rebuilds anything; differences it will not fix are reported as warnings. A
    /// database that already matches, with this version and fingerprint recorded, receives no
    /// write command at all (only `find` on the record, `listCollections` and `listIndexes`).
    ///
    /// **Versions.** The schema's version ([`SchemaBuilder::version`], 0 when not declared) and
    /// [`Schema::fingerprint`] are recorded in [`crate::META_COLLECTION`] with the time. An apply
    /// of an older version than the recorded one writes nothing and returns
    /// [`crate::Error::Downgrade`] naming both, unless `.allow_downgrade(true)`; the same
    /// version with another fingerprint applies with a [`crate::Warning::SameVersionChanged`]
    /// (the development loop); stale indexes are never dropped while a newer version is
    /// recorded. A version whose apply failed for good (a command the server refused, such as a
    /// unique index over duplicates) is recorded `failed` with the error
    /// ([`crate::VersionStatus::Failed`]); an older version may then apply without
    /// `allow_downgrade` and brings the schema back to its own state (a rollback,
    /// [`crate::Warning::RolledBack`]). A schema given a [`SchemaBuilder::name`] after it ran
    /// unnamed takes over the unnamed record when that one holds its collections or its
    /// fingerprint ([`crate::Warning::RecordAdopted`]).
    ///
    /// **Drift.** An apply records what the server had of each collection when it completed
    /// (validator, level, action, indexes). A start-up whose version and fingerprint are
    /// recorded as applied compares the server with that: what differs is reported as
    /// [`crate::Warning::Drifted`] (by `plan` too), and `apply` writes the schema's state again
    /// where its plan can. What the last apply left on purpose (a validator refused over
    /// violating documents, a level held at `moderate`) is no drift. After its last write, an
    /// apply reads the state again and writes over a late command of an older apply that was
    /// paused past its lease.
    ///
    /// **Many instances at once.** Writes happen under a lock in the record (a lease on the
    /// server's clock, renewed while the apply runs), taken in the same `findAndModify` that
    /// raises the recorded version; so an older version's apply can neither start after a newer
    /// one recorded nor start a write after it lost the lock (the design is explained on
    /// [`crate::META_COLLECTION`]; a command already sent by a process paused past its lease is
    /// caught by the re-read and the drift check above).
    /// Instances that find the lock taken wait, then observe again and usually find nothing
    /// left to do. Codes 26, 27, 48, 85 and 86 (the state changed
    /// under the plan) make it observe and plan again; transient faults (network, not primary,
    /// shutting down) are retried with back-off until [`crate::ApplyAction::deadline`]
    /// (60 s by default), after which it returns [`crate::Error::Timeout`] with the last error.
    /// An apply interrupted half-way leaves the record saying so; the next apply completes it.
    ///
    /// Options: `schema.apply(&db).drop_stale_indexes(true)` (never `_id_`, never an index that
    /// conflicts with a schema index: those stay reported), `.on_violations(..)`,
    /// `.allow_downgrade(true)`, `.shard_collections(true)` (on a mongos, shard the collections
    /// that declare a shard key), `.deadline(..)`.
    pub fn apply<'a>(&'a self, db: &'a Database) -> crate::ApplyAction<'a> {
        crate::ApplyAction::new(&self.collections, db, self.target())
            .with_migrations(&self.migrations)
    }

    /// The data steps declared with [`SchemaBuilder::migration`], in declaration order.
    pub fn migrations(&self) -> &[crate::migrate::Migration] {
        &self.migrations
    }

    /// The schema version declared with [`SchemaBuilder::version`], if any (an undeclared
    /// version is recorded as 0).
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    /// A stable fingerprint of the desired state (32 hex digits): validators, validation levels
    /// and actions, indexes and shard keys of every collection, independent of the order models
    /// were added in. [`Schema::apply`] records it beside the version.
    pub fn fingerprint(&self) -> String {
        crate::deploy::record::fingerprint(&self.collections)
    }

    /// The schema's name: the `_id` of its version record in [`crate::META_COLLECTION`]
    /// ([`crate::DEFAULT_SCHEMA_NAME`] unless [`SchemaBuilder::name`] set one).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn target(&self) -> crate::deploy::apply::Target {
        crate::deploy::apply::Target {
            name: self.name.clone(),
            version: self.version.unwrap_or(0),
            fingerprint: self.fingerprint(),
        }
    }
}

impl SchemaBuilder {
    /// Adds the collection of a `Document` type.
    pub fn model<T: Document>(self) -> Self {
        self.collection(T::collection_spec())
    }

    /// The total time a transaction of [`Schema::update_source`] or [`Schema::delete_source`]
    /// may take, retries and commit included (default [`TRANSACTION_DEADLINE`], 120 s, the
    /// drivers' convention).
    pub fn transaction_deadline(mut self, deadline: Duration) -> Self {
        self.transaction_deadline = Some(deadline);
        self
    }

    /// Whose query planner rules fit the declared and library queries to indexes where mongod
    /// releases differ (default [`ServerRules::Mongod70`](crate::query::ServerRules), for
    /// mongod 7.0 and 8.0; [`ServerRules::Mongod81`](crate::query::ServerRules) when every
    /// server runs 8.1 or later, whose `explodeForSort` also serves a sort from an index with an
    /// array key). The derive's compile-time check of `#[query(index = ..)]` follows 8.1's
    /// rules (it refuses only what no release serves); `build` checks with these.
    pub fn server_rules(mut self, rules: crate::query::ServerRules) -> Self {
        self.server_rules = rules;
        self
    }

    /// The version of this schema, recorded by [`Schema::apply`] in [`crate::META_COLLECTION`]
    /// (optional; 0 when not declared). Raise it with every deployed change of the models: an
    /// apply of a lower version than the recorded one is refused ([`crate::Error::Downgrade`]),
    /// so an instance of the previous release that starts during a rolling deploy cannot undo
    /// the new validators and indexes. At most `i64::MAX` (the record stores an int64).
    pub fn version(mut self, version: u64) -> Self {
        self.version = Some(version);
        self
    }

    /// Declares a data step of schema version `version` (at most the schema's own version),
    /// named `name` (unique within the version): [`Schema::apply`] runs the pending steps once
    /// each, in version order and then in the order declared, under its lock, and records them
    /// in [`crate::migrate::MIGRATIONS_COLLECTION`]. A version that tightens a validator and has
    /// steps is applied in the order that keeps a live service up: the new validator at level
    /// `moderate`, the steps, then `strict` once no document violates it; its new unique
    /// indexes are built after the steps. Steps are built with [`crate::migrate`], on typed
    /// paths of the version's models (`tests/migrations.rs` compiles and runs this schema; the
    /// models are derived there, which this crate cannot do in its own doc tests):
    ///
    /// ```ignore
    /// Schema::new()
    ///     .model::<Customer>()
    ///     .version(2)
    ///     .migration(2, "backfill tier", migrate::set_default(field!(Customer, tier), "standard"))
    ///     .migration(2, "shorten names", migrate::truncate(field!(Customer, name), 40))
    ///     .migration(2, "one account per email", migrate::dedupe(field!(Customer, email), Keep::Oldest))
    ///     .build()?
    /// ```
    pub fn migration(
        mut self,
        version: u64,
        name: &str,
        step: impl Into<crate::migrate::Step>,
    ) -> Self {
        self.migrations.push(crate::migrate::Migration {
            version,
            name: name.to_owned(),
            step: step.into(),
        });
        self
    }

    /// The name of this schema, under which [`Schema::apply`] keeps its version record in
    /// [`crate::META_COLLECTION`] (default [`crate::DEFAULT_SCHEMA_NAME`]). Services that share
    /// a database, each applying its own models, give their schemas different names: each then
    /// has its own version, fingerprint and apply lock, and one's version never refuses the
    /// other's apply. Instances of one service (and its releases) keep one name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds a collection described by hand.
    pub fn collection(mut self, spec: CollectionSpec) -> Self {
        self.collections.push(spec);
        self
    }

    /// Checks the rules that span models and returns the schema, or every problem found:
    /// collection names are valid and unique, every validator passes mongod's `$jsonSchema`
    /// parser (hand-written ones included; a lenient server may accept what mongod refuses),
    /// every index key names a field of the collection's schema, no two indexes share a key
    /// pattern, and every reference target is part of the schema.
    ///
    /// # Errors
    ///
    /// A [`SchemaError`] with every problem found, not only the first.
    pub fn build(mut self) -> Result<Schema, SchemaError> {
        let mut problems = Vec::new();
        // queries first: the indexes they derive are checked with the declared ones below
        // a subset's refill and count read its children: queries of the child collection
        let subset_queries: Vec<(String, crate::query::QuerySpec)> = self
            .collections
            .iter()
            .flat_map(|parent| {
                parent.subsets.iter().flat_map(|subset| {
                    crate::query::fitting::subset_queries(&parent.name, subset)
                        .into_iter()
                        .map(|query| (subset.child.clone(), query))
                })
            })
            .chain(self.collections.iter().flat_map(|holder| {
                holder.copies.iter().flat_map(|copy| {
                    crate::query::fitting::source_queries(&holder.name, copy)
                        .into_iter()
                        .map(|query| (copy.source.clone(), query))
                })
            }))
            .chain(self.collections.iter().flat_map(|part| {
                crate::query::fitting::owner_queries(part)
                    .into_iter()
                    .filter_map(|query| Some((part.part_of.as_ref()?.owner.clone(), query)))
            }))
            // the migrations' batches (a copy's sources walked, a group's duplicates)
            .chain(crate::migrate::queries(
                &self.migrations,
                self.version.unwrap_or(0),
                &self.collections,
            ))
            .collect();
        for spec in &mut self.collections {
            let extra = subset_queries
                .iter()
                .filter(|(child, _)| *child == spec.name)
                .map(|(_, query)| query.clone())
                .collect();
            problems.extend(crate::query::fitting::fit_collection(
                spec,
                extra,
                self.server_rules,
            ));
        }
        for (i, spec) in self.collections.iter().enumerate() {
            if let Some(problem) = collection_name_problem(&spec.name) {
                problems.push(problem);
            }
            let strict_errors = spec.validation_level == crate::ValidationLevel::Strict
                && spec.validation_action == crate::ValidationAction::Error;
            let invalid = json_schema::validator_problems(&spec.validator, strict_errors);
            problems.extend(invalid.into_iter().map(|p| format!("`{}`: {p}", spec.name)));
            problems.extend(crate::model::index::conflicts(&spec.name, &spec.indexes));
            if self.collections[..i].iter().any(|c| c.name == spec.name) {
                problems.push(format!(
                    "collection `{}` is declared by two models",
                    spec.name
                ));
            }
            for reference in &spec.references {
                if !self.collections.iter().any(|c| c.name == reference.target) {
                    problems.push(format!(
                        "`{}.{}` references `{}` (collection `{}`), which is not part of the schema: add `.model::<{}>()`",
                        spec.name,
                        reference.field,
                        reference.target_type,
                        reference.target,
                        reference.target_type
                    ));
                }
            }
            let collations = spec
                .collation
                .iter()
                .map(|c| ("its default collation".to_owned(), c))
                .chain(spec.indexes.iter().filter_map(|index| {
                    let c = index.collation.as_ref()?;
                    Some((format!("index `{}`", index.name), c))
                }))
                .chain(spec.queries.iter().filter_map(|query| {
                    let c = query.collation.as_ref()?;
                    Some((format!("query `{}`", query.name), c))
                }));
            for (what, collation) in collations {
                if let Some(problem) = collation.locale_problem() {
                    problems.push(format!("{what} of `{}`: {problem}", spec.name));
                }
            }
            let schema = spec.validator.get_document("$jsonSchema").ok();
            for index in &spec.indexes {
                for (path, _) in &index.keys {
                    let known = path == "_id"
                        || path.starts_with('$')
                        || path.ends_with("$**")
                        || schema.is_none_or(|schema| json_schema::has_path(schema, path));
                    if !known {
                        let hint = schema
                            .and_then(|schema| json_schema::nearest_path(schema, path))
                            .map(|near| format!(" (did you mean `{near}`, as stored?)"))
                            .unwrap_or_default();
                        problems.push(format!(
                            "index `{}` of `{}` names `{path}`, which is not a field of its documents{hint}",
                            index.name, spec.name
                        ));
                    }
                }
                if let Some(((first, a), (second, b))) = schema.and_then(|schema| {
                    crate::model::index::parallel_arrays(
                        schema,
                        crate::model::index::ordered_keys(&index.keys),
                    )
                }) {
                    let reasons: Vec<String> =
                        index.reasons.iter().map(ToString::to_string).collect();
                    problems.push(format!(
                        "index `{}` of `{}` ({}): mongod cannot index parallel arrays (CannotIndexParallelArrays, 171): {} and {} are both arrays; mongod refuses every insert or update of a document that holds both under one index: keep one array in the index and index `{second}` in an index of its own",
                        index.name,
                        spec.name,
                        reasons.join(", "),
                        crate::model::index::in_array(&first, &a),
                        crate::model::index::in_array(&second, &b),
                    ));
                }
                // the second index with a name reports it; later ones do not repeat it
                let same_name = |other: &&crate::IndexSpec| other.name == index.name;
                if spec
                    .indexes
                    .iter()
                    .filter(same_name)
                    .nth(1)
                    .is_some_and(|second| std::ptr::eq(second, index))
                {
                    problems.push(format!(
                        "two indexes of `{}` have the name `{}`",
                        spec.name, index.name
                    ));
                }
            }
        }
        problems.extend(copy_problems(&self.collections));
        problems.extend(part_problems(&self.collections));
        problems.extend(timeseries_problems(&self.collections));
        problems.extend(crate::migrate::problems(
            &self.migrations,
            &self.collections,
        ));
        if let Some(newest) = self.migrations.iter().map(|m| m.version).max() {
            if self.version.is_none_or(|v| v < newest) {
                problems.push(format!(
                    "a migration belongs to version {newest}, but the schema is version {}: declare `.version({newest})` (or later)",
                    self.version.unwrap_or(0)
                ));
            }
        }
        // the worst case of a whole document is known only here, where nested types' bounds
        // have been composed into one validator (a derive sees a single struct)
        for spec in &self.collections {
            if let Ok(json_schema) = spec.validator.get_document("$jsonSchema") {
                let bound = crate::SizeBound::of(json_schema);
                if bound.exceeds_limit() {
                    problems.push(format!(
                        "a `{}` document can reach {} by its bounds, over the 16 MiB limit: lower a `max` or a `max_length`",
                        spec.name,
                        crate::human_bytes(bound.bytes)
                    ));
                } else if let Some(ts) = &spec.timeseries {
                    let bucket =
                        crate::SizeBound::of_measurement(json_schema, ts.meta_field.as_deref());
                    if bucket.exceeds_limit() {
                        problems.push(format!(
                            "a `{}` measurement can reach {} by its bounds, and mongod writes it into a bucket that holds every field but the meta field three times (`control.min`, `control.max`, `data`): {}, over the 16 MiB limit, so mongod would refuse it (BSONObjectTooLarge); lower a `max` or a `max_length`",
                            spec.name,
                            crate::human_bytes(bound.bytes),
                            crate::human_bytes(bucket.bytes)
                        ));
                    }
                }
            }
        }
        if self.name.as_deref().is_some_and(str::is_empty) {
            problems.push(
                "the schema's name is empty: give `SchemaBuilder::name` a name, or leave it out"
                    .to_owned(),
            );
        }
        if problems.is_empty() {
            // the helpers that delete an owner without the schema at hand find its parts here
            crate::relations::part::register(&self.collections);
            // the sync worker reads a deleted child's parent from its pre-image
            let followed: Vec<String> = self
                .collections
                .iter()
                .flat_map(|c| &c.subsets)
                .filter(|s| s.strategy == crate::SyncStrategy::Async)
                .map(|s| s.child.clone())
                .collect();
            let mut collections = self.collections;
            for spec in &mut collections {
                if followed.contains(&spec.name) {
                    spec.change_stream_pre_images = true;
                }
            }
            let graph = SyncGraph {
                edges: collections
                    .iter()
                    .flat_map(|c| {
                        c.copies.iter().map(|copy| {
                            // beside the copy: in the same document or embedded value, outside
                            // arrays of values (where one holder has many)
                            let parent =
                                |path: &str| path.rsplit_once('.').map(|(p, _)| p.to_owned());
                            let mut back = c.references.iter().filter(|r| {
                                r.target == copy.source
                                    && r.kind != crate::RefKind::Many
                                    && copy.arrays.is_empty()
                                    && parent(&r.field) == parent(&copy.path)
                            });
                            let reference = match (back.next(), back.next()) {
                                (Some(one), None) => Some(one.field.clone()),
                                _ => None,
                            };
                            SyncEdge {
                                holder: c.name.clone(),
                                copy: copy.clone(),
                                reference,
                                identities: crate::Collation::for_identities(c.collation.as_ref()),
                            }
                        })
                    })
                    .collect(),
                subsets: collections
                    .iter()
                    .flat_map(|c| {
                        c.subsets
                            .iter()
                            .map(|subset| crate::model::copy::SubsetEdge {
                                parent: c.name.clone(),
                                subset: subset.clone(),
                                identities: crate::Collation::for_identities(
                                    collections
                                        .iter()
                                        .find(|child| child.name == subset.child)
                                        .and_then(|child| child.collation.as_ref()),
                                ),
                            })
                    })
                    .collect(),
            };
            Ok(Schema {
                collections,
                migrations: self.migrations,
                graph,
                transaction_deadline: self.transaction_deadline.unwrap_or(TRANSACTION_DEADLINE),
                version: self.version,
                name: self
                    .name
                    .unwrap_or_else(|| crate::DEFAULT_SCHEMA_NAME.to_owned()),
            })
        } else {
            Err(SchemaError { problems })
        }
    }
}

/// Copies and subsets: their sources and children are in the schema and have the fields named.
fn copy_problems(collections: &[CollectionSpec]) -> Vec<String> {
    let mut problems = Vec::new();
    let find = |name: &str| collections.iter().find(|c| c.name == name);
    let properties =
        |spec: &CollectionSpec| spec.validator.get_document("$jsonSchema").ok().cloned();
    for spec in collections {
        for copy in &spec.copies {
            match find(&copy.source) {
                None => problems.push(format!(
                    "`{}.{}` copies fields of `{}` (collection `{}`), which is not part of the schema: add `.model::<{}>()`",
                    spec.name, copy.path, copy.source_type, copy.source, copy.source_type
                )),
                Some(source) => {
                    for field in &copy.fields {
                        if !properties(source).is_some_and(|s| json_schema::has_path(&s, field)) {
                            problems.push(format!(
                                "`{}.{}` copies `{field}`, which `{}` does not store",
                                spec.name, copy.path, copy.source
                            ));
                        }
                    }
                }
            }
        }
        for subset in &spec.subsets {
            match find(&subset.child) {
                None => problems.push(format!(
                    "`{}.{}` is a subset of `{}` (collection `{}`), which is not part of the schema: add `.model::<{}>()`",
                    spec.name, subset.path, subset.child_type, subset.child, subset.child_type
                )),
                Some(child) => {
                    let back = child.references.iter().filter(|r| r.target == spec.name).count();
                    if subset.parent_field.is_empty() && back != 1 {
                        problems.push(format!(
                            "`{}.{}` needs `{}` to hold exactly one `#[reference]` to `{}` (found {back})",
                            spec.name, subset.path, subset.child, spec.name
                        ));
                    }
                    // an equality on a value the child never stores counts (and previews)
                    // nothing, and reconcile, counting with the same filter, agrees
                    if let Some(child_schema) = properties(child) {
                        for (path, value) in subset.filter.iter().flatten() {
                            if let Some(stored) = crate::validation::never_holds(&child_schema, path, value) {
                                problems.push(format!(
                                    "the filter of `{}.{}` matches `{path}` = {value}, which `{}` never stores in `{path}` (it stores {stored}): the {} would stay {}; write the value as serde stores it",
                                    spec.name,
                                    subset.path,
                                    subset.child,
                                    if subset.is_counter() { "count" } else { "subset" },
                                    if subset.is_counter() { "0" } else { "empty" },
                                ));
                            }
                        }
                    }
                    if !subset.is_counter() && !properties(child).is_some_and(|s| json_schema::has_path(&s, &subset.sort_field)) {
                        problems.push(format!(
                            "`{}.{}` sorts by `{}`, which `{}` does not store",
                            spec.name, subset.path, subset.sort_field, subset.child
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// Parts (`same_id_as`): their owner is in the schema and is no part itself.
fn part_problems(collections: &[CollectionSpec]) -> Vec<String> {
    let mut problems = Vec::new();
    for spec in collections {
        let Some(part) = &spec.part_of else { continue };
        match collections.iter().find(|c| c.name == part.owner) {
            None => problems.push(format!(
                "`{}` is stored under the `_id` of `{}` (collection `{}`, `same_id_as`), which is not part of the schema: add `.model::<{}>()`",
                spec.name, part.owner_type, part.owner, part.owner_type
            )),
            Some(owner) if owner.name == spec.name => problems.push(format!(
                "`{}` names itself in `same_id_as`: a part is stored under another collection's `_id`",
                spec.name
            )),
            Some(owner) => {
                // mongod's TTL monitor deletes the owner alone, outside any transaction:
                // its parts would stay behind, orphans
                for index in owner.indexes.iter().filter(|i| i.expire_after_secs.is_some()) {
                    problems.push(format!(
                        "index `{}` of `{}` is a TTL index (`expire_after_secs`), but `{}` documents own parts in `{}` (`same_id_as`): mongod's TTL monitor deletes an owner alone, outside any transaction, and leaves its part behind; delete expired owners with `schema.delete_source` (a periodic job on the same field), or keep the part's fields in the owner",
                        index.name, owner.name, owner.name, spec.name
                    ));
                }
                if let Some(grand) = &owner.part_of {
                    problems.push(format!(
                        "`{}` is stored under the `_id` of `{}`, which is itself a part of `{}`: name the owner, `same_id_as = {}`",
                        spec.name, owner.name, grand.owner, grand.owner_type
                    ));
                }
                // each `_id` index compares ids under its collection's default collation: two
                // owners the owner's tells apart ("abc", "ABC") would share one part
                let key = |c: &CollectionSpec| crate::Collation::planner_key(c.collation.as_ref());
                let schema = spec.validator.get_document("$jsonSchema").ok();
                let strings = crate::model::collation::uncollated(schema, ["_id".to_owned()].into_iter())
                    .is_empty();
                if strings && key(spec) != key(owner) {
                    let name = |c: &CollectionSpec| {
                        c.collation
                            .as_ref()
                            .filter(|c| !c.is_simple())
                            .map_or_else(|| "the simple collation".to_owned(), ToString::to_string)
                    };
                    problems.push(format!(
                        "`{}` is stored under the `_id` of `{}`, but compares `_id`s under {} where `{}` compares them under {} (each `_id` index has its collection's default collation): two `{}` ids one tells apart and the other does not would share one part or refuse the second; give both collections the same `collation(...)`",
                        spec.name, owner.name, name(spec), owner.name, name(owner), owner.name
                    ));
                }
            }
        }
    }
    problems
}

/// Time series collections in the relationships the library keeps in a transaction or by
/// following change streams: mongod refuses writes to a time series collection inside a
/// transaction (OperationNotSupportedInTransaction), and its change streams do not show them.
/// The derive refuses what one struct shows; these are the specs written by hand, or composed.
fn timeseries_problems(collections: &[CollectionSpec]) -> Vec<String> {
    const WHY: &str = "mongod refuses writes to a time series collection inside a transaction, and its change streams do not show them";
    let is_ts = |name: &str| {
        collections
            .iter()
            .any(|c| c.name == name && c.timeseries.is_some())
    };
    let kept = |copy: &crate::CopySpec| copy.strategy != crate::SyncStrategy::Frozen;
    let mut problems = Vec::new();
    for spec in collections {
        let holder_ts = spec.timeseries.is_some();
        for copy in spec.copies.iter().filter(|c| kept(c)) {
            if holder_ts {
                problems.push(format!(
                    "time series collection `{}` holds a copy of `{}` kept in sync at `{}`: {WHY}; copy it once (`sync = \"frozen\"`) or hold a reference",
                    spec.name, copy.source, copy.path
                ));
            }
            if is_ts(&copy.source) {
                problems.push(format!(
                    "`{}.{}` copies time series collection `{}` and keeps the copy in sync: {WHY}; copy it once (`sync = \"frozen\"`) or hold a reference",
                    spec.name, copy.path, copy.source
                ));
            }
        }
        for subset in &spec.subsets {
            let what = if subset.is_counter() {
                "counter"
            } else {
                "subset"
            };
            if holder_ts {
                problems.push(format!(
                    "time series collection `{}` holds the {what} `{}` of `{}`: {WHY}; count or list the children with a query",
                    spec.name, subset.path, subset.child
                ));
            }
            if is_ts(&subset.child) {
                problems.push(format!(
                    "`{}.{}` is a {what} of time series collection `{}`: {WHY}; read the latest measurements with a declared query on `{}`",
                    spec.name, subset.path, subset.child, subset.child
                ));
            }
        }
        if let Some(part) = &spec.part_of {
            if holder_ts {
                problems.push(format!(
                    "time series collection `{}` is a part stored under the `_id` of `{}`: {WHY}; hold a reference to the owner",
                    spec.name, part.owner
                ));
            }
            if is_ts(&part.owner) {
                problems.push(format!(
                    "`{}` is a part stored under the `_id` of time series collection `{}`: {WHY}; store the part's fields in the measurement",
                    spec.name, part.owner
                ));
            }
        }
    }
    problems
}

fn collection_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("a collection name is empty".to_owned())
    } else if name.contains('$') || name.contains('\0') {
        Some(format!(
            "collection name `{name}` contains `$` or a NUL byte"
        ))
    } else if name.chars().any(char::is_control) {
        Some(format!(
            "collection name {name:?} contains a control character: use printable characters"
        ))
    } else if name.starts_with('.') {
        Some(format!(
            "collection name `{name}` starts with `.`, which mongod refuses"
        ))
    } else if name.starts_with("system.") {
        Some(format!(
            "collection name `{name}` is in the reserved `system.` namespace"
        ))
    } else {
        None
    }
}

/// [`Schema::reconcile`]: compare every non-frozen copy and subset with its source, and
/// repair. Await it.
#[must_use = "nothing is read or repaired until the action is awaited"]
pub struct Reconcile<'a> {
    schema: &'a Schema,
    db: &'a Database,
    dry_run: bool,
}

impl Reconcile<'_> {
    /// Only count the drifted copies and subsets, repair none (default `false`).
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }
}

impl<'a> std::future::IntoFuture for Reconcile<'a> {
    type Output = Result<ReconcileReport>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Self::Output>;

    /// Reads, compares and (unless a dry run) repairs.
    ///
    /// # Errors
    ///
    /// As [`Schema::reconcile`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.schema.reconcile_now(self.db, self.dry_run).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IndexSpec;
    use mongodb::bson::doc;

    fn spec(name: &str) -> CollectionSpec {
        CollectionSpec::new(
            name,
            doc! { "$jsonSchema": { "bsonType": "object", "properties": {
                "customer": { "bsonType": "object", "properties": { "_id": { "bsonType": "objectId" } } },
            } } },
        )
    }

    #[test]
    fn every_problem_is_reported() {
        let error = Schema::new()
            .collection(spec("a").index(IndexSpec::new(doc! { "customer.name": 1 })))
            .collection(spec("a"))
            .collection(spec("system.x"))
            .build()
            .unwrap_err();
        assert_eq!(error.problems.len(), 3, "{error}");
    }

    #[test]
    fn a_duplicate_index_name_is_reported_once_per_collection() {
        let twice = |name: &str| {
            spec(name)
                .index(IndexSpec::new(doc! { "customer._id": 1 }).name("x"))
                .index(IndexSpec::new(doc! { "_id": 1, "customer._id": 1 }).name("x"))
                .index(IndexSpec::new(doc! { "customer._id": -1 }).name("x"))
        };
        let error = Schema::new()
            .collection(twice("a"))
            .collection(twice("b"))
            .build()
            .unwrap_err();
        assert_eq!(
            error.problems,
            [
                "two indexes of `a` have the name `x`",
                "two indexes of `b` have the name `x`"
            ]
        );
    }

    /// `tags` and `categories` are arrays of strings; `lines` an array of documents.
    fn products() -> CollectionSpec {
        let strings = doc! { "bsonType": "array", "items": { "bsonType": "string" } };
        CollectionSpec::new(
            "products",
            doc! { "$jsonSchema": { "bsonType": "object", "properties": {
                "tags": strings.clone(),
                "categories": { "anyOf": [strings, { "bsonType": "null" }] },
                "lines": { "bsonType": "array", "items": { "bsonType": "object", "properties": {
                    "sku": { "bsonType": "string" }, "qty": { "bsonType": "int" },
                } } },
                "status": { "bsonType": "string" },
            } } },
        )
    }

    #[test]
    fn an_index_over_two_arrays_is_refused() {
        let error = Schema::new()
            .collection(
                products()
                    .index(IndexSpec::new(
                        doc! { "status": 1, "tags": 1, "categories": 1 },
                    ))
                    .index(IndexSpec::new(doc! { "lines.sku": 1, "tags": -1 }))
                    // one array: both keys cross `lines` only
                    .index(IndexSpec::new(doc! { "lines.sku": 1, "lines.qty": 1 })),
            )
            .build()
            .unwrap_err();
        assert_eq!(error.problems.len(), 2, "{error}");
        assert!(
            error.problems[0].starts_with(
                "index `status_1_tags_1_categories_1` of `products` (declared): mongod cannot index \
                 parallel arrays (CannotIndexParallelArrays, 171): `tags` and `categories` are both arrays"
            ),
            "{error}"
        );
        assert!(
            error.problems[1]
                .contains("`lines.sku` (in the array `lines`) and `tags` are both arrays"),
            "{error}"
        );
    }

    #[test]
    fn a_query_on_two_arrays_indexes_one_and_filters_the_other() {
        let schema = Schema::new()
            .collection(
                products().query(
                    crate::query::QuerySpec::new("tagged_in")
                        .eq("status")
                        .eq("tags")
                        .eq("categories"),
                ),
            )
            .build()
            .unwrap();
        let products = schema.collection("products").unwrap();
        let derived: Vec<&mongodb::bson::Document> =
            products.indexes.iter().map(|i| &i.keys).collect();
        assert_eq!(derived, [&doc! { "status": 1, "tags": 1 }]);
        let fit = products.queries[0].fit.as_ref().unwrap();
        assert_eq!(fit.index.as_deref(), Some("status_1_tags_1"));
        assert_eq!(fit.problem, None);
        assert_eq!(fit.filtered, ["categories"]);
        let report = schema.report();
        assert!(
            report.contains(
                "`status_1_tags_1` (derived) (`categories` filtered on fetch: mongod cannot index parallel arrays"
            ),
            "{report}"
        );
    }

    #[test]
    fn a_ttl_index_on_an_owner_of_parts_is_refused() {
        use crate::PartSpec;
        let owner = |ttl: bool| {
            let index = IndexSpec::new(doc! { "customer._id": 1 }).name("expiry");
            spec("sessions").index(if ttl {
                index.expire_after_secs(3600)
            } else {
                index
            })
        };
        let part = || spec("session_blobs").part_of(PartSpec::new("sessions", "Session"));
        // positive control: the same schema without the TTL option builds
        assert!(part_problems(&[owner(false), part()]).is_empty());
        let problems = part_problems(&[owner(true), part()]);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].starts_with("index `expiry` of `sessions` is a TTL index"),
            "{problems:#?}"
        );
        // a TTL index on a collection that owns no part is not this rule's business
        assert!(part_problems(&[owner(true)]).is_empty());
    }

    #[test]
    fn time_series_collections_in_kept_relationships_are_refused() {
        use crate::{CopyShape, CopySpec, PartSpec, SubsetSpec, SyncStrategy, TimeSeries};
        let readings = || spec("readings").timeseries(TimeSeries::new("at").meta("sensor"));
        let copy = |source: &str, strategy| {
            CopySpec::new("last", source, "T", &["celsius"], strategy, CopyShape::One)
        };
        let latest = SubsetSpec::new("latest", "readings", "Reading", 5, "at", -1, None);
        let collections = [
            readings(),
            spec("sensors")
                .subset(latest)
                .copy(copy("readings", SyncStrategy::Async))
                // a frozen copy is taken once: accepted
                .copy(copy("readings", SyncStrategy::Frozen)),
            spec("notes").part_of(PartSpec::new("readings", "Reading")),
            readings()
                .copy(copy("sensors", SyncStrategy::Transactional))
                .part_of(PartSpec::new("sensors", "Sensor")),
        ];
        let problems = timeseries_problems(&collections);
        assert_eq!(problems.len(), 5, "{problems:#?}");
        let why = "mongod refuses writes to a time series collection inside a transaction, and its change streams do not show them";
        assert!(problems.iter().all(|p| p.contains(why)), "{problems:#?}");
        assert!(problems[0].starts_with("`sensors.last` copies time series collection `readings`"));
        assert!(problems[1]
            .starts_with("`sensors.latest` is a subset of time series collection `readings`"));
        assert!(problems[2].starts_with(
            "`notes` is a part stored under the `_id` of time series collection `readings`"
        ));
        assert!(
            problems[3].starts_with("time series collection `readings` holds a copy of `sensors`")
        );
        assert!(problems[4].starts_with("time series collection `readings` is a part"));
    }

    #[test]
    fn a_measurement_whose_bucket_exceeds_16_mib_is_refused() {
        let scans = |max_length: i64| {
            CollectionSpec::new(
                "gate_scans",
                doc! { "$jsonSchema": { "bsonType": "object", "properties": {
                    "at": { "bsonType": "date" },
                    "gate": { "bsonType": "string", "maxLength": 100 },
                    "photo": { "bsonType": "string", "maxLength": max_length },
                } } },
            )
            .timeseries(crate::TimeSeries::new("at").meta("gate"))
        };
        let error = Schema::new()
            .collection(scans(2 * 1024 * 1024))
            .build()
            .unwrap_err();
        assert_eq!(error.problems.len(), 1, "{error}");
        assert!(
            error.problems[0].starts_with("a `gate_scans` measurement can reach 8.0 MiB by its bounds, and mongod writes it into a bucket that holds every field but the meta field three times"),
            "{error}"
        );
        Schema::new()
            .collection(scans(1024 * 1024))
            .build()
            .unwrap();
    }

    #[test]
    fn dotted_paths_into_the_schema_are_accepted() {
        let schema = Schema::new()
            .collection(spec("a").index(IndexSpec::new(doc! { "customer._id": 1, "_id": 1 })))
            .build()
            .unwrap();
        assert_eq!(schema.collections().len(), 1);
    }
}
