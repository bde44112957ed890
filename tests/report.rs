//! The schema report of the seeds' schemas against golden files reviewed by hand, the size
//! bound against 16 MiB, the seeds' warnings, and the mongosh script run through the driver.
//! Regenerate the golden files with `UPDATE_GOLDEN=1 cargo test --test report` and review the
//! diff before committing.

#[path = "../examples/followers/model.rs"]
mod followers;
#[path = "../examples/helpdesk/model.rs"]
mod helpdesk;
#[path = "../examples/products/model.rs"]
mod products;

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::META_COLLECTION;
use serde::{Deserialize, Serialize};

fn golden(path: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{} differs from the report at line {}:\n  expected: {:?}\n  actual:   {:?}\n(UPDATE_GOLDEN=1 rewrites it; review the diff)",
            path.display(),
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

#[test]
fn the_seeds_schemas_match_their_reviewed_reports() {
    golden("docs/helpdesk-report.md", &helpdesk::schema().report());
    golden(
        "tests/golden/products-report.md",
        &products::schema().report(),
    );
    golden(
        "tests/golden/followers-report.md",
        &followers::schema().report(),
    );
    golden(
        "docs/helpdesk-setup.js",
        &helpdesk::schema().mongosh_script(),
    );
}

#[test]
fn the_report_has_the_checklist_for_every_relationship() {
    let report = helpdesk::schema().report();
    for expected in [
        "- **`customer`**: extended reference to `customers` (Customer)",
        "  - copies: `name` transactional (fan-out index `customer._id_1__id_1`)",
        "  - copies: `name` async (fan-out index `assignee._id_1__id_1`)",
        "- **`lastMessage`**: subset + reference to `messages` (Message)",
        "- **`history`**: embed of `StatusChange`",
        "  - shard routing: shard key starts with `ticketId`: a parent's children are routed by its id",
        "| `agent_queue` | `{ \"team\": 1, \"status\": 1, \"priority\": -1, \"updatedAt\": -1 }` | - | declared |",
        "    tickets -.->|\"assignee {name} (async)\"| agents",
        "Worst-case document size: at most 1.5 KiB (0.01% of 16 MiB).",
        "`team` is a string without `max_length`",
    ] {
        assert!(report.contains(expected), "missing {expected:?} in:\n{report}");
    }
}

// ---- size bound and warnings -----------------------------------------------------------------

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[embed(max = 5000)]
    #[schema(max_length = 1000)]
    pub pages: Vec<String>,
}

#[test]
fn a_document_whose_bounds_exceed_16_mib_is_a_build_error() {
    let error = Schema::new().model::<Book>().build().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("a `books` document can reach 19.1 MiB by its bounds, over the 16 MiB limit"),
        "{error}"
    );
}

/// Keyed and referenced by uuids: every value bounded.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "scans")]
pub struct Scan {
    #[serde(rename = "_id")]
    pub id: mongo_schema::bson::Uuid,
    pub gate: mongo_schema::bson::Uuid,
    pub at: DateTime,
}

#[test]
fn a_uuid_counts_its_16_bytes_in_the_worst_case_size() {
    let report = Schema::new().model::<Scan>().build().unwrap().report();
    // 4 (length) + 3 x (type, key, NUL) + 2 x 21 (binData: length, subtype, 16 bytes) + 8 + 1
    let expected = 4 + (1 + 3 + 1) + 21 + (1 + 4 + 1) + 21 + (1 + 2 + 1) + 8 + 1;
    let size = mongo_schema::bson::to_vec(&doc! {
        "_id": mongo_schema::bson::Uuid::new(),
        "gate": mongo_schema::bson::Uuid::new(),
        "at": DateTime::now(),
    })
    .unwrap()
    .len();
    assert_eq!(size, expected, "the arithmetic of the comment");
    let line = format!("Worst-case document size: at most {expected} B");
    assert!(report.contains(&line), "missing {line:?} in:\n{report}");
    assert!(
        !report.contains("binData data with no size bound"),
        "{report}"
    );
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "catalog")]
pub struct CatalogItem {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(max_length = 100)]
    pub name: String,
    #[embed(max = 400)]
    #[schema(max_length = 1000)]
    pub spec_sheet: Vec<String>,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "carts", shard_key(owner = 1))]
