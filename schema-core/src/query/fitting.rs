//! `Schema::build`'s part of the queries: every declared query and every query the library
//! emits itself (lookups, child pages, fan-outs) is fitted to the collection's indexes by
//! mongod's planner rules ([`fit`](super::fit)); a declared query no index serves without a
//! blocking sort gets an index derived by ESR, merged with the others one index can serve.

use mongodb::bson::{Bson, Document};

use super::fit::{self, IndexShape, KeyDir, QueryShape, Verdict};
use super::QuerySpec;
use crate::json_schema;
use crate::{CollectionSpec, IndexReason, IndexSpec, SyncStrategy};

/// How a query is served, as `Schema::build` found it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueryFit {
    /// The index that serves it in order (`None` when none does: see `problem`).
    pub index: Option<String>,
    /// The index is walked backwards.
    pub reverse: bool,
    /// `$in` scans merged in sort order (1 without `$in` before the sort).
    pub merge_scans: usize,
    /// The index was derived for declared queries by `Schema::build`.
    pub derived: bool,
    /// Why no index serves it in order, as mongod's rule says.
    pub problem: Option<String>,
}

fn dir(direction: i32) -> KeyDir {
    if direction < 0 {
        KeyDir::Desc
    } else {
        KeyDir::Asc
    }
}

fn direction(dir: &KeyDir) -> Bson {
    match dir {
        KeyDir::Asc => Bson::Int32(1),
        KeyDir::Desc => Bson::Int32(-1),
        KeyDir::Special(kind) => Bson::String(kind.clone()),
    }
}

/// The stored paths of `paths` that cross or end on an array in `schema`.
fn multikey(schema: Option<&Document>, paths: impl Iterator<Item = String>) -> Vec<String> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    paths
        .filter(|path| {
            json_schema::schemas_at(schema, path)
                .iter()
                .any(|(_, multikey)| *multikey)
        })
        .collect()
}

pub(crate) fn index_shape(index: &IndexSpec, schema: Option<&Document>) -> IndexShape {
    let keys: Vec<(String, KeyDir)> = index
        .keys
        .iter()
        .map(|(path, value)| {
            let dir = match value {
                Bson::String(kind) => KeyDir::Special(kind.clone()),
                other => dir(match other {
                    Bson::Int32(v) => *v,
                    Bson::Int64(v) => *v as i32,
                    Bson::Double(v) => *v as i32,
                    _ => 1,
                }),
            };
            (path.clone(), dir)
        })
        .collect();
    IndexShape {
        name: index.name.clone(),
        multikey_paths: multikey(schema, keys.iter().map(|(p, _)| p.clone())),
        keys,
        unique: index.unique,
        sparse: index.sparse,
        partial: index.partial_filter.is_some(),
        collation: None,
    }
}

pub(crate) fn query_shape(query: &QuerySpec, schema: Option<&Document>) -> QueryShape {
    QueryShape {
        eq: query.eq.clone(),
        in_: query.any_of.clone(),
        range: query.range.clone(),
        sort: query
            .sort
            .iter()
            .map(|(path, d)| (path.clone(), dir(*d)))
            .collect(),
        collation: None,
        multikey_paths: multikey(schema, query.paths().map(str::to_owned)),
    }
}

/// The queries a collection's relationships make the library send: a `$lookup` or a resolve by
/// a reference, a page of a parent's children, a fan-out update of a copy.
pub(crate) fn library_queries(spec: &CollectionSpec) -> Vec<QuerySpec> {
    let mut queries = Vec::new();
    for reference in &spec.references {
        if reference.kind == crate::RefKind::Many {
            continue;
        }
        let mut query = QuerySpec::library(format!("children by {}", reference.field))
            .eq(reference.field.clone());
        if let Some((key, direction, unique)) = &reference.order {
            query = QuerySpec::library(format!("page of children by {}", reference.field))
                .eq(reference.field.clone())
                .sort(key.clone(), *direction);
            if !unique {
                query = query.sort("_id", *direction);
            }
        }
        queries.push(query);
    }
    for copy in &spec.copies {
        if let Some((key, direction, unique)) = &copy.order {
            let mut query = QuerySpec::library(format!("page of holders by {}", copy.id_path()))
                .eq(copy.id_path())
                .sort(key.clone(), *direction);
            if !unique {
                query = query.sort("_id", *direction);
            }
            queries.push(query);
        }
        if copy.strategy == SyncStrategy::Frozen {
            continue;
        }
        queries.push(
            QuerySpec::library(format!(
                "fan-out of {} copies at {}",
                copy.source, copy.path
            ))
            .eq(format!("{}._id", copy.path)),
        );
    }
    queries
}

/// Whether a verdict serves a query in order: a whole-index scan for the order does not serve a
/// query that has conditions (mongod would read every key).
fn served(verdict: &Verdict, shape: &QueryShape) -> Option<(bool, usize)> {
    match verdict {
        Verdict::Served {
            reverse,
            merge_scans,
            full_scan,
        } => {
            let conditions =
                !shape.eq.is_empty() || !shape.in_.is_empty() || !shape.range.is_empty();
            (!(*full_scan && conditions)).then_some((*reverse, *merge_scans))
        }
        _ => None,
    }
}

