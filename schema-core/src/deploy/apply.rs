//! The part of `plan` and `apply` that talks to the server: observe, then carry out a [`Plan`]
//! under the apply lock, re-planning after the races a concurrent start-up causes and retrying
//! transient faults within a deadline.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::ErrorKind;
use mongodb::Database;
use tokio::time::Instant;
use tracing::Instrument as _;

use super::observe::{observe, violations};
use super::plan::{self as planning, Action, Observed, OnViolations, Plan, PlanOptions, Warning};
use super::sharding::{self, ShardingStatus};
use super::versions::{
    self, ApplyLock, Claim, RecordedVersion, VersionStatus, LEASE, META_COLLECTION,
};
use crate::error::{server_code, TRANSIENT_CODES};
use crate::migrate::Migration;
use crate::sync::retry::Backoff;
use crate::ValidationLevel;
use crate::{CollectionSpec, Error, Result};

/// How long [`crate::Schema::apply`] keeps retrying transient faults and waiting for another
/// instance's apply by default (see [`ApplyAction::deadline`]).
pub const APPLY_DEADLINE: Duration = Duration::from_secs(60);

/// Re-plans of one locked apply after a race code before it gives up: each one follows a change
/// made outside this apply, so a few are plenty.
const MAX_REPLANS: u32 = 8;

/// What [`crate::Schema::apply`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ApplyReport {
    /// The writes performed, in order.
    pub applied: Vec<AppliedAction>,
    /// Differences left alone (see [`Warning`]).
    pub warnings: Vec<Warning>,
    /// How the applied version related to the recorded one when this apply started.
    pub version: Option<VersionStatus>,
    /// Whether this apply recorded its version, fingerprint and time in
    /// [`META_COLLECTION`] (it does when it wrote something or the record differed).
    pub recorded: bool,
    /// The sharding of each collection that declares a shard key (only observed with
    /// `shard_collections(true)`).
    pub sharding: Vec<ShardingStatus>,
    /// The server codes that made this apply observe and plan again, in order: 26
    /// NamespaceNotFound, 27 IndexNotFound, 48 NamespaceExists, 85 IndexOptionsConflict, 86
    /// IndexKeySpecsConflict (the state changed under the plan).
    pub replanned_after: Vec<i32>,
    /// Transient faults retried (network, not primary, shutting down, ...).
    pub retried: u32,
    /// Time spent waiting for another instance's apply to finish.
    pub waited: Duration,
    /// The migration steps this apply ran, in order.
    pub migrations: Vec<crate::migrate::RanStep>,
    /// What this apply did in which order and why, in words (a validator held at `moderate`
    /// while the steps ran, then made `strict`; unique indexes built after the steps; an older
    /// instance that kept serving beside a newer recorded version).
    pub notes: Vec<String>,
}

/// One write of `apply` and how it went.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AppliedAction {
    /// The action.
    pub action: Action,
    /// `true` when it had already been done by someone else (a `create` that met an existing
    /// collection, code 48).
    pub done_concurrently: bool,
}

impl ApplyReport {
    /// Whether nothing was changed: no schema write and no new record. (An instance that waited
    /// for another's apply and then found nothing to do took and gave back the lock.)
    pub fn is_noop(&self) -> bool {
        !self.recorded && self.applied.iter().all(|a| a.done_concurrently)
    }
}

impl fmt::Display for ApplyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            // the status says what apply would do; here it did it
            Some(VersionStatus::Downgrade { recorded, applying }) if self.recorded => writeln!(
                f,
                "schema version {applying} applied over the newer recorded version {recorded} (allow_downgrade): the record now says {applying}"
            )?,
            Some(VersionStatus::Downgrade { recorded, applying }) => writeln!(
                f,
                "schema version {applying} is older than the recorded version {recorded}: nothing written"
            )?,
            Some(version) => writeln!(f, "{version}")?,
            None => {}
        }
        if self.applied.is_empty() && self.migrations.is_empty() {
            writeln!(f, "schema up to date: nothing written")?;
        }
        for ran in &self.migrations {
            writeln!(f, "- {ran}")?;
        }
        for note in &self.notes {
            writeln!(f, "~ {note}")?;
        }
        for applied in &self.applied {
            let note = if applied.done_concurrently {
                " (already done by a concurrent instance)"
            } else {
                ""
            };
            writeln!(f, "- {}{note}", applied.action)?;
        }
        for status in &self.sharding {
            writeln!(f, "~ {status}")?;
        }
        for warning in &self.warnings {
            writeln!(f, "! {warning}")?;
        }
        if self.waited > Duration::ZERO {
            writeln!(
                f,
                "(waited {:?} for the apply lock of another apply)",
                self.waited
            )?;
        }
        Ok(())
    }
}

/// [`observe`], plus `hello` and, on a mongos, the collections' shard keys when `sharding`.
async fn observe_all(db: &Database, specs: &[CollectionSpec], sharding: bool) -> Result<Observed> {
    let mut observed = observe(db, specs).await?;
    if sharding {
        observed.topology = Some(sharding::observe_topology(db).await?);
        sharding::observe_shard_keys(db, &mut observed).await?;
    }
    Ok(observed)
}

/// The version an apply or plan is for, and the fingerprint of its desired state.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The `_id` of the schema's version record.
    pub(crate) name: String,
    pub(crate) version: u64,
    pub(crate) fingerprint: String,
}

impl Target {
    /// Versions are stored as BSON int64.
    fn check(&self) -> Result<i64> {
        i64::try_from(self.version).map_err(|_| {
            Error::invalid_argument(
                "version",
                format!(
                    "schema version {} does not fit the int64 the record stores (at most {})",
                    self.version,
                    i64::MAX
                ),
            )
        })
    }
}

