//! Building, comparing and checking `$jsonSchema` documents.

mod check;
pub(crate) mod compose;

use mongodb::bson::{doc, Bson, Document};

pub(crate) use check::validator_problems;

/// Lets `null` through as well: `bsonType` becomes a list with `"null"`, an `enum` gains `null`,
/// and anything else is wrapped in `anyOf`.
pub fn nullable(mut schema: Document) -> Document {
    if schema.is_empty() {
        return schema; // already accepts anything
    }
    if let Some(Bson::Array(values)) = schema.get_mut("enum") {
        if !values.contains(&Bson::Null) {
            values.push(Bson::Null);
        }
    }
    match schema.get("bsonType").cloned() {
        Some(Bson::String(ty)) if ty != "null" => {
            schema.insert("bsonType", vec![Bson::String(ty), Bson::from("null")]);
            schema
        }
        Some(Bson::Array(mut types)) => {
            if !types.contains(&Bson::from("null")) {
                types.push(Bson::from("null"));
            }
            schema.insert("bsonType", types);
            schema
        }
        Some(_) => schema,
        None if schema.contains_key("enum") => schema,
        None => doc! { "anyOf": [schema, { "bsonType": "null" }] },
    }
}

/// The schema without its `null`: what `nullable` added is taken away (an `Option` that serde
/// skips when `None` is never stored as `null`).
pub fn not_null(mut schema: Document) -> Document {
    if let Some(Bson::Array(types)) = schema.get("bsonType") {
        let kept: Vec<Bson> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        match kept.as_slice() {
            [one] => schema.insert("bsonType", one.clone()),
            _ => schema.insert("bsonType", kept),
        };
        if let Some(Bson::Array(values)) = schema.get_mut("enum") {
            values.retain(|v| *v != Bson::Null);
        }
        return schema;
    }
    if schema.len() == 1 {
        if let Ok(branches) = schema.get_array("anyOf") {
            let null = doc! { "bsonType": "null" };
            let kept: Vec<&Document> = branches
                .iter()
                .filter_map(Bson::as_document)
                .filter(|b| **b != null)
                .collect();
            if let [only] = kept.as_slice() {
                return (*only).clone();
            }
        }
    }
    schema
}

/// `{ bsonType: "array", minItems?, maxItems, items }`.
pub(crate) fn array(items: Document, min: Option<u64>, max: u64) -> Document {
    let mut schema = doc! { "bsonType": "array" };
    if let Some(min) = min {
        schema.insert("minItems", min as i64);
    }
    schema.insert("maxItems", max as i64);
    schema.insert("items", items);
    schema
}

/// Adds scalar constraints to a field schema. Constraints on an array or map apply to its
/// elements (`#[schema(max_length = 32)]` on `Vec<String>` bounds each string), and on a nullable
/// `anyOf` to its non-null branch.
pub fn constrain(mut schema: Document, constraints: &[(&str, Bson)]) -> Document {
    if constraints.is_empty() {
        return schema;
    }
    let is_type = |schema: &Document, name: &str| match schema.get("bsonType") {
        Some(Bson::String(ty)) => ty == name,
        Some(Bson::Array(types)) => types.iter().any(|ty| ty.as_str() == Some(name)),
        _ => false,
    };
    if is_type(&schema, "array") {
        if let Some(Bson::Document(items)) = schema.remove("items") {
            schema.insert("items", constrain(items, constraints));
            return schema;
        }
    }
    if is_type(&schema, "object") {
        if let Some(Bson::Document(values)) = schema.remove("additionalProperties") {
            schema.insert("additionalProperties", constrain(values, constraints));
            return schema;
        }
    }
    if let Some(Bson::Array(branches)) = schema.remove("anyOf") {
        let branches: Vec<Bson> = branches
            .into_iter()
            .map(|branch| match branch {
                Bson::Document(d) if d != doc! { "bsonType": "null" } => {
                    Bson::Document(constrain(d, constraints))
                }
                other => other,
            })
            .collect();
        schema.insert("anyOf", branches);
        return schema;
    }
    for (keyword, value) in constraints {
        schema.insert(*keyword, value.clone());
    }
    schema
}

