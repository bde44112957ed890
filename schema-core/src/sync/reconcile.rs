//! Reconcile: compare every copy with its source and repair the drifted ones. Each repair is
//! conditional on the copy value it read, so a copy rewritten meanwhile (by a transaction or
//! the worker) is left alone: a repair never goes back in time.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;

use super::failures::{self, FailureLog};
use super::fan_out::FanOut;
use super::retry::{Backoff, ErrorClass};
use super::{drifted, get_path, id_key};
use crate::model::copy::{OnDelete, SyncEdge, SyncStrategy};
use crate::Result;

/// What a reconcile pass found and did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// One line per copy.
    pub edges: Vec<EdgeReconcile>,
    /// One line per subset: previews and counts compared with the children.
    pub subsets: Vec<crate::SubsetReconcile>,
}

/// Reconcile figures of one copy (`holder.path`).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct EdgeReconcile {
    /// `holder.path`.
    pub copy: String,
    /// Its strategy.
    pub strategy: Option<SyncStrategy>,
    /// Holder documents read.
    pub checked: u64,
    /// Copies that differed from their source (and, with `on_delete = "unset"`, copies of a
    /// deleted source that are not unset yet).
    pub drifted: u64,
    /// Holder documents rewritten (0 in a dry run). Fewer than `drifted` when some were
    /// rewritten by someone else between the read and the repair (the repair is conditional).
    pub repaired: u64,
    /// Copies whose source document no longer exists (with `on_delete = "keep"` they keep
    /// their last values; with `"unset"` the repair unsets them).
    pub missing_sources: u64,
    /// Holders whose repair failed in this pass (recorded in
    /// [`crate::FAILURES_COLLECTION`]).
    pub failed: u64,
    /// Recorded sync failures of this copy, after the pass (see
    /// [`crate::Schema::retry_failures`]).
    pub recorded_failures: u64,
    /// Times the stream of holders broke (a lost cursor, a network error, a batch's lookups or
    /// repairs cut short) and was opened again after the last batch compared in full.
    pub resumed: u64,
}

impl ReconcileReport {
    /// All drifted copies, and parents whose subset or count disagreed with their children.
    pub fn drifted(&self) -> u64 {
        self.edges.iter().map(|e| e.drifted).sum::<u64>()
            + self.subsets.iter().map(|s| s.drifted).sum::<u64>()
    }

    /// All repaired holder documents (copies and subsets).
    pub fn repaired(&self) -> u64 {
        self.edges.iter().map(|e| e.repaired).sum::<u64>()
            + self.subsets.iter().map(|s| s.repaired).sum::<u64>()
    }

    /// All copies of a deleted source.
    pub fn missing_sources(&self) -> u64 {
        self.edges.iter().map(|e| e.missing_sources).sum()
    }

    /// All recorded sync failures of the copies.
    pub fn recorded_failures(&self) -> u64 {
        self.edges.iter().map(|e| e.recorded_failures).sum()
    }
}

impl fmt::Display for ReconcileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for edge in &self.edges {
            write!(
                f,
                "{} ({}): {} checked, {} drifted, {} repaired, {} missing sources",
                edge.copy,
                edge.strategy.map_or("?", SyncStrategy::as_str),
                edge.checked,
                edge.drifted,
                edge.repaired,
                edge.missing_sources
            )?;
            if edge.failed > 0 || edge.recorded_failures > 0 {
                write!(
                    f,
                    ", {} failed, {} recorded failures",
                    edge.failed, edge.recorded_failures
                )?;
            }
            if edge.resumed > 0 {
                write!(f, ", holder stream resumed: {}", edge.resumed)?;
            }
            writeln!(f)?;
        }
        for subset in &self.subsets {
            writeln!(f, "{subset}")?;
        }
        Ok(())
    }
}

/// Holders compared per batch (one `$in` per 1,000 of their sources, then the repairs).
const RECONCILE_BATCH: usize = 5000;

/// Source ids per `$in`.
const SOURCE_CHUNK: usize = 1000;

