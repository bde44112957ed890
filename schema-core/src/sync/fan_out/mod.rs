//! The fan-out update shared by every strategy: the `updateMany` that brings the copies of one
//! source document in line with it, written in chunks of at most [`FAN_OUT_CHUNK`] holders
//! (one transaction each, in holder `_id` order), and, when one holder of a chunk cannot take
//! it, that chunk's holders one by one so that every other holder still converges. The sync
//! worker's fan-outs record where they got to ([`progress`]), so a pass cut short resumes.

pub(crate) mod progress;

use futures_util::TryStreamExt;
use mongodb::action::Action as _;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::UpdateOptions;
use mongodb::{ClientSession, Database};
use tracing::Instrument;

use super::failures::{Failure, FailureLog};
use super::fence::{fenced_off, is_fenced_off, transact, Fence, Fenced};
use super::get_path;
use super::retry::ErrorClass;
use super::walk::{spanning, walk_matching, Visit};
use crate::model::copy::{CopyShape, CopySpec, OnDelete, SyncEdge};
use crate::Result;
use progress::{Place, ProgressWrite};

/// The most holder documents that one fan-out, repair or refresh writes in one transaction. A
/// fan-out over more holders is cut into chunks of at most this many, in holder `_id` order,
/// each a transaction of its own (fenced for the sync worker), so no transaction nears mongod's
/// `transactionLifetimeLimitSeconds` (60 s) or its cache-pressure aborts, however many
/// documents copy one source.
pub const FAN_OUT_CHUNK: usize = 1000;

/// The `updateMany` that brings the copies of one source document in line with it. It filters
/// on the copied id alone, which the fan-out index serves (a negation such as `$ne` in the
/// filter keeps some planners off the index), and is idempotent: rewriting an equal value
/// changes nothing.
#[derive(Debug, Clone)]
pub(crate) struct FanOut {
    pub filter: BsonDocument,
    pub update: BsonDocument,
    pub array_filters: Option<Vec<BsonDocument>>,
    /// The holder documents it is restricted to (see [`FanOut::only`]).
    pub holders: Option<Vec<Bson>>,
    /// The whole copy as the source makes it (`{ _id, <copied fields> }`), for a conditional
    /// update through an array filter (see [`FanOut::when`]); `None` for a deletion.
    pub copy: Option<BsonDocument>,
    /// The collation it runs under on the holders: the simple one where their default is
    /// another (the copied id is compared exactly), else none (see [`SyncEdge`]).
    pub collation: Option<crate::Collation>,
}

/// What a fan-out did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FanOutOutcome {
    /// Holder documents changed.
    pub rewritten: u64,
    /// Holder documents that could not take the update (recorded).
    pub failed: u64,
    /// The writer's lease was taken over: what was not written yet was not (see
    /// [`Writer::Fenced`]).
    pub fenced_off: bool,
    /// It stopped at a chunk boundary because its [`Halt`] was raised (the worker is shutting
    /// down): the chunks before it committed (with their progress, for a fenced writer with an
    /// event), the holders after them were not written.
    pub cut_short: bool,
}

impl FanOutOutcome {
    /// A job that did not start: its worker was asked to stop first.
    pub(crate) fn stopped() -> FanOutOutcome {
        FanOutOutcome {
            cut_short: true,
            ..FanOutOutcome::default()
        }
    }
}

/// A worker's request to stop, as a fan-out watches it: once it reads `true`, the fan-out
/// starts no further chunk (the chunk in its transaction commits or aborts first) and returns
/// [`FanOutOutcome::cut_short`]. The worker's stop channel (see `SyncWorkerHandle::shutdown`).
pub(crate) type Halt = tokio::sync::watch::Receiver<bool>;

/// Whether `halt` was raised.
pub(crate) fn halted(halt: Option<&Halt>) -> bool {
    halt.is_some_and(|halt| *halt.borrow())
}

/// The error a walk of holders ends with when its fan-out was halted (never returned by
/// [`FanOut::run_resilient`], which reads it as [`FanOutOutcome::cut_short`]).
fn cut_short() -> crate::Error {
    crate::Error::worker(
        crate::error::WorkerStop::Ended,
        "the fan-out stopped at a chunk boundary: the worker is shutting down",
    )
}

