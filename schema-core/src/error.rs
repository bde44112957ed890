//! The error type of the runtime, [`Error`], and the small types its variants carry (which
//! step of a transaction, which lock, why a worker stopped, ...).

use mongodb::bson::Bson;
use std::fmt;
use std::time::Duration;

use crate::{SchemaError, ValidationError};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong at run time.
///
/// Every failure a service may want to act on has its own variant, matched by pattern (never by
/// its text): a lost race ([`Error::ConditionFailed`], standalone or inside a transaction), a
/// bound ([`Error::BoundExceeded`]), a client value that would run as a query
/// ([`Error::UnsafeValue`]), a bad argument ([`Error::InvalidArgument`]), a lost lock
/// ([`Error::LockLost`]), a value that does not (de)serialize ([`Error::Serialization`]), a
/// stopped sync worker ([`Error::Worker`] with its [`WorkerStop`]). Struct-like variants are
/// `#[non_exhaustive]`: match them with `{ field, .. }`. [`Error::is_duplicate_key`],
/// [`Error::is_transient`] and [`Error::is_condition_failed`] answer the common questions.
///
/// `Debug` shows the same sentence as `Display` (as `anyhow` does), so that
/// `fn main() -> Result<(), mongo_schema::Error>` and `unwrap()` print what went wrong rather
/// than a struct; `{:#?}` shows the structure.
#[derive(Clone)]
#[non_exhaustive]
pub enum Error {
    /// A write was rejected by the collection's validator (code 121): every field and rule that
    /// failed, the driver's error with its labels
    /// ([`ValidationError::driver`](crate::ValidationError::driver)) and, for `insert_many` and
    /// bulk writes, every write error of the batch with its index
    /// ([`ValidationError::batch`](crate::ValidationError::batch)).
    Validation(Box<ValidationError>),
    /// The set of models is inconsistent (see [`crate::Schema::new`]).
    Schema(SchemaError),
    /// A command of `apply` failed; nothing after it was attempted.
    #[non_exhaustive]
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
    #[non_exhaustive]
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
    /// the driver's own retry ([`CommitUnknownCause`]). The transaction may have committed.
    /// Never classed transient and never retried by the library: a retry of a write that is not
    /// idempotent (`$inc`, `$push`) could apply it twice. Read the documents back to learn
    /// whether the write landed (or make it idempotent, e.g. `$set` of values computed before,
    /// and retry it).
    #[non_exhaustive]
    CommitUnknown {
        /// What was being committed (`"transaction"`).
        operation: String,
        /// Why the outcome is unknown.
        cause: CommitUnknownCause,
        /// The commit's error, if it failed rather than being cut at the deadline (for a cut,
        /// the last error of an earlier attempt, if any).
        last: Option<Box<Error>>,
    },
    /// A write's condition did not hold: a compare-and-set whose field no longer held the
    /// expected value (another writer won the race), or a write marked
    /// [`must_match`](crate::Transaction::must_match) whose filter matched nothing. The same
    /// variant whether the write ran alone ([`crate::Ref::compare_and_set`], `position` `None`)
    /// or inside [`crate::Schema::transaction`] (`position` says which write). `rollback` says
    /// what became of the writes around it: nothing written (alone, or the library's own
    /// transaction, aborted); the caller's transaction, given with `.session(..)`, aborted by
    /// the library (its earlier writes, the caller's own included, will not commit); or, in a
    /// session with no transaction, the earlier writes kept. Reload and decide again.
    #[non_exhaustive]
    ConditionFailed {
        /// The collection the write was for.
        collection: String,
        /// What the write was: `compare_and_set books.copies_available`, `update_one books`.
        label: String,
        /// Where the write stood in its transaction; `None` for a standalone call.
        position: Option<StepPosition>,
        /// What became of the writes around the failed one.
        rollback: Rollback,
    },
    /// A child of a `#[subset]` or `#[counter]` names a parent that does not exist
    /// ([`crate::Subset::add`], [`crate::Counter::add`], `add_then_update`,
    /// [`crate::Transaction::add`]): it would be stored and counted nowhere. `rollback` says
    /// what became of the writes around it (the helpers alone write nothing). To store such a
    /// child anyway, as before, say so: `.allow_missing_parent()`.
    #[non_exhaustive]
    MissingParent {
        /// The parents' collection.
        collection: String,
        /// The children's collection.
        child: String,
        /// The parent `_id` the child names (boxed: it keeps `Error` small).
        parent: Box<Bson>,
        /// What became of the writes around it.
        rollback: Rollback,
    },
    /// The call would put more into a bounded place than it holds, and was refused before
    /// anything was written: a push of more items than an array's `max` (without `cap`), more
    /// values for a declared query's `any_of` than its `max`.
    #[non_exhaustive]
    BoundExceeded {
        /// The bounded place: `collection.path` of an array, the path of a query's argument.
        path: String,
        /// The most it holds.
        max: u64,
        /// What the call tried to put there.
        attempted: u64,
    },
    /// A value that came from a client would run as a query instead of being compared as a
    /// value (an id that is an operator document or an array, a cursor holding a regular
    /// expression), and was refused before anything was sent.
    #[non_exhaustive]
    UnsafeValue {
        /// Which value: `the parent id of a page`, `the expected value`, `the page cursor`.
        what: String,
        /// Where inside it the unsafe part is (`$ne`, `key.$gt`); empty for the value itself.
        path: String,
        /// What was found there.
        found: UnsafeKind,
    },
    /// An argument of the call cannot be carried out as given, and was refused before anything
    /// was sent: a page size outside `1..=MAX_PAGE_SIZE`, a bucket entry without its key, an
    /// extra update that writes a bounded array, a compare-and-set on `_id`, a version that does
    /// not fit the record.
    #[non_exhaustive]
    InvalidArgument {
        /// The argument (or the part of it) that was refused: `limit`, `entry.at`, `field`.
        argument: String,
        /// Why, in words.
        reason: String,
    },
    /// The lock the work ran under was lost (another instance may be doing the same work), and
    /// the work stopped before its next write.
    #[non_exhaustive]
    LockLost {
        /// Which lock.
        lock: LockKind,
        /// What was stopped (`a migration step`, `writing the schema's commands`).
        during: String,
    },
    /// A value could not be turned into BSON, or BSON into a value; nothing was sent. The bson
    /// crate's error is kept as `source`.
    #[non_exhaustive]
    Serialization {
        /// What was being (de)serialized: `a \`tickets\` document`, `a bucket entry`.
        what: String,
        /// The bson crate's error (boxed: it keeps `Error` small).
        source: Box<BsonError>,
    },
    /// The state the call works on kept changing under it: it gave up after `attempts` tries
    /// (retrying later may succeed).
    #[non_exhaustive]
    Contended {
        /// What gave up.
        operation: String,
        /// How many times it read the state again.
        attempts: u32,
    },
    /// Declared queries that the server does not serve as declared (see
    /// [`crate::query::ProofReport::into_result`]), one entry per query.
    #[non_exhaustive]
    NotServed {
        /// `` `collection.query`: why `` for each query.
        queries: Vec<String>,
    },
    /// The sync worker stopped: its lease was taken over, change streams are not supported,
    /// authentication failed, the server refuses its configuration, or it panicked. `kind`
    /// says which; the error underneath is kept as `source` when there is one.
    #[non_exhaustive]
    Worker {
        /// Why the worker stopped.
        kind: WorkerStop,
        /// More about it in words (the panic's message), empty when `kind` says it all.
        detail: String,
        /// The error that stopped it, if any.
        source: Option<Box<Error>>,
    },
    /// An error of the service's own code run by the library (a custom migration step, see
    /// [`crate::migrate::custom`]), made with [`Error::other`]. Transparent: its `Display` and
    /// `source` are the inner error's; [`Error::as_other`] gives the inner error to downcast.
    /// Never classed transient.
    Other(std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>),
    /// `apply` of an older schema version than the one recorded in the database (see
    /// [`crate::SchemaBuilder::version`]); nothing was written. Deploy the recorded version or a
    /// later one, or apply with `allow_downgrade(true)`.
    #[non_exhaustive]
    Downgrade {
        /// The version recorded in the database.
        recorded: u64,
        /// The version this apply was for.
        applying: u64,
    },
    /// `apply` found a collection it cannot bring to the declared state (a plain collection
    /// where a time series collection is declared, which mongod cannot convert); nothing was
    /// written.
    #[non_exhaustive]
    CannotApply {
        /// The collection.
        collection: String,
        /// Why, and what to do.
        reason: String,
    },
    /// A migration step failed (see [`crate::SchemaBuilder::migration`]): its record in
    /// [`crate::migrate::MIGRATIONS_COLLECTION`] says `failed` with the error, and the next
    /// `apply` runs it again from its checkpoint.
    #[non_exhaustive]
    Migration {
        /// The step's version.
        version: u64,
        /// The step's name.
        name: String,
        /// What went wrong.
        source: Box<Error>,
    },
}

