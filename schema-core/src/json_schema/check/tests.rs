//! Cases from mongod's jstests (`jstests/core/query/json_schema/*.js`, formerly
//! `jstests/core/json_schema/`) and, where the jstests have none, from the parser's unit
//! tests (`src/mongo/db/matcher/schema/*_test.cpp`); each group names its file.

use super::*;
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Decimal128};

fn problems(schema: Document) -> Vec<String> {
    validator_problems(&doc! { "$jsonSchema": schema }, true)
}

#[track_caller]
fn refused(schema: Document, expected: &str) {
    let problems = problems(schema.clone());
    assert!(
        problems.iter().any(|p| p.contains(expected)),
        "{schema} should be refused with `{expected}`, got {problems:?}"
    );
}

#[track_caller]
fn accepted(schema: Document) {
    let problems = problems(schema.clone());
    assert!(
        problems.is_empty(),
        "{schema} should pass, got {problems:?}"
    );
}

#[test]
fn json_schema_js() {
    // jstests/core/query/json_schema/json_schema.js
    for value in [Bson::from("foo"), Bson::Array(vec![])] {
        let problems = validator_problems(&doc! { "$jsonSchema": value }, true);
        assert!(problems[0].contains("requires an object"), "{problems:?}");
    }
    refused(doc! { "type": 3 }, "`$jsonSchema.type` is 3");
    refused(doc! { "type": {} }, "`$jsonSchema.type` is an empty object");
    refused(doc! { "type": "integer" }, "names `integer`");
    refused(doc! { "properties": 3 }, "`$jsonSchema.properties` is 3");
    refused(
        doc! { "properties": [] },
        "`$jsonSchema.properties` is an empty array",
    );
    refused(
        doc! { "properties": { "num": "number" } },
        "`$jsonSchema.properties.num` is \"number\"",
    );
    for keyword in ["maximum", "maxLength", "minLength"] {
        refused(
            doc! { "properties": { "num": { keyword: "0" } } },
            &format!("`$jsonSchema.properties.num.{keyword}` is \"0\""),
        );
        refused(
            doc! { "properties": { "num": { keyword: {} } } },
            &format!("`$jsonSchema.properties.num.{keyword}` is an empty object"),
        );
    }
    refused(
        doc! { "properties": { "num": { "pattern": 0 } } },
        "requires a string",
    );
    refused(
        doc! { "properties": { "num": { "pattern": {} } } },
        "requires a string",
    );
    for name in ["\0a", "a\0", "\0", "\0\0\0", "a\0\u{1}\u{8}a", "\0.."] {
        for prefixed in [
            name.to_owned(),
            format!("${name}"),
            format!("foo.{name}"),
            format!("$foo.{name}"),
            format!("..{name}"),
        ] {
            refused(doc! { "required": [prefixed] }, "contains a NUL byte");
        }
    }
    for keyword in ["default", "definitions", "format", "id", "$schema"] {
        refused(doc! { keyword: "x" }, "does not support");
    }
    refused(
        doc! { "properties": { "a": { "$ref": "#/definitions/positiveInt" } } },
        "`$jsonSchema.properties.a.$ref` is a JSON Schema keyword that mongod does not support",
    );
    accepted(doc! {});
    accepted(doc! { "type": "object" });
    // a top-level type other than object matches nothing, but parses
    accepted(doc! { "type": "string" });
    accepted(doc! { "bsonType": "long" });
    accepted(doc! { "bsonType": "objectId" });
    accepted(doc! { "properties": { "num": { "type": "number", "maximum": -1 } } });
    accepted(doc! { "properties": { "num": { "bsonType": "long", "maximum": 0 } } });
    accepted(doc! { "properties": { "num": { "type": "string", "maxLength": 2 } } });
    accepted(doc! { "properties": { "num": { "type": "string", "pattern": "ing" } } });
    accepted(doc! { "description": "test" });
    accepted(doc! { "title": "insert title" });
    accepted(doc! { "properties": { "a": { "title": "t", "description": "d" } } });
    accepted(doc! { "properties": { "a": { "type": "number" }, "b": { "minLength": 1 } } });
    accepted(doc! { "properties": { "obj": { "properties": {
        "f1": { "type": "object", "properties": { "f3": { "type": "string" } } },
        "f2": { "type": "string" },
    } } } });
}

