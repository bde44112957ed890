//! The fifth stage of `apply`: sends the planned writes, in order, while this apply holds the
//! lock, and tells the server's refusals apart (the state changed under the plan, a fault that
//! passes, or a refusal for good).

use mongodb::bson::{doc, Bson};
use mongodb::error::ErrorKind;
use mongodb::Database;
use tracing::Instrument as _;

use super::lock::ApplyLock;
use super::plan::Action;
use super::sharding;
use crate::error::{server_code, TRANSIENT_CODES};
use crate::Error;

/// One write of `apply` and how it went.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AppliedAction {
    /// The action.
    pub action: Action,
    /// `true` when it had already been done by someone else (a `create` that met an existing
    /// collection, code 48).
    pub done_concurrently: bool,
}

/// Why the writes stopped short.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The state changed under the plan (a concurrent apply, an operator): observe again.
    Replan(Error),
    /// Likely to pass: back off and try again (this includes a lease that may have lapsed).
    Transient(Error),
    /// Retrying cannot help; the action the server refused.
    Permanent(Error, Box<Action>),
}

/// Sends `writes` in order, each only while `lock` may still be held; appends each one sent
/// (and a `create` that met the collection created concurrently) to `applied`.
pub(crate) async fn execute(
    db: &Database,
    lock: &ApplyLock,
    writes: Vec<Action>,
    applied: &mut Vec<AppliedAction>,
) -> Result<(), Stopped> {
    let total = writes.len() as u64;
    for (done, action) in writes.into_iter().enumerate() {
        if !lock.holds() {
            return Err(Stopped::Transient(lock_lost()));
        }
        let span = tracing::info_span!("apply_action", collection = action.collection());
        match send(db, &action).instrument(span).await {
            Ok(()) => {
                crate::progress::report("apply", done as u64 + 1, Some(total), &action);
                applied.push(AppliedAction {
                    action,
                    done_concurrently: false,
                })
            }
            Err(source) => {
                let fault = Fault::of(&source);
                let created_concurrently = matches!(action, Action::CreateCollection { .. })
                    && server_code(&source) == Some(48);
                let error = Error::Apply {
                    action: action.to_string(),
                    source,
                };
                if created_concurrently {
                    applied.push(AppliedAction {
                        action: action.clone(),
                        done_concurrently: true,
                    });
                }
                return Err(match fault {
                    Fault::Replan => Stopped::Replan(error),
                    Fault::Transient => Stopped::Transient(error),
                    Fault::Permanent => Stopped::Permanent(error, Box::new(action)),
                });
            }
        }
    }
    Ok(())
}

/// The lock lapsed under this attempt: the next attempt takes it again (a retry, so this is
/// the `last` error of a [`Error::Timeout`] if none succeeds).
pub(crate) fn lock_lost() -> Error {
    Error::LockLost {
        lock: crate::error::LockKind::Apply,
        during: "apply's commands".to_owned(),
    }
}