pub struct Cart {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub owner: String,
    #[reference]
    pub store_id: Ref<Store>,
    #[extended_ref(to = CatalogItem, fields = "name", sync = "transactional", max = 20)]
    pub items: Vec<CartItems>,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "stores", shard_key(region = 1))]
pub struct Store {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub region: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "receipts")]
pub struct Receipt {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub store_id: Ref<Store>,
}

#[test]
fn the_report_gives_the_seeds_warnings() {
    let schema = Schema::new()
        .model::<CatalogItem>()
        .model::<Cart>()
        .model::<Store>()
        .model::<Receipt>()
        .build()
        .unwrap();
    let report = schema.report();
    let warnings = warnings_of(&report);
    println!("{warnings}");
    for expected in [
        "`catalog.spec_sheet` can hold 1.5 MiB (question 6)",
        "`carts.items` is a transactional copy in an array (question 4)",
        "`receipts.store_id` is resolved by `$lookup` into the sharded `stores`",
        "`carts` is sharded by { \"owner\": 1 }, which does not start with the parent id `store_id` (question 7)",
    ] {
        assert!(warnings.contains(expected), "missing {expected:?} in {warnings}");
    }
}

// ---- redundant indexes (issue 20) -----------------------------------------------------------

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "titles")]
pub struct Title {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub title: String,
}

/// `{ genre: 1 }` is a prefix of `{ genre: 1, title: 1 }`: redundant. The controls are not: a
/// unique `{ isbn: 1 }` (its uniqueness is its own), `{ author: 1, year: 1 }` beside `{ author:
/// 1, year: -1, title: 1 }` (its order is neither that index's nor its reverse), `{ year: 1 }`
/// (not a first key); and the declared order of the entries of a title is the page's index
/// itself, extended with `_id`.
// two indexes on the same fields trip clippy's `duplicated_attributes` (rust-lang/rust-clippy#13238)
#[allow(clippy::duplicated_attributes)]
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "shelfEntries")]
#[index(keys(genre = 1))]
#[index(keys(genre = 1, title = 1), name = "by_genre")]
#[index(keys(isbn = 1), unique)]
#[index(keys(isbn = 1, title = 1))]
#[index(keys(author = 1, year = 1))]
#[index(keys(author = 1, year = -1, title = 1))]
#[index(keys(year = 1))]
#[index(keys(book_id = 1, year = -1))]
pub struct ShelfEntry {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub book_id: Ref<Title>,
    pub genre: String,
    pub title: String,
    pub isbn: String,
    pub author: String,
    pub year: i32,
}

