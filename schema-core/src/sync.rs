//! Carrying out the sync strategies: the transactional writer, the fan-out update shared by
//! every strategy, and reconcile. The change-stream worker is in `worker.rs`.

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::{ReturnDocument, UpdateOptions};
use mongodb::{ClientSession, Database};
use serde::Serialize;

use crate::copy::{CopyShape, SyncEdge, SyncStrategy};
use crate::transaction::in_transaction;
use crate::{Document, Result};

/// The value at a dotted path of a document.
pub(crate) fn get_path(doc: &BsonDocument, path: &str) -> Option<Bson> {
    let mut current = doc.get(path.split('.').next()?)?.clone();
    for segment in path.split('.').skip(1) {
        current = current.as_document()?.get(segment)?.clone();
    }
    Some(current)
}

/// The `updateMany` that brings the copies of one source document in line with it. It filters
/// on the copied id alone, which the fan-out index serves (a negation such as `$ne` in the
/// filter keeps some planners off the index), and is idempotent: rewriting an equal value
/// changes nothing.
pub(crate) struct FanOut {
    pub filter: BsonDocument,
    pub update: BsonDocument,
    pub array_filters: Option<Vec<BsonDocument>>,
}

impl FanOut {
    pub(crate) fn new(edge: &SyncEdge, source: &BsonDocument) -> Option<FanOut> {
        let copy = &edge.copy;
        let id = source.get("_id")?.clone();
        let many = copy.shape == CopyShape::Many;
        let target = |field: &str| {
            if many {
                format!("{}.$[copy].{field}", copy.path)
            } else {
                format!("{}.{field}", copy.path)
            }
        };
        let mut set = BsonDocument::new();
        let mut unset = BsonDocument::new();
        for field in &copy.fields {
            match get_path(source, field) {
                Some(value) => {
                    set.insert(target(field), value);
                }
                None => {
                    unset.insert(target(field), "");
                }
            }
        }
        let mut update = BsonDocument::new();
        if !set.is_empty() {
            update.insert("$set", set);
        }
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        Some(FanOut {
            filter: doc! { copy.id_path(): id.clone() },
            update,
            array_filters: many.then(|| vec![doc! { "copy._id": id }]),
        })
    }

    /// The same update restricted to the holder documents `holders`.
    pub(crate) fn only(mut self, holders: Vec<Bson>) -> FanOut {
        self.filter.insert("_id", doc! { "$in": holders });
        self
    }

    pub(crate) fn command(&self, holder: &str) -> BsonDocument {
        let mut update = doc! { "q": self.filter.clone(), "u": self.update.clone(), "multi": true };
        if let Some(filters) = &self.array_filters {
            update.insert("arrayFilters", filters.clone());
        }
        doc! { "update": holder, "updates": [update] }
    }

    pub(crate) fn options(&self) -> Option<UpdateOptions> {
        self.array_filters
            .clone()
            .map(|filters| UpdateOptions::builder().array_filters(filters).build())
    }

    pub(crate) async fn run(
        &self,
        db: &Database,
        holder: &str,
        session: Option<&mut ClientSession>,
    ) -> Result<u64> {
        let collection = db.collection::<BsonDocument>(holder);
        let action = collection
            .update_many(self.filter.clone(), self.update.clone())
            .with_options(self.options());
        let result = match session {
            Some(session) => action.session(session).await?,
            None => action.await?,
        };
        Ok(result.modified_count)
    }
}

/// What [`crate::Schema::update_source`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SourceUpdate {
    /// The source document after the update (`None`: no document had that id).
    pub source: Option<BsonDocument>,
    /// Holder documents rewritten, per `holder.path`.
    pub copies_rewritten: Vec<(String, u64)>,
    /// Transaction attempts (more than 1 after transient conflicts).
    pub attempts: u32,
}

impl SourceUpdate {
    /// All holder documents rewritten.
    pub fn total_rewritten(&self) -> u64 {
        self.copies_rewritten.iter().map(|(_, n)| n).sum()
    }
}

pub(crate) async fn update_source<T: Document>(
    db: &Database,
    graph: &crate::SyncGraph,
    id: &T::Id,
    update: BsonDocument,
) -> Result<SourceUpdate>
where
    T::Id: Serialize,
{
    let id = mongodb::bson::to_bson(id).map_err(mongodb::error::Error::from)?;
    let edges: Vec<SyncEdge> = graph
        .copies_of(T::COLLECTION)
        .filter(|e| e.copy.strategy == SyncStrategy::Transactional)
        .cloned()
        .collect();
    let (mut report, attempts) = in_transaction(db, |session| {
        let (db, id, update, edges) = (db.clone(), id.clone(), update.clone(), edges.clone());
        Box::pin(async move {
            let sources = db.collection::<BsonDocument>(T::COLLECTION);
            let before = sources
                .find_one_and_update(doc! { "_id": id.clone() }, update)
                .return_document(ReturnDocument::Before)
                .session(&mut *session)
                .await?;
            let source = match before {
                Some(_) => {
                    sources
                        .find_one(doc! { "_id": id })
                        .session(&mut *session)
                        .await?
                }
                None => None,
            };
            let mut copies_rewritten = Vec::new();
            if let (Some(before), Some(source)) = (&before, &source) {
                for edge in &edges {
                    if !copied_fields_changed(&edge.copy.fields, before, source) {
                        copies_rewritten.push((format!("{}.{}", edge.holder, edge.copy.path), 0));
                        continue;
                    }
                    if let Some(fan_out) = FanOut::new(edge, source) {
                        let n = fan_out.run(&db, &edge.holder, Some(&mut *session)).await?;
                        copies_rewritten.push((format!("{}.{}", edge.holder, edge.copy.path), n));
                    }
                }
            }
            Ok(SourceUpdate {
                source,
                copies_rewritten,
                attempts: 0,
            })
        })
    })
    .await?;
    report.attempts = attempts;
    Ok(report)
}

