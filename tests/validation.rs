//! Writes rejected by a generated validator come back as typed errors naming the collection,
//! the field paths and the rules (from the server's `errInfo`).

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{CollectionSpec, Error};
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
async fn insert_many_keeps_every_write_error_of_the_batch_and_the_drivers_error() {
    let db = applied_db("validation_batch").await;
    let mut long_team = ticket();
    long_team.team = "x".repeat(41);
    let mut high = ticket();
    high.priority = 9;
    let mut many_tags = ticket();
    many_tags.tags = vec!["a".into(), "b".into(), "c".into(), "d".into()];
    let batch = [ticket(), long_team, high, ticket(), many_tags];
    let error = Ticket::collection(&db)
        .insert_many(&batch)
        .ordered(false)
        .await
        .in_collection("tickets")
        .unwrap_err();
    let Error::Validation(validation) = &error else {
        panic!("expected a validation error, got {error:#?}")
    };
    // every write error, with its index, not only the first
    let at: Vec<(usize, i32)> = validation.batch.iter().map(|f| (f.index, f.code)).collect();
    assert_eq!(at, [(1, 121), (2, 121), (4, 121)], "{error}");
    let paths: Vec<Vec<&str>> = validation
        .batch
        .iter()
        .map(|f| f.failures.iter().map(|r| r.path.as_str()).collect())
        .collect();
    assert_eq!(paths, [vec!["team"], vec!["priority"], vec!["tags"]]);
    assert_eq!(
        validation.batch[1].document_id,
        Some(Bson::ObjectId(batch[2].id))
    );
    assert_eq!(validation.rejected().count(), 3);
    // the first is described in the error's own fields, as before
    assert_eq!(validation.index, Some(1));
    assert_eq!(rules(&error), [("team".to_owned(), "maxLength".to_owned())]);
    // the driver's error is kept: its kind, its code, and `source()` reaches it
    let driver = validation.driver().expect("the driver's error");
    assert!(
        matches!(
            driver.kind.as_ref(),
            mongodb::error::ErrorKind::InsertMany(_)
        ),
        "{driver:?}"
    );
    assert!(std::ptr::eq(error.as_driver().unwrap(), driver));
    assert_eq!(error.code(), Some(121));
    let source = std::error::Error::source(validation.as_ref()).expect("a source");
    assert!(source.downcast_ref::<mongodb::error::Error>().is_some());
    // the control: the two valid tickets of the unordered batch were written
    assert_eq!(
        Ticket::collection(&db)
            .count_documents(doc! {})
            .await
            .unwrap(),
        2
    );
    // a single rejected insert keeps its driver error too, with no batch
    let mut bad = ticket();
    bad.priority = -1;
    let single = Ticket::collection(&db)
        .insert_one(&bad)
        .await
        .in_collection("tickets")
        .unwrap_err();
    let validation = single.as_validation().expect("a validation error");
    assert!(validation.batch.is_empty() && validation.index.is_none());
    assert!(matches!(
        validation.driver().map(|d| d.kind.as_ref()),
        Some(mongodb::error::ErrorKind::Write(
            mongodb::error::WriteFailure::WriteError(w)
        )) if w.code == 121
    ));
}

/// A counter whose value may not fit the int64 BSON stores: `u64::MAX` does not serialize.
#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[collection(name = "counters")]
pub struct Counter {
    #[serde(rename = "_id")]
    pub id: i64,
    pub value: u64,
}

