//! Typed errors for writes a validator rejected (server code 121), read from `errInfo`, and
//! the [`LocalValidator`] that reaches the same verdict in the library.

mod equality;
mod holds;
mod local;
mod number;
mod pattern;
mod value;

pub(crate) use holds::never_holds;
pub use local::LocalValidator;

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use mongodb::bson::{RawDocument, RawDocumentBuf};

/// The compiled validator of a `Document` type, compiled on first use and kept for the life
/// of the process.
pub(crate) fn compiled<T: crate::Document + 'static>() -> &'static crate::Result<LocalValidator> {
    compiled_for(TypeId::of::<T>(), T::validator)
}

/// The registry behind [`compiled`], not generic: one copy in the library, whatever the number
/// of models. A read lock and a hash lookup per call, next to a validation's microseconds, is
/// what keeps a static and its initializer out of every derived model (a static per model was
/// about a tenth of the derive's compile time).
fn compiled_for(
    key: TypeId,
    validator: fn() -> mongodb::bson::Document,
) -> &'static crate::Result<LocalValidator> {
    type Registry = RwLock<HashMap<TypeId, &'static crate::Result<LocalValidator>>>;
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    let registry = REGISTRY.get_or_init(Default::default);
    if let Some(found) = registry.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return found;
    }
    // compiled outside the lock: a validator that takes long does not hold up other types
    let compiled = LocalValidator::new(&validator());
    let mut registry = registry.write().unwrap_or_else(|e| e.into_inner());
    registry
        .entry(key)
        .or_insert_with(|| Box::leak(Box::new(compiled)))
}

/// Whether a serialized document has an `_id` (usually its first field).
pub(crate) fn has_id(document: &RawDocument) -> bool {
    value::Value::document(document.as_bytes())
        .elements()
        .any(|(key, _)| key == b"_id")
}

/// The document with an `_id` first, as the driver's `insert_one` sends a document that has
/// none.
pub(crate) fn with_generated_id(document: &RawDocument) -> RawDocumentBuf {
    crate::bson_compat::with_generated_id(document)
}

use std::fmt;

use mongodb::bson::{Bson, Document};
use mongodb::error::{Error as DriverError, ErrorKind, WriteFailure};

/// The server's code for "Document failed validation".
pub const DOCUMENT_VALIDATION_FAILURE: i32 = 121;

/// A write rejected by a collection's validator: which document, and every field and rule that
/// failed, read from the server's `errInfo`; for a batch (`insert_many`, a bulk write) every
/// write error of the batch with its index ([`ValidationError::batch`]); and the driver's error
/// it came in, with its labels ([`ValidationError::driver`]).
///
/// Two validation errors are equal when they say the same (the driver's error is not
/// compared: a local check and the server's verdict on one document are equal).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ValidationError {
    /// The collection written to, when known (see [`crate::ResultExt::in_collection`]).
    pub collection: Option<String>,
    /// `errInfo.failingDocumentId`.
    pub document_id: Option<Bson>,
    /// For `insert_many` and bulk writes: the position of the (first) rejected document in the
    /// batch.
    pub index: Option<usize>,
    /// The failed rules, one per field path and rule.
    pub failures: Vec<RuleFailure>,
    /// The server's `errInfo`, for anything not captured above.
    pub err_info: Option<Document>,
    /// For `insert_many` and bulk writes: every write error of the batch, validation failures
    /// and others (a duplicate key), each with its index, in index order. Empty for a single
    /// write.
    pub batch: Vec<BatchFailure>,
    /// The driver's error, when a server refused the write.
    pub(crate) driver: Option<Box<DriverError>>,
}

impl PartialEq for ValidationError {
    fn eq(&self, other: &Self) -> bool {
        self.collection == other.collection
            && self.document_id == other.document_id
            && self.index == other.index
            && self.failures == other.failures
            && self.err_info == other.err_info
            && self.batch == other.batch
    }
}

/// One write error of a batch ([`ValidationError::batch`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BatchFailure {
    /// The write's position in the batch (from 0).
    pub index: usize,
    /// The server's code (121 for a validation failure, 11000 for a duplicate key).
    pub code: i32,
    /// The server's message.
    pub message: String,
    /// For a validation failure: `errInfo.failingDocumentId`.
    pub document_id: Option<Bson>,
    /// For a validation failure: the failed rules, as in [`ValidationError::failures`].
    pub failures: Vec<RuleFailure>,
}

