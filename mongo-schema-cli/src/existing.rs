//! An existing `$jsonSchema` validator as the starting point: the kinds it allows at a path
//! (`bsonType`, `null` included) and whether it requires the field are kept, even where no stored
//! document uses them, so that a pull never tightens what the database accepts today. Paths
//! are read through `properties` of objects (not into arrays, `oneOf` or `anyOf`).

use std::collections::BTreeMap;

use mongodb::bson::{oid::ObjectId, Bson, DateTime, Decimal128, Document};

use crate::lattice::Shape;
use crate::model::Presence;

/// What the validator says of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// `bsonType` names (aliases expanded: `number` is `int`, `long`, `double`, `decimal`);
    /// empty when the validator names none.
    pub kinds: Vec<String>,
    /// In its parent's `required`.
    pub required: bool,
}

/// Every path of `validator` (`{ $jsonSchema }`), dotted from `collection`.
pub fn allowed(collection: &str, validator: &Document) -> BTreeMap<String, Allowed> {
    let mut out = BTreeMap::new();
    if let Ok(schema) = validator.get_document("$jsonSchema") {
        walk(collection, schema, &mut out);
    }
    out
}

fn walk(prefix: &str, schema: &Document, out: &mut BTreeMap<String, Allowed>) {
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
        let mut kinds: Vec<String> = match property.get("bsonType") {
            Some(Bson::String(t)) => vec![t.clone()],
            Some(Bson::Array(ts)) => ts
                .iter()
                .filter_map(Bson::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        if let Some(i) = kinds.iter().position(|k| k == "number") {
            kinds.splice(
                i..=i,
                ["int", "long", "double", "decimal"].map(String::from),
            );
        }
        out.insert(
            path.clone(),
            Allowed {
                kinds,
                required: required.contains(&name.as_str()),
            },
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
