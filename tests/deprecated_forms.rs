//! The call forms of the previous release, kept one release as `#[deprecated]` wrappers: each
//! still works, and returns what its replacement returns.

#![allow(deprecated)]

mod common;

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use mongo_schema::{EntryCursor, EntryPage, Error, Page};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "shelves")]
pub struct Shelf {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub status: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "volumes")]
#[index(keys(shelf_id = 1, at = 1))]
pub struct Volume {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    pub at: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Scan {
    pub at: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "scans")]
#[bucket(parent = shelf_id, entries = scans, count = count, key = "at", first = first_at, last = last_at)]
pub struct ScanBucket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    #[embed(max = 2)]
    pub scans: Vec<Scan>,
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Shelf>()
        .model::<Volume>()
        .model::<ScanBucket>()
        .build()
        .unwrap()
}

async fn shelf(prefix: &str) -> (mongodb::Database, Shelf) {
    let db = mongo_schema_testkit::database(prefix).await;
    schema().apply(&db).await.unwrap();
    let shelf = Shelf {
        id: ObjectId::new(),
        status: "open".into(),
    };
    Shelf::collection(&db).insert_one(&shelf).await.unwrap();
    for at in 0..3 {
        Volume::collection(&db)
            .insert_one(Volume {
                id: ObjectId::new(),
                shelf_id: shelf.to_ref(),
                at,
            })
            .await
            .unwrap();
        ScanBucket::BUCKET
            .append(&db, &shelf.to_ref(), &Scan { at })
            .await
            .unwrap();
    }
    (db, shelf)
}

#[tokio::test]
async fn child_page_fetch_reads_what_page_in_reads() {
    let (db, shelf) = shelf("old_fetch").await;
    let old = Volume::SHELF_ID
        .page(&shelf.to_ref())
        .limit(2)
        .fetch(&db)
        .await
        .unwrap();
    let new = Volume::SHELF_ID
        .page_in(&db, &shelf.to_ref())
        .limit(2)
        .await
        .unwrap();
    assert_eq!(old.items.len(), 2);
    assert_eq!(old, new);
}

#[tokio::test]
async fn lookup_run_reads_what_lookup_in_reads() {
    let (db, shelf) = shelf("old_lookup").await;
    let old = Volume::SHELF_ID
        .children()
        .filter(doc! { "_id": shelf.id })
        .run(&db)
        .await
        .unwrap();
    let new = Volume::SHELF_ID
        .children_in(&db)
        .filter(doc! { "_id": shelf.id })
        .await
        .unwrap();
    assert_eq!(old[0].related.len(), 3);
    assert_eq!(old, new);
}

#[tokio::test]
async fn transaction_run_commits_as_awaiting_does() {
    let (db, shelf) = shelf("old_run").await;
    let report = schema()
        .transaction(&db)
        .update_one::<Shelf>(
            doc! { "_id": shelf.id },
            doc! { "$set": { "status": "closed" } },
        )
        .must_match()
        .run()
        .await
        .unwrap();
    assert_eq!((report.steps[0].matched, report.attempts), (1, 1));
    let stored = common::stored::<Shelf>(&db, shelf.id).await;
    assert_eq!(stored.status, "closed");
}

#[tokio::test]
async fn entries_after_and_entry_page_read_what_entries_reads() {
    let (db, shelf) = shelf("old_entries").await;
    let first: EntryPage<Scan> = ScanBucket::BUCKET
        .entries_after(&db, &shelf.to_ref(), None, 2)
        .await
        .unwrap();
    assert_eq!(first.items, [Scan { at: 0 }, Scan { at: 1 }]);
    let rest = ScanBucket::BUCKET
        .entries_after(&db, &shelf.to_ref(), first.next.as_ref(), 2)
        .await
        .unwrap();
    let new: Page<Scan, EntryCursor> = ScanBucket::BUCKET
        .entries(&db, &shelf.to_ref())
        .after(first.next.clone())
        .limit(2)
        .await
        .unwrap();
    assert_eq!(rest.items, [Scan { at: 2 }]);
    assert_eq!(rest, new);
}

#[tokio::test]
async fn compare_and_set_bool_reads_a_lost_race_as_false() {
    let (db, shelf) = shelf("old_cas").await;
    let won = shelf
        .to_ref()
        .compare_and_set_bool(
            &db,
            "status",
            "open",
            doc! { "$set": { "status": "closed" } },
        )
        .await
        .unwrap();
    assert!(won);
    let lost = shelf
        .to_ref()
        .compare_and_set_bool(
            &db,
            "status",
            "open",
            doc! { "$set": { "status": "again" } },
        )
        .await
        .unwrap();
    assert!(!lost, "a lost race is Ok(false) in the old form");
    // and an error that is not a lost race is still an error
    let refused = shelf
        .to_ref()
        .compare_and_set_bool(&db, "_id", "open", doc! { "$set": { "status": "x" } })
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidArgument { argument, .. } if argument == "field"),
        "{refused:#?}"
    );
    // the new form: the same lost race as ConditionFailed
    let error = shelf
        .to_ref()
        .compare_and_set(
            &db,
            field!(Shelf, status),
            "open",
            doc! { "$set": { "status": "again" } },
        )
        .await
        .unwrap_err();
    assert!(error.is_condition_failed(), "{error:#?}");
    // the string form of the field: the same lost race, and the same win
    let by_name = shelf
        .to_ref()
        .compare_and_set_by_name(&db, "status", "open", doc! { "$set": { "status": "x" } })
        .await
        .unwrap_err();
    assert!(by_name.is_condition_failed(), "{by_name:#?}");
    shelf
        .to_ref()
        .compare_and_set_by_name(
            &db,
            "status",
            "closed",
            doc! { "$set": { "status": "open" } },
        )
        .await
        .expect("the stored value is `closed`: won");
    let stored = common::stored::<Shelf>(&db, shelf.id).await;
    assert_eq!(stored.status, "open");
}

#[tokio::test]
async fn reconcile_dry_run_counts_as_the_builder_does() {
    let (db, _) = shelf("old_reconcile").await;
    let old = schema().reconcile_dry_run(&db, true).await.unwrap();
    let new = schema().reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(format!("{old:?}"), format!("{new:?}"));
}
