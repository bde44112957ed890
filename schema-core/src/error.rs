//! The error type of the runtime.

use std::fmt;
use std::time::Duration;

use crate::{SchemaError, ValidationError};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong at run time.
///
/// `Debug` shows the same sentence as `Display` (as `anyhow` does), so that
/// `fn main() -> Result<(), mongo_schema::Error>` and `unwrap()` print what went wrong rather
/// than a struct; `{:#?}` shows the structure.
#[derive(Clone)]
#[non_exhaustive]
pub enum Error {
    /// A write was rejected by the collection's validator (code 121).
    Validation(Box<ValidationError>),
    /// The set of models is inconsistent (see [`crate::Schema::new`]).
    Schema(SchemaError),
    /// A command of `apply` failed; nothing after it was attempted.
    Apply {
        /// What `apply` was doing.
        action: String,
        /// The driver's error.
        source: mongodb::error::Error,
    },
    /// A write met a unique index that already holds its key (E11000): the collection, the
    /// index and the duplicated key as the server names them. The driver's error (with its
    /// labels) is kept as `source`.
    #[non_exhaustive]
    Duplicate {
        /// The collection written to (as the server names it, `db.collection`, unless the call
        /// named it, see [`ResultExt::in_collection`]).
        collection: String,
        /// The unique index (`email_1`), empty when the server did not say.
        index: String,
        /// The duplicated key as the server prints it (`{ email: "ada@example.com" }`), empty
        /// when the server did not say.
        key: String,
        /// The driver's error (boxed: it keeps `Error` small).
        source: Box<mongodb::error::Error>,
    },
    /// Any other driver error.
    Driver(mongodb::error::Error),
    /// An operation gave up at its deadline: a transaction whose attempts did not commit in
    /// time (see [`crate::SchemaBuilder::transaction_deadline`]), or a sync worker that did not
    /// become ready (see [`crate::SyncWorker::ready_timeout`]).
    Timeout {
        /// What was given up.
        operation: String,
        /// The deadline it had.
        after: Duration,
        /// The last error seen before giving up, if any (with its labels).
        last: Option<Box<Error>>,
    },
    /// A transaction's `commitTransaction` was sent and whether it committed is unknown: the
    /// commit was cut at the transaction's deadline while in flight, or it failed with
    /// `UnknownTransactionCommitResult` (a network error or a write concern not satisfied) after
    /// the driver's own retry. The transaction may have committed. Never classed transient and
    /// never retried by the library: a retry of a write that is not idempotent (`$inc`, `$push`)
    /// could apply it twice. Read the documents back to learn whether the write landed (or make
    /// it idempotent, e.g. `$set` of values computed before, and retry it).
    CommitUnknown {
        /// What was being committed (`"transaction"`).
        operation: String,
        /// Why the outcome is unknown, in words.
        reason: String,
        /// The commit's error, if it failed rather than being cut at the deadline.
        last: Option<Box<Error>>,
    },
    /// The call was refused before anything was written, because carrying it out would break a
    /// bound or a rule of the schema (for example a push of more items than an array's `max`).
    Refused(String),
    /// The sync worker ended on an error that retrying cannot fix (authentication, change
    /// streams unsupported, a configuration the server refuses), or panicked.
    Worker(String),
    /// `apply` of an older schema version than the one recorded in the database (see
    /// [`crate::SchemaBuilder::version`]); nothing was written. Deploy the recorded version or a
    /// later one, or apply with `allow_downgrade(true)`.
    Downgrade {
        /// The version recorded in the database.
        recorded: u64,
        /// The version this apply was for.
        applying: u64,
    },
    /// A migration step failed (see [`crate::SchemaBuilder::migration`]): its record in
    /// [`crate::migrate::MIGRATIONS_COLLECTION`] says `failed` with the error, and the next
    /// `apply` runs it again from its checkpoint.
    Migration {
        /// The step's version.
        version: u64,
        /// The step's name.
        name: String,
        /// What went wrong.
        source: Box<Error>,
    },
}

impl Error {
    /// The validation failure, if this is one.
    pub fn as_validation(&self) -> Option<&ValidationError> {
        match self {
            Error::Validation(e) => Some(e.as_ref()),
            _ => None,
        }
    }

    /// The driver error underneath, if any (for a [`Error::Timeout`] or an
    /// [`Error::CommitUnknown`], its last error's).
    pub fn as_driver(&self) -> Option<&mongodb::error::Error> {
        match self {
            Error::Duplicate { source, .. } => Some(source.as_ref()),
            Error::Driver(e) | Error::Apply { source: e, .. } => Some(e),
            Error::Timeout {
                last: Some(last), ..
            }
            | Error::CommitUnknown {
                last: Some(last), ..
            } => last.as_driver(),
            _ => None,
        }
    }

