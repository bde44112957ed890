//! Issue 49, item 5: nothing left behind. Live: a part stored under its owner's `_id`
//! (`same_id_as`) goes with its owner whatever path deletes the owner (`Counter::delete`,
//! `Subset::delete`, `Transaction::delete_one` and `delete_many`, the `dedupe` migration step);
//! `reconcile` deletes the orphan parts that `audit` counts; a child whose parent does not exist
//! is refused by `Counter::add`, `Subset::add`, `add_then_update` and `Transaction::add`
//! (`Error::MissingParent`, nothing written), stored only with `.allow_missing_parent()`, and
//! counted by `audit` per relationship; a counter that disagrees is reported as a counter.

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "shelves")]
pub struct Shelf {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    #[counter(of = Book)]
    pub book_count: i64,
    #[subset(of = Book, max = 2, sort = "-added")]
    pub newest: Vec<BookPreview>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "books")]
#[index(keys(shelf_id = 1, added = -1))]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    pub added: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BookPreview {
    pub added: i64,
}

impl From<&Book> for BookPreview {
    fn from(book: &Book) -> Self {
        BookPreview { added: book.added }
    }
}

/// The scan of a book: a part under the book's `_id`.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "book_scans", same_id_as = Book, optional_part)]
pub struct BookScan {
    #[serde(rename = "_id")]
    pub id: i64,
    pub pages: i32,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Shelf>()
        .model::<Book>()
        .model::<BookScan>()
        .build()
        .unwrap()
}

fn shelf(id: i64) -> Shelf {
    Shelf {
        id,
        name: format!("shelf {id}"),
        book_count: 0,
        newest: Vec::new(),
    }
}

fn book(id: i64, shelf: i64) -> Book {
    Book {
        id,
        shelf_id: Ref::new(shelf),
        added: id,
    }
}

async fn count(db: &mongodb::Database, collection: &str, filter: BsonDocument) -> u64 {
    db.collection::<BsonDocument>(collection)
        .count_documents(filter)
        .await
        .unwrap()
}

async fn scan(db: &mongodb::Database, id: i64) {
    BookScan::collection(db)
        .insert_one(BookScan { id, pages: 100 })
        .await
        .unwrap();
}

