//! The server's lifetime and the failure messages, checked with child processes: this test binary
//! runs itself again (`child_probe`) with `MONGO_SCHEMA_TESTKIT_CHILD` set.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mongo_schema_testkit::{uri, TestServer};

const CHILD_ENV: &str = "MONGO_SCHEMA_TESTKIT_CHILD";

/// Does nothing in a normal run; in a child process it does what `MONGO_SCHEMA_TESTKIT_CHILD` says.
#[test]
fn child_probe() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    let uri = uri();
    // libtest has already written "test child_probe ... " without a newline.
    println!("\nCHILD_URI={uri}");
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    match mode.as_str() {
        // Leave through exit(): no destructor runs, the shared server is in a static anyway.
        "exit" => std::process::exit(0),
        // Wait to be killed with SIGKILL.
        "hang" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        _ => {}
    }
}

fn child(mode: &str, envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_probe", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode)
        .env_remove("MONGODB_URI")
        .stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// Reads the child's stdout until its `CHILD_URI=` line.
fn read_child_uri(child: &mut Child) -> String {
    let stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some((_, uri)) = line.split_once("CHILD_URI=") {
            return uri.trim().to_owned();
        }
        seen.push(line);
    }
    panic!("the child printed no CHILD_URI line: {seen:?}");
}

fn port_of(uri: &str) -> u16 {
    let rest = uri.strip_prefix("mongodb://127.0.0.1:").expect(uri);
    rest.split(['/', '?']).next().unwrap().parse().expect(uri)
}

fn accepts(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(500)).is_ok()
}

/// The server shuts down in ~3 s after SIGTERM; the watchdog kills it after 5 s at the latest.
fn assert_closes(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while accepts(port) {
        assert!(
            Instant::now() < deadline,
            "the server on port {port} outlived its test process"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn shared_server_stops_when_the_process_exits() {
    let mut child = child("exit", &[]).stdout(Stdio::piped()).spawn().unwrap();
    let uri = read_child_uri(&mut child);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_closes(port_of(&uri));
}

#[test]
fn shared_server_stops_when_the_process_is_killed() {
    let mut child = child("hang", &[]).stdout(Stdio::piped()).spawn().unwrap();
    let uri = read_child_uri(&mut child);
    let port = port_of(&uri);
    assert!(accepts(port), "the child's server is not up");
    child.kill().unwrap(); // SIGKILL: no destructor, no atexit
    child.wait().unwrap();
    assert_closes(port);
}

#[test]
fn mongodb_uri_wins() {
    let out = child(
        "print",
        &[("MONGODB_URI", "mongodb://db.example:27017/?replicaSet=rs0")],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("\nCHILD_URI=mongodb://db.example:27017/?replicaSet=rs0\n"),
        "{stdout}"
    );
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mongo-schema-testkit-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn no_python_panics_with_instructions() {
    let dir = temp_dir("nopython");
    let out = child(
        "print",
        &[
            ("MONGO_SCHEMA_SECANTUS_DIR", dir.to_str().unwrap()),
            ("MONGO_SCHEMA_PYTHON", "/nonexistent/python3"),
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "mongo-schema-testkit: no MongoDB server: could not install/start SecantusDB \
             (`/nonexistent/python3 -m venv"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("/nonexistent/python3 not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "Either install python3 (the tests install SecantusDB 0.7.0b3 into a per-user cache \
             themselves, see MONGO_SCHEMA_SECANTUS_DIR) or set MONGODB_URI=mongodb://host:port to \
             a MongoDB 7+ replica set"
        ),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_that_cannot_start_reports_its_log() {
    // WiredTiger cannot create its home under a regular file.
    let err = TestServer::start(Some(Path::new("/dev/null/storage"))).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("SecantusDB did not start"), "{msg}");
    assert!(
        msg.contains("the server exited before it was ready"),
        "{msg}"
    );
    assert!(msg.contains("--- last lines of "), "{msg}");
    assert!(msg.contains("/dev/null/storage"), "{msg}");
}
