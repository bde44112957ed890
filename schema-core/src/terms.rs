//! The words a message uses for an option of `plan` and `apply`: the library's call
//! (`allow_downgrade(true)`) or, while a schema command of the CLI runs, its flag
//! (`--allow-downgrade`), so that a report tells an operator what to type.

use std::fmt;
use std::future::Future;

tokio::task_local! {
    /// Set while a schema command of [`crate::cli`] runs.
    static CLI: bool;
}

/// One option, as the library and as the CLI spell it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Term {
    api: &'static str,
    cli: &'static str,
}

impl Term {
    /// The spelling for the caller at hand.
    pub(crate) fn get(&self) -> &'static str {
        if CLI.try_with(|cli| *cli).unwrap_or(false) {
            self.cli
        } else {
            self.api
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

/// The terms, each `NAME: api, cli;`, as `pub(crate)` constants.
macro_rules! terms {
    ($($(#[$doc:meta])* $name:ident: $api:literal, $cli:literal;)*) => {
        $($(#[$doc])* pub(crate) const $name: Term = Term { api: $api, cli: $cli };)*
    };
}

terms! {
    /// Apply over a newer recorded version.
    ALLOW_DOWNGRADE: "`allow_downgrade(true)`", "`--allow-downgrade`";
    /// [`ALLOW_DOWNGRADE`] named, not called.
    ALLOW_DOWNGRADE_BY_NAME: "allow_downgrade", "--allow-downgrade";
    /// Apply a validator over violating documents at level moderate.
    ON_VIOLATIONS_MODERATE: "`on_violations(OnViolations::Moderate)`", "`--on-violations moderate`";
    /// Apply a validator over violating documents as declared.
    ON_VIOLATIONS_OVERRIDE: "`on_violations(OnViolations::Override)`", "`--on-violations override`";
    /// Drop the indexes the schema does not declare.
    DROP_STALE_INDEXES: "`drop_stale_indexes(true)`", "`--drop-stale-indexes`";
    /// Shard the collections that declare a shard key.
    SHARD_COLLECTIONS: "`shard_collections(true)`", "`--shard-collections`";
    /// Serve on, writing nothing, over a newer recorded version.
    ON_NEWER_CONTINUE: "`on_newer(OnNewer::Continue)`", "`--on-newer continue`";

    /// What `apply` returns when a declared validator or index is not on the server afterwards.
    NOT_AS_DECLARED: "`ApplyReport::is_as_declared()` is false", "`apply` exits 3";

    /// What `apply` returns when it refuses the whole plan and writes nothing.
    REFUSED: "`Error::CannotApply`", "`apply` exits 1";
}

/// Runs `work` with the messages it formats in the CLI's terms.
#[cfg_attr(not(feature = "cli"), allow(dead_code))] // used by the schema commands
pub(crate) async fn in_cli_terms<F: Future>(work: F) -> F::Output {
    CLI.scope(true, work).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_cli_speaks_in_flags_the_library_in_calls() {
        assert_eq!(ALLOW_DOWNGRADE.get(), "`allow_downgrade(true)`");
        let inside = in_cli_terms(async { ALLOW_DOWNGRADE.get() }).await;
        assert_eq!(inside, "`--allow-downgrade`");
        assert_eq!(ALLOW_DOWNGRADE.get(), "`allow_downgrade(true)`");
    }
}
