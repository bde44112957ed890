//! The `mongo-schema` command. `pull` adopts an existing database: it samples every collection,
//! counts the facts of every path over all documents, decides the Rust types by a lattice,
//! confirms references and copies on the server, and writes a module of models whose validators
//! it has checked against every stored document (the server's `$nor: [{ $jsonSchema }]` count
//! and mongo-schema's `LocalValidator`), widening what failed until nothing does.
//!
//! `main.rs` is a thin shell over [`run`]; every stage is a module: [`sample`] (the only reading
//! of the layout), [`facts`], [`lattice`], [`infer`], [`validator`], [`verify`], [`relate`],
//! [`emit`], [`report`], tied together by [`pull`].

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

pub mod collation;
pub mod config;
pub mod emit;
pub mod existing;
pub mod facts;
pub mod infer;
pub mod lattice;
pub mod model;
pub mod names;
pub mod pull;
pub mod relate;
pub mod report;
pub mod sample;
pub mod validator;
pub mod verify;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "mongo-schema",
    version,
    about = "MongoDB schema design the Rust compiler checks"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write the models of an existing database, proven to accept every stored document.
    Pull(PullArgs),
}

/// `mongo-schema pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The server: `mongodb://host:port/?replicaSet=rs0`.
    #[arg(long)]
    pub uri: String,
    /// The database.
    #[arg(long)]
    pub db: String,
    /// Only these collections (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub collections: Vec<String>,
    /// The Rust module to write.
    #[arg(long)]
    pub out: PathBuf,
    /// The full report, as JSON.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Documents per `$sample` (plus the oldest and newest by `_id`).
    #[arg(long, default_value_t = 1000)]
    pub sample: u64,
    /// Bounds are the observed maximum times this, rounded up (`2x`, `1.5`).
    #[arg(long, default_value = "2x", value_parser = parse_headroom)]
    pub headroom: f64,
    /// Fewest values for a unit enum (quicktype's rule: distinct values below their square root).
    #[arg(long, default_value_t = 10)]
    pub enum_min: u64,
    /// Arrays longer than this are reported as unbounded in practice.
    #[arg(long, default_value_t = 1000)]
    pub unbounded_threshold: u64,
    /// Paths to make maps (`orders.stock`), whatever their keys.
    #[arg(long = "map", value_name = "PATH")]
    pub maps: Vec<String>,
    /// Paths to keep structs, whatever their keys.
    #[arg(long = "struct", value_name = "PATH")]
    pub structs: Vec<String>,
    /// String paths to make unit enums, whatever their counts (up to 64 distinct values).
    #[arg(long = "enum", value_name = "PATH")]
    pub enums: Vec<String>,
    /// `maxTimeMS` of every read, in milliseconds (default 30 minutes).
    #[arg(long)]
    pub max_time_ms: Option<u64>,
    /// Paths counted per collection by the facts pass at most (the rest is reported).
    #[arg(long, default_value_t = 500)]
    pub max_paths: usize,
    /// Documents one facts aggregation counts at most: a larger collection is counted in runs
    /// of `_id`s, with a progress line after each.
    #[arg(long, default_value_t = facts::CHUNK, value_parser = clap::value_parser!(u64).range(1..))]
    pub facts_chunk: u64,
    /// Read from a secondary when there is one (`secondaryPreferred`).
    #[arg(long)]
    pub secondary: bool,
    /// Share of checked values found in the target to accept a reference.
    #[arg(long, default_value_t = 0.95)]
    pub reference_threshold: f64,
    /// Do not look for references and copies.
    #[arg(long)]
    pub no_relations: bool,
}

fn parse_headroom(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches(['x', 'X']);
    match number.parse::<f64>() {
        Ok(v) if v >= 1.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "`{text}` is not a headroom of at least 1 (`2x`, `1.5`)"
        )),
    }
}

impl PullArgs {
    /// The pipeline's configuration.
    pub fn config(&self) -> pull::PullConfig {
        pull::PullConfig {
            collections: self.collections.clone(),
            read: sample::ReadOptions {
                sample: self.sample,
                max_time: self.max_time_ms.map(Duration::from_millis),
                secondary: self.secondary,
            },
            infer: infer::Options {
                headroom: self.headroom,
                enum_min: self.enum_min,
                unbounded_threshold: self.unbounded_threshold,
                maps: self.maps.iter().cloned().collect(),
                structs: self.structs.iter().cloned().collect(),
                enums: self.enums.iter().cloned().collect(),
                undecided: BTreeSet::new(),
                existing: Default::default(),
                loosened: BTreeSet::new(),
            },
            reference_threshold: self.reference_threshold,
            relations: !self.no_relations,
            progress: true,
            facts_chunk: self.facts_chunk,
            ..pull::PullConfig::default()
        }
    }
}

/// Runs a parsed command line: 0 on success, 1 when nothing was written.
pub async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Pull(args) => match pull_command(&args).await {
            Ok(summary) => {
                eprint!("{summary}");
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("mongo-schema pull: {message}");
                ExitCode::FAILURE
            }
        },
    }
}

