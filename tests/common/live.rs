//! A runtime and a fresh database with a schema applied, for the property tests: proptest runs
//! its cases synchronously, and each case blocks on this runtime.
#![allow(dead_code)]

use std::time::Duration;

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
