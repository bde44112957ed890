//! The second pass: `$group` aggregations count, over every document of a collection, the
//! facts of each path the sample found outside arrays: presence, `null`s, the largest and
//! smallest `$size` of arrays and their empties, integer ranges, the longest string, and the
//! distinct values of enum candidates. The counts replace the sample's, and the path is marked
//! exact. Paths inside arrays keep the sample's facts; the gate then checks them on every document.
//!
//! A collection of more than a chunk ([`CHUNK`] documents unless told) is counted a run of `_id`s
//! at a time, in the `_id` index's order, so that the pass can say how far it is: each run's
//! upper `_id` is found by a covered read of the index (`$sort`, `$skip`, `$limit` on `_id`), and
//! the run is selected by `$expr` comparisons, which order every BSON type as the index does
//! (a query's `$gt` would compare within one type only) and which mongod serves from the index.
//! The runs' counts are merged: sums added, extremes kept, distinct values joined.
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

/// Documents one facts aggregation counts at most, unless told otherwise
/// ([`crate::config::PullConfig::facts_chunk`]).
pub const CHUNK: u64 = 100_000;

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

/// How a collection's facts are counted: the reads' options, the paths counted at most, and
/// the documents per aggregation, with what to call after each run (the documents counted so
/// far).
pub struct Counting<'a> {
    /// How to read.
    pub read: &'a ReadOptions,
    /// Paths counted at most.
    pub max_paths: usize,
    /// Documents one aggregation counts at most.
    pub chunk: u64,
    /// Called after each run of a collection counted in runs, with the documents counted.
    pub progress: &'a mut (dyn FnMut(u64) + Send),
}

/// Counts the facts of `shape` over every document of collection `name` and puts them into it.
pub async fn count(
    db: &Database,
    name: &str,
    total: u64,
    shape: &mut DocShape,
    counting: &mut Counting<'_>,
    report: &mut Report,
) -> mongodb::error::Result<Facts> {
    let (read, max_paths) = (counting.read, counting.max_paths);
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
    let runs = batches(&worst, REPLY_BUDGET);
    let mut counted = Document::new();
    if total <= counting.chunk {
        for batch in runs {
            if let Some(reply) = aggregate(&coll, None, &groups[batch], read, report).await? {
                counted.extend(reply);
            }
        }
    } else {
        // a run of `_id`s at a time, after the last one counted
        let mut after: Option<Bson> = None;
        let mut documents = 0u64;
        loop {
            let (upper, last) =
                run_end(&coll, after.as_ref(), counting.chunk, read, report).await?;
            let range = id_range(after.as_ref(), upper.as_ref());
            let mut run = Document::new();
            for batch in &runs {
                if let Some(reply) =
                    aggregate(&coll, Some(&range), &groups[batch.clone()], read, report).await?
                {
                    run.extend(reply);
                }
            }
            documents += match run.get("n") {
                Some(Bson::Int32(n)) => *n as u64,
                Some(Bson::Int64(n)) => *n as u64,
                _ => 0,
            };
            merge(&mut counted, run);
            (counting.progress)(documents);
            match upper {
                Some(upper) if !last => after = Some(upper),
                _ => break,
            }
        }
    }
    counted.remove("n");
    let facts = Facts {
        name: name.to_owned(),
        total,
        probes,
        counted,
    };
    facts.apply(shape);
    Ok(facts)
}

/// The `$group` (after `$match` of `range`, when given) of `groups`, with the documents it
/// counted as `n`; `None` when it matched none.
async fn aggregate(
    coll: &mongodb::Collection<Document>,
    range: Option<&Document>,
    groups: &[Document],
    read: &ReadOptions,
    report: &mut Report,
) -> mongodb::error::Result<Option<Document>> {
    let mut group = doc! { "_id": Bson::Null, "n": { "$sum": 1 } };
    let mut cut = Document::new();
    for g in groups {
        for (k, v) in g {
            if k.ends_with("_svalues") {
                // the `null` of the documents that hold no short string is no value: left
                // out before the cut, so that the cut keeps `VALUE_CAP` + 1 strings
                cut.insert(
                    k.clone(),
                    doc! { "$slice": [
                        { "$setDifference": [format!("${k}"), [Bson::Null]] },
                        VALUE_CAP as i64 + 1,
                    ] },
                );
            }
            group.insert(k.clone(), v.clone());
        }
    }
    let mut pipeline = Vec::new();
    if let Some(range) = range {
        pipeline.push(doc! { "$match": range.clone() });
    }
    pipeline.push(doc! { "$group": group });
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
    let Some(mut reply) = results.into_iter().next() else {
        return Ok(None);
    };
    report.largest_facts_reply = report
        .largest_facts_reply
        .max(mongodb::bson::to_vec(&reply).map_or(0, |bytes| bytes.len() as u64));
    reply.remove("_id");
    Ok(Some(reply))
}

