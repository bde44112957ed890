//! The worker's half of `#[subset(sync = "async")]`: it also follows the child collections
//! (insert, update, replace, delete) and brings each parent a change concerns up to date.
//!
//! A refresh reads the parent's state from its children at that moment (the newest `max`
//! matching children, their number) and `$set`s it whole: it depends on no event's content, so
//! applying a change twice, or late, changes nothing, and the changes of a batch coalesce into
//! one refresh per parent. The parent of an inserted or updated child is read from the looked-up
//! document; of a deleted child, or of a child moved to another parent, from its pre-image
//! (`changeStreamPreAndPostImages`, which `apply` enables on the child collections of async
//! subsets). A change whose pre-image the server no longer has is counted
//! ([`crate::WorkerStats::unknown_parents`]) and left to reconcile.

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType};
use mongodb::Database;

use super::failures::FailureLog;
use super::fence::{transact, Fence, Fenced};
use crate::relations::subset::SubsetRule;
use crate::Result;

/// The async subsets a worker follows.
#[derive(Debug, Clone, Default)]
pub(crate) struct SubsetFollow {
    pub rules: Vec<SubsetRule>,
}

/// What one child change asks of the worker.
#[derive(Debug, Default)]
pub(crate) struct ChildPlan {
    /// `(rule index, parent id)` to refresh.
    pub parents: Vec<(usize, Bson)>,
    /// The change concerned an async subset whose parent could not be known (a deletion
    /// without a pre-image).
    pub unknown_parent: bool,
}

impl SubsetFollow {
    /// The child collections to follow.
    pub fn children(&self) -> Vec<String> {
        let mut children: Vec<String> = Vec::new();
        for rule in &self.rules {
            if !children.iter().any(|c| c == rule.children.as_ref()) {
                children.push(rule.children.to_string());
            }
        }
        children
    }

    /// The parents a change of a child collection concerns: the parent of the child after
    /// the change and the one before it (from the pre-image), each when the child is shown
    /// there (it matches the subset's filter) before or after. Without a pre-image, the parent
    /// the child names after the change is refreshed even when the child no longer matches (it
    /// may have matched before).
    pub fn plan(&self, event: &ChangeStreamEvent<BsonDocument>) -> ChildPlan {
        let mut plan = ChildPlan::default();
        let Some(collection) = event.ns.as_ref().and_then(|ns| ns.coll.as_ref()) else {
            return plan;
        };
        let after = match event.operation_type {
            OperationType::Delete => None,
            _ => event.full_document.as_ref(),
        };
        let before = event.full_document_before_change.as_ref();
        for (index, rule) in self.rules.iter().enumerate() {
            if rule.children.as_ref() != collection.as_str() {
                continue;
            }
            // without a pre-image, a deleted child's parent is unknown, and so is the parent
            // an updated child may have left
            let no_pre_image = before.is_none() && event.operation_type != OperationType::Insert;
            if no_pre_image {
                plan.unknown_parent = true;
            }
            for (child, was_after) in [(before, false), (after, true)]
                .into_iter()
                .filter_map(|(child, after)| Some((child?, after)))
            {
                // a child shown neither before nor after concerns no parent; but without a
                // pre-image, whether it was shown before is unknown: the child may just have left
                // the filter (a loan returned), so the parent it names is refreshed either way
                let left_unseen = was_after && no_pre_image;
                if !(rule.matches(child) || left_unseen) {
                    continue;
                }
                if let Some(parent) = rule.parent_of(child) {
                    let key = super::id_key(&parent);
                    if !plan
                        .parents
                        .iter()
                        .any(|(i, p)| *i == index && super::id_key(p) == key)
                    {
                        plan.parents.push((index, parent));
                    }
                }
            }
        }
        plan
    }

    /// Sets `parent`'s subsets and counts of `rules` (all of one parent collection) from its
    /// children's current state, in one transaction fenced on `lane` (the children read and the
    /// parent written at one snapshot, in one update: a reader never sees a subset and a count
    /// of the same parent from different moments), with the removal of the parent's failure
    /// records; `false` when the fence refused it (the lease was taken over: nothing written).
    pub async fn refresh_fenced(
        &self,
        db: &Database,
        rules: &[usize],
        parent: &Bson,
        log: &FailureLog,
        fence: &Fence,
        lane: usize,
    ) -> Result<bool> {
        let rules: Vec<SubsetRule> = rules.iter().map(|&rule| self.rules[rule].clone()).collect();
        let Some(parents) = rules.first().map(|rule| rule.parents.clone()) else {
            return Ok(true);
        };
        debug_assert!(rules.iter().all(|rule| rule.parents == parents));
        let targets: Vec<String> = rules.iter().map(SubsetRule::label).collect();
        let clear = log.may_exist();
        let done = transact(db.client(), Some((fence, lane)), |session| {
            let (db, rules, parents, parent, targets) = (
                db.clone(),
                rules.clone(),
                parents.clone(),
                parent.clone(),
                targets.clone(),
            );
            Box::pin(async move {
                let mut set = BsonDocument::new();
                for rule in &rules {
                    let state = rule.state(&db, Some(&mut *session), &parent).await?;
                    if let Ok(fields) = rule.set_update(&state).get_document("$set") {
                        set.extend(fields.clone());
                    }
                }
                db.collection::<BsonDocument>(&parents)
                    .update_one(doc! { "_id": parent.clone() }, doc! { "$set": set })
                    .session(&mut *session)
                    .await?;
                if clear {
                    db.collection::<BsonDocument>(crate::FAILURES_COLLECTION)
                        .delete_many(doc! { "copy": { "$in": targets }, "holder": parent })
                        .session(&mut *session)
                        .await?;
                }
                Ok(())
            })
        })
        .await?;
        Ok(matches!(done, Fenced::Committed(())))
    }
}
