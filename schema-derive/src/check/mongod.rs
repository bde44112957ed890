//! Designs that describe the data faithfully but that mongod 7/8 refuse when `apply` creates the
//! collection or its indexes (SPEC §9). Each is reported here, at compile time, with the server's
//! rule and the fix, one `check_*` function per rule.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::stored_key;
use crate::ast::{Container, Data, Field, RefKind};
use crate::attr::{Index, IndexKey, KeyField, KeyKind, Sp, Sync};
use crate::ctxt::Ctxt;

pub fn check(cx: &Ctxt, cont: &Container) {
    check_stored_field_names(cx, cont);
    check_duplicate_stored_names(cx, cont);
    check_enum_values(cx, cont);
    for index in &cont.attrs.indexes {
        let Some(keys) = &index.value.keys else {
            continue; // reported by `check_index_keys`
        };
        check_sparse_with_partial(cx, cont, &index.value, &keys.value);
        check_hashed(cx, &index.value, &keys.value);
        check_ttl_range(cx, &index.value);
        check_partial_filter(cx, &index.value);
        check_id_index(cx, cont, &keys.value);
        check_parallel_arrays(cx, cont, &keys.value);
    }
    check_one_text_index(cx, cont);
    check_index_names(cx, cont);
}

/// Where a field's stored name comes from: the rename literal, or the field itself.
fn name_tokens(field: &Field) -> proc_macro2::TokenStream {
    use quote::ToTokens;
    match (&field.attrs.rename, field.ident) {
        (Some(lit), _) => lit.to_token_stream(),
        (None, Some(ident)) => ident.to_token_stream(),
        (None, None) => field.ty.to_token_stream(),
    }
}

/// Field names: no `.` (a path), no leading `$` (an operator), no NUL (BSON keys end with one).
/// The groups of fields stored in one document: a struct's, or each variant's.
fn field_groups<'c, 'a>(cont: &'c Container<'a>) -> Vec<&'c [Field<'a>]> {
    match &cont.data {
        Data::Struct(fields) => vec![fields],
        Data::Enum(variants) => variants
            .iter()
            .filter(|v| v.style == crate::ast::Style::Struct)
            .map(|v| &v.fields[..])
            .collect(),
        _ => Vec::new(),
    }
}

fn check_stored_field_names(cx: &Ctxt, cont: &Container) {
    for field in field_groups(cont)
        .into_iter()
        .flatten()
        .filter(|f| f.is_stored())
    {
        let stored = &field.stored_name;
        let problem = if stored.contains('\0') {
            "contains a NUL character: BSON field names are NUL-terminated, so mongod cannot store it"
        } else if stored.starts_with('$') {
            "starts with `$`: mongod reads a `$` name as an operator in queries, updates, \
             aggregation and `$jsonSchema`, so no filter or update can name this field"
        } else if stored.contains('.') {
            "contains `.`: mongod reads a dotted name as a path into embedded documents, so \
             queries, updates, indexes and the validator would address another field"
        } else {
            continue;
        };
        cx.error_spanned_by(
            name_tokens(field),
            format!(
                "stored field name \"{}\" of field `{}` {problem}; rename it (e.g. `#[serde(rename = \"{}\")]`)",
                stored.escape_default(),
                field.display_name(),
                suggested_name(stored),
            ),
        );
    }
}

fn suggested_name(stored: &str) -> String {
    let cleaned: String = stored
        .trim_start_matches('$')
        .chars()
        .filter(|c| *c != '\0')
        .map(|c| if c == '.' { '_' } else { c })
        .collect();
    if cleaned.is_empty() {
        "value".to_owned()
    } else {
        cleaned
    }
}

/// Two fields stored under one name: the validator's `required` would list it twice, which
/// mongod's `$jsonSchema` parser refuses (and the document would hold the key twice).
fn check_duplicate_stored_names(cx: &Ctxt, cont: &Container) {
    for fields in field_groups(cont) {
        check_duplicates_in(cx, fields);
    }
}

