//! `pull` on a shop written as a Node service writes it (11,000 documents, `common/shop.rs`),
//! on the real test server. The generated module is built as a crate of its own that depends on
//! this workspace's `mongo-schema` by path (built in the workspace's target directory, with its
//! lock file and features, so it reuses the dependencies the suite built); that program applies
//! the module's `schema()` to the same database, counts the violators of every installed
//! validator on the server and locally, and decodes every document into the generated types
//! and encodes it back, comparing numbers by value.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mongo_schema_cli::pull::{pull, PullConfig};
use mongo_schema_cli::sample::ReadOptions;
use mongodb::bson::{doc, Document};

fn config() -> PullConfig {
    PullConfig {
        // a small sample, so that the rare order (9 items, one gift-wrapped) is found by the
        // gate, not by the sample
        read: ReadOptions {
            sample: 100,
            // a deadline far past a quiet run's seconds: on a machine busy with other builds
            // the test server's facts aggregation has taken over 120 s
            max_time: Some(Duration::from_secs(900)),
            secondary: false,
        },
        ..PullConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pulled_shop_compiles_applies_with_no_violator_and_round_trips() {
    let db = mongo_schema_testkit::database("pull_shop").await;
    common::shop::seed(&db).await;
    let started = Instant::now();
    let pulled = pull(&db, &config())
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    eprintln!(
        "pull of {} documents: {:.2} s, {} commands, {} gate rounds\n{}",
        common::shop::DOCUMENTS,
        started.elapsed().as_secs_f64(),
        pulled.report.commands.values().sum::<u64>(),
        pulled.report.gate_rounds,
        pulled.report.summary()
    );
    let report = &pulled.report;
    let module = &pulled.module;

    // the gate: 0 violators, and it had work to do (the sample of 100 did not see the rare order)
    assert_eq!(report.collections.len(), 5);
    for c in &report.collections {
        assert_eq!((c.server_violators, c.local_violators), (0, 0), "{c:?}");
    }
    // (the three rare documents are all in the sample once in about 10,000 runs)
    assert!(
        report.gate_rounds >= 2,
        "the gate widened nothing: {report:#?}"
    );
    assert!(!report.widenings.is_empty());
    for rare in [
        "gift_wrap: Option<bool>",
        "vip: Option<bool>",
        "photos: Option<Vec<String>>",
    ] {
        assert!(
            module.contains(rare),
            "`{rare}` is not in the module:\n{module}"
        );
    }
    let items = report
        .arrays
        .iter()
        .find(|a| a.path == "orders.items")
        .unwrap();
    assert_eq!(
        (items.observed_max, items.exact, items.bound),
        (9, true, 18)
    );

    // what was written is found where it was written
    for needle in [
        "#[collection(name = \"orders\", additional_properties = false)]",
        "#[serde(tag = \"type\", rename_all = \"snake_case\")]",
        "pub enum OrderPayment {",
        "pub enum OrderStatus {",
        "pub location: mongo_schema::geo::Point,",
        "#[embed(max = 8)]\n    pub stock: BTreeMap<String, i32>,",
        "#[schema(stored_as = IntOrDouble)]\n    pub total: f64,",
        "pub notes: Option<String>,",
        "pub phone: Option<Option<String>>,",
        // optional and never `null` in a collection without a validator (the guide's excerpt)
        "/// `coupon`: optional, and `null` in no document: `#[schema(not_null)]`\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    #[schema(not_null)]\n    pub coupon: Option<String>,",
        "#[reference]\n    pub customer_id: Ref<Customer>,",
        "#[reference]\n    pub product_id: Ref<Product>,",
        "#[extended_ref(to = Customer, fields = \"name\", sync = \"transactional\")]\n    pub customer: OrderCustomer,",
        "#[extended_ref(to = Customer, fields = \"name\", sync = \"frozen\")]\n    pub author: ReviewAuthor,",
        // it starts with the reference and another key: kept as the server has it, where the
        // derive would append `_id` for the reference's keyset pages
        "#[index(keys(\"customerId\" = 1, \"placedAt\" = -1), pages = false, name = \"customerId_1_placedAt_-1\")]",
        "#[index(keys(\"shippedAt\" = 1), sparse, name = \"shippedAt_1\")]",
        "#[index(keys(\"name\" = 1), unique, name = \"name_1\")]",
        // an index of its own collation, and a geo index
        "#[index(keys(\"email\" = 1), collation(locale = \"en\", strength = 2), name = \"email_ci\")]",
        "#[index(keys(\"location\" = \"2dsphere\"), name = \"location_2dsphere\")]",
        "pub fn schema() -> Schema {",
        "pub r#type: ProductType,",
        "#[serde(rename = \"in stock\")]\n    pub in_stock: bool,",
        "#[serde(rename = \"3d\")]\n    pub _3d: bool,",
        // the events: a whole-document enum
        "#[collection(name = \"events\", additional_properties = false)]\n#[serde(tag = \"kind\", rename_all = \"snake_case\")]\npub enum Event {",
    ] {
        assert!(module.contains(needle), "`{needle}` is not in the module:\n{module}");
    }
    readme_block_is_pulled(module);
    let accepted: Vec<(&str, &str)> = report
        .references
        .iter()
        .filter(|r| r.accepted)
        .map(|r| (r.path.as_str(), r.target.as_str()))
        .collect();
    for expected in [
        ("orders.customerId", "customers"),
        ("orders.customer._id", "customers"),
        ("orders.items.productId", "products"),
        ("reviews.productId", "products"),
        ("reviews.author._id", "customers"),
    ] {
        assert!(
            accepted.contains(&expected),
            "{expected:?} not in {accepted:?}"
        );
    }
    // the positive control of the check: ObjectIds found in no collection are no reference
    let tracking: Vec<_> = report
        .references
        .iter()
        .filter(|r| r.path == "orders.trackingId")
        .collect();
    assert!(!tracking.is_empty());
    assert!(
        tracking.iter().all(|r| r.found == 0 && !r.accepted),
        "{tracking:?}"
    );
    assert!(
        module.contains("pub tracking_id: Option<ObjectId>,"),
        "{module}"
    );
    let copy = report
        .copies
        .iter()
        .find(|c| c.path == "orders.customer")
        .unwrap();
    // every holder compared, none differing
    assert_eq!((copy.compared, copy.equal, copy.differing), (7000, 7000, 0));
    let snapshot = report
        .copies
        .iter()
        .find(|c| c.path == "reviews.author")
        .unwrap();
    assert!(snapshot.equal < snapshot.compared, "{snapshot:?}");
    assert_eq!(snapshot.compared, 1000, "{snapshot:?}");
    assert_eq!(snapshot.differing, snapshot.compared - snapshot.equal);

    // the module compiles, applies with 0 violators, and every document round-trips
    let dir = scratch_crate(&pulled, "pulled-shop");
    let output = common::scratch::run_scratch(&dir, db.name());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the pulled crate failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{stdout}");
    for collection in ["customers", "events", "orders", "products", "reviews"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{collection}:")))
            .unwrap_or_else(|| panic!("no line for {collection}:\n{stdout}"));
        assert!(
            line.contains("server violators 0, local violators 0"),
            "{line}"
        );
        assert!(line.contains("validator installed as generated"), "{line}");
        let (decoded, equal) = counts(line);
        assert_eq!(decoded, equal, "{line}");
        assert!(decoded > 0, "{line}");
    }
    let total: u64 = stdout
        .lines()
        .filter(|l| l.contains(" decoded"))
        .map(|l| counts(l).0)
        .sum();
    assert_eq!(total, common::shop::DOCUMENTS);
}

/// A positive control of the gate's two checks: a document the pulled validator refuses is
/// counted by both.
#[tokio::test(flavor = "multi_thread")]
async fn the_gate_counts_a_document_the_validator_refuses() {
    let db = mongo_schema_testkit::database("pull_gate").await;
    let coll = db.collection::<Document>("things");
    let docs: Vec<Document> = (0..50)
        .map(|i| doc! { "_id": i, "n": i, "tags": ["a"] })
        .collect();
    coll.insert_many(docs).await.unwrap();
    let pulled = pull(&db, &config()).await.unwrap();
    let validators = mongo_schema_cli::validator::validators(&pulled.model);
    coll.insert_one(doc! { "_id": 99, "n": "not a number", "tags": ["a"] })
        .await
        .unwrap();
    let mut report = mongo_schema_cli::report::Report::default();
    let read = config().read;
    let checked = mongo_schema_cli::verify::check(
        &db,
        "things",
        51,
        &validators[0].1,
        &read,
        mongo_schema_cli::verify::FAILURES_KEPT,
        &mut report,
    )
    .await
    .unwrap();
    assert_eq!((checked.server, checked.local), (1, 1), "{checked:?}");
    assert_eq!(checked.failing[0].get_i32("_id"), Ok(99));
    // pulled again, the type of `n` is undecided rather than wrong, and nothing fails
    let again = pull(&db, &config()).await.unwrap();
    assert!(again.module.contains("pub n: Bson,"), "{}", again.module);
    assert!(again.report.undecided.iter().any(|u| u.path == "things.n"));
    assert_eq!(again.report.collections[0].server_violators, 0);
}

/// The guide's pulled example (`docs/guide/pull.md`) is this pull's module, line for line in
/// order (`// ...` elides; rustdoc's hidden `# ` lines, which bring in the other types for the
/// doc test, are not part of it).
fn readme_block_is_pulled(module: &str) {
    let readme = include_str!("../../docs/guide/pull.md");
    let section = readme
        .find("\n## Adopting an existing database\n")
        .expect("the guide's section");
    let body = &readme[section..];
    let block = &body[body.find("```rust\n").expect("a rust block") + 8..];
    let block = &block[..block.find("```").expect("closed")];
    let lines: Vec<&str> = module.lines().map(str::trim).collect();
    let mut at = 0;
    let shown = block
        .lines()
        .filter(|l| !(l.starts_with("# ") || *l == "#"));
    for wanted in shown.map(str::trim).filter(|l| *l != "// ...") {
        match lines[at..].iter().position(|l| *l == wanted) {
            Some(i) => at += i + 1,
            None => {
                panic!("guide line `{wanted}` is not in the pulled module (in order):\n{module}")
            }
        }
    }
}

/// An existing validator is the starting point: its kinds, `null` and optional fields are kept
/// where no document uses them, with its level and action, and its documents stay open to
/// fields it does not name; the same documents without a validator (the control) get the
/// narrower types and a closed model.
#[tokio::test(flavor = "multi_thread")]
async fn an_existing_validator_is_kept() {
    let db = mongo_schema_testkit::database("pull_existing").await;
    let validator = doc! { "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "name", "score"],
        "properties": {
            "name": { "bsonType": "string" },
            "score": { "bsonType": ["int", "double"] },
            "nickname": { "bsonType": ["string", "null"] },
        },
    } };
    db.run_command(doc! {
        "create": "players",
        "validator": validator,
        "validationLevel": "moderate",
        "validationAction": "warn",
    })
    .await
    .unwrap();
    let docs: Vec<Document> = (0..30)
        .map(|i| doc! { "_id": i, "name": format!("p{i}"), "score": i * 10, "nickname": format!("n{i}") })
        .collect();
    db.collection::<Document>("players")
        .insert_many(docs.clone())
        .await
        .unwrap();
    db.collection::<Document>("plain_players")
        .insert_many(docs)
        .await
        .unwrap();
    let pulled = pull(&db, &config()).await.unwrap();
    let module = &pulled.module;
    for needle in [
        // the validator leaves the documents open: so does the model
        "#[collection(\n    name = \"players\",\n    validation_level = \"moderate\",\n    validation_action = \"warn\"\n)]",
        "#[schema(stored_as = IntOrDouble)]\n    pub score: f64,",
        "#[schema(stored_as = Option<String>)]\n    pub nickname: Option<Option<String>>,",
        // the control
        "#[collection(name = \"plain_players\", additional_properties = false)]",
        "pub struct PlainPlayer {\n    #[serde(rename = \"_id\")]\n    pub id: i32,\n    pub name: String,\n    pub score: i32,\n    pub nickname: String,\n}",
    ] {
        assert!(module.contains(needle), "`{needle}` is not in the module:\n{module}");
    }
    for c in &pulled.report.collections {
        assert_eq!((c.server_violators, c.local_violators), (0, 0), "{c:?}");
    }
}

/// Stored names that are hostile to generated code: a newline followed by code (it once ended
/// a `///` comment and injected a function), a block comment's end, quotes, a backslash, a
/// Markdown code fence at the start of a comment line (a doctest), and control or invisible
/// characters. The module compiles, applies with no violator and round-trips every document;
/// names with control characters are in no code (their sub-document is `Bson`, the name only
/// escaped in its comment), and a collection holding one at the top level is refused.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_stored_names_make_a_module_that_compiles_or_a_refusal() {
    let db = mongo_schema_testkit::database("pull_hostile").await;
    let injected = "x\n}\npub fn injected() -> u8 { 1 }\n/// ";
    let docs: Vec<Document> = (0..20)
        .map(|i| {
            let mut d = doc! {
                "_id": i,
                "*/ fn closed() {} /*": i,
                "quote\"d": format!("q{i}"),
                "it's": true,
                "back\\slash": 1.5,
                "meta": { injected: i, "tab\there": 1, "ok": "yes" },
                "rtl": { "\u{202e}gnp.exe": i },
            };
            if i % 2 == 0 {
                // missing in half the documents: its note starts with the name
                d.insert("```rust", i);
            }
            d
        })
        .collect();
    db.collection::<Document>("hostile")
        .insert_many(docs)
        .await
        .unwrap();
    let pulled = pull(&db, &config())
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    let module = &pulled.module;
    // the names with control or invisible characters are in no code, and in their comment
    // only escaped, on one line
    assert!(
        !module
            .lines()
            .any(|l| l.trim_start().starts_with("pub fn injected")),
        "{module}"
    );
    assert!(
        module.contains("(x\\n}\\npub fn injected() -> u8 { 1 }\\n/// )"),
        "{module}"
    );
    assert!(module.contains("(\\u{202e}gnp.exe)"), "{module}");
    assert!(
        !module.contains('\u{202e}') && !module.contains('\t'),
        "{module}"
    );
    for needle in [
        "pub meta: Bson,",
        "pub rtl: Bson,",
        "#[serde(rename = \"*/ fn closed() {} /*\")]",
        "#[serde(rename = \"quote\\\"d\")]",
        "#[serde(rename = \"back\\\\slash\")]",
    ] {
        assert!(
            module.contains(needle),
            "`{needle}` is not in the module:\n{module}"
        );
    }
    // no comment line opens a code block (a doctest)
    for line in module.lines() {
        let text = line
            .trim_start()
            .trim_start_matches("///")
            .trim_start_matches("//!");
        assert!(!text.trim_start().starts_with("```"), "{line}");
    }
    assert!(pulled
        .report
        .undecided
        .iter()
        .any(|u| u.path == "hostile.meta"));

    let dir = scratch_crate(&pulled, "pulled-hostile");
    let output = common::scratch::run_scratch(&dir, db.name());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the pulled crate failed:\n{stdout}\n{stderr}\n{module}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("hostile:"))
        .unwrap_or_else(|| panic!("no line for hostile:\n{stdout}"));
    assert!(
        line.contains("server violators 0, local violators 0"),
        "{line}"
    );
    assert_eq!(counts(line), (20, 20), "{line}");

    // a top-level name with a newline: refused, nothing written
    db.collection::<Document>("refused")
        .insert_one(doc! { "_id": 1, "a\nb": 1 })
        .await
        .unwrap();
    let mut only = config();
    only.collections = vec!["refused".to_owned()];
    assert!(pull(&db, &only).await.is_err());
}

