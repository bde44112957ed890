//! One subset as data, shared by everything that keeps it current: the typed helpers of
//! [`super::Subset`] (a child added, edited or deleted in its transaction), the sync worker (a
//! child changed by any writer, for `sync = "async"`) and reconcile (drift of previews and
//! counts). Each of them ends in the same two steps: read the parent's state from its children
//! ([`SubsetRule::state`]), and write it ([`SubsetRule::refill_update`] or, conditionally,
//! [`SubsetRule::repair`]).

use std::borrow::Cow;
use std::cmp::Ordering;

use futures_util::TryStreamExt;
use mongodb::action::Action as _;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};

use super::{CounterType, PreviewFn};
use crate::Result;

/// `V::from(&C)` of a stored child, serialized as the driver does: a subset's preview, built
/// where only BSON is at hand (reconcile, the sync worker).
///
/// # Errors
///
/// The child does not deserialize as `C`, or the preview does not serialize.
pub fn subset_preview<C, V>(child: &BsonDocument) -> Result<Bson>
where
    C: serde::de::DeserializeOwned,
    V: PreviewOf<C> + serde::Serialize,
{
    let child: C =
        crate::bson_compat::from_document(child.clone()).map_err(mongodb::error::Error::from)?;
    crate::relations::to_bson(&V::preview_of(&child))
}

/// The preview type of a `#[subset]`: built from a child with `From<&C>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is the preview of a `#[subset]` of `{C}` and needs `impl From<&{C}> for {Self}`",
    label = "no `From<&{C}>`"
)]
pub trait PreviewOf<C> {
    /// `Self::from(child)`.
    fn preview_of(child: &C) -> Self;
}
impl<C, V: for<'c> From<&'c C>> PreviewOf<C> for V {
    #[inline]
    fn preview_of(child: &C) -> Self {
        V::from(child)
    }
}

/// A subset, with everything needed to recompute it from the children.
#[derive(Clone)]
pub(crate) struct SubsetRule {
    /// The parent collection.
    pub parents: Cow<'static, str>,
    /// The child collection.
    pub children: Cow<'static, str>,
    /// The subset's stored path in the parent (a counter's: its count field).
    pub path: Cow<'static, str>,
    /// At most this many previews; 0 for a `#[counter]`, which keeps the count alone.
    pub max: u64,
    pub sort_field: Cow<'static, str>,
    pub sort_direction: i32,
    pub count: Option<Cow<'static, str>>,
    pub count_type: CounterType,
    /// The child's stored path holding the parent's `_id` (`ticket_id`, `member._id`).
    pub parent_field: Cow<'static, str>,
    /// Only children matching these equalities are previewed and counted.
    pub filter: Option<BsonDocument>,
    pub preview: PreviewFn,
    /// Who keeps it current besides the helpers (for reports and the worker).
    pub strategy: crate::SyncStrategy,
    /// The collation of every read of the children: the simple one where their collection's
    /// default is another ([`crate::Collation::for_identities`]). The parent's id is compared
    /// exactly, and one command has one collation, so the filter's strings are compared
    /// exactly too: as [`SubsetRule::matches`] compares them.
    pub identities: Option<crate::Collation>,
}

impl std::fmt::Debug for SubsetRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "subset `{}.{}` of `{}`",
            self.parents, self.path, self.children
        )
    }
}

/// A parent's subset and count as its children say they should be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SubsetState {
    /// The preview (`max = 1`, `Null` without children) or the array of previews.
    pub previews: Bson,
    /// The number of (matching) children, when the subset counts them.
    pub count: Option<Bson>,
}

/// What reconcile found on one parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Previews and count are right.
    Current,
    /// They were wrong and were rewritten.
    Repaired,
    /// They were wrong, but the parent changed between the read and the repair: left to the
    /// writer that changed it (never overwritten).
    ChangedMeanwhile,
}

impl SubsetRule {
    /// `parents.path`: the subset's name in reports and failure records.
    pub fn label(&self) -> String {
        format!("{}.{}", self.parents, self.path)
    }

