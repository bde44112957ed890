//! The second pass: one `$group` aggregation per collection counts, over every document, the
//! facts of each path the sample found outside arrays: presence, `null`s, the largest and
//! smallest `$size` of arrays and their empties, integer ranges, the longest string, and the
//! distinct values of enum candidates. The counts replace the sample's, and the path is marked
//! exact. Paths inside arrays keep the sample's facts; the gate then checks them on every document.
//!
//! Every reply stays far below mongod's 16 MB: an enum candidate's distinct values are only the
//! strings of at most [`ENUM_VALUE_MAX_CHARS`] code points (a longer one rules the enum out, and
//! the longest string is counted anyway), cut to [`VALUE_CAP`] + 1 after the `$group` (the
//! limit is the reply's, not the pipeline's), and the paths are split over as many aggregations
//! as keep each reply's worst case under [`REPLY_BUDGET`].

use std::collections::{BTreeMap, BTreeSet};

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use crate::lattice::{DocShape, Shape, VALUE_CAP};
use crate::report::Report;
use crate::sample::{collection, ReadOptions};

/// One path the aggregation counts.
#[derive(Debug, Clone)]
struct Probe {
    key: String,
    segments: Vec<String>,
}

/// The longest string an enum value may be, in code points (`infer` takes none longer).
pub const ENUM_VALUE_MAX_CHARS: u64 = 64;

/// The most one facts reply may hold, counted at its worst: half of mongod's 16 MiB.
pub const REPLY_BUDGET: usize = 8 * 1024 * 1024;

/// The most bytes one path's counts take in a reply: its numbers, and for an enum candidate
/// [`VALUE_CAP`] + 1 strings of [`ENUM_VALUE_MAX_CHARS`] code points of 4 bytes each.
fn worst_case(values: bool) -> usize {
    let numbers = 16 * 32;
    let strings = (VALUE_CAP + 1) * (ENUM_VALUE_MAX_CHARS as usize * 4 + 16);
    numbers + if values { strings } else { 0 }
}

/// Splits probes of the given worst cases into runs whose sum stays within `budget` (a probe
/// over the budget alone has a run of its own).
fn batches(worst: &[usize], budget: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut sum) = (0, 0);
    for (i, w) in worst.iter().enumerate() {
        if i > start && sum + w > budget {
            out.push(start..i);
            (start, sum) = (i, 0);
        }
        sum += w;
    }
    if start < worst.len() {
        out.push(start..worst.len());
    }
    out
}

fn plain(segment: &str) -> bool {
    !segment.is_empty() && !segment.contains('.') && !segment.starts_with('$')
}

/// The paths outside arrays, depth first: `(segments, shape)`.
fn paths<'a>(doc: &'a DocShape, prefix: &[String], out: &mut Vec<(Vec<String>, &'a Shape)>) {
    for (name, shape) in &doc.fields {
        if !plain(name) {
            continue;
        }
        let mut segments = prefix.to_vec();
        segments.push(name.clone());
        out.push((segments.clone(), shape));
        if let Some(inner) = &shape.doc {
            paths(inner, &segments, out);
        }
    }
}

fn is_type(path: &str, kind: &str) -> Document {
    doc! { "$eq": [{ "$type": path }, kind] }
}

/// The counts of one collection's aggregation, to put into its shape again after the gate has
/// joined failing documents into it (they were counted here already).
#[derive(Debug, Clone)]
pub struct Facts {
    name: String,
    total: u64,
    probes: Vec<Probe>,
    counted: Document,
}

