//! The live audit: what in the database is growing toward its limits or has left the schema.

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::action::Action as _;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;

use super::observe::Violations;
use super::plan::{Action, Plan, PlanOptions, Warning};
use crate::concern::OPERATOR_TIME_LIMIT as LIMIT;
use crate::{human_bytes, ReconcileReport, Result, Schema, MAX_DOCUMENT_BYTES};

/// An array at or above 80% of its bound is reported.
const PRESSURE: f64 = 0.8;
const SAMPLES: i64 = 5;

/// What [`Schema::audit`] found.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AuditReport {
    /// One entry per collection of the schema.
    pub collections: Vec<CollectionAudit>,
    /// Collections in the database that the schema does not know (the library's own: sync
    /// tokens, sync failures and the version record, aside).
    pub unknown_collections: Vec<String>,
    /// Copies that drifted from their source, and subsets that disagree with their children (a
    /// reconcile dry run).
    pub drift: ReconcileReport,
    /// Every part collection (`same_id_as`) against its owners: orphan parts, and owners
    /// without their required part.
    pub parts: Vec<PartAudit>,
    /// Every relationship of a `#[subset]` or `#[counter]` (parent, child, the child's field
    /// holding the parent's `_id`) against its parents: the children whose parent does not
    /// exist, shown and counted nowhere.
    pub children: Vec<ChildAudit>,
}

/// The children of one relationship kept by subsets or counters whose parent does not exist.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ChildAudit {
    /// The parents' collection.
    pub parent: String,
    /// The children's collection.
    pub child: String,
    /// The child's stored path holding the parent's `_id`.
    pub field: String,
    /// The subsets and counters that keep this relationship (`parents.path`).
    pub kept_by: Vec<String>,
    /// Children whose parent does not exist (or that hold no parent id).
    pub missing_parent: u64,
    /// The first such children's `_id`s (at most 5).
    pub missing_parent_ids: Vec<Bson>,
}

impl ChildAudit {
    /// Whether every child has its parent.
    pub fn is_clean(&self) -> bool {
        self.missing_parent == 0
    }
}

/// A part collection (`#[collection(same_id_as = Owner)]`) against its owners' collection.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct PartAudit {
    /// The part collection.
    pub part: String,
    /// The owners' collection.
    pub owner: String,
    /// Whether an owner may have no part (`optional_part`).
    pub optional: bool,
    /// Parts whose owner does not exist (orphans: `schema.reconcile` deletes them, as does
    /// `schema.delete_source::<Owner>` of their `_id`).
    pub orphans: u64,
    /// The first orphans' `_id`s (at most 5).
    pub orphan_ids: Vec<Bson>,
    /// Owners without their part (0 for an optional part, whose owners are not counted).
    pub owners_without_part: u64,
    /// The first such owners' `_id`s (at most 5).
    pub owners_without_part_ids: Vec<Bson>,
}

impl PartAudit {
    /// Whether every part has its owner and every owner its required part.
    pub fn is_clean(&self) -> bool {
        self.orphans == 0 && self.owners_without_part == 0
    }
}

/// The audit of one collection.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CollectionAudit {
    /// Collection name.
    pub collection: String,
    /// Whether it exists.
    pub exists: bool,
    /// Number of documents.
    pub documents: u64,
    /// Of a whole-document enum (several kinds of document, each named by a tag), the number of
    /// documents of each kind: `kind = "login"` and its count; empty for one kind.
    pub kinds: Vec<(String, u64)>,
    /// The largest documents: `_id` and `$bsonSize`.
    pub largest: Vec<(Bson, u64)>,
    /// Documents larger than the audit's threshold.
    pub oversized: Vec<(Bson, u64)>,
    /// Arrays at or above 80% of their bound.
    pub arrays_near_bound: Vec<ArrayPressure>,
    /// Documents the declared validator rejects (whatever validator the server has: one
    /// refused over them, or an older version's after a rollback, lets them stay).
    pub invalid: Violations,
    /// Indexes of the schema the server lacks (names).
    pub missing_indexes: Vec<String>,
    /// Indexes on the server the schema does not declare (names).
    pub unexpected_indexes: Vec<String>,
    /// Indexes whose options or names differ.
    pub conflicting_indexes: Vec<String>,
    /// How the server's validator, validation level or action differs from the declared ones
    /// (`None`: as declared). Set after a rollback to an older version's validator, a validator
    /// refused over violating documents, or one changed by hand; `apply` sends the declared one.
    pub validator_differs: Option<String>,
}

