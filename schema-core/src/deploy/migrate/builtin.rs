//! The built-in steps. Each is idempotent (a second run finds nothing to do), typed against its
//! model (fields are checked by `Schema::build`) and sends its writes server-side: one
//! `updateMany` or pipeline update for the whole collection, or, for the steps that read other
//! documents (copies, duplicates), one `update` command with one statement per source or group
//! for each batch of 1,000.

use std::marker::PhantomData;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;
use serde::Serialize;

use super::{Step, StepContext, StepCounts, Work};
use crate::concern::OPERATOR_TIME_LIMIT;
use crate::model::collection::CollectionSpec;
use crate::model::copy::CopyShape;
use crate::query::{Path, QuerySpec, Value};
use crate::{Document as Model, Error, Result};

/// Sources (or duplicate groups) per batch of the steps that read before they write.
const BATCH: i64 = 1000;

fn spec<'a>(collections: &'a [CollectionSpec], name: &str) -> Option<&'a CollectionSpec> {
    collections.iter().find(|c| c.name == name)
}

/// The stored field `field` of collection `collection` is described by its validator.
fn field_problem(collections: &[CollectionSpec], collection: &str, field: &str) -> Option<String> {
    let Some(spec) = spec(collections, collection) else {
        return Some(format!(
            "`{collection}` is not part of the schema: add its model with `.model::<T>()`"
        ));
    };
    let schema = spec.validator.get_document("$jsonSchema").ok();
    let known = schema.is_some_and(|s| crate::json_schema::has_path(s, field));
    (!known).then(|| {
        let hint = schema
            .and_then(|s| crate::json_schema::nearest_path(s, field))
            .map(|near| format!(": did you mean `{near}`?"))
            .unwrap_or_default();
        format!("`{collection}` stores no field `{field}` (fields are named as stored{hint})")
    })
}

/// Sends one `update` command (several statements, unordered): its matched and modified
/// counts; its write errors, if any, as the driver reports a bulk write's (a validation
/// failure is [`Error::Validation`] with every write error of the batch), naming the
/// collection.
async fn update_command(
    db: &Database,
    collection: &str,
    updates: Vec<Document>,
) -> Result<StepCounts> {
    if updates.is_empty() {
        return Ok(StepCounts::default());
    }
    let reply = db
        .run_command(doc! {
            "update": collection,
            "updates": updates,
            "ordered": false,
            "writeConcern": crate::concern::majority_document(),
        })
        .await?;
    if let Ok(errors) = reply.get_array("writeErrors") {
        if !errors.is_empty() {
            return Err(crate::error::from_write_errors(collection, errors));
        }
    }
    let number = |key: &str| match reply.get(key) {
        Some(Bson::Int32(n)) => *n as u64,
        Some(Bson::Int64(n)) => *n as u64,
        _ => 0,
    };
    Ok(StepCounts::new(number("n"), number("nModified")))
}

/// A step of one typed collection, built from closures.
struct Simple {
    collection: &'static str,
    description: String,
    fields: Vec<String>,
    filter: Document,
    update: mongodb::options::UpdateModifications,
    /// Why the step cannot be built (a value that does not serialize): a `Schema::build`
    /// error, never a step that writes something else.
    problem: Option<String>,
}

impl Work for Simple {
    fn describe(&self) -> String {
        self.description.clone()
    }

    fn collection(&self) -> &str {
        self.collection
    }

    fn problems(&self, collections: &[CollectionSpec]) -> Vec<String> {
        self.fields
            .iter()
            .filter_map(|f| field_problem(collections, self.collection, f))
            .chain(self.problem.clone())
            .collect()
    }

    fn pending<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            Ok(db
                .collection::<Document>(self.collection)
                .count_documents(self.filter.clone())
                .max_time(OPERATOR_TIME_LIMIT)
                .await?)
        })
    }

    fn run<'a>(&'a self, cx: &'a mut StepContext) -> BoxFuture<'a, Result<StepCounts>> {
        Box::pin(async move {
            cx.ensure_lock()?;
            let result = cx
                .db()
                .collection::<Document>(self.collection)
                .update_many(self.filter.clone(), self.update.clone())
                .await?;
            let counts = StepCounts::new(result.matched_count, result.modified_count);
            cx.add_counts(counts);
            Ok(cx.counts())
        })
    }
}

