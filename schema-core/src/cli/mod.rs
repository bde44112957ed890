//! The schema commands in the service's own binary (cargo feature `cli`): `plan`, `apply`,
//! `status`, `report`, `audit`, `reconcile`, `retry-failures`, `prove` and `mongosh`, each a
//! thin printer over what [`Schema`] already offers.
//!
//! A service adds [`SchemaCommand`] to its own clap app as a subcommand and calls [`run`]:
//!
//! ```no_run
//! # fn schema() -> mongo_schema_core::Schema { unimplemented!() }
//! use clap::{Parser, Subcommand};
//!
//! #[derive(Parser)]
//! struct App {
//!     #[command(subcommand)]
//!     command: Option<Command>,
//! }
//!
//! #[derive(Subcommand)]
//! enum Command {
//!     /// Schema operations: plan, apply, status, report, ...
//!     #[command(subcommand)]
//!     Schema(mongo_schema_core::cli::SchemaCommand),
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     match App::parse().command {
//!         Some(Command::Schema(command)) => mongo_schema_core::cli::run(&schema(), command).await,
//!         None => std::process::ExitCode::SUCCESS, // serve
//!     }
//! }
//! ```
//!
//! or, for a binary that is only that, `mongo_schema::cli::main(schema()).await`
//! (`my-bin plan --uri mongodb://... --db orders`).
//!
//! # Exit codes
//!
//! One set for every command, defined once in [`Exit`]:
//!
//! | code | [`Exit`] | meaning |
//! | --- | --- | --- |
//! | `0` | [`Exit::Done`] | done, or nothing to do / nothing found |
//! | `1` | [`Exit::Error`] | an error (printed on standard error; with `--json`, also as `{"error": "..."}` on standard output): `apply` refused (a newer recorded version without `--allow-downgrade`), a step failed, the server was unreachable |
//! | `2` | [`Exit::Attention`] | work pending or attention needed: `plan` has actions or migration steps to run; `audit` is not clean; `reconcile` found drift (a dry run) or a repair failed; `retry-failures` left records still failing; `prove` has a query not served as declared; `status` shows drift, pending actions, pending or failed migrations, a `failed` or `partial` record, `async` copies or subsets that no sync worker has ever followed, a recorded version newer than this binary's (whose `apply` refuses without `--allow-downgrade`), an expired lease, a worker that holds its lease without saving progress for longer than [`STALLED_WORKER_AFTER`] or whose watchdog found it stalled within that time, or recorded sync failures |
//! | `3` | [`Exit::NotAsDeclared`] | the schema is not as declared: `apply` ran and a declared validator or index is not on the server (a validator refused over, or held at `moderate` for, violating documents; a conflicting index), so the version is recorded `partial`, never `applied`; `plan`: `apply` with the same options would leave it so, or would refuse (a newer recorded version; a time series collection declared over a plain one) |
//!
//! # Progress
//!
//! While a command runs, the library's progress events ([`crate::PROGRESS_TARGET`]: each action
//! of `apply`, each migration step and the batches it saves) and its warnings go to standard
//! error: a progress bar on a terminal, plain lines otherwise (`apply [3/9] create collection
//! ...`). On a terminal the bars are cleared once the command has its result, which it then
//! prints (each action once); a failed command's bars stay where they stopped. They go through a
//! `tracing` subscriber of the command's own, set for the command's future only; the service's
//! subscriber sees nothing of that future meanwhile.
//!
//! # `--json`
//!
//! With `--json` each command writes one JSON document on standard output, an object whose
//! `"command"` names the command and whose `"exit"` is the exit code; the other members are
//! documented on each variant of [`SchemaCommand`] and are stable within a minor release
//! (members may be added). `report` takes `--format json` instead.

mod json;
mod progress;
mod status;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use mongodb::Database;
use serde_json::{json, Value};
use tracing::instrument::WithSubscriber as _;

use crate::{OnNewer, OnViolations, Schema};

/// The exit codes of the schema commands: one set for all of them (see the
/// [module](self#exit-codes) documentation for which command returns which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Exit {
    /// `0`: done, or nothing to do / nothing found.
    Done,
    /// `1`: an error; the message is on standard error.
    Error,
    /// `2`: work pending (`plan`) or attention needed (`status`, `audit`, `reconcile`,
    /// `retry-failures`, `prove`).
    Attention,
    /// `3`: the schema is not as declared: a declared validator or index is not on the server
    /// after `apply` (the version is recorded `partial`), or would not be after it (`plan`).
    NotAsDeclared,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Done => 0,
            Exit::Error => 1,
            Exit::Attention => 2,
            Exit::NotAsDeclared => 3,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit.code())
    }
}

