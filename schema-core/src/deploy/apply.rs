//! `plan` and `apply`, and the apply path as one pipeline: each pass of [`run_apply`] runs
//! [`pass`], which reads top to bottom through the stages, each in its own file:
//!
//! 1. observe ([`super::observe`]): the record, the server's state, the violators, the pending steps;
//! 2. plan ([`super::plan`]): pure, what was seen -> what to do next;
//! 3. lock ([`super::lock`]): the apply lease, raising the recorded version as it is taken;
//! 4. migrate ([`crate::migrate`]): the pending steps, once the writes that come before them are on
//!    the server;
//! 5. execute ([`super::execute`]): the planned writes;
//! 6. record ([`super::record`]): the outcome, once a pass finds nothing left to write.
//!
//! A pass that wrote or ran steps returns for another pass, which observes what it left; a
//! stage takes what the previous one returned and nothing calls back up. Races, transient
//! faults and a busy lock end a pass early; [`run_apply`] decides whether and when the next one
//! runs, and records a failure once.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use tokio::time::Instant;

use super::execute::{self, AppliedAction, Fault, Stopped};
use super::lock::{self, ApplyLock, Claimed, Taken};
use super::migrate::run as migrate;
use super::observe::{self, Looking, Seen};
use super::plan::{
    self as planning, Action, Deciding, Next, OnNewer, OnViolations, Plan, PlanOptions, Warning,
};
use super::record::{self, VersionStatus, META_COLLECTION};
use super::sharding::ShardingStatus;
use crate::migrate::Migration;
use crate::sync::retry::Backoff;
use crate::terms;
use crate::ValidationLevel;
use crate::{CollectionSpec, Error, Result};

/// How long [`crate::Schema::apply`] keeps retrying transient faults and waiting for another
/// instance's apply by default (see [`ApplyAction::deadline`]).
pub const APPLY_DEADLINE: Duration = Duration::from_secs(60);

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
    /// [`META_COLLECTION`] (it does when it wrote something or the record differed): as
    /// `applied`, or, with [`ApplyReport::missing`] not empty, as `partial`.
    pub recorded: bool,
    /// What of the declared state is not on the server after this apply (a validator refused
    /// over violating documents or held at `moderate`, a conflicting index, a view where a
    /// collection is declared; see [`Warning::not_as_declared`]). When it is not empty, the
    /// version is never recorded `applied`: the record says `partial` and lists it, and the
    /// CLI's `apply` exits 3.
    pub missing: Vec<String>,
    /// The order in which the actions and the steps ran (they interleave: the writes that come
    /// before the steps, the steps, the writes after them).
    ran: Vec<Ran>,
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

/// One entry of [`ApplyReport`]'s order: an index into `applied` or into `migrations`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ran {
    Action(usize),
    Step(usize),
}

/// An action or a migration step of an apply, in the order they ran
/// ([`ApplyReport::in_order`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RanEntry<'a> {
    /// A write.
    Action(&'a AppliedAction),
    /// A migration step.
    Step(&'a crate::migrate::RanStep),
}

impl ApplyReport {
    /// The actions and the migration steps in the order they ran.
    pub fn in_order(&self) -> Vec<RanEntry<'_>> {
        let noted = self.ran.len() == self.applied.len() + self.migrations.len();
        if !noted {
            // a report not built by `apply` itself: the actions, then the steps
            return self
                .applied
                .iter()
                .map(RanEntry::Action)
                .chain(self.migrations.iter().map(RanEntry::Step))
                .collect();
        }
        self.ran
            .iter()
            .filter_map(|ran| match *ran {
                Ran::Action(i) => self.applied.get(i).map(RanEntry::Action),
                Ran::Step(i) => self.migrations.get(i).map(RanEntry::Step),
            })
            .collect()
    }

    /// Whether the declared validators and indexes are all on the server ([`Self::missing`] is
    /// empty).
    pub fn is_as_declared(&self) -> bool {
        self.missing.is_empty()
    }

    /// Whether nothing was changed: no schema write and no new record. (An instance that waited
    /// for another's apply and then found nothing to do took and gave back the lock.)
    pub fn is_noop(&self) -> bool {
        !self.recorded && self.applied.iter().all(|a| a.done_concurrently)
    }
}

