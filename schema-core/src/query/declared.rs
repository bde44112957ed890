//! Declared queries: `#[query(name = "...", eq(..), range(..), sort(..), limit = N, project = T,
//! index = "...")]` on a `Document` is a [`QuerySpec`] in its collection's spec (fitted to an
//! index by `Schema::build`, proven by `Schema::prove`) and a typed function that runs it.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;

use futures_util::TryStreamExt;
use mongodb::action::Action as _;
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
    /// Read in keyset pages (`#[query(.., pages)]`): the sort ends with `_id`, the tie-break
    /// that makes every position unique, so the index fitted and derived for the query serves
    /// every page.
    pub pages: bool,
    /// The collation the query runs under (`#[query(.., collation(...))]`, or the collection's),
    /// sent with every command that runs it; `None` is the simple collation.
    pub collation: Option<crate::Collation>,
    /// The geo condition (`near(field)`, `within(field)`), by stored path.
    pub geo: Option<super::fit::GeoPredicate>,
    /// The query compares a held id (a reference, a copy's `_id`) and states no collation, on a
    /// collection of another default: it runs under the simple collation (held ids are compared
    /// exactly), and `Schema::build` refuses it when it also compares strings.
    #[doc(hidden)]
    pub held_ids_exactly: bool,
    /// The query reads a time series collection: a near query sends its conditions in a
    /// `$match` after `$geoNear`, which takes no `query` there.
    pub time_series: bool,
    /// Arrays of sub-documents whose conditions are one element's: the query's conditions on
    /// paths under each are sent as one `$elemMatch` on it (`items` for `range(items.price)`),
    /// so one element holds them all, and mongod's index bounds compound within that element.
    /// Outermost first; a declared query names every array its conditions cross
    /// ([`QuerySpec::elem_match_from_schema`]).
    pub elem_match: Vec<String>,
}

