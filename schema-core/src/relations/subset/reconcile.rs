//! Reconcile of subsets: every parent's previews and count are compared with what its children
//! say (the newest `max` matching children in sort order, their number) and, when they differ,
//! rewritten on condition that the parent still holds what was read, so a helper's transaction
//! or the worker that wrote meanwhile is never overwritten.

use std::fmt;

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;

use super::rule::{SubsetRule, SubsetState, Verdict};
use crate::model::collection::CollectionSpec;
use crate::model::copy::SyncStrategy;
use crate::Result;
use crate::SubsetSpec;

/// Reconcile figures of one subset (`parents.path`).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SubsetReconcile {
    /// `parents.path`.
    pub subset: String,
    /// Its strategy (`transactional`, `async` or `reconcile`).
    pub strategy: Option<SyncStrategy>,
    /// A `#[counter]` (the count alone, recounted a batch of parents at a time), not a subset
    /// with previews.
    pub counter: bool,
    /// Parent documents read.
    pub checked: u64,
    /// Parents whose previews or count differed from their children.
    pub drifted: u64,
    /// Parents rewritten (0 in a dry run).
    pub repaired: u64,
    /// Drifted parents written by someone else between the read and the repair: left as that
    /// writer left them (the repair is conditional).
    pub changed_meanwhile: u64,
    /// Times the stream of parents broke and was opened again after the last parent done.
    pub resumed: u64,
}

impl fmt::Display for SubsetReconcile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, {}): {} checked, {} drifted, {} repaired",
            self.subset,
            if self.counter { "counter" } else { "subset" },
            self.strategy.map_or("?", SyncStrategy::as_str),
            self.checked,
            self.drifted,
            self.repaired
        )?;
        if self.changed_meanwhile > 0 {
            write!(f, ", {} changed meanwhile", self.changed_meanwhile)?;
        }
        if self.resumed > 0 {
            write!(f, ", parent stream resumed: {}", self.resumed)?;
        }
        Ok(())
    }
}

/// The subsets of `collections` whose children are known, as rules: the child's path to the
/// parent is the declared one, or else the child's one `#[reference]` to the parent.
pub(crate) fn rules(collections: &[CollectionSpec]) -> Vec<SubsetRule> {
    let mut rules = Vec::new();
    for parent in collections {
        for subset in &parent.subsets {
            let Some(preview) = subset.preview else {
                continue;
            };
            let parent_field = if subset.parent_field.is_empty() {
                let child = collections.iter().find(|c| c.name == subset.child);
                let mut back = child
                    .into_iter()
                    .flat_map(|c| &c.references)
                    .filter(|r| r.target == parent.name);
                match (back.next(), back.next()) {
                    (Some(one), None) => one.field.clone(),
                    _ => continue, // a `Schema::build` error already
                }
            } else {
                subset.parent_field.clone()
            };
            let child = collections.iter().find(|c| c.name == subset.child);
            let identities =
                crate::Collation::for_identities(child.and_then(|c| c.collation.as_ref()));
            rules.push(rule_of(
                &parent.name,
                subset,
                parent_field,
                preview,
                identities,
            ));
        }
    }
    rules
}

/// The rule of `subset` of the collection `parents`, whose children hold the parent's `_id` at
/// `parent_field` and are read under `identities` ([`SubsetRule::identities`]).
pub(crate) fn rule_of(
    parents: &str,
    subset: &SubsetSpec,
    parent_field: String,
    preview: crate::model::copy::PreviewBuilder,
    identities: Option<crate::Collation>,
) -> SubsetRule {
    SubsetRule {
        parents: parents.to_owned().into(),
        children: subset.child.clone().into(),
        path: subset.path.clone().into(),
        max: subset.max,
        sort_field: subset.sort_field.clone().into(),
        sort_direction: subset.sort_direction.as_i32(),
        count: subset.count.clone().map(Into::into),
        count_type: subset.count_type,
        parent_field: parent_field.into(),
        filter: subset.filter.clone(),
        preview: preview.0,
        strategy: subset.strategy,
        identities,
    }
}

/// Compares (and unless `dry_run` repairs) every parent of every subset in `rules`.
/// The sync worker passes its `fence`: its repairs commit only while it holds its lease.
pub(crate) async fn reconcile(
    db: &Database,
    rules: &[SubsetRule],
    dry_run: bool,
    fence: Option<(&crate::sync::fence::Fence, usize)>,
    halt: Option<&crate::sync::fan_out::Halt>,
) -> Result<Vec<SubsetReconcile>> {
    let mut out = Vec::new();
    for rule in rules {
        let mut figures = SubsetReconcile {
            subset: format!("{}.{}", rule.parents, rule.path),
            strategy: Some(rule.strategy),
            counter: !rule.keeps_previews(),
            ..Default::default()
        };
        reconcile_one(db, rule, dry_run, fence, halt, &mut figures).await?;
        out.push(figures);
    }
    Ok(out)
}

