//! Where the test server is installed, and that concurrent installs from several processes and
//! projects serialise on the install lock. The install itself is a stand-in `python3` (a shell
//! script that makes a fake venv and a fake `secantusd-py`, slowly), so this runs in a second and
//! needs no network; the real install is what every other live test of the workspace does.
//!
//! This test binary runs itself again (`install_probe`) with `MONGO_SCHEMA_TESTKIT_INSTALL_CHILD`
//! set.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mongo_schema_testkit::{ensure_secantus_installed, secantus_dir, SECANTUS_VERSION};

const CHILD_ENV: &str = "MONGO_SCHEMA_TESTKIT_INSTALL_CHILD";
const FAKE_LOG_ENV: &str = "FAKE_PYTHON_LOG";

/// `python3 -m venv DIR` copies this script to `DIR/bin/python`; `DIR/bin/python -m pip install`
/// writes `DIR/bin/secantusd-py`. Each step appends a line to `$FAKE_PYTHON_LOG` and sleeps, so
/// installs that were not serialised would be seen twice.
const FAKE_PYTHON: &str = r#"#!/bin/sh
set -e
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    echo "venv $$ $3" >> "$FAKE_PYTHON_LOG"
    sleep 1
    mkdir -p "$3/bin"
    cp "$0" "$3/bin/python"
elif [ "$1" = "-m" ] && [ "$2" = "pip" ] && [ "$3" = "install" ]; then
    echo "pip $$" >> "$FAKE_PYTHON_LOG"
    sleep 1
    venv=$(dirname "$(dirname "$0")")
    printf '#!/bin/sh\nexit 0\n' > "$venv/bin/secantusd-py"
    chmod +x "$venv/bin/secantusd-py"
else
    echo "fake python: unexpected arguments: $*" >&2
    exit 2
fi
"#;

/// Does nothing in a normal run; in a child process it installs and prints where.
#[test]
fn install_probe() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let dir = secantus_dir().expect("secantus_dir");
    let secantusd = ensure_secantus_installed().expect("install");
    // libtest has already written "test install_probe ... " without a newline.
    println!("\nCHILD_DIR={}", dir.display());
    println!("CHILD_SECANTUSD={}", secantusd.display());
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mongo-schema-testkit-install-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fake_python(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("python3");
    std::fs::write(&path, FAKE_PYTHON).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn line(stdout: &str, key: &str) -> PathBuf {
    let value = stdout
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} line in {stdout}"));
    PathBuf::from(value.trim())
}

#[test]
fn two_projects_installing_at_once_install_once_into_the_user_cache() {
    let root = temp_dir("concurrent");
    let cache = root.join("xdg-cache");
    let home = root.join("home");
    let log = root.join("fake-python.log");
    let python = fake_python(&root);
    let projects = [root.join("project-a"), root.join("project-b")];
    for dir in [&home].into_iter().chain(&projects) {
        std::fs::create_dir_all(dir).unwrap();
    }

    // Two processes in each of two projects, all started before any has installed.
    let children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "install_probe",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .current_dir(&projects[i % 2])
                .env(CHILD_ENV, "1")
                .env(FAKE_LOG_ENV, &log)
                .env("MONGO_SCHEMA_PYTHON", &python)
                .env("XDG_CACHE_HOME", &cache)
                .env("HOME", &home)
                .env_remove("MONGO_SCHEMA_SECANTUS_DIR")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();

    let expected_dir = cache
        .join("mongo-schema")
        .join(format!("secantus-{SECANTUS_VERSION}"));
    let mut waited = 0;
    for out in &outputs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert_eq!(line(&stdout, "CHILD_DIR="), expected_dir, "{stdout}");
        assert_eq!(
            line(&stdout, "CHILD_SECANTUSD="),
            expected_dir.join("venv/bin/secantusd-py"),
            "{stdout}"
        );
        if stderr.contains("waiting for another process installing SecantusDB") {
            waited += 1;
        }
    }
    // Not in either project, not in the library's sources.
    for project in &projects {
        assert!(!project.join(".secantus").exists());
        assert_eq!(std::fs::read_dir(project).unwrap().count(), 0);
    }
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    assert!(!expected_dir.starts_with(own));

    // One venv, one pip install: the others waited on the lock and found it done.
    let steps = std::fs::read_to_string(&log).unwrap();
    let venvs = steps.lines().filter(|l| l.starts_with("venv ")).count();
    let pips = steps.lines().filter(|l| l.starts_with("pip ")).count();
    assert_eq!((venvs, pips), (1, 1), "{steps}");
    assert!(expected_dir.join("install.lock").is_file());
    assert!(expected_dir.join("logs/install.log").is_file());
    eprintln!("{waited} of 4 processes waited for the install lock");

    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_variable_moves_the_install() {
    let root = temp_dir("variable");
    let log = root.join("fake-python.log");
    let python = fake_python(&root);
    let target = root.join("elsewhere");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "install_probe",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env(FAKE_LOG_ENV, &log)
        .env("MONGO_SCHEMA_PYTHON", &python)
        .env("MONGO_SCHEMA_SECANTUS_DIR", &target)
        .env("XDG_CACHE_HOME", root.join("unused-cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(line(&stdout, "CHILD_DIR="), target);
    assert!(target.join("venv/bin/secantusd-py").is_file());
    assert!(!root.join("unused-cache").exists());
    let _ = std::fs::remove_dir_all(&root);
}
