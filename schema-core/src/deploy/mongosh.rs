//! The mongosh commands equivalent to `apply`, for review by whoever runs the database.
//!
//! Everything a user names (collection, index and field names, validator text) reaches the
//! script only inside a string literal, never as code, and comments are escaped so that no name
//! can end a comment (line terminators, `*/`).

use std::fmt::Write as _;

use mongodb::bson::{doc, Bson, Document};

use super::record::META_COLLECTION;
use crate::{CollectionSpec, Schema};

/// Canonical relaxed extended JSON inside `EJSON.parse('...')`: exact for every BSON type,
/// and valid in mongosh.
fn ejson(value: Document) -> String {
    let json = Bson::Document(value).into_relaxed_extjson().to_string();
    format!(
        "EJSON.parse('{}')",
        escape_line_separators(&json.replace('\\', "\\\\").replace('\'', "\\'"))
    )
}

/// A JavaScript string literal (JSON's escapes, which JavaScript shares).
fn string(value: &str) -> String {
    escape_line_separators(&serde_json::Value::String(value.to_owned()).to_string())
}

/// U+2028 and U+2029 end a line in JavaScript source before ES2019 and still end a `//`
/// comment; JSON leaves them raw. Escaped, they stay the same characters in a string literal.
fn escape_line_separators(text: &str) -> String {
    text.replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Text for a `//` comment: control characters and line separators escaped (so nothing ends
/// the comment early), and `*/` broken up (so the text cannot close a block comment either,
/// should the script ever be wrapped in one).
fn comment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out.replace("*/", "*\\/")
}

impl Schema {
    /// The mongosh script equivalent to [`Schema::apply`] with `shard_collections(true)`: a
    /// guard that stops over a newer recorded schema version (as apply refuses a downgrade);
    /// per collection, `createCollection` with the validator (or `collMod` when it exists),
    /// `createIndex` with its options for every index, and, on a mongos only,
    /// `sh.shardCollection` for a declared shard key after its index; last, the version record
    /// in [`crate::META_COLLECTION`]. Values are written as extended JSON (`EJSON.parse`), so
    /// every BSON type survives review and copy-paste; names appear only inside string
    /// literals, and comments escape whatever could end them.
    pub fn mongosh_script(&self) -> String {
        script(
            self.collections(),
            self.name(),
            self.version().unwrap_or(0),
            &self.fingerprint(),
        )
    }
}

pub(crate) fn script(
    collections: &[CollectionSpec],
    name: &str,
    version: u64,
    fingerprint: &str,
) -> String {
    let meta = string(META_COLLECTION);
    let mut out = String::from(
        "// mongo-schema: the setup Schema::apply performs, as mongosh commands.\n// Run against the application's database: mongosh \"<uri>/<database>\" script.js\n",
    );
    let _ = writeln!(
        out,
        "// Schema version {version}, fingerprint {}.",
        comment(fingerprint)
    );
    let _ = writeln!(
        out,
        "\n// like apply, refuse to run over a newer recorded version (unless its apply failed: a rollback): nothing is changed"
    );
    let _ = writeln!(
        out,
        "const recorded = db.getCollection({meta}).findOne({{ _id: {} }});",
        string(name)
    );
    let _ = writeln!(
        out,
        "if (recorded && Number(recorded.version) > {version} && recorded.state !== \"failed\") throw new Error(\"the database records schema version \" + recorded.version + \", newer than this script's {version}: nothing was changed\");"
    );
    for spec in collections {
        let name = string(&spec.name);
        let _ = writeln!(out, "\n// {}", comment(&spec.name));
        let kinds = crate::json_schema::kind_labels(&spec.validator);
        if !kinds.is_empty() {
            let _ = writeln!(
                out,
                "// {} kinds of document (oneOf in the validator): {}",
                kinds.len(),
                comment(&kinds.join(", "))
            );
        }
        let options = doc! {
            "validator": spec.validator.clone(),
            "validationLevel": spec.validation_level.as_str(),
            "validationAction": spec.validation_action.as_str(),
        };
        let mut coll_mod = doc! { "collMod": &spec.name };
        let mut create = match &spec.timeseries {
            // mongod takes no validator on a time series collection; collMod changes its
            // granularity (upward) and its expiry
            Some(timeseries) => {
                let _ = writeln!(
                    out,
                    "// a time series collection ({}): no validator (mongod refuses one)",
                    comment(&timeseries.to_string())
                );
                let mut create = doc! { "timeseries": timeseries.to_document() };
                if let Some(granularity) = timeseries.granularity {
                    coll_mod.insert("timeseries", doc! { "granularity": granularity.as_str() });
                }
                match timeseries.expire_after_secs {
                    Some(secs) => {
                        create.insert("expireAfterSeconds", secs as i64);
                        coll_mod.insert("expireAfterSeconds", secs as i64);
                    }
                    None => {
                        coll_mod.insert("expireAfterSeconds", "off");
                    }
                }
                create
            }
            None => {
                coll_mod.extend(options.clone());
                options
            }
        };
        if let Some(collation) = &spec.collation {
            create.insert("collation", collation.to_document());
        }
        let _ = writeln!(
            out,
            "if (!db.getCollectionNames().includes({name})) db.createCollection({name}, {});",
            ejson(create)
        );
        let _ = writeln!(out, "else db.runCommand({});", ejson(coll_mod));
        if spec.change_stream_pre_images {
            let _ = writeln!(
                out,
                "// the sync worker of an async subset or counter reads a deleted child's parent from its pre-image"
            );
            let _ = writeln!(
                out,
                "db.runCommand({});",
                ejson(doc! {
                    "collMod": &spec.name,
                    "changeStreamPreAndPostImages": { "enabled": true },
                })
            );
        }
        for index in &spec.indexes {
            let mut options = index.to_document();
            options.remove("key");
            let _ = writeln!(
                out,
                "db.getCollection({name}).createIndex({}, {});",
                ejson(index.keys.clone()),
                ejson(options)
            );
        }
        if let Some(key) = &spec.shard_key {
            let _ = writeln!(
                out,
                "// shard_collections(true): on a mongos only, after the index above exists"
            );
            let _ = writeln!(
                out,
                "if (db.hello().msg === \"isdbgrid\") sh.shardCollection(db.getName() + \".\" + {name}, {}, false, {{ collation: {{ locale: \"simple\" }} }});",
                ejson(key.clone())
            );
        }
    }
    let _ = writeln!(
        out,
        "\n// record the version, the fingerprint of this setup and the time, as apply does"
    );
    let record = vec![doc! { "$set": {
        // apply refuses versions above i64::MAX; the script cannot fail, so it saturates
        "version": i64::try_from(version).unwrap_or(i64::MAX),
        "fingerprint": fingerprint,
        "state": "applied",
        "applied_at": "$$NOW",
        "collections": collections.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
    } }];
    let _ = writeln!(
        out,
        "db.getCollection({meta}).updateOne({}, [{}], {{ upsert: true }});",
        ejson(doc! { "_id": name }),
        record.into_iter().map(ejson).collect::<Vec<_>>().join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IndexSpec;

    const HOSTILE: &str = "x\n}); db.dropDatabase(); /* \r\u{2028}\u{2029}\u{85}*/ // '\"\\";

    /// The string literals of a line, decoded, and the line with them blanked out.
    fn literals(line: &str) -> (Vec<String>, String) {
        let (mut found, mut code) = (Vec::new(), String::new());
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '"' || c == '\'' {
                let mut literal = String::new();
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            literal.push(d);
                            literal.push(chars.next().unwrap());
                        }
                        _ if d == c => break,
                        _ => literal.push(d),
                    }
                }
                found.push(literal);
                code.push_str("\"\"");
            } else {
                code.push(c);
            }
        }
        (found, code)
    }

    #[test]
    fn the_script_shards_under_the_simple_collation_after_an_index_of_it() {
        let spec = CollectionSpec::new("patients", doc! {})
            .collation(crate::Collation::new("en").strength(2))
            .shard_key(doc! { "clinic": 1, "email": 1 });
        let script = script(&[spec], "schema", 1, "0123abcd");
        let index = script
            .lines()
            .find(|l| l.contains("createIndex(") && l.contains("clinic"))
            .unwrap_or_else(|| panic!("{script}"));
        assert!(
            index.contains("\"collation\":{\"locale\":\"simple\"}"),
            "{index}"
        );
        let shard = script
            .lines()
            .find(|l| l.contains("sh.shardCollection("))
            .unwrap_or_else(|| panic!("{script}"));
        assert!(
            shard.ends_with(", false, { collation: { locale: \"simple\" } });"),
            "{shard}"
        );
    }

    #[test]
    fn nothing_a_user_names_escapes_its_string_or_comment() {
        let spec = CollectionSpec::new(
            HOSTILE,
            doc! { "$jsonSchema": { "properties": { HOSTILE: { "description": HOSTILE } } } },
        )
        .index(IndexSpec::new(doc! { HOSTILE: 1 }).name(HOSTILE))
        .shard_key(doc! { HOSTILE: 1 });
        let script = script(&[spec], "schema", 7, "0123abcd");
        // JavaScript's line terminators besides the script's own `\n`s
        for terminator in ['\r', '\u{2028}', '\u{2029}'] {
            assert!(!script.contains(terminator), "{terminator:?} in the script");
        }
        let mut comments = 0;
        for line in script.split('\n') {
            if let Some(text) = line.strip_prefix("//") {
                comments += 1;
                assert!(!text.contains("*/"), "{line}");
                assert!(!text.chars().any(char::is_control), "{line}");
                continue;
            }
            // outside string literals, only the script's own code
            let (_, code) = literals(line);
            assert!(!code.contains("dropDatabase"), "{line}");
            assert!(!code.contains("/*"), "{line}");
        }
        assert!(comments > 5);
        let commented = format!("// {}", comment(HOSTILE));
        assert!(script.contains(&commented), "{commented}");
        assert!(commented.starts_with(
            "// x\\u{000a}}); db.dropDatabase(); /* \\u{000d}\\u{2028}\\u{2029}\\u{0085}*\\/"
        ));
        // the name comes back whole from its string literal
        let line = script
            .lines()
            .find(|l| l.starts_with("if (!db.getCollectionNames()"))
            .unwrap();
        let (found, _) = literals(line);
        let decoded: String = serde_json::from_str(&format!("\"{}\"", found[0])).unwrap();
        assert_eq!(decoded, HOSTILE);
        // and the version is a plain number wherever it appears
        assert!(script.contains("Number(recorded.version) > 7 && recorded.state !== \"failed\")"));
    }
}
