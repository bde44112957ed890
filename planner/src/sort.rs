//! Rules 2 and 3, the order a bounded scan gives: `query_solution.cpp` `computeSortsForScan`
//! builds the base sort pattern (point fields dropped, cut at the first key that gives no order),
//! `ProvidedSortSet::contains` matches the sort against it or its complete reverse
//! (`planner_analysis.cpp` `analyzeNonBlockingSort`).

use crate::collation::collation_rule;
use crate::key::{Bound, Key};
use crate::multikey::multikey_cause;
use crate::shape::is_2dsphere;
use crate::{IndexShape, KeyDir, QueryShape, Rule};

/// Where an order built from the key pattern stops before the pattern's end.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop<'a> {
    End,
    /// A hashed or `2dsphere` key without an equality.
    Special(&'a str),
    Multikey(&'a str),
    /// A key that gives no order of its own ([`Key::unordered`]).
    Unordered(&'a str),
}

/// `computeSortsForScan` and `ProvidedSortSet` for one bounded index scan.
pub(crate) struct Provided<'a> {
    /// Fields with point bounds that a sort may name freely.
    pub(crate) equality: Vec<&'a str>,
    /// Multikey point fields dropped from the base pattern but not ignored in a sort.
    pub(crate) ignored: Vec<&'a str>,
    /// The base sort pattern.
    pub(crate) base: Vec<(&'a str, &'a KeyDir)>,
    pub(crate) stop: Stop<'a>,
}

impl<'a> Provided<'a> {
    pub(crate) fn new(keys: &[Key<'a>]) -> Self {
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
    pub(crate) fn contains(&self, sort: &[(String, KeyDir)], reverse: bool) -> bool {
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

/// The rule of a key that stops the order by its kind (hashed, `2dsphere`) or by giving none
/// of its own (another collation, a time series measurement).
pub(crate) fn stop_rule(
    index: &IndexShape,
    query: &QueryShape,
    keys: &[Key<'_>],
    path: &str,
) -> Rule {
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

/// Rules 2 and 3, equalities anywhere and ESR: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
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
            multikey("a.c", MultikeyCause::SharedPrefix(s("a.b"))),
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
            multikey("a.b.d", MultikeyCause::SharedPrefix(s("a.b.c"))),
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
            sort_order("b:1,a:1", "a:1,b:1"),
            "sort out of key order",
        ),
    ]
}