/// Consecutive failures of the holder stream, with no batch done in between, before reconcile
/// gives up and returns the error.
const STREAM_RESUMES: u32 = 5;

/// Compares every copy of `edges` with its source and (unless `dry_run`) rewrites the drifted
/// ones. Frozen copies are never touched, whatever the caller passes.
pub(crate) async fn reconcile(
    db: &Database,
    edges: &[&SyncEdge],
    dry_run: bool,
    log: &FailureLog,
) -> Result<ReconcileReport> {
    let mut report = ReconcileReport::default();
    for edge in edges
        .iter()
        .filter(|e| e.copy.strategy != SyncStrategy::Frozen)
    {
        let mut figures = EdgeReconcile {
            copy: edge.label(),
            strategy: Some(edge.copy.strategy),
            ..Default::default()
        };
        reconcile_edge(db, edge, dry_run, log, &mut figures).await?;
        figures.recorded_failures = failures::count(db, &figures.copy).await?;
        report.edges.push(figures);
    }
    Ok(report)
}

/// The holders of one copy, read as one stream in `_id` order (one `find` and its `getMore`s:
/// a walk of the `_id` index, and on SecantusDB one sort instead of one per batch) and compared
/// a batch at a time. The stream is keyed: when it breaks, or a batch's source lookups or
/// repairs fail, on a transient error (a cursor lost to a restart or a failover, a network
/// error) it is opened again after the last batch compared in full, with back-off. A batch cut
/// short is compared again from its start: its repairs are conditional on the values read, so
/// none is applied twice, and its figures count once (a repair done before the cut stays
/// counted in `repaired`, and that holder no longer counts as drifted).
async fn reconcile_edge(
    db: &Database,
    edge: &SyncEdge,
    dry_run: bool,
    log: &FailureLog,
    figures: &mut EdgeReconcile,
) -> Result<()> {
    let holders = db.collection::<BsonDocument>(&edge.holder);
    let mut after: Option<Bson> = None;
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut failures_in_a_row = 0;
    loop {
        // `_id` alone in the filter and the sort: the `_id` index serves it on any planner
        let filter = match &after {
            Some(last) => doc! { "_id": { "$gt": last.clone() } },
            None => doc! {},
        };
        let opened = holders
            .find(filter)
            .projection(doc! { edge.copy.path.as_str(): 1 })
            .sort(doc! { "_id": 1 })
            .batch_size(RECONCILE_BATCH as u32)
            .await;
        let mut batch: Vec<BsonDocument> = Vec::with_capacity(RECONCILE_BATCH);
        let broke = match opened {
            Err(error) => Some(crate::Error::from(error)),
            Ok(mut cursor) => loop {
                // a full batch, the end of the stream, or a break: what was read is compared
                // either way (which empties `batch`), then the stream goes on, ends, or is
                // opened again
                let read = fill(&mut cursor, &mut batch).await;
                if !batch.is_empty() {
                    match compare(db, edge, &mut batch, dry_run, log, figures).await {
                        Ok(last) => {
                            after = last;
                            failures_in_a_row = 0;
                            backoff.reset();
                        }
                        Err(error) => break Some(error),
                    }
                }
                match read {
                    Ok(true) => {}
                    Ok(false) => break None,
                    Err(error) => break Some(error),
                }
            },
        };
        let Some(error) = broke else { return Ok(()) };
        failures_in_a_row += 1;
        if ErrorClass::of(&error) != ErrorClass::Transient || failures_in_a_row > STREAM_RESUMES {
            return Err(error);
        }
        tracing::warn!(copy = %figures.copy, %error, "reconcile: the holder stream broke, resuming after the last batch compared");
        figures.resumed += 1;
        tokio::time::sleep(backoff.next_wait()).await;
    }
}

