//! Reconcile: compare every copy with its source and repair the drifted ones. Each repair is
//! conditional on the copy value it read, so a copy rewritten meanwhile (by a transaction or
//! the worker) is left alone: a repair never goes back in time.

use std::collections::{HashMap, HashSet};
use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;

use super::failures::{self, FailureLog};
use super::fan_out::{FanOut, Halt, Writer};
use super::walk::{walk_by_id, Visit};
use super::{drifted, get_path, id_key, values_at};
use crate::model::copy::{OnDelete, SyncEdge, SyncStrategy};
use crate::query::fitting::SOURCE_CHUNK;
use crate::Result;

/// What a reconcile pass found and did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// One line per copy.
    pub edges: Vec<EdgeReconcile>,
    /// One line per subset: previews and counts compared with the children.
    pub subsets: Vec<crate::SubsetReconcile>,
    /// One line per part collection (`same_id_as`): its orphan parts, whose owner does not
    /// exist, and those the repair deleted.
    pub parts: Vec<PartReconcile>,
}

/// Reconcile figures of one part collection (`#[collection(same_id_as = Owner)]`): the parts
/// whose owner does not exist (an owner deleted by a path that left its part, or a part
/// written alone), which the repair deletes.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct PartReconcile {
    /// The part collection.
    pub part: String,
    /// The owners' collection.
    pub owner: String,
    /// Orphan parts found.
    pub orphans: u64,
    /// Orphan parts deleted (0 in a dry run). Fewer than `orphans` when an owner of that
    /// `_id` was written meanwhile (checked in the transaction that deletes them).
    pub deleted: u64,
}

impl fmt::Display for PartReconcile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (parts of `{}`): {} orphans, {} deleted",
            self.part, self.owner, self.orphans, self.deleted
        )
    }
}

/// Orphan parts deleted per transaction.
const ORPHAN_BATCH: i64 = 1000;

