//! Text found and built while a constant is evaluated: a name's position in a table of names,
//! and the messages of failed compile-time checks (copies' and queries' lookups).

pub(super) const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The position of `name` in `names`.
pub const fn position(names: &[&str], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < names.len() {
        if same(names[i], name) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The length of [`list_message`]`(prefix, names, suffix)`.
pub const fn list_message_len(prefix: &str, names: &[&str], suffix: &str) -> usize {
    let mut len = prefix.len() + suffix.len();
    let mut i = 0;
    while i < names.len() {
        len += names[i].len() + 2; // the backticks
        if i > 0 {
            len += 2; // ", "
        }
        i += 1;
    }
    if names.is_empty() {
        len += NONE.len();
    }
    len
}

const NONE: &str = "none";

/// `prefix`, then `names` quoted and separated by commas (or `none`), then `suffix`, as the bytes
/// of a message built while evaluating a constant (`N` from [`list_message_len`]).
pub const fn list_message<const N: usize>(prefix: &str, names: &[&str], suffix: &str) -> [u8; N] {
    const fn put<const N: usize>(out: &mut [u8; N], mut at: usize, text: &str) -> usize {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() && at < N {
            out[at] = bytes[i];
            at += 1;
            i += 1;
        }
        at
    }
    let mut out = [0u8; N];
    let mut at = put(&mut out, 0, prefix);
    let mut i = 0;
    while i < names.len() {
        if i > 0 {
            at = put(&mut out, at, ", ");
        }
        at = put(&mut out, at, "`");
        at = put(&mut out, at, names[i]);
        at = put(&mut out, at, "`");
        i += 1;
    }
    if names.is_empty() {
        at = put(&mut out, at, NONE);
    }
    put(&mut out, at, suffix);
    out
}

/// The text of a message built by [`list_message`].
pub const fn message_text(bytes: &[u8]) -> &str {
    match core::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => "(message not UTF-8)",
    }
}

#[cfg(test)]
mod tests {
    use super::{list_message, list_message_len, message_text};

    #[test]
    fn the_message_of_a_missing_copied_field_lists_the_stored_fields() {
        const NAMES: &[&str] = &["title", "author"];
        const PREFIX: &str = "no `titel`; stored: ";
        const LEN: usize = list_message_len(PREFIX, NAMES, ".");
        const MESSAGE: [u8; LEN] = list_message(PREFIX, NAMES, ".");
        assert_eq!(
            message_text(&MESSAGE),
            "no `titel`; stored: `title`, `author`."
        );
        const NONE: [u8; list_message_len("", &[], "")] = list_message("", &[], "");
        assert_eq!(message_text(&NONE), "none");
    }
}
