//! The planner's table: every rule's rows (each family's `cases()`, beside its rule) checked
//! against [`fit`](crate::fit), and the builders the rows are written with.

pub(crate) use crate::*;

/// Index, query, expected verdict, and what the row shows.
pub(crate) type Case = (IndexShape, QueryShape, Verdict, &'static str);

pub(crate) fn s(x: &str) -> String {
    x.to_owned()
}

/// `"a:1,b:-1,h:hashed"`.
pub(crate) fn keys(spec: &str) -> Vec<(String, KeyDir)> {
    spec.split(',')
        .filter(|kv| !kv.trim().is_empty())
        .map(|kv| {
            let (k, v) = kv.trim().split_once(':').expect("path:dir");
            let dir = match v.trim() {
                "1" => KeyDir::Asc,
                "-1" => KeyDir::Desc,
                kind => KeyDir::Special(kind.to_owned()),
            };
            (k.trim().to_owned(), dir)
        })
        .collect()
}

pub(crate) fn paths(spec: &str) -> Vec<String> {
    spec.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(s)
        .collect()
}

pub(crate) fn ix(spec: &str) -> IndexShape {
    IndexShape {
        name: s("x"),
        keys: keys(spec),
        ..Default::default()
    }
}

pub(crate) fn q() -> QueryShape {
    QueryShape::default()
}

/// A small builder over [`QueryShape`] and [`IndexShape`] for the table.
pub(crate) trait Build: Sized {
    fn eq(self, spec: &str) -> Self;
    fn inn(self, path: &str, n: usize) -> Self;
    fn range(self, spec: &str) -> Self;
    fn sort(self, spec: &str) -> Self;
    fn mk(self, spec: &str) -> Self;
    fn em(self, spec: &str) -> Self;
    fn coll(self, c: &str) -> Self;
    fn r81(self) -> Self;
    fn unc(self, spec: &str) -> Self;
    fn near(self, path: &str) -> Self;
    fn within(self, path: &str) -> Self;
    fn ts(self, time: &str, meta: &str) -> Self;
}

impl Build for QueryShape {
    fn eq(mut self, spec: &str) -> Self {
        self.eq.extend(paths(spec));
        self
    }
    fn inn(mut self, path: &str, n: usize) -> Self {
        self.in_.push((s(path), n));
        self
    }
    fn range(mut self, spec: &str) -> Self {
        self.range.extend(paths(spec));
        self
    }
    fn sort(mut self, spec: &str) -> Self {
        self.sort = keys(spec);
        self
    }
    fn mk(mut self, spec: &str) -> Self {
        self.multikey_paths.extend(paths(spec));
        self
    }
    fn em(mut self, spec: &str) -> Self {
        self.elem_match.extend(paths(spec));
        self
    }
    fn coll(mut self, c: &str) -> Self {
        self.collation = Some(s(c));
        self
    }
    fn r81(mut self) -> Self {
        self.rules = ServerRules::Mongod81;
        self
    }
    fn unc(mut self, spec: &str) -> Self {
        self.uncollated_paths.extend(paths(spec));
        self
    }
    fn near(mut self, path: &str) -> Self {
        self.geo = Some(GeoPredicate {
            path: s(path),
            kind: GeoKind::Near,
        });
        self
    }
    fn within(mut self, path: &str) -> Self {
        self.geo = Some(GeoPredicate {
            path: s(path),
            kind: GeoKind::Within,
        });
        self
    }
    fn ts(mut self, time: &str, meta: &str) -> Self {
        self.time_series = Some(TimeSeriesFields {
            time: s(time),
            meta: (!meta.is_empty()).then(|| s(meta)),
        });
        self
    }
}

pub(crate) fn with(index: IndexShape, f: impl FnOnce(&mut IndexShape)) -> IndexShape {
    let mut index = index;
    f(&mut index);
    index
}

pub(crate) fn served(reverse: bool, merge_scans: usize) -> Verdict {
    Verdict::Served {
        reverse,
        merge_scans,
        full_scan: false,
    }
}

pub(crate) fn full(reverse: bool) -> Verdict {
    Verdict::Served {
        reverse,
        merge_scans: 1,
        full_scan: true,
    }
}

pub(crate) fn cut(key: &str, cut: Cut, sort_key: &str) -> Verdict {
    Verdict::BlockingSort(Rule::KeyBeforeSort {
        index: s("x"),
        key: s(key),
        cut,
        sort_key: s(sort_key),
    })
}

pub(crate) fn examines(key: &str, behind: Option<&str>, cut: Cut) -> Verdict {
    Verdict::Examines(Rule::EqualityBehind {
        index: s("x"),
        key: s(key),
        behind: behind.map(s),
        cut,
    })
}

pub(crate) fn missing(key: &str) -> Verdict {
    Verdict::BlockingSort(Rule::SortKeyMissing {
        index: s("x"),
        key: s(key),
    })
}

pub(crate) fn too_many(fields: &[(&str, usize)], scans: usize) -> Verdict {
    Verdict::BlockingSort(Rule::TooManyScans {
        index: s("x"),
        fields: fields.iter().map(|(p, n)| (s(p), *n)).collect(),
        scans,
    })
}

pub(crate) fn flip(sort: &str, index: &str) -> Verdict {
    Verdict::BlockingSort(Rule::PartialFlip {
        index: s("x"),
        sort: keys(sort),
        keys: keys(index),
    })
}

pub(crate) fn multikey(key: &str, cause: MultikeyCause) -> Verdict {
    Verdict::BlockingSort(Rule::MultikeySort {
        index: s("x"),
        key: s(key),
        cause,
    })
}

pub(crate) fn exploded_key(key: &str, in_field: &str) -> Verdict {
    Verdict::BlockingSort(Rule::SortNamesExplodedKey {
        index: s("x"),
        key: s(key),
        in_field: s(in_field),
    })
}

pub(crate) fn no_leading(first_key: &str, sort: &str) -> Verdict {
    Verdict::Unusable(Rule::NoLeadingPredicate {
        index: s("x"),
        first_key: s(first_key),
        sort: keys(sort),
    })
}

pub(crate) fn sort_order(sort: &str, index: &str) -> Verdict {
    Verdict::BlockingSort(Rule::SortOrder {
        index: s("x"),
        sort: keys(sort),
        keys: keys(index),
    })
}

pub(crate) fn no_geo_index(path: &str) -> Verdict {
    Verdict::Unusable(Rule::NoGeoIndex {
        index: s("x"),
        path: s(path),
    })
}

pub(crate) fn geo_order(key: &str) -> Verdict {
    Verdict::BlockingSort(Rule::GeoOrder {
        index: s("x"),
        key: s(key),
    })
}

pub(crate) fn hashed_sort(key: &str) -> Verdict {
    Verdict::BlockingSort(Rule::HashedSort {
        index: s("x"),
        key: s(key),
    })
}

pub(crate) fn special(key: &str, kind: &str) -> Verdict {
    Verdict::Unusable(Rule::SpecialIndex {
        index: s("x"),
        key: s(key),
        kind: s(kind),
    })
}

/// The rule of a time series bucket (its verdict depends on the row: examined or no order).
pub(crate) fn bucket(key: &str, time: bool) -> Rule {
    Rule::TimeSeriesBucket {
        index: s("x"),
        key: s(key),
        time,
    }
}

/// Every family's rows, in the order of the rules.
fn table() -> Vec<Case> {
    [
        crate::fit::cases(),
        crate::sort::cases(),
        crate::explode::cases(),
        crate::multikey::cases(),
        crate::collation::cases(),
        crate::special::cases(),
        crate::geo::cases(),
        crate::timeseries::cases(),
    ]
    .concat()
}

#[test]
fn planner_table() {
    let rows = table();
    assert!(rows.len() >= 45, "{} rows", rows.len());
    let mut failures = Vec::new();
    for (index, query, expected, note) in &rows {
        let got = fit(index, query);
        if got != *expected {
            failures.push(format!(
                "{note}: {:?} / {query:?}\n  expected {expected:?}\n  got      {got:?}",
                index.keys
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows differ:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
