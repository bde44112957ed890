//! What a plan says: the text of [`Action`], [`Warning`] and [`Plan`].

use std::fmt;

use crate::terms;

use super::{Action, OnViolations, Plan, Warning};

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::CreateCollection { collection, timeseries: Some(timeseries), collation, .. } => {
                write!(
                    f,
                    "create time series collection `{collection}` ({timeseries}; no validator: mongod takes none on a time series collection)"
                )?;
                match collation {
                    Some(collation) => write!(f, " with the default collation {collation}"),
                    None => Ok(()),
                }
            }
            Action::ModifyTimeSeries { collection, changes, .. } => {
                write!(f, "collMod time series `{collection}`: {}", changes.join("; "))
            }
            Action::CreateCollection { collection, level, action, collation, .. } => {
                write!(
                    f,
                    "create collection `{collection}` with its validator (level {level}, action {action})"
                )?;
                match collation {
                    Some(collation) => write!(f, " and the default collation {collation}"),
                    None => Ok(()),
                }
            }
            Action::UpdateValidator { collection, changes, violations, .. } => {
                write!(f, "collMod `{collection}`: {}", changes.join("; "))?;
                match violations {
                    Some(v) if v.any() => write!(f, " ({v})"),
                    Some(_) => f.write_str(" (no existing document violates it)"),
                    None => Ok(()),
                }
            }
            Action::CreateIndexes { collection, indexes } => {
                write!(f, "create {} index(es) on `{collection}`:", indexes.len())?;
                for index in indexes {
                    write!(f, "\n    {index}")?;
                }
                Ok(())
            }
            Action::DropIndex { collection, name, keys } => {
                write!(f, "drop stale index `{name}` {keys} on `{collection}`")
            }
            Action::ShardCollection { collection, key } => {
                write!(f, "shard `{collection}` by {key}")
            }
            Action::EnablePreImages { collection } => write!(
                f,
                "collMod `{collection}`: changeStreamPreAndPostImages enabled (the sync worker of an async subset reads a deleted child's parent from it)"
            ),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::StepNotRerun {
                version,
                name,
                recorded,
            } => write!(
                f,
                "migration v{version} `{name}` ran before the version was rolled back to {recorded} and is NOT run again: a custom step is only known to resume from its checkpoint; run it by hand if the data written since needs it"
            ),
            Warning::UniqueOverDuplicates {
                collection,
                index,
                groups,
                examples,
            } => {
                let examples: Vec<String> = examples.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "the unique index `{index}` of `{collection}` would meet {groups} key value(s) held by more than one document (e.g. {}): its build fails until they are resolved; a `migrate::dedupe` step of this version keeps one of each",
                    examples.join(", ")
                )
            }
            Warning::NewRequiredField {
                collection,
                field,
                backfilled,
            } => write!(
                f,
                "`{collection}.{field}` is required from this version and unknown to the recorded one: instances of the recorded version still running write documents without it, which the new validator rejects{}; ship it optional first and require it once no older instance writes (expand/contract)",
                if *backfilled { " (the `set_default` step fills the existing ones only)" } else { "" }
            ),
            Warning::RequiredFieldNotOnServer {
                collection,
                field,
                recorded,
            } => write!(
                f,
                "`{collection}.{field}` is required by this version, and the validator on the server (an older one than recorded version {recorded}'s: rolled back, or refused over violating documents) does not know it: instances of an older version still running write documents without it, which `apply` then makes the validator reject"
            ),
            Warning::NotInSchema { collection } => write!(
                f,
                "collection `{collection}` is not in the schema: left alone (never dropped)"
            ),
            Warning::IndexConflict {
                collection,
                wanted,
                differences,
                ..
            } => write!(
                f,
                "index `{}` on `{collection}` differs from the server's and was left alone: {}",
                wanted.name,
                differences.join("; ")
            ),
            Warning::ValidatorOverViolations { collection, violations, decision } => match decision {
                OnViolations::Refuse => write!(
                    f,
                    "the new validator of `{collection}` was NOT applied: {violations}; migrate them, or apply with {} or {}",
                    terms::ON_VIOLATIONS_MODERATE,
                    terms::ON_VIOLATIONS_OVERRIDE
                ),
                OnViolations::Moderate => write!(
                    f,
                    "the new validator of `{collection}` was applied with validationLevel moderate: {violations}; after migrating them, apply again for the declared level"
                ),
                _ => write!(
                    f,
                    "the new validator of `{collection}` was applied over existing data by request: {violations}; they fail their next update"
                ),
            },
            Warning::NotACollection { collection, kind } => write!(
                f,
                "`{collection}` is a {kind} on the server, not a collection; left alone"
            ),
            Warning::NotTimeSeries { collection } => write!(
                f,
                "`{collection}` is declared a time series collection, and the server holds a plain collection of that name, which mongod cannot turn into one: apply writes nothing; move its documents into a new time series collection and drop it (or rename one of them)"
            ),
            Warning::TimeSeriesDiffers { collection, differences } => write!(
                f,
                "the time series options of `{collection}` differ where mongod cannot change them, left alone: {}",
                differences.join("; ")
            ),
            Warning::CollationDiffers { collection, declared, server } => write!(
                f,
                "`{collection}` has the default collation {} on the server, not the declared {}: mongod cannot change a collection's default collation (recreate the collection to change it); the library sends the declared collation with every index and declared query, so only its reads by `_id` and the queries written by hand see the server's",
                server.as_ref().map_or_else(|| "simple".to_owned(), ToString::to_string),
                declared.as_ref().map_or_else(|| "simple one".to_owned(), ToString::to_string)
            ),
            Warning::SameVersionChanged { version, recorded_fingerprint, fingerprint } => write!(
                f,
                "schema version {version} was recorded with other models (fingerprint {recorded_fingerprint}, now {fingerprint}); applied anyway: give a deployed change a new version number"
            ),
            Warning::Downgraded { recorded, applying } => write!(
                f,
                "schema version {applying} was applied over the newer recorded version {recorded} by request ({}); the record now says {applying}",
                terms::ALLOW_DOWNGRADE
            ),
            Warning::DropsHeldBack { recorded, applying, indexes } => write!(
                f,
                "stale indexes kept because the recorded version {recorded} is newer than {applying}: {}",
                indexes.join(", ")
            ),
            Warning::RedundantIndex { collection, name, keys, served_by } => write!(
                f,
                "declared index `{name}` {keys} on `{collection}` is redundant: it is a prefix of `{served_by}`, which serves every query it serves; remove its `#[index]`"
            ),
            Warning::PrefixIndex { collection, name, keys, served_by } => write!(
                f,
                "the server's index `{name}` {keys} on `{collection}` is not in the schema and is a prefix of `{served_by}`: redundant, drop it with {}",
                terms::DROP_STALE_INDEXES
            ),
            Warning::RolledBack { failed, applying, error } => write!(
                f,
                "schema version {applying} was applied over version {failed}, whose apply had failed ({error}): rolled back"
            ),
            Warning::RecordAdopted { from, to } => write!(
                f,
                "the schema `{to}` had no version record: it took over the record `{from}` of the unnamed schema it was before (which now points to `{to}`)"
            ),
            Warning::Drifted { version, collections, after_own_write } => {
                let collections = collections.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
                if *after_own_write {
                    write!(f, "DRIFT: read again after this apply's last write, the server's state of {collections} was no longer schema version {version}'s (a late write of an older apply landed after it); written again")
                } else {
                    write!(f, "DRIFT: the server's state of {collections} differs from schema version {version}, recorded as applied (a late write of an older apply, or an operator, changed it); apply repairs it")
                }
            }
            Warning::ShardKeyDiffers { collection, declared, sharded } => write!(
                f,
                "`{collection}` is sharded by {sharded}, not by the declared {declared}; left alone (resharding is an operator's decision)"
            ),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(version) = &self.version {
            writeln!(f, "{version}")?;
        }
        let differs = self.warnings.iter().any(|w| {
            matches!(
                w,
                Warning::IndexConflict { .. } | Warning::NotACollection { .. }
            )
        });
        if self.actions.is_empty() && self.migrations.is_empty() {
            if differs || !self.missing.is_empty() {
                writeln!(
                    f,
                    "nothing apply would write, but the database differs from the schema where apply changes nothing by itself (below)"
                )?;
            } else {
                writeln!(f, "nothing to do: the database matches the schema")?;
            }
        }
        for action in &self.actions {
            writeln!(f, "- {action}")?;
        }
        for step in &self.migrations {
            writeln!(f, "- {step}")?;
        }
        for status in &self.sharding {
            writeln!(f, "~ {status}")?;
        }
        for warning in &self.warnings {
            writeln!(f, "! {warning}")?;
        }
        if self.warnings.iter().any(Warning::refuses_apply) {
            writeln!(
                f,
                "apply would refuse and write nothing ({}): the warning above says what to do first",
                terms::REFUSED
            )?;
        } else if !self.missing.is_empty() {
            writeln!(f, "{}", missing_after_apply(&self.missing))?;
        }
        Ok(())
    }
}

/// The line of a plan whose apply would leave `missing` off the server, in the caller's terms
/// (what `apply` then returns: its report's `is_as_declared()`, or the CLI's exit code).
pub(crate) fn missing_after_apply(missing: &[String]) -> String {
    format!(
        "NOT AS DECLARED after apply: {} would not be on the server; apply would record the version `partial`, not `applied` ({})",
        missing.join("; "),
        terms::NOT_AS_DECLARED
    )
}