fn keys_text(keys: &Document) -> String {
    let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{ {} }}", parts.join(", "))
}

/// Fits every query of `spec` (its declared ones, then the library's) and adds the indexes the
/// declared ones need; returns the problems (an `index = "..."` that cannot serve its query, a
/// projection whose types differ, a partial filter on a value the field cannot store).
pub(crate) fn fit_collection(spec: &mut CollectionSpec) -> Vec<String> {
    let mut problems = Vec::new();
    let schema = spec.validator.get_document("$jsonSchema").ok().cloned();
    let schema = schema.as_ref();
    problems.extend(partial_filter_problems(spec, schema));
    for query in &spec.queries {
        problems.extend(query_path_problems(&spec.name, query, schema));
    }
    // every collection has the `_id_` index, which no spec lists
    let id_index = IndexSpec::new(mongodb::bson::doc! { "_id": 1 })
        .name("_id_")
        .unique(true);
    // declared queries: fit, or derive
    let mut unserved: Vec<usize> = Vec::new();
    for (i, query) in spec.queries.iter_mut().enumerate() {
        let shape = query_shape(query, schema);
        let verdicts: Vec<(&IndexSpec, Verdict)> = spec
            .indexes
            .iter()
            .chain(std::iter::once(&id_index))
            .map(|index| (index, fit::fit(&index_shape(index, schema), &shape)))
            .collect();
        if let Some(wanted) = query.index.clone() {
            match verdicts.iter().find(|(index, _)| index.name == wanted) {
                None => {
                    let names: Vec<&str> = spec.indexes.iter().map(|i| i.name.as_str()).collect();
                    problems.push(format!(
                        "query `{}` of `{}` names `index = \"{wanted}\"`, which `{}` does not have (its indexes: {})",
                        query.name, spec.name, spec.name, names.join(", ")
                    ));
                }
                Some((_, verdict)) if served(verdict, &shape).is_some() => {
                    let (reverse, merge_scans) = served(verdict, &shape).expect("served");
                    query.fit = Some(QueryFit {
                        index: Some(wanted),
                        reverse,
                        merge_scans,
                        derived: false,
                        problem: None,
                    });
                }
                Some((_, verdict)) => {
                    let rule = match verdict {
                        Verdict::BlockingSort(rule) | Verdict::Unusable(rule) | Verdict::Examines(rule) => rule.to_string(),
                        Verdict::Served { .. } => format!(
                            "index `{wanted}` does not start with a field the query constrains: mongod would scan all of it for the order"
                        ),
                    };
                    let esr = esr_document(&shape);
                    problems.push(format!(
                        "query `{}` of `{}` cannot be served by index `{wanted}`: {rule}; an index on {} would serve it (declare it with `#[index(keys(...))]`, or leave out `index =` and let the schema derive it)",
                        query.name,
                        spec.name,
                        keys_text(&esr)
                    ));
                }
            }
            continue;
        }
        match verdicts
            .iter()
            .find_map(|(index, v)| served(v, &shape).map(|s| (index, s)))
        {
            Some((index, (reverse, merge_scans))) => {
                query.fit = Some(QueryFit {
                    index: Some(index.name.clone()),
                    reverse,
                    merge_scans,
                    derived: false,
                    problem: None,
                });
            }
            None => unserved.push(i),
        }
    }
    // one index per group of queries that one index serves (a prefix, or the reverse)
    let derived: Vec<(Document, Vec<String>)> = {
        let wanted: Vec<(IndexShape, QueryShape)> = unserved
            .iter()
            .map(|&i| {
                let shape = query_shape(&spec.queries[i], schema);
                let keys = esr_document(&shape);
                (index_shape(&IndexSpec::new(keys), schema), shape)
            })
            .collect();
        fit::merge_derived(&wanted)
            .into_iter()
            .map(|merged| {
                let mut keys = Document::new();
                for (path, dir) in &merged.index.keys {
                    keys.insert(path.clone(), direction(dir));
                }
                let names = merged
                    .serves
                    .iter()
                    .map(|&k| spec.queries[unserved[k]].name.clone())
                    .collect();
                (keys, names)
            })
            .collect()
    };
    for (keys, queries) in derived {
        let mut index = IndexSpec::new(keys).reason(IndexReason::Query { queries });
        index.reasons.retain(|r| *r != IndexReason::Declared);
        // a relationship index that is a prefix of the derived one is served by it: one index,
        // both reasons (a fan-out on `customer._id` by `{ customer._id: 1, updatedAt: -1 }`)
        spec.indexes.retain(|existing| {
            let relationship_only = existing.reasons.iter().all(|r| {
                matches!(
                    r,
                    IndexReason::Reference { .. } | IndexReason::FanOut { .. }
                )
            });
            let absorbed = existing.same_keys(&index)
                || (relationship_only
                    && !existing.has_declared_name()
                    && existing.is_prefix_of(&index));
            if absorbed {
                index.merge_reasons(existing);
            }
            !absorbed
        });
        spec.indexes.push(index);
    }
    // fit again what was derived, and every library query
    for &i in &unserved {
        let shape = query_shape(&spec.queries[i], schema);
        let found = spec
            .indexes
            .iter()
            .chain(std::iter::once(&id_index))
            .find_map(|index| {
                served(&fit::fit(&index_shape(index, schema), &shape), &shape)
                    .map(|(reverse, merge_scans)| (index.name.clone(), reverse, merge_scans))
            });
        spec.queries[i].fit = Some(match found {
            Some((index, reverse, merge_scans)) => QueryFit {
                index: Some(index),
                reverse,
                merge_scans,
                derived: true,
                problem: None,
            },
            None => QueryFit {
                index: None,
                reverse: false,
                merge_scans: 1,
                derived: false,
                problem: Some(
                    "no index can serve it without a blocking sort (the ESR index does not either: check the `$in` lists against mongod's limit of 200 scans)".to_owned(),
                ),
            },
        });
    }
    let library: Vec<QuerySpec> = library_queries(spec)
        .into_iter()
        .map(|mut query| {
            let shape = query_shape(&query, schema);
            let mut last_rule = None;
            let found = spec
                .indexes
                .iter()
                .chain(std::iter::once(&id_index))
                .find_map(|index| {
                    let verdict = fit::fit(&index_shape(index, schema), &shape);
                    if let Verdict::BlockingSort(rule)
                    | Verdict::Unusable(rule)
                    | Verdict::Examines(rule) = &verdict
                    {
                        last_rule = Some(rule.to_string());
                    }
                    served(&verdict, &shape)
                        .map(|(reverse, merge_scans)| (index.name.clone(), reverse, merge_scans))
                });
            query.fit = Some(match found {
                Some((index, reverse, merge_scans)) => QueryFit {
                    index: Some(index),
                    reverse,
                    merge_scans,
                    derived: false,
                    problem: None,
                },
                None => QueryFit {
                    index: None,
                    reverse: false,
                    merge_scans: 1,
                    derived: false,
                    problem: last_rule.or(Some("the collection has no index".to_owned())),
                },
            });
            query
        })
        .collect();
    spec.library_queries = library;
    problems
}

