//! A real MongoDB-wire server for the tests, examples and benchmarks of mongo-schema. Never a mock.
//!
//! * If the environment variable `MONGODB_URI` is set and non-empty, that server is used (a
//!   user's URI always wins). It should be a MongoDB 7+ replica set (transactions, change streams).
//! * Otherwise an embedded [SecantusDB](https://pypi.org/project/SecantusDB/) server is started,
//!   once per process, lazily. SecantusDB 0.7.0b3 is installed by the first test run on the
//!   machine into a per-user cache shared by all projects,
//!   `~/.cache/mongo-schema/secantus-0.7.0b3/venv` (`$XDG_CACHE_HOME/mongo-schema/...` if set;
//!   never under the library's own sources), which needs `python3` (override with
//!   `MONGO_SCHEMA_PYTHON`; move the directory with `MONGO_SCHEMA_SECANTUS_DIR`); see
//!   [`secantus_dir`] and [`ensure_secantus_installed`]. The server is a
//!   single-node replica set (`secantus`), in memory, on a free port of 127.0.0.1; it stops when
//!   the test process exits, however it exits.
//! * The embedded server says no where mongod says no: mongod's rules ([`RULES`]: parallel
//!   arrays under one index, a second `{ _id: 1 }` index, unknown collation locales and the
//!   collection's default collation, what a time series collection cannot do, ...) are installed
//!   into SecantusDB's own command handling when the testkit starts it, for every client of the
//!   server. A test turns single rules off by name, with its reason, on a server of its own
//!   ([`TestServer::start_with_rules_off`]); `MONGO_SCHEMA_TESTKIT_RULES=off` ([`RULES_ENV`])
//!   turns them all off for a process, to see whether a failure comes from them.
//! * If neither is possible, the functions here panic with a message saying how to get a server:
//!   tests never skip silently.
//!
//! ```no_run
//! # async fn demo() {
//! use mongodb::bson::doc;
//! let db = mongo_schema_testkit::database("users").await; // fresh, uniquely named
//! db.collection("u").insert_one(doc! { "name": "ada" }).await.unwrap();
//!
//! let (client, log) = mongo_schema_testkit::monitored_client().await;
//! client.database("x").run_command(doc! { "ping": 1 }).await.unwrap();
//! assert_eq!(log.names(), ["ping"]);
//! # }
//! ```
//!
//! [`TestServer`] gives a test its own server that it can stop and restart (e.g. to check that a
//! change stream resumes after a restart with the same storage). The binary `test-server`
//! (`cargo run -p mongo-schema-testkit --bin test-server`) starts one for a developer's shell.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

/// Progress lines that always reach the terminal: written to stderr directly, not through
/// `eprintln!`, which the test harness captures. CI logs thus show which server the live tests
/// ran against.
#[macro_export]
#[doc(hidden)]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let mut line = ::std::format!($($arg)*);
        line.push('\n');
        let _ = ::std::io::stderr().lock().write_all(line.as_bytes());
    }};
}

mod install;
mod log;
mod rules;
mod server;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use mongodb::bson::Document;
use mongodb::event::command::{CommandEvent, CommandStartedEvent};
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use mongodb::{Client, Database};

pub use install::{
    ensure_secantus_installed, secantus_dir, PYTHON_ENV, SECANTUS_DIR_ENV, SECANTUS_REQUIREMENT,
    SECANTUS_VERSION,
};
pub use rules::{RULES, RULES_ENV};
pub use server::TestServer;

/// The environment variable that points the tests at an existing server instead of the embedded
/// SecantusDB: `MONGODB_URI=mongodb://host:port/?replicaSet=rs0`.
pub const URI_ENV: &str = "MONGODB_URI";

/// The shared embedded server of this process. Never dropped: the server is stopped by its
/// watchdog when the process exits.
struct Shared {
    uri: String,
    _server: Mutex<TestServer>,
}

static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();

fn env_uri() -> Option<String> {
    std::env::var(URI_ENV).ok().filter(|u| !u.trim().is_empty())
}

