//! `Schema::transaction`: the library's helpers and the service's own writes in one transaction
//! (the library-lending trial: a loan added to its member's subset and the book's
//! `copies_available` decremented, or neither), with the commands a hand-written transaction
//! sends, and nothing written when any part fails.

mod common;

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    #[subset(of = Loan, max = 3, sort = "-loaned_at", count = "active_count")]
    pub active_loans: Vec<LoanPreview>,
    pub active_count: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LoanPreview {
    pub title: String,
    pub loaned_at: DateTime,
}

impl From<&Loan> for LoanPreview {
    fn from(loan: &Loan) -> Self {
        LoanPreview {
            title: loan.book.title.clone(),
            loaned_at: loan.loaned_at,
        }
    }
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub title: String,
    #[schema(minimum = 0)]
    pub copies_available: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "loans")]
#[index(keys(member_id = 1, loaned_at = -1))]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    #[extended_ref(to = Book, fields = "title", sync = "transactional")]
    pub book: LoanBook,
    pub loaned_at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "desk_log")]
pub struct DeskLog {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub line: String,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Member>()
        .model::<Book>()
        .model::<Loan>()
        .model::<DeskLog>()
        .build()
        .unwrap()
}

struct Library {
    db: mongodb::Database,
    log: mongo_schema_testkit::CommandLog,
    member: Member,
    book: Book,
}

async fn library(prefix: &str, copies: i32) -> Library {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let plain = mongo_schema_testkit::database(prefix).await;
    let db = client.database(plain.name());
    schema().apply(&db).await.unwrap();
    let member = Member {
        id: ObjectId::new(),
        name: "ada".into(),
        active_loans: vec![],
        active_count: 0,
    };
    Member::collection(&db).insert_one(&member).await.unwrap();
    let book = Book {
        id: ObjectId::new(),
        title: "Dune".into(),
        copies_available: copies,
    };
    Book::collection(&db).insert_one(&book).await.unwrap();
    Library {
        db,
        log,
        member,
        book,
    }
}

fn loan(library: &Library, at: i64) -> Loan {
    Loan {
        id: ObjectId::new(),
        member_id: library.member.to_ref(),
        book: LoanBook::from(&library.book),
        loaned_at: DateTime::from_millis(at),
    }
}

/// A transaction of the caller's own, in a session of the library's client, in which the caller
/// has written the desk log line `line`.
async fn callers_transaction(library: &Library, line: &str) -> mongodb::ClientSession {
    let mut s = library.db.client().start_session().await.unwrap();
    s.start_transaction().await.unwrap();
    DeskLog::collection(&library.db)
        .insert_one(DeskLog {
            id: ObjectId::new(),
            line: line.into(),
        })
        .session(&mut s)
        .await
        .unwrap();
    s
}

/// The book's own compare-and-set of its copies, outside any transaction of the schema's:
/// `expected` copies become `new`.
macro_rules! copies_compare_and_set {
    ($library:expr, $expected:expr, $new:expr) => {
        $library.book.to_ref().compare_and_set(
            &$library.db,
            field!(Book, copies_available),
            &$expected,
            doc! { "$set": { "copies_available": $new } },
        )
    };
}

/// Lends `loan`: the loan, its preview and count, and one copy fewer, together.
async fn lend(
    library: &Library,
    loan: &Loan,
) -> mongo_schema::Result<mongo_schema::TransactionReport> {
    lend_in(library, loan, None).await
}

/// [`lend`], in `session` (the caller's) when there is one.
async fn lend_in(
    library: &Library,
    loan: &Loan,
    session: Option<&mut mongodb::ClientSession>,
) -> mongo_schema::Result<mongo_schema::TransactionReport> {
    let schema = schema();
    let lending = schema
        .transaction(&library.db)
        .add(&Member::ACTIVE_LOANS, loan)
        .update_one::<Book>(
            doc! { "_id": library.book.id, "copies_available": { "$gt": 0 } },
            doc! { "$inc": { "copies_available": -1 } },
        )
        .must_match();
    match session {
        Some(session) => lending.session(session).await,
        None => lending.await,
    }
}