/// Documents of `T` missing `field` get `value` (one `updateMany` on `{ field: { $exists: false } }`):
/// the backfill of a new required field, in the version that requires it. `field` is a typed
/// path of that version's model ([`field!`](crate::field)) and `value` a value of the field's
/// type, written as the field stores it (its serde helper, an enum's renamed variants):
/// `set_default(field!(Customer, tier), &Tier::Standard)`.
pub fn set_default<T: Model, V: ?Sized, S: ?Sized, W: Value<V> + ?Sized>(
    field: Path<T, V, S>,
    value: &W,
) -> Step {
    let stored = crate::query::path::encode(field.encoder(), value);
    default_step::<T>(field.as_str(), stored.map_err(|e| e.to_string()))
}

/// The previous release's [`set_default`], naming the field by its stored name and writing
/// `value` as serde serializes it alone (not through the field's helper).
#[deprecated(
    since = "0.2.0",
    note = "use `set_default(field!(T, field), &value)`: a typed path, and the value written as the field stores it"
)]
pub fn set_default_by_name<T: Model>(field: &str, value: impl Serialize) -> Step {
    let stored = crate::relations::to_bson(&value).map_err(|e| e.to_string());
    default_step::<T>(field, stored)
}

fn default_step<T: Model>(field: &str, value: std::result::Result<Bson, String>) -> Step {
    let (value, problem) = match value {
        Ok(value) => (value, None),
        Err(e) => (
            Bson::Null,
            Some(format!("the default of `{field}` does not serialize: {e}")),
        ),
    };
    Step(Arc::new(Simple {
        collection: T::COLLECTION,
        description: format!(
            "set_default `{}.{field}` = {}",
            T::COLLECTION,
            value.clone().into_relaxed_extjson()
        ),
        fields: vec![field.to_owned()],
        filter: doc! { field: { "$exists": false } },
        update: doc! { "$set": { field: value } }.into(),
        problem,
    }))
}

/// Renames `from` to `to` in every document of `T` that has `from` (one `updateMany` with
/// `$rename`): `from` is the stored name of the previous version (no field of the model any
/// more, hence a string), `to` a typed path of the model as it stores it now
/// ([`field!`](crate::field)): `rename_field("text", field!(Review, body))`.
pub fn rename_field<T: Model, V: ?Sized, S: ?Sized>(from: &str, to: Path<T, V, S>) -> Step {
    rename_step::<T>(from, to.as_str())
}

/// The previous release's [`rename_field`], naming both fields by their stored names.
#[deprecated(
    since = "0.2.0",
    note = "use `rename_field(\"old_name\", field!(T, new_field))`: the field renamed to is a typed path of the model"
)]
pub fn rename_field_by_name<T: Model>(from: &str, to: &str) -> Step {
    rename_step::<T>(from, to)
}

fn rename_step<T: Model>(from: &str, to: &str) -> Step {
    Step(Arc::new(Simple {
        collection: T::COLLECTION,
        description: format!("rename_field `{}.{from}` to `{to}`", T::COLLECTION),
        fields: vec![to.to_owned()],
        filter: doc! { from: { "$exists": true } },
        update: doc! { "$rename": { from: to } }.into(),
        problem: None,
    }))
}

/// A field of text: what [`truncate`] shortens (`String`, or an `Option` of one).
#[diagnostic::on_unimplemented(
    message = "`truncate` shortens text, and `{Self}` is not a `String`",
    label = "not a `String` field"
)]
pub trait TextField {}
impl TextField for String {}
impl TextField for Option<String> {}

/// Shortens the string `field` of `T` to `max_chars` code points where it is longer (one
/// pipeline update, `$substrCP`): before a new `max_length`. `field` is a typed path of a
/// `String` field ([`field!`](crate::field)): `truncate(field!(Customer, name), 40)`.
pub fn truncate<T: Model, V: TextField + ?Sized, S: ?Sized>(
    field: Path<T, V, S>,
    max_chars: u32,
) -> Step {
    truncate_step::<T>(field.as_str(), max_chars)
}

/// The previous release's [`truncate`], naming the field by its stored name.
#[deprecated(
    since = "0.2.0",
    note = "use `truncate(field!(T, field), max_chars)`: a typed path of a `String` field"
)]
pub fn truncate_by_name<T: Model>(field: &str, max_chars: u32) -> Step {
    truncate_step::<T>(field, max_chars)
}

fn truncate_step<T: Model>(field: &str, max_chars: u32) -> Step {
    let path = format!("${field}");
    let length = doc! { "$cond": [
        { "$eq": [{ "$type": path.as_str() }, "string"] },
        { "$strLenCP": path.as_str() },
        0,
    ] };
    Step(Arc::new(Simple {
        collection: T::COLLECTION,
        description: format!(
            "truncate `{}.{field}` to {max_chars} characters",
            T::COLLECTION
        ),
        fields: vec![field.to_owned()],
        filter: doc! { "$expr": { "$gt": [length, i64::from(max_chars)] } },
        update: vec![
            doc! { "$set": { field: { "$substrCP": [path.as_str(), 0, i64::from(max_chars)] } } },
        ]
        .into(),
        problem: None,
    }))
}