/// The field `$geoNear` writes each document's distance to, removed from the rows.
const DISTANCE_FIELD: &str = "__mongo_schema_distance";

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
        let key = (path.into(), direction.into().as_i32());
        // paged: the `_id` tie-break stays last
        match self.sort.last() {
            Some((last, _)) if self.pages && last == "_id" && key.0 != "_id" => {
                let at = self.sort.len() - 1;
                self.sort.insert(at, key);
            }
            _ => self.sort.push(key),
        }
        self
    }

    /// Sets the limit.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Reads the query in keyset pages: appends `_id` to the sort (in the direction of the
    /// last sort key, ascending when there is none) unless the sort already holds it.
    pub fn pages(mut self) -> Self {
        self.pages = true;
        if !self.sort.iter().any(|(path, _)| path == "_id") {
            let direction = self.sort.last().map_or(1, |(_, d)| *d);
            self.sort.push(("_id".to_owned(), direction));
        }
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

    /// Returns the documents whose GeoJSON point at `path` is nearest to a point first, within a
    /// distance (both given when the query runs): a `$geoNear` stage, which mongod answers
    /// with a `2dsphere` index on `path` and no other.
    pub fn near(mut self, path: impl Into<String>) -> Self {
        self.geo = Some(super::fit::GeoPredicate {
            path: path.into(),
            kind: super::fit::GeoKind::Near,
        });
        self
    }

    /// Keeps the documents whose GeoJSON point at `path` lies inside an area (given when the
    /// query runs): `$geoWithin`.
    pub fn within(mut self, path: impl Into<String>) -> Self {
        self.geo = Some(super::fit::GeoPredicate {
            path: path.into(),
            kind: super::fit::GeoKind::Within,
        });
        self
    }

    /// Marks the query as one of a time series collection ([`QuerySpec::time_series`]; set by
    /// `CollectionSpec::query` on a time series collection).
    pub fn on_time_series(mut self) -> Self {
        self.time_series = true;
        self
    }

    /// Whether it is a `near` query (run as a `$geoNear` aggregation).
    pub fn is_near(&self) -> bool {
        self.geo
            .as_ref()
            .is_some_and(|g| g.kind == super::fit::GeoKind::Near)
    }

    #[doc(hidden)]
    /// Used by generated code: see [`QuerySpec::held_ids_exactly`].
    pub fn __held_ids_exactly(mut self) -> Self {
        self.held_ids_exactly = true;
        self
    }

    /// Runs the query under `collation` (an index serves its string conditions and sort only
    /// under the same collation).
    pub fn collation(mut self, collation: crate::Collation) -> Self {
        self.collation = Some(collation);
        self
    }

    /// Sends the conditions on paths under the array `path` (an array of sub-documents) as one
    /// `$elemMatch` on it: one element holds them all (`{ items: { $elemMatch: { price: {
    /// $gte: 10, $lt: 20 } } } }`), where `{ "items.price": { $gte: 10, $lt: 20 } }` matches an
    /// order whose items cost 5 and 100.
    pub fn elem_match(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        if !self.elem_match.contains(&path) {
            self.elem_match.push(path);
            // outermost first, so that an inner array's conditions nest in the outer one's
            self.elem_match
                .sort_by_key(|p| (p.split('.').count(), p.clone()));
        }
        self
    }

    /// [`QuerySpec::elem_match`] for every array of sub-documents that a condition's path
    /// crosses (`eq`, `any_of`, `range`), by the collection's `$jsonSchema`: a declared query
    /// means one element for each array (generated code and `Schema::build` call it).
    pub fn elem_match_from_schema(mut self, schema: &Document) -> Self {
        let conditions: Vec<String> = self
            .eq
            .iter()
            .chain(self.any_of.iter().map(|(p, _)| p))
            .chain(&self.range)
            .filter(|p| p.contains('.'))
            .cloned()
            .collect();
        for path in conditions {
            for array in crate::json_schema::array_prefixes(schema, &path) {
                if array.len() < path.len() {
                    self = self.elem_match(array);
                }
            }
        }
        self
    }

    /// `filter` with the conditions on paths under each of [`QuerySpec::elem_match`]'s arrays
    /// moved into one `$elemMatch` on it, relative to its elements (and an inner array's into
    /// one inside it). A condition already on the array itself stays beside it: an operator
    /// document takes the `$elemMatch` among its operators, another value is kept under `$and`.
    pub fn elem_match_filter(&self, filter: Document) -> Document {
        let arrays: Vec<&str> = self.elem_match.iter().map(String::as_str).collect();
        super::builder::elem_match_in(filter, &arrays)
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
            .chain(self.geo.iter().map(|g| g.path.as_str()))
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
        if let Some(collation) = &self.collation {
            command.insert("collation", collation.to_document());
        }
        command.insert("comment", self.name.clone());
        command
    }

    /// The `aggregate` pipeline of a near query: `$geoNear` (nearest first, within
    /// `max_metres`, on the `2dsphere` index of the query's field, with `filter` as its
    /// `query`), then the limit and the projection, without the distance.
    ///
    /// On a time series collection mongod refuses `$geoNear`'s `query`
    /// (`document_source_geo_near.cpp`, `jstests/core/timeseries/query/
    /// timeseries_geonear*.js`: "$geoNear with a 'query' on a time-series collection is not
    /// supported"): the filter is a `$match` after it, before the limit, so the limit still
    /// counts the matching documents nearest first.
    pub fn near_pipeline(
        &self,
        filter: Document,
        point: &crate::geo::Point,
        max_metres: f64,
    ) -> Vec<Document> {
        let path = self.geo.as_ref().map_or("", |g| g.path.as_str());
        let mut geo_near = doc! {
            "near": point.to_document(),
            "distanceField": DISTANCE_FIELD,
            "maxDistance": max_metres,
            "spherical": true,
            "key": path,
        };
        let mut pipeline = Vec::new();
        if self.time_series {
            pipeline.push(doc! { "$geoNear": geo_near });
            if !filter.is_empty() {
                pipeline.push(doc! { "$match": filter });
            }
        } else {
            geo_near.insert("query", filter);
            pipeline.push(doc! { "$geoNear": geo_near });
        }
        if let Some(limit) = self.limit {
            pipeline.push(doc! { "$limit": limit });
        }
        match self.projection() {
            Some(projection) => pipeline.push(doc! { "$project": projection }),
            None => pipeline.push(doc! { "$unset": DISTANCE_FIELD }),
        }
        pipeline
    }

    /// The `aggregate` command of a near query ([`QuerySpec::near_pipeline`]), as run and
    /// explained.
    pub fn near_command(
        &self,
        collection: &str,
        filter: Document,
        point: &crate::geo::Point,
        max_metres: f64,
    ) -> Document {
        let mut command = doc! {
            "aggregate": collection,
            "pipeline": self.near_pipeline(filter, point, max_metres),
            "cursor": {},
        };
        if let Some(collation) = &self.collation {
            command.insert("collation", collation.to_document());
        }
        command.insert("comment", self.name.clone());
        command
    }

    /// The driver's collation option of the query's commands.
    pub(crate) fn driver_collation(&self) -> Option<mongodb::options::Collation> {
        self.collation
            .as_ref()
            .and_then(crate::Collation::to_driver)
    }
}

