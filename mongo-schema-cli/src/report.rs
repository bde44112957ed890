//! What `pull` found and decided, with the evidence: written as JSON with `--report`, summed up
//! on stderr.

use serde::Serialize;

/// One decision and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The stored path (`orders.items[].sku`; `<type=card>` marks a variant).
    pub path: String,
    /// What was decided.
    pub decision: String,
    /// The counts behind it.
    pub evidence: String,
}

/// The bound of an array or map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArrayBound {
    /// The stored path.
    pub path: String,
    /// The largest seen.
    pub observed_max: u64,
    /// Whether `observed_max` was counted over every document (the facts pass) rather than the
    /// sample and the gate's failures.
    pub exact: bool,
    /// The bound written.
    pub bound: u64,
    /// Larger than the threshold: seed 003's unbounded case, a reference is the better design.
    pub unbounded_in_practice: bool,
}

/// A validator the gate had to widen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Widening {
    /// The round of the gate (1 is the first check).
    pub round: u32,
    /// The collection.
    pub collection: String,
    /// The path and rule that failed (`items.3.qty: maxItems`).
    pub rule: String,
    /// Documents that failed it.
    pub documents: u64,
}

/// A reference candidate and its check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReferenceCheck {
    /// The field's path.
    pub path: String,
    /// The collection whose `_id`s were looked up.
    pub target: String,
    /// Distinct values checked.
    pub checked: u64,
    /// Of them, found in the target.
    pub found: u64,
    /// Accepted as a reference.
    pub accepted: bool,
}

/// An extended reference and the counts behind its sync strategy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CopyCheck {
    /// The copy's path.
    pub path: String,
    /// The source collection.
    pub target: String,
    /// The copied fields.
    pub fields: Vec<String>,
    /// Copies compared with their source: every holder of one.
    pub compared: u64,
    /// Of them, equal to the source now.
    pub equal: u64,
    /// Of them, differing from the source now (a copied field, or the source is gone): any
    /// makes the copy `frozen`.
    pub differing: u64,
    /// Of the differing, those whose source is gone.
    pub sources_missing: u64,
    /// The most holders of one source.
    pub max_holders: u64,
    /// The strategy suggested.
    pub sync: String,
}

/// A sub-document holding an `_id` that is no copy of a candidate source, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RejectedCopy {
    /// `collection.field`.
    pub path: String,
    /// The candidate source collection.
    pub target: String,
    /// Why it is no copy (a copied field the source lacks or types otherwise, an `_id` not
    /// found in it, ...).
    pub reason: String,
}

/// A collection whose `_id`s were looked up in another's: a part under its owner's `_id`
/// (`same_id_as`) when every one was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartCheck {
    /// The collection checked (the part).
    pub part: String,
    /// The collection whose `_id`s it was checked against (the owner).
    pub owner: String,
    /// Distinct `_id`s of the part checked by the sample.
    pub checked: u64,
    /// Of them, found in the owner.
    pub found: u64,
    /// Parts without an owner, counted over every part (one aggregation).
    pub orphans: u64,
    /// Owners without a part.
    pub owners_without_part: u64,
    /// Proposed: `same_id_as` written, or (a few orphans, or no name to tell two equal sets
    /// apart) a comment.
    pub proposed: bool,
    /// `same_id_as` written (`false`: proposed in a comment, or not at all).
    pub written: bool,
}

/// An index of the database and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IndexNote {
    /// The collection.
    pub collection: String,
    /// The index name.
    pub name: String,
    /// Kept as `#[index]`, or why not.
    pub outcome: String,
}

