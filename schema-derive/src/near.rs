//! Near misses for "did you mean": an unknown option that is a misspelling of an expected one.

/// The expected name `found` is a misspelling of: the closest one within an edit distance of a
/// third of its length (at least 1).
pub fn near_miss<'e>(found: &str, expected: &[&'e str]) -> Option<&'e str> {
    expected
        .iter()
        .copied()
        .map(|e| (edit_distance(found, e), e))
        .filter(|(distance, e)| *distance <= 1.max(e.len() / 3))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, e)| e)
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(diagonal + 1).min(row[j] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, near_miss};

    #[test]
    fn distances() {
        assert_eq!(edit_distance("sortt", "sort"), 1);
        assert_eq!(edit_distance("snyc", "sync"), 2);
        assert_eq!(edit_distance("maxlength", "max_length"), 1);
        assert_eq!(edit_distance("", "of"), 2);
        assert_eq!(edit_distance("limit", "limit"), 0);
    }

    #[test]
    fn a_misspelling_is_near_and_another_word_is_not() {
        let subset = ["of", "max", "sort", "count"];
        assert_eq!(near_miss("sortt", &subset), Some("sort"));
        assert_eq!(near_miss("cout", &subset), Some("count"));
        assert_eq!(near_miss("limit", &subset), None);
        assert_eq!(near_miss("strategy", &["to", "fields", "sync"]), None);
        assert_eq!(
            near_miss("max_len", &["max_length", "min_length"]),
            Some("max_length")
        );
    }
}