/// Which document of a group of duplicates [`dedupe`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Keep {
    /// The one with the smallest `_id`: the oldest for ObjectIds (and ids that grow with
    /// time), an arbitrary member for uuids or strings.
    Oldest,
    /// The one with the largest `_id`: the newest for ObjectIds, an arbitrary member for uuids
    /// or strings.
    Newest,
}

struct Dedupe {
    collection: &'static str,
    keys: Vec<String>,
    keep: Keep,
    /// The model's collection, where the unique index on `keys` is declared.
    spec: fn() -> CollectionSpec,
}

/// Which documents the unique index on a dedupe's keys holds: it meets a duplicate only among
/// those.
#[derive(Debug, Clone, Default, PartialEq)]
struct IndexScope {
    /// `sparse`: a document lacking every key is not in the index.
    sparse: bool,
    /// `partialFilterExpression`: only the documents it matches are.
    partial: Option<Document>,
}

impl Dedupe {
    /// The scope of the model's unique index on exactly these keys (any order); a dedupe with
    /// no such index groups as a plain unique index would.
    fn scope(&self) -> IndexScope {
        let spec = (self.spec)();
        let mut wanted: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        spec.indexes
            .iter()
            .filter(|index| index.unique)
            .find(|index| {
                let mut keys: Vec<&str> = index.keys.keys().map(String::as_str).collect();
                keys.sort_unstable();
                keys == wanted
            })
            .map(|index| IndexScope {
                sparse: index.sparse,
                partial: index.partial_filter.clone(),
            })
            .unwrap_or_default()
    }

    /// The documents the index holds (`None`: every document).
    fn indexed(&self, scope: &IndexScope) -> Option<Document> {
        let mut all: Vec<Document> = Vec::new();
        if let Some(partial) = &scope.partial {
            all.push(partial.clone());
        }
        if scope.sparse {
            let any: Vec<Document> = self
                .keys
                .iter()
                .map(|k| doc! { k.as_str(): { "$exists": true } })
                .collect();
            all.push(doc! { "$or": any });
        }
        match all.len() {
            0 => None,
            1 => all.pop(),
            _ => Some(doc! { "$and": all }),
        }
    }

    /// The groups of duplicates, one small document each (`{ _id: { k0, k1, .. }, keep, n }`),
    /// keyed as the index keys them: a missing key and `null` are one value (`$ifNull`),
    /// numbers compare by value, strings by the collection's collation (the aggregation's and
    /// the index's default), among the documents the index holds.
    fn pipeline(&self, scope: &IndexScope) -> Vec<Document> {
        let mut group_id = Document::new();
        for (i, key) in self.keys.iter().enumerate() {
            group_id.insert(
                format!("k{i}"),
                doc! { "$ifNull": [format!("${key}"), Bson::Null] },
            );
        }
        let kept = if self.keep == Keep::Oldest {
            "$min"
        } else {
            "$max"
        };
        let mut pipeline = Vec::new();
        if let Some(indexed) = self.indexed(scope) {
            pipeline.push(doc! { "$match": indexed });
        }
        pipeline.push(doc! { "$group": {
            "_id": group_id,
            "keep": { kept: "$_id" },
            "n": { "$sum": 1 },
        } });
        pipeline.push(doc! { "$match": { "n": { "$gt": 1 } } });
        pipeline
    }

    /// The members of `group` that are not kept: the documents the index holds with the
    /// group's key values (`$eq: null` also matches a missing key, as the index keys it), but
    /// the kept one.
    fn others(&self, scope: &IndexScope, group: &Document) -> Option<Document> {
        let key = group.get_document("_id").ok()?;
        let keep = group.get("keep")?.clone();
        let mut all: Vec<Document> = self.indexed(scope).into_iter().collect();
        for (i, field) in self.keys.iter().enumerate() {
            let value = key.get(format!("k{i}")).cloned().unwrap_or(Bson::Null);
            all.push(doc! { field.as_str(): { "$eq": value } });
        }
        all.push(doc! { "_id": { "$ne": keep } });
        Some(doc! { "$and": all })
    }
}

impl Work for Dedupe {
    fn describe(&self) -> String {
        format!(
            "dedupe `{}` on ({}), keeping the {}",
            self.collection,
            self.keys.join(", "),
            if self.keep == Keep::Oldest {
                "oldest"
            } else {
                "newest"
            }
        )
    }