/// An array that is filling up.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ArrayPressure {
    /// Stored path.
    pub path: String,
    /// Its bound.
    pub max: u64,
    /// Documents whose array holds at least 80% of `max`.
    pub documents: u64,
    /// The fullest: `_id` and length.
    pub fullest: Vec<(Bson, u64)>,
}

impl AuditReport {
    /// Whether nothing needs attention.
    pub fn is_clean(&self) -> bool {
        self.unknown_collections.is_empty()
            && self.parts.iter().all(PartAudit::is_clean)
            && self.children.iter().all(ChildAudit::is_clean)
            && self.drift.drifted() == 0
            && self.drift.recorded_failures() == 0
            && self.collections.iter().all(|c| {
                c.exists
                    && c.oversized.is_empty()
                    && c.arrays_near_bound.is_empty()
                    && c.invalid.count == 0
                    && c.missing_indexes.is_empty()
                    && c.unexpected_indexes.is_empty()
                    && c.conflicting_indexes.is_empty()
                    && c.validator_differs.is_none()
            })
    }

    /// The audit of `collection`.
    pub fn collection(&self, name: &str) -> Option<&CollectionAudit> {
        self.collections.iter().find(|c| c.collection == name)
    }
}

pub(crate) async fn audit(
    schema: &Schema,
    db: &Database,
    oversized_bytes: u64,
) -> Result<AuditReport> {
    let observed = super::observe::observe(db, schema.collections()).await?;
    let plan = Plan::compute_with(
        schema.collections(),
        &observed,
        PlanOptions {
            drop_stale_indexes: true,
            ..PlanOptions::default()
        },
    );
    let mut report = AuditReport::default();
    for spec in schema.collections() {
        let mut audit = CollectionAudit {
            collection: spec.name.clone(),
            ..Default::default()
        };
        let Some(server) = observed.collection(&spec.name) else {
            report.collections.push(audit);
            continue;
        };
        audit.exists = true;
        let coll = db.collection::<BsonDocument>(&spec.name);
        audit.documents = coll.estimated_document_count().max_time(LIMIT).await?;
        let largest: Vec<BsonDocument> = coll
            .aggregate([
                doc! { "$project": { "size": { "$bsonSize": "$$ROOT" } } },
                doc! { "$sort": { "size": -1 } },
                doc! { "$limit": 3 },
            ])
            .max_time(LIMIT)
            .await?
            .try_collect()
            .await?;
        audit.largest = largest
            .iter()
            .map(|d| {
                (
                    d.get("_id").cloned().unwrap_or(Bson::Null),
                    size(d.get("size")),
                )
            })
            .collect();
        let oversized: Vec<BsonDocument> = coll
            .aggregate([
                doc! { "$project": { "size": { "$bsonSize": "$$ROOT" } } },
                doc! { "$match": { "size": { "$gt": oversized_bytes as i64 } } },
                doc! { "$sort": { "size": -1 } },
                doc! { "$limit": SAMPLES },
            ])
            .max_time(LIMIT)
            .await?
            .try_collect()
            .await?;
        audit.oversized = oversized
            .iter()
            .map(|d| {
                (
                    d.get("_id").cloned().unwrap_or(Bson::Null),
                    size(d.get("size")),
                )
            })
            .collect();
        if let Ok(schema) = spec.validator.get_document("$jsonSchema") {
            for kind in crate::json_schema::kinds(schema) {
                let (Some((tag, value)), Some(label)) = (&kind.tag, kind.label()) else {
                    continue;
                };
                // a kind's tag is the derive's own name for it: compared exactly, whatever
                // the collection's default collation
                let exact = crate::Collation::for_identities(spec.collation.as_ref())
                    .and_then(|c| c.to_driver());
                let count = coll
                    .count_documents(doc! { tag: value })
                    .max_time(LIMIT)
                    .optional(exact, |count, c| count.collation(c))
                    .await?;
                audit.kinds.push((label, count));
            }
        }
        for (path, max) in bounded_arrays(&spec.validator) {
            let threshold = ((max as f64) * PRESSURE).ceil() as i64;
            let length = doc! { "$size": { "$ifNull": [format!("${path}"), []] } };
            let pressing = doc! { "$expr": { "$gte": [length.clone(), threshold] } };
            let documents = coll
                .count_documents(pressing.clone())
                .max_time(LIMIT)
                .await?;
            if documents == 0 {
                continue;
            }
            let fullest: Vec<BsonDocument> = coll
                .aggregate([
                    doc! { "$match": pressing },
                    doc! { "$project": { "n": length } },
                    doc! { "$sort": { "n": -1 } },
                    doc! { "$limit": SAMPLES },
                ])
                .max_time(LIMIT)
                .await?
                .try_collect()
                .await?;
            audit.arrays_near_bound.push(ArrayPressure {
                path,
                max,
                documents,
                fullest: fullest
                    .iter()
                    .map(|d| {
                        (
                            d.get("_id").cloned().unwrap_or(Bson::Null),
                            size(d.get("n")),
                        )
                    })
                    .collect(),
            });
        }
        // judged by the declared validator, not the server's: a validator refused over
        // violating documents (or rolled back) is exactly when the two differ
        if server.kind == "collection" {
            audit.invalid =
                super::observe::violations(db, &spec.name, &spec.validator, LIMIT).await?;
        }
        for action in plan.actions.iter().filter(|a| a.collection() == spec.name) {
            match action {
                Action::CreateIndexes { indexes, .. } => audit
                    .missing_indexes
                    .extend(indexes.iter().map(|i| i.name.clone())),
                Action::DropIndex { name, .. } => audit.unexpected_indexes.push(name.clone()),
                Action::UpdateValidator { changes, .. } => {
                    audit.validator_differs = Some(changes.join("; "));
                }
                _ => {}
            }
        }
        for warning in &plan.warnings {
            if let Warning::IndexConflict {
                collection, wanted, ..
            } = warning
            {
                if *collection == spec.name {
                    audit.conflicting_indexes.push(wanted.name.clone());
                }
            }
        }
        report.collections.push(audit);
    }
    for spec in schema.collections() {
        let Some(part) = &spec.part_of else { continue };
        let exists = |name: &str| observed.collection(name).is_some();
        if !exists(&spec.name) || !exists(&part.owner) {
            continue; // nothing stored yet (reported as missing above)
        }
        let (orphans, orphan_ids) = unmatched(db, &spec.name, &part.owner).await?;
        let (owners_without_part, owners_without_part_ids) = if part.optional {
            (0, Vec::new())
        } else {
            unmatched(db, &part.owner, &spec.name).await?
        };
        report.parts.push(PartAudit {
            part: spec.name.clone(),
            owner: part.owner.clone(),
            optional: part.optional,
            orphans,
            orphan_ids,
            owners_without_part,
            owners_without_part_ids,
        });
    }
    for rule in crate::relations::subset::reconcile::rules(schema.collections()) {
        let path = format!("{}.{}", rule.parents, rule.path);
        if let Some(known) = report.children.iter_mut().find(|c| {
            c.parent == rule.parents && c.child == rule.children && c.field == rule.parent_field
        }) {
            known.kept_by.push(path);
            continue;
        }
        let exists = |name: &str| observed.collection(name).is_some();
        if !exists(&rule.children) {
            continue; // no child stored yet
        }
        let (missing_parent, missing_parent_ids) =
            unmatched_at(db, &rule.children, &rule.parent_field, &rule.parents).await?;
        report.children.push(ChildAudit {
            parent: rule.parents.to_string(),
            child: rule.children.to_string(),
            field: rule.parent_field.to_string(),
            kept_by: vec![path],
            missing_parent,
            missing_parent_ids,
        });
    }
    report.unknown_collections =
        super::observe::unknown_collections(db, |n| schema.collection(n).is_some()).await?;
    report.drift = schema.reconcile(db).dry_run(true).await?;
    Ok(report)
}

