//! The `$jsonSchema` rules of mongod's parser, checked before a validator reaches a server.
//!
//! mongod 7/8 refuse a validator whose `$jsonSchema` breaks any of these rules (`create` and
//! `collMod` fail with `FailedToParse` or `TypeMismatch`); lenient servers such as SecantusDB
//! accept some of them and then behave in their own way. The rules follow mongod's
//! `src/mongo/db/matcher/schema/json_schema_parser.cpp` (keywords, their shapes, `bsonType`
//! aliases), `matcher_type_set.cpp` (the `type` aliases),
//! `BSONElement::parseIntegerElementToNonNegativeLong` (lengths and counts),
//! `RegexMatchExpression` (the `pattern` regex) and `CollectionImpl::parseValidator` (no
//! encryption keywords unless the validator is strict and errors); the unit tests name the
//! jstests file each case comes from.
//!
//! Unlike mongod, which stops at the first error, the check reports every problem it finds, each
//! with the dotted path of the offending keyword (`$jsonSchema.properties.tags.maxItems`).

use std::collections::HashSet;

use super::edit_distance;
use mongodb::bson::{Bson, Document};

/// The keywords mongod's `$jsonSchema` parser knows.
const KEYWORDS: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "allOf",
    "anyOf",
    "bsonType",
    "dependencies",
    "description",
    "encrypt",
    "encryptMetadata",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "not",
    "oneOf",
    "pattern",
    "patternProperties",
    "properties",
    "required",
    "title",
    "type",
    "uniqueItems",
];

/// JSON Schema keywords that mongod names and refuses as "not currently supported".
const UNSUPPORTED: &[&str] = &["$ref", "$schema", "default", "definitions", "format", "id"];

/// The aliases `bsonType` accepts: the BSON type names, plus `number` for every numeric type.
const BSON_TYPES: &[&str] = &[
    "double",
    "string",
    "object",
    "array",
    "binData",
    "undefined",
    "objectId",
    "bool",
    "date",
    "null",
    "regex",
    "dbPointer",
    "javascript",
    "symbol",
    "javascriptWithScope",
    "int",
    "timestamp",
    "long",
    "decimal",
    "minKey",
    "maxKey",
    "number",
];

/// The aliases `type` accepts: the JSON types mongod supports (not `integer`).
const JSON_TYPES: &[&str] = &["array", "boolean", "null", "number", "object", "string"];

/// The algorithms of the `encrypt` and `encryptMetadata` keywords.
const FLE_ALGORITHMS: &[&str] = &[
    "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic",
    "AEAD_AES_256_CBC_HMAC_SHA_512-Random",
];

/// mongod's limit on the length of a regular expression (`RegexMatchExpression`).
const MAX_PATTERN_BYTES: usize = 32764;

/// Every rule of mongod's `$jsonSchema` parser that `validator` breaks, one sentence each
/// (`` `$jsonSchema.properties.tags.maxItems` is -1; mongod requires a non-negative integer ``).
/// A `$jsonSchema` beside query operators, or inside `$and`, `$or` and `$nor`, is checked too;
/// the query operators themselves are not. `strict_errors` says whether the collection's level
/// is `strict` and its action `error`: otherwise mongod refuses the encryption keywords, which
/// could log plaintext.
pub(crate) fn validator_problems(validator: &Document, strict_errors: bool) -> Vec<String> {
    let mut checker = Checker {
        problems: Vec::new(),
        encryption_allowed: strict_errors,
    };
    checker.query(validator, "");
    checker.problems
}

struct Checker {
    problems: Vec<String>,
    encryption_allowed: bool,
}