#[test]
fn bsontype_js() {
    // jstests/core/query/json_schema/bsontype.js
    for alias in [
        "double",
        "binData",
        "undefined",
        "objectId",
        "bool",
        "date",
        "regex",
        "javascript",
        "javascriptWithScope",
        "int",
        "timestamp",
        "long",
        "decimal",
        "minKey",
        "maxKey",
    ] {
        refused(
            doc! { "properties": { "f": { "type": alias } } },
            &format!("names `{alias}`, a BSON type"),
        );
    }
    for alias in BSON_TYPES {
        accepted(doc! { "properties": { "f": { "bsonType": *alias } } });
    }
    for alias in JSON_TYPES {
        accepted(doc! { "properties": { "f": { "type": *alias } } });
    }
    refused(
        doc! { "properties": { "b": { "bsonType": "boolean" } } },
        "`bsonType` spells it `bool`",
    );
    refused(
        doc! { "properties": { "n": { "bsonType": "integer" } } },
        "`integer`",
    );
    refused(
        doc! { "properties": { "n": { "type": "integer" } } },
        "`integer`",
    );
    refused(
        doc! { "properties": { "f": { "bsonType": "unknown" } } },
        "does not know",
    );
    refused(
        doc! { "properties": { "f": { "type": "unknown" } } },
        "does not know",
    );
    refused(
        doc! { "bsonType": "string", "type": "string" },
        "`$jsonSchema` has both `type` and `bsonType`",
    );
    refused(
        doc! { "properties": { "a": { "bsonType": "string", "type": "string" } } },
        "`$jsonSchema.properties.a` has both `type` and `bsonType`",
    );
    refused(
        doc! { "properties": { "f": { "type": ["number", "objectId"] } } },
        "objectId",
    );
    refused(
        doc! { "properties": { "f": { "type": ["object", "unknown"] } } },
        "unknown",
    );
    refused(
        doc! { "properties": { "f": { "bsonType": ["number", "unknown"] } } },
        "unknown",
    );
    refused(doc! { "bsonType": ["unknown"] }, "unknown");
    refused(
        doc! { "properties": { "f": { "type": ["number", 2] } } },
        "lists 2",
    );
    refused(
        doc! { "properties": { "f": { "bsonType": ["number", 2] } } },
        "lists 2",
    );
    refused(
        doc! { "properties": { "f": { "type": ["number", "string", "number"] } } },
        "lists `number` twice",
    );
    refused(
        doc! { "properties": { "f": { "bsonType": ["number", "string", "number"] } } },
        "lists `number` twice",
    );
    accepted(doc! { "type": "object", "properties": { "obj": { "bsonType": "object" } } });
    accepted(doc! { "properties": { "a": { "bsonType": "long" }, "b": { "type": "null" } } });
    accepted(doc! { "properties": { "f": { "type": ["number", "string"] } } });
    accepted(doc! { "properties": { "f": { "bsonType": ["objectId", "double"] } } });
    accepted(doc! { "type": ["object", "string"] });
    accepted(doc! { "bsonType": ["object", "double"] });
    accepted(doc! { "properties": { "u": { "bsonType": "undefined" } }, "required": ["u"] });
}

#[test]
fn min_max_items_and_properties_js() {
    // jstests/core/query/json_schema/min_max_items.js
    for keyword in ["minItems", "maxItems"] {
        refused(doc! { keyword: "blah" }, "requires a non-negative integer");
        refused(
            doc! { keyword: -1 },
            &format!("`$jsonSchema.{keyword}` is -1; mongod requires a non-negative integer"),
        );
        refused(
            doc! { keyword: 12.5 },
            "is 12.5; mongod requires a non-negative integer",
        );
        accepted(doc! { keyword: 2 });
        accepted(doc! { "properties": { "a": { keyword: 1 } } });
    }
    // jstests/core/query/json_schema/min_max_properties.js (accepted) and
    // src/mongo/db/matcher/schema/object_keywords_test.cpp (refused)
    for keyword in ["minProperties", "maxProperties"] {
        accepted(doc! { keyword: 0 });
        accepted(doc! { keyword: 2 });
        accepted(doc! { "properties": { "a": { keyword: 1 } } });
        refused(doc! { keyword: Bson::Null }, "is null");
        refused(doc! { keyword: -2 }, "is -2");
        refused(doc! { keyword: 1.1 }, "is 1.1");
    }
}

