//! `Schema::build`'s part of the queries: every declared query and every query the library
//! emits itself (lookups, child pages, fan-outs) is fitted to the collection's indexes by
//! mongod's planner rules ([`fit`](super::fit)); a declared query no index serves without a
//! blocking sort gets an index derived by ESR, merged with the others one index can serve.

use mongodb::bson::{Bson, Document};

use super::fit::{self, IndexShape, KeyDir, QueryShape, ServerRules, Verdict};
use super::QuerySpec;
use crate::json_schema;
use crate::model::collation::uncollated;
use crate::{CollectionSpec, IndexReason, IndexSpec, SyncStrategy};

/// Parents compared per aggregation of a counter's recount in `reconcile` (and the most ids the
/// recount's `$in` holds): a library query, described here with its bound.
pub(crate) const RECOUNT_BATCH: usize = 500;

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
    /// Conditions on an array that no index holds beside another array of the query (mongod
    /// cannot index parallel arrays): mongod checks them on the documents the index finds.
    pub filtered: Vec<String>,
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

/// The arrays that `paths` cross or end on in `schema` (`items` for `items.price`): what makes
/// an index key on them multikey, and what mongod's multikey rules compare (two paths under one
/// array share it).
fn multikey(schema: Option<&Document>, paths: impl Iterator<Item = String>) -> Vec<String> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let mut arrays = Vec::new();
    for path in paths {
        let mut found = json_schema::array_prefixes(schema, &path);
        // a path the schema cannot follow (a map's values, `oneOf` branches): itself, when
        // some branch holds an array there
        if found.is_empty()
            && json_schema::schemas_at(schema, &path)
                .iter()
                .any(|(_, multikey)| *multikey)
        {
            found.push(path.clone());
        }
        for array in found {
            if !arrays.contains(&array) {
                arrays.push(array);
            }
        }
    }
    arrays
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
        collation: crate::Collation::planner_key(index.collation.as_ref()),
    }
}

/// The shape of `query` as one index can serve it: without the conditions
/// [`parallel_conditions`] leaves to the fetch.
pub(crate) fn query_shape(
    query: &QuerySpec,
    schema: Option<&Document>,
    rules: ServerRules,
    time_series: Option<&fit::TimeSeriesFields>,
) -> QueryShape {
    let mut shape = whole_shape(query, schema, rules, time_series);
    let filtered = parallel_conditions(&shape, schema);
    shape.eq.retain(|p| !filtered.contains(p));
    shape.in_.retain(|(p, _)| !filtered.contains(p));
    shape.range.retain(|p| !filtered.contains(p));
    shape
}

/// The conditions of a query that its index cannot hold: in the order of the ESR index, a
/// condition on an array other than the one an earlier key crosses (mongod cannot index
/// parallel arrays, `crate::model::index::parallel_arrays`), which mongod then checks on each
/// document the index finds. A sort key is never left out (the order needs it).
fn parallel_conditions(shape: &QueryShape, schema: Option<&Document>) -> Vec<String> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let mut kept: Vec<String> = Vec::new();
    let mut filtered = Vec::new();
    for (path, dir) in fit::esr_keys(shape) {
        if matches!(dir, KeyDir::Special(_)) {
            continue;
        }
        let parallel = crate::model::index::parallel_arrays(
            schema,
            kept.iter().map(String::as_str).chain([path.as_str()]),
        )
        .is_some();
        let sorted = shape.sort.iter().any(|(p, _)| *p == path);
        if parallel && !sorted {
            filtered.push(path);
        } else {
            kept.push(path);
        }
    }
    filtered
}

