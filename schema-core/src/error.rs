//! The error type of the runtime.

use std::fmt;

use crate::{SchemaError, ValidationError};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong at run time.
#[derive(Debug)]
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
    /// Any other driver error.
    Driver(mongodb::error::Error),
}

impl Error {
    /// The validation failure, if this is one.
    pub fn as_validation(&self) -> Option<&ValidationError> {
        match self {
            Error::Validation(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Validation(e) => e.fmt(f),
            Error::Schema(e) => e.fmt(f),
            Error::Apply { action, source } => write!(f, "apply failed to {action}: {source}"),
            Error::Driver(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Validation(e) => Some(e.as_ref()),
            Error::Schema(e) => Some(e),
            Error::Apply { source, .. } | Error::Driver(source) => Some(source),
        }
    }
}

impl From<mongodb::error::Error> for Error {
    fn from(error: mongodb::error::Error) -> Self {
        match ValidationError::from_driver(&error) {
            Some(validation) => Error::Validation(Box::new(validation)),
            None => Error::Driver(error),
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
    /// set, anything else [`Error::Driver`].
    fn in_collection(self, collection: &str) -> Result<T>;
}

impl<T> ResultExt<T> for std::result::Result<T, mongodb::error::Error> {
    fn in_collection(self, collection: &str) -> Result<T> {
        self.map_err(|error| match Error::from(error) {
            Error::Validation(v) => Error::Validation(Box::new(v.with_collection(collection))),
            other => other,
        })
    }
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