    /// Whether the server or the driver labelled the error `label` (for example
    /// `TransientTransactionError`).
    pub fn contains_label(&self, label: &str) -> bool {
        self.as_driver().is_some_and(|e| e.contains_label(label))
    }

    /// Whether a unique index refused the write because it already holds the key (E11000):
    /// [`Error::Duplicate`], whatever call made the write.
    pub fn is_duplicate_key(&self) -> bool {
        matches!(self, Error::Duplicate { .. })
    }

    /// Whether the same call, retried later, may succeed: the server or the driver labelled
    /// the error `TransientTransactionError` or `RetryableWriteError`, the network or server
    /// selection failed, the server answered with a code it gives while it recovers (a
    /// primary stepping down, a write conflict, ...), or an operation gave up at its deadline
    /// ([`Error::Timeout`]). A validation failure, a duplicate key, a refusal, an invalid
    /// schema and a commit whose outcome is unknown ([`Error::CommitUnknown`]: it may have
    /// landed) are not; nor is a driver error this list does not name.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Timeout { .. } => true,
            Error::Migration { source, .. } => source.is_transient(),
            Error::Driver(e) | Error::Apply { source: e, .. } => known_transient(e),
            _ => false,
        }
    }

    /// The server's error code, if the error carries one (121 for a validation failure).
    pub fn code(&self) -> Option<i32> {
        match self {
            Error::Validation(_) => Some(121),
            _ => self.as_driver().and_then(server_code),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return fmt::Display::fmt(self, f);
        }
        match self {
            Error::Validation(e) => f.debug_tuple("Validation").field(e).finish(),
            Error::Schema(e) => f.debug_tuple("Schema").field(&e.problems).finish(),
            Error::Apply { action, source } => f
                .debug_struct("Apply")
                .field("action", action)
                .field("source", source)
                .finish(),
            Error::Duplicate {
                collection,
                index,
                key,
                source,
            } => f
                .debug_struct("Duplicate")
                .field("collection", collection)
                .field("index", index)
                .field("key", key)
                .field("source", source)
                .finish(),
            Error::Driver(e) => f.debug_tuple("Driver").field(e).finish(),
            Error::Timeout {
                operation,
                after,
                last,
            } => f
                .debug_struct("Timeout")
                .field("operation", operation)
                .field("after", after)
                .field("last", last)
                .finish(),
            Error::CommitUnknown {
                operation,
                reason,
                last,
            } => f
                .debug_struct("CommitUnknown")
                .field("operation", operation)
                .field("reason", reason)
                .field("last", last)
                .finish(),
            Error::Refused(reason) => f.debug_tuple("Refused").field(reason).finish(),
            Error::Worker(reason) => f.debug_tuple("Worker").field(reason).finish(),
            Error::Downgrade { recorded, applying } => f
                .debug_struct("Downgrade")
                .field("recorded", recorded)
                .field("applying", applying)
                .finish(),
            Error::Migration {
                version,
                name,
                source,
            } => f
                .debug_struct("Migration")
                .field("version", version)
                .field("name", name)
                .field("source", source)
                .finish(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Validation(e) => e.fmt(f),
            Error::Schema(e) => e.fmt(f),
            Error::Apply { action, source } => {
                write!(f, "apply failed to {action}: {}", driver_sentence(source))
            }
            Error::Duplicate {
                collection,
                index,
                key,
                ..
            } => {
                write!(f, "duplicate key in `{collection}`")?;
                if !index.is_empty() {
                    write!(f, ": unique index `{index}`")?;
                }
                if !key.is_empty() {
                    write!(f, " already holds {key}")?;
                }
                Ok(())
            }
            Error::Driver(e) => f.write_str(&driver_sentence(e)),
            Error::Timeout {
                operation,
                after,
                last,
            } => {
                write!(f, "{operation} gave up after {after:?}")?;
                match last {
                    Some(last) => write!(f, "; last error: {last}"),
                    None => Ok(()),
                }
            }
            Error::CommitUnknown {
                operation,
                reason,
                last,
            } => {
                write!(
                    f,
                    "the outcome of the {operation}'s commit is unknown ({reason}): it may have committed; read back before retrying a write that is not idempotent"
                )?;
                match last {
                    Some(last) => write!(f, "; last error: {last}"),
                    None => Ok(()),
                }
            }
            Error::Refused(reason) => write!(f, "refused: {reason}"),
            Error::Worker(reason) => write!(f, "sync worker stopped: {reason}"),
            Error::Downgrade { recorded, applying } => write!(
                f,
                "refused to apply schema version {applying}: the database records the newer version {recorded}; nothing was written (deploy version {recorded} or later, or apply with `allow_downgrade(true)`)"
            ),
            Error::Migration {
                version,
                name,
                source,
            } => write!(
                f,
                "migration step `{name}` of version {version} failed: {source} (recorded `failed`; the next apply runs it again from its checkpoint)"
            ),
        }
    }
}