    /// Whether it keeps previews (a subset) or only the count (a `#[counter]`).
    pub fn keeps_previews(&self) -> bool {
        self.max > 0
    }

    /// The counts of the (matching) children of each of `parents`, by
    /// [`crate::sync::id_key`]: one aggregation (`$match` on the parent field with `$in`, then
    /// `$group`), served by the index of the parent field. A parent without children is absent.
    pub async fn counts(
        &self,
        db: &Database,
        parents: &[Bson],
    ) -> Result<std::collections::HashMap<String, u64>> {
        let mut filter = doc! { self.parent_field.as_ref(): { "$in": parents.to_vec() } };
        if let Some(extra) = &self.filter {
            for (key, value) in extra {
                filter.insert(key.clone(), value.clone());
            }
        }
        let group = format!("${}", self.parent_field);
        let rows: Vec<BsonDocument> = db
            .collection::<BsonDocument>(&self.children)
            .aggregate([
                doc! { "$match": filter },
                doc! { "$group": { "_id": group, "n": { "$sum": 1 } } },
            ])
            .optional(self.driver_collation(), |a, c| a.collation(c))
            .await?
            .try_collect()
            .await?;
        let mut counts = std::collections::HashMap::new();
        for row in rows {
            let n = match row.get("n") {
                Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
                Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
                Some(Bson::Double(n)) => *n as u64,
                _ => 0,
            };
            if let Some(id) = row.get("_id") {
                *counts.entry(crate::sync::id_key(id)).or_insert(0) += n;
            }
        }
        Ok(counts)
    }

    /// Whether `child` is previewed and counted: it matches every equality of the filter, with
    /// mongod's equality (numbers by value, `null` matching a missing field, an array matching
    /// when one of its elements does).
    pub fn matches(&self, child: &BsonDocument) -> bool {
        self.filter.as_ref().is_none_or(|filter| {
            filter
                .iter()
                .all(|(path, wanted)| field_equals(child, path, wanted))
        })
    }

    /// The parent `child` belongs to (`None` for a child without one). The id is read from a
    /// stored document, which a client's update may have filled with anything: only a value
    /// is a parent. An id that a filter would run as a query (a document with a `$` key, an
    /// array, a regular expression, JavaScript) names no parent, so no refresh is aimed by it
    /// at another parent (`{ "_id": { "$ne": null } }` would match the first one).
    pub fn parent_of(&self, child: &BsonDocument) -> Option<Bson> {
        crate::sync::get_path(child, &self.parent_field).filter(|p| {
            !matches!(p, Bson::Null)
                && crate::relations::reference::refuse_hostile_id("a stored parent id", p).is_ok()
        })
    }

    /// The children of `parent` that the subset shows and counts.
    pub fn children_filter(&self, parent: &Bson) -> BsonDocument {
        let mut filter = doc! { self.parent_field.as_ref(): parent.clone() };
        if let Some(extra) = &self.filter {
            for (key, value) in extra {
                filter.insert(key.clone(), value.clone());
            }
        }
        filter
    }

    fn sort(&self) -> BsonDocument {
        doc! { self.sort_field.as_ref(): self.sort_direction }
    }

    /// The driver's collation of the reads of the children ([`SubsetRule::identities`]).
    fn driver_collation(&self) -> Option<mongodb::options::Collation> {
        self.identities
            .as_ref()
            .and_then(crate::Collation::to_driver)
    }

    /// Reads `parent`'s state from its children: the newest `max` in sort order (one query on
    /// the reference index with the sort key), and their number when the subset counts them.
    /// Inside `session` when given (a transaction sees its own writes).
    pub async fn state(
        &self,
        db: &Database,
        session: Option<&mut ClientSession>,
        parent: &Bson,
    ) -> Result<SubsetState> {
        self.read(db, session, parent, true).await
    }