#[tokio::test]
async fn the_report_and_plan_name_a_redundant_declared_index_and_nothing_else() {
    let schema = Schema::new()
        .model::<Title>()
        .model::<ShelfEntry>()
        .build()
        .unwrap();
    let names: Vec<String> = ShelfEntry::collection_spec()
        .indexes
        .iter()
        .map(|i| i.name.clone())
        .collect();
    assert!(
        names.contains(&"book_id_1_year_-1__id_-1".to_owned())
            && !names.contains(&"book_id_1_year_-1".to_owned()),
        "the declared order is the page's index: {names:?}"
    );
    let report = schema.report();
    let warnings = warnings_of(&report);
    println!("{warnings}");
    let lines: Vec<&str> = warnings.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(
        lines,
        ["- declared index `genre_1` { \"genre\": 1 } on `shelfEntries` is redundant: it is a prefix of `by_genre`, which serves every query it serves; remove its `#[index]`"],
        "{warnings}"
    );

    let db = mongo_schema_testkit::database("report_redundant").await;
    let plan = schema.plan(&db).await.unwrap();
    println!("{plan}");
    let redundant: Vec<(&str, &str)> = plan
        .warnings
        .iter()
        .filter_map(|w| match w {
            mongo_schema::Warning::RedundantIndex {
                name, served_by, ..
            } => Some((name.as_str(), served_by.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(redundant, [("genre_1", "by_genre")], "{plan}");
    schema.apply(&db).await.unwrap();
    let plan = schema.plan(&db).await.unwrap();
    assert!(plan.is_empty(), "{plan}");
    assert_eq!(
        plan.warnings.len(),
        1,
        "still declared, still reported: {plan}"
    );
}

// ---- the mongosh script, run through the driver ----------------------------------------------

/// The argument of each `EJSON.parse('...')` on a line, unescaped and parsed.
fn ejson_args(line: &str) -> Vec<BsonDocument> {
    line.split("EJSON.parse('")
        .skip(1)
        .map(|rest| {
            let mut json = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => json.push(chars.next().unwrap()),
                    '\'' => break,
                    c => json.push(c),
                }
            }
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            match Bson::try_from(value).unwrap() {
                Bson::Document(doc) => doc,
                other => panic!("not a document: {other}"),
            }
        })
        .collect()
}

fn quoted_name(line: &str, after: &str) -> String {
    let start = line.find(after).unwrap() + after.len();
    let rest = &line[start..];
    serde_json::from_str::<String>(
        &rest[..rest
            .find('"')
            .map(|i| i + 1 + rest[i + 1..].find('"').unwrap() + 1)
            .unwrap()],
    )
    .unwrap()
}

async fn state(db: &mongodb::Database) -> Vec<(String, BsonDocument, Vec<BsonDocument>)> {
    let mut collections: Vec<BsonDocument> =
        common::all(db.run_cursor_command(doc! { "listCollections": 1 })).await;
    collections.sort_by_key(|c| c.get_str("name").unwrap().to_owned());
    let mut out = Vec::new();
    for entry in collections {
        let name = entry.get_str("name").unwrap().to_owned();
        let mut options = entry.get_document("options").unwrap().clone();
        options.remove("uuid");
        let mut indexes: Vec<BsonDocument> =
            common::all(db.run_cursor_command(doc! { "listIndexes": &name })).await;
        indexes.sort_by_key(|i| i.get_str("name").unwrap().to_owned());
        for index in &mut indexes {
            index.remove("ns");
        }
        out.push((name, options, indexes));
    }
    out
}

#[tokio::test]
async fn the_mongosh_script_sets_up_what_apply_sets_up() {
    script_sets_up_what_apply_sets_up(helpdesk::schema(), "mongosh", 6, 1).await;
}

/// An async counter's child collection: the script enables its pre-images as apply does (the
/// worker reads a deleted child's parent from them; without, a plain delete moves no count).
#[tokio::test]
async fn the_mongosh_script_enables_the_pre_images_of_an_async_counter() {
    let schema = Schema::new()
        .model::<counted::Board>()
        .model::<counted::Pin>()
        .build()
        .unwrap();
    assert!(
        schema
            .mongosh_script()
            .contains("changeStreamPreAndPostImages"),
        "the script enables pre-images"
    );
    script_sets_up_what_apply_sets_up(schema, "mongosh_counter", 3, 0).await;
}

mod counted {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "boards")]
    pub struct Board {
        #[serde(rename = "_id")]
        pub id: i64,
        #[counter(of = Pin, sync = "async")]
        pub pins: i64,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "pins")]
    pub struct Pin {
        #[serde(rename = "_id")]
        pub id: i64,
        #[reference]
        pub board_id: Ref<Board>,
    }
}