/// The session and the transaction number `command` was sent with.
fn transaction_of(
    command: &mongo_schema_testkit::StartedCommand,
) -> (
    Option<mongo_schema::bson::Bson>,
    Option<mongo_schema::bson::Bson>,
) {
    (
        command.command.get("lsid").cloned(),
        command.command.get("txnNumber").cloned(),
    )
}

async fn state(library: &Library) -> (Member, Book, u64) {
    let member: Member = common::stored(&library.db, library.member.id).await;
    let book: Book = common::stored(&library.db, library.book.id).await;
    let loans = Loan::collection(&library.db)
        .count_documents(doc! {})
        .await
        .unwrap();
    (member, book, loans)
}

#[tokio::test]
async fn a_subset_add_and_the_services_own_write_commit_together_in_the_hand_written_commands() {
    let library = library("tx_lend", 1).await;
    let first = loan(&library, 1_000);
    library.log.clear();
    let report = lend(&library, &first).await.unwrap();
    // what a hand-written transaction sends: the loan, the member's subset, the book, commit
    let commands = library.log.commands();
    let names: Vec<&str> = commands
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| *n != "endSessions")
        .collect();
    assert_eq!(names, ["insert", "update", "update", "commitTransaction"]);
    let transaction = transaction_of;
    let first_command = transaction(&commands[0]);
    assert!(first_command.1.is_some(), "sent in a transaction");
    assert!(
        commands[..4]
            .iter()
            .all(|c| transaction(c) == first_command),
        "one session, one transaction number"
    );
    assert_eq!(report.steps.len(), 3, "{report:?}");
    assert_eq!(report.steps[2].label, "update_one books");
    assert_eq!((report.steps[2].matched, report.steps[2].changed), (1, 1));

    let (member, book, loans) = state(&library).await;
    assert_eq!(member.active_count, 1);
    assert_eq!(member.active_loans[0].title, "Dune");
    assert_eq!(book.copies_available, 0);
    assert_eq!(loans, 1);

    // the control: no copy left, so the filter matches nothing, and the loan, its preview and
    // the count are not written either
    let second = loan(&library, 2_000);
    let error = lend(&library, &second).await.unwrap_err();
    assert!(
        matches!(&error, Error::ConditionFailed { collection, label, position: Some(p), .. }
            if collection == "books" && label == "update_one books" && (p.number, p.of) == (3, 3)),
        "{error:#?}"
    );
    assert!(error.is_condition_failed() && !error.is_transient());
    let (member, book, loans) = state(&library).await;
    assert_eq!(member.active_count, 1, "the count was not incremented");
    assert_eq!(
        member.active_loans.len(),
        1,
        "no preview of the refused loan"
    );
    assert_eq!(book.copies_available, 0);
    assert_eq!(loans, 1, "the refused loan was not inserted");
}

#[tokio::test]
async fn a_write_the_validator_refuses_rolls_back_the_helpers_writes() {
    let library = library("tx_invalid", 0).await;
    let refused = loan(&library, 1_000);
    library.log.clear();
    // without the filter on copies, the decrement breaks the book's `minimum: 0`
    let error = schema()
        .transaction(&library.db)
        .add(&Member::ACTIVE_LOANS, &refused)
        .update_one::<Book>(
            doc! { "_id": library.book.id },
            doc! { "$inc": { "copies_available": -1 } },
        )
        .await
        .unwrap_err();
    let validation = error
        .as_validation()
        .unwrap_or_else(|| panic!("a validation error: {error}"));
    assert!(
        validation
            .failures
            .iter()
            .any(|f| f.path == "copies_available" && f.rule == "minimum"),
        "{validation}"
    );
    assert_eq!(validation.collection.as_deref(), Some("books"));
    // the helpers' writes were sent, in the transaction the refused write was in, and that
    // transaction was aborted, never committed
    let commands = library.log.commands();
    let sent: Vec<(&str, &str)> = commands
        .iter()
        .filter(|c| c.name != "endSessions")
        .map(|c| {
            let target = c.command.get_str(&c.name).unwrap_or("");
            (c.name.as_str(), target)
        })
        .collect();
    assert_eq!(
        sent,
        [
            ("insert", "loans"),
            ("update", "members"),
            ("update", "books"),
            ("abortTransaction", "")
        ],
        "{commands:?}"
    );
    let transaction = transaction_of;
    let first = transaction(&commands[0]);
    assert!(
        first.1.is_some(),
        "sent in a transaction: {:?}",
        commands[0]
    );
    assert_eq!(commands[0].command.get_bool("startTransaction"), Ok(true));
    assert!(
        commands[..4].iter().all(|c| transaction(c) == first),
        "one session, one transaction number: {commands:?}"
    );
    assert_eq!(library.log.count("commitTransaction"), 0);
    let inserted = commands[0].command.get_array("documents").unwrap();
    assert_eq!(
        inserted[0].as_document().unwrap().get_object_id("_id"),
        Ok(refused.id),
        "the loan was sent"
    );
    let (member, book, loans) = state(&library).await;
    assert_eq!(
        (member.active_count, loans, book.copies_available),
        (0, 0, 0)
    );
}