/// Equality of two validators or index options as the server means them: the order of a
/// document's fields does not matter, numbers compare by value whatever their BSON type, and
/// arrays compare in order.
pub(crate) fn same(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(a), Bson::Document(b)) => same_document(a, b),
        (Bson::Array(a), Bson::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        _ => match (number(a), number(b)) {
            (Some(a), Some(b)) => a == b,
            _ => a == b,
        },
    }
}

/// Order-insensitive, numerically normalised document equality (see [`same`]).
pub(crate) fn same_document(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(key, value)| b.get(key).is_some_and(|other| same(value, other)))
}

/// Ordered equality with numeric normalisation: index keys are ordered.
pub(crate) fn same_ordered(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b.iter())
            .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
}

fn number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(v) => Some(f64::from(*v)),
        Bson::Int64(v) => Some(*v as f64),
        Bson::Double(v) => Some(*v),
        _ => None,
    }
}

/// One shape a document schema allows (see [`kinds`]).
pub(crate) struct Kind<'a> {
    /// The tag that names it: a property whose schema is a one-value `enum` (`kind`, `"login"`).
    pub tag: Option<(String, String)>,
    /// Its schema.
    pub schema: &'a Document,
}

impl Kind<'_> {
    /// `kind = "login"`, for reports.
    pub fn label(&self) -> Option<String> {
        self.tag
            .as_ref()
            .map(|(name, value)| format!("{name} = \"{value}\""))
    }
}

/// The shapes a document schema allows: one per `oneOf`/`anyOf` branch of a whole-document enum
/// or a flattened enum (each with its tag, when a property of the branch is a single-value
/// `enum`), or the schema itself.
pub(crate) fn kinds(schema: &Document) -> Vec<Kind<'_>> {
    let branches = schema
        .get_array("oneOf")
        .or_else(|_| schema.get_array("anyOf"))
        .ok()
        .filter(|_| !schema.contains_key("properties"));
    let whole = || vec![Kind { tag: None, schema }];
    let Some(branches) = branches else {
        return whole();
    };
    let objects: Vec<&Document> = branches.iter().filter_map(Bson::as_document).collect();
    if !objects.iter().all(|b| b.contains_key("properties")) {
        return whole();
    }
    objects
        .into_iter()
        .map(|branch| {
            let tag = branch.get_document("properties").ok().and_then(|p| {
                p.iter().find_map(|(name, property)| {
                    let values = property.as_document()?.get_array("enum").ok()?;
                    match values.as_slice() {
                        [Bson::String(kind)] => Some((name.clone(), kind.clone())),
                        _ => None,
                    }
                })
            });
            Kind {
                tag,
                schema: branch,
            }
        })
        .collect()
}

/// The labels of the kinds of document a validator (`{ $jsonSchema: ... }`) allows
/// (`kind = "login"`), when there are several.
pub(crate) fn kind_labels(validator: &Document) -> Vec<String> {
    let Ok(schema) = validator.get_document("$jsonSchema") else {
        return Vec::new();
    };
    let labels: Vec<String> = kinds(schema).iter().filter_map(Kind::label).collect();
    if labels.len() > 1 {
        labels
    } else {
        Vec::new()
    }
}

/// Whether a dotted path (`customer._id`, `parts.name`) names a property of the schema,
/// looking through arrays into their items and through `anyOf` branches.
pub(crate) fn has_path(schema: &Document, path: &str) -> bool {
    let mut current = vec![schema.clone()];
    for segment in path.split('.') {
        let mut next = Vec::new();
        for schema in expand(current) {
            if let Ok(properties) = schema.get_document("properties") {
                if let Ok(property) = properties.get_document(segment) {
                    next.push(property.clone());
                }
            }
            // a map (additionalProperties schema) accepts any key
            if let Ok(values) = schema.get_document("additionalProperties") {
                next.push(values.clone());
            }
        }
        if next.is_empty() {
            return false;
        }
        current = next;
    }
    true
}

