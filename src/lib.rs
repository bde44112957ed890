//! MongoDB schema design that the compiler checks.
//!
//! Put attributes on plain serde structs; the derives generate the `$jsonSchema` validator and
//! the indexes of each collection, and refuse to compile the designs that are known mistakes,
//! such as an embedded array with no bound. At start-up, one call applies validators and indexes,
//! idempotently.
//!
//! ```
//! use mongo_schema::prelude::*;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(BsonSchema, Serialize, Deserialize)]
//! pub struct Part {
//!     #[serde(rename = "partId")]
//!     pub part_id: String,
//!     #[schema(max_length = 80)]
//!     pub name: String,
//! }
//!
//! #[derive(Document, Serialize, Deserialize)]
//! #[collection(name = "productsEmbedded")]
//! #[index(keys(name = 1))]
//! pub struct Product {
//!     #[serde(rename = "_id")]
//!     pub id: String,
//!     pub name: String,
//!     #[embed(max = 50)] // without a bound this does not compile
//!     pub parts: Vec<Part>,
//! }
//!
//! let validator = Product::validator();
//! let parts = validator.get_document("$jsonSchema").unwrap()
//!     .get_document("properties").unwrap()
//!     .get_document("parts").unwrap();
//! assert_eq!(parts.get_i64("maxItems"), Ok(50));
//! assert_eq!(Product::COLLECTION, "productsEmbedded");
//! assert_eq!(Product::indexes().len(), 1);
//! ```
//!
//! # The attribute language
//!
//! Container attributes (on a `#[derive(Document)]` struct):
//! - `#[collection(name = "...", validation_level = "strict|moderate",
//!   validation_action = "error|warn", additional_properties = false, shard_key(field = 1, ...))]`
//! - `#[index(keys(field = 1, other = -1, "dotted.path" = 1, body = "text"), unique, sparse,
//!   partial = "<filter as extended JSON>", expire_after_secs = N, name = "...")]`, repeatable.
//!   Keys name Rust fields (translated through serde renames, checked at compile time) or quoted
//!   stored paths (checked by [`SchemaBuilder::build`]).
//!
//! Field attributes:
//! - `#[embed(max = N)]` on a `Vec<T>`, `VecDeque<T>`, set, `[T; N]` or map with string keys
//!   (optionally inside `Option`): `maxItems` / `maxProperties` in the validator. Every growable
//!   array or map must carry a bound; `Vec<T>` does not even implement [`BsonSchema`] on its own.
//! - `#[schema(max_length = N, min_length = N, pattern = "...", minimum = X, maximum = X)]`:
//!   scalar constraints; on an array or map they constrain its elements.
//! - `#[schema(stored_as = T)]`: the field (or, on a type, every value of it) is stored as `T`
//!   would be; the validator describes `T`, and the constraints apply to `T`.
//! - `#[reference]` on a [`Ref<T>`], `Option<Ref<T>>` or `Vec<Ref<T>>` (the array needs
//!   `#[reference(max = N)]`), or `#[reference(to = T)]` on a plain id of `T`'s id type. The
//!   validator describes it with `T`'s id type; a single reference gets an index on its field
//!   unless a declared index or the shard key starts with it; [`Schema`] checks that `T` is part
//!   of the schema. Each reference also gets a typed [`Relation`] constant named after the field
//!   in upper case (`Message::TICKET_ID`): `$lookup` from child to parent and from parent to
//!   children, and, when a declared index orders the children (`#[index(keys(ticket_id = 1,
//!   at = 1))]`), keyset pages of a parent's children in index order. [`Ref::resolve_all`] fetches
//!   a batch of references with one `$in` query.
//!
//! - `#[extended_ref(to = T, fields = "a, b", sync = "frozen|transactional|async|reconcile")]`
//!   (`as = Name` renames the copy type, `max = N` for an array of copies): the derive generates
//!   the copy type `<Struct><Field>` holding `_id` and the named fields, their Rust types taken
//!   from `T` (a renamed or retyped source field is a compile error), `From<&T>` and its
//!   validator; non-frozen copies get a fan-out index on `<path>._id`. `sync` is required. The
//!   strategies are carried out by [`Schema::update_source`] and [`Schema::delete_source`]
//!   (transactional), [`SyncWorker`] (async, from [`Schema::sync_worker`]: at least once, one
//!   active worker per name by a lease, holders that cannot take a copy recorded in
//!   [`FAILURES_COLLECTION`] and retried by [`Schema::retry_failures`]) and [`Schema::reconcile`]
//!   (repairs conditional on the value read); frozen copies are never rewritten.
//!   `on_delete = "keep" | "unset"` says what a source's deletion does to its copies (`unset`
//!   only on an `Option` field). [`Schema::sync_graph`] lists them all.
//! - `#[subset(of = T, max = N, sort = "-field", count = "field")]` on an `Option<P>` (N = 1) or
//!   `Vec<P>` of previews built `From<&T>`: the constant `Struct::FIELD` ([`Subset`]) adds a
//!   child with its preview (`$push` + `$each` + `$sort` + `$slice`, or `$set` for one, and `$inc`
//!   on the count) in one transaction, or as two writes repaired by `rebuild`; `add_with` keeps
//!   several subsets of the same child in that one transaction.
//! - Every `#[embed(max = N)]` array of a collection root has a constant `Struct::FIELD`
//!   ([`EmbeddedArray`]) whose pushes keep the bound: with `cap`, `$slice: -N`.
//!
//! Container attribute `#[bucket(parent = f, entries = f, count = f, key = "k", first = f,
//! last = f)]` makes a collection store a parent's entries in bounded buckets: `Struct::BUCKET`
//! ([`Bucket`]) appends with one upsert and reads a parent's entries in key order.
//!
//! Two `#[index]` attributes naming the same field trip clippy's `duplicated_attributes` lint,
//! which does not know what `#[index]` means (rust-lang/rust-clippy#13238): allow it on the struct.
//!
//! serde attributes are followed: `rename`, `rename_all`, `rename_all_fields`, `skip`,
//! `skip_serializing`, `skip_serializing_if` (the field is then not `required`), `default`,
//! `alias`, `other`, `transparent`, variant renames, and these, which change the stored shape:
//! - enums with data in serde's four representations: externally tagged (the default),
//!   `tag = "t"`, `tag = "t", content = "c"`, `untagged` (also on one variant): `oneOf` of one
//!   branch per variant where the tag tells them apart, `anyOf` where nothing does; unit, newtype,
//!   tuple and struct variants, each with its own `required`, `properties` and bounds (an
//!   unbounded `Vec` in a variant is the same compile error as in a struct);
//! - `#[serde(flatten)]` of a type deriving `BsonSchema` (a struct's fields, or one branch per
//!   variant of an enum) or of a bounded map (`#[serde(flatten)] #[embed(max = N)]`);
//! - tuple structs of two or more fields: arrays of fixed length;
//! - `#[serde(into = "T")]`: stored as `T`;
//! - `#[serde(with)]` / `serialize_with`: the bson crate's helpers and `serde_bytes` are known;
//!   other custom code needs `#[schema(stored_as = T)]` on the field, naming a type whose
//!   serialization has the stored shape (a hand-written `Serialize` takes it on the type).
//!
//! `#[derive(Document)]` also takes an internally tagged or untagged enum of struct variants:
//! one collection, several kinds of document, each kind holding `_id` of one type or none.
//! `#[index(...)]` on a variant is an index of that kind: a partial index on its tag
//! (`{ kind: "login" }`), named after the kind unless named. A struct without `_id`, or with
//! `#[serde(skip_serializing_if = "Option::is_none")] id: Option<ObjectId>`, lets the server
//! assign the ObjectId.
//!
//! # What the derives refuse
//!
//! - An array or map field with no bound (the message says `unbounded` and how to bound it).
//! - Embedding a collection root (a `#[derive(Document)]` type) in another document.
//! - Unknown, duplicated or malformed attribute options; all of a type's mistakes are reported
//!   together.
//! - With a shard key, a unique index that does not start with it.
//! - custom serde code the derive cannot see through, without `#[schema(stored_as = T)]`;
//!   an `Option` `_id` that serde would write as `null`; `#[extended_ref]` and `#[subset]` in an
//!   enum's variants.
//! - Index and schema designs mongod refuses (sparse with partial, unique hashed, TTL out of
//!   range, partial filters mongod does not support, an index on `_id` alone, two fields stored
//!   under one name, empty enums, ...), each message naming mongod's rule.
//!
//! # Start-up
//!
//! ```no_run
//! # use mongo_schema::prelude::*;
//! # #[derive(Document, serde::Serialize)] #[collection(name = "t")] struct Ticket { x: i32 }
//! # async fn start(db: mongodb::Database) -> mongo_schema::Result<()> {
//! let schema = Schema::new().model::<Ticket>().version(3).build()?;
//! println!("{}", schema.plan(&db).await?); // what would change, without writing
//! let report = schema.apply(&db).await?;   // creates, collMods and indexes only what differs;
//! println!("{report}");                    // refused if the database records version 4
//! let worker = schema.sync_worker(&db).spawn(); // keep the handle; dropping it detaches
//! worker.ready().await?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub use mongo_schema_core::*;

/// `#[derive(Document)]`: a collection root. Implements [`Document`] and [`BsonSchema`].
pub use mongo_schema_derive::Document;

/// `#[derive(BsonSchema)]`: a struct or unit-only enum stored inside documents.
pub use mongo_schema_derive::BsonSchema;

/// Everything a model file needs: `use mongo_schema::prelude::*;`.
pub mod prelude {
    pub use crate::bson::{oid::ObjectId, DateTime, Decimal128};
    pub use crate::{BsonSchema, Document, Identified, Ref, ResultExt, Schema};
}

#[doc(hidden)]
pub mod __private {
    pub use mongo_schema_core::__private::*;
    pub use mongo_schema_core::{
        BoundedCollection, BsonSchema, Bucket, CollectionSpec, CopyShape, CopySpec, Document,
        EmbedSpec, EmbeddedArray, Identified, IndexReason, IndexSpec, OnDelete, Ref, RefKind,
        ReferenceSpec, Relation, SortKey, Subset, SubsetSpec, SyncStrategy, ValidationAction,
        ValidationLevel,
    };
}