/// Counts the facts of `shape` over every document of collection `name` and puts them into it.
pub async fn count(
    db: &Database,
    name: &str,
    total: u64,
    shape: &mut DocShape,
    read: &ReadOptions,
    max_paths: usize,
    report: &mut Report,
) -> mongodb::error::Result<Facts> {
    let mut found = Vec::new();
    paths(shape, &[], &mut found);
    if found.len() > max_paths {
        report.notes.push(format!(
            "`{name}`: {} paths, more than --max-paths {max_paths}: the facts pass counted the first {max_paths}, the others rest on the sample and the gate",
            found.len()
        ));
        found.truncate(max_paths);
    }
    let mut groups = Vec::new();
    let mut probes = Vec::new();
    for (i, (segments, s)) in found.iter().enumerate() {
        let mut group = Document::new();
        let path = format!("${}", segments.join("."));
        let key = format!("f{i}");
        group.insert(
            format!("{key}_p"),
            doc! { "$sum": { "$cond": [is_type(&path, "missing"), 0, 1] } },
        );
        group.insert(
            format!("{key}_n"),
            doc! { "$sum": { "$cond": [is_type(&path, "null"), 1, 0] } },
        );
        if s.array.is_some() {
            let size = doc! { "$cond": [{ "$isArray": &path }, { "$size": &path }, Bson::Null] };
            group.insert(format!("{key}_amax"), doc! { "$max": size.clone() });
            group.insert(format!("{key}_amin"), doc! { "$min": size });
            group.insert(
                format!("{key}_aempty"),
                doc! { "$sum": { "$cond": [{ "$isArray": &path }, { "$cond": [{ "$eq": [{ "$size": &path }, 0] }, 1, 0] }, 0] } },
            );
        }
        for (kind, on) in [("int", s.ints.is_some()), ("long", s.longs.is_some())] {
            if on {
                let value = doc! { "$cond": [is_type(&path, kind), &path, Bson::Null] };
                group.insert(format!("{key}_{kind}min"), doc! { "$min": value.clone() });
                group.insert(format!("{key}_{kind}max"), doc! { "$max": value });
            }
        }
        if let Some(strings) = &s.strings {
            group.insert(
                format!("{key}_slen"),
                doc! { "$max": { "$cond": [is_type(&path, "string"), { "$strLenCP": &path }, Bson::Null] } },
            );
            group.insert(
                format!("{key}_scount"),
                doc! { "$sum": { "$cond": [is_type(&path, "string"), 1, 0] } },
            );
            if strings.values.is_some() {
                // `$cond` evaluates the branch taken only: `$strLenCP` sees strings alone
                let short = doc! { "$cond": [
                    is_type(&path, "string"),
                    { "$lte": [{ "$strLenCP": &path }, ENUM_VALUE_MAX_CHARS as i64] },
                    false,
                ] };
                group.insert(
                    format!("{key}_svalues"),
                    doc! { "$addToSet": { "$cond": [short, &path, Bson::Null] } },
                );
            }
        }
        if s.doc.is_some() {
            group.insert(
                format!("{key}_docs"),
                doc! { "$sum": { "$cond": [is_type(&path, "object"), 1, 0] } },
            );
        }
        probes.push(Probe {
            key,
            segments: segments.clone(),
        });
        groups.push(group);
    }
    let worst: Vec<usize> = groups
        .iter()
        .map(|g| worst_case(g.keys().any(|k| k.ends_with("_svalues"))))
        .collect();
    let coll = collection(db, name, read);
    let mut counted = Document::new();
    for batch in batches(&worst, REPLY_BUDGET) {
        let mut group = doc! { "_id": Bson::Null };
        let mut cut = Document::new();
        for g in &groups[batch] {
            for (k, v) in g {
                if k.ends_with("_svalues") {
                    cut.insert(
                        k.clone(),
                        doc! { "$slice": [format!("${k}"), VALUE_CAP as i64 + 1] },
                    );
                }
                group.insert(k.clone(), v.clone());
            }
        }
        let mut pipeline = vec![doc! { "$group": group }];
        if !cut.is_empty() {
            pipeline.push(doc! { "$addFields": cut });
        }
        report.command("aggregate");
        let results: Vec<Document> = coll
            .aggregate(pipeline)
            .max_time(read.limit())
            .await?
            .try_collect()
            .await?;
        if let Some(reply) = results.into_iter().next() {
            report.largest_facts_reply = report
                .largest_facts_reply
                .max(mongodb::bson::to_vec(&reply).map_or(0, |bytes| bytes.len() as u64));
            counted.extend(reply);
        }
    }
    let facts = Facts {
        name: name.to_owned(),
        total,
        probes,
        counted,
    };
    facts.apply(shape);
    Ok(facts)
}

