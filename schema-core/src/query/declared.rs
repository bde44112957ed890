//! Declared queries: `#[query(name = "...", eq(..), range(..), sort(..), limit = N, project = T,
//! index = "...")]` on a `Document` is a [`QuerySpec`] in its collection's spec (fitted to an
//! index by `Schema::build`, proven by `Schema::prove`) and a typed function that runs it.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::Database;

use crate::Result;

/// One declared access pattern of a collection, by stored paths: what the planner's rules fit
/// to an index.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct QuerySpec {
    /// The query's name (`agent_queue`): the `comment` of every command that runs it.
    pub name: String,
    /// Fields compared for equality, in declaration order.
    pub eq: Vec<String>,
    /// Fields compared with `$in`, with the largest list a caller may pass.
    pub any_of: Vec<(String, usize)>,
    /// Fields compared with a range, after the equalities.
    pub range: Vec<String>,
    /// The sort, in order: stored path and direction (1 or -1).
    pub sort: Vec<(String, i32)>,
    /// The most documents one run returns.
    pub limit: Option<i64>,
    /// The stored fields a projection keeps (`project = Row`); empty for whole documents.
    pub project: Vec<String>,
    /// The index the query must be served by (`index = "name"`), checked by `Schema::build`.
    pub index: Option<String>,
    /// The `$jsonSchema` of the projection row, compared with the collection's own fields by
    /// `Schema::build`.
    #[doc(hidden)]
    pub project_schema: Option<Document>,
    /// How `Schema::build` found it served (`None` before `build`).
    pub fit: Option<super::QueryFit>,
    /// Where the query comes from: `true` for a `#[query]`, `false` for a query the library
    /// emits itself (a page, a lookup, a fan-out).
    pub declared: bool,
}

impl QuerySpec {
    /// A declared query named `name` with no conditions yet.
    pub fn new(name: impl Into<String>) -> Self {
        QuerySpec {
            name: name.into(),
            declared: true,
            ..QuerySpec::default()
        }
    }

    /// A query the library emits itself (pages, lookups, fan-outs), named for the report.
    pub fn library(name: impl Into<String>) -> Self {
        QuerySpec {
            name: name.into(),
            declared: false,
            ..QuerySpec::default()
        }
    }

    /// Adds an equality on `path`.
    pub fn eq(mut self, path: impl Into<String>) -> Self {
        self.eq.push(path.into());
        self
    }

    /// Adds a `$in` on `path` with at most `max` values.
    pub fn any_of(mut self, path: impl Into<String>, max: usize) -> Self {
        self.any_of.push((path.into(), max));
        self
    }

    /// Adds a range on `path`.
    pub fn range(mut self, path: impl Into<String>) -> Self {
        self.range.push(path.into());
        self
    }

    /// Adds a sort key (`1` / `-1` or a [`crate::SortDirection`]).
    pub fn sort(
        mut self,
        path: impl Into<String>,
        direction: impl Into<crate::SortDirection>,
    ) -> Self {
        self.sort.push((path.into(), direction.into().as_i32()));
        self
    }

    /// Sets the limit.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sets the projected stored fields.
    pub fn project(mut self, fields: &[&str]) -> Self {
        self.project = fields.iter().map(|f| (*f).to_owned()).collect();
        self
    }

    #[doc(hidden)]
    /// The projection of a `project = Row` (generated code): the row's stored fields.
    #[doc(hidden)]
    pub fn projection_of(mut self, stored: &[&str], has_id: bool, schema: Document) -> Self {
        self.project = stored.iter().map(|f| (*f).to_owned()).collect();
        if has_id {
            self.project.insert(0, "_id".to_owned());
        }
        self.project_schema = Some(schema);
        self
    }

    /// Requires the index named `name`.
    pub fn index(mut self, name: impl Into<String>) -> Self {
        self.index = Some(name.into());
        self
    }

    /// Every stored path the query reads or sorts on.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.eq
            .iter()
            .map(String::as_str)
            .chain(self.any_of.iter().map(|(p, _)| p.as_str()))
            .chain(self.range.iter().map(String::as_str))
            .chain(self.sort.iter().map(|(p, _)| p.as_str()))
    }

    /// The sort document.
    pub fn sort_document(&self) -> Document {
        let mut sort = Document::new();
        for (path, direction) in &self.sort {
            sort.insert(path.clone(), *direction);
        }
        sort
    }

    /// The projection document (`None` for whole documents).
    pub fn projection(&self) -> Option<Document> {
        if self.project.is_empty() {
            return None;
        }
        let mut projection = Document::new();
        let mut id = false;
        for field in &self.project {
            id |= field == "_id";
            projection.insert(field.clone(), 1_i32);
        }
        if !id {
            projection.insert("_id", 0_i32);
        }
        Some(projection)
    }

    /// A `find` command of this query for `collection` with `filter`, as run and explained.
    pub fn find_command(&self, collection: &str, filter: Document) -> Document {
        let mut command = doc! { "find": collection, "filter": filter };
        if !self.sort.is_empty() {
            command.insert("sort", self.sort_document());
        }
        if let Some(projection) = self.projection() {
            command.insert("projection", projection);
        }
        if let Some(limit) = self.limit {
            command.insert("limit", limit);
        }
        command.insert("comment", self.name.clone());
        command
    }
}