impl BatchFailure {
    fn new(index: usize, code: i32, message: &str, details: Option<&Document>) -> BatchFailure {
        let parsed = (code == DOCUMENT_VALIDATION_FAILURE)
            .then(|| ValidationError::from_err_info(details.unwrap_or(&Document::new())));
        BatchFailure {
            index,
            code,
            message: message.to_owned(),
            document_id: parsed.as_ref().and_then(|p| p.document_id.clone()),
            failures: parsed.map(|p| p.failures).unwrap_or_default(),
        }
    }

    /// Whether the validator refused this write (code 121).
    pub fn is_validation(&self) -> bool {
        self.code == DOCUMENT_VALIDATION_FAILURE
    }
}

/// One rule of the validator that a field did not satisfy.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RuleFailure {
    /// Dotted path of the field (`tags`, `customer.name`, `history.3.status`); empty for the
    /// document itself.
    pub path: String,
    /// The `$jsonSchema` keyword that failed: `maxItems`, `required`, `bsonType`, `enum`, ...
    pub rule: String,
    /// The rule as the validator states it (`{ maxItems: 20 }`).
    pub specified: Option<Bson>,
    /// The server's explanation.
    pub reason: Option<String>,
    /// The offending value, when the server reports it.
    pub considered: Option<Bson>,
}

impl ValidationError {
    /// Recognises a validation failure in a driver error (`insert_one`, `update_*`,
    /// `replace_one`, `insert_many`, or a command); `None` for any other error.
    ///
    /// The driver's error is kept ([`ValidationError::driver`]); for `insert_many` and a bulk
    /// write, every write error of the batch ([`ValidationError::batch`]), the first validation
    /// failure described in the other fields.
    pub fn from_driver(error: &DriverError) -> Option<ValidationError> {
        let mut batch = Vec::new();
        let details = match error.kind.as_ref() {
            ErrorKind::Write(WriteFailure::WriteError(e))
                if e.code == DOCUMENT_VALIDATION_FAILURE =>
            {
                e.details.clone()
            }
            ErrorKind::InsertMany(e) => {
                batch = e
                    .write_errors
                    .iter()
                    .flatten()
                    .map(|e| BatchFailure::new(e.index, e.code, &e.message, e.details.as_ref()))
                    .collect();
                e.write_errors
                    .as_ref()?
                    .iter()
                    .find(|e| e.code == DOCUMENT_VALIDATION_FAILURE)?
                    .details
                    .clone()
            }
            ErrorKind::BulkWrite(e) => {
                batch = e
                    .write_errors
                    .iter()
                    .map(|(index, e)| {
                        BatchFailure::new(*index, e.code, &e.message, e.details.as_ref())
                    })
                    .collect();
                batch.sort_by_key(|f| f.index);
                let first = batch.iter().find(|f| f.is_validation())?.index;
                e.write_errors[&first].details.clone()
            }
            ErrorKind::Command(e) if e.code == DOCUMENT_VALIDATION_FAILURE => None,
            _ => return None,
        };
        batch.sort_by_key(|f| f.index);
        let mut validation = match details {
            Some(info) => ValidationError::from_err_info(&info),
            None => ValidationError::from_err_info(&Document::new()),
        };
        validation.index = batch.iter().find(|f| f.is_validation()).map(|f| f.index);
        validation.batch = batch;
        validation.driver = Some(Box::new(error.clone()));
        Some(validation)
    }

    /// The driver's error the server's refusal came in (with its labels); `None` for a
    /// failure found by [`LocalValidator`] or built from `errInfo`.
    pub fn driver(&self) -> Option<&DriverError> {
        self.driver.as_deref()
    }

