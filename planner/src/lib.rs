//! Whether an index serves a query without a blocking (in-memory) sort, decided by mongod's own
//! query planner rules, and the ESR index a query needs.
//!
//! Pure Rust, no I/O: [`fit`] mirrors what mongod 7/8's classic planner does with one index and
//! one query shape, [`esr_keys`] derives the key pattern a declared query needs, [`covers`] and
//! [`merge_derived`] fold derived indexes into the smallest set.
//!
//! # The rules and where mongod applies them (`mongodb/mongo`, `src/mongo/db/query/`)
//!
//! 1. **Usable only with a predicate on the first key, or a sort the index provides whole.**
//!    `planner_ixselect.cpp` `QueryPlannerIXSelect::findRelevantIndices` keeps an index only when
//!    its first key field has a predicate. Without one, `query_planner.cpp`
//!    `QueryPlanner::plan` ("If a sort order is requested, there may be an index that provides
//!    it") scans the whole index when the sort, as written, is a prefix of the key pattern cut at
//!    the first special key (`QueryPlannerAnalysis::getSortPattern`) or of its complete reverse
//!    (`providesSort`), and skips sparse indexes, indexes of another collation, and partial
//!    indexes the filter does not imply.
//! 2. **Equalities anywhere, then the sort or its complete reverse.**
//!    `query_solution.cpp` `computeSortsForScan` builds the "base sort pattern": the key pattern
//!    without its point-bound (equality) fields, cut at the first special key or multikey field
//!    that cannot give an order. `ProvidedSortSet::contains` skips sort fields that are equality
//!    fields of the scan and needs the rest to be a prefix of the base pattern;
//!    `planner_analysis.cpp` `QueryPlannerAnalysis::analyzeNonBlockingSort` also tries the
//!    complete reverse (`QueryPlannerCommon::reverseSortObj`, every direction flipped). A partial
//!    flip is neither.
//! 3. **ESR: a range, or an unconstrained key, before a sort key cuts the index there.** Such a
//!    key stays in the base pattern (it is not a point), so the sort cannot be its prefix.
//! 4. **`$in` before the sort: explode into point scans merged by SORT_MERGE, at most 200.**
//!    `planner_analysis.cpp` `QueryPlannerAnalysis::explodeForSort`: the leading key fields
//!    whose bounds are unions of points are exploded (their Cartesian product is the scan count);
//!    the sort, as written, must be a prefix of the remaining key pattern (or its complete
//!    reverse), cut at its first multikey field; over `internalQueryMaxScansToExplode`
//!    (`query_knobs.idl`, default 200) mongod sorts in memory. A one-element `$in` is a point,
//!    an equality. An empty `$in` has empty bounds: neither a point nor explodable
//!    (query_planner_test.cpp `CantExplodeWithEmptyBounds`), so it acts like a range here.
//! 5. **Multikey.** `query_solution.cpp` `confirmBoundsProvideSortComponentGivenMultikeyness`: a
//!    multikey key gives an order only when it has no bounds (`[MinKey, MaxKey]`) and no bounded
//!    multikey key shares a path prefix with it (SERVER-31898; jstests/core/query/sort/
//!    sort_array.js). A bounded multikey equality is dropped from the base pattern but is no
//!    longer ignored in the sort. Exploded scans never give an order on a multikey field
//!    (`explodeForSort`, `multikeyFields`).
//! 6. **Collation.** `planner_ixselect.cpp` `QueryPlannerIXSelect::_compatible` assigns no
//!    predicate that compares a string, an array or an object to an index whose collation
//!    differs from the query's (`boundsGeneratingNodeContainsComparisonToType`), and
//!    `query_solution.cpp` `computeSortsForScan` counts a key with string bounds of such an index
//!    among the "unsupported fields", which cut the sort there. A shape carries no values, so
//!    a path may hold strings unless the query names it in
//!    [`QueryShape::uncollated_paths`] (numbers, dates, ids, booleans): under another collation a
//!    key on a collated path gets no bounds and gives no order, one on an uncollated path keeps
//!    both. When that is what keeps the index from serving, the verdict's rule is
//!    [`Rule::CollationDiffers`].
//! 7. **Special keys.** A hashed key gives only point bounds (`$in`/equality) and, unless it is an
//!    equality, ends the order (`computeSortsForScan`: "Hashed fields ... prohibit sorts on the
//!    later fields"). Text, `2d` and wildcard keys need a `$text`, legacy geo or
//!    wildcard-specific predicate that a [`QueryShape`] cannot declare, so such an index is
//!    unusable here; so is a `2dsphere` index for a query without a geo predicate on its geo key
//!    (`planner_ixselect.cpp` `stripInvalidAssignmentsTo2dsphereIndices`: a 2dsphere index of
//!    version 2 or later indexes no document without the geo field, so mongod assigns it nothing
//!    else).
//! 8. **Geo.** A [`QueryShape::geo`] predicate on the path of a `2dsphere` key: `$geoWithin`
//!    (`GeoKind::Within`) bounds that key by the cells that cover the area, a union of ranges
//!    that gives no order (`index_bounds_builder.cpp` `translate`, `S2CellIdsToIntervals`);
//!    `$near` / `$geoNear` (`GeoKind::Near`) is answered by the `GEO_NEAR_2DSPHERE` stage
//!    (`planner_access.cpp` `makeLeafNode`, `GeoNear2DSphereNode`), which returns the documents
//!    nearest first and bounds the other keys of the index by their predicates. Only an index
//!    with the `2dsphere` key can answer a near query: `$geoNear` fails without one
//!    (`document_source_geo_near.cpp`, "unable to find index for $geoNear query"), and a near
//!    query takes no other sort.
//! 9. **Time series.** A time series collection stores buckets; mongod translates an index on
//!    the collection into one on its buckets (`timeseries_index_schema_conversion_functions.cpp`
//!    `createBucketsSpecFromTimeseriesSpec`): a key on the meta field (or under it) stays itself,
//!    a key on the time field becomes `control.min.<time>` and `control.max.<time>`, and a key on
//!    any other field (a measurement) becomes its bucket's `control.min` and `control.max`. An
//!    equality on the time field or a measurement is rewritten into bounds on the bucket minimum
//!    and maximum (`bucket_spec.cpp` `createPredicatesOnBucketLevelField`): a range, never a
//!    point. The time key still gives the order of the bucket-bounded sort
//!    (`$_internalBoundedSort`, `timeseries/bucket_unpacking_with_sort.js`); a measurement key
//!    gives none. [`QueryShape::time_series`] names the fields.
//!
//! Partial indexes: mongod uses one only when the query's filter implies its
//! `partialFilterExpression` (`expression::isSubsetOf`); a shape carries no filter, so a partial
//! index is reported unusable (the caller, who holds both filters, may decide otherwise).
//! Sparse indexes answer equality and range predicates (values are assumed non-null).
//!
//! # Where each rule lives
//!
//! One source file a rule family, each with the rule's code, the mongod function or test it
//! comes from, and its rows of the planner's table (`cases()`, run by the crate's
//! `planner_table` test against [`fit`]):
//!
//! | rule | file | mongod |
//! |---|---|---|
//! | 1, a predicate on the first key or a sort provided whole | `fit.rs` | `findRelevantIndices`, `QueryPlanner::plan` |
//! | 2 and 3, equalities anywhere, ESR | `sort.rs`, `bounds.rs` | `computeSortsForScan`, `ProvidedSortSet::contains` |
//! | 4, `$in` exploded for the sort | `explode.rs` | `explodeForSort`, `internalQueryMaxScansToExplode` |
//! | 5, multikey | `multikey.rs` | `confirmBoundsProvideSortComponentGivenMultikeyness` |
//! | 6, collation | `collation.rs` | `_compatible`, `collator_factory_icu.cpp` |
//! | 7, special keys | `special.rs` | `stripInvalidAssignmentsTo2dsphereIndices` |
//! | 8, geo | `geo.rs` | `GeoNear2DSphereNode`, `S2CellIdsToIntervals` |
//! | 9, time series | `timeseries.rs` | `createBucketsSpecFromTimeseriesSpec`, `bucket_spec.cpp` |
//!
//! The inputs are in `shape.rs`, what the planner knows of each key of an index (its bounds) in
//! `key.rs`, the answers in `verdict.rs`, the derived index in `esr.rs` and the merge of derived
//! indexes in `merge.rs`.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod bounds;
pub mod collation;
mod esr;
mod explode;
mod fit;
mod geo;
mod key;
mod merge;
mod multikey;
mod shape;
mod sort;
mod special;
#[cfg(test)]
mod tests;
mod timeseries;
mod verdict;

pub use esr::esr_keys;
pub use explode::MAX_SCANS_TO_EXPLODE;
pub use fit::fit;
pub use merge::{covers, merge_derived, Merged};
pub use shape::{
    GeoKind, GeoPredicate, IndexShape, KeyDir, QueryShape, ServerRules, TimeSeriesFields,
};
pub use verdict::{Cut, MultikeyCause, Rule, Verdict};
