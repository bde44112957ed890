//! What `pull` is told: read by every stage of the pipeline (`pull` runs them, `relate` reads
//! the reference threshold), so it sits below them all.

use crate::infer::Options;
use crate::sample::ReadOptions;

/// Everything `pull` is told.
#[derive(Debug, Clone)]
pub struct PullConfig {
    /// Only these collections (all when empty).
    pub collections: Vec<String>,
    /// How to read.
    pub read: ReadOptions,
    /// The inference rules' knobs.
    pub infer: Options,
    /// Paths the facts pass counts per collection at most.
    pub max_paths: usize,
    /// Gate rounds before the failing paths are made `Bson`.
    pub max_rounds: u32,
    /// Failing documents the gate keeps per collection and round to widen from
    /// ([`crate::verify::FAILURES_KEPT`]); the gate passes on its counts, whatever it kept.
    pub failures_kept: usize,
    /// Share of checked values found in the target for a reference (0..=1).
    pub reference_threshold: f64,
    /// Look for references and copies.
    pub relations: bool,
    /// Say each pass as it starts, a line on standard error (`mongo-schema pull: facts of
    /// `orders`: 700,000 documents`), and how far it is: each collection sampled, each run of
    /// [`PullConfig::facts_chunk`] documents counted, each gate round, each reference or copy
    /// checked. The command line sets it, a library caller may.
    pub progress: bool,
    /// Documents one facts aggregation counts at most: a larger collection is counted in runs
    /// of `_id`s, in index order, one aggregation each, so that the pass says how far it is.
    pub facts_chunk: u64,
}

impl PullConfig {
    /// A line on standard error, when the config asks for progress ([`PullConfig::progress`]):
    /// here, below every stage, so that each says how far it is.
    pub fn say(&self, line: &str) {
        if self.progress {
            eprintln!("mongo-schema pull: {line}");
        }
    }
}

impl Default for PullConfig {
    fn default() -> Self {
        PullConfig {
            collections: Vec::new(),
            read: ReadOptions {
                sample: 1000,
                max_time: None,
                secondary: false,
            },
            infer: Options::default(),
            max_paths: 500,
            max_rounds: 8,
            failures_kept: crate::verify::FAILURES_KEPT,
            reference_threshold: 0.95,
            relations: true,
            progress: false,
            facts_chunk: crate::facts::CHUNK,
        }
    }
}
