//! The schema commands as an operator runs them: this test binary is also the service's binary.
//! Started with `MONGO_SCHEMA_CLI_CHILD` set, it runs `mongo_schema::cli::main` over the help
//! desk's schema (`cli-child plan --uri U --db D`); otherwise it runs the tests below, each of
//! which starts it as a child process against the test server and reads its exit code, its
//! table and its `--json` document. (`harness = false`: the child must own its arguments.)

#[path = "../common/mod.rs"]
mod common;
mod status;

use std::panic::AssertUnwindSafe;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::helpdesk::{self, Agent};
use mongo_schema::bson::{oid::ObjectId, Document as BsonDocument};
use mongo_schema::Document as _;
use serde_json::Value;
use status::*;

const CHILD: &str = "MONGO_SCHEMA_CLI_CHILD";

/// The arguments of `status` on `db` at `uri`, then `more`.
fn status_args(uri: &str, db: &mongodb::Database, more: &[&str]) -> Vec<String> {
    let mut all = vec!["status".to_owned(), "--uri".to_owned(), uri.to_owned()];
    all.extend(["--db".to_owned(), db.name().to_owned()]);
    all.extend(more.iter().map(|s| (*s).to_owned()));
    all
}

/// What one run of a command gave.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs `args` as the service binary of `schema` (see [`child_schema`]) would
/// (`my-bin <args>`), killed after `timeout`.
fn schema_command(schema: &str, args: &[&str], timeout: Duration) -> Ran {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, schema)
        .env_remove("MONGODB_URI")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            panic!("`{}` not done within {timeout:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `args` as the service binary of `schema` would, on a terminal: its standard output and
/// error are a pseudo-terminal (`script`, as an operator's shell gives them), whose whole output
/// is returned as `stdout`.
fn schema_command_on_a_terminal(schema: &str, args: &[&str], timeout: Duration) -> Ran {
    let quote = |arg: &str| format!("'{}'", arg.replace('\'', r"'\''"));
    let exe = std::env::current_exe().unwrap();
    let line: Vec<String> = std::iter::once(exe.to_str().unwrap())
        .chain(args.iter().copied())
        .map(quote)
        .collect();
    let mut child = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env(CHILD, schema)
        .env_remove("MONGODB_URI")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs the command on a pseudo-terminal");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > timeout {
            let _ = child.kill();
            panic!(
                "`{}` on a terminal not done within {timeout:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The lines a terminal shows after `output` was written to it: carriage returns, line feeds,
/// and the cursor and erase sequences a progress bar uses (`ESC[2K`, `ESC[nA`, `ESC[J`).
fn screen(output: &str) -> Vec<String> {
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0_usize, 0_usize);
    let mut chars = output.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                col = 0;
                if lines.len() <= row {
                    lines.push(Vec::new());
                }
            }
            '\u{1b}' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut parameter = String::new();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        last = c;
                        break;
                    }
                    parameter.push(c);
                }
                let n: usize = parameter.trim_start_matches('?').parse().unwrap_or(0);
                match last {
                    'K' if n == 2 => lines[row].clear(),
                    'K' => lines[row].truncate(col),
                    'A' => row = row.saturating_sub(n.max(1)),
                    'J' => {
                        lines.truncate(row + 1);
                        lines[row].truncate(col);
                    }
                    _ => {}
                }
            }
            c if !c.is_control() => {
                let line = &mut lines[row];
                if line.len() <= col {
                    line.resize(col, ' ');
                    line.push(c);
                } else {
                    line[col] = c;
                }
                col += 1;
            }
            _ => {}
        }
    }
    lines
        .into_iter()
        .map(|l| l.into_iter().collect::<String>().trim_end().to_owned())
        .collect()
}

/// Whether `line` is a drawn progress bar (`apply [=====>    ] 3/9 ...`).
fn is_bar(line: &str) -> bool {
    line.split_once(" [").is_some_and(|(_, rest)| {
        let bar: Vec<char> = rest.chars().take(31).collect();
        bar.len() == 31 && bar[30] == ']' && bar[..30].iter().all(|c| "=> ".contains(*c))
    })
}

/// `schema_command` of the help desk's binary, off the runtime's threads, within a minute.
async fn run(args: Vec<String>) -> Ran {
    run_as("helpdesk", args).await
}

/// `schema_command` of the binary of `schema`, off the runtime's threads, within a minute.
async fn run_as(schema: &'static str, args: Vec<String>) -> Ran {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        schema_command(schema, &args, Duration::from_secs(60))
    })
    .await
    .unwrap()
}

/// A release before `color`.
mod gadget_v1 {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "gadgets")]
    pub struct Gadget {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub name: String,
    }

    pub fn schema() -> mongo_schema::Schema {
        mongo_schema::Schema::new()
            .model::<Gadget>()
            .version(1)
            .build()
            .expect("gadgets v1 builds")
    }
}

