//! Starting, watching and stopping an embedded SecantusDB server.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use mongodb::bson::doc;
use mongodb::options::ClientOptions;

use crate::install::{ensure_installation, logs_dir, Installation};
use crate::log::{read_from, tail};
use crate::rules;

/// How long a server may take from spawn to answering `ping`.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts on fresh ports before giving up (a port picked free can be taken before the server binds it).
const FRESH_PORT_ATTEMPTS: usize = 4;
/// Attempts on a fixed port (restart): the old server may hold it for a moment.
const FIXED_PORT_ATTEMPTS: usize = 3;
/// Grace between SIGTERM and SIGKILL, given to the watchdog wrapper. A server with a storage
/// directory gets longer, so that WiredTiger can close cleanly.
const GRACE_IN_MEMORY: Duration = Duration::from_secs(5);
const GRACE_PERSISTENT: Duration = Duration::from_secs(10);
/// What `stop` waits for the wrapper beyond the grace, before killing it (its server then gets
/// SIGKILL through PR_SET_PDEATHSIG on Linux).
const STOP_EXTRA_WAIT: Duration = Duration::from_secs(5);
/// Server logs older than this are removed when a server starts.
const LOG_MAX_AGE: Duration = Duration::from_secs(3 * 24 * 3600);

/// The watchdog: `python -c WRAPPER <grace seconds> <server command...>`, where the server
/// command is `python <rules module> <args...>` (SecantusDB with mongod's rules, see
/// [`crate::rules`]) or, with the rules off for the process, `<secantusd-py> <args...>`.
///
/// It starts the server as its child and terminates it (SIGTERM, then SIGKILL after the grace)
/// when its own stdin reaches EOF (the Rust process closed the pipe or died: the OS closes the
/// write end in either case) or when it gets SIGTERM/SIGINT/SIGHUP. It exits with the server's
/// exit code once the server is gone. On Linux the server also gets PR_SET_PDEATHSIG=SIGKILL,
/// so it cannot outlive a wrapper that was itself killed.
const WRAPPER: &str = r#"# mongo-schema-testkit watchdog: stops the server when stdin closes
import os, signal, subprocess, sys, threading
grace = float(sys.argv[1])
cmd = sys.argv[2:]
def log(msg):
    sys.stderr.write("[mongo-schema-testkit watchdog %d] %s\n" % (os.getpid(), msg))
    sys.stderr.flush()
preexec = None
if sys.platform.startswith("linux"):
    try:
        import ctypes
        _libc = ctypes.CDLL(None, use_errno=True)
        def preexec():
            _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        preexec = None
child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, preexec_fn=preexec)
log("started server pid %d: %s" % (child.pid, " ".join(cmd)))
def kill():
    if child.poll() is None:
        log("server still running %.0fs after SIGTERM: SIGKILL" % grace)
        child.kill()
def stop(signum=None, frame=None):
    if child.poll() is not None:
        return
    log("stopping server (%s): SIGTERM" % ("signal %d" % signum if signum else "stdin closed"))
    try:
        child.terminate()
    except Exception:
        pass
    timer = threading.Timer(grace, kill)
    timer.daemon = True
    timer.start()
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, stop)
def reap():
    code = child.wait()
    log("server exited with code %d" % code)
    os._exit(code if code >= 0 else 128 - code)
threading.Thread(target=reap, daemon=True).start()
try:
    while os.read(0, 4096):
        pass
except BaseException:
    pass
stop()
threading.Event().wait()
"#;

static LOG_SEQ: AtomicUsize = AtomicUsize::new(0);

/// A running wrapper + server.
struct Running {
    child: Child,
    grace: Duration,
}

