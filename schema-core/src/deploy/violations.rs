//! The documents a validator would reject: what `apply` counts before it tightens a validator,
//! what `audit` reports, and what the version record keeps of a validator refused over them.

use std::fmt;

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
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
