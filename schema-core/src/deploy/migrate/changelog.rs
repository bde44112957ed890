//! The changelog: one document per migration step in [`MIGRATIONS_COLLECTION`], keyed
//! `<schema name>/<version>/<step name>`, holding its state, the checksum of its description,
//! when it started and finished, the documents it matched and changed, its checkpoint and the
//! error of a failed run.

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::ReturnDocument;
use mongodb::Database;

use super::{Migration, StepCounts};
use crate::Result;

/// The collection, in the application's database, where `apply` records each migration step it
/// ran.
pub const MIGRATIONS_COLLECTION: &str = "mongo_schema_migrations";

/// The state of a recorded step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MigrationState {
    /// Started and not finished: running now, or interrupted (the next `apply` resumes it).
    Running,
    /// Finished: never runs again.
    Done,
    /// Ended on an error (recorded): the next `apply` runs it again from its checkpoint.
    Failed,
}

impl MigrationState {
    fn as_str(self) -> &'static str {
        match self {
            MigrationState::Running => "running",
            MigrationState::Done => "done",
            MigrationState::Failed => "failed",
        }
    }

    fn parse(text: &str) -> MigrationState {
        match text {
            "done" => MigrationState::Done,
            "failed" => MigrationState::Failed,
            _ => MigrationState::Running,
        }
    }
}

impl fmt::Display for MigrationState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step as the changelog records it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MigrationRecord {
    /// The schema's name.
    pub schema: String,
    /// The step's version.
    pub version: u64,
    /// The step's name.
    pub name: String,
    /// Checksum of the description it ran with.
    pub checksum: String,
    /// Its state.
    pub state: MigrationState,
    /// When its first run started.
    pub started: Option<DateTime>,
    /// When it finished (`done`) or failed.
    pub finished: Option<DateTime>,
    /// Documents matched and changed.
    pub counts: StepCounts,
    /// Where an interrupted run resumes.
    pub checkpoint: Option<Bson>,
    /// The error of a failed run.
    pub error: Option<String>,
}

impl MigrationRecord {
    fn from_document(doc: &Document) -> MigrationRecord {
        let number = |key: &str| match doc.get(key) {
            Some(Bson::Int64(n)) => *n as u64,
            Some(Bson::Int32(n)) => *n as u64,
            _ => 0,
        };
        MigrationRecord {
            schema: doc.get_str("schema").unwrap_or_default().to_owned(),
            version: number("version"),
            name: doc.get_str("name").unwrap_or_default().to_owned(),
            checksum: doc.get_str("checksum").unwrap_or_default().to_owned(),
            state: MigrationState::parse(doc.get_str("state").unwrap_or_default()),
            started: doc.get_datetime("started").ok().copied(),
            finished: doc.get_datetime("finished").ok().copied(),
            counts: StepCounts::new(number("matched"), number("changed")),
            checkpoint: doc
                .get("checkpoint")
                .filter(|c| !matches!(c, Bson::Null))
                .cloned(),
            error: doc.get_str("error").ok().map(str::to_owned),
        }
    }
}

/// Every recorded step of the schema `schema`.
pub(crate) async fn read_all(db: &Database, schema: &str) -> Result<Vec<MigrationRecord>> {
    let records: Vec<Document> = db
        .collection::<Document>(MIGRATIONS_COLLECTION)
        .find(doc! { "schema": schema })
        .await?
        .try_collect()
        .await?;
    Ok(records.iter().map(MigrationRecord::from_document).collect())
}

/// Marks the step running (keeping its first start, checkpoint and counts) and returns the
/// record as it was before, if any.
pub(crate) async fn start(
    db: &Database,
    schema: &str,
    migration: &Migration,
) -> Result<Option<MigrationRecord>> {
    let before = db
        .collection::<Document>(MIGRATIONS_COLLECTION)
        .find_one_and_update(
            doc! { "_id": migration.key(schema) },
            doc! {
                "$set": { "state": "running", "checksum": migration.checksum(), "description": migration.step.describe() },
                "$setOnInsert": {
                    "schema": schema,
                    "version": migration.version as i64,
                    "name": &migration.name,
                    "started": DateTime::now(),
                },
                "$unset": { "error": "" },
            },
        )
        .upsert(true)
        .return_document(ReturnDocument::Before)
        .await?;
    Ok(before.as_ref().map(MigrationRecord::from_document))
}

/// Saves where the step is and what it did so far.
/// Makes a step recorded `done` pending again, from the start (its version was rolled back and
/// is applied again): state `running`, no checkpoint, no counts.
pub(crate) async fn reopen(db: &Database, key: &str) -> Result<()> {
    db.collection::<Document>(MIGRATIONS_COLLECTION)
        .update_one(
            doc! { "_id": key, "state": "done" },
            doc! {
                "$set": { "state": "running", "matched": 0_i64, "changed": 0_i64 },
                "$unset": { "checkpoint": "", "finished": "", "error": "" },
            },
        )
        .await?;
    Ok(())
}

pub(crate) async fn checkpoint(
    db: &Database,
    key: &str,
    checkpoint: &Bson,
    counts: StepCounts,
) -> Result<()> {
    db.collection::<Document>(MIGRATIONS_COLLECTION)
        .update_one(
            doc! { "_id": key },
            doc! { "$set": {
                "checkpoint": checkpoint.clone(),
                "matched": counts.matched as i64,
                "changed": counts.changed as i64,
            } },
        )
        .await?;
    Ok(())
}

/// Records the step done.
pub(crate) async fn finish(db: &Database, key: &str, counts: StepCounts) -> Result<()> {
    db.collection::<Document>(MIGRATIONS_COLLECTION)
        .update_one(
            doc! { "_id": key },
            doc! {
                "$set": {
                    "state": "done",
                    "finished": DateTime::now(),
                    "matched": counts.matched as i64,
                    "changed": counts.changed as i64,
                },
                "$unset": { "checkpoint": "" },
            },
        )
        .await?;
    Ok(())
}

/// Records the step failed with `error`.
pub(crate) async fn fail(db: &Database, key: &str, error: &str, counts: StepCounts) -> Result<()> {
    db.collection::<Document>(MIGRATIONS_COLLECTION)
        .update_one(
            doc! { "_id": key },
            doc! { "$set": {
                "state": "failed",
                "finished": DateTime::now(),
                "error": error,
                "matched": counts.matched as i64,
                "changed": counts.changed as i64,
            } },
        )
        .await?;
    Ok(())
}
