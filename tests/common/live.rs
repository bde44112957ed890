//! A runtime and a fresh database with a schema applied, for the property tests: proptest runs
//! its cases synchronously, and each case blocks on this runtime.
#![allow(dead_code)]

use std::time::Duration;

use mongo_schema::bson::Bson;
use mongo_schema::Schema;

/// The runtime the cases block on, and the database the schema was applied to.
pub struct Live {
    pub runtime: tokio::runtime::Runtime,
    pub db: mongodb::Database,
}

impl Live {
    /// A fresh database named after `prefix` with `schema` applied (within a minute).
    pub fn new(prefix: &str, schema: Schema) -> Live {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let db = runtime.block_on(async {
            let db = mongo_schema_testkit::database(prefix).await;
            tokio::time::timeout(Duration::from_secs(60), schema.apply(&db))
                .await
                .expect("apply within a minute")
                .unwrap();
            db
        });
        Live { runtime, db }
    }
}

/// `cases` cases, nothing persisted between runs.
pub fn config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// Sets (or removes, with `None`) the value at a dotted path through documents and arrays.
pub fn set_path(value: &mut Bson, path: &[&str], new: Option<Bson>) {
    let (first, rest) = path.split_first().expect("a non-empty path");
    match value {
        Bson::Document(doc) if rest.is_empty() => match new {
            Some(new) => {
                doc.insert(*first, new);
            }
            None => {
                doc.remove(*first);
            }
        },
        Bson::Document(doc) => {
            let next = doc
                .get_mut(*first)
                .unwrap_or_else(|| panic!("no `{first}`"));
            set_path(next, rest, new)
        }
        Bson::Array(items) => {
            let index: usize = first.parse().expect("an array index");
            match rest {
                [] => items[index] = new.expect("arrays take values"),
                _ => set_path(&mut items[index], rest, new),
            }
        }
        other => panic!("`{first}` is inside {other}"),
    }
}
