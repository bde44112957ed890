//! `$lookup` aggregations of a relation, with the related documents in the order of a local
//! array of references.

use std::collections::HashMap;
use std::marker::PhantomData;

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::action::Action as _;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;

use super::{id_key, Attached, Detached};
use crate::{Document, Result};

/// The field the related documents are put in by the generated `$lookup`, removed again before
/// the outer document is deserialized.
pub const RELATED_FIELD: &str = "__related";

/// An aggregation: stages on the outer collection, then one `$lookup`. Filters, sorts and
/// limits always run before the `$lookup`, so only the documents kept are joined (seed 003:
/// "reduce the input first"). Described by [`crate::Relation::lookup`] and
/// [`crate::Relation::children`] (`D` = [`Detached`]: the pipeline, for `explain`), read by
/// [`crate::Relation::lookup_in`] and [`crate::Relation::children_in`] (`D` = [`Attached`]:
/// await it).
#[derive(Debug, Clone)]
pub struct Lookup<L, R, D = Detached> {
    outer: &'static str,
    from: &'static str,
    local_field: &'static str,
    foreign_field: &'static str,
    in_local_order: bool,
    before: Vec<BsonDocument>,
    related: Vec<BsonDocument>,
    collations: JoinCollations,
    on: D,
    types: PhantomData<fn() -> (L, R)>,
}

/// The collations of a lookup's join: mongod compares `localField` and `foreignField` under the
/// aggregation's collation (the command's, or else the outer collection's default: jstests
/// `aggregation/sources/lookup/collation_lookup.js`), not the related collection's.
#[derive(Debug, Clone, Default)]
struct JoinCollations {
    /// What the join compares under (`None`: the simple collation). Ids held in documents are
    /// compared exactly; a join on the related documents' own `_id` runs under their default,
    /// which their `_id` index has, and the documents it returns are kept only where their
    /// `_id` is exactly the outer one's (as [`crate::Ref::resolve_all`] keeps them).
    join: Option<crate::Collation>,
    /// The collation the aggregation states: the join's, where the outer collection's default
    /// is another (`None`: the default is the join's, nothing to state).
    stated: Option<crate::Collation>,
    /// The collation the related `find` of `explain` states (where the related collection's
    /// default is not the join's).
    related: Option<crate::Collation>,
}

impl JoinCollations {
    fn of<L: Document, R: Document>(foreign_field: &str) -> Self {
        let non_simple = |c: Option<crate::Collation>| c.filter(|c| !c.is_simple());
        let outer = non_simple(L::__default_collation());
        let foreign = non_simple(R::__default_collation());
        let join = if foreign_field == "_id" {
            foreign.clone()
        } else {
            None
        };
        let key = |c: &Option<crate::Collation>| crate::Collation::planner_key(c.as_ref());
        let state = |default: &Option<crate::Collation>| {
            (key(default) != key(&join))
                .then(|| join.clone().unwrap_or_else(crate::Collation::simple))
        };
        JoinCollations {
            stated: state(&outer),
            related: state(&foreign),
            join,
        }
    }
}

/// An outer document with the documents it is related to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Joined<L, R> {
    /// The outer document.
    pub doc: L,
    /// The related documents (at most one for a single reference).
    pub related: Vec<R>,
}

impl<L, R> Joined<L, R> {
    /// The related document of a single reference.
    pub fn one(&self) -> Option<&R> {
        self.related.first()
    }
}

impl<L: Document, R: Document> Lookup<L, R> {
    pub(super) fn new(
        outer: &'static str,
        from: &'static str,
        local_field: &'static str,
        foreign_field: &'static str,
        in_local_order: bool,
    ) -> Self {
        Lookup {
            outer,
            from,
            local_field,
            foreign_field,
            in_local_order,
            before: Vec::new(),
            related: Vec::new(),
            collations: JoinCollations::of::<L, R>(foreign_field),
            on: Detached,
            types: PhantomData,
        }
    }

    /// The same aggregation, run in `db` when awaited.
    pub(super) fn attach<'a>(self, db: &'a Database) -> Lookup<L, R, Attached<'a>> {
        Lookup {
            outer: self.outer,
            from: self.from,
            local_field: self.local_field,
            foreign_field: self.foreign_field,
            in_local_order: self.in_local_order,
            before: self.before,
            related: self.related,
            collations: self.collations,
            on: Attached::new(db),
            types: PhantomData,
        }
    }
}