fn counts(line: &str) -> (u64, u64) {
    let number = |word: &str| -> u64 {
        let at = line
            .find(word)
            .unwrap_or_else(|| panic!("`{word}` in {line}"));
        line[..at]
            .split_whitespace()
            .last()
            .and_then(|n| n.trim_end_matches(',').parse().ok())
            .unwrap_or_else(|| panic!("count before `{word}` in {line}"))
    };
    (number(" decoded"), number(" re-encoded equal"))
}

/// A crate holding the generated module and a program that checks it against the database.
fn scratch_crate(pulled: &mongo_schema_cli::pull::Pulled, name: &str) -> PathBuf {
    let mut checks = String::new();
    for c in &pulled.model.collections {
        let ty = &pulled.model.structs[c.root].name;
        checks.push_str(&format!(
            "    check::<model::{ty}>(&db, {:?}).await;\n",
            c.name
        ));
    }
    common::scratch::scratch_crate(
        name,
        &pulled.module,
        &CHECKER.replace("    // CHECKS\n", &checks),
    )
}

const CHECKER: &str = r#"//! Checks the pulled module against the database it was pulled from.

mod model;

use futures_util::TryStreamExt;
use mongo_schema::bson::{self, doc, Bson, Document, RawDocumentBuf};
use mongo_schema::mongodb::{Client, Database};
use mongo_schema::{Document as _, LocalValidator};