/// Runs `schema`'s mongosh script line by line through the driver on one database and `apply`
/// on another, and compares what each set up: collections with their options, indexes and the
/// version record.
async fn script_sets_up_what_apply_sets_up(
    schema: Schema,
    prefix: &str,
    collections: usize,
    shards: usize,
) {
    let script = schema.mongosh_script();
    let by_script = mongo_schema_testkit::database(&format!("{prefix}_script")).await;
    let meta = by_script.collection::<BsonDocument>(META_COLLECTION);
    let mut ran = 0;
    let mut shard = 0;
    let mut recorded = None;
    for line in script.lines() {
        if line.starts_with("const recorded = db.getCollection(\"mongo_schema_meta\").findOne(") {
            recorded = meta.find_one(doc! { "_id": "schema" }).await.unwrap();
        } else if line.starts_with(
            "if (recorded && Number(recorded.version) > 0 && recorded.state !== \"failed\") throw",
        ) {
            // the guard of a fresh database: nothing recorded, nothing refused
            assert!(recorded.is_none());
        } else if line.starts_with("if (!db.getCollectionNames()") {
            let name = quoted_name(line, "db.createCollection(");
            let mut command = doc! { "create": name };
            command.extend(ejson_args(line).remove(0));
            by_script.run_command(command).await.unwrap();
            ran += 1;
        } else if line.starts_with("else db.runCommand(") {
            let command = ejson_args(line).remove(0);
            assert!(command.contains_key("collMod") && command.contains_key("validator"));
        } else if line.starts_with("db.runCommand(") {
            let command = ejson_args(line).remove(0);
            assert!(
                command.contains_key("collMod")
                    && command.contains_key("changeStreamPreAndPostImages"),
                "{line}"
            );
            by_script.run_command(command).await.unwrap();
            ran += 1;
        } else if line.starts_with("db.getCollection(\"mongo_schema_meta\").updateOne(") {
            let mut args = ejson_args(line);
            assert!(line.ends_with(", { upsert: true });"), "{line}");
            let (filter, stage) = (args.remove(0), args.remove(0));
            meta.update_one(filter, vec![stage])
                .upsert(true)
                .await
                .unwrap();
            ran += 1;
        } else if line.starts_with("db.getCollection(") {
            let name = quoted_name(line, "db.getCollection(");
            let mut args = ejson_args(line);
            let mut index = doc! { "key": args.remove(0) };
            index.extend(args.remove(0));
            by_script
                .run_command(doc! { "createIndexes": name, "indexes": [index] })
                .await
                .unwrap();
            ran += 1;
        } else if line.starts_with("if (db.hello().msg === \"isdbgrid\") sh.shardCollection(") {
            // as apply(..).shard_collections(true) does: only behind a mongos, which a
            // single-node replica set is not
            let hello = by_script.run_command(doc! { "hello": 1 }).await.unwrap();
            assert_ne!(hello.get_str("msg").ok(), Some("isdbgrid"));
            assert_eq!(ejson_args(line).remove(0), doc! { "ticketId": 1, "at": 1 });
            shard += 1;
        } else {
            assert!(
                line.is_empty() || line.starts_with("//"),
                "unexpected line: {line}"
            );
        }
    }
    assert_eq!(shard, shards);
    let by_apply = mongo_schema_testkit::database(&format!("{prefix}_apply")).await;
    schema.apply(&by_apply).await.unwrap();
    let (script_state, apply_state) = (state(&by_script).await, state(&by_apply).await);
    assert_eq!(
        script_state.len(),
        collections,
        "the schema's collections and the version record"
    );
    // equal as relaxed extended JSON: the script writes `maxLength: 80` as mongosh would (an
    // int32) where the derive writes an int64; the server compares them as numbers
    let relaxed = |state: &Vec<(String, BsonDocument, Vec<BsonDocument>)>| {
        state
            .iter()
            .map(|(name, options, indexes)| {
                let indexes: Vec<serde_json::Value> = indexes
                    .iter()
                    .map(|i| Bson::Document(i.clone()).into_relaxed_extjson())
                    .collect();
                (
                    name.clone(),
                    Bson::Document(options.clone()).into_relaxed_extjson(),
                    indexes,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        relaxed(&script_state),
        relaxed(&apply_state),
        "the script and apply give the same collections, validators and indexes"
    );
    println!(
        "{ran} mongosh commands reproduced apply on {} collections",
        script_state.len()
    );
    // the same record: version, fingerprint, applied, collections
    let record = |db: &mongodb::Database| {
        let meta = db.collection::<BsonDocument>(META_COLLECTION);
        async move {
            let mut record = meta.find_one(doc! {}).await.unwrap().unwrap();
            assert!(record.get_datetime("applied_at").is_ok());
            record.remove("applied_at");
            // apply's fingerprints of what it observed when it completed: a script cannot
            // compute them (a record without them is not checked for drift)
            record.remove("observed");
            Bson::Document(record).into_relaxed_extjson()
        }
    };
    assert_eq!(record(&by_script).await, record(&by_apply).await);
    // and apply finds nothing to do on the database the script set up
    let plan = schema.plan(&by_script).await.unwrap();
    assert!(plan.is_empty(), "{plan}");
    assert!(plan.version.as_ref().unwrap().is_current(), "{plan}");
    assert!(schema.apply(&by_script).await.unwrap().is_noop());
}

/// The report's "Warnings" section.
fn warnings_of(report: &str) -> &str {
    report
        .split("## Warnings")
        .nth(1)
        .expect("a Warnings section")
        .split("\n## ")
        .next()
        .unwrap_or_default()
}