/// How long a sync worker may hold its lease without saving progress (its resume token) before
/// `status` calls it stalled and exits 2: five times the worker's default token save interval
/// ([`crate::DEFAULT_TOKEN_SAVE_INTERVAL`], the longest a healthy worker on a quiet stream goes
/// without saving). A worker configured with a longer interval, or one whose single batch takes
/// longer, is reported stalled too.
pub const STALLED_WORKER_AFTER: std::time::Duration = std::time::Duration::from_secs(300);

/// The schema commands, as a clap subcommand of the service's own binary.
#[derive(Debug, Clone, Subcommand)]
#[non_exhaustive]
pub enum SchemaCommand {
    /// What `apply` would do, without writing: actions, violating documents counted,
    /// migration steps pending. Exits 0 when there is nothing to do, 2 when there is work, 3
    /// when apply would leave a declared validator or index off the server, or refuse.
    ///
    /// JSON: `{ command: "plan", exit, work: bool, refuses: bool, missing: [string],
    /// version: string|null, actions: [{ kind,
    /// collection, summary }], migrations: [{ version, name, description, collection,
    /// documents, recorded: string|null }], warnings: [string] }`.
    Plan(PlanArgs),
    /// Brings the database to the schema: creates collections, validators and indexes, runs
    /// the pending migration steps (under the apply lock, idempotently). Exits 3 when a
    /// declared validator or index is not on the server afterwards (the version is then
    /// recorded `partial`, not `applied`).
    ///
    /// JSON: `{ command: "apply", exit, noop: bool, as_declared: bool, missing: [string],
    /// version: string|null, recorded: bool,
    /// actions: [{ kind, collection, summary, done_concurrently }], migrations: [{ version,
    /// name, description, matched, changed, resumed }], notes: [string], warnings: [string] }`.
    Apply(ApplyArgs),
    /// The recorded version and fingerprint, drift, migrations done/failed/pending, the sync
    /// workers by name (owner, lease expiry, token age against the oplog window) and the sync
    /// failure records.
    ///
    /// JSON: `{ command: "status", exit, schema, version: { declared, fingerprint, recorded:
    /// { version, fingerprint, completed, applied_at, failure, missing }|null, status },
    /// pending_actions, never_followed: ["holder.path"],
    /// drift: [string], migrations: { declared, done, failed, pending: [{ version, name,
    /// recorded }] } (`done` and `failed` count the changelog's records of this schema, of
    /// every version), workers: [{ name, owner, lease_expires, lease_expires_in_ms, expired,
    /// stalled, epoch, lag_ms, token_time, token_age_ms, token_saved_at, oplog_window_ms, failures
    /// }],
    /// failures: { total, by_copy: { "holder.path": n } } }` (times as RFC 3339 text; `owner`
    /// is `null` once a worker released its lease; `lag_ms`, from the last applied change's
    /// `wallTime` to its copies rewritten, as of the last token save; `oplog_window_ms`, from
    /// the oldest oplog entry to now, is `null` where the server has no readable oplog).
    Status(Connection),
    /// The schema report: `--format text|markdown|html|json` (no server needed).
    ///
    /// JSON (`--format json`): `{ command: "report", collections: [{ name, worst_case_bytes,
    /// worst_case_bounded, indexes: [{ name, keys, reasons: [string] }], embeds, references,
    /// copies, subsets }], relationships: [{ holder, path, outcome, other, bound, read_path,
    /// copies, atomicity, routing }], warnings: [string] }`.
    Report(ReportArgs),
    /// A read-only look at the live database against the schema: document counts and sizes,
    /// arrays near their bound, documents the declared validator rejects, a validator on the
    /// server that is not the declared one, index differences, parts without owners, drift.
    /// Exits 2 when it found something.
    ///
    /// JSON: `{ command: "audit", exit, clean: bool, collections: [{ collection, exists,
    /// documents, largest_bytes, oversized, arrays_near_bound, invalid, missing_indexes,
    /// unexpected_indexes, conflicting_indexes, validator_differs: string | null }],
    /// unknown_collections: [string], parts, children: [{ parent, child, field, kept_by,
    /// missing_parent }], drifted }`.
    Audit(Connection),
    /// Compares every copy and subset with its source, and finds the parts whose owner is
    /// gone; `--repair` rewrites the drifted ones and deletes the orphan parts.
    /// Exits 2 when something drifted (without `--repair`) or a repair failed.
    ///
    /// JSON: `{ command: "reconcile", exit, repair: bool, drifted, repaired, copies: [{ copy,
    /// strategy, checked, drifted, repaired, missing_sources, missing_copies, failed,
    /// recorded_failures }], subsets: [{ subset, checked, drifted, repaired }], parts:
    /// [{ part, owner, orphans, deleted }] }`.
    Reconcile(ReconcileArgs),
    /// Re-applies the recorded sync failures; the records that now succeed are removed. Exits 2
    /// when some still fail.
    ///
    /// JSON: `{ command: "retry-failures", exit, retried, resolved, still_failing,
    /// unknown_copies }`.
    RetryFailures(Connection),
    /// `explain` of every declared query and every query the library sends. Exits 2 when one
    /// is not served as declared.
    ///
    /// JSON: `{ command: "prove", exit, sorts_in_memory, queries: [{ collection, query,
    /// declared, expected_index, used_indexes, collscan, covered, failure, note }] }`.
    Prove(Connection),
    /// The mongosh script that sets up the same validators and indexes, for review (no server
    /// needed).
    Mongosh,
}

