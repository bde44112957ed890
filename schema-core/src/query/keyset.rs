//! Keyset continuation, shared by a parent's child pages ([`crate::ChildPage`]) and a declared
//! query's pages (`#[query(.., pages)]`): the documents that sort after a cursor in an order of
//! index keys, as ranges of that index.

use mongodb::bson::{doc, Bson, Document, RawDocument};

use crate::error::{Error, Result};

/// The largest page a keyset page or a bucket's entry page returns: a larger `limit` is refused
/// ([`Error::InvalidArgument`] naming `limit`) rather than read into memory at once; continue with the page's cursor.
pub const MAX_PAGE_SIZE: i64 = 1000;

/// Refuses a page size outside `1..=MAX_PAGE_SIZE` (`0` would mean "all" to the server).
pub(crate) fn check_page_size(limit: i64) -> Result<()> {
    if (1..=MAX_PAGE_SIZE).contains(&limit) {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "limit",
        format!(
            "a page of {limit} items: a page holds 1 to {MAX_PAGE_SIZE} (`MAX_PAGE_SIZE`); read \
             more with the next page's cursor"
        ),
    ))
}

/// The conditions matching what sorts after `values` in `order` (stored path, direction; the
/// last key unique, as `_id` is), one index range each, most specific first:
///
/// - for each key, from the last to the first: the keys before it equal to the cursor's, and
///   this key after the cursor's (`$gt`, `$lt` when descending);
/// - in descending order, documents whose key is `null` or missing come last, and a comparison
///   with a date or a number never matches them (query comparisons are type-bracketed): they
///   are a range of their own, `key: null`, unless `may_be_null` says the key is required and
///   not null. After a `null` cursor key in ascending order every other value follows
///   (`$ne: null`); in descending order nothing does.
///
/// An equality with a document value is written `{ $eq: value }`, so a value shaped like an
/// operator stays a value.
pub(crate) fn after(
    order: &[(&str, i32)],
    values: &[Bson],
    may_be_null: impl Fn(&str) -> bool,
) -> Vec<Document> {
    let mut branches = Vec::new();
    for (i, ((field, direction), value)) in order.iter().zip(values).enumerate().rev() {
        let ties = || {
            let mut ties = Document::new();
            for ((field, _), value) in order[..i].iter().zip(values) {
                ties.insert(*field, equal_to(value));
            }
            ties
        };
        let null_key = matches!(value, Bson::Null | Bson::Undefined);
        let descending = *direction < 0;
        match (descending, null_key) {
            (false, false) => {
                let mut range = ties();
                range.insert(*field, doc! { "$gt": value.clone() });
                branches.push(range);
            }
            (false, true) => {
                let mut range = ties();
                range.insert(*field, doc! { "$ne": Bson::Null });
                branches.push(range);
            }
            (true, false) => {
                let mut range = ties();
                range.insert(*field, doc! { "$lt": value.clone() });
                branches.push(range);
                if may_be_null(field) {
                    let mut nulls = ties();
                    nulls.insert(*field, Bson::Null);
                    branches.push(nulls);
                }
            }
            (true, true) => {} // nothing sorts after null in descending order
        }
    }
    branches
}

/// `value` as the right-hand side of an equality: a document as `{ $eq: value }` (a document
/// written plainly would be read as operators when its keys start with `$`).
fn equal_to(value: &Bson) -> Bson {
    match value {
        Bson::Document(_) => doc! { "$eq": value.clone() }.into(),
        other => other.clone(),
    }
}

/// `base` and `branch` as one filter document: each field's conditions side by side
/// (`{ at: { $gte: a, $lt: b, $gt: cursor } }`), so the filter stays one index range with no
/// top-level operator; an `$and` of the two only when one operator would appear twice on a
/// field.
pub(crate) fn merge(base: &Document, branch: Document) -> Document {
    let mut merged = base.clone();
    for (field, condition) in &branch {
        match merged.get(field) {
            None => {
                merged.insert(field.clone(), condition.clone());
            }
            Some(existing) => match (operators(existing), operators(condition)) {
                (Some(mut left), Some(right)) if !right.keys().any(|op| left.contains_key(op)) => {
                    left.extend(right);
                    merged.insert(field.clone(), left);
                }
                _ => return doc! { "$and": [base.clone(), branch.clone()] },
            },
        }
    }
    merged
}

