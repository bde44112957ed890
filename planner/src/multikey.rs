//! Rule 5, multikey: which keys are on array paths, and when such a key can still give an order
//! (`query_solution.cpp` `confirmBoundsProvideSortComponentGivenMultikeyness`, SERVER-31898).

use crate::key::{Bound, Key};
use crate::{IndexShape, MultikeyCause, QueryShape};

pub(crate) fn is_multikey(path: &str, index: &IndexShape, query: &QueryShape) -> bool {
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
pub(crate) fn shares_prefix(a: &str, b: &str) -> bool {
    a.split('.').next() == b.split('.').next()
}

/// The array paths that are `path` or a dotted prefix of it.
pub(crate) fn array_prefixes<'q>(
    path: &str,
    index: &'q IndexShape,
    query: &'q QueryShape,
) -> Vec<&'q str> {
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
pub(crate) fn can_assign<'q>(
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

/// `confirmBoundsProvideSortComponentGivenMultikeyness`: `None` when the multikey key can give
/// an order.
pub(crate) fn multikey_cause(key: &Key<'_>, keys: &[Key<'_>]) -> Option<MultikeyCause> {
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

/// Rule 5, multikey: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
    vec![
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
    ]
}
