//! [`LocalValidator`]: a `$jsonSchema` validator evaluated in the library, with mongod's
//! semantics, before a document is written.
//!
//! mongod parses a `$jsonSchema` into match expressions
//! (`src/mongo/db/matcher/schema/json_schema_parser.cpp`); each keyword below cites the
//! expression it becomes. Three rules hold for all of them:
//!
//! - A keyword that restricts one type applies only to values of that type (`minLength` to
//!   strings, `minimum` to numbers, `items` to arrays, `properties` to objects) and lets every
//!   other value through: the parser wraps each in `{$or: [{not that type}, <keyword>]}`
//!   (`makeRestriction`).
//! - There is no implicit array traversal: `$jsonSchema` expressions are built with
//!   `LeafArrayBehavior::kNoTraversal`, so `{bsonType: "string"}` refuses `["a"]`.
//! - `title` and `description` are annotations, and `encryptMetadata` only configures
//!   encryption; none of them is a rule.
//!
//! A failing document gets an `errInfo` in mongod's shape (`doc_validation_error.cpp`: an
//! `operatorName` per failed rule, `propertiesNotSatisfied`, `itemIndex`, `missingProperties`,
//! `schemasNotSatisfied`, ...), read by the same [`ValidationError::from_err_info`] as a
//! server's code 121, so local and server verdicts name the same paths and rules.

use mongodb::bson::{doc, Bson, Document, RawDocument, RawDocumentBuf};

use super::equality::same;
use super::number::Number;
use super::pattern::Pattern;
use super::value::{Value, MALFORMED};
use super::ValidationError;
use crate::{Error, SchemaError};

/// A validator document compiled once (regexes included) and evaluated in the library, with
/// the semantics of mongod's `$jsonSchema`.
///
/// ```
/// use mongo_schema_core::LocalValidator;
/// use mongo_schema_core::bson::doc;
///
/// let validator = LocalValidator::new(&doc! { "$jsonSchema": {
///     "bsonType": "object",
///     "required": ["status"],
///     "properties": { "status": { "enum": ["open", "closed"] } },
/// } })?;
/// assert!(validator.check(&doc! { "status": "open" }).is_ok());
/// let error = validator.check(&doc! { "status": "lost" }).unwrap_err();
/// assert_eq!(error.failures[0].path, "status");
/// assert_eq!(error.failures[0].rule, "enum");
/// # Ok::<(), mongo_schema_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LocalValidator {
    validator: Document,
    root: Option<Node>,
}

impl LocalValidator {
    /// Compiles a validator as [`crate::Document::validator`] returns it and `apply` installs
    /// it (`{ "$jsonSchema": { ... } }`, hand-written ones too).
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] for a schema mongod refuses (the rules `Schema::build` checks,
    /// from the same code), for query operators beside `$jsonSchema` (which this evaluator does
    /// not implement: it says so rather than pass documents it did not judge), and for the few
    /// regexes and keywords it cannot evaluate as mongod does (see the module documentation of
    /// `pattern`: lookaround, backreferences, the `m` and `x` flags, ...; and `encrypt`).
    pub fn new(validator: &Document) -> Result<LocalValidator, Error> {
        let mut problems = crate::json_schema::validator_problems(validator, true);
        if !problems.is_empty() {
            return Err(Error::Schema(SchemaError { problems }));
        }
        let mut root = None;
        for (key, value) in validator {
            match (key.as_str(), value) {
                ("$jsonSchema", Bson::Document(schema)) => {
                    root = Some(Node::compile(schema, "$jsonSchema", true, &mut problems));
                }
                _ => problems.push(format!(
                    "`{key}`: the local validator evaluates `$jsonSchema` only, not query operators; check such a validator on the server"
                )),
            }
        }
        if !problems.is_empty() {
            return Err(Error::Schema(SchemaError { problems }));
        }
        Ok(LocalValidator {
            validator: validator.clone(),
            root,
        })
    }

    /// The validator document this was compiled from.
    pub fn validator(&self) -> &Document {
        &self.validator
    }

    /// Checks a document: `Ok` if mongod would accept it.
    ///
    /// # Errors
    ///
    /// The failures as the server's code 121 reports them (every path and rule).
    // the type a server's code 121 becomes, unboxed, as SPEC §11 pins it; the `Ok` path
    // returns nothing and a refusal is the rare one
    #[allow(clippy::result_large_err)]
    pub fn check(&self, document: &Document) -> Result<(), ValidationError> {
        match crate::bson_compat::raw_from_document(document) {
            Ok(raw) => self.check_raw(&raw),
            // a document the driver could not serialize either (a key with a NUL byte)
            Err(e) => Err(ValidationError::local(
                document.get("_id").cloned(),
                Vec::new(),
                Some(e.to_string()),
            )),
        }
    }

    /// Checks a serialized document (as the driver sends it). Allocates nothing unless the
    /// document fails.
    ///
    /// # Errors
    ///
    /// As [`LocalValidator::check`].
    #[allow(clippy::result_large_err)]
    pub fn check_raw(&self, document: &RawDocument) -> Result<(), ValidationError> {
        let Some(root) = &self.root else {
            return Ok(());
        };
        let value = Value::document(document.as_bytes());
        if root.eval(value, false).is_ok() {
            return Ok(());
        }
        let details = root.eval(value, true).err().unwrap_or_default();
        let mut err_info = Document::new();
        if let Ok(Some(id)) = document.get("_id") {
            if let Ok(id) = Bson::try_from(id) {
                err_info.insert("failingDocumentId", id);
            }
        }
        err_info.insert(
            "details",
            doc! { "operatorName": "$jsonSchema", "schemaRulesNotSatisfied": details },
        );
        Err(ValidationError::from_err_info(&err_info))
    }

    /// Whether a serialized document passes, without building the failures.
    pub fn is_valid(&self, document: &RawDocument) -> bool {
        self.root.as_ref().is_none_or(|root| {
            root.eval(Value::document(document.as_bytes()), false)
                .is_ok()
        })
    }
}