/// A field's condition as operators: `{ $gt: 1 }` as itself, a plain value as `{ $eq: value }`;
/// `None` for a condition that mixes operators and fields.
fn operators(condition: &Bson) -> Option<Document> {
    match condition {
        Bson::Document(d) if !d.is_empty() && d.keys().all(|k| k.starts_with('$')) => {
            Some(d.clone())
        }
        Bson::Document(d) if d.keys().any(|k| k.starts_with('$')) => None,
        other => Some(doc! { "$eq": other.clone() }),
    }
}

/// The filter of `branches`, each merged with `base`: one branch is the filter itself; several
/// are a rooted `$or` (one index range each, merged in index order by mongod's `SORT_MERGE`);
/// none matches nothing (an empty `$in` on `_id`, still within `base`'s range).
pub(crate) fn filter(base: &Document, branches: Vec<Document>) -> Document {
    let mut ranges: Vec<Document> = branches.into_iter().map(|b| merge(base, b)).collect();
    match ranges.len() {
        0 => merge(base, doc! { "_id": { "$in": [] } }),
        1 => ranges.remove(0),
        _ => doc! { "$or": ranges },
    }
}

/// Whether a stored path may be `null` or missing in documents valid under `schema` (a
/// `$jsonSchema`): unless the path (and each document on it) is required and its `bsonType`
/// excludes `null`, it may.
pub(crate) fn may_be_null(schema: &Document, path: &str) -> bool {
    let mut schema = schema;
    for step in path.split('.') {
        let required = schema
            .get_array("required")
            .is_ok_and(|r| r.iter().any(|name| name.as_str() == Some(step)));
        let next = schema
            .get_document("properties")
            .and_then(|p| p.get_document(step));
        match next {
            Ok(next) if required => schema = next,
            _ => return true,
        }
    }
    match schema.get("bsonType") {
        Some(Bson::String(one)) => one == "null",
        Some(Bson::Array(types)) => types.iter().any(|t| t.as_str() == Some("null")),
        _ => true,
    }
}

/// Whether `value` may be the stored value of `path` under `schema` (a `$jsonSchema`): its BSON
/// type is one of the path's `bsonType`s (every number type standing for the others, since
/// queries compare numbers by value); `null` always may be (a missing key sorts as `null`), and
/// a path the schema does not type may hold anything.
pub(crate) fn may_hold(schema: &Document, path: &str, value: &Bson) -> bool {
    if matches!(value, Bson::Null) {
        return true;
    }
    let mut schema = schema;
    for step in path.split('.') {
        match schema
            .get_document("properties")
            .and_then(|p| p.get_document(step))
        {
            Ok(next) => schema = next,
            Err(_) => return true,
        }
    }
    let types: Vec<&str> = match schema.get("bsonType") {
        Some(Bson::String(one)) => vec![one.as_str()],
        Some(Bson::Array(many)) => many.iter().filter_map(Bson::as_str).collect(),
        _ => return true,
    };
    let number = |t: &str| matches!(t, "int" | "long" | "double" | "decimal" | "number");
    let found = match value {
        Bson::Int32(_) => "int",
        Bson::Int64(_) => "long",
        Bson::Double(_) => "double",
        Bson::Decimal128(_) => "decimal",
        Bson::String(_) => "string",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::ObjectId(_) => "objectId",
        Bson::Binary(_) => "binData",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Timestamp(_) => "timestamp",
        _ => return true,
    };
    types
        .iter()
        .any(|t| *t == found || (number(t) && number(found)))
}