/// `schema.plan(&db)`: await it, optionally after setting options.
#[must_use = "a plan does nothing until awaited"]
pub struct PlanAction<'a> {
    specs: &'a [CollectionSpec],
    db: &'a Database,
    options: PlanOptions,
    target: Target,
    migrations: &'a [Migration],
}

/// `schema.apply(&db)`: await it, optionally after setting options.
#[must_use = "apply does nothing until awaited"]
pub struct ApplyAction<'a> {
    specs: &'a [CollectionSpec],
    db: &'a Database,
    options: PlanOptions,
    target: Target,
    deadline: Duration,
    migrations: &'a [Migration],
    on_newer: OnNewer,
}

/// What an `apply` does when the database records a newer schema version than its own (an
/// instance of the previous release starting during a rolling deploy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnNewer {
    /// Return [`Error::Downgrade`] (the default): the caller decides.
    #[default]
    Fail,
    /// Keep serving: nothing is written, the report says so and a warning is logged. The
    /// newer version's validators and indexes stay; an older instance keeps working as long as
    /// its writes satisfy them (ship new required fields as optional first, see the README's
    /// expand/contract).
    Continue,
    /// Apply anyway (a deliberate rollback): the record then says this version. Indexes are
    /// never dropped over a newer recorded version. The same as
    /// [`ApplyAction::allow_downgrade`]`(true)`.
    Downgrade,
}

impl<'a> PlanAction<'a> {
    pub(crate) fn new(specs: &'a [CollectionSpec], db: &'a Database, target: Target) -> Self {
        PlanAction {
            specs,
            db,
            options: PlanOptions::default(),
            target,
            migrations: &[],
        }
    }

    pub(crate) fn with_migrations(mut self, migrations: &'a [Migration]) -> Self {
        self.migrations = migrations;
        self
    }

    /// Count the violations of a validator change as `apply` with this decision would
    /// ([`ApplyAction::on_violations`]): the plan then shows what that apply would do.
    pub fn on_violations(mut self, decision: OnViolations) -> Self {
        self.options.on_violations = decision;
        self
    }

    /// Also plan to drop the indexes the schema does not declare (never `_id_`; none while a
    /// newer schema version is recorded).
    pub fn drop_stale_indexes(mut self, drop: bool) -> Self {
        self.options.drop_stale_indexes = drop;
        self
    }

    /// Also plan to shard, on a mongos, the collections that declare a shard key (as
    /// `apply(..).shard_collections(true)` would).
    pub fn shard_collections(mut self, shard: bool) -> Self {
        self.options.shard_collections = shard;
        self
    }
}

/// Fills in the violations of every validator change of `plan`.
async fn count_violations(db: &Database, plan: &mut Plan) -> Result<()> {
    for action in &mut plan.actions {
        if let Action::UpdateValidator {
            collection,
            validator,
            violations: slot,
            ..
        } = action
        {
            *slot = Some(violations(db, collection, validator).await?);
        }
    }
    Ok(())
}