async fn stored_shelf(db: &mongodb::Database, id: i64) -> Shelf {
    Shelf::collection(db)
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn every_path_that_deletes_a_book_deletes_its_scan_in_the_same_transaction() {
    let db = mongo_schema_testkit::database("left_behind_parts").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    Shelf::collection(&db).insert_one(shelf(1)).await.unwrap();
    for id in 1..=5 {
        Shelf::BOOK_COUNT.add(&db, &book(id, 1)).await.unwrap();
        scan(&db, id).await;
    }
    assert_eq!(count(&db, "book_scans", doc! {}).await, 5);

    // the caller's transaction, aborted: the book and its scan stay
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let deleted = Shelf::BOOK_COUNT
        .delete(&db, &Ref::new(1))
        .session(&mut session)
        .await
        .unwrap();
    assert!(deleted);
    session.abort_transaction().await.unwrap();
    assert_eq!(count(&db, "books", doc! { "_id": 1 }).await, 1);
    assert_eq!(count(&db, "book_scans", doc! { "_id": 1 }).await, 1);

    // a counter's delete: the book, its scan, and one off the count
    assert!(Shelf::BOOK_COUNT.delete(&db, &Ref::new(1)).await.unwrap());
    assert_eq!(count(&db, "books", doc! { "_id": 1 }).await, 0);
    assert_eq!(count(&db, "book_scans", doc! { "_id": 1 }).await, 0);
    assert_eq!(stored_shelf(&db, 1).await.book_count, 4);
    // a subset's delete
    assert!(Shelf::NEWEST.delete(&db, &Ref::new(2)).await.unwrap());
    assert_eq!(count(&db, "book_scans", doc! { "_id": 2 }).await, 0);
    // a transaction's delete_one and delete_many
    schema
        .transaction(&db)
        .delete_one::<Book>(doc! { "_id": 3 })
        .await
        .unwrap();
    assert_eq!(count(&db, "book_scans", doc! { "_id": 3 }).await, 0);
    let report = schema
        .transaction(&db)
        .delete_many::<Book>(doc! { "_id": { "$in": [4, 99] } })
        .await
        .unwrap();
    assert_eq!(report.steps[0].changed, 1, "{report:?}");
    assert_eq!(count(&db, "book_scans", doc! { "_id": 4 }).await, 0);
    // the control: the book no path deleted keeps its scan
    assert_eq!(count(&db, "books", doc! { "_id": 5 }).await, 1);
    assert_eq!(count(&db, "book_scans", doc! { "_id": 5 }).await, 1);
    let audit = schema.audit(&db).await.unwrap();
    let scans = audit.parts.iter().find(|p| p.part == "book_scans").unwrap();
    assert_eq!(scans.orphans, 0, "{audit}");
}

#[tokio::test]
async fn reconcile_deletes_the_orphan_parts_that_audit_counts() {
    let db = mongo_schema_testkit::database("left_behind_reconcile").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    Shelf::collection(&db).insert_one(shelf(1)).await.unwrap();
    Shelf::BOOK_COUNT.add(&db, &book(1, 1)).await.unwrap();
    scan(&db, 1).await;
    // two scans whose book was deleted by a path outside the library
    scan(&db, 7).await;
    scan(&db, 8).await;
    let audit = schema.audit(&db).await.unwrap();
    let scans = audit.parts.iter().find(|p| p.part == "book_scans").unwrap();
    assert_eq!(scans.orphans, 2, "{audit}");
    assert!(!audit.is_clean());

    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    let parts = dry.parts.iter().find(|p| p.part == "book_scans").unwrap();
    assert_eq!((parts.orphans, parts.deleted), (2, 0), "{dry}");
    assert_eq!(
        count(&db, "book_scans", doc! {}).await,
        3,
        "a dry run deletes nothing"
    );

    let repaired = schema.reconcile(&db).await.unwrap();
    let parts = repaired
        .parts
        .iter()
        .find(|p| p.part == "book_scans")
        .unwrap();
    assert_eq!((parts.orphans, parts.deleted), (2, 2), "{repaired}");
    assert_eq!(
        count(&db, "book_scans", doc! { "_id": { "$in": [7, 8] } }).await,
        0
    );
    // the control: the scan of a book that exists stays
    assert_eq!(count(&db, "book_scans", doc! { "_id": 1 }).await, 1);
    let audit = schema.audit(&db).await.unwrap();
    assert!(audit.is_clean(), "{audit}");
}

#[tokio::test]
async fn a_book_on_a_shelf_that_does_not_exist_is_refused_and_nothing_is_written() {
    let db = mongo_schema_testkit::database("left_behind_parents").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    Shelf::collection(&db).insert_one(shelf(1)).await.unwrap();
    let is_missing_shelf_9 = |result: &mongo_schema::Result<()>| {
        matches!(result, Err(Error::MissingParent { collection, child, parent, .. })
            if collection == "shelves" && child == "books" && **parent == Bson::Int64(9))
    };

    let counted = Shelf::BOOK_COUNT.add(&db, &book(1, 9)).await;
    assert!(is_missing_shelf_9(&counted), "{counted:?}");
    let shown = Shelf::NEWEST.add(&db, &book(1, 9)).await;
    assert!(is_missing_shelf_9(&shown), "{shown:?}");
    let both = Shelf::BOOK_COUNT
        .add_with(&db, &book(1, 9), &[&Shelf::NEWEST])
        .await;
    assert!(is_missing_shelf_9(&both), "{both:?}");
    let two_writes = Shelf::NEWEST.add_then_update(&db, &book(1, 9)).await;
    assert!(is_missing_shelf_9(&two_writes), "{two_writes:?}");
    let in_transaction = schema
        .transaction(&db)
        .add(&Shelf::BOOK_COUNT, &book(1, 9))
        .await
        .map(|_| ());
    assert!(is_missing_shelf_9(&in_transaction), "{in_transaction:?}");
    // in the caller's transaction: refused before the child is written
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let in_session = Shelf::BOOK_COUNT
        .add(&db, &book(1, 9))
        .session(&mut session)
        .await;
    assert!(is_missing_shelf_9(&in_session), "{in_session:?}");
    session.abort_transaction().await.unwrap();
    assert_eq!(count(&db, "books", doc! {}).await, 0, "nothing was written");

    // the control: the same book on a shelf that exists is stored and counted
    Shelf::BOOK_COUNT
        .add_with(&db, &book(1, 1), &[&Shelf::NEWEST])
        .await
        .unwrap();
    let stored = stored_shelf(&db, 1).await;
    assert_eq!((stored.book_count, stored.newest.len()), (1, 1));

    // the old behaviour, asked for: stored, counted nowhere
    Shelf::BOOK_COUNT
        .add(&db, &book(2, 9))
        .allow_missing_parent()
        .await
        .unwrap();
    schema
        .transaction(&db)
        .add(&Shelf::BOOK_COUNT, &book(3, 9))
        .allow_missing_parent()
        .await
        .unwrap();
    assert_eq!(count(&db, "books", doc! { "shelf_id": 9 }).await, 2);

    // `audit` counts them once for the relationship both the counter and the subset keep
    let audit = schema.audit(&db).await.unwrap();
    assert!(!audit.is_clean());
    let books: Vec<_> = audit
        .children
        .iter()
        .filter(|c| c.child == "books")
        .collect();
    assert_eq!(books.len(), 1, "{:?}", audit.children);
    assert_eq!(books[0].parent, "shelves");
    assert_eq!(books[0].field, "shelf_id");
    assert_eq!(books[0].missing_parent, 2);
    assert_eq!(
        books[0].missing_parent_ids,
        [Bson::Int64(2), Bson::Int64(3)]
    );
    let mut kept_by = books[0].kept_by.clone();
    kept_by.sort();
    assert_eq!(kept_by, ["shelves.book_count", "shelves.newest"]);
    let text = audit.to_string();
    // display-text: the operator's audit names the children and their relationship
    assert!(
        text.contains("children without their parent: 2 of `books` name a `shelves` parent"),
        "{text}"
    );
}

#[tokio::test]
async fn audit_reports_a_count_that_disagrees_as_a_counter() {
    let db = mongo_schema_testkit::database("left_behind_counter_heading").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    Shelf::collection(&db).insert_one(shelf(1)).await.unwrap();
    Shelf::BOOK_COUNT
        .add_with(&db, &book(1, 1), &[&Shelf::NEWEST])
        .await
        .unwrap();
    let clean = schema.audit(&db).await.unwrap();
    assert!(clean.is_clean(), "{clean}");
    // a count set wrong by hand
    Shelf::collection(&db)
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "book_count": 5_i64 } })
        .await
        .unwrap();
    let text = schema.audit(&db).await.unwrap().to_string();
    // display-text: a counter has its own heading, not the subsets'
    assert!(
        text.contains("- counters that disagree with their children's number: shelves.book_count"),
        "{text}"
    );
    // display-text: and it is not listed among the subsets
    assert!(!text.contains("subsets that disagree"), "{text}");
    // the control: previews set wrong are a subset's disagreement
    Shelf::collection(&db)
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "newest": [] } })
        .await
        .unwrap();
    let text = schema.audit(&db).await.unwrap().to_string();
    // display-text: the subset under its own heading
    assert!(
        text.contains("- subsets that disagree with their children: shelves.newest"),
        "{text}"
    );
}