/// The driver's error as a sentence: the server's code, name and message for a command or
/// write error, without the raw reply the driver's own `Display` appends as hex.
pub(crate) fn driver_sentence(error: &mongodb::error::Error) -> String {
    use mongodb::error::{ErrorKind, WriteFailure};
    let labels = error.labels();
    let labels = if labels.is_empty() {
        String::new()
    } else {
        let mut labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        labels.sort_unstable();
        format!(" [{}]", labels.join(", "))
    };
    match error.kind.as_ref() {
        ErrorKind::Command(e) => format!(
            "server error {} ({}): {}{labels}",
            e.code, e.code_name, e.message
        ),
        ErrorKind::Write(WriteFailure::WriteError(e)) => {
            format!("write error {}: {}{labels}", e.code, e.message)
        }
        ErrorKind::Write(WriteFailure::WriteConcernError(e)) => format!(
            "write concern error {} ({}): {}{labels}",
            e.code, e.code_name, e.message
        ),
        _ => {
            let text = error.to_string();
            match text.find(", server response:") {
                Some(cut) => text[..cut].to_owned(),
                None => text,
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Validation(e) => Some(e.as_ref()),
            Error::Schema(e) => Some(e),
            Error::Apply { source, .. } | Error::Driver(source) => Some(source),
            Error::Duplicate { source, .. } => Some(source.as_ref()),
            Error::Timeout { last, .. } | Error::CommitUnknown { last, .. } => {
                last.as_deref().map(|e| e as _)
            }
            Error::Migration { source, .. } => Some(source.as_ref()),
            Error::Refused(_) | Error::Worker(_) | Error::Downgrade { .. } => None,
        }
    }
}

impl From<mongodb::error::Error> for Error {
    fn from(error: mongodb::error::Error) -> Self {
        if let Some(validation) = ValidationError::from_driver(&error) {
            return Error::Validation(Box::new(validation));
        }
        if server_code(&error) == Some(11000) {
            let message = server_message(&error).unwrap_or_default();
            let (collection, index, key) = duplicate_parts(&message);
            return Error::Duplicate {
                collection,
                index,
                key,
                source: Box::new(error),
            };
        }
        Error::Driver(error)
    }
}

/// The collection, index and key of mongod's E11000 message:
/// `E11000 duplicate key error collection: shop.customers index: email_1 dup key: { email: "a" }`.
fn duplicate_parts(message: &str) -> (String, String, String) {
    let after = |label: &str| message.find(label).map(|at| &message[at + label.len()..]);
    let collection = after("collection: ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default();
    let index = after(" index: ")
        .and_then(|rest| rest.split(" dup key:").next())
        .map(str::trim)
        .unwrap_or_default();
    let key = after("dup key: ").map(str::trim).unwrap_or_default();
    (collection.to_owned(), index.to_owned(), key.to_owned())
}

impl From<ValidationError> for Error {
    fn from(error: ValidationError) -> Self {
        Error::Validation(Box::new(error))
    }
}

impl From<SchemaError> for Error {
    fn from(error: SchemaError) -> Self {
        Error::Schema(error)
    }
}

/// Turns driver results into [`Result`]s whose validation failures are typed and name their
/// collection.
///
/// ```no_run
/// # use mongo_schema_core::{Document, ResultExt};
/// # async fn f<T: Document + serde::Serialize + Send + Sync>(db: &mongodb::Database, value: &T) -> mongo_schema_core::Result<()> {
/// T::collection(db).insert_one(value).await.in_collection(T::COLLECTION)?;
/// # Ok(()) }
/// ```
pub trait ResultExt<T> {
    /// Maps the error: a validation failure becomes [`Error::Validation`] with `collection`
    /// set, a duplicate key [`Error::Duplicate`] naming `collection`, anything else
    /// [`Error::Driver`].
    fn in_collection(self, collection: &str) -> Result<T>;
}

impl<T> ResultExt<T> for std::result::Result<T, mongodb::error::Error> {
    fn in_collection(self, collection: &str) -> Result<T> {
        self.map_err(|error| match Error::from(error) {
            Error::Validation(v) => Error::Validation(Box::new(v.with_collection(collection))),
            Error::Duplicate {
                index, key, source, ..
            } => Error::Duplicate {
                collection: collection.to_owned(),
                index,
                key,
                source,
            },
            other => other,
        })
    }
}

/// A driver error that retrying may cure, by what it says of itself: a transient label, a
/// network or server-selection failure, or a code a recovering server gives.
pub(crate) fn known_transient(error: &mongodb::error::Error) -> bool {
    use mongodb::error::ErrorKind;
    error.contains_label("TransientTransactionError")
        || error.contains_label("RetryableWriteError")
        || matches!(
            error.kind.as_ref(),
            ErrorKind::Io(_)
                | ErrorKind::ConnectionPoolCleared { .. }
                | ErrorKind::ServerSelection { .. }
                | ErrorKind::DnsResolve { .. }
        )
        || server_code(error).is_some_and(|code| TRANSIENT_CODES.contains(&code))
}

/// The server's error code of a driver error, if it carries one.
pub(crate) fn server_code(error: &mongodb::error::Error) -> Option<i32> {
    use mongodb::error::{ErrorKind, WriteFailure};
    match error.kind.as_ref() {
        ErrorKind::Command(e) => Some(e.code),
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(e)) => Some(e.code),
        _ => None,
    }
}

/// The server's own message of a driver error, if it carries one (without the driver's wrapping).
pub(crate) fn server_message(error: &mongodb::error::Error) -> Option<String> {
    use mongodb::error::{ErrorKind, WriteFailure};
    match error.kind.as_ref() {
        ErrorKind::Command(e) => Some(e.message.clone()),
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.message.clone()),
        ErrorKind::Write(WriteFailure::WriteConcernError(e)) => Some(e.message.clone()),
        _ => None,
    }
}