/// What `plan` foresees beyond the writes: the duplicates each new unique index of an existing
/// collection would meet, and the fields a new validator requires that the recorded one does
/// not know.
async fn foresee(
    db: &Database,
    plan: &mut Plan,
    observed: &super::plan::Observed,
    migrations: &[Migration],
) -> Result<()> {
    let mut warnings = Vec::new();
    for action in &plan.actions {
        match action {
            Action::CreateIndexes {
                collection,
                indexes,
            } if observed.collection(collection).is_some() => {
                for index in indexes.iter().filter(|i| i.unique) {
                    let mut group = Document::new();
                    let mut present = Document::new();
                    for (key, _) in &index.keys {
                        group.insert(key.replace('.', "_"), format!("${key}"));
                        if index.sparse {
                            present.insert(key.clone(), doc! { "$exists": true });
                        }
                    }
                    let mut pipeline = Vec::new();
                    if let Some(partial) = &index.partial_filter {
                        pipeline.push(doc! { "$match": partial.clone() });
                    }
                    if !present.is_empty() {
                        pipeline.push(doc! { "$match": present });
                    }
                    pipeline.push(doc! { "$group": { "_id": group, "count": { "$sum": 1 } } });
                    pipeline.push(doc! { "$match": { "count": { "$gt": 1 } } });
                    let groups: Vec<Document> = db
                        .collection::<Document>(collection)
                        .aggregate(pipeline)
                        .await?
                        .try_collect()
                        .await?;
                    if !groups.is_empty() {
                        warnings.push(Warning::UniqueOverDuplicates {
                            collection: collection.clone(),
                            index: index.name.clone(),
                            groups: groups.len() as u64,
                            examples: groups
                                .iter()
                                .take(3)
                                .map(|g| {
                                    let mut example =
                                        g.get_document("_id").cloned().unwrap_or_default();
                                    example.insert(
                                        "count",
                                        g.get("count").cloned().unwrap_or(Bson::Null),
                                    );
                                    example
                                })
                                .collect(),
                        });
                    }
                }
            }
            Action::UpdateValidator {
                collection,
                current: Some(current),
                validator,
                ..
            } => {
                let required = |v: &Document| -> Vec<String> {
                    v.get_document("$jsonSchema")
                        .ok()
                        .and_then(|s| s.get_array("required").ok())
                        .map(|r| {
                            r.iter()
                                .filter_map(|f| f.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let known = current
                    .get_document("$jsonSchema")
                    .ok()
                    .and_then(|s| s.get_document("properties").ok());
                let before = required(current);
                for field in required(validator) {
                    if before.contains(&field) || known.is_some_and(|p| p.contains_key(&field)) {
                        continue;
                    }
                    let backfilled = migrations.iter().any(|m| {
                        m.step
                            .describe()
                            .starts_with(&format!("set_default `{collection}.{field}`"))
                    });
                    warnings.push(Warning::NewRequiredField {
                        collection: collection.clone(),
                        field,
                        backfilled,
                    });
                }
            }
            _ => {}
        }
    }
    plan.warnings.extend(warnings);
    Ok(())
}

impl<'a> ApplyAction<'a> {
    pub(crate) fn new(specs: &'a [CollectionSpec], db: &'a Database, target: Target) -> Self {
        ApplyAction {
            specs,
            db,
            options: PlanOptions::default(),
            target,
            deadline: APPLY_DEADLINE,
            migrations: &[],
            on_newer: OnNewer::Fail,
        }
    }

    pub(crate) fn with_migrations(mut self, migrations: &'a [Migration]) -> Self {
        self.migrations = migrations;
        self
    }

    /// What to do when the database records a newer schema version (default
    /// [`OnNewer::Fail`]): `.on_newer(OnNewer::Continue)` lets an older instance keep serving
    /// during a rolling deploy, writing nothing; `.on_newer(OnNewer::Downgrade)` applies this
    /// older version over it (a deliberate rollback).
    pub fn on_newer(mut self, decision: OnNewer) -> Self {
        self.on_newer = decision;
        self
    }

    /// Also drop the indexes the schema does not declare (never `_id_`, never one that conflicts
    /// with a schema index, and none while a newer schema version is recorded: they may be the
    /// newer version's).
    pub fn drop_stale_indexes(mut self, drop: bool) -> Self {
        self.options.drop_stale_indexes = drop;
        self
    }

    /// What to do when a validator change would reject existing documents (default:
    /// [`OnViolations::Refuse`]). Whatever the choice, no document is deleted or rewritten.
    pub fn on_violations(mut self, decision: OnViolations) -> Self {
        self.options.on_violations = decision;
        self
    }

    /// Apply even if the database records a newer schema version (a deliberate rollback); the
    /// record then says this version. Without it such an apply writes nothing and returns
    /// [`Error::Downgrade`]. Indexes are never dropped over a newer recorded version.
    ///
    /// The same as `.on_newer(OnNewer::Downgrade)` (`false` undoes it, back to
    /// [`OnNewer::Fail`]); kept beside it because the specification pins this name.
    pub fn allow_downgrade(mut self, allow: bool) -> Self {
        if allow {
            self.on_newer = OnNewer::Downgrade;
        } else if self.on_newer == OnNewer::Downgrade {
            self.on_newer = OnNewer::Fail;
        }
        self
    }

    /// Whether this apply writes over a newer recorded version.
    fn downgrades(&self) -> bool {
        self.on_newer == OnNewer::Downgrade
    }

    /// On a mongos (`hello.msg == "isdbgrid"`), shard each collection that declares a shard key
    /// and is not sharded yet, after its collection and index exist (`shardCollection`). A
    /// collection sharded by another key is reported and left alone. On a replica set there is
    /// nothing to shard: the report says so and nothing is written for it.
    pub fn shard_collections(mut self, shard: bool) -> Self {
        self.options.shard_collections = shard;
        self
    }

    /// How long to keep retrying transient faults (network errors, a primary stepping down, a
    /// server shutting down) and waiting for another instance's apply to finish, before
    /// returning [`Error::Timeout`] with the last error (default [`APPLY_DEADLINE`], 60 s).
    /// A command in progress is not cut off (an index build on a large collection takes as long
    /// as it takes); an attempt that cannot reach a server ends at the client's server selection
    /// timeout (`serverSelectionTimeoutMS`, 30 s by default), so with the server gone `apply`
    /// returns within the deadline plus that timeout. Waiting instances may need a deadline
    /// longer than the longest index build.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }
}

impl<'a> std::future::IntoFuture for PlanAction<'a> {
    type Output = Result<Plan>;
    type IntoFuture =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Plan>> + Send + 'a>>;

    /// Reads the database and computes the actions (nothing is written).
    ///
    /// # Errors
    ///
    /// The driver's errors of the reads (`listCollections`, `listIndexes`, the violation
    /// counts, the version record).
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let db = crate::concern::pinned(self.db);
            let this = PlanAction { db: &db, ..self };
            let this = &this;
            this.target.check()?;
            let meta = this.db.collection::<Document>(META_COLLECTION);
            let resolved = versions::resolve_record(
                &meta,
                &this.target.name,
                &collection_names(this.specs),
                &this.target.fingerprint,
                false,
            )
            .await?;
            let status = VersionStatus::of(
                this.target.version,
                &this.target.fingerprint,
                resolved.recorded.as_ref(),
            );
            let sharding = this.specs.iter().any(|s| s.shard_key.is_some());
            let observed = observe_all(this.db, this.specs, sharding).await?;
            let mut plan = Plan::compute_with(this.specs, &observed, this.options);
            versions::hold_back_drops(&mut plan, &status);
            count_violations(this.db, &mut plan).await?;
            if this.options.on_violations != OnViolations::Refuse {
                // what apply with this decision does over violations
                for action in &mut plan.actions {
                    if let Action::UpdateValidator {
                        collection,
                        level,
                        violations: Some(found),
                        ..
                    } = action
                    {
                        if found.count == 0 {
                            continue;
                        }
                        if this.options.on_violations == OnViolations::Moderate {
                            *level = ValidationLevel::Moderate;
                        }
                        plan.warnings.push(Warning::ValidatorOverViolations {
                            collection: collection.clone(),
                            violations: found.clone(),
                            decision: this.options.on_violations,
                        });
                    }
                }
            }
            foresee(this.db, &mut plan, &observed, this.migrations).await?;
            let known = |name: &str| this.specs.iter().any(|s| s.name == name);
            for collection in super::observe::unknown_collections(this.db, known).await? {
                plan.warnings.push(Warning::NotInSchema { collection });
            }
            plan.migrations = crate::migrate::run::plan(
                this.db,
                &this.target.name,
                this.migrations,
                this.target.version,
            )
            .await?;
            if let Some(from) = resolved.adopted_from {
                plan.warnings.push(Warning::RecordAdopted {
                    from,
                    to: this.target.name.clone(),
                });
            }
            if let Some(recorded) = &resolved.recorded {
                plan.warnings.extend(drift(
                    &status,
                    recorded,
                    &versions::observed_prints(this.specs, &observed),
                ));
            }
            plan.version = Some(status);
            Ok(plan)
        })
    }
}

impl<'a> std::future::IntoFuture for ApplyAction<'a> {
    type Output = Result<ApplyReport>;
    type IntoFuture =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<ApplyReport>> + Send + 'a>>;

    /// Plans and applies, under the schema's lock.
    ///
    /// # Errors
    ///
    /// [`Error::Downgrade`] when a newer version is recorded (unless
    /// [`OnNewer::Continue`] or [`OnNewer::Downgrade`]), a validator change refused over
    /// existing documents ([`OnViolations::Refuse`]), [`Error::Timeout`] past the deadline with
    /// the last transient error, a migration step's error, and the driver's errors.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            // the violations counted, the record and the lock: primary, majority
            let db = crate::concern::pinned(self.db);
            run_apply(&ApplyAction { db: &db, ..self }).await
        })
    }
}

