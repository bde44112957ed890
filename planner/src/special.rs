//! Rule 7, special keys: an index with a text, `2d`, wildcard or `2dsphere` key serves only the
//! predicates a [`QueryShape`](crate::QueryShape) cannot declare, but for a geo predicate on its
//! `2dsphere` key (`planner_ixselect.cpp` `stripInvalidAssignmentsTo2dsphereIndices`); a hashed
//! key gets point bounds only (in `bounds.rs`) and ends the order.

use crate::{IndexShape, KeyDir};

pub(crate) fn special_kind(index: &IndexShape) -> Option<(&str, &str)> {
    index.keys.iter().find_map(|(path, dir)| match dir {
        KeyDir::Special(kind) if kind != "hashed" => Some((path.as_str(), kind.as_str())),
        _ if path == "$**" || path.ends_with(".$**") => Some((path.as_str(), "wildcard")),
        _ => None,
    })
}

/// Rule 7, special keys: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
    vec![
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
            hashed_sort("h"),
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
            special("body", "text"),
            "text index needs $text",
        ),
        (
            ix("loc:2dsphere,a:1"),
            q().eq("a").sort("a:1"),
            special("loc", "2dsphere"),
            "2dsphere index needs a geo predicate",
        ),
    ]
}