#[tokio::test]
async fn a_value_that_does_not_serialize_is_a_serialization_error_with_the_bson_error() {
    let db = mongo_schema_testkit::database("validation_unserializable").await;
    let schema = Schema::new().model::<Counter>().build().unwrap();
    schema.apply(&db).await.unwrap();
    let fits = Counter { id: 1, value: 7 };
    let too_big = Counter {
        id: 2,
        value: u64::MAX,
    };
    let is_bson_ser = |error: &Error| {
        matches!(error, Error::Serialization { .. })
            && std::error::Error::source(error)
                .and_then(|s| s.downcast_ref::<mongo_schema::bson_compat::SerError>())
                .is_some()
    };
    // the local check, the library's transaction and the driver's own insert: one variant
    let checked = Counter::check(&too_big).unwrap_err();
    assert!(is_bson_ser(&checked), "{checked:#?}");
    let in_transaction = schema
        .transaction(&db)
        .insert_one(&too_big)
        .await
        .unwrap_err();
    assert!(is_bson_ser(&in_transaction), "{in_transaction:#?}");
    let inserted = Counter::collection(&db)
        .insert_one(&too_big)
        .await
        .in_collection(Counter::COLLECTION)
        .unwrap_err();
    assert!(is_bson_ser(&inserted), "{inserted:#?}");
    // the control: a value that fits is checked, written and read back
    Counter::check(&fits).unwrap();
    schema.transaction(&db).insert_one(&fits).await.unwrap();
    let ids: Vec<i64> = common::all(Counter::collection(&db).find(doc! {}))
        .await
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(
        ids,
        [1],
        "nothing of the value that does not serialize was written"
    );
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
        error.as_validation().is_none(),
        "duplicate key is not a validation error: {error:?}"
    );
    assert!(
        matches!(&error, Error::Duplicate { collection, index, .. } if collection == "tickets" && index == "_id_"),
        "a duplicate key is Error::Duplicate: {error:?}"
    );
    assert!(error.as_driver().is_some(), "the driver's error is kept");
    assert!(
        error.is_duplicate_key() && !error.is_transient(),
        "{error:?}"
    );
}