    fn collection(&self) -> &str {
        self.collection
    }

    fn dedupes(&self) -> Option<&[String]> {
        Some(&self.keys)
    }

    fn problems(&self, collections: &[CollectionSpec]) -> Vec<String> {
        let mut problems: Vec<String> = self
            .keys
            .iter()
            .filter_map(|f| field_problem(collections, self.collection, f))
            .collect();
        if self.keys.is_empty() {
            problems.push("dedupe needs at least one key".to_owned());
        }
        problems
    }

    fn pending<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let mut pipeline = self.pipeline(&self.scope());
            pipeline.push(doc! { "$group": {
                "_id": Bson::Null,
                "extra": { "$sum": { "$subtract": ["$n", 1] } },
            } });
            let total: Vec<Document> = db
                .collection::<Document>(self.collection)
                .aggregate(pipeline)
                .max_time(OPERATOR_TIME_LIMIT)
                .await?
                .try_collect()
                .await?;
            Ok(total.first().map_or(0, |t| match t.get("extra") {
                Some(Bson::Int32(n)) => *n as u64,
                Some(Bson::Int64(n)) => *n as u64,
                Some(Bson::Double(n)) => *n as u64,
                _ => 0,
            }))
        })
    }

    /// Streams the groups (one small document each, [`BATCH`] per `getMore`), and removes each
    /// group's other members [`BATCH`] at a time, copied to the archive first: the memory
    /// held is one batch, whatever the number or size of the groups.
    fn run<'a>(&'a self, cx: &'a mut StepContext) -> BoxFuture<'a, Result<StepCounts>> {
        Box::pin(async move {
            let archive = format!("{}_dedupe_{}", self.collection, cx.version());
            let collection = cx.db().collection::<Document>(self.collection);
            // the parts of the documents removed (`same_id_as`) go with them
            let parts = crate::relations::part::parts_of(self.collection);
            let scope = self.scope();
            let mut groups = collection
                .aggregate(self.pipeline(&scope))
                .batch_size(BATCH as u32)
                .await?;
            while let Some(group) = groups.try_next().await? {
                let Some(others) = self.others(&scope, &group) else {
                    continue;
                };
                loop {
                    cx.ensure_lock()?;
                    // any `BATCH` of them (each batch is deleted before the next find): no
                    // order needed, so no sort (the unique index on the keys is built after
                    // the step: without another index on them this find scans)
                    let copies: Vec<Document> = collection
                        .find(others.clone())
                        .limit(BATCH)
                        .await?
                        .try_collect()
                        .await?;
                    if copies.is_empty() {
                        break;
                    }
                    let ids: Vec<Bson> = copies
                        .iter()
                        .filter_map(|c| c.get("_id").cloned())
                        .collect();
                    cx.add_counts(StepCounts::new(copies.len() as u64, 0));
                    // copied first, then deleted: a run cut in between copies them again (the
                    // archive keeps one copy per `_id`) and deletes them then
                    archive_copies(cx.db(), &archive, copies).await?;
                    // only those still in the group: one changed meanwhile stays
                    let doomed =
                        doc! { "$and": [others.clone(), { "_id": { "$in": ids.clone() } }] };
                    let deleted = if parts.is_empty() {
                        collection.delete_many(doomed).await?.deleted_count
                    } else {
                        // their parts are archived beside them, then deleted with them in one
                        // transaction: no part outlives its owner
                        for part in &parts {
                            let copies: Vec<Document> = cx
                                .db()
                                .collection::<Document>(part)
                                .find(doc! { "_id": { "$in": ids.clone() } })
                                .await?
                                .try_collect()
                                .await?;
                            if !copies.is_empty() {
                                let archive = format!("{part}_dedupe_{}", cx.version());
                                archive_copies(cx.db(), &archive, copies).await?;
                            }
                        }
                        delete_with_parts(cx.db(), self.collection, doomed, &parts).await?
                    };
                    cx.add_counts(StepCounts::new(0, deleted));
                    if deleted == 0 {
                        // every one read was changed since: the next read finds the rest
                        break;
                    }
                }
            }
            Ok(cx.counts())
        })
    }
}

