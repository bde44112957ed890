//! `pull` of a database no mongo-schema service made (issue 50, the library's try 55): what the
//! server accepts today is accepted after `apply` of the pulled schema, so nothing the samples
//! saw narrows what the validator leaves open, and what the stored documents hold past the
//! validator is said:
//!
//! - a string field whose few values are the `_id`s of another collection (a hold's `bookId`, 8
//!   ISBNs in 3,000 holds) is a reference to it, not a unit enum of the 8 (a hold on a 9th book
//!   would be refused);
//! - a field the validator does not declare (every book has a `language`, 3 values) is neither
//!   required nor an enum, and stays unchecked (`#[schema(open)]`: after `apply` the server still
//!   takes a number there);
//! - a value written past the validator (`bypassDocumentValidation`) is named in a note;
//! - a keyword no attribute says (`minItems`) is named as not kept;
//! - a `copies` collection is not `struct Copy` (it would shadow the prelude's trait);
//! - a server index the derive would extend (`{ memberId: 1, loanedAt: -1 }` beside the reference)
//!   is kept as the server has it, name and keys (`pages = false`): `apply` builds no index;
//! - an optional field the validator declares without `null` stays never-null
//!   (`#[schema(not_null)]`): after `apply`, the server still refuses `null` there.

#[path = "common/scratch.rs"]
mod scratch;

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema_cli::pull::{pull, PullConfig};

