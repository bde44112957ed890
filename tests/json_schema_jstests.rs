//! mongod's own `$jsonSchema` test cases, held against `LocalValidator`: a transcription, as
//! Rust data, of the cases of `jstests/core/query/json_schema/*.js` in the mongodb/mongo
//! repository (each group names its file). A case is a schema, a document and mongod's verdict
//! (`assertSchemaMatch(coll, schema, doc, valid)`); the schemas those files expect mongod to
//! refuse (`assert.throws`) must be refused by `LocalValidator::new`.
//!
//! Transcription rules: a shell number is a double (`3` is `3.0`), `NumberInt`/`NumberLong`/
//! `NumberDecimal` are int/long/decimal. `assertSchemaMatch` inserts the document, so the
//! server gives it an `_id` when it has none; the table does the same before checking (that is
//! why `{maxProperties: 0}` refuses `{}`). `encrypt.js` is left out (the local validator
//! refuses `encrypt`: encryption is checked by the driver and the server), as is
//! `internal_schema_cond_text_near.js` (query operators); `misc_validation.js` is about
//! commands, not verdicts.

use std::str::FromStr;

use mongo_schema::bson::{
    doc, oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Decimal128,
    Document as BsonDocument, JavaScriptCodeWithScope, Regex, Timestamp,
};
use mongo_schema::LocalValidator;

struct Case {
    file: &'static str,
    schema: BsonDocument,
    document: BsonDocument,
    valid: bool,
}

/// `file: (schema, document, valid), ...`
macro_rules! cases {
    ($file:literal: $( ({ $($schema:tt)* }, { $($document:tt)* }, $valid:expr) ),* $(,)?) => {
        vec![$(Case {
            file: $file,
            schema: doc! { $($schema)* },
            document: doc! { $($document)* },
            valid: $valid,
        }),*]
    };
}

/// `file: { schema }, ...`: schemas mongod refuses to parse.
macro_rules! refused {
    ($file:literal: $( { $($schema:tt)* } ),* $(,)?) => {
        vec![$(($file, doc! { $($schema)* })),*]
    };
}

fn dec(text: &str) -> Decimal128 {
    Decimal128::from_str(text).unwrap()
}

fn unique_items() -> Vec<Case> {
    cases!["unique_items.js":
        ({ "uniqueItems": true }, {}, true),
        ({ "uniqueItems": false }, {}, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, {}, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": "foo" }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": { "foo": [1.0, 1.0], "bar": [2.0, 2.0] } }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [] }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [1.0] }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [1.0, 2.0, 3.0] }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": ["foo", "FOO"] }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [{}, "", [], null] }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [[1.0, 2.0], [2.0, 1.0]] }, true),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [1.0, 1.0] }, false),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [1_i64, 1_i32] }, false),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": ["foo", "foo"] }, false),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [{ "a": 1.0 }, { "a": 1.0 }] }, false),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [[1.0, 2.0], [1.0, 2.0]] }, false),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [null, null] }, false),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [{ "x": 1.0, "y": 1.0 }, { "y": 1.0, "x": 1.0 }] }, false),
        ({ "properties": { "a": { "uniqueItems": true } } }, { "a": [{ "x": [1.0, 2.0], "y": "a" }, { "y": "a", "x": [1.0, 2.0] }] }, false),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [1.0] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [1.0, 2.0, 3.0] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": ["foo", "FOO"] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [{}, "", [], null] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [[1.0, 2.0], [2.0, 1.0]] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [1.0, 1.0] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [1_i64, 1_i32] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": ["foo", "foo"] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [{ "a": 1.0 }, { "a": 1.0 }] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [[1.0, 2.0], [1.0, 2.0]] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [null, null] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [{ "x": 1.0, "y": 1.0 }, { "y": 1.0, "x": 1.0 }] }, true),
        ({ "properties": { "a": { "uniqueItems": false } } }, { "a": [{ "x": [1.0, 2.0], "y": "a" }, { "y": "a", "x": [1.0, 2.0] }] }, true),
    ]
}