/// What `additionalProperties` or `additionalItems` allow.
#[derive(Debug, Clone)]
enum Additional {
    Any,
    Nothing,
    Schema(Box<Node>),
}

#[derive(Debug, Clone)]
enum Items {
    /// `items: {schema}`: every element.
    Each(Box<Node>),
    /// `items: [schemas]`: element by position; `additionalItems` for the rest.
    Tuple(Vec<Node>),
}

#[derive(Debug, Clone)]
enum Dependency {
    Properties(Vec<String>),
    Schema(Box<Node>),
}

/// `additionalProperties` and `patternProperties`: mongod's
/// `$_internalSchemaAllowedProperties`.
#[derive(Debug, Clone)]
struct Allowed {
    patterns: Vec<(Pattern, Node)>,
    otherwise: Additional,
}

/// One compiled (sub)schema.
#[derive(Debug, Clone, Default)]
struct Node {
    /// The schema as written, for `specifiedAs`.
    spec: Document,
    /// `type` or `bsonType`: the keyword and the set of BSON element types it allows.
    types: Option<(&'static str, TypeSet)>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    allowed: Option<Allowed>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    items: Option<Items>,
    additional_items: Option<Additional>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<Pattern>,
    minimum: Option<(Number, bool)>,
    maximum: Option<(Number, bool)>,
    multiple_of: Option<Number>,
    enumeration: Option<RawDocumentBuf>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Box<Node>>,
    dependencies: Vec<(String, Dependency)>,
    /// An `enum` of strings only: each value's bytes as BSON stores them (length, UTF-8, NUL),
    /// compared without decoding.
    string_enum: Option<Vec<Vec<u8>>>,
    /// For each of `properties`, its position in `required`, if it is required.
    property_required: Vec<Option<usize>>,
    /// Which groups of keywords the schema has, so a value skips the groups it has none of.
    has_object_keywords: bool,
    has_array_keywords: bool,
    has_string_keywords: bool,
    has_number_keywords: bool,
    has_logical_keywords: bool,
}

/// A set of BSON element types, one bit per type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct TypeSet(u32);

impl TypeSet {
    const NUMBER: u32 = (1 << 1) | (1 << 16) | (1 << 18) | (1 << 19);

    fn bit(value: Value<'_>) -> u32 {
        match value.kind {
            0xFF => 1 << 20, // minKey
            0x7F => 1 << 21, // maxKey
            code => 1 << code,
        }
    }

    fn contains(self, value: Value<'_>) -> bool {
        self.0 & Self::bit(value) != 0
    }