/// Where a write stood in a [`crate::Transaction`]: its number (from 1) among the transaction's
/// writes (a subset's add is two writes: the child, then its parent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct StepPosition {
    /// The write's number, from 1.
    pub number: usize,
    /// How many writes the transaction had.
    pub of: usize,
}

impl StepPosition {
    /// Write `number` (from 1) of `of`.
    pub fn new(number: usize, of: usize) -> Self {
        StepPosition { number, of }
    }
}

impl fmt::Display for StepPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "write {} of {}", self.number, self.of)
    }
}

/// What a failed condition ([`Error::ConditionFailed`]) did to the writes around it. A helper
/// whose condition fails never leaves the writes before it to commit silently: in the caller's
/// transaction it aborts that transaction and says so here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rollback {
    /// Nothing was written: the write ran alone and matched nothing, or the library's own
    /// transaction was aborted.
    NothingWritten,
    /// The write ran inside the caller's transaction (`.session(&mut s)` on a session with a
    /// transaction in progress), and the library aborted that transaction: none of its writes
    /// commit, the caller's own before the helper included. `s.commit_transaction()` now
    /// fails; start the transaction again (`s.start_transaction()`) to retry.
    CallerTransactionAborted,
    /// The write ran in the caller's session with no transaction in progress: the writes sent
    /// before it in that session were each committed on their own and stay written; this one
    /// and those after it were not sent. Undo the earlier ones yourself, or run the helper in
    /// a transaction.
    EarlierWritesKept,
}

