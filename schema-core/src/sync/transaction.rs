//! Running a short multi-document transaction with the retries the server asks for, within one
//! total deadline (the drivers' convenient transaction API uses 120 s), and telling a commit
//! whose outcome is unknown apart from one that did not happen.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::{ClientSession, Database};
use tokio::time::Instant;

use super::retry::Backoff;
use crate::error::CommitUnknownCause;
use crate::{Error, Result};

const TRANSIENT: &str = "TransientTransactionError";
const UNKNOWN_COMMIT: &str = "UnknownTransactionCommitResult";

/// The default total time for a transaction's attempts and commit retries.
pub const TRANSACTION_DEADLINE: Duration = Duration::from_secs(120);

/// Runs `body` in a transaction, retrying the whole body on `TransientTransactionError` (write
/// conflicts, a primary that went away, a commit the server reports as not done), with jittered
/// back-off, until `deadline` has passed since the call. Past it, the last error is returned
/// with its labels; an attempt still running its body at the deadline is abandoned (its
/// transaction is aborted by the server) and [`Error::Timeout`] says so.
///
/// A commit whose outcome is unknown is never retried here: one that fails with
/// `UnknownTransactionCommitResult` after the driver's own retry, or that is cut at the
/// deadline after it was sent, returns [`Error::CommitUnknown`] (it may have committed, and a
/// body run again could apply its writes twice).
///
/// Returns the body's result and the number of attempts.
///
/// # Errors
///
/// The body's error (after the retries of a transient one), [`Error::Timeout`] past the
/// deadline, and [`Error::CommitUnknown`].
pub async fn in_transaction<R>(
    db: &Database,
    deadline: Duration,
    body: impl for<'s> FnMut(&'s mut ClientSession) -> BoxFuture<'s, Result<R>>,
) -> Result<(R, u32)> {
    in_transaction_or(db, deadline, None, body).await
}

/// [`in_transaction`], or with `caller`'s session the body alone, once, inside the caller's
/// transaction: the caller owns the commit, the abort and the retry (a transient error is
/// returned with its labels, for the caller's retry loop to see), and no deadline of the
/// library's applies. Returns the body's result and `1`.
pub(crate) async fn in_transaction_or<R>(
    db: &Database,
    deadline: Duration,
    caller: Option<&mut ClientSession>,
    mut body: impl for<'s> FnMut(&'s mut ClientSession) -> BoxFuture<'s, Result<R>>,
) -> Result<(R, u32)> {
    if let Some(session) = caller {
        return Ok((body(session).await?, 1));
    }
    own_transaction(db, deadline, body).await
}

async fn own_transaction<R>(
    db: &Database,
    deadline: Duration,
    mut body: impl for<'s> FnMut(&'s mut ClientSession) -> BoxFuture<'s, Result<R>>,
) -> Result<(R, u32)> {
    let give_up = Instant::now() + deadline;
    let mut last: Option<Error> = None;
    // whether a `commitTransaction` is in flight: a cut then leaves the outcome unknown
    let committing = AtomicBool::new(false);
    let attempts = async {
        let mut session = db.client().start_session().await?;
        let mut backoff = Backoff::new(Duration::from_millis(2), Duration::from_millis(500));
        let mut attempts = 0;
        loop {
            attempts += 1;
            session
                .start_transaction()
                .with_options(crate::concern::transaction())
                .await?;
            match body(&mut session).await {
                Ok(result) => {
                    committing.store(true, Ordering::SeqCst);
                    let commit = session.commit_transaction().await;
                    committing.store(false, Ordering::SeqCst);
                    match commit {
                        Ok(()) => return Ok((result, attempts)),
                        // the driver retried the commit once already: it may have committed
                        Err(e) if e.contains_label(UNKNOWN_COMMIT) => {
                            return Err(commit_unknown(
                                CommitUnknownCause::UnknownCommitResult,
                                Some(e.into()),
                            ));
                        }
                        // the server says the transaction did not commit: run it again
                        Err(e) if e.contains_label(TRANSIENT) && Instant::now() < give_up => {
                            last = Some(e.into());
                        }
                        Err(e) => return Err(Error::from(e)),
                    }
                }
                Err(error) => {
                    let _ = session.abort_transaction().await;
                    if !error.contains_label(TRANSIENT) || Instant::now() >= give_up {
                        return Err(error);
                    }
                    last = Some(error);
                }
            }
            let wait = backoff.next_wait();
            if Instant::now() + wait >= give_up {
                return Err(last.take().unwrap_or_else(|| timeout(deadline, None)));
            }
            tokio::time::sleep(wait).await;
        }
    };
    // a body or commit that hangs (a server gone without a word) is cut at the deadline too
    let outcome = tokio::time::timeout_at(give_up, attempts).await;
    match outcome {
        Ok(result) => result,
        Err(_) if committing.load(Ordering::SeqCst) => Err(commit_unknown(
            CommitUnknownCause::Deadline { after: deadline },
            last,
        )),
        Err(_) => Err(timeout(deadline, last)),
    }
}

fn commit_unknown(cause: CommitUnknownCause, last: Option<Error>) -> Error {
    Error::CommitUnknown {
        operation: "transaction".to_owned(),
        cause,
        last: last.map(Box::new),
    }
}

fn timeout(deadline: Duration, last: Option<Error>) -> Error {
    Error::Timeout {
        operation: "transaction".to_owned(),
        after: deadline,
        last: last.map(Box::new),
    }
}
