//! Embedded arrays bounded by `#[embed(max = N)]`: pushes that keep the bound.

use std::marker::PhantomData;

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};
use serde::Serialize;

use crate::{Document, Error, Result};

use crate::relations::to_bson;

/// An embedded array bounded by `#[embed(max = N)]`, as a constant named after the field in
/// upper case (`Ticket::HISTORY`). With `cap`, every push keeps only the newest `N` items
/// (`$each` + `$slice: -N`); without it, a push that would exceed `N` is refused (the document is
/// not matched) instead of failing validation.
#[derive(Debug)]
pub struct EmbeddedArray<P, E> {
    path: &'static str,
    max: u64,
    cap: bool,
    types: PhantomData<fn() -> (P, E)>,
}

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushOutcome {
    /// Documents matched by the filter (and, without `cap`, with room for the items).
    pub matched: u64,
    /// Documents changed.
    pub modified: u64,
}

impl<P, E> EmbeddedArray<P, E> {
    #[doc(hidden)]
    /// Used by generated code.
    pub const fn new(path: &'static str, max: u64, cap: bool) -> Self {
        EmbeddedArray {
            path,
            max,
            cap,
            types: PhantomData,
        }
    }

    /// The stored path.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The bound.
    pub fn max(&self) -> u64 {
        self.max
    }
}

impl<P: Document, E: Serialize> EmbeddedArray<P, E> {
    /// The `$push` of `items`: with `cap`, `$each` + `$slice: -max`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Serialization`] for an item that does not serialize.
    pub fn push_update(&self, items: &[E]) -> Result<BsonDocument> {
        let items: Vec<Bson> = items.iter().map(to_bson).collect::<Result<_>>()?;
        let mut push = doc! { "$each": items };
        if self.cap {
            push.insert("$slice", -(self.max as i64));
        }
        Ok(doc! { "$push": { self.path: push } })
    }

    /// `filter`, plus (without `cap`) the condition that `n` more items fit.
    pub fn push_filter(&self, mut filter: BsonDocument, n: usize) -> BsonDocument {
        if !self.cap {
            let last_allowed = (self.max as usize).saturating_sub(n);
            filter.insert(
                format!("{}.{last_allowed}", self.path),
                doc! { "$exists": false },
            );
        }
        filter
    }

    /// Pushes `items` into the array of the documents matching `filter` (with `extra` update
    /// operators merged in, e.g. `$set` of the status the history entry records). Await it;
    /// with [`.session(&mut s)`](EmbeddedPush::session) it is one write of the caller's
    /// transaction.
    ///
    /// # Errors
    ///
    /// Refused before anything is sent with [`Error::BoundExceeded`] when the array has no `cap`
    /// and `items` holds more than `max` (no document could take them), with
    /// [`Error::InvalidArgument`] (`extra`) when `extra` writes the array itself (its bound would
    /// no longer be kept), and [`Error::Serialization`] for an item that does not serialize.
    /// Then the driver's errors ([`Error::Validation`]).
    pub fn push<'a>(
        &self,
        db: &'a Database,
        filter: BsonDocument,
        items: &[E],
        extra: Option<BsonDocument>,
    ) -> EmbeddedPush<'a> {
        EmbeddedPush {
            db,
            collection: P::COLLECTION,
            prepared: self.prepare_push(filter, items, extra),
            session: None,
        }
    }

    fn prepare_push(
        &self,
        filter: BsonDocument,
        items: &[E],
        extra: Option<BsonDocument>,
    ) -> Result<(BsonDocument, BsonDocument)> {
        if !self.cap && items.len() as u64 > self.max {
            return Err(Error::BoundExceeded {
                path: format!("{}.{}", P::COLLECTION, self.path),
                max: self.max,
                attempted: items.len() as u64,
            });
        }
        let mut update = self.push_update(items)?;
        if let Some(extra) = extra {
            if let Some(path) = writes_path(&extra, self.path) {
                return Err(Error::invalid_argument(
                    "extra",
                    format!(
                        "the extra update writes `{path}`, inside the bounded array `{}.{}`: push to it only through this helper",
                        P::COLLECTION,
                        self.path
                    ),
                ));
            }
            for (operator, arguments) in extra {
                match (update.get_mut(&operator), arguments) {
                    (Some(Bson::Document(existing)), Bson::Document(more)) => existing.extend(more),
                    (_, arguments) => {
                        update.insert(operator, arguments);
                    }
                }
            }
        }
        Ok((self.push_filter(filter, items.len()), update))
    }
}

/// [`EmbeddedArray::push`]: one `updateMany`. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct EmbeddedPush<'a> {
    db: &'a Database,
    collection: &'static str,
    prepared: Result<(BsonDocument, BsonDocument)>,
    session: Option<&'a mut ClientSession>,
}

impl<'a> EmbeddedPush<'a> {
    /// Sends the update in `session`: one write of the caller's transaction when one is
    /// started.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a> std::future::IntoFuture for EmbeddedPush<'a> {
    type Output = Result<PushOutcome>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Self::Output>;

    /// Sends the `updateMany`.
    ///
    /// # Errors
    ///
    /// As [`EmbeddedArray::push`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (filter, update) = self.prepared?;
            let holders = self.db.collection::<BsonDocument>(self.collection);
            let action = holders.update_many(filter, update);
            let result = match self.session {
                Some(session) => action.session(session).await?,
                None => action.await?,
            };
            Ok(PushOutcome {
                matched: result.matched_count,
                modified: result.modified_count,
            })
        })
    }
}

/// The first path that `update` writes at or inside `path` (`$rename` targets included); a
/// replacement document (no operators) writes everything.
pub(crate) fn writes_path(update: &BsonDocument, path: &str) -> Option<String> {
    let inside = |written: &str| {
        written == path
            || written.starts_with(&format!("{path}."))
            || path.starts_with(&format!("{written}."))
    };
    for (operator, arguments) in update {
        if !operator.starts_with('$') {
            return Some(operator.clone());
        }
        let Bson::Document(arguments) = arguments else {
            continue;
        };
        for (written, value) in arguments {
            if inside(written) {
                return Some(written.clone());
            }
            if let (true, Bson::String(to)) = (operator == "$rename", value) {
                if inside(to) {
                    return Some(to.clone());
                }
            }
        }
    }
    None
}
