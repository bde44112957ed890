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

/// The longest name [`edit_distance`] compares (a longer one is nobody's near miss).
const NEAR_MAX: usize = 64;

/// The edit distance of `a` and `b` by bytes, a swap of two neighbours counting as one edit
/// (`nmae` is one edit from `name`), or `usize::MAX` when either is longer than `NEAR_MAX`
/// bytes (the optimal string alignment distance).
pub const fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() > NEAR_MAX || b.len() > NEAR_MAX {
        return usize::MAX;
    }
    // three rows: the one before the previous (for a swap), the previous, the current
    let mut before = [0usize; NEAR_MAX + 1];
    let mut previous = [0usize; NEAR_MAX + 1];
    let mut current = [0usize; NEAR_MAX + 1];
    let mut j = 0;
    while j <= b.len() {
        previous[j] = j;
        j += 1;
    }
    let mut i = 1;
    while i <= a.len() {
        current[0] = i;
        let mut j = 1;
        while j <= b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            let mut best = previous[j - 1] + cost;
            if previous[j] + 1 < best {
                best = previous[j] + 1;
            }
            if current[j - 1] + 1 < best {
                best = current[j - 1] + 1;
            }
            if i > 1
                && j > 1
                && a[i - 1] == b[j - 2]
                && a[i - 2] == b[j - 1]
                && before[j - 2] + 1 < best
            {
                best = before[j - 2] + 1;
            }
            current[j] = best;
            j += 1;
        }
        before = previous;
        previous = current;
        i += 1;
    }
    previous[b.len()]
}

/// The name of `names` or `more` (a struct's fields and its `_id` field) that `found` is a
/// misspelling of: the closest within an edit distance of a third of its length (at least 1),
/// as the derive's own "did you mean" picks.
pub const fn near_miss_in<'n>(found: &str, names: &[&'n str], more: &[&'n str]) -> Option<&'n str> {
    let mut best: Option<&'n str> = None;
    let mut best_distance = usize::MAX;
    let mut table = 0;
    while table < 2 {
        let list = if table == 0 { names } else { more };
        let mut i = 0;
        while i < list.len() {
            let name = list[i];
            let distance = edit_distance(found, name);
            let limit = if name.len() / 3 > 1 {
                name.len() / 3
            } else {
                1
            };
            if !name.is_empty() && distance <= limit && distance < best_distance {
                best = Some(name);
                best_distance = distance;
            }
            i += 1;
        }
        table += 1;
    }
    best
}

/// The bytes of a message built while a constant is evaluated (at most [`Message::CAPACITY`];
/// the rest is cut).
pub struct Message {
    bytes: [u8; Message::CAPACITY],
    len: usize,
}

impl Default for Message {
    fn default() -> Message {
        Message::new()
    }
}

impl Message {
    /// How many bytes a message holds.
    pub const CAPACITY: usize = 1024;

    /// An empty message.
    pub const fn new() -> Message {
        Message {
            bytes: [0; Message::CAPACITY],
            len: 0,
        }
    }

    /// `self` followed by `text` (cut at a character boundary when it does not fit).
    pub const fn push(mut self, text: &str) -> Message {
        let bytes = text.as_bytes();
        if self.len + bytes.len() > Message::CAPACITY {
            return self;
        }
        let mut i = 0;
        while i < bytes.len() {
            self.bytes[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// The text so far.
    pub const fn text(&self) -> &str {
        message_text(self.bytes.split_at(self.len).0)
    }
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

    #[test]
    fn a_near_miss_is_the_closest_name_within_a_third_of_its_length() {
        use super::{edit_distance, near_miss_in};
        assert_eq!(edit_distance("nmae", "name"), 1);
        assert_eq!(edit_distance("strats_at", "starts_at"), 1);
        assert_eq!(edit_distance("", "of"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        const NAMES: &[&str] = &["starts_at", "slug", "name"];
        assert_eq!(near_miss_in("strats_at", NAMES, &[]), Some("starts_at"));
        assert_eq!(near_miss_in("slgu", NAMES, &[]), Some("slug"));
        assert_eq!(near_miss_in("ids", NAMES, &["id"]), Some("id"));
        assert_eq!(near_miss_in("venue", NAMES, &[]), None);
    }
}