/// `Schema::build` checks every validator, hand-written ones included, against mongod's
/// `$jsonSchema` parser, so a schema that builds is one mongod 7/8 accepts. Each mistake here is
/// one a lenient server (SecantusDB) may take; on mongod the test also shows the server refusing
/// it, so the check refuses nothing mongod would accept.
#[tokio::test]
async fn hand_written_validators_that_mongod_refuses_are_build_errors() {
    let ticket = |extra: BsonDocument| {
        let mut properties = doc! {
            "team": { "bsonType": "string", "maxLength": 40 },
            "status": { "enum": ["open", "closed"] },
            "tags": { "bsonType": "array", "maxItems": 3, "items": { "bsonType": "string" } },
        };
        properties.extend(extra);
        doc! { "bsonType": "object", "properties": properties }
    };
    let with = |key: &str, value: Bson| {
        let mut schema = ticket(doc! {});
        schema.insert(key, value);
        schema
    };
    let cases: Vec<(&str, Bson, &str)> = vec![
        ("empty required", with("required", Bson::Array(vec![])).into(), "`$jsonSchema.required` is an empty array"),
        ("duplicate required", with("required", vec!["team", "team"].into()).into(), "`$jsonSchema.required` lists `team` twice"),
        ("negative maxItems", ticket(doc! { "tags": { "bsonType": "array", "maxItems": -1 } }).into(), "`$jsonSchema.properties.tags.maxItems` is -1; mongod requires a non-negative integer"),
        ("fractional maxLength", ticket(doc! { "team": { "bsonType": "string", "maxLength": 2.5 } }).into(), "`$jsonSchema.properties.team.maxLength` is 2.5"),
        ("empty enum", ticket(doc! { "status": { "enum": [] } }).into(), "`$jsonSchema.properties.status.enum` is an empty array"),
        ("duplicate enum", ticket(doc! { "status": { "enum": ["open", "open"] } }).into(), "`$jsonSchema.properties.status.enum` lists \"open\" twice"),
        ("duplicate bsonType", ticket(doc! { "team": { "bsonType": ["string", "string"] } }).into(), "`$jsonSchema.properties.team.bsonType` lists `string` twice"),
        ("BSON alias in type", ticket(doc! { "priority": { "type": "int" } }).into(), "`$jsonSchema.properties.priority.type` names `int`, a BSON type"),
        ("type integer", ticket(doc! { "priority": { "type": "integer" } }).into(), "names `integer`"),
        ("JSON alias in bsonType", ticket(doc! { "open": { "bsonType": "boolean" } }).into(), "`bsonType` spells it `bool`"),
        ("type and bsonType", ticket(doc! { "team": { "type": "string", "bsonType": "string" } }).into(), "has both `type` and `bsonType`"),
        ("misspelt keyword", ticket(doc! { "team": { "bsonType": "string", "maxlength": 40 } }).into(), "(did you mean `maxLength`?)"),
        ("unsupported keyword", ticket(doc! { "email": { "bsonType": "string", "format": "email" } }).into(), "`$jsonSchema.properties.email.format` is a JSON Schema keyword that mongod does not support"),
        ("pattern not a string", ticket(doc! { "team": { "bsonType": "string", "pattern": 5 } }).into(), "`$jsonSchema.properties.team.pattern` is 5"),
        ("invalid regex", ticket(doc! { "team": { "bsonType": "string", "pattern": "^(billing|support" } }).into(), "`(` without its `)`"),
        ("property not a schema", ticket(doc! { "team": "string" }).into(), "`$jsonSchema.properties.team` is \"string\""),
        ("items not a schema", ticket(doc! { "tags": { "bsonType": "array", "items": "string" } }).into(), "`$jsonSchema.properties.tags.items` is \"string\""),
        ("additionalProperties not a boolean", with("additionalProperties", "no".into()).into(), "`$jsonSchema.additionalProperties` is \"no\""),
        ("empty anyOf", ticket(doc! { "team": { "anyOf": [] } }).into(), "`$jsonSchema.properties.team.anyOf` is an empty array"),
        ("exclusiveMinimum alone", ticket(doc! { "priority": { "bsonType": "int", "exclusiveMinimum": true } }).into(), "is set without `minimum`"),
        ("multipleOf zero", ticket(doc! { "priority": { "bsonType": "int", "multipleOf": 0 } }).into(), "requires a positive number"),
        ("uniqueItems not a boolean", ticket(doc! { "tags": { "bsonType": "array", "uniqueItems": "yes" } }).into(), "requires a boolean"),
        ("$jsonSchema not an object", Bson::from("tickets"), "`$jsonSchema` is \"tickets\"; mongod requires an object"),
    ];
    let db = mongo_schema_testkit::database("validation_refused").await;
    let secantus = mongo_schema_testkit::is_secantus(&db).await;
    let mut lenient = Vec::new();
    for (i, (mistake, schema, expected)) in cases.iter().enumerate() {
        let validator = doc! { "$jsonSchema": schema.clone() };
        let error = Schema::new()
            .collection(CollectionSpec::new("tickets", validator.clone()))
            .build()
            .expect_err(mistake);
        assert!(
            error
                .problems
                .iter()
                .any(|p| p.starts_with("`tickets`: ") && p.contains(expected)),
            "{mistake}: expected `{expected}` in {error}"
        );
        let created = db
            .run_command(doc! { "create": format!("refused_{i}"), "validator": validator })
            .await;
        match (secantus, created) {
            (false, created) => assert!(
                created.is_err(),
                "{mistake}: mongod accepted a validator the check refuses"
            ),
            (true, Ok(_)) => lenient.push(*mistake),
            (true, Err(_)) => {}
        }
    }
    if secantus {
        // SPEC §10: SecantusDB accepts some of these; the build check is what stops them
        println!(
            "SecantusDB accepts {} of the {} validators mongod refuses: {}",
            lenient.len(),
            cases.len(),
            lenient.join(", ")
        );
    }
    // the brief's own example, word for word
    let error = Schema::new()
        .collection(CollectionSpec::new(
            "tickets",
            doc! { "$jsonSchema": ticket(doc! { "tags": { "bsonType": "array", "maxItems": -1 } }) },
        ))
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems,
        ["`tickets`: `$jsonSchema.properties.tags.maxItems` is -1; mongod requires a non-negative integer"]
    );
}

#[test]
fn every_validator_mistake_is_reported_not_only_the_first() {
    let error = Schema::new()
        .collection(CollectionSpec::new(
            "tickets",
            doc! { "$jsonSchema": {
                "bsonType": "object",
                "required": [],
                "properties": { "tags": { "maxItems": -1, "items": { "enum": [] } } },
            } },
        ))
        .collection(CollectionSpec::new(
            "notes",
            doc! { "$jsonSchema": { "properties": { "body": { "type": "text" } } } },
        ))
        .build()
        .unwrap_err();
    assert_eq!(error.problems.len(), 4, "{error}");
    assert!(
        error.problems[3].starts_with("`notes`: `$jsonSchema.properties.body.type` names `text`"),
        "{error}"
    );
}

#[test]
fn the_derived_validators_pass_the_check() {
    // every derive of this file, including an optional enum and a capped array of structs
    Schema::new().model::<Ticket>().build().unwrap();
    let problems = Schema::new()
        .collection(CollectionSpec::new("raw", Ticket::validator()))
        .build();
    assert!(problems.is_ok(), "{problems:?}");
}