/// Why an attempt of `apply` stopped short.
enum Stop {
    /// Another instance holds the apply lock: wait and look again.
    Busy,
    /// A fault the server or network will likely recover from: back off and try again.
    Transient(Error),
    /// Retrying cannot help.
    Fail(Error),
}

/// What to do about a driver error of an `apply` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The state changed under the plan (a concurrent apply, an operator): observe again.
    Replan,
    /// Likely to pass: back off and retry.
    Transient,
    /// Retrying cannot help.
    Permanent,
}

/// NamespaceNotFound, IndexNotFound, NamespaceExists, IndexOptionsConflict,
/// IndexKeySpecsConflict: the server's state is not what the plan was computed from.
const REPLAN_CODES: &[i32] = &[26, 27, 48, 85, 86];

impl Fault {
    fn of(error: &mongodb::error::Error) -> Fault {
        if let Some(code) = server_code(error) {
            if REPLAN_CODES.contains(&code) {
                return Fault::Replan;
            }
            if TRANSIENT_CODES.contains(&code) {
                return Fault::Transient;
            }
        }
        if ["RetryableWriteError", "TransientTransactionError"]
            .iter()
            .any(|label| error.contains_label(label))
        {
            return Fault::Transient;
        }
        match error.kind.as_ref() {
            ErrorKind::Io(_)
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::ServerSelection { .. }
            | ErrorKind::DnsResolve { .. } => Fault::Transient,
            _ => Fault::Permanent,
        }
    }

    fn of_error(error: &Error) -> Fault {
        match error.as_driver() {
            Some(driver)
                if !matches!(error, Error::Timeout { .. } | Error::CommitUnknown { .. }) =>
            {
                Fault::of(driver)
            }
            _ => Fault::Permanent,
        }
    }
}

/// A reading or recording error met outside the schema's own commands. A race code here (a
/// collection dropped between `listCollections` and `listIndexes`) means the same as a
/// transient fault: the next attempt observes again.
fn stop(error: Error) -> Stop {
    match Fault::of_error(&error) {
        Fault::Transient | Fault::Replan => Stop::Transient(error),
        Fault::Permanent => Stop::Fail(error),
    }
}

/// The names of the schema's collections, as the record keeps them.
fn collection_names(specs: &[CollectionSpec]) -> Vec<String> {
    specs.iter().map(|s| s.name.clone()).collect()
}

/// Adds `warning` unless it is there already (an attempt that is retried finds it again).
fn push_once(warnings: &mut Vec<Warning>, warning: Warning) {
    if !warnings.contains(&warning) {
        warnings.push(warning);
    }
}

/// Finds the schema's record (adopting the unnamed schema's for a schema that was named
/// since), retrying transient faults within the deadline.
async fn resolve(
    apply: &ApplyAction<'_>,
    report: &mut ApplyReport,
) -> Result<versions::ResolvedRecord> {
    let meta = apply.db.collection::<Document>(META_COLLECTION);
    let names = collection_names(apply.specs);
    let started = Instant::now();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    loop {
        let error = match versions::resolve_record(
            &meta,
            &apply.target.name,
            &names,
            &apply.target.fingerprint,
            true,
        )
        .await
        {
            Ok(resolved) => return Ok(resolved),
            Err(error) => match stop(error) {
                Stop::Transient(error) => error,
                Stop::Fail(error) => return Err(error),
                Stop::Busy => unreachable!("reading the record is never busy"),
            },
        };
        let wait = backoff.next_wait();
        if started.elapsed().saturating_add(wait) >= apply.deadline {
            return Err(Error::Timeout {
                operation: "apply (reading the version record)".to_owned(),
                after: apply.deadline,
                last: Some(Box::new(error)),
            });
        }
        report.retried += 1;
        tokio::time::sleep(wait).await;
    }
}

