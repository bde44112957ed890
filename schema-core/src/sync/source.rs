//! The `transactional` strategy: a source and its transactional copies change, or go, in one
//! multi-document transaction.

use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Database};
use serde::Serialize;

use super::fan_out::FanOut;
use super::touches;
use super::transaction::in_transaction_or;
use crate::model::copy::{SyncEdge, SyncStrategy};
use crate::{Document, Result, ResultExt};

/// What [`crate::Schema::update_source`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SourceUpdate {
    /// The source document after the update (`None`: no document had that id).
    pub source: Option<BsonDocument>,
    /// Holder documents rewritten, per `holder.path`.
    pub copies_rewritten: Vec<(String, u64)>,
    /// The `async` copies (`holder.path`) that the update changes and that the sync worker
    /// rewrites after the commit, not this call: nothing of them is in
    /// [`SourceUpdate::copies_rewritten`]. Empty when no source was found.
    pub pending_async: Vec<String>,
    /// Transaction attempts (more than 1 after transient conflicts).
    pub attempts: u32,
}

impl SourceUpdate {
    /// All holder documents rewritten.
    pub fn total_rewritten(&self) -> u64 {
        self.copies_rewritten.iter().map(|(_, n)| n).sum()
    }
}

/// What [`crate::Schema::delete_source`] did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SourceDelete {
    /// The deleted source document (`None`: no document had that id).
    pub source: Option<BsonDocument>,
    /// Holder documents whose transactional copy was unset (`on_delete = "unset"`), per
    /// `holder.path`. Copies with `on_delete = "keep"` keep their last values; `async` copies
    /// are unset by the sync worker.
    pub copies_unset: Vec<(String, u64)>,
    /// The parts deleted with the source (`#[collection(same_id_as = Source)]`), per part
    /// collection: 1 or 0 each.
    pub parts_deleted: Vec<(String, u64)>,
    /// Transaction attempts.
    pub attempts: u32,
}

impl SourceDelete {
    /// All holder documents whose copy was unset.
    pub fn total_unset(&self) -> u64 {
        self.copies_unset.iter().map(|(_, n)| n).sum()
    }
}

fn transactional_edges(graph: &crate::SyncGraph, source: &str) -> Vec<SyncEdge> {
    graph
        .copies_of(source)
        .filter(|e| e.copy.strategy == SyncStrategy::Transactional)
        .cloned()
        .collect()
}

/// The top-level paths an update document writes; `None` when it is not an operator document
/// (a replacement may change anything).
fn written_paths(update: &BsonDocument) -> Option<Vec<String>> {
    let mut paths = Vec::new();
    for (operator, arguments) in update {
        if !operator.starts_with('$') {
            return None;
        }
        let Bson::Document(arguments) = arguments else {
            return None;
        };
        for (path, value) in arguments {
            paths.push(path.clone());
            if operator == "$rename" {
                if let Bson::String(to) = value {
                    paths.push(to.clone());
                }
            }
        }
    }
    Some(paths)
}

/// The transactional copies of `source` that `update` can change: known from the update
/// document itself (a replacement may change any), so the transaction is one findAndModify, one
/// updateMany per copy it touches, and the commit.
pub(crate) fn touched_edges(
    graph: &crate::SyncGraph,
    source: &str,
    update: &BsonDocument,
) -> Vec<SyncEdge> {
    touched(transactional_edges(graph, source), update)
}

/// The edges of `edges` whose copied fields `update` can change.
fn touched(edges: Vec<SyncEdge>, update: &BsonDocument) -> Vec<SyncEdge> {
    let written = written_paths(update);
    edges
        .into_iter()
        .filter(|edge| match &written {
            Some(paths) => touches(paths.iter().map(String::as_str), &edge.copy.fields),
            None => true,
        })
        .collect()
}

/// The `async` copies of `source` that `update` can change (the worker's, after the commit).
pub(crate) fn pending_async(
    graph: &crate::SyncGraph,
    source: &str,
    update: &BsonDocument,
) -> Vec<String> {
    let edges = graph
        .copies_of(source)
        .filter(|e| e.copy.strategy == SyncStrategy::Async)
        .cloned()
        .collect();
    touched(edges, update).iter().map(SyncEdge::label).collect()
}

