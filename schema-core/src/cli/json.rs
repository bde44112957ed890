//! Each command's result as a table and as the documented JSON (see [`super::SchemaCommand`]).

use std::fmt::Write as _;

use mongodb::bson::Bson;
use serde_json::{json, Value};

use super::{table, Exit, Output};
use crate::deploy::report::{relationships, warnings};
use crate::query::{ProofReport, SortVerdict};
use crate::{
    Action, ApplyReport, AuditReport, Plan, ReconcileReport, RetryReport, Schema, SizeBound,
};

/// The `kind` of an action in JSON.
fn action_kind(action: &Action) -> &'static str {
    match action {
        Action::CreateCollection { .. } => "create_collection",
        Action::ModifyTimeSeries { .. } => "modify_timeseries",
        Action::UpdateValidator { .. } => "update_validator",
        Action::CreateIndexes { .. } => "create_indexes",
        Action::DropIndex { .. } => "drop_index",
        Action::ShardCollection { .. } => "shard_collection",
        Action::EnablePreImages { .. } => "enable_pre_images",
    }
}

/// An action's text on one line (the indexes of `create_indexes` separated by `; `).
fn one_line(action: &Action) -> String {
    action
        .to_string()
        .replacen(":\n    ", ": ", 1)
        .replace("\n    ", "; ")
}

/// A BSON value as relaxed extended JSON.
pub(crate) fn bson(value: &Bson) -> Value {
    value.clone().into_relaxed_extjson()
}

pub(crate) fn plan(plan: &Plan) -> Output {
    let work = !plan.is_empty();
    let missing = &plan.missing;
    // apply (with these options and no `--allow-downgrade`) would refuse, or leave part of the
    // declared state off the server
    let downgrade = plan
        .version
        .as_ref()
        .is_some_and(crate::VersionStatus::is_downgrade);
    let refused_over = plan.warnings.iter().find(|w| w.refuses_apply());
    let refuses = downgrade || refused_over.is_some();
    let mut text = String::new();
    if let Some(version) = &plan.version {
        let _ = writeln!(text, "{version}");
    }
    if work {
        let mut rows = vec![vec![
            "#".to_owned(),
            "collection".to_owned(),
            "action".to_owned(),
        ]];
        for (i, action) in plan.actions.iter().enumerate() {
            rows.push(vec![
                (i + 1).to_string(),
                action.collection().to_owned(),
                one_line(action),
            ]);
        }
        for step in &plan.migrations {
            rows.push(vec![
                (rows.len()).to_string(),
                step.collection.clone(),
                step.to_string(),
            ]);
        }
        text.push_str(&table(&rows));
        let _ = writeln!(
            text,
            "{} action(s), {} migration step(s) pending: {}",
            plan.actions.len(),
            plan.migrations.len(),
            if refused_over.is_some() {
                "`apply` refuses them all (below)"
            } else if downgrade {
                "`apply` refuses them unless `--allow-downgrade`"
            } else {
                "run `apply`"
            }
        );
    } else if refuses || !missing.is_empty() {
        // never "matches" beside a line that says what is not on the server
        text.push_str(
            "nothing apply would write, but the database differs from the schema (below)\n",
        );
    } else {
        text.push_str("nothing to do: the database matches the schema\n");
    }
    for warning in &plan.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    if refused_over.is_some() {
        let _ = writeln!(
            text,
            "apply would refuse and write nothing ({}): the warning above says what to do first",
            crate::terms::REFUSED
        );
    } else if !missing.is_empty() {
        let _ = writeln!(
            text,
            "{}",
            crate::deploy::plan::missing_after_apply(missing)
        );
    }
    Output {
        text,
        code: if refuses || !missing.is_empty() {
            Exit::NotAsDeclared
        } else if work {
            Exit::Attention
        } else {
            Exit::Done
        },
        json: json!({
            "work": work,
            "refuses": refuses,
            "missing": missing,
            "version": plan.version.as_ref().map(ToString::to_string),
            "actions": plan.actions.iter().map(|a| json!({
                "kind": action_kind(a),
                "collection": a.collection(),
                "summary": a.to_string(),
            })).collect::<Vec<_>>(),
            "migrations": plan.migrations.iter().map(|m| json!({
                "version": m.version,
                "name": m.name,
                "description": m.description,
                "collection": m.collection,
                "documents": m.documents,
                "recorded": m.recorded.map(|s| s.to_string()),
            })).collect::<Vec<_>>(),
            "warnings": plan.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }),
    }
}

