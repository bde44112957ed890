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
//! - `#[schema(crate = "path")]` (on a `Document` or `BsonSchema` type): the path this crate
//!   is reached by, when the service renamed the dependency (`ms = { package = "mongo-schema" }`
//!   and `#[schema(crate = "ms")]`); every path the derive generates starts there.
//!
//! Field attributes:
//! - `#[embed(max = N)]` on a `Vec<T>`, `VecDeque<T>`, set, `[T; N]` or map with string keys
//!   (optionally inside `Option`): `maxItems` / `maxProperties` in the validator. Every growable
//!   array or map must carry a bound; `Vec<T>` does not even implement [`BsonSchema`] on its own.
//! - `#[schema(max_length = N, min_length = N, pattern = "...", minimum = X, maximum = X)]`:
//!   scalar constraints; on an array or map they constrain its elements.
//! - `#[schema(stored_as = T)]`: the field (or, on a type, every value of it) is stored as `T`
//!   would be; the validator describes `T`, and the constraints apply to `T`.
//! - `#[schema(not_null)]` on an `Option` field that serde leaves out when `None`
//!   (`#[serde(skip_serializing_if = "Option::is_none")]`): absent or a value, never `null`; the
//!   validator refuses `null` there (an `Option` is otherwise nullable: another writer may store
//!   `null`). `mongo-schema pull` writes it where the server's validator refuses `null`.
//! - `#[schema(open)]`: the validator declares the field and checks nothing of its value (`{}`),
//!   as a server's validator that never declared it did; the Rust type is still this service's
//!   (a value of another type fails to decode, not to be stored). `mongo-schema pull` writes it
//!   for the paths an existing validator leaves unchecked.
//! - `#[reference]` on a [`Ref<T>`], `Option<Ref<T>>` or `Vec<Ref<T>>` (the array needs
//!   `#[reference(max = N)]`), or `#[reference(to = T)]` on a plain id of `T`'s id type. The
//!   validator describes it with `T`'s id type; a single reference gets an index on its field
//!   unless a declared index or the shard key starts with it; [`Schema`] checks that `T` is part
//!   of the schema. Each reference also gets a typed [`Relation`] constant named after the field
//!   in upper case (`Message::TICKET_ID`): `$lookup` from child to parent and from parent to
//!   children, and, when a declared index orders the children (`#[index(keys(ticket_id = 1,
//!   at = 1))]`), keyset pages of a parent's children in index order ([`Relation::page`]; without
//!   such an index, calling it is a compile error that says which index to declare). The pages
//!   break ties on `_id`, so that declared index gets `_id` as its last key (same direction as
//!   the key before it, declared name kept): one index, `{ ticket_id: 1, at: 1, _id: 1 }`, serves
//!   the declared order and the pages. A declared index that is a prefix of another (same
//!   directions, no option of its own) is redundant, and `plan` and the report say so; so does
//!   `plan` of a server index the schema does not declare that is a prefix of another.
//!   `#[index(.., pages = false)]` keeps such an index as declared: no `_id` appended, no
//!   keyset pages in its order (the reference is still served by it); `mongo-schema pull`
//!   writes it for a server index that starts with a reference, so that `apply` builds none.
//!   [`Ref::resolve_all`] fetches a batch of references with one `$in` query.
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
//!   only on an `Option` field). [`Schema::sync_graph`] lists them all. Each copy type writes
//!   its `_id` and fields as the source stores them, through the source field's serde helper
//!   (a uuid with `uuid_1_as_binary` is subtype 4 in the copy too). Every extended reference
//!   also has a [`Relation`] constant named after the field in upper case, on its copied
//!   `_id` (`Order::CUSTOMER`, through `customer._id`): lookups, children filters, resolves and,
//!   with a declared index `#[index(keys("customer._id" = 1, placed_at = -1))]`, keyset pages of
//!   a source's holders (the index gets the `_id` tie-break, as for a reference; a frozen copy
//!   gets that index too, while without an order it has none).
//!   On a field of a `#[derive(BsonSchema)]` struct embedded in a collection root (one value,
//!   an `Option`, or a bounded array of them, also behind a type alias or a generic wrapper),
//!   `#[extended_ref]` is a copy held in each value (`lines.product`, in `lines[]`): a frozen
//!   one is the price on an order line; the others follow their source into every element
//!   that holds it (one `updateMany` per batch of holders on `lines.product._id`, the fan-out
//!   index, with an array filter `lines.$[e0].product.name` where `e0.product._id` is the
//!   source's), and reconcile compares and repairs them element by element. `#[reference]`
//!   there is a reference indexed on its full path.
//! - `#[subset(of = T, max = N, sort = "-field", count = "field")]` on an `Option<P>` (N = 1) or
//!   `Vec<P>` of previews built `From<&T>`: the constant `Struct::FIELD` ([`Subset`]) adds a
//!   child with its preview (`$push` + `$each` + `$sort` + `$slice`, or `$set` for one, and `$inc`
//!   on the count) in one transaction, or as two writes repaired by `rebuild`; `update` and
//!   `delete` edit or delete a child and, in the same transaction, refill the parent's previews
//!   from its children in sort order and move the count; `add_with`, `update_with` and
//!   `delete_with` keep several subsets of the same child in that one transaction.
//!   **The child needs one reference to the parent**: a `#[reference]` field (`Ref<P>` or an id
//!   with `to = P`), or an `#[extended_ref(to = P, ...)]` whose `_id` serves as the reference;
//!   index it with the sort key (`#[index(keys(ticket_id = 1, at = -1))]`) so each refill is one
//!   indexed query (the schema derives `{ parent: 1, key }` for the refill when no index serves
//!   it). A child without one is a compile error at `of = T`; a child with two (a follow holds
//!   `follower` and `followed`) names the one the subset follows with `via = field`
//!   (`#[subset(of = Follow, via = followed, max = 3, sort = "-at")]`), which must be a
//!   `Ref<P>` of the child (a compile error at `via` otherwise).
//!   `filter = r#"{ "status": "active" }"#` previews and counts only the children that match
//!   (equalities on the child's stored fields, checked at compile time); a child that stops
//!   matching leaves the subset and the count, one that starts matching enters them.
//!   `sync = "transactional"` (the default: only the helpers keep it), `"async"` (the
//!   [`SyncWorker`] also follows the child collection, so plain driver writes of children keep
//!   it current; `apply` enables the child collection's change-stream pre-images, from which
//!   the worker reads a deleted child's parent) or `"reconcile"`; [`Schema::reconcile`] and
//!   [`Schema::audit`] compare every parent's previews and count with its children.
//! - `#[counter(of = T)]` on an integer field of a collection root: the number of its `T`
//!   children, kept without previews (a subset that keeps only its count). The constant
//!   `Struct::FIELD` ([`Counter`]) writes the child and moves the count in one transaction:
//!   `Post::LIKE_COUNT.add(&db, &like)` (`insert` + `$inc`) and
//!   `Post::LIKE_COUNT.delete(&db, &like.to_ref())`, `.session(&mut s)` as elsewhere;
//!   `add_with`/`delete_with` keep it with the subsets and counters of the same child in that
//!   one transaction (`User::NEWEST_FOLLOWERS.add_with(&db, &follow, &[&User::FOLLOWER_COUNT])`),
//!   and [`Schema::transaction`] takes it where it takes a subset. It takes `filter = ...`,
//!   `via = field` and `sync = "..."` as a subset does (`"async"`: the [`SyncWorker`] counts the
//!   children written by other code); [`Schema::reconcile`] recounts every parent with one
//!   indexed aggregation per batch of 500 parents and rewrites the counts that differ. The field
//!   is an `i64`: the children are unbounded, so an `i32` is a compile error unless
//!   `#[schema(maximum = N)]` bounds it (the validator then refuses the child past it, and the
//!   transaction writes neither).
//! - Every `#[embed(max = N)]` array of a collection root has a constant `Struct::FIELD`
//!   ([`EmbeddedArray`]) whose pushes keep the bound: with `cap`, `$slice: -N`.
//!
//! Container option `#[collection(name = "product_specs", same_id_as = Product)]` stores a
//! part of another collection's documents under the owner's `_id` (seed 003's sixth outcome:
//! bounded and read together, but large and cold; a 40 KB specification sheet kept out of every
//! listing of products). The part's `_id` field has the owner's id type (another type is a
//! compile error at that field, naming the type). Generated: `ProductSpec::of(&db,
//! &product.to_ref())` (one `find` on `_id`, `.session(..)`), `ProductSpec::of_all`, and the
//! constant `ProductSpec::OWNER` ([`PartOf`]): `insert(&db, &product, &spec)` writes both in one
//! transaction, `lookup()` joins owners with their part on `_id`. The part needs no index of its
//! own. [`Schema::delete_source`]`::<Product>` deletes the parts with their owner in its
//! transaction; [`Schema::audit`] counts orphan parts and owners without their part (unless the
//! part is declared `optional_part`); the report and its diagrams draw the pair.
//!
//! Container attribute `#[bucket(parent = f, entries = f, count = f, key = "k", first = f,
//! last = f)]` makes a collection store a parent's entries in bounded buckets: `Struct::BUCKET`
//! ([`Bucket`]) appends with one upsert and reads a parent's entries in key order. For
//! measurements over time, prefer a time series collection (below) unless an entry is updated or
//! deleted on its own, a bucket must hold a summary the application maintains, or the entries
//! need a validator on the server (see [`Bucket`] for when to choose which).
//!
//! Collations, places and measurements (issue 41):
//! - `#[collection(name = "...", collation(locale = "en", strength = 2))]` is the collection's
//!   default collation (strength 2 compares without case: a unique email refuses "ANA@x.io"
//!   beside "ana@x.io" as [`Error::Duplicate`]); `collation(...)` on `#[index]` and `#[query]`
//!   sets one index's or one query's. The library sends the collation with every index and
//!   declared query; `Schema::build` fits a string condition or sort only to an index of the
//!   query's collation, and a derived index carries it ([`spec::Collation`]).
//! - [`geo::Point`] is a GeoJSON point (`Point::new(lng, lat)` and its validator refuse a
//!   latitude outside ±90); `#[index(keys(location = "2dsphere"))]` indexes it;
//!   `#[query(name = "...", eq(kind), near(location), limit = 20)]` returns the nearest first
//!   within a distance (`fn(&db, &kind, &Point, max_metres: f64)`), `within(location)` those
//!   inside a [`geo::Area`]. A `near` without a 2dsphere index on its field is a compile error.
//! - `#[collection(name = "readings", timeseries(time = at, meta = sensor, granularity =
//!   "minutes"), expire_after_secs = 604800)]` is a time series collection ([`spec::TimeSeries`]):
//!   `apply` creates it so before anything writes to it, refuses over a plain collection of the
//!   name ([`Error::CannotApply`]), and `collMod`s the granularity upward and the expiry. The
//!   time field is a BSON date (a compile error otherwise); mongod takes no validator on a time
//!   series collection (`T::check` validates in the library) and refuses unique, text and TTL
//!   indexes on one (compile errors).
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
//!   an `Option` `_id` that serde would write as `null`; `#[extended_ref]`, `#[subset]` and
//!   `#[counter]` in an enum's variants.
//! - A `#[subset]` or `#[counter]` whose child holds two references to the parent, without
//!   `via = field` saying which one it follows; a `#[counter]` on a field that is not an `i64`
//!   (or a bounded `i32`); a `same_id_as` part whose `_id` is not of the owner's id type.
//! - Index and schema designs mongod refuses (sparse with partial, unique hashed, TTL out of
//!   range, partial filters mongod does not support, an index on `_id` alone, two fields stored
//!   under one name, empty enums, ...), each message naming mongod's rule.
//!
//! # Ecosystem types and serde helpers
//!
//! Cargo features, named as the bson crate names its own: `chrono-0_4`, `time-0_3`, `uuid-1`
//! (each also enables bson's feature of that name, hence its serde helpers) and
//! `rust_decimal-1`. They implement [`BsonSchema`] for that crate's types; the `NonZero*`
//! integers, the IP and socket addresses, `Duration` and `SystemTime` of std need no feature.
//!
//! A schema describes what the driver stores. Typed writes (`insert_one`, ...) serialize with
//! `bson::to_raw_document_buf`, whose serializer is *not human readable*, while
//! `bson::to_document` is: types that ask (`uuid::Uuid`, std's addresses) are stored differently
//! by the two, and the validators follow the driver's path.
//!
//! | Rust type | stored by the driver | schema |
//! |---|---|---|
//! | `chrono::DateTime<Utc>` | string `2023-11-14T22:13:20.123Z` (not a BSON date) | `string`, `pattern`, `maxLength` |
//! | `chrono::DateTime<FixedOffset>`, `NaiveDate`, `NaiveDateTime`, `NaiveTime` | ISO 8601 strings | `string`, `pattern`, `maxLength` |
//! | `time::OffsetDateTime`, `PrimitiveDateTime`, `Date`, `Time`, `UtcOffset` | arrays `[year, ordinal, hour, minute, second, nanosecond, offset h, m, s]` and prefixes | `array` with a schema per position |
//! | `uuid::Uuid` | a compile error without a stored form said out loud: with `#[serde(with = "bson::serde_helpers::uuid_1_as_binary")]` binary subtype 4 (what `doc!`, mongosh and every other driver write), with `#[schema(stored_as = bson::Binary)]` serde's 16 bytes of subtype 0 (for existing data; `to_document`: a string) | `binData` |
//! | `rust_decimal::Decimal` | string `-12.345` (a double with rust_decimal's `serde-float`) | `string`, `pattern` |
//! | `NonZeroU8`, `NonZeroU16` / `NonZeroU32`, `NonZeroU64`, `NonZeroUsize` | `int` / `long` | `minimum: 1`, `maximum` |
//! | `NonZeroI8` ... `NonZeroI64` | `int` / `long` | range and `not: { enum: [0] }` |
//! | `Ipv4Addr`, `Ipv6Addr` | arrays of 4 / 16 octets (`to_document`: a string) | `array` of `int` 0..=255 |
//! | `IpAddr`, `SocketAddr` | `{ V4: ... }` or `{ V6: ... }` | `object` with one of the two |
//! | `SocketAddrV4`, `SocketAddrV6` | `[[octets], port]` (no flow info nor scope id) | `array` with a schema per position |
//! | `std::time::Duration`, `SystemTime` | `{ secs, nanos }`, `{ secs_since_epoch, nanos_since_epoch }` (not a BSON date) | `object` of two `long`s |
//!
//! `#[serde(with = "...")]` and `serialize_with` are compile errors unless the derive knows the
//! helper's stored shape: bson 2's `serde_helpers` (`chrono_datetime_as_bson_datetime`,
//! `..._optional`, `time_0_3_offsetdatetime_as_bson_datetime`, `rfc3339_string_as_bson_datetime`,
//! `i64_as_bson_datetime`, `bson_datetime_as_rfc3339_string`, `hex_string_as_object_id`,
//! `u32_as_f64`, `u64_as_f64`, `u32_as_timestamp`, `timestamp_as_u32`, the `uuid_1_as_*` and
//! `uuid_as_*` modules, and the functions `serialize_u32_as_i32`, `serialize_u64_as_i64`,
//! `serialize_object_id_as_hex_string`, ...), bson 3's converters (`datetime::FromChrono04DateTime`,
//! `object_id::AsHexString`, `u32::AsF64`, ..., with `with` or `#[serde_as(as = "...")]`, also
//! inside `Option<...>`), bson 2's `DateTime` and `Uuid` as `#[serde_as]` converters, chrono's
//! `serde::ts_seconds` ... `ts_nanoseconds` (and `_option`) and `serde_bytes` (binary). They are
//! recognised by the last segments of the path, whatever its prefix.
//!
//! ```
//! use mongo_schema::bson::doc;
//! use mongo_schema::prelude::*;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Document, Serialize, Deserialize)]
//! #[collection(name = "events")]
//! pub struct Event {
//!     #[serde(with = "mongo_schema::bson::serde_helpers::hex_string_as_object_id")]
//!     pub _id: String,
//!     #[serde(serialize_with = "mongo_schema::bson::serde_helpers::serialize_u32_as_i32")]
//!     pub attempts: u32,
//!     pub retries: std::num::NonZeroU8,
//! }
//!
//! let schema = Event::bson_schema();
//! let properties = schema.get_document("properties").unwrap();
//! assert_eq!(properties.get_document("_id").unwrap(), &doc! { "bsonType": "objectId" });
//! assert_eq!(
//!     properties.get_document("attempts").unwrap(),
//!     &doc! { "bsonType": "int", "minimum": 0_i64, "maximum": 2_147_483_647_i64 }
//! );
//! assert_eq!(properties.get_document("retries").unwrap().get_i64("minimum"), Ok(1));
//! ```
//!
//! # Queries
//!
//! Write down the queries first (seed 000's first question). `#[query(...)]` on a `Document`
//! declares an access pattern: `eq(..)` fields, `any_of(field, max = N)` (a `$in` of at most `N`
//! values), one `range(..)`, `sort(field = -1, ..)`, `limit = N`, `project = Row` (a
//! `BsonSchema` type whose fields the root stores), `index = "name"` and `pages` (keyset pages:
//! `_id` appended to the sort as the tie-break, and the action's
//! [`page`](query::DeclaredQuery::page) / [`after`](query::DeclaredQuery::after) with a
//! [`query::QueryCursor`]; `next` only when a row follows). Fields are Rust names,
//! dotted Rust paths through embedded structs, options and copies (`eq(customer.id)`), or quoted
//! stored paths (`"customer._id"`, resolved through the embedded types' stored names: a name no
//! struct stores is a compile error). Each query gets a typed function whose arguments take the
//! fields' types in every form (`&str` for a `String`), encoded through each field's serde path;
//! `eq` on an array field takes one element and matches the documents whose array holds it.
//! Awaited directly it returns the rows, its command carrying the query's name as `comment`;
//! `.count()` counts the same filter. [`Schema::build`](SchemaBuilder::build) fits every
//! declared query, and every query the library sends itself (lookups, pages, the fan-out's walk
//! and chunks, a subset's refill and count), to the indexes by mongod's planner rules
//! ([`query::fit`]: equalities in any order and in the index's prefix (ESR: an equality behind a
//! range or an unbounded key makes mongod examine that key's range), then the sort or its
//! complete reverse, ranges last; `$in` merged while the scans stay at or below 200); where none
//! serves it, it derives the ESR index, merging queries one index serves (equalities as a set). An `index = "..."` that
//! cannot serve its query is an error naming the rule. Where mongod releases plan differently
//! (an `$in` exploded for a sort over an index with an array key), the fit follows 7.0 and 8.0
//! unless [`SchemaBuilder::server_rules`] picks [`ServerRules::Mongod81`](query::ServerRules::Mongod81). [`Schema::prove`] runs `explain` of each.
//!
//! ```
//! use mongo_schema::prelude::*;
//! use mongo_schema::query::{Filter, Sort, Update};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(BsonSchema, Serialize, Deserialize, Clone, Copy)]
//! #[serde(rename_all = "snake_case")]
//! pub enum Status { Open, Closed }
//!
//! #[derive(Document, Serialize, Deserialize)]
//! #[collection(name = "tickets")]
//! #[serde(rename_all = "camelCase")]
//! #[query(name = "agent_queue", eq(team, status), sort(priority = -1, updated_at = -1), limit = 50)]
//! pub struct Ticket {
//!     #[serde(rename = "_id")] pub id: ObjectId,
//!     pub team: String,
//!     pub status: Status,
//!     pub priority: i32,
//!     pub message_count: i64,
//!     pub updated_at: DateTime,
//! }
//!
//! // the index the query needs, derived by ESR
//! let schema = Schema::new().model::<Ticket>().build()?;
//! let tickets = schema.collection("tickets").unwrap();
//! assert_eq!(
//!     tickets.indexes[0].keys,
//!     doc! { "team": 1, "status": 1, "priority": -1, "updatedAt": -1 }
//! );
//! # async fn run(db: mongodb::Database) -> mongo_schema::Result<()> {
//! let queue: Vec<Ticket> = Ticket::agent_queue(&db, "billing", &Status::Open).await?;
//! # Ok(()) }
//!
//! // typed paths from serde's stored names; values encoded as the driver stores the field
//! let filter = Filter::new()
//!     .eq(field!(Ticket, team), "billing")
//!     .eq(field!(Ticket, status), &Status::Open)
//!     .build()?;
//! assert_eq!(filter, doc! { "team": "billing", "status": "open" });
//! assert_eq!(Sort::new().desc(field!(Ticket, updated_at)).build(), doc! { "updatedAt": -1 });
//! let update = Update::new().inc(field!(Ticket, message_count), &1).build()?;
//! assert_eq!(update, doc! { "$inc": { "messageCount": 1_i64 } });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A misspelt field, a value of another type, a range or a sort on a value stored as text that
//! sorts unlike it (a `rust_decimal::Decimal`, a chrono date), or on an array, do not compile.
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

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![warn(clippy::missing_errors_doc)]

