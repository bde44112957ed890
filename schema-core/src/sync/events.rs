//! What the sync worker's change stream carries, and how it reads an event.
//!
//! The stream asks for post-images (and pre-images for async subsets), so an event can be as
//! large as two documents and their update: mongod answers a `getMore` whose next event exceeds
//! 16 MB with `BSONObjectTooLarge` (10334), and resuming before that event meets it again. So the
//! pipeline projects each event down to what the worker reads ([`pipeline`]): `_id` (the resume
//! token), the operation, namespace, document key, cluster and wall time, the *names* of the
//! fields an update changed (never their values), and of the pre- and post-images only the fields
//! the copies, the subsets' parent references and their filters read. (A subset's previews are
//! read from the children collection when its parent is refreshed, never from an event.) On a
//! server with `$changeStreamSplitLargeEvent` (mongod 7.0+, wire version 21) it is the last
//! stage, and [`Fragments`] puts a split event back together.
//!
//! An event that still cannot be read (a document the driver cannot decode, such as a string
//! that is not UTF-8, which mongod stores) is [`Read::Unreadable`]: the worker records it once
//! and goes on after it; reconcile repairs what it would have done.
//!
//! An event still too large to send (a server without the split stage, or one top-level field
//! over 16 MB after the projection) has no token the worker could read from it. The worker then
//! reopens from its position reading one event per reply, so the stream stops right before that
//! event; a second stream from there, with the same `$match` but no images and nothing else
//! kept, reads its token, namespace and document key; the worker records it and goes on after
//! its token. Limits, stated plainly:
//! - this relies on mongod failing the reply that holds the event and not the ones before it
//!   (a reply of one event), and it is not exercised on these machines: SecantusDB sends an event
//!   whatever its size, so the tests cover the projection, the split and the skip of an event that
//!   does not decode, not a server's refusal;
//! - an event too large as the very first of a fresh stream (no position yet) cannot be
//!   skipped: the worker reopens from its saved token and meets it again, as before;
//! - the projection keeps the union of the fields read over every followed collection (a field
//!   copied from one collection is kept in the events of another that has a field of that name);
//! - a skipped event's record names its collection, not a copy: `retry_failures` counts it
//!   among the records of unknown copies and leaves it; a complete (not dry-run) reconcile
//!   repairs the copies and subsets and removes the records of the events skipped before it
//!   began (by the server's clock).

use mongodb::bson::{doc, Bson, Document as BsonDocument, RawDocument, RawDocumentBuf};
use mongodb::change_stream::event::ChangeStreamEvent;

/// The first wire version of mongod 7.0, which has `$changeStreamSplitLargeEvent`.
pub(crate) const SPLIT_WIRE_VERSION: i32 = 21;

/// The stages after the worker's `$match`: the projection, then the split stage when `split`.
///
/// `post_fields`: the stored paths of the post-image the worker reads (the copied fields of
/// every async copy's source, the parent reference and filter paths of every async subset);
/// `pre_fields`: those of the pre-image (the subsets'), `None` when no pre-image is asked for.
pub(crate) fn pipeline(
    matched: BsonDocument,
    post_fields: &[String],
    pre_fields: Option<&[String]>,
    split: bool,
) -> Vec<BsonDocument> {
    let mut project = doc! {
        "_id": 1,
        "operationType": 1,
        "ns": 1,
        "documentKey": 1,
        "clusterTime": 1,
        "wallTime": 1,
        // the names an update set, never their values (a `$set` of 10 MB is 10 MB here)
        "updateDescription.updatedFields": {
            "$map": {
                "input": { "$objectToArray": "$updateDescription.updatedFields" },
                "in": "$$this.k",
            }
        },
        "updateDescription.removedFields": 1,
        "updateDescription.truncatedArrays": 1,
    };
    for path in included(post_fields) {
        project.insert(format!("fullDocument.{path}"), 1);
    }
    if let Some(pre_fields) = pre_fields {
        for path in included(pre_fields) {
            project.insert(format!("fullDocumentBeforeChange.{path}"), 1);
        }
    }
    let mut stages = vec![doc! { "$match": matched }, doc! { "$project": project }];
    if split {
        stages.push(doc! { "$changeStreamSplitLargeEvent": {} });
    }
    stages
}

/// `_id` and `fields`, without a path under another one (`a` and `a.b` collide in a projection:
/// `a` alone keeps both).
fn included(fields: &[String]) -> Vec<String> {
    let mut paths: Vec<String> = std::iter::once("_id".to_owned())
        .chain(fields.iter().filter(|f| !f.is_empty()).cloned())
        .collect();
    paths.sort();
    paths.dedup();
    let under = |path: &str, other: &str| path.starts_with(&format!("{other}."));
    paths
        .iter()
        .filter(|path| !paths.iter().any(|other| under(path, other)))
        .cloned()
        .collect()
}

/// An event the worker cannot read: what it knows of it, for the failure record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unreadable {
    /// The collection it changed, when that much could be read.
    pub collection: Option<String>,
    /// Its document key's `_id`, when that much could be read.
    pub document: Option<Bson>,
    /// Why it could not be read.
    pub reason: String,
}