/// The `_id` that ends the run of `chunk` documents after `after` (the first ones when `None`),
/// in the `_id` index's order, `None` when fewer remain (the run goes to the end); and whether
/// that run is the last (no document after its end). A covered read of the index on mongod.
async fn run_end(
    coll: &mongodb::Collection<Document>,
    after: Option<&Bson>,
    chunk: u64,
    read: &ReadOptions,
    report: &mut Report,
) -> mongodb::error::Result<(Option<Bson>, bool)> {
    let mut pipeline = Vec::new();
    if let Some(after) = after {
        pipeline.push(doc! { "$match": id_range(Some(after), None) });
    }
    pipeline.extend([
        doc! { "$sort": { "_id": 1 } },
        doc! { "$skip": chunk.saturating_sub(1).min(i64::MAX as u64) as i64 },
        // the end, and the one after it if any
        doc! { "$limit": 2 },
        doc! { "$project": { "_id": 1 } },
    ]);
    report.command("aggregate");
    let found: Vec<Document> = coll
        .aggregate(pipeline)
        .max_time(read.limit())
        .await?
        .try_collect()
        .await?;
    let last = found.len() < 2;
    Ok((
        found.into_iter().next().and_then(|mut d| d.remove("_id")),
        last,
    ))
}

/// `_id` after `after` and up to `upper` (each bound when given), as `$expr` compares: every
/// BSON type in the index's order, where a query's `$gt` compares within one type.
fn id_range(after: Option<&Bson>, upper: Option<&Bson>) -> Document {
    let mut terms = Vec::new();
    if let Some(after) = after {
        terms.push(Bson::Document(
            doc! { "$gt": ["$_id", { "$literal": after.clone() }] },
        ));
    }
    if let Some(upper) = upper {
        terms.push(Bson::Document(
            doc! { "$lte": ["$_id", { "$literal": upper.clone() }] },
        ));
    }
    match terms.len() {
        0 => doc! {},
        1 => doc! { "$expr": terms.remove(0) },
        _ => doc! { "$expr": { "$and": terms } },
    }
}

fn number(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) => Some(*v as i64),
        _ => None,
    }
}

/// Merges one run's counts into the collection's: counts (`_p`, `_n`, `_aempty`, `_scount`,
/// `_docs`, `n`) added, maxima and minima kept, the distinct values of an enum candidate
/// joined (at most [`VALUE_CAP`] + 1, as one reply holds them).
fn merge(into: &mut Document, run: Document) {
    for (key, value) in run {
        let Some(old) = into.get(&key) else {
            into.insert(key, value);
            continue;
        };
        let suffix = key.rsplit('_').next().unwrap_or("");
        let merged = if key == "n" || ["p", "n", "aempty", "scount", "docs"].contains(&suffix) {
            Bson::Int64(number(old).unwrap_or(0) + number(&value).unwrap_or(0))
        } else if suffix == "svalues" {
            let mut values: Vec<Bson> = match old {
                Bson::Array(values) => values.clone(),
                _ => Vec::new(),
            };
            if let Bson::Array(more) = value {
                for v in more {
                    if values.len() > VALUE_CAP {
                        break;
                    }
                    if v != Bson::Null && !values.contains(&v) {
                        values.push(v);
                    }
                }
            }
            Bson::Array(values)
        } else {
            let keep_max = suffix.ends_with("max") || suffix == "slen";
            match (number(old), number(&value)) {
                (Some(a), Some(b)) => Bson::Int64(if keep_max { a.max(b) } else { a.min(b) }),
                (None, Some(_)) => value,
                _ => old.clone(),
            }
        };
        into.insert(key, merged);
    }
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
    fn runs_merge_into_the_counts_of_one_aggregation() {
        let mut counted = Document::new();
        merge(
            &mut counted,
            doc! { "n": 64, "f0_p": 60, "f0_n": 2, "f0_amax": 3, "f0_amin": 1, "f0_intmin": Bson::Null,
            "f0_slen": 5_i64, "f0_svalues": ["open", "closed"] },
        );
        merge(
            &mut counted,
            doc! { "n": 8, "f0_p": 8, "f0_n": 0_i64, "f0_amax": 7, "f0_amin": 0, "f0_intmin": -5,
            "f0_slen": 3, "f0_svalues": ["closed", "archived"] },
        );
        assert_eq!(
            counted,
            doc! { "n": 72_i64, "f0_p": 68_i64, "f0_n": 2_i64, "f0_amax": 7_i64, "f0_amin": 0_i64,
            "f0_intmin": -5, "f0_slen": 5_i64, "f0_svalues": ["open", "closed", "archived"] }
        );
        // distinct values stop one past the cap, as one reply's `$slice` does
        let many = |from: usize| {
            Bson::Array(
                (from..from + VALUE_CAP)
                    .map(|i| Bson::String(format!("v{i}")))
                    .collect(),
            )
        };
        let mut counted = doc! { "f1_svalues": many(0) };
        // a `null` (a document with no short string) is no value, and takes no place
        let mut more = many(VALUE_CAP);
        if let Bson::Array(values) = &mut more {
            values.insert(0, Bson::Null);
        }
        merge(&mut counted, doc! { "f1_svalues": more });
        let values = counted.get_array("f1_svalues").unwrap();
        assert_eq!(values.len(), VALUE_CAP + 1);
        assert!(values.iter().all(|v| v.as_str().is_some()), "{values:?}");
    }

    #[test]
    fn a_run_of_ids_is_compared_as_expressions_do() {
        assert_eq!(id_range(None, None), doc! {});
        assert_eq!(
            id_range(None, Some(&Bson::Int32(9))),
            doc! { "$expr": { "$lte": ["$_id", { "$literal": 9 }] } }
        );
        assert_eq!(
            id_range(Some(&Bson::Int32(9)), Some(&Bson::String("s".into()))),
            doc! { "$expr": { "$and": [
                { "$gt": ["$_id", { "$literal": 9 }] },
                { "$lte": ["$_id", { "$literal": "s" }] },
            ] } }
        );
    }

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