/// The release that requires `color`, with the step that fills it in (or without).
mod gadget_v2 {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "gadgets")]
    pub struct Gadget {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub name: String,
        pub color: String,
    }

    pub fn schema(with_step: bool) -> mongo_schema::Schema {
        let builder = mongo_schema::Schema::new().model::<Gadget>().version(2);
        let builder = if with_step {
            builder.migration(
                2,
                "default color",
                mongo_schema::migrate::set_default(mongo_schema::field!(Gadget, color), "grey"),
            )
        } else {
            builder
        };
        builder.build().expect("gadgets v2 builds")
    }
}

/// The schema of the child binary: the help desk, or its version 2 with a migration step.
fn child_schema(name: &str) -> mongo_schema::Schema {
    match name {
        "gadgets-v1" => gadget_v1::schema(),
        "gadgets-v2" => gadget_v2::schema(true),
        "gadgets-v2-nostep" => gadget_v2::schema(false),
        "helpdesk-v2" => mongo_schema::Schema::new()
            .model::<helpdesk::Customer>()
            .model::<Agent>()
            .model::<helpdesk::Ticket>()
            .model::<helpdesk::Message>()
            .model::<helpdesk::Order>()
            .model::<helpdesk::Part>()
            .model::<helpdesk::Product>()
            .version(2)
            .migration(
                2,
                "default team",
                mongo_schema::migrate::set_default(mongo_schema::field!(Agent, team), "support"),
            )
            .build()
            .expect("version 2 builds"),
        _ => helpdesk::schema(),
    }
}

fn args(command: &str, db: &mongodb::Database, more: &[&str]) -> Vec<String> {
    let mut all = vec![
        command.to_owned(),
        "--uri".to_owned(),
        mongo_schema_testkit::uri(),
        "--db".to_owned(),
        db.name().to_owned(),
    ];
    all.extend(more.iter().map(|s| (*s).to_owned()));
    all
}

const HELPDESK: [&str; 7] = [
    "customers",
    "agents",
    "tickets",
    "messages",
    "orders",
    "parts",
    "productsHybrid",
];