// The flat paths of 0.1 (`mongo_schema::Plan`, `mongo_schema::SyncWorker`, ...), kept for one
// release so services upgrade without an error; the documented homes are the modules below.
#[doc(hidden)]
pub use mongo_schema_core::*;

pub use mongo_schema_core::{
    BsonSchema, Document, Error, Identified, LocalValidator, Ref, Result, ResultExt, Schema,
    SchemaBuilder, SchemaError,
};

#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub use mongo_schema_core::cli;
pub use mongo_schema_core::{
    action, bson, bson_compat, error, geo, migrate, mongodb, serde_helpers, testing,
};

/// Queries: typed field paths ([`field!`](crate::field)), filter, sort and update builders,
/// declared queries, the planner's fit of a query to an index, and the proof by `explain`.
pub mod query {
    pub use mongo_schema_core::query::*;
    pub use mongo_schema_core::{explain, ExplainSummary};
}

/// Start-up: what [`Schema::plan`] computes and [`Schema::apply`] does (actions, the report,
/// versions, warnings, sharding), the audit of stored documents, and the progress events.
pub mod deploy {
    pub use mongo_schema_core::{
        Action, AppliedAction, ApplyAction, ApplyReport, ArrayPressure, AuditReport, ChildAudit,
        CollectionAudit, Observed, ObservedCollection, OnNewer, OnViolations, PartAudit, Plan,
        PlanAction, PlanOptions, RanEntry, RecordedVersion, ShardState, ShardingStatus, Topology,
        VersionStatus, Violations, Warning, APPLY_DEADLINE, DEFAULT_SCHEMA_NAME, META_COLLECTION,
        PROGRESS_TARGET,
    };
}