/// Server codes that mean "try again later", for the retries of `apply` and of the sync
/// machinery: not primary, shutting down, interrupted, network trouble a server reports, stale
/// routing on a mongos, conflicts, a cursor lost across a restart, an index build in progress.
pub(crate) const TRANSIENT_CODES: &[i32] = &[
    6,     // HostUnreachable
    7,     // HostNotFound
    43,    // CursorNotFound
    50,    // MaxTimeMSExpired
    63,    // StaleShardVersion
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    112,   // WriteConflict
    133,   // FailedToSatisfyReadPreference
    150,   // StaleEpoch
    189,   // PrimarySteppedDown
    234,   // RetryChangeStream
    251,   // NoSuchTransaction
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11601, // Interrupted
    11602, // InterruptedDueToReplStateChange
    12586, // BackgroundOperationInProgressForDatabase
    12587, // BackgroundOperationInProgressForNamespace
    13388, // StaleConfig
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors_are_the_ones_a_retry_may_cure() {
        let io = Error::Driver(mongodb::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        )));
        assert!(io.is_transient(), "{io}");
        let timeout = Error::Timeout {
            operation: "the transaction".into(),
            after: Duration::from_secs(1),
            last: None,
        };
        assert!(timeout.is_transient());
        // the control: errors a retry cannot cure
        let refused = Error::Refused("a push over the bound".into());
        assert!(!refused.is_transient() && !refused.is_duplicate_key());
        let other = Error::Driver(mongodb::error::Error::custom("something else"));
        assert!(
            !other.is_transient(),
            "an unnamed driver error is not assumed transient"
        );
        let in_migration = Error::Migration {
            version: 2,
            name: "dedupe".into(),
            source: Box::new(io),
        };
        assert!(in_migration.is_transient(), "a migration's transient cause");
    }

    #[test]
    fn debug_shows_the_sentence_and_the_alternate_form_the_structure() {
        let schema = Error::Schema(SchemaError {
            problems: vec![
                "`loans.member_id` references `Member`, which is not part of the schema".into(),
            ],
        });
        let debug = format!("{schema:?}");
        assert_eq!(debug, schema.to_string());
        assert!(
            debug.starts_with("invalid schema: `loans.member_id`"),
            "{debug}"
        );
        assert!(format!("{schema:#?}").starts_with("Schema("));
        let refused = Error::Refused("a push of 3 items over `tags`' max of 2".into());
        assert_eq!(format!("{refused:?}"), refused.to_string());
        let downgrade = Error::Downgrade {
            recorded: 5,
            applying: 4,
        };
        assert_eq!(format!("{downgrade:?}"), downgrade.to_string());
        assert!(format!("{downgrade:#?}").contains("recorded: 5"));
    }

    #[test]
    fn a_duplicate_key_message_names_its_collection_index_and_key() {
        assert_eq!(
            duplicate_parts(
                r#"E11000 duplicate key error collection: shop.customers index: email_1 dup key: { email: "ada@example.com" }"#
            ),
            (
                "shop.customers".to_owned(),
                "email_1".to_owned(),
                r#"{ email: "ada@example.com" }"#.to_owned()
            )
        );
        assert_eq!(
            duplicate_parts("E11000 duplicate key error"),
            (String::new(), String::new(), String::new())
        );
    }

    #[test]
    fn a_schema_error_lists_one_problem_per_line() {
        let error = SchemaError {
            problems: vec!["first".into(), "second".into()],
        };
        assert_eq!(
            format!("{error:?}"),
            "invalid schema:\n  - first\n  - second"
        );
        assert_eq!(error.to_string(), "invalid schema: first; second");
        assert!(format!("{error:#?}").starts_with("SchemaError {"));
    }
}