async fn plan_exits_2_then_apply_then_plan_exits_0() {
    let db = mongo_schema_testkit::database("cli_plan").await;

    let plan = run(args("plan", &db, &[])).await;
    assert_eq!(plan.code, 2, "work to do:\n{}{}", plan.stdout, plan.stderr);
    assert!(
        plan.stdout.contains("create collection `tickets`"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("pending: run `apply`"),
        "{}",
        plan.stdout
    );

    let plan = run(args("plan", &db, &["--json"])).await;
    assert_eq!(plan.code, 2);
    let json = plan.json();
    assert_eq!(json["command"], "plan");
    assert_eq!(json["exit"], 2);
    assert_eq!(json["work"], true);
    let created: Vec<&str> = json["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "create_collection")
        .map(|a| a["collection"].as_str().unwrap())
        .collect();
    for name in HELPDESK {
        assert!(created.contains(&name), "{name} not planned: {created:?}");
    }
    assert!(json["actions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["kind"] == "create_indexes" && a["collection"] == "tickets"));
    // plan wrote nothing
    assert!(db.list_collection_names().await.unwrap().is_empty());

    let apply = run(args("apply", &db, &["--json"])).await;
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let json = apply.json();
    // progress on standard error (not a terminal: plain lines), one per action as it is done
    let actions = json["actions"].as_array().unwrap().len();
    for n in 1..=actions {
        assert!(
            apply.stderr.contains(&format!("apply [{n}/{actions}] ")),
            "progress line {n}/{actions} in:\n{}",
            apply.stderr
        );
    }
    assert_eq!(json["command"], "apply");
    assert_eq!(json["noop"], false);
    assert_eq!(json["recorded"], true);
    assert!(json["actions"].as_array().unwrap().len() >= HELPDESK.len());
    let mut names = db.list_collection_names().await.unwrap();
    names.sort();
    for name in HELPDESK {
        assert!(
            names.iter().any(|n| n == name),
            "{name} not created: {names:?}"
        );
    }

    let plan = run(args("plan", &db, &[])).await;
    assert_eq!(
        plan.code, 0,
        "nothing to do:\n{}{}",
        plan.stdout, plan.stderr
    );
    assert!(plan.stdout.contains("nothing to do"), "{}", plan.stdout);
    let json = run(args("plan", &db, &["--json"])).await.json();
    assert_eq!(json["exit"], 0);
    assert_eq!(json["work"], false);
    assert_eq!(json["actions"].as_array().unwrap().len(), 0);

    // a second apply changes nothing; the table says so
    let apply = run(args("apply", &db, &[])).await;
    assert_eq!(apply.code, 0);
    assert!(apply.stdout.contains("nothing written"), "{}", apply.stdout);

    // positive control: an index dropped behind the schema's back is work again
    let index = helpdesk::schema().collection("messages").unwrap().indexes[0]
        .name
        .clone();
    db.collection::<BsonDocument>("messages")
        .drop_index(&index)
        .await
        .unwrap_or_else(|e| panic!("the index `{index}` exists: {e}"));
    let json = run(args("plan", &db, &["--json"])).await.json();
    assert_eq!(json["exit"], 2);
    assert!(
        json["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "create_indexes" && a["collection"] == "messages"),
        "{json}"
    );
}

async fn a_migration_is_planned_applied_and_shown_done() {
    let db = mongo_schema_testkit::database("cli_migration").await;
    let apply = run(args("apply", &db, &[])).await;
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    // three agents from before `team` had a default, written past the validator
    for name in ["Ana", "Bo", "Cy"] {
        db.collection::<BsonDocument>("agents")
            .insert_one(mongo_schema::bson::doc! { "_id": ObjectId::new(), "displayName": name })
            .bypass_document_validation(true)
            .await
            .unwrap();
    }
    let plan = run_as("helpdesk-v2", args("plan", &db, &["--json"])).await;
    assert_eq!(plan.code, 2, "{}{}", plan.stdout, plan.stderr);
    let json = plan.json();
    assert_eq!(json["migrations"][0]["name"], "default team");
    assert_eq!(json["migrations"][0]["documents"], 3);
    let status = run_as("helpdesk-v2", args("status", &db, &["--json"])).await;
    assert_eq!(status.code, 2, "a migration pending");
    let json = status.json();
    assert_eq!(json["migrations"]["declared"], 1);
    assert_eq!(json["migrations"]["done"], 0);
    assert_eq!(json["migrations"]["pending"][0]["version"], 2);
    assert_eq!(json["version"]["recorded"]["version"], 0);

    let apply = run_as("helpdesk-v2", args("apply", &db, &[])).await;
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(
        apply.stdout.contains("migration v2 `default team`")
            && apply.stdout.contains("3 matched, 3 changed"),
        "{}",
        apply.stdout
    );
    assert!(
        apply
            .stderr
            .contains("migrations [0/1] migration v2 default team"),
        "the step's progress in:\n{}",
        apply.stderr
    );
    let status = run_as("helpdesk-v2", args("status", &db, &["--json"])).await;
    let json = status.json();
    // the help desk's `async` copy has never had a sync worker: attention, by name
    assert_eq!(status.code, 2, "{json}");
    assert_eq!(json["never_followed"][0], "tickets.assignee", "{json}");
    assert_eq!(json["pending_actions"], 0, "{json}");
    assert_eq!(json["migrations"]["done"], 1);
    assert_eq!(json["migrations"]["pending"].as_array().unwrap().len(), 0);
    assert_eq!(json["version"]["recorded"]["version"], 2);
    let plan = run_as("helpdesk-v2", args("plan", &db, &[])).await;
    assert_eq!(plan.code, 0, "{}", plan.stdout);
    let defaulted = db
        .collection::<BsonDocument>("agents")
        .count_documents(mongo_schema::bson::doc! { "team": "support" })
        .await
        .unwrap();
    assert_eq!(defaulted, 3);
    // the older binary meets the newer record: refused (exit 1), or kept serving
    let older = run(args("apply", &db, &[])).await;
    assert_eq!(older.code, 1, "{}", older.stdout);
    assert!(older.stderr.contains('2'), "{}", older.stderr);
    let kept = run(args("apply", &db, &["--on-newer", "continue", "--json"])).await;
    assert_eq!(kept.code, 0, "{}", kept.stderr);
    assert_eq!(kept.json()["recorded"], false);
    // the older binary declares no step; the changelog holds v2's, done: `status` reads it
    let older = run(args("status", &db, &["--json"])).await;
    let json = older.json();
    assert_eq!(older.code, 2, "{json}");
    assert_eq!(json["migrations"]["declared"], 0, "{json}");
    assert_eq!(json["migrations"]["done"], 1, "{json}");
    // display-text: the table says it once, in agreement (not "apply refuses" above "serving
    // on"), and standard error does not say it again
    let kept = run(args("apply", &db, &["--on-newer", "continue"])).await;
    assert_eq!(kept.code, 0, "{}{}", kept.stdout, kept.stderr);
    assert!(!kept.stdout.contains("refuses"), "{}", kept.stdout);
    assert!(
        kept.stdout
            .contains("schema version 0 is older than the recorded version 2: nothing written"),
        "{}",
        kept.stdout
    );
    assert_eq!(
        kept.stdout.matches("serving on").count(),
        1,
        "{}",
        kept.stdout
    );
    assert!(
        !kept.stderr.contains("newer schema version"),
        "said by the report, not again on standard error: {}",
        kept.stderr
    );
}

async fn errors_exit_1_and_say_why() {
    let unreachable = run(vec![
        "plan".into(),
        "--uri".into(),
        "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300".into(),
        "--db".into(),
        "x".into(),
        "--json".into(),
    ])
    .await;
    assert_eq!(unreachable.code, 1, "{}", unreachable.stderr);
    assert!(
        unreachable.stderr.starts_with("error: "),
        "{}",
        unreachable.stderr
    );
    let json = unreachable.json();
    assert_eq!(json["exit"], 1);
    assert!(json["error"].as_str().is_some_and(|e| !e.is_empty()));

    let no_server = run(vec!["status".into(), "--db".into(), "x".into()]).await;
    assert_eq!(no_server.code, 1);
    assert!(no_server.stderr.contains("--uri"), "{}", no_server.stderr);

    let unknown = run(vec!["drop-everything".into()]).await;
    assert_eq!(unknown.code, 1, "clap refuses it");
    assert!(
        unknown.stderr.contains("drop-everything"),
        "{}",
        unknown.stderr
    );

    let help = run(vec!["--help".into()]).await;
    assert_eq!(help.code, 0);
    for command in [
        "plan",
        "apply",
        "status",
        "report",
        "audit",
        "reconcile",
        "retry-failures",
        "prove",
        "mongosh",
    ] {
        assert!(
            help.stdout.contains(command),
            "{command} in:\n{}",
            help.stdout
        );
    }
}

/// On a terminal, `apply` draws its progress while it runs and then prints what it did: each
/// action and migration step is on the screen once, in the report, not a second time in a
/// finished bar above it (into whose last line the report used to run).
async fn progress_is_shown_once_on_a_terminal() {
    let db = mongo_schema_testkit::database("cli_terminal").await;
    let args = args("apply", &db, &[]);
    let ran = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        schema_command_on_a_terminal("helpdesk-v2", &args, Duration::from_secs(60))
    })
    .await
    .unwrap();
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    // the control: it ran on a terminal, and the bars were drawn there
    assert!(
        ran.stdout.contains("\u{1b}[2K") && ran.stdout.lines().any(is_bar),
        "no progress bar was drawn: {:?}",
        ran.stdout
    );
    let shown = screen(&ran.stdout);
    let text = shown.join("\n");
    assert!(
        !shown.iter().any(|l| is_bar(l)),
        "a bar is left on the screen:\n{text}"
    );
    for what in [
        "create collection `customers`",
        "create 1 index(es) on `messages`",
        "default team",
    ] {
        let lines: Vec<&String> = shown.iter().filter(|l| l.contains(what)).collect();
        assert_eq!(
            lines.len(),
            1,
            "`{what}` shown {} times:\n{text}",
            lines.len()
        );
        assert!(
            lines[0].starts_with('['),
            "not a line of the report: {}\n{text}",
            lines[0]
        );
    }
}

/// Repairs that fail exit 2: a ticket whose copy of its agent's name drifted and whose own
/// document another client left invalid (its validator, strict, rejects any update of it).
/// `reconcile --repair` cannot repair it (the failure recorded), `retry-failures` still fails;
/// once the ticket is mended by hand the retry resolves it and exits 0.
async fn repairs_that_fail_exit_2() {
    let db = mongo_schema_testkit::database("cli_failed_repairs").await;
    let schema = helpdesk::schema();
    schema.apply(&db).await.unwrap();
    let (_, ticket) = helpdesk::assigned_ticket(&db, "stale").await;
    let tickets = db.collection::<BsonDocument>("tickets");
    tickets
        .update_one(
            mongo_schema::bson::doc! { "_id": ticket.id },
            mongo_schema::bson::doc! { "$set": { "subject": 42 } },
        )
        .bypass_document_validation(true)
        .await
        .unwrap();

    let repair = run(args("reconcile", &db, &["--repair", "--json"])).await;
    assert_eq!(repair.code, 2, "{}{}", repair.stdout, repair.stderr);
    let json = repair.json();
    assert_eq!(json["exit"], 2);
    assert_eq!(json["repaired"], 0, "{json}");
    let copy = json["copies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["copy"] == "tickets.assignee")
        .unwrap_or_else(|| panic!("no tickets.assignee in {json}"));
    assert_eq!(copy["failed"], 1, "{json}");
    let retry = run(args("retry-failures", &db, &["--json"])).await;
    assert_eq!(retry.code, 2, "{}{}", retry.stdout, retry.stderr);
    let json = retry.json();
    assert_eq!(
        (&json["retried"], &json["still_failing"]),
        (&1.into(), &1.into()),
        "{json}"
    );

    // mended by hand: the retry resolves it, and nothing is left to repair
    tickets
        .update_one(
            mongo_schema::bson::doc! { "_id": ticket.id },
            mongo_schema::bson::doc! { "$set": { "subject": "mended" } },
        )
        .bypass_document_validation(true)
        .await
        .unwrap();
    let retry = run(args("retry-failures", &db, &["--json"])).await;
    assert_eq!(retry.code, 0, "{}{}", retry.stdout, retry.stderr);
    assert_eq!(retry.json()["resolved"], 1);
    let repair = run(args("reconcile", &db, &["--repair", "--json"])).await;
    assert_eq!(repair.code, 0, "{}{}", repair.stdout, repair.stderr);
    assert_eq!(repair.json()["drifted"], 0);
}

async fn reports_and_read_only_commands() {
    let db = mongo_schema_testkit::database("cli_reports").await;
    let schema = helpdesk::schema();
    schema.apply(&db).await.unwrap();
    // a drifted async copy, for reconcile and audit to find
    helpdesk::assigned_ticket(&db, "stale").await;

    let reconcile = run(args("reconcile", &db, &["--json"])).await;
    assert_eq!(
        reconcile.code, 2,
        "{}{}",
        reconcile.stdout, reconcile.stderr
    );
    let json = reconcile.json();
    assert_eq!(json["drifted"], 1);
    // progress: one line per copy compared (the frozen one is never compared)
    let compared = json["copies"].as_array().unwrap().len();
    assert_eq!(compared, 3, "{json}");
    for n in 1..=compared {
        assert!(
            reconcile
                .stderr
                .contains(&format!("reconcile [{n}/{compared}] ")),
            "{}",
            reconcile.stderr
        );
    }
    assert!(reconcile
        .stderr
        .contains("tickets.assignee: 1 checked, 1 drifted"));
    assert_eq!(json["repaired"], 0);
    let audit = run(args("audit", &db, &["--json"])).await;
    assert_eq!(audit.code, 2, "{}{}", audit.stdout, audit.stderr);
    assert_eq!(audit.json()["clean"], false);
    let repaired = run(args("reconcile", &db, &["--repair", "--json"])).await;
    assert_eq!(repaired.code, 0, "{}", repaired.stderr);
    assert_eq!(repaired.json()["repaired"], 1);
    let again = run(args("reconcile", &db, &[])).await;
    assert_eq!(again.code, 0, "{}", again.stdout);
    assert!(again.stdout.contains("0 drifted"), "{}", again.stdout);

    let retry = run(args("retry-failures", &db, &["--json"])).await;
    assert_eq!(retry.code, 0, "{}", retry.stderr);
    assert_eq!(retry.json()["retried"], 0);

    let prove = run(args("prove", &db, &["--json"])).await;
    assert!(prove.code == 0 || prove.code == 2, "{}", prove.stderr);
    let json = prove.json();
    assert!(!json["queries"].as_array().unwrap().is_empty());
    assert_eq!(json["exit"], prove.code);

    let mongosh = run(vec!["mongosh".into()]).await;
    assert_eq!(mongosh.code, 0);
    assert_eq!(mongosh.stdout, schema.mongosh_script());

    let markdown = run(vec!["report".into(), "--format".into(), "markdown".into()]).await;
    assert_eq!(markdown.stdout, schema.report());
    let html = run(vec!["report".into(), "--format".into(), "html".into()]).await;
    assert_eq!(html.code, 0);
    assert_eq!(html.stdout, schema.report_html());
    let text = run(vec!["report".into()]).await;
    for name in HELPDESK {
        assert!(text.stdout.contains(name), "{name} in:\n{}", text.stdout);
    }
    let json = run(vec!["report".into(), "--format".into(), "json".into()])
        .await
        .json();
    let collections: Vec<&str> = json["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(collections.len(), HELPDESK.len());
    assert!(json["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["holder"] == "tickets" && r["path"] == "assignee"));
}

/// The server's validator of `gadgets`.
async fn gadgets_validator(db: &mongodb::Database) -> BsonDocument {
    let mut cursor = db
        .list_collections()
        .filter(mongo_schema::bson::doc! { "name": "gadgets" })
        .await
        .unwrap();
    use futures_util::TryStreamExt as _;
    let spec = cursor.try_next().await.unwrap().expect("gadgets exists");
    spec.options.validator.unwrap_or_default()
}

async fn insert_gadget(db: &mongodb::Database, name: &str) {
    db.collection::<BsonDocument>("gadgets")
        .insert_one(mongo_schema::bson::doc! { "_id": ObjectId::new(), "name": name })
        .await
        .unwrap();
}

async fn uncolored(db: &mongodb::Database) -> u64 {
    db.collection::<BsonDocument>("gadgets")
        .count_documents(mongo_schema::bson::doc! { "color": { "$exists": false } })
        .await
        .unwrap()
}

/// A fresh database named after `prefix`, `gadgets-v1` applied through `apply` (exit 0), and
/// the gadgets `a` and `b` inserted.
async fn gadgets_a_and_b_at_v1(prefix: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    let v1 = run_as("gadgets-v1", args("apply", &db, &[])).await;
    assert_eq!(v1.code, 0, "{}{}", v1.stdout, v1.stderr);
    insert_gadget(&db, "a").await;
    insert_gadget(&db, "b").await;
    db
}

/// v1 -> v2 -> v1 (`--allow-downgrade`) -> v1 writes -> v2, through the schema commands: the
/// roll forward runs v2's step again over what v1 wrote, so every document is valid under the
/// v2 validator, which is on the server, and every command says so with its exit code.
async fn a_rollback_then_a_roll_forward_ends_as_declared() {
    let db = gadgets_a_and_b_at_v1("cli_roll_forward").await;

    let v2 = run_as("gadgets-v2", args("apply", &db, &["--json"])).await;
    assert_eq!(v2.code, 0, "{}{}", v2.stdout, v2.stderr);
    assert_eq!(v2.json()["as_declared"], true);
    assert_eq!(uncolored(&db).await, 0);
    use mongo_schema::Document as _;
    assert_eq!(gadgets_validator(&db).await, gadget_v2::Gadget::validator());

    // the previous release again: refused without the flag, and `plan` says apply would refuse
    let refused = run_as("gadgets-v1", args("apply", &db, &[])).await;
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    // display-text: the advice an operator reads speaks the CLI's flag
    assert!(
        refused.stderr.contains("`--allow-downgrade`"),
        "the CLI's flag, not the library's call: {}",
        refused.stderr
    );
    let plan = run_as("gadgets-v1", args("plan", &db, &["--json"])).await;
    assert_eq!(plan.code, 3, "{}{}", plan.stdout, plan.stderr);
    assert_eq!(plan.json()["refuses"], true);
    let back = run_as(
        "gadgets-v1",
        args("apply", &db, &["--allow-downgrade", "--json"]),
    )
    .await;
    assert_eq!(back.code, 0, "{}{}", back.stdout, back.stderr);
    assert_eq!(back.json()["recorded"], true);
    assert_eq!(gadgets_validator(&db).await, gadget_v1::Gadget::validator());

    // the rolled-back service writes what v1 writes
    insert_gadget(&db, "c").await;
    assert_eq!(uncolored(&db).await, 1);

    // forward again: `plan` shows v2's step running again, `apply` runs it before the validator
    let plan = run_as("gadgets-v2", args("plan", &db, &["--json"])).await;
    assert_eq!(plan.code, 2, "{}{}", plan.stdout, plan.stderr);
    let json = plan.json();
    assert_eq!(json["migrations"][0]["name"], "default color", "{json}");
    assert_eq!(json["migrations"][0]["recorded"], "done", "{json}");
    assert_eq!(json["migrations"][0]["documents"], 1, "{json}");
    // with `--on-violations moderate`, the step still fixes the documents before the validator
    // is set: nothing would be left at `moderate`, so nothing is missing (exit 2, not 3)
    let moderate = run_as(
        "gadgets-v2",
        args("plan", &db, &["--on-violations", "moderate", "--json"]),
    )
    .await;
    assert_eq!(moderate.code, 2, "{}{}", moderate.stdout, moderate.stderr);
    let json = moderate.json();
    assert_eq!(json["missing"].as_array().unwrap().len(), 0, "{json}");
    let forward = run_as("gadgets-v2", args("apply", &db, &["--json"])).await;
    assert_eq!(forward.code, 0, "{}{}", forward.stdout, forward.stderr);
    let json = forward.json();
    assert_eq!(json["as_declared"], true, "{json}");
    assert_eq!(json["missing"].as_array().unwrap().len(), 0, "{json}");
    assert_eq!(
        uncolored(&db).await,
        0,
        "v2's step ran again over v1's write"
    );
    assert_eq!(gadgets_validator(&db).await, gadget_v2::Gadget::validator());
    let stored: Vec<gadget_v2::Gadget> = {
        use futures_util::TryStreamExt as _;
        db.collection::<gadget_v2::Gadget>("gadgets")
            .find(mongo_schema::bson::doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    };
    assert_eq!(stored.len(), 3, "the v2 service reads every document");
    assert!(stored.iter().all(|g| g.color == "grey"));

    let audit = run_as("gadgets-v2", args("audit", &db, &["--json"])).await;
    assert_eq!(audit.code, 0, "{}{}", audit.stdout, audit.stderr);
    assert!(
        audit.json()["collections"][0]["validator_differs"].is_null(),
        "{}",
        audit.stdout
    );
    let status = run_as("gadgets-v2", args("status", &db, &["--json"])).await;
    let json = status.json();
    assert_eq!(status.code, 0, "{json}");
    assert_eq!(json["version"]["recorded"]["version"], 2);
    assert_eq!(json["version"]["recorded"]["completed"], true);

    // the previous binary, older than the record: its `status` says apply refuses and exits 2;
    // its `plan` exits 3 and never says the database matches its schema
    let older = run_as("gadgets-v1", args("status", &db, &["--json"])).await;
    assert_eq!(older.code, 2, "{}{}", older.stdout, older.stderr);
    let older = run_as("gadgets-v1", args("plan", &db, &[])).await;
    assert_eq!(older.code, 3, "{}{}", older.stdout, older.stderr);
    // display-text: no "nothing to do" beside a refusal
    assert!(!older.stdout.contains("nothing to do"), "{}", older.stdout);
    // a record newer than this binary (a v3 whose apply did not complete) over a server as v2
    // declares it: no action to plan, and still `status` 2 and `plan` 3 (apply refuses)
    let meta = db.collection::<mongo_schema::bson::Document>(mongo_schema::META_COLLECTION);
    let set_version = |version: i64| {
        let meta = meta.clone();
        async move {
            meta.update_one(
                mongo_schema::bson::doc! { "_id": "schema" },
                mongo_schema::bson::doc! { "$set": { "version": version } },
            )
            .await
            .unwrap();
        }
    };
    set_version(3).await;
    let newer = run_as("gadgets-v2", args("status", &db, &["--json"])).await;
    assert_eq!(newer.code, 2, "{}{}", newer.stdout, newer.stderr);
    assert_eq!(newer.json()["pending_actions"], 0, "{}", newer.stdout);
    let newer = run_as("gadgets-v2", args("plan", &db, &[])).await;
    assert_eq!(newer.code, 3, "{}{}", newer.stdout, newer.stderr);
    // display-text: no "nothing to do" beside a refusal
    assert!(!newer.stdout.contains("nothing to do"), "{}", newer.stdout);
    set_version(2).await;

    // the validation level lowered by hand, every document still valid: `audit` is not clean
    db.run_command(
        mongo_schema::bson::doc! { "collMod": "gadgets", "validationLevel": "moderate" },
    )
    .await
    .unwrap();
    let audit = run_as("gadgets-v2", args("audit", &db, &["--json"])).await;
    assert_eq!(audit.code, 2, "{}{}", audit.stdout, audit.stderr);
    let json = audit.json();
    assert_eq!(json["collections"][0]["invalid"], 0, "{json}");
    assert!(
        json["collections"][0]["validator_differs"].is_string(),
        "{json}"
    );
}

/// A validator change refused over documents that violate it: `apply` exits 3 and the record
/// says `partial`, `plan` still shows the change, `audit` judges by the declared validator, and
/// a start-up of the same version sends no count (the record keeps it) and no write.
async fn a_validator_refused_over_violators_exits_3_and_is_not_counted_again() {
    let db = gadgets_a_and_b_at_v1("cli_refused").await;

    let apply = run_as("gadgets-v2-nostep", args("apply", &db, &["--json"])).await;
    assert_eq!(apply.code, 3, "{}{}", apply.stdout, apply.stderr);
    let json = apply.json();
    assert_eq!(json["exit"], 3);
    assert_eq!(json["as_declared"], false, "{json}");
    assert_eq!(json["missing"][0], "the validator of `gadgets`", "{json}");
    // display-text: the advice an operator reads speaks the CLI's option
    assert!(
        json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("`--on-violations moderate`"),
        "{json}"
    );
    use mongo_schema::Document as _;
    assert_eq!(gadgets_validator(&db).await, gadget_v1::Gadget::validator());
    let text = run_as("gadgets-v2-nostep", args("apply", &db, &[])).await;
    assert_eq!(text.code, 3, "{}{}", text.stdout, text.stderr);
    // display-text: one report never says both "up to date" and "NOT applied"
    assert!(
        !text.stdout.contains("schema up to date"),
        "no contradiction in one report:\n{}",
        text.stdout
    );

    let plan = run_as("gadgets-v2-nostep", args("plan", &db, &["--json"])).await;
    assert_eq!(plan.code, 3, "{}{}", plan.stdout, plan.stderr);
    let json = plan.json();
    assert_eq!(json["actions"][0]["kind"], "update_validator", "{json}");
    assert_eq!(json["missing"][0], "the validator of `gadgets`", "{json}");
    // display-text: the table says it too, in the CLI's terms; so does the library's `Plan`
    let text = run_as("gadgets-v2-nostep", args("plan", &db, &[])).await;
    assert_eq!(text.code, 3, "{}{}", text.stdout, text.stderr);
    assert!(
        text.stdout.contains(
            "NOT AS DECLARED after apply: the validator of `gadgets` would not be on the server"
        ) && text.stdout.contains("(`apply` exits 3)"),
        "{}",
        text.stdout
    );
    let plan = gadget_v2::schema(false).plan(&db).await.unwrap();
    assert_eq!(plan.missing, ["the validator of `gadgets`"], "{plan}");
    let shown = plan.to_string();
    assert!(
        shown.contains(
            "NOT AS DECLARED after apply: the validator of `gadgets` would not be on the server"
        ) && shown.contains("`ApplyReport::is_as_declared()` is false"),
        "{shown}"
    );
    let audit = run_as("gadgets-v2-nostep", args("audit", &db, &["--json"])).await;
    assert_eq!(audit.code, 2, "{}{}", audit.stdout, audit.stderr);
    assert_eq!(audit.json()["collections"][0]["invalid"], 2);
    // the server keeps v1's validator: said, beside the documents v2's rejects
    assert!(
        audit.json()["collections"][0]["validator_differs"].is_string(),
        "{}",
        audit.stdout
    );
    let status = run_as("gadgets-v2-nostep", args("status", &db, &["--json"])).await;
    let json = status.json();
    assert_eq!(json["version"]["recorded"]["completed"], false, "{json}");
    assert_eq!(
        json["version"]["recorded"]["missing"][0],
        "the validator of `gadgets`"
    );

    // a start-up of the service: the same part missing, nothing counted, nothing written
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let service = client.database(db.name());
    let report = gadget_v2::schema(false).apply(&service).await.unwrap();
    assert!(!report.is_as_declared(), "{report}");
    assert!(!report.recorded, "{report}");
    let names = log.names();
    assert_eq!(log.count("aggregate"), 0, "a count was sent: {names:?}");
    assert_eq!(
        log.count("findAndModify"),
        0,
        "the lock was taken: {names:?}"
    );
    assert_eq!(log.count("collMod"), 0, "{names:?}");
    // the control: asked to count again, it does
    log.clear();
    let report = gadget_v2::schema(false)
        .apply(&service)
        .recount_violations(true)
        .await
        .unwrap();
    assert!(!report.is_as_declared(), "{report}");
    assert!(log.count("aggregate") > 0, "{:?}", log.names());

    // the data fixed, the operator's apply counts again and tightens the validator
    db.collection::<BsonDocument>("gadgets")
        .update_many(
            mongo_schema::bson::doc! {},
            mongo_schema::bson::doc! { "$set": { "color": "red" } },
        )
        .await
        .unwrap();
    let apply = run_as("gadgets-v2-nostep", args("apply", &db, &["--json"])).await;
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert_eq!(gadgets_validator(&db).await, gadget_v2::Gadget::validator());
    let status = run_as("gadgets-v2-nostep", args("status", &db, &["--json"])).await;
    assert_eq!(status.json()["version"]["recorded"]["completed"], true);
}

type Test = (
    &'static str,
    fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
);

/// The tests `(name, start)`, each named as its function.
macro_rules! tests {
    ($($test:ident),* $(,)?) => {
        [$((stringify!($test), || Box::pin($test()))),*]
    };
}

fn main() -> ExitCode {
    if let Ok(schema) = std::env::var(CHILD) {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        return runtime.block_on(mongo_schema::cli::main(child_schema(&schema)));
    }
    let tests: [Test; 12] = tests![
        status_exits_2_after_a_watchdog_stall,
        repairs_that_fail_exit_2,
        progress_is_shown_once_on_a_terminal,
        status_exits_2_for_a_worker_that_holds_its_lease_without_progress,
        a_rollback_then_a_roll_forward_ends_as_declared,
        a_validator_refused_over_violators_exits_3_and_is_not_counted_again,
        plan_exits_2_then_apply_then_plan_exits_0,
        a_migration_is_planned_applied_and_shown_done,
        errors_exit_1_and_say_why,
        status_shows_a_killed_workers_lease_expire_and_a_standby_take_over,
        status_shows_an_expired_lease_until_someone_takes_it,
        reports_and_read_only_commands,
    ];
    // libtest's arguments that matter here: NAME filters (substrings, or whole names with
    // `--exact`), `--skip NAME`, `--list`, `--ignored` (there are none); other flags are ignored
    let mut filters = Vec::new();
    let mut skips = Vec::new();
    let (mut exact, mut list, mut ignored) = (false, false, false);
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--skip" => skips.extend(arguments.next()),
            "--exact" => exact = true,
            "--list" => list = true,
            "--ignored" => ignored = true,
            flag if flag.starts_with('-') => {}
            name => filters.push(name.to_owned()),
        }
    }
    let matches = |name: &str, pattern: &str| {
        if exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    };
    let selected: Vec<&Test> = tests
        .iter()
        .filter(|_| !ignored)
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| matches(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| matches(name, s)))
        .collect();
    if list {
        for (name, _) in &selected {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, test) in &selected {
        let started = Instant::now();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(test())));
        drop(runtime);
        match outcome {
            Ok(()) => println!(
                "test {name} ... ok ({:.1} s)",
                started.elapsed().as_secs_f64()
            ),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed",
        if failed.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