impl<'a, L, R> Lookup<L, R, Attached<'a>> {
    /// Runs the aggregation in `session` (inside the caller's transaction when one is
    /// started: the join sees the transaction's own writes).
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.on.session = Some(session);
        self
    }
}

impl<L: Document, R: Document, D> Lookup<L, R, D> {
    /// `$match` on the outer documents.
    ///
    /// The aggregation has one collation, the join's: on an outer collection whose default
    /// collation is not the join's (a case-insensitive collection joined on ids, which are
    /// compared exactly), it states the join's, and this filter, the sort and the related
    /// filter compare strings under it too.
    pub fn filter(mut self, filter: BsonDocument) -> Self {
        self.before.push(doc! { "$match": filter });
        self
    }

    /// `$sort` of the outer documents.
    pub fn sort(mut self, sort: BsonDocument) -> Self {
        self.before.push(doc! { "$sort": sort });
        self
    }

    /// `$skip` of outer documents.
    pub fn skip(mut self, n: u64) -> Self {
        self.before.push(doc! { "$skip": n as i64 });
        self
    }

    /// `$limit` of the outer documents.
    pub fn limit(mut self, n: i64) -> Self {
        self.before.push(doc! { "$limit": n });
        self
    }

    /// A filter on the related documents (inside the `$lookup`).
    pub fn related_filter(mut self, filter: BsonDocument) -> Self {
        self.related.push(doc! { "$match": filter });
        self
    }

    /// The order of the related documents (inside the `$lookup`).
    pub fn related_sort(mut self, sort: BsonDocument) -> Self {
        self.related.push(doc! { "$sort": sort });
        self
    }

    /// At most `n` related documents per outer document.
    pub fn related_limit(mut self, n: i64) -> Self {
        self.related.push(doc! { "$limit": n });
        self
    }

    /// The `$lookup` stage.
    pub fn lookup_stage(&self) -> BsonDocument {
        let mut lookup = doc! {
            "from": self.from,
            "localField": self.local_field,
            "foreignField": self.foreign_field,
        };
        if !self.related.is_empty() {
            lookup.insert("pipeline", self.related.clone());
        }
        lookup.insert("as", RELATED_FIELD);
        doc! { "$lookup": lookup }
    }

    /// The whole pipeline: the outer stages, then the `$lookup`.
    pub fn pipeline(&self) -> Vec<BsonDocument> {
        let mut pipeline = self.before.clone();
        pipeline.push(self.lookup_stage());
        pipeline
    }

    /// The `aggregate` command (for `explain`), with the join's collation where the outer
    /// collection's default is another (see [`Lookup::filter`]).
    pub fn aggregate_command(&self) -> BsonDocument {
        let mut command =
            doc! { "aggregate": self.outer, "pipeline": self.pipeline(), "cursor": {} };
        if let Some(collation) = &self.collations.stated {
            command.insert("collation", collation.to_document());
        }
        command
    }

    /// The `find` the `$lookup` performs on the related collection for one outer document
    /// whose local field is `local_value` (for `explain`: it shows the index the join uses).
    pub fn related_find_command(&self, local_value: Bson) -> BsonDocument {
        let value = match local_value {
            Bson::Array(values) => Bson::Document(doc! { "$in": values }),
            value => value,
        };
        let mut filter = doc! { self.foreign_field: value };
        let mut command = doc! { "find": self.from };
        for stage in &self.related {
            if let Ok(extra) = stage.get_document("$match") {
                filter = doc! { "$and": [filter, extra.clone()] };
            } else if let Ok(sort) = stage.get_document("$sort") {
                command.insert("sort", sort.clone());
            } else if let Some(limit) = stage.get("$limit") {
                command.insert("limit", limit.clone());
            }
        }
        command.insert("filter", filter);
        if let Some(collation) = &self.collations.related {
            command.insert("collation", collation.to_document());
        }
        command
    }

