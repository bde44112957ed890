//! mongod's rules in the test server: a Python module (`src/rules/mongod/*.py`, compiled into
//! the testkit) that the embedded SecantusDB loads before it serves, so that a command mongod
//! refuses is refused with mongod's error for every client of the server.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The module, written next to the server's config and run in place of `secantusd-py`: one
/// file of Python, kept as one file per concern in `src/rules/mongod/` and joined here in the
/// module's order (each part reads the names the parts before it define). `table.py` is the
/// table of the rules, by name; each family's part cites the mongod source or jstest its rules
/// come from.
const MODULE: &str = concat!(
    include_str!("rules/mongod/table.py"),
    include_str!("rules/mongod/errors.py"),
    include_str!("rules/mongod/collation.py"),
    include_str!("rules/mongod/arrays.py"),
    include_str!("rules/mongod/dispatch.py"),
    include_str!("rules/mongod/timeseries.py"),
    include_str!("rules/mongod/commands.py"),
    include_str!("rules/mongod/change_streams.py"),
    include_str!("rules/mongod/install.py"),
);

/// Environment variable for the whole test process: `MONGO_SCHEMA_TESTKIT_RULES=off` starts every
/// embedded server of the process (the shared one and each [`TestServer`](crate::TestServer))
/// without mongod's rules, to see whether a failure comes from the rules. Unset, empty or `on`:
/// the rules are on. A test that needs a rule off says which and why with
/// [`TestServer::start_with_rules_off`](crate::TestServer::start_with_rules_off) instead.
pub const RULES_ENV: &str = "MONGO_SCHEMA_TESTKIT_RULES";

/// Environment variable the server process reads: the rules to leave out, comma-separated.
pub(crate) const RULES_OFF_ENV: &str = "MONGO_SCHEMA_TESTKIT_RULES_OFF";

/// The rules the test server enforces, by the names
/// [`TestServer::start_with_rules_off`](crate::TestServer::start_with_rules_off) takes, with what
/// each refuses (and mongod's error code). Each cites, in the module, the mongod source or jstest
/// it comes from; `docs/secantus-leniencies.md` lists them with the differences no rule covers.
pub const RULES: &[(&str, &str)] = &[
    (
        "parallel-arrays",
        "an insert, update, replacement, upsert or findAndModify that leaves two arrays under \
         one compound index, and createIndexes over stored documents that have them \
         (CannotIndexParallelArrays, 171)",
    ),
    (
        "id-index",
        "a second index on { _id: 1 } (IndexOptionsConflict, 85), an _id index that is sparse, \
         partial or non-unique (CannotCreateIndex, 67) or of another collation than the \
         collection's (BadValue, 2); an inserted _id equal under the collection's collation to \
         a stored or earlier one (DuplicateKey, 11000)",
    ),
    (
        "collation-locale",
        "a collation whose locale mongod's ICU 57.1 does not know (BadValue, 2) or whose options \
         are out of range (FailedToParse 9, TypeMismatch 14, BadValue 2), in any command; a text \
         or 2d index with a collation (CannotCreateIndex, 67)",
    ),
    (
        "default-collation",
        "the collection's default collation applied to find, aggregate, count, distinct, \
         update, delete, findAndModify and createIndexes sent without one (and an equality on \
         _id compared under the query's collation); a $lookup joined under the aggregation's \
         collation; { locale: \"simple\" } stated served by the indexes of the simple \
         collation, as mongod's null collator",
    ),
    (
        "timeseries-transaction",
        "an insert, update, delete or findAndModify on a time series collection, or its \
         creation, inside a transaction (OperationNotSupportedInTransaction, 263)",
    ),
    (
        "timeseries-options",
        "create or collMod of a time series collection with pre- and post-images, a validator \
         and the like (InvalidOptions, 72)",
    ),
    (
        "timeseries-change-stream",
        "change streams do not show the writes of a time series collection; none can be opened \
         on one (CommandNotSupportedOnView, 166)",
    ),
    (
        "timeseries-geonear",
        "$geoNear on a time series collection without key (5892921), with query (1938439, \
         5860207) or with includeLocs on a measurement field (5860208)",
    ),
    (
        "timeseries-measurement-size",
        "a time series measurement whose bucket (the meta field once, every other field three \
         times) passes 16 MiB (BSONObjectTooLarge, 10334)",
    ),
    (
        "timeseries-update",
        "an update of a time series collection beyond mongod 7.0's limits: not multi, an \
         upsert, a replacement or pipeline, a condition or a change outside the metaField \
         (InvalidOptions, 72)",
    ),
    (
        "geonear-key",
        "$geoNear without key on a collection with more than one 2dsphere (or 2d) index \
         (IndexNotFound, 27)",
    ),
    (
        "array-conditions",
        "conditions on paths of a multikey index outside $elemMatch answered as mongod answers \
         them: each may hold for another element of the array, so { \"a.b\": { $gte: 10, $lt: \
         20 } } finds { a: [{ b: 5 }, { b: 100 }] } with or without the index (SecantusDB's \
         index scan intersected the bounds)",
    ),
    (
        "change-stream-match-first",
        "a change stream's events of collections its first $match leaves out (by ns.coll) \
         never reach the stages after it, as mongod pushes that $match into its oplog scan: no \
         post-image lookup for them, and no missing-image error (NoMatchingDocument, 47)",
    ),
    (
        "change-stream-clock",
        "a change stream's resume token that marks a position without an event (a reply's \
         post-batch token, a stream's opening) carries the time of the oplog entry at that \
         position, as mongod's does; SecantusDB's carried a time minted then, past entries not \
         yet visible to the scan (the sync worker's caught_up answered before such a change \
         was applied)",
    ),
];