impl SchemaCommand {
    /// The command's `--uri`, `--db` and `--json`, for a service that fills in defaults from
    /// its own configuration before [`run`]; `None` for `report` and `mongosh`, which need no
    /// server.
    pub fn connection_mut(&mut self) -> Option<&mut Connection> {
        match self {
            SchemaCommand::Plan(a) => Some(&mut a.connection),
            SchemaCommand::Apply(a) => Some(&mut a.plan.connection),
            SchemaCommand::Status(c)
            | SchemaCommand::Audit(c)
            | SchemaCommand::RetryFailures(c)
            | SchemaCommand::Prove(c) => Some(c),
            SchemaCommand::Reconcile(a) => Some(&mut a.connection),
            SchemaCommand::Report(_) | SchemaCommand::Mongosh => None,
        }
    }
}

/// `--uri`, `--db` and `--json`, taken by every command that talks to a server.
#[derive(Debug, Clone, Args)]
#[non_exhaustive]
pub struct Connection {
    /// The server's connection string.
    #[arg(long, env = "MONGODB_URI")]
    pub uri: Option<String>,
    /// The database (default: the URI's database).
    #[arg(long)]
    pub db: Option<String>,
    /// Write one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `plan`.
#[derive(Debug, Clone, Args)]
#[non_exhaustive]
pub struct PlanArgs {
    /// The server.
    #[command(flatten)]
    pub connection: Connection,
    /// What to do with a validator change that existing documents violate.
    #[arg(long, value_enum, default_value_t = ViolationsArg::Refuse)]
    pub on_violations: ViolationsArg,
    /// Also drop the indexes the schema does not declare.
    #[arg(long)]
    pub drop_stale_indexes: bool,
    /// Also shard, on a mongos, the collections that declare a shard key.
    #[arg(long)]
    pub shard_collections: bool,
}

/// Arguments of `apply`.
#[derive(Debug, Clone, Args)]
#[non_exhaustive]
pub struct ApplyArgs {
    /// The server, and what to plan.
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Apply even when the database records a newer schema version.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// When the database records a newer version: fail (exit 1) or continue (write nothing,
    /// exit 0).
    #[arg(long, value_enum, default_value_t = OnNewerArg::Fail)]
    pub on_newer: OnNewerArg,
}

/// Arguments of `reconcile`.
#[derive(Debug, Clone, Args)]
#[non_exhaustive]
pub struct ReconcileArgs {
    /// The server.
    #[command(flatten)]
    pub connection: Connection,
    /// Rewrite the drifted copies (default: a dry run).
    #[arg(long)]
    pub repair: bool,
}

/// Arguments of `report`.
#[derive(Debug, Clone, Args)]
#[non_exhaustive]
pub struct ReportArgs {
    /// The report's format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
}

/// The formats of `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[non_exhaustive]
pub enum ReportFormat {
    /// A plain summary: one table of collections, one of relationships, the warnings.
    Text,
    /// The Markdown report with its Mermaid diagram ([`Schema::report`]).
    Markdown,
    /// One self-contained HTML page with an SVG diagram ([`Schema::report_html`]).
    Html,
    /// The report's facts as JSON.
    Json,
}

/// `--on-violations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[non_exhaustive]
pub enum ViolationsArg {
    /// Leave the validator as it is and report it.
    Refuse,
    /// Apply it with `validationLevel: "moderate"`.
    Moderate,
    /// Apply it as declared.
    Override,
}

/// `--on-newer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[non_exhaustive]
pub enum OnNewerArg {
    /// Exit 1 with the versions named.
    Fail,
    /// Write nothing and exit 0.
    Continue,
    /// Apply over it (a deliberate rollback), as `--allow-downgrade`.
    Downgrade,
}

impl From<ViolationsArg> for OnViolations {
    fn from(arg: ViolationsArg) -> Self {
        match arg {
            ViolationsArg::Refuse => OnViolations::Refuse,
            ViolationsArg::Moderate => OnViolations::Moderate,
            ViolationsArg::Override => OnViolations::Override,
        }
    }
}

impl From<OnNewerArg> for OnNewer {
    fn from(arg: OnNewerArg) -> Self {
        match arg {
            OnNewerArg::Fail => OnNewer::Fail,
            OnNewerArg::Continue => OnNewer::Continue,
            OnNewerArg::Downgrade => OnNewer::Downgrade,
        }
    }
}

/// A binary that is only the schema commands: `my-bin plan --uri U --db D`.
#[derive(Debug, Parser)]
#[command(about = "Schema commands: plan, apply, status, report, ...")]
struct Standalone {
    #[command(subcommand)]
    command: SchemaCommand,
}

/// Parses the process's arguments as a [`SchemaCommand`] (`my-bin plan --uri U --db D`), runs
/// it and returns its exit code; `--help` and argument errors are clap's.
pub async fn main(schema: Schema) -> ExitCode {
    let parsed = match Standalone::try_parse() {
        Ok(parsed) => parsed,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                Exit::Error.into()
            } else {
                Exit::Done.into()
            };
        }
    };
    run(&schema, parsed.command).await
}

