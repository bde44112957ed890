//! The subset helpers as actions in the driver's style: built where the call starts (the
//! database, the child), options as setters, awaited directly; with
//! [`session`](SubsetAdd::session) they run inside the caller's transaction.

use std::future::IntoFuture;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::{ReturnDocument, UpdateModifications};
use mongodb::{ClientSession, Database};

use super::{update_parent_in, ParentUpdate, SubsetRule};
use crate::sync::transaction::in_transaction_or;
use crate::Result;

/// [`Subset::add`](crate::Subset::add) and [`Subset::add_with`](crate::Subset::add_with): the
/// child's insert and its parents' subset updates in one transaction. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct SubsetAdd<'a> {
    pub(super) db: &'a Database,
    pub(super) children: &'static str,
    pub(super) deadline: Duration,
    /// The stored child and the parent updates, or why they could not be prepared.
    pub(super) prepared: Result<(BsonDocument, Vec<ParentUpdate>)>,
    /// Whether a child whose parent does not exist is stored anyway.
    pub(super) allow_missing_parent: bool,
    pub(super) session: Option<&'a mut ClientSession>,
}

impl SubsetAdd<'_> {
    /// Stores the child even when its parent does not exist, as before 0.2: the parent's
    /// update matches nothing, so the child is shown and counted nowhere until a parent with
    /// that `_id` is written and rebuilt (`audit` counts such children). Without it, such a
    /// child is refused ([`crate::Error::MissingParent`]) and nothing is written.
    pub fn allow_missing_parent(mut self) -> Self {
        self.allow_missing_parent = true;
        self
    }
}

/// [`Subset::delete`](crate::Subset::delete) and
/// [`Subset::delete_with`](crate::Subset::delete_with): the child's delete, its parts' deletes
/// (`same_id_as`) and its parents' refreshed subsets in one transaction; `true` when a child
/// was deleted. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct SubsetDelete<'a> {
    pub(super) db: &'a Database,
    pub(super) children: &'static str,
    pub(super) deadline: Duration,
    pub(super) prepared: Result<(Bson, Vec<SubsetRule>)>,
    /// The child's part collections (`same_id_as`), deleted with it.
    pub(super) parts: Vec<String>,
    pub(super) session: Option<&'a mut ClientSession>,
}

/// [`Subset::update`](crate::Subset::update) and
/// [`Subset::update_with`](crate::Subset::update_with): the child's update and its parents'
/// refreshed subsets in one transaction; `true` when a child matched. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct SubsetUpdate<'a> {
    pub(super) db: &'a Database,
    pub(super) children: &'static str,
    pub(super) deadline: Duration,
    pub(super) prepared: Result<(Bson, Vec<SubsetRule>)>,
    pub(super) update: UpdateModifications,
    pub(super) read_after: bool,
    pub(super) session: Option<&'a mut ClientSession>,
}

/// [`Subset::rebuild`](crate::Subset::rebuild): one parent's subset and count recomputed from
/// its children, read and written in one transaction. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct SubsetRebuild<'a> {
    pub(super) db: &'a Database,
    pub(super) parents: &'static str,
    pub(super) deadline: Duration,
    pub(super) prepared: Result<(Bson, SubsetRule)>,
    pub(super) session: Option<&'a mut ClientSession>,
}

macro_rules! session_setter {
    ($($action:ident),*) => {$(
        impl<'a> $action<'a> {
            /// Runs inside `session`'s transaction instead of one of the library's own: the
            /// writes commit or abort with the caller's (the caller owns the commit, the abort
            /// and the retry; a transient error comes back with its labels for the caller's
            /// retry loop). Start the transaction first: in a session without one, the
            /// writes are sent in it one by one, not atomically.
            pub fn session(mut self, session: &'a mut ClientSession) -> Self {
                self.session = Some(session);
                self
            }
        }
    )*};
}
session_setter!(SubsetAdd, SubsetDelete, SubsetUpdate, SubsetRebuild);

impl<'a> IntoFuture for SubsetAdd<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Result<()>>;

    /// Sends the insert and the parent updates.
    ///
    /// # Errors
    ///
    /// What the preparation refused ([`crate::Error::Serialization`], a parent id that is an
    /// operator, [`crate::Error::UnsafeValue`]), a parent that does not exist
    /// ([`crate::Error::MissingParent`], nothing written), the driver's errors
    /// ([`crate::Error::Duplicate`], [`crate::Error::Validation`]), and without a session
    /// [`crate::Error::Timeout`] or [`crate::Error::CommitUnknown`] of the library's
    /// transaction.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (raw, mut updates) = self.prepared?;
            if self.allow_missing_parent {
                updates = updates
                    .into_iter()
                    .map(ParentUpdate::allowing_missing_parent)
                    .collect();
            }
            let (db, children) = (self.db, self.children);
            let several = updates.len() > 1;
            let mut caller = self.session;
            let sent = in_transaction_or(db, self.deadline, caller.as_deref_mut(), |session| {
                let (db, raw, updates) = (db.clone(), raw.clone(), updates.clone());
                Box::pin(async move {
                    // the parents first: one that does not exist refuses the child before
                    // anything of this call is written, in the library's transaction or the
                    // caller's session alike
                    for u in updates {
                        update_parent_in(&db, u, &mut *session).await?;
                    }
                    db.collection::<BsonDocument>(children)
                        .insert_one(raw)
                        .session(&mut *session)
                        .await?;
                    Ok(())
                })
            })
            .await;
            match (sent, caller) {
                (Ok(_), _) => Ok(()),
                // a later parent missing, after an earlier one's update in the caller's
                // session: that update is not left to commit silently
                (Err(error @ crate::Error::MissingParent { .. }), Some(session)) if several => {
                    Err(crate::error::after_failed_condition(session, error).await)
                }
                (Err(error), _) => Err(error),
            }
        })
    }
}

