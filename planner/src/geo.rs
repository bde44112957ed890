//! Rule 8, geo: `$near`/`$geoNear` answered by `GEO_NEAR_2DSPHERE` nearest first
//! (`planner_access.cpp` `makeLeafNode`), `$geoWithin` bounding the `2dsphere` key by the cells
//! that cover the area (`index_bounds_builder.cpp` `translate`).

use crate::bounds::analyse;
use crate::key::Bound;
use crate::shape::is_2dsphere;
use crate::{Cut, IndexShape, QueryShape, Rule, Verdict};

/// A near query (rule 8): `GEO_NEAR_2DSPHERE` on the index's `2dsphere` key at `path`, nearest
/// first; the query's equalities bound the other keys of the index (or are filtered on each
/// document when the index has no key on them); a sort of its own is done in memory.
pub(crate) fn near(index: &IndexShape, query: &QueryShape, path: &str) -> Verdict {
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

/// Rule 8, geo: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
    vec![
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
            no_geo_index("loc"),
            "near needs a 2dsphere index on its field",
        ),
        (
            ix("loc:2dsphere"),
            q().near("loc").sort("name:1"),
            geo_order("loc"),
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
            geo_order("loc"),
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
    ]
}