/// Keeping copies in sync: transactions over a source and its copies, the change-stream
/// worker of `async` copies and subsets, reconcile and failure records, and the worker's
/// metrics.
pub mod sync {
    pub use mongo_schema_core::sync_metrics as metrics;
    pub use mongo_schema_core::{
        EdgeReconcile, PartReconcile, ReconcileReport, RetryReport, SourceDelete, SourceUpdate,
        StepOutcome, SyncFailure, SyncWorker, SyncWorkerHandle, Transaction, TransactionReport,
        WorkerSnapshot, WorkerStats, DEFAULT_LEASE, DEFAULT_MAX_BATCH, DEFAULT_READY_TIMEOUT,
        DEFAULT_STALL_TIMEOUT, DEFAULT_TOKEN_SAVE_INTERVAL, FAILURES_COLLECTION,
        FAILURE_RECORD_TTL, FAN_OUT_CHUNK, TOKENS_COLLECTION, TRANSACTION_DEADLINE,
    };
}

/// Relationships at run time: typed `$lookup`s and child pages of a reference, the batch
/// resolver, bounded embedded arrays, subsets and buckets.
pub mod relations {
    #[allow(deprecated)] // a deprecated alias stays where it was documented, for one release
    pub use mongo_schema_core::EntryPage;
    pub use mongo_schema_core::{
        Attached, Bucket, ChildOrder, ChildPage, Counter, CounterType, Detached, EmbeddedArray,
        EntryCursor, Joined, Lookup, Page, PageCursor, ParentUpdate, PartOf, PreviewFn,
        PushOutcome, RebuildProgress, Relation, Resolved, RuleOf, SortKey, Subset, SubsetOf,
        SubsetReconcile, Unordered, MAX_PAGE_SIZE, RELATED_FIELD,
    };
}

