//! Helpers for a service's own unit tests: check values of a model against its validator
//! without a server (see [`crate::Document::check`]).
//!
//! ```
//! use mongo_schema_core::testing;
//! # use mongo_schema_core::{bson::{doc, Document as BsonDocument}, BsonSchema, CollectionSpec, Document};
//! # #[derive(serde::Serialize)]
//! # struct Ticket { _id: i32, priority: i32 }
//! # impl BsonSchema for Ticket {
//! #     fn bson_schema() -> BsonDocument {
//! #         doc! { "bsonType": "object", "required": ["_id", "priority"],
//! #                "properties": { "priority": { "bsonType": "int", "minimum": 1, "maximum": 5 } } }
//! #     }
//! # }
//! # impl Document for Ticket {
//! #     const COLLECTION: &'static str = "tickets";
//! #     type Id = i32;
//! #     fn collection_spec() -> CollectionSpec { CollectionSpec::new("tickets", Self::validator()) }
//! # }
//! testing::assert_valid(&Ticket { _id: 1, priority: 3 });
//! testing::assert_invalid(&Ticket { _id: 2, priority: 9 }, "priority", "maximum");
//! assert_eq!(testing::failures(&Ticket { _id: 3, priority: 0 }), [("priority".to_owned(), "minimum".to_owned())]);
//! ```

use serde::Serialize;

use crate::{Document, Error};

/// The `(path, rule)` of every rule `value` breaks (`("history.3.status", "enum")`); empty
/// when its collection's validator accepts it.
///
/// # Panics
/// When the validator cannot be evaluated locally or the value cannot be serialized: a test
/// should not mistake either for a verdict.
#[track_caller]
pub fn failures<T: Document + Serialize + 'static>(value: &T) -> Vec<(String, String)> {
    match T::check(value) {
        Ok(()) => Vec::new(),
        Err(Error::Validation(error)) => error
            .failures
            .iter()
            .map(|f| (f.path.clone(), f.rule.clone()))
            .collect(),
        Err(other) => panic!("a `{}` value could not be checked: {other}", T::COLLECTION),
    }
}

/// Asserts that the collection's validator accepts `value`, listing every failed rule if not.
#[track_caller]
pub fn assert_valid<T: Document + Serialize + 'static>(value: &T) {
    if let Err(error) = T::check(value) {
        panic!("expected a valid `{}` document, but {error}", T::COLLECTION);
    }
}

/// Asserts that the collection's validator refuses `value` for `rule` at `path` (a dotted path,
/// `""` for the document itself), as the server would with code 121.
#[track_caller]
pub fn assert_invalid<T: Document + Serialize + 'static>(value: &T, path: &str, rule: &str) {
    let found = failures(value);
    if !found.iter().any(|(p, r)| p == path && r == rule) {
        panic!(
            "expected the `{}` validator to refuse `{path}` for `{rule}`, but it found {}",
            T::COLLECTION,
            if found.is_empty() {
                "nothing wrong".to_owned()
            } else {
                found
                    .iter()
                    .map(|(p, r)| format!("`{p}` fails `{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
    }
}