/// How a fan-out's writes are sent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Writer<'f> {
    /// Each in a transaction of its own, with the removal of the failure records it clears.
    Transaction,
    /// Each in a transaction on `lane` that commits only while the writer holds its lease.
    Fenced {
        /// The writer's fence.
        fence: &'f Fence,
        /// The lane of this fan-out.
        lane: usize,
    },
}

impl FanOut {
    /// The update that copies `source`'s fields into every holder of `edge`: one `updateMany`
    /// on the copied id (`lines.product._id`, which the fan-out index serves) that rewrites,
    /// in an array of copies or inside arrays of embedded values, every element holding a
    /// copy of the source, with array filters (`lines.$[e0].product.name` where
    /// `e0.product._id` is the source's).
    pub(crate) fn new(edge: &SyncEdge, source: &BsonDocument) -> Option<FanOut> {
        let copy = &edge.copy;
        let id = source.get("_id")?.clone();
        let mut set = BsonDocument::new();
        let mut unset = BsonDocument::new();
        let mut whole = doc! { "_id": id.clone() };
        for field in &copy.fields {
            match get_path(source, field) {
                Some(value) => {
                    set.insert(copy.field_path(field), value.clone());
                    insert_path(&mut whole, field, value);
                }
                None => {
                    unset.insert(copy.field_path(field), "");
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
        let filters = copy.field_filters(&id);
        Some(FanOut {
            filter: doc! { copy.id_path(): id },
            update,
            array_filters: (!filters.is_empty()).then_some(filters),
            holders: None,
            copy: Some(whole),
            collation: edge.identities.clone(),
        })
    }

    /// What a deletion of source `id` does to the copies of `edge`: `None` for
    /// [`OnDelete::Keep`]; for [`OnDelete::Unset`] the copy set to `null` (an array of copies
    /// loses the deleted source's elements instead), in every element of the arrays of values
    /// it is inside that holds a copy of `id`.
    pub(crate) fn deleted(edge: &SyncEdge, id: &Bson) -> Option<FanOut> {
        if edge.copy.on_delete != OnDelete::Unset {
            return None;
        }
        let path = edge.copy.element_path();
        let update = match edge.copy.shape {
            CopyShape::Many => doc! { "$pull": { path: { "_id": id.clone() } } },
            _ => doc! { "$set": { path: Bson::Null } },
        };
        let filters = edge.copy.element_filters(id);
        Some(FanOut {
            filter: doc! { edge.copy.id_path(): id.clone() },
            update,
            array_filters: (!filters.is_empty()).then_some(filters),
            holders: None,
            copy: None,
            collation: edge.identities.clone(),
        })
    }

    /// The same update restricted to the holder documents `holders`.
    pub(crate) fn only(mut self, holders: Vec<Bson>) -> FanOut {
        self.filter.insert("_id", doc! { "$in": holders.clone() });
        self.holders = Some(holders);
        self
    }

    /// The same update restricted to one chunk of a walk of its holders: those between the
    /// first and the last of `holders` (which the walk visited in `_id` order), as ranges of
    /// the `_id` index ([`spanning`]). A range is one interval of the index on any planner,
    /// where a `$in` of a thousand ids is a thousand (and SecantusDB 0.7 evaluates a `$in`
    /// beside another predicate at a cost that grows with both).
    pub(crate) fn chunk(mut self, holders: Vec<Bson>) -> FanOut {
        for (key, condition) in spanning(&holders) {
            self.filter.insert(key, condition);
        }
        self.holders = Some(holders);
        self
    }

    /// The same update with extra conditions on the values of the copy, keyed by copied field
    /// (a repair that must not overwrite a copy rewritten since it was read). For an array of
    /// copies, or a copy inside arrays of values, they go into the innermost array filter, so
    /// only the elements still holding the values read are rewritten, and the copy is then set
    /// whole, one path: the filter picks each element once, before any of its fields changes,
    /// however a server applies the paths of one update (SecantusDB evaluates the array filters
    /// again for each path, after the earlier paths changed the element; mongod once).
    pub(crate) fn when(mut self, copy: &CopySpec, conditions: BsonDocument) -> FanOut {
        let (slot, prefix) = copy.condition_slot();
        let mut filtered = false;
        for (field, condition) in conditions {
            let key = format!("{prefix}.{field}");
            match (slot, &mut self.array_filters) {
                (Some(i), Some(filters)) if i < filters.len() => {
                    filters[i].insert(key, condition);
                    filtered = true;
                }
                _ => {
                    self.filter.insert(key, condition);
                }
            }
        }
        if let (true, Some(whole)) = (filtered, &self.copy) {
            let path = match copy.shape {
                CopyShape::Many => format!("{}.$[copy]", copy.element_path()),
                _ => copy.element_path(),
            };
            self.update = doc! { "$set": { path: whole.clone() } };
        }
        self
    }

    /// The `update` command, as sent.
    pub(crate) fn command(&self, holder: &str) -> BsonDocument {
        let mut update = doc! { "q": self.filter.clone(), "u": self.update.clone(), "multi": true };
        if let Some(filters) = &self.array_filters {
            update.insert("arrayFilters", filters.clone());
        }
        if let Some(collation) = &self.collation {
            update.insert("collation", collation.to_document());
        }
        doc! { "update": holder, "updates": [update] }
    }

    fn options(&self) -> Option<UpdateOptions> {
        let collation = self
            .collation
            .as_ref()
            .and_then(crate::Collation::to_driver);
        if self.array_filters.is_none() && collation.is_none() {
            return None;
        }
        let mut options = UpdateOptions::default();
        options.array_filters = self.array_filters.clone();
        options.collation = collation;
        Some(options)
    }

    /// Runs the `updateMany`; returns the holder documents changed. Any error ends it (inside a
    /// transaction that is what must happen: the transaction aborts).
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

    /// Runs the `updateMany` and removes the failure records of the holders it rewrote for this
    /// source, in one transaction (fenced when `writer` is); `None`: fenced off.
    async fn run_and_clear(
        &self,
        db: &Database,
        edge: &SyncEdge,
        source: &Bson,
        log: &FailureLog,
        writer: Writer<'_>,
        progress: Option<&ProgressWrite>,
    ) -> Result<Option<u64>> {
        let label = edge.label();
        let fence = match writer {
            Writer::Fenced { fence, lane } => Some((fence, lane)),
            Writer::Transaction => None,
        };
        let written = transact(db.client(), fence, |session| {
            let (this, db, holder, label, source, log, progress) = (
                self.clone(),
                db.clone(),
                edge.holder.clone(),
                label.clone(),
                source.clone(),
                log.clone(),
                progress.cloned(),
            );
            Box::pin(async move {
                let rewritten = this.run(&db, &holder, Some(&mut *session)).await?;
                log.clear(
                    &db,
                    &label,
                    &source,
                    this.holders.as_deref(),
                    Some(&mut *session),
                )
                .await?;
                if let Some(progress) = progress {
                    progress.run(session).await?;
                }
                Ok(rewritten)
            })
        })
        .await?;
        Ok(match written {
            Fenced::Committed(rewritten) => Some(rewritten),
            Fenced::FencedOff => None,
        })
    }

    /// Runs the fan-out through `writer` in chunks of at most [`FAN_OUT_CHUNK`] holder
    /// documents, each its own transaction (fenced when `writer` is): the holders it is
    /// restricted to ([`FanOut::only`]) a chunk at a time, or else every holder that matches,
    /// walked in `_id` order whatever the `_id` types ([`walk_matching`], which resumes after a
    /// break after the last chunk written). Stops at the first chunk that was fenced off.
    ///
    /// Each chunk is idempotent (it sets the source's current values), so a worker that
    /// resumes an event whose first chunks were written writes them again and changes nothing.
    /// With the `event` it applies (the change's resume token) and a fenced writer, the walk
    /// records where it got to and starts after the last holder a cut-short pass of the same
    /// change committed ([`progress`]).
    ///
    /// With a `halt` (the worker's stop), it looks at it before each chunk: once raised, no
    /// further chunk starts and it returns at once with [`FanOutOutcome::cut_short`] (the
    /// chunks before committed, their progress recorded; the record is kept for the next
    /// pass of the change). A chunk already in its transaction is not interrupted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn run_resilient(
        &self,
        db: &Database,
        edge: &SyncEdge,
        source: &Bson,
        log: &FailureLog,
        writer: Writer<'_>,
        event: Option<&Bson>,
        halt: Option<&Halt>,
    ) -> Result<FanOutOutcome> {
        let place = match (writer, event, &self.holders) {
            (Writer::Fenced { fence, .. }, Some(event), None) => {
                Some(fence.progress().place(&edge.label(), source, event.clone()))
            }
            _ => None,
        };
        let mut chunks = Chunks {
            fan_out: self,
            db,
            edge,
            source,
            log,
            writer,
            place: place.as_ref(),
            halt,
            outcome: FanOutOutcome::default(),
        };
        if let Some(holders) = &self.holders {
            for part in holders.chunks(FAN_OUT_CHUNK) {
                if halted(halt) {
                    chunks.outcome.cut_short = true;
                    break;
                }
                chunks.write(self.clone().only(part.to_vec()), None).await?;
                if chunks.outcome.fenced_off {
                    break;
                }
            }
            return Ok(chunks.outcome);
        }
        let collection = db.collection::<BsonDocument>(&edge.holder);
        let after = place.as_ref().and_then(Place::resume_after);
        if let Some(after) = &after {
            tracing::info!(copy = %edge.label(), %source, %after, "a fan-out cut short resumes after the last holder it committed");
        }
        let walked = walk_matching(
            &collection,
            self.filter.clone(),
            Some(doc! { "_id": 1 }),
            FAN_OUT_CHUNK,
            self.collation.as_ref(),
            after,
            &mut chunks,
        )
        .await;
        match walked {
            Ok(_) => {
                if let Some(place) = &place {
                    place.finished().await?;
                }
                Ok(chunks.outcome)
            }
            Err(error) if is_fenced_off(&error) => Ok(chunks.outcome),
            // halted at a chunk boundary: the record of the last chunk committed stays, for
            // the next pass of the same change to resume after it
            Err(_) if chunks.outcome.cut_short => Ok(chunks.outcome),
            Err(error) => Err(error),
        }
    }

    /// Runs the `updateMany` on the holders it is restricted to (one chunk) through `writer`;
    /// when it fails for one document (a holder its validator rejects, one that would exceed
    /// 16 MiB, ...), or the chunk's transaction could not commit on any attempt (a transaction
    /// the server aborts, as mongod does one that outlives `transactionLifetimeLimitSeconds` or
    /// puts the cache under pressure), rewrites the matching holders one by one, records each
    /// that fails on its own document in `log` and goes on, so every other holder converges.
    /// Each successful rewrite removes the failure records of its holders for this copy and
    /// source. Other errors (network, shutdown, ...) are returned.
    async fn run_chunk(
        &self,
        db: &Database,
        edge: &SyncEdge,
        source: &Bson,
        log: &FailureLog,
        writer: Writer<'_>,
        progress: Option<&ProgressWrite>,
    ) -> Result<FanOutOutcome> {
        let refused = FanOutOutcome {
            fenced_off: true,
            ..FanOutOutcome::default()
        };
        let several = self.holders.as_ref().is_none_or(|h| h.len() > 1);
        let error = match self
            .run_and_clear(db, edge, source, log, writer, progress)
            .await
        {
            Ok(Some(rewritten)) => {
                return Ok(FanOutOutcome {
                    rewritten,
                    ..FanOutOutcome::default()
                })
            }
            Ok(None) => return Ok(refused),
            Err(error) if ErrorClass::of(&error) == ErrorClass::PerDocument => error,
            Err(error) if several && error.contains_label(TRANSIENT_TRANSACTION) => error,
            Err(error) => return Err(error),
        };
        tracing::debug!(copy = %edge.label(), %error, "a fan-out chunk failed; rewriting its holders one by one");
        let holders: Vec<Bson> = db
            .collection::<BsonDocument>(&edge.holder)
            .find(self.filter.clone())
            .projection(doc! { "_id": 1 })
            .optional(
                self.collation
                    .as_ref()
                    .and_then(crate::Collation::to_driver),
                |find, c| find.collation(c),
            )
            .await?
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .filter_map(|h| h.get("_id").cloned())
            .collect();
        let mut outcome = FanOutOutcome::default();
        for holder in holders {
            // the copied id stays in the filter: a holder that meanwhile points elsewhere is
            // left alone
            let one = self.clone().only(vec![holder.clone()]);
            match one.run_and_clear(db, edge, source, log, writer, None).await {
                Ok(Some(rewritten)) => outcome.rewritten += rewritten,
                Ok(None) => {
                    return Ok(FanOutOutcome {
                        fenced_off: true,
                        ..outcome
                    })
                }
                Err(error) if ErrorClass::of(&error) == ErrorClass::PerDocument => {
                    tracing::error!(copy = %edge.label(), holder = %holder, source = %source, %error, "a holder cannot take its copy; recorded in the sync failures");
                    let failure = Failure::new(edge, holder, source.clone(), &error);
                    match writer {
                        Writer::Transaction => log.record(db, failure).await?,
                        // the record is a write of the worker like its copies: under the fence
                        Writer::Fenced { fence, lane } => {
                            if !log.record_fenced(db, failure, fence, lane).await? {
                                return Ok(FanOutOutcome {
                                    fenced_off: true,
                                    ..outcome
                                });
                            }
                        }
                    }
                    outcome.failed += 1;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(outcome)
    }
}

/// Sets `value` at the dotted `path` of `document`, creating the documents on the way.
fn insert_path(document: &mut BsonDocument, path: &str, value: Bson) {
    match path.split_once('.') {
        None => {
            document.insert(path, value);
        }
        Some((first, rest)) => {
            if !matches!(document.get(first), Some(Bson::Document(_))) {
                document.insert(first, BsonDocument::new());
            }
            if let Some(Bson::Document(inner)) = document.get_mut(first) {
                insert_path(inner, rest, value);
            }
        }
    }
}

const TRANSIENT_TRANSACTION: &str = "TransientTransactionError";

/// The chunks of one fan-out, written as a walk visits its holders.
struct Chunks<'a, 'w> {
    fan_out: &'a FanOut,
    db: &'a Database,
    edge: &'a SyncEdge,
    source: &'a Bson,
    log: &'a FailureLog,
    writer: Writer<'w>,
    /// Where a worker's fan-out records its progress.
    place: Option<&'a Place>,
    /// The worker's stop: no chunk starts once it is raised.
    halt: Option<&'a Halt>,
    outcome: FanOutOutcome,
}

impl Chunks<'_, '_> {
    /// Writes one chunk (at most [`FAN_OUT_CHUNK`] holders), with `progress` in its
    /// transaction, and adds up what it did.
    async fn write(&mut self, chunk: FanOut, progress: Option<ProgressWrite>) -> Result<()> {
        let copy = self.edge.label();
        let holders = chunk.holders.as_ref().map_or(0, Vec::len);
        let started = std::time::Instant::now();
        let done = chunk
            .run_chunk(
                self.db,
                self.edge,
                self.source,
                self.log,
                self.writer,
                progress.as_ref(),
            )
            .instrument(tracing::debug_span!("fan_out_chunk", copy = %copy, holders))
            .await?;
        super::metrics::chunk(&copy, started.elapsed());
        if let (Some(place), Some(progress)) = (self.place, &progress) {
            // a chunk rewritten holder by holder (its transaction failed) wrote no record, but
            // every holder of it was written or recorded as failed: this pass goes on after it
            if !done.fenced_off {
                place.committed(progress);
            }
        }
        self.outcome.rewritten += done.rewritten;
        self.outcome.failed += done.failed;
        self.outcome.fenced_off |= done.fenced_off;
        Ok(())
    }
}

impl Visit for Chunks<'_, '_> {
    /// One chunk of the walk; a chunk fenced off ends the walk (with [`fenced_off`]), and so
    /// does a raised halt before the chunk starts (with [`cut_short`]).
    async fn visit(&mut self, batch: &[BsonDocument]) -> Result<()> {
        if halted(self.halt) {
            self.outcome.cut_short = true;
            return Err(cut_short());
        }
        let holders: Vec<Bson> = batch.iter().filter_map(|h| h.get("_id").cloned()).collect();
        // a full chunk may have more after it: where the walk got to is recorded with it
        let progress = match (self.place, holders.last()) {
            (Some(place), Some(last)) if holders.len() >= FAN_OUT_CHUNK => {
                Some(place.write(last.clone()))
            }
            _ => None,
        };
        let chunk = self.fan_out.clone().chunk(holders);
        self.write(chunk, progress).await?;
        if self.outcome.fenced_off {
            return Err(fenced_off());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Collation, CollectionSpec, CopyShape, SyncStrategy};

    /// The copy `item` of a product in `orders`, whose default collation is `collation`.
    fn item_of(collation: Option<Collation>) -> SyncEdge {
        let copy = CopySpec::new(
            "item",
            "products",
            "Product",
            &["name"],
            SyncStrategy::Transactional,
            CopyShape::One,
        );
        let mut orders = CollectionSpec::new("orders", doc! {});
        if let Some(collation) = collation {
            orders = orders.collation(collation);
        }
        let orders = orders.copy(copy);
        SyncEdge {
            holder: "orders".into(),
            copy: orders.copies[0].clone(),
            reference: None,
            identities: Collation::for_identities(orders.collation.as_ref()),
        }
    }

    #[test]
    fn a_fan_out_on_a_collection_with_a_default_collation_states_the_simple_one() {
        let ci = Collation::new("en").strength(2);
        let edge = item_of(Some(ci.clone()));
        let source = doc! { "_id": "abc", "name": "Hex nut" };
        let fan_out = FanOut::new(&edge, &source).unwrap();
        let command = fan_out.command("orders");
        let statement = command.get_array("updates").unwrap()[0]
            .as_document()
            .unwrap()
            .clone();
        assert_eq!(
            statement.get_document("q").unwrap(),
            &doc! { "item._id": "abc" }
        );
        assert_eq!(
            statement.get_document("collation").unwrap(),
            &doc! { "locale": "simple" },
            "{command}"
        );
        let options = fan_out.options().unwrap();
        assert_eq!(
            options.collation.map(|c| c.locale),
            Some("simple".to_owned())
        );
        // a deletion's unset and a chunk of the walk: the same collation
        let deleted = FanOut::deleted(
            &SyncEdge {
                copy: CopySpec {
                    on_delete: crate::OnDelete::Unset,
                    ..edge.copy.clone()
                },
                ..edge.clone()
            },
            &Bson::String("abc".into()),
        )
        .unwrap();
        assert_eq!(deleted.collation, Some(Collation::simple()));
        let chunk = fan_out
            .clone()
            .chunk(vec![Bson::String("o1".into()), Bson::String("o9".into())]);
        assert_eq!(chunk.collation, Some(Collation::simple()));
        // the fan-out index of the holders has it too
        let spec = CollectionSpec::new("orders", doc! {})
            .collation(ci)
            .copy(edge.copy.clone());
        assert_eq!(spec.indexes[0].collation, Some(Collation::simple()));
    }

    #[test]
    fn a_fan_out_on_a_collection_without_a_default_collation_states_none() {
        let edge = item_of(None);
        let fan_out = FanOut::new(&edge, &doc! { "_id": "abc", "name": "Hex nut" }).unwrap();
        let command = fan_out.command("orders");
        let statement = command.get_array("updates").unwrap()[0]
            .as_document()
            .unwrap()
            .clone();
        assert!(!statement.contains_key("collation"), "{command}");
        assert!(fan_out.options().is_none());
        // an explicit simple default is no default
        let edge = item_of(Some(Collation::simple()));
        assert_eq!(edge.identities, None);
    }
}
