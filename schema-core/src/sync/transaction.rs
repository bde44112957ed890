//! Running a short multi-document transaction with the retries the server asks for, within one
//! total deadline (the drivers' convenient transaction API uses 120 s).

use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::{ClientSession, Database};
use tokio::time::Instant;

use super::retry::Backoff;
use crate::{Error, Result};

const TRANSIENT: &str = "TransientTransactionError";
const UNKNOWN_COMMIT: &str = "UnknownTransactionCommitResult";

/// The default total time for a transaction's attempts and commit retries.
pub const TRANSACTION_DEADLINE: Duration = Duration::from_secs(120);

/// Runs `body` in a transaction, retrying the whole body on `TransientTransactionError` (write
/// conflicts, a primary that went away) and the commit on `UnknownTransactionCommitResult`,
/// with jittered back-off, until `deadline` has passed since the call. Past it, the last error
/// is returned with its labels; an attempt still running at the deadline is abandoned (its
/// transaction is aborted by the server) and [`Error::Timeout`] says so.
///
/// Returns the body's result and the number of attempts.
pub(crate) async fn in_transaction<R>(
    db: &Database,
    deadline: Duration,
    mut body: impl for<'s> FnMut(&'s mut ClientSession) -> BoxFuture<'s, Result<R>>,
) -> Result<(R, u32)> {
    let give_up = Instant::now() + deadline;
    let mut last: Option<Error> = None;
    let attempts = async {
        let mut session = db.client().start_session().await?;
        let mut backoff = Backoff::new(Duration::from_millis(2), Duration::from_millis(500));
        let mut attempts = 0;
        loop {
            attempts += 1;
            session.start_transaction().await?;
            match body(&mut session).await {
                Ok(result) => loop {
                    match session.commit_transaction().await {
                        Ok(()) => return Ok((result, attempts)),
                        // the commit may or may not have happened: commit again (the driver
                        // sends it with a majority write concern)
                        Err(e) if e.contains_label(UNKNOWN_COMMIT) && Instant::now() < give_up => {
                            last = Some(e.into());
                            tokio::time::sleep(backoff.next_wait()).await;
                        }
                        Err(e) if e.contains_label(TRANSIENT) && Instant::now() < give_up => {
                            last = Some(e.into());
                            break;
                        }
                        Err(e) => return Err(Error::from(e)),
                    }
                },
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
        Err(_) => Err(timeout(deadline, last)),
    }
}

fn timeout(deadline: Duration, last: Option<Error>) -> Error {
    Error::Timeout {
        operation: "transaction".to_owned(),
        after: deadline,
        last: last.map(Box::new),
    }
}
