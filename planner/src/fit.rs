//! The decision: [`fit`] walks mongod's rules for one index and one query in the planner's
//! order (rule 1's whole-index scan, the bounds, the order, the explosion) and names the first
//! rule that keeps the index from serving.

use crate::bounds::{analyse, equality_behind};
use crate::collation::collation_rule;
use crate::explode::{diagnose_explosion, Explosion, MAX_SCANS_TO_EXPLODE};
use crate::geo::near;
use crate::key::{Bound, Key};
use crate::multikey::multikey_cause;
use crate::shape::is_2dsphere;
use crate::sort::{stop_rule, Provided, Stop};
use crate::special::special_kind;
use crate::timeseries::bucket_ranges;
use crate::{
    Cut, GeoKind, IndexShape, KeyDir, MultikeyCause, QueryShape, Rule, ServerRules, Verdict,
};

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

pub(crate) fn fit_shape(index: &IndexShape, query: &QueryShape) -> Verdict {
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
pub(crate) fn whole_index(index: &IndexShape, keys: &[Key<'_>], query: &QueryShape) -> Verdict {
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

/// Names the first rule that keeps a bounded scan of `index` from giving `query`'s sort.
pub(crate) fn diagnose(
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

/// Rule 1, a predicate on the first key or a sort the index provides whole: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
    vec![
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
    ]
}