    /// The write errors of the batch that are validation failures (code 121).
    pub fn rejected(&self) -> impl Iterator<Item = &BatchFailure> + '_ {
        self.batch.iter().filter(|f| f.is_validation())
    }

    /// Reads the server's `errInfo` document (`{ failingDocumentId, details: { operatorName:
    /// "$jsonSchema", schemaRulesNotSatisfied: [...] } }`).
    pub fn from_err_info(err_info: &Document) -> ValidationError {
        let mut failures = Vec::new();
        if let Ok(details) = err_info.get_document("details") {
            collect(details, "", &mut failures);
        }
        ValidationError {
            collection: None,
            document_id: err_info.get("failingDocumentId").cloned(),
            index: None,
            failures,
            err_info: (!err_info.is_empty()).then(|| err_info.clone()),
            batch: Vec::new(),
            driver: None,
        }
    }

    /// A failure found in the library rather than by a server (a document that cannot be
    /// serialized): no rule, only the reason.
    pub(crate) fn local(
        document_id: Option<Bson>,
        failures: Vec<RuleFailure>,
        reason: Option<String>,
    ) -> ValidationError {
        let mut failures = failures;
        if let Some(reason) = reason {
            failures.push(RuleFailure {
                path: String::new(),
                rule: "serialization".to_owned(),
                specified: None,
                reason: Some(reason),
                considered: None,
            });
        }
        ValidationError {
            collection: None,
            document_id,
            index: None,
            failures,
            err_info: None,
            batch: Vec::new(),
            driver: None,
        }
    }

    /// Sets the collection name.
    pub fn with_collection(mut self, collection: impl Into<String>) -> Self {
        self.collection = Some(collection.into());
        self
    }

    /// The failures at a field path.
    pub fn at<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a RuleFailure> + 'a {
        self.failures.iter().filter(move |f| f.path == path)
    }

    /// The distinct field paths that failed, in the server's order.
    pub fn paths(&self) -> Vec<&str> {
        let mut paths: Vec<&str> = Vec::new();
        for failure in &self.failures {
            if !paths.contains(&failure.path.as_str()) {
                paths.push(&failure.path);
            }
        }
        paths
    }
}

/// Walks the nested `details` of a `$jsonSchema` failure down to the rules that failed.
fn collect(node: &Document, path: &str, out: &mut Vec<RuleFailure>) {
    let operator = node.get_str("operatorName").unwrap_or_default();
    let join = |segment: &str| {
        if path.is_empty() {
            segment.to_owned()
        } else {
            format!("{path}.{segment}")
        }
    };
    let children = |key: &str| -> Vec<Document> {
        node.get_array(key)
            .map(|a| a.iter().filter_map(|d| d.as_document().cloned()).collect())
            .unwrap_or_default()
    };

    if let Ok(rules) = node.get_array("schemaRulesNotSatisfied") {
        for rule in rules.iter().filter_map(Bson::as_document) {
            collect(rule, path, out);
        }
        return;
    }
    match operator {
        "properties" => {
            for property in children("propertiesNotSatisfied") {
                let child = join(property.get_str("propertyName").unwrap_or("?"));
                for detail in nested(&property) {
                    collect(&detail, &child, out);
                }
            }
        }
        "items" | "additionalItems" => {
            let child = match node.get("itemIndex") {
                Some(Bson::Int32(i)) => join(&i.to_string()),
                Some(Bson::Int64(i)) => join(&i.to_string()),
                _ => path.to_owned(),
            };
            recurse_or_leaf(node, &child, operator, out);
        }
        "additionalProperties" => {
            if let Ok(extra) = node.get_array("additionalProperties") {
                for name in extra.iter().filter_map(Bson::as_str) {
                    out.push(leaf(node, &join(name), operator));
                }
            } else {
                let child = node
                    .get_str("failingProperty")
                    .map(join)
                    .unwrap_or_else(|_| path.to_owned());
                recurse_or_leaf(node, &child, operator, out);
            }
        }
        "required" => {
            let missing: Vec<String> = node
                .get_array("missingProperties")
                .map(|a| a.iter().filter_map(Bson::as_str).map(join).collect())
                .unwrap_or_default();
            if missing.is_empty() {
                out.push(leaf(node, path, operator));
            }
            for missing in missing {
                out.push(leaf(node, &missing, operator));
            }
        }
        // `{ propertyName, regexMatched, details }` per failing property
        "patternProperties" => {
            for property in children("details") {
                match property.get_str("propertyName") {
                    Ok(name) => {
                        let child = join(name);
                        for detail in nested(&property) {
                            collect(&detail, &child, out);
                        }
                    }
                    Err(_) => collect(&property, path, out),
                }
            }
            if children("details").is_empty() {
                out.push(leaf(node, path, operator));
            }
        }
        "oneOf" | "anyOf" if node.contains_key("schemasNotSatisfied") => {
            out.push(leaf(node, path, operator));
            let branches = children("schemasNotSatisfied");
            let closest = closest_branch(&branches, path);
            if closest.is_empty() {
                out.extend(unknown_tag(&branches, path));
            } else {
                out.extend(closest);
            }
        }
        _ => recurse_or_leaf(node, path, operator, out),
    }
}

