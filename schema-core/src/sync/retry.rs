//! What to do about an error: retry it (transient), record it and go on (one document's
//! fault), or stop (permanent); and the jittered exponential back-off between retries.

use std::time::Duration;

use mongodb::error::{ErrorKind, WriteFailure};

use crate::error::{known_transient, server_code};
use crate::random::random_u64;
use crate::Error;

/// How an error is handled by the sync machinery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// The server or the network will likely recover: reopen, retry after a back-off.
    Transient,
    /// One document could not be written (validation, size, a path that cannot hold the copy):
    /// the others can; record it and go on.
    PerDocument,
    /// Retrying cannot help: authentication, change streams unsupported, a configuration the
    /// server refuses.
    Permanent,
}

/// Server codes that retrying cannot fix.
const PERMANENT_CODES: &[i32] = &[
    13,    // Unauthorized
    18,    // AuthenticationFailed
    20,    // IllegalOperation
    40573, // $changeStream only on replica sets and sharded clusters
    40324, // unrecognised pipeline stage (change streams unsupported)
    59,    // CommandNotFound
    115,   // CommandNotSupported
    72,    // InvalidOptions
    40415, // unknown field in a stage (a configuration the server refuses)
    73,    // InvalidNamespace
];

/// Server codes of an update that failed for one document only.
const PER_DOCUMENT_CODES: &[i32] = &[
    121,   // DocumentValidationFailure
    10334, // BSONObjectTooLarge
    17419, // document would exceed the maximum size after an update
    17420, // same, for a replacement
    11000, // DuplicateKey
    28,    // PathNotViable (the holder's field is not a document)
    14,    // TypeMismatch
    52,    // DollarPrefixedFieldName
    2,     // BadValue (an update this document cannot take)
];

impl ErrorClass {
    /// Classifies an error met while following a change stream or writing copies.
    pub(crate) fn of(error: &Error) -> ErrorClass {
        match error {
            Error::Validation(_) => ErrorClass::PerDocument,
            // a commit that may have landed is the caller's to judge, never retried here
            Error::ConditionFailed { .. }
            | Error::MissingParent { .. }
            | Error::BoundExceeded { .. }
            | Error::UnsafeValue { .. }
            | Error::InvalidArgument { .. }
            | Error::LockLost { .. }
            | Error::NotServed { .. }
            | Error::Other(_)
            | Error::Schema(_)
            | Error::Worker { .. }
            | Error::Downgrade { .. }
            | Error::CannotApply { .. }
            | Error::CommitUnknown { .. } => ErrorClass::Permanent,
            // as when it came as the driver's error: kept trying with back-off
            Error::Serialization { .. } => ErrorClass::Transient,
            Error::Timeout { .. } | Error::Contended { .. } => ErrorClass::Transient,
            Error::Migration { source, .. } => ErrorClass::of(source),
            Error::Driver(e) | Error::Apply { source: e, .. } => ErrorClass::of_driver(e),
            Error::Duplicate { source, .. } => ErrorClass::of_driver(source),
        }
    }

    fn of_driver(error: &mongodb::error::Error) -> ErrorClass {
        // what a service's retry may cure, and for a change stream and a commit the labels
        // that say it can be resumed or asked again
        if known_transient(error)
            || error.contains_label("ResumableChangeStreamError")
            || error.contains_label("UnknownTransactionCommitResult")
        {
            return ErrorClass::Transient;
        }
        match error.kind.as_ref() {
            ErrorKind::Authentication { .. }
            | ErrorKind::InvalidTlsConfig { .. }
            | ErrorKind::SessionsNotSupported => return ErrorClass::Permanent,
            // one document's write (a transient code was answered above)
            ErrorKind::Write(WriteFailure::WriteError(_)) => return ErrorClass::PerDocument,
            _ => {}
        }
        match server_code(error) {
            Some(code) if PER_DOCUMENT_CODES.contains(&code) => ErrorClass::PerDocument,
            Some(code) if PERMANENT_CODES.contains(&code) => ErrorClass::Permanent,
            // anything else: assume the server may recover, and keep trying with back-off
            _ => ErrorClass::Transient,
        }
    }
}

/// Jittered exponential back-off: each wait is drawn from the upper half of the current step,
/// which doubles up to `cap`; [`Backoff::reset`] after a success.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    base: Duration,
    cap: Duration,
    step: Duration,
}

impl Backoff {
    pub(crate) fn new(base: Duration, cap: Duration) -> Self {
        Backoff {
            base,
            cap,
            step: base,
        }
    }

    /// The next wait.
    pub(crate) fn next_wait(&mut self) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(self.cap);
        let half = step / 2;
        let jitter_nanos = random_u64() % (half.as_nanos().max(1) as u64);
        half + Duration::from_nanos(jitter_nanos)
    }

    /// Back to the first step.
    pub(crate) fn reset(&mut self) {
        self.step = self.base;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_up_to_its_cap_with_jitter_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
        let waits: Vec<Duration> = (0..12).map(|_| backoff.next_wait()).collect();
        assert!(waits[0] >= Duration::from_millis(50) && waits[0] <= Duration::from_millis(100));
        assert!(waits[3] >= Duration::from_millis(400) && waits[3] <= Duration::from_millis(800));
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(30)));
        assert!(waits[11] >= Duration::from_secs(15), "{waits:?}");
        // two back-offs do not wait the same (the jitter differs)
        let mut other = Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
        let others: Vec<Duration> = (0..12).map(|_| other.next_wait()).collect();
        assert_ne!(waits, others);
        backoff.reset();
        assert!(backoff.next_wait() <= Duration::from_millis(100));
    }

    #[test]
    fn errors_are_classified() {
        use mongodb::error::Error as DriverError;
        let io = DriverError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert_eq!(ErrorClass::of(&Error::Driver(io)), ErrorClass::Transient);
        assert_eq!(
            ErrorClass::of(&Error::invalid_argument("limit", "x")),
            ErrorClass::Permanent
        );
        // even with a transient driver error underneath, an unknown commit is not retried
        let reset = DriverError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        let unknown = Error::CommitUnknown {
            operation: "transaction".into(),
            cause: crate::error::CommitUnknownCause::UnknownCommitResult,
            last: Some(Box::new(Error::Driver(reset))),
        };
        assert_eq!(ErrorClass::of(&unknown), ErrorClass::Permanent);
        let custom = DriverError::custom("anything else");
        assert_eq!(
            ErrorClass::of(&Error::Driver(custom)),
            ErrorClass::Transient
        );
    }
}