/// URI of the shared server of this process: `MONGODB_URI` if set and non-empty, else an embedded
/// SecantusDB server started once per process, lazily
/// (`mongodb://127.0.0.1:PORT/?directConnection=true`).
///
/// Blocking (the first call installs SecantusDB if needed and starts the server: about 1 s, a few
/// seconds more on the very first run). Safe to call from any thread and from inside a tokio
/// runtime: the blocking work uses std threads only, never the caller's runtime. In async code
/// prefer [`client`] / [`database`], which do the blocking part on the runtime's blocking pool.
///
/// # Panics
///
/// If no server can be had (no python3, pip failed, the server did not start), with a message
/// that says why and how to get one. Every later call panics with the same message.
pub fn uri() -> String {
    if let Some(uri) = env_uri() {
        static ANNOUNCED: std::sync::Once = std::sync::Once::new();
        ANNOUNCED.call_once(|| crate::say!("mongo-schema-testkit: using {URI_ENV}={uri}"));
        return uri;
    }
    match SHARED.get_or_init(start_shared) {
        Ok(shared) => shared.uri.clone(),
        Err(msg) => panic!("{msg}"),
    }
}

fn start_shared() -> Result<Shared, String> {
    match TestServer::launch_named("shared", None, None) {
        Ok(server) => {
            crate::say!(
                "mongo-schema-testkit: SecantusDB {} at {} (log {})",
                SECANTUS_VERSION,
                server.uri(),
                server.log_path().display()
            );
            Ok(Shared {
                uri: server.uri().to_owned(),
                _server: Mutex::new(server),
            })
        }
        Err(e) => {
            let text = e.to_string();
            let (reason, details) = text.split_once('\n').unwrap_or((&text, ""));
            Err(format!(
                "mongo-schema-testkit: no MongoDB server: could not install/start SecantusDB \
                 ({reason}). Either install python3 (the tests install SecantusDB \
                 {SECANTUS_VERSION} into a per-user cache themselves, see {SECANTUS_DIR_ENV}) \
                 or set {URI_ENV}=mongodb://host:port to a MongoDB 7+ replica set\n{details}"
            ))
        }
    }
}

/// [`uri`] without blocking the async caller's thread (runs on the blocking pool the first time).
async fn uri_async() -> String {
    if let Some(uri) = env_uri() {
        return uri;
    }
    if let Some(Ok(shared)) = SHARED.get() {
        return shared.uri.clone();
    }
    match tokio::task::spawn_blocking(uri).await {
        Ok(uri) => uri,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("mongo-schema-testkit: starting the test server was cancelled: {e}"),
    }
}

/// A new [`Client`] for the shared server (see [`uri`]).
///
/// Create clients per test: a `Client` must not be shared across tokio runtimes, and every
/// `#[tokio::test]` has its own runtime.
///
/// # Panics
///
/// Like [`uri`]; also if the URI in `MONGODB_URI` is invalid.
pub async fn client() -> Client {
    let uri = uri_async().await;
    Client::with_uri_str(&uri)
        .await
        .unwrap_or_else(|e| panic!("mongo-schema-testkit: cannot create a client for {uri}: {e}"))
}

/// A fresh, uniquely named database on the shared server, so tests can run in parallel, in one
/// process or several.
///
/// The name is `prefix` (characters other than `[A-Za-z0-9_]` replaced by `_`, cut so that the
/// name fits 63 bytes), the process id, a per-process stamp (against pid reuse on a long-lived
/// `MONGODB_URI` server) and a counter, e.g. `users_4711_3f2a9c_0`. The database is not dropped
/// automatically (fine: the embedded server is in memory).
///
/// # Panics
///
/// Like [`client`].
pub async fn database(prefix: &str) -> Database {
    client().await.database(&unique_db_name(prefix))
}

fn unique_db_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static STAMP: OnceLock<u32> = OnceLock::new();
    let stamp = *STAMP.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        ((now.as_secs() as u32) ^ now.subsec_nanos().rotate_left(7)) & 0xff_ffff
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let suffix = format!("_{}_{stamp:06x}_{n}", std::process::id());
    let mut name: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        name.push_str("test");
    }
    name.truncate(63usize.saturating_sub(suffix.len()));
    name.push_str(&suffix);
    name
}

/// Whether `db`'s server is SecantusDB (its `buildInfo` carries `secantusVersion`), for the few
/// assertions that SecantusDB's planner cannot meet and a mongod must (SPEC §10). Never decided
/// by the replica set's name.
///
/// # Panics
///
/// If `buildInfo` fails.
pub async fn is_secantus(db: &Database) -> bool {
    let info = db
        .run_command(mongodb::bson::doc! { "buildInfo": 1 })
        .await
        .unwrap_or_else(|e| panic!("mongo-schema-testkit: buildInfo failed: {e}"));
    info.contains_key("secantusVersion")
}

