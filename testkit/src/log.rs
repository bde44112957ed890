//! Reading the log files the test server and its installation write, for diagnoses.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The file's text from byte `offset` on (empty when it cannot be read).
pub(crate) fn read_from(path: &Path, offset: u64) -> String {
    let mut buf = Vec::new();
    if let Ok(mut f) = File::open(path) {
        if f.seek(SeekFrom::Start(offset)).is_ok() {
            let _ = f.read_to_end(&mut buf);
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// The last `lines` lines of the file from byte `offset` on.
pub(crate) fn tail(path: &Path, offset: u64, lines: usize) -> String {
    let text = read_from(path, offset);
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    let out = all[start..].join("\n");
    if out.is_empty() {
        "(empty)".to_owned()
    } else {
        out
    }
}