/// Per collection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectionSummary {
    /// The name.
    pub name: String,
    /// The Rust type of its documents.
    pub type_name: String,
    /// Documents when `pull` ran.
    pub documents: u64,
    /// Documents sampled for the shape.
    pub sampled: u64,
    /// Documents the server's `$nor: [{ $jsonSchema }]` count found failing the written validator
    /// (0: it accepts every stored document).
    pub server_violators: u64,
    /// Documents the library's `LocalValidator` found failing it (0 likewise).
    pub local_violators: u64,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Report {
    /// The database.
    pub database: String,
    /// Per collection.
    pub collections: Vec<CollectionSummary>,
    /// Enum, map, number and tagged-union decisions.
    pub decisions: Vec<Decision>,
    /// Paths left as `Bson`, and why.
    pub undecided: Vec<Decision>,
    /// Every array and map with its observed maximum and bound.
    pub arrays: Vec<ArrayBound>,
    /// What the gate widened.
    pub widenings: Vec<Widening>,
    /// Rounds of the gate until nothing failed.
    pub gate_rounds: u32,
    /// Reference candidates.
    pub references: Vec<ReferenceCheck>,
    /// Extended references.
    pub copies: Vec<CopyCheck>,
    /// Collections checked for a part under another's `_id` (`same_id_as`).
    pub parts: Vec<PartCheck>,
    /// Sub-documents with an `_id` that were looked at as copies of a collection and are not one,
    /// each with why.
    pub rejected_copies: Vec<RejectedCopy>,
    /// Indexes.
    pub indexes: Vec<IndexNote>,
    /// Things said once (a cap reached, a text index the attributes cannot say).
    pub notes: Vec<String>,
    /// The largest reply of the facts pass, in bytes (kept far below mongod's 16 MiB).
    pub largest_facts_reply: u64,
    /// Commands sent to the server, by name.
    pub commands: std::collections::BTreeMap<String, u64>,
    /// Wall time of the pull.
    pub seconds: f64,
    /// Wall time per stage (`sample`, `facts`, `gate`, `relate`, `emit`), in seconds.
    pub phases: Vec<(String, f64)>,
}

impl Report {
    /// Counts one command.
    pub fn command(&mut self, name: &str) {
        *self.commands.entry(name.to_owned()).or_default() += 1;
    }

    /// The summary for stderr.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for c in &self.collections {
            out.push_str(&format!(
                "{}: {} documents ({} sampled) -> {}; violators: server {}, local {}\n",
                c.name, c.documents, c.sampled, c.type_name, c.server_violators, c.local_violators
            ));
        }
        let n = |count: usize, one: &str, many: &str| {
            format!("{count} {}", if count == 1 { one } else { many })
        };
        out.push_str(&format!(
            "{}, {}, {}, {} in {}, {} and {} accepted\n",
            n(self.decisions.len(), "decision", "decisions"),
            n(self.undecided.len(), "undecided path", "undecided paths"),
            n(self.arrays.len(), "bound", "bounds"),
            n(self.widenings.len(), "widening", "widenings"),
            n(self.gate_rounds as usize, "gate round", "gate rounds"),
            n(
                self.references.iter().filter(|r| r.accepted).count(),
                "reference",
                "references"
            ),
            n(self.copies.len(), "copy", "copies"),
        ));
        for a in self.arrays.iter().filter(|a| a.unbounded_in_practice) {
            out.push_str(&format!(
                "warning: `{}` holds up to {} items: unbounded in practice, a reference is the better design (seed 003, question 1)\n",
                a.path, a.observed_max
            ));
        }
        for c in self.copies.iter().filter(|c| c.differing > 0) {
            out.push_str(&format!(
                "warning: `{}`: {} of {} copies differ from their source in `{}`: written `{}`; a maintained strategy (`async`, `transactional`) would rewrite them to the source's current values\n",
                c.path, c.differing, c.compared, c.target, c.sync
            ));
        }
        for p in self.parts.iter().filter(|p| p.proposed) {
            out.push_str(&format!(
                "part: the `_id`s of `{}` lie inside those of `{}` ({} orphans, {} owners without one): {}\n",
                p.part,
                p.owner,
                p.orphans,
                p.owners_without_part,
                if p.written {
                    "written as `same_id_as`"
                } else {
                    "proposed in a comment"
                }
            ));
        }
        for u in &self.undecided {
            out.push_str(&format!(
                "undecided: `{}` is `Bson`: {}\n",
                u.path, u.evidence
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        let commands: u64 = self.commands.values().sum();
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|(name, s)| format!("{name} {s:.2} s"))
            .collect();
        out.push_str(&format!(
            "{commands} commands in {:.2} s ({})\n",
            self.seconds,
            phases.join(", ")
        ));
        out
    }
}
