//! `Schema::prove`: `explain` of every declared query and every query the library sends, read
//! in all of mongod's plan layouts, against the fit `Schema::build` computed.

use std::fmt;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use super::plan_reader::{self, PlanFacts, SortVerdict};
use super::QuerySpec;
use crate::{json_schema, CollectionSpec, Result, Schema};

/// What `explain` showed for one query.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueryProof {
    /// The collection.
    pub collection: String,
    /// The query's name (`agent_queue`, or the library's `page of children by ticket_id`).
    pub query: String,
    /// A `#[query]` (or a query the library sends).
    pub declared: bool,
    /// The index `Schema::build` fitted it to.
    pub expected_index: Option<String>,
    /// The indexes the winning plan scanned.
    pub used_indexes: Vec<String>,
    /// Whether the results came in index order.
    pub sort: SortVerdict,
    /// A collection scan.
    pub collscan: bool,
    /// The plan read no document (`PROJECTION_COVERED`, 0 documents examined).
    pub covered: bool,
    /// `maxScansToExplodeReached`: a `$in` too large to merge in index order.
    pub max_scans_to_explode_reached: bool,
    /// The plan's facts as read.
    pub facts: PlanFacts,
    /// Why the query is not served as declared (`None`: it is, or the server cannot tell).
    pub failure: Option<String>,
    /// What the server could not tell (its planner is not mongod's), when it could not.
    pub note: Option<String>,
}

/// The result of [`Schema::prove`]: one entry per query.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProofReport {
    /// Whether the server adds an in-memory SORT where mongod walks the index (SecantusDB):
    /// then a SORT stage is no verdict, and the report says so.
    pub sorts_in_memory: bool,
    /// One entry per query, collection by collection.
    pub queries: Vec<QueryProof>,
}

impl ProofReport {
    /// The entries of queries not served as declared.
    pub fn failures(&self) -> impl Iterator<Item = &QueryProof> {
        self.queries.iter().filter(|q| q.failure.is_some())
    }

    /// `Ok(self)` when every query is served as declared, or an error listing the others.
    ///
    /// # Errors
    /// [`crate::Error::NotServed`] naming each query that is not served as declared.
    pub fn into_result(self) -> Result<ProofReport> {
        let failures: Vec<String> = self
            .failures()
            .map(|q| {
                format!(
                    "`{}.{}`: {}",
                    q.collection,
                    q.query,
                    q.failure.as_deref().unwrap_or_default()
                )
            })
            .collect();
        if failures.is_empty() {
            Ok(self)
        } else {
            Err(crate::Error::NotServed { queries: failures })
        }
    }
}

impl fmt::Display for ProofReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for q in &self.queries {
            let sort = match q.sort {
                SortVerdict::InIndexOrder => "index order",
                SortVerdict::BlockingSort => "BLOCKING SORT",
                SortVerdict::UnknownOnThisServer => "sort not provable here",
            };
            writeln!(
                f,
                "{} {}.{}{}: {} via {}{}{}",
                if q.failure.is_some() { "FAIL" } else { "ok  " },
                q.collection,
                q.query,
                if q.declared { "" } else { " (library)" },
                sort,
                if q.used_indexes.is_empty() {
                    "no index".to_owned()
                } else {
                    q.used_indexes.join(", ")
                },
                if q.covered { ", covered" } else { "" },
                q.failure
                    .as_ref()
                    .or(q.note.as_ref())
                    .map_or_else(String::new, |f| format!(" — {f}"))
            )?;
        }
        if self.sorts_in_memory {
            writeln!(
                f,
                "(this server sorts in memory where mongod walks the index: SORT verdicts are mongod's to give)"
            )?;
        }
        Ok(())
    }
}

/// A value of the type `schema` describes, for a query that is explained and never run for its
/// results: what one stored document holds at `path`, or a placeholder of the stored type.
fn sample_value(
    sample: Option<&Document>,
    schema: Option<&Document>,
    path: &str,
    n: usize,
) -> Bson {
    if n == 0 {
        if let Some(value) = sample.and_then(|d| lookup(d, path)) {
            return value;
        }
    }
    let bson_type = schema
        .map(|s| json_schema::schemas_at(s, path))
        .unwrap_or_default()
        .into_iter()
        .find_map(|(s, _)| match s.get("bsonType") {
            Some(Bson::String(t)) if t != "null" && t != "array" => Some(t.clone()),
            Some(Bson::Array(types)) => types
                .iter()
                .filter_map(Bson::as_str)
                .find(|t| *t != "null" && *t != "array")
                .map(str::to_owned),
            _ => s
                .get_array("enum")
                .ok()
                .and_then(|values| values.get(n % values.len().max(1)))
                .map(|_| "enum".to_owned()),
        });
    let enum_value = || {
        schema
            .map(|s| json_schema::schemas_at(s, path))
            .unwrap_or_default()
            .into_iter()
            .find_map(|(s, _)| {
                let values = s.get_array("enum").ok()?;
                values.get(n % values.len().max(1)).cloned()
            })
    };
    match bson_type.as_deref() {
        Some("enum") => enum_value().unwrap_or(Bson::Null),
        Some("string") => enum_value().unwrap_or_else(|| Bson::String(format!("prove-{n}"))),
        Some("int") => Bson::Int32(n as i32),
        Some("long") => Bson::Int64(n as i64),
        Some("double") => Bson::Double(n as f64),
        Some("decimal") => Bson::Decimal128(mongodb::bson::Decimal128::from_bytes([0; 16])),
        Some("bool") => Bson::Boolean(n % 2 == 1),
        Some("date") => Bson::DateTime(mongodb::bson::DateTime::from_millis(n as i64)),
        Some("objectId") => {
            let mut bytes = [0u8; 12];
            bytes[4..].copy_from_slice(&(n as u64).to_be_bytes());
            Bson::ObjectId(mongodb::bson::oid::ObjectId::from_bytes(bytes))
        }
        _ => Bson::Int32(n as i32),
    }
}