/// The ESR index of a query, as a key document.
pub(crate) fn esr_document(shape: &QueryShape) -> Document {
    let mut keys = Document::new();
    for (path, dir) in fit::esr_keys(shape) {
        keys.insert(path, direction(&dir));
    }
    keys
}

/// Quoted paths that are no field of the documents, and projections whose fields are stored
/// with another schema than the collection's.
fn query_path_problems(
    collection: &str,
    query: &QuerySpec,
    schema: Option<&Document>,
) -> Vec<String> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    for path in query.paths() {
        if path != "_id" && !json_schema::has_path(schema, path) {
            problems.push(format!(
                "query `{}` of `{collection}` names `{path}`, which is not a field of its documents",
                query.name
            ));
        }
    }
    if let (Some(row), Ok(properties)) = (&query.project_schema, schema.get_document("properties"))
    {
        if let Ok(row_properties) = row.get_document("properties") {
            for (name, row_schema) in row_properties {
                let stored = properties.get(name);
                let same = match (stored, row_schema) {
                    (Some(Bson::Document(a)), Bson::Document(b)) => {
                        json_schema::same_document(a, b)
                    }
                    _ => false,
                };
                if !same {
                    problems.push(format!(
                        "the projection row of query `{}` of `{collection}` stores `{name}` as {row_schema}, but `{collection}` stores it as {}: give the row's field the type of the collection's",
                        query.name,
                        stored.map_or_else(|| "nothing".to_owned(), ToString::to_string)
                    ));
                }
            }
        }
    }
    problems
}

/// A partial filter's equality on a value that the field's schema cannot hold (`"Paid"` for an
/// enum stored as `"paid"`): the index would stay empty.
fn partial_filter_problems(spec: &CollectionSpec, schema: Option<&Document>) -> Vec<String> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    for index in &spec.indexes {
        let Some(filter) = &index.partial_filter else {
            continue;
        };
        for (path, value) in filter {
            let value = match value {
                Bson::Document(ops) => match ops.get("$eq") {
                    Some(v) => v,
                    None => continue,
                },
                v => v,
            };
            let leaves = json_schema::schemas_at(schema, path);
            let allowed: Vec<&Bson> = leaves
                .iter()
                .filter_map(|(s, _)| s.get_array("enum").ok())
                .flatten()
                .collect();
            let all_enums =
                !leaves.is_empty() && leaves.iter().all(|(s, _)| s.contains_key("enum"));
            if all_enums && !allowed.iter().any(|a| json_schema::same(a, value)) {
                let allowed: Vec<String> = allowed.iter().map(ToString::to_string).collect();
                problems.push(format!(
                    "the partial filter of index `{}` of `{}` matches `{path}` = {value}, which `{path}` never stores (its values: {}): the index would stay empty",
                    index.name,
                    spec.name,
                    allowed.join(", ")
                ));
            }
        }
    }
    problems
}