fn whole_shape(
    query: &QuerySpec,
    schema: Option<&Document>,
    rules: ServerRules,
    time_series: Option<&fit::TimeSeriesFields>,
) -> QueryShape {
    QueryShape {
        eq: query.eq.clone(),
        in_: query.any_of.clone(),
        range: query.range.clone(),
        sort: query
            .sort
            .iter()
            .map(|(path, d)| (path.clone(), dir(*d)))
            .collect(),
        collation: crate::Collation::planner_key(query.collation.as_ref()),
        multikey_paths: multikey(schema, query.paths().map(str::to_owned)),
        // a declared query sends its conditions under an array of sub-documents as one
        // `$elemMatch` on it (`DeclaredQuery`), so they share an element
        elem_match: match schema {
            Some(schema) if query.declared => {
                query.clone().elem_match_from_schema(schema).elem_match
            }
            _ => query.elem_match.clone(),
        },
        uncollated_paths: uncollated(schema, query.paths().map(str::to_owned)),
        geo: query.geo.clone(),
        time_series: time_series.cloned(),
        rules,
    }
}

/// The queries a collection's relationships make the library send: a `$lookup` or a resolve by
/// a reference, a page of a parent's children, a fan-out update of a copy.
pub(crate) fn library_queries(spec: &CollectionSpec) -> Vec<QuerySpec> {
    let mut queries = Vec::new();
    if let Some(part) = &spec.part_of {
        // `Part::of`, the owner's `$lookup` of its part, the delete with the owner, audit's
        // orphans: all by the owner's `_id`, on the `_id` index
        queries.push(
            QuerySpec::library(format!("part of a {} document by _id", part.owner)).eq("_id"),
        );
    }
    for subset in &spec.subsets {
        // reconcile reads every parent of a subset or counter in `_id` order, as it reads the
        // holders of a copy
        queries.push(
            QuerySpec::library(format!("reconcile of {}.{}", spec.name, subset.path))
                .sort("_id", 1),
        );
    }
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
        // the walk of the holders in `_id` order, then one update per chunk of their ids
        queries.push(
            QuerySpec::library(format!(
                "fan-out of {} copies at {}",
                copy.source, copy.path
            ))
            .eq(copy.id_path())
            .sort("_id", 1),
        );
        queries.push(
            QuerySpec::library(format!(
                "fan-out chunk of {} copies at {}",
                copy.source, copy.path
            ))
            .eq(copy.id_path())
            .any_of("_id", crate::FAN_OUT_CHUNK),
        );
        // reconcile reads every holder in `_id` order (a walk of the `_id` index; after a
        // break it resumes after the last one compared)
        queries.push(
            QuerySpec::library(format!(
                "reconcile of {} copies at {}",
                copy.source, copy.path
            ))
            .sort("_id", 1),
        );
    }
    queries
}

/// Source ids per `$in` of reconcile's lookup of a copy's sources (declared with that query in
/// [`source_queries`], sent by `sync::reconcile`).
pub(crate) const SOURCE_CHUNK: usize = 1000;

/// The queries reconcile sends to a copy's source collection: its holders' sources looked up by
/// `_id`, at most [`SOURCE_CHUNK`] at a time.
pub(crate) fn source_queries(holder: &str, copy: &crate::CopySpec) -> Vec<QuerySpec> {
    if copy.strategy == SyncStrategy::Frozen {
        return Vec::new();
    }
    vec![QuerySpec::library(format!(
        "reconcile's lookup of the sources of {holder}.{}",
        copy.path
    ))
    .any_of("_id", SOURCE_CHUNK)]
}

/// The queries a subset of another collection sends to its children (`children`'s spec): the
/// refill of a parent's previews (its children matching the subset's filter, newest first by
/// the subset's sort) and, when it counts them, their count. The filter's plain equalities are
/// equalities of the query. A counter (a subset without previews) sends the count, and
/// reconcile's recount of a batch of parents: one aggregation whose `$match` takes the batch's
/// ids with `$in`.
pub(crate) fn subset_queries(parent: &str, subset: &crate::SubsetSpec) -> Vec<QuerySpec> {
    let equalities = |mut query: QuerySpec| {
        for (key, value) in subset.filter.iter().flatten() {
            let operator =
                matches!(value, Bson::Document(d) if d.keys().any(|k| k.starts_with('$')));
            if !key.starts_with('$') && !operator {
                query = query.eq(key.clone());
            }
        }
        query
    };
    let by_parent =
        |name: String| equalities(QuerySpec::library(name).eq(subset.parent_field.clone()));
    let mut queries = Vec::new();
    if subset.is_counter() {
        queries.push(
            equalities(QuerySpec::library(format!(
                "recount of {parent}.{} (reconcile, a batch of parents)",
                subset.path
            )))
            .any_of(subset.parent_field.clone(), RECOUNT_BATCH),
        );
    } else {
        queries.push(
            by_parent(format!("refill of {parent}.{}", subset.path))
                .sort(subset.sort_field.clone(), subset.sort_direction)
                .limit(subset.max as i64),
        );
    }
    if subset.count.is_some() {
        queries.push(by_parent(format!("count of {parent}.{}", subset.path)));
    }
    queries
}

