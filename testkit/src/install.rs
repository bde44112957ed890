//! Installing SecantusDB into a per-user cache, shared by every project on the machine:
//! `$MONGO_SCHEMA_SECANTUS_DIR`, else `$XDG_CACHE_HOME/mongo-schema/secantus-<version>`, else
//! `~/.cache/mongo-schema/secantus-<version>` (`%LOCALAPPDATA%\mongo-schema\secantus-<version>` on
//! Windows). Never under the library's own sources: with a path or git dependency those are the
//! library's checkout, with a crates.io dependency cargo's registry sources.

use std::ffi::OsString;
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
/// away from its default per-user cache `~/.cache/mongo-schema/secantus-<version>` (see
/// [`secantus_dir`]). A relative path is taken from the process's working directory.
pub const SECANTUS_DIR_ENV: &str = "MONGO_SCHEMA_SECANTUS_DIR";

/// The directory holding the venv, the install lock and the server logs, shared by every project
/// and process of the user:
///
/// 1. `$MONGO_SCHEMA_SECANTUS_DIR`, if set and non-empty;
/// 2. on Windows `%LOCALAPPDATA%\mongo-schema\secantus-<version>`;
/// 3. `$XDG_CACHE_HOME/mongo-schema/secantus-<version>`, if `XDG_CACHE_HOME` is an absolute path
///    (the XDG base directory spec ignores relative ones);
/// 4. `~/.cache/mongo-schema/secantus-<version>` (`$HOME`, else the user database's home).
///
/// # Errors
///
/// When none of these is known (no home directory), saying to set `MONGO_SCHEMA_SECANTUS_DIR`.
pub fn secantus_dir() -> Result<PathBuf, String> {
    let dir = resolve_secantus_dir(
        cfg!(windows),
        |name| std::env::var_os(name),
        std::env::home_dir,
    )?;
    if dir.is_relative() {
        if let Ok(cwd) = std::env::current_dir() {
            return Ok(cwd.join(dir));
        }
    }
    Ok(dir)
}

