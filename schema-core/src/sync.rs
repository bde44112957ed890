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

/// The `updateMany` that brings the copies of one source document in line with it, matching
/// only the holders whose copy differs (so the count of matched documents is the drift).
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
        let mut differs = Vec::new();
        for field in &copy.fields {
            match get_path(source, field) {
                Some(value) => {
                    set.insert(target(field), value.clone());
                    differs.push(doc! { field.as_str(): { "$ne": value } });
                }
                None => {
                    unset.insert(target(field), "");
                    differs.push(doc! { field.as_str(): { "$exists": true } });
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
        let element = doc! { "_id": id.clone(), "$or": differs };
        let filter = if many {
            doc! { copy.path.as_str(): { "$elemMatch": element } }
        } else {
            let mut filter = doc! { copy.id_path(): id.clone() };
            let prefixed: Vec<Bson> = element
                .get_array("$or")
                .expect("built above")
                .iter()
                .filter_map(Bson::as_document)
                .map(|d| {
                    let (field, cond) = d.iter().next().expect("one key");
                    Bson::Document(doc! { format!("{}.{field}", copy.path): cond.clone() })
                })
                .collect();
            filter.insert("$or", prefixed);
            filter
        };
        Some(FanOut {
            filter,
            update,
            array_filters: many.then(|| vec![doc! { "copy._id": id }]),
        })
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
            let source = db
                .collection::<BsonDocument>(T::COLLECTION)
                .find_one_and_update(doc! { "_id": id }, update)
                .return_document(ReturnDocument::After)
                .session(&mut *session)
                .await?;
            let mut copies_rewritten = Vec::new();
            if let Some(source) = &source {
                for edge in &edges {
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

const RECONCILE_BATCH: usize = 500;

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
        let id_path = edge.copy.id_path();
        let holders = db.collection::<BsonDocument>(&edge.holder);
        let mut cursor = holders
            .find(doc! { id_path.as_str(): { "$exists": true } })
            .projection(doc! { edge.copy.path.as_str(): 1 })
            .await?;
        let mut ids: Vec<Bson> = Vec::new();
        loop {
            let next = cursor.try_next().await?;
            if let Some(holder) = &next {
                figures.checked += 1;
                let copies = match get_path(holder, &edge.copy.path) {
                    Some(Bson::Array(items)) => items,
                    Some(one) => vec![one],
                    None => Vec::new(),
                };
                for copy in copies {
                    if let Some(id) = copy.as_document().and_then(|c| c.get("_id")) {
                        if !ids.contains(id) {
                            ids.push(id.clone());
                        }
                    }
                }
            }
            if ids.len() >= RECONCILE_BATCH || (next.is_none() && !ids.is_empty()) {
                reconcile_batch(db, edge, std::mem::take(&mut ids), dry_run, &mut figures).await?;
            }
            if next.is_none() {
                break;
            }
        }
        report.edges.push(figures);
    }
    Ok(report)
}

async fn reconcile_batch(
    db: &Database,
    edge: &SyncEdge,
    ids: Vec<Bson>,
    dry_run: bool,
    figures: &mut EdgeReconcile,
) -> Result<()> {
    let sources: Vec<BsonDocument> = db
        .collection::<BsonDocument>(&edge.copy.source)
        .find(doc! { "_id": { "$in": ids.clone() } })
        .await?
        .try_collect()
        .await?;
    figures.missing_sources += (ids.len() - sources.len()) as u64;
    for source in &sources {
        let Some(fan_out) = FanOut::new(edge, source) else {
            continue;
        };
        let drifted = db
            .collection::<BsonDocument>(&edge.holder)
            .count_documents(fan_out.filter.clone())
            .await?;
        figures.drifted += drifted;
        if drifted > 0 && !dry_run {
            figures.repaired += fan_out.run(db, &edge.holder, None).await?;
        }
    }
    Ok(())
}
