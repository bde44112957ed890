//! An existing `$jsonSchema` validator as the starting point: what it declares at a path is kept
//! in the pulled model as declared, so that a pull never tightens what the database accepts
//! today, and the samples narrow only what it leaves open:
//!
//! - the kinds it allows (`bsonType`, `null` included) and whether it requires the field, even
//!   where no stored document uses them;
//! - an object's `additionalProperties` (an object it describes without `false` stays open: the
//!   pulled struct does not say `additional_properties = false`);
//! - an array's `maxItems` (the bound, in place of the observed maximum with headroom) and a
//!   map's `maxProperties`;
//! - a string's `enum` (a unit enum of every declared value, however few the samples);
//! - `maxLength`, `minLength`, `pattern`, `minimum` and `maximum` (`#[schema(...)]`).
//!
//! Paths are read through `properties` of objects, `items` of arrays (`tags[]`) and the
//! non-null branch of an `anyOf` with a `null` one (how `Option<T>` of a struct is stored), not
//! into `oneOf` or other `anyOf`s.

use std::collections::BTreeMap;

use mongodb::bson::{oid::ObjectId, Bson, DateTime, Decimal128, Document};

use crate::lattice::Shape;
use crate::model::Presence;

/// What the validator says of one path.
#[derive(Debug, Clone, PartialEq)]
pub struct Allowed {
    /// `bsonType` names (aliases expanded: `number` is `int`, `long`, `double`, `decimal`);
    /// empty when the validator names none.
    pub kinds: Vec<String>,
    /// In its parent's `required`.
    pub required: bool,
    /// An object's `additionalProperties`: `Some(true)` when it is `false` (closed),
    /// `Some(false)` when the validator describes the object (`properties`) and leaves it open.
    pub closed: Option<bool>,
    /// An array's `maxItems`, or a map's `maxProperties`.
    pub max_items: Option<u64>,
    /// A string `enum` (the `null` it may hold is in [`Allowed::kinds`]).
    pub values: Option<Vec<String>>,
    /// `maxLength`, `minLength`, `pattern`, `minimum`, `maximum`, as declared.
    pub constraints: Vec<(String, Bson)>,
    /// The path is declared with nothing that constrains it (`{}`, or a title alone): the
    /// server takes any value there, as at a path it does not declare.
    pub unconstrained: bool,
    /// The keywords here that constrain documents and that no model attribute says
    /// (`minItems`, `uniqueItems`, `oneOf`...): not kept, so `apply` of the pulled schema no
    /// longer checks them (the report says so).
    pub unkept: Vec<String>,
}

/// The keywords of a (sub)schema that the pulled models keep, or that constrain nothing
/// (`title`, `description`).
const KEPT: &[&str] = &[
    "bsonType",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "maxItems",
    "maxProperties",
    "enum",
    "maxLength",
    "minLength",
    "pattern",
    "minimum",
    "maximum",
    "title",
    "description",
];

/// The keywords kept as `#[schema(...)]` constraints, with the attribute's names.
pub const CONSTRAINTS: &[(&str, &str)] = &[
    ("maxLength", "max_length"),
    ("minLength", "min_length"),
    ("pattern", "pattern"),
    ("minimum", "minimum"),
    ("maximum", "maximum"),
];

/// Every path of `validator` (`{ $jsonSchema }`), dotted from `collection`.
pub fn allowed(collection: &str, validator: &Document) -> BTreeMap<String, Allowed> {
    let mut out = BTreeMap::new();
    if let Ok(schema) = validator.get_document("$jsonSchema") {
        // the root: whether it is closed (its kinds and presence are the collection's)
        out.insert(
            collection.to_owned(),
            Allowed {
                closed: closed(schema),
                ..Allowed::default()
            },
        );
        walk(collection, schema, &mut out);
    }
    out
}

impl Default for Allowed {
    fn default() -> Self {
        Allowed {
            kinds: Vec::new(),
            required: true,
            closed: None,
            max_items: None,
            values: None,
            constraints: Vec::new(),
            unconstrained: false,
            unkept: Vec::new(),
        }
    }
}

/// The branch of `{ anyOf: [schema, { bsonType: "null" }] }` that is not `null` (`Option<T>` of
/// a struct), with whether the `null` branch was there.
fn unwrap_nullable(schema: &Document) -> (&Document, bool) {
    if let Ok(branches) = schema.get_array("anyOf") {
        let null = mongodb::bson::doc! { "bsonType": "null" };
        let others: Vec<&Document> = branches
            .iter()
            .filter_map(Bson::as_document)
            .filter(|b| **b != null)
            .collect();
        if let [only] = others.as_slice() {
            if others.len() + 1 == branches.len() {
                return (only, true);
            }
        }
    }
    (schema, false)
}

/// `Some(true)` for `additionalProperties: false`, `Some(false)` for an object described by
/// `properties` and left open, `None` when the schema describes no object's fields.
fn closed(schema: &Document) -> Option<bool> {
    if !schema.contains_key("properties") {
        return None;
    }
    Some(matches!(
        schema.get("additionalProperties"),
        Some(Bson::Boolean(false))
    ))
}

fn count(value: Option<&Bson>) -> Option<u64> {
    match value? {
        Bson::Int32(n) => u64::try_from(*n).ok(),
        Bson::Int64(n) => u64::try_from(*n).ok(),
        Bson::Double(n) if *n >= 0.0 && n.fract() == 0.0 => Some(*n as u64),
        _ => None,
    }
}

