//! The order of a parent's children: the key after a reference in a declared index, which the
//! relation constants' keyset pages follow (read by the reference and copy generators alike).

use crate::ast::Container;
use crate::attr::{IndexKey, KeyKind};
use crate::check::resolve_key;
use crate::ctxt::Ctxt;

/// The key after the reference in the first declared index (or shard key) that starts with it.
pub fn sort_key(cont: &Container, stored: &str) -> Option<(String, i32, bool)> {
    let cx = Ctxt::new();
    let resolve = |keys: &[IndexKey]| -> Vec<(String, Option<i32>)> {
        keys.iter()
            .map(|k| {
                let direction = match k.kind {
                    KeyKind::Direction(d) => Some(d),
                    KeyKind::Special(_) => None,
                };
                (resolve_key(&cx, cont, k), direction)
            })
            .collect()
    };
    /// Stored keys with their direction (`None` for text/hashed), and whether unique.
    type Candidate = (Vec<(String, Option<i32>)>, bool);
    let mut candidates: Vec<Candidate> = cont
        .attrs
        .indexes
        .iter()
        // `pages = false`: kept as declared, no order for the pages
        .filter(|index| index.value.pages.as_ref().is_none_or(|p| p.value))
        .filter_map(|index| {
            let keys = &index.value.keys.as_ref()?.value;
            let unique = index.value.unique.as_ref().is_some_and(|u| u.value);
            Some((resolve(keys), unique))
        })
        .collect();
    if let Some(shard_key) = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.shard_key.as_ref())
    {
        candidates.push((resolve(&shard_key.value), false));
    }
    let _ = cx.check(); // keys were checked already
                        // a pair is unique when any unique index has exactly these two keys, in either order
    let unique_pair = |a: &str, b: &str| {
        candidates.iter().any(|(keys, unique)| {
            *unique
                && keys.len() == 2
                && keys.iter().any(|(k, _)| k == a)
                && keys.iter().any(|(k, _)| k == b)
        })
    };
    candidates
        .iter()
        .find_map(|(keys, _)| match keys.as_slice() {
            [(first, _), (second, Some(direction)), ..] if first == stored => {
                Some((second.clone(), *direction, unique_pair(first, second)))
            }
            _ => None,
        })
}