/// Whether `name` is one of [`RULES`].
pub(crate) fn is_rule(name: &str) -> bool {
    RULES.iter().any(|(rule, _)| *rule == name)
}

/// Whether [`RULES_ENV`] turns the rules off for the process; an unknown value is an error.
pub(crate) fn rules_off_by_env() -> Result<bool, String> {
    match std::env::var(RULES_ENV) {
        Ok(value) => match value.trim() {
            "" | "on" => Ok(false),
            "off" => Ok(true),
            other => Err(format!(
                "{RULES_ENV}={other:?}: expected `on` or `off` (a test turns single rules off \
                 with TestServer::start_with_rules_off)"
            )),
        },
        Err(_) => Ok(false),
    }
}

/// Writes the module into `dir` (the venv, next to the server's config) unless it is there, and
/// returns its path. The name carries a hash of the text, so two versions of the testkit that
/// share the per-user venv never overwrite each other's module; a half-written file is never
/// seen (written aside, then renamed).
pub(crate) fn module_in(dir: &Path) -> io::Result<PathBuf> {
    let path = dir.join(format!(
        "mongo-schema-testkit-rules-{:016x}.py",
        fnv1a(MODULE.as_bytes())
    ));
    if fs::read(&path).is_ok_and(|text| text == MODULE.as_bytes()) {
        return Ok(path);
    }
    let aside = dir.join(format!(
        ".mongo-schema-testkit-rules-{}-{:x}.tmp",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    fs::write(&aside, MODULE)?;
    fs::rename(&aside, &path).inspect_err(|_| {
        let _ = fs::remove_file(&aside);
    })?;
    Ok(path)
}

/// 64-bit FNV-1a: a stable name for a version of the module (not a security hash).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_names_the_same_rules() {
        for (rule, _) in RULES {
            assert!(
                MODULE.contains(&format!("    \"{rule}\": ")),
                "{rule} is not in the RULES of src/rules/mongod/table.py"
            );
        }
        let in_module = MODULE
            .split("RULES: dict[str, str] = {")
            .nth(1)
            .and_then(|rest| rest.split("\n}\n").next())
            .unwrap();
        let count = in_module
            .lines()
            .filter(|line| line.starts_with("    \"") && line.contains("\": "))
            .count();
        assert_eq!(count, RULES.len(), "{in_module}");
    }

    #[test]
    fn the_module_is_written_once_under_its_hash() {
        let dir = std::env::temp_dir().join(format!("mongo-schema-rules-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let first = module_in(&dir).unwrap();
        let second = module_in(&dir).unwrap();
        assert_eq!(first, second);
        assert_eq!(fs::read_to_string(&first).unwrap(), MODULE);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn fnv1a_is_the_reference_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