/// One command the client started, as seen by driver command monitoring.
#[derive(Debug, Clone, PartialEq)]
pub struct StartedCommand {
    /// The command name, e.g. `insert`, `find`, `createIndexes`.
    pub name: String,
    /// The database the command ran against.
    pub database: String,
    /// The command document as sent (the driver redacts security-sensitive commands).
    pub command: Document,
}

/// The commands a [`monitored_client`] started, in order. Cheap to clone; all clones share one log.
#[derive(Debug, Clone, Default)]
pub struct CommandLog {
    commands: Arc<Mutex<Vec<StartedCommand>>>,
}

impl CommandLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<StartedCommand>> {
        // A panicking test thread must not hide the log from the others.
        self.commands.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, command: StartedCommand) {
        self.lock().push(command);
    }

    /// The command names, in the order the commands were started.
    pub fn names(&self) -> Vec<String> {
        self.lock().iter().map(|c| c.name.clone()).collect()
    }

    /// The commands, in the order they were started.
    pub fn commands(&self) -> Vec<StartedCommand> {
        self.lock().clone()
    }

    /// Forgets the commands logged so far.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// How many commands named `name` were started.
    pub fn count(&self, name: &str) -> usize {
        self.lock().iter().filter(|c| c.name == name).count()
    }
}

/// Like [`client`], plus a [`CommandLog`] of every command the client starts (driver command
/// monitoring). Handshake and heartbeat `hello`s are not commands in this sense and are not
/// logged.
///
/// # Panics
///
/// Like [`client`].
pub async fn monitored_client() -> (Client, CommandLog) {
    let uri = uri_async().await;
    monitored_client_at(&uri).await
}

/// [`monitored_client`] for the server at `uri` (a [`TestServer`] of the test's own).
///
/// # Panics
///
/// If `uri` is invalid.
pub async fn monitored_client_at(uri: &str) -> (Client, CommandLog) {
    let mut options = ClientOptions::parse(uri)
        .await
        .unwrap_or_else(|e| panic!("mongo-schema-testkit: cannot parse the URI {uri}: {e}"));
    let log = CommandLog::default();
    let sink = log.clone();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(started) = event {
            sink.push(StartedCommand {
                name: started.command_name,
                database: started.db,
                command: started.command,
            });
        }
    }));
    let client = Client::with_options(options)
        .unwrap_or_else(|e| panic!("mongo-schema-testkit: cannot create a client for {uri}: {e}"));
    (client, log)
}

/// A client for `uri` whose first command for which `hold` is true is held (in driver command
/// monitoring, before it is sent) until the returned sender sends or 60 s pass; the returned
/// receiver gets a message when the command is held. A test runs something else at exactly that
/// point: another writer, a server stop.
///
/// The hold blocks the thread that started the command: use a multi-threaded runtime with a
/// thread to spare, and wait on the receiver in `spawn_blocking`.
///
/// # Panics
///
/// If `uri` is invalid.
pub async fn holding_client(
    uri: &str,
    hold: impl Fn(&CommandStartedEvent) -> bool + Send + Sync + 'static,
) -> (Client, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (held_tx, release_rx) = (Mutex::new(held_tx), Mutex::new(release_rx));
    let once = std::sync::atomic::AtomicBool::new(false);
    let mut options = ClientOptions::parse(uri)
        .await
        .unwrap_or_else(|e| panic!("mongo-schema-testkit: cannot parse the URI {uri}: {e}"));
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(started) = event {
            if hold(&started) && !once.swap(true, Ordering::SeqCst) {
                let _ = held_tx.lock().unwrap_or_else(|e| e.into_inner()).send(());
                let _ = release_rx
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .recv_timeout(std::time::Duration::from_secs(60));
            }
        }
    }));
    let client = Client::with_options(options)
        .unwrap_or_else(|e| panic!("mongo-schema-testkit: cannot create a client for {uri}: {e}"));
    (client, held_rx, release_tx)
}

#[cfg(test)]
mod tests {
    use super::unique_db_name;

    #[test]
    fn db_names_are_unique_valid_and_short() {
        let a = unique_db_name("users");
        let b = unique_db_name("users");
        assert_ne!(a, b);
        assert!(a.starts_with("users_"));
        let long = unique_db_name(&"x.y-z é".repeat(40));
        assert!(long.len() <= 63, "{long}");
        for name in [&a, &b, &long, &unique_db_name("")] {
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}"
            );
        }
        assert!(unique_db_name("").starts_with("test_"));
    }
}