/// [`crate::Schema::update_source`]: the source's update and its transactional copies'
/// fan-outs in one transaction. Await it; with [`session`](UpdateSource::session) it runs
/// inside the caller's transaction.
#[must_use = "nothing is written until the action is awaited"]
pub struct UpdateSource<'a> {
    db: &'a Database,
    deadline: Duration,
    collection: &'static str,
    /// The stored id, or why it could not be prepared.
    id: Result<Bson>,
    update: BsonDocument,
    edges: Vec<SyncEdge>,
    pending: Vec<String>,
    untouched: Vec<String>,
    session: Option<&'a mut ClientSession>,
}

impl<'a> UpdateSource<'a> {
    pub(crate) fn new<T: Document>(
        db: &'a Database,
        graph: &crate::SyncGraph,
        deadline: Duration,
        id: &T::Id,
        update: BsonDocument,
    ) -> Self
    where
        T::Id: Serialize,
    {
        let id = crate::model::document::stored_id::<T>(id)
            .map_err(|e| mongodb::error::Error::from(e).into());
        let edges = touched_edges(graph, T::COLLECTION, &update);
        let pending = pending_async(graph, T::COLLECTION, &update);
        let untouched: Vec<String> = transactional_edges(graph, T::COLLECTION)
            .iter()
            .filter(|e| !edges.contains(e))
            .map(SyncEdge::label)
            .collect();
        UpdateSource {
            db,
            deadline,
            collection: T::COLLECTION,
            id,
            update,
            edges,
            pending,
            untouched,
            session: None,
        }
    }

    /// Runs inside `session`'s transaction instead of one of the library's own: the source's
    /// update and every fan-out of its transactional copies commit or abort with the caller's
    /// writes (the caller owns the commit, the abort and the retry; a transient error comes
    /// back with its labels). Start the transaction first: in a session without one the
    /// writes are sent one by one, not atomically. [`SourceUpdate::attempts`] is then `1`.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a> std::future::IntoFuture for UpdateSource<'a> {
    type Output = Result<SourceUpdate>;
    type IntoFuture = BoxFuture<'a, Result<SourceUpdate>>;

    /// Sends the update and the fan-outs.
    ///
    /// # Errors
    ///
    /// An id that does not serialize ([`crate::Error::Serialization`], nothing sent), the
    /// driver's errors ([`crate::Error::Validation`] of the source or of a holder), and without
    /// a session the library's transaction's [`crate::Error::Timeout`] and
    /// [`crate::Error::CommitUnknown`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let id = self.id?;
            let (db, collection, update, edges) =
                (self.db, self.collection, self.update, self.edges);
            let (mut report, attempts) =
                in_transaction_or(db, self.deadline, self.session, |session| {
                    let (db, id, update, edges) =
                        (db.clone(), id.clone(), update.clone(), edges.clone());
                    Box::pin(async move {
                        let (source, copies_rewritten) =
                            update_source_in(&db, collection, id, update, &edges, session).await?;
                        Ok(SourceUpdate {
                            source,
                            copies_rewritten,
                            pending_async: Vec::new(),
                            attempts: 0,
                        })
                    })
                })
                .await?;
            if report.source.is_some() {
                report
                    .copies_rewritten
                    .extend(self.untouched.into_iter().map(|label| (label, 0)));
                report.pending_async = self.pending;
            }
            report.attempts = attempts;
            Ok(report)
        })
    }
}

/// The writes of `update_source` in `session`: the source's update (returning it as updated),
/// then one fan-out per transactional copy in `edges`. Returns the source (`None`: no document
/// had that id) and the holders rewritten per copy. Shared with [`crate::Transaction`].
pub(crate) async fn update_source_in(
    db: &Database,
    collection: &str,
    id: Bson,
    update: BsonDocument,
    edges: &[SyncEdge],
    session: &mut mongodb::ClientSession,
) -> Result<(Option<BsonDocument>, Vec<(String, u64)>)> {
    let source = db
        .collection::<BsonDocument>(collection)
        .find_one_and_update(doc! { "_id": id }, update)
        .return_document(ReturnDocument::After)
        .session(&mut *session)
        .await
        .in_collection(collection)?;
    let mut copies_rewritten = Vec::new();
    if let Some(source) = &source {
        for edge in edges {
            if let Some(fan_out) = FanOut::new(edge, source) {
                let n = fan_out.run(db, &edge.holder, Some(&mut *session)).await?;
                copies_rewritten.push((edge.label(), n));
            }
        }
    }
    Ok((source, copies_rewritten))
}