/// The types a [`DeclaredQuery`] carries without holding a value of them.
type Types<R, Row, P> = PhantomData<fn() -> (R, Row, P)>;

/// Marker of a declared query read as one list of rows (no `pages` in its `#[query]`).
#[derive(Debug, Clone, Copy)]
pub enum Unpaged {}

/// Marker of a declared query read in keyset pages (`#[query(.., pages)]`): its action takes
/// [`DeclaredQuery::after`] and [`DeclaredQuery::page`].
#[derive(Debug, Clone, Copy)]
pub enum Paged {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Paged {}
}

/// Implemented by [`Paged`] alone: the page methods of a [`DeclaredQuery`] exist for the queries
/// declared with `pages`, whose sort ends with the `_id` tie-break and whose index serves it.
#[diagnostic::on_unimplemented(
    message = "this declared query is not read in pages: add `pages` to its `#[query(..)]`",
    label = "`after` and `page` need a query declared with `pages`",
    note = "`#[query(name = \"..\", eq(..), sort(..), limit = 50, pages)]` appends `_id` to the sort as the tie-break, and the index fitted and derived for the query serves every page"
)]
pub trait Paging: sealed::Sealed {}

impl Paging for Paged {}

/// Where the next page of a declared query starts: the sort key values of the last row of a
/// page, `_id` last, and a digest of the call that issued it (the query's arguments, as its
/// filter holds them). Serializable, to hand to a client and take back (its values are compared
/// as values, and a value shaped like a query operator is refused). A cursor passed to another
/// query, or to the same query called with other arguments (the page of one venue continued
/// for another), is refused: its position means nothing there. The digest tells calls apart;
/// it is no signature (a client can forge a cursor, as it could forge any key).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueryCursor {
    query: String,
    keys: Vec<mongodb::bson::Bson>,
    call: String,
}

impl QueryCursor {
    /// The name of the declared query whose page it continues: another query refuses it.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The last row's stored value of each sort key, in the order of the sort (`_id` last).
    pub fn keys(&self) -> &[mongodb::bson::Bson] {
        &self.keys
    }
}

/// The digest of a call of a declared query: 64-bit FNV-1a of its filter's BSON bytes (the
/// query's arguments as sent) and of the `near` point and distance, in hex. Stable across
/// processes and versions of the crate as long as the filter is built the same way.
fn call_digest(filter: &Document, near: Option<&(crate::geo::Point, f64)>) -> String {
    let mut bytes = Vec::new();
    let _ = filter.to_writer(&mut bytes);
    if let Some((point, max)) = near {
        bytes.extend_from_slice(format!("{point:?} {max}").as_bytes());
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// A run of a declared query, made by the function `#[query]` generates
/// (`Ticket::agent_queue(&db, "billing", &Status::Open)`): awaited directly, it returns the
/// matching documents (or the projection rows) in the declared order, at most `limit`; the
/// command's `comment` is the query's name, so profiler and log entries map back to it.
///
/// A query declared with `pages` ([`Paged`]) also reads keyset pages: [`page`](Self::page)
/// returns a [`Page`](crate::Page) whose `next` cursor, passed to [`after`](Self::after),
/// continues where it stopped (no row twice, none skipped, no empty last page).
#[must_use = "a query does nothing until it is awaited"]
pub struct DeclaredQuery<'a, R, Row = R, P = Unpaged> {
    db: &'a Database,
    collection: &'static str,
    spec: QuerySpec,
    filter: Result<Document>,
    after: Option<QueryCursor>,
    session: Option<&'a mut mongodb::ClientSession>,
    /// A near query's point and distance in metres.
    near: Option<(crate::geo::Point, f64)>,
    _types: Types<R, Row, P>,
}

impl<R, Row, P> std::fmt::Debug for DeclaredQuery<'_, R, Row, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclaredQuery")
            .field("collection", &self.collection)
            .field("spec", &self.spec)
            .field("filter", &self.filter)
            .field("after", &self.after)
            .finish()
    }
}

