//! Read and write concerns the library's guarantees rest on, whatever the service's URI says.
//!
//! A service may connect with `readPreference=secondaryPreferred` (reads served by a lagging
//! secondary) or `w=1` (the implicit default on a PSA replica set: a write acknowledged by the
//! primary alone, rolled back if it fails over before replicating). Neither is safe for what the
//! library decides and records: a validator made strict while violators exist on the primary, a
//! dedupe that groups stale data, a lease grant, lane claim or fenced commit that vanishes on
//! failover. So every read that decides reads the primary at read concern `majority`, and every
//! write that a guarantee rests on is acknowledged by a majority ([`pinned`], [`transaction`]).
//! And every scan the library runs for an operator or a start-up stops at a time limit
//! ([`OPERATOR_TIME_LIMIT`]).

use mongodb::options::{
    DatabaseOptions, ReadConcern, ReadPreference, SelectionCriteria, TransactionOptions,
    WriteConcern,
};
use mongodb::Database;

fn primary() -> SelectionCriteria {
    SelectionCriteria::ReadPreference(ReadPreference::Primary)
}

/// `db` with primary read preference, read concern `majority` and write concern `majority`:
/// the handle the library reads and writes through (its commands inherit them).
pub(crate) fn pinned(db: &Database) -> Database {
    db.client().database_with_options(
        db.name(),
        DatabaseOptions::builder()
            .selection_criteria(primary())
            .read_concern(ReadConcern::majority())
            .write_concern(WriteConcern::majority())
            .build(),
    )
}

/// `{ w: "majority" }`, for the commands the library sends as such (`run_command` inherits no
/// write concern from its database).
pub(crate) fn majority_document() -> mongodb::bson::Document {
    mongodb::bson::doc! { "w": "majority" }
}

/// The options of the library's transactions (fenced fan-outs, repairs, subset refreshes): a
/// transaction takes its concerns from these or the client, never from a database handle.
pub(crate) fn transaction() -> TransactionOptions {
    TransactionOptions::builder()
        .selection_criteria(primary())
        .read_concern(ReadConcern::majority())
        .write_concern(WriteConcern::majority())
        .build()
}

/// The time limit (`maxTimeMS`) of every scan the library runs for an operator or a start-up:
/// `apply`'s and `plan`'s counts of the documents a validator change would reject, `plan`'s
/// counts of duplicates and of the documents a pending migration step touches, `audit`'s sizes,
/// kinds, array pressure and invalid documents, `status`'s and `reconcile`'s reads of the sync
/// records. Past it the server stops the scan (code 50, MaxTimeMSExpired): a count of violators
/// is then unfinished (`deploy::observe::violations_or_unfinished`, which `apply` treats as
/// violators); any other scan fails its command, saying so, instead of running on. A start-up
/// counts once per version and fingerprint (the record keeps the count, or that it did not
/// finish, while the validator is refused).
pub(crate) const OPERATOR_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);