fn items() -> Vec<Case> {
    cases!["items.js":
        ({ "items": { "type": "number" } }, {}, true),
        ({ "items": [{ "type": "number" }] }, {}, true),
        ({ "properties": { "a": { "items": { "minimum": 0.0 } } } }, {}, true),
        ({ "properties": { "a": { "items": { "minimum": 0.0 } } } }, { "a": -1.0 }, true),
        ({ "properties": { "a": { "items": [{ "minimum": 0.0 }] } } }, {}, true),
        ({ "properties": { "a": { "items": [{ "minimum": 0.0 }] } } }, { "a": -1.0 }, true),
        ({ "properties": { "a": { "items": { "pattern": "a+b" } } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": { "pattern": "a+b" } } } }, { "a": [7.0] }, true),
        ({ "properties": { "a": { "items": { "pattern": "a+b" } } } }, { "a": [null] }, true),
        ({ "properties": { "a": { "items": { "pattern": "a+b" } } } }, { "a": ["cab"] }, true),
        ({ "properties": { "a": { "items": { "pattern": "a+b" } } } }, { "a": ["cab", "caab"] }, true),
        ({ "properties": { "a": { "items": { "pattern": "a+b" } } } }, { "a": ["cab", "caab", "b"] }, false),
        ({ "properties": { "a": { "items": [{ "multipleOf": 2.0 }] } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": [{ "multipleOf": 2.0 }] } } }, { "a": [2.0] }, true),
        ({ "properties": { "a": { "items": [{ "multipleOf": 2.0 }] } } }, { "a": [2.0, 3.0] }, true),
        ({ "properties": { "a": { "items": [{ "multipleOf": 2.0 }] } } }, { "a": [3.0] }, false),
        ({ "properties": { "a": { "items": [{ "maxLength": 1.0 }, { "maxLength": 2.0 }] } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": [{ "maxLength": 1.0 }, { "maxLength": 2.0 }] } } }, { "a": ["1"] }, true),
        ({ "properties": { "a": { "items": [{ "maxLength": 1.0 }, { "maxLength": 2.0 }] } } }, { "a": ["1", "12"] }, true),
        ({ "properties": { "a": { "items": [{ "maxLength": 1.0 }, { "maxLength": 2.0 }] } } }, { "a": ["1", "12", "123"] }, true),
        ({ "properties": { "a": { "items": [{ "maxLength": 1.0 }, { "maxLength": 2.0 }] } } }, { "a": ["12"] }, false),
        ({ "properties": { "a": { "items": [{ "maxLength": 1.0 }, { "maxLength": 2.0 }] } } }, { "a": ["1", "123"] }, false),
        ({ "properties": { "a": { "items": [] } } }, {}, true),
        ({ "properties": { "a": { "items": [] } } }, { "a": "blah" }, true),
        ({ "properties": { "a": { "items": [] } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": [] } } }, { "a": [1.0, "foo", {}] }, true),
    ]
}

fn additional_items() -> Vec<Case> {
    let tuple = doc! { "items": [{ "type": "number" }, { "type": "string" }] };
    let mut cases = cases!["additional_items.js":
        ({ "items": [{ "type": "number" }], "additionalItems": false }, {}, true),
        ({ "items": [{ "type": "number" }], "additionalItems": true }, {}, true),
        ({ "items": [{ "type": "number" }], "additionalItems": { "type": "string" } }, {}, true),
        ({ "properties": { "a": { "additionalItems": false } } }, {}, true),
        ({ "properties": { "a": { "additionalItems": false } } }, { "a": "blah" }, true),
        ({ "properties": { "a": { "additionalItems": false } } }, { "a": [] }, true),
        ({ "properties": { "a": { "additionalItems": false } } }, { "a": [1.0, 2.0, 3.0] }, true),
        ({ "properties": { "a": { "additionalItems": { "type": "object" } } } }, {}, true),
        ({ "properties": { "a": { "additionalItems": { "type": "object" } } } }, { "a": "blah" }, true),
        ({ "properties": { "a": { "additionalItems": { "type": "object" } } } }, { "a": [] }, true),
        ({ "properties": { "a": { "additionalItems": { "type": "object" } } } }, { "a": [1.0, 2.0, 3.0] }, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": false } } }, {}, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": false } } }, { "a": "blah" }, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": false } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": false } } }, { "a": [1.0, 2.0, 3.0] }, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": { "type": "object" } } } }, {}, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": { "type": "object" } } } }, { "a": "blah" }, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": { "type": "object" } } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": {}, "additionalItems": { "type": "object" } } } }, { "a": [1.0, 2.0, 3.0] }, true),
        ({ "properties": { "a": { "items": [{ "not": {} }], "additionalItems": true } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": [{ "not": {} }], "additionalItems": false } } }, { "a": [] }, true),
        ({ "properties": { "a": { "items": [{ "not": {} }], "additionalItems": { "not": {} } } } }, { "a": [] }, true),
    ];
    let with = |additional: Bson| {
        let mut a = tuple.clone();
        a.insert("additionalItems", additional);
        doc! { "properties": { "a": a } }
    };
    for (additional, document, valid) in [
        (Bson::Boolean(false), doc! { "a": [] }, true),
        (Bson::Boolean(false), doc! { "a": [229.0] }, true),
        (
            Bson::Boolean(false),
            doc! { "a": [229.0, "West 43rd"] },
            true,
        ),
        (
            Bson::Boolean(false),
            doc! { "a": [229.0, "West 43rd", "Street"] },
            false,
        ),
        (
            Bson::Boolean(true),
            doc! { "a": [229.0, "West 43rd", "Street"] },
            true,
        ),
        (doc! { "type": "object" }.into(), doc! { "a": [] }, true),
        (
            doc! { "type": "object" }.into(),
            doc! { "a": [229.0] },
            true,
        ),
        (
            doc! { "type": "object" }.into(),
            doc! { "a": [229.0, "West 43rd"] },
            true,
        ),
        (
            doc! { "type": "object" }.into(),
            doc! { "a": [229.0, "West 43rd", "Street"] },
            false,
        ),
        (
            doc! { "type": "object" }.into(),
            doc! { "a": [229.0, "West 43rd", {}] },
            true,
        ),
    ] {
        cases.push(Case {
            file: "additional_items.js",
            schema: with(additional),
            document,
            valid,
        });
    }
    cases
}

fn dependencies() -> Vec<Case> {
    cases!["dependencies.js":
        ({ "dependencies": { "foo": { "required": ["bar"] } } }, {}, true),
        ({ "dependencies": { "foo": { "required": ["bar"] } } }, { "foo": 1.0, "bar": 1.0 }, true),
        ({ "dependencies": { "foo": { "required": ["bar"] } } }, { "bar": 1.0 }, true),
        ({ "dependencies": { "foo": { "required": ["bar"] } } }, { "foo": 1.0 }, false),
        ({ "dependencies": { "foo": { "required": ["bar"], "properties": { "baz": { "type": "string" } } } } }, {}, true),
        ({ "dependencies": { "foo": { "required": ["bar"], "properties": { "baz": { "type": "string" } } } } }, { "bar": 1.0 }, true),
        ({ "dependencies": { "foo": { "required": ["bar"], "properties": { "baz": { "type": "string" } } } } }, { "foo": 1.0, "bar": 1.0 }, true),
        ({ "dependencies": { "foo": { "required": ["bar"], "properties": { "baz": { "type": "string" } } } } }, { "foo": 1.0, "bar": 1.0, "baz": 1.0 }, false),
        ({ "dependencies": { "foo": { "required": ["bar"], "properties": { "baz": { "type": "string" } } } } }, { "foo": 1.0, "bar": 1.0, "baz": "str" }, true),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, {}, true),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, { "bar": 1.0 }, true),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, { "baz": 1.0 }, true),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, { "bar": 1.0, "baz": 1.0 }, true),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, { "foo": 1.0 }, false),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, { "foo": 1.0, "bar": 1.0 }, false),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, { "foo": 1.0, "baz": 1.0 }, false),
        ({ "dependencies": { "foo": ["bar", "baz"] } }, { "foo": 1.0, "bar": 1.0, "baz": 1.0 }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": { "required": ["bar"] } } } } }, {}, true),
        ({ "properties": { "obj": { "dependencies": { "foo": { "required": ["bar"] } } } } }, { "obj": 1.0 }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": { "required": ["bar"] } } } } }, { "obj": {} }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": { "required": ["bar"] } } } } }, { "obj": { "bar": 1.0 } }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": { "required": ["bar"] } } } } }, { "obj": { "foo": 1.0 } }, false),
        ({ "properties": { "obj": { "dependencies": { "foo": { "required": ["bar"] } } } } }, { "obj": { "foo": 1.0, "bar": 1.0 } }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": ["bar"] } } } }, {}, true),
        ({ "properties": { "obj": { "dependencies": { "foo": ["bar"] } } } }, { "obj": 1.0 }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": ["bar"] } } } }, { "obj": {} }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": ["bar"] } } } }, { "obj": { "bar": 1.0 } }, true),
        ({ "properties": { "obj": { "dependencies": { "foo": ["bar"] } } } }, { "obj": { "foo": 1.0 } }, false),
        ({ "properties": { "obj": { "dependencies": { "foo": ["bar"] } } } }, { "obj": { "foo": 1.0, "bar": 1.0 } }, true),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, {}, true),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": 1.0 }, true),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": {} }, true),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": { "b": 1.0, "d": 1.0 } }, true),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": { "a": 1.0, "b": 1.0, "c": 1.0 } }, false),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": { "a": 1.0, "c": 0.0, "d": 1.0 } }, false),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": { "b": 1.0, "c": 1.0, "d": 1.0 } }, true),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": { "a": 1.0, "b": 1.0, "d": 1.0 } }, true),
        ({ "properties": { "obj": { "dependencies": { "a": ["b"], "c": { "required": ["d"] } } } } }, { "obj": { "a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0 } }, true),
        ({ "dependencies": {} }, {}, true),
        ({ "properties": { "obj": { "dependencies": {} } } }, { "obj": {} }, true),
    ]
}

fn bsontype() -> Vec<Case> {
    let now = DateTime::now();
    let oid = ObjectId::new();
    let bin = Binary {
        subtype: BinarySubtype::Generic,
        bytes: vec![0; 21],
    };
    let regex = Regex {
        pattern: "^abc".into(),
        options: String::new(),
    };
    let code = Bson::JavaScriptCode("function() { return true; }".into());
    let scoped = Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
        code: "function() { return true; }".into(),
        scope: doc! { "scope": true },
    });
    let ts = Timestamp {
        time: 0,
        increment: 1234,
    };
    let three = dec("3");
    cases!["bsontype.js":
        ({ "properties": { "num": { "bsonType": "double" } } }, { "num": 3.0 }, true),
        ({ "properties": { "num": { "bsonType": "double" } } }, { "num": 3_i64 }, false),
        ({ "properties": { "num": { "bsonType": "double" } } }, { "num": 3_i32 }, false),
        ({ "properties": { "num": { "bsonType": "double" } } }, { "num": three }, false),
        ({ "properties": { "num": { "bsonType": "double" } } }, { "num": {} }, false),
        ({ "properties": { "num": { "bsonType": "double" } } }, { "num": [3.0] }, false),
        ({ "properties": { "num": { "bsonType": "double" } } }, { "foo": {} }, true),
        ({ "properties": { "str": { "bsonType": "string" } } }, { "str": "" }, true),
        ({ "properties": { "str": { "bsonType": "string" } } }, { "str": true }, false),
        ({ "properties": { "str": { "bsonType": "string" } } }, { "str": [1.0, "foo"] }, false),
        ({ "properties": { "str": { "type": "string" } } }, { "str": "" }, true),
        ({ "properties": { "str": { "type": "string" } } }, { "str": true }, false),
        ({ "properties": { "str": { "type": "string" } } }, { "str": [1.0, "foo"] }, false),
        ({ "bsonType": "object" }, {}, true),
        ({ "properties": { "obj": { "bsonType": "object" } } }, { "obj": {} }, true),
        ({ "properties": { "obj": { "bsonType": "object" } } }, { "obj": true }, false),
        ({ "properties": { "obj": { "bsonType": "object" } } }, { "obj": [{}] }, false),
        ({ "type": "object" }, {}, true),
        ({ "properties": { "obj": { "type": "object" } } }, { "obj": {} }, true),
        ({ "properties": { "obj": { "type": "object" } } }, { "obj": true }, false),
        ({ "properties": { "obj": { "type": "object" } } }, { "obj": [{}] }, false),
        ({ "bsonType": "array" }, { "arr": [] }, false),
        ({ "properties": { "arr": { "bsonType": "array" } } }, { "arr": [] }, true),
        ({ "properties": { "arr": { "bsonType": "array" } } }, { "arr": {} }, false),
        ({ "type": "array" }, { "arr": [] }, false),
        ({ "properties": { "arr": { "type": "array" } } }, { "arr": [] }, true),
        ({ "properties": { "arr": { "type": "array" } } }, { "arr": {} }, false),
        ({ "properties": { "bin": { "bsonType": "binData" } } }, { "bin": bin }, true),
        ({ "properties": { "bin": { "bsonType": "binData" } } }, { "bin": {} }, false),
        ({ "properties": { "u": { "bsonType": "undefined" } }, "required": ["u"] }, { "u": Bson::Undefined }, true),
        ({ "properties": { "u": { "bsonType": "undefined" } }, "required": ["u"] }, {}, false),
        ({ "properties": { "u": { "bsonType": "undefined" } }, "required": ["u"] }, { "u": null }, false),
        ({ "properties": { "o": { "bsonType": "objectId" } } }, { "o": oid }, true),
        ({ "properties": { "o": { "bsonType": "objectId" } } }, { "o": 1.0 }, false),
        ({ "properties": { "b": { "bsonType": "bool" } } }, { "b": true }, true),
        ({ "properties": { "b": { "bsonType": "bool" } } }, { "b": false }, true),
        ({ "properties": { "b": { "bsonType": "bool" } } }, { "b": 1.0 }, false),
        ({ "properties": { "b": { "type": "boolean" } } }, { "b": true }, true),
        ({ "properties": { "b": { "type": "boolean" } } }, { "b": false }, true),
        ({ "properties": { "b": { "type": "boolean" } } }, { "b": 1.0 }, false),
        ({ "properties": { "date": { "bsonType": "date" } } }, { "date": now }, true),
        ({ "properties": { "date": { "bsonType": "date" } } }, { "date": 1.0 }, false),
        ({ "properties": { "n": { "bsonType": "null" } }, "required": ["n"] }, { "n": null }, true),
        ({ "properties": { "n": { "bsonType": "null" } }, "required": ["n"] }, {}, false),
        ({ "properties": { "n": { "bsonType": "null" } }, "required": ["n"] }, { "u": Bson::Undefined }, false),
        ({ "properties": { "n": { "type": "null" } }, "required": ["n"] }, { "n": null }, true),
        ({ "properties": { "n": { "type": "null" } }, "required": ["n"] }, {}, false),
        ({ "properties": { "n": { "type": "null" } }, "required": ["n"] }, { "u": Bson::Undefined }, false),
        ({ "properties": { "r": { "bsonType": "regex" } } }, { "r": regex }, true),
        ({ "properties": { "r": { "bsonType": "regex" } } }, { "r": "^abc" }, false),
        ({ "properties": { "code": { "bsonType": "javascript" } } }, { "code": code }, true),
        ({ "properties": { "code": { "bsonType": "javascript" } } }, { "code": 1.0 }, false),
        ({ "properties": { "code": { "bsonType": "javascriptWithScope" } } }, { "code": scoped }, true),
        ({ "properties": { "code": { "bsonType": "javascriptWithScope" } } }, { "code": 1.0 }, false),
        ({ "properties": { "num": { "bsonType": "int" } } }, { "num": 3_i32 }, true),
        ({ "properties": { "num": { "bsonType": "int" } } }, { "num": 3_i64 }, false),
        ({ "properties": { "num": { "bsonType": "int" } } }, { "num": 3.0 }, false),
        ({ "properties": { "num": { "bsonType": "int" } } }, { "num": three }, false),
        ({ "properties": { "num": { "bsonType": "int" } } }, { "num": {} }, false),
        ({ "properties": { "num": { "bsonType": "int" } } }, { "foo": {} }, true),
        ({ "properties": { "ts": { "bsonType": "timestamp" } } }, { "ts": ts }, true),
        ({ "properties": { "ts": { "bsonType": "timestamp" } } }, { "ts": now }, false),
        ({ "properties": { "num": { "bsonType": "long" } } }, { "num": 3_i64 }, true),
        ({ "properties": { "num": { "bsonType": "long" } } }, { "num": 3_i32 }, false),
        ({ "properties": { "num": { "bsonType": "long" } } }, { "num": 3.0 }, false),
        ({ "properties": { "num": { "bsonType": "long" } } }, { "num": three }, false),
        ({ "properties": { "num": { "bsonType": "long" } } }, { "num": {} }, false),
        ({ "properties": { "num": { "bsonType": "long" } } }, { "foo": {} }, true),
        ({ "properties": { "num": { "bsonType": "decimal" } } }, { "num": three }, true),
        ({ "properties": { "num": { "bsonType": "decimal" } } }, { "num": 3_i64 }, false),
        ({ "properties": { "num": { "bsonType": "decimal" } } }, { "num": 3_i32 }, false),
        ({ "properties": { "num": { "bsonType": "decimal" } } }, { "num": 3.0 }, false),
        ({ "properties": { "num": { "bsonType": "decimal" } } }, { "num": {} }, false),
        ({ "properties": { "num": { "bsonType": "decimal" } } }, { "foo": {} }, true),
        ({ "properties": { "k": { "bsonType": "minKey" } } }, { "k": Bson::MinKey }, true),
        ({ "properties": { "k": { "bsonType": "minKey" } } }, { "k": Bson::MaxKey }, false),
        ({ "properties": { "k": { "bsonType": "maxKey" } } }, { "k": Bson::MaxKey }, true),
        ({ "properties": { "k": { "bsonType": "maxKey" } } }, { "k": Bson::MinKey }, false),
        ({ "type": "object", "properties": { "obj": { "bsonType": "object" } } }, { "obj": {} }, true),
        ({ "type": "object", "properties": { "obj": { "bsonType": "object" } } }, { "obj": [] }, false),
        ({ "properties": { "a": { "bsonType": "long" }, "b": { "type": "null" } } }, { "a": 3_i64, "b": null }, true),
        ({ "properties": { "a": { "bsonType": "long" }, "b": { "type": "null" } } }, { "a": 3_i64 }, true),
        ({ "properties": { "a": { "bsonType": "long" }, "b": { "type": "null" } } }, { "b": null }, true),
        // the file passes a fifth argument here, which `assertSchemaMatch` ignores: its
        // `valid` is the object `{a: 3, b: null}`, which is truthy
        ({ "properties": { "a": { "bsonType": "long" }, "b": { "type": "null" } } }, { "b": null }, true),
        ({ "properties": { "f": { "type": ["number", "string"] } } }, { "f": 1.0 }, true),
        ({ "properties": { "f": { "type": ["number", "string"] } } }, { "f": "str" }, true),
        ({ "properties": { "f": { "type": ["number", "string"] } } }, {}, true),
        ({ "properties": { "f": { "type": ["number", "string"] } } }, { "f": ["str", 1.0] }, false),
        ({ "properties": { "f": { "type": ["number", "string"] } } }, { "f": {} }, false),
        ({ "properties": { "f": { "bsonType": ["objectId", "double"] } } }, { "f": 1.0 }, true),
        ({ "properties": { "f": { "bsonType": ["objectId", "double"] } } }, { "f": oid }, true),
        ({ "properties": { "f": { "bsonType": ["objectId", "double"] } } }, {}, true),
        ({ "properties": { "f": { "bsonType": ["objectId", "double"] } } }, { "f": [1.0] }, false),
        ({ "properties": { "f": { "bsonType": ["objectId", "double"] } } }, { "f": 1_i32 }, false),
        ({ "type": ["object", "string"] }, {}, true),
        ({ "type": ["object", "string"] }, { "foo": 1.0, "bar": 1.0 }, true),
        ({ "bsonType": ["object", "double"] }, {}, true),
        ({ "bsonType": ["object", "double"] }, { "foo": 1.0, "bar": 1.0 }, true),
    ]
}

