//! Attribute and option names.

use std::fmt::{self, Display};

use syn::{Ident, Path};

#[derive(Copy, Clone)]
pub struct Symbol(pub &'static str);

macro_rules! symbols {
    ($($name:ident = $text:literal,)*) => { $(pub const $name: Symbol = Symbol($text);)* };
}

symbols! {
    // our attributes
    COLLECTION = "collection",
    INDEX = "index",
    EMBED = "embed",
    SCHEMA = "schema",
    REFERENCE = "reference",
    EXTENDED_REF = "extended_ref",
    SUBSET = "subset",
    COUNTER = "counter",
    QUERY = "query",
    // options of ours
    NAME = "name",
    VALIDATION_LEVEL = "validation_level",
    VALIDATION_ACTION = "validation_action",
    ADDITIONAL_PROPERTIES = "additional_properties",
    SHARD_KEY = "shard_key",
    SAME_ID_AS = "same_id_as",
    OPTIONAL_PART = "optional_part",
    KEYS = "keys",
    UNIQUE = "unique",
    SPARSE = "sparse",
    PARTIAL = "partial",
    EXPIRE_AFTER_SECS = "expire_after_secs",
    MAX = "max",
    CAP = "cap",
    PAGES = "pages",
    TO = "to",
    FIELDS = "fields",
    SYNC = "sync",
    VIA = "via",
    ON_DELETE = "on_delete",
    OF = "of",
    SORT = "sort",
    COUNT = "count",
    FILTER = "filter",
    BUCKET = "bucket",
    PARENT = "parent",
    ENTRIES = "entries",
    KEY = "key",
    FIRST = "first",
    LAST = "last",
    MAX_LENGTH = "max_length",
    MIN_LENGTH = "min_length",
    MINIMUM = "minimum",
    MAXIMUM = "maximum",
    PATTERN = "pattern",
    NOT_NULL = "not_null",
    OPEN = "open",
    STORED_AS = "stored_as",
    CRATE = "crate",
    EQ = "eq",
    ANY_OF = "any_of",
    RANGE = "range",
    LIMIT = "limit",
    PROJECT = "project",
    // serde
    SERDE = "serde",
    RENAME = "rename",
    RENAME_ALL = "rename_all",
    RENAME_ALL_FIELDS = "rename_all_fields",
    SERIALIZE = "serialize",
    SKIP = "skip",
    SKIP_SERIALIZING = "skip_serializing",
    SKIP_SERIALIZING_IF = "skip_serializing_if",
    FLATTEN = "flatten",
    WITH = "with",
    SERIALIZE_WITH = "serialize_with",
    GETTER = "getter",
    TAG = "tag",
    CONTENT = "content",
    UNTAGGED = "untagged",
    TRANSPARENT = "transparent",
    INTO = "into",
    REMOTE = "remote",
    FIELD_IDENTIFIER = "field_identifier",
    VARIANT_IDENTIFIER = "variant_identifier",
}

// collation, geo and time series options (a block of their own)
symbols! {
    COLLATION = "collation",
    LOCALE = "locale",
    STRENGTH = "strength",
    CASE_LEVEL = "case_level",
    CASE_FIRST = "case_first",
    NUMERIC_ORDERING = "numeric_ordering",
    ALTERNATE = "alternate",
    BACKWARDS = "backwards",
    NEAR = "near",
    WITHIN = "within",
    TIMESERIES = "timeseries",
    TIME = "time",
    META = "meta",
    GRANULARITY = "granularity",
}

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl Display for Symbol {
    fn fmt(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(self.0)
    }
}