/// What a command found, printed as a table or as JSON.
pub(crate) struct Output {
    /// The human form.
    pub(crate) text: String,
    /// The JSON form (without `command` and `exit`, added by [`run`]).
    pub(crate) json: Value,
    /// The exit code.
    pub(crate) code: Exit,
}

/// Runs one command against `schema`, printing to standard output (errors to standard
/// error), and returns its exit code (see the [module](self) documentation).
pub async fn run(schema: &Schema, command: SchemaCommand) -> ExitCode {
    let name = command_name(&command);
    let as_json = wants_json(&command);
    // progress and warnings on standard error while the command runs
    let progress = std::sync::Arc::new(progress::Progress::new());
    // the messages speak the CLI's terms (`--allow-downgrade`, `--on-violations moderate`)
    let outcome = crate::terms::in_cli_terms(execute(schema, command))
        .with_subscriber(progress::subscriber(progress.clone()))
        .await;
    progress.finish(outcome.is_ok());
    let mut stdout = std::io::stdout().lock();
    match outcome {
        Ok(Printed::Raw(text)) => {
            let _ = stdout.write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Ok(Printed::Output(output)) => {
            if as_json {
                let mut document = json!({ "command": name, "exit": output.code.code() });
                if let (Some(into), Value::Object(members)) =
                    (document.as_object_mut(), output.json)
                {
                    into.extend(members);
                }
                let _ = writeln!(stdout, "{document}");
            } else {
                let _ = stdout.write_all(output.text.as_bytes());
            }
            output.code.into()
        }
        Err(error) => {
            if as_json {
                let _ = writeln!(
                    stdout,
                    "{}",
                    json!({ "command": name, "exit": Exit::Error.code(), "error": error })
                );
            }
            let _ = writeln!(std::io::stderr(), "error: {error}");
            Exit::Error.into()
        }
    }
}

enum Printed {
    /// Text written as it is (`report`, `mongosh`).
    Raw(String),
    Output(Output),
}

fn command_name(command: &SchemaCommand) -> &'static str {
    match command {
        SchemaCommand::Plan(_) => "plan",
        SchemaCommand::Apply(_) => "apply",
        SchemaCommand::Status(_) => "status",
        SchemaCommand::Report(_) => "report",
        SchemaCommand::Audit(_) => "audit",
        SchemaCommand::Reconcile(_) => "reconcile",
        SchemaCommand::RetryFailures(_) => "retry-failures",
        SchemaCommand::Prove(_) => "prove",
        SchemaCommand::Mongosh => "mongosh",
    }
}

