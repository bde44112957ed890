//! The models `pull` decided on, before they are Rust text: collections, structs, unit enums and
//! internally tagged enums, each field with its type, presence and the evidence behind them.
//! `validator` turns this into `$jsonSchema`, `emit` into Rust; both read only this.

use mongodb::bson::Document;

/// A type of a field, or of an array's or map's elements.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// `i32`: only `int` stored.
    I32,
    /// `i64`, stored as `long`, or as `int` and `long` (the validator keeps both).
    I64 {
        /// `int` values are stored too.
        with_int: bool,
    },
    /// `f64`, stored as `double`, or also as `int` / `long` (the validator keeps them).
    F64 {
        /// `int` values are stored too.
        with_int: bool,
        /// `long` values are stored too.
        with_long: bool,
    },
    /// `String`.
    Str,
    /// `bool`.
    Bool,
    /// `DateTime` (a BSON date).
    Date,
    /// `ObjectId`.
    ObjectId,
    /// `Decimal128`.
    Decimal,
    /// `bson::Uuid`: binary subtype 4.
    Uuid,
    /// `bson::Binary`: any other subtype (the schema is `binData`).
    Binary,
    /// `bson::Regex`.
    Regex,
    /// `bson::Timestamp`.
    Timestamp,
    /// A unit enum (index into [`Model::enums`]).
    Enum(usize),
    /// A struct (index into [`Model::structs`]).
    Struct(usize),
    /// An internally tagged enum (index into [`Model::unions`]).
    Union(usize),
    /// A fixed-length array: every stored array had this length.
    Fixed {
        /// The elements.
        items: Box<Ty>,
        /// The length.
        len: u64,
    },
    /// A bounded array.
    Array {
        /// The elements.
        items: Box<Ty>,
        /// The bound (`#[embed(max)]` / `#[reference(max)]`).
        max: u64,
    },
    /// A map with string keys.
    Map {
        /// The values.
        values: Box<Ty>,
        /// The bound (`maxProperties`).
        max: u64,
    },
    /// A GeoJSON point (`{ type: "Point", coordinates: [lng, lat] }`): `geo::Point`.
    GeoPoint,
    /// Undecided: any BSON value (`Bson`, an empty schema).
    Any,
}

impl Ty {
    /// The innermost scalar of an array (or the type itself).
    pub fn element(&self) -> &Ty {
        match self {
            Ty::Array { items, .. } => items.element(),
            other => other,
        }
    }
}

/// Whether a field may be absent and whether it may be `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presence {
    /// Some documents do not hold the field.
    pub missing: bool,
    /// Some documents hold `null` there.
    pub null: bool,
}

/// A field that holds ids of another collection's documents, confirmed against it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The target collection.
    pub collection: String,
    /// The target's Rust type.
    pub type_name: String,
}

/// A sub-document holding the `_id` of a target and copies of some of its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtendedRef {
    /// The target collection.
    pub collection: String,
    /// The target's Rust type.
    pub type_name: String,
    /// The copied fields (stored names).
    pub fields: Vec<String>,
    /// `frozen`, `transactional` or `async`.
    pub sync: String,
}

/// One field of a struct or struct variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The stored name.
    pub stored: String,
    /// The Rust identifier (`r#type`, `user_id`).
    pub ident: String,
    /// The type.
    pub ty: Ty,
    /// Absent, `null`.
    pub presence: Presence,
    /// Absent in some documents and never `null`, where `null` is refused (by the server's
    /// validator, or, in a collection without one, by every stored document): emitted as
    /// `#[schema(not_null)]`, so the pulled validator keeps refusing it.
    pub not_null: bool,
    /// A path the server's validator leaves unchecked (it does not declare it, or declares it
    /// with nothing that constrains it): emitted as `#[schema(open)]`, so the pulled validator
    /// takes any value there too, whatever type the samples gave the field.
    pub open: bool,
    /// Set when the values are ids of another collection.
    pub reference: Option<Reference>,
    /// Set when the value is an extended reference.
    pub extended: Option<ExtendedRef>,
    /// The evidence, one line per decision, written as a comment above the field.
    pub notes: Vec<String>,
    /// Constraints the server's validator declares (`maxLength`, `minimum`, ...), kept as
    /// `#[schema(...)]`: `(keyword, value)`.
    pub constraints: Vec<(String, mongodb::bson::Bson)>,
}

/// A struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    /// The Rust name.
    pub name: String,
    /// The path it was found at (`orders.items[]`).
    pub path: String,
    /// Fields in stored order.
    pub fields: Vec<Field>,
    /// The server's validator describes it without `additionalProperties: false`: fields it
    /// does not name are allowed, and the pulled struct allows them too.
    pub open: bool,
}

/// A unit enum stored as strings.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitEnum {
    /// The Rust name.
    pub name: String,
    /// `(variant identifier, stored value)`, in value order.
    pub variants: Vec<(String, String)>,
    /// Made from the values the documents hold (not the validator's `enum`, nor `--enum`): the
    /// relationships pass may still find them to be the `_id`s of a collection, and then the
    /// field is a reference instead.
    pub from_samples: bool,
}