/// The value at a dotted path of a document (the first element's, through an array).
fn lookup(document: &Document, path: &str) -> Option<Bson> {
    let mut current = Bson::Document(document.clone());
    for segment in path.split('.') {
        current = match current {
            Bson::Document(d) => d.get(segment)?.clone(),
            Bson::Array(items) => match items.into_iter().next()? {
                Bson::Document(d) => d.get(segment)?.clone(),
                _ => return None,
            },
            _ => return None,
        };
    }
    match current {
        Bson::Array(items) => items.into_iter().next(),
        Bson::Null => None,
        other => Some(other),
    }
}

/// The filter `explain` is run with: one value per equality, as many distinct values as a
/// `$in` may take, a lower bound per range.
pub(crate) fn proof_filter(
    query: &QuerySpec,
    sample: Option<&Document>,
    schema: Option<&Document>,
) -> Document {
    let mut filter = Document::new();
    // the shape the declared query's builder sends: `{ path: value }` for a scalar
    for path in &query.eq {
        match sample_value(sample, schema, path, 0) {
            value @ Bson::Document(_) => filter.insert(path.clone(), doc! { "$eq": value }),
            value => filter.insert(path.clone(), value),
        };
    }
    for (path, max) in &query.any_of {
        let mut values: Vec<Bson> = Vec::new();
        for n in 0..*max {
            let value = sample_value(sample, schema, path, n);
            if !values.contains(&value) {
                values.push(value);
            }
        }
        filter.insert(path.clone(), doc! { "$in": values });
    }
    for path in &query.range {
        filter.insert(
            path.clone(),
            doc! { "$gte": sample_value(sample, schema, path, 0) },
        );
    }
    if let Some(geo) = query.geo.as_ref().filter(|_| !query.is_near()) {
        let area = crate::geo::Area::Circle {
            center: sample_point(sample, &geo.path),
            radius_metres: 1000.0,
        };
        filter.insert(geo.path.clone(), doc! { "$geoWithin": area.geo_within() });
    }
    // as a declared query sends it: the conditions under an array of sub-documents in one
    // `$elemMatch` on it
    match schema {
        Some(schema) if query.declared => query
            .clone()
            .elem_match_from_schema(schema)
            .elem_match_filter(filter),
        _ => query.elem_match_filter(filter),
    }
}

/// The point a stored document holds at `path`, or (0, 0).
fn sample_point(sample: Option<&Document>, path: &str) -> crate::geo::Point {
    let stored = sample.and_then(|d| lookup(d, path));
    stored
        .and_then(|point| crate::bson_compat::from_bson::<crate::geo::Point>(point).ok())
        .unwrap_or(crate::geo::Point::ORIGIN)
}