async fn pull_command(args: &PullArgs) -> Result<String, String> {
    let uri = redact_uri(&args.uri);
    // what the driver says may quote the URI: its password never reaches the terminal
    let hide = |message: String| hide_password(&message, &args.uri);
    let client = mongodb::Client::with_uri_str(&args.uri)
        .await
        .map_err(|e| hide(format!("cannot use the URI {uri}: {e}")))?;
    let db = client.database(&args.db);
    // a first command, so that a server that cannot be reached, or credentials it refuses, are
    // said as such rather than as a failure of the first pass
    db.run_command(mongodb::bson::doc! { "ping": 1 })
        .await
        .map_err(|e| hide(connection_error(&e, &uri)))?;
    let pulled = match pull::pull(&db, &args.config()).await {
        Ok(pulled) => pulled,
        Err(message) => {
            // a database that does not exist holds no collection: a misspelt name is said as
            // such (asked only when the pull failed)
            let empty = db
                .list_collection_names()
                .await
                .is_ok_and(|names| names.is_empty());
            let near = match empty {
                true => client.list_database_names().await.ok(),
                false => None,
            };
            return Err(hide(
                match near.as_deref().and_then(|names| nearest(&args.db, names)) {
                    Some(near) => format!("{message}; did you mean `{near}`?"),
                    None => message,
                },
            ));
        }
    };
    std::fs::write(&args.out, &pulled.module)
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(&pulled.report).expect("a report serializes");
        std::fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(format!(
        "{}wrote {}{}\n",
        pulled.report.summary(),
        args.out.display(),
        args.report
            .as_ref()
            .map(|p| format!(" and {}", p.display()))
            .unwrap_or_default()
    ))
}

/// The name of `names` nearest to `wanted`, when it is a near miss (at most two edits, a swap
/// of two neighbours counting as one) and not `wanted` itself.
fn nearest<'a>(wanted: &str, names: &'a [String]) -> Option<&'a str> {
    names
        .iter()
        .filter(|name| name.as_str() != wanted)
        .map(|name| {
            (
                mongo_schema_core::__private::edit_distance(wanted, name),
                name.as_str(),
            )
        })
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, name)| name)
}

/// `uri` with the password of its user info replaced by `****` (`mongodb://alice:****@h/`),
/// also when the URI is malformed (no scheme): for messages.
pub fn redact_uri(uri: &str) -> String {
    match password_of(uri) {
        Some(password) => uri.replacen(password, "****", 1),
        None => uri.to_owned(),
    }
}

/// The password of `uri`'s user info (`user:password@`), if it has one: what stands between
/// the first `:` and the last `@` of the part before the host.
fn password_of(uri: &str) -> Option<&str> {
    let head = match uri.split_once("://") {
        // the authority: up to the path or the options
        Some((_, rest)) => rest.split(['/', '?']).next().unwrap_or(rest),
        // a malformed URI (`mongodb+srv//alice:pw@h/`): its user info still ends at the last `@`
        None => uri,
    };
    let at = head.rfind('@')?;
    let user_info = &head[..at];
    let user_info = user_info.rsplit('/').next().unwrap_or(user_info);
    let (_, password) = user_info.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// `message` with `uri`'s password, wherever it appears, replaced by `****`.
fn hide_password(message: &str, uri: &str) -> String {
    match password_of(uri) {
        Some(password) => message.replace(password, "****"),
        None => message.to_owned(),
    }
}

/// What a failed first command says about the connection: the server cannot be reached, or
/// refuses the credentials, each with what to check.
fn connection_error(error: &mongodb::error::Error, uri: &str) -> String {
    use mongodb::error::ErrorKind;
    match error.kind.as_ref() {
        ErrorKind::ServerSelection { .. } => format!(
            "cannot reach a server at {uri}: none answered within the server selection timeout \
             ({error}); check the host and port of --uri, that the server runs, and for a \
             single server that is not a replica set `?directConnection=true`"
        ),
        ErrorKind::Authentication { .. } => format!(
            "the server at {uri} refused the credentials of --uri ({error}); check the user, \
             the password and `authSource`"
        ),
        _ => format!("the server at {uri} refused a first `ping`: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_database_name_finds_its_near_miss() {
        let names = ["library".to_owned(), "admin".to_owned(), "local".to_owned()];
        assert_eq!(nearest("librray", &names), Some("library"));
        assert_eq!(nearest("libary", &names), Some("library"));
        assert_eq!(nearest("shop", &names), None);
        assert_eq!(nearest("library", &names), None);
    }

    #[test]
    fn a_uri_s_password_is_never_printed() {
        assert_eq!(
            redact_uri("mongodb://alice:s3cret@db.example.org:27017/?authSource=admin"),
            "mongodb://alice:****@db.example.org:27017/?authSource=admin"
        );
        // malformed, as a user typed it: still hidden
        assert_eq!(
            redact_uri("mongodb+srv//alice:s3cret@db.example.org/"),
            "mongodb+srv//alice:****@db.example.org/"
        );
        assert_eq!(
            redact_uri("mongodb://alice:p@ss@h/"),
            "mongodb://alice:****@h/"
        );
        for plain in [
            "mongodb://h:27017/",
            "mongodb://alice@h/",
            "mongodb://h/db?x=a:b@c",
        ] {
            assert_eq!(redact_uri(plain), plain);
        }
        assert_eq!(
            hide_password(
                "cannot parse mongodb://alice:s3cret@h: s3cret",
                "mongodb://alice:s3cret@h"
            ),
            "cannot parse mongodb://alice:****@h: ****"
        );
    }

    #[test]
    fn the_pinned_command_line_parses() {
        let cli = Cli::try_parse_from([
            "mongo-schema",
            "pull",
            "--uri",
            "mongodb://h",
            "--db",
            "shop",
            "--out",
            "m.rs",
            "--report",
            "r.json",
            "--sample",
            "200",
            "--headroom",
            "1.5x",
            "--collections",
            "a,b",
        ])
        .unwrap();
        let Command::Pull(args) = cli.command;
        assert_eq!(args.sample, 200);
        assert_eq!(args.headroom, 1.5);
        assert_eq!(args.collections, ["a", "b"]);
        assert!(parse_headroom("0.5").is_err());
    }
}
