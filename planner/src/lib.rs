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

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

use std::fmt;

pub mod collation;

/// mongod's `internalQueryMaxScansToExplode` (query_knobs.idl, default 200): the most point
/// scans `explodeForSort` creates to merge-sort; over it mongod sorts in memory.
pub const MAX_SCANS_TO_EXPLODE: usize = 200;

/// A key direction in an index pattern or a sort: 1 or -1 (other index kinds, e.g. "text",
/// "2dsphere", "hashed", are `Special(String)`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyDir {
    /// Ascending, `1`.
    Asc,
    /// Descending, `-1`.
    Desc,
    /// A special index kind, e.g. `"hashed"`, `"text"`, `"2dsphere"`.
    Special(String),
}

impl KeyDir {
    /// The opposite direction; a special kind stays itself.
    pub fn reversed(&self) -> KeyDir {
        match self {
            KeyDir::Asc => KeyDir::Desc,
            KeyDir::Desc => KeyDir::Asc,
            KeyDir::Special(kind) => KeyDir::Special(kind.clone()),
        }
    }

    fn is_hashed(&self) -> bool {
        matches!(self, KeyDir::Special(kind) if kind == "hashed")
    }
}

impl fmt::Display for KeyDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDir::Asc => f.write_str("1"),
            KeyDir::Desc => f.write_str("-1"),
            KeyDir::Special(kind) => write!(f, "\"{kind}\""),
        }
    }
}

/// One index as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexShape {
    /// The index name, for messages.
    pub name: String,
    /// The key pattern, in order.
    pub keys: Vec<(String, KeyDir)>,
    /// `unique: true`.
    pub unique: bool,
    /// `sparse: true`.
    pub sparse: bool,
    /// Has a `partialFilterExpression`.
    pub partial: bool,
    /// Locale string or canonical JSON of the collation; `None` is the simple collation.
    pub collation: Option<String>,
    /// Stored paths that are arrays, e.g. `"tags"`, `"lines.product._id"`; a key is multikey
    /// when one of these is its path or a dotted prefix of it.
    pub multikey_paths: Vec<String>,
}

/// A query as declared: which stored paths it constrains and how.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryShape {
    /// Paths with an equality predicate.
    pub eq: Vec<String>,
    /// Paths with an `$in`, each with the largest list size it is run with.
    pub in_: Vec<(String, usize)>,
    /// Paths with a range predicate (`$gt`, `$lte`, ...).
    pub range: Vec<String>,
    /// The sort, in order.
    pub sort: Vec<(String, KeyDir)>,
    /// The query's collation (same form as [`IndexShape::collation`]); `None` is simple.
    pub collation: Option<String>,
    /// Stored paths known to be arrays (joined with the index's own multikey paths).
    pub multikey_paths: Vec<String>,
    /// Arrays whose conditions the query sends as one `$elemMatch` on each (`"items"` for
    /// `{ items: { $elemMatch: { sku: .., qty: .. } } }`, an inner array's inside its outer
    /// one's): the predicates on paths under one of them share its element, so a multikey
    /// index intersects and compounds their bounds there (rule 5).
    pub elem_match: Vec<String>,
    /// Stored paths whose values a collation never compares: no string, array or object
    /// (numbers, dates, ObjectIds, booleans). Under another collation than the index's, a key on
    /// one of them keeps its bounds and its order (rule 6); every other path may hold strings.
    pub uncollated_paths: Vec<String>,
    /// The geo predicate of the query, if any (rule 8).
    pub geo: Option<GeoPredicate>,
    /// The fields of a time series collection, when the query reads one (rule 9).
    pub time_series: Option<TimeSeriesFields>,
    /// Whose planner rules decide (mongod 7.0 and 8.0 by default).
    pub rules: ServerRules,
}

/// A geo predicate of a query (rule 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeoPredicate {
    /// The stored path of the GeoJSON field.
    pub path: String,
    /// Nearest first, or inside an area.
    pub kind: GeoKind,
}

/// What a geo predicate asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeoKind {
    /// `$near` / `$geoNear`: the documents nearest first, within a distance.
    Near,
    /// `$geoWithin`: the documents inside an area (a circle or a polygon).
    Within,
}

/// The fields of a time series collection (rule 9).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimeSeriesFields {
    /// The time field (`timeField`).
    pub time: String,
    /// The meta field (`metaField`), if the collection has one.
    pub meta: Option<String>,
}

impl TimeSeriesFields {
    /// Whether `path` is the meta field or a path under it (a key mongod keeps as it is).
    pub fn is_meta(&self, path: &str) -> bool {
        self.meta.as_deref().is_some_and(|meta| {
            path == meta || path.strip_prefix(meta).is_some_and(|r| r.starts_with('.'))
        })
    }

    /// Whether `path` is bounded by its buckets' minimum and maximum: the time field or a
    /// measurement (anything but the meta field).
    pub fn is_bucket_bounded(&self, path: &str) -> bool {
        !self.is_meta(path)
    }
}

/// The mongod release line whose planner rules a fit follows where they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerRules {
    /// mongod 7.0 and 8.0: `explodeForSort` gives no order on a multikey index, so an `$in`
    /// before the sort keys of an index with any array key is sorted in memory.
    #[default]
    Mongod70,
    /// mongod 8.1 and later (SERVER-56865, jstests `explode_for_sort_multikey.js`,
    /// `requires_fcv_81`): the exploded scans give the order of the keys after the exploded
    /// prefix up to the first multikey key, an exploded multikey key included.
    Mongod81,
}

impl ServerRules {
    /// Whether `explodeForSort` serves a sort from an index with an array key.
    pub fn explodes_multikey_indexes(self) -> bool {
        matches!(self, ServerRules::Mongod81)
    }
}

/// What mongod's planner makes of one index for one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The index answers the query in the requested order, no in-memory sort.
    Served {
        /// The scan walks the index backwards.
        reverse: bool,
        /// Index scans merged by SORT_MERGE; 1 when there is no SORT_MERGE.
        merge_scans: usize,
        /// No predicate bounds the index: mongod scans it whole for the order (filtering on
        /// fetch).
        full_scan: bool,
    },
    /// The index bounds the scan, but mongod sorts the results in memory.
    BlockingSort(Rule),
    /// The index gives the order, but an equality of the query lies behind a key it does not
    /// bound to points (ESR: equalities, then sort, then ranges): mongod examines every key of
    /// that key's range and filters the equality on them.
    Examines(Rule),
    /// mongod does not use the index for this query.
    Unusable(Rule),
}

/// What sits in front of a sort key and cuts the index's order there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// A range predicate.
    Range,
    /// No predicate at all.
    Unconstrained,
    /// An `$in` with this many values behind a key that stops the explosion.
    In(usize),
    /// An equality that follows the non-point key where the explosion for the `$in` on the
    /// named field stops: `explodeForSort` matches the sort against the remaining keys as they
    /// are.
    EqualityAfterIn(String),
}

/// Why a multikey key gives no order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultikeyCause {
    /// The key itself has bounds.
    Bounded,
    /// A bounded multikey key (named) shares a path prefix with it.
    SharedPrefix(String),
    /// The sort needs the `$in` on the named field exploded; exploded scans give no multikey
    /// order.
    Exploded(String),
    /// The sort needs the `$in` on the named field exploded, and mongod 7.0 and 8.0 explode no
    /// scan of an index with an array key (8.1 does: [`ServerRules::Mongod81`]).
    IndexMultikey(String),
}

/// One planner rule that keeps an index from serving a query; `Display` gives the sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// No predicate on the first key and no sort the index provides whole (rule 1).
    NoLeadingPredicate {
        /// Index name.
        index: String,
        /// The index's first key.
        first_key: String,
        /// The query's sort (empty when it has none).
        sort: Vec<(String, KeyDir)>,
    },
    /// The query's collation differs from the index's (rule 6).
    CollationDiffers {
        /// Index name.
        index: String,
        /// The index's collation; `None` is simple.
        index_collation: Option<String>,
        /// The query's collation; `None` is simple.
        query_collation: Option<String>,
    },
    /// A text, geo or wildcard key needs a predicate a query shape cannot declare (rule 7).
    SpecialIndex {
        /// Index name.
        index: String,
        /// The special key.
        key: String,
        /// Its kind, e.g. `text`.
        kind: String,
    },
    /// A partial index, whose filter the query shape cannot be shown to imply.
    PartialFilter {
        /// Index name.
        index: String,
    },
    /// A sparse index is never scanned whole to provide a sort (rule 1).
    SparseSort {
        /// Index name.
        index: String,
        /// The index's first key, which the query does not constrain.
        first_key: String,
    },
    /// A sort field the index has no key on.
    SortKeyMissing {
        /// Index name.
        index: String,
        /// The sort field.
        key: String,
    },
    /// A key that is not an equality precedes a sort key (rules 3 and 4).
    KeyBeforeSort {
        /// Index name.
        index: String,
        /// The key that cuts the order.
        key: String,
        /// What bounds it.
        cut: Cut,
        /// The sort key it precedes.
        sort_key: String,
    },
    /// The sort names index keys in another order than the index.
    SortOrder {
        /// Index name.
        index: String,
        /// The query's sort.
        sort: Vec<(String, KeyDir)>,
        /// The index's key pattern.
        keys: Vec<(String, KeyDir)>,
    },
    /// The sort flips some directions of the index's order but not all (rule 2).
    PartialFlip {
        /// Index name.
        index: String,
        /// The query's sort.
        sort: Vec<(String, KeyDir)>,
        /// The index's key pattern.
        keys: Vec<(String, KeyDir)>,
    },
    /// The `$in` explosion would need more scans than [`MAX_SCANS_TO_EXPLODE`] (rule 4).
    TooManyScans {
        /// Index name.
        index: String,
        /// The exploded `$in` fields and their list sizes.
        fields: Vec<(String, usize)>,
        /// The product of the sizes.
        scans: usize,
    },
    /// The sort names a key inside the point prefix exploded for an `$in` (rule 4).
    SortNamesExplodedKey {
        /// Index name.
        index: String,
        /// The sort key in the exploded prefix.
        key: String,
        /// The `$in` field whose explosion the sort needs.
        in_field: String,
    },
    /// A multikey key cannot give the order (rule 5).
    MultikeySort {
        /// Index name.
        index: String,
        /// The multikey key.
        key: String,
        /// Why.
        cause: MultikeyCause,
    },
    /// A hashed key without an equality precedes or is a sort key (rule 7).
    HashedSort {
        /// Index name.
        index: String,
        /// The hashed key.
        key: String,
    },
    /// An equality (or `$in`) of the query is not in the index's prefix of point-bounded keys
    /// (ESR).
    EqualityBehind {
        /// Index name.
        index: String,
        /// The equality's path.
        key: String,
        /// The index key in front of it that the query does not bound to points (`None` when the
        /// index has no key on the equality's path).
        behind: Option<String>,
        /// What bounds that key.
        cut: Cut,
    },
    /// A near query and an index without a `2dsphere` key on its geo field (rule 8).
    NoGeoIndex {
        /// Index name.
        index: String,
        /// The near query's geo field.
        path: String,
    },
    /// A `2dsphere` key precedes or is a sort key: its cell ranges give no order (rule 8).
    GeoOrder {
        /// Index name.
        index: String,
        /// The `2dsphere` key.
        key: String,
    },
    /// A key of a time series collection's index on its time field or a measurement: bounded
    /// by each bucket's minimum and maximum, never a point, and for a measurement no order
    /// (rule 9).
    TimeSeriesBucket {
        /// Index name.
        index: String,
        /// The key.
        key: String,
        /// The key is the time field (a measurement otherwise).
        time: bool,
    },
    /// The index does not provide the sort for a reason none of the others names (not expected;
    /// kept so that a verdict is always total).
    SortNotProvided {
        /// Index name.
        index: String,
        /// The query's sort.
        sort: Vec<(String, KeyDir)>,
        /// The index's key pattern.
        keys: Vec<(String, KeyDir)>,
    },
}

/// `{a: 1, b: -1}`.
fn pattern(keys: &[(String, KeyDir)]) -> String {
    let inner: Vec<String> = keys.iter().map(|(p, d)| format!("{p}: {d}")).collect();
    format!("{{{}}}", inner.join(", "))
}

