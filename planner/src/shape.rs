//! What the planner is asked about: an index ([`IndexShape`]) and a query ([`QueryShape`]) as
//! declared, with the key directions, the geo predicate, the time series fields and the mongod
//! release whose rules decide.

use std::fmt;

/// A key direction in an index pattern or a sort: 1 or -1 (other index kinds, e.g. "text",
/// "2dsphere", "hashed", are `Special(String)`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyDir {
    /// Ascending, `1`.
    Asc,
    /// Descending, `-1`.
    Desc,
    /// A special index kind, e.g. `"hashed"`, `"text"`, `"2dsphere"`.
    Special(String),
}

impl KeyDir {
    /// The opposite direction; a special kind stays itself.
    pub fn reversed(&self) -> KeyDir {
        match self {
            KeyDir::Asc => KeyDir::Desc,
            KeyDir::Desc => KeyDir::Asc,
            KeyDir::Special(kind) => KeyDir::Special(kind.clone()),
        }
    }

    pub(crate) fn is_hashed(&self) -> bool {
        matches!(self, KeyDir::Special(kind) if kind == "hashed")
    }
}

impl fmt::Display for KeyDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDir::Asc => f.write_str("1"),
            KeyDir::Desc => f.write_str("-1"),
            KeyDir::Special(kind) => write!(f, "\"{kind}\""),
        }
    }
}

/// One index as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexShape {
    /// The index name, for messages.
    pub name: String,
    /// The key pattern, in order.
    pub keys: Vec<(String, KeyDir)>,
    /// `unique: true`.
    pub unique: bool,
    /// `sparse: true`.
    pub sparse: bool,
    /// Has a `partialFilterExpression`.
    pub partial: bool,
    /// Locale string or canonical JSON of the collation; `None` is the simple collation.
    pub collation: Option<String>,
    /// Stored paths that are arrays, e.g. `"tags"`, `"lines.product._id"`; a key is multikey
    /// when one of these is its path or a dotted prefix of it.
    pub multikey_paths: Vec<String>,
}

/// A query as declared: which stored paths it constrains and how.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryShape {
    /// Paths with an equality predicate.
    pub eq: Vec<String>,
    /// Paths with an `$in`, each with the largest list size it is run with.
    pub in_: Vec<(String, usize)>,
    /// Paths with a range predicate (`$gt`, `$lte`, ...).
    pub range: Vec<String>,
    /// The sort, in order.
    pub sort: Vec<(String, KeyDir)>,
    /// The query's collation (same form as [`IndexShape::collation`]); `None` is simple.
    pub collation: Option<String>,
    /// Stored paths known to be arrays (joined with the index's own multikey paths).
    pub multikey_paths: Vec<String>,
    /// Arrays whose conditions the query sends as one `$elemMatch` on each (`"items"` for
    /// `{ items: { $elemMatch: { sku: .., qty: .. } } }`, an inner array's inside its outer
    /// one's): the predicates on paths under one of them share its element, so a multikey
    /// index intersects and compounds their bounds there (rule 5).
    pub elem_match: Vec<String>,
    /// Stored paths whose values a collation never compares: no string, array or object
    /// (numbers, dates, ObjectIds, booleans). Under another collation than the index's, a key on
    /// one of them keeps its bounds and its order (rule 6); every other path may hold strings.
    pub uncollated_paths: Vec<String>,
    /// The geo predicate of the query, if any (rule 8).
    pub geo: Option<GeoPredicate>,
    /// The fields of a time series collection, when the query reads one (rule 9).
    pub time_series: Option<TimeSeriesFields>,
    /// Whose planner rules decide (mongod 7.0 and 8.0 by default).
    pub rules: ServerRules,
}

/// A geo predicate of a query (rule 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeoPredicate {
    /// The stored path of the GeoJSON field.
    pub path: String,
    /// Nearest first, or inside an area.
    pub kind: GeoKind,
}

/// What a geo predicate asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeoKind {
    /// `$near` / `$geoNear`: the documents nearest first, within a distance.
    Near,
    /// `$geoWithin`: the documents inside an area (a circle or a polygon).
    Within,
}

/// The fields of a time series collection (rule 9).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimeSeriesFields {
    /// The time field (`timeField`).
    pub time: String,
    /// The meta field (`metaField`), if the collection has one.
    pub meta: Option<String>,
}

impl TimeSeriesFields {
    /// Whether `path` is the meta field or a path under it (a key mongod keeps as it is).
    pub fn is_meta(&self, path: &str) -> bool {
        self.meta.as_deref().is_some_and(|meta| {
            path == meta || path.strip_prefix(meta).is_some_and(|r| r.starts_with('.'))
        })
    }

    /// Whether `path` is bounded by its buckets' minimum and maximum: the time field or a
    /// measurement (anything but the meta field).
    pub fn is_bucket_bounded(&self, path: &str) -> bool {
        !self.is_meta(path)
    }
}

/// The mongod release line whose planner rules a fit follows where they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerRules {
    /// mongod 7.0 and 8.0: `explodeForSort` gives no order on a multikey index, so an `$in`
    /// before the sort keys of an index with any array key is sorted in memory.
    #[default]
    Mongod70,
    /// mongod 8.1 and later (SERVER-56865, jstests `explode_for_sort_multikey.js`,
    /// `requires_fcv_81`): the exploded scans give the order of the keys after the exploded
    /// prefix up to the first multikey key, an exploded multikey key included.
    Mongod81,
}

impl ServerRules {
    /// Whether `explodeForSort` serves a sort from an index with an array key.
    pub fn explodes_multikey_indexes(self) -> bool {
        matches!(self, ServerRules::Mongod81)
    }
}

/// Whether an index key is a `2dsphere` one (the key of rule 8's geo predicates).
pub(crate) fn is_2dsphere(dir: &KeyDir) -> bool {
    matches!(dir, KeyDir::Special(kind) if kind == "2dsphere")
}