/// A variant of an internally tagged enum.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The Rust identifier.
    pub ident: String,
    /// The tag value.
    pub value: String,
    /// The fields besides the tag.
    pub fields: Vec<Field>,
}

/// An internally tagged enum: `#[serde(tag = "...")]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// The Rust name.
    pub name: String,
    /// The path it was found at.
    pub path: String,
    /// The tag's stored name.
    pub tag: String,
    /// The variants, in tag value order.
    pub variants: Vec<Variant>,
}

/// An existing index, as an `#[index]` attribute says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    /// `(stored path, 1 | -1 | "text" | ...)`, as the server lists them.
    pub keys: Document,
    /// The server's name.
    pub name: String,
    /// `unique`.
    pub unique: bool,
    /// `sparse`.
    pub sparse: bool,
    /// `expireAfterSeconds`.
    pub expire_after_secs: Option<i64>,
    /// `partialFilterExpression` as relaxed extended JSON.
    pub partial: Option<String>,
    /// `false` for an index that starts with a single reference (or a copy's `_id`) and another
    /// key: `#[index(.., pages = false)]` keeps it as the server has it, where the derive would
    /// append the `_id` tie-break of keyset pages (another index than the server's).
    pub pages: bool,
    /// Its collation as the attribute says it (`collation(locale = "en", strength = 2)`), when
    /// it is not the collection's default.
    pub collation: Option<String>,
}

/// A collection root.
#[derive(Debug, Clone, PartialEq)]
pub struct Collection {
    /// The collection name.
    pub name: String,
    /// The root struct (index into [`Model::structs`]); for a collection of kinds a placeholder
    /// that carries the enum's name.
    pub root: usize,
    /// A collection whose documents are of several kinds: the whole-document enum (index into
    /// [`Model::unions`]).
    pub kinds: Option<usize>,
    /// Documents in the collection when `pull` ran.
    pub count: u64,
    /// The indexes kept as `#[index]` attributes.
    pub indexes: Vec<Index>,
    /// `validationLevel` of the existing validator, when not the default.
    pub validation_level: Option<String>,
    /// `validationAction` of the existing validator, when not the default.
    pub validation_action: Option<String>,
    /// The collection's default collation as the attribute says it
    /// (`collation(locale = "en", strength = 2)`).
    pub collation: Option<String>,
    /// Its `_id`s lie inside another collection's: a part stored under its owner's `_id`
    /// (seed 003's large and cold outcome).
    pub part_of: Option<PartOf>,
    /// A time series collection's options, as the server lists them.
    pub timeseries: Option<TimeSeries>,
    /// The keys of each index on the server, in order: in a database mongo-schema made (it
    /// holds a version record), a reference or copy was declared only where the derive's
    /// indexes say so.
    pub indexed: Vec<Vec<String>>,
    /// Options of the collection the attributes cannot say (capped, clustered, pre- and
    /// post-images): written as comments above the model, and in the report.
    pub unsaid: Vec<String>,
}

/// A time series collection: `timeseries(time, meta, granularity)` and `expire_after_secs`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeries {
    /// `timeField`.
    pub time: String,
    /// `metaField`.
    pub meta: Option<String>,
    /// `granularity` (`seconds`, `minutes`, `hours`), when listed.
    pub granularity: Option<String>,
    /// `expireAfterSeconds` of the collection.
    pub expire_after_secs: Option<i64>,
    /// `bucketMaxSpanSeconds` / `bucketRoundingSeconds` listed without a granularity: the
    /// attribute cannot say them.
    pub custom_buckets: bool,
}

/// A collection whose every `_id` is an `_id` of another: `same_id_as`.
#[derive(Debug, Clone, PartialEq)]
pub struct PartOf {
    /// The owners' collection.
    pub owner: String,
    /// The owners' Rust type.
    pub type_name: String,
    /// Some owners have no part: `optional_part`.
    pub optional: bool,
    /// Every part's owner was found (checked over all of them, or a name hints at the pair):
    /// the attribute is written; otherwise a comment proposes it.
    pub certain: bool,
    /// The counts behind it, written above the attribute.
    pub evidence: String,
}

/// Everything `pull` decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Model {
    /// Collections, by name.
    pub collections: Vec<Collection>,
    /// Structs (roots, sub-documents, array elements), each emitted once.
    pub structs: Vec<Struct>,
    /// Unit enums.
    pub enums: Vec<UnitEnum>,
    /// Internally tagged enums.
    pub unions: Vec<Union>,
    /// The mongo-schema version record the database holds (`mongo_schema_meta`), when one
    /// holds the pulled collections: the pulled `schema()` takes its name and version.
    pub record: Option<Record>,
}

/// A version record of `mongo_schema_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its `_id`: the schema's name.
    pub name: String,
    /// The recorded version.
    pub version: u64,
}

impl Model {
    /// The Rust name of a collection's root type.
    pub fn root_name(&self, collection: &str) -> Option<&str> {
        self.collections
            .iter()
            .find(|c| c.name == collection)
            .map(|c| self.structs[c.root].name.as_str())
    }
}