/// Reads holders into `batch` until it holds [`RECONCILE_BATCH`]: `true` when it is full,
/// `false` at the end of the stream; on an error `batch` keeps what was read before it.
async fn fill(
    cursor: &mut mongodb::Cursor<BsonDocument>,
    batch: &mut Vec<BsonDocument>,
) -> Result<bool> {
    while batch.len() < RECONCILE_BATCH {
        match cursor.try_next().await? {
            Some(holder) => batch.push(holder),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Compares (and repairs) `batch` and returns the last `_id` in it; the batch is emptied
/// either way. Its figures are added to `figures` when it was compared in full; when it was cut
/// short only the repairs and failures it already made are (it is compared again).
async fn compare(
    db: &Database,
    edge: &SyncEdge,
    batch: &mut Vec<BsonDocument>,
    dry_run: bool,
    log: &FailureLog,
    figures: &mut EdgeReconcile,
) -> Result<Option<Bson>> {
    let mut part = EdgeReconcile::default();
    let outcome = reconcile_batch(db, edge, batch, dry_run, log, &mut part).await;
    let last = batch.last().and_then(|h| h.get("_id")).cloned();
    batch.clear();
    figures.repaired += part.repaired;
    figures.failed += part.failed;
    outcome?;
    figures.checked += part.checked;
    figures.drifted += part.drifted;
    figures.missing_sources += part.missing_sources;
    Ok(last)
}

/// Whether a copied id is looked up by value in `$in` (not a regex, JavaScript or a document).
fn looked_up(id: &Bson) -> bool {
    crate::literal::refuse_operators("a copied id", id).is_ok() && !matches!(id, Bson::Document(_))
}

/// The conditions under which a repair of `copy` may go ahead: every copied field still holds
/// the value read (`$eq`, so a value that looks like an operator stays a value).
fn unchanged(edge: &SyncEdge, copy: &BsonDocument) -> BsonDocument {
    let mut conditions = BsonDocument::new();
    for field in &edge.copy.fields {
        let condition = match get_path(copy, field) {
            Some(value) => doc! { "$eq": value },
            None => doc! { "$exists": false },
        };
        conditions.insert(field.clone(), condition);
    }
    conditions
}

/// Drifted holders of one source, grouped by the copy value they hold (one conditional update
/// per group).
struct Repair<'a> {
    source: Option<&'a BsonDocument>,
    source_id: Bson,
    conditions: BsonDocument,
    holders: Vec<Bson>,
}

async fn reconcile_batch(
    db: &Database,
    edge: &SyncEdge,
    batch: &[BsonDocument],
    dry_run: bool,
    log: &FailureLog,
    figures: &mut EdgeReconcile,
) -> Result<()> {
    // every (holder, copy) pair of the batch
    let mut pairs: Vec<(Bson, BsonDocument)> = Vec::new();
    for holder in batch {
        let Some(holder_id) = holder.get("_id") else {
            continue;
        };
        figures.checked += 1;
        let copies = match get_path(holder, &edge.copy.path) {
            Some(Bson::Array(items)) => items,
            Some(one) => vec![one],
            None => Vec::new(),
        };
        for copy in copies.into_iter().filter_map(|c| c.as_document().cloned()) {
            pairs.push((holder_id.clone(), copy));
        }
    }
    // the sources, keyed by id (numbers compared by value); a regex id would match by pattern
    // inside `$in` and a document id could hold operators, so such copies are not looked up
    let mut ids: Vec<Bson> = Vec::new();
    let mut wanted: HashMap<String, ()> = HashMap::new();
    for (_, copy) in &pairs {
        if let Some(id) = copy.get("_id") {
            if !matches!(id, Bson::RegularExpression(_)) && wanted.insert(id_key(id), ()).is_none()
            {
                ids.push(id.clone());
            }
        }
    }
    let mut projection = doc! { "_id": 1 };
    for field in &edge.copy.fields {
        projection.insert(field.clone(), 1);
    }
    // the sources, `$in` at most SOURCE_CHUNK ids at a time
    let mut sources: HashMap<String, BsonDocument> = HashMap::new();
    for chunk in ids.chunks(SOURCE_CHUNK) {
        let found: Vec<BsonDocument> = db
            .collection::<BsonDocument>(&edge.copy.source)
            .find(doc! { "_id": { "$in": chunk } })
            .projection(projection.clone())
            .await?
            .try_collect()
            .await?;
        sources.extend(
            found
                .into_iter()
                .filter_map(|s| Some((id_key(s.get("_id")?), s))),
        );
    }
    // one conditional update per source and copy value read; linear in the batch: the groups
    // and the holders in each are found by key
    let mut repairs: Vec<Repair<'_>> = Vec::new();
    let mut groups: HashMap<(String, String), (usize, HashSet<String>)> = HashMap::new();
    for (holder, copy) in &pairs {
        let Some(id) = copy.get("_id") else { continue };
        if !looked_up(id) {
            continue;
        }
        let source = sources.get(&id_key(id));
        match source {
            Some(source) if !drifted(&edge.copy.fields, copy, source) => continue,
            Some(_) => {}
            None => {
                figures.missing_sources += 1;
                if edge.copy.on_delete != OnDelete::Unset {
                    continue;
                }
            }
        }
        figures.drifted += 1;
        let conditions = unchanged(edge, copy);
        let key = (
            id_key(id),
            Bson::Document(conditions.clone())
                .into_relaxed_extjson()
                .to_string(),
        );
        let (group, members) = groups.entry(key).or_insert_with(|| {
            repairs.push(Repair {
                source,
                source_id: id.clone(),
                conditions,
                holders: Vec::new(),
            });
            (repairs.len() - 1, HashSet::new())
        });
        // one update rewrites every element of a holder that matches
        if members.insert(id_key(holder)) {
            repairs[*group].holders.push(holder.clone());
        }
    }
    if dry_run {
        return Ok(());
    }
    for repair in repairs {
        let fan_out = match repair.source {
            Some(source) => FanOut::new(edge, source)
                .map(|f| f.when(&edge.copy.path, edge.copy.shape, repair.conditions)),
            // a deleted source: the copy is unset while it still points at it
            None => FanOut::deleted(edge, &repair.source_id),
        };
        let Some(fan_out) = fan_out else { continue };
        let outcome = fan_out
            .only(repair.holders)
            .run_resilient(db, edge, &repair.source_id, log)
            .await?;
        figures.repaired += outcome.rewritten;
        figures.failed += outcome.failed;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CopyShape, CopySpec};

    #[test]
    fn a_repair_is_conditional_on_the_value_it_read() {
        let edge = SyncEdge {
            holder: "tickets".into(),
            copy: CopySpec::new(
                "customer",
                "customers",
                "Customer",
                &["name", "tier"],
                SyncStrategy::Reconcile,
                CopyShape::One,
            ),
        };
        let read = doc! { "_id": 1, "name": { "$ne": "x" } };
        let conditions = unchanged(&edge, &read);
        assert_eq!(
            conditions,
            doc! { "name": { "$eq": { "$ne": "x" } }, "tier": { "$exists": false } }
        );
        let source = doc! { "_id": 1, "name": "Ana", "tier": "gold" };
        let fan_out = FanOut::new(&edge, &source)
            .unwrap()
            .when("customer", CopyShape::One, conditions.clone())
            .only(vec![Bson::Int32(7)]);
        assert_eq!(
            fan_out.filter,
            doc! {
                "customer._id": 1,
                "customer.name": { "$eq": { "$ne": "x" } },
                "customer.tier": { "$exists": false },
                "_id": { "$in": [7] },
            }
        );
        let many = SyncEdge {
            holder: "products".into(),
            copy: CopySpec::new(
                "parts",
                "parts",
                "Part",
                &["name"],
                SyncStrategy::Reconcile,
                CopyShape::Many,
            ),
        };
        let fan_out = FanOut::new(&many, &doc! { "_id": "p1", "name": "Wheel" })
            .unwrap()
            .when(
                "parts",
                CopyShape::Many,
                doc! { "name": { "$eq": "Wheeel" } },
            );
        assert_eq!(
            fan_out.array_filters,
            Some(vec![
                doc! { "copy._id": "p1", "copy.name": { "$eq": "Wheeel" } }
            ])
        );
    }
}
