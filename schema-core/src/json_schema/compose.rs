//! The `$jsonSchema` of the shapes serde writes: structs (with flattened parts), tuple structs
//! and enums in serde's four representations. The derives call these builders from generated
//! code (through `__private`); what they produce is checked by `Schema::build` like any other
//! validator.
//!
//! A shape that serde itself cannot write, or two flattened parts that store one name, is found
//! only here (the derive does not see the types of flattened or wrapped values). It becomes the
//! keyword [`PROBLEM`] in the schema, which `Schema::build` reports as an error with its sentence
//! and mongod's parser refuses as an unknown keyword: never a wrong validator.

use mongodb::bson::{doc, Bson, Document};

/// The keyword under which a schema carries the sentence saying why it cannot describe the stored
/// shape. Not a mongod keyword: a validator holding it is refused by the server as well.
pub const PROBLEM: &str = "__mongo_schema_problem";

fn problem(text: String) -> Document {
    doc! { PROBLEM: text }
}

/// One alternative of an object: its properties and the names that are required.
#[derive(Clone, Default)]
struct Alternative {
    properties: Document,
    required: Vec<String>,
    /// A flattened bounded map: the schema of its values and its bound.
    rest: Option<(Document, u64)>,
}

impl Alternative {
    fn merge(&self, other: &Alternative, problems: &mut Vec<String>) -> Alternative {
        let mut merged = self.clone();
        for (name, schema) in &other.properties {
            if merged.properties.contains_key(name) {
                let text = format!(
                    "two parts of the document store the field `{name}` (a flattened value holds a field of the same name)"
                );
                if !problems.contains(&text) {
                    problems.push(text);
                }
                continue;
            }
            merged.properties.insert(name.clone(), schema.clone());
        }
        merged.required.extend(other.required.iter().cloned());
        match (&merged.rest, &other.rest) {
            (Some(_), Some(_)) => {
                let text = "two flattened maps would store their entries at the same level, and a validator cannot tell which entry belongs to which map".to_owned();
                if !problems.contains(&text) {
                    problems.push(text);
                }
            }
            (None, Some(rest)) => merged.rest = Some(rest.clone()),
            _ => {}
        }
        merged
    }
}

/// Builds the `$jsonSchema` of a struct, or of a struct variant.
pub struct ObjectSchema {
    /// One element unless a flattened enum made the object one of several shapes.
    alternatives: Vec<Alternative>,
    /// `anyOf` rather than `oneOf` between the alternatives (an untagged flattened enum).
    overlapping: bool,
    closed: bool,
    root: bool,
    problems: Vec<String>,
}

impl Default for ObjectSchema {
    fn default() -> Self {
        ObjectSchema {
            alternatives: vec![Alternative::default()],
            overlapping: false,
            closed: false,
            root: false,
            problems: Vec::new(),
        }
    }
}

/// Starts the schema of a struct.
pub fn object() -> ObjectSchema {
    ObjectSchema::default()
}

