//! A readable summary of `explain` output: which plan stages and indexes served a query.

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use crate::error::Result;

/// What the server did for a query, from `explain` with `executionStats`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ExplainSummary {
    /// Plan stages, outermost first (`FETCH`, `IXSCAN`, `SORT`, `COLLSCAN`, ...).
    pub stages: Vec<String>,
    /// Names of the indexes scanned.
    pub indexes: Vec<String>,
    /// `executionStats.nReturned`.
    pub returned: i64,
    /// `executionStats.totalKeysExamined`.
    pub keys_examined: i64,
    /// `executionStats.totalDocsExamined`.
    pub docs_examined: i64,
}

impl ExplainSummary {
    /// Whether an index served the query and no collection scan happened.
    pub fn uses_index(&self) -> bool {
        !self.stages.iter().any(|s| s == "COLLSCAN")
            && self
                .stages
                .iter()
                .any(|s| s.contains("IXSCAN") || s == "IDHACK" || s == "EXPRESS_IXSCAN")
    }

    /// Reads an `explain` reply (a `find`, or the first `$cursor` stage of an `aggregate`).
    pub fn from_reply(reply: &Document) -> ExplainSummary {
        let cursor = reply
            .get_array("stages")
            .ok()
            .and_then(|stages| stages.first())
            .and_then(Bson::as_document)
            .and_then(|stage| stage.get_document("$cursor").ok());
        let source = cursor.unwrap_or(reply);
        let mut summary = ExplainSummary::default();
        if let Ok(plan) = source
            .get_document("queryPlanner")
            .and_then(|p| p.get_document("winningPlan"))
        {
            let plan = plan.get_document("queryPlan").unwrap_or(plan);
            walk(plan, &mut summary);
        }
        if let Ok(stats) = source.get_document("executionStats") {
            let number = |key: &str| match stats.get(key) {
                Some(Bson::Int32(v)) => i64::from(*v),
                Some(Bson::Int64(v)) => *v,
                Some(Bson::Double(v)) => *v as i64,
                _ => 0,
            };
            summary.returned = number("nReturned");
            summary.keys_examined = number("totalKeysExamined");
            summary.docs_examined = number("totalDocsExamined");
        }
        summary
    }
}

fn walk(stage: &Document, summary: &mut ExplainSummary) {
    if let Ok(name) = stage.get_str("stage") {
        summary.stages.push(name.to_owned());
    }
    if let Ok(index) = stage.get_str("indexName") {
        summary.indexes.push(index.to_owned());
    }
    if let Ok(input) = stage.get_document("inputStage") {
        walk(input, summary);
    }
    if let Ok(inputs) = stage.get_array("inputStages") {
        for input in inputs.iter().filter_map(Bson::as_document) {
            walk(input, summary);
        }
    }
}

impl std::fmt::Display for ExplainSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} via {} ({} returned, {} keys and {} documents examined)",
            self.stages.join(" <- "),
            if self.indexes.is_empty() {
                "no index".to_owned()
            } else {
                self.indexes.join(", ")
            },
            self.returned,
            self.keys_examined,
            self.docs_examined
        )
    }
}

/// Runs `explain` (verbosity `executionStats`) on a command such as those returned by
/// `find_command`, `aggregate_command` or `resolve_command`.
///
/// # Errors
///
/// The driver's error when the server refuses the command (an unknown collection is no error:
/// an empty plan).
pub async fn explain(db: &Database, command: Document) -> Result<ExplainSummary> {
    let reply = db
        .run_command(doc! { "explain": command, "verbosity": "executionStats" })
        .await?;
    Ok(ExplainSummary::from_reply(&reply))
}