/// Copies `copies` into `archive`, one copy per `_id` (a copy already there is kept).
async fn archive_copies(db: &Database, archive: &str, copies: Vec<Document>) -> Result<()> {
    let inserted = db
        .collection::<Document>(archive)
        .insert_many(copies)
        .ordered(false)
        .await;
    if let Err(error) = inserted {
        let only_duplicates = match error.kind.as_ref() {
            mongodb::error::ErrorKind::InsertMany(e) => {
                e.write_concern_error.is_none()
                    && e.write_errors
                        .as_ref()
                        .is_some_and(|w| w.iter().all(|w| w.code == 11000))
            }
            _ => false,
        };
        if !only_duplicates {
            return Err(error.into());
        }
    }
    Ok(())
}

/// Deletes the documents of `collection` that `filter` matches and their parts in `parts`, in
/// one transaction; returns the documents deleted.
async fn delete_with_parts(
    db: &Database,
    collection: &'static str,
    filter: Document,
    parts: &[String],
) -> Result<u64> {
    let deadline = crate::sync::transaction::TRANSACTION_DEADLINE;
    let (deleted, _) = crate::sync::transaction::in_transaction(db, deadline, |session| {
        let (db, filter, parts) = (db.clone(), filter.clone(), parts.to_vec());
        Box::pin(async move {
            let owners = db.collection::<Document>(collection);
            let ids: Vec<Bson> = owners
                .find(filter)
                .projection(doc! { "_id": 1 })
                .session(&mut *session)
                .await?
                .stream(&mut *session)
                .try_collect::<Vec<Document>>()
                .await?
                .into_iter()
                .filter_map(|d| d.get("_id").cloned())
                .collect();
            if ids.is_empty() {
                return Ok(0);
            }
            let deleted = owners
                .delete_many(doc! { "_id": { "$in": ids.clone() } })
                .session(&mut *session)
                .await?
                .deleted_count;
            crate::relations::part::delete_parts_in(&db, &parts, &ids, &mut *session).await?;
            Ok(deleted)
        })
    })
    .await?;
    Ok(deleted)
}

/// Keeps one document of `T` per value of `keys` (stored fields), before a unique index on
/// them: the others are copied to `<collection>_dedupe_<version>` and deleted, never lost.
/// Their parts (`#[collection(same_id_as = T)]`) are copied to `<part>_dedupe_<version>` and
/// deleted with them, in one transaction per batch. Reports the duplicates matched and the
/// documents removed.
///
/// Documents are grouped exactly as the model's unique index on these keys keys them: only
/// those the index holds (a `sparse` index leaves out the documents lacking every key, a
/// partial one those its filter does not match), a missing key and `null` as one value,
/// numbers by value and strings by the collection's default collation. The groups are read
/// as a stream and each group's documents a batch at a time, so memory stays bounded however
/// many duplicates there are. When the index build after the step still meets duplicates
/// (instances of the older version kept writing), `apply` runs the step again, a few times,
/// before it records the version failed with the step pending again.
///
/// `keys` are typed paths of the model ([`field!`](crate::field)), one or a tuple of up to
/// four: `dedupe(field!(Customer, email), Keep::Oldest)`,
/// `dedupe((field!(Seat, row), field!(Seat, number)), Keep::Oldest)`.
pub fn dedupe<T: Model>(keys: impl DedupeKeys<T>, keep: Keep) -> Step {
    dedupe_step::<T>(keys.stored_paths(), keep)
}

/// The previous release's [`dedupe`], naming the keys by their stored names.
#[deprecated(
    since = "0.2.0",
    note = "use `dedupe(field!(T, key), keep)` or `dedupe((field!(T, a), field!(T, b)), keep)`: typed paths of the model"
)]
pub fn dedupe_by_name<T: Model>(keys: &[&str], keep: Keep) -> Step {
    dedupe_step::<T>(keys.iter().map(|k| (*k).to_owned()).collect(), keep)
}

fn dedupe_step<T: Model>(keys: Vec<String>, keep: Keep) -> Step {
    Step(Arc::new(Dedupe {
        collection: T::COLLECTION,
        keys,
        keep,
        spec: T::collection_spec,
    }))
}

/// The keys of a [`dedupe`]: a typed path of `T` ([`field!`](crate::field)), or a tuple of two
/// to four.
pub trait DedupeKeys<T: ?Sized> {
    /// The stored paths, in order.
    fn stored_paths(&self) -> Vec<String>;
}

impl<T: ?Sized, V: ?Sized, S: ?Sized> DedupeKeys<T> for Path<T, V, S> {
    fn stored_paths(&self) -> Vec<String> {
        vec![self.as_str().to_owned()]
    }
}