/// Equal with numbers compared by value and field order ignored (maps are re-encoded in key
/// order).
fn same(a: &Bson, b: &Bson) -> bool {
    let number = |v: &Bson| match v {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        _ => None,
    };
    match (a, b) {
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

async fn check<T>(db: &Database, name: &str)
where
    T: mongo_schema::Document + serde::Serialize + serde::de::DeserializeOwned,
{
    let validator = T::validator();
    let listed: Vec<Document> = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": name } })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let installed = listed[0]
        .get_document("options")
        .ok()
        .and_then(|o| o.get_document("validator").ok())
        .cloned();
    let as_generated = installed.as_ref() == Some(&validator);
    let server = db
        .collection::<Document>(name)
        .count_documents(doc! { "$nor": [validator.clone()] })
        .await
        .unwrap();
    let local = LocalValidator::new(&validator).unwrap();
    let raw: Vec<RawDocumentBuf> = db
        .collection::<RawDocumentBuf>(name)
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let (mut decoded, mut equal, mut local_violators) = (0u64, 0u64, 0u64);
    for stored in &raw {
        if local.check_raw(stored).is_err() {
            local_violators += 1;
        }
        let value: T = match bson::from_slice(stored.as_bytes()) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("{name}: cannot decode {:?}: {e}", stored.get("_id"));
                continue;
            }
        };
        decoded += 1;
        let written = bson::to_raw_document_buf(&value).unwrap();
        let before = Bson::Document(Document::try_from(stored.as_ref()).unwrap());
        let after = Bson::Document(Document::try_from(written.as_ref()).unwrap());
        if same(&before, &after) {
            equal += 1;
        } else if equal + 3 > decoded {
            eprintln!("{name}: differs after a round trip:\n  stored  {before}\n  written {after}");
        }
    }
    println!(
        "{name}: {} documents, {decoded} decoded, {equal} re-encoded equal; server violators {server}, local violators {local_violators}; {}",
        raw.len(),
        if as_generated { "validator installed as generated" } else { "validator NOT installed as generated" }
    );
}

#[tokio::main]
async fn main() {
    let uri = std::env::var("PULLED_URI").expect("PULLED_URI");
    let client = Client::with_uri_str(&uri).await.unwrap();
    let db = client.database(&std::env::var("PULLED_DB").expect("PULLED_DB"));
    let report = model::schema().apply(&db).await.expect("apply");
    println!("apply: {report}");
    // CHECKS
}
"#;
