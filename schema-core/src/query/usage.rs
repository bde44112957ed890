//! `Schema::index_usage`: `$indexStats` of every collection, beside the queries each index
//! serves, so an index nothing uses can be hidden and watched before it is dropped.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::Database;

use crate::{Result, Schema};

/// One index of one collection, as the server counts its use.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IndexUsage {
    /// The collection.
    pub collection: String,
    /// The index's name.
    pub index: String,
    /// Operations that used it since `since` (`$indexStats` `accesses.ops`, on the member
    /// that answered: counters are per `mongod` and start again at its restart).
    pub ops: i64,
    /// Since when the server counts.
    pub since: Option<DateTime>,
    /// The declared and library queries the schema fitted to it.
    pub serves: Vec<String>,
    /// Whether the schema knows the index (declared, derived or a relationship's).
    pub in_schema: bool,
}

impl Schema {
    /// `$indexStats` of every collection of the schema, each index with the queries the schema
    /// fitted to it. An index with no queries and few `ops` is a candidate for hiding (`collMod`
    /// with `hidden: true`), then dropping once nothing slowed down; never judge from `ops`
    /// alone, since they count from `since` on one member only.
    ///
    /// # Errors
    /// The server's error for `$indexStats` (which needs the `indexStats` privilege).
    pub async fn index_usage(&self, db: &Database) -> Result<Vec<IndexUsage>> {
        let mut out = Vec::new();
        for spec in self.collections() {
            let stats: Vec<Document> = db
                .collection::<Document>(&spec.name)
                .aggregate([doc! { "$indexStats": {} }])
                .await?
                .try_collect()
                .await?;
            for stat in stats {
                let Ok(name) = stat.get_str("name") else {
                    continue;
                };
                let accesses = stat.get_document("accesses").ok();
                let ops = match accesses.and_then(|a| a.get("ops")) {
                    Some(Bson::Int32(v)) => i64::from(*v),
                    Some(Bson::Int64(v)) => *v,
                    Some(Bson::Double(v)) => *v as i64,
                    _ => 0,
                };
                let since = accesses.and_then(|a| a.get_datetime("since").ok()).copied();
                let serves = spec
                    .queries
                    .iter()
                    .chain(&spec.library_queries)
                    .filter(|q| q.fit.as_ref().and_then(|f| f.index.as_deref()) == Some(name))
                    .map(|q| q.name.clone())
                    .collect();
                out.push(IndexUsage {
                    collection: spec.name.clone(),
                    index: name.to_owned(),
                    ops,
                    since,
                    serves,
                    in_schema: name == "_id_" || spec.indexes.iter().any(|i| i.name == name),
                });
            }
        }
        out.sort_by(|a, b| (&a.collection, &a.index).cmp(&(&b.collection, &b.index)));
        Ok(out)
    }
}
