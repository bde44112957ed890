//! Walks over a collection in `_id` order that resume after a break, whatever the BSON types of
//! the `_id`s.
//!
//! A query `{ _id: { $gt: last } }` matches only `_id`s of `last`'s type bracket (mongod
//! compares values of different types only when sorting), so a walk resumed that way skips
//! every document whose `_id` is of a type sorted after it: documents written by other drivers
//! or tools can mix ObjectIds, strings and numbers in one collection. [`after_id`] matches
//! everything after `last` in the server's sort order: the rest of `last`'s bracket, then every
//! later bracket whole (a `$type`), each a range of the `_id` index.

use std::future::Future;
use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Collection;

use super::retry::{Backoff, ErrorClass};
use crate::{Error, Result};

/// Consecutive breaks of a walk, with no batch visited in between, before it gives up and
/// returns the error.
pub(crate) const WALK_RESUMES: u32 = 5;

/// The type brackets of the server's sort order that an `_id` can be in (an `_id` is never an
/// array, a regular expression or undefined), in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Bracket {
    MinKey,
    Null,
    Number,
    String,
    Object,
    Binary,
    ObjectId,
    Boolean,
    Date,
    Timestamp,
    MaxKey,
}

const BRACKETS: [Bracket; 11] = [
    Bracket::MinKey,
    Bracket::Null,
    Bracket::Number,
    Bracket::String,
    Bracket::Object,
    Bracket::Binary,
    Bracket::ObjectId,
    Bracket::Boolean,
    Bracket::Date,
    Bracket::Timestamp,
    Bracket::MaxKey,
];

impl Bracket {
    /// The bracket of `value`; `None` for types that sort elsewhere (JavaScript, DBPointer,
    /// ...) or cannot be an `_id`.
    fn of(value: &Bson) -> Option<Bracket> {
        Some(match value {
            Bson::MinKey => Bracket::MinKey,
            Bson::Null | Bson::Undefined => Bracket::Null,
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                Bracket::Number
            }
            Bson::String(_) | Bson::Symbol(_) => Bracket::String,
            Bson::Document(_) => Bracket::Object,
            Bson::Binary(_) => Bracket::Binary,
            Bson::ObjectId(_) => Bracket::ObjectId,
            Bson::Boolean(_) => Bracket::Boolean,
            Bson::DateTime(_) => Bracket::Date,
            Bson::Timestamp(_) => Bracket::Timestamp,
            Bson::MaxKey => Bracket::MaxKey,
            _ => return None,
        })
    }

    /// The filter on `_id` that matches every value of this bracket: a `$type`, which mongod
    /// turns into one range of the index (the type's smallest to its largest value, NaN
    /// included for numbers), without a literal at the edge of the type's range.
    fn whole(self) -> BsonDocument {
        let types: Bson = match self {
            Bracket::MinKey => "minKey".into(),
            Bracket::Null => "null".into(),
            Bracket::Number => "number".into(),
            Bracket::String => vec!["string", "symbol"].into(),
            Bracket::Object => "object".into(),
            Bracket::Binary => "binData".into(),
            Bracket::ObjectId => "objectId".into(),
            Bracket::Boolean => "bool".into(),
            Bracket::Date => "date".into(),
            Bracket::Timestamp => "timestamp".into(),
            Bracket::MaxKey => "maxKey".into(),
        };
        doc! { "_id": { "$type": types } }
    }
}

/// The filter that matches every document whose `_id` sorts after `last` in the server's
/// order, whatever its type: `{ $or: [{ _id: { $gt: last } }, <every later type bracket>] }`.
/// With a sort on `{ _id: 1 }` mongod serves it from the `_id` index (one range per branch,
/// merged in order).
pub(crate) fn after_id(last: &Bson) -> BsonDocument {
    let Some(bracket) = Bracket::of(last) else {
        // a type the sort order places elsewhere: the rest of its own bracket only
        return doc! { "_id": { "$gt": last.clone() } };
    };
    let mut branches = vec![doc! { "_id": { "$gt": last.clone() } }];
    if matches!(last, Bson::Double(f) if f.is_nan()) {
        // nothing is greater than NaN to the query language, every other number sorts after it
        branches.push(doc! { "_id": { "$gte": f64::NEG_INFINITY } });
    }
    branches.extend(BRACKETS.iter().filter(|b| **b > bracket).map(|b| b.whole()));
    doc! { "$or": branches }
}