#[tokio::test]
#[allow(deprecated)] // the string form of compare_and_set, whose operator-shaped value is refused
async fn update_source_compare_and_set_and_inserts_compose() {
    let library = library("tx_compose", 2).await;
    lend(&library, &loan(&library, 1_000)).await.unwrap();
    let entry = DeskLog {
        id: ObjectId::new(),
        line: "Dune renamed".into(),
    };
    let report = schema()
        .transaction(&library.db)
        .update_source::<Book>(
            &library.book.id,
            doc! { "$set": { "title": "Dune (1965)" } },
        )
        .insert_one(&entry)
        .await
        .unwrap();
    // the source and its one transactional copy; the log line
    assert_eq!((report.steps[0].matched, report.steps[0].changed), (1, 2));
    assert_eq!(report.steps[1].label, "insert into desk_log");
    let stored = Loan::collection(&library.db)
        .find_one(doc! {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.book.title, "Dune (1965)", "the copy was rewritten");
    assert_eq!(
        DeskLog::collection(&library.db)
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );

    // a compare-and-set that lost aborts everything before it: the rename and the log line
    let lost = schema()
        .transaction(&library.db)
        .update_source::<Book>(&library.book.id, doc! { "$set": { "title": "Dune!" } })
        .insert_one(&DeskLog {
            id: ObjectId::new(),
            line: "not written".into(),
        })
        .compare_and_set(
            &library.book.to_ref(),
            field!(Book, copies_available),
            &5,
            doc! { "$set": { "copies_available": 4 } },
        )
        .await
        .unwrap_err();
    let in_transaction = match &lost {
        Error::ConditionFailed {
            collection,
            label,
            position: Some(p),
            ..
        } if collection == "books" && (p.number, p.of) == (3, 3) => label.clone(),
        other => panic!("expected a lost condition at write 3 of 3, got {other:#?}"),
    };
    assert_eq!(in_transaction, "compare_and_set books.copies_available");
    // the same race lost standalone reads the same: the same variant and label, no position
    let alone = copies_compare_and_set!(library, 5, 4).await.unwrap_err();
    assert!(
        matches!(&alone, Error::ConditionFailed { collection, label, position: None, .. }
            if collection == "books" && *label == in_transaction),
        "{alone:#?}"
    );
    // the control of both: with the value it holds, the same compare-and-set wins
    copies_compare_and_set!(library, 1, 1)
        .await
        .expect("the expected value holds: won");
    let stored = Loan::collection(&library.db)
        .find_one(doc! {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.book.title, "Dune (1965)");
    let book: Book = common::stored(&library.db, library.book.id).await;
    assert_eq!(
        (book.title.as_str(), book.copies_available),
        ("Dune (1965)", 1)
    );
    assert_eq!(
        library
            .db
            .collection::<BsonDocument>("desk_log")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1,
        "the second log line was not written"
    );

    // a value that looks like an operator is refused before anything is sent
    library.log.clear();
    let hostile = schema()
        .transaction(&library.db)
        .insert_one(&DeskLog {
            id: ObjectId::new(),
            line: "sent?".into(),
        })
        // the string form (deprecated) is what could carry an operator: the typed form takes an `i32`
        .compare_and_set_by_name(
            &library.book.to_ref(),
            "copies_available",
            doc! { "$gt": 0 },
            doc! { "$set": { "copies_available": 0 } },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&hostile, Error::UnsafeValue { what, .. } if what == "the expected value"),
        "{hostile:#?}"
    );
    assert!(
        library.log.names().is_empty(),
        "nothing sent: {:?}",
        library.log.names()
    );
}

/// A failed condition inside the caller's own transaction (`.session(&mut s)`) aborts that
/// transaction: the helper's earlier writes and the caller's own never commit, and the error
/// says so. The caller commits anyway, as code that caught the error and carried on would: the
/// commit is refused, and nothing of the transaction is stored. The control: the same
/// transaction with a copy left commits everything.
#[tokio::test]
async fn a_failed_condition_aborts_the_callers_transaction() {
    use mongo_schema::error::Rollback;

    let library = library("tx_caller_abort", 0).await;
    let client = library.db.client().clone();
    let desk_lines = || async {
        library
            .db
            .collection::<BsonDocument>("desk_log")
            .count_documents(doc! {})
            .await
            .unwrap()
    };

    // no copy left: the loan, its preview and count, then the book's update that must match
    let mut s = callers_transaction(&library, "the caller's own write").await;
    let error = lend_in(&library, &loan(&library, 1_000), Some(&mut s))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::ConditionFailed {
                position: Some(p),
                rollback: Rollback::CallerTransactionAborted,
                ..
            } if (p.number, p.of) == (3, 3)
        ),
        "{error:#?}"
    );
    // committing anyway commits nothing: the transaction is over
    assert!(s.commit_transaction().await.is_err());
    let (member, book, loans) = state(&library).await;
    assert_eq!(
        (
            member.active_count,
            member.active_loans.len(),
            book.copies_available,
            loans
        ),
        (0, 0, 0, 0),
        "the loan, its preview and count were not committed"
    );
    assert_eq!(
        desk_lines().await,
        0,
        "the caller's own write was not committed"
    );

    // the same through a standalone compare-and-set in the caller's transaction
    let mut s = callers_transaction(&library, "before the lost race").await;
    let lost = copies_compare_and_set!(library, 5, 4)
        .session(&mut s)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &lost,
            Error::ConditionFailed {
                position: None,
                rollback: Rollback::CallerTransactionAborted,
                ..
            }
        ),
        "{lost:#?}"
    );
    assert!(s.commit_transaction().await.is_err());
    assert_eq!(desk_lines().await, 0);

    // a session with no transaction: nothing to abort, and the error says the earlier writes
    // stay (the loan and its parent update were sent one by one)
    let mut plain = client.start_session().await.unwrap();
    let error = lend_in(&library, &loan(&library, 2_000), Some(&mut plain))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::ConditionFailed {
                rollback: Rollback::EarlierWritesKept,
                ..
            }
        ),
        "{error:#?}"
    );
    let (member, _, loans) = state(&library).await;
    assert_eq!(
        (member.active_count, loans),
        (1, 1),
        "written one by one, kept"
    );

    // the control: a copy left, the same transaction commits the helper's and the caller's
    // writes together
    Book::collection(&library.db)
        .update_one(
            doc! { "_id": library.book.id },
            doc! { "$set": { "copies_available": 1 } },
        )
        .await
        .unwrap();
    let mut s = callers_transaction(&library, "lent").await;
    lend_in(&library, &loan(&library, 3_000), Some(&mut s))
        .await
        .unwrap();
    s.commit_transaction().await.unwrap();
    let (member, book, loans) = state(&library).await;
    assert_eq!(
        (member.active_count, book.copies_available, loans),
        (2, 0, 2)
    );
    assert_eq!(desk_lines().await, 1);
}