impl Checker {
    /// A query document (the validator, or a clause of `$and`/`$or`/`$nor`) at `prefix`.
    fn query(&mut self, query: &Document, prefix: &str) {
        for (key, value) in query {
            let at = format!("{prefix}{key}");
            match (key.as_str(), value) {
                ("$jsonSchema", Bson::Document(schema)) => self.schema(schema, &at, true),
                ("$jsonSchema", other) => self.problem(
                    &at,
                    format!("is {}; mongod requires an object", show(other)),
                ),
                ("$and" | "$or" | "$nor", Bson::Array(clauses)) => {
                    for (i, clause) in clauses.iter().enumerate() {
                        if let Bson::Document(clause) = clause {
                            self.query(clause, &format!("{at}.{i}."));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn problem(&mut self, path: &str, text: String) {
        self.problems.push(format!("`{path}` {text}"));
    }

    /// One (sub)schema at `path`. `top` is the schema of the document itself, where mongod skips
    /// some work (it does not compile a top-level `pattern`).
    fn schema(&mut self, schema: &Document, path: &str, top: bool) {
        for key in schema.keys() {
            if KEYWORDS.contains(&key.as_str()) {
                continue;
            }
            let at = join(path, key);
            if key == super::compose::PROBLEM {
                let text = schema.get_str(key).unwrap_or_default();
                self.problems.push(format!(
                    "`{path}` cannot describe what serde stores: {text}"
                ));
            } else if UNSUPPORTED.contains(&key.as_str()) {
                self.problem(
                    &at,
                    "is a JSON Schema keyword that mongod does not support".to_owned(),
                );
            } else {
                let hint = suggestion(key)
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default();
                self.problem(
                    &at,
                    format!("is not a `$jsonSchema` keyword of mongod{hint}"),
                );
            }
        }
        for keyword in ["description", "title"] {
            if let Some(value) = schema.get(keyword) {
                if !matches!(value, Bson::String(_)) {
                    self.problem(
                        &join(path, keyword),
                        format!("is {}; mongod requires a string", show(value)),
                    );
                }
            }
        }
        self.types(schema, path);
        self.scalar_keywords(schema, path, top);
        self.array_keywords(schema, path);
        self.encryption(schema, path);
        self.object_keywords(schema, path);
        self.logical_keywords(schema, path);
    }

    /// `type` and `bsonType`: at most one of them, each a known alias or a non-empty array of
    /// distinct ones.
    fn types(&mut self, schema: &Document, path: &str) {
        if schema.contains_key("type") && schema.contains_key("bsonType") {
            self.problem(
                path,
                "has both `type` and `bsonType`; mongod accepts only one of them".to_owned(),
            );
        }
        if let Some(value) = schema.get("type") {
            self.type_set(value, &join(path, "type"), JSON_TYPES);
        }
        if let Some(value) = schema.get("bsonType") {
            self.type_set(value, &join(path, "bsonType"), BSON_TYPES);
        }
    }

    fn type_set(&mut self, value: &Bson, path: &str, aliases: &[&str]) {
        let names: Vec<&Bson> = match value {
            Bson::String(_) => vec![value],
            Bson::Array(items) if items.is_empty() => {
                return self.problem(
                    path,
                    "is an empty array; mongod requires at least one type".to_owned(),
                )
            }
            Bson::Array(items) => items.iter().collect(),
            other => {
                return self.problem(
                    path,
                    format!(
                        "is {}; mongod requires a type name or an array of them",
                        show(other)
                    ),
                )
            }
        };
        let mut seen = HashSet::new();
        for name in names {
            let Bson::String(name) = name else {
                self.problem(
                    path,
                    format!("lists {}; mongod requires type names (strings)", show(name)),
                );
                continue;
            };
            if !seen.insert(name.as_str()) {
                self.problem(
                    path,
                    format!("lists `{name}` twice; mongod requires distinct types"),
                );
            } else if name == "integer" {
                self.problem(
                    path,
                    "names `integer`, which mongod does not support: use `bsonType: \"int\"` or \"long\""
                        .to_owned(),
                );
            } else if !aliases.contains(&name.as_str()) {
                self.problem(path, unknown_type(name, aliases));
            }
        }
    }

    /// `pattern`, the lengths, `multipleOf`, `minimum`/`maximum` and their exclusive flags.
    fn scalar_keywords(&mut self, schema: &Document, path: &str, top: bool) {
        if let Some(pattern) = schema.get("pattern") {
            let at = join(path, "pattern");
            match pattern {
                // mongod compiles the regex of a nested schema only: a top-level one is a no-op
                Bson::String(regex) if !top => {
                    if let Some(problem) = regex_problem(regex) {
                        self.problem(&at, problem);
                    }
                }
                Bson::String(_) => {}
                other => self.problem(
                    &at,
                    format!("is {}; mongod requires a string (a regex)", show(other)),
                ),
            }
        }
        for keyword in [
            "maxLength",
            "minLength",
            "maxItems",
            "minItems",
            "maxProperties",
            "minProperties",
        ] {
            if let Some(value) = schema.get(keyword) {
                if !is_non_negative_integer(value) {
                    self.problem(
                        &join(path, keyword),
                        format!("is {}; mongod requires a non-negative integer", show(value)),
                    );
                }
            }
        }
        if let Some(value) = schema.get("multipleOf") {
            let at = join(path, "multipleOf");
            match number(value) {
                None => self.problem(&at, format!("is {}; mongod requires a number", show(value))),
                Some(n) if n <= 0.0 => self.problem(
                    &at,
                    format!("is {}; mongod requires a positive number", show(value)),
                ),
                Some(_) => {}
            }
        }
        for (bound, exclusive) in [
            ("maximum", "exclusiveMaximum"),
            ("minimum", "exclusiveMinimum"),
        ] {
            if let Some(value) = schema.get(bound) {
                if number(value).is_none() {
                    self.problem(
                        &join(path, bound),
                        format!("is {}; mongod requires a number", show(value)),
                    );
                }
            }
            if let Some(value) = schema.get(exclusive) {
                if !schema.contains_key(bound) {
                    self.problem(
                        &join(path, exclusive),
                        format!("is set without `{bound}`; mongod requires `{bound}` with it"),
                    );
                } else if !matches!(value, Bson::Boolean(_)) {
                    self.problem(
                        &join(path, exclusive),
                        format!("is {}; mongod requires a boolean", show(value)),
                    );
                }
            }
        }
    }

    /// `uniqueItems`, `items` and `additionalItems` (the counts are checked with the lengths).
    fn array_keywords(&mut self, schema: &Document, path: &str) {
        if let Some(value) = schema.get("uniqueItems") {
            if !matches!(value, Bson::Boolean(_)) {
                self.problem(
                    &join(path, "uniqueItems"),
                    format!("is {}; mongod requires a boolean", show(value)),
                );
            }
        }
        if let Some(items) = schema.get("items") {
            let at = join(path, "items");
            match items {
                Bson::Document(items) => self.schema(items, &at, false),
                Bson::Array(items) => self.schema_list(items, &at, "items"),
                other => self.problem(
                    &at,
                    format!(
                        "is {}; mongod requires a schema (object) or an array of schemas",
                        show(other)
                    ),
                ),
            }
        }
        if let Some(value) = schema.get("additionalItems") {
            self.bool_or_schema(value, &join(path, "additionalItems"));
        }
    }

    /// `required`, `properties`, `patternProperties`, `additionalProperties`, `dependencies`.
    fn object_keywords(&mut self, schema: &Document, path: &str) {
        if let Some(required) = schema.get("required") {
            self.required(required, &join(path, "required"));
        }
        for keyword in ["properties", "patternProperties"] {
            let Some(value) = schema.get(keyword) else {
                continue;
            };
            let at = join(path, keyword);
            let Bson::Document(properties) = value else {
                self.problem(
                    &at,
                    format!("is {}; mongod requires an object of schemas", show(value)),
                );
                continue;
            };
            for (name, property) in properties {
                let at = join(&at, name);
                match property {
                    Bson::Document(property) => self.schema(property, &at, false),
                    other => self.problem(
                        &at,
                        format!("is {}; mongod requires a schema (object)", show(other)),
                    ),
                }
            }
        }
        if let Some(value) = schema.get("additionalProperties") {
            self.bool_or_schema(value, &join(path, "additionalProperties"));
        }
        if let Some(value) = schema.get("dependencies") {
            self.dependencies(value, &join(path, "dependencies"));
        }
    }

    fn required(&mut self, value: &Bson, path: &str) {
        let Bson::Array(names) = value else {
            return self.problem(
                path,
                format!(
                    "is {}; mongod requires an array of field names",
                    show(value)
                ),
            );
        };
        if names.is_empty() {
            return self.problem(
                path,
                "is an empty array; mongod requires at least one field name (leave `required` out instead)"
                    .to_owned(),
            );
        }
        self.distinct_names(names, path);
    }

    /// The names of `required` or of a property dependency: strings, distinct, without NUL.
    fn distinct_names(&mut self, names: &[Bson], path: &str) {
        let mut seen = HashSet::new();
        for name in names {
            match name {
                Bson::String(name) if name.contains('\0') => self.problem(
                    path,
                    format!("lists {name:?}, which contains a NUL byte; mongod refuses it"),
                ),
                Bson::String(name) if !seen.insert(name.as_str()) => self.problem(
                    path,
                    format!("lists `{name}` twice; mongod requires distinct names"),
                ),
                Bson::String(_) => {}
                other => self.problem(
                    path,
                    format!(
                        "lists {}; mongod requires field names (strings)",
                        show(other)
                    ),
                ),
            }
        }
    }

    fn dependencies(&mut self, value: &Bson, path: &str) {
        let Bson::Document(dependencies) = value else {
            return self.problem(
                path,
                format!("is {}; mongod requires an object", show(value)),
            );
        };
        for (name, dependency) in dependencies {
            let at = join(path, name);
            match dependency {
                Bson::Document(schema) => self.schema(schema, &at, false),
                Bson::Array(names) if names.is_empty() => self.problem(
                    &at,
                    "is an empty array; mongod requires at least one field name".to_owned(),
                ),
                Bson::Array(names) => self.distinct_names(names, &at),
                // mongod lets annotations through here
                Bson::String(_) if name == "title" || name == "description" => {}
                other => self.problem(
                    &at,
                    format!(
                        "is {}; mongod requires a schema (object) or an array of field names",
                        show(other)
                    ),
                ),
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf` (non-empty arrays of schemas), `not` (a schema) and `enum`
    /// (a non-empty array of distinct values).
    fn logical_keywords(&mut self, schema: &Document, path: &str) {
        for keyword in ["allOf", "anyOf", "oneOf"] {
            let Some(value) = schema.get(keyword) else {
                continue;
            };
            let at = join(path, keyword);
            match value {
                Bson::Array(list) if list.is_empty() => self.problem(
                    &at,
                    "is an empty array; mongod requires at least one schema".to_owned(),
                ),
                Bson::Array(list) => self.schema_list(list, &at, keyword),
                other => self.problem(
                    &at,
                    format!("is {}; mongod requires an array of schemas", show(other)),
                ),
            }
        }
        if let Some(value) = schema.get("not") {
            let at = join(path, "not");
            match value {
                Bson::Document(not) => self.schema(not, &at, false),
                other => self.problem(
                    &at,
                    format!("is {}; mongod requires a schema (object)", show(other)),
                ),
            }
        }
        if let Some(value) = schema.get("enum") {
            let at = join(path, "enum");
            match value {
                Bson::Array(values) if values.is_empty() => self.problem(
                    &at,
                    "is an empty array; mongod requires at least one value".to_owned(),
                ),
                Bson::Array(values) => {
                    for (i, value) in values.iter().enumerate() {
                        if values[..i].iter().any(|earlier| same_value(earlier, value)) {
                            self.problem(
                                &at,
                                format!(
                                    "lists {} twice; mongod requires distinct values",
                                    show(value)
                                ),
                            );
                        }
                    }
                }
                other => self.problem(
                    &at,
                    format!("is {}; mongod requires an array of values", show(other)),
                ),
            }
        }
    }

    /// `encrypt` (a binData type of its own, so neither `type` nor `bsonType` beside it) and
    /// `encryptMetadata`, with the fields of mongod's strict `EncryptionInfo` and
    /// `EncryptionMetadata` structs.
    fn encryption(&mut self, schema: &Document, path: &str) {
        let encrypt = schema.get("encrypt");
        let metadata = schema.get("encryptMetadata");
        if !self.encryption_allowed {
            for (keyword, value) in [("encrypt", encrypt), ("encryptMetadata", metadata)] {
                if value.is_some() {
                    self.problem(
                        &join(path, keyword),
                        "is refused by mongod unless the validation level is `strict` and the action `error` (a warning could log plaintext)"
                            .to_owned(),
                    );
                }
            }
        }
        if encrypt.is_some() && metadata.is_some() {
            self.problem(
                path,
                "has both `encrypt` and `encryptMetadata`; mongod accepts only one of them"
                    .to_owned(),
            );
        }
        if let Some(encrypt) = encrypt {
            let at = join(path, "encrypt");
            for typed in ["type", "bsonType"] {
                if schema.contains_key(typed) {
                    self.problem(
                        path,
                        format!(
                            "has both `encrypt` and `{typed}`; mongod refuses them together (`encrypt` implies binData; name the plaintext type in `encrypt.bsonType`)"
                        ),
                    );
                }
            }
            match encrypt {
                Bson::Document(info) => self.encryption_fields(info, &at, true),
                other => self.problem(
                    &at,
                    format!("is {}; mongod requires an object", show(other)),
                ),
            }
        }
        if let Some(metadata) = metadata {
            let at = join(path, "encryptMetadata");
            match metadata {
                Bson::Document(info) if info.is_empty() => self.problem(
                    &at,
                    "is an empty object; mongod requires `keyId` or `algorithm`".to_owned(),
                ),
                Bson::Document(info) => self.encryption_fields(info, &at, false),
                other => self.problem(
                    &at,
                    format!("is {}; mongod requires an object", show(other)),
                ),
            }
        }
    }

    fn encryption_fields(&mut self, info: &Document, path: &str, with_type: bool) {
        for (key, value) in info {
            let at = join(path, key);
            match key.as_str() {
                "bsonType" if with_type => self.type_set(value, &at, BSON_TYPES),
                "algorithm" => {
                    if !value.as_str().is_some_and(|a| FLE_ALGORITHMS.contains(&a)) {
                        self.problem(
                            &at,
                            format!(
                                "is {}; mongod requires one of {}",
                                show(value),
                                FLE_ALGORITHMS.join(", ")
                            ),
                        );
                    }
                }
                "keyId" => {
                    let uuids = |items: &[Bson]| {
                        items.iter().all(|item| {
                            matches!(item, Bson::Binary(b) if b.subtype == mongodb::bson::spec::BinarySubtype::Uuid)
                        })
                    };
                    let ok = match value {
                        Bson::String(pointer) => pointer.starts_with('/'),
                        Bson::Array(items) => uuids(items),
                        _ => false,
                    };
                    if !ok {
                        self.problem(
                            &at,
                            format!(
                                "is {}; mongod requires a JSON pointer (\"/field\") or an array of UUIDs",
                                show(value)
                            ),
                        );
                    }
                }
                _ => self.problem(
                    &at,
                    "is not a field mongod knows here (allowed: bsonType, algorithm, keyId)"
                        .to_owned(),
                ),
            }
        }
    }

    /// An array whose every element must be a schema (`items`, `allOf`, `anyOf`, `oneOf`).
    fn schema_list(&mut self, list: &[Bson], path: &str, keyword: &str) {
        for (i, element) in list.iter().enumerate() {
            let at = join(path, &i.to_string());
            match element {
                Bson::Document(schema) => self.schema(schema, &at, false),
                other => self.problem(
                    &at,
                    format!(
                        "is {}; every element of `{keyword}` must be a schema (object)",
                        show(other)
                    ),
                ),
            }
        }
    }

    /// `additionalItems`, `additionalProperties`: `true`, `false` or a schema.
    fn bool_or_schema(&mut self, value: &Bson, path: &str) {
        match value {
            Bson::Boolean(_) => {}
            Bson::Document(schema) => self.schema(schema, path, false),
            other => self.problem(
                path,
                format!(
                    "is {}; mongod requires a boolean or a schema (object)",
                    show(other)
                ),
            ),
        }
    }
}

fn join(path: &str, segment: &str) -> String {
    format!("{path}.{segment}")
}

/// How a value reads in a problem: the value itself, or its kind when that says more.
fn show(value: &Bson) -> String {
    match value {
        Bson::Array(items) if items.is_empty() => "an empty array".to_owned(),
        Bson::Document(doc) if doc.is_empty() => "an empty object".to_owned(),
        Bson::Array(_) => format!("an array ({value})"),
        Bson::Document(_) => format!("an object ({value})"),
        Bson::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

fn unknown_type(name: &str, aliases: &[&str]) -> String {
    let bson_only = aliases == JSON_TYPES && BSON_TYPES.contains(&name);
    if bson_only {
        return format!(
            "names `{name}`, a BSON type: `type` takes the JSON types ({}); use `bsonType: \"{name}\"`",
            JSON_TYPES.join(", ")
        );
    }
    if aliases == BSON_TYPES && name == "boolean" {
        return "names `boolean`, a JSON type: `bsonType` spells it `bool`".to_owned();
    }
    let close = aliases
        .iter()
        .find(|alias| alias.eq_ignore_ascii_case(name) || edit_distance(alias, name) <= 2);
    match close {
        Some(alias) => {
            format!("names `{name}`, which mongod does not know (did you mean `{alias}`?)")
        }
        None => format!(
            "names `{name}`, which mongod does not know (known: {})",
            aliases.join(", ")
        ),
    }
}

/// The keyword a misspelt one probably meant.
fn suggestion(key: &str) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .copied()
        .filter(|keyword| keyword.eq_ignore_ascii_case(key) || edit_distance(keyword, key) <= 2)
        .min_by_key(|keyword| edit_distance(keyword, key))
}

/// A numeric value as `f64` (int, long, double or decimal); `None` for anything else.
fn number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(v) => Some(f64::from(*v)),
        Bson::Int64(v) => Some(*v as f64),
        Bson::Double(v) => Some(*v),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

/// mongod's `parseIntegerElementToNonNegativeLong`: any numeric type whose value is a whole
/// number in `0..=i64::MAX` (so `2.0` passes, `2.5`, `NaN` and `-1` do not).
fn is_non_negative_integer(value: &Bson) -> bool {
    match value {
        Bson::Int32(v) => *v >= 0,
        Bson::Int64(v) => *v >= 0,
        // 2^63 is the first double past i64::MAX
        Bson::Double(v) => v.fract() == 0.0 && *v >= 0.0 && *v < 9_223_372_036_854_775_808.0,
        Bson::Decimal128(d) => decimal_is_non_negative_integer(&d.to_string()),
        _ => false,
    }
}

/// The same for a Decimal128 in its string form (`12`, `1.20E+3`, `-0`, `NaN`), exactly: a
/// decimal such as `1.0000000000000000001` is not a whole number even if it rounds to one.
fn decimal_is_non_negative_integer(text: &str) -> bool {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match text.split_once(['E', 'e']) {
        Some((mantissa, exponent)) => match exponent.parse::<i64>() {
            Ok(exponent) => (mantissa, exponent),
            Err(_) => return false,
        },
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false; // NaN, Infinity
    }
    let scale = exponent - fraction.len() as i64;
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return true; // zero, whatever its sign or exponent
    }
    if negative {
        return false;
    }
    let kept = if scale >= 0 {
        digits.to_owned()
    } else {
        let cut = (-scale) as usize;
        if cut >= digits.len() {
            return false; // 0 < value < 1
        }
        let (kept, dropped) = digits.split_at(digits.len() - cut);
        if dropped.bytes().any(|b| b != b'0') {
            return false;
        }
        kept.to_owned()
    };
    let scale = scale.max(0) as usize;
    // i64::MAX has 19 digits
    if kept.len() + scale > 19 {
        return false;
    }
    format!("{kept}{}", "0".repeat(scale))
        .parse::<i64>()
        .is_ok()
}

/// BSON equality as mongod's `enum` duplicate check sees it: numbers by value whatever their
/// type, documents whatever their field order, arrays in order.
fn same_value(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(a), Bson::Document(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, value)| b.get(key).is_some_and(|other| same_value(value, other)))
        }
        (Bson::Array(a), Bson::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_value(a, b))
        }
        _ => match (number(a), number(b)) {
            (Some(a), Some(b)) => a == b || (a.is_nan() && b.is_nan()),
            _ => a == b,
        },
    }
}

/// What makes mongod refuse a `pattern` regex: a NUL byte, more than 32764 bytes, or a
/// structure PCRE cannot compile. Only structural errors that every PCRE build reports are
/// looked for (an unbalanced parenthesis, an unterminated class, a trailing backslash, a
/// quantifier with nothing before it), so a valid PCRE pattern is never refused.
fn regex_problem(pattern: &str) -> Option<String> {
    if pattern.contains('\0') {
        return Some("contains a NUL byte; mongod refuses such a regex".to_owned());
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Some(format!(
            "is {} bytes long; mongod refuses a regex over {MAX_PATTERN_BYTES} bytes",
            pattern.len()
        ));
    }
    regex_structure_problem(pattern)
        .map(|problem| format!("is {pattern:?}, which {problem}; mongod refuses an invalid regex"))
}

fn regex_structure_problem(pattern: &str) -> Option<&'static str> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut depth = 0usize;
    let mut i = 0;
    // whether a quantifier here would have nothing to repeat
    let mut at_start = true;
    while i < chars.len() {
        let c = chars[i];
        let starts_item = at_start;
        at_start = false;
        match c {
            '\\' => {
                match chars.get(i + 1) {
                    None => return Some("ends with a lone backslash"),
                    // \Q...\E quotes literally, to the end of the pattern if \E is missing
                    Some('Q') => {
                        let rest = &chars[i + 2..];
                        match rest.windows(2).position(|w| w == ['\\', 'E']) {
                            Some(end) => i += 2 + end + 2,
                            None => return None,
                        }
                        continue;
                    }
                    // \cX takes the next character whatever it is
                    Some('c') => i += 3,
                    Some(_) => i += 2,
                }
                continue;
            }
            '[' => match class_end(&chars, i) {
                Some(end) => i = end + 1,
                None => return Some("has a `[` without its `]`"),
            },
            '(' => {
                if chars.get(i + 1) == Some(&'?') {
                    // a comment runs to the next `)`
                    if chars.get(i + 2) == Some(&'#') {
                        match chars[i..].iter().position(|&c| c == ')') {
                            Some(end) => {
                                i += end + 1;
                                continue;
                            }
                            None => return Some("has a `(?#` comment without its `)`"),
                        }
                    }
                    // extended mode (`x`) makes `#` start comments and whitespace vanish: the
                    // simple scan below no longer applies
                    let flags: String = chars[i + 2..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphabetic() || **c == '-' || **c == '^')
                        .collect();
                    if flags.contains('x') {
                        return None;
                    }
                }
                // `(?` and `(*VERB)` are group syntax, so no quantifier check right after `(`
                depth += 1;
            }
            ')' => {
                if depth == 0 {
                    return Some("has a `)` without its `(`");
                }
                depth -= 1;
            }
            '|' => at_start = true,
            '*' | '+' | '?' if starts_item => {
                return Some("starts with a quantifier that has nothing to repeat")
            }
            _ => {}
        }
        i += 1;
    }
    (depth > 0).then_some("has a `(` without its `)`")
}

/// The index of the `]` closing the class that opens at `start`: a `]` right after `[` or `[^`
/// is a literal; escapes, quoted `\Q...\E` runs and POSIX classes (`[:alpha:]`) are skipped.
fn class_end(chars: &[char], start: usize) -> Option<usize> {
    let mut i = start + 1;
    if chars.get(i) == Some(&'^') {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1) == Some(&'Q') => {
                let rest = &chars[i + 2..];
                match rest.windows(2).position(|w| w == ['\\', 'E']) {
                    Some(end) => i += 2 + end + 2,
                    None => return None,
                }
            }
            '\\' => i += 2,
            '[' if chars.get(i + 1) == Some(&':') => {
                let rest = &chars[i + 2..];
                match rest.windows(2).position(|w| w == [':', ']']) {
                    Some(end) => i += 2 + end + 2,
                    None => i += 1,
                }
            }
            ']' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests;