/// Finds the parts of `part` whose owner in `owner` does not exist and, unless `dry_run`,
/// deletes them: a batch at a time, each in a transaction that reads the owners of the batch
/// again and deletes only the parts still without one.
pub(crate) async fn reconcile_parts(
    db: &Database,
    part: &str,
    owner: &str,
    dry_run: bool,
) -> Result<PartReconcile> {
    let mut figures = PartReconcile {
        part: part.to_owned(),
        owner: owner.to_owned(),
        ..PartReconcile::default()
    };
    let parts = db.collection::<BsonDocument>(part);
    let orphans = |after: Option<Bson>| {
        let mut pipeline = Vec::new();
        if after.is_some() {
            // after the last orphan of the previous batch in the server's order, whatever the
            // types of the `_id`s
            pipeline.push(doc! { "$match": super::walk::rest_after(after.as_ref()) });
        }
        pipeline.extend([
            doc! { "$project": { "_id": 1 } },
            doc! { "$sort": { "_id": 1 } },
            doc! { "$lookup": {
                "from": owner,
                "localField": "_id",
                "foreignField": "_id",
                "pipeline": [{ "$project": { "_id": 1 } }],
                "as": "owner",
            } },
            doc! { "$match": { "owner": { "$size": 0 } } },
            doc! { "$limit": ORPHAN_BATCH },
        ]);
        pipeline
    };
    let mut after: Option<Bson> = None;
    loop {
        let batch: Vec<Bson> = parts
            .aggregate(orphans(after.clone()))
            .max_time(crate::concern::OPERATOR_TIME_LIMIT)
            .await?
            .try_collect::<Vec<BsonDocument>>()
            .await?
            .into_iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        let Some(last) = batch.last().cloned() else {
            break;
        };
        figures.orphans += batch.len() as u64;
        if !dry_run {
            let deadline = super::transaction::TRANSACTION_DEADLINE;
            let (deleted, _) = super::transaction::in_transaction(db, deadline, |session| {
                let (db, batch) = (db.clone(), batch.clone());
                let (part, owner) = (part.to_owned(), owner.to_owned());
                Box::pin(async move {
                    // an owner written since the read keeps its part
                    let owned: Vec<Bson> = db
                        .collection::<BsonDocument>(&owner)
                        .find(doc! { "_id": { "$in": batch.clone() } })
                        .projection(doc! { "_id": 1 })
                        .session(&mut *session)
                        .await?
                        .stream(&mut *session)
                        .try_collect::<Vec<BsonDocument>>()
                        .await?
                        .into_iter()
                        .filter_map(|d| d.get("_id").cloned())
                        .collect();
                    let owned: HashSet<String> = owned.iter().map(id_key).collect();
                    let alone: Vec<Bson> = batch
                        .into_iter()
                        .filter(|id| !owned.contains(&id_key(id)))
                        .collect();
                    if alone.is_empty() {
                        return Ok(0);
                    }
                    let deleted = db
                        .collection::<BsonDocument>(&part)
                        .delete_many(doc! { "_id": { "$in": alone } })
                        .session(&mut *session)
                        .await?;
                    Ok(deleted.deleted_count)
                })
            })
            .await?;
            figures.deleted += deleted;
        }
        if (batch.len() as i64) < ORPHAN_BATCH {
            break;
        }
        after = Some(last);
    }
    Ok(figures)
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
    /// Holders whose copy is missing while their reference points to an existing source: the
    /// copy field is absent or `null` (with a `#[reference]` to the source beside it), or holds
    /// the bare id of a reference the copy replaced. Counted in `drifted` too, and filled from
    /// the source by the repair.
    pub missing_copies: u64,
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
    /// All drifted copies, parents whose subset or count disagreed with their children, and
    /// orphan parts.
    pub fn drifted(&self) -> u64 {
        self.edges.iter().map(|e| e.drifted).sum::<u64>()
            + self.subsets.iter().map(|s| s.drifted).sum::<u64>()
            + self.orphan_parts()
    }

    /// All repaired holder documents (copies and subsets), and orphan parts deleted.
    pub fn repaired(&self) -> u64 {
        self.edges.iter().map(|e| e.repaired).sum::<u64>()
            + self.subsets.iter().map(|s| s.repaired).sum::<u64>()
            + self.parts.iter().map(|p| p.deleted).sum::<u64>()
    }

    /// All orphan parts found (parts whose owner does not exist).
    pub fn orphan_parts(&self) -> u64 {
        self.parts.iter().map(|p| p.orphans).sum()
    }

    /// All copies of a deleted source.
    pub fn missing_sources(&self) -> u64 {
        self.edges.iter().map(|e| e.missing_sources).sum()
    }

    /// All holders whose copy is missing while their source exists.
    pub fn missing_copies(&self) -> u64 {
        self.edges.iter().map(|e| e.missing_copies).sum()
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
            if edge.missing_copies > 0 {
                write!(f, ", {} missing copies", edge.missing_copies)?;
            }
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
        for part in &self.parts {
            writeln!(f, "{part}")?;
        }
        Ok(())
    }
}

/// Holders compared per batch (one `$in` per 1,000 of their sources, then the repairs).
const RECONCILE_BATCH: usize = 5000;

/// Compares every copy of `edges` with its source and (unless `dry_run`) rewrites the drifted
/// ones through `writer` (fenced when the worker reconciles). Frozen copies are never touched,
/// whatever the caller passes.
pub(crate) async fn reconcile(
    db: &Database,
    edges: &[&SyncEdge],
    dry_run: bool,
    log: &FailureLog,
    writer: Writer<'_>,
    halt: Option<&Halt>,
) -> Result<ReconcileReport> {
    let mut report = ReconcileReport::default();
    let total = edges
        .iter()
        .filter(|e| e.copy.strategy != SyncStrategy::Frozen)
        .count() as u64;
    for edge in edges
        .iter()
        .filter(|e| e.copy.strategy != SyncStrategy::Frozen)
    {
        let mut figures = EdgeReconcile {
            copy: edge.label(),
            strategy: Some(edge.copy.strategy),
            ..Default::default()
        };
        if !dry_run {
            log.refresh(db).await?;
        }
        let mut visitor = Compare {
            db,
            edge,
            dry_run,
            log,
            writer,
            halt,
            figures: &mut figures,
        };
        let holders = db.collection::<BsonDocument>(&edge.holder);
        let mut projection = doc! { edge.copy.path.as_str(): 1 };
        if let Some(reference) = &edge.reference {
            projection.insert(reference.as_str(), 1);
        }
        let resumed = walk_by_id(&holders, Some(projection), RECONCILE_BATCH, &mut visitor).await?;
        figures.resumed = resumed;
        figures.recorded_failures = failures::count(db, &figures.copy).await?;
        let done = format!(
            "{}: {} checked, {} drifted",
            figures.copy, figures.checked, figures.drifted
        );
        crate::progress::report(
            "reconcile",
            report.edges.len() as u64 + 1,
            Some(total),
            &done,
        );
        report.edges.push(figures);
    }
    Ok(report)
}