impl<'a> IntoFuture for SubsetDelete<'a> {
    type Output = Result<bool>;
    type IntoFuture = BoxFuture<'a, Result<bool>>;

    /// Deletes the child and refreshes the subsets.
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnsafeValue`] for a child id that is an operator (nothing sent), the
    /// driver's errors, and without a session [`crate::Error::Timeout`] or
    /// [`crate::Error::CommitUnknown`] of the library's transaction.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (id, rules) = self.prepared?;
            let (db, children, parts) = (self.db, self.children, self.parts);
            let (deleted, _) = in_transaction_or(db, self.deadline, self.session, |session| {
                let (db, id, rules, parts) = (db.clone(), id.clone(), rules.clone(), parts.clone());
                Box::pin(async move {
                    let Some(before) = db
                        .collection::<BsonDocument>(children)
                        .find_one_and_delete(doc! { "_id": id.clone() })
                        .session(&mut *session)
                        .await?
                    else {
                        return Ok(false);
                    };
                    // the child's parts go with it, in the same transaction
                    crate::relations::part::delete_parts_in(&db, &parts, &[id], &mut *session)
                        .await?;
                    for rule in &rules {
                        rule.refresh_in(&db, &mut *session, Some(&before), None)
                            .await?;
                    }
                    Ok(true)
                })
            })
            .await?;
            Ok(deleted)
        })
    }
}

impl<'a> IntoFuture for SubsetUpdate<'a> {
    type Output = Result<bool>;
    type IntoFuture = BoxFuture<'a, Result<bool>>;

    /// Updates the child and refreshes the subsets.
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnsafeValue`] for a child id that is an operator (nothing sent), the
    /// driver's errors ([`crate::Error::Validation`] of the update), and without a session
    /// [`crate::Error::Timeout`] or [`crate::Error::CommitUnknown`] of the library's
    /// transaction.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (id, rules) = self.prepared?;
            let (db, children, read_after) = (self.db, self.children, self.read_after);
            let update = self.update;
            let (matched, _) = in_transaction_or(db, self.deadline, self.session, |session| {
                let (db, id, update, rules) =
                    (db.clone(), id.clone(), update.clone(), rules.clone());
                Box::pin(async move {
                    let children = db.collection::<BsonDocument>(children);
                    let before = children
                        .find_one_and_update(doc! { "_id": id.clone() }, update)
                        .return_document(if read_after {
                            ReturnDocument::Before
                        } else {
                            ReturnDocument::After
                        })
                        .session(&mut *session)
                        .await?;
                    let Some(first) = before else {
                        return Ok(false);
                    };
                    let (before, after) = if read_after {
                        let after = children
                            .find_one(doc! { "_id": id })
                            .session(&mut *session)
                            .await?;
                        (first, after)
                    } else {
                        // parent and filter unchanged: the refill reads the new values anyway
                        (first.clone(), Some(first))
                    };
                    for rule in &rules {
                        rule.refresh_in(&db, &mut *session, Some(&before), after.as_ref())
                            .await?;
                    }
                    Ok(true)
                })
            })
            .await?;
            Ok(matched)
        })
    }
}

impl<'a> IntoFuture for SubsetRebuild<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Result<()>>;

    /// Reads the children and writes the parent.
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnsafeValue`] for a parent id that is an operator (nothing sent), the
    /// driver's errors, and without a session [`crate::Error::Timeout`] or
    /// [`crate::Error::CommitUnknown`] of the library's transaction.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (parent, rule) = self.prepared?;
            rebuild_in(
                self.db,
                self.parents,
                self.deadline,
                parent,
                rule,
                self.session,
            )
            .await
        })
    }
}

/// One parent's rebuild, in the library's transaction or the caller's.
pub(super) async fn rebuild_in(
    db: &Database,
    parents: &'static str,
    deadline: Duration,
    parent: Bson,
    rule: SubsetRule,
    caller: Option<&mut ClientSession>,
) -> Result<()> {
    in_transaction_or(db, deadline, caller, |session| {
        let (db, parent, rule) = (db.clone(), parent.clone(), rule.clone());
        Box::pin(async move {
            let state = rule.state(&db, Some(&mut *session), &parent).await?;
            db.collection::<BsonDocument>(parents)
                .update_one(doc! { "_id": parent }, rule.set_update(&state))
                .session(&mut *session)
                .await?;
            Ok(())
        })
    })
    .await?;
    Ok(())
}
