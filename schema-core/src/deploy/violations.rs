//! The documents a validator would reject: what `apply` counts before it tightens a validator,
//! what `audit` reports, and what the version record keeps of a validator refused over them.

use std::fmt;
use std::time::Duration;

use mongodb::bson::Bson;

/// Existing documents that a new validator would reject.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Violations {
    /// How many.
    pub count: u64,
    /// A few of their `_id`s.
    pub sample_ids: Vec<Bson>,
    /// For each sampled document (same order), the rules it fails, as the library's
    /// [`crate::LocalValidator`] evaluates the new validator (`name` fails `maxLength`); empty
    /// when the validator holds what it cannot evaluate.
    pub sample_rules: Vec<String>,
    /// The count was stopped at this time limit (`maxTimeMS`) before it finished: how many
    /// documents violate the validator is not known (`count` is then 0), and `apply` treats the
    /// change as one over violating documents (refused, or held at `moderate`, as decided).
    pub unfinished_after: Option<Duration>,
}

impl Violations {
    /// The outcome of a count stopped at `limit`.
    pub(crate) fn unfinished(limit: Duration) -> Violations {
        Violations {
            unfinished_after: Some(limit),
            ..Violations::default()
        }
    }

    /// Whether existing documents violate the validator, or may (a count cut off by its time
    /// limit).
    pub(crate) fn any(&self) -> bool {
        self.count > 0 || self.unfinished_after.is_some()
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(limit) = self.unfinished_after {
            return write!(
                f,
                "an unknown number of existing documents may violate it (counting them did not finish within {} s, the time limit of the library's scans)",
                limit.as_secs()
            );
        }
        let samples: Vec<String> = self
            .sample_ids
            .iter()
            .enumerate()
            .map(|(i, id)| match self.sample_rules.get(i) {
                Some(rules) if !rules.is_empty() => format!("{id} ({rules})"),
                _ => id.to_string(),
            })
            .collect();
        write!(
            f,
            "{} existing document(s) violate it, e.g. _id {}",
            self.count,
            samples.join(", ")
        )
    }
}