async fn prove_query(
    db: &Database,
    spec: &CollectionSpec,
    query: &QuerySpec,
    sample: Option<&Document>,
    sorts_in_memory: bool,
) -> Result<QueryProof> {
    let schema = spec.validator.get_document("$jsonSchema").ok();
    let filter = proof_filter(query, sample, schema);
    let command = match &query.geo {
        Some(geo) if query.is_near() => {
            query.near_command(&spec.name, filter, &sample_point(sample, &geo.path), 1000.0)
        }
        _ => query.find_command(&spec.name, filter),
    };
    let reply = db
        .run_command(doc! { "explain": command.clone(), "verbosity": "executionStats" })
        .await?;
    let facts = plan_reader::read_plan(&reply);
    // SecantusDB scans the collection where mongod's planner would walk the fitted index (a
    // condition on a field outside the index, a range on `_id`): the same find with the index
    // as a `hint` shows that the index serves it
    let expected = query.fit.as_ref().and_then(|f| f.index.clone());
    let hinted_walk = match &expected {
        Some(expected)
            if sorts_in_memory && !query.is_near() && (facts.collscan || !facts.uses_index()) =>
        {
            let mut hinted = command;
            hinted.insert("hint", expected.clone());
            // an index that is not there refuses the hint: no walk (the failure below)
            match db
                .run_command(doc! { "explain": hinted, "verbosity": "executionStats" })
                .await
            {
                Ok(reply) => {
                    let hinted = plan_reader::read_plan(&reply);
                    !hinted.collscan && hinted.indexes.iter().any(|i| i == expected)
                }
                Err(_) => false,
            }
        }
        _ => false,
    };
    let sort = if query.sort.is_empty() {
        SortVerdict::InIndexOrder
    } else {
        plan_reader::sort_verdict(&facts, sorts_in_memory)
    };
    let mut failure = None;
    let mut note = None;
    let unconditioned = query.eq.is_empty() && query.any_of.is_empty() && query.range.is_empty();
    if facts.collscan || !facts.uses_index() {
        match &expected {
            // SecantusDB explains a `$geoNear` as a collection scan (docs/secantus-leniencies.md)
            Some(expected) if sorts_in_memory && query.is_near() => {
                note = Some(format!(
                    "this server explains `$geoNear` as a collection scan, where mongod answers it \
                     with GEO_NEAR_2DSPHERE on `{expected}`"
                ));
            }
            // a walk of the whole collection in an index's order: SecantusDB scans and sorts
            // where mongod walks the index (docs/secantus-leniencies.md)
            Some(expected) if sorts_in_memory && unconditioned => {
                note = Some(format!(
                    "a collection scan and a sort: this server walks no index for an order \
                     alone, where mongod walks `{expected}`"
                ));
            }
            Some(expected) if hinted_walk => {
                note = Some(format!(
                    "a collection scan: this server's planner chose no index, where mongod's \
                     walks `{expected}` (hinted, this server walks it too)"
                ));
            }
            _ => failure = Some("a collection scan: no index served it".to_owned()),
        }
    } else if let Some(expected) = &expected {
        if !facts.indexes.iter().any(|i| i == expected) {
            let chose = format!(
                "the server chose {} where the schema fitted `{expected}`",
                facts.indexes.join(", ")
            );
            if sorts_in_memory {
                // its planner takes the first index with the query's fields and sorts in
                // memory, where mongod ranks the plans and prefers one in sort order
                note = Some(format!(
                    "{chose}: this server does not rank plans by sort order"
                ));
            } else {
                failure = Some(chose);
            }
        }
    }
    if failure.is_none() && sort == SortVerdict::BlockingSort {
        failure =
            Some("a blocking SORT stage: the index does not give the declared order".to_owned());
    }
    if failure.is_none() && facts.max_scans_to_explode_reached {
        failure = Some(
            "maxScansToExplodeReached: the `$in` lists are over mongod's 200 scans".to_owned(),
        );
    }
    if failure.is_none() {
        if let Some(problem) = query.fit.as_ref().and_then(|f| f.problem.clone()) {
            failure = Some(problem);
        }
    }
    Ok(QueryProof {
        collection: spec.name.clone(),
        query: query.name.clone(),
        declared: query.declared,
        expected_index: expected,
        used_indexes: facts.indexes.clone(),
        sort,
        collscan: facts.collscan,
        covered: facts.covered,
        max_scans_to_explode_reached: facts.max_scans_to_explode_reached,
        facts,
        failure,
        note,
    })
}

impl Schema {
    /// Runs `explain` (`executionStats`) for every declared query (`#[query]`) and every query
    /// the library sends itself (lookups by a reference, child pages, fan-outs), on a collection
    /// that [`Schema::apply`] has set up, and reports per query the index the server used,
    /// whether a blocking SORT appeared (SORT_MERGE is index order), whether the `$in` lists
    /// exploded past mongod's limit, and whether it was covered.
    ///
    /// Values for the conditions are read from one stored document (or are placeholders of the
    /// stored type). On a server that sorts in memory where mongod walks the index (SecantusDB,
    /// told by its `buildInfo`), a SORT stage gives no verdict and the report says so; on mongod
    /// a blocking sort is a failure. [`ProofReport::into_result`] turns failures into an error.
    ///
    /// # Errors
    /// A failed `explain` or `buildInfo` command.
    pub async fn prove(&self, db: &Database) -> Result<ProofReport> {
        let build_info = db.run_command(doc! { "buildInfo": 1 }).await?;
        let sorts_in_memory = plan_reader::is_secantus(&build_info);
        let mut queries = Vec::new();
        for spec in self.collections() {
            if spec.queries.is_empty() && spec.library_queries.is_empty() {
                continue;
            }
            let sample = db
                .collection::<Document>(&spec.name)
                .find_one(doc! {})
                .await?;
            for query in spec.queries.iter().chain(&spec.library_queries) {
                queries.push(prove_query(db, spec, query, sample.as_ref(), sorts_in_memory).await?);
            }
        }
        Ok(ProofReport {
            sorts_in_memory,
            queries,
        })
    }
}