fn check_duplicates_in(cx: &Ctxt, fields: &[Field]) {
    let stored: Vec<&Field> = fields
        .iter()
        .filter(|f| f.is_stored() && f.attrs.flatten.is_none())
        .collect();
    for (i, field) in stored.iter().enumerate() {
        let Some(first) = stored[..i]
            .iter()
            .find(|f| f.stored_name == field.stored_name)
        else {
            continue;
        };
        cx.error_spanned_by(
            name_tokens(field),
            format!(
                "fields `{}` and `{}` are both stored as \"{}\": mongod refuses a `$jsonSchema` whose \
                 `required` lists a name twice, and a document cannot hold two values under one key; \
                 give one of them another `#[serde(rename = \"...\")]`",
                first.display_name(),
                field.display_name(),
                field.stored_name.escape_default(),
            ),
        );
    }
}

/// A unit-only enum is `{ enum: [names] }`: mongod refuses an empty `enum` and a name listed twice.
fn check_enum_values(cx: &Ctxt, cont: &Container) {
    let Data::Enum(variants) = &cont.data else {
        return;
    };
    let declared = match &cont.original.data {
        syn::Data::Enum(data) => data.variants.len(),
        _ => 0,
    };
    if declared == 0 {
        cx.error_spanned_by(
            cont.ident,
            format!(
                "`{}` has no variants, so its schema would be `enum: []`, which mongod's `$jsonSchema` \
                 parser refuses (an `enum` lists at least one value); add the variants it stores",
                cont.ident
            ),
        );
        return;
    }
    let stored: Vec<_> = variants
        .iter()
        .filter(|v| !v.attrs.skip_serializing)
        .collect();
    for (i, variant) in stored.iter().enumerate() {
        let Some(first) = stored[..i]
            .iter()
            .find(|v| v.stored_name == variant.stored_name)
        else {
            continue;
        };
        let tokens = match &variant.attrs.rename {
            Some(lit) => quote::ToTokens::to_token_stream(lit),
            None => quote::ToTokens::to_token_stream(&variant.ident),
        };
        cx.error_spanned_by(
            tokens,
            format!(
                "variants `{}` and `{}` are both stored as \"{}\": mongod refuses an `enum` that lists a \
                 value twice, and reading the value back could not tell them apart; rename one of them",
                first.ident,
                variant.ident,
                variant.stored_name.escape_default(),
            ),
        );
    }
}

/// mongod: "cannot mix \"partialFilterExpression\" and \"sparse\" options".
fn check_sparse_with_partial(cx: &Ctxt, cont: &Container, index: &Index, keys: &[IndexKey]) {
    let Some(sparse) = index.sparse.as_ref().filter(|s| s.value) else {
        return;
    };
    if index.partial.is_none() {
        return;
    }
    let field = keys
        .first()
        .map_or_else(|| "<field>".to_owned(), |key| stored_key(cont, key));
    cx.error_spanned_by(
        &sparse.tokens,
        format!(
            "mongod refuses an index that is both `sparse` and `partial` (it cannot mix \"sparse\" and \
             \"partialFilterExpression\"): drop `sparse` and add `\"{field}\": {{\"$exists\": true}}` to the \
             partial filter, which leaves out the documents `sparse` would"
        ),
    );
}

/// mongod: a hashed index cannot be unique, and holds at most one hashed field.
fn check_hashed(cx: &Ctxt, index: &Index, keys: &[IndexKey]) {
    let hashed: Vec<&IndexKey> = keys.iter().filter(|k| is_special(k, "hashed")).collect();
    if hashed.is_empty() {
        return;
    }
    for extra in &hashed[1..] {
        cx.error_spanned_by(
            &extra.kind_tokens,
            "mongod allows one hashed field per index: keep `\"hashed\"` on one key and make the \
             others ascending (`1`) or descending (`-1`)",
        );
    }
    if let Some(unique) = index.unique.as_ref().filter(|u| u.value) {
        cx.error_spanned_by(
            &unique.tokens,
            "mongod refuses a unique hashed index (hashed values can collide, so a hashed index cannot \
             guarantee uniqueness): drop `unique`, and declare a second, non-hashed index with \
             `unique` on the same field if the values must be unique",
        );
    }
}