pub(crate) fn apply(report: &ApplyReport) -> Output {
    let mut text = String::new();
    if let Some(line) = report.version_line() {
        let _ = writeln!(text, "{line}");
    }
    // one line per action and per migration step, in the order apply ran them
    let total = report.applied.len() + report.migrations.len();
    for (i, entry) in report.in_order().into_iter().enumerate() {
        let n = i + 1;
        match entry {
            crate::RanEntry::Action(applied) => {
                let _ = writeln!(
                    text,
                    "[{n}/{total}] {}{}",
                    one_line(&applied.action),
                    if applied.done_concurrently {
                        " (already done by another instance)"
                    } else {
                        ""
                    }
                );
            }
            crate::RanEntry::Step(step) => {
                let _ = writeln!(text, "[{n}/{total}] {step}");
            }
        }
    }
    let serving_on = matches!(
        &report.version,
        Some(crate::VersionStatus::Downgrade { .. }) if !report.recorded
    );
    if total == 0 && !serving_on {
        if report.is_as_declared() {
            text.push_str("schema up to date: nothing written\n");
        } else {
            // the record may still be written (`partial`): no collection or index changed
            text.push_str("no collection, validator or index changed\n");
        }
    }
    for note in &report.notes {
        let _ = writeln!(text, "note: {note}");
    }
    for warning in &report.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    if !report.is_as_declared() {
        let _ = writeln!(
            text,
            "NOT AS DECLARED: {} not on the server; the version is recorded `partial`, not `applied` (exit 3)",
            report.missing.join("; ")
        );
    }
    Output {
        text,
        code: if report.is_as_declared() {
            Exit::Done
        } else {
            Exit::NotAsDeclared
        },
        json: json!({
            "noop": report.is_noop(),
            "as_declared": report.is_as_declared(),
            "missing": report.missing,
            "version": report.version.as_ref().map(ToString::to_string),
            "recorded": report.recorded,
            "actions": report.applied.iter().map(|a| json!({
                "kind": action_kind(&a.action),
                "collection": a.action.collection(),
                "summary": a.action.to_string(),
                "done_concurrently": a.done_concurrently,
            })).collect::<Vec<_>>(),
            "migrations": report.migrations.iter().map(|m| json!({
                "version": m.version,
                "name": m.name,
                "description": m.description,
                "matched": m.counts.matched,
                "changed": m.counts.changed,
                "resumed": m.resumed,
            })).collect::<Vec<_>>(),
            "notes": report.notes,
            "warnings": report.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }),
    }
}