/// What one (sub)schema declares, `required` by its parent or not.
fn declared(schema: &Document, required: bool) -> Allowed {
    let (schema, null) = unwrap_nullable(schema);
    // (an `anyOf` left here is not the nullable one)
    let unkept = schema
        .keys()
        .filter(|k| !KEPT.contains(&k.as_str()))
        .cloned()
        .collect();
    let mut kinds: Vec<String> = match schema.get("bsonType") {
        Some(Bson::String(t)) => vec![t.clone()],
        Some(Bson::Array(ts)) => ts
            .iter()
            .filter_map(Bson::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    if null && !kinds.is_empty() && !kinds.iter().any(|k| k == "null") {
        kinds.push("null".to_owned());
    }
    if let Some(i) = kinds.iter().position(|k| k == "number") {
        kinds.splice(
            i..=i,
            ["int", "long", "double", "decimal"].map(String::from),
        );
    }
    let values = schema.get_array("enum").ok().and_then(|values| {
        let strings: Vec<String> = values
            .iter()
            .filter_map(Bson::as_str)
            .map(str::to_owned)
            .collect();
        // only an enum of strings (and `null`) is a unit enum
        let nulls = values.iter().filter(|v| **v == Bson::Null).count();
        (!strings.is_empty() && strings.len() + nulls == values.len()).then_some(strings)
    });
    if values.is_some() && kinds.is_empty() {
        kinds.push("string".to_owned());
    }
    let enum_null = schema
        .get_array("enum")
        .is_ok_and(|values| values.contains(&Bson::Null));
    if values.is_some() && enum_null && !kinds.iter().any(|k| k == "null") {
        // `enum: ["a", null]` takes `null` whatever `bsonType` it names
        kinds.push("null".to_owned());
    }
    let is_array = kinds.iter().any(|k| k == "array");
    let max_items = if is_array {
        count(schema.get("maxItems"))
    } else {
        count(schema.get("maxProperties"))
    };
    let constraints = CONSTRAINTS
        .iter()
        .filter_map(|(keyword, _)| {
            schema
                .get(*keyword)
                .map(|v| ((*keyword).to_owned(), v.clone()))
        })
        .collect();
    Allowed {
        kinds,
        required,
        closed: closed(schema),
        max_items,
        values,
        constraints,
        unconstrained: !null && schema.keys().all(|k| k == "title" || k == "description"),
        unkept,
    }
}

fn walk(prefix: &str, schema: &Document, out: &mut BTreeMap<String, Allowed>) {
    let (schema, _) = unwrap_nullable(schema);
    if let Ok(items) = schema.get_document("items") {
        let path = format!("{prefix}[]");
        out.insert(path.clone(), declared(items, true));
        walk(&path, items, out);
    }
    let Ok(properties) = schema.get_document("properties") else {
        return;
    };
    let required: Vec<&str> = schema
        .get_array("required")
        .map(|r| r.iter().filter_map(Bson::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        let Some(property) = property.as_document() else {
            continue;
        };
        let path = format!("{prefix}.{name}");
        out.insert(
            path.clone(),
            declared(property, required.contains(&name.as_str())),
        );
        walk(&path, property, out);
    }
}

/// A value of a kind, to join into a shape the kind it lacks.
fn example(kind: &str) -> Option<Bson> {
    Some(match kind {
        "int" => Bson::Int32(0),
        "long" => Bson::Int64(0),
        "double" => Bson::Double(0.5),
        "decimal" => Bson::Decimal128("0".parse::<Decimal128>().ok()?),
        "string" => Bson::String(String::new()),
        "bool" => Bson::Boolean(false),
        "date" => Bson::DateTime(DateTime::from_millis(0)),
        "objectId" => Bson::ObjectId(ObjectId::from_bytes([0; 12])),
        _ => return None,
    })
}

impl Allowed {
    /// Whether the validator refuses `null` here: it names the kinds it takes, `null` not among
    /// them (a path that names none takes anything).
    pub fn refuses_null(&self) -> bool {
        !self.kinds.is_empty() && !self.kinds.iter().any(|k| k == "null")
    }

    /// The shape with the kinds this allows and the documents lack, and `presence` with its
    /// `null` and optionality; the kinds kept that no document uses.
    pub fn widen(&self, shape: &Shape, presence: &mut Presence) -> (Shape, Vec<String>) {
        let seen = shape.kinds();
        let mut widened = shape.clone();
        let mut kept = Vec::new();
        for kind in &self.kinds {
            if seen.contains(&kind.as_str()) || (kind == "object" || kind == "array") {
                continue;
            }
            if kind == "null" {
                presence.null = true;
                kept.push("`null`".to_owned());
                continue;
            }
            if let Some(value) = example(kind) {
                let mut one = Shape::of(&value);
                // a kind allowed, not a value seen: no count, no string value, no length
                one.count = 0;
                if let Some(strings) = one.strings.as_mut() {
                    strings.count = 0;
                    strings.values = Some(Default::default());
                }
                widened = widened.join(one);
                kept.push(format!("`{kind}`"));
            }
        }
        if !self.required && !presence.missing {
            presence.missing = true;
            kept.push("a missing field (not `required`)".to_owned());
        }
        (widened, kept)
    }
}