fn additional_properties() -> Vec<Case> {
    let closed = doc! { "properties": { "_id": {}, "a": {} }, "additionalProperties": false };
    let open = doc! { "properties": { "_id": {}, "a": {} }, "additionalProperties": true };
    let numbers =
        doc! { "properties": { "_id": {}, "a": {} }, "additionalProperties": { "type": "number" } };
    let both = doc! {
        "properties": { "_id": {}, "a": {} },
        "patternProperties": { "^b": { "type": "string" } },
        "additionalProperties": { "type": "number" },
    };
    let both_closed = doc! {
        "properties": { "_id": {}, "a": {} },
        "patternProperties": { "^b": { "type": "string" } },
        "additionalProperties": false,
    };
    let nested = |obj: BsonDocument| doc! { "properties": { "obj": obj } };
    let nested_closed = nested(doc! { "properties": { "a": {} }, "additionalProperties": false });
    let nested_open = nested(doc! { "properties": { "a": {} }, "additionalProperties": true });
    let nested_numbers =
        nested(doc! { "properties": { "a": {} }, "additionalProperties": { "type": "number" } });
    let nested_both = nested(doc! {
        "properties": { "a": {} },
        "patternProperties": { "^b": { "type": "string" } },
        "additionalProperties": { "type": "number" },
    });
    let table: Vec<(&BsonDocument, BsonDocument, bool)> = vec![
        (&closed, doc! { "_id": 1.0 }, true),
        (&closed, doc! { "_id": 1.0, "a": 1.0 }, true),
        (&closed, doc! { "_id": 1.0, "b": 1.0 }, false),
        (&closed, doc! { "_id": 1.0, "a": 1.0, "b": 1.0 }, false),
        (&open, doc! { "_id": 1.0 }, true),
        (&open, doc! { "_id": 1.0, "a": 1.0 }, true),
        (&open, doc! { "_id": 1.0, "b": 1.0 }, true),
        (&open, doc! { "_id": 1.0, "a": 1.0, "b": 1.0 }, true),
        (&numbers, doc! { "_id": 1.0 }, true),
        (&numbers, doc! { "_id": 1.0, "a": 1.0 }, true),
        (&numbers, doc! { "_id": 1.0, "b": 1.0 }, true),
        (&numbers, doc! { "_id": 1.0, "b": "str" }, false),
        (&both, doc! { "_id": 1.0 }, true),
        (&both, doc! { "_id": 1.0, "a": 1.0 }, true),
        (&both, doc! { "_id": 1.0, "a": 1.0, "ba": "str" }, true),
        (
            &both,
            doc! { "_id": 1.0, "a": 1.0, "ba": "str", "other": 1.0 },
            true,
        ),
        (
            &both,
            doc! { "_id": 1.0, "a": 1.0, "ba": "str", "other": "str" },
            false,
        ),
        (
            &both,
            doc! { "_id": 1.0, "a": 1.0, "ba": 1.0, "other": 1.0 },
            false,
        ),
        (
            &both_closed,
            doc! { "_id": 1.0, "a": 1.0, "ba": "str" },
            true,
        ),
        (
            &both_closed,
            doc! { "_id": 1.0, "a": 1.0, "ba": "str", "other": 1.0 },
            false,
        ),
        (&nested_closed, doc! {}, true),
        (&nested_closed, doc! { "obj": 1.0 }, true),
        (&nested_closed, doc! { "obj": {} }, true),
        (&nested_closed, doc! { "obj": { "a": 1.0 } }, true),
        (
            &nested_closed,
            doc! { "obj": { "a": 1.0, "b": 1.0 } },
            false,
        ),
        (&nested_closed, doc! { "obj": { "b": 1.0 } }, false),
        (&nested_open, doc! { "obj": {} }, true),
        (&nested_open, doc! { "obj": { "a": 1.0 } }, true),
        (&nested_open, doc! { "obj": { "a": 1.0, "b": 1.0 } }, true),
        (&nested_open, doc! { "obj": { "b": 1.0 } }, true),
        (&nested_numbers, doc! {}, true),
        (&nested_numbers, doc! { "obj": 1.0 }, true),
        (&nested_numbers, doc! { "obj": {} }, true),
        (&nested_numbers, doc! { "obj": { "a": 1.0 } }, true),
        (
            &nested_numbers,
            doc! { "obj": { "a": 1.0, "b": 1.0 } },
            true,
        ),
        (
            &nested_numbers,
            doc! { "obj": { "a": 1.0, "b": "str" } },
            false,
        ),
        (&nested_numbers, doc! { "obj": { "b": "str" } }, false),
        (&nested_both, doc! { "obj": {} }, true),
        (
            &nested_both,
            doc! { "obj": { "a": 1.0, "ba": "str", "c": 1.0 } },
            true,
        ),
        (
            &nested_both,
            doc! { "obj": { "a": 1.0, "ba": 1.0, "c": 1.0 } },
            false,
        ),
        (
            &nested_both,
            doc! { "obj": { "a": 1.0, "ba": 1.0, "c": "str" } },
            false,
        ),
    ];
    table
        .into_iter()
        .map(|(schema, document, valid)| Case {
            file: "additional_properties.js",
            schema: schema.clone(),
            document,
            valid,
        })
        .collect()
}