impl fmt::Display for Rollback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rollback::NothingWritten => "nothing was written",
            Rollback::CallerTransactionAborted => {
                "the caller's transaction was aborted: none of its writes will commit; start it again"
            }
            Rollback::EarlierWritesKept => {
                "the session had no transaction: the writes before this one stay written"
            }
        })
    }
}

/// A failed condition inside the caller's session leaves no earlier write to commit
/// silently: the caller's transaction, when one is in progress, is aborted here, and the error
/// says which happened ([`Rollback`]). Other errors pass unchanged.
pub(crate) async fn after_failed_condition(
    session: &mut mongodb::ClientSession,
    error: Error,
) -> Error {
    if let Error::MissingParent {
        collection,
        child,
        parent,
        ..
    } = error
    {
        let rollback = if session.abort_transaction().await.is_ok() {
            Rollback::CallerTransactionAborted
        } else {
            Rollback::EarlierWritesKept
        };
        return Error::MissingParent {
            collection,
            child,
            parent,
            rollback,
        };
    }
    let Error::ConditionFailed {
        collection,
        label,
        position,
        ..
    } = error
    else {
        return error;
    };
    // the driver refuses an abort only when no transaction is in progress, and ignores the
    // server's answer to one (the transactions spec): after `Ok` the transaction is over on
    // this session, and its writes never commit
    let rollback = if session.abort_transaction().await.is_ok() {
        Rollback::CallerTransactionAborted
    } else if position.is_some_and(|p| p.number > 1) {
        Rollback::EarlierWritesKept
    } else {
        Rollback::NothingWritten
    };
    Error::ConditionFailed {
        collection,
        label,
        position,
        rollback,
    }
}

