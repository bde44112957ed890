//! Helpers that keep the bounds and copies of a document: subsets of children, capped embedded
//! arrays, and compare-and-set state changes.

use std::marker::PhantomData;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::sync::transaction::{in_transaction, TRANSACTION_DEADLINE};
use crate::{Document, Error, Ref, Result, SchemaError};

/// The integer type of a count field (`message_count: i64` or `i32`): every `$inc` and every
/// rebuilt count uses it, so a count never turns into another BSON type that its validator
/// (`bsonType: "int"` or `"long"`) rejects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CounterType {
    /// `i32`, BSON `int`.
    Int32,
    /// `i64`, BSON `long` (the default of a hand-written helper).
    #[default]
    Int64,
}

impl CounterType {
    /// `n` as a value of this type (saturating at `i32::MAX` for `Int32`).
    pub fn value(self, n: u64) -> Bson {
        match self {
            CounterType::Int32 => Bson::Int32(i32::try_from(n).unwrap_or(i32::MAX)),
            CounterType::Int64 => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
        }
    }
}

fn to_bson<V: Serialize>(value: &V) -> Result<Bson> {
    Ok(crate::model::document::stored_bson(value).map_err(mongodb::error::Error::from)?)
}

/// `#[subset(of = C, max = N, sort = "-at", count = "message_count")]` on a field of `P` holding
/// previews `V` (built with `From<&C>`): generated as a constant named after the field in upper
/// case (`Ticket::LAST_MESSAGE`).
#[derive(Debug)]
pub struct Subset<P, C, V> {
    path: &'static str,
    max: u64,
    sort_field: &'static str,
    sort_direction: i32,
    count: Option<&'static str>,
    count_type: CounterType,
    types: PhantomData<Types<P, C, V>>,
}

/// The types a `Subset` relates, without owning any.
type Types<P, C, V> = fn() -> (P, C, V);

/// The parent update one subset needs when a child is added: lets [`Subset::add_with`] keep
/// several subsets of the same child (say the last message and the three newest) in one
/// transaction, with the child inserted once.
pub trait SubsetOf<C> {
    /// The parent collection, the parent's id, an optional condition and the update.
    fn parent_update(&self, child: &C) -> Result<ParentUpdate>;
}

/// What [`SubsetOf::parent_update`] returns: the one update, filtered on the parent's `_id`
/// alone, that adds a child to one subset of its parent.
#[derive(Debug, Clone)]
pub struct ParentUpdate {
    parents: &'static str,
    parent: Bson,
    update: mongodb::options::UpdateModifications,
}

impl ParentUpdate {
    /// The parent's collection.
    pub fn collection(&self) -> &'static str {
        self.parents
    }
}

impl<P, C, V> SubsetOf<C> for Subset<P, C, V>
where
    P: Document,
    C: Document + Serialize + DeserializeOwned,
    V: for<'c> From<&'c C> + Serialize,
{
    fn parent_update(&self, child: &C) -> Result<ParentUpdate> {
        let raw =
            crate::model::document::stored_document(child).map_err(mongodb::error::Error::from)?;
        let preview = to_bson(&V::from(child))?;
        Ok(ParentUpdate {
            parents: P::COLLECTION,
            parent: self.parent_of(&raw)?,
            update: self.parent_write(preview),
        })
    }
}

impl<P, C, V> Subset<P, C, V> {
    /// Used by generated code.
    pub const fn new(
        path: &'static str,
        max: u64,
        sort_field: &'static str,
        sort_direction: i32,
        count: Option<&'static str>,
    ) -> Self {
        Subset {
            path,
            max,
            sort_field,
            sort_direction,
            count,
            count_type: CounterType::Int64,
            types: PhantomData,
        }
    }

    /// Used by generated code: the integer type of the count field.
    pub const fn count_type(mut self, count_type: CounterType) -> Self {
        self.count_type = count_type;
        self
    }
}