#[test]
fn unique_items_js() {
    // jstests/core/query/json_schema/unique_items.js
    for value in [Bson::Int32(1), Bson::Double(1.0), Bson::from("true")] {
        refused(doc! { "uniqueItems": value }, "requires a boolean");
    }
    accepted(doc! { "uniqueItems": true });
    accepted(doc! { "uniqueItems": false });
    accepted(doc! { "properties": { "a": { "uniqueItems": true } } });
}

#[test]
fn items_and_additional_items_js() {
    // jstests/core/query/json_schema/items.js
    for value in [Bson::Int32(1), Bson::Double(1.0), Bson::from("true")] {
        refused(
            doc! { "items": value },
            "requires a schema (object) or an array of schemas",
        );
    }
    accepted(doc! { "items": { "type": "number" } });
    accepted(doc! { "items": [{ "type": "number" }] });
    accepted(doc! { "properties": { "a": { "items": { "minimum": 0 } } } });
    accepted(doc! { "properties": { "a": { "items": [{ "multipleOf": 2 }] } } });
    accepted(doc! { "properties": { "a": { "items": [{ "maxLength": 1 }, { "maxLength": 2 }] } } });
    accepted(doc! { "properties": { "a": { "items": [] } } });
    // jstests/core/query/json_schema/additional_items.js
    for value in [Bson::Int32(1), Bson::Double(1.0), Bson::from("true")] {
        refused(
            doc! { "additionalItems": value },
            "requires a boolean or a schema (object)",
        );
    }
    accepted(doc! { "items": [{ "type": "number" }], "additionalItems": false });
    accepted(doc! { "items": [{ "type": "number" }], "additionalItems": true });
    accepted(doc! { "items": [{ "type": "number" }], "additionalItems": { "type": "string" } });
    accepted(
        doc! { "properties": { "a": { "items": [{ "not": {} }], "additionalItems": { "not": {} } } } },
    );
    // src/mongo/db/matcher/schema/json_schema_parser.cpp, parseItems: every element an object
    refused(
        doc! { "properties": { "a": { "items": [{}, 1] } } },
        "`$jsonSchema.properties.a.items.1` is 1",
    );
    refused(
        doc! { "properties": { "a": { "items": { "maxItems": -1 } } } },
        "`$jsonSchema.properties.a.items.maxItems` is -1",
    );
}

#[test]
fn additional_and_pattern_properties_js() {
    // jstests/core/query/json_schema/additional_properties.js
    accepted(doc! { "properties": { "_id": {}, "a": {} }, "additionalProperties": false });
    accepted(doc! { "properties": { "_id": {}, "a": {} }, "additionalProperties": true });
    accepted(doc! {
        "properties": { "_id": {}, "a": {} },
        "patternProperties": { "^b": { "type": "string" } },
        "additionalProperties": { "type": "number" },
    });
    accepted(
        doc! { "properties": { "obj": { "properties": { "a": {} }, "additionalProperties": false } } },
    );
    // jstests/core/query/json_schema/pattern_properties.js
    accepted(
        doc! { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } },
    );
    accepted(
        doc! { "properties": { "aa": { "type": "number" } }, "patternProperties": { "^a": { "type": "string" } } },
    );
    // src/mongo/db/matcher/schema/json_schema_parser.cpp, parseAdditionalProperties and
    // parsePatternProperties
    refused(
        doc! { "additionalProperties": "no" },
        "`$jsonSchema.additionalProperties` is \"no\"; mongod requires a boolean or a schema",
    );
    refused(
        doc! { "additionalProperties": { "bsonType": "nope" } },
        "does not know",
    );
    refused(
        doc! { "patternProperties": [] },
        "requires an object of schemas",
    );
    refused(
        doc! { "patternProperties": { "^a": true } },
        "`$jsonSchema.patternProperties.^a` is true",
    );
}