/// What the derives describe and [`SchemaBuilder::build`] reads: collections, indexes, references,
/// copies and their sync graph, bounds and document sizes.
pub mod spec {
    pub use mongo_schema_core::{
        human_bytes, BoundedCollection, Collation, CollectionSpec, CopyShape, CopySpec, EmbedSpec,
        Granularity, IndexReason, IndexSpec, MapKey, OnDelete, PartSpec, RefKind, ReferenceSpec,
        SizeBound, SortDirection, SubsetEdge, SubsetSpec, SyncEdge, SyncGraph, SyncStrategy,
        TimeSeries, Unbounded, ValidationAction, ValidationLevel, MAX_DOCUMENT_BYTES,
    };
}

/// Validation without a server: the [`LocalValidator`] of a model's `$jsonSchema`, and the
/// errors of a document it (or the server, code 121) refuses.
pub mod validation {
    pub use mongo_schema_core::{BatchFailure, LocalValidator, RuleFailure, ValidationError};
}

/// `#[derive(Document)]`: a collection root. Implements [`Document`] and [`BsonSchema`].
pub use mongo_schema_derive::Document;

/// `#[derive(BsonSchema)]`: a struct or unit-only enum stored inside documents.
pub use mongo_schema_derive::BsonSchema;

/// Everything a model file needs: `use mongo_schema::prelude::*;`.
pub mod prelude {
    pub use crate::bson::{doc, oid::ObjectId, DateTime, Decimal128};
    pub use crate::field;
    pub use crate::query::ServerRules;
    pub use crate::{BsonSchema, Document, Identified, Ref, ResultExt, Schema};
}

