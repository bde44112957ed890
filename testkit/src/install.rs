//! Installing SecantusDB into the project-local venv `<workspace root>/.secantus/venv`.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The PyPI package and version the testkit installs (`pip install SecantusDB==0.7.0b3`).
pub const SECANTUS_REQUIREMENT: &str = "SecantusDB==0.7.0b3";

/// The SecantusDB version the testkit installs.
pub const SECANTUS_VERSION: &str = "0.7.0b3";

/// Environment variable naming the Python interpreter used to create the venv
/// (default `python3`).
pub const PYTHON_ENV: &str = "MONGO_SCHEMA_PYTHON";

/// Written into the venv after a complete install; holds [`SECANTUS_REQUIREMENT`].
const MARKER: &str = "mongo-schema-testkit-installed";

/// Written into the venv and passed to the server as `--config`, so a
/// `secantusd.toml` in the working directory, `~/.secantus` or `/etc/secantus`
/// never changes the test server's behaviour.
const CONFIG: &str = "mongo-schema-testkit-secantusd.toml";

/// Environment variable that moves the SecantusDB directory (venv, install lock, server logs)
/// away from its default `<workspace root>/.secantus`.
pub const SECANTUS_DIR_ENV: &str = "MONGO_SCHEMA_SECANTUS_DIR";

/// `<workspace root>/.secantus` (or `$MONGO_SCHEMA_SECANTUS_DIR`): the venv, the install lock and
/// the server logs (gitignored).
pub(crate) fn secantus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(SECANTUS_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    root.join(".secantus")
}

pub(crate) fn venv_dir() -> PathBuf {
    secantus_dir().join("venv")
}

pub(crate) fn logs_dir() -> PathBuf {
    secantus_dir().join("logs")
}

fn venv_bin(venv: &Path, name: &str) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join(format!("{name}.exe"))
    } else {
        venv.join("bin").join(name)
    }
}

/// Everything needed to run the installed server.
#[derive(Debug, Clone)]
pub(crate) struct Installation {
    /// The venv's python (runs the watchdog wrapper).
    pub python: PathBuf,
    /// `<venv>/bin/secantusd-py`.
    pub secantusd: PathBuf,
    /// The (empty) config file passed as `--config`.
    pub config: PathBuf,
}

fn installation(venv: &Path) -> Installation {
    Installation {
        python: venv_bin(venv, "python"),
        secantusd: venv_bin(venv, "secantusd-py"),
        config: venv.join(CONFIG),
    }
}

fn is_complete(inst: &Installation, venv: &Path) -> bool {
    inst.secantusd.is_file()
        && inst.python.exists()
        && inst.config.is_file()
        && fs::read_to_string(venv.join(MARKER)).is_ok_and(|m| m.trim() == SECANTUS_REQUIREMENT)
}

/// Makes sure SecantusDB [`SECANTUS_VERSION`] is installed in `<workspace root>/.secantus/venv`
/// (`$MONGO_SCHEMA_SECANTUS_DIR/venv` if that variable is set) and returns the path of its
/// `secantusd-py` launcher.
///
/// When the venv is missing it runs `python3 -m venv <venv>` (the interpreter can be overridden
/// with the `MONGO_SCHEMA_PYTHON` environment variable) and
/// `<venv>/bin/python -m pip install SecantusDB==0.7.0b3`, printing progress to stderr; pip's
/// output goes to `.secantus/logs/install.log`. Processes that call this at the same time (test
/// binaries run in parallel) are serialised by an exclusive lock on `.secantus/install.lock`;
/// only the first one installs, the others wait and re-check.
///
/// # Errors
///
/// A human-readable reason (python not found, venv creation or pip failed, with the tail of
/// pip's output).
pub fn ensure_secantus_installed() -> Result<PathBuf, String> {
    Ok(ensure_installation()?.secantusd)
}

pub(crate) fn ensure_installation() -> Result<Installation, String> {
    let dir = secantus_dir();
    let venv = venv_dir();
    let inst = installation(&venv);
    if is_complete(&inst, &venv) {
        return Ok(inst);
    }

    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let lock_path = dir.join("install.lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            crate::say!(
                "mongo-schema-testkit: waiting for another process installing SecantusDB \
                 {SECANTUS_VERSION} (lock {})",
                lock_path.display()
            );
            lock.lock()
                .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(format!("cannot lock {}: {e}", lock_path.display()));
        }
    }
    // Re-check under the lock: another process may have finished the install meanwhile.
    if is_complete(&inst, &venv) {
        return Ok(inst);
    }
    let result = install(&venv, &inst);
    drop(lock); // closing the file releases the lock
    result.map(|()| inst)
}

/// Runs under the install lock.
fn install(venv: &Path, inst: &Installation) -> Result<(), String> {
    let started = Instant::now();
    let logs = logs_dir();
    fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let log_path = logs.join("install.log");
    let mut log = File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;

    crate::say!(
        "mongo-schema-testkit: installing SecantusDB {SECANTUS_VERSION} into {} \
         (first run only; pip output in {})",
        venv.display(),
        log_path.display()
    );

    if !inst.secantusd.is_file() || !inst.python.exists() {
        if venv.exists() {
            // A half-made venv from an interrupted install: start over.
            fs::remove_dir_all(venv)
                .map_err(|e| format!("cannot remove broken venv {}: {e}", venv.display()))?;
        }
        let python = std::env::var(PYTHON_ENV)
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "python3".to_owned());
        let mut venv_cmd = Command::new(&python);
        venv_cmd.arg("-m").arg("venv").arg(venv);
        run_logged(&mut venv_cmd, &mut log, &log_path)
            .map_err(|e| format!("`{python} -m venv {}` failed: {e}", venv.display()))?;
    }

    let mut pip = Command::new(&inst.python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        SECANTUS_REQUIREMENT,
    ]);
    run_logged(&mut pip, &mut log, &log_path)
        .map_err(|e| format!("`pip install {SECANTUS_REQUIREMENT}` failed: {e}"))?;
    if !inst.secantusd.is_file() {
        return Err(format!(
            "pip installed {SECANTUS_REQUIREMENT} but {} is missing",
            inst.secantusd.display()
        ));
    }

    fs::write(
        &inst.config,
        "# Written by mongo-schema-testkit: an explicit, empty config so that no secantusd.toml\n\
         # elsewhere (./, ~/.secantus, /etc/secantus) changes the test server.\n",
    )
    .map_err(|e| format!("cannot write {}: {e}", inst.config.display()))?;
    fs::write(venv.join(MARKER), format!("{SECANTUS_REQUIREMENT}\n"))
        .map_err(|e| format!("cannot write install marker in {}: {e}", venv.display()))?;

    crate::say!(
        "mongo-schema-testkit: installed {} in {:.1}s",
        inst.secantusd.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs `cmd` with stdout/stderr appended to `log`; on failure returns the reason and the log tail.
fn run_logged(cmd: &mut Command, log: &mut File, log_path: &Path) -> Result<(), String> {
    let _ = writeln!(log, "$ {cmd:?}");
    let _ = log.flush();
    let out = log.try_clone().map_err(|e| e.to_string())?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("{} not found", cmd.get_program().to_string_lossy())
            }
            _ => format!("cannot run {}: {e}", cmd.get_program().to_string_lossy()),
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "{status}; last lines of {}:\n{}",
            log_path.display(),
            crate::server::tail(log_path, 0, 20)
        ))
    }
}