impl ApplyReport {
    /// The report's first line: how the version relates to the record, as this apply left it
    /// (the status alone says what an apply would do over a newer version; this one did it, or
    /// served on).
    pub(crate) fn version_line(&self) -> Option<String> {
        Some(match self.version.as_ref()? {
            VersionStatus::Downgrade { recorded, applying } if self.recorded => format!(
                "schema version {applying} applied over the newer recorded version {recorded} ({}): the record now says {applying}",
                terms::ALLOW_DOWNGRADE_BY_NAME
            ),
            VersionStatus::Downgrade { recorded, applying } => format!(
                "schema version {applying} is older than the recorded version {recorded}: nothing written"
            ),
            version => version.to_string(),
        })
    }
}

impl fmt::Display for ApplyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let serving_on = matches!(
            &self.version,
            Some(VersionStatus::Downgrade { .. }) if !self.recorded
        );
        if let Some(line) = self.version_line() {
            writeln!(f, "{line}")?;
        }
        let wrote =
            self.applied.iter().any(|a| !a.done_concurrently) || !self.migrations.is_empty();
        if !wrote && !serving_on {
            if self.missing.is_empty() {
                writeln!(f, "schema up to date: nothing written")?;
            } else {
                // the record may still be written (`partial`): no collection or index changed
                writeln!(f, "no collection, validator or index changed")?;
            }
        }
        for entry in self.in_order() {
            match entry {
                RanEntry::Step(ran) => writeln!(f, "- {ran}")?,
                RanEntry::Action(applied) => {
                    let note = if applied.done_concurrently {
                        " (already done by a concurrent instance)"
                    } else {
                        ""
                    };
                    writeln!(f, "- {}{note}", applied.action)?
                }
            }
        }
        for note in &self.notes {
            writeln!(f, "~ {note}")?;
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
        if !self.missing.is_empty() {
            writeln!(
                f,
                "NOT AS DECLARED: {} not on the server; the version is {} `partial`, not `applied`",
                self.missing.join("; "),
                if self.recorded {
                    "recorded"
                } else {
                    "still recorded"
                }
            )?;
        }
        Ok(())
    }
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
    recount: bool,
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
            *slot = Some(
                observe::violations_or_unfinished(
                    db,
                    collection,
                    validator,
                    crate::concern::OPERATOR_TIME_LIMIT,
                )
                .await?,
            );
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
    observed: &super::observe::Observed,
    migrations: &[Migration],
    status: &VersionStatus,
) -> Result<()> {
    // the version the record says, when it is this one or a newer one: a field the server's
    // validator lacks is then not new to the record, the server's validator is behind it
    let recorded_at_least_this = match status {
        VersionStatus::Unrecorded { .. } | VersionStatus::Upgrade { .. } => None,
        VersionStatus::Current { version }
        | VersionStatus::Interrupted { version }
        | VersionStatus::Changed { version, .. }
        | VersionStatus::Failed { version, .. }
        | VersionStatus::Partial { version, .. } => Some(*version),
        VersionStatus::Downgrade { recorded, .. } => Some(*recorded),
        VersionStatus::Rollback { failed, .. } => Some(*failed),
    };
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
                        .max_time(crate::concern::OPERATOR_TIME_LIMIT)
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
                    if let Some(recorded) = recorded_at_least_this {
                        warnings.push(Warning::RequiredFieldNotOnServer {
                            collection: collection.clone(),
                            field,
                            recorded,
                        });
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
            recount: false,
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

    /// Count the documents a refused (or `moderate`) validator change would reject even when
    /// the record of this version, applied in part, keeps their count (default `false`: a
    /// start-up of the same version and fingerprint does not scan the collection again; `plan`,
    /// `audit` and the CLI's `apply` count).
    pub fn recount_violations(mut self, recount: bool) -> Self {
        self.recount = recount;
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
            let resolved = observe::resolve_record(
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
            let observed = observe::observe_all(this.db, this.specs, sharding).await?;
            let mut plan = Plan::compute_with(this.specs, &observed, this.options);
            planning::hold_back_drops(&mut plan, &status);
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
                        if !found.any() {
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
            foresee(this.db, &mut plan, &observed, this.migrations, &status).await?;
            let known = |name: &str| this.specs.iter().any(|s| s.name == name);
            for collection in observe::unknown_collections(this.db, known).await? {
                plan.warnings.push(Warning::NotInSchema { collection });
            }
            plan.migrations = crate::migrate::run::plan(
                this.db,
                &this.target.name,
                this.migrations,
                this.target.version,
            )
            .await?;
            if let Some(recorded) = &resolved.recorded {
                let reruns = crate::migrate::run::ran_before_rollback(
                    this.db,
                    &this.target.name,
                    this.migrations,
                    recorded.version,
                    this.target.version,
                )
                .await?;
                for migration in reruns {
                    if migration.step.0.reruns() {
                        plan.migrations.push(crate::migrate::PendingStep {
                            version: migration.version,
                            name: migration.name.clone(),
                            description: migration.step.describe(),
                            collection: migration.step.collection().to_owned(),
                            documents: migration.step.0.pending(this.db).await?,
                            recorded: Some(crate::migrate::MigrationState::Done),
                        });
                    } else {
                        plan.warnings.push(Warning::StepNotRerun {
                            version: migration.version,
                            name: migration.name.clone(),
                            recorded: recorded.version,
                        });
                    }
                }
            }
            if let Some(from) = resolved.adopted_from {
                plan.warnings.push(Warning::RecordAdopted {
                    from,
                    to: this.target.name.clone(),
                });
            }
            if let Some(recorded) = &resolved.recorded {
                plan.warnings.extend(planning::drift(
                    &status,
                    recorded,
                    &observe::observed_prints(this.specs, &observed),
                ));
            }
            // what apply would leave off the server; where steps are pending on a collection, apply
            // counts its violators after them (the validator held at `moderate` meanwhile), so the
            // plan cannot tell, whatever the decision
            let stepped =
                |collection: &str| plan.migrations.iter().any(|m| m.collection == collection);
            let decided: Vec<Warning> = plan
                .warnings
                .iter()
                .filter(|w| {
                    !matches!(w, Warning::ValidatorOverViolations { collection, .. } if stepped(collection))
                })
                .cloned()
                .collect();
            plan.missing = planning::not_as_declared(&decided);
            if this.options.on_violations == OnViolations::Refuse {
                // what apply refuses (plan warns only about the other decisions)
                for action in &plan.actions {
                    if let Action::UpdateValidator {
                        collection,
                        violations: Some(found),
                        ..
                    } = action
                    {
                        let missing = format!("the validator of `{collection}`");
                        let stepped = plan.migrations.iter().any(|m| &m.collection == collection);
                        if found.any() && !stepped && !plan.missing.contains(&missing) {
                            plan.missing.push(missing);
                        }
                    }
                }
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

/// Why a pass of `apply` stopped short.
enum Stop {
    /// Another instance holds the apply lock: wait and look again.
    Busy,
    /// A fault the server or network will likely recover from: back off and try again.
    Transient(Error),
    /// Retrying cannot help.
    Fail(Error),
}

/// How a pass of `apply` ended.
enum Pass {
    /// Nothing is left to do: the report is complete.
    Done,
    /// It wrote or ran steps: the next pass observes what it left.
    Again,
}

/// A reading or recording error met outside the schema's own commands. A race code here (a
/// collection dropped between `listCollections` and `listIndexes`) means the same as a
/// transient fault: the next pass observes again.
fn stop(error: Error) -> Stop {
    match Fault::of_error(&error) {
        Fault::Transient | Fault::Replan => Stop::Transient(error),
        Fault::Permanent => Stop::Fail(error),
    }
}

/// A step that stopped because the lease may have lapsed under it (an election, a long pause)
/// is transient: the step's record stays `running` with its checkpoint, and the next pass
/// claims the lock again and resumes it; the version is not recorded `failed` for it. A step
/// that failed otherwise fails the apply.
fn step_stopped(lock: &ApplyLock, error: Error) -> Stop {
    let lost = |e: &Error| matches!(e, Error::LockLost { .. });
    let lease_lost = !lock.holds()
        || lost(&error)
        || matches!(&error, Error::Migration { source, .. } if lost(source));
    if lease_lost {
        tracing::warn!(%error, "apply: the lock's lease may have lapsed during a migration step; it resumes from its checkpoint");
        return Stop::Transient(error);
    }
    match &error {
        Error::Migration { source, .. }
            if crate::sync::retry::ErrorClass::of(source)
                == crate::sync::retry::ErrorClass::Transient =>
        {
            Stop::Transient(error)
        }
        _ => stop(error),
    }
}

/// The names of the schema's collections, as the record keeps them.
fn collection_names(specs: &[CollectionSpec]) -> Vec<String> {
    specs.iter().map(|s| s.name.clone()).collect()
}

/// Adds `warning` unless it is there already (a pass that is repeated finds it again).
fn push_once(warnings: &mut Vec<Warning>, warning: Warning) {
    if !warnings.contains(&warning) {
        warnings.push(warning);
    }
}

/// Passes of the pipeline under the lock that re-plan after a race code or a late write of
/// someone else before this apply gives up: each follows a change made outside this apply, so
/// a few are plenty.
const MAX_REPLANS: u32 = 8;

/// How many more times, in one apply, the dedupe steps of a version run when the unique index
/// they prepare still meets duplicates.
const DEDUPE_RERUNS: usize = 3;

/// What one `apply` carries from pass to pass.
struct Run<'m> {
    report: ApplyReport,
    /// Warnings that outlive a pass (each pass plans the others afresh).
    kept: Vec<Warning>,
    /// The lock in the schema's record, once the record's name is known.
    lock: Option<Arc<ApplyLock>>,
    /// The claim while this apply holds the lock, with the version's status when it took it.
    claimed: Option<(Claimed, VersionStatus)>,
    /// The writes of the last pass, which the next one must find on the server.
    executed: Vec<Action>,
    replans: u32,
    /// The dedupe steps to run again before the unique index they prepare is built again.
    dedupe_again: Vec<&'m Migration>,
    dedupe_reruns: usize,
    /// The steps that ran before their version was rolled back, pending again once this apply
    /// holds the lock.
    reopen: Vec<&'m Migration>,
    /// The dedupe steps that ran out of reruns: pending again once the version is failed.
    dedupe_exhausted: Vec<&'m Migration>,
}

/// `apply`: passes of the pipeline until one completes, a permanent error, or the deadline.
async fn run_apply(apply: &ApplyAction<'_>) -> Result<ApplyReport> {
    apply.target.check()?;
    let mut run = Run {
        report: ApplyReport::default(),
        kept: Vec::new(),
        lock: None,
        claimed: None,
        executed: Vec::new(),
        replans: 0,
        dedupe_again: Vec::new(),
        dedupe_reruns: 0,
        dedupe_exhausted: Vec::new(),
        reopen: Vec::new(),
    };
    let started = Instant::now();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    // a waiting instance looks again soon (most applies take a few milliseconds), then less often
    let mut polling = Backoff::new(Duration::from_millis(40), lock::poll_interval());
    let mut last: Option<Error> = None;
    // from the first pass that found the lock busy: the passes that poll it wait too
    let mut busy_since: Option<Instant> = None;
    loop {
        let outcome = pass(apply, &mut run).await;
        let busy = matches!(outcome, Err(Stop::Busy));
        match (busy, busy_since) {
            (true, None) => busy_since = Some(Instant::now()),
            (false, Some(since)) => {
                run.report.waited += since.elapsed();
                busy_since = None;
            }
            _ => {}
        }
        let wait = match outcome {
            Ok(Pass::Done) => {
                let mut report = run.report;
                for warning in run.kept {
                    push_once(&mut report.warnings, warning);
                }
                return Ok(report);
            }
            Ok(Pass::Again) => continue,
            Err(Stop::Fail(error)) => return Err(fail(apply, &mut run, error).await),
            Err(Stop::Busy) => polling.next_wait(),
            Err(Stop::Transient(error)) => {
                tracing::debug!(%error, "apply: transient fault, retrying");
                run.report.retried += 1;
                last = Some(error);
                backoff.next_wait()
            }
        };
        if started.elapsed().saturating_add(wait) >= apply.deadline {
            release(&run).await;
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

/// One pass of the pipeline, top to bottom: observe, plan, lock, migrate, execute, record.
async fn pass<'m>(apply: &ApplyAction<'m>, run: &mut Run<'m>) -> Result<Pass, Stop> {
    let target = &apply.target;
    // 1. observe
    let looking = Looking {
        name: &target.name,
        version: target.version,
        fingerprint: &target.fingerprint,
        sharding: apply.options.shard_collections,
        downgrade: apply.downgrades(),
        recount: apply.recount,
    };
    let seen = observe::observe_apply(apply.db, apply.specs, looking, apply.migrations)
        .await
        .map_err(stop)?;
    // 2. plan
    let deciding = Deciding {
        version: target.version,
        fingerprint: &target.fingerprint,
        options: apply.options,
        on_newer: apply.on_newer,
    };
    let claimed_status = run.claimed.as_ref().map(|(_, status)| status);
    let staged = planning::plan_apply(apply.specs, &seen, deciding, claimed_status, &run.executed);
    note_seen(run, &seen, &staged)?;
    // a declared state mongod cannot reach: refused before the lock, nothing written
    if let Some(warning @ Warning::NotTimeSeries { collection }) = staged
        .warnings
        .iter()
        .find(|w| matches!(w, Warning::NotTimeSeries { .. }))
    {
        return Err(Stop::Fail(Error::CannotApply {
            collection: collection.clone(),
            reason: warning.to_string(),
        }));
    }
    let next = match staged.next {
        Next::Refuse { recorded, applying } => {
            return Err(Stop::Fail(Error::Downgrade { recorded, applying }))
        }
        Next::ServeOn { recorded, applying } => {
            tracing::warn!(in_result = true, recorded, applying, "apply: the database records a newer schema version; this instance keeps serving and writes nothing");
            run.report.notes.push(format!(
                "the database records version {recorded}, newer than this instance's {applying}: nothing written, serving on ({})",
                terms::ON_NEWER_CONTINUE
            ));
            return Ok(Pass::Done);
        }
        // the fast path: reads only (also for a version applied in part, the same part)
        Next::Settled if run.claimed.is_none() && settled_as_recorded(&staged) => {
            return Ok(Pass::Done)
        }
        next => next,
    };
    // 3. lock
    let lock = run
        .lock
        .get_or_insert_with(|| {
            let meta = apply.db.collection::<Document>(META_COLLECTION);
            Arc::new(ApplyLock::new(meta, &seen.record.name, lock::LEASE))
        })
        .clone();
    if run.claimed.as_ref().is_none_or(|_| !lock.holds()) {
        // taken again after a lapsed lease, the apply keeps the status it first claimed over (a
        // downgrade still holds back index drops)
        let status = run
            .claimed
            .take()
            .map_or_else(|| staged.status.clone(), |(_, status)| status);
        let taken = lock
            .take(
                target.version,
                &target.fingerprint,
                &collection_names(apply.specs),
                apply.downgrades(),
            )
            .await
            .map_err(stop)?;
        match taken {
            Taken::Held(claimed) => {
                run.claimed = Some((claimed, status));
                // the record this pass read is the one before the claim
                run.reopen = seen.ran_before_rollback.clone();
            }
            Taken::Busy => {
                run.claimed = None;
                return Err(Stop::Busy);
            }
            Taken::Newer(recorded) => {
                return Err(Stop::Fail(Error::Downgrade {
                    recorded,
                    applying: target.version,
                }))
            }
        }
        // planned before the lock was taken: another apply may have finished in between
        return Ok(Pass::Again);
    }
    // 4. migrate
    if !run.reopen.is_empty() {
        let reopen = std::mem::take(&mut run.reopen);
        migrate::reopen(apply.db, &target.name, &reopen)
            .await
            .map_err(stop)?;
        run.report.notes.push(format!(
            "the migration step(s) {} ran before their version was rolled back: run again",
            step_names(reopen.iter().copied().filter(|m| m.step.0.reruns()))
        ));
        return Ok(Pass::Again);
    }
    let rerun = !run.dedupe_again.is_empty();
    let before_steps = !seen.steps.is_empty();
    let steps: Vec<_> = if rerun {
        std::mem::take(&mut run.dedupe_again)
            .into_iter()
            .map(|m| (m, None))
            .collect()
    } else if matches!(next, Next::Steps { .. }) {
        seen.steps
    } else {
        Vec::new()
    };
    if !steps.is_empty() {
        let holder = lock.clone();
        let holds: Arc<dyn Fn() -> bool + Send + Sync> = Arc::new(move || holder.holds());
        let before = run.report.migrations.len();
        let ran = migrate::run_steps(
            apply.db,
            &target.name,
            &steps,
            holds,
            &mut run.report.migrations,
        )
        .await;
        let after = run.report.migrations.len();
        run.report.ran.extend((before..after).map(Ran::Step));
        ran.map_err(|error| step_stopped(&lock, error))?;
        if rerun {
            run.report.notes.push(format!(
                "the unique index met new duplicates while it was built (instances of an older version still writing): dedupe step(s) {} ran again ({} of at most {DEDUPE_RERUNS} more runs)",
                step_names(steps.iter().map(|(m, _)| *m)),
                run.dedupe_reruns
            ));
        }
        if let Next::Steps { held_back } = next {
            run.report.notes.extend(held_back);
        }
        run.executed.clear();
        return Ok(Pass::Again);
    }
    // 5. execute
    if let Next::Write(writes) = next {
        // what a validator written over violating documents says outlives this pass: the next
        // one finds the validator on the server and plans nothing for it
        for warning in &staged.warnings {
            let written = matches!(
                warning,
                Warning::ValidatorOverViolations { collection, decision, .. }
                    if *decision != OnViolations::Refuse
                        && writes.iter().any(|a| matches!(
                            a,
                            Action::UpdateValidator { collection: c, .. } if c == collection
                        ))
            );
            if written {
                push_once(&mut run.kept, warning.clone());
            }
        }
        for action in &writes {
            if let Action::UpdateValidator {
                collection,
                level: ValidationLevel::Moderate,
                violations: Some(found),
                ..
            } = action
            {
                if found.any() && before_steps {
                    run.report.notes.push(format!(
                        "the new validator of `{collection}` was set at level moderate while the migration steps ran ({found})"
                    ));
                }
            }
        }
        let first = run.report.applied.len();
        let sent = execute::execute(apply.db, &lock, writes, &mut run.report.applied).await;
        let after = run.report.applied.len();
        run.report.ran.extend((first..after).map(Ran::Action));
        run.executed = run.report.applied[first..]
            .iter()
            .filter(|a| !a.done_concurrently)
            .map(|a| a.action.clone())
            .collect();
        return match sent {
            Ok(()) => Ok(Pass::Again),
            Err(Stopped::Replan(error)) => {
                run.replans += 1;
                run.report.replanned_after.extend(error.code());
                if run.replans > MAX_REPLANS {
                    return Err(Stop::Fail(error));
                }
                Ok(Pass::Again)
            }
            Err(Stopped::Transient(error)) => Err(Stop::Transient(error)),
            Err(Stopped::Permanent(error, refused)) => dedupe_again(apply, run, error, &refused),
        };
    }
    // 6. record
    let (claimed, status) = run.claimed.take().expect("a settled pass under the lock");
    run.report.warnings.extend(status_warning(&status));
    let wrote = run.report.applied.iter().any(|a| !a.done_concurrently);
    let touched = wrote || !claimed.record.completed;
    let recorded = record::complete(
        lock.meta(),
        lock.fence(),
        touched,
        &seen.prints,
        &staged.missing,
        &seen.violations,
    )
    .await
    .map_err(stop)?;
    lock.released();
    drop(claimed);
    if !recorded {
        return Err(Stop::Transient(execute::lock_lost()));
    }
    run.report.recorded = touched;
    Ok(Pass::Done)
}

/// What a pass saw and planned, into the report: the version, the warnings, the sharding, a
/// record adopted, drift (a late write of someone else after this apply's own counts as a
/// re-plan).
fn note_seen(run: &mut Run<'_>, seen: &Seen<'_>, staged: &planning::Staged) -> Result<(), Stop> {
    if run.report.version.is_none() {
        run.report.version = Some(staged.status.clone());
    }
    run.report.warnings = staged.warnings.clone();
    run.report.missing = staged.missing.clone();
    run.report.sharding = staged.sharding.clone();
    if let Some(from) = &seen.record.adopted_from {
        tracing::info!(from = %from, to = %seen.record.name, "apply: adopted the unnamed schema's version record");
        push_once(
            &mut run.kept,
            Warning::RecordAdopted {
                from: from.clone(),
                to: seen.record.name.clone(),
            },
        );
    }
    if let Some(drift) = &staged.drift {
        let late = matches!(
            drift,
            Warning::Drifted {
                after_own_write: true,
                ..
            }
        );
        if late {
            tracing::warn!(in_result = true, %drift, "apply: a late write landed after this apply's; writing again");
            run.replans += 1;
            if run.replans > MAX_REPLANS {
                return Err(Stop::Transient(Error::Contended {
                    operation: "apply".to_owned(),
                    attempts: MAX_REPLANS,
                }));
            }
        } else {
            tracing::warn!(in_result = true, %drift, "apply: drift from the recorded state");
        }
        push_once(&mut run.kept, drift.clone());
    }
    Ok(())
}

/// Whether a settled plan finds the record as it would write it: the version applied, or
/// applied in part with the same part missing. Then a start-up writes nothing.
fn settled_as_recorded(staged: &planning::Staged) -> bool {
    match &staged.status {
        VersionStatus::Current { .. } => staged.missing.is_empty(),
        VersionStatus::Partial { missing, .. } => *missing == staged.missing,
        _ => false,
    }
}

/// The warning the version's status at the claim leaves in the report of a completed apply.
fn status_warning(status: &VersionStatus) -> Option<Warning> {
    match status {
        VersionStatus::Changed {
            version,
            recorded_fingerprint,
            fingerprint,
        } => Some(Warning::SameVersionChanged {
            version: *version,
            recorded_fingerprint: recorded_fingerprint.clone(),
            fingerprint: fingerprint.clone(),
        }),
        VersionStatus::Downgrade { recorded, applying } => Some(Warning::Downgraded {
            recorded: *recorded,
            applying: *applying,
        }),
        VersionStatus::Rollback {
            failed,
            applying,
            error,
        } => {
            tracing::warn!(in_result = true, failed, applying, %error, "apply: rolled back over a failed version");
            Some(Warning::RolledBack {
                failed: *failed,
                applying: *applying,
                error: error.clone(),
            })
        }
        _ => None,
    }
}

/// A unique index over data a dedupe step of this version cleaned, which older instances still
/// writing meanwhile filled with new duplicates: the next pass runs the dedupe steps again and
/// builds again, a bounded number of times; then the version fails, with the dedupe steps
/// pending again (the next apply runs them first). Any other refusal fails the apply.
fn dedupe_again<'m>(
    apply: &ApplyAction<'m>,
    run: &mut Run<'m>,
    error: Error,
    refused: &Action,
) -> Result<Pass, Stop> {
    let steps = dedupes_of(apply, refused);
    if error.code() != Some(11000) || steps.is_empty() {
        return Err(Stop::Fail(error));
    }
    if run.dedupe_reruns >= DEDUPE_RERUNS {
        run.report.notes.push(format!(
            "the unique index met new duplicates (written while it was built, by instances of an older version) after {} run(s) of the dedupe step(s) {}: the version is recorded failed and the step(s) pending again",
            run.dedupe_reruns + 1,
            step_names(steps.iter().copied())
        ));
        run.dedupe_exhausted = steps;
        return Err(Stop::Fail(error));
    }
    run.dedupe_reruns += 1;
    tracing::warn!(in_result = true, %error, run = run.dedupe_reruns, "apply: new duplicates met by a unique index build; the dedupe step runs again");
    run.dedupe_again = steps;
    Ok(Pass::Again)
}

/// `` `a`, `b` `` for the report's notes.
fn step_names<'m>(steps: impl Iterator<Item = &'m Migration>) -> String {
    steps
        .map(|m| format!("`{}`", m.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Key names in one order, so that two key lists compare as sets.
fn sorted_keys<'k>(keys: impl Iterator<Item = &'k String>) -> Vec<&'k str> {
    let mut keys: Vec<&str> = keys.map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

/// The dedupe steps of the version being applied whose keys are exactly those of a unique index
/// of `refused`, the `createIndexes` whose build met duplicates (E11000), to run again. A
/// dedupe of an older version, or on other keys, is never run again: under the newer rule it
/// could delete documents that are valid now.
fn dedupes_of<'m>(apply: &ApplyAction<'m>, refused: &Action) -> Vec<&'m Migration> {
    let Action::CreateIndexes {
        collection,
        indexes,
    } = refused
    else {
        return Vec::new();
    };
    let unique: Vec<Vec<&str>> = indexes
        .iter()
        .filter(|i| i.unique)
        .map(|i| sorted_keys(i.keys.keys()))
        .collect();
    apply
        .migrations
        .iter()
        .filter(|m| m.version == apply.target.version && m.step.collection() == collection)
        .filter(|m| {
            m.step
                .0
                .dedupes()
                .is_some_and(|keys| unique.contains(&sorted_keys(keys.iter())))
        })
        .collect()
}

/// The end of an apply that failed for good: with the lock held over a version or state whose
/// apply had not completed, the record says `failed` (once; an older version may then roll
/// back), else the lock is given back; the dedupe steps that could not clean up are pending
/// again. Returns `error`.
async fn fail(apply: &ApplyAction<'_>, run: &mut Run<'_>, error: Error) -> Error {
    for migration in std::mem::take(&mut run.dedupe_exhausted) {
        let key = migration.key(&apply.target.name);
        let _ = crate::migrate::changelog::fail(
            apply.db,
            &key,
            &format!("the unique index still met duplicates after {DEDUPE_RERUNS} more runs of this step: {error}"),
            Default::default(),
        )
        .await;
    }
    let (Some(lock), Some((claimed, _))) = (&run.lock, run.claimed.take()) else {
        release(run).await;
        return error;
    };
    if claimed.record.completed {
        drop(claimed);
        release(run).await;
        return error;
    }
    tracing::error!(in_result = true, %error, version = apply.target.version, "apply failed; recorded as failed");
    let message = error.to_string();
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        record::fail(lock.meta(), lock.fence(), &message),
    )
    .await;
    lock.released();
    error
}

/// Gives the lock back if this apply may hold it, without waiting long for a server that is
/// gone (the lease expires by itself then).
async fn release(run: &Run<'_>) {
    if let Some(lock) = &run.lock {
        if lock.claimed() {
            let _ = tokio::time::timeout(Duration::from_secs(2), lock.release()).await;
        }
    }
}
