//! The gate: every document of every collection against the validators about to be written,
//! twice over: the server's `$nor: [{ $jsonSchema }]` count, and mongo-schema's
//! `LocalValidator` (mongod's semantics, evaluated here) over a scan of every document. It also
//! asks `Schema::build` whether mongod 7/8 would take each validator at all. What fails comes
//! back as documents, which `pull` joins into the shape before it decides again.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

use futures_util::TryStreamExt;
use mongo_schema_core::{CollectionSpec, LocalValidator, Schema};
use mongodb::bson::{doc, Document, RawDocumentBuf};
use mongodb::Database;

use crate::report::Report;
use crate::sample::{collection, ReadOptions};

/// Failing documents kept per collection and round unless told otherwise (enough to widen; the
/// counts are exact).
pub const FAILURES_KEPT: usize = 2000;

/// What one collection's check found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Documents the server counted failing.
    pub server: u64,
    /// Documents the local validator found failing.
    pub local: u64,
    /// Up to `keep` ([`FAILURES_KEPT`] by default) failing documents, to widen from.
    pub failing: Vec<Document>,
    /// `path: rule` of the local failures, with how many documents failed each.
    pub rules: BTreeMap<String, u64>,
}

impl Checked {
    /// Whether the validator passed: both counts are zero. The documents kept are only what
    /// the next round widens from; none kept (a cap of 0, a document that could not be read
    /// back) says nothing about the counts.
    pub fn passes(&self) -> bool {
        self.server == 0 && self.local == 0
    }
}

/// mongod's `$jsonSchema` rules for each validator (`Schema::build` checks them): the problems.
pub fn mongod_problems(validators: &[(String, Document)]) -> Vec<String> {
    let mut builder = Schema::new();
    for (name, validator) in validators {
        builder = builder.collection(CollectionSpec::new(name.clone(), validator.clone()));
    }
    match builder.build() {
        Ok(_) => Vec::new(),
        Err(e) => vec![e.to_string()],
    }
}

/// Checks one collection's documents against `validator`, keeping up to `keep` failing ones.
pub async fn check(
    db: &Database,
    name: &str,
    total: u64,
    validator: &Document,
    read: &ReadOptions,
    keep: usize,
    report: &mut Report,
) -> Result<Checked, String> {
    let local = LocalValidator::new(validator).map_err(|e| format!("`{name}`: {e}"))?;
    let coll = collection(db, name, read);
    let mut checked = Checked::default();
    report.command("aggregate");
    checked.server = coll
        .count_documents(doc! { "$nor": [validator.clone()] })
        .max_time(read.limit())
        .await
        .map_err(|e| format!("`{name}`: the server's count failed: {e}"))?;
    report.command("find");
    let raw = coll.clone_with_type::<RawDocumentBuf>();
    let mut cursor = raw
        .find(doc! {})
        .batch_size(1000)
        .max_time(read.limit())
        .await
        .map_err(|e| format!("`{name}`: {e}"))?;
    let progress = std::io::stderr().is_terminal() && total >= 10_000;
    let mut seen = 0u64;
    while let Some(document) = cursor
        .try_next()
        .await
        .map_err(|e| format!("`{name}`: {e}"))?
    {
        seen += 1;
        if progress && seen.is_multiple_of(5000) {
            bar(name, seen, total);
        }
        if let Err(error) = local.check_raw(&document) {
            checked.local += 1;
            for failure in &error.failures {
                *checked
                    .rules
                    .entry(format!("{}: {}", failure.path, failure.rule))
                    .or_default() += 1;
            }
            if checked.failing.len() < keep {
                if let Ok(d) = Document::try_from(document.as_ref()) {
                    checked.failing.push(d);
                }
            }
        }
    }
    if progress {
        bar(name, seen, total);
        eprintln!();
    }
    if checked.server > 0 && checked.local == 0 && keep > 0 {
        // the server refuses what the local evaluation accepts: widen from the server's own
        report.command("find");
        let refused: Vec<Document> = coll
            .find(doc! { "$nor": [validator.clone()] })
            .limit(keep as i64)
            .max_time(read.limit())
            .await
            .map_err(|e| format!("`{name}`: {e}"))?
            .try_collect()
            .await
            .map_err(|e| format!("`{name}`: {e}"))?;
        checked.failing.extend(refused);
    }
    if checked.server > 0 && checked.local == 0 {
        *checked
            .rules
            .entry("(refused by the server only)".to_owned())
            .or_default() += checked.server;
    }
    Ok(checked)
}

fn bar(name: &str, seen: u64, total: u64) {
    let width = 30usize;
    let done = ((seen as f64 / total.max(1) as f64) * width as f64) as usize;
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r{name}: [{}{}] {seen}/{total}",
        "#".repeat(done.min(width)),
        " ".repeat(width - done.min(width))
    );
    let _ = err.flush();
}
