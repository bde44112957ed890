//! The bounds mongod builds for each key of an index from a query (`index_bounds_builder.cpp`,
//! `planner_ixselect.cpp`), and rule 3's ESR check: an equality behind a key without point
//! bounds is examined, not bounded.

use crate::collation::collated;
use crate::key::{Bound, Key};
use crate::multikey::{can_assign, is_multikey};
use crate::shape::is_2dsphere;
use crate::{Cut, IndexShape, KeyDir, QueryShape, Rule};

pub(crate) fn bound_of(path: &str, dir: &KeyDir, query: &QueryShape) -> Bound {
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

pub(crate) fn analyse<'a>(index: &'a IndexShape, query: &QueryShape) -> Vec<Key<'a>> {
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

/// ESR: every equality and `$in` of the query on a key of the index's prefix of point-bounded
/// keys. A unique index whose every key is a point finds one document, whatever else the query
/// says.
pub(crate) fn equality_behind(
    index: &IndexShape,
    keys: &[Key<'_>],
    query: &QueryShape,
) -> Option<Rule> {
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