/// The parts of a schema that a flattened value adds to its parent, or why it adds none.
fn flattened_parts(schema: &Document) -> Result<(Vec<Alternative>, bool), String> {
    if let Ok(text) = schema.get_str(PROBLEM) {
        return Err(text.to_owned());
    }
    for (keyword, overlapping) in [("oneOf", false), ("anyOf", true)] {
        if let Ok(branches) = schema.get_array(keyword) {
            if schema.contains_key("properties") {
                break;
            }
            let null = doc! { "bsonType": "null" };
            let mut out = Vec::new();
            let mut any = overlapping;
            let mut optional = false;
            for branch in branches.iter().filter_map(Bson::as_document) {
                if *branch == null {
                    optional = true; // `Option<T>` flattened: `None` writes nothing
                    continue;
                }
                let (parts, overlap) = flattened_parts(branch)?;
                any |= overlap;
                out.extend(parts);
            }
            if optional {
                out.iter_mut().for_each(|a| a.required.clear());
            }
            return Ok((out, any));
        }
    }
    let types: Vec<&str> = match schema.get("bsonType") {
        Some(Bson::String(t)) => vec![t.as_str()],
        Some(Bson::Array(ts)) => ts.iter().filter_map(Bson::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.contains(&"object") {
        return Err(format!(
            "a flattened value must be stored as a document, and this one is stored as {}",
            if types.is_empty() {
                "a value of any type".to_owned()
            } else {
                format!("`{}`", types.join("` or `"))
            }
        ));
    }
    let optional = types.contains(&"null");
    let mut alternative = Alternative {
        properties: schema
            .get_document("properties")
            .cloned()
            .unwrap_or_default(),
        required: if optional {
            Vec::new()
        } else {
            schema
                .get_array("required")
                .map(|r| {
                    r.iter()
                        .filter_map(Bson::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        },
        rest: None,
    };
    if let Ok(values) = schema.get_document("additionalProperties") {
        let max = match schema.get("maxProperties") {
            Some(Bson::Int64(n)) => *n as u64,
            Some(Bson::Int32(n)) => *n as u64,
            _ => {
                return Err(
                    "a flattened map needs its bound: `#[embed(max = N)]` on the map field"
                        .to_owned(),
                )
            }
        };
        alternative.rest = Some((values.clone(), max));
    }
    Ok((vec![alternative], false))
}

impl ObjectSchema {
    /// Adds a stored field.
    pub fn property(mut self, name: &str, schema: Document, required: bool) -> Self {
        let added = Alternative {
            properties: doc! { name: schema },
            required: if required {
                vec![name.to_owned()]
            } else {
                Vec::new()
            },
            rest: None,
        };
        self.alternatives = self
            .alternatives
            .iter()
            .map(|a| a.merge(&added, &mut self.problems))
            .collect();
        self
    }

    /// Adds the fields of a `#[serde(flatten)]` value whose schema is `schema`: a struct's
    /// properties, one alternative per variant of an enum, or a bounded map's values.
    pub fn flatten(mut self, schema: Document) -> Self {
        match flattened_parts(&schema) {
            Ok((parts, overlapping)) => {
                let mut next = Vec::new();
                for mine in &self.alternatives {
                    for part in &parts {
                        next.push(mine.merge(part, &mut self.problems));
                    }
                }
                self.alternatives = next;
                self.overlapping |= overlapping;
            }
            Err(text) => self.problems.push(text),
        }
        self
    }

    /// `additionalProperties: false`; a root without an `_id` field still admits the
    /// server-generated `_id`.
    pub fn deny_additional(mut self, collection_root: bool) -> Self {
        self.closed = true;
        self.root |= collection_root;
        self
    }

    /// The schema of a collection root: a flattened map leaves room for the server's `_id`.
    pub fn root(mut self) -> Self {
        self.root = true;
        self
    }

    /// The finished schema.
    pub fn build(self) -> Document {
        if !self.problems.is_empty() {
            return problem(self.problems.join("; "));
        }
        let mut schemas: Vec<Document> = self
            .alternatives
            .iter()
            .map(|a| self.alternative_schema(a))
            .collect();
        if schemas.len() == 1 {
            return schemas.remove(0);
        }
        let keyword = if self.overlapping { "anyOf" } else { "oneOf" };
        doc! { "bsonType": "object", keyword: schemas }
    }

    fn alternative_schema(&self, alternative: &Alternative) -> Document {
        let mut properties = alternative.properties.clone();
        // a root without `_id` gets the server's ObjectId, which neither `false` nor the values
        // of a flattened map describe
        let admits_others = !self.closed && alternative.rest.is_none();
        if self.root && !admits_others && !properties.contains_key("_id") {
            properties.insert("_id", doc! { "bsonType": "objectId" });
        }
        let mut schema = doc! { "bsonType": "object" };
        if !alternative.required.is_empty() {
            schema.insert("required", alternative.required.clone());
        }
        let count = properties.len() as u64;
        schema.insert("properties", properties);
        match &alternative.rest {
            Some((values, max)) => {
                schema.insert("additionalProperties", values.clone());
                schema.insert("maxProperties", (count + max) as i64);
            }
            None if self.closed => {
                schema.insert("additionalProperties", false);
            }
            None => {}
        }
        schema
    }
}

/// The schema of a tuple struct or tuple variant: an array of exactly these items, in order.
pub fn tuple(items: Vec<Document>) -> Document {
    let n = items.len() as i64;
    doc! {
        "bsonType": "array",
        "minItems": n,
        "maxItems": n,
        "items": items,
        "additionalItems": false,
    }
}

/// How serde stores an enum (`#[serde(tag, content, untagged)]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tagging {
    /// serde's default: `{ "Variant": content }`, a unit variant as the string `"Variant"`.
    External,
    /// `tag = "t"`: `{ t: "Variant", ...fields }`.
    Internal(&'static str),
    /// `tag = "t", content = "c"`: `{ t: "Variant", c: content }`.
    Adjacent(&'static str, &'static str),
    /// `untagged`: the content alone.
    Untagged,
}

/// One stored variant of an enum.
pub struct VariantSchema {
    /// The stored name.
    pub name: &'static str,
    /// The schema of the content: `None` for a unit variant.
    pub content: Option<Document>,
    /// `#[serde(untagged)]` on the variant: stored as its content alone.
    pub untagged: bool,
}

/// The schema of the tag's value: this one name.
fn tag_value(name: &str) -> Document {
    doc! { "bsonType": "string", "enum": [name] }
}

/// The schema of an enum stored as `tagging` says: one branch per variant, under `oneOf` where
/// the tags keep the branches apart and `anyOf` where nothing does (untagged variants). `closed`
/// (`additional_properties = false`) closes every object branch; `root` says the enum is a whole
/// document, whose branches admit the server's `_id` when closed.
pub fn enum_schema(
    tagging: Tagging,
    variants: Vec<VariantSchema>,
    closed: bool,
    root: bool,
) -> Document {
    let mut branches: Vec<Document> = Vec::new();
    let mut overlapping = false;
    let mut units: Vec<Bson> = Vec::new();
    let finish = |object: ObjectSchema| {
        if closed {
            object.deny_additional(root).build()
        } else if root {
            object.root().build()
        } else {
            object.build()
        }
    };
    for variant in variants {
        let name = variant.name;
        if variant.untagged || tagging == Tagging::Untagged {
            overlapping = true;
            branches.push(
                variant
                    .content
                    .unwrap_or_else(|| doc! { "bsonType": "null" }),
            );
            continue;
        }
        let branch = match (tagging, variant.content) {
            (Tagging::External, None) => {
                units.push(Bson::from(name));
                continue;
            }
            (Tagging::External, Some(content)) => object()
                .property(name, content, true)
                .deny_additional(false)
                .build(),
            (Tagging::Internal(tag), None) => finish(object().property(tag, tag_value(name), true)),
            (Tagging::Internal(tag), Some(content)) => {
                let object = object().property(tag, tag_value(name), true);
                if content.contains_key(PROBLEM) || is_object_like(&content) {
                    finish(object.flatten(content))
                } else {
                    problem(format!(
                        "variant `{name}` is internally tagged (`tag = \"{tag}\"`) and holds a value that is not stored as a document; serde cannot write it (it fails at run time): wrap the value in a struct variant, or use `tag` with `content`"
                    ))
                }
            }
            (Tagging::Adjacent(tag, _), None) => object()
                .property(tag, tag_value(name), true)
                .deny_additional(false)
                .build(),
            (Tagging::Adjacent(tag, content_key), Some(content)) => object()
                .property(tag, tag_value(name), true)
                .property(content_key, content, true)
                .deny_additional(false)
                .build(),
            (Tagging::Untagged, _) => unreachable!("handled above"),
        };
        branches.push(branch);
    }
    if !units.is_empty() {
        branches.insert(0, doc! { "bsonType": "string", "enum": units });
    }
    let problems: Vec<&str> = branches
        .iter()
        .filter_map(|b| b.get_str(PROBLEM).ok())
        .collect();
    if !problems.is_empty() {
        return problem(problems.join("; "));
    }
    match branches.len() {
        1 => branches.remove(0),
        _ => {
            let keyword = if overlapping { "anyOf" } else { "oneOf" };
            doc! { keyword: branches }
        }
    }
}

/// Whether a schema describes documents only (an object, or a union of objects).
fn is_object_like(schema: &Document) -> bool {
    match schema.get("bsonType") {
        Some(Bson::String(t)) => return t == "object",
        Some(_) => return false,
        None => {}
    }
    ["oneOf", "anyOf"].iter().any(|k| {
        schema.get_array(k).is_ok_and(|branches| {
            branches
                .iter()
                .all(|b| b.as_document().is_some_and(is_object_like))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string() -> Document {
        doc! { "bsonType": "string" }
    }

    #[test]
    fn a_flattened_struct_adds_its_properties_and_required() {
        let inner = object()
            .property("city", string(), true)
            .property("zip", string(), false)
            .build();
        let schema = object()
            .property("name", string(), true)
            .flatten(inner)
            .build();
        assert_eq!(
            schema,
            doc! {
                "bsonType": "object",
                "required": ["name", "city"],
                "properties": { "name": string(), "city": string(), "zip": string() },
            }
        );
    }

    #[test]
    fn a_flattened_option_adds_its_properties_as_optional() {
        let inner = object().property("city", string(), true).build();
        let schema = object()
            .flatten(crate::json_schema::nullable(inner))
            .build();
        assert_eq!(
            schema,
            doc! { "bsonType": "object", "properties": { "city": string() } }
        );
    }

    #[test]
    fn a_flattened_tagged_enum_makes_one_alternative_per_variant() {
        let status = enum_schema(
            Tagging::Internal("status"),
            vec![
                VariantSchema {
                    name: "verified",
                    content: None,
                    untagged: false,
                },
                VariantSchema {
                    name: "pending",
                    content: Some(object().property("token", string(), true).build()),
                    untagged: false,
                },
            ],
            false,
            false,
        );
        let schema = object()
            .property("email", string(), true)
            .flatten(status)
            .deny_additional(true)
            .build();
        let branches = schema.get_array("oneOf").unwrap();
        assert_eq!(branches.len(), 2);
        assert_eq!(
            branches[1].as_document().unwrap(),
            &doc! {
                "bsonType": "object",
                "required": ["email", "status", "token"],
                "properties": {
                    "email": string(),
                    "status": { "bsonType": "string", "enum": ["pending"] },
                    "token": string(),
                    "_id": { "bsonType": "objectId" },
                },
                "additionalProperties": false,
            }
        );
    }

    #[test]
    fn a_flattened_map_bounds_the_rest_of_the_document() {
        let map =
            doc! { "bsonType": "object", "maxProperties": 5_i64, "additionalProperties": string() };
        let schema = object()
            .property("name", string(), true)
            .flatten(map)
            .build();
        assert_eq!(schema.get_i64("maxProperties").ok(), Some(6));
        assert_eq!(
            schema.get_document("additionalProperties").ok(),
            Some(&string())
        );
        let root = object()
            .property("name", string(), true)
            .flatten(doc! { "bsonType": "object", "maxProperties": 5_i64, "additionalProperties": string() })
            .root()
            .build();
        assert_eq!(
            root.get_i64("maxProperties").ok(),
            Some(7),
            "room for the server's _id"
        );
    }

    #[test]
    fn two_parts_storing_one_name_are_a_problem() {
        let inner = object().property("name", string(), true).build();
        let schema = object()
            .property("name", string(), true)
            .flatten(inner)
            .build();
        assert!(schema.get_str(PROBLEM).unwrap().contains("`name`"));
        let scalar = object().flatten(string()).build();
        assert!(scalar.get_str(PROBLEM).unwrap().contains("`string`"));
    }

    #[test]
    fn external_units_share_one_string_branch() {
        let schema = enum_schema(
            Tagging::External,
            vec![
                VariantSchema {
                    name: "Open",
                    content: None,
                    untagged: false,
                },
                VariantSchema {
                    name: "Closed",
                    content: None,
                    untagged: false,
                },
                VariantSchema {
                    name: "Moved",
                    content: Some(string()),
                    untagged: false,
                },
            ],
            false,
            false,
        );
        assert_eq!(
            schema,
            doc! { "oneOf": [
                { "bsonType": "string", "enum": ["Open", "Closed"] },
                { "bsonType": "object", "required": ["Moved"], "properties": { "Moved": string() }, "additionalProperties": false },
            ] }
        );
    }

    #[test]
    fn an_internally_tagged_scalar_is_a_problem() {
        let schema = enum_schema(
            Tagging::Internal("t"),
            vec![VariantSchema {
                name: "A",
                content: Some(string()),
                untagged: false,
            }],
            false,
            false,
        );
        assert!(schema.get_str(PROBLEM).unwrap().contains("`A`"));
    }

    #[test]
    fn untagged_variants_overlap() {
        let schema = enum_schema(
            Tagging::Untagged,
            vec![
                VariantSchema {
                    name: "A",
                    content: Some(string()),
                    untagged: false,
                },
                VariantSchema {
                    name: "B",
                    content: None,
                    untagged: false,
                },
            ],
            false,
            false,
        );
        assert_eq!(schema, doc! { "anyOf": [string(), { "bsonType": "null" }] });
    }

    #[test]
    fn tuples_are_fixed_arrays() {
        assert_eq!(
            tuple(vec![string(), doc! { "bsonType": "int" }]),
            doc! { "bsonType": "array", "minItems": 2_i64, "maxItems": 2_i64, "items": [string(), { "bsonType": "int" }], "additionalItems": false }
        );
    }
}