/// One event read from the stream.
#[derive(Debug)]
pub(crate) enum Read {
    /// A whole event.
    Event(Box<ChangeStreamEvent<BsonDocument>>),
    /// A fragment of a split event whose other fragments are still to come.
    Partial,
    /// An event that cannot be read.
    Unreadable(Unreadable),
}

/// The fragments of a split event read so far (mongod sends them one after another; each has
/// its own resume token, and resuming from one sends the fragments after it).
#[derive(Debug, Default)]
pub(crate) struct Fragments {
    pending: Option<(i32, BsonDocument)>,
}

impl Fragments {
    /// Whether a split event is half read (the batch must not end there).
    pub(crate) fn pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Reads one event (or fragment) of the stream; `unreadable` says whether a test made it
    /// unreadable on purpose.
    pub(crate) fn read(&mut self, raw: &RawDocument, unreadable: bool) -> Read {
        let decoded = if unreadable {
            Err("an undecodable event (injected by a test)".to_owned())
        } else {
            crate::bson_compat::document_from_raw(raw).map_err(|e| e.to_string())
        };
        let mut event = match decoded {
            Ok(event) => event,
            Err(reason) => {
                self.pending = None;
                return Read::Unreadable(unreadable_of(raw, reason));
            }
        };
        let split = event
            .get_document("splitEvent")
            .ok()
            .map(|s| (number(s.get("fragment")), number(s.get("of"))));
        event.remove("splitEvent");
        if let Some((Some(fragment), Some(of))) = split.filter(|(_, of)| *of != Some(1)) {
            let merged = match self.pending.take() {
                // the next fragment of the event being read
                Some((next, mut merged)) if next == fragment => {
                    for (key, value) in event {
                        merged.insert(key, value);
                    }
                    merged
                }
                // the first (a resume from a fragment's token starts after it; an event
                // half read when the stream was reopened starts again)
                _ if fragment == 1 => event,
                _ => {
                    return Read::Unreadable(Unreadable {
                        collection: collection_of(&event),
                        document: key_of(&event),
                        reason: format!("fragment {fragment} of {of} of a split event without the ones before it"),
                    });
                }
            };
            if fragment < of {
                self.pending = Some((fragment + 1, merged));
                return Read::Partial;
            }
            event = merged;
        }
        reshape_update(&mut event);
        match crate::bson_compat::from_document::<ChangeStreamEvent<BsonDocument>>(event.clone()) {
            Ok(read) => Read::Event(Box::new(read)),
            Err(error) => Read::Unreadable(Unreadable {
                collection: collection_of(&event),
                document: key_of(&event),
                reason: error.to_string(),
            }),
        }
    }
}

/// The projection sends an update's changed field names as an array: back to the driver's
/// shape (`updatedFields` a document, its values `true`); dropped on events without one.
fn reshape_update(event: &mut BsonDocument) {
    let Ok(description) = event.get_document_mut("updateDescription") else {
        return;
    };
    let names = match description.get("updatedFields") {
        Some(Bson::Array(names)) => names.clone(),
        Some(Bson::Document(_)) => return,
        _ => {
            event.remove("updateDescription");
            return;
        }
    };
    let mut fields = BsonDocument::new();
    for name in names {
        if let Bson::String(name) = name {
            fields.insert(name, true);
        }
    }
    description.insert("updatedFields", fields);
    if !description.contains_key("removedFields") {
        description.insert("removedFields", Bson::Array(Vec::new()));
    }
}

fn number(value: Option<&Bson>) -> Option<i32> {
    match value? {
        Bson::Int32(n) => Some(*n),
        Bson::Int64(n) => i32::try_from(*n).ok(),
        Bson::Double(n) => Some(*n as i32),
        _ => None,
    }
}

fn collection_of(event: &BsonDocument) -> Option<String> {
    Some(
        event
            .get_document("ns")
            .ok()?
            .get_str("coll")
            .ok()?
            .to_owned(),
    )
}

fn key_of(event: &BsonDocument) -> Option<Bson> {
    event.get_document("documentKey").ok()?.get("_id").cloned()
}

/// What can be read of an event that does not decode, element by element.
fn unreadable_of(raw: &RawDocument, reason: String) -> Unreadable {
    let collection = raw
        .get_document("ns")
        .ok()
        .and_then(|ns| ns.get_str("coll").ok())
        .map(str::to_owned);
    let document = raw
        .get_document("documentKey")
        .ok()
        .and_then(|key| key.get("_id").ok().flatten())
        .and_then(crate::bson_compat::bson_from_raw);
    Unreadable {
        collection,
        document,
        reason,
    }
}