pub(crate) fn audit(report: &AuditReport) -> Output {
    let clean = report.is_clean();
    let mut rows = vec![[
        "collection",
        "documents",
        "largest",
        "invalid",
        "near bound",
        "index differences",
        "validator",
    ]
    .map(str::to_owned)
    .to_vec()];
    for c in &report.collections {
        if !c.exists {
            rows.push(vec![
                c.collection.clone(),
                "missing".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
            continue;
        }
        let differences =
            c.missing_indexes.len() + c.unexpected_indexes.len() + c.conflicting_indexes.len();
        rows.push(vec![
            c.collection.clone(),
            c.documents.to_string(),
            c.largest
                .first()
                .map_or("-".to_owned(), |(_, bytes)| crate::human_bytes(*bytes)),
            c.invalid.count.to_string(),
            c.arrays_near_bound.len().to_string(),
            differences.to_string(),
            if c.validator_differs.is_some() {
                "differs"
            } else {
                "as declared"
            }
            .to_owned(),
        ]);
    }
    let mut text = table(&rows);
    let _ = writeln!(
        text,
        "{}",
        if clean {
            "clean: nothing to fix".to_owned()
        } else {
            format!("not clean:\n{report}")
        }
    );
    Output {
        text,
        code: if clean { Exit::Done } else { Exit::Attention },
        json: json!({
            "clean": clean,
            "collections": report.collections.iter().map(|c| json!({
                "collection": c.collection,
                "exists": c.exists,
                "documents": c.documents,
                "largest_bytes": c.largest.first().map(|(_, b)| *b),
                "oversized": c.oversized.len(),
                "arrays_near_bound": c.arrays_near_bound.iter().map(|a| json!({
                    "path": a.path, "max": a.max, "documents": a.documents,
                })).collect::<Vec<_>>(),
                "invalid": c.invalid.count,
                "missing_indexes": c.missing_indexes,
                "unexpected_indexes": c.unexpected_indexes,
                "conflicting_indexes": c.conflicting_indexes,
                "validator_differs": c.validator_differs,
            })).collect::<Vec<_>>(),
            "unknown_collections": report.unknown_collections,
            "parts": report.parts.iter().map(|p| json!({
                "part": p.part, "owner": p.owner, "optional": p.optional,
                "orphans": p.orphans, "owners_without_part": p.owners_without_part,
            })).collect::<Vec<_>>(),
            "children": report.children.iter().map(|c| json!({
                "parent": c.parent, "child": c.child, "field": c.field, "kept_by": c.kept_by,
                "missing_parent": c.missing_parent,
            })).collect::<Vec<_>>(),
            "drifted": report.drift.drifted(),
        }),
    }
}

pub(crate) fn reconcile(report: &ReconcileReport, repair: bool) -> Output {
    let mut rows = vec![[
        "copy or subset",
        "strategy",
        "checked",
        "drifted",
        "repaired",
        "failed",
    ]
    .map(str::to_owned)
    .to_vec()];
    for e in &report.edges {
        rows.push(vec![
            e.copy.clone(),
            e.strategy.map_or("-".to_owned(), |s| s.to_string()),
            e.checked.to_string(),
            e.drifted.to_string(),
            e.repaired.to_string(),
            e.failed.to_string(),
        ]);
    }
    for s in &report.subsets {
        rows.push(vec![
            s.subset.clone(),
            s.strategy.map_or("-".to_owned(), |s| s.to_string()),
            s.checked.to_string(),
            s.drifted.to_string(),
            s.repaired.to_string(),
            "-".to_owned(),
        ]);
    }
    // orphan parts: found (drifted) and deleted (repaired)
    for p in &report.parts {
        rows.push(vec![
            format!("{} (orphan parts of {})", p.part, p.owner),
            "-".to_owned(),
            "-".to_owned(),
            p.orphans.to_string(),
            p.deleted.to_string(),
            "-".to_owned(),
        ]);
    }
    let mut text = table(&rows);
    let drifted = report.drifted();
    let _ = writeln!(
        text,
        "{drifted} drifted, {} repaired{}",
        report.repaired(),
        if repair || drifted == 0 {
            ""
        } else {
            " (a dry run: `reconcile --repair` rewrites them)"
        }
    );
    Output {
        text,
        // a dry run that found drift, or repairs that failed
        code: if (!repair && drifted > 0) || report.edges.iter().any(|e| e.failed > 0) {
            Exit::Attention
        } else {
            Exit::Done
        },
        json: json!({
            "repair": repair,
            "drifted": drifted,
            "repaired": report.repaired(),
            "copies": report.edges.iter().map(|e| json!({
                "copy": e.copy,
                "strategy": e.strategy.map(|s| s.to_string()),
                "checked": e.checked,
                "drifted": e.drifted,
                "repaired": e.repaired,
                "missing_sources": e.missing_sources,
                "missing_copies": e.missing_copies,
                "failed": e.failed,
                "recorded_failures": e.recorded_failures,
            })).collect::<Vec<_>>(),
            "subsets": report.subsets.iter().map(|s| json!({
                "subset": s.subset,
                "checked": s.checked,
                "drifted": s.drifted,
                "repaired": s.repaired,
            })).collect::<Vec<_>>(),
            "parts": report.parts.iter().map(|p| json!({
                "part": p.part,
                "owner": p.owner,
                "orphans": p.orphans,
                "deleted": p.deleted,
            })).collect::<Vec<_>>(),
        }),
    }
}

pub(crate) fn retry(report: &RetryReport) -> Output {
    Output {
        text: format!("{report}\n"),
        code: if report.still_failing > 0 {
            Exit::Attention
        } else {
            Exit::Done
        },
        json: json!({
            "retried": report.retried,
            "resolved": report.resolved,
            "still_failing": report.still_failing,
            "unknown_copies": report.unknown_copies,
        }),
    }
}

pub(crate) fn prove(report: &ProofReport) -> Output {
    let failed = report.failures().count();
    let mut rows = vec![["", "collection", "query", "index", "sort"]
        .map(str::to_owned)
        .to_vec()];
    for q in &report.queries {
        rows.push(vec![
            // an `ok` the server's plan does not show by itself (a collection scan that this
            // server runs where mongod walks the index) carries its reason below the table
            match (&q.failure, &q.note) {
                (Some(_), _) => "FAIL",
                (None, Some(_)) => "ok (note)",
                (None, None) => "ok",
            }
            .to_owned(),
            q.collection.clone(),
            q.query.clone(),
            if q.collscan {
                "COLLSCAN".to_owned()
            } else {
                q.used_indexes.join(", ")
            },
            match q.sort {
                SortVerdict::InIndexOrder => "index order",
                SortVerdict::BlockingSort => "BLOCKING SORT",
                SortVerdict::UnknownOnThisServer => "not provable here",
            }
            .to_owned(),
        ]);
    }
    let mut text = table(&rows);
    for q in report.queries.iter().filter(|q| q.failure.is_none()) {
        if let Some(note) = &q.note {
            let _ = writeln!(text, "note {}.{}: {note}", q.collection, q.query);
        }
    }
    for q in report.failures() {
        let _ = writeln!(
            text,
            "FAIL {}.{}: {}",
            q.collection,
            q.query,
            q.failure.as_deref().unwrap_or_default()
        );
    }
    let _ = writeln!(
        text,
        "{} queries, {failed} not served as declared",
        report.queries.len()
    );
    Output {
        text,
        code: if failed > 0 {
            Exit::Attention
        } else {
            Exit::Done
        },
        json: json!({
            "sorts_in_memory": report.sorts_in_memory,
            "queries": report.queries.iter().map(|q| json!({
                "collection": q.collection,
                "query": q.query,
                "declared": q.declared,
                "expected_index": q.expected_index,
                "used_indexes": q.used_indexes,
                "collscan": q.collscan,
                "covered": q.covered,
                "failure": q.failure,
                "note": q.note,
            })).collect::<Vec<_>>(),
        }),
    }
}

/// The worst-case size of a collection's documents.
pub(crate) fn size_bound(spec: &crate::CollectionSpec) -> SizeBound {
    SizeBound::of(
        &spec
            .validator
            .get_document("$jsonSchema")
            .cloned()
            .unwrap_or_default(),
    )
}

/// `report --format json`.
pub(crate) fn report(schema: &Schema) -> Value {
    json!({
        "collections": schema.collections().iter().map(|spec| {
            let bound = size_bound(spec);
            json!({
                "name": spec.name,
                "worst_case_bytes": bound.bytes,
                "worst_case_bounded": bound.is_known(),
                "unbounded": bound.unbounded,
                "indexes": spec.indexes.iter().map(|i| json!({
                    "name": i.name,
                    "keys": bson(&Bson::Document(i.keys.clone())),
                    "reasons": i.reasons.iter().map(ToString::to_string).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "embeds": spec.embeds.iter().map(|e| json!({
                    "path": e.path, "max": e.max, "element_type": e.element_type,
                })).collect::<Vec<_>>(),
                "references": spec.references.iter().map(|r| json!({
                    "field": r.field, "target": r.target, "max": r.max,
                })).collect::<Vec<_>>(),
                "copies": spec.copies.iter().map(|c| json!({
                    "path": c.path, "source": c.source, "fields": c.fields,
                    "strategy": c.strategy.to_string(),
                })).collect::<Vec<_>>(),
                "same_id_as": spec.part_of.as_ref().map(|p| json!({
                    "owner": p.owner, "optional": p.optional,
                })),
                "subsets": spec.subsets.iter().map(|s| json!({
                    "path": s.path, "child": s.child, "max": s.max,
                    "counter": s.is_counter(),
                    "strategy": s.strategy.to_string(),
                })).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
        "relationships": relationships(schema).iter().map(|r| json!({
            "holder": r.holder,
            "path": r.path,
            "outcome": r.outcome,
            "other": r.other,
            "bound": r.bound,
            "read_path": r.read_path,
            "copies": r.copies,
            "atomicity": r.atomicity,
            "routing": r.routing,
        })).collect::<Vec<_>>(),
        "warnings": warnings(schema),
    })
}

/// `report --format text`: the collections, the relationships, the warnings.
pub(crate) fn report_text(schema: &Schema) -> String {
    let mut rows = vec![[
        "collection",
        "worst case",
        "of 16 MiB",
        "indexes",
        "relationships held",
    ]
    .map(str::to_owned)
    .to_vec()];
    let all = relationships(schema);
    for spec in schema.collections() {
        let bound = size_bound(spec);
        let worst = if bound.is_known() {
            crate::human_bytes(bound.bytes)
        } else {
            format!(
                ">= {}, unbounded: {}",
                crate::human_bytes(bound.bytes),
                bound
                    .unbounded
                    .iter()
                    .map(|u| u.split('`').nth(1).unwrap_or(u))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        rows.push(vec![
            spec.name.clone(),
            worst,
            format!(
                "{:.2}%",
                bound.bytes as f64 / crate::MAX_DOCUMENT_BYTES as f64 * 100.0
            ),
            (spec.indexes.len() + 1).to_string(),
            all.iter()
                .filter(|r| r.holder == spec.name)
                .count()
                .to_string(),
        ]);
    }
    let mut out = table(&rows);
    out.push('\n');
    let mut rows = vec![["holder.path", "outcome", "other side", "copies"]
        .map(str::to_owned)
        .to_vec()];
    for r in &all {
        rows.push(vec![
            format!("{}.{}", r.holder, r.path),
            r.outcome.to_owned(),
            r.other.replace('`', ""),
            r.copies.replace('`', ""),
        ]);
    }
    out.push_str(&table(&rows));
    for warning in warnings(schema) {
        let _ = writeln!(out, "warning: {}", warning.replace('`', ""));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::QueryProof;

    fn proof(query: &str, collscan: bool, note: Option<&str>) -> QueryProof {
        QueryProof {
            collection: "events".to_owned(),
            query: query.to_owned(),
            declared: true,
            expected_index: Some("starts_at_1".to_owned()),
            used_indexes: if collscan {
                Vec::new()
            } else {
                vec!["starts_at_1".to_owned()]
            },
            sort: SortVerdict::InIndexOrder,
            collscan,
            covered: false,
            max_scans_to_explode_reached: false,
            facts: Default::default(),
            failure: None,
            note: note.map(str::to_owned),
        }
    }

    #[test]
    fn an_ok_beside_a_collection_scan_says_why() {
        let why = "a collection scan and a sort: this server walks no index for an order alone, where mongod walks `starts_at_1`";
        let report = ProofReport {
            sorts_in_memory: true,
            queries: vec![
                proof("upcoming", true, Some(why)),
                proof("by_venue", false, None),
            ],
        };
        let text = prove(&report).text;
        let lines: Vec<&str> = text.lines().collect();
        let scanned = lines.iter().find(|l| l.contains("upcoming")).unwrap();
        // display-text: the table's verdict column beside a COLLSCAN
        assert!(
            scanned.starts_with("ok (note)") && scanned.contains("COLLSCAN"),
            "{text}"
        );
        // display-text: the reason, printed in the text and not only in `--json`
        assert!(
            text.contains(&format!("note events.upcoming: {why}")),
            "{text}"
        );
        // positive control: a query served by its index is a plain `ok`, with no note
        let served = lines.iter().find(|l| l.contains("by_venue")).unwrap();
        assert!(
            served.starts_with("ok ") && !served.starts_with("ok (note)"),
            "{text}"
        );
        assert!(!text.contains("note events.by_venue"), "{text}");
    }
}