/// The `_id` filter that matches, of the documents a walk visited as `ids` (in its order), the
/// span from the first to the last: one `{ $gte, $lte }` range per run of one type bracket
/// (ranges compare within a bracket only), `$or`ed when the batch crosses brackets; `$eq` for
/// a run of one or an `_id` of a type outside the brackets. Each range is one interval of the
/// `_id` index.
pub(crate) fn spanning(ids: &[Bson]) -> BsonDocument {
    let mut runs: Vec<(&Bson, &Bson)> = Vec::new();
    let mut open: Option<(Bracket, &Bson, &Bson)> = None;
    for id in ids {
        match (Bracket::of(id), &mut open) {
            (Some(bracket), Some((current, _, last))) if bracket == *current => *last = id,
            (bracket, _) => {
                if let Some((_, first, last)) = open.take() {
                    runs.push((first, last));
                }
                match bracket {
                    Some(bracket) => open = Some((bracket, id, id)),
                    None => runs.push((id, id)),
                }
            }
        }
    }
    if let Some((_, first, last)) = open {
        runs.push((first, last));
    }
    let range = |(first, last): (&Bson, &Bson)| {
        if first == last {
            doc! { "_id": { "$eq": first.clone() } }
        } else {
            doc! { "_id": { "$gte": first.clone(), "$lte": last.clone() } }
        }
    };
    match runs.len() {
        0 => doc! { "_id": { "$in": [] } },
        1 => range(runs[0]),
        _ => doc! { "$or": runs.into_iter().map(range).collect::<Vec<_>>() },
    }
}

/// The filter of a walk that has visited everything up to `after` (`None`: nothing yet).
pub(crate) fn rest_after(after: Option<&Bson>) -> BsonDocument {
    after.map(after_id).unwrap_or_default()
}

/// What a walk does with each batch.
pub(crate) trait Visit {
    /// Visits one batch of documents, in `_id` order. An error ends the walk's stream: on a
    /// transient error the stream is opened again after the last batch visited in full, and
    /// this batch is visited again (so a visit should be idempotent); on any other the walk
    /// returns it.
    fn visit(&mut self, batch: &[BsonDocument]) -> impl Future<Output = Result<()>> + Send;

    /// Whether the walk is to stop before its next batch (the worker is shutting down): it
    /// then returns [`halted_walk`]'s error, the batches visited so far done. Never, unless
    /// the visitor says so.
    fn halted(&self) -> bool {
        false
    }

    /// Documents the walk's cursor reads per round trip at least, when more than a batch
    /// (a visitor of small batches, each a long visit, reads ahead of them).
    fn read_ahead(&self) -> usize {
        0
    }
}

/// The error a walk ends with when its visitor was halted before a batch (see
/// [`Visit::halted`]).
pub(crate) fn halted_walk() -> crate::Error {
    crate::Error::worker(
        crate::error::WorkerStop::Ended,
        "the walk stopped between two batches: the worker is shutting down",
    )
}

/// Walks `collection` in `_id` order, `projection` of each document, `batch` at a time: one
/// `find` sorted on `_id` (a walk of the `_id` index) and its `getMore`s. When the stream
/// breaks or a visit fails on a transient error (a cursor lost to a restart or a failover, a
/// network error), it is opened again after the last batch visited in full with
/// [`after_id`], with back-off, so every document is visited whatever its `_id` type, in the
/// server's order; after [`WALK_RESUMES`] breaks in a row, or any other error, the error is
/// returned. Returns the number of times the stream was opened again.
pub(crate) async fn walk_by_id<V: Visit + Send>(
    collection: &Collection<BsonDocument>,
    projection: Option<BsonDocument>,
    batch: usize,
    visitor: &mut V,
) -> Result<u64> {
    walk_matching(
        collection,
        BsonDocument::new(),
        projection,
        batch,
        None,
        None,
        visitor,
    )
    .await
}