fn pattern_properties() -> Vec<Case> {
    cases!["pattern_properties.js":
        ({ "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } }, {}, true),
        ({ "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } }, { "c": 1.0 }, true),
        ({ "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } }, { "ca": 1.0, "cb": 1.0 }, true),
        ({ "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } }, { "a": "str", "ca": 1.0, "cb": 1.0 }, false),
        ({ "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } }, { "a": 1.0, "b": 1.0, "ca": 1.0, "cb": 1.0 }, false),
        ({ "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } }, { "a": 1.0, "b": "str", "ca": 1.0, "cb": 1.0 }, true),
        ({ "properties": { "obj": { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } } } }, {}, true),
        ({ "properties": { "obj": { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } } } }, { "obj": 1.0 }, true),
        ({ "properties": { "obj": { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } } } }, { "obj": {} }, true),
        ({ "properties": { "obj": { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } } } }, { "obj": { "ca": 1.0, "cb": 1.0 } }, true),
        ({ "properties": { "obj": { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } } } }, { "obj": { "ac": "str", "ca": 1.0, "cb": 1.0 } }, false),
        ({ "properties": { "obj": { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } } } }, { "obj": { "ac": 1.0, "bc": 1.0, "ca": 1.0, "cb": 1.0 } }, false),
        ({ "properties": { "obj": { "patternProperties": { "^a": { "type": "number" }, "^b": { "type": "string" } } } } }, { "obj": { "ac": 1.0, "bc": "str", "ca": 1.0, "cb": 1.0 } }, true),
        ({ "properties": { "aa": { "type": "number" } }, "patternProperties": { "^a": { "type": "string" } } }, { "aa": 1.0 }, false),
        ({ "properties": { "obj": { "properties": { "aa": { "type": "number" } }, "patternProperties": { "^a": { "type": "string" } } } } }, { "obj": { "aa": 1.0 } }, false),
    ]
}

fn logical_keywords() -> Vec<Case> {
    cases!["logical_keywords.js":
        ({ "properties": { "foo": { "allOf": [{ "minimum": 1.0 }] } } }, { "foo": 1.0 }, true),
        ({ "properties": { "foo": { "allOf": [{ "minimum": 1.0 }] } } }, { "foo": 0.0 }, false),
        ({ "properties": { "foo": { "allOf": [{ "minimum": 1.0 }] } } }, { "foo": "string" }, true),
        ({ "properties": { "foo": { "allOf": [{}] } } }, { "foo": {} }, true),
        ({ "properties": { "foo": { "allOf": [{}] } } }, {}, true),
        ({ "properties": { "foo": { "allOf": [{}] } } }, { "foo": 0.0 }, true),
        ({ "properties": { "foo": { "allOf": [{ "type": "number" }, { "minimum": 0.0 }] } } }, { "foo": 0.0 }, true),
        ({ "properties": { "foo": { "allOf": [{ "type": "number" }, { "minimum": 0.0 }] } } }, { "foo": "string" }, false),
        ({ "properties": { "foo": { "allOf": [{ "type": "number" }, { "minimum": 0.0 }] } } }, { "foo": [0.0] }, false),
        ({ "allOf": [{}] }, {}, true),
        ({ "allOf": [{}] }, { "foo": 0.0 }, true),
        ({ "allOf": [{ "type": "string" }] }, {}, false),
        ({ "allOf": [{ "properties": { "foo": { "type": "string" } } }] }, { "foo": "str" }, true),
        ({ "allOf": [{ "properties": { "foo": { "type": "string" } } }] }, { "foo": 1.0 }, false),
        ({ "properties": { "foo": { "type": "number", "allOf": [{ "minimum": 1.0 }] } } }, { "foo": 1.0 }, true),
        ({ "properties": { "foo": { "type": "number", "allOf": [{ "minimum": 1.0 }] } } }, { "foo": "str" }, false),
        ({ "properties": { "foo": { "anyOf": [{ "type": "string" }, { "type": "number", "minimum": 1.0 }] } } }, { "foo": "str" }, true),
        ({ "properties": { "foo": { "anyOf": [{ "type": "string" }, { "type": "number", "minimum": 1.0 }] } } }, { "foo": 1.0 }, true),
        ({ "properties": { "foo": { "anyOf": [{ "type": "string" }, { "type": "number", "minimum": 1.0 }] } } }, { "foo": 0.0 }, false),
        ({ "properties": { "foo": { "anyOf": [{ "type": "string" }, { "type": "object" }] } } }, { "foo": {} }, true),
        ({ "properties": { "foo": { "anyOf": [{ "type": "string" }, { "type": "object" }] } } }, { "foo": "str" }, true),
        ({ "properties": { "foo": { "anyOf": [{ "type": "string" }, { "type": "object" }] } } }, { "foo": [{}] }, false),
        ({ "properties": { "foo": { "anyOf": [{}] } } }, {}, true),
        ({ "properties": { "foo": { "anyOf": [{}] } } }, { "foo": {} }, true),
        ({ "properties": { "foo": { "anyOf": [{}] } } }, { "foo": 0.0 }, true),
        ({ "anyOf": [{}] }, {}, true),
        ({ "anyOf": [{}] }, { "foo": 1.0 }, true),
        ({ "anyOf": [{ "properties": { "foo": { "type": "string" } } }] }, {}, true),
        ({ "anyOf": [{ "properties": { "foo": { "type": "string" } } }] }, { "foo": "str" }, true),
        ({ "anyOf": [{ "properties": { "foo": { "type": "string" } } }] }, { "foo": 1.0 }, false),
        ({ "properties": { "foo": { "type": "number", "anyOf": [{ "minimum": 1.0 }] } } }, { "foo": 1.0 }, true),
        ({ "properties": { "foo": { "type": "number", "anyOf": [{ "minimum": 1.0 }] } } }, { "foo": "str" }, false),
        ({ "properties": { "foo": { "oneOf": [{ "minimum": 0.0 }, { "maximum": 3.0 }] } } }, { "foo": 4.0 }, true),
        ({ "properties": { "foo": { "oneOf": [{ "minimum": 0.0 }, { "maximum": 3.0 }] } } }, { "foo": 1.0 }, false),
        ({ "properties": { "foo": { "oneOf": [{ "minimum": 0.0 }, { "maximum": 3.0 }] } } }, { "foo": "str" }, false),
        ({ "properties": { "foo": { "oneOf": [{ "type": "string" }, { "pattern": "ing" }] } } }, { "foo": "str" }, true),
        ({ "properties": { "foo": { "oneOf": [{ "type": "string" }, { "pattern": "ing" }] } } }, { "foo": "string" }, false),
        ({ "properties": { "foo": { "oneOf": [{}] } } }, {}, true),
        ({ "properties": { "foo": { "oneOf": [{}] } } }, { "foo": 1.0 }, true),
        ({ "oneOf": [{}] }, {}, true),
        ({ "oneOf": [{}] }, { "foo": 1.0 }, true),
        ({ "oneOf": [{ "properties": { "foo": { "type": "string" } } }] }, {}, true),
        ({ "oneOf": [{ "properties": { "foo": { "type": "string" } } }] }, { "foo": "str" }, true),
        ({ "oneOf": [{ "properties": { "foo": { "type": "string" } } }] }, { "foo": 1.0 }, false),
        ({ "oneOf": [{}, {}] }, {}, false),
        ({ "properties": { "foo": { "type": "number", "oneOf": [{ "minimum": 4.0 }] } } }, { "foo": 4.0 }, true),
        ({ "properties": { "foo": { "type": "number", "oneOf": [{ "minimum": 4.0 }] } } }, {}, true),
        ({ "properties": { "foo": { "type": "number", "oneOf": [{ "minimum": 4.0 }] } } }, { "foo": "str" }, false),
        ({ "properties": { "foo": { "not": { "type": "number" } } } }, {}, true),
        ({ "properties": { "foo": { "not": { "type": "number" } } } }, { "foo": "str" }, true),
        ({ "properties": { "foo": { "not": { "type": "number" } } } }, { "foo": 1.0 }, false),
        ({ "properties": { "foo": { "not": {} } } }, {}, true),
        ({ "properties": { "foo": { "not": {} } } }, { "foo": 1.0 }, false),
        ({ "not": {} }, {}, false),
        ({ "not": { "properties": { "foo": { "type": "string" } } } }, { "foo": 1.0 }, true),
        ({ "not": { "properties": { "foo": { "type": "string" } } } }, { "foo": "str" }, false),
        ({ "not": { "properties": { "foo": { "type": "string" } } } }, {}, false),
        ({ "properties": { "foo": { "type": "string", "not": { "maxLength": 4.0 } } } }, {}, true),
        ({ "properties": { "foo": { "type": "string", "not": { "maxLength": 4.0 } } } }, { "foo": "string" }, true),
        ({ "properties": { "foo": { "type": "string", "not": { "maxLength": 4.0 } } } }, { "foo": "str" }, false),
        ({ "properties": { "foo": { "type": "string", "not": { "maxLength": 4.0 } } } }, { "foo": 1.0 }, false),
        ({ "properties": { "a": { "enum": ["str", 5.0] } } }, { "a": "str" }, true),
        ({ "properties": { "a": { "enum": ["str", 5.0] } } }, { "a": 5.0 }, true),
        ({ "properties": { "a": { "enum": ["str", 5.0] } } }, {}, true),
        ({ "properties": { "a": { "enum": ["str", 5.0] } } }, { "a": ["str"] }, false),
        ({ "properties": { "a": { "enum": [null] } } }, { "a": null }, true),
        ({ "properties": { "a": { "enum": [null] } } }, { "a": Bson::Undefined }, false),
        ({ "properties": { "a": { "enum": [null] } } }, { "a": 1.0 }, false),
        ({ "properties": { "a": { "enum": [null] } }, "required": ["a"] }, {}, false),
        ({ "properties": { "a": { "enum": [[1.0, 2.0, "3"]] } } }, { "a": [1.0, 2.0, "3"] }, true),
        ({ "properties": { "a": { "enum": [[1.0, 2.0, "3"]] } } }, {}, true),
        ({ "properties": { "a": { "enum": [[1.0, 2.0, "3"]] } } }, { "a": [2.0, "3", 1.0] }, false),
        ({ "properties": { "a": { "enum": [[]] } } }, { "a": [] }, true),
        ({ "properties": { "a": { "enum": [[]] } } }, {}, true),
        ({ "properties": { "a": { "enum": [[]] } } }, { "a": [1.0] }, false),
        ({ "properties": { "a": { "enum": ["str", 1.0] } } }, { "a": ["str"] }, false),
        ({ "properties": { "a": { "enum": ["str", 1.0] } } }, { "a": [1.0] }, false),
        ({ "properties": { "a": { "enum": [{ "name": "tiny", "size": "large" }] } } }, { "a": { "name": "tiny", "size": "large" } }, true),
        ({ "properties": { "a": { "enum": [{ "name": "tiny", "size": "large" }] } } }, { "a": { "size": "large", "name": "tiny" } }, true),
        ({ "properties": { "a": { "enum": [{ "name": "tiny" }] } } }, { "a": { "size": "large", "name": "tiny" } }, false),
        ({ "enum": [{ "_id": 0.0 }] }, { "_id": 0.0 }, true),
        ({ "enum": [{ "_id": 0.0, "a": "str" }] }, { "_id": 0.0, "a": "str" }, true),
        ({ "enum": [{}] }, {}, false),
        ({ "enum": [null] }, {}, false),
        ({ "enum": [{ "_id": 0.0, "a": "str" }] }, { "_id": 0.0, "a": "str", "b": 1.0 }, false),
        ({ "enum": [1.0, 2.0] }, {}, false),
    ]
}

fn min_max_properties() -> Vec<Case> {
    cases!["min_max_properties.js":
        ({ "minProperties": 0.0 }, {}, true),
        ({ "minProperties": 0.0 }, { "a": 1.0 }, true),
        ({ "minProperties": 0.0 }, { "a": 1.0, "b": 2.0 }, true),
        ({ "maxProperties": 0.0 }, {}, false),
        ({ "maxProperties": 0.0 }, { "a": 1.0 }, false),
        ({ "maxProperties": 0.0 }, { "a": 1.0, "b": 2.0 }, false),
        ({ "minProperties": 2.0 }, { "_id": 0.0 }, false),
        ({ "minProperties": 2.0 }, { "_id": 0.0, "a": 1.0 }, true),
        ({ "minProperties": 2.0 }, { "_id": 0.0, "a": 1.0, "b": 2.0 }, true),
        ({ "maxProperties": 2.0 }, { "_id": 0.0 }, true),
        ({ "maxProperties": 2.0 }, { "_id": 0.0, "a": 1.0 }, true),
        ({ "maxProperties": 2.0 }, { "_id": 0.0, "a": 1.0, "b": 2.0 }, false),
        ({ "properties": { "a": { "maxProperties": 1.0 } } }, { "a": 1.0 }, true),
        ({ "properties": { "a": { "maxProperties": 1.0 } } }, { "a": {} }, true),
        ({ "properties": { "a": { "maxProperties": 1.0 } } }, { "a": { "b": 1.0 } }, true),
        ({ "properties": { "a": { "maxProperties": 1.0 } } }, { "a": { "b": 1.0, "c": 1.0 } }, false),
        ({ "properties": { "a": { "maxProperties": 0.0 } } }, { "a": {} }, true),
        ({ "properties": { "a": { "maxProperties": 0.0 } } }, { "a": { "b": 1.0 } }, false),
        ({ "properties": { "a": { "minProperties": 1.0 } } }, { "a": 1.0 }, true),
        ({ "properties": { "a": { "minProperties": 1.0 } } }, { "a": {} }, false),
        ({ "properties": { "a": { "minProperties": 1.0 } } }, { "a": { "b": 1.0 } }, true),
        ({ "properties": { "a": { "minProperties": 1.0 } } }, { "a": { "b": 1.0, "c": 1.0 } }, true),
    ]
}

fn min_max_items() -> Vec<Case> {
    cases!["min_max_items.js":
        ({ "properties": { "a": { "minItems": 1.0 } } }, {}, true),
        ({ "properties": { "a": { "minItems": 1.0 } } }, { "a": "foo" }, true),
        ({ "properties": { "a": { "minItems": 1.0 } } }, { "a": [] }, false),
        ({ "properties": { "a": { "minItems": 1.0 } } }, { "a": ["x"] }, true),
        ({ "properties": { "a": { "minItems": 1.0 } } }, { "a": [0.0, 1.0] }, true),
        ({ "minItems": 2.0 }, {}, true),
        ({ "properties": { "a": { "maxItems": 1.0 } } }, {}, true),
        ({ "properties": { "a": { "maxItems": 1.0 } } }, { "a": "foo" }, true),
        ({ "properties": { "a": { "maxItems": 1.0 } } }, { "a": [] }, true),
        ({ "properties": { "a": { "maxItems": 1.0 } } }, { "a": ["x"] }, true),
        ({ "properties": { "a": { "maxItems": 1.0 } } }, { "a": [0.0, 1.0] }, false),
        ({ "maxItems": 2.0 }, {}, true),
    ]
}

fn required() -> Vec<Case> {
    cases!["required.js":
        ({ "required": ["a"] }, { "a": 1.0 }, true),
        ({ "required": ["a"] }, {}, false),
        ({ "required": ["a"] }, { "b": 1.0 }, false),
        ({ "required": ["a"] }, { "b": { "a": 1.0 } }, false),
        ({ "required": ["a", "b"] }, { "a": 1.0, "b": 1.0, "c": 1.0 }, true),
        ({ "required": ["a", "b"] }, { "a": 1.0, "c": 1.0 }, false),
        ({ "required": ["a", "b"] }, { "b": 1.0, "c": 1.0 }, false),
        ({ "properties": { "a": { "required": ["b"] } } }, {}, true),
        ({ "properties": { "a": { "required": ["b"] } } }, { "a": 1.0 }, true),
        ({ "properties": { "a": { "required": ["b"] } } }, { "a": { "b": 1.0 } }, true),
        ({ "properties": { "a": { "required": ["b"] } } }, { "a": { "c": 1.0 } }, false),
        ({ "properties": { "a": { "required": ["b"] } } }, { "a": {} }, false),
    ]
}

/// json_schema.js finds among stored documents; each `find` becomes one case per document,
/// matched or not.
fn json_schema() -> Vec<Case> {
    let numbers: Vec<BsonDocument> = vec![
        doc! { "_id": 0.0, "num": 3.0 },
        doc! { "_id": 1.0, "num": -3.0 },
        doc! { "_id": 2.0, "num": 2_i32 },
        doc! { "_id": 3.0, "num": -2_i32 },
        doc! { "_id": 4.0, "num": 1_i64 },
        doc! { "_id": 5.0, "num": -1_i64 },
        doc! { "_id": 6.0, "num": {} },
        doc! { "_id": 7.0, "num": "str" },
        doc! { "_id": 8.0, "num": "string" },
        doc! { "_id": 9.0 },
    ];
    let objects: Vec<BsonDocument> = vec![
        doc! { "_id": 0.0, "obj": 3.0 },
        doc! { "_id": 1.0, "obj": { "f1": { "f3": "str" }, "f2": "str" } },
        doc! { "_id": 2.0, "obj": { "f1": "str", "f2": "str" } },
        doc! { "_id": 3.0, "obj": { "f1": 1.0, "f2": "str" } },
    ];
    let arrays: Vec<BsonDocument> = vec![
        doc! { "_id": 0.0, "arr": 3.0 },
        doc! { "_id": 1.0, "arr": [1.0, "foo"] },
        doc! { "_id": 2.0, "arr": [{ "a": 1.0 }, { "b": 2.0 }] },
        doc! { "_id": 3.0, "arr": [] },
        doc! { "_id": 4.0, "arr": { "a": [] } },
    ];
    let finds: Vec<(&Vec<BsonDocument>, BsonDocument, Vec<u8>)> = vec![
        (&numbers, doc! {}, (0..10).collect()),
        (&numbers, doc! { "type": "object" }, (0..10).collect()),
        (&numbers, doc! { "type": "string" }, vec![]),
        (&numbers, doc! { "bsonType": "long" }, vec![]),
        (&numbers, doc! { "bsonType": "objectId" }, vec![]),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "number" } } },
            vec![0, 1, 2, 3, 4, 5, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "number", "maximum": -1.0 } } },
            vec![1, 3, 5, 9],
        ),
        (
            &numbers,
            doc! { "type": "object", "properties": { "num": { "type": "number", "maximum": -1.0 } } },
            vec![1, 3, 5, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "bsonType": "long" } } },
            vec![4, 5, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "bsonType": "long", "maximum": 0.0 } } },
            vec![5, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "maximum": 0.0 } } },
            vec![1, 3, 5, 6, 7, 8, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "string", "maximum": 0.0 } } },
            vec![7, 8, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "string", "maxLength": 2.0 } } },
            vec![9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "string", "maxLength": 3.0 } } },
            vec![7, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "string", "minLength": 4.0 } } },
            vec![8, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "string", "minLength": 3.0 } } },
            vec![7, 8, 9],
        ),
        (
            &numbers,
            doc! { "properties": { "num": { "type": "string", "pattern": "ing" } } },
            vec![8, 9],
        ),
        (
            &objects,
            doc! { "properties": { "obj": { "properties": {
                "f1": { "type": "object", "properties": { "f3": { "type": "string" } } },
                "f2": { "type": "string" },
            } } } },
            vec![0, 1],
        ),
        (
            &arrays,
            doc! { "properties": { "arr": { "type": "array" } } },
            vec![1, 2, 3],
        ),
        (
            &arrays,
            doc! { "properties": { "arr": { "type": "number" } } },
            vec![0],
        ),
    ];
    let mut cases = Vec::new();
    for (documents, schema, matched) in finds {
        for (i, document) in documents.iter().enumerate() {
            cases.push(Case {
                file: "json_schema.js",
                schema: schema.clone(),
                document: document.clone(),
                valid: matched.contains(&(i as u8)),
            });
        }
    }
    cases.extend(cases!["json_schema.js":
        ({ "description": "test" }, {}, true),
        ({ "title": "insert title" }, {}, true),
        ({ "properties": { "a": { "description": "test" } } }, { "a": {} }, true),
        ({ "properties": { "a": { "title": "this is a's title" } } }, { "a": {} }, true),
    ]);
    cases
}