#[test]
fn dependencies_js() {
    // jstests/core/query/json_schema/dependencies.js
    accepted(doc! { "dependencies": { "foo": { "required": ["bar"] } } });
    accepted(doc! { "dependencies": { "foo": ["bar", "baz"] } });
    accepted(
        doc! { "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } },
    );
    accepted(doc! { "dependencies": {} });
    // src/mongo/db/matcher/schema/object_keywords_test.cpp
    refused(doc! { "dependencies": [] }, "requires an object");
    refused(
        doc! { "dependencies": { "a": ["b"], "bad": 1 } },
        "`$jsonSchema.dependencies.bad` is 1",
    );
    refused(
        doc! { "dependencies": { "a": { "invalid": 1 } } },
        "`$jsonSchema.dependencies.a.invalid`",
    );
    refused(doc! { "dependencies": { "a": [] } }, "is an empty array");
    refused(doc! { "dependencies": { "a": ["b", 1] } }, "lists 1");
    refused(
        doc! { "dependencies": { "a": ["b", "b"] } },
        "lists `b` twice",
    );
    // json_schema_parser.cpp, parseDependencies: annotations are let through
    accepted(doc! { "dependencies": { "title": "t", "a": ["b"] } });
}

#[test]
fn required_js() {
    // jstests/core/query/json_schema/required.js
    accepted(doc! { "required": ["a", "b"] });
    accepted(doc! { "properties": { "a": { "required": ["b"] } } });
    // src/mongo/db/matcher/schema/object_keywords_test.cpp
    refused(
        doc! { "required": "field" },
        "requires an array of field names",
    );
    refused(
        doc! { "required": [] },
        "`$jsonSchema.required` is an empty array; mongod requires at least one field name",
    );
    refused(doc! { "required": ["foo", 1] }, "lists 1");
    refused(
        doc! { "required": ["foo", "bar", "foo"] },
        "`$jsonSchema.required` lists `foo` twice",
    );
    refused(
        doc! { "description": {} },
        "`$jsonSchema.description` is an empty object",
    );
    refused(
        doc! { "unknown": 1 },
        "`$jsonSchema.unknown` is not a `$jsonSchema` keyword",
    );
    refused(
        doc! { "properties": { "foo": 1 } },
        "`$jsonSchema.properties.foo` is 1",
    );
    refused(
        doc! { "type": "string", "properties": 1 },
        "`$jsonSchema.properties` is 1",
    );
    refused(
        doc! { "properties": { "obj": { "type": [] } } },
        "is an empty array",
    );
    refused(
        doc! { "properties": { "obj": { "bsonType": [] } } },
        "is an empty array",
    );
    refused(doc! { "properties": { "obj": { "type": [1] } } }, "lists 1");
    refused(
        doc! { "properties": { "obj": { "type": ["objectId"] } } },
        "objectId",
    );
    refused(
        doc! { "properties": { "obj": { "type": ["number", "integer"] } } },
        "`integer`",
    );
    refused(
        doc! { "properties": { "obj": { "type": ["object", "string", "object"] } } },
        "lists `object` twice",
    );
    refused(
        doc! { "properties": { "obj": { "bsonType": ["object", "string", "object"] } } },
        "lists `object` twice",
    );
    accepted(doc! { "type": ["number", "object"] });
    accepted(doc! { "properties": { "a": { "bsonType": ["number", "objectId"] } } });
}

#[test]
fn logical_keywords_js() {
    // jstests/core/query/json_schema/logical_keywords.js
    for keyword in ["allOf", "anyOf", "oneOf"] {
        refused(
            doc! { "properties": { "foo": { keyword: { "maximum": "0" } } } },
            "requires an array of schemas",
        );
        refused(
            doc! { "properties": { "foo": { keyword: [0] } } },
            &format!("`$jsonSchema.properties.foo.{keyword}.0` is 0"),
        );
        refused(
            doc! { "properties": { "foo": { keyword: [{ "invalid": "0" }] } } },
            &format!("`$jsonSchema.properties.foo.{keyword}.0.invalid`"),
        );
        // src/mongo/db/matcher/schema/logical_keywords_test.cpp
        refused(
            doc! { "properties": { "foo": { keyword: [] } } },
            "is an empty array",
        );
        refused(
            doc! { "properties": { "foo": { keyword: [{ "type": {} }] } } },
            "type` is an empty object",
        );
        accepted(doc! { keyword: [{}] });
        accepted(
            doc! { "properties": { "foo": { "type": "number", keyword: [{ "minimum": 1 }] } } },
        );
    }
    refused(
        doc! { "properties": { "foo": { "not": { "maximum": "0" } } } },
        "`$jsonSchema.properties.foo.not.maximum` is \"0\"",
    );
    refused(
        doc! { "properties": { "foo": { "not": [0] } } },
        "requires a schema (object)",
    );
    refused(
        doc! { "properties": { "foo": { "not": [{}] } } },
        "requires a schema (object)",
    );
    accepted(doc! { "oneOf": [{}, {}] });
    accepted(doc! { "not": {} });
    accepted(doc! { "properties": { "foo": { "type": "string", "not": { "maxLength": 4 } } } });
    accepted(doc! { "properties": { "a": { "enum": ["str", 5] } } });
    accepted(doc! { "properties": { "a": { "enum": [Bson::Null] } } });
    accepted(doc! { "properties": { "a": { "enum": [[1, 2, "3"]] } } });
    accepted(doc! { "properties": { "a": { "enum": [[]] } } });
    accepted(doc! { "properties": { "a": { "enum": [{ "name": "tiny", "size": "large" }] } } });
    accepted(doc! { "enum": [{ "_id": 0 }] });
    accepted(doc! { "enum": [1, 2] });
    // src/mongo/db/matcher/schema/logical_keywords_test.cpp
    refused(
        doc! { "properties": { "foo": { "enum": "foo" } } },
        "requires an array of values",
    );
    refused(
        doc! { "properties": { "foo": { "enum": [] } } },
        "is an empty array",
    );
    refused(
        doc! { "properties": { "foo": { "enum": [1, 2, 1] } } },
        "lists 1 twice",
    );
    refused(
        doc! { "properties": { "foo": { "enum": [{ "a": 1, "b": 1 }, { "b": 1, "a": 1 }] } } },
        "twice",
    );
    // BSON comparison: numbers by value, whatever their type
    refused(doc! { "enum": [1_i32, 1_i64] }, "twice");
    refused(doc! { "enum": [1_i32, 1.0] }, "twice");
    accepted(doc! { "enum": ["a", "A", [1, 2], [2, 1]] });
}

#[test]
fn scalar_keywords_test_cpp() {
    // src/mongo/db/matcher/schema/scalar_keywords_test.cpp
    refused(doc! { "maximum": "foo" }, "requires a number");
    refused(doc! { "minimum": "foo" }, "requires a number");
    refused(
        doc! { "maxLength": "foo" },
        "requires a non-negative integer",
    );
    refused(doc! { "maxLength": -1 }, "is -1");
    refused(doc! { "minLength": -1 }, "is -1");
    refused(
        doc! { "properties": { "foo": { "type": "string", "maxLength": 5.5 } } },
        "is 5.5",
    );
    refused(
        doc! { "properties": { "foo": { "type": "string", "minLength": 5.5 } } },
        "is 5.5",
    );
    accepted(
        doc! { "properties": { "foo": { "type": "string", "maxLength": 5.0, "minLength": 5.0 } } },
    );
    refused(
        doc! { "exclusiveMaximum": true },
        "is set without `maximum`",
    );
    refused(
        doc! { "exclusiveMinimum": true },
        "is set without `minimum`",
    );
    refused(
        doc! { "maximum": 5, "exclusiveMaximum": "foo" },
        "requires a boolean",
    );
    refused(
        doc! { "minimum": 5, "exclusiveMinimum": "foo" },
        "requires a boolean",
    );
    accepted(
        doc! { "properties": { "num": { "bsonType": "long", "maximum": 0, "exclusiveMaximum": true, "minimum": -9, "exclusiveMinimum": false } } },
    );
    refused(doc! { "pattern": 6 }, "requires a string");
    refused(doc! { "multipleOf": "foo" }, "requires a number");
    refused(doc! { "multipleOf": -1 }, "requires a positive number");
    refused(doc! { "multipleOf": 0 }, "requires a positive number");
    let decimal: Decimal128 = "5.3".parse().unwrap();
    accepted(doc! { "properties": { "foo": { "type": "number", "multipleOf": decimal } } });
}

#[test]
fn encrypt_js() {
    // jstests/core/query/json_schema/encrypt.js
    accepted(doc! { "properties": { "bin": { "encrypt": {} } } });
    accepted(
        doc! { "properties": { "obj": { "type": "object", "properties": { "a": { "encrypt": {} } } } } },
    );
    accepted(doc! { "properties": { "arr": { "type": "array", "items": { "encrypt": {} } } } });
    refused(
        doc! { "properties": { "bin": { "encrypt": {}, "type": "object" } } },
        "has both `encrypt` and `type`",
    );
    refused(
        doc! { "properties": { "bin": { "encrypt": {}, "bsonType": "object" } } },
        "has both `encrypt` and `bsonType`",
    );
    // src/mongo/db/matcher/schema/encrypt_keyword_test.cpp
    refused(
        doc! { "properties": { "foo": { "encrypt": 12 } } },
        "requires an object",
    );
    accepted(
        doc! { "properties": { "foo": { "encrypt": { "bsonType": ["int", "date", "string"] } } } },
    );
    refused(
        doc! { "properties": { "foo": { "encrypt": { "bsonType": 5 } } } },
        "is 5",
    );
    refused(
        doc! { "properties": { "foo": { "encrypt": { "bsonType": "Stringx" } } } },
        "Stringx",
    );
    accepted(doc! { "properties": { "foo": { "encrypt": {
        "bsonType": "string",
        "keyId": "/pointer",
        "algorithm": "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic",
    } } } });
    refused(
        doc! { "properties": { "foo": { "encrypt": { "keyIdx": "/pointer" } } } },
        "`$jsonSchema.properties.foo.encrypt.keyIdx` is not a field mongod knows here",
    );
    refused(
        doc! { "properties": { "foo": { "encrypt": { "keyId": ["nonsense", "again"] } } } },
        "UUIDs",
    );
    refused(
        doc! { "properties": { "foo": { "encrypt": { "algorithm": "Stringx" } } } },
        "Stringx",
    );
    refused(
        doc! { "properties": { "foo": { "encrypt": { "keyId": "invalidPointer" } } } },
        "JSON pointer",
    );
    let uuid = Binary {
        subtype: BinarySubtype::Uuid,
        bytes: vec![1; 16],
    };
    accepted(doc! { "encryptMetadata": {
        "algorithm": "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic",
        "keyId": [uuid.clone()],
    } });
    refused(doc! { "encryptMetadata": {} }, "is an empty object");
    refused(
        doc! { "encrypt": {}, "encryptMetadata": { "algorithm": "AEAD_AES_256_CBC_HMAC_SHA_512-Random" } },
        "has both `encrypt` and `encryptMetadata`",
    );
    let other = Binary {
        subtype: BinarySubtype::Encrypted,
        bytes: vec![1; 16],
    };
    refused(
        doc! { "properties": { "foo": { "encrypt": { "keyId": [uuid, other] } } } },
        "UUIDs",
    );
}

#[test]
fn encryption_keywords_need_a_strict_validator_that_errors() {
    // CollectionImpl::parseValidator (src/mongo/db/catalog/collection_impl.cpp): moderate
    // or warn validators may not use `encrypt` or `encryptMetadata`
    let schema = doc! { "$jsonSchema": {
        "encryptMetadata": { "algorithm": "AEAD_AES_256_CBC_HMAC_SHA_512-Random" },
        "properties": { "ssn": { "encrypt": { "bsonType": "string" } } },
    } };
    assert!(validator_problems(&schema, true).is_empty());
    let problems = validator_problems(&schema, false);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[1].starts_with("`$jsonSchema.properties.ssn.encrypt` is refused by mongod unless")
    );
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let problems = problems(doc! {
        "bsonType": "object",
        "required": ["a", "a"],
        "properties": {
            "tags": { "bsonType": "array", "maxItems": -1, "items": { "bsonType": ["string", "string"] } },
            "name": { "bsonType": "string", "maxlength": 3 },
            "status": { "enum": [] },
        },
    });
    assert_eq!(
        problems,
        [
            "`$jsonSchema.required` lists `a` twice; mongod requires distinct names",
            "`$jsonSchema.properties.tags.maxItems` is -1; mongod requires a non-negative integer",
            "`$jsonSchema.properties.tags.items.bsonType` lists `string` twice; mongod requires distinct types",
            "`$jsonSchema.properties.name.maxlength` is not a `$jsonSchema` keyword of mongod (did you mean `maxLength`?)",
            "`$jsonSchema.properties.status.enum` is an empty array; mongod requires at least one value",
        ]
    );
}