// The README and the guide (`docs/guide/`), compiled as doc tests: every ```rust block of them
// is a test of `cargo test --workspace` (`cargo test --doc -p mongo-schema`), so a renamed item
// breaks the build, not the reader. A block that needs types it does not show brings them in
// with a hidden line, `# include!("../docs/guide/support/<file>.rs")` (paths are relative to this
// file). Blocks that need a server are functions the test never calls, or `no_run`; `#[test]`
// functions are compiled away outside `--test`, so the README's and the testing page's tests of
// the service are also run, word for word, by `tests/readme_service.rs`. `.ci/doc-links`
// checks that every page of the guide has its module here.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}

#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../docs/guide/README.md")]
    mod index {}
    #[doc = include_str!("../docs/guide/models.md")]
    mod models {}
    #[doc = include_str!("../docs/guide/queries.md")]
    mod queries {}
    #[doc = include_str!("../docs/guide/relations.md")]
    mod relations {}
    #[doc = include_str!("../docs/guide/subsets.md")]
    mod subsets {}
    #[doc = include_str!("../docs/guide/collation-geo-timeseries.md")]
    mod collation_geo_timeseries {}
    #[doc = include_str!("../docs/guide/sync-worker.md")]
    mod sync_worker {}
    #[doc = include_str!("../docs/guide/scaling.md")]
    mod scaling {}
    #[doc = include_str!("../docs/guide/testing.md")]
    mod testing {}
    #[doc = include_str!("../docs/guide/transactions.md")]
    mod transactions {}
    #[doc = include_str!("../docs/guide/deploying.md")]
    mod deploying {}
    #[doc = include_str!("../docs/guide/operators.md")]
    mod operators {}
    #[doc = include_str!("../docs/guide/pull.md")]
    mod pull {}
    #[doc = include_str!("../docs/guide/limits.md")]
    mod limits {}
    #[doc = include_str!("../docs/guide/benchmarks.md")]
    mod benchmarks {}
}

#[doc(hidden)]
pub mod __private {
    pub use mongo_schema_core::__private::*;
    pub use mongo_schema_core::{
        BoundedCollection, BsonSchema, Bucket, Collation, CollectionSpec, CopyShape, CopySpec,
        Counter, Document, EmbedSpec, EmbeddedArray, Identified, IndexReason, IndexSpec,
        LocalValidator, OnDelete, PartSpec, Ref, RefKind, ReferenceSpec, Relation, Result, SortKey,
        Subset, SubsetSpec, SyncStrategy, ValidationAction, ValidationLevel,
    };
}