/// The documents of `from` with no document of the same `_id` in `other`: how many, and the
/// first `_id`s. Each is looked up by `_id` (the `_id` index of `other`), only the `_id` kept.
async fn unmatched(db: &Database, from: &str, other: &str) -> Result<(u64, Vec<Bson>)> {
    unmatched_at(db, from, "_id", other).await
}

/// The documents of `from` whose `field` is the `_id` of no document of `other`: how many,
/// and the first `_id`s (each looked up on the `_id` index of `other`).
async fn unmatched_at(
    db: &Database,
    from: &str,
    field: &str,
    other: &str,
) -> Result<(u64, Vec<Bson>)> {
    let lookup = doc! { "$lookup": {
        "from": other,
        "localField": "key",
        "foreignField": "_id",
        "pipeline": [{ "$project": { "_id": 1 } }],
        "as": "same",
    } };
    let alone = doc! { "$match": { "same": { "$size": 0 } } };
    let keep = doc! { "$project": { "_id": 1, "key": format!("${field}") } };
    let coll = db.collection::<BsonDocument>(from);
    let counted: Vec<BsonDocument> = coll
        .aggregate([
            keep.clone(),
            lookup.clone(),
            alone.clone(),
            doc! { "$count": "n" },
        ])
        .max_time(LIMIT)
        .await?
        .try_collect()
        .await?;
    let n = size(counted.first().and_then(|d| d.get("n")));
    if n == 0 {
        return Ok((0, Vec::new()));
    }
    let first: Vec<BsonDocument> = coll
        .aggregate([
            keep,
            lookup,
            alone,
            doc! { "$sort": { "_id": 1 } },
            doc! { "$limit": SAMPLES },
        ])
        .max_time(LIMIT)
        .await?
        .try_collect()
        .await?;
    Ok((
        n,
        first.iter().filter_map(|d| d.get("_id").cloned()).collect(),
    ))
}

