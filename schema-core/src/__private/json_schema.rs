//! `impl BsonSchema`'s `$jsonSchema` (the derive's `gen/json_schema.rs`): the functions that
//! compose it, a unit enum's names, and the values of `#[schema(...)]` constraints.

use mongodb::bson::{doc, Bson, Document};

pub use crate::json_schema::compose::{
    enum_schema, object, tuple, ObjectSchema, Tagging, VariantSchema,
};
/// `Option<T>`'s schema, for the CLI's `pull`, which composes the derive's validators.
#[doc(hidden)]
pub use crate::json_schema::nullable;
pub use crate::json_schema::{constrain, not_null};

/// The schema of a unit-only enum stored as its variant names.
pub fn string_enum(values: &[&str]) -> Document {
    doc! { "bsonType": "string", "enum": values.iter().map(|v| Bson::from(*v)).collect::<Vec<_>>() }
}

/// An integer constraint value.
pub fn int(value: i64) -> Bson {
    Bson::Int64(value)
}

/// A floating-point constraint value.
pub fn float(value: f64) -> Bson {
    Bson::Double(value)
}