/// The holders of one copy, read as one stream in `_id` order (a [`walk_by_id`]: one `find`
/// and its `getMore`s, a walk of the `_id` index, and on SecantusDB one sort instead of one per
/// batch) and compared a batch at a time. When the stream breaks, or a batch's source lookups
/// or repairs fail, on a transient error, it is opened again after the last batch compared in
/// full, whatever the `_id` types of the holders. A batch cut short is compared again from its
/// start: its repairs are conditional on the values read, so none is applied twice, and its
/// figures count once (a repair done before the cut stays counted in `repaired`, and that
/// holder no longer counts as drifted).
struct Compare<'a, 'w> {
    db: &'a Database,
    edge: &'a SyncEdge,
    dry_run: bool,
    log: &'a FailureLog,
    writer: Writer<'w>,
    /// The worker's stop, for a first start's reconcile (cut between two batches).
    halt: Option<&'a Halt>,
    figures: &'a mut EdgeReconcile,
}

impl Visit for Compare<'_, '_> {
    /// Compares (and repairs) `batch`. Its figures are added when it was compared in full;
    /// when it was cut short only the repairs and failures it already made are (it is compared
    /// again).
    async fn visit(&mut self, batch: &[BsonDocument]) -> Result<()> {
        let mut part = EdgeReconcile::default();
        let outcome = reconcile_batch(
            self.db,
            self.edge,
            batch,
            self.dry_run,
            self.log,
            self.writer,
            self.halt,
            &mut part,
        )
        .await;
        self.figures.repaired += part.repaired;
        self.figures.failed += part.failed;
        outcome?;
        self.figures.checked += part.checked;
        self.figures.drifted += part.drifted;
        self.figures.missing_sources += part.missing_sources;
        self.figures.missing_copies += part.missing_copies;
        Ok(())
    }

    fn halted(&self) -> bool {
        super::fan_out::halted(self.halt)
    }
}

/// Whether a copied id is looked up by value in `$in`: not a regex, JavaScript or a document
/// with a `$` key (a composite id without one matches exactly).
fn looked_up(id: &Bson) -> bool {
    crate::literal::find_operator(id).is_none()
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

/// A holder whose copy is missing: its field is absent or `null` and its reference beside it
/// names a source, or the field holds that source's bare id (a reference the copy replaced).
/// Only for a copy of one outside arrays (an array of copies, or the copies in an array of
/// values, have no reference to fill them from).
struct Missing {
    holder: Bson,
    source: Bson,
    /// What the copy field held (`None`: absent).
    observed: Option<Bson>,
}

impl Missing {
    fn of(edge: &SyncEdge, holder_id: &Bson, holder: &BsonDocument) -> Option<Missing> {
        if edge.copy.shape == crate::CopyShape::Many || !edge.copy.arrays.is_empty() {
            return None;
        }
        let observed = get_path(holder, &edge.copy.path);
        let source = match &observed {
            Some(Bson::Document(_)) => return None,
            // a bare id where the copy belongs
            Some(value) if !matches!(value, Bson::Null) => value.clone(),
            // absent or null: the reference beside it says which source
            _ => get_path(holder, edge.reference.as_deref()?)?,
        };
        if matches!(source, Bson::Null | Bson::Array(_)) || !looked_up(&source) {
            return None;
        }
        Some(Missing {
            holder: holder_id.clone(),
            source,
            observed,
        })
    }
}

/// Drifted holders of one source, grouped by the copy value they hold (one conditional update
/// per group).
struct Repair<'a> {
    source: Option<&'a BsonDocument>,
    source_id: Bson,
    conditions: BsonDocument,
    holders: Vec<Bson>,
}