    /// [`SubsetRule::state`], counting the children only when `count` (a helper that moves
    /// the count with `$inc` needs the previews alone: one query).
    async fn read(
        &self,
        db: &Database,
        mut session: Option<&mut ClientSession>,
        parent: &Bson,
        count: bool,
    ) -> Result<SubsetState> {
        let children = db.collection::<BsonDocument>(&self.children);
        let filter = self.children_filter(parent);
        let find = children
            .find(filter.clone())
            .sort(self.sort())
            .limit(self.max as i64)
            .optional(self.driver_collation(), |find, c| find.collation(c));
        let newest: Vec<BsonDocument> = match session.as_deref_mut() {
            // a counter has no previews to read (and `limit(0)` would mean no limit)
            _ if !self.keeps_previews() => Vec::new(),
            Some(session) => {
                let mut cursor = find.session(&mut *session).await?;
                let mut out = Vec::new();
                while let Some(child) = cursor.next(&mut *session).await.transpose()? {
                    out.push(child);
                }
                out
            }
            None => find.await?.try_collect().await?,
        };
        let mut previews = newest
            .iter()
            .map(|child| (self.preview)(child))
            .collect::<Result<Vec<Bson>>>()?;
        let previews = match self.max {
            0 => Bson::Null,
            1 => previews.pop().unwrap_or(Bson::Null),
            _ => Bson::Array(previews),
        };
        let count = match &self.count {
            None => None,
            Some(_) if !count => None,
            // fewer than `max`: the query above saw them all
            Some(_) if self.keeps_previews() && (newest.len() as u64) < self.max => {
                Some(self.count_type.value(newest.len() as u64))
            }
            Some(_) => {
                let count = children
                    .count_documents(filter)
                    .optional(self.driver_collation(), |count, c| count.collation(c));
                let n = match session {
                    Some(session) => count.session(session).await?,
                    None => count.await?,
                };
                Some(self.count_type.value(n))
            }
        };
        Ok(SubsetState { previews, count })
    }

