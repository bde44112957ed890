//! Case-insensitive collation on the real server: a collection created with its default
//! collation, a unique email index that refuses a case variant (`Error::Duplicate`), a declared
//! lookup that finds any case, the collation sent on every index and declared query (SecantusDB
//! applies no collection default), the fit's collation rule in `Schema::build` (an index of
//! another collation does not serve a string lookup, a derived index carries the query's
//! collation), and the report of a collection created without it.

mod common;

use common::first_batch;
use mongo_schema::bson::{doc, oid::ObjectId};
use mongo_schema::deploy::Warning;
use mongo_schema::prelude::*;
use mongo_schema::{Error, IndexReason};
use serde::{Deserialize, Serialize};

/// Accounts looked up by email whatever its case.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "accounts", collation(locale = "en", strength = 2))]
#[index(keys(email = 1), unique, name = "email_ci")]
#[query(name = "by_email", eq(email))]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
    pub logins: i64,
}

/// The control: the same model with the simple collation.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "plain_accounts")]
#[index(keys(email = 1), unique, name = "email_exact")]
#[query(name = "by_email", eq(email))]
pub struct PlainAccount {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
    pub logins: i64,
}

/// Collations per index and per query, on a collection without a default.
// several queries name `name` (rust-lang/rust-clippy#13238)
#[allow(clippy::duplicated_attributes)]
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "members")]
#[index(
    keys(name = 1),
    name = "name_ci",
    collation(locale = "en", strength = 2)
)]
#[query(name = "by_name_ci", eq(name), collation(locale = "en", strength = 2))]
#[query(name = "by_name_exact", eq(name))]
#[query(
    name = "by_name_fr",
    eq(team, name),
    collation(locale = "fr", strength = 1)
)]
#[query(name = "by_level", eq(level), sort(joined = 1))]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub team: String,
    pub level: i32,
    pub joined: DateTime,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Account>()
        .model::<PlainAccount>()
        .model::<Member>()
        .build()
        .expect("the collation schema is consistent")
}

fn account(email: &str) -> Account {
    Account {
        id: ObjectId::new(),
        email: email.to_owned(),
        logins: 0,
    }
}

#[tokio::test]
async fn a_case_insensitive_unique_email_refuses_a_case_variant_and_the_lookup_finds_any_case() {
    let db = mongo_schema_testkit::database("collation_email").await;
    schema().apply(&db).await.unwrap();

    Account::collection(&db)
        .insert_one(account("ana@x.io"))
        .await
        .unwrap();
    let second = Account::collection(&db)
        .insert_one(account("ANA@x.io"))
        .await
        .in_collection(Account::COLLECTION)
        .unwrap_err();
    assert!(
        matches!(&second, Error::Duplicate { index, .. } if index == "email_ci"),
        "the case variant is a duplicate under strength 2: {second:?}"
    );
    let found = Account::by_email(&db, "Ana@X.IO").await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].email, "ana@x.io");
    // the declared lookup's count runs under the collation too
    assert_eq!(Account::by_email(&db, "ANA@X.IO").count().await.unwrap(), 1);

    // control: under the simple collation the variant is another email, and the lookup
    // matches the exact case only
    PlainAccount::collection(&db)
        .insert_many([
            PlainAccount {
                id: ObjectId::new(),
                email: "ana@x.io".into(),
                logins: 0,
            },
            PlainAccount {
                id: ObjectId::new(),
                email: "ANA@x.io".into(),
                logins: 0,
            },
        ])
        .await
        .unwrap();
    assert!(PlainAccount::by_email(&db, "Ana@X.IO")
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        PlainAccount::by_email(&db, "ana@x.io").await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn the_collection_its_indexes_and_its_queries_carry_the_collation() {
    let db = mongo_schema_testkit::database("collation_options").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let ci = doc! { "locale": "en", "strength": 2 };
    let listed = first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "accounts" } },
    )
    .await;
    let collation = listed[0]
        .get_document("options")
        .and_then(|o| o.get_document("collation"))
        .unwrap();
    assert_eq!(collation.get_str("locale").unwrap(), "en");
    assert_eq!(collation.get_i32("strength").unwrap(), 2);
    // the unique index is created with it
    let indexes = first_batch(&db, doc! { "listIndexes": "accounts" }).await;
    let email = indexes
        .iter()
        .find(|i| i.get_str("name").ok() == Some("email_ci"))
        .unwrap_or_else(|| panic!("{indexes:?}"));
    assert_eq!(
        email
            .get_document("collation")
            .unwrap()
            .get_i32("strength")
            .unwrap(),
        2,
        "{email}"
    );
    // the declared query sends it (SecantusDB applies no collection default)
    let command = Account::by_email(&db, "x").command().unwrap();
    assert_eq!(command.get_document("collation").unwrap(), &ci);
    // a query of a collection without a default sends none
    let command = Member::by_name_exact(&db, "x").command().unwrap();
    assert!(!command.contains_key("collation"), "{command}");
    // a second apply writes nothing: the server's collations are the declared ones
    let again = schema.apply(&db).await.unwrap();
    assert!(again.is_noop(), "{again}");
}