/// The query a part collection (`same_id_as`) sends to its owners' collection: the owner of a
/// part by `_id` (the parts' `$lookup` of their owners, audit's orphans).
pub(crate) fn owner_queries(part: &CollectionSpec) -> Vec<QuerySpec> {
    part.part_of
        .iter()
        .map(|_| QuerySpec::library(format!("owner of a {} part by _id", part.name)).eq("_id"))
        .collect()
}

/// The collation a query of the library runs under on `spec`'s collection: one on the
/// collection's own `_id` alone (a walk of every document, a document by its `_id`) under the
/// collection's default, which its `_id` index has (the command is sent without a collation);
/// one that compares ids held in the documents (a reference, a copy's `_id`, a child's parent)
/// under the simple collation where the default is another ([`crate::Collation::for_identities`]):
/// ids are compared exactly, by an index of the simple collation.
pub(crate) fn library_collation(
    spec: &CollectionSpec,
    query: &QuerySpec,
) -> Option<crate::Collation> {
    if query.paths().all(|path| path == "_id") {
        spec.collation.clone()
    } else {
        crate::Collation::for_identities(spec.collation.as_ref())
    }
}

/// A declared query that compares a held id exactly (it states no collation, on a collection
/// of another default: [`QuerySpec::held_ids_exactly`]) and also compares a path that can hold
/// strings, which the collection's default is meant for: one command runs under one collation
/// (mongod's `collation` option is the command's), so the query states the one it means.
fn held_id_problem(
    spec: &CollectionSpec,
    query: &QuerySpec,
    schema: Option<&Document>,
) -> Option<String> {
    if !query.held_ids_exactly {
        return None;
    }
    let held: Vec<String> = spec
        .references
        .iter()
        .map(|r| r.field.clone())
        .chain(spec.copies.iter().map(crate::CopySpec::id_path))
        .collect();
    let geo = query.geo.as_ref().map(|g| g.path.as_str());
    let others: Vec<String> = query
        .paths()
        .filter(|p| !held.iter().any(|h| h == p) && Some(*p) != geo)
        .map(str::to_owned)
        .collect();
    let exact = uncollated(schema, others.iter().cloned());
    let strings: Vec<&String> = others.iter().filter(|p| !exact.contains(p)).collect();
    let first = strings.first()?;
    let ids: Vec<&str> = query
        .paths()
        .filter(|p| held.iter().any(|h| h == p))
        .collect();
    let default = spec
        .collation
        .as_ref()
        .map_or_else(|| "the simple collation".to_owned(), ToString::to_string);
    Some(format!(
        "query `{}` of `{}` compares the held id `{}`, which the library compares exactly (the simple collation), and `{first}`, which can hold strings that the collection's {default} is meant for; a command runs under one collation: state `collation(..)` on the query: `collation(locale = \"simple\")` compares both exactly, the collection's compares `{}` under it too (\"abc\" then matches \"ABC\")",
        query.name,
        spec.name,
        ids.join("`, `"),
        ids.join("`, `"),
    ))
}