#[test]
fn collection_names_with_control_characters_are_build_errors() {
    for name in [
        "tick\tets",
        "tickets\n",
        "\u{1b}[31mtickets",
        "tickets\u{7f}",
        "tick\u{85}ets",
    ] {
        let error = Schema::new()
            .collection(CollectionSpec::new(name, Ticket::validator()))
            .build()
            .unwrap_err();
        assert!(
            error.problems[0].contains("contains a control character"),
            "{name:?}: {error}"
        );
    }
    let error = Schema::new()
        .collection(CollectionSpec::new(".tickets", Ticket::validator()))
        .build()
        .unwrap_err();
    assert!(error.problems[0].contains("starts with `.`"), "{error}");
    Schema::new()
        .collection(CollectionSpec::new(
            "tickets.archive-2024 é",
            Ticket::validator(),
        ))
        .build()
        .expect("dots inside, dashes, spaces and non-ASCII letters are fine");
}

/// A note of a ticket whose declared index on the reference is sparse: it leaves out the notes
/// without `ticket_id`, so it cannot serve the reference's lookups, and mongod refuses a second
/// index on the same keys with other options.
#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[collection(name = "notes")]
#[index(keys(ticket_id = 1), sparse, name = "notes_by_ticket")]
pub struct Note {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub body: String,
}

/// The same with a partial index instead: mongod (5.0+) keeps it beside the reference's own
/// index, since a partial filter makes it another index.
#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[collection(name = "open_notes")]
#[index(
    keys(ticket_id = 1),
    partial = r#"{"open": true}"#,
    name = "open_notes_by_ticket"
)]
pub struct OpenNote {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub open: bool,
}

#[tokio::test]
async fn a_sparse_or_partial_index_does_not_serve_a_reference() {
    let error = Schema::new()
        .model::<Ticket>()
        .model::<Note>()
        .build()
        .unwrap_err();
    assert_eq!(error.problems.len(), 1, "{error}");
    assert!(
        error.problems[0].contains("`notes_by_ticket` (sparse, declared)")
            && error.problems[0].contains("`ticket_id_1` (reference `ticket_id` -> `tickets`)")
            && error.problems[0].contains("IndexOptionsConflict"),
        "{error}"
    );

    let names: Vec<String> = OpenNote::collection_spec()
        .indexes
        .iter()
        .map(|i| i.name.clone())
        .collect();
    assert_eq!(names, ["open_notes_by_ticket", "ticket_id_1"]);
    let schema = Schema::new()
        .model::<Ticket>()
        .model::<OpenNote>()
        .build()
        .unwrap();
    let db = mongo_schema_testkit::database("validation_partial").await;
    schema.apply(&db).await.unwrap();
    let listed: Vec<BsonDocument> =
        common::all(db.collection::<BsonDocument>("open_notes").list_indexes())
            .await
            .into_iter()
            .map(|model| model.keys)
            .collect();
    assert_eq!(
        listed.len(),
        3,
        "_id, the partial one and the reference's: {listed:?}"
    );
}

/// mongod refuses `encrypt` and `encryptMetadata` in a validator that only warns or is
/// moderate (a warning could log plaintext), and accepts them in a strict one that errors.
#[tokio::test]
async fn encryption_keywords_need_a_strict_validator_that_errors() {
    use mongo_schema::{ValidationAction, ValidationLevel};
    let validator = doc! { "$jsonSchema": {
        "bsonType": "object",
        "properties": { "ssn": { "encrypt": { "bsonType": "string" } } },
    } };
    let strict = CollectionSpec::new("patients", validator.clone());
    Schema::new().collection(strict).build().unwrap();
    let db = mongo_schema_testkit::database("validation_encrypt").await;
    let secantus = mongo_schema_testkit::is_secantus(&db).await;
    for (i, (level, action)) in [
        (ValidationLevel::Moderate, ValidationAction::Error),
        (ValidationLevel::Strict, ValidationAction::Warn),
    ]
    .into_iter()
    .enumerate()
    {
        let spec = CollectionSpec::new("patients", validator.clone())
            .validation_level(level)
            .validation_action(action);
        let error = Schema::new().collection(spec).build().unwrap_err();
        assert_eq!(
            error.problems,
            ["`patients`: `$jsonSchema.properties.ssn.encrypt` is refused by mongod unless the validation level is `strict` and the action `error` (a warning could log plaintext)"]
        );
        let created = db
            .run_command(doc! {
                "create": format!("patients_{i}"),
                "validator": validator.clone(),
                "validationLevel": level.as_str(),
                "validationAction": action.as_str(),
            })
            .await;
        if secantus {
            // SecantusDB 0.7.0b3 does not know `encrypt` at all ("Unknown $jsonSchema keyword")
            let outcome = created.map_or_else(|e| format!("refused: {e}"), |_| "accepted".into());
            println!("SecantusDB, level {level} action {action}: {outcome}");
        } else {
            assert!(
                created.is_err(),
                "mongod accepted encrypt with level {level} action {action}"
            );
        }
    }
}

