//! Worst-case BSON size of a document, computed from its `$jsonSchema`: what the bounds
//! (`maxItems`, `maxLength`, `maxProperties`, nested types) allow at most, against the 16 MiB
//! limit. Where nothing bounds a value, the figure is a lower bound and the reasons are listed.

use std::fmt;

use mongodb::bson::{Bson, Document};

/// The server's limit on a whole document (including embedded documents and arrays).
pub const MAX_DOCUMENT_BYTES: u64 = 16 * 1024 * 1024;

/// The largest document a schema allows.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SizeBound {
    /// Bytes the bounded part of the document can reach (the whole document when `unbounded`
    /// is empty).
    pub bytes: u64,
    /// Why the real bound is unknown: one entry per unbounded value (`note` has no
    /// `max_length`).
    pub unbounded: Vec<String>,
}

impl SizeBound {
    /// Whether every value is bounded, so `bytes` is the worst case.
    pub fn is_known(&self) -> bool {
        self.unbounded.is_empty()
    }

    /// Whether the bounded part alone exceeds 16 MiB.
    pub fn exceeds_limit(&self) -> bool {
        self.bytes > MAX_DOCUMENT_BYTES
    }

    /// The bound of a whole document described by `json_schema` (the `$jsonSchema` object,
    /// not the validator around it). Only the declared properties count: a schema that allows
    /// other fields (no `additionalProperties: false`) is bounded for what the library writes.
    pub fn of(json_schema: &Document) -> SizeBound {
        let mut unbounded = Vec::new();
        let bytes = value_bytes(json_schema, "", &mut unbounded);
        SizeBound { bytes, unbounded }
    }
}

/// How many times a bucket of a time series collection holds each field of a measurement but
/// the meta field: in `control.min`, `control.max` and the `data` column.
const BUCKET_COPIES: u64 = 3;

impl SizeBound {
    /// The bound of the bucket mongod writes for one measurement of a time series collection
    /// described by `json_schema` (meta field `meta_field`): the meta field once, every other
    /// field three times. mongod refuses a measurement whose bucket exceeds 16 MiB
    /// (BSONObjectTooLarge: the jstest "Bucket Insert: Measurements that are uninsertable due to
    /// exceeding the BSON size limit when a bucket insert is generated to accommodate one
    /// measurement" inserts 8 MB of metrics, "always too big due to total metric size being
    /// copied into control block"), whatever the measurement's own size.
    pub fn of_measurement(json_schema: &Document, meta_field: Option<&str>) -> SizeBound {
        let whole = SizeBound::of(json_schema);
        let meta = meta_field
            .and_then(|meta| {
                let schema = json_schema
                    .get_document("properties")
                    .ok()?
                    .get_document(meta)
                    .ok()?;
                let mut ignored = Vec::new();
                // type byte, key and NUL, value
                Some(1 + meta.len() as u64 + 1 + value_bytes(schema, meta, &mut ignored))
            })
            .unwrap_or(0);
        let metrics = whole.bytes.saturating_sub(meta);
        SizeBound {
            bytes: meta.saturating_add(metrics.saturating_mul(BUCKET_COPIES)),
            unbounded: whole.unbounded,
        }
    }
}

/// Human-readable bytes: `512 B`, `3.2 KiB`, `1.5 MiB`.
pub fn human(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{:.1} MiB", b / KIB / KIB)
    }
}

impl fmt::Display for SizeBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let share = self.bytes as f64 / MAX_DOCUMENT_BYTES as f64 * 100.0;
        if self.is_known() {
            write!(f, "at most {} ({share:.2}% of 16 MiB)", human(self.bytes))
        } else {
            write!(
                f,
                "unknown: at least {} is bounded, but {}",
                human(self.bytes),
                self.unbounded.join("; ")
            )
        }
    }
}

fn child(path: &str, segment: &str) -> String {
    if path.is_empty() {
        segment.to_owned()
    } else {
        format!("{path}.{segment}")
    }
}

fn shown(path: &str) -> &str {
    if path.is_empty() {
        "the document"
    } else {
        path
    }
}

/// The size of a value's payload (without its type byte and key), at most.
fn value_bytes(schema: &Document, path: &str, unbounded: &mut Vec<String>) -> u64 {
    if let Ok(values) = schema.get_array("enum") {
        return values.iter().map(literal_bytes).max().unwrap_or(0);
    }
    if let Ok(branches) = schema
        .get_array("anyOf")
        .or_else(|_| schema.get_array("oneOf"))
    {
        // the largest shape: a whole-document enum's largest kind
        return branches
            .iter()
            .filter_map(Bson::as_document)
            .map(|b| value_bytes(b, path, unbounded))
            .max()
            .unwrap_or(0);
    }
    let types: Vec<&str> = match schema.get("bsonType") {
        Some(Bson::String(t)) => vec![t.as_str()],
        Some(Bson::Array(ts)) => ts.iter().filter_map(Bson::as_str).collect(),
        _ => {
            unbounded.push(format!("`{}` accepts any value", shown(path)));
            return 0;
        }
    };
    types
        .into_iter()
        .map(|ty| typed_bytes(ty, schema, path, unbounded))
        .max()
        .unwrap_or(0)
}

