//! Writes rejected by a generated validator come back as typed errors naming the collection,
//! the field paths and the rules (from the server's `errInfo`).

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Pending,
    Closed,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug)]
pub struct StatusChange {
    pub status: Status,
    pub at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[collection(name = "tickets", additional_properties = false)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 40)]
    pub team: String,
    pub status: Status,
    #[schema(minimum = 0, maximum = 5)]
    pub priority: i32,
    #[embed(max = 3)]
    pub tags: Vec<String>,
    #[embed(max = 50, cap)]
    pub history: Vec<StatusChange>,
    pub updated_at: DateTime,
}

fn ticket() -> Ticket {
    Ticket {
        id: ObjectId::new(),
        team: "billing".into(),
        status: Status::Open,
        priority: 2,
        tags: vec!["invoice".into()],
        history: vec![StatusChange {
            status: Status::Open,
            at: DateTime::now(),
        }],
        updated_at: DateTime::now(),
    }
}

async fn applied_db(prefix: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    Schema::new()
        .model::<Ticket>()
        .build()
        .unwrap()
        .apply(&db)
        .await
        .unwrap();
    db
}

fn rules(error: &Error) -> Vec<(String, String)> {
    let validation = error
        .as_validation()
        .unwrap_or_else(|| panic!("not a validation error: {error}"));
    validation
        .failures
        .iter()
        .map(|f| (f.path.clone(), f.rule.clone()))
        .collect()
}

#[tokio::test]
async fn a_rejected_insert_names_collection_fields_and_rules() {
    let db = applied_db("validation_insert").await;
    let tickets = Ticket::collection(&db);
    tickets
        .insert_one(ticket())
        .await
        .expect("a valid ticket is accepted");

    let mut bad = ticket();
    bad.tags = vec!["a".into(), "b".into(), "c".into(), "d".into()];
    bad.priority = 9;
    let error = tickets
        .insert_one(&bad)
        .await
        .in_collection(Ticket::COLLECTION)
        .unwrap_err();
    println!("{error}");
    assert_eq!(
        rules(&error),
        [
            ("priority".to_owned(), "maximum".to_owned()),
            ("tags".into(), "maxItems".into())
        ]
    );
    let validation = error.as_validation().unwrap();
    assert_eq!(validation.collection.as_deref(), Some("tickets"));
    assert_eq!(validation.document_id, Some(bad.id.into()));
    let text = error.to_string();
    assert!(
        text.contains("`tickets`") && text.contains("`tags` fails `maxItems` 3"),
        "{text}"
    );
    // nothing was written
    assert_eq!(tickets.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn nested_and_missing_fields_have_dotted_paths() {
    let db = applied_db("validation_nested").await;
    let raw = db.collection::<BsonDocument>("tickets");
    let error: Error = raw
        .insert_one(doc! {
            "team": "",
            "status": "open",
            "priority": 1,
            "tags": [],
            "history": [{ "status": "open", "at": DateTime::now() }, { "status": "reopened", "at": DateTime::now() }],
            "surprise": true,
        })
        .await
        .unwrap_err()
        .into();
    println!("{error}");
    let got = rules(&error);
    for expected in [
        ("team", "minLength"),
        ("history.1.status", "enum"),
        ("updatedAt", "required"),
        ("surprise", "additionalProperties"),
    ] {
        assert!(
            got.iter().any(|(p, r)| p == expected.0 && r == expected.1),
            "missing {expected:?} in {got:?}"
        );
    }
}

#[tokio::test]
async fn an_update_past_the_bound_is_rejected_and_changes_nothing() {
    let db = applied_db("validation_update").await;
    let tickets = Ticket::collection(&db);
    let t = ticket();
    tickets.insert_one(&t).await.unwrap();
    let error = tickets
        .update_one(
            doc! { "_id": t.id },
            doc! { "$push": { "tags": { "$each": ["x", "y", "z"] } } },
        )
        .await
        .in_collection(Ticket::COLLECTION)
        .unwrap_err();
    assert_eq!(rules(&error), [("tags".to_owned(), "maxItems".to_owned())]);
    let stored = tickets
        .find_one(doc! { "_id": t.id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.tags, t.tags);
}

#[tokio::test]
async fn insert_many_reports_which_document_failed() {
    let db = applied_db("validation_many").await;
    let mut bad = ticket();
    bad.team = "x".repeat(41);
    let error = Ticket::collection(&db)
        .insert_many([ticket(), bad, ticket()])
        .ordered(true)
        .await
        .in_collection("tickets")
        .unwrap_err();
    let validation = error.as_validation().expect("validation error");
    assert_eq!(validation.index, Some(1));
    assert_eq!(rules(&error), [("team".to_owned(), "maxLength".to_owned())]);
}

#[tokio::test]
async fn other_errors_stay_driver_errors() {
    let db = applied_db("validation_other").await;
    let t = ticket();
    Ticket::collection(&db).insert_one(&t).await.unwrap();
    let error = Ticket::collection(&db)
        .insert_one(&t)
        .await
        .in_collection("tickets")
        .unwrap_err();
    assert!(
        matches!(error, Error::Driver(_)),
        "duplicate key is not a validation error: {error:?}"
    );
}
