//! Which steps are pending, and running them in order with their changelog records.

use std::sync::Arc;

use mongodb::Database;
use tracing::Instrument as _;

use super::changelog::{self, MigrationRecord, MigrationState};
use super::{Migration, PendingStep, RanStep, StepContext};
use crate::{Error, Result};

/// The steps of versions up to `target` not recorded `done`, in version order (then in the
/// order declared), each with its record if an earlier run left one.
pub(crate) async fn pending<'m>(
    db: &Database,
    schema: &str,
    migrations: &'m [Migration],
    target: u64,
) -> Result<Vec<(&'m Migration, Option<MigrationRecord>)>> {
    if migrations.is_empty() {
        return Ok(Vec::new());
    }
    let records = changelog::read_all(db, schema).await?;
    let mut steps: Vec<(usize, &Migration)> = migrations
        .iter()
        .enumerate()
        .filter(|(_, m)| m.version <= target)
        .collect();
    steps.sort_by_key(|(i, m)| (m.version, *i));
    Ok(steps
        .into_iter()
        .filter_map(|(_, m)| {
            let record = records
                .iter()
                .find(|r| r.version == m.version && r.name == m.name)
                .cloned();
            match &record {
                Some(r) if r.state == MigrationState::Done => None,
                _ => Some((m, record)),
            }
        })
        .collect())
}

/// The steps of versions above `recorded` and up to `target` recorded `done`: they ran before
/// the record was lowered to `recorded` (a rollback), and an apply of `target` meets their
/// version again.
pub(crate) async fn ran_before_rollback<'m>(
    db: &Database,
    schema: &str,
    migrations: &'m [Migration],
    recorded: u64,
    target: u64,
) -> Result<Vec<&'m Migration>> {
    if migrations.is_empty() || recorded >= target {
        return Ok(Vec::new());
    }
    let records = changelog::read_all(db, schema).await?;
    Ok(migrations
        .iter()
        .filter(|m| m.version > recorded && m.version <= target)
        .filter(|m| {
            records.iter().any(|r| {
                r.version == m.version && r.name == m.name && r.state == MigrationState::Done
            })
        })
        .collect())
}

/// Makes the steps `ran_before_rollback` found that may run again pending from the start.
pub(crate) async fn reopen(db: &Database, schema: &str, steps: &[&Migration]) -> Result<()> {
    for migration in steps.iter().filter(|m| m.step.0.reruns()) {
        changelog::reopen(db, &migration.key(schema)).await?;
    }
    Ok(())
}

/// The pending steps with the documents each would touch now (for `plan`).
pub(crate) async fn plan(
    db: &Database,
    schema: &str,
    migrations: &[Migration],
    target: u64,
) -> Result<Vec<PendingStep>> {
    let mut out = Vec::new();
    for (migration, record) in pending(db, schema, migrations, target).await? {
        out.push(PendingStep {
            version: migration.version,
            name: migration.name.clone(),
            description: migration.step.describe(),
            collection: migration.step.collection().to_owned(),
            documents: migration.step.0.pending(db).await?,
            recorded: record.map(|r| r.state),
        });
    }
    Ok(out)
}

/// Runs `steps` in order, each recorded `running`, then `done` or `failed`. Stops at the first
/// failure and returns it as [`Error::Migration`]; `holds` says whether the caller still holds
/// the lock the steps run under.
pub(crate) async fn run_steps(
    db: &Database,
    schema: &str,
    steps: &[(&Migration, Option<MigrationRecord>)],
    holds: Arc<dyn Fn() -> bool + Send + Sync>,
    ran: &mut Vec<RanStep>,
) -> Result<()> {
    for (index, (migration, _)) in steps.iter().enumerate() {
        if !holds() {
            return Err(Error::LockLost {
                lock: crate::error::LockKind::Apply,
                during: "the migration steps, before a step".to_owned(),
            });
        }
        let key = migration.key(schema);
        let before = changelog::start(db, schema, migration).await?;
        let resumed = before.as_ref().map(|r| (r.checkpoint.clone(), r.counts));
        let was_started = before.is_some();
        let mut cx = StepContext::new(
            db.clone(),
            key.clone(),
            migration.version,
            resumed,
            holds.clone(),
        );
        tracing::info!(version = migration.version, step = %migration.name, "migration step: {}", migration.step.describe());
        let task = format!("migration v{} {}", migration.version, migration.name);
        crate::progress::report("migrations", index as u64, Some(steps.len() as u64), &task);
        let span = tracing::info_span!("migration_step", version = migration.version, step = %migration.name);
        match migration.step.0.run(&mut cx).instrument(span).await {
            Ok(counts) => {
                changelog::finish(db, &key, counts).await?;
                ran.push(RanStep {
                    version: migration.version,
                    name: migration.name.clone(),
                    description: migration.step.describe(),
                    counts,
                    resumed: was_started,
                });
            }
            Err(error) => {
                // a lost lock leaves the record `running`: the holder of the lock resumes it
                if holds() {
                    let _ = changelog::fail(db, &key, &error.to_string(), cx.counts()).await;
                }
                return Err(Error::Migration {
                    version: migration.version,
                    name: migration.name.clone(),
                    source: Box::new(error),
                });
            }
        }
    }
    Ok(())
}