impl Facts {
    /// Puts the counts into `shape`; the exact paths, dotted from the collection name
    /// (`orders.items`).
    pub fn apply(&self, shape: &mut DocShape) -> BTreeSet<String> {
        let mut exact = BTreeSet::new();
        if self.counted.is_empty() {
            return exact;
        }
        shape.count = self.total;
        let (facts, name) = (&self.counted, &self.name);
        for probe in &self.probes {
            let get = |suffix: &str| -> Option<i64> {
                match facts.get(format!("{}_{suffix}", probe.key)) {
                    Some(Bson::Int32(v)) => Some(i64::from(*v)),
                    Some(Bson::Int64(v)) => Some(*v),
                    Some(Bson::Double(v)) => Some(*v as i64),
                    _ => None,
                }
            };
            let Some(field) = locate(shape, &probe.segments) else {
                continue;
            };
            if let Some(p) = get("p") {
                field.count = p as u64;
            }
            if let Some(n) = get("n") {
                field.nulls = n as u64;
            }
            if let Some(array) = field.array.as_mut() {
                if let (Some(max), Some(min)) = (get("amax"), get("amin")) {
                    array.max_len = max as u64;
                    array.min_len = min as u64;
                }
                if let Some(e) = get("aempty") {
                    array.empties = e as u64;
                }
            }
            if let (Some(r), Some(min), Some(max)) =
                (field.ints.as_mut(), get("intmin"), get("intmax"))
            {
                r.min = min;
                r.max = max;
            }
            if let (Some(r), Some(min), Some(max)) =
                (field.longs.as_mut(), get("longmin"), get("longmax"))
            {
                r.min = min;
                r.max = max;
            }
            if let Some(strings) = field.strings.as_mut() {
                if let Some(len) = get("slen") {
                    strings.max_len = len as u64;
                }
                // the values counted leave out strings too long for an enum: one such rules
                // the enum out
                let too_long = strings.max_len > ENUM_VALUE_MAX_CHARS;
                if let Some(c) = get("scount") {
                    strings.count = c as u64;
                }
                if let Ok(values) = facts.get_array(format!("{}_svalues", probe.key)) {
                    let values: Vec<&str> = values.iter().filter_map(Bson::as_str).collect();
                    strings.values = (values.len() <= VALUE_CAP && !too_long).then(|| {
                        let mut known = strings.values.take().unwrap_or_default();
                        let mut exact: BTreeMap<String, u64> = BTreeMap::new();
                        for v in values {
                            exact.insert(v.to_owned(), known.remove(v).unwrap_or(0));
                        }
                        exact
                    });
                }
            }
            if let (Some(d), Some(n)) = (field.doc.as_mut(), get("docs")) {
                d.count = n as u64;
            }
            exact.insert(format!("{name}.{}", probe.segments.join(".")));
        }
        exact
    }
}

fn locate<'a>(shape: &'a mut DocShape, segments: &[String]) -> Option<&'a mut Shape> {
    let (first, rest) = segments.split_first()?;
    let i = shape.fields.iter().position(|(n, _)| n == first)?;
    let field = &mut shape.fields[i].1;
    if rest.is_empty() {
        return Some(field);
    }
    locate(field.doc.as_deref_mut()?, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_keep_every_reply_within_the_budget() {
        // 2,000 enum candidates: one reply would be about 35 MB at worst
        let worst = vec![worst_case(true); 2000];
        assert!(worst.iter().sum::<usize>() > 16 * 1024 * 1024);
        let runs = batches(&worst, REPLY_BUDGET);
        assert!(runs.len() > 1);
        assert_eq!(runs.first().map(|r| r.start), Some(0));
        assert_eq!(runs.last().map(|r| r.end), Some(2000));
        for pair in runs.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for run in &runs {
            assert!(worst[run.clone()].iter().sum::<usize>() <= REPLY_BUDGET);
        }
        // the default --max-paths of plain numbers is one aggregation
        assert_eq!(
            batches(&vec![worst_case(false); 500], REPLY_BUDGET).len(),
            1
        );
        assert!(batches(&[], REPLY_BUDGET).is_empty());
    }
}