/// The value at a dotted stored `path` of a raw document, `None` when a step is missing or not a
/// document.
pub(crate) fn raw_path(doc: &RawDocument, path: &str) -> Option<Bson> {
    let mut current: &RawDocument = doc;
    let mut steps = path.split('.').peekable();
    while let Some(step) = steps.next() {
        let value = current.get(step).ok()??;
        if steps.peek().is_none() {
            return crate::bson_compat::bson_from_raw(value);
        }
        current = value.as_document()?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_a_key_then_id_ascending_the_ties_come_first() {
        let branches = after(
            &[("at", 1), ("_id", 1)],
            &[Bson::Int32(5), Bson::Int32(9)],
            |_| true,
        );
        assert_eq!(
            branches,
            [
                doc! { "at": 5, "_id": { "$gt": 9 } },
                doc! { "at": { "$gt": 5 } }
            ]
        );
    }

    #[test]
    fn descending_keys_that_may_be_null_get_their_own_range() {
        let branches = after(
            &[("a", -1), ("b", -1), ("_id", -1)],
            &[Bson::Int32(1), Bson::Int32(2), Bson::Int32(3)],
            |path| path == "b",
        );
        assert_eq!(
            branches,
            [
                doc! { "a": 1, "b": 2, "_id": { "$lt": 3 } },
                doc! { "a": 1, "b": { "$lt": 2 } },
                doc! { "a": 1, "b": Bson::Null },
                doc! { "a": { "$lt": 1 } },
            ]
        );
    }

    #[test]
    fn null_cursor_keys_ascending_continue_with_every_value_descending_with_none() {
        let asc = after(
            &[("a", 1), ("_id", 1)],
            &[Bson::Null, Bson::Int32(3)],
            |_| true,
        );
        assert_eq!(
            asc,
            [
                doc! { "a": Bson::Null, "_id": { "$gt": 3 } },
                doc! { "a": { "$ne": Bson::Null } }
            ]
        );
        let desc = after(
            &[("a", -1), ("_id", -1)],
            &[Bson::Null, Bson::Int32(3)],
            |path| path != "_id",
        );
        assert_eq!(desc, [doc! { "a": Bson::Null, "_id": { "$lt": 3 } }]);
    }

    #[test]
    fn an_operator_shaped_document_value_stays_a_value() {
        let branches = after(
            &[("a", 1), ("_id", 1)],
            &[Bson::Document(doc! { "$ne": 1 }), Bson::Int32(3)],
            |_| false,
        );
        assert_eq!(
            branches[0],
            doc! { "a": { "$eq": { "$ne": 1 } }, "_id": { "$gt": 3 } }
        );
    }

    #[test]
    fn a_range_on_the_sort_key_merges_into_one_range() {
        let base = doc! { "owner": 7, "at": { "$gte": 1, "$lt": 10 } };
        assert_eq!(
            merge(&base, doc! { "at": { "$gt": 4 } }),
            doc! { "owner": 7, "at": { "$gte": 1, "$lt": 10, "$gt": 4 } }
        );
        assert_eq!(
            merge(&base, doc! { "at": 4, "_id": { "$gt": 2 } }),
            doc! { "owner": 7, "at": { "$gte": 1, "$lt": 10, "$eq": 4 }, "_id": { "$gt": 2 } }
        );
        // the same operator twice: both kept, under `$and`
        let both = merge(&base, doc! { "at": { "$lt": 4 } });
        assert_eq!(
            both,
            doc! { "$and": [base.clone(), { "at": { "$lt": 4 } }] }
        );
    }

    #[test]
    fn a_value_of_another_type_than_the_path_holds_is_told_apart() {
        let schema = doc! { "properties": {
            "at": { "bsonType": ["date", "null"] },
            "n": { "bsonType": "long" },
            "meta": { "properties": { "tag": { "bsonType": "string" } } },
        } };
        let now = Bson::DateTime(mongodb::bson::DateTime::now());
        assert!(may_hold(&schema, "at", &now));
        assert!(!may_hold(&schema, "at", &Bson::String("zzz".into())));
        assert!(may_hold(&schema, "at", &Bson::Null));
        assert!(
            may_hold(&schema, "n", &Bson::Int32(5)),
            "numbers compare by value"
        );
        assert!(!may_hold(&schema, "meta.tag", &Bson::Int32(5)));
        assert!(may_hold(&schema, "untyped", &Bson::Int32(5)));
    }

    #[test]
    fn no_branch_matches_nothing_within_the_base() {
        assert_eq!(
            filter(&doc! { "p": 1 }, vec![]),
            doc! { "p": 1, "_id": { "$in": [] } }
        );
    }
}