mod dedupe {
    /// `Account` (under the unique index `#[index(...)]` declares, if any) and its optional
    /// `Photo` part, stored under the account's `_id`.
    macro_rules! account_and_photo {
        ($(#[$($index:tt)*])?) => {
            use mongo_schema::prelude::*;
            use serde::{Deserialize, Serialize};

            #[derive(Document, Serialize, Deserialize, Debug, Clone)]
            #[collection(name = "accounts")]
            $(#[$($index)*])?
            pub struct Account {
                #[serde(rename = "_id")]
                pub id: i64,
                pub email: String,
            }

            #[derive(Document, Serialize, Deserialize, Debug, Clone)]
            #[collection(name = "account_photos", same_id_as = Account, optional_part)]
            pub struct Photo {
                #[serde(rename = "_id")]
                pub id: i64,
                pub bytes: i32,
            }
        };
    }

    pub mod v1 {
        account_and_photo!();

        pub fn schema() -> Schema {
            Schema::new()
                .model::<Account>()
                .model::<Photo>()
                .version(1)
                .build()
                .unwrap()
        }
    }

    pub mod v2 {
        use mongo_schema::migrate::{self, Keep};

        account_and_photo!(#[index(keys(email = 1), unique)]);

        pub fn schema() -> Schema {
            Schema::new()
                .model::<Account>()
                .model::<Photo>()
                .version(2)
                .migration(
                    2,
                    "one account per email",
                    migrate::dedupe::<Account>(field!(Account, email), Keep::Oldest),
                )
                .build()
                .unwrap()
        }
    }
}

#[tokio::test]
async fn dedupe_deletes_the_parts_of_the_duplicates_it_removes_and_keeps_them_aside() {
    let db = mongo_schema_testkit::database("left_behind_dedupe").await;
    dedupe::v1::schema().apply(&db).await.unwrap();
    for (id, email) in [(1, "a@x"), (2, "a@x"), (3, "a@x"), (4, "b@x")] {
        db.collection::<BsonDocument>("accounts")
            .insert_one(doc! { "_id": id as i64, "email": email })
            .await
            .unwrap();
        db.collection::<BsonDocument>("account_photos")
            .insert_one(doc! { "_id": id as i64, "bytes": 10 })
            .await
            .unwrap();
    }
    dedupe::v2::schema().apply(&db).await.unwrap();
    assert_eq!(count(&db, "accounts", doc! {}).await, 2);
    // the kept account (the oldest `_id`) and the other email keep their photos
    assert_eq!(
        count(
            &db,
            "account_photos",
            doc! { "_id": { "$in": [1_i64, 4_i64] } }
        )
        .await,
        2
    );
    // the duplicates' photos went with them, and are kept aside beside them
    assert_eq!(
        count(
            &db,
            "account_photos",
            doc! { "_id": { "$in": [2_i64, 3_i64] } }
        )
        .await,
        0
    );
    assert_eq!(count(&db, "account_photos_dedupe_2", doc! {}).await, 2);
    assert_eq!(count(&db, "accounts_dedupe_2", doc! {}).await, 2);
    let audit = dedupe::v2::schema().audit(&db).await.unwrap();
    // the archives are the library's own, not unknown collections
    assert!(audit.unknown_collections.is_empty(), "{audit}");
    assert!(audit.parts.iter().all(|p| p.orphans == 0), "{audit}");
}
