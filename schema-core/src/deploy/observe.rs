//! What the server holds, read before anything is planned or written: the schema's collections
//! with their options and indexes, the documents a validator would reject, and the collections
//! no model declares. The first stage of `plan`, `apply` and `audit`, which all read it.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::Database;

use super::plan::{Observed, ObservedCollection, Violations};
use crate::{CollectionSpec, Result, TOKENS_COLLECTION};

/// Reads the server's state of the schema's collections: one `listCollections`, then one
/// `listIndexes` per existing collection.
pub(crate) async fn observe(db: &Database, specs: &[CollectionSpec]) -> Result<Observed> {
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let mut observed = Observed::default();
    let mut cursor = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": { "$in": names } } })
        .await?;
    while let Some(entry) = cursor.try_next().await? {
        observed
            .collections
            .push(ObservedCollection::from_list_collections(&entry));
    }
    for collection in &mut observed.collections {
        if collection.kind == "collection" {
            collection.indexes = list_indexes(db, &collection.name).await?;
        }
    }
    Ok(observed)
}

async fn list_indexes(db: &Database, collection: &str) -> Result<Vec<Document>> {
    let cursor = db
        .run_cursor_command(doc! { "listIndexes": collection })
        .await?;
    Ok(cursor.try_collect().await?)
}

const SAMPLE_VIOLATIONS: i64 = 5;

/// Counts the existing documents of `collection` that `validator` would reject (a validator is
/// a query: `{ $nor: [validator] }` matches them), with a few of their ids.
pub(crate) async fn violations(
    db: &Database,
    collection: &str,
    validator: &Document,
) -> Result<Violations> {
    let filter = doc! { "$nor": [validator.clone()] };
    let coll = db.collection::<Document>(collection);
    let count = coll.count_documents(filter.clone()).await?;
    let samples: Vec<Document> = if count == 0 {
        Vec::new()
    } else {
        coll.find(filter)
            .limit(SAMPLE_VIOLATIONS)
            .await?
            .try_collect()
            .await?
    };
    // which rule each sample fails, by mongod's semantics evaluated here
    let local = crate::LocalValidator::new(validator).ok();
    let sample_rules = samples
        .iter()
        .map(
            |sample| match local.as_ref().and_then(|v| v.check(sample).err()) {
                Some(failed) => failed
                    .failures
                    .iter()
                    .take(3)
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => String::new(),
            },
        )
        .collect();
    let sample_ids = samples
        .iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect();
    Ok(Violations {
        count,
        sample_ids,
        sample_rules,
    })
}

/// The collections of `db` that are neither `known` nor the library's own (sync tokens and
/// failures, the version record, the migration changelog, the copies `dedupe` kept aside of a
/// known collection), sorted.
pub(crate) async fn unknown_collections(
    db: &Database,
    known: impl Fn(&str) -> bool,
) -> crate::Result<Vec<String>> {
    let mut names: Vec<String> = db
        .list_collection_names()
        .await?
        .into_iter()
        .filter(|n| {
            let archive = n.rsplit_once("_dedupe_").is_some_and(|(base, version)| {
                known(base) && version.bytes().all(|b| b.is_ascii_digit())
            });
            !n.starts_with("system.")
                && n != TOKENS_COLLECTION
                && n != crate::FAILURES_COLLECTION
                && n != super::versions::META_COLLECTION
                && n != crate::migrate::MIGRATIONS_COLLECTION
                && !archive
                && !known(n)
        })
        .collect();
    names.sort();
    Ok(names)
}