#[allow(clippy::too_many_arguments)]
async fn reconcile_batch(
    db: &Database,
    edge: &SyncEdge,
    batch: &[BsonDocument],
    dry_run: bool,
    log: &FailureLog,
    writer: Writer<'_>,
    halt: Option<&Halt>,
    figures: &mut EdgeReconcile,
) -> Result<()> {
    // every (holder, copy) pair of the batch, and the holders whose copy is missing
    let mut pairs: Vec<(Bson, BsonDocument)> = Vec::new();
    let mut missing: Vec<Missing> = Vec::new();
    for holder in batch {
        let Some(holder_id) = holder.get("_id") else {
            continue;
        };
        figures.checked += 1;
        if let Some(found) = Missing::of(edge, holder_id, holder) {
            missing.push(found);
            continue;
        }
        // each copy on its own: every element of an array of copies, or of the arrays of
        // values the copy is inside (`lines.product` of every line)
        let copies = values_at(holder, &edge.copy.path);
        for copy in copies.into_iter().filter_map(|c| c.as_document().cloned()) {
            pairs.push((holder_id.clone(), copy));
        }
    }
    // the sources, keyed by id (numbers compared by value); a regex id would match by pattern
    // inside `$in` and a document id could hold operators, so such copies are not looked up
    let mut ids: Vec<Bson> = Vec::new();
    let mut wanted: HashMap<String, ()> = HashMap::new();
    let copied_ids = pairs.iter().filter_map(|(_, copy)| copy.get("_id"));
    for id in copied_ids.chain(missing.iter().map(|m| &m.source)) {
        if !matches!(id, Bson::RegularExpression(_)) && wanted.insert(id_key(id), ()).is_none() {
            ids.push(id.clone());
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
    // the (holder, source) pairs found in sync: their failure records no longer hold
    let mut in_sync: HashSet<(String, String)> = HashSet::new();
    for (holder, copy) in &pairs {
        let Some(id) = copy.get("_id") else { continue };
        if !looked_up(id) {
            continue;
        }
        let source = sources.get(&id_key(id));
        match source {
            Some(source) if !drifted(&edge.copy.fields, copy, source) => {
                in_sync.insert((id_key(holder), id_key(id)));
                continue;
            }
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
    // missing copies whose source exists: filled from it, on condition that the field still
    // holds what was read
    let mut fills: Vec<(BsonDocument, BsonDocument, &BsonDocument, Bson)> = Vec::new();
    for gap in &missing {
        let Some(source) = sources.get(&id_key(&gap.source)) else {
            continue; // a reference to nothing: not a copy to fill
        };
        figures.missing_copies += 1;
        figures.drifted += 1;
        let mut copy = doc! { "_id": gap.source.clone() };
        for field in &edge.copy.fields {
            if let Some(value) = get_path(source, field) {
                copy.insert(field.as_str(), value);
            }
        }
        let observed = match &gap.observed {
            Some(value) => doc! { "$eq": value.clone() },
            None => doc! { "$exists": false },
        };
        fills.push((
            doc! { "_id": gap.holder.clone(), edge.copy.path.as_str(): observed },
            doc! { "$set": { edge.copy.path.as_str(): copy } },
            source,
            gap.holder.clone(),
        ));
    }
    if dry_run {
        return Ok(());
    }
    for (filter, update, source, holder) in fills {
        // fenced like the worker's other writes when the worker reconciles
        let fence = match writer {
            Writer::Fenced { fence, lane } => Some((fence, lane)),
            Writer::Transaction => None,
        };
        let filled = super::fence::transact(db.client(), fence, |session| {
            let (holders, filter, update) = (
                db.collection::<BsonDocument>(&edge.holder),
                filter.clone(),
                update.clone(),
            );
            Box::pin(async move {
                Ok(holders
                    .update_one(filter, update)
                    .session(&mut *session)
                    .await?
                    .modified_count)
            })
        })
        .await;
        match filled {
            Ok(super::fence::Fenced::Committed(modified)) => {
                figures.repaired += modified;
                // a rename meanwhile could not reach this holder (its fan-out filters on the
                // copy it did not have yet): read the source again and repeat
                reread_and_repeat(
                    db,
                    edge,
                    source,
                    std::slice::from_ref(&holder),
                    &projection,
                    log,
                    writer,
                    figures,
                )
                .await?;
            }
            Ok(super::fence::Fenced::FencedOff) => return Err(super::fence::fenced_off()),
            Err(error) => {
                if super::retry::ErrorClass::of(&error) != super::retry::ErrorClass::PerDocument {
                    return Err(error);
                }
                figures.failed += 1;
            }
        }
    }
    clear_in_sync(db, edge, log, &ids, &in_sync).await?;
    let recreated = recreated_sources(db, edge, &repairs).await?;
    for repair in repairs {
        let fan_out = match repair.source {
            Some(source) => {
                FanOut::new(edge, source).map(|f| f.when(&edge.copy, repair.conditions))
            }
            // a source recreated since it was looked up keeps its copies
            None if recreated.contains(&id_key(&repair.source_id)) => None,
            // a deleted source: the copy is unset while it still points at it
            None => FanOut::deleted(edge, &repair.source_id),
        };
        let Some(fan_out) = fan_out else { continue };
        let outcome = fan_out
            .only(repair.holders.clone())
            .run_resilient(db, edge, &repair.source_id, log, writer, None, halt)
            .await?;
        if outcome.fenced_off {
            return Err(super::fence::fenced_off());
        }
        figures.repaired += outcome.rewritten;
        figures.failed += outcome.failed;
        if outcome.cut_short {
            // stopped at a chunk boundary: the rest of the batch is the next pass's
            return Err(super::walk::halted_walk());
        }
        if let Some(source) = repair.source {
            reread_and_repeat(
                db,
                edge,
                source,
                &repair.holders,
                &projection,
                log,
                writer,
                figures,
            )
            .await?;
        }
    }
    Ok(())
}

/// Times a repair reads its source again after its write and repeats.
const REPAIR_REREADS: usize = 5;

/// A repair writes the source as it was read, on condition that the copy still holds what was
/// read; a change of the source meanwhile that comes back to the copy's old value (x, then y,
/// then x) passes that condition, and the repair would write the older value over a copy already
/// right. So after its write the repair reads the source again (at read concern `majority`) and,
/// while it differs from what was written, writes it again, on condition that the copy holds
/// what this repair wrote: the copy ends equal to the source as it was after the repair (a
/// bounded number of times; a source changing faster is the worker's or the next pass's).
#[allow(clippy::too_many_arguments)]
async fn reread_and_repeat(
    db: &Database,
    edge: &SyncEdge,
    source: &BsonDocument,
    holders: &[Bson],
    projection: &BsonDocument,
    log: &FailureLog,
    writer: Writer<'_>,
    figures: &mut EdgeReconcile,
) -> Result<()> {
    let Some(id) = source.get("_id") else {
        return Ok(());
    };
    let mut written = source.clone();
    for _ in 0..REPAIR_REREADS {
        let now = db
            .collection::<BsonDocument>(&edge.copy.source)
            .find_one(doc! { "_id": id.clone() })
            .projection(projection.clone())
            .await?;
        // deleted since: its copies are the deletion's (the worker's, or the next pass's)
        let Some(now) = now else { return Ok(()) };
        if !drifted(&edge.copy.fields, &written, &now) {
            return Ok(());
        }
        let Some(again) = FanOut::new(edge, &now) else {
            return Ok(());
        };
        let outcome = again
            .when(&edge.copy, unchanged(edge, &written))
            .only(holders.to_vec())
            .run_resilient(db, edge, id, log, writer, None, None)
            .await?;
        if outcome.fenced_off {
            return Err(super::fence::fenced_off());
        }
        figures.failed += outcome.failed;
        written = now;
    }
    Ok(())
}

/// The sources of the deletion repairs in `repairs` that exist again: looked up once more just
/// before the repairs, so a source recreated with the same `_id` since the batch's lookup keeps
/// its copies. (What remains is the time between this lookup and the repair's update, one
/// round trip: mongod has no write conflict on a document that does not exist.)
async fn recreated_sources(
    db: &Database,
    edge: &SyncEdge,
    repairs: &[Repair<'_>],
) -> Result<HashSet<String>> {
    let deleted: Vec<Bson> = repairs
        .iter()
        .filter(|r| r.source.is_none())
        .map(|r| r.source_id.clone())
        .collect();
    let mut recreated = HashSet::new();
    for chunk in deleted.chunks(SOURCE_CHUNK) {
        let found: Vec<BsonDocument> = db
            .collection::<BsonDocument>(&edge.copy.source)
            .find(doc! { "_id": { "$in": chunk } })
            .projection(doc! { "_id": 1 })
            .await?
            .try_collect()
            .await?;
        recreated.extend(found.iter().filter_map(|s| Some(id_key(s.get("_id")?))));
    }
    Ok(recreated)
}

/// Removes the failure records of the (holder, source) pairs of this batch whose copy agrees
/// with its source (someone mended the holder, or rewrote it since): one `find` of this copy's
/// records for the batch's sources, when any record may exist.
async fn clear_in_sync(
    db: &Database,
    edge: &SyncEdge,
    log: &FailureLog,
    sources: &[Bson],
    in_sync: &HashSet<(String, String)>,
) -> Result<()> {
    if in_sync.is_empty() || !log.may_exist() {
        return Ok(());
    }
    let label = edge.label();
    let mut stale = Vec::new();
    for chunk in sources.chunks(SOURCE_CHUNK) {
        let records: Vec<BsonDocument> = db
            .collection::<BsonDocument>(failures::FAILURES_COLLECTION)
            .find(doc! { "copy": &label, "source": { "$in": chunk } })
            .projection(doc! { "holder": 1, "source": 1 })
            .await?
            .try_collect()
            .await?;
        for record in records {
            let (Some(id), Some(holder), Some(source)) = (
                record.get("_id"),
                record.get("holder"),
                record.get("source"),
            ) else {
                continue;
            };
            if in_sync.contains(&(id_key(holder), id_key(source))) {
                stale.push(id.clone());
            }
        }
    }
    log.clear_ids(db, stale).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CopyShape, CopySpec};

    #[test]
    fn a_repair_is_conditional_on_the_value_it_read() {
        let edge = SyncEdge {
            reference: None,
            identities: None,
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
            .when(&edge.copy, conditions.clone())
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
            reference: None,
            identities: None,
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
            .when(&many.copy, doc! { "name": { "$eq": "Wheeel" } });
        assert_eq!(
            fan_out.array_filters,
            Some(vec![
                doc! { "copy._id": "p1", "copy.name": { "$eq": "Wheeel" } }
            ])
        );
        assert_eq!(
            fan_out.update,
            doc! { "$set": { "parts.$[copy]": { "_id": "p1", "name": "Wheel" } } }
        );
    }

    /// The copy `lines.product` of every order line, as the derives declare it.
    fn line_product() -> SyncEdge {
        let line = crate::CollectionSpec::new("", doc! {}).copy(CopySpec::new(
            "product",
            "products",
            "Product",
            &["name"],
            SyncStrategy::Reconcile,
            CopyShape::One,
        ));
        let orders =
            crate::CollectionSpec::new("orders", doc! {}).embedded("lines", Some(line.in_array()));
        SyncEdge {
            reference: None,
            identities: None,
            holder: "orders".into(),
            copy: orders.copies[0].clone(),
        }
    }

    #[test]
    fn a_repair_inside_an_array_of_values_rewrites_only_the_elements_still_as_read() {
        let edge = line_product();
        assert_eq!(edge.copy.path, "lines.product");
        assert_eq!(edge.copy.arrays, ["lines"]);
        assert_eq!(edge.copy.within.as_deref(), Some("lines[]"));
        let fan_out = FanOut::new(&edge, &doc! { "_id": "bolt", "name": "Hex bolt" })
            .unwrap()
            .when(&edge.copy, doc! { "name": { "$eq": "Blot" } });
        assert_eq!(fan_out.filter, doc! { "lines.product._id": "bolt" });
        // set whole: the filter picks the element once, before any of its fields changes
        assert_eq!(
            fan_out.update,
            doc! { "$set": { "lines.$[e0].product": { "_id": "bolt", "name": "Hex bolt" } } }
        );
        // without conditions (the fan-out of a change), field by field
        let plain = FanOut::new(&edge, &doc! { "_id": "bolt", "name": "Hex bolt" }).unwrap();
        assert_eq!(
            plain.update,
            doc! { "$set": { "lines.$[e0].product.name": "Hex bolt" } }
        );
        assert_eq!(
            plain.array_filters,
            Some(vec![doc! { "e0.product._id": "bolt" }])
        );
        assert_eq!(
            fan_out.array_filters,
            Some(vec![
                doc! { "e0.product._id": "bolt", "e0.product.name": { "$eq": "Blot" } }
            ])
        );
    }
}