impl<P, C, V> Subset<P, C, V>
where
    P: Document,
    C: Document + Serialize + DeserializeOwned,
    V: for<'c> From<&'c C> + Serialize,
{
    /// The stored path of the subset in the parent.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The child's field that references the parent.
    pub fn parent_field(&self) -> Result<String> {
        let mut back = C::references()
            .into_iter()
            .filter(|r| r.target == P::COLLECTION);
        match (back.next(), back.next()) {
            (Some(reference), None) => Ok(reference.field),
            _ => Err(Error::Schema(SchemaError {
                problems: vec![format!(
                    "subset `{}.{}` needs `{}` to hold exactly one `#[reference]` to `{}`",
                    P::COLLECTION,
                    self.path,
                    C::COLLECTION,
                    P::COLLECTION
                )],
            })),
        }
    }

    fn parent_of(&self, child: &BsonDocument) -> Result<Bson> {
        let field = self.parent_field()?;
        crate::sync::get_path(child, &field).ok_or_else(|| {
            Error::Schema(SchemaError {
                problems: vec![format!("a `{}` child has no `{field}`", C::COLLECTION)],
            })
        })
    }

    /// The update that adds `preview` to the parent: `$push` with `$each`, `$sort` and
    /// `$slice` (the array never exceeds `max`), or for `max = 1` a `$set`; plus `$inc` on the
    /// count. For `max = 1` the filter returned keeps an older preview from replacing a newer
    /// one; `None` means no condition.
    pub fn update_for(&self, preview: &V) -> Result<(Option<BsonDocument>, BsonDocument)> {
        Ok(self.update_for_bson(to_bson(preview)?))
    }

    /// Inserts `child` and updates its parent's subset and count in one transaction (seed 003:
    /// "if the queue must never show a preview that disagrees with the thread"), retried on
    /// write conflicts. When the parent keeps several subsets of the same child, use
    /// [`Subset::add_with`] so the child is inserted once.
    pub async fn add(&self, db: &Database, child: &C) -> Result<()> {
        self.add_with(db, child, &[]).await
    }

    /// Like [`Subset::add`], also applying the updates of `others`, the other subsets of the
    /// same child (`Ticket::LAST_MESSAGE.add_with(&db, &message, &[&Ticket::RECENT])`), in the
    /// same transaction.
    pub async fn add_with(
        &self,
        db: &Database,
        child: &C,
        others: &[&(dyn SubsetOf<C> + Sync)],
    ) -> Result<()> {
        let raw =
            crate::model::document::stored_document(child).map_err(mongodb::error::Error::from)?;
        let mut updates = vec![self.parent_update(child)?];
        for other in others {
            updates.push(other.parent_update(child)?);
        }
        in_transaction(db, TRANSACTION_DEADLINE, |session| {
            let (db, raw, updates) = (db.clone(), raw.clone(), updates.clone());
            Box::pin(async move {
                db.collection::<BsonDocument>(C::COLLECTION)
                    .insert_one(raw)
                    .session(&mut *session)
                    .await?;
                for u in updates {
                    update_parent_in(&db, u, &mut *session).await?;
                }
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    /// Inserts `child`, then updates the parent, without a transaction: cheaper, with a short
    /// window in which the parent is behind; [`Subset::rebuild`] repairs a parent whose second
    /// write was lost.
    pub async fn add_then_update(&self, db: &Database, child: &C) -> Result<()> {
        let raw =
            crate::model::document::stored_document(child).map_err(mongodb::error::Error::from)?;
        let parent = self.parent_of(&raw)?;
        db.collection::<BsonDocument>(C::COLLECTION)
            .insert_one(raw)
            .await?;
        let update = self.parent_write(to_bson(&V::from(child))?);
        db.collection::<BsonDocument>(P::COLLECTION)
            .update_one(doc! { "_id": parent }, update)
            .await?;
        Ok(())
    }

    /// The parent's update for `preview`. A subset of many is the classic `$push` (`$each`,
    /// `$sort`, `$slice`) and `$inc`. A subset of one is a pipeline update whose `$cond` keeps a
    /// newer preview already there (the preview's sort key compared on the server), so the
    /// update filters on `_id` alone and needs no read before it: one command.
    fn parent_write(&self, preview: Bson) -> mongodb::options::UpdateModifications {
        if self.max != 1 {
            return self.update_for_bson(preview).1.into();
        }
        let path = format!("${}", self.path);
        let existing = format!("${}.{}", self.path, self.sort_field);
        let value = preview
            .as_document()
            .and_then(|p| p.get(self.sort_field))
            .cloned()
            .unwrap_or(Bson::Null);
        let newer_or_equal = if self.sort_direction < 0 {
            "$lte"
        } else {
            "$gte"
        };
        let admits = doc! { "$or": [
            { "$eq": [{ "$ifNull": [path.as_str(), Bson::Null] }, Bson::Null] },
            { "$eq": [{ "$ifNull": [existing.as_str(), Bson::Null] }, Bson::Null] },
            { newer_or_equal: [existing.as_str(), { "$literal": value }] },
        ] };
        let mut set = doc! {
            self.path: { "$cond": [admits, { "$literal": preview }, path.as_str()] },
        };
        if let Some(count) = self.count {
            let zero = self.count_type.value(0);
            set.insert(
                count,
                doc! { "$add": [{ "$ifNull": [format!("${count}"), zero] }, self.count_type.value(1)] },
            );
        }
        vec![doc! { "$set": set }].into()
    }

    fn update_for_bson(&self, preview: Bson) -> (Option<BsonDocument>, BsonDocument) {
        let mut update = BsonDocument::new();
        let mut condition = None;
        if self.max == 1 {
            let key = format!("{}.{}", self.path, self.sort_field);
            let value = preview
                .as_document()
                .and_then(|p| p.get(self.sort_field))
                .cloned()
                .unwrap_or(Bson::Null);
            let op = if self.sort_direction < 0 {
                "$lte"
            } else {
                "$gte"
            };
            condition = Some(doc! { "$or": [ { self.path: null }, { key: { op: value } } ] });
            update.insert("$set", doc! { self.path: preview });
        } else {
            update.insert(
                "$push",
                doc! { self.path: {
                    "$each": [preview],
                    "$sort": { self.sort_field: self.sort_direction },
                    "$slice": self.max as i64,
                } },
            );
        }
        if let Some(count) = self.count {
            update.insert("$inc", doc! { count: self.count_type.value(1) });
        }
        (condition, update)
    }

    /// Recomputes one parent's subset and count from its children, reading the children and
    /// writing the parent in one transaction: a child added meanwhile by [`Subset::add`]
    /// conflicts with it and one of the two is retried, so no increment is lost.
    pub async fn rebuild(&self, db: &Database, parent: &Ref<P>) -> Result<()>
    where
        P::Id: Serialize,
    {
        self.rebuild_id(db, parent.to_bson()).await
    }

    async fn rebuild_id(&self, db: &Database, parent: Bson) -> Result<()> {
        let field = self.parent_field()?;
        let (path, max, count, count_type) = (self.path, self.max, self.count, self.count_type);
        let sort = doc! { self.sort_field: self.sort_direction };
        in_transaction(db, TRANSACTION_DEADLINE, |session| {
            let (db, parent, field, sort) =
                (db.clone(), parent.clone(), field.clone(), sort.clone());
            Box::pin(async move {
                let children = db.collection::<BsonDocument>(C::COLLECTION);
                let mut newest = children
                    .find(doc! { field.as_str(): parent.clone() })
                    .sort(sort)
                    .limit(max as i64)
                    .session(&mut *session)
                    .await?;
                let mut previews: Vec<Bson> = Vec::new();
                while let Some(raw) = newest.next(&mut *session).await.transpose()? {
                    let child: C =
                        mongodb::bson::from_document(raw).map_err(mongodb::error::Error::from)?;
                    previews.push(to_bson(&V::from(&child))?);
                }
                let mut set = BsonDocument::new();
                if max == 1 {
                    set.insert(path, previews.into_iter().next().unwrap_or(Bson::Null));
                } else {
                    set.insert(path, previews);
                }
                if let Some(count) = count {
                    let n = children
                        .count_documents(doc! { field.as_str(): parent.clone() })
                        .session(&mut *session)
                        .await?;
                    set.insert(count, count_type.value(n));
                }
                db.collection::<BsonDocument>(P::COLLECTION)
                    .update_one(doc! { "_id": parent }, doc! { "$set": set })
                    .session(&mut *session)
                    .await?;
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    /// Recomputes every parent's subset and count from the children (the repair job of the
    /// two-writes option), walking the parents by `_id` in batches, each parent in its own
    /// transaction. Returns the number of parents rebuilt. To resume after an error from the
    /// last parent done, use [`Subset::resume_rebuild_all`].
    pub async fn rebuild_all(&self, db: &Database) -> Result<u64> {
        let mut progress = RebuildProgress::default();
        self.resume_rebuild_all(db, &mut progress).await?;
        Ok(progress.rebuilt)
    }

    /// [`Subset::rebuild_all`] from where `progress` says it stopped: after an error,
    /// `progress` holds the last parent done, and calling again with it continues after that
    /// parent.
    ///
    /// ```no_run
    /// # use mongo_schema_core::{Document, RebuildProgress, Subset};
    /// # async fn f<P: Document, C: Document + serde::Serialize + serde::de::DeserializeOwned, V: for<'c> From<&'c C> + serde::Serialize>(db: &mongodb::Database, subset: &Subset<P, C, V>) -> mongo_schema_core::Result<()> {
    /// let mut progress = RebuildProgress::default();
    /// while let Err(error) = subset.resume_rebuild_all(db, &mut progress).await {
    ///     eprintln!("rebuild stopped after {:?}: {error}; resuming", progress.last_done);
    /// }
    /// println!("{} parents rebuilt", progress.rebuilt);
    /// # Ok(()) }
    /// ```
    pub async fn resume_rebuild_all(
        &self,
        db: &Database,
        progress: &mut RebuildProgress,
    ) -> Result<()> {
        let parents = db.collection::<BsonDocument>(P::COLLECTION);
        loop {
            let filter = match &progress.last_done {
                Some(last) => doc! { "_id": { "$gt": last.clone() } },
                None => doc! {},
            };
            let batch: Vec<BsonDocument> = parents
                .find(filter)
                .projection(doc! { "_id": 1 })
                .sort(doc! { "_id": 1 })
                .limit(REBUILD_BATCH)
                .await?
                .try_collect()
                .await?;
            if batch.is_empty() {
                return Ok(());
            }
            for parent in batch {
                let Some(id) = parent.get("_id") else {
                    continue;
                };
                if let Err(error) = self.rebuild_id(db, id.clone()).await {
                    progress.failed_at = Some(id.clone());
                    return Err(error);
                }
                progress.failed_at = None;
                progress.rebuilt += 1;
                progress.last_done = Some(id.clone());
            }
        }
    }
}

/// Parents are read this many at a time by [`Subset::rebuild_all`].
const REBUILD_BATCH: i64 = 200;

/// How far [`Subset::resume_rebuild_all`] got.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RebuildProgress {
    /// Parents rebuilt so far.
    pub rebuilt: u64,
    /// The `_id` of the last parent rebuilt (parents are walked in `_id` order).
    pub last_done: Option<Bson>,
    /// The parent whose rebuild failed, if the last call ended on an error: resuming retries it
    /// (right after a transient error), unless [`RebuildProgress::skip_failed`] is called.
    pub failed_at: Option<Bson>,
}

impl RebuildProgress {
    /// Resumes after the parent that failed instead of retrying it (one that its validator
    /// rejects, for example).
    pub fn skip_failed(&mut self) {
        if let Some(failed) = self.failed_at.take() {
            self.last_done = Some(failed);
        }
    }
}

/// Inside a transaction: the parent's one update, by `_id`.
pub(crate) async fn update_parent_in(
    db: &Database,
    u: ParentUpdate,
    session: &mut ClientSession,
) -> Result<mongodb::results::UpdateResult> {
    Ok(db
        .collection::<BsonDocument>(u.parents)
        .update_one(doc! { "_id": u.parent }, u.update)
        .session(&mut *session)
        .await?)
}