/// [`walk_by_id`] over the documents that match `filter` only (a fan-out's holders of one
/// source): the same `_id` order, batches and resumption after a break, every `find` under
/// `collation` (the simple one for a filter on ids the documents hold, on a collection whose
/// default is another: its order of `_id`s and its ranges are then that collation's too),
/// starting after the `_id` `start_after` when given (a fan-out resumed, see
/// [`super::fan_out::progress`]).
pub(crate) async fn walk_matching<V: Visit + Send>(
    collection: &Collection<BsonDocument>,
    filter: BsonDocument,
    projection: Option<BsonDocument>,
    batch: usize,
    collation: Option<&crate::Collation>,
    start_after: Option<Bson>,
    visitor: &mut V,
) -> Result<u64> {
    let batch = batch.max(1);
    let mut after: Option<Bson> = start_after;
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut breaks_in_a_row = 0;
    let mut resumed = 0;
    loop {
        // with no other filter, `_id` alone in the filter and the sort: the `_id` index serves
        // it on any planner
        let rest = rest_after(after.as_ref());
        let query = match (filter.is_empty(), rest.is_empty()) {
            (true, _) => rest,
            (false, true) => filter.clone(),
            (false, false) => doc! { "$and": [filter.clone(), rest] },
        };
        let mut find = collection
            .find(query)
            .sort(doc! { "_id": 1 })
            .batch_size(batch.max(visitor.read_ahead()) as u32);
        if let Some(projection) = &projection {
            find = find.projection(projection.clone());
        }
        if let Some(collation) = collation.and_then(crate::Collation::to_driver) {
            find = find.collation(collation);
        }
        let mut docs: Vec<BsonDocument> = Vec::with_capacity(batch);
        let broke = match find.await {
            Err(error) => Some(Error::from(error)),
            Ok(mut cursor) => loop {
                // a full batch, the end of the stream, or a break: what was read is visited
                // either way, then the stream goes on, ends, or is opened again
                let read = fill(&mut cursor, &mut docs, batch).await;
                if visitor.halted() {
                    return Err(halted_walk());
                }
                if !docs.is_empty() {
                    let visited = visitor.visit(&docs).await;
                    let last = docs.last().and_then(|d| d.get("_id")).cloned();
                    docs.clear();
                    match visited {
                        Ok(()) => {
                            after = last;
                            breaks_in_a_row = 0;
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
        let Some(error) = broke else {
            return Ok(resumed);
        };
        breaks_in_a_row += 1;
        if ErrorClass::of(&error) != ErrorClass::Transient || breaks_in_a_row > WALK_RESUMES {
            return Err(error);
        }
        tracing::warn!(collection = %collection.name(), %error, "the walk's stream broke; resuming after the last batch visited");
        resumed += 1;
        tokio::time::sleep(backoff.next_wait()).await;
    }
}

/// Reads documents into `docs` until it holds `batch`: `true` when it is full, `false` at the
/// end of the stream; on an error `docs` keeps what was read before it.
async fn fill(
    cursor: &mut mongodb::Cursor<BsonDocument>,
    docs: &mut Vec<BsonDocument>,
    batch: usize,
) -> Result<bool> {
    while docs.len() < batch {
        match cursor.try_next().await? {
            Some(document) => docs.push(document),
            None => return Ok(false),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_one_range_per_type_bracket() {
        let ids = [
            Bson::Int32(1),
            Bson::Double(2.5),
            Bson::Int64(9),
            Bson::String("a".into()),
            Bson::String("q".into()),
            Bson::Boolean(true),
        ];
        assert_eq!(
            spanning(&ids),
            doc! { "$or": [
                { "_id": { "$gte": 1, "$lte": 9_i64 } },
                { "_id": { "$gte": "a", "$lte": "q" } },
                { "_id": { "$eq": true } },
            ] }
        );
        assert_eq!(
            spanning(&ids[..3]),
            doc! { "_id": { "$gte": 1, "$lte": 9_i64 } }
        );
        // a document `_id` that looks like an operator stays a value
        let odd = Bson::Document(doc! { "$gt": 1 });
        assert_eq!(
            spanning(std::slice::from_ref(&odd)),
            doc! { "_id": { "$eq": { "$gt": 1 } } }
        );
    }

    #[test]
    fn after_an_id_come_the_rest_of_its_bracket_and_every_later_bracket() {
        let after = after_id(&Bson::Int32(7));
        let branches = after.get_array("$or").unwrap();
        assert_eq!(branches[0], Bson::Document(doc! { "_id": { "$gt": 7 } }));
        // strings, objects, binaries, ObjectIds, booleans, dates, timestamps, MaxKey
        assert_eq!(branches.len(), 1 + 8);
        assert!(!branches.contains(&Bson::Document(doc! { "_id": Bson::Null })));
        let after = after_id(&Bson::String("m".into()));
        let branches = after.get_array("$or").unwrap();
        assert!(branches.contains(&Bson::Document(doc! { "_id": { "$type": "objectId" } })));
        assert!(!branches.contains(&Bson::Document(doc! { "_id": { "$type": "number" } })));
        assert_eq!(
            after_id(&Bson::MaxKey),
            doc! { "$or": [{ "_id": { "$gt": Bson::MaxKey } }] }
        );
        assert_eq!(rest_after(None), doc! {});
    }

    /// 500 documents whose `_id`s are Int32, Int64, Double, String, ObjectId, Date and Binary,
    /// walked 50 at a time; the fourth `getMore` is held while another client kills the cursor,
    /// so the stream breaks for real after 200 documents (all numbers) and is opened again after
    /// the last one visited. Every document is visited once, in the server's order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_walk_broken_midway_visits_mixed_ids_once_in_the_servers_order() {
        use mongodb::bson::spec::BinarySubtype;
        use mongodb::bson::{oid::ObjectId, Binary, DateTime};
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Arc, Mutex};

        let db = mongo_schema_testkit::database("walk_mixed").await;
        let parents = db.collection::<BsonDocument>("parents");
        let ids: Vec<Bson> = (0..500_i64)
            .map(|i| match i % 7 {
                0 => Bson::Int32(i as i32),
                1 => Bson::Int64(10_000 + i),
                2 => Bson::Double(i as f64 + 0.5),
                3 => Bson::String(format!("s{i:04}")),
                4 => Bson::ObjectId(ObjectId::new()),
                5 => Bson::DateTime(DateTime::from_millis(1_000 * i)),
                _ => Bson::Binary(Binary {
                    subtype: BinarySubtype::Generic,
                    bytes: i.to_be_bytes().to_vec(),
                }),
            })
            .collect();
        let docs: Vec<BsonDocument> = ids.iter().map(|id| doc! { "_id": id.clone() }).collect();
        parents.insert_many(docs).await.unwrap();
        let in_order: Vec<Bson> = parents
            .find(doc! {})
            .sort(doc! { "_id": 1 })
            .await
            .unwrap()
            .try_collect::<Vec<_>>()
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.get("_id").unwrap().clone())
            .collect();
        assert_eq!(in_order.len(), 500);

        // the walk, on a client whose fourth getMore is held; its cursor is killed meanwhile
        let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
            .await
            .unwrap();
        let get_mores = AtomicUsize::new(0);
        let cursor = Arc::new(Mutex::new(None::<i64>));
        let held_cursor = cursor.clone();
        let (client, held, release) = mongo_schema_testkit::holding_client(&uri, move |started| {
            if started.command_name != "getMore" || get_mores.fetch_add(1, Ordering::SeqCst) != 3 {
                return false;
            }
            *held_cursor.lock().unwrap() = started.command.get_i64("getMore").ok();
            true
        })
        .await;
        struct Collect(Vec<Bson>);
        impl Visit for Collect {
            async fn visit(&mut self, batch: &[BsonDocument]) -> Result<()> {
                self.0
                    .extend(batch.iter().map(|d| d.get("_id").unwrap().clone()));
                Ok(())
            }
        }
        let walked = {
            let parents = client
                .database(db.name())
                .collection::<BsonDocument>("parents");
            tokio::spawn(async move {
                let mut visited = Collect(Vec::new());
                let resumed = walk_by_id(&parents, None, 50, &mut visited).await;
                (resumed, visited.0)
            })
        };
        tokio::task::spawn_blocking(move || held.recv_timeout(std::time::Duration::from_secs(30)))
            .await
            .unwrap()
            .expect("the fourth getMore was sent");
        let id = cursor.lock().unwrap().expect("its cursor id");
        db.run_command(doc! { "killCursors": "parents", "cursors": [id] })
            .await
            .unwrap();
        release.send(()).unwrap();
        let (resumed, visited) = tokio::time::timeout(std::time::Duration::from_secs(60), walked)
            .await
            .expect("the walk ends")
            .unwrap();
        assert_eq!(
            resumed.unwrap(),
            1,
            "the stream broke once and was opened again"
        );
        assert_eq!(visited.len(), 500, "every document once");
        assert_eq!(visited, in_order, "in the server's order");

        // paged the way `rebuild_all` reads its parents: each page after the last `_id` of the
        // page before
        let mut paged: Vec<Bson> = Vec::new();
        loop {
            let page: Vec<BsonDocument> = parents
                .find(rest_after(paged.last()))
                .sort(doc! { "_id": 1 })
                .limit(64)
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            if page.is_empty() {
                break;
            }
            paged.extend(page.into_iter().map(|d| d.get("_id").unwrap().clone()));
        }
        assert_eq!(paged, in_order);
        // the positive control: resumed by `$gt` alone, the walk stops at the numbers
        let after_the_numbers: u64 = parents
            .count_documents(doc! { "_id": { "$gt": in_order[199].clone() } })
            .await
            .unwrap();
        assert!(after_the_numbers < 300, "{after_the_numbers}");
    }
}