impl<'a, R, Row, P> DeclaredQuery<'a, R, Row, P>
where
    R: crate::Document,
{
    #[doc(hidden)]
    /// Used by generated code.
    #[doc(hidden)]
    pub fn __new(db: &'a Database, spec: QuerySpec, filter: Result<Document>) -> Self {
        // a condition through an array of sub-documents means one element: its conditions are
        // one `$elemMatch` (only a dotted path can cross one)
        let dotted = spec
            .eq
            .iter()
            .chain(spec.any_of.iter().map(|(p, _)| p))
            .chain(&spec.range)
            .any(|p| p.contains('.'));
        let spec = if dotted {
            spec.elem_match_from_schema(&R::bson_schema())
        } else {
            spec
        };
        let filter = filter.map(|filter| spec.elem_match_filter(filter));
        DeclaredQuery {
            db,
            collection: R::COLLECTION,
            spec,
            filter,
            after: None,
            session: None,
            near: None,
            _types: PhantomData,
        }
    }

    #[doc(hidden)]
    /// Used by generated code: the point and the distance of a `near` query. A distance that is
    /// negative or not finite is refused when the query is awaited
    /// ([`crate::Error::InvalidArgument`], nothing sent).
    pub fn __near(mut self, point: &crate::geo::Point, max_metres: f64) -> Self {
        if (!max_metres.is_finite() || max_metres < 0.0) && self.filter.is_ok() {
            self.filter = Err(crate::Error::invalid_argument(
                "max_metres",
                format!("a near query's distance of {max_metres} metres: it is 0 or more"),
            ));
        }
        self.near = Some((*point, max_metres));
        self
    }

    /// Returns at most `limit` documents instead of the declared limit (a page of `limit` rows
    /// when read with [`page`](Self::page)). A limit below 1 is refused
    /// ([`crate::Error::InvalidArgument`], nothing sent): `0` would read every document, and a
    /// negative one a single batch.
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

    /// Continue after `cursor` (the `next` of the previous [`page`](Self::page), or that
    /// `Option` itself: `None` reads from the first row). A cursor with another number of keys
    /// than the query's sort, or with a value shaped like a query operator, is refused when the
    /// query is awaited ([`crate::Error::InvalidArgument`] / [`crate::Error::UnsafeValue`],
    /// nothing sent).
    pub fn after(mut self, cursor: impl Into<Option<QueryCursor>>) -> Self
    where
        P: Paging,
    {
        self.after = cursor.into();
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

    /// The filter document of the query's conditions (without a page cursor's ranges; see
    /// [`command`](Self::command) for what a run sends).
    ///
    /// # Errors
    /// A value that could not be serialized as its field is stored.
    pub fn filter(&self) -> Result<&Document> {
        self.filter.as_ref().map_err(Clone::clone)
    }

    /// The filter this run sends: the conditions, and after a cursor the keyset ranges of the
    /// rows that follow it (one index range each, under a rooted `$or` when there are several).
    fn run_filter(&self) -> Result<Document> {
        let base = self.filter()?.clone();
        let Some(after) = &self.after else {
            return Ok(base);
        };
        if after.query != self.spec.name {
            return Err(crate::Error::invalid_argument(
                "after",
                format!(
                    "a cursor of query `{}` passed to query `{}`: pass the `next` of a page of this query",
                    after.query, self.spec.name
                ),
            ));
        }
        if after.keys.len() != self.spec.sort.len() {
            return Err(crate::Error::invalid_argument(
                "after",
                format!(
                    "a cursor of {} keys for query `{}`, sorted on {} keys: pass the `next` of a page of this query",
                    after.keys.len(),
                    self.spec.name,
                    self.spec.sort.len()
                ),
            ));
        }
        let schema = R::bson_schema();
        for (key, (path, _)) in after.keys.iter().zip(&self.spec.sort) {
            crate::literal::refuse_operators("a declared query's page cursor", key)?;
            if !super::keyset::may_hold(&schema, path, key) {
                return Err(crate::Error::invalid_argument(
                    "after",
                    format!(
                        "the cursor's key `{path}` is {key}, which `{path}` of `{}` never holds: pass the `next` of a page of this query",
                        self.collection
                    ),
                ));
            }
        }
        if after.call != call_digest(&base, self.near.as_ref()) {
            return Err(crate::Error::invalid_argument(
                "after",
                format!(
                    "a cursor of query `{}` called with other arguments: a page's position means nothing for other arguments (the page of one venue continued for another); pass the `next` of a page of this call, or start again without a cursor",
                    self.spec.name
                ),
            ));
        }
        let order: Vec<(&str, i32)> = self
            .spec
            .sort
            .iter()
            .map(|(path, direction)| (path.as_str(), *direction))
            .collect();
        let branches = super::keyset::after(&order, &after.keys, |path| {
            path != "_id" && super::keyset::may_be_null(&schema, path)
        });
        Ok(super::keyset::filter(&base, branches))
    }

    /// The `find` command this run sends when awaited (what `explain` and `Schema::prove`
    /// read), after the cursor when one is set.
    ///
    /// # Errors
    /// A value that could not be serialized as its field is stored, or a refused cursor.
    pub fn command(&self) -> Result<Document> {
        let filter = self.run_filter()?;
        Ok(match &self.near {
            Some((point, max)) => self.spec.near_command(self.collection, filter, point, *max),
            None => self.spec.find_command(self.collection, filter),
        })
    }

    /// The number of documents the filter matches (the declared limit and any page cursor
    /// left out), counted by the server with the same filter (`countDocuments`, served by the
    /// same index), in the session when one is set.
    ///
    /// # Errors
    /// A value that could not be serialized as its field is stored
    /// ([`crate::Error::Serialization`], nothing sent), and the driver's errors.
    pub async fn count(self) -> Result<u64> {
        let mut filter = self.filter?;
        // `countDocuments` takes no `$near`: the same documents are those within the distance
        if let (Some((point, max)), Some(geo)) = (&self.near, &self.spec.geo) {
            let circle = crate::geo::Area::Circle {
                center: *point,
                radius_metres: *max,
            };
            filter.insert(geo.path.clone(), doc! { "$geoWithin": circle.geo_within() });
        }
        let collection = self.db.collection::<Document>(self.collection);
        let count = collection
            .count_documents(filter)
            .comment(self.spec.name.clone())
            .optional(self.spec.driver_collation(), |count, c| count.collation(c));
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

    /// Reads one page: at most the declared limit of rows (or [`limit`](Self::limit)'s; 50
    /// when neither is set, and 1 to [`crate::MAX_PAGE_SIZE`]), after the cursor when one is
    /// set, in the declared order, with one `find` that asks for one row more, so `next` is set
    /// only when a row follows. With a projection (`project = Row`), the sort keys and `_id` are
    /// read beside the row's fields for the cursor and left out of the row.
    ///
    /// # Errors
    /// As awaiting the query, and [`crate::Error::InvalidArgument`] for a page size out of
    /// range or a cursor of another query.
    #[allow(clippy::type_complexity)]
    pub fn page(
        self,
    ) -> Pin<Box<dyn Future<Output = Result<crate::Page<Row, QueryCursor>>> + Send + 'a>>
    where
        P: Paging,
        Row: serde::de::DeserializeOwned + Send + 'a,
    {
        // the filter is built here and the future holds no `R` or `P`: a query declared
        // without `pages` is one error, at `page`
        let filter = self.run_filter();
        let call = self
            .filter
            .as_ref()
            .map(|base| call_digest(base, self.near.as_ref()))
            .unwrap_or_default();
        let DeclaredQuery {
            db,
            collection,
            spec,
            session,
            ..
        } = self;
        Box::pin(read_page(db, collection, spec, filter, call, session))
    }
}

/// A near query: the `$geoNear` aggregation ([`QuerySpec::near_pipeline`]), nearest first.
async fn run_near<Row: serde::de::DeserializeOwned + Send + Sync>(
    db: &Database,
    collection: &'static str,
    spec: QuerySpec,
    filter: Document,
    point: crate::geo::Point,
    max_metres: f64,
    session: Option<&mut mongodb::ClientSession>,
) -> Result<Vec<Row>> {
    let pipeline = spec.near_pipeline(filter, &point, max_metres);
    let collection = db.collection::<Document>(collection);
    let aggregate = collection
        .aggregate(pipeline)
        .comment(spec.name.clone())
        .optional(spec.driver_collation(), |a, c| a.collation(c))
        .with_type::<Row>();
    Ok(match session {
        Some(session) => {
            let mut cursor = aggregate.session(&mut *session).await?;
            cursor.stream(&mut *session).try_collect().await?
        }
        None => aggregate.await?.try_collect().await?,
    })
}

/// One page of a declared query (see [`DeclaredQuery::page`]).
async fn read_page<Row: serde::de::DeserializeOwned>(
    db: &Database,
    collection: &'static str,
    spec: QuerySpec,
    filter: Result<Document>,
    call: String,
    session: Option<&mut mongodb::ClientSession>,
) -> Result<crate::Page<Row, QueryCursor>> {
    let size = spec.limit.unwrap_or(50);
    super::keyset::check_page_size(size)?;
    let filter = filter?;
    // the cursor's keys are read from each page's last row: project them when the row
    // leaves them out
    let mut projection = spec.projection();
    let mut extra = Vec::new();
    if let Some(projection) = &mut projection {
        for (path, _) in &spec.sort {
            let covered = spec.project.iter().any(|p| {
                p == path
                    || path
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('.'))
            });
            if !covered {
                projection.remove(path);
                projection.insert(path.clone(), 1_i32);
                extra.push(path.clone());
            }
        }
        if projection.get("_id") == Some(&mongodb::bson::Bson::Int32(0)) {
            projection.remove("_id");
        }
    }
    let collection = db.collection::<mongodb::bson::RawDocumentBuf>(collection);
    let mut find = collection
        .find(filter)
        .sort(spec.sort_document())
        .limit(size + 1)
        .comment(spec.name.clone())
        .optional(spec.driver_collation(), |find, c| find.collation(c));
    if let Some(projection) = projection {
        find = find.projection(projection);
    }
    let mut raw: Vec<mongodb::bson::RawDocumentBuf> = match session {
        Some(session) => {
            let mut cursor = find.session(&mut *session).await?;
            cursor.stream(&mut *session).try_collect().await?
        }
        None => find.await?.try_collect().await?,
    };
    let more = raw.len() as i64 > size;
    raw.truncate(size as usize);
    let next = match raw.last() {
        Some(last) if more => Some(QueryCursor {
            query: spec.name.clone(),
            call,
            keys: spec
                .sort
                .iter()
                .map(|(path, _)| {
                    super::keyset::raw_path(last, path).unwrap_or(mongodb::bson::Bson::Null)
                })
                .collect(),
        }),
        _ => None,
    };
    let items = raw
        .iter()
        .map(|row| decode_row::<Row>(row, &extra))
        .collect::<Result<Vec<Row>>>()?;
    Ok(crate::Page { items, next })
}

/// A row decoded from its bytes, without the `extra` paths read for the cursor alone.
fn decode_row<Row: serde::de::DeserializeOwned>(
    row: &mongodb::bson::RawDocument,
    extra: &[String],
) -> Result<Row> {
    let decoded = if extra.is_empty() {
        crate::bson_compat::from_slice::<Row>(row.as_bytes())
    } else {
        let mut document =
            crate::bson_compat::document_from_raw(row).map_err(mongodb::error::Error::from)?;
        for path in extra {
            remove_path(&mut document, path);
        }
        crate::bson_compat::from_document::<Row>(document)
    };
    Ok(decoded.map_err(mongodb::error::Error::from)?)
}

/// Removes the value at a dotted `path`, and the documents on the way that it leaves empty.
fn remove_path(document: &mut Document, path: &str) {
    match path.split_once('.') {
        None => {
            document.remove(path);
        }
        Some((head, rest)) => {
            if let Ok(inner) = document.get_document_mut(head) {
                remove_path(inner, rest);
                if inner.is_empty() {
                    document.remove(head);
                }
            }
        }
    }
}

impl<'a, R, Row, P> IntoFuture for DeclaredQuery<'a, R, Row, P>
where
    R: crate::Document + Send + Sync,
    Row: serde::de::DeserializeOwned + Send + Sync + 'a,
    P: 'a,
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
        let filter = self.run_filter();
        let DeclaredQuery {
            db,
            collection,
            spec,
            session,
            near,
            ..
        } = self;
        Box::pin(async move {
            if let Some((point, max)) = near {
                return run_near(db, collection, spec, filter?, point, max, session).await;
            }
            let collection = db.collection::<Row>(collection);
            let mut find = collection
                .find(filter?)
                .comment(spec.name.clone())
                .optional(spec.driver_collation(), |find, c| find.collation(c));
            if !spec.sort.is_empty() {
                find = find.sort(spec.sort_document());
            }
            if let Some(projection) = spec.projection() {
                find = find.projection(projection);
            }
            if let Some(limit) = spec.limit {
                find = find.limit(limit);
            }
            let rows: Vec<Row> = match session {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stages(pipeline: &[Document]) -> Vec<&str> {
        pipeline
            .iter()
            .map(|stage| stage.keys().next().map_or("", String::as_str))
            .collect()
    }

    #[test]
    fn a_near_query_of_a_time_series_sends_its_equalities_after_geo_near() {
        let point = crate::geo::Point::new(2.35, 48.85).unwrap();
        let query = QuerySpec::new("near_gate")
            .eq("gate")
            .near("at_place")
            .limit(5);
        let filter = doc! { "gate": "north" };
        // a plain collection: the filter is `$geoNear`'s `query`
        let plain = query.near_pipeline(filter.clone(), &point, 100.0);
        assert_eq!(stages(&plain), ["$geoNear", "$limit", "$unset"]);
        let geo_near = plain[0].get_document("$geoNear").unwrap();
        assert_eq!(geo_near.get_document("query").unwrap(), &filter);
        // a time series collection: mongod refuses `query` there, so a `$match` follows, before
        // the limit
        let ts = query.clone().on_time_series();
        let pipeline = ts.near_pipeline(filter.clone(), &point, 100.0);
        assert_eq!(
            stages(&pipeline),
            ["$geoNear", "$match", "$limit", "$unset"]
        );
        let geo_near = pipeline[0].get_document("$geoNear").unwrap();
        assert!(!geo_near.contains_key("query"), "{geo_near}");
        assert_eq!(geo_near.get_str("key").unwrap(), "at_place");
        assert_eq!(pipeline[1], doc! { "$match": filter });
        // no condition: no `$match`
        let pipeline = ts.near_pipeline(Document::new(), &point, 100.0);
        assert_eq!(stages(&pipeline), ["$geoNear", "$limit", "$unset"]);
        // `CollectionSpec::query` marks the queries of a time series collection, before and
        // after `timeseries`
        let spec = crate::CollectionSpec::new("gate_scans", Document::new())
            .query(query.clone())
            .timeseries(crate::TimeSeries::new("at"))
            .query(query.clone());
        assert!(spec.queries.iter().all(|q| q.time_series));
    }
}