#[tokio::test(flavor = "multi_thread")]
async fn what_the_server_leaves_open_stays_open_and_what_breaks_its_validator_is_said() {
    let db = mongo_schema_testkit::database("pull_foreign").await;
    let isbn = |i: i64| format!("97810000005{i:02}");
    db.run_command(doc! {
        "create": "books",
        "validator": { "$jsonSchema": {
            "bsonType": "object",
            "required": ["_id", "title", "authors"],
            "properties": {
                "_id": { "bsonType": "string" },
                "title": { "bsonType": "string", "maxLength": 200_i64 },
                "authors": { "bsonType": "array", "minItems": 1_i64, "maxItems": 5_i64,
                             "items": { "bsonType": "string" } },
            },
        } },
    })
    .await
    .unwrap();
    let books: Vec<BsonDocument> = (0..9)
        .map(|i| {
            doc! {
                "_id": isbn(i),
                "title": format!("Book {i}"),
                "authors": ["A"],
                "language": (["de", "en", "fr"][i as usize % 3]),
            }
        })
        .collect();
    db.collection::<BsonDocument>("books")
        .insert_many(books)
        .await
        .unwrap();
    // 3,000 holds on the first 8 books only, in a collection without a validator (the samples
    // decide: 8 values in 3,000 documents make a unit enum, unless they are a reference)
    let holds: Vec<BsonDocument> = (0..3000)
        .map(|i| doc! { "_id": i, "bookId": isbn(i % 8), "status": "waiting" })
        .collect();
    db.collection::<BsonDocument>("holds")
        .insert_many(holds)
        .await
        .unwrap();
    db.run_command(doc! {
        "create": "members",
        "validator": { "$jsonSchema": {
            "bsonType": "object",
            "required": ["_id", "status"],
            "properties": {
                "status": { "bsonType": "string", "enum": ["active", "suspended"] },
                "nickname": { "bsonType": "string" },
            },
        } },
    })
    .await
    .unwrap();
    db.collection::<BsonDocument>("members")
        .insert_many((0..50).map(|i| match i % 2 {
            0 => doc! { "_id": i, "status": "active", "nickname": format!("M{i}") },
            _ => doc! { "_id": i, "status": "active" },
        }))
        .await
        .unwrap();
    // one member written past the validator
    db.collection::<BsonDocument>("members")
        .insert_one(doc! { "_id": 500, "status": "banned" })
        .bypass_document_validation(true)
        .await
        .unwrap();
    // loans by member, newest first: an index the derive extends with `_id` for the pages
    db.collection::<BsonDocument>("loans")
        .insert_many((0..200).map(|i| {
            doc! {
                "_id": i,
                "memberId": (i % 50) as i32,
                "loanedAt": mongo_schema::bson::DateTime::from_millis(1_700_000_000_000 + i * 1000),
            }
        }))
        .await
        .unwrap();
    db.run_command(doc! { "createIndexes": "loans", "indexes": [
        { "key": { "memberId": 1, "loanedAt": -1 }, "name": "memberId_1_loanedAt_-1" },
    ] })
    .await
    .unwrap();
    db.collection::<BsonDocument>("copies")
        .insert_many((0..20).map(|i| doc! { "_id": i, "shelf": format!("S{}", i % 4) }))
        .await
        .unwrap();

    let pulled = pull(&db, &PullConfig::default()).await.unwrap();
    let module = &pulled.module;
    let report = &pulled.report;
    // the few-values reference: checked and accepted, typed as the books' `_id`
    let check = report
        .references
        .iter()
        .find(|r| r.path == "holds.bookId")
        .unwrap_or_else(|| {
            panic!(
                "no reference check of holds.bookId: {:?}",
                report.references
            )
        });
    assert!(check.accepted, "{check:?}");
    assert_eq!((check.checked, check.found), (8, 8));
    assert!(!module.contains("HoldBookId"), "{module}");
    assert!(module.contains("pub book_id: Ref<Book>"), "{module}");
    // the undeclared `language`: optional, a string, unchecked by the validator as it was
    assert!(
        module.contains("#[schema(open)]\n    pub language: Option<String>"),
        "{module}"
    );
    assert!(!module.contains("BookLanguage"), "{module}");
    // the copies collection's type does not shadow `Copy`
    assert!(module.contains("pub struct CopyDoc"), "{module}");
    assert!(!module.contains("pub struct Copy "), "{module}");
    // the index the derive would extend with `_id` for the reference's pages: kept as the
    // server has it
    assert!(module.contains("pub member_id: Ref<Member>"), "{module}");
    assert!(
        module.contains(
            "#[index(keys(\"memberId\" = 1, \"loanedAt\" = -1), pages = false, name = \"memberId_1_loanedAt_-1\")]"
        ),
        "{module}"
    );
    // the optional `nickname` the validator declares without `null`: never null
    assert!(
        module.contains("#[schema(not_null)]\n    pub nickname: Option<String>"),
        "{module}"
    );
    let notes = report.notes.join("\n");
    // display-text: the report's notes are what the operator reads
    assert!(
        notes.contains(
            "`members.status`: stored values the validator's `enum` refuses (\"banned\")"
        ),
        "{notes}"
    );
    // display-text: as above
    assert!(
        notes.contains("`books.authors`: the validator's `minItems` cannot be said by the models"),
        "{notes}"
    );

    // the module compiles as its own crate and applies as declared, and no stored document
    // violates
    scratch::applies_as_declared("pull_foreign", module, db.name());
    // no index was built: the loans' is the server's, as it was
    let indexes: Vec<String> = db
        .collection::<BsonDocument>("loans")
        .list_index_names()
        .await
        .unwrap();
    assert_eq!(indexes.len(), 2, "{indexes:?}");
    assert!(
        indexes.contains(&"memberId_1_loanedAt_-1".to_owned()),
        "{indexes:?}"
    );
    // the server refuses a `null` nickname as it did before (its validator is the pulled one now),
    // and takes a member without one
    let members = db.collection::<BsonDocument>("members");
    let refused = members
        .insert_one(
            doc! { "_id": 600, "status": "active", "nickname": mongo_schema::bson::Bson::Null },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused.kind.as_ref(),
            mongo_schema::mongodb::error::ErrorKind::Write(
                mongo_schema::mongodb::error::WriteFailure::WriteError(w)
            ) if w.code == 121
        ),
        "{refused:?}"
    );
    members
        .insert_one(doc! { "_id": 601, "status": "active" })
        .await
        .unwrap();
    // a book's `language`, which the server's validator never checked, is still any value
    db.collection::<BsonDocument>("books")
        .insert_one(doc! { "_id": "9781000000999", "title": "T", "authors": ["A"], "language": 5 })
        .await
        .unwrap();
}