macro_rules! dedupe_tuple {
    ($(($($v:ident $s:ident $i:tt),+))*) => {$(
        impl<T: ?Sized, $($v: ?Sized, $s: ?Sized),+> DedupeKeys<T> for ($(Path<T, $v, $s>,)+) {
            fn stored_paths(&self) -> Vec<String> {
                vec![$(self.$i.as_str().to_owned()),+]
            }
        }
    )*};
}

dedupe_tuple! {
    (V0 S0 0)
    (V0 S0 0, V1 S1 1)
    (V0 S0 0, V1 S1 1, V2 S2 2)
    (V0 S0 0, V1 S1 1, V2 S2 2, V3 S3 3)
}

/// Where a copy's source id is read.
#[derive(Clone)]
enum IdAt {
    /// The field holds the id itself (a reference turning into the copy).
    Field,
    /// The copy's `_id` (rewrite copies present).
    CopyId,
    /// Another field of the holder, a reference to the same source.
    Reference(String),
}

struct Copies<T> {
    field: String,
    at: IdAt,
    name: &'static str,
    types: PhantomData<fn() -> T>,
}

impl<T: Model> Copies<T> {
    fn copy<'a>(&self, collections: &'a [CollectionSpec]) -> Option<&'a crate::CopySpec> {
        spec(collections, T::COLLECTION)?
            .copies
            .iter()
            .find(|c| c.path == self.field)
    }

    /// The holders still to rewrite: of a copy inside arrays of values, those with one element
    /// to rewrite (`$elemMatch` per array).
    fn holders_filter(&self, copy: Option<&crate::CopySpec>) -> Document {
        let field = self.field.as_str();
        let conditions = match &self.at {
            IdAt::Field => {
                doc! { field: { "$exists": true, "$ne": null, "$not": { "$type": "object" } } }
            }
            IdAt::CopyId => doc! { format!("{field}._id"): { "$exists": true } },
            IdAt::Reference(reference) => match copy.filter(|c| !c.arrays.is_empty()) {
                // in an element: `null` matches an absent field too
                Some(copy) => {
                    return copy.element_match(doc! {
                        reference.as_str(): { "$exists": true, "$ne": null },
                        field: null,
                    })
                }
                None => doc! {
                    reference.as_str(): { "$exists": true, "$ne": null },
                    "$or": [{ field: { "$exists": false } }, { field: null }],
                },
            },
        };
        match copy {
            Some(copy) => copy.element_match(conditions),
            None => conditions,
        }
    }

    /// Where the source's id is read in a holder.
    fn id_path(&self) -> String {
        match &self.at {
            IdAt::Field => self.field.clone(),
            IdAt::CopyId => format!("{}._id", self.field),
            IdAt::Reference(reference) => reference.clone(),
        }
    }
}

impl<T: Model + Send + Sync> Work for Copies<T> {
    fn describe(&self) -> String {
        match &self.at {
            IdAt::Field => format!("{} `{}.{}`", self.name, T::COLLECTION, self.field),
            IdAt::CopyId => format!("{} `{}.{}`", self.name, T::COLLECTION, self.field),
            IdAt::Reference(reference) => format!(
                "{} `{}.{}` from the reference `{reference}`",
                self.name,
                T::COLLECTION,
                self.field
            ),
        }
    }

    fn collection(&self) -> &str {
        T::COLLECTION
    }

    fn problems(&self, collections: &[CollectionSpec]) -> Vec<String> {
        let mut problems = Vec::new();
        match self.copy(collections) {
            None => problems.push(format!(
                "`{}.{}` is not an `#[extended_ref]` of the model",
                T::COLLECTION,
                self.field
            )),
            Some(copy) if copy.shape == CopyShape::Many => problems.push(format!(
                "`{}.{}` is an array of copies: {} fills one copy per holder",
                T::COLLECTION,
                self.field,
                self.name
            )),
            Some(copy) => {
                // inside arrays of values, the reference is read in the copy's own element
                let inner = copy.arrays.last().map(|a| format!("{a}."));
                if let (IdAt::Reference(reference), Some(inner)) = (&self.at, inner) {
                    if !reference.starts_with(&inner) {
                        problems.push(format!(
                            "`{}.{}` is a copy in each element of `{}[]`: {} reads its source from a reference in the same element (`{inner}...`), and `{reference}` is not one",
                            T::COLLECTION,
                            self.field,
                            inner.trim_end_matches('.'),
                            self.name
                        ));
                    }
                }
            }
        }
        if let IdAt::Reference(reference) = &self.at {
            problems.extend(field_problem(collections, T::COLLECTION, reference));
        }
        problems
    }