/// Why the outcome of a commit is unknown ([`Error::CommitUnknown`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CommitUnknownCause {
    /// The commit was in flight when the transaction's deadline cut it.
    Deadline {
        /// The deadline.
        after: Duration,
    },
    /// The commit failed with `UnknownTransactionCommitResult` (a network error, a write
    /// concern not satisfied) after the driver's own retry.
    UnknownCommitResult,
}

impl fmt::Display for CommitUnknownCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommitUnknownCause::Deadline { after } => write!(
                f,
                "cut at the transaction deadline of {after:?} while the commit was in flight"
            ),
            CommitUnknownCause::UnknownCommitResult => {
                f.write_str("the commit failed after the driver's retry")
            }
        }
    }
}

/// What made a client value unsafe ([`Error::UnsafeValue`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnsafeKind {
    /// A document key starting with `$` (the key, `$ne`).
    Operator(String),
    /// An array where an id belongs (it would match any of its elements).
    Array,
    /// A regular expression (it would match every string it matches).
    RegularExpression,
    /// JavaScript.
    JavaScript,
}

impl fmt::Display for UnsafeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsafeKind::Operator(key) => write!(f, "the operator `{key}`"),
            UnsafeKind::Array => f.write_str("an array"),
            UnsafeKind::RegularExpression => f.write_str("a regular expression"),
            UnsafeKind::JavaScript => f.write_str("JavaScript"),
        }
    }
}

/// Which lock was lost ([`Error::LockLost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockKind {
    /// The lock `apply` takes on the schema's version record, under which its commands and the
    /// migration steps run.
    Apply,
    /// A sync worker's lease.
    Lease,
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockKind::Apply => "apply's lock",
            LockKind::Lease => "the sync worker's lease",
        })
    }
}

/// Why a sync worker stopped ([`Error::Worker`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WorkerStop {
    /// Its lease was taken over by another worker of its name: its fenced writes were refused
    /// (nothing was written after the takeover).
    FencedOff,
    /// The server does not support change streams (a standalone server, a stage it does not
    /// know).
    ChangeStreamsUnsupported,
    /// Authentication failed or the user is not authorised.
    Unauthorized,
    /// The server refuses the worker's configuration or commands (an invalid option or
    /// namespace, a command it does not support).
    Refused,
    /// It panicked.
    Panicked,
    /// It ended before it was ready, for no error it kept.
    Ended,
    /// Another error that retrying cannot cure (see `source`).
    Other,
}

impl WorkerStop {
    /// The kind of a permanent error that ended a worker.
    pub(crate) fn of(error: &Error) -> WorkerStop {
        use mongodb::error::ErrorKind;
        if let Error::Worker { kind, .. } = error {
            return *kind;
        }
        let Some(driver) = error.as_driver() else {
            return WorkerStop::Other;
        };
        if matches!(driver.kind.as_ref(), ErrorKind::Authentication { .. }) {
            return WorkerStop::Unauthorized;
        }
        if matches!(driver.kind.as_ref(), ErrorKind::SessionsNotSupported) {
            return WorkerStop::ChangeStreamsUnsupported;
        }
        match server_code(driver) {
            Some(13 | 18) => WorkerStop::Unauthorized,
            Some(40573 | 40324) => WorkerStop::ChangeStreamsUnsupported,
            Some(20 | 59 | 115 | 72 | 40415 | 73) => WorkerStop::Refused,
            _ => WorkerStop::Other,
        }
    }
}

impl fmt::Display for WorkerStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkerStop::FencedOff => {
                "a fenced write was refused: the sync worker's lease was taken over"
            }
            WorkerStop::ChangeStreamsUnsupported => "the server does not support change streams",
            WorkerStop::Unauthorized => "authentication failed or the user is not authorised",
            WorkerStop::Refused => "the server refuses the worker's configuration",
            WorkerStop::Panicked => "the sync worker panicked",
            WorkerStop::Ended => "the worker ended before it was ready",
            WorkerStop::Other => "an error that retrying cannot cure",
        })
    }
}

pub use crate::bson_compat::BsonError;

