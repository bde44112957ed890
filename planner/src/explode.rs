//! Rule 4, `$in` before the sort: `planner_analysis.cpp` `QueryPlannerAnalysis::explodeForSort`
//! turns the leading point-union keys into point scans merged by SORT_MERGE, at most
//! [`MAX_SCANS_TO_EXPLODE`].

use crate::key::{Bound, Key};
use crate::sort::{stop_rule, Stop};
use crate::{Cut, IndexShape, KeyDir, MultikeyCause, QueryShape, Rule};

/// mongod's `internalQueryMaxScansToExplode` (query_knobs.idl, default 200): the most point
/// scans `explodeForSort` creates to merge-sort; over it mongod sorts in memory.
pub const MAX_SCANS_TO_EXPLODE: usize = 200;

/// `explodeForSort` for one index scan.
pub(crate) struct Explosion<'k, 'a> {
    /// How many leading keys are unions of points.
    pub(crate) run: usize,
    /// The Cartesian product of their point counts.
    pub(crate) scans: usize,
    /// The keys after the run, up to the first multikey or hashed key.
    pub(crate) possible: Vec<&'k Key<'a>>,
    pub(crate) stop: Stop<'a>,
}

impl<'k, 'a> Explosion<'k, 'a> {
    /// `None` when there is nothing to explode or no key left to give an order.
    pub(crate) fn new(keys: &'k [Key<'a>]) -> Option<Self> {
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
    pub(crate) fn provides(&self, sort: &[(String, KeyDir)], reverse: bool) -> bool {
        sort.len() <= self.possible.len()
            && sort.iter().zip(&self.possible).all(|((p, d), k)| {
                let want = if reverse { d.reversed() } else { d.clone() };
                k.path == p && *k.dir == want
            })
    }
}

/// Why `explodeForSort` could not give the sort, the `$in` on `in_field` being the first key of
/// the base pattern in front of the sort.
pub(crate) fn diagnose_explosion(
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

/// Rule 4, `$in` before the sort: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
    let r = Cut::Range;
    vec![
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
    ]
}