#[test]
fn the_fit_serves_a_string_lookup_only_under_the_index_collation() {
    let schema = schema();
    let members = schema.collection("members").unwrap();
    let fit = |name: &str| common::fit_of(members, name);
    assert_eq!(fit("by_name_ci").index.as_deref(), Some("name_ci"));
    // the exact lookup is not served by the case-insensitive index: it gets its own, simple
    let exact = fit("by_name_exact");
    assert_ne!(exact.index.as_deref(), Some("name_ci"), "{exact:?}");
    let exact_index = members
        .indexes
        .iter()
        .find(|i| Some(&i.name) == exact.index.as_ref())
        .unwrap();
    assert_eq!(exact_index.keys, doc! { "name": 1 });
    assert!(exact_index.collation.is_none(), "{exact_index}");
    // a derived index carries the query's collation
    let fr = fit("by_name_fr");
    assert!(fr.derived, "{fr:?}");
    let fr_index = members
        .indexes
        .iter()
        .find(|i| Some(&i.name) == fr.index.as_ref())
        .unwrap();
    assert_eq!(
        fr_index.collation.as_ref().map(ToString::to_string),
        Some("{ locale: \"fr\", strength: 1 }".to_owned())
    );
    assert!(
        matches!(&fr_index.reasons[0], IndexReason::Query { queries } if queries == &["by_name_fr".to_owned()])
    );
    // the accounts' lookup is served by the unique index: both have the collection's default
    let accounts = schema.collection("accounts").unwrap();
    let lookup = accounts.queries[0].fit.clone().unwrap();
    assert_eq!(lookup.index.as_deref(), Some("email_ci"));
    assert_eq!(accounts.indexes.len(), 1, "no index derived beside it");
}

#[test]
fn another_collation_keeps_a_numeric_key_but_not_a_string_one() {
    // { level, joined } is numbers and dates: an index of another collation still serves
    let spec = mongo_schema::spec::CollectionSpec::new(
        "members",
        <Member as mongo_schema::Document>::validator(),
    )
    .index(
        mongo_schema::spec::IndexSpec::new(doc! { "level": 1, "joined": 1 })
            .name("level_en")
            .collation(mongo_schema::spec::Collation::new("en").strength(2)),
    )
    .index(
        mongo_schema::spec::IndexSpec::new(doc! { "team": 1, "name": 1 })
            .name("team_en")
            .collation(mongo_schema::spec::Collation::new("en").strength(2)),
    )
    .query(
        mongo_schema::query::QuerySpec::new("by_level")
            .eq("level")
            .sort("joined", 1),
    )
    .query(
        mongo_schema::query::QuerySpec::new("by_team")
            .eq("team")
            .sort("name", 1),
    );
    let schema = Schema::new().collection(spec).build().unwrap();
    let members = schema.collection("members").unwrap();
    let by_level = members.queries[0].fit.clone().unwrap();
    assert_eq!(by_level.index.as_deref(), Some("level_en"), "{by_level:?}");
    assert!(!by_level.derived);
    // a string equality and sort under the simple collation: the en index is no use, one is
    // derived
    let by_team = members.queries[1].fit.clone().unwrap();
    assert_ne!(by_team.index.as_deref(), Some("team_en"), "{by_team:?}");
    assert!(by_team.derived, "{by_team:?}");
}