    /// Runs the aggregation (in `session` if given) and deserializes each outer document with
    /// its related ones.
    async fn read(
        &self,
        db: &Database,
        session: Option<&mut ClientSession>,
    ) -> Result<Vec<Joined<L, R>>>
    where
        L: DeserializeOwned,
        R: DeserializeOwned,
    {
        let outer = db.collection::<BsonDocument>(self.outer);
        let aggregate = outer.aggregate(self.pipeline()).optional(
            self.collations
                .stated
                .as_ref()
                .and_then(crate::Collation::to_driver),
            |a, c| a.collation(c),
        );
        let rows: Vec<BsonDocument> = match session {
            Some(session) => {
                let mut cursor = aggregate.session(&mut *session).await?;
                cursor.stream(&mut *session).try_collect().await?
            }
            None => aggregate.await?.try_collect().await?,
        };
        let mut out = Vec::with_capacity(rows.len());
        for mut raw in rows {
            let mut related = match raw.remove(RELATED_FIELD) {
                Some(Bson::Array(related)) => related,
                _ => Vec::new(),
            };
            if self.collations.join.is_some() {
                // joined on the related `_id` under its collation: the same id, exactly
                related = exactly_the_local_ids(related, raw.get(self.local_field));
            }
            let related = if self.in_local_order {
                in_order_of(related, raw.get(self.local_field))
            } else {
                related
            };
            let related = related
                .into_iter()
                .map(crate::bson_compat::from_bson::<R>)
                .collect::<std::result::Result<Vec<R>, _>>()
                .map_err(mongodb::error::Error::from)?;
            let doc =
                crate::bson_compat::from_document::<L>(raw).map_err(mongodb::error::Error::from)?;
            out.push(Joined { doc, related });
        }
        Ok(out)
    }
}

impl<L: Document, R: Document> Lookup<L, R> {
    /// Runs the aggregation and deserializes each outer document with its related ones.
    ///
    /// # Errors
    ///
    /// As awaiting [`crate::Relation::lookup_in`]'s lookup.
    #[deprecated(
        since = "0.2.0",
        note = "use `Relation::lookup_in(&db)` or `Relation::children_in(&db)` (the same setters, plus `.session`) and await it"
    )]
    pub async fn run(&self, db: &Database) -> Result<Vec<Joined<L, R>>>
    where
        L: DeserializeOwned,
        R: DeserializeOwned,
    {
        self.read(db, None).await
    }
}

impl<'a, L, R> std::future::IntoFuture for Lookup<L, R, Attached<'a>>
where
    L: Document + DeserializeOwned + 'a,
    R: Document + DeserializeOwned + 'a,
{
    type Output = Result<Vec<Joined<L, R>>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    /// Runs the aggregation: each outer document with its related ones.
    ///
    /// # Errors
    ///
    /// The driver's errors, and [`crate::Error::Serialization`] for a document that does not
    /// decode as `L` or `R`.
    fn into_future(self) -> Self::IntoFuture {
        let Lookup {
            outer,
            from,
            local_field,
            foreign_field,
            in_local_order,
            before,
            related,
            collations,
            on,
            types,
        } = self;
        let lookup = Lookup {
            outer,
            from,
            local_field,
            foreign_field,
            in_local_order,
            before,
            related,
            collations,
            on: Detached,
            types,
        };
        Box::pin(async move { lookup.read(on.db, on.session).await })
    }
}

/// The looked-up documents whose `_id` is exactly one of the local ids (`local`: one id, or an
/// array of them).
fn exactly_the_local_ids(related: Vec<Bson>, local: Option<&Bson>) -> Vec<Bson> {
    let ids: std::collections::HashSet<String> = match local {
        Some(Bson::Array(ids)) => ids.iter().map(|id| id_key(Some(id))).collect(),
        other => other.into_iter().map(|id| id_key(Some(id))).collect(),
    };
    related
        .into_iter()
        .filter(|doc| ids.contains(&id_key(doc.as_document().and_then(|d| d.get("_id")))))
        .collect()
}

/// Orders looked-up documents as their ids appear in the local array.
fn in_order_of(related: Vec<Bson>, local: Option<&Bson>) -> Vec<Bson> {
    let Some(Bson::Array(ids)) = local else {
        return related;
    };
    let mut by_id: HashMap<String, Bson> = related
        .into_iter()
        .map(|doc| (id_key(doc.as_document().and_then(|d| d.get("_id"))), doc))
        .collect();
    ids.iter()
        .filter_map(|id| by_id.remove(&id_key(Some(id))))
        .collect()
}