fn wants_json(command: &SchemaCommand) -> bool {
    command.clone().connection_mut().is_some_and(|c| c.json)
}

async fn connect(connection: &Connection) -> Result<Database, String> {
    let uri = connection
        .uri
        .as_deref()
        .ok_or("no server: pass --uri or set MONGODB_URI")?;
    let client = mongodb::Client::with_uri_str(uri)
        .await
        .map_err(|e| format!("cannot use the URI: {e}"))?;
    match &connection.db {
        Some(name) => Ok(client.database(name)),
        None => client
            .default_database()
            .ok_or_else(|| "no database: pass --db or name one in the URI".to_owned()),
    }
}

async fn execute(schema: &Schema, command: SchemaCommand) -> Result<Printed, String> {
    let failed = |e: crate::Error| e.to_string();
    Ok(Printed::Output(match command {
        SchemaCommand::Report(args) => {
            return Ok(Printed::Raw(match args.format {
                ReportFormat::Markdown => schema.report(),
                ReportFormat::Html => schema.report_html(),
                ReportFormat::Text => json::report_text(schema),
                ReportFormat::Json => {
                    let mut document = json!({ "command": "report" });
                    if let (Some(into), Value::Object(members)) =
                        (document.as_object_mut(), json::report(schema))
                    {
                        into.extend(members);
                    }
                    format!("{document}\n")
                }
            }))
        }
        SchemaCommand::Mongosh => return Ok(Printed::Raw(schema.mongosh_script())),
        SchemaCommand::Plan(args) => {
            let db = connect(&args.connection).await?;
            let plan = schema
                .plan(&db)
                .on_violations(args.on_violations.into())
                .drop_stale_indexes(args.drop_stale_indexes)
                .shard_collections(args.shard_collections)
                .await
                .map_err(failed)?;
            json::plan(&plan)
        }
        SchemaCommand::Apply(args) => {
            let db = connect(&args.plan.connection).await?;
            // an operator's apply counts the violators again (a start-up does not)
            let report = schema
                .apply(&db)
                .recount_violations(true)
                .on_violations(args.plan.on_violations.into())
                .drop_stale_indexes(args.plan.drop_stale_indexes)
                .shard_collections(args.plan.shard_collections)
                .on_newer(if args.allow_downgrade {
                    OnNewer::Downgrade
                } else {
                    args.on_newer.into()
                })
                .await
                .map_err(failed)?;
            json::apply(&report)
        }
        SchemaCommand::Status(connection) => {
            let db = connect(&connection).await?;
            status::status(schema, &db).await.map_err(failed)?
        }
        SchemaCommand::Audit(connection) => {
            let db = connect(&connection).await?;
            json::audit(&schema.audit(&db).await.map_err(failed)?)
        }
        SchemaCommand::Reconcile(args) => {
            let db = connect(&args.connection).await?;
            let report = schema
                .reconcile(&db)
                .dry_run(!args.repair)
                .await
                .map_err(failed)?;
            json::reconcile(&report, args.repair)
        }
        SchemaCommand::RetryFailures(connection) => {
            let db = connect(&connection).await?;
            json::retry(&schema.retry_failures(&db).await.map_err(failed)?)
        }
        SchemaCommand::Prove(connection) => {
            let db = connect(&connection).await?;
            json::prove(&schema.prove(&db).await.map_err(failed)?)
        }
    }))
}