fn number(schema: &Document, key: &str) -> Option<u64> {
    match schema.get(key)? {
        Bson::Int32(v) => u64::try_from(*v).ok(),
        Bson::Int64(v) => u64::try_from(*v).ok(),
        Bson::Double(v) if *v >= 0.0 => Some(*v as u64),
        _ => None,
    }
}

fn typed_bytes(ty: &str, schema: &Document, path: &str, unbounded: &mut Vec<String>) -> u64 {
    match ty {
        "null" | "undefined" | "minKey" | "maxKey" => 0,
        "bool" => 1,
        "int" => 4,
        "long" | "double" | "date" | "timestamp" => 8,
        // `number`: any numeric type, at most a decimal's 16 bytes
        "decimal" | "number" => 16,
        "objectId" => 12,
        // a uuid (see `uuid_schema`): int32 length, subtype, 16 bytes
        "binData"
            if schema.get_str("title").ok() == Some(crate::model::bson_schema::UUID_TITLE) =>
        {
            4 + 1 + 16
        }
        // int32 length, UTF-8 bytes (at most 4 per character), NUL
        "string" => match number(schema, "maxLength") {
            Some(chars) => 4 + 4 * chars + 1,
            None => {
                unbounded.push(format!(
                    "`{}` is a string without `max_length`",
                    shown(path)
                ));
                4 + 1
            }
        },
        "array" => {
            // a tuple (`items: [...]`, e.g. time's dates) has a schema per position
            let tuple: Vec<u64> = match schema.get_array("items") {
                Ok(positions) => positions
                    .iter()
                    .enumerate()
                    .map(|(i, position)| match position.as_document() {
                        Some(position) => {
                            value_bytes(position, &child(path, &i.to_string()), unbounded)
                        }
                        None => 0,
                    })
                    .collect(),
                Err(_) => Vec::new(),
            };
            let item = match schema.get_document("items") {
                Ok(items) => value_bytes(items, &child(path, "$"), unbounded),
                Err(_) if !tuple.is_empty() => 0,
                Err(_) => {
                    unbounded.push(format!("`{}` has no item schema", shown(path)));
                    0
                }
            };
            match number(schema, "maxItems") {
                // an array is a document keyed "0", "1", ...
                Some(n) => {
                    if !tuple.is_empty() && n > tuple.len() as u64 {
                        unbounded.push(format!(
                            "`{}` may hold items past its tuple, which have no schema",
                            shown(path)
                        ));
                    }
                    4 + 1
                        + (0..n)
                            .map(|i| {
                                let item = tuple.get(i as usize).copied().unwrap_or(item);
                                1 + decimal_digits(i) + 1 + item
                            })
                            .sum::<u64>()
                }
                None => {
                    unbounded.push(format!("`{}` is an array without a bound", shown(path)));
                    5
                }
            }
        }
        "object" => object_bytes(schema, path, unbounded),
        other => {
            unbounded.push(format!(
                "`{}` is {other} data with no size bound",
                shown(path)
            ));
            0
        }
    }
}

fn object_bytes(schema: &Document, path: &str, unbounded: &mut Vec<String>) -> u64 {
    let mut bytes = 4 + 1;
    if let Ok(properties) = schema.get_document("properties") {
        for (name, property) in properties {
            if let Some(property) = property.as_document() {
                bytes += 1
                    + name.len() as u64
                    + 1
                    + value_bytes(property, &child(path, name), unbounded);
            }
        }
    }
    if let Ok(values) = schema.get_document("additionalProperties") {
        // a map: its keys are strings of unknown length
        let value = value_bytes(values, &child(path, "*"), unbounded);
        match number(schema, "maxProperties") {
            Some(n) => {
                bytes += n * (1 + 1 + value);
                unbounded.push(format!(
                    "`{}` is a map whose keys have no length bound",
                    shown(path)
                ));
            }
            None => unbounded.push(format!("`{}` is a map without a bound", shown(path))),
        }
    } else if !schema.contains_key("properties") {
        unbounded.push(format!("`{}` is a free-form document", shown(path)));
    }
    bytes
}

fn decimal_digits(i: u64) -> u64 {
    i.checked_ilog10().map_or(1, |d| u64::from(d) + 1)
}

