//! Support for the code the derives generate. Not public API: names here change without notice.
//!
//! Generated code names every item as `mongo_schema::__private::X`, whichever file holds it:
//! each file's public items are re-exported here. The files follow the generated item they
//! support (the derive's `gen/` files of the same names):
//!
//! - `json_schema.rs`: `impl BsonSchema`'s `$jsonSchema` (the composing functions, a unit
//!   enum's names, constraint values);
//! - `checks.rs`: which field types take `#[schema(...)]` string or numeric constraints;
//! - `document.rs`: `impl Document` (an index's partial filter);
//! - `paths.rs`: `FieldPath` (one impl per stored field, forwarded through `Option`, arrays and
//!   sets), a struct's field table (`Fields`), field keys, typed and nested paths for `field!`,
//!   encoders and decoders of a field's values;
//! - `queries.rs`: `#[query]`: equality and range element types, quoted paths through embedded
//!   structs (`Embedded`, `stored_key`), the sort, range, projection and `$in` checks;
//! - `copies.rs`: the copy types of `#[extended_ref]`: checked source and copied fields, their
//!   keys and `FieldPath` impls (`__copied_field_key!`, `__copied_field_path!`), the copy's
//!   schema, reading a copy;
//! - `relations.rs`: `#[reference]`, `#[subset]` and `#[bucket]`: the id type, the child's
//!   parent reference, the preview and the counter;
//! - `const_text.rs`: under `copies` and `queries`: a name's position in a table and the messages
//!   of failed checks, found and built while a constant is evaluated.
//!
//! Support the library's own modules use as well lives with them and is re-exported from the
//! files above (`Encoded`/`Decoded` in `query/path.rs`, `FieldSeed`/`missing_field` in
//! `model/copy_de.rs`, `subset_preview`/`PreviewOf` in `relations/subset/rule.rs`), so nothing
//! below this module imports it. New support goes into the file of the item it serves.

pub use mongodb;
pub use mongodb::bson;
pub use serde;

pub use crate::bson_compat;
pub use crate::model::stored;
/// The transaction loop of `update_source`, a `Transaction` and the subset helpers, for a
/// test that counts how often a body of its own runs (`tests/commit_outcome.rs`).
pub use crate::relations::part::PartOf;
pub use crate::relations::resolve::{Resolve, ResolveAll};
pub use crate::sync::transaction::in_transaction;
/// `field!`'s key of a name, checked and spanned at the name.
pub use mongo_schema_derive::__field_key;

mod checks;
mod const_text;
mod copies;
mod document;
mod json_schema;
mod paths;
mod queries;
mod relations;
mod walk;

pub use checks::*;
pub use const_text::*;
pub use copies::*;
pub use document::*;
pub use json_schema::*;
pub use paths::*;
pub use queries::*;
pub use relations::*;
pub use walk::*;