/// Pads the columns of `rows` (the first is the header) for a terminal.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| format!("{cell:<width$}", width = widths[c]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_parse_as_a_service_binary_gives_them() {
        let parsed = Standalone::try_parse_from([
            "my-bin",
            "plan",
            "--uri",
            "mongodb://h",
            "--db",
            "d",
            "--json",
        ])
        .unwrap();
        let SchemaCommand::Plan(args) = parsed.command else {
            panic!("not plan")
        };
        assert_eq!(args.connection.uri.as_deref(), Some("mongodb://h"));
        assert_eq!(args.connection.db.as_deref(), Some("d"));
        assert!(args.connection.json);
        let parsed = Standalone::try_parse_from([
            "my-bin",
            "apply",
            "--db",
            "d",
            "--on-newer",
            "continue",
            "--allow-downgrade",
        ])
        .unwrap();
        let SchemaCommand::Apply(args) = parsed.command else {
            panic!("not apply")
        };
        assert_eq!(args.on_newer, OnNewerArg::Continue);
        assert!(args.allow_downgrade);
        for command in [
            "status",
            "audit",
            "reconcile",
            "retry-failures",
            "prove",
            "mongosh",
            "report",
        ] {
            assert!(
                Standalone::try_parse_from(["my-bin", command]).is_ok(),
                "{command}"
            );
        }
        let parsed = Standalone::try_parse_from(["my-bin", "report", "--format", "html"]).unwrap();
        assert!(matches!(
            parsed.command,
            SchemaCommand::Report(ReportArgs {
                format: ReportFormat::Html
            })
        ));
        assert!(Standalone::try_parse_from(["my-bin", "report", "--format", "pdf"]).is_err());
        assert!(Standalone::try_parse_from(["my-bin", "drop-everything"]).is_err());
    }

    #[test]
    fn tables_pad_their_columns() {
        let rows = vec![
            vec!["name".to_owned(), "n".to_owned()],
            vec!["tickets".to_owned(), "12".to_owned()],
        ];
        assert_eq!(table(&rows), "name     n\ntickets  12\n");
    }
}
