//! The index a declared query needs: equalities, then the sort, then the ranges (ESR), with
//! rule 4's limit deciding where an `$in` goes.

use crate::explode::MAX_SCANS_TO_EXPLODE;
use crate::timeseries::bucket_ranges;
use crate::{KeyDir, QueryShape};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::*;

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
            multikey("tags", MultikeyCause::IndexMultikey(s("tags")))
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
}