#[tokio::test]
async fn a_collection_created_without_its_collation_is_reported() {
    let db = mongo_schema_testkit::database("collation_report").await;
    db.create_collection("accounts").await.unwrap();
    let schema = schema();
    let plan = schema.plan(&db).await.unwrap();
    let reported = plan.warnings.iter().find(|w| {
        matches!(w, Warning::CollationDiffers { collection, server: None, .. } if collection == "accounts")
    });
    let reported = reported.unwrap_or_else(|| panic!("{plan}"));
    assert!(
        reported
            .to_string()
            .contains("mongod cannot change a collection's default collation"),
        "{reported}"
    );
    // the collections created by the plan's apply are not reported
    schema.apply(&db).await.unwrap();
    let plan = schema.plan(&db).await.unwrap();
    let others: Vec<&Warning> = plan
        .warnings
        .iter()
        .filter(|w| matches!(w, Warning::CollationDiffers { collection, .. } if collection != "accounts"))
        .collect();
    assert!(others.is_empty(), "{others:?}");
    // the index is still created with the collation: the unique email holds on this server
    Account::collection(&db)
        .insert_one(account("bo@x.io"))
        .await
        .unwrap();
    let variant = Account::collection(&db)
        .insert_one(account("BO@X.IO"))
        .await
        .in_collection(Account::COLLECTION)
        .unwrap_err();
    assert!(variant.is_duplicate_key(), "{variant:?}");
}

/// Profiles searched by words on a case-insensitive collection (try 4748, F2): mongod refuses
/// any collation on a text index, the collection's default included (`_isSpecOk`, 67), so the
/// library sends the simple one with it. (SecantusDB has no text index, so this is checked on
/// the spec `apply` sends; the test server's rule `collation-locale` is the live check, in
/// testkit/tests/mongod_rules.rs.)
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "profiles", collation(locale = "en", strength = 2))]
#[index(keys(bio = "text"))]
#[index(keys(email = 1))]
pub struct Profile {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
    pub bio: String,
}

/// The same with a collation stated on the text index, which mongod refuses.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "profiles")]
#[index(keys(bio = "text"), collation(locale = "en", strength = 2))]
pub struct CollatedText {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub bio: String,
}

#[test]
fn a_text_index_on_a_collated_collection_has_the_simple_collation() {
    let schema = Schema::new()
        .model::<Profile>()
        .build()
        .unwrap_or_else(|e| panic!("the profiles build: {e}"));
    let spec = schema.collection("profiles").unwrap();
    let collation = |name: &str| {
        let index = spec.indexes.iter().find(|i| i.name == name);
        index
            .unwrap_or_else(|| panic!("{name}: {spec:?}"))
            .collation
            .clone()
    };
    assert_eq!(
        collation("bio_text"),
        Some(mongo_schema::spec::Collation::simple())
    );
    // the positive control: the btree index beside it has the collection's
    assert_eq!(
        collation("email_1"),
        Some(mongo_schema::spec::Collation::new("en").strength(2))
    );
    // a collation stated on a text index is refused before anything is sent
    let error = Schema::new()
        .model::<CollatedText>()
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        // display-text: the build error names the index and the fix
        error.contains("index `bio_text` of `profiles` is of a type mongod gives no collation")
            // display-text: the build error names the fix
            && error.contains("state `collation(locale = \"simple\")` or none"),
        "{error}"
    );
}