impl Running {
    /// Closes the wrapper's stdin (it then SIGTERMs the server, SIGKILLs it after the grace) and
    /// waits for the wrapper to exit; kills the wrapper if it takes much longer.
    fn stop(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + self.grace + STOP_EXTRA_WAIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => thread_sleep_ms(50),
                _ => break,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A dedicated embedded SecantusDB server, for tests that stop or restart the server (e.g. a
/// change stream resuming after a restart with the same storage).
///
/// It always runs SecantusDB (installing it first if needed, see
/// [`ensure_secantus_installed`](crate::ensure_secantus_installed)) and ignores `MONGODB_URI`.
/// The server listens on `127.0.0.1`; it is a single-node replica set named `secantus`, so
/// transactions and change streams work.
///
/// The server never outlives the test process: it runs under a small watchdog process that
/// stops it when the test process exits, even without running destructors. Dropping the
/// `TestServer` stops it too (like [`stop`](TestServer::stop)). Its stdout/stderr go to a log file
/// under `<secantus dir>/logs/` ([`secantus_dir`](crate::secantus_dir),
/// `~/.cache/mongo-schema/secantus-<version>/logs/` by default; [`log_path`](TestServer::log_path)).
///
/// The server refuses what mongod refuses: mongod's rules are installed into it (see
/// [`RULES`](crate::RULES)); [`start_with_rules_off`](TestServer::start_with_rules_off) leaves
/// named rules out for a test that needs them out, with the reason.
///
/// Errors of [`start`](TestServer::start) and [`restart`](TestServer::restart) are
/// [`std::io::Error`]s whose message says why (install failure, the server exited, timeout) and
/// ends with the last lines of the server log.
#[derive(Debug)]
pub struct TestServer {
    port: u16,
    uri: String,
    storage: Option<PathBuf>,
    log: PathBuf,
    inst: Installation,
    args: Vec<String>,
    rules_off: Vec<String>,
    /// `MONGO_SCHEMA_TESTKIT_RULES=off` when the server was made: SecantusDB without the rules.
    rules_off_by_env: bool,
    running: Option<Running>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("wrapper_pid", &self.child.id())
            .finish()
    }
}

impl TestServer {
    /// Starts a server on a free port, with in-memory storage (`storage` `None`, the server's
    /// `:memory:`) or with its data in the directory `storage` (created if missing; the data
    /// survives [`restart`](TestServer::restart) and later servers started on that directory).
    ///
    /// Blocks until the server answers `ping` (about 1 s; the first call in a fresh checkout also
    /// installs SecantusDB, a few seconds more). Call it from a plain thread or from inside a
    /// tokio runtime: it uses no tokio API of the caller's runtime.
    pub fn start(storage: Option<&Path>) -> io::Result<TestServer> {
        Self::launch(None, None, storage)
    }

    /// Like [`start`](TestServer::start), with more `secantusd-py` flags, kept for restarts:
    /// `--standalone` (the server answers `hello` as a standalone and refuses `$changeStream`
    /// with code 40573, as a standalone mongod does) or `--auth` (every command but the
    /// handshake needs a user; none exists, so they fail with code 13).
    pub fn start_with_args(storage: Option<&Path>, args: &[&str]) -> io::Result<TestServer> {
        Self::launch_with(None, None, storage, args, &[])
    }

    /// Like [`start`](TestServer::start), without the named mongod rules (names from
    /// [`RULES`](crate::RULES), kept for restarts), for a test that needs SecantusDB's own
    /// behaviour there; `reason` says why, and goes to the server log and stderr with the names.
    /// Every other rule stays on.
    ///
    /// ```no_run
    /// # fn demo() -> std::io::Result<()> {
    /// use mongo_schema_testkit::TestServer;
    /// let server = TestServer::start_with_rules_off(
    ///     None,
    ///     &["default-collation"],
    ///     "shows what SecantusDB does without the collection's default collation",
    /// )?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`std::io::ErrorKind::InvalidInput`] for an unknown rule name, no rule or an empty
    /// reason; otherwise like [`start`](TestServer::start).
    pub fn start_with_rules_off(
        storage: Option<&Path>,
        rules: &[&str],
        reason: &str,
    ) -> io::Result<TestServer> {
        if rules.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "start_with_rules_off: name the rules to turn off",
            ));
        }
        if let Some(unknown) = rules.iter().find(|name| !rules::is_rule(name)) {
            let known: Vec<&str> = rules::RULES.iter().map(|(name, _)| *name).collect();
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "start_with_rules_off: no mongod rule is named {unknown:?} (the rules: {})",
                    known.join(", ")
                ),
            ));
        }
        if reason.trim().is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "start_with_rules_off: say why the rules are off",
            ));
        }
        crate::say!(
            "mongo-schema-testkit: a test server without the mongod rules {}: {reason}",
            rules.join(", ")
        );
        let server = Self::launch_with(None, None, storage, &[], rules)?;
        append_log(
            &server.log,
            &format!(
                "=== mongo-schema-testkit: mongod rules off: {} ({reason}) ===",
                rules.join(", ")
            ),
        );
        Ok(server)
    }

    /// Like [`start`](TestServer::start), but on the given port (fails if it is taken).
    pub fn start_on_port(port: u16, storage: Option<&Path>) -> io::Result<TestServer> {
        Self::launch(None, Some(port), storage)
    }

    /// `name` names the log file (`secantusd-<pid>-<name>.log`), default `server<N>`.
    pub(crate) fn launch_named(
        name: &str,
        port: Option<u16>,
        storage: Option<&Path>,
    ) -> io::Result<TestServer> {
        Self::launch(Some(name), port, storage)
    }

    fn launch(
        name: Option<&str>,
        port: Option<u16>,
        storage: Option<&Path>,
    ) -> io::Result<TestServer> {
        Self::launch_with(name, port, storage, &[], &[])
    }

    fn launch_with(
        name: Option<&str>,
        port: Option<u16>,
        storage: Option<&Path>,
        args: &[&str],
        rules_off: &[&str],
    ) -> io::Result<TestServer> {
        let inst = ensure_installation().map_err(io::Error::other)?;
        let rules_off_by_env = rules::rules_off_by_env().map_err(io::Error::other)?;
        let log = match name {
            Some(name) => new_log_path(name)?,
            None => new_log_path(&format!(
                "server{}",
                LOG_SEQ.fetch_add(1, Ordering::Relaxed)
            ))?,
        };
        let mut server = TestServer {
            port: port.unwrap_or(0),
            uri: String::new(),
            storage: storage.map(Path::to_path_buf),
            log,
            inst,
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            rules_off: rules_off.iter().map(|rule| (*rule).to_owned()).collect(),
            rules_off_by_env,
            running: None,
        };
        server
            .start_attempts(port.is_none())
            .map_err(io::Error::other)?;
        Ok(server)
    }

    /// `mongodb://127.0.0.1:PORT/?directConnection=true`.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The port the server listens on (on 127.0.0.1); it stays the same across restarts.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The storage directory, `None` for in-memory storage.
    pub fn storage(&self) -> Option<&Path> {
        self.storage.as_deref()
    }

    /// The mongod rules this server leaves out: those named at
    /// [`start_with_rules_off`](TestServer::start_with_rules_off), or every one of
    /// [`RULES`](crate::RULES) when `MONGO_SCHEMA_TESTKIT_RULES=off`
    /// ([`RULES_ENV`](crate::RULES_ENV)) was set when it started.
    pub fn rules_off(&self) -> Vec<&str> {
        if self.rules_off_by_env {
            return rules::RULES.iter().map(|(name, _)| *name).collect();
        }
        self.rules_off.iter().map(String::as_str).collect()
    }

    /// The log file that receives the server's stdout and stderr (appended to on restart).
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Whether the server is running (it was started and not stopped, and has not exited).
    pub fn is_running(&mut self) -> bool {
        match &mut self.running {
            Some(r) => matches!(r.child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the server (if running) and starts it again on the same port with the same storage.
    ///
    /// With a storage directory the data survives; with in-memory storage the new server is
    /// empty. Clients of the old server reconnect by themselves on their next operation.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        self.start_attempts(false).map_err(io::Error::other)
    }

    /// Stops the server: SIGTERM, up to ~10 s for a clean shutdown (about 3 s in practice), then
    /// SIGKILL. Does nothing if it is not running. Blocks until the server process is gone, so
    /// its storage directory can be reopened at once.
    pub fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.stop();
            append_log(&self.log, "=== mongo-schema-testkit: server stopped ===");
        }
    }

    fn grace(&self) -> Duration {
        if self.storage.is_some() {
            GRACE_PERSISTENT
        } else {
            GRACE_IN_MEMORY
        }
    }

    /// Starts the server, on fresh free ports (`fresh`) or on `self.port`, with retries.
    fn start_attempts(&mut self, fresh: bool) -> Result<(), String> {
        let attempts = if fresh {
            FRESH_PORT_ATTEMPTS
        } else {
            FIXED_PORT_ATTEMPTS
        };
        let mut last_err = String::new();
        for attempt in 1..=attempts {
            if fresh {
                self.port = free_port()
                    .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))?;
            } else if attempt > 1 {
                thread_sleep_ms(1000);
            }
            self.uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port);
            match self.start_once() {
                Ok(running) => {
                    self.running = Some(running);
                    return Ok(());
                }
                Err((e, port_taken)) => {
                    last_err = e;
                    if !port_taken {
                        // Another port or another try would fail the same way.
                        return Err(format!(
                            "SecantusDB did not start (server log {}): {last_err}",
                            self.log.display()
                        ));
                    }
                }
            }
        }
        Err(format!(
            "SecantusDB did not start: port taken ({attempts} attempts; server log {}): {last_err}",
            self.log.display()
        ))
    }

    /// One start; the error says whether the port was taken (worth another try).
    fn start_once(&self) -> Result<Running, (String, bool)> {
        self.try_start_once().map_err(|e| {
            let port_taken = e.contains("Address already in use");
            (e, port_taken)
        })
    }

    fn try_start_once(&self) -> Result<Running, String> {
        let storage = match &self.storage {
            Some(dir) => dir.to_string_lossy().into_owned(),
            None => ":memory:".to_owned(),
        };
        append_log(
            &self.log,
            &format!(
                "=== mongo-schema-testkit: starting SecantusDB on 127.0.0.1:{} storage {storage} (test process {}) ===",
                self.port,
                std::process::id()
            ),
        );
        let offset = fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0);
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("cannot open {}: {e}", self.log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let grace = self.grace();

        let mut cmd = Command::new(&self.inst.python);
        cmd.arg("-c").arg(WRAPPER).arg(grace.as_secs().to_string());
        if self.rules_off_by_env {
            announce_rules_off_by_env();
            cmd.arg(&self.inst.secantusd)
                .env_remove(rules::RULES_OFF_ENV);
        } else {
            let dir = self.inst.config.parent().unwrap_or(Path::new("."));
            let module = rules::module_in(dir).map_err(|e| {
                format!(
                    "cannot write the mongod rules module into {}: {e}",
                    dir.display()
                )
            })?;
            cmd.arg(&self.inst.python)
                .arg(module)
                .env(rules::RULES_OFF_ENV, self.rules_off.join(","));
        }
        cmd.arg("--config")
            .arg(&self.inst.config)
            .args(["--host", "127.0.0.1", "--port"])
            .arg(self.port.to_string())
            .arg("--storage-path")
            .arg(&storage)
            .args(&self.args)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err);
        #[cfg(unix)]
        {
            // Own process group: a terminal's Ctrl-C goes to the test process only; the server
            // then stops through the watchdog like on any other exit.
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.inst.python.display()))?;
        let mut running = Running { child, grace };

        match wait_ready(&mut running, self.port, &self.uri, &self.log, offset) {
            Ok(()) => Ok(running),
            Err(e) => {
                running.stop();
                Err(format!(
                    "{e}\n--- last lines of {} ---\n{}",
                    self.log.display(),
                    tail(&self.log, offset, 25)
                ))
            }
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits until the server logged that it listens, accepts TCP connections and answers `ping`.
fn wait_ready(
    running: &mut Running,
    port: u16,
    uri: &str,
    log: &Path,
    offset: u64,
) -> Result<(), String> {
    let started = Instant::now();
    let deadline = started + START_TIMEOUT;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    // The server logs "secantus listening on HOST:PORT" once it has bound the port. Waiting for it
    // (in our own log) rather than for a TCP connect alone makes sure we talk to *our* server,
    // not to another process that grabbed the port first.
    let mut listening = false;
    loop {
        if let Some(status) = running.child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("the server exited before it was ready ({status})"));
        }
        if !listening {
            listening = read_from(log, offset).contains("listening on");
        }
        if listening && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the server did not {} within {}s",
                if listening {
                    "accept connections"
                } else {
                    "report 'listening on'"
                },
                START_TIMEOUT.as_secs()
            ));
        }
        thread_sleep_ms(50);
    }
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(5));
    ping_blocking(uri, remaining).map_err(|e| format!("the server does not answer ping: {e}"))?;
    if let Some(status) = running.child.try_wait().map_err(|e| e.to_string())? {
        return Err(format!("the server exited right after starting ({status})"));
    }
    Ok(())
}

