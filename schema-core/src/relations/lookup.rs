//! `$lookup` aggregations of a relation, with the related documents in the order of a local
//! array of references.

use std::collections::HashMap;
use std::marker::PhantomData;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;
use serde::de::DeserializeOwned;

use super::id_key;
use crate::{Document, Result};

/// The field the related documents are put in by the generated `$lookup`, removed again before
/// the outer document is deserialized.
pub const RELATED_FIELD: &str = "__related";

/// An aggregation: stages on the outer collection, then one `$lookup`. Filters, sorts and
/// limits always run before the `$lookup`, so only the documents kept are joined (seed 003:
/// "reduce the input first").
#[derive(Debug, Clone)]
pub struct Lookup<L, R> {
    outer: &'static str,
    from: &'static str,
    local_field: &'static str,
    foreign_field: &'static str,
    in_local_order: bool,
    before: Vec<BsonDocument>,
    related: Vec<BsonDocument>,
    types: PhantomData<fn() -> (L, R)>,
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
            types: PhantomData,
        }
    }

    /// `$match` on the outer documents.
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

    /// The `aggregate` command (for `explain`).
    pub fn aggregate_command(&self) -> BsonDocument {
        doc! { "aggregate": self.outer, "pipeline": self.pipeline(), "cursor": {} }
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
        command
    }

    /// Runs the aggregation and deserializes each outer document with its related ones.
    pub async fn run(&self, db: &Database) -> Result<Vec<Joined<L, R>>>
    where
        L: DeserializeOwned,
        R: DeserializeOwned,
    {
        let mut cursor = db
            .collection::<BsonDocument>(self.outer)
            .aggregate(self.pipeline())
            .await?;
        let mut out = Vec::new();
        while let Some(mut raw) = cursor.try_next().await? {
            let related = match raw.remove(RELATED_FIELD) {
                Some(Bson::Array(related)) => related,
                _ => Vec::new(),
            };
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
