//! Running a short multi-document transaction with the retries the server asks for.

use futures_util::future::BoxFuture;
use mongodb::{ClientSession, Database};

use crate::{Error, Result};

const TRANSIENT: &str = "TransientTransactionError";
const UNKNOWN_COMMIT: &str = "UnknownTransactionCommitResult";
const MAX_ATTEMPTS: u32 = 50;

/// Runs `body` in a transaction, retrying the whole body on `TransientTransactionError` (write
/// conflicts with concurrent transactions) and the commit on `UnknownTransactionCommitResult`.
/// Returns the body's result and the number of attempts.
pub(crate) async fn in_transaction<R>(
    db: &Database,
    mut body: impl for<'s> FnMut(&'s mut ClientSession) -> BoxFuture<'s, Result<R>>,
) -> Result<(R, u32)> {
    let mut session = db.client().start_session().await?;
    let mut attempts = 0;
    loop {
        attempts += 1;
        session.start_transaction().await?;
        match body(&mut session).await {
            Ok(result) => match commit(&mut session).await {
                Ok(()) => return Ok((result, attempts)),
                Err(e) if e.contains_label(TRANSIENT) && attempts < MAX_ATTEMPTS => {}
                Err(e) => return Err(e.into()),
            },
            Err(error) => {
                let _ = session.abort_transaction().await;
                let transient = matches!(&error, Error::Driver(e) if e.contains_label(TRANSIENT));
                if !transient || attempts >= MAX_ATTEMPTS {
                    return Err(error);
                }
            }
        }
        // back off a little, more for each conflict, with a jitter that differs between
        // concurrent tasks (sub-second clock), so contending writers spread out
        let jitter = u64::from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .subsec_nanos()
                % 5,
        );
        tokio::time::sleep(std::time::Duration::from_millis(
            u64::from(attempts.min(20)) + jitter,
        ))
        .await;
    }
}

async fn commit(session: &mut ClientSession) -> mongodb::error::Result<()> {
    loop {
        match session.commit_transaction().await {
            Err(e) if e.contains_label(UNKNOWN_COMMIT) => continue,
            other => return other,
        }
    }
}