/// `apply`: attempts until one completes, a permanent error, or the deadline.
async fn run_apply(apply: &ApplyAction<'_>) -> Result<ApplyReport> {
    apply.target.check()?;
    let meta = apply.db.collection::<Document>(META_COLLECTION);
    let mut report = ApplyReport::default();
    let resolved = resolve(apply, &mut report).await?;
    // warnings that outlive an attempt (each attempt re-plans the others)
    let mut kept = Vec::new();
    if let Some(from) = resolved.adopted_from {
        tracing::info!(from = %from, to = %resolved.name, "apply: adopted the unnamed schema's version record");
        kept.push(Warning::RecordAdopted {
            from,
            to: resolved.name.clone(),
        });
    }
    let lock = Arc::new(ApplyLock::new(meta.clone(), &resolved.name, LEASE));
    let started = Instant::now();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    // a waiting instance looks again soon (most applies take a few milliseconds), then less often
    let mut polling = Backoff::new(Duration::from_millis(40), lock.poll_interval());
    let mut last: Option<Error> = None;
    // the first attempt plans from the record just read: a no-op start-up reads it once
    let mut read = Some(resolved.recorded);
    loop {
        let outcome = attempt(apply, &lock, &mut report, &mut kept, read.take()).await;
        let busy = matches!(outcome, Err(Stop::Busy));
        let wait = match outcome {
            Ok(()) => {
                report.warnings.extend(kept);
                return Ok(report);
            }
            Err(Stop::Fail(error)) => {
                release(&lock).await;
                return Err(error);
            }
            Err(Stop::Busy) => {
                let wait = polling.next_wait();
                report.waited += wait;
                wait
            }
            Err(Stop::Transient(error)) => {
                tracing::debug!(%error, "apply: transient fault, retrying");
                report.retried += 1;
                last = Some(error);
                backoff.next_wait()
            }
        };
        if started.elapsed().saturating_add(wait) >= apply.deadline {
            release(&lock).await;
            let operation = if busy {
                "apply (waiting for another instance's apply to finish)"
            } else {
                "apply"
            };
            return Err(Error::Timeout {
                operation: operation.to_owned(),
                after: apply.deadline,
                last: last.map(Box::new),
            });
        }
        tokio::time::sleep(wait).await;
    }
}

/// Gives the lock back if this apply may hold it, without waiting long for a server that is
/// gone (the lease expires by itself then).
async fn release(lock: &ApplyLock) {
    if lock.claimed() {
        let _ = tokio::time::timeout(Duration::from_secs(2), lock.release()).await;
    }
}

/// The writes a plan still needs once the violations of its validator changes are counted:
/// a change that existing documents violate is dropped ([`OnViolations::Refuse`]) or made
/// moderate, with a warning.
async fn writes_of(
    apply: &ApplyAction<'_>,
    status: &VersionStatus,
) -> Result<(Vec<Action>, Vec<Warning>, Vec<ShardingStatus>, Observed)> {
    let observed = observe_all(apply.db, apply.specs, apply.options.shard_collections).await?;
    let mut plan = Plan::compute_with(apply.specs, &observed, apply.options);
    versions::hold_back_drops(&mut plan, status);
    let mut warnings = plan.warnings;
    let mut actions = Vec::with_capacity(plan.actions.len());
    for mut action in plan.actions {
        if let Action::UpdateValidator {
            collection,
            validator,
            level,
            violations: slot,
            ..
        } = &mut action
        {
            let found = violations(apply.db, collection, validator).await?;
            if found.count > 0 {
                warnings.push(Warning::ValidatorOverViolations {
                    collection: collection.clone(),
                    violations: found.clone(),
                    decision: apply.options.on_violations,
                });
                match apply.options.on_violations {
                    OnViolations::Refuse => continue,
                    OnViolations::Moderate => *level = ValidationLevel::Moderate,
                    _ => {}
                }
            }
            *slot = Some(found);
        }
        actions.push(action);
    }
    Ok((actions, warnings, plan.sharding, observed))
}

/// The drift a start-up finds: with this version and fingerprint recorded as applied, the
/// collections whose state differs from what the server had when that apply completed.
fn drift(
    status: &VersionStatus,
    recorded: &RecordedVersion,
    now: &[(String, String)],
) -> Option<Warning> {
    let VersionStatus::Current { version } = *status else {
        return None;
    };
    let collections = versions::drifted_collections(&recorded.observed, now);
    (!collections.is_empty()).then_some(Warning::Drifted {
        version,
        collections,
        after_own_write: false,
    })
}

