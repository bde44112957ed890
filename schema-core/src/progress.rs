//! Progress of long work, as `tracing` events with the target [`PROGRESS_TARGET`] and the fields
//! `task` (what runs: `apply`, `migration v2 default_team`), `done` and, when known, `total`;
//! the message says what was just done. Any subscriber can show them; the schema commands
//! (feature `cli`) draw a progress bar on a terminal and print plain lines otherwise.
//!
//! Emitted by `apply` (one event per action done, `done`/`total` actions), by its migration
//! steps (one per step started, `done`/`total` steps, then one per batch a step saves,
//! `done` documents matched so far), by `reconcile` (one per copy compared, `done`/`total`
//! copies) and by [`Subset::rebuild_all`](crate::Subset::rebuild_all) (one per batch of
//! parents, `done` parents rebuilt so far).

/// The `tracing` target of the progress events.
pub const PROGRESS_TARGET: &str = "mongo_schema::progress";

/// One progress event at info level.
pub(crate) fn report(task: &str, done: u64, total: Option<u64>, message: &dyn std::fmt::Display) {
    match total {
        Some(total) => {
            tracing::info!(target: "mongo_schema::progress", task, done, total, "{message}")
        }
        None => tracing::info!(target: "mongo_schema::progress", task, done, "{message}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_target_is_the_one_the_macros_use() {
        // `tracing::info!(target: ...)` needs a literal; this keeps the constant in step
        assert_eq!(super::PROGRESS_TARGET, "mongo_schema::progress");
    }
}