/// Whether `keys` is an index on `_id` alone, which no collection may have beside its `_id`
/// index (mongod refuses a second `{ _id: 1 }`, whatever its options: IndexOptionsConflict).
fn on_id_alone(keys: &Document) -> bool {
    keys.len() == 1 && keys.contains_key("_id")
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

/// Fits every query of `spec`: its declared ones, then the library's own (`library_queries`,
/// and `extra`: the refills and counts of other collections' subsets of these documents), and
/// adds the indexes the queries no index serves need (ESR, merged); returns the problems (an
/// `index = "..."` that cannot serve its query, a projection whose types differ, a partial
/// filter on a value the field cannot store).
pub(crate) fn fit_collection(
    spec: &mut CollectionSpec,
    extra: Vec<QuerySpec>,
    rules: ServerRules,
) -> Vec<String> {
    let mut problems = Vec::new();
    let schema = spec.validator.get_document("$jsonSchema").ok().cloned();
    let schema = schema.as_ref();
    problems.extend(partial_filter_problems(spec, schema));
    for index in &spec.indexes {
        let collated = index.collation.as_ref().is_some_and(|c| !c.is_simple());
        if collated && !index.takes_collation() {
            problems.push(format!(
                "index `{}` of `{}` is of a type mongod gives no collation (`text`, `2d`: \"Index type does not support collation\", CannotCreateIndex), but states {}: state `collation(locale = \"simple\")` or none (on a collection of another default, the library sends the simple one)",
                index.name,
                spec.name,
                index.collation.as_ref().map(ToString::to_string).unwrap_or_default()
            ));
        }
    }
    for query in &spec.queries {
        problems.extend(query_path_problems(&spec.name, query, schema));
        problems.extend(held_id_problem(spec, query, schema));
    }
    let mut library = library_queries(spec);
    library.extend(extra);
    for query in &mut library {
        query.collation = library_collation(spec, query);
    }
    // every collection has the `_id_` index, which no spec lists
    let mut id_index = IndexSpec::new(mongodb::bson::doc! { "_id": 1 })
        .name("_id_")
        .unique(true);
    // mongod gives the `_id` index the collection's default collation
    id_index.collation = spec.collation.clone();
    // a time series collection's measurements have no `_id` index (mongod clusters its
    // buckets by theirs), and planner rule 9 bounds them by bucket
    let ts = spec.timeseries.as_ref().map(crate::TimeSeries::fields);
    let id_index = ts.is_none().then_some(id_index);
    let id_index = id_index.as_ref();
    // declared queries pinned to an index are checked against it; the others, and the
    // library's, are fitted to the indexes there are, or wait for a derived one
    let mut unserved: Vec<(bool, usize)> = Vec::new();
    for (i, query) in spec.queries.iter_mut().enumerate() {
        let shape = query_shape(query, schema, rules, ts.as_ref());
        if let Some(wanted) = query.index.clone() {
            let pinned = spec
                .indexes
                .iter()
                .chain(id_index)
                .find(|index| index.name == wanted);
            match pinned {
                None => {
                    let names: Vec<&str> = spec.indexes.iter().map(|i| i.name.as_str()).collect();
                    problems.push(format!(
                        "query `{}` of `{}` names `index = \"{wanted}\"`, which `{}` does not have (its indexes: {})",
                        query.name, spec.name, spec.name, names.join(", ")
                    ));
                }
                Some(index) => {
                    let verdict = fit::fit(&index_shape(index, schema), &shape);
                    match served(&verdict, &shape) {
                        Some((reverse, merge_scans)) => {
                            query.fit = Some(QueryFit {
                                index: Some(wanted),
                                reverse,
                                merge_scans,
                                derived: false,
                                problem: None,
                                filtered: Vec::new(),
                            });
                        }
                        None => {
                            let rule = match verdict {
                                Verdict::BlockingSort(rule)
                                | Verdict::Unusable(rule)
                                | Verdict::Examines(rule) => rule.to_string(),
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
                }
            }
            continue;
        }
        match best_fit(&spec.indexes, id_index, &shape, schema) {
            Ok(fit) => query.fit = Some(fit),
            // mongod answers `$geoNear` with a declared 2dsphere index only: none is derived
            Err(_) if query.is_near() => {
                problems.push(near_problem(&spec.name, &spec.indexes, query, &shape))
            }
            Err(_) => unserved.push((true, i)),
        }
    }
    for (i, query) in library.iter_mut().enumerate() {
        let shape = query_shape(query, schema, rules, ts.as_ref());
        match best_fit(&spec.indexes, id_index, &shape, schema) {
            Ok(fit) => query.fit = Some(fit),
            Err(_) => unserved.push((false, i)),
        }
    }
    let query_of = |spec: &CollectionSpec, library: &[QuerySpec], (declared, i): (bool, usize)| {
        if declared {
            spec.queries[i].clone()
        } else {
            library[i].clone()
        }
    };
    // a query of `_id` alone that the `_id` index does not serve (another collation than the
    // collection's, on string ids) gets no index of its own: mongod has one index on
    // `{ _id: 1 }`, with the collection's default collation
    unserved.retain(|&at| {
        if id_index.is_none() {
            return true;
        }
        let query = query_of(spec, &library, at);
        let shape = query_shape(&query, schema, rules, ts.as_ref());
        if !on_id_alone(&esr_document(&shape)) {
            return true;
        }
        if query.declared {
            problems.push(format!(
                "query `{}` of `{}` compares `_id` under {}, and the `_id` index compares it under {}: mongod allows no other index on `{{ _id: 1 }}` (the `_id` index has the collection's default collation), so no index can serve it; leave out the query's `collation(...)` (it then runs under the collection's)",
                query.name,
                spec.name,
                query.collation.as_ref().map_or_else(|| "the simple collation".to_owned(), ToString::to_string),
                spec.collation.as_ref().map_or_else(|| "the simple collation".to_owned(), ToString::to_string),
            ));
        }
        false
    });
    // one index per group of queries that one index serves (a prefix, or the reverse)
    let derived: Vec<(Document, Vec<String>, Option<crate::Collation>)> = {
        let wanted: Vec<(IndexShape, QueryShape)> = unserved
            .iter()
            .map(|&at| {
                let query = query_of(spec, &library, at);
                let shape = query_shape(&query, schema, rules, ts.as_ref());
                let keys = esr_document(&shape);
                let mut index = IndexSpec::new(keys);
                index.collation = query.collation.clone();
                (index_shape(&index, schema), shape)
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
                    .map(|&k| query_of(spec, &library, unserved[k]).name)
                    .collect();
                // the queries one index serves share its collation: the first one's
                let collation = query_of(spec, &library, unserved[merged.serves[0]]).collation;
                (keys, names, collation)
            })
            .collect()
    };
    for (keys, queries, collation) in derived {
        let mut index = IndexSpec::new(keys).reason(IndexReason::Query { queries });
        index.collation = collation;
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
            let absorbed = (existing.same_keys(&index) && existing.same_collation(&index))
                || (relationship_only
                    && !existing.has_declared_name()
                    && existing.is_prefix_of(&index));
            if absorbed {
                index.merge_reasons(existing);
            }
            !absorbed
        });
        // before the relationship indexes: a server that takes the first index with the
        // query's fields (SecantusDB) then takes the one derived for the query; mongod ranks
        // the plans whatever the order
        let at = spec
            .indexes
            .iter()
            .position(|existing| {
                existing.reasons.iter().all(|r| {
                    matches!(
                        r,
                        IndexReason::Reference { .. } | IndexReason::FanOut { .. }
                    )
                })
            })
            .unwrap_or(spec.indexes.len());
        spec.indexes.insert(at, index);
    }
    // fit again what was derived: every declared and library query (an absorbed relationship
    // index may have been the one a query was fitted to)
    for query in spec
        .queries
        .iter_mut()
        .filter(|q| q.index.is_none())
        .chain(library.iter_mut())
    {
        let shape = query_shape(query, schema, rules, ts.as_ref());
        // the index derived for it first, when it serves (so the report's reasons, the fit and
        // `prove` name one index), then the others in order
        let derived_for = |index: &&IndexSpec| {
            index.reasons.iter().any(
                |r| matches!(r, IndexReason::Query { queries } if queries.contains(&query.name)),
            )
        };
        let candidates: Vec<IndexSpec> = spec
            .indexes
            .iter()
            .filter(derived_for)
            .chain(spec.indexes.iter().filter(|i| !derived_for(i)))
            .cloned()
            .collect();
        query.fit = Some(match best_fit(&candidates, id_index, &shape, schema) {
            Ok(mut fit) => {
                fit.derived = spec
                    .indexes
                    .iter()
                    .any(|index| fit.index.as_ref() == Some(&index.name) && derived_for(&index));
                fit
            }
            Err(rule) => QueryFit {
                index: None,
                reverse: false,
                merge_scans: 1,
                derived: false,
                filtered: Vec::new(),
                problem: Some(rule.unwrap_or_else(|| if query.declared {
                    "no index can serve it without a blocking sort (the ESR index does not either: check the `$in` lists against mongod's limit of 200 scans)".to_owned()
                } else {
                    "the collection has no index that serves it".to_owned()
                })),
            },
        });
    }
    // what each fit leaves to the fetch, for the report
    for query in spec.queries.iter_mut().chain(library.iter_mut()) {
        let filtered = parallel_conditions(&whole_shape(query, schema, rules, ts.as_ref()), schema);
        if let Some(fit) = &mut query.fit {
            fit.filtered = filtered;
        }
    }
    distinct_names(&mut spec.indexes);
    // an index renamed above is still the one its queries were fitted to
    for query in spec.queries.iter_mut().chain(library.iter_mut()) {
        if let Some(fit) = &mut query.fit {
            if let Some(name) = &fit.index {
                if let Some(renamed) = spec.indexes.iter().find(|i| i.renamed_from() == Some(name))
                {
                    fit.index = Some(renamed.name.clone());
                }
            }
        }
    }
    spec.library_queries = library;
    problems
}

/// Gives an index the library adds (for a relationship or a query) a name of its own where its
/// default name is another index's: mongod keeps two indexes of one key pattern apart by their
/// collations, and their names must differ (`product_1` declared with the collection's
/// collation, `product_1_simple` for the library's exact comparison of the ids).
fn distinct_names(indexes: &mut [IndexSpec]) {
    let declared =
        |i: &IndexSpec| i.has_declared_name() || i.reasons.contains(&IndexReason::Declared);
    for i in 0..indexes.len() {
        if declared(&indexes[i]) {
            continue;
        }
        let name = indexes[i].name.clone();
        let clashes = indexes
            .iter()
            .enumerate()
            .any(|(j, other)| j != i && other.name == name && (j < i || declared(other)));
        if !clashes {
            continue;
        }
        let tag = match &indexes[i].collation {
            Some(c) if !c.is_simple() => {
                let mut tag: String = c
                    .locale
                    .chars()
                    .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
                    .collect();
                if let Some(strength) = c.strength {
                    tag.push_str(&format!("_{strength}"));
                }
                tag
            }
            _ => "simple".to_owned(),
        };
        let mut renamed = format!("{name}_{tag}");
        let mut n = 2;
        while indexes.iter().any(|other| other.name == renamed) {
            renamed = format!("{name}_{tag}_{n}");
            n += 1;
        }
        indexes[i].rename(renamed);
    }
}

/// The first index that serves `shape` (`_id_` last), or the last rule that kept one from it.
fn best_fit(
    indexes: &[IndexSpec],
    id_index: Option<&IndexSpec>,
    shape: &QueryShape,
    schema: Option<&Document>,
) -> std::result::Result<QueryFit, Option<String>> {
    let mut first_rule = None;
    for index in indexes.iter().chain(id_index) {
        let verdict = fit::fit(&index_shape(index, schema), shape);
        if let Some((reverse, merge_scans)) = served(&verdict, shape) {
            return Ok(QueryFit {
                index: Some(index.name.clone()),
                reverse,
                merge_scans,
                derived: false,
                problem: None,
                filtered: Vec::new(),
            });
        }
        // the first index's reason: the one derived for the query comes first
        if let Verdict::BlockingSort(rule) | Verdict::Unusable(rule) | Verdict::Examines(rule) =
            &verdict
        {
            first_rule.get_or_insert_with(|| rule.to_string());
        }
    }
    Err(first_rule)
}

/// A near query no index serves: the `2dsphere` index to declare. When the collection has a
/// 2dsphere index on the point already, the reason is the query's other conditions (equalities,
/// ranges, a sort), which that index does not hold: the index then serves the nearness alone,
/// and every document nearest the point is read until enough of them match.
fn near_problem(
    collection: &str,
    indexes: &[IndexSpec],
    query: &QuerySpec,
    shape: &QueryShape,
) -> String {
    let keys: Vec<String> = fit::esr_keys(shape)
        .into_iter()
        .map(|(path, dir)| {
            let field = if path.contains('.') {
                format!("\"{path}\"")
            } else {
                path
            };
            format!("{field} = {dir}")
        })
        .collect();
    let path = query.geo.as_ref().map_or("", |g| g.path.as_str());
    let on_the_point = indexes.iter().find(|index| {
        index
            .keys
            .get_str(path)
            .is_ok_and(|kind| kind == "2dsphere")
    });
    if let Some(index) = on_the_point {
        // each path once, though it may be both compared and sorted on
        let mut others: Vec<String> = Vec::new();
        for other in shape
            .eq
            .iter()
            .chain(shape.in_.iter().map(|(p, _)| p))
            .chain(shape.range.iter())
            .chain(shape.sort.iter().map(|(p, _)| p))
        {
            let named = format!("`{other}`");
            if other != path && !index.keys.contains_key(other) && !others.contains(&named) {
                others.push(named);
            }
        }
        return format!(
            "query `{}` of `{collection}` asks for the documents nearest to a point that also match {}, which the 2dsphere index `{}` on `{path}` does not hold: with it alone, mongod reads the documents nearest the point one by one until enough of them match (this crate's rule: every condition of a declared query served by its index, not mongod's); declare `#[index(keys({}))]`",
            query.name,
            others.join(", "),
            index.name,
            keys.join(", ")
        );
    }
    format!(
        "query `{}` of `{collection}` asks for the documents nearest to a point, which mongod answers (`$geoNear`) only with a 2dsphere index on `{path}`, and `{collection}` has none that serves it: declare `#[index(keys({}))]`",
        query.name,
        keys.join(", ")
    )
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
            let hint = json_schema::nearest_path(schema, path)
                .map(|near| format!(" (did you mean `{near}`, as stored?)"))
                .unwrap_or_default();
            problems.push(format!(
                "query `{}` of `{collection}` names `{path}`, which is not a field of its documents{hint}",
                query.name
            ));
        }
    }
    // mongod sorts a document by the smallest (ascending) or largest (descending) value an
    // array holds at a sort path ("orders by their cheapest item"); a keyset page after such a
    // value compares every element, so a document already read comes again on a later page
    // (one whose other items cost more)
    for (path, _) in query.sort.iter().filter(|_| query.pages) {
        if let Some(array) = json_schema::array_prefixes(schema, path).first() {
            problems.push(format!(
                "query `{}` of `{collection}` is read in pages and sorts on `{path}`, under the array `{array}`: mongod sorts a document by the smallest (ascending) or largest (descending) value its elements hold there, but a page's start compares every element, so a document read on one page would come again on the next; read it without `pages` (with a `limit`), or sort on a field outside the array (the value the order means, kept beside it)",
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
            if let Some(stored) = crate::validation::never_holds(schema, path, value) {
                problems.push(format!(
                    "the partial filter of index `{}` of `{}` matches `{path}` = {value}, which `{path}` never stores (it stores {stored}): the index would stay empty",
                    index.name,
                    spec.name,
                ));
            }
        }
    }
    problems
}