/// mongod allows one text index per collection (one index may hold several text fields).
fn check_one_text_index(cx: &Ctxt, cont: &Container) {
    let mut seen = false;
    for index in &cont.attrs.indexes {
        let Some(keys) = &index.value.keys else {
            continue;
        };
        let Some(text) = keys.value.iter().find(|k| is_special(k, "text")) else {
            continue;
        };
        if seen {
            cx.error_spanned_by(
                &text.kind_tokens,
                "mongod allows one text index per collection, and this is the second: put every \
                 text field in one index, e.g. `keys(title = \"text\", body = \"text\")`",
            );
        }
        seen = true;
    }
}

/// mongod: `expireAfterSeconds` lies within 0..=2147483647 (a 32-bit signed integer).
fn check_ttl_range(cx: &Ctxt, index: &Index) {
    let Some(ttl) = &index.expire_after_secs else {
        return;
    };
    const MAX: u64 = i32::MAX as u64;
    if ttl.value > MAX {
        cx.error_spanned_by(
            &ttl.tokens,
            format!(
                "mongod accepts `expireAfterSeconds` from 0 to 2147483647 (about 68 years), and this is {}: \
                 use at most 2147483647, or drop `expire_after_secs` to keep the documents",
                ttl.value
            ),
        );
    }
}

const PARTIAL_OPERATORS: &str =
    "equality (`\"field\": value` or `$eq`), `$exists: true`, `$gt`, `$gte`, \
     `$lt`, `$lte`, `$type`, `$in`, `$and` and `$or`";

/// Extended-JSON wrappers of a value (`{"$oid": "..."}`): an equality, not an operator.
const EXTENDED_JSON: &[&str] = &[
    "$oid",
    "$date",
    "$numberInt",
    "$numberLong",
    "$numberDouble",
    "$numberDecimal",
    "$binary",
    "$uuid",
    "$timestamp",
    "$minKey",
    "$maxKey",
    "$symbol",
    "$code",
    "$dbPointer",
    "$undefined",
];

/// mongod's partial indexes accept only some match expressions, checked through `$and`/`$or`.
fn check_partial_filter(cx: &Ctxt, index: &Index) {
    let Some(partial) = &index.partial else {
        return;
    };
    let Ok(Value::Object(filter)) = serde_json::from_str::<Value>(&partial.value) else {
        return; // reported by the attribute parser
    };
    if let Some(problem) = filter_problem(&filter) {
        report_partial(cx, partial, &problem);
    }
}

/// The first unsupported expression of a filter document: what it is, and how to do without it.
fn filter_problem(filter: &Map<String, Value>) -> Option<(String, &'static str)> {
    for (key, value) in filter {
        if key == "$and" || key == "$or" {
            let Value::Array(clauses) = value else {
                return Some((
                    format!("`{key}` with a value that is not an array"),
                    "`$and` and `$or` take an array of filter documents",
                ));
            };
            for clause in clauses {
                let Value::Object(clause) = clause else {
                    return Some((
                        format!("a `{key}` clause that is not a document"),
                        "`$and` and `$or` take an array of filter documents",
                    ));
                };
                if let Some(problem) = filter_problem(clause) {
                    return Some(problem);
                }
            }
        } else if key.starts_with('$') {
            return Some((format!("`{key}`"), fix_for(key)));
        } else if let Value::Object(condition) = value {
            if let Some(problem) = condition_problem(condition) {
                return Some(problem);
            }
        }
    }
    None
}

/// A field's condition: an operator document, an extended-JSON value or an embedded document.
fn condition_problem(condition: &Map<String, Value>) -> Option<(String, &'static str)> {
    if condition.contains_key("$regularExpression") {
        return Some(("a regular expression".to_owned(), fix_for("$regex")));
    }
    if condition
        .keys()
        .any(|k| EXTENDED_JSON.contains(&k.as_str()))
    {
        return None; // `{"at": {"$date": ...}}`: equality with a typed value
    }
    for (operator, argument) in condition {
        match operator.as_str() {
            "$eq" | "$gt" | "$gte" | "$lt" | "$lte" | "$type" | "$in" => {}
            "$exists" => {
                let exists = match argument {
                    Value::Bool(b) => *b,
                    Value::Number(n) => n.as_f64() != Some(0.0),
                    Value::Null => false,
                    _ => true,
                };
                if !exists {
                    return Some((
                        format!("`$exists: {argument}`"),
                        "a partial index can only select documents that have a field; index the \
                         documents that have it (`$exists: true`), or store an explicit value \
                         (e.g. `false`) and select it by equality",
                    ));
                }
            }
            op if op.starts_with('$') => return Some((format!("`{op}`"), fix_for(op))),
            _ => {} // a field of an embedded document compared by equality
        }
    }
    None
}