/// [`crate::Schema::delete_source`]: the source's delete, its parts' deletes and its
/// transactional copies' `on_delete` in one transaction. Await it; with [`session`](DeleteSource::session) it runs
/// inside the caller's transaction.
#[must_use = "nothing is written until the action is awaited"]
pub struct DeleteSource<'a> {
    db: &'a Database,
    deadline: Duration,
    collection: &'static str,
    id: Result<Bson>,
    edges: Vec<SyncEdge>,
    /// The collections of the source's parts (`same_id_as`), deleted by the same `_id`.
    parts: Vec<String>,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DeleteSource<'a> {
    pub(crate) fn new<T: Document>(
        db: &'a Database,
        graph: &crate::SyncGraph,
        deadline: Duration,
        id: &T::Id,
        parts: Vec<String>,
    ) -> Self
    where
        T::Id: Serialize,
    {
        DeleteSource {
            db,
            deadline,
            collection: T::COLLECTION,
            id: crate::model::document::stored_id::<T>(id)
                .map_err(|e| mongodb::error::Error::from(e).into()),
            edges: transactional_edges(graph, T::COLLECTION),
            parts,
            session: None,
        }
    }

    /// Runs inside `session`'s transaction instead of one of the library's own: the delete and
    /// the unset copies commit or abort with the caller's writes (the caller owns the commit,
    /// the abort and the retry). Start the transaction first: in a session without one the
    /// writes are sent one by one, not atomically.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a> std::future::IntoFuture for DeleteSource<'a> {
    type Output = Result<SourceDelete>;
    type IntoFuture = BoxFuture<'a, Result<SourceDelete>>;

    /// Sends the delete and the fan-outs.
    ///
    /// # Errors
    ///
    /// An id that does not serialize ([`crate::Error::Serialization`], nothing sent), the
    /// driver's errors, and without a session the library's transaction's
    /// [`crate::Error::Timeout`] and [`crate::Error::CommitUnknown`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let id = self.id?;
            let (db, collection, edges, parts) = (self.db, self.collection, self.edges, self.parts);
            let (mut report, attempts) =
                in_transaction_or(db, self.deadline, self.session, |session| {
                    let (db, id, edges, parts) =
                        (db.clone(), id.clone(), edges.clone(), parts.clone());
                    Box::pin(async move {
                        let source = db
                            .collection::<BsonDocument>(collection)
                            .find_one_and_delete(doc! { "_id": id.clone() })
                            .session(&mut *session)
                            .await?;
                        let mut copies_unset = Vec::new();
                        if source.is_some() {
                            for edge in &edges {
                                if let Some(fan_out) = FanOut::deleted(edge, &id) {
                                    let n =
                                        fan_out.run(&db, &edge.holder, Some(&mut *session)).await?;
                                    copies_unset.push((edge.label(), n));
                                }
                            }
                        }
                        // the parts go with their owner, and an orphan part with the id
                        let mut parts_deleted = Vec::new();
                        for part in &parts {
                            let deleted = db
                                .collection::<BsonDocument>(part)
                                .delete_one(doc! { "_id": id.clone() })
                                .session(&mut *session)
                                .await?;
                            parts_deleted.push((part.clone(), deleted.deleted_count));
                        }
                        Ok(SourceDelete {
                            source,
                            copies_unset,
                            parts_deleted,
                            attempts: 0,
                        })
                    })
                })
                .await?;
            report.attempts = attempts;
            Ok(report)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::written_paths;
    use mongodb::bson::doc;

    #[test]
    fn the_paths_an_update_writes_are_read_from_its_operators() {
        assert_eq!(
            written_paths(
                &doc! { "$set": { "name": "x", "address.city": "y" }, "$inc": { "n": 1 } }
            ),
            Some(vec!["name".into(), "address.city".into(), "n".into()])
        );
        assert_eq!(
            written_paths(&doc! { "$rename": { "nick": "name" } }),
            Some(vec!["nick".into(), "name".into()])
        );
        assert_eq!(written_paths(&doc! { "name": "a replacement" }), None);
    }
}