fn collation_name(c: &Option<String>) -> String {
    match c {
        Some(c) => format!("collation {c}"),
        None => "the simple collation".to_owned(),
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SORTS: &str = "mongod sorts in memory";
        match self {
            Rule::NoLeadingPredicate {
                index,
                first_key,
                sort,
            } if sort.is_empty() => write!(
                f,
                "no predicate on the index's first key `{first_key}` and no sort: mongod does not \
                 use index `{index}`"
            ),
            Rule::NoLeadingPredicate {
                index,
                first_key,
                sort,
            } => write!(
                f,
                "no predicate on the index's first key `{first_key}` and no sort it provides \
                 (sort {} is not a prefix of index `{index}` nor of its complete reverse): \
                 mongod does not use it",
                pattern(sort)
            ),
            Rule::CollationDiffers {
                index,
                index_collation,
                query_collation,
            } => write!(
                f,
                "collation differs: index `{index}` has {} and the query {}: mongod uses it \
                 neither for string bounds nor for a sort",
                collation_name(index_collation),
                collation_name(query_collation)
            ),
            Rule::SpecialIndex { index, key, kind } => write!(
                f,
                "index `{index}` has a \"{kind}\" key on `{key}`: mongod uses it only for a \
                 predicate of that kind, which a declared query has none of"
            ),
            Rule::PartialFilter { index } => write!(
                f,
                "index `{index}` is partial: mongod uses it only when the query's filter implies \
                 its partialFilterExpression, which a query shape cannot show"
            ),
            Rule::SparseSort { index, first_key } => write!(
                f,
                "index `{index}` is sparse and the query has no predicate on its first key \
                 `{first_key}`: mongod never scans a sparse index whole for a sort"
            ),
            Rule::SortKeyMissing { index, key } => {
                write!(f, "index `{index}` has no key on `{key}`: {SORTS}")
            }
            Rule::KeyBeforeSort {
                index,
                key,
                cut,
                sort_key,
            } => match cut {
                Cut::Range => write!(
                    f,
                    "range `{key}` precedes sort `{sort_key}` in index `{index}`: {SORTS}"
                ),
                Cut::Unconstrained => write!(
                    f,
                    "key `{key}` has no equality and precedes sort `{sort_key}` in index \
                     `{index}`: {SORTS}"
                ),
                Cut::In(n) => write!(
                    f,
                    "`$in` on `{key}` ({n} values) precedes sort `{sort_key}` in index `{index}` \
                     behind a key that is not a point, where mongod cannot explode it: {SORTS}"
                ),
                Cut::EqualityAfterIn(in_field) => write!(
                    f,
                    "equality `{key}` precedes sort `{sort_key}` in index `{index}` behind the \
                     keys exploded for the `$in` on `{in_field}`: after the explosion mongod \
                     matches the sort against the remaining keys as they are, so {SORTS}"
                ),
            },
            Rule::SortOrder { index, sort, keys } => write!(
                f,
                "sort {} does not follow the key order of index `{index}` {}: {SORTS}",
                pattern(sort),
                pattern(keys)
            ),
            Rule::PartialFlip { index, sort, keys } => write!(
                f,
                "sort {} is a partial flip of index `{index}` {}: a scan gives the index order \
                 or its complete reverse, so {SORTS}",
                pattern(sort),
                pattern(keys)
            ),
            Rule::TooManyScans {
                index,
                fields,
                scans,
            } => {
                let names: Vec<String> = fields.iter().map(|(p, _)| format!("`{p}`")).collect();
                let sizes: Vec<String> = fields.iter().map(|(_, n)| n.to_string()).collect();
                let product = if fields.len() > 1 {
                    format!(" ({})", sizes.join(" × "))
                } else {
                    String::new()
                };
                write!(
                    f,
                    "`$in` on {} explodes into {scans} scans{product} in index `{index}`, over \
                     mongod's internalQueryMaxScansToExplode ({MAX_SCANS_TO_EXPLODE}): {SORTS}",
                    names.join(" and "),
                )
            }
            Rule::SortNamesExplodedKey {
                index,
                key,
                in_field,
            } => write!(
                f,
                "sort names `{key}`, which lies in the point prefix of index `{index}` exploded \
                 for the `$in` on `{in_field}`: mongod matches the whole sort against the keys \
                 after that prefix, so {SORTS}"
            ),
            Rule::MultikeySort { index, key, cause } => match cause {
                MultikeyCause::Bounded => write!(
                    f,
                    "key `{key}` of index `{index}` is multikey (an array path) and has bounds: \
                     it gives no order, so {SORTS}"
                ),
                MultikeyCause::SharedPrefix(other) => write!(
                    f,
                    "key `{key}` of index `{index}` is multikey and shares a path prefix with \
                     the bounded multikey key `{other}`: it gives no order, so {SORTS}"
                ),
                MultikeyCause::Exploded(in_field) => write!(
                    f,
                    "key `{key}` of index `{index}` is multikey and the sort needs the `$in` on \
                     `{in_field}` exploded: exploded scans give no order on a multikey key, so \
                     {SORTS}"
                ),
                MultikeyCause::IndexMultikey(in_field) => write!(
                    f,
                    "the sort needs the `$in` on `{in_field}` exploded, and key `{key}` makes \
                     index `{index}` multikey: mongod 7.0 and 8.0 explode no scan of a multikey \
                     index (8.1 does, SERVER-56865; `Schema::builder().server_rules(..)` picks \
                     the rules), so {SORTS}"
                ),
            },
            Rule::HashedSort { index, key } => write!(
                f,
                "key `{key}` of index `{index}` is hashed and has no equality: it orders by \
                 hash, so {SORTS}"
            ),
            Rule::EqualityBehind {
                index,
                key,
                behind: None,
                ..
            } => write!(
                f,
                "the equality on `{key}` is not in index `{index}`: mongod examines every key \
                 the other predicates bound and filters `{key}` on each document"
            ),
            Rule::EqualityBehind {
                index,
                key,
                behind: Some(behind),
                cut,
            } => {
                let what = match cut {
                    Cut::Range => format!("the whole range of `{behind}`"),
                    Cut::Unconstrained => format!("every `{behind}`"),
                    Cut::In(n) => format!("the {n} values of `{behind}`"),
                    Cut::EqualityAfterIn(_) => format!("the keys of `{behind}`"),
                };
                write!(
                    f,
                    "the equality on `{key}` sits behind `{behind}` in index `{index}`: mongod \
                     examines {what} and filters `{key}` on each key (equalities first: ESR)"
                )
            }
            Rule::NoGeoIndex { index, path } => write!(
                f,
                "index `{index}` has no \"2dsphere\" key on `{path}`: a near query is answered \
                 only by a 2dsphere index on its field"
            ),
            Rule::GeoOrder { index, key } => write!(
                f,
                "key `{key}` of index `{index}` is \"2dsphere\": its cell ranges give no order, \
                 so {SORTS}"
            ),
            Rule::TimeSeriesBucket { index, key, time } => {
                if *time {
                    write!(
                        f,
                        "key `{key}` of index `{index}` is the time field of a time series \
                         collection: mongod bounds it by each bucket's minimum and maximum, so an \
                         equality on it is a range (ESR: it belongs after the equalities)"
                    )
                } else {
                    write!(
                        f,
                        "key `{key}` of index `{index}` is a measurement of a time series \
                         collection: mongod indexes each bucket's minimum and maximum of it, which \
                         bound a range but give no point and no order; index the meta field (or \
                         fields under it) and the time field instead"
                    )
                }
            }
            Rule::SortNotProvided { index, sort, keys } => write!(
                f,
                "index `{index}` {} does not provide sort {}: {SORTS}",
                pattern(keys),
                pattern(sort)
            ),
        }
    }
}

/// The bounds mongod builds for one key from the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// `[MinKey, MaxKey]`.
    None,
    /// One point: an equality or a one-element `$in`.
    Point,
    /// A union of this many points (an `$in`, at least two).
    Points(usize),
    /// Not points: a range, or an empty `$in`.
    Range,
}

#[derive(Debug)]
struct Key<'a> {
    path: &'a str,
    dir: &'a KeyDir,
    bound: Bound,
    multikey: bool,
    /// Under another collation than the query's, on a path that may hold strings: no bounds
    /// (`_compatible`) and no order (`computeSortsForScan`'s unsupported fields), rule 6.
    collated: bool,
    /// A measurement of a time series collection: its buckets' minimum and maximum give no
    /// order, rule 9.
    measurement: bool,
}

impl Key<'_> {
    /// A key whose scan gives no order of its own and cuts the order there.
    fn unordered(&self) -> bool {
        self.collated || self.measurement
    }
}

fn is_multikey(path: &str, index: &IndexShape, query: &QueryShape) -> bool {
    index
        .multikey_paths
        .iter()
        .chain(query.multikey_paths.iter())
        .any(|m| {
            path == m
                || (path.len() > m.len()
                    && path.starts_with(m.as_str())
                    && path.as_bytes()[m.len()] == b'.')
        })
}

/// `FieldRef::commonPrefixSize(...) > 0`: the first path components are equal.
fn shares_prefix(a: &str, b: &str) -> bool {
    a.split('.').next() == b.split('.').next()
}

fn bound_of(path: &str, dir: &KeyDir, query: &QueryShape) -> Bound {
    let geo = query.geo.as_ref().is_some_and(|g| g.path == path);
    if geo {
        // the cells that cover the area (a `2dsphere` key; another key gets none from it)
        return if is_2dsphere(dir) {
            Bound::Range
        } else {
            Bound::None
        };
    }
    let bound = if query.eq.iter().any(|p| p == path) {
        Bound::Point
    } else if let Some((_, n)) = query.in_.iter().find(|(p, _)| p == path) {
        match *n {
            0 => Bound::Range,
            1 => Bound::Point,
            n => Bound::Points(n),
        }
    } else if query.range.iter().any(|p| p == path) {
        Bound::Range
    } else {
        Bound::None
    };
    // index_bounds_builder.cpp: a hashed key gets bounds from equalities and `$in` only.
    if dir.is_hashed() && bound == Bound::Range {
        Bound::None
    } else {
        bound
    }
}

fn is_2dsphere(dir: &KeyDir) -> bool {
    matches!(dir, KeyDir::Special(kind) if kind == "2dsphere")
}

/// Whether a key on `path` is one a collation compares: under another collation than the
/// query's, every path the query does not name as uncollated (rule 6).
fn collated(path: &str, index: &IndexShape, query: &QueryShape) -> bool {
    index.collation != query.collation && !query.uncollated_paths.iter().any(|p| p == path)
}

/// The innermost of the query's `$elemMatch` arrays that `path` lies under (strictly).
fn elem_match_root<'q>(path: &str, query: &'q QueryShape) -> Option<&'q str> {
    query
        .elem_match
        .iter()
        .filter(|m| under(path, m))
        .max_by_key(|m| m.len())
        .map(String::as_str)
}

/// Whether `path` lies under `array` (`array.` is a prefix of it).
fn under(path: &str, array: &str) -> bool {
    path.len() > array.len() && path.starts_with(array) && path.as_bytes()[array.len()] == b'.'
}

/// `plan_enumerator.cpp` `canAssignPredToIndex` for the predicate on `path`: each array prefix
/// of it (shortest first) is taken by the first predicate assigned under it, with that
/// predicate's `$elemMatch` when the prefix is its root or outside it; a later predicate gets
/// bounds only if every prefix it meets was taken by the same `$elemMatch`. A prefix inside the
/// `$elemMatch` (or with none) takes no other predicate.
fn can_assign<'q>(
    path: &str,
    index: &'q IndexShape,
    query: &'q QueryShape,
    used: &mut Vec<(&'q str, Option<&'q str>)>,
) -> bool {
    let root = elem_match_root(path, query);
    let mut arrays = array_prefixes(path, index, query);
    arrays.sort_by_key(|a| a.len());
    arrays.dedup();
    let mut taken = Vec::new();
    for array in arrays {
        // outside the innermost `$elemMatch`: the root itself or a prefix of it
        let context = root.filter(|root| array.len() <= root.len());
        match used.iter().find(|(u, _)| *u == array) {
            Some((_, held)) => {
                if held.is_none() || *held != context {
                    return false;
                }
            }
            None => {
                taken.push((array, context));
                if context.is_none() {
                    break;
                }
            }
        }
    }
    used.extend(taken);
    true
}

fn analyse<'a>(index: &'a IndexShape, query: &QueryShape) -> Vec<Key<'a>> {
    // plan_enumerator.cpp canAssignPredToIndex: on a multikey index, predicates on two paths
    // under one array path get bounds together only inside one `$elemMatch` on it (else the
    // values may come from different elements): outside one, the first key under it keeps its
    // bounds, the later ones are scanned whole
    let mut used: Vec<(&str, Option<&str>)> = Vec::new();
    index
        .keys
        .iter()
        .map(|(path, dir)| {
            // a geo predicate compares no string: a collation leaves its bounds alone
            let geo = is_2dsphere(dir) && query.geo.as_ref().is_some_and(|g| g.path == *path);
            let collated = !geo && collated(path, index, query);
            let measurement = query
                .time_series
                .as_ref()
                .is_some_and(|ts| ts.is_bucket_bounded(path) && *path != ts.time);
            // `_compatible`: no predicate comparing a string to an index of another collation
            let mut bound = if collated {
                Bound::None
            } else {
                bound_of(path, dir, query)
            };
            let multikey = is_multikey(path, index, query);
            if bound != Bound::None && multikey && !can_assign(path, index, query, &mut used) {
                bound = Bound::None;
            }
            Key {
                path,
                dir,
                bound,
                multikey,
                collated,
                measurement,
            }
        })
        .collect()
}

/// The array paths that are `path` or a dotted prefix of it.
fn array_prefixes<'q>(path: &str, index: &'q IndexShape, query: &'q QueryShape) -> Vec<&'q str> {
    index
        .multikey_paths
        .iter()
        .chain(query.multikey_paths.iter())
        .filter(|m| {
            path == m.as_str()
                || (path.len() > m.len()
                    && path.starts_with(m.as_str())
                    && path.as_bytes()[m.len()] == b'.')
        })
        .map(String::as_str)
        .collect()
}

