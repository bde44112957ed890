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

/// Edit distance with transpositions (optimal string alignment): `snyc` is one edit from
/// `sync`, as a reader sees it, not two.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, near_miss};

    #[test]
    fn distances() {
        assert_eq!(edit_distance("sortt", "sort"), 1);
        assert_eq!(edit_distance("maxlength", "max_length"), 1);
        assert_eq!(edit_distance("snyc", "sync"), 1);
        assert_eq!(near_miss("snyc", &["to", "fields", "sync"]), Some("sync"));
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