    /// The aliases of `bsonType` (`typeAliasMap` in `matcher_type_set.cpp`) and of `type`
    /// (`kJsonSchemaTypeAliasMap`: the JSON names, `number` for every numeric type).
    fn of_alias(alias: &str) -> Option<u32> {
        Some(match alias {
            "double" => 1 << 1,
            "string" => 1 << 2,
            "object" => 1 << 3,
            "array" => 1 << 4,
            "binData" => 1 << 5,
            "undefined" => 1 << 6,
            "objectId" => 1 << 7,
            "bool" | "boolean" => 1 << 8,
            "date" => 1 << 9,
            "null" => 1 << 10,
            "regex" => 1 << 11,
            "dbPointer" => 1 << 12,
            "javascript" => 1 << 13,
            "symbol" => 1 << 14,
            "javascriptWithScope" => 1 << 15,
            "int" => 1 << 16,
            "timestamp" => 1 << 17,
            "long" => 1 << 18,
            "decimal" => 1 << 19,
            "minKey" => 1 << 20,
            "maxKey" => 1 << 21,
            "number" => Self::NUMBER,
            _ => return None,
        })
    }
}

/// mongod's name of a value's type (`typeName`), for `consideredType`.
fn type_name(value: Value<'_>) -> &'static str {
    match value.kind {
        1 => "double",
        2 => "string",
        3 => "object",
        4 => "array",
        5 => "binData",
        6 => "undefined",
        7 => "objectId",
        8 => "bool",
        9 => "date",
        10 => "null",
        11 => "regex",
        12 => "dbPointer",
        13 => "javascript",
        14 => "symbol",
        15 => "javascriptWithScope",
        16 => "int",
        17 => "timestamp",
        18 => "long",
        19 => "decimal",
        0xFF => "minKey",
        0x7F => "maxKey",
        _ => "malformed",
    }
}

fn owned(value: Value<'_>) -> Bson {
    value.to_bson()
}

/// Whether an object value has a field `name`.
fn has(object: Value<'_>, name: &str) -> bool {
    object.elements().any(|(key, _)| key == name.as_bytes())
}

/// A non-negative count as mongod's `parseIntegerElementToNonNegativeLong` reads it (the
/// shared check has already refused anything else).
fn count(value: &Bson) -> Option<u64> {
    match value {
        Bson::Int32(v) => u64::try_from(*v).ok(),
        Bson::Int64(v) => u64::try_from(*v).ok(),
        Bson::Double(v) => Some(*v as u64),
        Bson::Decimal128(d) => d.to_string().parse::<f64>().ok().map(|v| v as u64),
        _ => None,
    }
}

fn strings(value: Option<&Bson>) -> Vec<String> {
    match value {
        Some(Bson::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

impl Node {
    /// Compiles a schema that passed the shared check of mongod's rules; `problems` receives
    /// what this evaluator cannot judge as mongod does.
    fn compile(schema: &Document, path: &str, top: bool, problems: &mut Vec<String>) -> Node {
        let sub = |value: &Bson, at: String, problems: &mut Vec<String>| match value {
            Bson::Document(d) => Node::compile(d, &at, false, problems),
            _ => Node::default(),
        };
        let list = |keyword: &str, problems: &mut Vec<String>| -> Vec<Node> {
            match schema.get(keyword) {
                Some(Bson::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| sub(s, format!("{path}.{keyword}.{i}"), problems))
                    .collect(),
                _ => Vec::new(),
            }
        };
        let additional = |keyword: &str, problems: &mut Vec<String>| -> Option<Additional> {
            match schema.get(keyword)? {
                Bson::Boolean(true) => Some(Additional::Any),
                Bson::Boolean(false) => Some(Additional::Nothing),
                other => Some(Additional::Schema(Box::new(sub(
                    other,
                    format!("{path}.{keyword}"),
                    problems,
                )))),
            }
        };
        let mut node = Node {
            spec: schema.clone(),
            ..Node::default()
        };
        for keyword in ["bsonType", "type"] {
            let Some(value) = schema.get(keyword) else {
                continue;
            };
            let names: Vec<&str> = match value {
                Bson::String(name) => vec![name.as_str()],
                Bson::Array(items) => items.iter().filter_map(Bson::as_str).collect(),
                _ => Vec::new(),
            };
            let mask = names
                .iter()
                .filter_map(|name| TypeSet::of_alias(name))
                .fold(0, |a, b| a | b);
            let keyword = if keyword == "type" {
                "type"
            } else {
                "bsonType"
            };
            node.types = Some((keyword, TypeSet(mask)));
        }
        if let Some(Bson::Document(properties)) = schema.get("properties") {
            node.properties = properties
                .iter()
                .map(|(name, s)| {
                    (
                        name.clone(),
                        sub(s, format!("{path}.properties.{name}"), problems),
                    )
                })
                .collect();
        }
        node.required = strings(schema.get("required"));
        let patterns = match schema.get("patternProperties") {
            Some(Bson::Document(patterns)) => patterns
                .iter()
                .filter_map(|(regex, s)| {
                    let at = format!("{path}.patternProperties.{regex}");
                    let node = sub(s, at.clone(), problems);
                    match Pattern::new(regex) {
                        Ok(pattern) => Some((pattern, node)),
                        Err(why) => {
                            problems.push(format!("`{at}`: {why}"));
                            None
                        }
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        let otherwise = additional("additionalProperties", problems);
        if otherwise.is_some() || schema.contains_key("patternProperties") {
            node.allowed = Some(Allowed {
                patterns,
                otherwise: otherwise.unwrap_or(Additional::Any),
            });
        }
        node.min_properties = schema.get("minProperties").and_then(count);
        node.max_properties = schema.get("maxProperties").and_then(count);
        node.items = match schema.get("items") {
            Some(Bson::Array(_)) => Some(Items::Tuple(list("items", problems))),
            Some(other) => Some(Items::Each(Box::new(sub(
                other,
                format!("{path}.items"),
                problems,
            )))),
            None => None,
        };
        node.additional_items = additional("additionalItems", problems);
        node.min_items = schema.get("minItems").and_then(count);
        node.max_items = schema.get("maxItems").and_then(count);
        node.unique_items = schema.get_bool("uniqueItems").unwrap_or(false);
        node.min_length = schema.get("minLength").and_then(count);
        node.max_length = schema.get("maxLength").and_then(count);
        // mongod does not even compile a top-level `pattern`: the document is never a string
        if let (Some(Bson::String(regex)), false) = (schema.get("pattern"), top) {
            match Pattern::new(regex) {
                Ok(pattern) => node.pattern = Some(pattern),
                Err(why) => problems.push(format!("`{path}.pattern`: {why}")),
            }
        }
        node.minimum = schema
            .get("minimum")
            .and_then(Number::of)
            .map(|n| (n, schema.get_bool("exclusiveMinimum").unwrap_or(false)));
        node.maximum = schema
            .get("maximum")
            .and_then(Number::of)
            .map(|n| (n, schema.get_bool("exclusiveMaximum").unwrap_or(false)));
        node.multiple_of = schema.get("multipleOf").and_then(Number::of);
        if let Some(Bson::Array(values)) = schema.get("enum") {
            // the array's own layout: a document keyed "0", "1", ...
            let as_document: Document = values
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v.clone()))
                .collect();
            node.enumeration = crate::bson_compat::raw_from_document(&as_document).ok();
        }
        node.all_of = list("allOf", problems);
        node.any_of = list("anyOf", problems);
        node.one_of = list("oneOf", problems);
        node.not = schema
            .get("not")
            .map(|s| Box::new(sub(s, format!("{path}.not"), problems)));
        if let Some(Bson::Document(dependencies)) = schema.get("dependencies") {
            for (name, dependency) in dependencies {
                let dependency = match dependency {
                    Bson::Document(s) => Dependency::Schema(Box::new(Node::compile(
                        s,
                        &format!("{path}.dependencies.{name}"),
                        false,
                        problems,
                    ))),
                    Bson::Array(_) => Dependency::Properties(strings(Some(dependency))),
                    _ => continue,
                };
                node.dependencies.push((name.clone(), dependency));
            }
        }
        if schema.contains_key("encrypt") {
            problems.push(format!(
                "`{path}.encrypt`: encrypted fields are checked by the driver's automatic encryption and the server, not by the local validator"
            ));
        }
        node.string_enum = match schema.get("enum") {
            Some(Bson::Array(values)) if values.iter().all(|v| matches!(v, Bson::String(_))) => {
                Some(
                    values
                        .iter()
                        .filter_map(Bson::as_str)
                        .map(|text| {
                            let mut bytes = ((text.len() + 1) as i32).to_le_bytes().to_vec();
                            bytes.extend_from_slice(text.as_bytes());
                            bytes.push(0);
                            bytes
                        })
                        .collect(),
                )
            }
            _ => None,
        };
        node.property_required = node
            .properties
            .iter()
            .map(|(name, _)| node.required.iter().position(|r| r == name))
            .collect();
        node.has_object_keywords = !node.properties.is_empty()
            || !node.required.is_empty()
            || node.allowed.is_some()
            || node.min_properties.is_some()
            || node.max_properties.is_some()
            || !node.dependencies.is_empty();
        node.has_array_keywords = node.items.is_some()
            || node.min_items.is_some()
            || node.max_items.is_some()
            || node.unique_items;
        node.has_string_keywords =
            node.min_length.is_some() || node.max_length.is_some() || node.pattern.is_some();
        node.has_number_keywords =
            node.minimum.is_some() || node.maximum.is_some() || node.multiple_of.is_some();
        node.has_logical_keywords = !node.all_of.is_empty()
            || !node.any_of.is_empty()
            || !node.one_of.is_empty()
            || node.not.is_some();
        node
    }

    fn specified(&self, keyword: &str) -> Document {
        let mut specified = Document::new();
        if let Some(value) = self.spec.get(keyword) {
            specified.insert(keyword, value.clone());
        }
        specified
    }

    /// A failed rule with mongod's `specifiedAs`, `reason` and `consideredValue`.
    fn leaf(&self, keyword: &str, reason: &str, value: Value<'_>) -> Document {
        doc! {
            "operatorName": keyword,
            "specifiedAs": self.specified(keyword),
            "reason": reason,
            "consideredValue": owned(value),
        }
    }

    /// Evaluates the schema on `value`. Without `explain` it stops at the first failure and
    /// returns an empty list (no allocation); with it, it returns every failed rule as mongod's
    /// `errInfo` details.
    fn eval(&self, value: Value<'_>, explain: bool) -> Result<(), Vec<Document>> {
        let mut failures = Vec::new();
        macro_rules! fail {
            ($detail:expr) => {{
                if !explain {
                    return Err(Vec::new());
                }
                failures.push($detail);
            }};
        }
        // `$_internalSchemaType` (`matchesSingleElement`: no array traversal)
        if let Some((keyword, types)) = self.types {
            if !types.contains(value) {
                fail!({
                    let mut detail = self.leaf(keyword, "type did not match", value);
                    detail.insert("consideredType", type_name(value));
                    detail
                });
            }
        }
        // `$_internalSchemaEq` for each value, under an `$or`
        if let Some(values) = &self.enumeration {
            let found = match &self.string_enum {
                // a string equals only a string (or a symbol: one canonical type)
                Some(strings) => {
                    matches!(value.kind, 2 | 14) && strings.iter().any(|s| s == value.bytes)
                }
                None => Value {
                    kind: 4,
                    bytes: values.as_bytes(),
                }
                .elements()
                .any(|(_, candidate)| same(candidate, value)),
            };
            if !found {
                fail!(self.leaf("enum", "value was not found in enum", value));
            }
        }
        match value.kind {
            MALFORMED => fail!(doc! {
                "operatorName": "bsonType",
                "reason": "the document is not well-formed BSON",
            }),
            3 if self.has_object_keywords => {
                if let Err(details) = self.object(value, explain) {
                    if !explain {
                        return Err(Vec::new());
                    }
                    failures.extend(details);
                }
            }
            4 if self.has_array_keywords => {
                if let Err(details) = self.array(value, explain) {
                    if !explain {
                        return Err(Vec::new());
                    }
                    failures.extend(details);
                }
            }
            // `$_internalSchemaMinLength`/`MaxLength` count code points
            // (`expression_internal_schema_str_length.cpp`); `pattern` is a `$regex`; neither
            // applies to symbols
            2 if self.has_string_keywords => {
                let text = value.text().unwrap_or_default();
                let length = || text.chars().count() as u64;
                if let Some(min) = self.min_length {
                    if length() < min {
                        fail!(self.leaf(
                            "minLength",
                            "specified string length was not satisfied",
                            value
                        ));
                    }
                }
                if let Some(max) = self.max_length {
                    if length() > max {
                        fail!(self.leaf(
                            "maxLength",
                            "specified string length was not satisfied",
                            value
                        ));
                    }
                }
                if let Some(pattern) = &self.pattern {
                    if !pattern.is_match(text) {
                        fail!(self.leaf("pattern", "regular expression did not match", value));
                    }
                }
            }
            _ if self.has_number_keywords => {
                if let Some(number) = Number::of_value(value) {
                    if let Err(details) = self.number(number, value, explain) {
                        if !explain {
                            return Err(Vec::new());
                        }
                        failures.extend(details);
                    }
                }
            }
            _ => {}
        }
        if self.has_logical_keywords {
            self.logical(value, explain, &mut failures)?;
        }
        verdict(failures)
    }

    /// `minimum`/`maximum` (`$gte`/`$gt`/`$lte`/`$lt`, which never match NaN) and
    /// `multipleOf` (`$_internalSchemaFmod`).
    fn number(&self, number: Number, value: Value<'_>, explain: bool) -> Result<(), Vec<Document>> {
        use std::cmp::Ordering::*;
        let mut failures = Vec::new();
        let mut bound = |keyword: &str, exclusive_keyword: &str, ok: bool| -> bool {
            if ok {
                return true;
            }
            if explain {
                let mut specified = self.specified(keyword);
                if let Some(exclusive) = self.spec.get(exclusive_keyword) {
                    specified.insert(exclusive_keyword, exclusive.clone());
                }
                failures.push(doc! {
                    "operatorName": keyword,
                    "specifiedAs": specified,
                    "reason": "comparison failed",
                    "consideredValue": owned(value),
                });
            }
            false
        };
        if let Some((minimum, exclusive)) = self.minimum {
            let ok = match number.compare(minimum) {
                Some(Greater) => true,
                Some(Equal) => !exclusive,
                _ => false,
            };
            if !bound("minimum", "exclusiveMinimum", ok) && !explain {
                return Err(Vec::new());
            }
        }
        if let Some((maximum, exclusive)) = self.maximum {
            let ok = match number.compare(maximum) {
                Some(Less) => true,
                Some(Equal) => !exclusive,
                _ => false,
            };
            if !bound("maximum", "exclusiveMaximum", ok) && !explain {
                return Err(Vec::new());
            }
        }
        if let Some(divisor) = self.multiple_of {
            if !number.is_multiple_of(divisor) {
                if !explain {
                    return Err(Vec::new());
                }
                failures.push(self.leaf(
                    "multipleOf",
                    "considered value was not a multiple of the specified value",
                    value,
                ));
            }
        }
        verdict(failures)
    }

    /// `properties`, `required`, `min`/`maxProperties`, `additionalProperties`,
    /// `patternProperties` and `dependencies`, in one pass over the object's fields.
    fn object(&self, object: Value<'_>, explain: bool) -> Result<(), Vec<Document>> {
        let mut failures = Vec::new();
        let mut not_satisfied: Vec<Document> = Vec::new();
        let mut extra: Vec<String> = Vec::new();
        let mut extra_failures: Vec<Document> = Vec::new();
        let mut pattern_failures: Vec<Document> = Vec::new();
        // which required names were seen (by position in `required`), without allocating
        let mut seen_required: u128 = 0;
        let mut fields = 0u64;
        let needs_name = explain
            || self
                .allowed
                .as_ref()
                .is_some_and(|a| !a.patterns.is_empty());
        for (key, field) in object.elements() {
            fields += 1;
            // a key is text (the driver writes `&str` keys); one that is not matches no name
            let name = if needs_name {
                std::str::from_utf8(key).unwrap_or("\u{FFFD}")
            } else {
                ""
            };
            let found = self
                .properties
                .iter()
                .position(|(p, _)| p.as_bytes() == key);
            let required_index = match found {
                Some(i) => self.property_required[i],
                None => self.required.iter().position(|r| r.as_bytes() == key),
            };
            if let Some(i) = required_index {
                if i < 128 {
                    seen_required |= 1 << i;
                }
            }
            let property = found.map(|i| &self.properties[i]);
            // `$_internalSchemaObjectMatch` under `properties` (the field exists)
            if let Some((_, schema)) = property {
                if let Err(details) = schema.eval(field, explain) {
                    if !explain {
                        return Err(Vec::new());
                    }
                    not_satisfied.push(doc! { "propertyName": name, "details": details });
                }
            }
            // `$_internalSchemaAllowedProperties::_matchesBSONObj`: every pattern that matches
            // the name applies; otherwise a name not in `properties` meets `otherwise`
            if let Some(allowed) = &self.allowed {
                let mut matched_pattern = false;
                for (pattern, schema) in &allowed.patterns {
                    if pattern.is_match(name) {
                        matched_pattern = true;
                        if let Err(details) = schema.eval(field, explain) {
                            if !explain {
                                return Err(Vec::new());
                            }
                            pattern_failures.push(doc! {
                                "propertyName": name,
                                "regexMatched": &pattern.source,
                                "details": details,
                            });
                        }
                    }
                }
                if !matched_pattern && property.is_none() {
                    match &allowed.otherwise {
                        Additional::Nothing => {
                            if !explain {
                                return Err(Vec::new());
                            }
                            extra.push(name.to_owned());
                        }
                        // mongod names one `failingProperty`: the first
                        Additional::Schema(schema) if extra_failures.is_empty() => {
                            if let Err(details) = schema.eval(field, explain) {
                                if !explain {
                                    return Err(Vec::new());
                                }
                                extra_failures.push(doc! {
                                    "operatorName": "additionalProperties",
                                    "reason": "at least one additional property did not match the subschema",
                                    "failingProperty": name,
                                    "details": details,
                                });
                            }
                        }
                        Additional::Any | Additional::Schema(_) => {}
                    }
                }
            }
        }
        if !not_satisfied.is_empty() {
            failures.push(doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": not_satisfied,
            });
        }
        // `required`: `$exists` for each name
        let missing = |i: usize, name: &str| {
            if i < 128 {
                seen_required & (1 << i) == 0
            } else {
                !has(object, name)
            }
        };
        if self
            .required
            .iter()
            .enumerate()
            .any(|(i, name)| missing(i, name))
        {
            if !explain {
                return Err(Vec::new());
            }
            let names: Vec<&str> = self
                .required
                .iter()
                .enumerate()
                .filter(|(i, name)| missing(*i, name))
                .map(|(_, name)| name.as_str())
                .collect();
            failures.push(doc! {
                "operatorName": "required",
                "specifiedAs": self.specified("required"),
                "missingProperties": names,
            });
        }
        // `$_internalSchemaMinProperties`/`MaxProperties`
        for (keyword, limit, ok) in [
            (
                "minProperties",
                self.min_properties,
                self.min_properties.is_none_or(|min| fields >= min),
            ),
            (
                "maxProperties",
                self.max_properties,
                self.max_properties.is_none_or(|max| fields <= max),
            ),
        ] {
            if limit.is_some() && !ok {
                if !explain {
                    return Err(Vec::new());
                }
                failures.push(doc! {
                    "operatorName": keyword,
                    "specifiedAs": self.specified(keyword),
                    "reason": "specified number of properties was not satisfied",
                    "numberOfProperties": fields as i64,
                });
            }
        }
        if !extra.is_empty() {
            failures.push(doc! {
                "operatorName": "additionalProperties",
                "specifiedAs": { "additionalProperties": false },
                "additionalProperties": extra,
            });
        }
        failures.extend(extra_failures);
        if !pattern_failures.is_empty() {
            failures
                .push(doc! { "operatorName": "patternProperties", "details": pattern_failures });
        }
        // `dependencies`: `$_internalSchemaCond` (if the property exists, then ...)
        let mut failing_dependencies = Vec::new();
        for (name, dependency) in &self.dependencies {
            if !has(object, name) {
                continue;
            }
            match dependency {
                Dependency::Properties(names) => {
                    let absent: Vec<&str> = names
                        .iter()
                        .filter(|n| !has(object, n))
                        .map(String::as_str)
                        .collect();
                    if !absent.is_empty() {
                        if !explain {
                            return Err(Vec::new());
                        }
                        failing_dependencies.push(doc! {
                            "conditionalProperty": name,
                            "missingProperties": absent,
                        });
                    }
                }
                Dependency::Schema(schema) => {
                    if let Err(details) = schema.eval(object, explain) {
                        if !explain {
                            return Err(Vec::new());
                        }
                        failing_dependencies.push(doc! {
                            "conditionalProperty": name,
                            "details": details,
                        });
                    }
                }
            }
        }
        if !failing_dependencies.is_empty() {
            failures.push(doc! {
                "operatorName": "dependencies",
                "failingDependencies": failing_dependencies,
            });
        }
        verdict(failures)
    }

    /// `items` (`$_internalSchemaAllElemMatchFromIndex` for a schema,
    /// `$_internalSchemaMatchArrayIndex` per position for a list), `additionalItems` (only
    /// beside a list of `items`), `minItems`/`maxItems` and `uniqueItems`.
    fn array(&self, array: Value<'_>, explain: bool) -> Result<(), Vec<Document>> {
        let mut failures = Vec::new();
        let item_failure = |operator: &str, reason: &str, index: usize, details: Vec<Document>| {
            doc! {
                "operatorName": operator,
                "reason": reason,
                "itemIndex": index as i64,
                "details": details,
            }
        };
        let mut length = 0usize;
        let tuple = match &self.items {
            Some(Items::Tuple(schemas)) => Some(schemas),
            _ => None,
        };
        let mut items_failed = false;
        let mut additional_failed = false;
        let mut additional_values = Vec::new();
        for (index, (_, item)) in array.elements().enumerate() {
            length += 1;
            // `items`: the one schema of every element, or this position's
            let item_schema = match (&self.items, tuple) {
                (Some(Items::Each(schema)), _) => Some(&**schema),
                (_, Some(schemas)) => schemas.get(index),
                _ => None,
            };
            match (item_schema, tuple) {
                (Some(_), _) if items_failed => {}
                (Some(schema), _) => {
                    if let Err(details) = schema.eval(item, explain) {
                        if !explain {
                            return Err(Vec::new());
                        }
                        items_failed = true;
                        failures.push(item_failure(
                            "items",
                            "At least one item did not match the sub-schema",
                            index,
                            details,
                        ));
                    }
                }
                (None, Some(_)) => match &self.additional_items {
                    Some(Additional::Nothing) => {
                        if !explain {
                            return Err(Vec::new());
                        }
                        additional_values.push(owned(item));
                    }
                    Some(Additional::Schema(schema)) if !additional_failed => {
                        if let Err(details) = schema.eval(item, explain) {
                            if !explain {
                                return Err(Vec::new());
                            }
                            additional_failed = true;
                            failures.push(item_failure(
                                "additionalItems",
                                "At least one additional item did not match the sub-schema",
                                index,
                                details,
                            ));
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        if !additional_values.is_empty() {
            failures.push(doc! {
                "operatorName": "additionalItems",
                "specifiedAs": { "additionalItems": false },
                "reason": "found additional items",
                "additionalItems": additional_values,
            });
        }
        for (keyword, ok) in [
            (
                "minItems",
                self.min_items.is_none_or(|min| length as u64 >= min),
            ),
            (
                "maxItems",
                self.max_items.is_none_or(|max| length as u64 <= max),
            ),
        ] {
            if !ok {
                if !explain {
                    return Err(Vec::new());
                }
                failures.push(doc! {
                    "operatorName": keyword,
                    "specifiedAs": self.specified(keyword),
                    "reason": "array did not match specified length",
                    "numberOfItems": length as i64,
                });
            }
        }
        if self.unique_items {
            // pairwise, in place: no allocation
            let duplicate = array.elements().enumerate().find_map(|(i, (_, item))| {
                array
                    .elements()
                    .take(i)
                    .any(|(_, earlier)| same(earlier, item))
                    .then_some(item)
            });
            if let Some(duplicate) = duplicate {
                if !explain {
                    return Err(Vec::new());
                }
                failures.push(doc! {
                    "operatorName": "uniqueItems",
                    "specifiedAs": self.specified("uniqueItems"),
                    "reason": "found a duplicate item",
                    "duplicatedValue": owned(duplicate),
                });
            }
        }
        verdict(failures)
    }

    /// `allOf`, `anyOf`, `oneOf` (`$_internalSchemaXor`) and `not`.
    fn logical(
        &self,
        value: Value<'_>,
        explain: bool,
        failures: &mut Vec<Document>,
    ) -> Result<(), Vec<Document>> {
        let branch = |index: usize, details: Vec<Document>| {
            doc! { "index": index as i64, "details": details }
        };
        let mut not_satisfied = Vec::new();
        for (i, schema) in self.all_of.iter().enumerate() {
            if let Err(details) = schema.eval(value, explain) {
                if !explain {
                    return Err(Vec::new());
                }
                not_satisfied.push(branch(i, details));
            }
        }
        if !not_satisfied.is_empty() {
            failures.push(doc! { "operatorName": "allOf", "schemasNotSatisfied": not_satisfied });
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|s| s.eval(value, false).is_ok()) {
            if !explain {
                return Err(Vec::new());
            }
            let branches: Vec<Document> = self
                .any_of
                .iter()
                .enumerate()
                .map(|(i, s)| branch(i, s.eval(value, true).err().unwrap_or_default()))
                .collect();
            failures.push(doc! { "operatorName": "anyOf", "schemasNotSatisfied": branches });
        }
        if !self.one_of.is_empty() {
            let mut matching = self
                .one_of
                .iter()
                .enumerate()
                .filter(|(_, s)| s.eval(value, false).is_ok())
                .map(|(i, _)| i);
            let first = matching.next();
            let second = matching.next();
            match (first, second) {
                (Some(_), None) => {}
                (None, _) => {
                    if !explain {
                        return Err(Vec::new());
                    }
                    let branches: Vec<Document> = self
                        .one_of
                        .iter()
                        .enumerate()
                        .map(|(i, s)| branch(i, s.eval(value, true).err().unwrap_or_default()))
                        .collect();
                    failures
                        .push(doc! { "operatorName": "oneOf", "schemasNotSatisfied": branches });
                }
                (Some(a), Some(b)) => {
                    if !explain {
                        return Err(Vec::new());
                    }
                    let mut indexes = vec![a as i64, b as i64];
                    indexes.extend(matching.map(|i| i as i64));
                    failures.push(doc! {
                        "operatorName": "oneOf",
                        "reason": "more than one subschema matched",
                        "matchingSchemaIndexes": indexes,
                    });
                }
            }
        }
        if let Some(not) = &self.not {
            if not.eval(value, false).is_ok() {
                if !explain {
                    return Err(Vec::new());
                }
                failures.push(doc! { "operatorName": "not", "reason": "child expression matched" });
            }
        }
        Ok(())
    }
}

/// `Ok` when no rule failed, else the failures.
fn verdict(failures: Vec<Document>) -> Result<(), Vec<Document>> {
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}
