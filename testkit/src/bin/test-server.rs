//! `cargo run -p mongo-schema-testkit --bin test-server [-- --port N] [--storage DIR]`
//!
//! Starts an embedded SecantusDB server (installing it into the per-user cache
//! `~/.cache/mongo-schema/secantus-<version>` first if needed, see `MONGO_SCHEMA_SECANTUS_DIR`),
//! prints `MONGODB_URI=...` on stdout and runs until Ctrl-C, SIGTERM or SIGHUP, or until its
//! stdin is closed (when stdin is a terminal or a pipe; with stdin from `/dev/null` or a file,
//! as for a background job of a script, only a signal stops it). Then it stops the server.
//!
//! ```text
//! $ cargo run -p mongo-schema-testkit --bin test-server
//! MONGODB_URI=mongodb://127.0.0.1:40123/?directConnection=true
//! ```

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use mongo_schema_testkit::TestServer;

const USAGE: &str = "usage: test-server [--port PORT] [--storage DIR]\n\
    Starts an embedded SecantusDB server (in memory unless --storage), prints MONGODB_URI=... and\n\
    runs until Ctrl-C / SIGTERM or until stdin (a terminal or pipe) is closed.";

fn main() {
    let mut port: Option<u16> = None;
    let mut storage: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => match args.next().and_then(|p| p.parse().ok()) {
                Some(p) => port = Some(p),
                None => usage_error("--port needs a port number"),
            },
            "--storage" | "--storage-path" => match args.next() {
                Some(dir) => storage = Some(PathBuf::from(dir)),
                None => usage_error("--storage needs a directory"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => usage_error(&format!("unknown argument {other:?}")),
        }
    }

    // Signal handlers first: a signal that arrives right after MONGODB_URI is printed must take
    // the clean path below, not the default disposition.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let signals = {
        let _runtime = rt.enter();
        Signals::new()
    };

    let server = match port {
        Some(port) => TestServer::start_on_port(port, storage.as_deref()),
        None => TestServer::start(storage.as_deref()),
    };
    let server = match server {
        Ok(server) => server,
        Err(e) => {
            eprintln!("test-server: could not start SecantusDB: {e}");
            std::process::exit(1);
        }
    };
    println!("MONGODB_URI={}", server.uri());
    let _ = std::io::stdout().flush();
    eprintln!(
        "test-server: SecantusDB {} running (storage {}, log {}); Ctrl-C to stop",
        mongo_schema_testkit::SECANTUS_VERSION,
        server
            .storage()
            .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string()),
        server.log_path().display()
    );

    let (stdin_closed, stdin_rx) = tokio::sync::oneshot::channel::<()>();
    // Without a watchable stdin the sender stays here, unused, so `stdin_rx` never fires.
    let _unused_sender = if stdin_is_watchable() {
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 4096];
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            let _ = stdin_closed.send(());
        });
        None
    } else {
        Some(stdin_closed)
    };
    let why = rt.block_on(async move {
        tokio::select! {
            why = signals.wait() => why,
            _ = stdin_rx => "stdin closed",
        }
    });
    eprintln!("test-server: {why}; stopping the server");
    drop(server);
    eprintln!("test-server: stopped");
}

/// Stdin counts as a stop signal only when something can close it: a terminal (Ctrl-D) or a
/// pipe (the parent process ends). `/dev/null` or a regular file would stop us at once.
fn stdin_is_watchable() -> bool {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        use std::os::unix::fs::FileTypeExt;
        if let Ok(fd) = stdin.as_fd().try_clone_to_owned() {
            if let Ok(meta) = std::fs::File::from(fd).metadata() {
                return meta.file_type().is_fifo() || meta.file_type().is_socket();
            }
        }
    }
    false
}

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP, registered on creation (inside a tokio runtime).
#[cfg(unix)]
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn new() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        let handler = |kind| signal(kind).expect("cannot install a signal handler");
        Signals {
            int: handler(SignalKind::interrupt()),
            term: handler(SignalKind::terminate()),
            hup: handler(SignalKind::hangup()),
        }
    }

    async fn wait(mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "Ctrl-C",
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> Signals {
        Signals
    }

    async fn wait(self) -> &'static str {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}

fn usage_error(msg: &str) -> ! {
    eprintln!("test-server: {msg}\n{USAGE}");
    std::process::exit(2);
}