fn fix_for(operator: &str) -> &'static str {
    match operator {
        "$ne" | "$nin" | "$not" | "$nor" => {
            "negations are not supported: list the values the index keeps with `$in`, or \
             select them with a range"
        }
        "$regex" | "$options" => {
            "regular expressions are not supported: store a field derived from the value \
             and select it by equality"
        }
        "$expr" | "$where" | "$function" => {
            "computed conditions are not supported: store the computed value in a field and \
             select it by equality or a range"
        }
        _ => "rewrite the filter with the supported operators, or drop `partial`",
    }
}

fn report_partial(cx: &Ctxt, partial: &Sp<String>, problem: &(String, &'static str)) {
    let (what, fix) = problem;
    cx.error_spanned_by(
        &partial.tokens,
        format!(
            "mongod refuses {what} in a partial index filter (`partialFilterExpression` accepts only \
             {PARTIAL_OPERATORS}): {fix}"
        ),
    );
}

/// mongod builds `_id_` on `{_id: 1}` for every collection and refuses a second index on it.
fn check_id_index(cx: &Ctxt, cont: &Container, keys: &[IndexKey]) {
    let [key] = keys else {
        return;
    };
    if matches!(key.kind, KeyKind::Direction(1)) && stored_key(cont, key) == "_id" {
        cx.error_spanned_by(
            key.field.tokens(),
            "mongod builds the `_id_` index on `{_id: 1}` for every collection, and an index declared on \
             `{_id: 1}` is that index: mongod renames it `_id_` (so `apply` would never find it under its \
             own name) and refuses it with `unique`, `sparse`, `partial` or `expire_after_secs` (not valid \
             for an _id index); drop this `#[index]`, `_id` is already indexed and unique",
        );
    }
}

/// Where the first array on an index key's path is, as far as this struct shows.
#[derive(PartialEq)]
enum FirstArray {
    /// At this field of the struct (its stored name).
    At(String),
    /// Nowhere: the key is one field of the struct, and not an array.
    None,
    /// Behind a field of another type (`"author.tags"`), or a field this struct does not have:
    /// `Schema::build` decides, from the composed validator.
    Unknown,
}

fn first_array(cont: &Container, key: &IndexKey) -> FirstArray {
    let field = match &key.field {
        KeyField::Rust(_) => super::rust_field(cont, &key.field),
        KeyField::Path(lit) => {
            let path = lit.value();
            let first = path.split('.').next().unwrap_or_default().to_owned();
            let field = field_groups(cont)
                .into_iter()
                .flatten()
                .find(|f| f.is_stored() && f.stored_name == first);
            match field {
                Some(f) if !path.contains('.') || super::is_array_field(f) => Some(f),
                _ => return FirstArray::Unknown,
            }
        }
        KeyField::Nested(_) => return FirstArray::Unknown, // refused by `resolve_key`
    };
    match field {
        Some(f) if super::is_array_field(f) => FirstArray::At(f.stored_name.clone()),
        Some(_) => FirstArray::None,
        None => FirstArray::Unknown,
    }
}

/// mongod (`btree_key_generator.cpp`, `BtreeKeyGenerator::_getKeysWithArray`): the keys of one
/// index may cross one array of a document, not two: "cannot index parallel arrays"
/// (CannotIndexParallelArrays, 171) on every insert or update of a document that holds both
/// (an empty array too). Two keys whose first arrays are different fields of this struct are
/// such a pair for every document; keys under one array (`"items.sku"`, `"items.qty"`), or
/// behind another type, are `Schema::build`'s to decide.
fn check_parallel_arrays(cx: &Ctxt, cont: &Container, keys: &[IndexKey]) {
    let ordered = |key: &&IndexKey| matches!(key.kind, KeyKind::Direction(_));
    // the key's path, as the message names it (with its array when that is a prefix of it)
    let described = |path: &str, array: &str| {
        if path == array {
            format!("`{path}`")
        } else {
            format!("`{path}` (in the array `{array}`)")
        }
    };
    let mut seen: Vec<(String, String)> = Vec::new(); // (array field, the key's path)
    for key in keys.iter().filter(ordered) {
        let FirstArray::At(array) = first_array(cont, key) else {
            continue;
        };
        let path = stored_key(cont, key);
        if let Some((other, first)) = seen.iter().find(|(other, _)| *other != array) {
            cx.error_spanned_by(
                key.field.tokens(),
                format!(
                    "mongod cannot index parallel arrays (CannotIndexParallelArrays, 171): {} and {} are \
                     both arrays; mongod refuses every insert or update of a document that holds both \
                     under one index: keep one array in this index and index `{path}` in an index of its \
                     own (a query on both is served by one and filters the other)",
                    described(first, other),
                    described(&path, &array),
                ),
            );
            continue;
        }
        seen.push((array, path));
    }
}

/// mongod refuses two indexes of one collection with the same name and different keys. A name the
/// user declares must not be the default name (`field_1_other_-1`) of another index the derive
/// sees: a declared index without `name`, or an index a relationship requires that no declared
/// index already covers.
fn check_index_names(cx: &Ctxt, cont: &Container) {
    // default name -> (keys, what the index is for)
    let mut derived: BTreeMap<String, (Vec<(String, String)>, String)> = BTreeMap::new();
    let mut declared_keys: Vec<Vec<(String, String)>> = Vec::new();
    for index in &cont.attrs.indexes {
        let Some(keys) = &index.value.keys else {
            continue;
        };
        let keys = stored_keys(cont, &keys.value);
        if index.value.name.is_none() {
            let what = format!("the index on `{}`", show_keys(&keys));
            derived
                .entry(default_name(&keys))
                .or_insert((keys.clone(), what));
        }
        declared_keys.push(keys);
    }
    for (keys, what) in required_indexes(cont) {
        let covered = declared_keys
            .iter()
            .any(|declared| declared.starts_with(&keys));
        if !covered {
            derived.entry(default_name(&keys)).or_insert((keys, what));
        }
    }
    for index in &cont.attrs.indexes {
        let (Some(name), Some(keys)) = (&index.value.name, &index.value.keys) else {
            continue;
        };
        let keys = stored_keys(cont, &keys.value);
        let Some((other, what)) = derived.get(&name.value) else {
            continue;
        };
        if *other == keys {
            continue; // the same index, merged by `CollectionSpec::index`
        }
        cx.error_spanned_by(
            &name.tokens,
            format!(
                "index name \"{}\" is the name mongod gives {what}, and this index is on `{}`: mongod refuses \
                 two indexes with one name and different keys (\"An existing index has the same name as the \
                 requested index\"); choose another `name`",
                name.value,
                show_keys(&keys),
            ),
        );
    }
}

/// The single-key indexes the relationships of this collection ask for (see
/// `CollectionSpec::reference` and `CollectionSpec::copy`), with what they serve.
fn required_indexes(cont: &Container) -> Vec<(Vec<(String, String)>, String)> {
    let mut out = Vec::new();
    if let Some(shard_key) = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.shard_key.as_ref())
    {
        out.push((
            stored_keys(cont, &shard_key.value),
            "the shard key's index".to_owned(),
        ));
    }
    for field in cont.stored_fields() {
        if let Some(shape) = field.reference_shape() {
            if shape.kind != RefKind::Many {
                out.push((
                    vec![(field.stored_name.clone(), "1".to_owned())],
                    format!(
                        "the index the `#[reference]` field `{}` needs",
                        field.display_name()
                    ),
                ));
            }
        }
        if let Some(extended) = &field.attrs.extended_ref {
            if extended.value.sync.is_some_and(|s| s != Sync::Frozen) {
                out.push((
                    vec![(format!("{}._id", field.stored_name), "1".to_owned())],
                    format!(
                        "the fan-out index the `#[extended_ref]` field `{}` needs",
                        field.display_name()
                    ),
                ));
            }
        }
    }
    out
}