/// The failures of the branch a value of a `oneOf`/`anyOf` (an enum's variants, a document's
/// kinds) was most likely meant for: among the branches whose tag matched and whose type
/// matched, the one with the fewest failures, when there is exactly one such. A value whose tag
/// names no branch gets none (the `oneOf` failure says it all).
fn closest_branch(branches: &[Document], path: &str) -> Vec<RuleFailure> {
    let depth = |p: &str| {
        if p.is_empty() {
            0
        } else {
            p.split('.').count()
        }
    };
    // (failures, whether they are only a nested union none of whose branches matched)
    let mut candidates: Vec<(Vec<RuleFailure>, bool)> = Vec::new();
    for branch in branches {
        let mut failures = Vec::new();
        for detail in nested(branch) {
            collect(&detail, path, &mut failures);
        }
        let another_kind = failures.iter().any(|f| {
            let single_value = matches!(
                f.specified.as_ref().and_then(|s| s.as_document()).and_then(|s| s.get_array("enum").ok()),
                Some(values) if values.len() == 1
            );
            (f.path == path && f.rule == "bsonType")
                || (f.rule == "enum" && single_value && depth(&f.path) == depth(path) + 1)
        });
        // a variant wrapping another tagged enum none of whose tags matched: weaker than a
        // branch whose own tag matched
        let unmatched_union = failures
            .iter()
            .all(|f| f.path == path && (f.rule == "oneOf" || f.rule == "anyOf"));
        if !another_kind && !failures.is_empty() {
            candidates.push((failures, unmatched_union));
        }
    }
    if candidates.iter().any(|(_, weak)| !weak) {
        candidates.retain(|(_, weak)| !weak);
    }
    let candidates: Vec<Vec<RuleFailure>> = candidates.into_iter().map(|(f, _)| f).collect();
    let Some(fewest) = candidates.iter().map(Vec::len).min() else {
        return Vec::new();
    };
    let mut closest = candidates.into_iter().filter(|c| c.len() == fewest);
    match (closest.next(), closest.next()) {
        (Some(only), None) => only,
        _ => Vec::new(),
    }
}

/// For a value whose tag names no branch: every branch refuses the same field one level down
/// for not being its one tag value (that field as an `enum` failure listing every branch's tag,
/// with the value found), or every branch finds the same field missing (that field as a
/// `required` failure: the tag is missing).
fn unknown_tag(branches: &[Document], path: &str) -> Option<RuleFailure> {
    let depth = |p: &str| {
        if p.is_empty() {
            0
        } else {
            p.split('.').count()
        }
    };
    let below = |f: &RuleFailure| depth(&f.path) == depth(path) + 1;
    let mut tag_path: Option<String> = None;
    let mut tags = Vec::new();
    let mut considered = None;
    // the fields one level down that every branch finds missing, in the first branch's order
    let mut missing: Option<Vec<RuleFailure>> = None;
    let mut every_tag = true;
    for branch in branches {
        let mut failures = Vec::new();
        for detail in nested(branch) {
            collect(&detail, path, &mut failures);
        }
        let absent: Vec<RuleFailure> = failures
            .iter()
            .filter(|f| f.rule == "required" && below(f))
            .cloned()
            .collect();
        missing = Some(match missing {
            None => absent,
            Some(known) => known
                .into_iter()
                .filter(|k| absent.iter().any(|a| a.path == k.path))
                .collect(),
        });
        let tag = failures.iter().find_map(|f| {
            let values = f
                .specified
                .as_ref()
                .and_then(Bson::as_document)
                .and_then(|s| s.get_array("enum").ok())?;
            (f.rule == "enum" && values.len() == 1 && below(f))
                .then(|| (f.path.clone(), values[0].clone(), f.considered.clone()))
        });
        match tag {
            Some((at, value, found)) if tag_path.as_ref().is_none_or(|known| *known == at) => {
                tag_path = Some(at);
                tags.push(value);
                considered = considered.or(found);
            }
            _ => every_tag = false,
        }
    }
    if let (true, Some(tag_path)) = (every_tag, tag_path) {
        let found = considered
            .as_ref()
            .map_or_else(|| "the value found".to_owned(), |v| format!("{v}"));
        let reason = format!(
            "{found} names no variant; the variants' tags are {}",
            Bson::Array(tags.clone())
        );
        return Some(RuleFailure {
            path: tag_path,
            rule: "enum".to_owned(),
            specified: Some(Bson::Document(mongodb::bson::doc! { "enum": tags })),
            reason: Some(reason),
            considered,
        });
    }
    let mut absent = missing?.into_iter().next()?;
    absent.reason = Some(format!(
        "the tag `{}` is missing: no variant can be told",
        absent.path
    ));
    Some(absent)
}

