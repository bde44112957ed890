//! Derived indexes folded into the smallest set: [`covers`] (a prefix or its reverse, same
//! options) and [`merge_derived`] (with [`fit`](crate::fit) confirming what key patterns alone
//! miss).

use crate::{fit, IndexShape, KeyDir, QueryShape, Verdict};

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
pub(crate) fn same_paths(a: &[(String, KeyDir)], b: &[(String, KeyDir)]) -> bool {
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
/// from [`esr_keys`](crate::esr_keys), with the query), the smallest set of indexes such that every query is
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
    use crate::tests::*;

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