/// ESR: every equality and `$in` of the query on a key of the index's prefix of point-bounded
/// keys. A unique index whose every key is a point finds one document, whatever else the query
/// says.
fn equality_behind(index: &IndexShape, keys: &[Key<'_>], query: &QueryShape) -> Option<Rule> {
    let points = |k: &Key<'_>| matches!(k.bound, Bound::Point | Bound::Points(_));
    if index.unique && keys.iter().all(points) {
        return None;
    }
    // an `$in` of several values may follow the sort keys (where `esr_keys` puts one the
    // explosion cannot take): it bounds the scan without cutting the order
    let equalities = query.eq.iter().map(|p| (p, false)).chain(
        query
            .in_
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(p, n)| (p, *n > 1)),
    );
    let sorted = |k: &Key<'_>| query.sort.iter().any(|(p, _)| p == k.path);
    for (key, after_sort) in equalities {
        let Some(at) = keys.iter().position(|k| k.path == key && points(k)) else {
            // not in the index, or in it without point bounds (a multikey path under an array
            // already bounded): filtered on fetch
            let behind = keys
                .iter()
                .find(|k| k.path == key)
                .map(|k| k.path.to_owned());
            return Some(Rule::EqualityBehind {
                index: index.name.clone(),
                key: key.clone(),
                behind,
                cut: Cut::Unconstrained,
            });
        };
        if let Some(front) = keys[..at]
            .iter()
            .find(|k| !(points(k) || (after_sort && k.bound == Bound::None && sorted(k))))
        {
            return Some(Rule::EqualityBehind {
                index: index.name.clone(),
                key: key.clone(),
                behind: Some(front.path.to_owned()),
                cut: if front.bound == Bound::Range {
                    Cut::Range
                } else {
                    Cut::Unconstrained
                },
            });
        }
    }
    None
}

/// Where an order built from the key pattern stops before the pattern's end.
#[derive(Debug, Clone, Copy)]
enum Stop<'a> {
    End,
    /// A hashed or `2dsphere` key without an equality.
    Special(&'a str),
    Multikey(&'a str),
    /// A key that gives no order of its own ([`Key::unordered`]).
    Unordered(&'a str),
}

/// `computeSortsForScan` and `ProvidedSortSet` for one bounded index scan.
struct Provided<'a> {
    /// Fields with point bounds that a sort may name freely.
    equality: Vec<&'a str>,
    /// Multikey point fields dropped from the base pattern but not ignored in a sort.
    ignored: Vec<&'a str>,
    /// The base sort pattern.
    base: Vec<(&'a str, &'a KeyDir)>,
    stop: Stop<'a>,
}

/// `confirmBoundsProvideSortComponentGivenMultikeyness`: `None` when the multikey key can give
/// an order.
fn multikey_cause(key: &Key<'_>, keys: &[Key<'_>]) -> Option<MultikeyCause> {
    if key.bound != Bound::None {
        return Some(MultikeyCause::Bounded);
    }
    keys.iter()
        .find(|g| {
            g.multikey
                && g.bound != Bound::None
                && g.path != key.path
                && shares_prefix(g.path, key.path)
        })
        .map(|g| MultikeyCause::SharedPrefix(g.path.to_owned()))
}

impl<'a> Provided<'a> {
    fn new(keys: &[Key<'a>]) -> Self {
        let mut equality = Vec::new();
        let mut ignored = Vec::new();
        let mut unsupported = Vec::new();
        for k in keys {
            let point = k.bound == Bound::Point;
            if k.multikey && multikey_cause(k, keys).is_some() {
                if point {
                    ignored.push(k.path);
                } else {
                    unsupported.push(k.path);
                }
            } else if point && !k.unordered() {
                equality.push(k.path);
            }
        }
        let mut base = Vec::new();
        let mut stop = Stop::End;
        for k in keys {
            if equality.contains(&k.path) {
                continue;
            }
            if matches!(k.dir, KeyDir::Special(_)) {
                stop = Stop::Special(k.path);
                break;
            }
            if ignored.contains(&k.path) {
                continue;
            }
            if unsupported.contains(&k.path) {
                stop = Stop::Multikey(k.path);
                break;
            }
            if k.unordered() {
                stop = Stop::Unordered(k.path);
                break;
            }
            base.push((k.path, k.dir));
        }
        Provided {
            equality,
            ignored,
            base,
            stop,
        }
    }

    /// `ProvidedSortSet::contains` for the sort, or for its complete reverse.
    fn contains(&self, sort: &[(String, KeyDir)], reverse: bool) -> bool {
        let mut base = self.base.iter();
        for (path, dir) in sort {
            if self.equality.contains(&path.as_str()) {
                continue;
            }
            let want = if reverse { dir.reversed() } else { dir.clone() };
            match base.next() {
                Some((p, d)) if *p == path && **d == want => {}
                _ => return false,
            }
        }
        true
    }
}

/// `explodeForSort` for one index scan.
struct Explosion<'k, 'a> {
    /// How many leading keys are unions of points.
    run: usize,
    /// The Cartesian product of their point counts.
    scans: usize,
    /// The keys after the run, up to the first multikey or hashed key.
    possible: Vec<&'k Key<'a>>,
    stop: Stop<'a>,
}

impl<'k, 'a> Explosion<'k, 'a> {
    /// `None` when there is nothing to explode or no key left to give an order.
    fn new(keys: &'k [Key<'a>]) -> Option<Self> {
        let run = keys
            .iter()
            .take_while(|k| matches!(k.bound, Bound::Point | Bound::Points(_)))
            .count();
        if run == 0 || run == keys.len() {
            return None;
        }
        let scans = keys[..run]
            .iter()
            .map(|k| match k.bound {
                Bound::Points(n) => n,
                _ => 1,
            })
            .fold(1usize, usize::saturating_mul);
        let mut possible = Vec::new();
        let mut stop = Stop::End;
        for k in &keys[run..] {
            if k.multikey {
                stop = Stop::Multikey(k.path);
                break;
            }
            if k.unordered() {
                stop = Stop::Unordered(k.path);
                break;
            }
            if matches!(k.dir, KeyDir::Special(_)) {
                // A string-valued key pattern element never equals a sort element.
                stop = Stop::Special(k.path);
                break;
            }
            possible.push(k);
        }
        Some(Explosion {
            run,
            scans,
            possible,
            stop,
        })
    }

    /// `desiredSort.isPrefixOf(possibleSort)` (or of its reverse): the sort as written.
    fn provides(&self, sort: &[(String, KeyDir)], reverse: bool) -> bool {
        sort.len() <= self.possible.len()
            && sort.iter().zip(&self.possible).all(|((p, d), k)| {
                let want = if reverse { d.reversed() } else { d.clone() };
                k.path == p && *k.dir == want
            })
    }
}

