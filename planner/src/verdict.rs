//! What the planner answers: a [`Verdict`] for one index and one query, and the [`Rule`] that
//! keeps an index from serving (its `Display` is the sentence the report and the fit print).

use std::fmt;

use crate::{KeyDir, MAX_SCANS_TO_EXPLODE};

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
    /// scan of an index with an array key (8.1 does: [`ServerRules::Mongod81`](crate::ServerRules::Mongod81)).
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
pub(crate) fn pattern(keys: &[(String, KeyDir)]) -> String {
    let inner: Vec<String> = keys.iter().map(|(p, d)| format!("{p}: {d}")).collect();
    format!("{{{}}}", inner.join(", "))
}

pub(crate) fn collation_name(c: &Option<String>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::*;

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
}