fn nested(node: &Document) -> Vec<Document> {
    node.get_array("details")
        .map(|a| a.iter().filter_map(|d| d.as_document().cloned()).collect())
        .unwrap_or_default()
}

fn recurse_or_leaf(node: &Document, path: &str, operator: &str, out: &mut Vec<RuleFailure>) {
    let details = nested(node);
    if details.is_empty() {
        out.push(leaf(node, path, operator));
    } else {
        for detail in details {
            collect(&detail, path, out);
        }
    }
}

fn leaf(node: &Document, path: &str, operator: &str) -> RuleFailure {
    RuleFailure {
        path: path.to_owned(),
        rule: operator.to_owned(),
        specified: node.get("specifiedAs").cloned(),
        reason: node.get_str("reason").ok().map(str::to_owned),
        considered: node.get("consideredValue").cloned(),
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("document failed validation")?;
        if let Some(collection) = &self.collection {
            write!(f, " in `{collection}`")?;
        }
        if let Some(id) = &self.document_id {
            write!(f, " (_id {id})")?;
        }
        if self.failures.is_empty() {
            return f.write_str(" (the server gave no details)");
        }
        f.write_str(":")?;
        for (i, failure) in self.failures.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { "; " })?;
            write!(f, "{failure}")?;
        }
        let rejected = self.rejected().count();
        if self.batch.len() > 1 {
            let indexes: Vec<String> = self.batch.iter().map(|f| f.index.to_string()).collect();
            write!(
                f,
                " ({} write errors in the batch, {rejected} of them validation failures, at indexes {})",
                self.batch.len(),
                indexes.join(", ")
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for RuleFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "<document>"
        } else {
            &self.path
        };
        write!(f, "`{path}` fails `{}`", self.rule)?;
        if let Some(Bson::Document(spec)) = &self.specified {
            if let Some((_, value)) = spec.iter().next() {
                write!(f, " {value}")?;
            }
        }
        if let Some(reason) = &self.reason {
            write!(f, " ({reason})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationError {
    /// The driver's error, when a server refused the write.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.driver.as_deref().map(|e| e as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    /// A root without an `_id` field whose validator requires one and at most 2 fields.
    #[derive(serde::Serialize)]
    struct Visit {
        path: String,
    }

    impl crate::BsonSchema for Visit {
        fn bson_schema() -> Document {
            doc! { "bsonType": "object", "required": ["_id", "path"], "maxProperties": 2 }
        }
    }

    impl crate::Document for Visit {
        const COLLECTION: &'static str = "visits";
        type Id = mongodb::bson::oid::ObjectId;
        fn collection_spec() -> crate::CollectionSpec {
            crate::CollectionSpec::new("visits", <Self as crate::Document>::validator())
        }
    }

    #[test]
    fn check_adds_the_id_the_driver_adds_before_judging() {
        use crate::Document as _;
        let visit = Visit { path: "/".into() };
        let raw = crate::bson_compat::to_raw_document_buf(&visit).unwrap();
        let local = LocalValidator::new(&Visit::validator()).unwrap();
        // as serialized: no `_id`
        let error = local.check_raw(&raw).unwrap_err();
        assert_eq!(error.paths(), ["_id"]);
        // as the driver sends it, and as `check` judges it
        assert!(local.check_raw(&with_generated_id(&raw)).is_ok());
        Visit::check(&visit).unwrap();
        assert!(has_id(&with_generated_id(&raw)) && !has_id(&raw));
    }

    #[test]
    fn a_one_of_names_the_failures_of_the_kind_the_value_was_meant_for() {
        let tag = |kind: &str, considered: &str| {
            doc! { "operatorName": "properties", "propertiesNotSatisfied": [
                { "propertyName": "status", "details": [
                    { "operatorName": "enum", "specifiedAs": { "enum": [kind] }, "reason": "value was not found in enum", "consideredValue": considered }
                ] }
            ] }
        };
        // as SecantusDB 0.7.0b3 reports a `oneOf` (mongod's shape: `schemasNotSatisfied`)
        let info = |considered: &str| {
            doc! { "details": { "operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                { "operatorName": "properties", "propertiesNotSatisfied": [
                    { "propertyName": "email", "details": [
                        { "operatorName": "oneOf", "schemasNotSatisfied": [
                            { "index": 0, "details": [tag("verified", considered)] },
                            { "index": 1, "details": [
                                { "operatorName": "properties", "propertiesNotSatisfied": [
                                    { "propertyName": "level", "details": [
                                        { "operatorName": "minimum", "specifiedAs": { "minimum": 1 }, "consideredValue": 0 }
                                    ] }
                                ] }
                            ] },
                        ] }
                    ] }
                ] }
            ] } }
        };
        let error = ValidationError::from_err_info(&info("by_admin"));
        let got: Vec<(&str, &str)> = error
            .failures
            .iter()
            .map(|f| (f.path.as_str(), f.rule.as_str()))
            .collect();
        assert_eq!(got, [("email", "oneOf"), ("email.level", "minimum")]);
    }

    // shapes as the server reports them (captured from SecantusDB 0.7.0b3 and MongoDB 8)
    #[test]
    fn reads_nested_properties_items_required_and_extras() {
        let info = doc! {
            "failingDocumentId": 7,
            "details": { "operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
                { "operatorName": "properties", "propertiesNotSatisfied": [
                    { "propertyName": "tags", "details": [
                        { "operatorName": "maxItems", "specifiedAs": { "maxItems": 2 }, "reason": "array did not match specified length", "numberOfItems": 3 }
                    ] },
                    { "propertyName": "n", "details": [
                        { "operatorName": "properties", "propertiesNotSatisfied": [
                            { "propertyName": "x", "details": [
                                { "operatorName": "bsonType", "specifiedAs": { "bsonType": "long" }, "reason": "type did not match", "consideredValue": 3 }
                            ] }
                        ] }
                    ] },
                    { "propertyName": "history", "details": [
                        { "operatorName": "items", "reason": "At least one item did not match the sub-schema", "itemIndex": 1, "details": [
                            { "operatorName": "enum", "specifiedAs": { "enum": ["open"] }, "reason": "value was not found in enum", "consideredValue": "x" }
                        ] }
                    ] }
                ] },
                { "operatorName": "required", "specifiedAs": { "required": ["a", "b"] }, "missingProperties": ["b"] },
                { "operatorName": "additionalProperties", "specifiedAs": { "additionalProperties": false }, "additionalProperties": ["zzz"] }
            ] }
        };
        let error = ValidationError::from_err_info(&info);
        let got: Vec<(&str, &str)> = error
            .failures
            .iter()
            .map(|f| (f.path.as_str(), f.rule.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("tags", "maxItems"),
                ("n.x", "bsonType"),
                ("history.1", "enum"),
                ("b", "required"),
                ("zzz", "additionalProperties"),
            ]
        );
        assert_eq!(error.document_id, Some(Bson::Int32(7)));
        let text = error.with_collection("t").to_string();
        assert!(
            text.contains("in `t`") && text.contains("`tags` fails `maxItems` 2"),
            "{text}"
        );
    }
}