    /// The walk of the sources in `_id` order after the checkpoint, and each source's
    /// holders found by the id they hold.
    fn queries(&self, collections: &[CollectionSpec]) -> Vec<(String, QuerySpec)> {
        let Some(copy) = self.copy(collections) else {
            return Vec::new();
        };
        vec![
            (
                copy.source.clone(),
                QuerySpec::library(format!("a batch of the sources of {}", self.field))
                    .range("_id")
                    .sort("_id", 1)
                    .limit(BATCH),
            ),
            (
                T::COLLECTION.to_owned(),
                QuerySpec::library(format!("the holders of a source at {}", self.id_path()))
                    .eq(self.id_path()),
            ),
        ]
    }

    fn pending<'a>(&'a self, db: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let collections = [T::collection_spec()];
            Ok(db
                .collection::<Document>(T::COLLECTION)
                .count_documents(self.holders_filter(self.copy(&collections)))
                .max_time(OPERATOR_TIME_LIMIT)
                .await?)
        })
    }

    fn run<'a>(&'a self, cx: &'a mut StepContext) -> BoxFuture<'a, Result<StepCounts>> {
        Box::pin(async move {
            let collections = [T::collection_spec()];
            let copy = self.copy(&collections).cloned().ok_or_else(|| {
                Error::Schema(crate::SchemaError {
                    problems: self.problems(&collections),
                })
            })?;
            let mut projection = doc! { "_id": 1 };
            for field in &copy.fields {
                projection.insert(field.as_str(), 1);
            }
            let identities = crate::Collation::for_identities(T::__default_collation().as_ref());
            // the sources, a batch at a time after the checkpoint; one statement per source
            loop {
                let mut sources = cx.next_batch(&copy.source, doc! {}, BATCH).await?;
                let Some(last) = sources.last().and_then(|s| s.get("_id")).cloned() else {
                    break;
                };
                let updates: Vec<Document> = sources
                    .iter_mut()
                    .filter_map(|source| {
                        let id = source.get("_id")?.clone();
                        let mut value = doc! { "_id": id.clone() };
                        for field in &copy.fields {
                            if let Some(v) = crate::sync::get_path(source, field) {
                                value.insert(field.as_str(), v);
                            }
                        }
                        // inside arrays of values, every element whose id is the source's
                        let at = self.id_path();
                        let filters = copy.element_filters_at(&at, &id);
                        let mut statement = doc! {
                            "q": { at: id },
                            "u": { "$set": { copy.element_path(): value } },
                            "multi": true,
                        };
                        if !filters.is_empty() {
                            statement.insert("arrayFilters", filters);
                        }
                        // the held id compared exactly, as every fan-out compares it
                        if let Some(collation) = &identities {
                            statement.insert("collation", collation.to_document());
                        }
                        Some(statement)
                    })
                    .collect();
                cx.ensure_lock()?;
                let counts = update_command(cx.db(), T::COLLECTION, updates).await?;
                cx.save(last, counts).await?;
            }
            Ok(cx.counts())
        })
    }
}

/// A stored reference becomes the extended reference's copy: every document of `T` whose
/// `field` holds a source's id (not yet a copy) gets `{ _id, <copied fields> }` read from the
/// source, for a copy declared where a reference was. The sources are read in batches of 1,000
/// and each batch is one `update` command (one statement per source), so 3,000 orders of 1,000
/// customers take two round trips per 1,000 customers, not one per customer.
///
/// `field` is the copy's typed path in the model ([`field!`](crate::field)):
/// `reference_to_copy(field!(Order, customer))`.
pub fn reference_to_copy<T: Model + Send + Sync + 'static, V: ?Sized, S: ?Sized>(
    field: Path<T, V, S>,
) -> Step {
    reference_to_copy_step::<T>(field.as_str())
}

/// The previous release's [`reference_to_copy`], naming the copy by its stored path.
#[deprecated(
    since = "0.2.0",
    note = "use `reference_to_copy(field!(T, copy))`: a typed path of the model"
)]
pub fn reference_to_copy_by_name<T: Model + Send + Sync + 'static>(field: &str) -> Step {
    reference_to_copy_step::<T>(field)
}

fn reference_to_copy_step<T: Model + Send + Sync + 'static>(field: &str) -> Step {
    Step(Arc::new(Copies::<T> {
        field: field.to_owned(),
        at: IdAt::Field,
        name: "reference_to_copy",
        types: PhantomData,
    }))
}