fn literal_bytes(value: &Bson) -> u64 {
    match value {
        Bson::String(s) => 4 + s.len() as u64 + 1,
        Bson::Null => 0,
        Bson::Int32(_) => 4,
        Bson::Boolean(_) => 1,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn a_measurement_s_bucket_holds_its_metrics_three_times() {
        let scan = |max_length: i64| {
            doc! { "bsonType": "object", "properties": {
                "at": { "bsonType": "date" },
                "gate": { "bsonType": "string", "maxLength": 1000 },
                "payload": { "bsonType": "string", "maxLength": max_length },
            } }
        };
        // 2 M characters of up to 4 bytes: 8 MiB, under the document limit, 24 MiB in a bucket
        let schema = scan(2 * 1024 * 1024);
        let document = SizeBound::of(&schema);
        assert!(!document.exceeds_limit(), "{document}");
        let bucket = SizeBound::of_measurement(&schema, Some("gate"));
        assert!(bucket.exceeds_limit(), "{bucket}");
        let meta = 1 + 4 + 1 + (4 + 4 * 1000 + 1);
        assert_eq!(bucket.bytes, meta + 3 * (document.bytes - meta));
        // a small measurement fits
        let small = SizeBound::of_measurement(&scan(1000), Some("gate"));
        assert!(!small.exceeds_limit(), "{small}");
        // without a meta field every field is a metric
        let schema = scan(1000);
        assert_eq!(
            SizeBound::of_measurement(&schema, None).bytes,
            3 * SizeBound::of(&schema).bytes
        );
    }

    #[test]
    fn a_tuple_counts_each_position_with_its_own_schema() {
        // time's `Time`: [hour, minute, second: int, nanosecond: long]
        let schema = doc! { "bsonType": "object", "properties": {
            "t": { "bsonType": "array", "minItems": 4, "maxItems": 4, "items": [
                { "bsonType": "int" }, { "bsonType": "int" }, { "bsonType": "int" },
                { "bsonType": "long" },
            ] },
        } };
        let bound = SizeBound::of(&schema);
        assert!(bound.is_known(), "{bound}");
        let worst = doc! { "t": [1, 2, 3, 4_i64] };
        let encoded = crate::bson_compat::to_vec(&worst).unwrap().len() as u64;
        assert_eq!(bound.bytes, encoded);
        // room for items past the tuple: not known
        let schema = doc! { "bsonType": "array", "maxItems": 3, "items": [{ "bsonType": "int" }] };
        let bound = SizeBound::of(&doc! { "bsonType": "object", "properties": { "t": schema } });
        assert!(!bound.is_known());
        assert!(bound.unbounded[0].contains("past its tuple"), "{bound}");
    }

    #[test]
    fn bounded_documents_match_the_bson_encoding() {
        // { a: <int>, s: <string of at most 3 chars> } -> compare with a real worst case
        let schema = doc! { "bsonType": "object", "properties": {
            "a": { "bsonType": "int" },
            "s": { "bsonType": "string", "maxLength": 3 },
            "t": { "bsonType": "array", "maxItems": 2, "items": { "bsonType": "long" } },
        } };
        let bound = SizeBound::of(&schema);
        assert!(bound.is_known(), "{bound}");
        let worst = doc! { "a": 1, "s": "\u{1F600}\u{1F600}\u{1F600}", "t": [1_i64, 2_i64] };
        let encoded = crate::bson_compat::to_vec(&worst).unwrap().len() as u64;
        assert_eq!(bound.bytes, encoded);
    }

    #[test]
    fn unbounded_values_are_named() {
        let schema = doc! { "bsonType": "object", "properties": {
            "note": { "bsonType": ["string", "null"] },
            "blob": { "bsonType": "binData" },
            "meta": { "bsonType": "object", "maxProperties": 3, "additionalProperties": { "bsonType": "int" } },
        } };
        let bound = SizeBound::of(&schema);
        assert_eq!(bound.unbounded.len(), 3, "{bound}");
        assert!(bound.unbounded[0].contains("`note` is a string without `max_length`"));
    }

    #[test]
    fn a_uuid_is_bounded_and_other_binary_is_not() {
        let schema = doc! {
            "bsonType": "object",
            "properties": {
                "id": crate::model::bson_schema::uuid_schema(),
                "blob": { "bsonType": "binData" },
            },
        };
        let bound = SizeBound::of(&schema);
        assert_eq!(bound.unbounded.len(), 1, "{bound}");
        assert!(bound.unbounded[0].contains("`blob`"), "{bound}");
        // the encoding of { id: <uuid> } alone is the bound of its part
        let one = doc! { "id": mongodb::bson::Uuid::new() };
        let id_only = SizeBound::of(&doc! {
            "bsonType": "object",
            "properties": { "id": crate::model::bson_schema::uuid_schema() },
        });
        assert!(id_only.is_known(), "{id_only}");
        assert_eq!(
            id_only.bytes,
            crate::bson_compat::to_vec(&one).unwrap().len() as u64
        );
    }

    #[test]
    fn huge_bounds_exceed_16_mib() {
        let schema = doc! { "bsonType": "object", "properties": {
            "pages": { "bsonType": "array", "maxItems": 5000, "items": { "bsonType": "string", "maxLength": 1000 } },
        } };
        let bound = SizeBound::of(&schema);
        assert!(bound.is_known() && bound.exceeds_limit(), "{bound}");
    }
}