/// The parents of one subset, walked in `_id` order (the subset and count fields only: the
/// walk of [`crate::sync::walk::walk_by_id`], which opens its stream again after a break and
/// stops between two batches when `halt` is raised). A subset's parent is compared with one
/// indexed query of its children; a counter's parents are compared a batch at a time, the
/// counts of a batch read with one indexed aggregation ([`SubsetRule::counts`]).
async fn reconcile_one(
    db: &Database,
    rule: &SubsetRule,
    dry_run: bool,
    fence: Option<(&crate::sync::fence::Fence, usize)>,
    halt: Option<&crate::sync::fan_out::Halt>,
    figures: &mut SubsetReconcile,
) -> Result<()> {
    let parents = db.collection::<BsonDocument>(&rule.parents);
    let mut projection = doc! { rule.path.as_ref(): 1 };
    if let Some(count) = &rule.count {
        projection.insert(count.as_ref(), 1);
    }
    let batch = if rule.keeps_previews() {
        1
    } else {
        crate::query::fitting::RECOUNT_BATCH
    };
    let mut visitor = Parents {
        db,
        rule,
        dry_run,
        fence,
        halt,
        figures,
        last_done: None,
    };
    let resumed =
        crate::sync::walk::walk_by_id(&parents, Some(projection), batch, &mut visitor).await?;
    visitor.figures.resumed += resumed;
    Ok(())
}

/// The walk's visitor: compares (and repairs) each batch of parents.
struct Parents<'a> {
    db: &'a Database,
    rule: &'a SubsetRule,
    dry_run: bool,
    fence: Option<(&'a crate::sync::fence::Fence, usize)>,
    halt: Option<&'a crate::sync::fan_out::Halt>,
    figures: &'a mut SubsetReconcile,
    /// The last parent compared: a batch visited again after a break (the walk reopens its
    /// stream after the last batch done in full) skips the parents already done, so each is
    /// counted once.
    last_done: Option<Bson>,
}

impl crate::sync::walk::Visit for Parents<'_> {
    async fn visit(&mut self, batch: &[BsonDocument]) -> Result<()> {
        let done = self
            .last_done
            .as_ref()
            .and_then(|last| batch.iter().position(|p| p.get("_id") == Some(last)))
            .map_or(0, |i| i + 1);
        compare(
            self.db,
            self.rule,
            &batch[done..],
            self.dry_run,
            self.fence,
            self.figures,
            &mut self.last_done,
        )
        .await
    }

    fn halted(&self) -> bool {
        crate::sync::fan_out::halted(self.halt)
    }

    /// A subset's parents are visited one at a time (the walk can stop between any two):
    /// read a thousand per round trip.
    fn read_ahead(&self) -> usize {
        1000
    }
}

/// Compares (and repairs) the parents of `batch`, in order, moving `after` past each one done.
async fn compare(
    db: &Database,
    rule: &SubsetRule,
    batch: &[BsonDocument],
    dry_run: bool,
    fence: Option<(&crate::sync::fence::Fence, usize)>,
    figures: &mut SubsetReconcile,
    after: &mut Option<Bson>,
) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    // a counter's batch: every count with one aggregation (an id a filter would run as a
    // query is left out of the `$in`, and that parent is recounted alone)
    let counts = if rule.keeps_previews() {
        None
    } else {
        let ids: Vec<Bson> = batch
            .iter()
            .filter_map(|p| p.get("_id"))
            .filter(|id| crate::relations::reference::refuse_hostile_id("a parent id", id).is_ok())
            .cloned()
            .collect();
        Some((rule.counts(db, &ids).await?, ids))
    };
    for parent in batch {
        let id = parent.get("_id");
        let counted = counts.as_ref().and_then(|(counts, ids)| {
            let id = id?;
            ids.contains(id).then(|| {
                let n = counts.get(&crate::sync::id_key(id)).copied().unwrap_or(0);
                SubsetState {
                    previews: Bson::Null,
                    count: Some(rule.count_type.value(n)),
                }
            })
        });
        let verdict = match counted {
            Some(expected) => {
                rule.repair_with(db, parent, &expected, dry_run, fence)
                    .await
            }
            None => rule.repair(db, parent, dry_run, fence).await,
        }?;
        figures.checked += 1;
        match verdict {
            Verdict::Current => {}
            Verdict::Repaired => {
                figures.drifted += 1;
                if !dry_run {
                    figures.repaired += 1;
                }
            }
            Verdict::ChangedMeanwhile => {
                figures.drifted += 1;
                figures.changed_meanwhile += 1;
            }
        }
        *after = id.cloned();
    }
    Ok(())
}