/// Copies of `field` are rewritten from their sources (stale ones corrected), a batch of 1,000
/// sources per `update` command. For a copy added beside an existing reference, fill it from
/// that reference with [`FillCopies::from_reference`]. `field` is the copy's typed path in the
/// model ([`field!`](crate::field)): `fill_copies(field!(Order, lines.product))`.
pub fn fill_copies<T: Model + Send + Sync + 'static, V: ?Sized, S: ?Sized>(
    field: Path<T, V, S>,
) -> FillCopies<T> {
    FillCopies {
        field: field.as_str().to_owned(),
        reference: None,
        types: PhantomData,
    }
}

/// The previous release's [`fill_copies`], naming the copy by its stored path.
#[deprecated(
    since = "0.2.0",
    note = "use `fill_copies(field!(T, copy))`: a typed path of the model"
)]
pub fn fill_copies_by_name<T: Model + Send + Sync + 'static>(field: &str) -> FillCopies<T> {
    FillCopies {
        field: field.to_owned(),
        reference: None,
        types: PhantomData,
    }
}

/// The step [`fill_copies`] returns (a [`Step`] through `Into`).
#[derive(Debug)]
pub struct FillCopies<T> {
    field: String,
    reference: Option<String>,
    types: PhantomData<fn() -> T>,
}

impl<T> FillCopies<T> {
    /// The holders whose copy is missing get it from their reference `reference` (a typed path
    /// of the model holding the source's id: `.from_reference(field!(Order, customer_id))`).
    #[allow(clippy::wrong_self_convention)] // reads as "fill copies from the reference"
    pub fn from_reference<V: ?Sized, S: ?Sized>(mut self, reference: Path<T, V, S>) -> Self {
        self.reference = Some(reference.as_str().to_owned());
        self
    }

    /// The previous release's [`FillCopies::from_reference`], naming the reference by its
    /// stored path.
    #[deprecated(
        since = "0.2.0",
        note = "use `from_reference(field!(T, reference))`: a typed path of the model"
    )]
    #[allow(clippy::wrong_self_convention)]
    pub fn from_reference_by_name(mut self, reference: &str) -> Self {
        self.reference = Some(reference.to_owned());
        self
    }
}

impl<T: Model + Send + Sync + 'static> From<FillCopies<T>> for Step {
    fn from(fill: FillCopies<T>) -> Step {
        Step(Arc::new(Copies::<T> {
            field: fill.field,
            at: match fill.reference {
                Some(reference) => IdAt::Reference(reference),
                None => IdAt::CopyId,
            },
            name: "fill_copies",
            types: PhantomData,
        }))
    }
}

/// The work of a [`custom`] step.
type CustomFn =
    dyn for<'a> Fn(&'a mut StepContext) -> BoxFuture<'a, Result<StepCounts>> + Send + Sync;

struct Custom {
    description: String,
    collection: String,
    run: Box<CustomFn>,
}

impl Work for Custom {
    fn describe(&self) -> String {
        self.description.clone()
    }

    fn collection(&self) -> &str {
        &self.collection
    }

    fn problems(&self, collections: &[CollectionSpec]) -> Vec<String> {
        if spec(collections, &self.collection).is_none() {
            vec![format!("`{}` is not part of the schema", self.collection)]
        } else {
            Vec::new()
        }
    }

    /// The walk [`StepContext::next_batch`] sends when the step walks its collection.
    fn queries(&self, _collections: &[CollectionSpec]) -> Vec<(String, QuerySpec)> {
        vec![(
            self.collection.clone(),
            QuerySpec::library("a batch of `next_batch` after the checkpoint")
                .range("_id")
                .sort("_id", 1),
        )]
    }

    fn pending<'a>(&'a self, _: &'a Database) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async { Ok(0) })
    }

    fn reruns(&self) -> bool {
        false
    }

    fn run<'a>(&'a self, cx: &'a mut StepContext) -> BoxFuture<'a, Result<StepCounts>> {
        (self.run)(cx)
    }
}

/// A step of your own on `T`'s collection: `description` is recorded (its checksum too) and
/// `run` receives the [`StepContext`]: the database, the checkpoint an interrupted run saved,
/// and [`StepContext::next_batch`] / [`StepContext::save`] to walk a collection in batches.
/// Write it idempotent: after an interruption it runs again from the last saved checkpoint.
/// A step fails with any [`crate::Error`]; an error of your own is `Err(Error::other(..))`
/// ([`crate::Error::other`]).
pub fn custom<T: Model>(
    description: &str,
    run: impl for<'a> Fn(&'a mut StepContext) -> BoxFuture<'a, Result<StepCounts>>
        + Send
        + Sync
        + 'static,
) -> Step {
    Step(Arc::new(Custom {
        description: description.to_owned(),
        collection: T::COLLECTION.to_owned(),
        run: Box::new(run),
    }))
}