fn stored_keys(cont: &Container, keys: &[IndexKey]) -> Vec<(String, String)> {
    keys.iter()
        .map(|key| {
            let kind = match &key.kind {
                KeyKind::Direction(d) => d.to_string(),
                KeyKind::Special(s) => s.clone(),
            };
            (stored_key(cont, key), kind)
        })
        .collect()
}

/// The name mongod gives an index created without one (as `schema-core`'s `default_name`).
fn default_name(keys: &[(String, String)]) -> String {
    keys.iter()
        .map(|(field, kind)| format!("{field}_{kind}"))
        .collect::<Vec<_>>()
        .join("_")
}

fn show_keys(keys: &[(String, String)]) -> String {
    let pairs: Vec<String> = keys
        .iter()
        .map(|(field, kind)| match kind.parse::<i32>() {
            Ok(direction) => format!("{field}: {direction}"),
            Err(_) => format!("{field}: \"{kind}\""),
        })
        .collect();
    format!("{{{}}}", pairs.join(", "))
}

fn is_special(key: &IndexKey, kind: &str) -> bool {
    matches!(&key.kind, KeyKind::Special(s) if s == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(json: &str) -> Option<String> {
        let Value::Object(filter) = serde_json::from_str(json).unwrap() else {
            panic!("not a document: {json}");
        };
        filter_problem(&filter).map(|(what, _)| what)
    }

    #[test]
    fn partial_filters_mongod_accepts() {
        for json in [
            r#"{"status": "open"}"#,
            r#"{"status": {"$eq": "open"}, "n": {"$gt": 1, "$lte": 5}}"#,
            r#"{"a": {"$exists": true}, "b": {"$type": "string"}, "c": {"$in": [1, 2]}}"#,
            r#"{"$and": [{"a": 1}, {"$or": [{"b": {"$lt": 2}}, {"c": {"$gte": 3}}]}]}"#,
            r#"{"owner": {"$oid": "65a000000000000000000000"}}"#,
            r#"{"at": {"$gt": {"$date": "2024-01-01T00:00:00Z"}}}"#,
            r#"{"device": {"os": "linux"}}"#,
        ] {
            assert_eq!(problem(json), None, "{json}");
        }
    }

    #[test]
    fn partial_filters_mongod_refuses() {
        let cases = [
            (r#"{"a": {"$ne": 1}}"#, "`$ne`"),
            (r#"{"a": {"$exists": false}}"#, "`$exists: false`"),
            (r#"{"a": {"$exists": 0}}"#, "`$exists: 0`"),
            (r#"{"$or": [{"a": 1}, {"b": {"$nin": [1]}}]}"#, "`$nin`"),
            (
                r#"{"$and": [{"$or": [{"a": {"$regex": "x"}}]}]}"#,
                "`$regex`",
            ),
            (r#"{"$nor": [{"a": 1}]}"#, "`$nor`"),
            (r#"{"$expr": {"$gt": ["$a", 1]}}"#, "`$expr`"),
            (
                r#"{"a": {"$regularExpression": {"pattern": "x", "options": ""}}}"#,
                "a regular expression",
            ),
            (
                r#"{"$or": {"a": 1}}"#,
                "`$or` with a value that is not an array",
            ),
        ];
        for (json, expected) in cases {
            assert_eq!(problem(json).as_deref(), Some(expected), "{json}");
        }
    }

    #[test]
    fn default_names_match_the_server() {
        let keys = [
            ("team".to_owned(), "1".to_owned()),
            ("at".to_owned(), "-1".to_owned()),
            ("body".to_owned(), "text".to_owned()),
        ];
        assert_eq!(default_name(&keys), "team_1_at_-1_body_text");
        assert_eq!(show_keys(&keys), "{team: 1, at: -1, body: \"text\"}");
    }
}