fn size(value: Option<&Bson>) -> u64 {
    match value {
        Some(Bson::Int32(v)) => *v as u64,
        Some(Bson::Int64(v)) => *v as u64,
        Some(Bson::Double(v)) => *v as u64,
        _ => 0,
    }
}

/// Top-level arrays of a validator with their `maxItems`.
fn bounded_arrays(validator: &BsonDocument) -> Vec<(String, u64)> {
    let Ok(schema) = validator.get_document("$jsonSchema") else {
        return Vec::new();
    };
    // every kind's arrays, once each
    let mut seen: Vec<String> = Vec::new();
    crate::json_schema::kinds(schema)
        .into_iter()
        .filter_map(|kind| kind.schema.get_document("properties").ok())
        .flat_map(|properties| properties.iter())
        .filter(|(name, _)| {
            let new = !seen.contains(name);
            if new {
                seen.push((*name).clone());
            }
            new
        })
        .filter_map(|(name, property)| {
            let property = property.as_document()?;
            let is_array = match property.get("bsonType") {
                Some(Bson::String(t)) => t == "array",
                Some(Bson::Array(ts)) => ts.iter().any(|t| t.as_str() == Some("array")),
                _ => false,
            };
            let max = match property.get("maxItems")? {
                Bson::Int32(v) => *v as u64,
                Bson::Int64(v) => *v as u64,
                _ => return None,
            };
            is_array.then(|| (name.clone(), max))
        })
        .collect()
}