/// Runs `ping` with the driver on a fresh std thread with its own current-thread runtime, so it
/// is safe to call from inside any tokio runtime.
fn ping_blocking(uri: &str, timeout: Duration) -> Result<(), String> {
    let uri = uri.to_owned();
    std::thread::spawn(move || -> Result<(), String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot build a tokio runtime: {e}"))?;
        rt.block_on(async move {
            let mut opts = ClientOptions::parse(&uri)
                .await
                .map_err(|e| e.to_string())?;
            opts.server_selection_timeout = Some(timeout);
            opts.connect_timeout = Some(timeout);
            let client = mongodb::Client::with_options(opts).map_err(|e| e.to_string())?;
            let admin = client.database("admin");
            let ping = admin.run_command(doc! { "ping": 1 });
            match tokio::time::timeout(timeout, ping).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {}s", timeout.as_secs())),
            }
        })
    })
    .join()
    .unwrap_or_else(|_| Err("the ping thread panicked".to_owned()))
}

/// A port that was free on 127.0.0.1 a moment ago.
fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// `<secantus dir>/logs/secantusd-<pid>-<what>.log`; removes logs older than a few days.
pub(crate) fn new_log_path(what: &str) -> io::Result<PathBuf> {
    let dir = logs_dir().map_err(io::Error::other)?;
    fs::create_dir_all(&dir)?;
    prune_old_logs(&dir);
    Ok(dir.join(format!("secantusd-{}-{what}.log", std::process::id())))
}

fn prune_old_logs(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("secantusd-") && name.ends_with(".log")) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > LOG_MAX_AGE);
        if old {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn append_log(log: &Path, line: &str) {
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(log) {
        let _ = writeln!(f, "{line}");
    }
}

/// Says once per process that `MONGO_SCHEMA_TESTKIT_RULES=off` leaves the rules out.
fn announce_rules_off_by_env() {
    static ANNOUNCED: std::sync::Once = std::sync::Once::new();
    ANNOUNCED.call_once(|| {
        crate::say!(
            "mongo-schema-testkit: {}=off: the test servers of this process run without \
             mongod's rules (SecantusDB alone accepts much that mongod refuses)",
            rules::RULES_ENV
        );
    });
}

fn thread_sleep_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}