    /// The parent update that writes `previews` and moves the count by `delta` (`$inc`, so
    /// that concurrent changes of the count add up); `None` when there is nothing to write (a
    /// counter whose count does not move).
    pub fn refill_update(&self, previews: Bson, delta: i64) -> Option<BsonDocument> {
        let mut update = BsonDocument::new();
        if self.keeps_previews() {
            update.insert("$set", doc! { self.path.as_ref(): previews });
        }
        if let (Some(count), true) = (&self.count, delta != 0) {
            let delta = match self.count_type {
                CounterType::Int32 => {
                    Bson::Int32(delta.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
                }
                CounterType::Int64 => Bson::Int64(delta),
            };
            update.insert("$inc", doc! { count.as_ref(): delta });
        }
        (!update.is_empty()).then_some(update)
    }

    /// The parent update that writes `state` whole (previews and count).
    pub fn set_update(&self, state: &SubsetState) -> BsonDocument {
        let mut set = BsonDocument::new();
        if self.keeps_previews() {
            set.insert(self.path.as_ref(), state.previews.clone());
        }
        if let (Some(count), Some(value)) = (&self.count, &state.count) {
            set.insert(count.as_ref(), value.clone());
        }
        doc! { "$set": set }
    }

    /// After a child changed from `before` to `after` (`None`: it did not exist), inside the
    /// child's transaction: every parent whose subset shows or counts it, before or after, is
    /// refilled from its children and its count moved by the difference.
    pub async fn refresh_in(
        &self,
        db: &Database,
        session: &mut ClientSession,
        before: Option<&BsonDocument>,
        after: Option<&BsonDocument>,
    ) -> Result<()> {
        let (was, is) = (self.counted_in(before), self.counted_in(after));
        let mut parents: Vec<(Bson, i64)> = Vec::new();
        match (was, is) {
            (None, None) => return Ok(()),
            (Some(was), Some(is)) if crate::sync::id_key(&was) == crate::sync::id_key(&is) => {
                parents.push((is, 0))
            }
            (was, is) => {
                parents.extend(was.map(|p| (p, -1)));
                parents.extend(is.map(|p| (p, 1)));
            }
        }
        let parent_collection = db.collection::<BsonDocument>(&self.parents);
        for (parent, delta) in parents {
            // a counter's parent changes only when its count moves
            if !self.keeps_previews() && delta == 0 {
                continue;
            }
            let state = self.read(db, Some(&mut *session), &parent, false).await?;
            let Some(update) = self.refill_update(state.previews, delta) else {
                continue;
            };
            parent_collection
                .update_one(
                    // compared as a value whatever it holds
                    doc! { "_id": { "$eq": parent } },
                    update,
                )
                .session(&mut *session)
                .await?;
        }
        Ok(())
    }

    /// The parent that shows and counts `child`, if any.
    fn counted_in(&self, child: Option<&BsonDocument>) -> Option<Bson> {
        child
            .filter(|c| self.matches(c))
            .and_then(|c| self.parent_of(c))
    }

    /// Whether `parent` (a stored parent document) shows `expected`.
    pub fn is_current(&self, parent: &BsonDocument, expected: &SubsetState) -> bool {
        let stored = crate::sync::get_path(parent, &self.path);
        let previews_ok = !self.keeps_previews()
            || match (&expected.previews, stored.as_ref()) {
                (Bson::Null, None | Some(Bson::Null)) => true,
                (Bson::Array(want), None) => want.is_empty(),
                (Bson::Array(want), Some(Bson::Array(have))) => same_previews(self, want, have),
                (want, Some(have)) => want == have,
                _ => false,
            };
        let count_ok = match (&self.count, &expected.count) {
            (Some(count), Some(want)) => crate::sync::get_path(parent, count)
                .is_some_and(|have| numbers_equal(&have, want) == Some(true)),
            _ => true,
        };
        previews_ok && count_ok
    }

    /// Reads `parent`'s state from its children and, when the stored subset or count differ,
    /// rewrites them on condition that they are still what was read: a writer that changed the
    /// parent meanwhile (a helper's transaction, the worker) is never overwritten. The repair
    /// reads the children again and writes in one transaction (a child deleted between the
    /// first read and the write is not written back), fenced by `fence` when the sync worker
    /// repairs: a worker whose lease was taken over meanwhile writes nothing and gets
    /// [`crate::sync::fence::fenced_off`]'s error.
    pub(crate) async fn repair(
        &self,
        db: &Database,
        parent: &BsonDocument,
        dry_run: bool,
        fence: Option<(&crate::sync::fence::Fence, usize)>,
    ) -> Result<Verdict> {
        let Some(id) = parent.get("_id") else {
            return Ok(Verdict::Current);
        };
        let expected = self.state(db, None, id).await?;
        self.repair_with(db, parent, &expected, dry_run, fence)
            .await
    }

    /// [`SubsetRule::repair`] of a parent whose state its children were read to say
    /// (`expected`, say by [`SubsetRule::counts`] for a batch of parents).
    pub(crate) async fn repair_with(
        &self,
        db: &Database,
        parent: &BsonDocument,
        expected: &SubsetState,
        dry_run: bool,
        fence: Option<(&crate::sync::fence::Fence, usize)>,
    ) -> Result<Verdict> {
        let Some(id) = parent.get("_id") else {
            return Ok(Verdict::Current);
        };
        if self.is_current(parent, expected) {
            return Ok(Verdict::Current);
        }
        if dry_run {
            return Ok(Verdict::Repaired);
        }
        let mut filter = doc! { "_id": id.clone() };
        let previews = self.keeps_previews().then_some(&self.path);
        for path in previews.into_iter().chain(&self.count) {
            let observed = match crate::sync::get_path(parent, path) {
                Some(value) => doc! { "$eq": value },
                None => doc! { "$exists": false },
            };
            filter.insert(path.as_ref(), observed);
        }
        let written = crate::sync::fence::transact(db.client(), fence, |session| {
            let (rule, db, id, filter) = (self.clone(), db.clone(), id.clone(), filter.clone());
            Box::pin(async move {
                // the children as of the transaction's snapshot, not as first read
                let expected = rule.state(&db, Some(&mut *session), &id).await?;
                let result = db
                    .collection::<BsonDocument>(&rule.parents)
                    .update_one(filter, rule.set_update(&expected))
                    .session(&mut *session)
                    .await?;
                Ok(result.matched_count == 1)
            })
        })
        .await?;
        Ok(match written {
            crate::sync::fence::Fenced::Committed(true) => Verdict::Repaired,
            crate::sync::fence::Fenced::Committed(false) => Verdict::ChangedMeanwhile,
            crate::sync::fence::Fenced::FencedOff => return Err(crate::sync::fence::fenced_off()),
        })
    }
}

/// Previews equal up to the order of previews whose sort keys tie (the server orders ties
/// arbitrarily).
fn same_previews(rule: &SubsetRule, want: &[Bson], have: &[Bson]) -> bool {
    if want.len() != have.len() {
        return false;
    }
    let key = |b: &Bson| {
        b.as_document()
            .and_then(|d| d.get(rule.sort_field.as_ref()))
            .cloned()
    };
    if want.iter().map(key).ne(have.iter().map(key)) {
        return false;
    }
    let canonical = |list: &[Bson]| {
        let mut texts: Vec<String> = list
            .iter()
            .map(|b| b.clone().into_canonical_extjson().to_string())
            .collect();
        texts.sort();
        texts
    };
    canonical(want) == canonical(have)
}

/// `child`'s value at `path` equals `wanted` as a filter `{ path: wanted }` would decide.
fn field_equals(child: &BsonDocument, path: &str, wanted: &Bson) -> bool {
    match crate::sync::get_path(child, path) {
        None | Some(Bson::Null) => matches!(wanted, Bson::Null),
        Some(Bson::Array(items)) => {
            items.iter().any(|item| values_equal(item, wanted))
                || values_equal(&Bson::Array(items), wanted)
        }
        Some(value) => values_equal(&value, wanted),
    }
}

fn values_equal(a: &Bson, b: &Bson) -> bool {
    numbers_equal(a, b).unwrap_or_else(|| a == b)
}

/// Numbers compared by value across `int`, `long` and `double`; `None` when either is not one.
fn numbers_equal(a: &Bson, b: &Bson) -> Option<bool> {
    let as_f64 = |b: &Bson| match b {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(f) => Some(*f),
        _ => None,
    };
    match (a, b) {
        (Bson::Int64(x), Bson::Int64(y)) => Some(x == y),
        (Bson::Int32(x), Bson::Int64(y)) | (Bson::Int64(y), Bson::Int32(x)) => {
            Some(i64::from(*x) == *y)
        }
        _ => Some(as_f64(a)?.partial_cmp(&as_f64(b)?) == Some(Ordering::Equal)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(filter: Option<BsonDocument>) -> SubsetRule {
        SubsetRule {
            parents: "members".into(),
            children: "loans".into(),
            path: "recent".into(),
            max: 3,
            sort_field: "at".into(),
            sort_direction: -1,
            count: Some("active".into()),
            count_type: CounterType::Int32,
            parent_field: "member._id".into(),
            filter,
            preview: |child| Ok(Bson::Document(child.clone())),
            strategy: crate::SyncStrategy::Transactional,
            identities: None,
        }
    }

    #[test]
    fn filters_match_with_mongod_equality() {
        let active = rule(Some(doc! { "status": "active", "copies": 1 }));
        assert!(active.matches(&doc! { "status": "active", "copies": 1.0 }));
        assert!(active.matches(&doc! { "status": ["late", "active"], "copies": 1_i64 }));
        assert!(!active.matches(&doc! { "status": "returned", "copies": 1 }));
        assert!(!active.matches(&doc! { "copies": 1 }));
        let unset = rule(Some(doc! { "returned_at": null }));
        assert!(unset.matches(&doc! {}));
        assert!(unset.matches(&doc! { "returned_at": null }));
        assert!(!unset.matches(&doc! { "returned_at": 5 }));
        assert!(rule(None).matches(&doc! {}));
    }

    #[test]
    fn the_parent_is_read_at_a_dotted_path() {
        let r = rule(None);
        assert_eq!(
            r.parent_of(&doc! { "member": { "_id": 7, "name": "Ada" } }),
            Some(Bson::Int32(7))
        );
        assert_eq!(r.parent_of(&doc! { "member": null }), None);
        // ids that a filter would run as a query name no parent
        for hostile in [
            doc! { "member": { "_id": { "$ne": null } } },
            doc! { "member": { "_id": { "a": { "$gt": 1 } } } },
            doc! { "member": { "_id": [1, 2] } },
            doc! { "member": { "_id": crate::bson_compat::regex(".", "").unwrap() } },
        ] {
            assert_eq!(r.parent_of(&hostile), None, "{hostile}");
        }
        assert_eq!(
            r.parent_of(&doc! { "member": { "_id": { "tenant": 1, "n": 2 } } }),
            Some(Bson::Document(doc! { "tenant": 1, "n": 2 }))
        );
        assert_eq!(r.children_filter(&Bson::Int32(7)), doc! { "member._id": 7 });
        let filtered = rule(Some(doc! { "status": "active" }));
        assert_eq!(
            filtered.children_filter(&Bson::Int32(7)),
            doc! { "member._id": 7, "status": "active" }
        );
    }

    #[test]
    fn counts_move_by_their_own_type() {
        let r = rule(None);
        assert_eq!(
            r.refill_update(Bson::Array(vec![]), -1),
            Some(doc! { "$set": { "recent": [] }, "$inc": { "active": -1_i32 } })
        );
        assert_eq!(
            r.refill_update(Bson::Null, 0),
            Some(doc! { "$set": { "recent": null } })
        );
    }

    /// A counter (`max` 0) writes its count alone: no preview field, and nothing at all when
    /// the count does not move.
    #[test]
    fn a_counter_writes_its_count_alone() {
        let counter = SubsetRule {
            path: "active".into(),
            max: 0,
            sort_field: "".into(),
            ..rule(None)
        };
        assert!(!counter.keeps_previews());
        assert_eq!(
            counter.refill_update(Bson::Null, 1),
            Some(doc! { "$inc": { "active": 1_i32 } })
        );
        assert_eq!(counter.refill_update(Bson::Null, 0), None);
        let state = SubsetState {
            previews: Bson::Null,
            count: Some(Bson::Int32(2)),
        };
        assert_eq!(
            counter.set_update(&state),
            doc! { "$set": { "active": 2_i32 } }
        );
        assert!(counter.is_current(&doc! { "active": 2_i64 }, &state));
        assert!(!counter.is_current(&doc! { "active": 3 }, &state));
        assert!(
            !counter.is_current(&doc! {}, &state),
            "a missing count is drift"
        );
    }

    #[test]
    fn drift_ignores_the_order_of_ties_but_not_values() {
        let r = rule(None);
        let a = Bson::Document(doc! { "at": 2, "t": "a" });
        let b = Bson::Document(doc! { "at": 2, "t": "b" });
        let c = Bson::Document(doc! { "at": 1, "t": "c" });
        let want = SubsetState {
            previews: Bson::Array(vec![a.clone(), b.clone(), c.clone()]),
            count: Some(Bson::Int32(3)),
        };
        let parent = |previews: Vec<Bson>, count: i64| doc! { "recent": previews, "active": count };
        assert!(r.is_current(&parent(vec![b.clone(), a.clone(), c.clone()], 3), &want));
        assert!(!r.is_current(&parent(vec![a.clone(), c.clone(), b.clone()], 3), &want));
        assert!(!r.is_current(&parent(vec![a.clone(), b.clone(), c.clone()], 4), &want));
        let renamed = Bson::Document(doc! { "at": 1, "t": "C" });
        assert!(!r.is_current(&parent(vec![a, b, renamed], 3), &want));
    }
}