fn refused_schemas() -> Vec<(&'static str, BsonDocument)> {
    let mut all = Vec::new();
    all.extend(refused!["unique_items.js":
        { "uniqueItems": 1.0 }, { "uniqueItems": 1.0 }, { "uniqueItems": "true" },
    ]);
    all.extend(refused!["items.js": { "items": 1.0 }, { "items": "true" }]);
    all.extend(refused!["additional_items.js":
        { "additionalItems": 1.0 }, { "additionalItems": "true" },
    ]);
    all.extend(refused!["min_max_items.js":
        { "minItems": "blah" }, { "minItems": -1.0 }, { "minItems": 12.5 },
        { "maxItems": "blah" }, { "maxItems": -1.0 }, { "maxItems": 12.5 },
    ]);
    all.extend(refused!["bsontype.js":
        { "properties": { "num": { "type": "double" } } },
        { "properties": { "bin": { "type": "binData" } } },
        { "properties": { "u": { "type": "undefined" } } },
        { "properties": { "o": { "type": "objectId" } } },
        { "properties": { "b": { "bsonType": "boolean" } } },
        { "properties": { "b": { "type": "bool" } } },
        { "properties": { "b": { "type": "date" } } },
        { "properties": { "r": { "type": "regex" } } },
        { "properties": { "code": { "type": "javascript" } } },
        { "properties": { "code": { "type": "javascriptWithScope" } } },
        { "properties": { "num": { "type": "int" } } },
        { "properties": { "num": { "bsonType": "integer" } } },
        { "properties": { "num": { "type": "integer" } } },
        { "properties": { "ts": { "type": "timestamp" } } },
        { "properties": { "num": { "type": "long" } } },
        { "properties": { "num": { "type": "decimal" } } },
        { "properties": { "num": { "type": "minKey" } } },
        { "properties": { "num": { "type": "maxKey" } } },
        { "properties": { "f": { "bsonType": "unknown" } } },
        { "properties": { "f": { "type": "unknown" } } },
        { "bsonType": "string", "type": "string" },
        { "properties": { "a": { "bsonType": "string", "type": "string" } } },
        // `f` is not a keyword, which is enough for mongod to refuse these
        { "f": { "type": ["number", "objectId"] } },
        { "f": { "type": ["object", "unknown"] } },
        { "f": { "bsonType": ["number", "unknown"] } },
        { "bsonType": ["unknown"] },
        { "f": { "type": ["number", 2.0] } },
        { "f": { "bsonType": ["number", 2.0] } },
        { "f": { "type": ["number", "string", "number"] } },
        { "f": { "bsonType": ["number", "string", "number"] } },
    ]);
    all.extend(refused!["logical_keywords.js":
        { "properties": { "foo": { "allOf": { "maximum": "0" } } } },
        { "properties": { "foo": { "allOf": [0.0] } } },
        { "properties": { "foo": { "allOf": [{ "invalid": "0" }] } } },
        { "properties": { "foo": { "anyOf": { "maximum": "0" } } } },
        { "properties": { "foo": { "anyOf": [0.0] } } },
        { "properties": { "foo": { "anyOf": [{ "invalid": "0" }] } } },
        { "properties": { "foo": { "oneOf": { "maximum": "0" } } } },
        { "properties": { "foo": { "oneOf": [0.0] } } },
        { "properties": { "foo": { "oneOf": [{ "invalid": "0" }] } } },
        { "properties": { "foo": { "not": { "maximum": "0" } } } },
        { "properties": { "foo": { "not": [0.0] } } },
        { "properties": { "foo": { "not": [{}] } } },
    ]);
    all.extend(refused!["json_schema.js":
        { "type": 3.0 }, { "type": {} }, { "type": "integer" },
        { "properties": 3.0 }, { "properties": [] },
        { "properties": { "num": "number" } },
        { "properties": { "num": { "maximum": "0" } } },
        { "properties": { "num": { "maximum": {} } } },
        { "properties": { "num": { "maxLength": "0" } } },
        { "properties": { "num": { "maxLength": {} } } },
        { "properties": { "num": { "minLength": "0" } } },
        { "properties": { "num": { "minLength": {} } } },
        { "properties": { "num": { "pattern": 0.0 } } },
        { "properties": { "num": { "pattern": {} } } },
        { "required": ["\u{0}a"] }, { "required": ["a\u{0}"] }, { "required": ["foo.\u{0}"] },
        { "default": { "_id": 0.0 } },
        { "definitions": { "numberField": { "type": "number" } } },
        { "format": "email" },
        { "id": "someschema.json" },
        { "properties": { "a": { "$ref": "#/definitions/positiveInt" } } },
        { "$schema": "hyper-schema" },
    ]);
    all
}