/// The command of one action.
async fn send(db: &Database, action: &Action) -> mongodb::error::Result<()> {
    let command = match action {
        Action::CreateCollection {
            collection,
            validator,
            level,
            action,
            collation,
            timeseries,
        } => {
            let mut create = doc! { "create": collection };
            match timeseries {
                // mongod refuses a validator, a level and an action on a time series
                // collection (InvalidOptions, jstests/core/timeseries/ddl/timeseries_create.js)
                Some(timeseries) => {
                    create.insert("timeseries", timeseries.to_document());
                    if let Some(secs) = timeseries.expire_after_secs {
                        create.insert("expireAfterSeconds", secs as i64);
                    }
                }
                None => {
                    create.insert("validator", validator.clone());
                    create.insert("validationLevel", level.as_str());
                    create.insert("validationAction", action.as_str());
                }
            }
            if let Some(collation) = collation {
                create.insert("collation", collation.to_document());
            }
            create
        }
        Action::ModifyTimeSeries {
            collection,
            granularity,
            expire_after_secs,
            ..
        } => {
            let mut coll_mod = doc! { "collMod": collection };
            if let Some(granularity) = granularity {
                coll_mod.insert("timeseries", doc! { "granularity": granularity.as_str() });
            }
            match expire_after_secs {
                Some(Some(secs)) => {
                    coll_mod.insert("expireAfterSeconds", *secs as i64);
                }
                Some(None) => {
                    coll_mod.insert("expireAfterSeconds", "off");
                }
                None => {}
            }
            coll_mod
        }
        Action::UpdateValidator {
            collection,
            validator,
            level,
            action,
            ..
        } => doc! {
            "collMod": collection,
            "validator": validator.clone(),
            "validationLevel": level.as_str(),
            "validationAction": action.as_str(),
        },
        Action::CreateIndexes {
            collection,
            indexes,
        } => doc! {
            "createIndexes": collection,
            "indexes": indexes.iter().map(|i| Bson::Document(i.to_document())).collect::<Vec<_>>(),
        },
        Action::DropIndex {
            collection, name, ..
        } => doc! {
            "dropIndexes": collection,
            "index": name,
        },
        Action::EnablePreImages { collection } => doc! {
            "collMod": collection,
            "changeStreamPreAndPostImages": { "enabled": true },
        },
        Action::ShardCollection { collection, key } => {
            let command = sharding::shard_command(db.name(), collection, key);
            return db
                .client()
                .database("admin")
                .run_command(command)
                .await
                .map(drop);
        }
    };
    // a command sent as such inherits no write concern: the schema's state is acknowledged by
    // a majority (it survives a failover), whatever the URI says
    let mut command = command;
    command.insert("writeConcern", crate::concern::majority_document());
    db.run_command(command).await.map(drop)
}

/// What to do about a driver error of an `apply` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The state changed under the plan (a concurrent apply, an operator): observe again.
    Replan,
    /// Likely to pass: back off and retry.
    Transient,
    /// Retrying cannot help.
    Permanent,
}

/// NamespaceNotFound, IndexNotFound, NamespaceExists, IndexOptionsConflict,
/// IndexKeySpecsConflict: the server's state is not what the plan was computed from.
const REPLAN_CODES: &[i32] = &[26, 27, 48, 85, 86];

impl Fault {
    pub(crate) fn of(error: &mongodb::error::Error) -> Fault {
        if let Some(code) = server_code(error) {
            if REPLAN_CODES.contains(&code) {
                return Fault::Replan;
            }
            if TRANSIENT_CODES.contains(&code) {
                return Fault::Transient;
            }
        }
        if ["RetryableWriteError", "TransientTransactionError"]
            .iter()
            .any(|label| error.contains_label(label))
        {
            return Fault::Transient;
        }
        match error.kind.as_ref() {
            ErrorKind::Io(_)
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::ServerSelection { .. }
            | ErrorKind::DnsResolve { .. } => Fault::Transient,
            _ => Fault::Permanent,
        }
    }

    /// The fault of one of the library's errors: a driver error's, else permanent.
    pub(crate) fn of_error(error: &Error) -> Fault {
        match error.as_driver() {
            Some(driver)
                if !matches!(error, Error::Timeout { .. } | Error::CommitUnknown { .. }) =>
            {
                Fault::of(driver)
            }
            _ => Fault::Permanent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command_error(code: i32) -> mongodb::error::Error {
        // the driver's own parsing of a server reply, as a failed command gives it
        let reply = doc! { "ok": 0, "code": code, "errmsg": "x" };
        let error: mongodb::error::CommandError =
            crate::bson_compat::from_document(reply).expect("a command error");
        mongodb::error::Error::from(ErrorKind::Command(error))
    }

    #[test]
    fn race_codes_re_plan_transient_faults_retry_the_rest_fail() {
        for code in [26, 27, 48, 85, 86] {
            assert_eq!(Fault::of(&command_error(code)), Fault::Replan, "{code}");
        }
        for code in [91, 189, 10107, 11600, 11602, 13435, 12587] {
            assert_eq!(Fault::of(&command_error(code)), Fault::Transient, "{code}");
        }
        for code in [2, 13, 67, 121, 11000] {
            assert_eq!(Fault::of(&command_error(code)), Fault::Permanent, "{code}");
        }
        let io = mongodb::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert_eq!(Fault::of(&io), Fault::Transient);
        assert_eq!(
            Fault::of_error(&Error::Downgrade {
                recorded: 2,
                applying: 1
            }),
            Fault::Permanent
        );
    }
}