/// The stored path nearest to `path`, which `has_path` refused: the same path with its first
/// unknown segment replaced by the stored name it most likely means (the Rust name of a field
/// stored under another case, `created_at` for `createdAt`, or a misspelling of one or two
/// letters); `None` when no name is near.
pub(crate) fn nearest_path(schema: &Document, path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split('.').collect();
    let mut current = vec![schema.clone()];
    for (i, segment) in segments.iter().enumerate() {
        let mut next = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for schema in expand(current) {
            if let Ok(properties) = schema.get_document("properties") {
                names.extend(properties.keys().cloned());
                if let Ok(property) = properties.get_document(segment) {
                    next.push(property.clone());
                }
            }
            if let Ok(values) = schema.get_document("additionalProperties") {
                next.push(values.clone());
            }
        }
        if next.is_empty() {
            let fixed = nearest_name(segment, &names)?;
            let mut out: Vec<&str> = segments[..i].to_vec();
            out.push(fixed);
            out.extend(&segments[i + 1..]);
            return Some(out.join("."));
        }
        current = next;
    }
    None
}

/// The name of `names` that `wanted` most likely means: equal once case and `_` are ignored
/// (a Rust name against its `rename_all` form), else within two edits.
fn nearest_name<'a>(wanted: &str, names: &'a [String]) -> Option<&'a str> {
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let folded = fold(wanted);
    if let Some(name) = names.iter().find(|n| fold(n) == folded) {
        return Some(name);
    }
    names
        .iter()
        .map(|n| (edit_distance(wanted, n), n))
        .filter(|(d, n)| *d <= 2 && *d < n.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.as_str())
}

/// Levenshtein distance, by characters (also the keyword suggestions of `check`).
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The schemas a dotted path leads to (through arrays, `anyOf` branches and maps), each with
/// whether the path crossed an array on the way (a multikey path), or ended on one.
pub(crate) fn schemas_at(schema: &Document, path: &str) -> Vec<(Document, bool)> {
    let mut current = vec![(schema.clone(), false)];
    for segment in path.split('.') {
        let mut next = Vec::new();
        for (schema, multikey) in current {
            for (schema, array) in expand_marked(schema) {
                let multikey = multikey || array;
                if let Ok(properties) = schema.get_document("properties") {
                    if let Ok(property) = properties.get_document(segment) {
                        next.push((property.clone(), multikey));
                    }
                }
                if let Ok(values) = schema.get_document("additionalProperties") {
                    next.push((values.clone(), multikey));
                }
            }
        }
        current = next;
    }
    current
        .into_iter()
        .flat_map(|(schema, multikey)| {
            let array = is_array(&schema);
            expand_marked(schema)
                .into_iter()
                .map(move |(s, a)| (s, multikey || array || a))
        })
        .collect()
}

/// The prefixes of a dotted path (the path itself included) at which `schema` may hold an
/// array, shortest first: `["lines"]` for `lines.sku` when `lines` is an array of documents.
pub(crate) fn array_prefixes(schema: &Document, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = vec![schema.clone()];
    let mut prefix = String::new();
    for segment in path.split('.') {
        let mut next = Vec::new();
        for schema in expand(current) {
            if let Ok(property) = schema
                .get_document("properties")
                .and_then(|properties| properties.get_document(segment))
            {
                next.push(property.clone());
            }
            if let Ok(values) = schema.get_document("additionalProperties") {
                next.push(values.clone());
            }
        }
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(segment);
        if next.iter().any(|s| alternatives(s).iter().any(is_array)) {
            out.push(prefix.clone());
        }
        current = next;
    }
    out
}

/// A schema and its `anyOf`/`oneOf` branches (not its array `items`).
fn alternatives(schema: &Document) -> Vec<Document> {
    let mut out = Vec::new();
    let mut stack = vec![schema.clone()];
    while let Some(schema) = stack.pop() {
        for keyword in ["anyOf", "oneOf"] {
            if let Ok(branches) = schema.get_array(keyword) {
                stack.extend(branches.iter().filter_map(|b| b.as_document().cloned()));
            }
        }
        out.push(schema);
    }
    out
}

fn is_array(schema: &Document) -> bool {
    schema.contains_key("items")
        || match schema.get("bsonType") {
            Some(Bson::String(t)) => t == "array",
            Some(Bson::Array(types)) => types.iter().any(|t| t.as_str() == Some("array")),
            _ => false,
        }
}

/// [`expand`], marking the schemas reached through an array's `items`.
fn expand_marked(schema: Document) -> Vec<(Document, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![(schema, false)];
    while let Some((schema, array)) = stack.pop() {
        for keyword in ["anyOf", "oneOf"] {
            if let Ok(branches) = schema.get_array(keyword) {
                stack.extend(
                    branches
                        .iter()
                        .filter_map(|b| b.as_document().cloned())
                        .map(|b| (b, array)),
                );
            }
        }
        if let Ok(items) = schema.get_document("items") {
            stack.push((items.clone(), true));
        }
        out.push((schema, array));
    }
    out
}