/// The rule of a key that stops the order by its kind (hashed, `2dsphere`) or by giving none
/// of its own (another collation, a time series measurement).
fn stop_rule(index: &IndexShape, query: &QueryShape, keys: &[Key<'_>], path: &str) -> Rule {
    let name = index.name.clone();
    let Some(key) = keys.iter().find(|k| k.path == path) else {
        return Rule::SortKeyMissing {
            index: name,
            key: path.to_owned(),
        };
    };
    if key.collated {
        collation_rule(index, query)
    } else if key.measurement {
        Rule::TimeSeriesBucket {
            index: name,
            key: path.to_owned(),
            time: false,
        }
    } else if is_2dsphere(key.dir) {
        Rule::GeoOrder {
            index: name,
            key: path.to_owned(),
        }
    } else {
        Rule::HashedSort {
            index: name,
            key: path.to_owned(),
        }
    }
}

fn collation_rule(index: &IndexShape, query: &QueryShape) -> Rule {
    Rule::CollationDiffers {
        index: index.name.clone(),
        index_collation: index.collation.clone(),
        query_collation: query.collation.clone(),
    }
}

fn special_kind(index: &IndexShape) -> Option<(&str, &str)> {
    index.keys.iter().find_map(|(path, dir)| match dir {
        KeyDir::Special(kind) if kind != "hashed" => Some((path.as_str(), kind.as_str())),
        _ if path == "$**" || path.ends_with(".$**") => Some((path.as_str(), "wildcard")),
        _ => None,
    })
}

/// Decides whether `index` serves `query` without a blocking sort, by mongod's planner rules
/// (see the module documentation for each rule and its source).
///
/// When another collation (rule 6) or a time series bucket bound (rule 9) is what keeps the
/// index from serving (the verdict would differ without it), the verdict's rule names that.
pub fn fit(index: &IndexShape, query: &QueryShape) -> Verdict {
    let verdict = fit_shape(index, query);
    if matches!(verdict, Verdict::Served { .. }) {
        return verdict;
    }
    let with_rule = |rule: Rule| match &verdict {
        Verdict::BlockingSort(_) => Verdict::BlockingSort(rule),
        Verdict::Examines(_) => Verdict::Examines(rule),
        _ => Verdict::Unusable(rule),
    };
    if index.collation != query.collation {
        let same = QueryShape {
            collation: index.collation.clone(),
            ..query.clone()
        };
        if fit_shape(index, &same) != verdict {
            return with_rule(collation_rule(index, query));
        }
    }
    if let Some(ts) = &query.time_series {
        let plain = QueryShape {
            time_series: None,
            ..query.clone()
        };
        if fit_shape(index, &plain) != verdict {
            let touched = |path: &str| {
                query.eq.iter().any(|p| p == path)
                    || query.in_.iter().any(|(p, _)| p == path)
                    || query.sort.iter().any(|(p, _)| p == path)
            };
            if let Some((key, _)) = index
                .keys
                .iter()
                .find(|(path, _)| ts.is_bucket_bounded(path) && touched(path))
            {
                return with_rule(Rule::TimeSeriesBucket {
                    index: index.name.clone(),
                    key: key.clone(),
                    time: *key == ts.time,
                });
            }
        }
    }
    verdict
}

/// Rule 9: on a time series collection, the query with its equalities and `$in`s on the time
/// field and the measurements moved to its ranges (bounds on each bucket's minimum and
/// maximum); `None` for another collection.
fn bucket_ranges(query: &QueryShape) -> Option<QueryShape> {
    let ts = query.time_series.as_ref()?;
    let mut q = query.clone();
    let (points, ranges): (Vec<String>, Vec<String>) =
        q.eq.into_iter().partition(|p| !ts.is_bucket_bounded(p));
    q.eq = points;
    let ranges_in: Vec<String> = q
        .in_
        .iter()
        .filter(|(p, _)| ts.is_bucket_bounded(p))
        .map(|(p, _)| p.clone())
        .collect();
    q.in_.retain(|(p, _)| !ts.is_bucket_bounded(p));
    for path in ranges.into_iter().chain(ranges_in) {
        if !q.range.contains(&path) {
            q.range.push(path);
        }
    }
    Some(q)
}

fn fit_shape(index: &IndexShape, query: &QueryShape) -> Verdict {
    let bucketed = bucket_ranges(query);
    let query = bucketed.as_ref().unwrap_or(query);
    if let Some((key, kind)) = special_kind(index) {
        let geo_on_key = kind == "2dsphere" && query.geo.as_ref().is_some_and(|g| g.path == key);
        if !geo_on_key {
            return Verdict::Unusable(Rule::SpecialIndex {
                index: index.name.clone(),
                key: key.to_owned(),
                kind: kind.to_owned(),
            });
        }
    }
    if index.partial {
        return Verdict::Unusable(Rule::PartialFilter {
            index: index.name.clone(),
        });
    }
    if let Some(geo) = query.geo.as_ref().filter(|g| g.kind == GeoKind::Near) {
        return near(index, query, &geo.path);
    }
    let keys = analyse(index, query);
    let Some(first) = keys.first() else {
        return Verdict::Unusable(Rule::NoLeadingPredicate {
            index: index.name.clone(),
            first_key: String::new(),
            sort: query.sort.clone(),
        });
    };
    // a 2dsphere key with a geo bound is scanned whatever bounds the keys before it
    // (2dsphere index version 2 and later, `index_bounds_builder.cpp`)
    let geo_bound = keys
        .iter()
        .any(|k| is_2dsphere(k.dir) && k.bound != Bound::None);
    if first.bound == Bound::None && !geo_bound {
        return whole_index(index, &keys, query);
    }
    // the order first (a blocking sort is the worse news), then what the scan examines
    let esr = equality_behind(index, &keys, query);
    let served = |reverse, merge_scans| match &esr {
        Some(rule) => Verdict::Examines(rule.clone()),
        None => Verdict::Served {
            reverse,
            merge_scans,
            full_scan: false,
        },
    };
    if query.sort.is_empty() {
        return served(false, 1);
    }
    // planner_analysis.cpp analyzeSort: analyzeNonBlockingSort, then explodeForSort.
    let provided = Provided::new(&keys);
    if provided.contains(&query.sort, false) {
        return served(false, 1);
    }
    if provided.contains(&query.sort, true) {
        return served(true, 1);
    }
    let explodable = query.rules.explodes_multikey_indexes() || !keys.iter().any(|k| k.multikey);
    if let Some(explosion) = Explosion::new(&keys).filter(|_| explodable) {
        if explosion.scans <= MAX_SCANS_TO_EXPLODE {
            if explosion.provides(&query.sort, false) {
                return served(false, explosion.scans);
            }
            if explosion.provides(&query.sort, true) {
                return served(true, explosion.scans);
            }
        }
    }
    Verdict::BlockingSort(diagnose(index, &keys, &provided, query))
}

/// query_planner.cpp `QueryPlanner::plan`: a whole-index scan for a sort, when nothing bounds
/// the index.
fn whole_index(index: &IndexShape, keys: &[Key<'_>], query: &QueryShape) -> Verdict {
    let first_key = keys[0].path.to_owned();
    // QueryPlannerAnalysis::getSortPattern: the key pattern up to its first special key.
    let kp: Vec<&Key<'_>> = keys
        .iter()
        .take_while(|k| !matches!(k.dir, KeyDir::Special(_)))
        .collect();
    let prefix = |reverse: bool| {
        query.sort.len() <= kp.len()
            && query.sort.iter().zip(&kp).all(|((p, d), k)| {
                let want = if reverse { d.reversed() } else { d.clone() };
                k.path == p && *k.dir == want
            })
    };
    let forward = prefix(false);
    let unordered = kp.iter().take(query.sort.len()).any(|k| k.unordered());
    if query.sort.is_empty() || !(forward || prefix(true)) || unordered {
        return Verdict::Unusable(Rule::NoLeadingPredicate {
            index: index.name.clone(),
            first_key,
            sort: query.sort.clone(),
        });
    }
    if index.sparse {
        return Verdict::Unusable(Rule::SparseSort {
            index: index.name.clone(),
            first_key,
        });
    }
    // With [MinKey, MaxKey] bounds everywhere, multikey keys give their order too
    // (confirmBoundsProvideSortComponentGivenMultikeyness; sort_array.js).
    Verdict::Served {
        reverse: !forward,
        merge_scans: 1,
        full_scan: true,
    }
}

/// A near query (rule 8): `GEO_NEAR_2DSPHERE` on the index's `2dsphere` key at `path`, nearest
/// first; the query's equalities bound the other keys of the index (or are filtered on each
/// document when the index has no key on them); a sort of its own is done in memory.
fn near(index: &IndexShape, query: &QueryShape, path: &str) -> Verdict {
    let name = || index.name.clone();
    if !index
        .keys
        .iter()
        .any(|(p, dir)| p == path && is_2dsphere(dir))
    {
        return Verdict::Unusable(Rule::NoGeoIndex {
            index: name(),
            path: path.to_owned(),
        });
    }
    let keys = analyse(index, query);
    if !query.sort.is_empty() {
        return Verdict::BlockingSort(Rule::GeoOrder {
            index: name(),
            key: path.to_owned(),
        });
    }
    let equalities = query
        .eq
        .iter()
        .chain(query.in_.iter().filter(|(_, n)| *n > 0).map(|(p, _)| p));
    for key in equalities {
        let bounded = keys
            .iter()
            .any(|k| k.path == key && matches!(k.bound, Bound::Point | Bound::Points(_)));
        if !bounded {
            return Verdict::Examines(Rule::EqualityBehind {
                index: name(),
                key: key.clone(),
                behind: None,
                cut: Cut::Unconstrained,
            });
        }
    }
    Verdict::Served {
        reverse: false,
        merge_scans: 1,
        full_scan: false,
    }
}

/// Names the first rule that keeps a bounded scan of `index` from giving `query`'s sort.
fn diagnose(
    index: &IndexShape,
    keys: &[Key<'_>],
    provided: &Provided<'_>,
    query: &QueryShape,
) -> Rule {
    let name = || index.name.clone();
    let sort = &query.sort;
    // served by 8.1's explosion: 7.0/8.0's refusal of a multikey index is the reason
    if !query.rules.explodes_multikey_indexes() {
        let later = QueryShape {
            rules: ServerRules::Mongod81,
            ..query.clone()
        };
        let in_field = keys.iter().find(|k| matches!(k.bound, Bound::Points(_)));
        let array = keys.iter().find(|k| k.multikey);
        if let (Verdict::Served { .. } | Verdict::Examines(_), Some(in_field), Some(array)) =
            (fit(index, &later), in_field, array)
        {
            return Rule::MultikeySort {
                index: name(),
                key: array.path.to_owned(),
                cause: MultikeyCause::IndexMultikey(in_field.path.to_owned()),
            };
        }
    }
    if let Some((path, _)) = sort.iter().find(|(p, _)| !keys.iter().any(|k| k.path == p)) {
        return Rule::SortKeyMissing {
            index: name(),
            key: path.clone(),
        };
    }
    if let Some((path, _)) = sort
        .iter()
        .find(|(p, _)| provided.ignored.contains(&p.as_str()))
    {
        return Rule::MultikeySort {
            index: name(),
            key: path.clone(),
            cause: MultikeyCause::Bounded,
        };
    }
    let key = |path: &str| {
        keys.iter()
            .find(|k| k.path == path)
            .expect("a key of the index")
    };
    let stopped = |stop: Stop<'_>, exploded: Option<&str>| match stop {
        Stop::Special(k) | Stop::Unordered(k) => Some(stop_rule(index, query, keys, k)),
        Stop::Multikey(k) => Some(Rule::MultikeySort {
            index: name(),
            key: k.to_owned(),
            cause: match exploded {
                Some(in_field) => MultikeyCause::Exploded(in_field.to_owned()),
                None => multikey_cause(key(k), keys).unwrap_or(MultikeyCause::Bounded),
            },
        }),
        Stop::End => None,
    };
    let partial_flip = || Rule::PartialFlip {
        index: name(),
        sort: sort.clone(),
        keys: index.keys.clone(),
    };
    let sort_order = || Rule::SortOrder {
        index: name(),
        sort: sort.clone(),
        keys: index.keys.clone(),
    };
    let fallback = || Rule::SortNotProvided {
        index: name(),
        sort: sort.clone(),
        keys: index.keys.clone(),
    };
    let cut = |k: &Key<'_>, cut: Cut, sort_key: &str| Rule::KeyBeforeSort {
        index: name(),
        key: k.path.to_owned(),
        cut,
        sort_key: sort_key.to_owned(),
    };

    // The direct scan: the sort without its equality fields against the base pattern.
    let wanted: Vec<&(String, KeyDir)> = sort
        .iter()
        .filter(|(p, _)| !provided.equality.contains(&p.as_str()))
        .collect();
    let (mut same, mut flipped) = (false, false);
    for (j, (path, dir)) in wanted.iter().enumerate() {
        let Some((base_path, base_dir)) = provided.base.get(j) else {
            return stopped(provided.stop, None).unwrap_or_else(fallback);
        };
        if *base_path == path {
            same |= *base_dir == dir;
            flipped |= **base_dir == dir.reversed();
            if same && flipped {
                return partial_flip();
            }
            continue;
        }
        let obstacle = key(base_path);
        if wanted[j..].iter().any(|(p, _)| p == base_path) {
            return sort_order();
        }
        return match obstacle.bound {
            Bound::Range => cut(obstacle, Cut::Range, path),
            Bound::None => cut(obstacle, Cut::Unconstrained, path),
            Bound::Points(_) => {
                diagnose_explosion(index, keys, query, obstacle.path).unwrap_or_else(fallback)
            }
            Bound::Point => fallback(),
        };
    }
    fallback()
}

/// Why `explodeForSort` could not give the sort, the `$in` on `in_field` being the first key of
/// the base pattern in front of the sort.
fn diagnose_explosion(
    index: &IndexShape,
    keys: &[Key<'_>],
    query: &QueryShape,
    in_field: &str,
) -> Option<Rule> {
    let name = || index.name.clone();
    let sort = &query.sort;
    let Some(explosion) = Explosion::new(keys) else {
        // Every key is a point: the sort names one of them.
        let key = sort.first()?.0.clone();
        return Some(Rule::SortNamesExplodedKey {
            index: name(),
            key,
            in_field: in_field.to_owned(),
        });
    };
    let (mut same, mut flipped) = (false, false);
    for (i, (path, dir)) in sort.iter().enumerate() {
        if keys[..explosion.run].iter().any(|k| k.path == path) {
            return Some(Rule::SortNamesExplodedKey {
                index: name(),
                key: path.clone(),
                in_field: in_field.to_owned(),
            });
        }
        let Some(k) = explosion.possible.get(i) else {
            return match explosion.stop {
                Stop::Special(k) | Stop::Unordered(k) => Some(stop_rule(index, query, keys, k)),
                Stop::Multikey(k) => Some(Rule::MultikeySort {
                    index: name(),
                    key: k.to_owned(),
                    cause: MultikeyCause::Exploded(in_field.to_owned()),
                }),
                Stop::End => None,
            };
        };
        if k.path == path {
            same |= k.dir == dir;
            flipped |= *k.dir == dir.reversed();
            if same && flipped {
                return Some(Rule::PartialFlip {
                    index: name(),
                    sort: sort.clone(),
                    keys: index.keys.clone(),
                });
            }
            continue;
        }
        if sort[i..].iter().any(|(p, _)| p == k.path) {
            return Some(Rule::SortOrder {
                index: name(),
                sort: sort.clone(),
                keys: index.keys.clone(),
            });
        }
        let cut = match k.bound {
            Bound::Range => Cut::Range,
            Bound::None => Cut::Unconstrained,
            Bound::Points(n) => Cut::In(n),
            Bound::Point => Cut::EqualityAfterIn(in_field.to_owned()),
        };
        return Some(Rule::KeyBeforeSort {
            index: name(),
            key: k.path.to_owned(),
            cut,
            sort_key: path.clone(),
        });
    }
    // The exploded scans would give the sort: mongod 7.0/8.0 explode no multikey index
    if explosion.scans <= MAX_SCANS_TO_EXPLODE && !query.rules.explodes_multikey_indexes() {
        if let Some(k) = keys.iter().find(|k| k.multikey) {
            return Some(Rule::MultikeySort {
                index: name(),
                key: k.path.to_owned(),
                cause: MultikeyCause::IndexMultikey(in_field.to_owned()),
            });
        }
    }
    // only their number stops mongod.
    let fields = keys[..explosion.run]
        .iter()
        .filter_map(|k| match k.bound {
            Bound::Points(n) => Some((k.path.to_owned(), n)),
            _ => None,
        })
        .collect();
    Some(Rule::TooManyScans {
        index: name(),
        fields,
        scans: explosion.scans,
    })
}

/// The index mongod's ESR rule gives for a query: equalities, then the sort keys in order, then
/// the ranges; every key ascending but the sort keys, which keep their directions.
///
/// Where `$in` goes: a one-element `$in` is an equality. Otherwise an `$in` is a union of points:
/// placed with the equalities, it bounds the scan as tightly as an equality, and mongod's
/// `explodeForSort` still serves the sort by merging one scan per point combination
/// (SORT_MERGE), as long as the product of the list sizes stays at or below
/// [`MAX_SCANS_TO_EXPLODE`]. So the `$in` fields go with the equalities when the query has no
/// sort (nothing to keep in order), or when the product is within the limit and the sort names
/// none of them. When the product is over the limit, an `$in` before the sort would make mongod
/// sort in memory, so the `$in` fields go after the sort keys (before the ranges: their points
/// keep the later bounds tight). An `$in` field the sort names takes its place in the sort: a
/// multi-point bound is scanned in index order and gives that order without an explosion (and
/// an explosion could not give a sort that names an exploded key).
///
/// Sort fields with an equality are dropped from the sort (the scan has one value for them);
/// every path appears once.
///
/// A geo predicate's field (rule 8) gets a `"2dsphere"` key where a range would go: after the
/// equalities and the sort keys, before the ranges (its cell ranges give no order).
pub fn esr_keys(query: &QueryShape) -> Vec<(String, KeyDir)> {
    let bucketed = bucket_ranges(query);
    let query = bucketed.as_ref().unwrap_or(query);
    let mut out: Vec<(String, KeyDir)> = Vec::new();
    let mut push = |path: &str, dir: KeyDir| {
        if !out.iter().any(|(p, _)| p == path) {
            out.push((path.to_owned(), dir));
        }
    };
    let in_size = |path: &str| query.in_.iter().find(|(p, _)| p == path).map(|(_, n)| *n);
    let is_point = |path: &str| query.eq.iter().any(|p| p == path) || in_size(path) == Some(1);
    let sort: Vec<&(String, KeyDir)> = query.sort.iter().filter(|(p, _)| !is_point(p)).collect();
    let sorted = |path: &str| sort.iter().any(|(p, _)| p == path);
    let multi_in: Vec<(&str, usize)> = query
        .in_
        .iter()
        .filter(|(p, n)| *n >= 2 && !is_point(p) && !sorted(p))
        .map(|(p, n)| (p.as_str(), *n))
        .collect();
    let sort_names_in = sort.iter().any(|(p, _)| in_size(p).is_some_and(|n| n >= 2));
    let scans = multi_in
        .iter()
        .fold(1usize, |acc, (_, n)| acc.saturating_mul(*n));
    // mongod 7.0/8.0 explode no multikey index: with an array among the keys, the `$in` goes
    // after the sort keys, as over the limit
    let array_key = query
        .eq
        .iter()
        .chain(query.in_.iter().map(|(p, _)| p))
        .chain(query.range.iter())
        .chain(query.sort.iter().map(|(p, _)| p))
        .any(|path| {
            query.multikey_paths.iter().any(|m| {
                path == m
                    || path
                        .strip_prefix(m.as_str())
                        .is_some_and(|r| r.starts_with('.'))
            })
        });
    // ... unless nothing else bounds the scan: after the sort keys, the `$in` would leave the
    // index unbounded in front (a scan of all of it); in front, it is sorted in memory but
    // bounded, and the fit says why
    let bounded_without_in = !query.eq.is_empty() || query.in_.iter().any(|(_, n)| *n == 1);
    let explode = sort.is_empty()
        || (!sort_names_in
            && scans <= MAX_SCANS_TO_EXPLODE
            && (query.rules.explodes_multikey_indexes() || !array_key || !bounded_without_in));

    for path in &query.eq {
        push(path, KeyDir::Asc);
    }
    for (path, n) in &query.in_ {
        if *n == 1 {
            push(path, KeyDir::Asc);
        }
    }
    if explode {
        for (path, _) in &multi_in {
            push(path, KeyDir::Asc);
        }
    }
    for (path, dir) in &sort {
        push(path, dir.clone());
    }
    if !explode {
        for (path, _) in &multi_in {
            push(path, KeyDir::Asc);
        }
    }
    if let Some(geo) = &query.geo {
        push(&geo.path, KeyDir::Special("2dsphere".to_owned()));
    }
    // An empty `$in` has empty bounds: neither a point nor explodable, it goes with the ranges.
    for (path, n) in &query.in_ {
        if *n == 0 {
            push(path, KeyDir::Asc);
        }
    }
    for path in &query.range {
        push(path, KeyDir::Asc);
    }
    out
}

/// Whether `a`'s keys can serve every query `b`'s keys serve, so that `b` need not exist beside
/// `a`: `b`'s key pattern is a prefix of `a`'s, or of `a`'s complete reverse, and both have the
/// same options (unique, sparse, partial, collation) — the merge rule for derived indexes.
///
/// Two unique indexes cover each other only with the same keys (a unique index on more keys
/// enforces less). Partial indexes never cover: an [`IndexShape`] carries no filter to compare,
/// so the caller must compare `partialFilterExpression`s itself. Names and multikey paths do not
/// matter.
pub fn covers(a: &IndexShape, b: &IndexShape) -> bool {
    if a.unique != b.unique
        || a.sparse != b.sparse
        || a.partial
        || b.partial
        || a.collation != b.collation
        || b.keys.is_empty()
        || b.keys.len() > a.keys.len()
        || (b.unique && b.keys.len() != a.keys.len())
    {
        return false;
    }
    let prefix = |reverse: bool| {
        b.keys.iter().zip(&a.keys).all(|((bp, bd), (ap, ad))| {
            let want = if reverse { ad.reversed() } else { ad.clone() };
            bp == ap && *bd == want
        })
    };
    prefix(false) || prefix(true)
}

/// Whether two key patterns name the same paths, in any order (the equality prefix of a derived
/// index is a set: the fit decides whether the order of the rest serves).
fn same_paths(a: &[(String, KeyDir)], b: &[(String, KeyDir)]) -> bool {
    a.len() == b.len() && a.iter().all(|(p, _)| b.iter().any(|(q, _)| p == q))
}

/// One index of [`merge_derived`]'s result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The index to create.
    pub index: IndexShape,
    /// Positions, in the input, of the derived indexes (hence queries) it serves, ascending.
    pub serves: Vec<usize>,
}

/// Given the derived index of each of several queries (`derived[i]` is query `i`'s index, e.g.
/// from [`esr_keys`], with the query), the smallest set of indexes such that every query is
/// served.
///
/// An index is dropped in favour of a kept one that [`covers`] it (its keys are a prefix or the
/// reverse-prefix of the kept one's, same options). It is also dropped when its paths are the
/// kept one's leading paths in the same order but with other directions, the options are the
/// same, it is not unique, and [`fit`] finds the kept one serving its query from bounds: the
/// bounds are the same, and `fit` confirms the order. This merges what key patterns alone
/// miss, such as `{team: 1, status: 1, priority: 1}` into
/// `{team: 1, status: 1, priority: -1, updated_at: -1}` (equality keys are ascending in
/// derived patterns, yet their direction does not matter to the planner). A bare "no blocking
/// sort" from `fit` is not enough: `{team: 1, created: 1}` for a range on `created` is not
/// merged into an index that only bounds `team`.
///
/// Longest patterns are kept first (for equal patterns, the first), so every index covered by
/// another meets a covering one already kept. For prefix coverage, which is transitive, the
/// kept indexes are exactly those no other one covers, the minimum; the `fit` merges are
/// greedy on top of that. The result is ordered by the first query each index serves.
pub fn merge_derived(derived: &[(IndexShape, QueryShape)]) -> Vec<Merged> {
    let mut order: Vec<usize> = (0..derived.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(derived[i].0.keys.len()));
    let mut kept: Vec<Merged> = Vec::new();
    for i in order {
        let (index, query) = &derived[i];
        let serves = |m: &Merged| {
            covers(&m.index, index)
                || (!index.unique
                    && !m.index.unique
                    && index.keys.len() <= m.index.keys.len()
                    && same_paths(&index.keys, &m.index.keys[..index.keys.len()])
                    && m.index.sparse == index.sparse
                    && !m.index.partial
                    && !index.partial
                    && m.index.collation == index.collation
                    && matches!(
                        fit(&m.index, query),
                        Verdict::Served {
                            full_scan: false,
                            ..
                        }
                    ))
        };
        match kept.iter_mut().find(|m| serves(m)) {
            Some(m) => m.serves.push(i),
            None => kept.push(Merged {
                index: index.clone(),
                serves: vec![i],
            }),
        }
    }
    for m in &mut kept {
        m.serves.sort_unstable();
    }
    kept.sort_by_key(|m| m.serves[0]);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        x.to_owned()
    }

    /// `"a:1,b:-1,h:hashed"`.
    fn keys(spec: &str) -> Vec<(String, KeyDir)> {
        spec.split(',')
            .filter(|kv| !kv.trim().is_empty())
            .map(|kv| {
                let (k, v) = kv.trim().split_once(':').expect("path:dir");
                let dir = match v.trim() {
                    "1" => KeyDir::Asc,
                    "-1" => KeyDir::Desc,
                    kind => KeyDir::Special(kind.to_owned()),
                };
                (k.trim().to_owned(), dir)
            })
            .collect()
    }

    fn paths(spec: &str) -> Vec<String> {
        spec.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(s)
            .collect()
    }

    fn ix(spec: &str) -> IndexShape {
        IndexShape {
            name: s("x"),
            keys: keys(spec),
            ..Default::default()
        }
    }

    fn q() -> QueryShape {
        QueryShape::default()
    }

    /// A small builder over [`QueryShape`] and [`IndexShape`] for the table.
    trait Build: Sized {
        fn eq(self, spec: &str) -> Self;
        fn inn(self, path: &str, n: usize) -> Self;
        fn range(self, spec: &str) -> Self;
        fn sort(self, spec: &str) -> Self;
        fn mk(self, spec: &str) -> Self;
        fn em(self, spec: &str) -> Self;
        fn coll(self, c: &str) -> Self;
        fn r81(self) -> Self;
        fn unc(self, spec: &str) -> Self;
        fn near(self, path: &str) -> Self;
        fn within(self, path: &str) -> Self;
        fn ts(self, time: &str, meta: &str) -> Self;
    }

    impl Build for QueryShape {
        fn eq(mut self, spec: &str) -> Self {
            self.eq.extend(paths(spec));
            self
        }
        fn inn(mut self, path: &str, n: usize) -> Self {
            self.in_.push((s(path), n));
            self
        }
        fn range(mut self, spec: &str) -> Self {
            self.range.extend(paths(spec));
            self
        }
        fn sort(mut self, spec: &str) -> Self {
            self.sort = keys(spec);
            self
        }
        fn mk(mut self, spec: &str) -> Self {
            self.multikey_paths.extend(paths(spec));
            self
        }
        fn em(mut self, spec: &str) -> Self {
            self.elem_match.extend(paths(spec));
            self
        }
        fn coll(mut self, c: &str) -> Self {
            self.collation = Some(s(c));
            self
        }
        fn r81(mut self) -> Self {
            self.rules = ServerRules::Mongod81;
            self
        }
        fn unc(mut self, spec: &str) -> Self {
            self.uncollated_paths.extend(paths(spec));
            self
        }
        fn near(mut self, path: &str) -> Self {
            self.geo = Some(GeoPredicate {
                path: s(path),
                kind: GeoKind::Near,
            });
            self
        }
        fn within(mut self, path: &str) -> Self {
            self.geo = Some(GeoPredicate {
                path: s(path),
                kind: GeoKind::Within,
            });
            self
        }
        fn ts(mut self, time: &str, meta: &str) -> Self {
            self.time_series = Some(TimeSeriesFields {
                time: s(time),
                meta: (!meta.is_empty()).then(|| s(meta)),
            });
            self
        }
    }

    fn with(index: IndexShape, f: impl FnOnce(&mut IndexShape)) -> IndexShape {
        let mut index = index;
        f(&mut index);
        index
    }

    fn served(reverse: bool, merge_scans: usize) -> Verdict {
        Verdict::Served {
            reverse,
            merge_scans,
            full_scan: false,
        }
    }

    fn full(reverse: bool) -> Verdict {
        Verdict::Served {
            reverse,
            merge_scans: 1,
            full_scan: true,
        }
    }

    fn cut(key: &str, cut: Cut, sort_key: &str) -> Verdict {
        Verdict::BlockingSort(Rule::KeyBeforeSort {
            index: s("x"),
            key: s(key),
            cut,
            sort_key: s(sort_key),
        })
    }

    fn examines(key: &str, behind: Option<&str>, cut: Cut) -> Verdict {
        Verdict::Examines(Rule::EqualityBehind {
            index: s("x"),
            key: s(key),
            behind: behind.map(s),
            cut,
        })
    }

    fn missing(key: &str) -> Verdict {
        Verdict::BlockingSort(Rule::SortKeyMissing {
            index: s("x"),
            key: s(key),
        })
    }

    fn too_many(fields: &[(&str, usize)], scans: usize) -> Verdict {
        Verdict::BlockingSort(Rule::TooManyScans {
            index: s("x"),
            fields: fields.iter().map(|(p, n)| (s(p), *n)).collect(),
            scans,
        })
    }

    fn flip(sort: &str, index: &str) -> Verdict {
        Verdict::BlockingSort(Rule::PartialFlip {
            index: s("x"),
            sort: keys(sort),
            keys: keys(index),
        })
    }

    fn multikey(key: &str, cause: MultikeyCause) -> Verdict {
        Verdict::BlockingSort(Rule::MultikeySort {
            index: s("x"),
            key: s(key),
            cause,
        })
    }

    fn exploded_key(key: &str, in_field: &str) -> Verdict {
        Verdict::BlockingSort(Rule::SortNamesExplodedKey {
            index: s("x"),
            key: s(key),
            in_field: s(in_field),
        })
    }

    fn no_leading(first_key: &str, sort: &str) -> Verdict {
        Verdict::Unusable(Rule::NoLeadingPredicate {
            index: s("x"),
            first_key: s(first_key),
            sort: keys(sort),
        })
    }

    /// Index, query, expected verdict, and the rule (the comments above each group or row name
    /// the mongod source function or test that shows the behaviour).
    fn table() -> Vec<(IndexShape, QueryShape, Verdict, &'static str)> {
        let (u, r) = (Cut::Unconstrained, Cut::Range);
        vec![
            // Rule 2, equalities anywhere: computeSortsForScan drops point fields from the base
            // sort pattern, ProvidedSortSet::contains skips them in the sort.
            (
                ix("a:1,b:1,c:1"),
                q().eq("a,b").sort("c:1"),
                served(false, 1),
                "eq, then sort",
            ),
            (
                ix("b:1,a:1,c:1"),
                q().eq("a,b").sort("c:1"),
                served(false, 1),
                "eq in any order",
            ),
            // The order holds, but ESR does not: the scan walks every `c` of the `a` and
            // filters `b` on each key.
            (
                ix("a:1,c:1,b:1"),
                q().eq("a,b").sort("c:1"),
                examines("b", Some("c"), u.clone()),
                "eq after the sort",
            ),
            (
                ix("a:1,s:1,e:1,t:1"),
                q().eq("a,e").sort("s:1,t:1"),
                examines("e", Some("s"), u.clone()),
                "eq inside",
            ),
            // The social trial's follows: the range walks the whole of `followed_id` and the
            // equality only filters; `{ follower_id, followed_id }` is the ESR index.
            (
                ix("followed_id:1,follower_id:1"),
                q().eq("follower_id")
                    .range("followed_id")
                    .sort("followed_id:1"),
                examines("follower_id", Some("followed_id"), r.clone()),
                "eq behind a range that is also the sort",
            ),
            (
                ix("follower_id:1,followed_id:1"),
                q().eq("follower_id")
                    .range("followed_id")
                    .sort("followed_id:1"),
                served(false, 1),
                "the ESR index of the follows",
            ),
            (
                ix("a:1,r:1,b:1"),
                q().eq("a,b").range("r"),
                examines("b", Some("r"), r.clone()),
                "eq behind a range, no sort",
            ),
            (
                ix("a:1"),
                q().eq("a,b"),
                examines("b", None, u.clone()),
                "eq not in the index, no sort",
            ),
            (
                with(ix("a:1"), |i| i.unique = true),
                q().eq("a,b"),
                served(false, 1),
                "a unique index on points finds one document",
            ),
            // canAssignPredToIndex: `a` is an array, so `a.c` gets no bounds beside `a.b`; `x`
            // follows an unbounded key and gives no order (and the eq on `a.c` is filtered).
            (
                ix("a.b:1,a.c:1,x:1"),
                q().eq("a.b,a.c").sort("x:1").mk("a"),
                Verdict::BlockingSort(Rule::MultikeySort {
                    index: s("x"),
                    key: s("a.c"),
                    cause: MultikeyCause::SharedPrefix(s("a.b")),
                }),
                "one predicate per multikey path prefix gets bounds",
            ),
            (
                ix("a.b:1,c:1,x:1"),
                q().eq("a.b,c").sort("x:1").mk("a"),
                served(false, 1),
                "bounds on paths under different prefixes",
            ),
            // ... unless they share one `$elemMatch` on `a` (jstests/core/index13.js,
            // SERVER-3104): `{ a: { $elemMatch: { b: .., c: .. } } }` compounds both bounds
            (
                ix("a.b:1,a.c:1,x:1"),
                q().eq("a.b,a.c").sort("x:1").mk("a").em("a"),
                served(false, 1),
                "bounds compound within one $elemMatch",
            ),
            (
                ix("a.b:1,a.c:1"),
                q().eq("a.b,a.c").mk("a").em("a"),
                served(false, 1),
                "both equalities bounded within one $elemMatch",
            ),
            (
                ix("a.b:1,a.c:1"),
                q().eq("a.b,a.c").mk("a"),
                examines("a.c", Some("a.c"), Cut::Unconstrained),
                "without $elemMatch the second equality is filtered",
            ),
            // an inner array: `a.b` is inside the `$elemMatch` on `a` unless one on `a.b` holds
            // its conditions (canAssignPredToIndex: a prefix inside the innermost `$elemMatch`
            // takes no second predicate)
            (
                ix("a.b.c:1,a.b.d:1,x:1"),
                q().eq("a.b.c,a.b.d").sort("x:1").mk("a,a.b").em("a,a.b"),
                served(false, 1),
                "nested $elemMatch on both arrays",
            ),
            (
                ix("a.b.c:1,a.b.d:1,x:1"),
                q().eq("a.b.c,a.b.d").sort("x:1").mk("a,a.b").em("a"),
                Verdict::BlockingSort(Rule::MultikeySort {
                    index: s("x"),
                    key: s("a.b.d"),
                    cause: MultikeyCause::SharedPrefix(s("a.b.c")),
                }),
                "an inner array outside its own $elemMatch",
            ),
            // a sort on a path under the array: bounded there, it gives no order, $elemMatch or
            // not (confirmBoundsProvideSortComponentGivenMultikeyness)
            (
                ix("a.b:1,a.c:1"),
                q().eq("a.b").sort("a.c:1").mk("a").em("a"),
                multikey("a.c", MultikeyCause::SharedPrefix(s("a.b"))),
                "sort on a multikey path beside a bounded one",
            ),
            (
                ix("a:1,b:1"),
                q().eq("a").sort("a:-1,b:1"),
                served(false, 1),
                "sort names an eq",
            ),
            // extractEqualityFields reads the scan's bounds: an eq on a path the index lacks is
            // no equality field, so the sort naming it is not provided.
            (
                ix("a:1,b:1"),
                q().eq("a,x").sort("x:1,b:1"),
                missing("x"),
                "eq not in the index",
            ),
            // Rule 2, complete reverse vs partial flip: analyzeNonBlockingSort, reverseSortObj.
            (
                ix("a:1,b:1"),
                q().eq("a").sort("b:-1"),
                served(true, 1),
                "reverse scan",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().eq("a").sort("b:-1,c:-1"),
                served(true, 1),
                "full reverse",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().eq("a").sort("b:1,c:-1"),
                flip("b:1,c:-1", "a:1,b:1,c:1"),
                "partial flip",
            ),
            // Nothing to explode before the sort: only the direct scan, run backwards, serves.
            (
                ix("a:1,b:1"),
                q().range("a").sort("a:-1,b:-1"),
                served(true, 1),
                "range, reverse",
            ),
            (
                ix("team:1,status:1,priority:-1,updated_at:-1"),
                q().eq("team,status").sort("priority:-1,updated_at:-1"),
                served(false, 1),
                "help desk agent queue",
            ),
            (
                ix("team:1,status:1,priority:-1,updated_at:-1"),
                q().eq("team,status").sort("priority:1,updated_at:1"),
                served(true, 1),
                "help desk queue, reversed",
            ),
            (
                ix("team:1,status:1,priority:-1,updated_at:-1"),
                q().eq("team,status").sort("priority:-1,updated_at:1"),
                flip(
                    "priority:-1,updated_at:1",
                    "team:1,status:1,priority:-1,updated_at:-1",
                ),
                "help desk queue, partial flip",
            ),
            // Rule 3, ESR: a key without a point bound stays in the base sort pattern.
            (
                ix("status:1,placed_at:1,priority:1"),
                q().eq("status").range("placed_at").sort("priority:1"),
                cut("placed_at", r.clone(), "priority"),
                "range before sort",
            ),
            (
                ix("status:1,priority:1,placed_at:1"),
                q().eq("status").range("placed_at").sort("priority:1"),
                served(false, 1),
                "sort before range (ESR)",
            ),
            (
                ix("a:1,b:1"),
                q().eq("a").range("b").sort("b:-1"),
                served(true, 1),
                "range on sort",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().eq("a").range("b").sort("b:1,c:1"),
                served(false, 1),
                "range on the first sort key",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().eq("a").sort("c:1"),
                cut("b", u, "c"),
                "unconstrained key",
            ),
            (
                ix("a:1,b:1,c:1,d:1"),
                q().eq("a").sort("b:1"),
                served(false, 1),
                "short sort",
            ),
            (
                ix("a:1,b:1"),
                q().eq("a").sort("priority:1"),
                missing("priority"),
                "not in index",
            ),
            (
                ix("a:1,b:1"),
                q().eq("a").sort("b:1,c:1"),
                missing("c"),
                "sort longer than index",
            ),
            (
                ix("a:1,b:1"),
                q().range("a").sort("b:1,a:1"),
                Verdict::BlockingSort(Rule::SortOrder {
                    index: s("x"),
                    sort: keys("b:1,a:1"),
                    keys: keys("a:1,b:1"),
                }),
                "sort out of key order",
            ),
            // Rule 4, $in: explodeForSort; query_planner_test.cpp InWithSort, ManyInWithSort,
            // TooManyToExplode, ExplodeMustReverseScans; jstests/core/query/sort/sortk.js.
            (
                ix("a:1,b:1"),
                q().inn("a", 2).sort("b:1"),
                served(false, 2),
                "InWithSort",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().inn("a", 10).inn("b", 20).sort("c:1"),
                served(false, 200),
                "10 x 20 = 200 scans, at the limit",
            ),
            (
                ix("a:1,b:1"),
                q().inn("a", 201).sort("b:1"),
                too_many(&[("a", 201)], 201),
                "201",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().inn("a", 15).inn("b", 15).sort("c:1"),
                too_many(&[("a", 15), ("b", 15)], 225),
                "15 x 15 = 225 scans",
            ),
            (
                ix("a:1,b:1,c:1,d:1"),
                q().inn("a", 6).inn("b", 8).inn("c", 8).sort("d:1"),
                too_many(&[("a", 6), ("b", 8), ("c", 8)], 384),
                "TooManyToExplode: 6 x 8 x 8",
            ),
            (
                ix("a:1,b:1"),
                q().inn("a", 1).sort("b:1"),
                served(false, 1),
                "one-element $in",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().inn("a", 1).inn("b", 300).sort("c:1"),
                too_many(&[("b", 300)], 300),
                "a one-element $in counts 1",
            ),
            (
                ix("a:1,b:1,c:1,d:1"),
                q().inn("a", 2).inn("b", 2).sort("c:-1"),
                served(true, 4),
                "ExplodeMustReverseScans",
            ),
            (
                ix("a:1,b:-1,c:1"),
                q().inn("a", 2).range("b").sort("b:-1,c:1"),
                served(false, 2),
                "explosion, then a range on the first sort key",
            ),
            // Multi-point bounds on `a` are scanned in order: `a` is no equality field, it stays
            // in the base pattern and gives its own order (computeSortsForScan).
            (
                ix("a:1,b:1"),
                q().inn("a", 3).sort("a:1,b:1"),
                served(false, 1),
                "sort on the $in",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().inn("a", 2).inn("b", 3).sort("a:1"),
                served(false, 1),
                "sort on the leading $in",
            ),
            (
                ix("e:1,s:1,a:1"),
                q().eq("e").inn("a", 300).sort("s:1"),
                served(false, 1),
                "$in after the sort: no explosion",
            ),
            (
                ix("a:1,r:1,s:1"),
                q().inn("a", 2).range("r").sort("s:1"),
                cut("r", r.clone(), "s"),
                "range between $in and sort",
            ),
            // sortk.js eqInQueryWithLimit: {a: 1, b: {$in: [1, 2]}} sort {c: 1} on {a, b, c}.
            (
                ix("a:1,b:1,c:1"),
                q().eq("a").inn("b", 2).sort("c:1"),
                served(false, 2),
                "eq, $in",
            ),
            // explodeForSort compares the sort as written (no equality skipped) with the keys
            // after the exploded point prefix.
            (
                ix("a:1,b:1,c:1"),
                q().eq("a").inn("b", 2).sort("a:1,c:1"),
                exploded_key("a", "b"),
                "sort names an exploded eq",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().inn("a", 2).inn("b", 3).sort("b:1"),
                exploded_key("b", "a"),
                "sort on an exploded $in",
            ),
            (
                ix("a:1,s:1,e:1,t:1"),
                q().inn("a", 2).eq("e").sort("s:1,t:1"),
                cut("e", Cut::EqualityAfterIn(s("a")), "t"),
                "eq inside the sort after an explosion",
            ),
            (
                ix("a:1,b:1,c:1"),
                q().inn("a", 2).sort("b:1,c:-1"),
                flip("b:1,c:-1", "a:1,b:1,c:1"),
                "partial flip after an explosion",
            ),
            // query_planner_test.cpp CantExplodeWithEmptyBounds.
            (
                ix("a:1,b:1"),
                q().inn("a", 0).sort("b:1"),
                cut("a", r.clone(), "b"),
                "empty $in",
            ),
            (
                ix("team:1,status:1,priority:-1,updated_at:-1"),
                q().eq("team")
                    .inn("status", 3)
                    .sort("priority:-1,updated_at:-1"),
                served(false, 3),
                "help desk queue over 3 statuses",
            ),
            // Rule 5, multikey: confirmBoundsProvideSortComponentGivenMultikeyness (SERVER-31898),
            // jstests/core/query/sort/sort_array.js.
            (
                ix("tags:1"),
                q().mk("tags").range("tags").sort("tags:1"),
                multikey("tags", MultikeyCause::Bounded),
                "bounded multikey sort key",
            ),
            (
                ix("tags:1"),
                q().mk("tags").sort("tags:-1"),
                full(true),
                "unbounded multikey sort",
            ),
            (
                ix("x.y:1,x.z:-1"),
                q().mk("x").eq("x.y").sort("x.z:-1"),
                multikey("x.z", MultikeyCause::SharedPrefix(s("x.y"))),
                "bounded multikey `x.y` shares the prefix `x`",
            ),
            (
                ix("d:1,e:1"),
                q().mk("d,e").eq("d").sort("e:1"),
                served(false, 1),
                "bounded multikey `d` shares no prefix with `e`",
            ),
            (
                ix("a:1,b.c:1"),
                q().mk("a").eq("a").sort("b.c:-1"),
                served(true, 1),
                "multikey index, sort on a flat key",
            ),
            // A bounded multikey equality is an "ignore field": dropped from the base pattern but
            // not from ProvidedSortSet's ignored fields.
            (
                ix("tags:1,b:1"),
                q().mk("tags").eq("tags").sort("tags:1,b:1"),
                multikey("tags", MultikeyCause::Bounded),
                "sort names a multikey eq",
            ),
            (
                ix("tags:1,b:1"),
                q().mk("tags").eq("tags").sort("b:1"),
                served(false, 1),
                "multikey eq before the sort",
            ),
            // explodeForSort stops the possible sort at the first multikey field.
            (
                ix("a:1,tags:1"),
                q().mk("tags").inn("a", 2).sort("tags:1"),
                multikey("tags", MultikeyCause::Exploded(s("a"))),
                "multikey sort after an explosion",
            ),
            // The regression jstest of SERVER-56865 (explode_for_sort_multikey.js,
            // requires_fcv_81): 8.1 explodes a multikey index, the multikey key after the sort
            // keys, or exploded itself; 7.0 and 8.0 sort in memory.
            (
                ix("a:1,s:1,tags:1"),
                q().mk("tags").inn("a", 2).sort("s:1").r81(),
                served(false, 2),
                "8.1: multikey key after the sort keys",
            ),
            (
                ix("a:1,s:1,tags:1"),
                q().mk("tags").inn("a", 2).sort("s:1"),
                multikey("tags", MultikeyCause::IndexMultikey(s("a"))),
                "7.0: no explosion of a multikey index",
            ),
            (
                ix("mk2:1,b:1,d:1,mk:1"),
                q().mk("mk2,mk").inn("mk2", 2).sort("b:1,d:1").r81(),
                served(false, 2),
                "8.1: an exploded multikey key",
            ),
            (
                ix("mk2:1,b:1,d:1,mk:1"),
                q().mk("mk2,mk").inn("mk2", 2).sort("b:1,d:1"),
                multikey("mk2", MultikeyCause::IndexMultikey(s("mk2"))),
                "7.0: an exploded multikey key",
            ),
            (
                ix("mk:1,mk2:1,d:1"),
                q().mk("mk,mk2").inn("mk", 3).sort("mk2:1,d:1").r81(),
                multikey("mk", MultikeyCause::Bounded),
                "8.1: a multikey sort key after the exploded prefix",
            ),
            (
                with(ix("lines.product._id:1"), |i| {
                    i.multikey_paths = paths("lines")
                }),
                q().range("lines.product._id").sort("lines.product._id:1"),
                multikey("lines.product._id", MultikeyCause::Bounded),
                "the index's multikey paths: `lines` is an array",
            ),
            // Rule 6, collation: planner_ixselect.cpp _compatible, computeSortsForScan.
            (
                with(ix("a:1,b:1"), |i| i.collation = Some(s("fr"))),
                q().eq("a").sort("b:1"),
                Verdict::Unusable(Rule::CollationDiffers {
                    index: s("x"),
                    index_collation: Some(s("fr")),
                    query_collation: None,
                }),
                "collation differs",
            ),
            (
                with(ix("a:1,b:1"), |i| i.collation = Some(s("fr"))),
                q().eq("a").sort("b:1").coll("fr"),
                served(false, 1),
                "same collation",
            ),
            // `_compatible` assigns a predicate comparing a number to an index of another
            // collation; `computeSortsForScan` cuts the sort only at keys with string bounds.
            (
                with(ix("n:1,b:1"), |i| i.collation = Some(s("en/2"))),
                q().eq("n").sort("b:1").unc("n,b"),
                served(false, 1),
                "another collation, numbers only: served",
            ),
            (
                with(ix("n:1,email:1"), |i| i.collation = Some(s("en/2"))),
                q().eq("n").sort("email:1").unc("n"),
                Verdict::BlockingSort(Rule::CollationDiffers {
                    index: s("x"),
                    index_collation: Some(s("en/2")),
                    query_collation: None,
                }),
                "another collation, sort on a string: no order",
            ),
            (
                with(ix("n:1,email:1"), |i| i.collation = Some(s("en/2"))),
                q().eq("n,email").unc("n"),
                Verdict::Examines(Rule::CollationDiffers {
                    index: s("x"),
                    index_collation: Some(s("en/2")),
                    query_collation: None,
                }),
                "another collation, equality on a string: filtered",
            ),
            (
                ix("email:1"),
                q().eq("email").coll("en/2"),
                Verdict::Unusable(Rule::CollationDiffers {
                    index: s("x"),
                    index_collation: None,
                    query_collation: Some(s("en/2")),
                }),
                "a case-insensitive lookup and a simple index",
            ),
            (
                with(ix("email:1"), |i| {
                    i.collation = Some(s("en/2"));
                    i.unique = true;
                }),
                q().eq("email").coll("en/2"),
                served(false, 1),
                "a case-insensitive lookup and its unique index",
            ),
            // Rule 1: findRelevantIndices needs a predicate on the first key; QueryPlanner::plan
            // scans a whole index for a sort that is a prefix of getSortPattern or its reverse.
            (
                ix("a:1,b:1"),
                q().eq("b"),
                no_leading("a", ""),
                "no first-key predicate, no sort",
            ),
            (
                ix("a:1,b:1"),
                q().eq("b").sort("b:1"),
                no_leading("a", "b:1"),
                "sort not provided",
            ),
            (
                ix("a:1,b:1"),
                q().eq("b").sort("a:1"),
                full(false),
                "first key free, sort provided",
            ),
            (
                ix("a:1,b:-1"),
                q().sort("a:1,b:-1"),
                full(false),
                "full scan, forward",
            ),
            (
                ix("a:1,b:-1"),
                q().sort("a:-1,b:1"),
                full(true),
                "full scan, complete reverse",
            ),
            (
                ix("a:1,b:-1"),
                q().sort("a:1,b:1"),
                no_leading("a", "a:1,b:1"),
                "full scan, flip",
            ),
            (
                with(ix("_id:1"), |i| i.unique = true),
                q().sort("_id:1"),
                full(false),
                "sort on _id, no predicate: the _id index",
            ),
            (
                ix("a:1,b:1"),
                q().range("a"),
                served(false, 1),
                "no sort: served when usable",
            ),
            (
                with(ix("a:1"), |i| i.sparse = true),
                q().sort("a:1"),
                Verdict::Unusable(Rule::SparseSort {
                    index: s("x"),
                    first_key: s("a"),
                }),
                "sparse: never scanned whole",
            ),
            (
                with(ix("a:1,b:1"), |i| i.sparse = true),
                q().eq("a").sort("b:1"),
                served(false, 1),
                "sparse with a first-key predicate",
            ),
            (
                with(ix("a:1"), |i| i.partial = true),
                q().eq("a"),
                Verdict::Unusable(Rule::PartialFilter { index: s("x") }),
                "partial: filter implication unknown",
            ),
            // Rule 7, special keys: index_bounds_builder (hashed points), computeSortsForScan
            // ("Hashed fields ... prohibit sorts on the later fields"), getSortPattern.
            (
                ix("h:hashed"),
                q().eq("h"),
                served(false, 1),
                "hashed equality",
            ),
            (
                ix("h:hashed"),
                q().range("h"),
                no_leading("h", ""),
                "hashed: no range bounds",
            ),
            (
                ix("a:1,h:hashed,c:1"),
                q().eq("a").sort("h:1"),
                Verdict::BlockingSort(Rule::HashedSort {
                    index: s("x"),
                    key: s("h"),
                }),
                "sort on a hashed key",
            ),
            (
                ix("a:1,h:hashed,c:1"),
                q().eq("a,h").sort("c:-1"),
                served(true, 1),
                "a hashed equality is skipped",
            ),
            (
                ix("h:hashed,c:1"),
                q().sort("c:1"),
                no_leading("h", "c:1"),
                "sort pattern stops",
            ),
            (
                ix("a:1,body:text"),
                q().eq("a"),
                Verdict::Unusable(Rule::SpecialIndex {
                    index: s("x"),
                    key: s("body"),
                    kind: s("text"),
                }),
                "text index needs $text",
            ),
            (
                ix("loc:2dsphere,a:1"),
                q().eq("a").sort("a:1"),
                Verdict::Unusable(Rule::SpecialIndex {
                    index: s("x"),
                    key: s("loc"),
                    kind: s("2dsphere"),
                }),
                "2dsphere index needs a geo predicate",
            ),
            // Rule 8, geo: GEO_NEAR_2DSPHERE (planner_access.cpp), $geoWithin's covering cells
            // (index_bounds_builder.cpp), stripInvalidAssignmentsTo2dsphereIndices.
            (
                ix("loc:2dsphere"),
                q().near("loc"),
                served(false, 1),
                "near on its 2dsphere index",
            ),
            (
                ix("kind:1,loc:2dsphere"),
                q().eq("kind").near("loc"),
                served(false, 1),
                "near with an equality on the index's prefix",
            ),
            (
                ix("loc:2dsphere"),
                q().eq("kind").near("loc"),
                examines("kind", None, Cut::Unconstrained),
                "near with an equality the index lacks",
            ),
            (
                ix("kind:1"),
                q().eq("kind").near("loc"),
                Verdict::Unusable(Rule::NoGeoIndex {
                    index: s("x"),
                    path: s("loc"),
                }),
                "near needs a 2dsphere index on its field",
            ),
            (
                ix("loc:2dsphere"),
                q().near("loc").sort("name:1"),
                Verdict::BlockingSort(Rule::GeoOrder {
                    index: s("x"),
                    key: s("loc"),
                }),
                "near orders by distance, not by a sort",
            ),
            (
                ix("kind:1,loc:2dsphere"),
                q().within("loc"),
                served(false, 1),
                "within, no predicate on the prefix (2dsphere v2+)",
            ),
            (
                ix("kind:1,name:1,loc:2dsphere"),
                q().eq("kind").within("loc").sort("name:1"),
                served(false, 1),
                "within, equality, sort before the geo key",
            ),
            (
                ix("kind:1,loc:2dsphere,name:1"),
                q().eq("kind").within("loc").sort("name:1"),
                Verdict::BlockingSort(Rule::GeoOrder {
                    index: s("x"),
                    key: s("loc"),
                }),
                "within: the geo key cuts the order",
            ),
            (
                ix("kind:1"),
                q().eq("kind").within("loc"),
                served(false, 1),
                "within filtered on a btree index's documents",
            ),
            (
                with(ix("kind:1,loc:2dsphere"), |i| i.collation = Some(s("en/2"))),
                q().within("loc"),
                served(false, 1),
                "a geo predicate compares no string: another collation keeps its bounds",
            ),
            // Rule 9, time series: createBucketsSpecFromTimeseriesSpec, bucket-level predicates,
            // the bounded sort on the time field.
            (
                ix("sensor:1,at:1"),
                q().eq("sensor").range("at").sort("at:1").ts("at", "sensor"),
                served(false, 1),
                "one sensor's readings in time order",
            ),
            (
                ix("sensor.site:1,at:-1"),
                q().eq("sensor.site").sort("at:1").ts("at", "sensor"),
                served(true, 1),
                "a field under meta, time backwards",
            ),
            (
                ix("at:1,sensor:1"),
                q().eq("sensor,at").ts("at", "sensor"),
                Verdict::Examines(Rule::TimeSeriesBucket {
                    index: s("x"),
                    key: s("at"),
                    time: true,
                }),
                "an equality on the time field is a bucket range",
            ),
            (
                ix("sensor:1,value:1,at:1"),
                q().eq("sensor,value").sort("at:1").ts("at", "sensor"),
                Verdict::BlockingSort(Rule::TimeSeriesBucket {
                    index: s("x"),
                    key: s("value"),
                    time: false,
                }),
                "a measurement gives no point and no order",
            ),
            (
                ix("sensor:1,value:1"),
                q().eq("sensor").sort("value:1").ts("at", "sensor"),
                Verdict::BlockingSort(Rule::TimeSeriesBucket {
                    index: s("x"),
                    key: s("value"),
                    time: false,
                }),
                "a sort on a measurement",
            ),
        ]
    }

    #[test]
    fn planner_table() {
        let rows = table();
        assert!(rows.len() >= 45, "{} rows", rows.len());
        let mut failures = Vec::new();
        for (index, query, expected, note) in &rows {
            let got = fit(index, query);
            if got != *expected {
                failures.push(format!(
                    "{note}: {:?} / {query:?}\n  expected {expected:?}\n  got      {got:?}",
                    index.keys
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} rows differ:\n{}",
            failures.len(),
            rows.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn messages() {
        let text = |index: IndexShape, query: QueryShape| match fit(&index, &query) {
            Verdict::BlockingSort(rule) | Verdict::Unusable(rule) | Verdict::Examines(rule) => {
                rule.to_string()
            }
            served => panic!("expected a rule, got {served:?}"),
        };
        assert_eq!(
            text(
                ix("status:1,placed_at:1,priority:1"),
                q().eq("status").range("placed_at").sort("priority:1")
            ),
            "range `placed_at` precedes sort `priority` in index `x`: mongod sorts in memory"
        );
        assert!(text(ix("a:1,b:1"), q().range("a").sort("a:1,b:-1"))
            .starts_with("sort {a: 1, b: -1} is a partial flip of index `x` {a: 1, b: 1}: "));
        assert_eq!(
            text(ix("status:1,b:1"), q().inn("status", 300).sort("b:1")),
            "`$in` on `status` explodes into 300 scans in index `x`, over mongod's \
             internalQueryMaxScansToExplode (200): mongod sorts in memory"
        );
        assert!(
            text(ix("a:1,b:1,c:1"), q().inn("a", 15).inn("b", 15).sort("c:1"))
                .starts_with("`$in` on `a` and `b` explodes into 225 scans (15 × 15)")
        );
        assert_eq!(
            text(ix("a:1"), q().eq("a").sort("priority:-1")),
            "index `x` has no key on `priority`: mongod sorts in memory"
        );
        assert!(text(
            with(ix("a:1"), |i| i.collation = Some(s("fr"))),
            q().eq("a")
        )
        .starts_with(
            "collation differs: index `x` has collation fr and the query the simple collation"
        ));
        assert!(text(
            ix("team:1,priority:1"),
            q().eq("status").sort("updated_at:-1")
        )
        .starts_with("no predicate on the index's first key `team` and no sort it provides"));
        assert_eq!(
            text(ix("a:1,h:hashed,c:1"), q().eq("a").sort("h:1")),
            "key `h` of index `x` is hashed and has no equality: it orders by hash, so mongod \
             sorts in memory"
        );
        assert!(
            text(ix("tags:1"), q().mk("tags").range("tags").sort("tags:1")).contains("multikey")
        );
    }

    #[test]
    fn esr_help_desk_queue() {
        let query = q().eq("team,status").sort("priority:-1,updated_at:-1");
        assert_eq!(
            esr_keys(&query),
            keys("team:1,status:1,priority:-1,updated_at:-1")
        );
        let ranged = query.clone().range("created_at");
        let derived = esr_keys(&ranged);
        assert_eq!(
            derived,
            keys("team:1,status:1,priority:-1,updated_at:-1,created_at:1")
        );
        let index = IndexShape {
            name: s("x"),
            keys: derived,
            ..Default::default()
        };
        assert_eq!(fit(&index, &ranged), served(false, 1));
    }

    #[test]
    fn esr_in_placement() {
        // Within the explosion limit, the $in goes with the equalities: SORT_MERGE of 3 scans.
        let small = q().eq("team").inn("status", 3).sort("priority:-1");
        assert_eq!(esr_keys(&small), keys("team:1,status:1,priority:-1"));
        let index = IndexShape {
            name: s("x"),
            keys: esr_keys(&small),
            ..Default::default()
        };
        assert_eq!(fit(&index, &small), served(false, 3));

        // Over the limit: after the sort keys, before the ranges; no explosion, no blocking sort.
        let large = q()
            .eq("team")
            .inn("status", 300)
            .range("created_at")
            .sort("priority:-1");
        assert_eq!(
            esr_keys(&large),
            keys("team:1,priority:-1,status:1,created_at:1")
        );
        let index = IndexShape {
            name: s("x"),
            keys: esr_keys(&large),
            ..Default::default()
        };
        assert_eq!(fit(&index, &large), served(false, 1));

        // No sort: an $in is an equality, whatever its size.
        let unsorted = q().eq("a").inn("b", 500).range("c");
        assert_eq!(esr_keys(&unsorted), keys("a:1,b:1,c:1"));

        // A sorted $in field keeps its sort position; another $in then cannot be exploded.
        let sorted_in = q()
            .inn("kind", 2)
            .inn("status", 3)
            .sort("status:1,created:-1");
        assert_eq!(esr_keys(&sorted_in), keys("status:1,created:-1,kind:1"));
        let index = IndexShape {
            name: s("x"),
            keys: esr_keys(&sorted_in),
            ..Default::default()
        };
        assert_eq!(fit(&index, &sorted_in), served(false, 1));

        // A one-element $in is an equality.
        assert_eq!(esr_keys(&q().inn("a", 1).sort("b:-1")), keys("a:1,b:-1"));
        // an array among the keys: 7.0/8.0 do not explode, so the `$in` follows the sort;
        // 8.1 explodes it in front
        let arrays = q().eq("tags").inn("a", 3).sort("b:1").mk("tags");
        assert_eq!(esr_keys(&arrays), keys("tags:1,b:1,a:1"));
        let derived = IndexShape {
            keys: esr_keys(&arrays),
            ..ix("")
        };
        assert!(matches!(fit(&derived, &arrays), Verdict::Served { .. }));
        assert_eq!(esr_keys(&arrays.clone().r81()), keys("tags:1,a:1,b:1"));
        // with nothing but the `$in` to bound the scan, it stays in front: a bounded scan
        // sorted in memory on 7.0 (the fit says why) rather than a scan of the whole index
        let only_in = q().inn("tags", 3).sort("b:1").mk("tags");
        assert_eq!(esr_keys(&only_in), keys("tags:1,b:1"));
        let derived = IndexShape {
            keys: esr_keys(&only_in),
            ..ix("")
        };
        assert_eq!(
            fit(&derived, &only_in),
            Verdict::BlockingSort(Rule::MultikeySort {
                index: s("x"),
                key: s("tags"),
                cause: MultikeyCause::IndexMultikey(s("tags")),
            })
        );
    }

    #[test]
    fn esr_geo_and_time_series() {
        // the geo key where a range would go, after the sort keys
        let within = q().eq("kind").within("loc").sort("name:1");
        assert_eq!(esr_keys(&within), keys("kind:1,name:1,loc:2dsphere"));
        let index = IndexShape {
            keys: esr_keys(&within),
            ..ix("")
        };
        assert_eq!(fit(&index, &within), served(false, 1));
        let near = q().eq("kind").near("loc").range("price");
        assert_eq!(esr_keys(&near), keys("kind:1,loc:2dsphere,price:1"));
        // a time series: an equality on a measurement is a range, after the sort on time
        let readings = q().eq("sensor,value").sort("at:1").ts("at", "sensor");
        assert_eq!(esr_keys(&readings), keys("sensor:1,at:1,value:1"));
        let index = IndexShape {
            keys: esr_keys(&readings),
            ..ix("")
        };
        assert_eq!(fit(&index, &readings), served(false, 1));
        // the messages name the rule
        let text = |verdict: Verdict| match verdict {
            Verdict::BlockingSort(rule) | Verdict::Unusable(rule) | Verdict::Examines(rule) => {
                rule.to_string()
            }
            served => panic!("expected a rule, got {served:?}"),
        };
        assert!(text(fit(&ix("kind:1"), &q().near("loc")))
            .contains("a near query is answered only by a 2dsphere index"));
        assert!(text(fit(
            &ix("sensor:1,value:1"),
            &q().eq("sensor").sort("value:1").ts("at", "sensor")
        ))
        .contains("is a measurement of a time series collection"));
    }

    #[test]
    fn esr_drops_and_dedupes() {
        // A sort field with an equality is dropped; a ranged sort field appears once, sorted.
        let query = q().eq("team").range("created").sort("team:1,created:-1");
        assert_eq!(esr_keys(&query), keys("team:1,created:-1"));
        let index = IndexShape {
            name: s("x"),
            keys: esr_keys(&query),
            ..Default::default()
        };
        assert_eq!(fit(&index, &query), served(false, 1));
    }

    #[test]
    fn esr_indexes_serve_their_queries() {
        let queries = [
            q().eq("a").sort("b:-1"),
            q().eq("a,b")
                .inn("c", 20)
                .inn("d", 10)
                .range("e")
                .sort("f:1,g:-1"),
            q().inn("c", 201).sort("f:1"),
            q().eq("a").range("b,c").sort("c:1"),
            q().sort("_id:1"),
        ];
        for query in &queries {
            let index = IndexShape {
                name: s("x"),
                keys: esr_keys(query),
                ..Default::default()
            };
            assert!(
                matches!(fit(&index, query), Verdict::Served { .. }),
                "{query:?} -> {:?}: {:?}",
                index.keys,
                fit(&index, query)
            );
        }
    }

    #[test]
    fn covers_prefix_reverse_and_options() {
        let a = ix("a:1,b:-1,c:1");
        assert!(covers(&a, &ix("a:1,b:-1")), "prefix");
        assert!(
            covers(&a, &ix("a:-1,b:1")),
            "prefix of the complete reverse"
        );
        assert!(covers(&a, &ix("a:-1,b:1,c:-1")), "complete reverse");
        assert!(covers(&a, &a), "itself");
        assert!(!covers(&a, &ix("a:1,b:1")), "partial flip");
        assert!(!covers(&a, &ix("b:-1")), "not a prefix");
        assert!(!covers(&ix("a:1,b:-1"), &a), "longer");
        assert!(
            !covers(&a, &with(ix("a:1"), |i| i.unique = true)),
            "unique differs"
        );
        let ua = with(ix("a:1,b:1"), |i| i.unique = true);
        assert!(
            !covers(&ua, &with(ix("a:1"), |i| i.unique = true)),
            "unique on more keys enforces less"
        );
        assert!(
            covers(&ua, &with(ix("a:-1,b:-1"), |i| i.unique = true)),
            "unique, same keys reversed"
        );
        assert!(
            !covers(&a, &with(ix("a:1"), |i| i.sparse = true)),
            "sparse differs"
        );
        let pa = with(ix("a:1,b:1"), |i| i.partial = true);
        assert!(
            !covers(&pa, &with(ix("a:1"), |i| i.partial = true)),
            "partial filters unknown"
        );
        assert!(
            !covers(&a, &with(ix("a:1"), |i| i.collation = Some(s("fr")))),
            "collation differs"
        );
        assert!(
            covers(&ix("h:hashed,b:1"), &ix("h:hashed")),
            "hashed prefix"
        );
        assert!(
            !covers(&ix("h:1"), &ix("h:hashed")),
            "hashed is not ascending"
        );
    }

    /// Derived indexes paired with a query no index serves (no predicate, no sort), so that only
    /// the key-pattern rule ([`covers`]) can merge them.
    fn bare(indexes: Vec<IndexShape>) -> Vec<(IndexShape, QueryShape)> {
        indexes.into_iter().map(|i| (i, q())).collect()
    }

    #[test]
    fn merge_prefix_and_reverse() {
        let derived = bare(vec![
            ix("a:1"),
            ix("a:1,b:-1"),
            ix("x:1"),
            ix("a:-1,b:1,c:1"),
        ]);
        let merged = merge_derived(&derived);
        assert_eq!(
            merged,
            vec![
                Merged {
                    index: ix("a:-1,b:1,c:1"),
                    serves: vec![0, 1, 3]
                },
                Merged {
                    index: ix("x:1"),
                    serves: vec![2]
                },
            ]
        );
        // A partial flip is neither a prefix nor a reverse-prefix.
        let flipped = merge_derived(&bare(vec![ix("a:1,b:1"), ix("a:1,b:-1,c:1")]));
        assert_eq!(flipped.len(), 2, "{flipped:?}");
    }

    #[test]
    fn merge_keeps_different_options_apart() {
        // Every query would be served by `{a: 1, b: 1}` were the options the same.
        let derived = vec![
            (with(ix("a:1"), |i| i.unique = true), q().eq("a")),
            (ix("a:1,b:1"), q().eq("a").sort("b:1")),
            (with(ix("a:1"), |i| i.partial = true), q().eq("a")),
            (
                with(ix("a:1,b:1,c:1"), |i| i.collation = Some(s("fr"))),
                q().eq("a").coll("fr"),
            ),
        ];
        let merged = merge_derived(&derived);
        assert_eq!(
            merged.iter().map(|m| m.serves.clone()).collect::<Vec<_>>(),
            vec![vec![0], vec![1], vec![2], vec![3]],
            "{merged:?}"
        );
        // Same options: the shorter ones merge into the longest.
        let same = merge_derived(&[
            (ix("a:1"), q().eq("a")),
            (ix("a:1,b:1"), q().eq("a").sort("b:1")),
            (ix("a:1,b:1,c:1"), q().eq("a,b").sort("c:1")),
        ]);
        assert_eq!(
            same,
            vec![Merged {
                index: ix("a:1,b:1,c:1"),
                serves: vec![0, 1, 2]
            }]
        );
    }

    #[test]
    fn merge_treats_equalities_as_a_set() {
        // the reversed queue with its equalities the other way round: one index
        let queue = q().eq("team,status").sort("priority:-1");
        let reversed = q().eq("status,team").sort("priority:1");
        let derived = vec![
            (ix(&pattern_of(&esr_keys(&queue))), queue.clone()),
            (ix(&pattern_of(&esr_keys(&reversed))), reversed.clone()),
        ];
        let merged = merge_derived(&derived);
        assert_eq!(merged.len(), 1, "{merged:?}");
        assert_eq!(merged[0].serves, vec![0, 1]);
        // a query whose equality would sit behind the kept index's sort key is not merged
        let other = q().eq("team").sort("priority:-1");
        let apart = merge_derived(&[
            (
                ix("team:1,priority:-1,status:1"),
                q().eq("team,status").range("priority"),
            ),
            (ix("team:1,status:1"), q().eq("status,team")),
            (ix("team:1,priority:-1"), other),
        ]);
        assert_eq!(
            apart.iter().map(|m| m.serves.clone()).collect::<Vec<_>>(),
            vec![vec![0, 2], vec![1]],
            "{apart:?}"
        );
    }

    fn pattern_of(keys: &[(String, KeyDir)]) -> String {
        keys.iter()
            .map(|(p, d)| format!("{p}:{}", d.to_string().trim_matches('"')))
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn merged_indexes_serve_their_queries() {
        let queries = [
            q().eq("team,status").sort("priority:-1,updated_at:-1"),
            q().eq("team,status").sort("priority:1"),
            q().eq("team"),
            q().eq("customer").range("placed_at").sort("placed_at:-1"),
            q().eq("customer"),
            q().eq("team").range("created"),
        ];
        let derived: Vec<(IndexShape, QueryShape)> = queries
            .iter()
            .enumerate()
            .map(|(i, query)| {
                let index = IndexShape {
                    name: format!("q{i}"),
                    keys: esr_keys(query),
                    ..Default::default()
                };
                (index, query.clone())
            })
            .collect();
        let merged = merge_derived(&derived);
        // `{team, status, priority: 1}` is no prefix of the queue index's reverse (its equality
        // keys are ascending), but the queue index serves it backwards: the `fit` merge. The
        // `team` + `created` range has no blocking sort on the queue index either, but only its
        // own index bounds `created`, so it stays.
        let serves: Vec<Vec<usize>> = merged.iter().map(|m| m.serves.clone()).collect();
        assert_eq!(
            serves,
            vec![vec![0, 1, 2], vec![3, 4], vec![5]],
            "{merged:?}"
        );
        for m in &merged {
            for &i in &m.serves {
                assert!(
                    matches!(
                        fit(&m.index, &queries[i]),
                        Verdict::Served {
                            full_scan: false,
                            ..
                        }
                    ),
                    "{:?} for query {i}: {:?}",
                    m.index.keys,
                    fit(&m.index, &queries[i])
                );
            }
        }
    }
}
