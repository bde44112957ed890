//! `impl Document` (the derive's `gen/document.rs`): what its indexes need at run time.

use mongodb::bson::{Bson, Document};

/// Parses an `#[index(partial = "...")]` filter (extended JSON, checked to be a JSON object by
/// the derive).
pub fn partial_filter(collection: &str, json: &str) -> Document {
    let value: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| {
        panic!("partial filter of an index of `{collection}` is not JSON ({e}): {json}")
    });
    match Bson::try_from(value) {
        Ok(Bson::Document(filter)) => filter,
        other => panic!(
            "partial filter of an index of `{collection}` is not an extended-JSON document ({other:?}): {json}"
        ),
    }
}
