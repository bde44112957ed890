//! The mongosh commands equivalent to `apply`, for review by whoever runs the database.

use std::fmt::Write as _;

use mongodb::bson::{doc, Bson, Document};

use crate::Schema;

/// Canonical relaxed extended JSON inside `EJSON.parse('...')`: exact for every BSON type,
/// and valid in mongosh.
fn ejson(value: Document) -> String {
    let json = Bson::Document(value).into_relaxed_extjson().to_string();
    format!(
        "EJSON.parse('{}')",
        json.replace('\\', "\\\\").replace('\'', "\\'")
    )
}

fn string(value: &str) -> String {
    serde_json::Value::String(value.to_owned()).to_string()
}

impl Schema {
    /// The mongosh script equivalent to [`Schema::apply`]: per collection, `createCollection`
    /// with the validator (or `collMod` when it exists), `createIndex` with its options for
    /// every index, and `sh.shardCollection` for declared shard keys. Values are written as
    /// extended JSON (`EJSON.parse`), so every BSON type survives review and copy-paste.
    pub fn mongosh_script(&self) -> String {
        let mut out = String::from(
            "// mongo-schema: the setup Schema::apply performs, as mongosh commands.\n// Run against the application's database: mongosh \"<uri>/<database>\" script.js\n",
        );
        for spec in self.collections() {
            let name = string(&spec.name);
            let _ = writeln!(out, "\n// {}", spec.name);
            let options = doc! {
                "validator": spec.validator.clone(),
                "validationLevel": spec.validation_level.as_str(),
                "validationAction": spec.validation_action.as_str(),
            };
            let mut coll_mod = doc! { "collMod": &spec.name };
            coll_mod.extend(options.clone());
            let _ = writeln!(
                out,
                "if (!db.getCollectionNames().includes({name})) db.createCollection({name}, {});",
                ejson(options)
            );
            let _ = writeln!(out, "else db.runCommand({});", ejson(coll_mod));
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
                    "sh.shardCollection(db.getName() + \".\" + {name}, {});",
                    ejson(key.clone())
                );
            }
        }
        out
    }
}