/// A run of a declared query, made by the function `#[query]` generates
/// (`Ticket::agent_queue(&db, "billing", &Status::Open)`): awaited directly, it returns the
/// matching documents (or the projection rows) in the declared order, at most `limit`; the
/// command's `comment` is the query's name, so profiler and log entries map back to it.
#[must_use = "a query does nothing until it is awaited"]
pub struct DeclaredQuery<'a, R, Row = R> {
    db: &'a Database,
    collection: &'static str,
    spec: QuerySpec,
    filter: Result<Document>,
    session: Option<&'a mut mongodb::ClientSession>,
    _types: PhantomData<fn() -> (R, Row)>,
}

impl<R, Row> std::fmt::Debug for DeclaredQuery<'_, R, Row> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclaredQuery")
            .field("collection", &self.collection)
            .field("spec", &self.spec)
            .field("filter", &self.filter)
            .finish()
    }
}

impl<'a, R, Row> DeclaredQuery<'a, R, Row>
where
    R: crate::Document,
{
    #[doc(hidden)]
    /// Used by generated code.
    #[doc(hidden)]
    pub fn __new(db: &'a Database, spec: QuerySpec, filter: Result<Document>) -> Self {
        DeclaredQuery {
            db,
            collection: R::COLLECTION,
            spec,
            filter,
            session: None,
            _types: PhantomData,
        }
    }

    /// Returns at most `limit` documents instead of the declared limit. A limit below 1 is
    /// refused ([`crate::Error::InvalidArgument`], nothing sent): `0` would read every
    /// document, and a negative one a single batch.
    pub fn limit(mut self, limit: i64) -> Self {
        if limit < 1 && self.filter.is_ok() {
            self.filter = Err(crate::Error::invalid_argument(
                "limit",
                format!("a declared query's limit of {limit}: it returns at most 1 or more rows"),
            ));
        }
        self.spec.limit = Some(limit);
        self
    }

    /// Reads in `session` (inside the caller's transaction when one is started: the rows
    /// include the transaction's own writes).
    pub fn session(mut self, session: &'a mut mongodb::ClientSession) -> Self {
        self.session = Some(session);
        self
    }

    /// The declared query.
    pub fn spec(&self) -> &QuerySpec {
        &self.spec
    }

    /// The filter document this run sends.
    ///
    /// # Errors
    /// A value that could not be serialized as its field is stored.
    pub fn filter(&self) -> Result<&Document> {
        self.filter.as_ref().map_err(Clone::clone)
    }

    /// The `find` command this run sends (what `explain` and `Schema::prove` read).
    ///
    /// # Errors
    /// A value that could not be serialized as its field is stored.
    pub fn command(&self) -> Result<Document> {
        Ok(self
            .spec
            .find_command(self.collection, self.filter()?.clone()))
    }

    /// The number of documents the filter matches (the declared limit left out), counted by
    /// the server with the same filter (`countDocuments`, served by the same index), in the
    /// session when one is set.
    ///
    /// # Errors
    /// A value that could not be serialized as its field is stored
    /// ([`crate::Error::Serialization`], nothing sent), and the driver's errors.
    pub async fn count(self) -> Result<u64> {
        let filter = self.filter?;
        let collection = self.db.collection::<Document>(self.collection);
        let count = collection
            .count_documents(filter)
            .comment(self.spec.name.clone());
        Ok(match self.session {
            Some(session) => count.session(session).await?,
            None => count.await?,
        })
    }

    /// `explain` of this run (`executionStats`).
    ///
    /// # Errors
    /// A value that could not be serialized, or the server's error.
    pub async fn explain(&self) -> Result<crate::ExplainSummary> {
        crate::explain(self.db, self.command()?).await
    }
}

impl<'a, R, Row> IntoFuture for DeclaredQuery<'a, R, Row>
where
    R: crate::Document + Send + Sync,
    Row: serde::de::DeserializeOwned + Send + Sync + 'a,
{
    type Output = Result<Vec<Row>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Vec<Row>>> + Send + 'a>>;

    /// Sends the `find` ([`DeclaredQuery::command`]).
    ///
    /// # Errors
    ///
    /// A value that could not be serialized as its field is stored
    /// ([`crate::Error::Serialization`], nothing sent), the driver's errors, and
    /// [`crate::Error::Serialization`] for a row that does not decode as `Row`.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let filter = self.filter?;
            let collection = self.db.collection::<Row>(self.collection);
            let mut find = collection.find(filter).comment(self.spec.name.clone());
            if !self.spec.sort.is_empty() {
                find = find.sort(self.spec.sort_document());
            }
            if let Some(projection) = self.spec.projection() {
                find = find.projection(projection);
            }
            if let Some(limit) = self.spec.limit {
                find = find.limit(limit);
            }
            let rows: Vec<Row> = match self.session {
                Some(session) => {
                    let mut cursor = find.session(&mut *session).await?;
                    cursor.stream(&mut *session).try_collect().await?
                }
                None => find.await?.try_collect().await?,
            };
            Ok(rows)
        })
    }
}