/// The document as `assertSchemaMatch` stores it: with an `_id` when it has none.
fn as_inserted(document: &BsonDocument) -> BsonDocument {
    if document.contains_key("_id") {
        return document.clone();
    }
    let mut stored = doc! { "_id": ObjectId::new() };
    stored.extend(document.clone());
    stored
}

#[test]
fn every_case_of_mongods_json_schema_jstests_gets_mongods_verdict() {
    let groups = [
        unique_items(),
        items(),
        additional_items(),
        dependencies(),
        bsontype(),
        additional_properties(),
        pattern_properties(),
        logical_keywords(),
        min_max_properties(),
        min_max_items(),
        required(),
        json_schema(),
    ];
    let mut wrong = Vec::new();
    let (mut total, mut valid) = (0, 0);
    for case in groups.iter().flatten() {
        total += 1;
        let validator = doc! { "$jsonSchema": case.schema.clone() };
        let local = LocalValidator::new(&validator).unwrap_or_else(|e| {
            panic!(
                "{}: mongod accepts {validator}, the local validator refused it: {e}",
                case.file
            )
        });
        let verdict = local.check(&as_inserted(&case.document));
        if verdict.is_ok() {
            valid += 1;
        }
        if verdict.is_ok() != case.valid {
            wrong.push(format!(
                "{}: {} against {} — mongod says {}, local says {:?}",
                case.file,
                case.document,
                case.schema,
                if case.valid { "valid" } else { "invalid" },
                verdict
            ));
        }
    }
    println!(
        "{total} cases of mongod's jstests: {valid} valid, {} invalid",
        total - valid
    );
    assert!(
        wrong.is_empty(),
        "{} of {total} cases wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // both verdicts are exercised in numbers
    assert!(
        valid > 100 && total - valid > 100,
        "{valid} valid of {total}"
    );
}

#[test]
fn every_schema_those_jstests_expect_mongod_to_refuse_is_refused() {
    let refused = refused_schemas();
    let mut accepted = Vec::new();
    for (file, schema) in &refused {
        let validator = doc! { "$jsonSchema": schema.clone() };
        if LocalValidator::new(&validator).is_ok() {
            accepted.push(format!("{file}: {schema}"));
        }
    }
    println!("{} schemas refused, as mongod refuses them", refused.len());
    assert!(
        accepted.is_empty(),
        "accepted what mongod refuses:\n{}",
        accepted.join("\n")
    );
    assert!(refused.len() > 60);
}

#[test]
fn query_operators_beside_json_schema_are_refused_not_passed() {
    for validator in [
        doc! { "$jsonSchema": {}, "a": { "$gt": 1 } },
        doc! { "$or": [{ "$jsonSchema": {} }, { "b": 1 }] },
        doc! { "status": "open" },
    ] {
        let error = LocalValidator::new(&validator).unwrap_err().to_string();
        // display-text: a SchemaError is its problems in words; this one names mongod's rule
        assert!(error.contains("`$jsonSchema` only"), "{validator}: {error}");
    }
    // the empty validator accepts everything, as a collection without one does
    assert!(LocalValidator::new(&doc! {})
        .unwrap()
        .check(&doc! { "a": 1 })
        .is_ok());
}

#[test]
fn regexes_the_engines_read_differently_are_refused_at_new_and_the_rest_agree() {
    let schema =
        |pattern: &str| doc! { "$jsonSchema": { "properties": { "a": { "pattern": pattern } } } };
    for pattern in ["(a)\\1", "(?=a)", "a$b", "(?m)^a$", "a++"] {
        let error = LocalValidator::new(&schema(pattern))
            .unwrap_err()
            .to_string();
        assert!(
            // display-text: a SchemaError is its problems in words; this one says why
            error.contains("cannot be evaluated locally"),
            "{pattern}: {error}"
        );
    }
    // PCRE without UCP: `\w` is ASCII; `$` also matches before a final newline
    let word = LocalValidator::new(&schema("^\\w+$")).unwrap();
    assert!(word.check(&doc! { "a": "abc_1" }).is_ok());
    assert!(word.check(&doc! { "a": "été" }).is_err());
    assert!(word.check(&doc! { "a": "abc\n" }).is_ok());
    // a top-level `pattern` is never compiled by mongod (the document is not a string)
    assert!(LocalValidator::new(&doc! { "$jsonSchema": { "pattern": "(?=a)" } }).is_ok());
}

#[test]
fn numbers_compare_across_int_long_double_and_decimal() {
    let bounded = LocalValidator::new(&doc! { "$jsonSchema": { "properties": {
        "n": { "minimum": dec("1.5"), "maximum": 10_i64, "exclusiveMaximum": true },
        "m": { "multipleOf": dec("0.1") },
    } } })
    .unwrap();
    for (n, ok) in [
        (Bson::Int32(2), true),
        (Bson::Int32(1), false),
        (Bson::Double(1.5), true),
        (Bson::Double(1.4999999), false),
        (Bson::Int64(10), false),
        (Bson::Double(9.999), true),
        (Bson::Decimal128(dec("9.99999999999999999999999999")), true),
        (Bson::Decimal128(dec("10.0")), false),
        (Bson::Double(f64::NAN), false),
        (Bson::Decimal128(dec("NaN")), false),
        (Bson::String("5".into()), true),
    ] {
        assert_eq!(
            bounded.check(&doc! { "n": n.clone() }).is_ok(),
            ok,
            "n = {n}"
        );
    }
    for (m, ok) in [
        (Bson::Double(0.3), true),
        (Bson::Decimal128(dec("0.35")), false),
        (Bson::Int32(7), true),
        (Bson::Double(f64::INFINITY), false),
    ] {
        assert_eq!(
            bounded.check(&doc! { "m": m.clone() }).is_ok(),
            ok,
            "m = {m}"
        );
    }
}
