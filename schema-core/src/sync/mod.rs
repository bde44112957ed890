//! Keeping copies in sync: the machinery behind the strategies of `#[extended_ref]`.
//!
//! - [`source`]: the `transactional` writer (`update_source`, `delete_source`);
//! - [`worker`]: the `async` change-stream consumer, with its [`lease`] (one active worker per
//!   name), reading the [`events`] its stream projects;
//! - [`fan_out`]: the `updateMany` every strategy sends, in chunks of at most
//!   [`FAN_OUT_CHUNK`] holders, falling back to one holder at a time when a holder cannot take it, and [`failures`], where such holders are recorded;
//! - [`fence`]: the worker's writes commit only while it holds its lease;
//! - [`lanes`]: the worker's jobs run on lanes, a source's in order, so one large fan-out holds
//!   its own lane only;
//! - [`partitions`]: the workers of one name share its events, split by a hash of the source
//!   document's `_id`, each partition leased, fenced and resumed on its own;
//! - [`reconcile`]: compare and repair, conditional on the value read, over a [`walk`] of the
//!   holders in `_id` order that survives breaks and mixed `_id` types;
//! - [`metrics`]: the worker's counters, gauges and histograms through the `metrics` facade;
//! - [`transaction`]: bounded retries of a transaction; [`retry`]: error classes and back-off.

use mongodb::bson::{Bson, Document as BsonDocument};

pub(crate) mod compose;
pub(crate) mod events;
pub(crate) mod failures;
pub(crate) mod fan_out;
pub(crate) mod fence;
pub(crate) mod lanes;
pub(crate) mod lease;
pub mod metrics;
pub(crate) mod partitions;
pub(crate) mod reconcile;
pub(crate) mod retry;
pub(crate) mod retry_failures;
pub(crate) mod source;
pub(crate) mod subsets;
pub(crate) mod transaction;
pub(crate) mod walk;
pub(crate) mod worker;

pub use compose::{StepOutcome, Transaction, TransactionReport};
pub use failures::{SyncFailure, FAILURES_COLLECTION, FAILURE_RECORD_TTL};
pub use fan_out::FAN_OUT_CHUNK;
pub use lease::DEFAULT_LEASE;
pub use reconcile::{EdgeReconcile, PartReconcile, ReconcileReport};
pub use retry_failures::RetryReport;
pub use source::{SourceDelete, SourceUpdate};
pub use transaction::TRANSACTION_DEADLINE;
pub use worker::{
    SyncWorker, SyncWorkerHandle, WorkerSnapshot, WorkerStats, DEFAULT_MAX_BATCH,
    DEFAULT_READY_TIMEOUT, DEFAULT_STALL_TIMEOUT, DEFAULT_TOKEN_SAVE_INTERVAL, TOKENS_COLLECTION,
};

pub(crate) use fan_out::FanOut;

/// The value at a dotted path of a document.
pub(crate) fn get_path(doc: &BsonDocument, path: &str) -> Option<Bson> {
    let mut current = doc.get(path.split('.').next()?)?.clone();
    for segment in path.split('.').skip(1) {
        current = current.as_document()?.get(segment)?.clone();
    }
    Some(current)
}

/// The values at a dotted path of a document, through arrays as the query language goes
/// through them: the path followed into each element of an array on the way (`lines.product`
/// of every line), and the elements of an array at its end.
pub(crate) fn values_at(doc: &BsonDocument, path: &str) -> Vec<Bson> {
    fn follow(value: &Bson, segments: &[&str], out: &mut Vec<Bson>) {
        match (value, segments.split_first()) {
            (Bson::Array(items), _) => {
                for item in items {
                    follow(item, segments, out);
                }
            }
            (value, None) => out.push(value.clone()),
            (Bson::Document(doc), Some((first, rest))) => {
                if let Some(next) = doc.get(*first) {
                    follow(next, rest, out);
                }
            }
            _ => {}
        }
    }
    let segments: Vec<&str> = path.split('.').collect();
    let mut out = Vec::new();
    follow(&Bson::Document(doc.clone()), &segments, &mut out);
    out
}

/// A key under which equal ids meet, whatever their BSON number type (`Int32(7)`, `Int64(7)`
/// and `Double(7.0)` are one `_id` to the server).
pub(crate) fn id_key(id: &Bson) -> String {
    match id {
        Bson::Int32(n) => format!("n{n}"),
        Bson::Int64(n) => format!("n{n}"),
        Bson::Double(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => format!("n{}", *f as i64),
        Bson::String(s) => format!("s{s}"),
        Bson::ObjectId(o) => format!("o{o}"),
        other => format!("x{}", other.clone().into_relaxed_extjson()),
    }
}

/// Whether the copied fields of `copy` (one element of the holder's copy field) differ from
/// `source`.
pub(crate) fn drifted(fields: &[String], copy: &BsonDocument, source: &BsonDocument) -> bool {
    fields.iter().any(
        |field| match (get_path(copy, field), get_path(source, field)) {
            (Some(a), Some(b)) => !crate::json_schema::same(&a, &b),
            (None, None) => false,
            _ => true,
        },
    )
}

/// Whether any changed path (`name`, `address.city`, `tags.3`) touches a copied field.
pub(crate) fn touches<'a>(mut changed: impl Iterator<Item = &'a str>, fields: &[String]) -> bool {
    changed.any(|path| {
        fields.iter().any(|field| {
            path == field
                || path.starts_with(&format!("{field}."))
                || field.starts_with(&format!("{path}."))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_paths_touch_copied_fields() {
        let fields = vec!["name".to_owned(), "address.city".to_owned()];
        assert!(touches(["name"].into_iter(), &fields));
        assert!(touches(["address"].into_iter(), &fields));
        assert!(touches(["address.city"].into_iter(), &fields));
        assert!(!touches(
            ["email", "address.zip", "names"].into_iter(),
            &fields
        ));
    }

    #[test]
    fn values_are_read_through_arrays_of_values() {
        use mongodb::bson::doc;
        let order = doc! {
            "lines": [
                { "product": { "_id": "a" }, "quantity": 1 },
                { "product": { "_id": "b" }, "quantity": 2 },
                { "quantity": 3 },
            ],
            "shipping": { "carrier": { "_id": "dhl" } },
            "parts": [{ "_id": 1 }, { "_id": 2 }],
        };
        assert_eq!(
            values_at(&order, "lines.product"),
            vec![
                Bson::Document(doc! { "_id": "a" }),
                Bson::Document(doc! { "_id": "b" })
            ]
        );
        assert_eq!(
            values_at(&order, "shipping.carrier"),
            vec![Bson::Document(doc! { "_id": "dhl" })]
        );
        assert_eq!(values_at(&order, "parts").len(), 2);
        assert!(values_at(&order, "missing.path").is_empty());
    }

    #[test]
    fn ids_meet_across_number_types() {
        assert_eq!(id_key(&Bson::Int32(7)), id_key(&Bson::Int64(7)));
        assert_eq!(id_key(&Bson::Double(7.0)), id_key(&Bson::Int64(7)));
        assert_ne!(id_key(&Bson::String("7".into())), id_key(&Bson::Int64(7)));
    }
}