/// A member whose phone is absent or a string, never `null` (`#[schema(not_null)]`), beside a
/// nickname that serde also leaves out when `None` but whose validator takes `null`.
#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(not_null, max_length = 20)]
    pub phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    /// Left unchecked by the validator (`#[schema(open)]`), as a server's validator that did
    /// not declare it left it: another writer's double is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(open)]
    pub visits: Option<i32>,
}

#[tokio::test]
async fn a_not_null_option_is_absent_or_a_value_never_null() {
    let db = mongo_schema_testkit::database("not_null").await;
    Schema::new()
        .model::<Member>()
        .build()
        .unwrap()
        .apply(&db)
        .await
        .unwrap();
    // the crate's own writes pass: `None` is an absent field, `Some` a string
    let absent = Member {
        id: ObjectId::new(),
        phone: None,
        nickname: None,
        visits: None,
    };
    let present = Member {
        id: ObjectId::new(),
        phone: Some("+33 1 23 45 67 89".into()),
        nickname: Some("Bo".into()),
        visits: Some(3),
    };
    let members = Member::collection(&db);
    members.insert_one(&absent).await.unwrap();
    members.insert_one(&present).await.unwrap();
    let raw = db.collection::<BsonDocument>("members");
    let stored = raw
        .find_one(doc! { "_id": absent.id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored, doc! { "_id": absent.id });
    assert_eq!(
        members.find_one(doc! { "_id": present.id }).await.unwrap(),
        Some(present)
    );
    // `null` is refused by the server and by the local check alike
    let null_phone = doc! { "_id": ObjectId::new(), "phone": Bson::Null };
    let refused = raw.insert_one(&null_phone).await.unwrap_err();
    assert!(
        matches!(
            refused.kind.as_ref(),
            mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w))
                if w.code == 121
        ),
        "{refused:?}"
    );
    let local = mongo_schema::LocalValidator::new(&Member::validator()).unwrap();
    assert!(local.check(&null_phone).is_err());
    // the validator keeps the field's other constraint and leaves it optional
    let phone = Member::validator()
        .get_document("$jsonSchema")
        .and_then(|s| s.get_document("properties"))
        .and_then(|p| p.get_document("phone"))
        .unwrap()
        .clone();
    assert_eq!(phone, doc! { "bsonType": "string", "maxLength": 20_i64 });
    // the control: the nickname, without `not_null`, takes `null`
    let null_nickname = doc! { "_id": ObjectId::new(), "nickname": Bson::Null };
    local.check(&null_nickname).unwrap();
    raw.insert_one(&null_nickname).await.unwrap();
    assert_eq!(raw.count_documents(doc! {}).await.unwrap(), 3);

    // `open`: the validator declares the field and checks nothing of it (the server and the
    // local check take a double, a string, `null`)
    let visits = Member::validator()
        .get_document("$jsonSchema")
        .and_then(|s| s.get_document("properties"))
        .and_then(|p| p.get_document("visits"))
        .unwrap()
        .clone();
    assert_eq!(visits, doc! {});
    for value in [Bson::Double(12.5), Bson::String("many".into()), Bson::Null] {
        let other = doc! { "_id": ObjectId::new(), "visits": value };
        local.check(&other).unwrap();
        raw.insert_one(&other).await.unwrap();
    }
    // the control: a checked field beside it refuses the wrong kind
    let wrong = doc! { "_id": ObjectId::new(), "nickname": 12 };
    assert!(local.check(&wrong).is_err());
    assert!(raw.insert_one(&wrong).await.is_err());
}