/// The raw event's document key `_id` (for a test's injection).
pub(crate) fn raw_key(raw: &RawDocumentBuf) -> Option<Bson> {
    raw.get_document("documentKey")
        .ok()
        .and_then(|key| key.get("_id").ok().flatten())
        .and_then(crate::bson_compat::bson_from_raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(document: BsonDocument) -> RawDocumentBuf {
        crate::bson_compat::raw_from_document(&document).unwrap()
    }

    #[test]
    fn the_projection_keeps_what_the_worker_reads_and_drops_the_rest() {
        let stages = pipeline(
            doc! { "operationType": "update" },
            &["name".into(), "address.city".into(), "address".into()],
            Some(&["thread_id".into(), "status".into()]),
            true,
        );
        assert_eq!(stages.len(), 3);
        assert_eq!(
            stages[2],
            doc! { "$changeStreamSplitLargeEvent": {} },
            "last"
        );
        let project = stages[1].get_document("$project").unwrap();
        for kept in [
            "_id",
            "operationType",
            "ns",
            "documentKey",
            "clusterTime",
            "fullDocument._id",
            "fullDocument.name",
            "fullDocument.address",
            "fullDocumentBeforeChange._id",
            "fullDocumentBeforeChange.thread_id",
            "fullDocumentBeforeChange.status",
        ] {
            assert!(project.contains_key(kept), "{kept} in {project}");
        }
        // `address.city` lies under `address`: both would be a path collision on mongod
        assert!(!project.contains_key("fullDocument.address.city"));
        assert!(!project.contains_key("fullDocument"));
        assert!(!project.contains_key("fullDocumentBeforeChange"));
        let without_split = pipeline(doc! {}, &[], None, false);
        assert_eq!(without_split.len(), 2);
        let project = without_split[1].get_document("$project").unwrap();
        assert!(!project
            .keys()
            .any(|k| k.starts_with("fullDocumentBeforeChange")));
    }

    /// What the projection does to a large event, evaluated as mongod would: the fields and
    /// values it drops, and the names of an update's fields kept.
    #[test]
    fn a_projected_event_of_a_large_child_reads_as_the_event() {
        let big = "x".repeat(9 * 1024 * 1024);
        let projected = doc! {
            "_id": { "_data": "8263" },
            "operationType": "update",
            "ns": { "db": "d", "coll": "notes" },
            "documentKey": { "_id": 7 },
            "updateDescription": { "updatedFields": ["body", "thread_id"], "removedFields": [] },
            "fullDocument": { "_id": 7, "thread_id": 2 },
            "fullDocumentBeforeChange": { "_id": 7, "thread_id": 1 },
            "splitEvent": { "fragment": 1, "of": 1 },
        };
        let mut fragments = Fragments::default();
        let Read::Event(event) = fragments.read(&raw(projected), false) else {
            panic!("a whole event")
        };
        let description = event.update_description.unwrap();
        assert_eq!(
            description.updated_fields.keys().collect::<Vec<_>>(),
            ["body", "thread_id"]
        );
        assert_eq!(event.full_document, Some(doc! { "_id": 7, "thread_id": 2 }));
        assert_eq!(
            event.full_document_before_change,
            Some(doc! { "_id": 7, "thread_id": 1 })
        );
        assert!(
            big.len() > 16 * 1024 * 1024 / 2,
            "the values dropped are large"
        );
    }

    #[test]
    fn a_split_event_is_read_whole_from_its_fragments() {
        let fragment = |n: i32, field: &str| {
            let mut event = doc! {
                "_id": { "_data": format!("82{n}") },
                "operationType": "update",
                "ns": { "db": "d", "coll": "notes" },
                "documentKey": { "_id": 7 },
                "splitEvent": { "fragment": n, "of": 2 },
            };
            event.insert(field, doc! { "_id": 7, "thread_id": n });
            raw(event)
        };
        let mut fragments = Fragments::default();
        assert!(matches!(
            fragments.read(&fragment(1, "fullDocument"), false),
            Read::Partial
        ));
        assert!(fragments.pending());
        let Read::Event(event) = fragments.read(&fragment(2, "fullDocumentBeforeChange"), false)
        else {
            panic!("the whole event")
        };
        assert!(!fragments.pending());
        assert_eq!(event.full_document, Some(doc! { "_id": 7, "thread_id": 1 }));
        assert_eq!(
            event.full_document_before_change,
            Some(doc! { "_id": 7, "thread_id": 2 })
        );
        // a second fragment without its first cannot be read
        assert!(matches!(
            Fragments::default().read(&fragment(2, "fullDocument"), false),
            Read::Unreadable(Unreadable {
                document: Some(Bson::Int32(7)),
                ..
            })
        ));
    }

    #[test]
    fn an_event_that_does_not_decode_is_unreadable_with_its_key() {
        let event = doc! {
            "_id": { "_data": "8263" },
            "operationType": "insert",
            "ns": { "db": "d", "coll": "agents" },
            "documentKey": { "_id": 3 },
            "fullDocument": { "_id": 3, "name": "a" },
        };
        let read = Fragments::default().read(&raw(event.clone()), true);
        let Read::Unreadable(unreadable) = read else {
            panic!("unreadable")
        };
        assert_eq!(unreadable.collection.as_deref(), Some("agents"));
        assert_eq!(unreadable.document, Some(Bson::Int32(3)));
        // the same event, not made unreadable, reads
        assert!(matches!(
            Fragments::default().read(&raw(event), false),
            Read::Event(_)
        ));
    }
}