/// Looks through `anyOf`/`oneOf` branches and array `items`, which are transparent to a dotted
/// path.
pub(crate) fn expand(schemas: Vec<Document>) -> Vec<Document> {
    let mut out = Vec::new();
    let mut stack = schemas;
    while let Some(schema) = stack.pop() {
        for keyword in ["anyOf", "oneOf"] {
            if let Ok(branches) = schema.get_array(keyword) {
                stack.extend(branches.iter().filter_map(|b| b.as_document().cloned()));
            }
        }
        if let Ok(items) = schema.get_document("items") {
            stack.push(items.clone());
        }
        out.push(schema);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_stored_path_is_the_rust_name_refolded_or_a_near_spelling() {
        let schema = doc! { "bsonType": "object", "properties": {
            "createdAt": { "bsonType": "date" },
            "status": { "bsonType": "string" },
            "owner": { "bsonType": "object", "properties": { "displayName": { "bsonType": "string" } } },
        } };
        assert_eq!(
            nearest_path(&schema, "created_at").as_deref(),
            Some("createdAt")
        );
        assert_eq!(nearest_path(&schema, "stauts").as_deref(), Some("status"));
        assert_eq!(
            nearest_path(&schema, "owner.display_name").as_deref(),
            Some("owner.displayName")
        );
        assert_eq!(nearest_path(&schema, "priority"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn not_null_takes_back_what_nullable_added() {
        for schema in [
            doc! { "bsonType": "objectId" },
            doc! { "bsonType": "string", "enum": ["a"] },
            doc! { "oneOf": [{ "bsonType": "int" }, { "bsonType": "string" }] },
        ] {
            assert_eq!(not_null(nullable(schema.clone())), schema);
        }
        assert_eq!(
            not_null(doc! { "bsonType": ["int", "string", "null"] }),
            doc! { "bsonType": ["int", "string"] }
        );
    }

    #[test]
    fn nullable_forms() {
        assert_eq!(
            nullable(doc! { "bsonType": "string", "enum": ["a"] }),
            doc! { "bsonType": ["string", "null"], "enum": ["a", null] }
        );
        assert_eq!(
            nullable(doc! { "anyOf": [{ "bsonType": "int" }] }),
            doc! { "anyOf": [{ "anyOf": [{ "bsonType": "int" }] }, { "bsonType": "null" }] }
        );
        assert_eq!(nullable(doc! {}), doc! {});
        assert_eq!(
            nullable(doc! { "bsonType": ["int", "null"] }),
            doc! { "bsonType": ["int", "null"] }
        );
    }

    #[test]
    fn constraints_reach_array_items() {
        let schema = array(doc! { "bsonType": "string" }, None, 3);
        let schema = constrain(schema, &[("maxLength", Bson::Int64(8))]);
        assert_eq!(
            schema.get_document("items").unwrap(),
            &doc! { "bsonType": "string", "maxLength": 8_i64 }
        );
    }

    #[test]
    fn sameness_ignores_field_order_and_number_types() {
        let a = doc! { "a": 1_i32, "b": { "c": [1_i64, 2.0] } };
        let b = doc! { "b": { "c": [1.0, 2_i32] }, "a": 1_i64 };
        assert!(same_document(&a, &b));
        assert!(!same_ordered(&a, &b));
        assert!(!same_document(&a, &doc! { "a": 1 }));
        assert!(!same(&Bson::from(vec![1, 2]), &Bson::from(vec![2, 1])));
    }

    #[test]
    fn paths_through_arrays_and_options() {
        let schema = doc! { "bsonType": "object", "properties": {
            "customer": { "anyOf": [{ "bsonType": "object", "properties": { "_id": {} } }, { "bsonType": "null" }] },
            "parts": { "bsonType": "array", "items": { "bsonType": "object", "properties": { "name": {} } } },
        } };
        assert!(has_path(&schema, "customer._id"));
        assert!(has_path(&schema, "parts.name"));
        assert!(!has_path(&schema, "parts.weight"));
        assert!(!has_path(&schema, "nope"));
    }
}