/// [`secantus_dir`] with the environment and the home directory passed in (unit-testable without
/// touching the process environment).
fn resolve_secantus_dir(
    windows: bool,
    var: impl Fn(&str) -> Option<OsString>,
    home_dir: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf, String> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    if let Some(dir) = set(SECANTUS_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    let leaf = format!("secantus-{SECANTUS_VERSION}");
    let absolute = |name: &str| set(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let cache = if windows {
        absolute("LOCALAPPDATA")
    } else {
        absolute("XDG_CACHE_HOME").or_else(|| {
            absolute("HOME")
                .or_else(home_dir)
                .filter(|h| h.is_absolute())
                .map(|home| home.join(".cache"))
        })
    };
    match cache {
        Some(cache) => Ok(cache.join("mongo-schema").join(leaf)),
        None => Err(format!(
            "cannot find a per-user cache directory for the SecantusDB test server ({}); set \
             {SECANTUS_DIR_ENV} to the directory it should be installed in",
            if windows {
                "LOCALAPPDATA is not set"
            } else {
                "neither XDG_CACHE_HOME nor a home directory is known"
            }
        )),
    }
}

pub(crate) fn logs_dir() -> Result<PathBuf, String> {
    Ok(secantus_dir()?.join("logs"))
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

/// Makes sure SecantusDB [`SECANTUS_VERSION`] is installed in `<dir>/venv`, where `<dir>` is the
/// per-user cache [`secantus_dir`] (`~/.cache/mongo-schema/secantus-0.7.0b3`, or
/// `$MONGO_SCHEMA_SECANTUS_DIR`), and returns the path of its `secantusd-py` launcher. One install
/// serves every project of the user.
///
/// When the venv is missing it runs `python3 -m venv <venv>` (the interpreter can be overridden
/// with the `MONGO_SCHEMA_PYTHON` environment variable) and
/// `<venv>/bin/python -m pip install SecantusDB==0.7.0b3`, printing progress to stderr; pip's
/// output goes to `<dir>/logs/install.log`. Processes that call this at the same time (test
/// binaries run in parallel, or the tests of two projects) are serialised by an exclusive file
/// lock on `<dir>/install.lock`; only the first one installs, the others wait and re-check.
///
/// # Errors
///
/// A human-readable reason (no cache directory, python not found, venv creation or pip failed,
/// with the tail of pip's output).
pub fn ensure_secantus_installed() -> Result<PathBuf, String> {
    Ok(ensure_installation()?.secantusd)
}

pub(crate) fn ensure_installation() -> Result<Installation, String> {
    let dir = secantus_dir()?;
    let venv = dir.join("venv");
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
    let logs = logs_dir()?;
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
            crate::log::tail(log_path, 0, 20)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    fn no_home() -> Option<PathBuf> {
        None
    }

    /// The testkit's own sources (and so the library's checkout, or cargo's registry sources).
    fn own_sources() -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        dir.parent().unwrap_or(dir).to_path_buf()
    }

    #[test]
    fn default_is_the_xdg_cache_never_the_library_sources() {
        let cache = std::env::temp_dir().join("mongo-schema-xdg-test");
        let vars = [
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
            ("HOME", "/home/someone"),
        ];
        let dir = resolve_secantus_dir(false, env(&vars), no_home).unwrap();
        assert_eq!(
            dir,
            cache
                .join("mongo-schema")
                .join(format!("secantus-{SECANTUS_VERSION}"))
        );
        assert!(dir.starts_with(&cache), "{}", dir.display());
        assert!(!dir.starts_with(own_sources()), "{}", dir.display());
    }

    #[test]
    fn without_xdg_it_is_home_dot_cache() {
        let expected = PathBuf::from("/home/someone/.cache/mongo-schema/secantus-0.7.0b3");
        for xdg in [None, Some(""), Some("relative/cache")] {
            let mut vars = vec![("HOME", "/home/someone")];
            vars.extend(xdg.map(|x| ("XDG_CACHE_HOME", x)));
            assert_eq!(
                resolve_secantus_dir(false, env(&vars), no_home).unwrap(),
                expected,
                "XDG_CACHE_HOME={xdg:?}"
            );
        }
        // HOME unset: the user database's home.
        let from_passwd = || Some(PathBuf::from("/home/someone"));
        assert_eq!(
            resolve_secantus_dir(false, env(&[]), from_passwd).unwrap(),
            expected
        );
    }

    #[test]
    fn the_variable_wins() {
        let vars = [
            (SECANTUS_DIR_ENV, "/opt/secantus"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/someone"),
        ];
        assert_eq!(
            resolve_secantus_dir(false, env(&vars), no_home).unwrap(),
            PathBuf::from("/opt/secantus")
        );
        // Empty means unset.
        let vars = [(SECANTUS_DIR_ENV, ""), ("XDG_CACHE_HOME", "/xdg")];
        assert_eq!(
            resolve_secantus_dir(false, env(&vars), no_home).unwrap(),
            PathBuf::from("/xdg/mongo-schema/secantus-0.7.0b3")
        );
    }

    #[test]
    fn windows_uses_local_app_data() {
        // An absolute Windows path is only absolute on Windows; test the rule with a Unix one.
        let vars = [
            ("LOCALAPPDATA", "/c/Users/someone/AppData/Local"),
            ("XDG_CACHE_HOME", "/xdg"),
        ];
        assert_eq!(
            resolve_secantus_dir(true, env(&vars), no_home).unwrap(),
            PathBuf::from("/c/Users/someone/AppData/Local/mongo-schema/secantus-0.7.0b3")
        );
    }

    #[test]
    fn no_home_is_an_error_naming_the_variable() {
        let err = resolve_secantus_dir(false, env(&[("HOME", "")]), no_home).unwrap_err();
        assert!(err.contains("set MONGO_SCHEMA_SECANTUS_DIR"), "{err}");
        let err = resolve_secantus_dir(true, env(&[]), no_home).unwrap_err();
        assert!(err.contains("LOCALAPPDATA"), "{err}");
        assert!(err.contains("MONGO_SCHEMA_SECANTUS_DIR"), "{err}");
    }

    #[test]
    fn the_process_default_is_outside_the_library_sources() {
        // Whatever this machine's environment says; the variable, if set, is taken as it is.
        let dir = secantus_dir().unwrap();
        if let Some(set) = std::env::var_os(SECANTUS_DIR_ENV).filter(|d| !d.is_empty()) {
            assert!(dir.ends_with(&set), "{}", dir.display());
            return;
        }
        assert!(!dir.starts_with(own_sources()), "{}", dir.display());
        assert!(dir.ends_with(format!("mongo-schema/secantus-{SECANTUS_VERSION}")));
    }
}