/// What a reconcile pass found and did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// One line per copy.
    pub edges: Vec<EdgeReconcile>,
}

/// Reconcile figures of one copy (`holder.path`).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct EdgeReconcile {
    /// `holder.path`.
    pub copy: String,
    /// Its strategy.
    pub strategy: Option<SyncStrategy>,
    /// Holder documents holding a copy.
    pub checked: u64,
    /// Holder documents whose copy differed from its source.
    pub drifted: u64,
    /// Holder documents rewritten (0 in a dry run).
    pub repaired: u64,
    /// Copied ids whose source document does not exist.
    pub missing_sources: u64,
}

impl ReconcileReport {
    /// All drifted holder documents.
    pub fn drifted(&self) -> u64 {
        self.edges.iter().map(|e| e.drifted).sum()
    }

    /// All repaired holder documents.
    pub fn repaired(&self) -> u64 {
        self.edges.iter().map(|e| e.repaired).sum()
    }
}

impl fmt::Display for ReconcileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for edge in &self.edges {
            writeln!(
                f,
                "{} ({}): {} checked, {} drifted, {} repaired, {} missing sources",
                edge.copy,
                edge.strategy.map_or("?", SyncStrategy::as_str),
                edge.checked,
                edge.drifted,
                edge.repaired,
                edge.missing_sources
            )?;
        }
        Ok(())
    }
}

const RECONCILE_BATCH: i64 = 500;

/// Whether the copied fields of `copy` (one element of the holder's copy field) differ from
/// `source`.
fn drifted(fields: &[String], copy: &BsonDocument, source: &BsonDocument) -> bool {
    fields.iter().any(
        |field| match (get_path(copy, field), get_path(source, field)) {
            (Some(a), Some(b)) => !crate::json_schema::same(&a, &b),
            (None, None) => false,
            _ => true,
        },
    )
}

/// The copied fields changed between two versions of a source document.
pub(crate) fn copied_fields_changed(
    fields: &[String],
    before: &BsonDocument,
    after: &BsonDocument,
) -> bool {
    drifted(fields, before, after)
}

/// Compares every copy of `edges` with its source and (unless `dry_run`) rewrites the drifted
/// ones. Frozen copies are never touched, whatever the caller passes.
pub(crate) async fn reconcile(
    db: &Database,
    edges: &[&SyncEdge],
    dry_run: bool,
) -> Result<ReconcileReport> {
    let mut report = ReconcileReport::default();
    for edge in edges
        .iter()
        .filter(|e| e.copy.strategy != SyncStrategy::Frozen)
    {
        let mut figures = EdgeReconcile {
            copy: format!("{}.{}", edge.holder, edge.copy.path),
            strategy: Some(edge.copy.strategy),
            ..Default::default()
        };
        let holders = db.collection::<BsonDocument>(&edge.holder);
        // batches in `_id` order, continuing after the last one: the `_id` index serves them
        let mut after: Option<Bson> = None;
        loop {
            // `_id` alone in the filter, so the `_id` index serves every batch on any planner;
            // holders without a copy are skipped below
            let filter = match &after {
                Some(last) => doc! { "_id": { "$gt": last.clone() } },
                None => doc! {},
            };
            let batch: Vec<BsonDocument> = holders
                .find(filter)
                .projection(doc! { edge.copy.path.as_str(): 1 })
                .sort(doc! { "_id": 1 })
                .limit(RECONCILE_BATCH)
                .await?
                .try_collect()
                .await?;
            let Some(last) = batch.last() else { break };
            after = last.get("_id").cloned();
            reconcile_batch(db, edge, &batch, dry_run, &mut figures).await?;
        }
        report.edges.push(figures);
    }
    Ok(report)
}

async fn reconcile_batch(
    db: &Database,
    edge: &SyncEdge,
    batch: &[BsonDocument],
    dry_run: bool,
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
    let mut ids: Vec<Bson> = Vec::new();
    for (_, copy) in &pairs {
        if let Some(id) = copy.get("_id") {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
    }
    let sources: Vec<BsonDocument> = db
        .collection::<BsonDocument>(&edge.copy.source)
        .find(doc! { "_id": { "$in": ids.clone() } })
        .await?
        .try_collect()
        .await?;
    figures.missing_sources += (ids.len() - sources.len()) as u64;
    for source in &sources {
        let source_id = source.get("_id");
        let mut holders: Vec<Bson> = Vec::new();
        for (holder, copy) in &pairs {
            if copy.get("_id") == source_id
                && drifted(&edge.copy.fields, copy, source)
                && !holders.contains(holder)
            {
                holders.push(holder.clone());
            }
        }
        if holders.is_empty() {
            continue;
        }
        figures.drifted += holders.len() as u64;
        if !dry_run {
            if let Some(fan_out) = FanOut::new(edge, source) {
                figures.repaired += fan_out.only(holders).run(db, &edge.holder, None).await?;
            }
        }
    }
    Ok(())
}
