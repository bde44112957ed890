//! The `$jsonSchema` each model's derive will produce, composed here with the same functions of
//! `mongo-schema-core` that the derive's generated code calls (`object()`, `enum_schema`,
//! `copy_schema`, the `BsonSchema` impls of the scalars), so that the gate checks the very
//! validator `schema().apply(..)` installs.

use mongo_schema_core::__private::{
    constrain, copy_schema, enum_schema, object, string_enum, Tagging, VariantSchema,
};
use mongo_schema_core::BsonSchema;
use mongodb::bson::{
    doc, oid::ObjectId, Binary, Bson, DateTime, Decimal128, Document, Regex, Timestamp, Uuid,
};

use crate::model::{Field, Model, Struct, Ty};

/// `{ "$jsonSchema": ... }` of every collection, by name.
pub fn validators(model: &Model) -> Vec<(String, Document)> {
    model
        .collections
        .iter()
        .map(|c| {
            let schema = match c.kinds {
                Some(kinds) => union_schema(model, &model.unions[kinds], true),
                None => struct_schema(model, &model.structs[c.root], true),
            };
            (c.name.clone(), doc! { "$jsonSchema": schema })
        })
        .collect()
}

/// The schema of a struct: closed (`additional_properties = false`) unless the server's
/// validator leaves it open, as `emit` writes it.
pub fn struct_schema(model: &Model, s: &Struct, root: bool) -> Document {
    let object = fields_object(model, &s.fields);
    match (s.open, root) {
        (false, _) => object.deny_additional(root),
        (true, true) => object.root(),
        (true, false) => object,
    }
    .build()
}

fn fields_object(model: &Model, fields: &[Field]) -> mongo_schema_core::__private::ObjectSchema {
    let mut object = object();
    for field in fields {
        let (schema, required) = field_schema(model, field);
        object = object.property(&field.stored, schema, required);
    }
    object
}

/// The schema of a field and whether it is `required` (an `Option` skipped when `None` is not).
pub fn field_schema(model: &Model, field: &Field) -> (Document, bool) {
    if field.open {
        // `#[schema(open)]`: declared, unchecked
        return (Document::new(), !field.presence.missing);
    }
    let base = match &field.extended {
        Some(copy) => {
            let source = model
                .root_name(&copy.collection)
                .and_then(|_| model.collections.iter().find(|c| c.name == copy.collection))
                .map(|c| struct_schema(model, &model.structs[c.root], true))
                .unwrap_or_default();
            let names: Vec<&str> = copy.fields.iter().map(String::as_str).collect();
            copy_schema(source, &names)
        }
        None => ty_schema(model, &field.ty),
    };
    let p = field.presence;
    let schema = if (p.null || p.missing) && !field.not_null {
        nullable(base)
    } else {
        base
    };
    let constraints: Vec<(&str, Bson)> = field
        .constraints
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    (constrain(schema, &constraints), !p.missing)
}

/// The schema of a type.
pub fn ty_schema(model: &Model, ty: &Ty) -> Document {
    match ty {
        Ty::I32 => i32::bson_schema(),
        Ty::I64 { with_int: false } => i64::bson_schema(),
        Ty::F64 {
            with_int: false,
            with_long: false,
        } => f64::bson_schema(),
        Ty::I64 { .. } | Ty::F64 { .. } => number_schema(ty),
        Ty::Str => String::bson_schema(),
        Ty::Bool => bool::bson_schema(),
        Ty::Date => DateTime::bson_schema(),
        Ty::ObjectId => ObjectId::bson_schema(),
        Ty::Decimal => Decimal128::bson_schema(),
        Ty::Uuid => Uuid::bson_schema(),
        Ty::Binary => Binary::bson_schema(),
        Ty::Regex => Regex::bson_schema(),
        Ty::Timestamp => Timestamp::bson_schema(),
        Ty::Enum(i) => {
            let values: Vec<&str> = model.enums[*i]
                .variants
                .iter()
                .map(|(_, v)| v.as_str())
                .collect();
            string_enum(&values)
        }
        Ty::Struct(i) => struct_schema(model, &model.structs[*i], false),
        Ty::Union(i) => union_schema(model, &model.unions[*i], false),
        Ty::Fixed { items, len } => doc! {
            "bsonType": "array",
            "minItems": *len as i64,
            "maxItems": *len as i64,
            "items": ty_schema(model, items),
        },
        Ty::Array { items, max } => doc! {
            "bsonType": "array",
            "maxItems": *max as i64,
            "items": ty_schema(model, items),
        },
        Ty::Map { values, max } => doc! {
            "bsonType": "object",
            "maxProperties": *max as i64,
            "additionalProperties": ty_schema(model, values),
        },
        Ty::GeoPoint => mongo_schema_core::geo::Point::bson_schema(),
        Ty::Any => Bson::bson_schema(),
    }
}

/// The schema of an internally tagged enum, closed (`additional_properties = false`); `root`:
/// a whole-document enum (`#[derive(Document)]` on the enum).
pub fn union_schema(model: &Model, union: &crate::model::Union, root: bool) -> Document {
    let variants = union
        .variants
        .iter()
        .map(|v| VariantSchema {
            name: leak(&v.value),
            content: Some(fields_object(model, &v.fields).build()),
            untagged: false,
        })
        .collect();
    enum_schema(Tagging::Internal(leak(&union.tag)), variants, true, root)
}

/// Whether two validators are the same as the server means it: the order of a document's
/// fields does not matter, numbers compare by value whatever their BSON type, arrays compare in
/// order.
pub fn same(a: &Document, b: &Document) -> bool {
    fn number(v: &Bson) -> Option<f64> {
        match v {
            Bson::Int32(n) => Some(f64::from(*n)),
            Bson::Int64(n) => Some(*n as f64),
            Bson::Double(n) => Some(*n),
            _ => None,
        }
    }
    fn value(a: &Bson, b: &Bson) -> bool {
        match (a, b) {
            (Bson::Document(a), Bson::Document(b)) => same(a, b),
            (Bson::Array(a), Bson::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(a, b)| value(a, b))
            }
            _ => match (number(a), number(b)) {
                (Some(a), Some(b)) => a == b,
                _ => a == b,
            },
        }
    }
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| value(v, w)))
}

/// The stored kinds of a mixed number, in the order `emit`'s marker types list them.
pub fn number_kinds(ty: &Ty) -> Vec<&'static str> {
    match ty {
        Ty::I64 { with_int } => [(*with_int, "int"), (true, "long")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, k)| *k)
            .collect(),
        Ty::F64 {
            with_int,
            with_long,
        } => [(*with_int, "int"), (*with_long, "long"), (true, "double")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, k)| *k)
            .collect(),
        _ => Vec::new(),
    }
}

fn number_schema(ty: &Ty) -> Document {
    doc! { "bsonType": number_kinds(ty) }
}

/// The enum APIs of `mongo-schema-core` take `&'static str` (the derive passes literals); a pull
/// builds a few dozen of them per gate round, once per process.
fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// `Option<T>`'s schema: `null` allowed (mongo-schema-core's own rule).
pub use mongo_schema_core::__private::nullable;