impl fmt::Display for AuditReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "## Audit\n")?;
        for c in &self.collections {
            if !c.exists {
                writeln!(f, "- `{}`: missing (apply creates it)", c.collection)?;
                continue;
            }
            writeln!(f, "- `{}`: {} documents", c.collection, c.documents)?;
            if !c.kinds.is_empty() {
                let kinds: Vec<String> = c
                    .kinds
                    .iter()
                    .map(|(kind, n)| format!("{kind}: {n}"))
                    .collect();
                writeln!(f, "  - kinds: {}", kinds.join(", "))?;
            }
            if let Some((id, bytes)) = c.largest.first() {
                writeln!(
                    f,
                    "  - largest: {} (_id {id}), {:.2}% of 16 MiB",
                    human_bytes(*bytes),
                    *bytes as f64 / MAX_DOCUMENT_BYTES as f64 * 100.0
                )?;
            }
            for (id, bytes) in &c.oversized {
                writeln!(f, "  - OVERSIZED: _id {id} is {}", human_bytes(*bytes))?;
            }
            for a in &c.arrays_near_bound {
                let (id, n) = a.fullest.first().cloned().unwrap_or((Bson::Null, 0));
                writeln!(
                    f,
                    "  - `{}` near its bound of {}: {} document(s) at 80% or more, fullest _id {id} with {n}",
                    a.path, a.max, a.documents
                )?;
            }
            if let Some(differences) = &c.validator_differs {
                writeln!(
                    f,
                    "  - the validator on the server is not the declared one ({differences}): `apply` sends it"
                )?;
            }
            if c.invalid.count > 0 {
                writeln!(f, "  - fails the declared validator: {}", c.invalid)?;
            }
            if !c.missing_indexes.is_empty() {
                writeln!(f, "  - missing indexes: {}", c.missing_indexes.join(", "))?;
            }
            if !c.unexpected_indexes.is_empty() {
                writeln!(
                    f,
                    "  - indexes the schema does not declare: {}",
                    c.unexpected_indexes.join(", ")
                )?;
            }
            if !c.conflicting_indexes.is_empty() {
                writeln!(
                    f,
                    "  - indexes with other options: {}",
                    c.conflicting_indexes.join(", ")
                )?;
            }
        }
        if !self.unknown_collections.is_empty() {
            writeln!(
                f,
                "- collections the schema does not know: {}",
                self.unknown_collections.join(", ")
            )?;
        }
        for edge in self.drift.edges.iter().filter(|e| e.drifted > 0) {
            write!(
                f,
                "- drifted copies: {} ({}): {} of {} holders",
                edge.copy,
                edge.strategy.map_or("?", |s| s.as_str()),
                edge.drifted,
                edge.checked
            )?;
            if edge.missing_copies > 0 {
                write!(
                    f,
                    ", {} of them without their copy (`schema.reconcile` fills them from the reference)",
                    edge.missing_copies
                )?;
            }
            writeln!(f)?;
        }
        for part in self.parts.iter().filter(|p| !p.is_clean()) {
            if part.orphans > 0 {
                writeln!(
                    f,
                    "- orphan parts in `{}`: {} whose `{}` owner is missing, first _id {} (`reconcile --repair` deletes them)",
                    part.part,
                    part.orphans,
                    part.owner,
                    ids(&part.orphan_ids)
                )?;
            }
            if part.owners_without_part > 0 {
                writeln!(
                    f,
                    "- owners without their part: {} of `{}` have no `{}` document, first _id {} (write them with the owner, or declare the part `optional_part`)",
                    part.owners_without_part,
                    part.owner,
                    part.part,
                    ids(&part.owners_without_part_ids)
                )?;
            }
        }
        for child in self.children.iter().filter(|c| !c.is_clean()) {
            writeln!(
                f,
                "- children without their parent: {} of `{}` name a `{}` parent (`{}`) that does not exist, first _id {}: shown and counted nowhere by {} (delete them, or write their parents and `schema.reconcile`)",
                child.missing_parent,
                child.child,
                child.parent,
                child.field,
                ids(&child.missing_parent_ids),
                child.kept_by.join(", ")
            )?;
        }
        for subset in self.drift.subsets.iter().filter(|s| s.drifted > 0) {
            let what = if subset.counter {
                "counters that disagree with their children's number"
            } else {
                "subsets that disagree with their children"
            };
            writeln!(
                f,
                "- {what}: {} ({}): {} of {} parents (`schema.reconcile` rewrites them)",
                subset.subset,
                subset.strategy.map_or("?", |s| s.as_str()),
                subset.drifted,
                subset.checked
            )?;
        }
        for edge in self.drift.edges.iter().filter(|e| e.recorded_failures > 0) {
            writeln!(
                f,
                "- holders a sync path could not rewrite: {}: {} recorded in `{}` (`schema.retry_failures` re-applies them)",
                edge.copy,
                edge.recorded_failures,
                crate::FAILURES_COLLECTION
            )?;
        }
        for edge in self.drift.edges.iter().filter(|e| e.missing_sources > 0) {
            writeln!(
                f,
                "- copies of deleted sources: {}: {}",
                edge.copy, edge.missing_sources
            )?;
        }
        if self.is_clean() {
            writeln!(f, "- nothing needs attention")?;
        }
        Ok(())
    }
}

fn ids(ids: &[Bson]) -> String {
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    ids.join(", ")
}