#[test]
fn query_validators_are_searched_for_json_schema() {
    assert!(validator_problems(&doc! { "a": { "$exists": true } }, true).is_empty());
    assert!(validator_problems(&doc! {}, false).is_empty());
    let nested = doc! { "$or": [
        { "a": 1 },
        { "$and": [{ "$jsonSchema": { "required": [] } }] },
    ], "$jsonSchema": { "bsonType": "object" } };
    assert_eq!(
        validator_problems(&nested, true),
        ["`$or.1.$and.0.$jsonSchema.required` is an empty array; mongod requires at least one field name (leave `required` out instead)"]
    );
}

#[test]
fn lengths_are_whole_non_negative_numbers_of_any_numeric_type() {
    let decimal = |s: &str| Bson::Decimal128(s.parse().unwrap());
    for ok in [
        Bson::Int32(0),
        Bson::Int64(i64::MAX),
        Bson::Double(3.0),
        Bson::Double(-0.0),
        decimal("12"),
        decimal("1.20E+3"),
        decimal("-0"),
        decimal("5.000"),
        decimal("9223372036854775807"),
    ] {
        assert!(is_non_negative_integer(&ok), "{ok}");
    }
    for bad in [
        Bson::Int32(-1),
        Bson::Double(f64::NAN),
        Bson::Double(f64::INFINITY),
        Bson::Double(9_223_372_036_854_775_808.0),
        Bson::Double(0.5),
        decimal("1.0000000000000000001"),
        decimal("0.5"),
        decimal("-3"),
        decimal("NaN"),
        decimal("Infinity"),
        decimal("9223372036854775808"),
        decimal("1E+19"),
        Bson::Boolean(true),
        Bson::from("1"),
    ] {
        assert!(!is_non_negative_integer(&bad), "{bad}");
    }
}