impl Error {
    /// The validation failure, if this is one.
    pub fn as_validation(&self) -> Option<&ValidationError> {
        match self {
            Error::Validation(e) => Some(e.as_ref()),
            _ => None,
        }
    }

    /// The driver error underneath, if any (for a [`Error::Timeout`], an
    /// [`Error::CommitUnknown`] or an [`Error::Worker`], its last error's; for a validation
    /// failure the server reported, the driver's error it came in).
    pub fn as_driver(&self) -> Option<&mongodb::error::Error> {
        match self {
            Error::Validation(v) => v.driver(),
            Error::Duplicate { source, .. } => Some(source.as_ref()),
            Error::Driver(e) | Error::Apply { source: e, .. } => Some(e),
            Error::Timeout {
                last: Some(last), ..
            }
            | Error::CommitUnknown {
                last: Some(last), ..
            }
            | Error::Worker {
                source: Some(last), ..
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

    /// An [`Error::Other`] of the service's own error (as `std::io::Error::other`): a custom
    /// migration step fails with `Err(Error::other("the export is not ready"))`.
    pub fn other(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Error {
        Error::Other(std::sync::Arc::from(error.into()))
    }

    /// The service's own error inside an [`Error::Other`], to downcast.
    pub fn as_other(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self {
            Error::Other(inner) => Some(inner.as_ref()),
            _ => None,
        }
    }

    /// Whether a write's condition did not hold ([`Error::ConditionFailed`]): a lost
    /// compare-and-set or a `must_match` write that matched nothing, alone or in a
    /// transaction. Reload and decide again.
    pub fn is_condition_failed(&self) -> bool {
        matches!(self, Error::ConditionFailed { .. })
    }

    /// Whether the same call, retried later, may succeed: the server or the driver labelled
    /// the error `TransientTransactionError` or `RetryableWriteError`, the network or server
    /// selection failed, the server answered with a code it gives while it recovers (a
    /// primary stepping down, a write conflict, ...), or an operation gave up at its deadline
    /// ([`Error::Timeout`]), or the state it works on kept changing ([`Error::Contended`]). A
    /// validation failure, a duplicate key, a lost condition, a refusal of an argument or a
    /// value, an invalid schema and a commit whose outcome is unknown ([`Error::CommitUnknown`]:
    /// it may have landed) are not; nor is a driver error this list does not name.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Timeout { .. } | Error::Contended { .. } => true,
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
                cause,
                last,
            } => f
                .debug_struct("CommitUnknown")
                .field("operation", operation)
                .field("cause", cause)
                .field("last", last)
                .finish(),
            Error::ConditionFailed {
                collection,
                label,
                position,
                rollback,
            } => f
                .debug_struct("ConditionFailed")
                .field("collection", collection)
                .field("label", label)
                .field("position", position)
                .field("rollback", rollback)
                .finish(),
            Error::MissingParent {
                collection,
                child,
                parent,
                rollback,
            } => f
                .debug_struct("MissingParent")
                .field("collection", collection)
                .field("child", child)
                .field("parent", parent)
                .field("rollback", rollback)
                .finish(),
            Error::BoundExceeded {
                path,
                max,
                attempted,
            } => f
                .debug_struct("BoundExceeded")
                .field("path", path)
                .field("max", max)
                .field("attempted", attempted)
                .finish(),
            Error::UnsafeValue { what, path, found } => f
                .debug_struct("UnsafeValue")
                .field("what", what)
                .field("path", path)
                .field("found", found)
                .finish(),
            Error::InvalidArgument { argument, reason } => f
                .debug_struct("InvalidArgument")
                .field("argument", argument)
                .field("reason", reason)
                .finish(),
            Error::LockLost { lock, during } => f
                .debug_struct("LockLost")
                .field("lock", lock)
                .field("during", during)
                .finish(),
            Error::Serialization { what, source } => f
                .debug_struct("Serialization")
                .field("what", what)
                .field("source", source)
                .finish(),
            Error::Contended {
                operation,
                attempts,
            } => f
                .debug_struct("Contended")
                .field("operation", operation)
                .field("attempts", attempts)
                .finish(),
            Error::NotServed { queries } => f
                .debug_struct("NotServed")
                .field("queries", queries)
                .finish(),
            Error::Worker {
                kind,
                detail,
                source,
            } => f
                .debug_struct("Worker")
                .field("kind", kind)
                .field("detail", detail)
                .field("source", source)
                .finish(),
            Error::Other(inner) => f.debug_tuple("Other").field(inner).finish(),
            Error::CannotApply { collection, reason } => f
                .debug_struct("CannotApply")
                .field("collection", collection)
                .field("reason", reason)
                .finish(),
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
                // the server's `keyValue` is the refused write's key (under the index's
                // collation, equal to the one stored, which may differ in case)
                if !key.is_empty() {
                    write!(f, " already holds a key equal to {key}")?;
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
                cause,
                last,
            } => {
                write!(
                    f,
                    "the outcome of the {operation}'s commit is unknown ({cause}): it may have committed; read back before retrying a write that is not idempotent"
                )?;
                match last {
                    Some(last) => write!(f, "; last error: {last}"),
                    None => Ok(()),
                }
            }
            Error::ConditionFailed {
                collection,
                label,
                position: Some(position),
                rollback,
            } => write!(
                f,
                "refused: {position}, `{label}`, must match a document of `{collection}` and matched none: {}",
                match rollback {
                    Rollback::NothingWritten =>
                        "the transaction was aborted and nothing was written".to_owned(),
                    other => other.to_string(),
                }
            ),
            Error::ConditionFailed {
                collection,
                label,
                position: None,
                rollback,
            } => write!(
                f,
                "`{label}` matched no document of `{collection}` (another writer changed it first, or it is gone): {rollback}"
            ),
            Error::MissingParent {
                collection,
                child,
                parent,
                rollback,
            } => write!(
                f,
                "refused: a `{child}` child names the `{collection}` parent {parent}, which does not exist (it would be stored and counted nowhere): {rollback}; `.allow_missing_parent()` stores such a child anyway"
            ),
            Error::BoundExceeded {
                path,
                max,
                attempted,
            } => write!(
                f,
                "refused: {attempted} items for `{path}`, where at most {max} are allowed"
            ),
            Error::UnsafeValue { what, path, found } => {
                write!(f, "refused: {what} holds {found}")?;
                if !path.is_empty() {
                    write!(f, " at `{path}`")?;
                }
                f.write_str(", which a filter would run as a query instead of matching as a value")
            }
            Error::InvalidArgument { argument, reason } => {
                write!(f, "refused: `{argument}`: {reason}")
            }
            Error::LockLost { lock, during } => write!(
                f,
                "{lock} was lost during {during} (another instance may hold it): stopped before writing"
            ),
            Error::Serialization { what, source } => {
                write!(f, "{what} cannot be serialized: {source}")
            }
            Error::Contended {
                operation,
                attempts,
            } => write!(
                f,
                "{operation} gave up: the state it works on kept changing ({attempts} re-reads)"
            ),
            Error::NotServed { queries } => {
                write!(f, "queries not served as declared: {}", queries.join("; "))
            }
            Error::Worker {
                kind,
                detail,
                source,
            } => {
                write!(f, "sync worker stopped: {kind}")?;
                if !detail.is_empty() {
                    write!(f, ": {detail}")?;
                }
                match source {
                    Some(source) => write!(f, ": {source}"),
                    None => Ok(()),
                }
            }
            Error::Other(inner) => inner.fmt(f),
            Error::CannotApply { collection, reason } => write!(
                f,
                "apply wrote nothing: `{collection}`: {reason}"
            ),
            Error::Downgrade { recorded, applying } => write!(
                f,
                "refused to apply schema version {applying}: the database records the newer version {recorded}; nothing was written (deploy version {recorded} or later, or apply with {})",
                crate::terms::ALLOW_DOWNGRADE
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
            Error::Timeout { last, .. }
            | Error::CommitUnknown { last, .. }
            | Error::Worker { source: last, .. } => last.as_deref().map(|e| e as _),
            Error::Migration { source, .. } => Some(source.as_ref()),
            Error::Serialization { source, .. } => Some(source.inner()),
            Error::Other(inner) => inner.source(),
            Error::ConditionFailed { .. }
            | Error::MissingParent { .. }
            | Error::BoundExceeded { .. }
            | Error::UnsafeValue { .. }
            | Error::InvalidArgument { .. }
            | Error::LockLost { .. }
            | Error::Contended { .. }
            | Error::NotServed { .. }
            | Error::CannotApply { .. }
            | Error::Downgrade { .. } => None,
        }
    }
}

impl From<mongodb::error::Error> for Error {
    /// A validation failure (code 121) becomes [`Error::Validation`] (keeping the driver's
    /// error), a duplicate key [`Error::Duplicate`], a value the driver could not (de)serialize
    /// [`Error::Serialization`], anything else [`Error::Driver`].
    fn from(error: mongodb::error::Error) -> Self {
        use mongodb::error::ErrorKind;
        match error.kind.as_ref() {
            ErrorKind::BsonSerialization(e) => return Error::serialization("a value", e.clone()),
            ErrorKind::BsonDeserialization(e) => {
                return Error::serialization("a document read", e.clone())
            }
            #[cfg(feature = "bson-3")]
            ErrorKind::Bson(e) => return Error::serialization("a value", e.clone()),
            _ => {}
        }
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
    // display-text: reads the fields of the server's E11000 sentence, which it sends no other way
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

/// bson 2's `ser::Error` ("a value") and `de::Error` ("a document read"), bson 3's
/// `error::Error` ("a value").
impl<E: crate::bson_compat::IntoBsonError> From<E> for Error {
    fn from(error: E) -> Self {
        Error::serialization(E::WHAT, error.into_bson_error())
    }
}

impl Error {
    /// [`Error::Serialization`] of `what`.
    pub(crate) fn serialization(what: impl Into<String>, source: impl Into<BsonError>) -> Error {
        Error::Serialization {
            what: what.into(),
            source: Box::new(source.into()),
        }
    }

    /// [`Error::InvalidArgument`].
    pub(crate) fn invalid_argument(
        argument: impl Into<String>,
        reason: impl Into<String>,
    ) -> Error {
        Error::InvalidArgument {
            argument: argument.into(),
            reason: reason.into(),
        }
    }

    /// [`Error::Worker`] of `kind`, with nothing underneath.
    pub(crate) fn worker(kind: WorkerStop, detail: impl Into<String>) -> Error {
        Error::Worker {
            kind,
            detail: detail.into(),
            source: None,
        }
    }

    /// The error a worker ends with when `error` (which retrying cannot cure) stopped it.
    pub(crate) fn worker_stopped_by(error: Error) -> Error {
        if matches!(error, Error::Worker { .. }) {
            return error;
        }
        Error::Worker {
            kind: WorkerStop::of(&error),
            detail: String::new(),
            source: Some(Box::new(error)),
        }
    }
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
    ///
    /// # Errors
    ///
    /// The mapped error, when `self` is an `Err`.
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

/// The `writeErrors` of the reply to a write command sent with `run_command` (`update`,
/// `insert`, `delete`), as the driver reports a bulk write's: each with its index, a
/// validation failure [`Error::Validation`] holding the whole batch, named after `collection`.
pub(crate) fn from_write_errors(collection: &str, errors: &[mongodb::bson::Bson]) -> Error {
    let mut bulk = mongodb::error::BulkWriteError::default();
    for (position, error) in errors
        .iter()
        .filter_map(mongodb::bson::Bson::as_document)
        .enumerate()
    {
        let index = match error.get("index") {
            Some(mongodb::bson::Bson::Int32(i)) => *i as usize,
            Some(mongodb::bson::Bson::Int64(i)) => *i as usize,
            _ => position,
        };
        if let Ok(write_error) =
            crate::bson_compat::from_document::<mongodb::error::WriteError>(error.clone())
        {
            bulk.write_errors.insert(index, write_error);
        }
    }
    let driver = mongodb::error::Error::from(mongodb::error::ErrorKind::BulkWrite(bulk));
    Err::<(), _>(driver)
        .in_collection(collection)
        .expect_err("an error stays an error")
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
mod tests;