/// One attempt: read the record, plan, and, if anything is to be written, take the lock and
/// write under it.
async fn attempt(
    apply: &ApplyAction<'_>,
    lock: &Arc<ApplyLock>,
    report: &mut ApplyReport,
    kept: &mut Vec<Warning>,
    read: Option<Option<RecordedVersion>>,
) -> Result<(), Stop> {
    let target = &apply.target;
    let recorded = match read {
        Some(recorded) => recorded,
        None => versions::read_record(lock.meta(), lock.name())
            .await
            .map_err(stop)?,
    };
    let status = VersionStatus::of(target.version, &target.fingerprint, recorded.as_ref());
    if let VersionStatus::Downgrade { recorded, applying } = status {
        if !apply.downgrades() {
            if apply.on_newer == OnNewer::Continue {
                tracing::warn!(recorded, applying, "apply: the database records a newer schema version; this instance keeps serving and writes nothing");
                report.version = Some(status.clone());
                report.notes.push(format!(
                    "the database records version {recorded}, newer than this instance's {applying}: nothing written, serving on (on_newer Continue)"
                ));
                return Ok(());
            }
            return Err(Stop::Fail(Error::Downgrade { recorded, applying }));
        }
    }
    if report.version.is_none() {
        report.version = Some(status.clone());
    }
    let (writes, warnings, sharding, observed) = writes_of(apply, &status).await.map_err(stop)?;
    report.warnings = warnings;
    report.sharding = sharding;
    // every start-up compares what the server has with what it had when the recorded version
    // was applied: the writes below repair what the plan can
    if let Some(recorded) = &recorded {
        let now = versions::observed_prints(apply.specs, &observed);
        if let Some(drift) = drift(&status, recorded, &now) {
            tracing::warn!(%drift, "apply: drift from the recorded state");
            push_once(kept, drift);
        }
    }
    let steps_pending =
        !crate::migrate::run::pending(apply.db, &target.name, apply.migrations, target.version)
            .await
            .map_err(stop)?
            .is_empty();
    if writes.is_empty() && status.is_current() && !steps_pending {
        return Ok(()); // the fast path: reads only
    }
    let claimed = match lock
        .claim(
            target.version,
            &target.fingerprint,
            &collection_names(apply.specs),
            apply.downgrades(),
        )
        .await
        .map_err(stop)?
    {
        Claim::Held(recorded) => recorded,
        Claim::Busy => return Err(Stop::Busy),
        Claim::Newer(recorded) => {
            return Err(Stop::Fail(Error::Downgrade {
                recorded,
                applying: target.version,
            }))
        }
    };
    tokio::select! {
        biased;
        done = locked(apply, lock, report, kept, &status, &claimed) => done,
        never = lock.keep_alive() => match never {},
    }
}

/// The part of an attempt that runs under the lock: observe again (the state may have changed
/// while this apply waited), write, re-plan after a race code, and record.
async fn locked(
    apply: &ApplyAction<'_>,
    lock: &Arc<ApplyLock>,
    report: &mut ApplyReport,
    kept: &mut Vec<Warning>,
    status: &VersionStatus,
    claimed: &RecordedVersion,
) -> Result<(), Stop> {
    // a step that fails for good fails the version: the record says `failed`, and an older
    // version may roll back to its own state
    match migrate_in_order(apply, lock, report, status).await {
        Err(Stop::Fail(error)) if !claimed.completed => {
            return Err(Stop::Fail(record_failed(lock, apply, error).await));
        }
        other => other?,
    }
    let mut dedupe_reruns = 0;
    let mut replans = 0;
    // the state this apply leaves, read after its last write
    let left = loop {
        let (writes, warnings, sharding, observed) =
            writes_of(apply, status).await.map_err(stop)?;
        report.warnings = warnings;
        report.sharding = sharding;
        let first = report.applied.len();
        match execute(apply, lock, writes, report).await {
            Ok(()) => {
                // read again after the last write: a command of an older apply that was paused
                // past its lease may have landed after this apply's; write again over it
                let executed: Vec<Action> = report.applied[first..]
                    .iter()
                    .filter(|a| !a.done_concurrently)
                    .map(|a| a.action.clone())
                    .collect();
                if executed.is_empty() {
                    break observed;
                }
                let observed = observe(apply.db, apply.specs).await.map_err(stop)?;
                let collections = planning::undone(&executed, &observed);
                if collections.is_empty() {
                    break observed;
                }
                let drift = Warning::Drifted {
                    version: apply.target.version,
                    collections,
                    after_own_write: true,
                };
                tracing::warn!(%drift, "apply: a late write landed after this apply's; writing again");
                push_once(kept, drift);
                replans += 1;
                if replans > MAX_REPLANS {
                    return Err(Stop::Transient(Error::Contended {
                        operation: "apply".to_owned(),
                        attempts: MAX_REPLANS,
                    }));
                }
            }
            Err(Executed::Replan(error)) => {
                replans += 1;
                report.replanned_after.extend(error.code());
                if replans > MAX_REPLANS {
                    return Err(Stop::Fail(error));
                }
            }
            // a unique index over data a dedupe step of this version cleaned, which older
            // instances still writing meanwhile filled with new duplicates: dedupe again, and
            // build again, a bounded number of times; then the version fails, with the
            // dedupe steps pending again (the next apply runs them first)
            Err(Executed::Stop(Stop::Fail(error)))
                if error.code() == Some(11000) && !dedupes_of(apply, &error).is_empty() =>
            {
                let steps = dedupes_of(apply, &error);
                if dedupe_reruns >= DEDUPE_RERUNS {
                    for (migration, _) in &steps {
                        let key = migration.key(&apply.target.name);
                        let _ = crate::migrate::changelog::fail(
                            apply.db,
                            &key,
                            &format!("the unique index still met duplicates after {DEDUPE_RERUNS} more runs of this step: {error}"),
                            Default::default(),
                        )
                        .await;
                    }
                    report.notes.push(format!(
                        "the unique index met new duplicates (written while it was built, by instances of an older version) after {} run(s) of the dedupe step(s) {}: the version is recorded failed and the step(s) pending again",
                        dedupe_reruns + 1,
                        steps.iter().map(|(m, _)| format!("`{}`", m.name)).collect::<Vec<_>>().join(", ")
                    ));
                    if claimed.completed {
                        return Err(Stop::Fail(error));
                    }
                    return Err(Stop::Fail(record_failed(lock, apply, error).await));
                }
                dedupe_reruns += 1;
                tracing::warn!(%error, run = dedupe_reruns, "apply: new duplicates met by a unique index build; the dedupe step runs again");
                let holder = lock.clone();
                let holds: Arc<dyn Fn() -> bool + Send + Sync> = Arc::new(move || holder.holds());
                crate::migrate::run::run(
                    apply.db,
                    &apply.target.name,
                    &steps,
                    holds,
                    &mut report.migrations,
                )
                .await
                .map_err(stop)?;
                report.notes.push(format!(
                    "the unique index met new duplicates while it was built (instances of an older version still writing): dedupe step(s) {} ran again ({dedupe_reruns} of at most {DEDUPE_RERUNS} more runs)",
                    steps.iter().map(|(m, _)| format!("`{}`", m.name)).collect::<Vec<_>>().join(", ")
                ));
            }
            // a command refused for good while claiming a new version or state: the record
            // says so, and an older version may roll back to its own state
            Err(Executed::Stop(Stop::Fail(error))) if !claimed.completed => {
                return Err(Stop::Fail(record_failed(lock, apply, error).await));
            }
            Err(Executed::Stop(stop)) => return Err(stop),
        }
    };
    match status {
        VersionStatus::Changed {
            version,
            recorded_fingerprint,
            fingerprint,
        } => report.warnings.push(Warning::SameVersionChanged {
            version: *version,
            recorded_fingerprint: recorded_fingerprint.clone(),
            fingerprint: fingerprint.clone(),
        }),
        VersionStatus::Downgrade { recorded, applying } => {
            report.warnings.push(Warning::Downgraded {
                recorded: *recorded,
                applying: *applying,
            })
        }
        VersionStatus::Rollback {
            failed,
            applying,
            error,
        } => {
            tracing::warn!(failed, applying, %error, "apply: rolled back over a failed version");
            report.warnings.push(Warning::RolledBack {
                failed: *failed,
                applying: *applying,
                error: error.clone(),
            })
        }
        _ => {}
    }
    let wrote = report.applied.iter().any(|a| !a.done_concurrently);
    let touched = wrote || !claimed.completed;
    let prints = versions::observed_prints(apply.specs, &left);
    if !lock.complete(touched, &prints).await.map_err(stop)? {
        return Err(Stop::Transient(lock_lost()));
    }
    report.recorded = touched;
    Ok(())
}