#[test]
fn patterns_mongod_cannot_compile_are_refused() {
    // RegexMatchExpression (src/mongo/db/matcher/expression_leaf.cpp): NUL, length, PCRE
    for (pattern, expected) in [
        ("a\0b", "NUL byte"),
        ("(ab", "`(` without its `)`"),
        ("ab)", "`)` without its `(`"),
        ("[a-z", "`[` without its `]`"),
        ("ab\\", "lone backslash"),
        ("*ab", "nothing to repeat"),
        ("a|+b", "nothing to repeat"),
        ("(?#comment", "comment without its `)`"),
    ] {
        refused(
            doc! { "properties": { "s": { "pattern": pattern } } },
            expected,
        );
    }
    refused(
        doc! { "properties": { "s": { "pattern": "a".repeat(MAX_PATTERN_BYTES + 1) } } },
        "bytes long",
    );
    for pattern in [
        "^[^@]+@[^@]+$",
        "^[A-Z]{3}-[0-9]{3}$",
        "[]a]",
        "[^]a]",
        "[[:alpha:]]+",
        "\\(\\)",
        "\\Q(\\E",
        "\\Q(",
        "\\c)",
        "[\\Q]\\E(]",
        "(?:a|b)*",
        "(?i)abc",
        "(?<name>a)\\k<name>",
        "(a)\\1",
        "(?=a)a",
        "(*UTF)a",
        "(?x) ( # a comment with ( in it\n a)",
        "a{,3}",
        "{",
        "",
    ] {
        accepted(doc! { "properties": { "s": { "pattern": pattern } } });
    }
    // a top-level pattern is never compiled by mongod
    accepted(doc! { "pattern": "(" });
}