/// How many more times, in one apply, the dedupe steps of a version run when the unique index
/// they prepare still meets duplicates.
const DEDUPE_RERUNS: usize = 3;

/// Records the claimed version `failed` with `error` (and releases the lock); returns `error`.
async fn record_failed(lock: &ApplyLock, apply: &ApplyAction<'_>, error: Error) -> Error {
    tracing::error!(%error, version = apply.target.version, "apply failed; recorded as failed");
    let message = error.to_string();
    let _ = tokio::time::timeout(Duration::from_secs(2), lock.fail(&message)).await;
    error
}

/// The dedupe steps of the version being applied on the collection whose index build failed
/// with `error` (E11000), to run again.
fn dedupes_of<'m>(
    apply: &ApplyAction<'m>,
    error: &Error,
) -> Vec<(
    &'m crate::migrate::Migration,
    Option<crate::migrate::MigrationRecord>,
)> {
    let Error::Apply { action, .. } = error else {
        return Vec::new();
    };
    apply
        .migrations
        .iter()
        .filter(|m| m.version <= apply.target.version && m.step.0.dedupes())
        .filter(|m| action.contains(&format!("`{}`", m.step.collection())))
        .map(|m| (m, None))
        .collect()
}

/// With migration steps pending, the order that keeps a live service up: the writes of the
/// plan with a tightened validator held at `moderate` (the existing documents that violate it
/// stay writable) and without the new unique indexes, then the steps; the caller's plan that
/// follows makes the validator `strict` once no document violates it and builds the unique
/// indexes over the deduplicated data.
async fn migrate_in_order(
    apply: &ApplyAction<'_>,
    lock: &Arc<ApplyLock>,
    report: &mut ApplyReport,
    status: &VersionStatus,
) -> Result<(), Stop> {
    let target = &apply.target;
    let steps =
        crate::migrate::run::pending(apply.db, &target.name, apply.migrations, target.version)
            .await
            .map_err(stop)?;
    if steps.is_empty() {
        return Ok(());
    }
    let mut before = ApplyAction {
        specs: apply.specs,
        db: apply.db,
        options: apply.options,
        target: apply.target.clone(),
        deadline: apply.deadline,
        migrations: apply.migrations,
        on_newer: apply.on_newer,
    };
    before.options.on_violations = OnViolations::Moderate;
    let (writes, _, _, _) = writes_of(&before, status).await.map_err(stop)?;
    let mut held_back = Vec::new();
    let mut first = Vec::new();
    for action in writes {
        match action {
            Action::CreateIndexes {
                collection,
                indexes,
            } => {
                let (unique, other): (Vec<_>, Vec<_>) = indexes.into_iter().partition(|i| i.unique);
                if !unique.is_empty() {
                    held_back.push(format!(
                        "unique index(es) {} on `{collection}` built after the migration steps",
                        unique
                            .iter()
                            .map(|i| format!("`{}`", i.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if !other.is_empty() {
                    first.push(Action::CreateIndexes {
                        collection,
                        indexes: other,
                    });
                }
            }
            Action::UpdateValidator {
                ref collection,
                level: ValidationLevel::Moderate,
                violations: Some(ref found),
                ..
            } if found.count > 0 => {
                report.notes.push(format!(
                    "the new validator of `{collection}` was set at level moderate while the migration steps ran ({} existing document(s) violated it)",
                    found.count
                ));
                first.push(action);
            }
            other => first.push(other),
        }
    }
    execute(apply, lock, first, report)
        .await
        .map_err(|e| match e {
            Executed::Replan(error) => Stop::Transient(error),
            Executed::Stop(stop) => stop,
        })?;
    let holder = lock.clone();
    let holds: Arc<dyn Fn() -> bool + Send + Sync> = Arc::new(move || holder.holds());
    crate::migrate::run::run(
        apply.db,
        &target.name,
        &steps,
        holds,
        &mut report.migrations,
    )
    .await
    .map_err(|error| {
        if crate::sync::retry::ErrorClass::of(&error) == crate::sync::retry::ErrorClass::Transient {
            Stop::Transient(error)
        } else {
            Stop::Fail(error)
        }
    })?;
    report.notes.extend(held_back);
    Ok(())
}

/// The lock lapsed under this attempt: the next attempt takes it again (a retry, so this is
/// the `last` error of a [`Error::Timeout`] if none succeeds).
fn lock_lost() -> Error {
    Error::LockLost {
        lock: crate::error::LockKind::Apply,
        during: "apply's commands".to_owned(),
    }
}

enum Executed {
    Replan(Error),
    Stop(Stop),
}

async fn execute(
    apply: &ApplyAction<'_>,
    lock: &ApplyLock,
    writes: Vec<Action>,
    report: &mut ApplyReport,
) -> Result<(), Executed> {
    let total = writes.len() as u64;
    for (done, action) in writes.into_iter().enumerate() {
        if !lock.holds() {
            return Err(Executed::Stop(Stop::Transient(lock_lost())));
        }
        let span = tracing::info_span!("apply_action", collection = action.collection());
        match run(apply.db, &action).instrument(span).await {
            Ok(()) => {
                crate::progress::report("apply", done as u64 + 1, Some(total), &action);
                report.applied.push(AppliedAction {
                    action,
                    done_concurrently: false,
                })
            }
            Err(source) => {
                let fault = Fault::of(&source);
                let created_concurrently = matches!(action, Action::CreateCollection { .. })
                    && server_code(&source) == Some(48);
                let error = Error::Apply {
                    action: action.to_string(),
                    source,
                };
                if created_concurrently {
                    report.applied.push(AppliedAction {
                        action,
                        done_concurrently: true,
                    });
                }
                return Err(match fault {
                    Fault::Replan => Executed::Replan(error),
                    Fault::Transient => Executed::Stop(Stop::Transient(error)),
                    Fault::Permanent => Executed::Stop(Stop::Fail(error)),
                });
            }
        }
    }
    Ok(())
}

async fn run(db: &Database, action: &Action) -> mongodb::error::Result<()> {
    let command = match action {
        Action::CreateCollection {
            collection,
            validator,
            level,
            action,
        } => doc! {
            "create": collection,
            "validator": validator.clone(),
            "validationLevel": level.as_str(),
            "validationAction": action.as_str(),
        },
        Action::UpdateValidator {
            collection,
            validator,
            level,
            action,
            ..
        } => doc! {
            "collMod": collection,
            "validator": validator.clone(),
            "validationLevel": level.as_str(),
            "validationAction": action.as_str(),
        },
        Action::CreateIndexes {
            collection,
            indexes,
        } => doc! {
            "createIndexes": collection,
            "indexes": indexes.iter().map(|i| Bson::Document(i.to_document())).collect::<Vec<_>>(),
        },
        Action::DropIndex {
            collection, name, ..
        } => doc! {
            "dropIndexes": collection,
            "index": name,
        },
        Action::EnablePreImages { collection } => doc! {
            "collMod": collection,
            "changeStreamPreAndPostImages": { "enabled": true },
        },
        Action::ShardCollection { collection, key } => {
            let command = sharding::shard_command(db.name(), collection, key);
            return db
                .client()
                .database("admin")
                .run_command(command)
                .await
                .map(drop);
        }
    };
    // a command sent as such inherits no write concern: the schema's state is acknowledged by
    // a majority (it survives a failover), whatever the URI says
    let mut command = command;
    command.insert("writeConcern", crate::concern::majority_document());
    db.run_command(command).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command_error(code: i32) -> mongodb::error::Error {
        // the driver's own parsing of a server reply, as a failed command gives it
        let reply = doc! { "ok": 0, "code": code, "errmsg": "x" };
        let error: mongodb::error::CommandError =
            crate::bson_compat::from_document(reply).expect("a command error");
        mongodb::error::Error::from(ErrorKind::Command(error))
    }

    #[test]
    fn race_codes_re_plan_transient_faults_retry_the_rest_fail() {
        for code in [26, 27, 48, 85, 86] {
            assert_eq!(Fault::of(&command_error(code)), Fault::Replan, "{code}");
        }
        for code in [91, 189, 10107, 11600, 11602, 13435, 12587] {
            assert_eq!(Fault::of(&command_error(code)), Fault::Transient, "{code}");
        }
        for code in [2, 13, 67, 121, 11000] {
            assert_eq!(Fault::of(&command_error(code)), Fault::Permanent, "{code}");
        }
        let io = mongodb::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert_eq!(Fault::of(&io), Fault::Transient);
        assert!(matches!(
            stop(Error::Downgrade {
                recorded: 2,
                applying: 1
            }),
            Stop::Fail(_)
        ));
    }
}
