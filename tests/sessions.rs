//! The library's helpers inside the service's own transaction: the service starts a session and
//! a transaction with the driver, hands the session to each helper with `.session(&mut s)`,
//! and commits (or aborts) itself. A subset add, a compare-and-set, an `update_source` fan-out,
//! a bucket append and the service's own insert then commit all together, or not at all; page
//! reads, lookups, resolves and bucket pages read inside the transaction (they see its own
//! writes). The command log shows every helper's command carrying the caller's `lsid` and
//! `txnNumber`. The control: the same helpers without the session write at once, visible before
//! the commit and left in place by an abort.

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use mongo_schema_testkit::{CommandLog, StartedCommand};
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
    #[embed(max = 3, cap)]
    pub notes: Vec<String>,
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
    pub status: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "loans")]
#[index(keys(member_id = 1, loaned_at = -1))]
#[query(name = "loans_of", eq(member_id), sort(loaned_at = -1), limit = 10)]
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

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Visit {
    pub at: i64,
    pub desk: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "visits")]
#[bucket(parent = member_id, entries = visits, count = count, key = "at", first = first_at, last = last_at)]
pub struct VisitBucket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    #[embed(max = 10)]
    pub visits: Vec<Visit>,
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Member>()
        .model::<Book>()
        .model::<Loan>()
        .model::<DeskLog>()
        .model::<VisitBucket>()
        .build()
        .unwrap()
}

struct Desk {
    client: mongodb::Client,
    db: mongodb::Database,
    log: CommandLog,
    schema: Schema,
    member: Member,
    book: Book,
}

async fn desk(prefix: &str) -> Desk {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let plain = mongo_schema_testkit::database(prefix).await;
    let db = client.database(plain.name());
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let member = Member {
        id: ObjectId::new(),
        name: "ada".into(),
        active_loans: vec![],
        active_count: 0,
        notes: vec![],
    };
    Member::collection(&db).insert_one(&member).await.unwrap();
    let book = Book {
        id: ObjectId::new(),
        title: "Dune".into(),
        status: "on_shelf".into(),
    };
    Book::collection(&db).insert_one(&book).await.unwrap();
    Desk {
        client,
        db,
        log,
        schema,
        member,
        book,
    }
}

fn loan(desk: &Desk, at: i64) -> Loan {
    Loan {
        id: ObjectId::new(),
        member_id: desk.member.to_ref(),
        book: LoanBook::from(&desk.book),
        loaned_at: DateTime::from_millis(at),
    }
}

fn entry(line: &str) -> DeskLog {
    DeskLog {
        id: ObjectId::new(),
        line: line.into(),
    }
}

/// The member's visit at the north desk, at 1.
fn north_visit() -> Visit {
    Visit {
        at: 1,
        desk: "north".into(),
    }
}

fn lend_update() -> BsonDocument {
    doc! { "$set": { "status": "lent" } }
}

/// Everything every collection holds, read outside any session (what other readers see).
#[derive(Debug, PartialEq)]
struct Seen {
    loans: Vec<Loan>,
    member: Member,
    book: Option<Book>,
    desk_log: u64,
    visits: u64,
}

async fn seen(desk: &Desk) -> Seen {
    let loans = common::all(Loan::collection(&desk.db).find(doc! {})).await;
    let member = common::stored::<Member>(&desk.db, desk.member.id).await;
    let book = Book::collection(&desk.db)
        .find_one(doc! { "_id": desk.book.id })
        .await
        .unwrap();
    let desk_log = DeskLog::collection(&desk.db)
        .count_documents(doc! {})
        .await
        .unwrap();
    let visits = VisitBucket::collection(&desk.db)
        .count_documents(doc! {})
        .await
        .unwrap();
    Seen {
        loans,
        member,
        book,
        desk_log,
        visits,
    }
}

/// The state before any of the steps: the member and the book as inserted, nothing else.
fn untouched(desk: &Desk) -> Seen {
    Seen {
        loans: vec![],
        member: desk.member.clone(),
        book: Some(desk.book.clone()),
        desk_log: 0,
        visits: 0,
    }
}

fn session_of(c: &StartedCommand) -> (Option<Bson>, Option<Bson>) {
    (
        c.command.get("lsid").cloned(),
        c.command.get("txnNumber").cloned(),
    )
}

/// The commands sent since the log was cleared, as (name, target collection), without the
/// driver's own session bookkeeping.
fn sent(log: &CommandLog) -> Vec<StartedCommand> {
    log.commands()
        .into_iter()
        .filter(|c| c.name != "endSessions")
        .collect()
}

fn names(commands: &[StartedCommand]) -> Vec<(String, String)> {
    commands
        .iter()
        .map(|c| {
            let target = c.command.get_str(&c.name).unwrap_or("").to_owned();
            (c.name.clone(), target)
        })
        .collect()
}

/// The steps of one loan, every helper in `session`: the service's own insert, the subset add,
/// the compare-and-set, a rename of the book through `update_source` (its transactional copy
/// in the loan is rewritten), a bucket append; then reads inside the transaction, which see
/// those writes.
async fn steps_in(
    desk: &Desk,
    session: &mut mongodb::ClientSession,
    loan: &Loan,
    expected_status: &str,
) -> mongo_schema::Result<()> {
    let db = &desk.db;
    DeskLog::collection(db)
        .insert_one(entry("ada borrows Dune"))
        .session(&mut *session)
        .await?;
    Member::ACTIVE_LOANS
        .add(db, loan)
        .session(&mut *session)
        .await?;
    desk.book
        .to_ref()
        .compare_and_set(db, field!(Book, status), expected_status, lend_update())
        .session(&mut *session)
        .await?;
    let renamed = desk
        .schema
        .update_source::<Book>(
            db,
            &desk.book.id,
            doc! { "$set": { "title": "Dune (2nd ed.)" } },
        )
        .session(&mut *session)
        .await?;
    assert_eq!(
        renamed.copies_rewritten,
        [("loans.book".to_owned(), 1)],
        "the fan-out saw the loan inserted in the same transaction"
    );
    assert_eq!(renamed.attempts, 1, "the caller's transaction, run once");
    VisitBucket::BUCKET
        .append(db, &desk.member.to_ref(), &north_visit())
        .session(&mut *session)
        .await?;

    // reads inside the transaction see its own writes
    let page = Loan::MEMBER_ID
        .page_in(db, &desk.member.to_ref())
        .session(&mut *session)
        .await?;
    assert_eq!(page.items.len(), 1, "the page read in the transaction");
    assert_eq!(page.items[0].book.title, "Dune (2nd ed.)");
    let joined = Loan::MEMBER_ID
        .lookup_in(db)
        .filter(doc! { "_id": loan.id })
        .session(&mut *session)
        .await?;
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0].one().map(|m| m.active_count), Some(1));
    let book = desk
        .book
        .to_ref()
        .resolve(db)
        .session(&mut *session)
        .await?;
    assert_eq!(book.map(|b| b.status), Some("lent".to_owned()));
    let members = Ref::resolve_all(db, [&desk.member.to_ref()])
        .session(&mut *session)
        .await?;
    assert_eq!(members.documents.len(), 1);
    assert_eq!(members.documents[0].active_loans.len(), 1);
    let visits = VisitBucket::BUCKET
        .entries(db, &desk.member.to_ref())
        .limit(10)
        .session(&mut *session)
        .await?;
    assert_eq!(
        visits.items.len(),
        1,
        "the bucket page read in the transaction"
    );
    Ok(())
}

#[tokio::test]
async fn a_services_own_transaction_commits_every_helpers_writes_with_its_own() {
    let desk = desk("sess_commit").await;
    let first = loan(&desk, 1_000);
    let mut session = desk.client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    desk.log.clear();
    steps_in(&desk, &mut session, &first, "on_shelf")
        .await
        .unwrap();
    let in_transaction = sent(&desk.log);

    // before the commit, nothing is visible outside the transaction
    assert_eq!(
        seen(&desk).await,
        untouched(&desk),
        "nothing before the commit"
    );

    desk.log.clear();
    session.commit_transaction().await.unwrap();
    assert_eq!(desk.log.count("commitTransaction"), 1);

    // every helper's command was sent in the caller's session and transaction, the service's
    // own insert first (it started the transaction)
    assert_eq!(
        names(&in_transaction),
        [
            ("insert", "desk_log"),
            // a subset's add: the parent's update (which finds the parent) before the child
            ("update", "members"),
            ("insert", "loans"),
            ("update", "books"),
            ("findAndModify", "books"),
            ("update", "loans"),
            ("update", "visits"),
            ("find", "loans"),
            ("aggregate", "loans"),
            ("find", "books"),
            ("find", "members"),
            ("aggregate", "visits"),
        ]
        .map(|(n, t)| (n.to_owned(), t.to_owned())),
        "{in_transaction:#?}"
    );
    let callers = session_of(&in_transaction[0]);
    assert_eq!(
        callers.0.as_ref(),
        Some(&Bson::Document(session.id().clone()))
    );
    assert!(
        callers.1.is_some(),
        "the service's insert is in a transaction"
    );
    assert_eq!(
        in_transaction[0].command.get_bool("startTransaction"),
        Ok(true)
    );
    for command in &in_transaction {
        assert_eq!(
            session_of(command),
            callers,
            "the caller's lsid and txnNumber: {command:?}"
        );
    }
    assert_eq!(
        in_transaction
            .iter()
            .filter(|c| c.command.contains_key("startTransaction"))
            .count(),
        1,
        "no helper started a transaction of its own"
    );
    assert!(
        !in_transaction
            .iter()
            .any(|c| c.name == "commitTransaction" || c.name == "abortTransaction"),
        "no helper committed or aborted: the caller does"
    );

    // after the commit, all of it
    let after = seen(&desk).await;
    assert_eq!(after.loans.len(), 1);
    assert_eq!(after.loans[0].book.title, "Dune (2nd ed.)");
    assert_eq!(after.member.active_count, 1);
    assert_eq!(after.member.active_loans.len(), 1);
    assert_eq!(after.member.active_loans[0].title, "Dune");
    let book = after.book.unwrap();
    assert_eq!(
        (book.status.as_str(), book.title.as_str()),
        ("lent", "Dune (2nd ed.)")
    );
    assert_eq!((after.desk_log, after.visits), (1, 1));
}

#[tokio::test]
async fn an_abort_of_the_services_transaction_leaves_nothing_of_the_helpers() {
    let desk = desk("sess_abort").await;
    let first = loan(&desk, 1_000);
    let mut session = desk.client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    steps_in(&desk, &mut session, &first, "on_shelf")
        .await
        .unwrap();
    session.abort_transaction().await.unwrap();
    assert_eq!(
        seen(&desk).await,
        untouched(&desk),
        "every collection as before"
    );

    // a lost compare-and-set inside the caller's transaction is the same typed error as
    // standalone; the library aborts the caller's transaction (the error says so), and the
    // subset add and the insert before it go too
    let mut session = desk.client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let error = steps_in(&desk, &mut session, &loan(&desk, 2_000), "lent")
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::ConditionFailed {
                collection,
                position: None,
                rollback: mongo_schema::error::Rollback::CallerTransactionAborted,
                ..
            } if collection == "books"
        ),
        "{error:#?}"
    );
    assert!(
        session.commit_transaction().await.is_err(),
        "the caller's transaction was aborted"
    );
    assert_eq!(
        seen(&desk).await,
        untouched(&desk),
        "the lost race left nothing"
    );
}

/// The driver's retry loop (what `with_transaction` does): run the body, commit, and run it
/// again on a `TransientTransactionError`. The first attempt meets a write conflict on the
/// member (another writer changes it after the transaction started): the subset add's error
/// carries the label, the caller retries, and the loan lands once.
#[tokio::test]
async fn a_services_retry_loop_reruns_the_helpers_after_a_write_conflict() {
    let desk = desk("sess_retry").await;
    let first = loan(&desk, 1_000);
    let mut session = desk.client.start_session().await.unwrap();
    let mut attempts = 0;
    let mut conflicts = 0;
    loop {
        attempts += 1;
        assert!(attempts <= 5, "the retry loop does not end");
        session.start_transaction().await.unwrap();
        let body = async {
            DeskLog::collection(&desk.db)
                .insert_one(entry("ada borrows Dune"))
                .session(&mut session)
                .await?;
            if attempts == 1 {
                // another writer, outside the transaction, after its snapshot
                Member::collection(&desk.db)
                    .update_one(
                        doc! { "_id": desk.member.id },
                        doc! { "$set": { "name": "ada l." } },
                    )
                    .await?;
            }
            Member::ACTIVE_LOANS
                .add(&desk.db, &first)
                .session(&mut session)
                .await?;
            Ok::<_, Error>(())
        };
        match body.await {
            Ok(()) => {
                session.commit_transaction().await.unwrap();
                break;
            }
            Err(error) if error.contains_label("TransientTransactionError") => {
                conflicts += 1;
                let _ = session.abort_transaction().await;
            }
            Err(error) => panic!("{error:#?}"),
        }
    }
    assert_eq!((attempts, conflicts), (2, 1), "one conflict, one retry");
    let after = seen(&desk).await;
    assert_eq!(after.loans, [first]);
    assert_eq!(after.member.active_count, 1, "counted once");
    assert_eq!(after.member.name, "ada l.");
    assert_eq!(after.desk_log, 1, "the service's own insert once");
}

/// The control: the same helpers without `.session`, while the service's transaction is open,
/// write at once: visible before the commit, and left in place by the abort. (So the tests
/// above would fail if `.session` were ignored.)
#[tokio::test]
async fn without_the_session_the_helpers_write_outside_the_transaction() {
    let desk = desk("sess_control").await;
    let first = loan(&desk, 1_000);
    let db = &desk.db;
    let mut session = desk.client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    desk.log.clear();
    DeskLog::collection(db)
        .insert_one(entry("ada borrows Dune"))
        .session(&mut session)
        .await
        .unwrap();
    Member::ACTIVE_LOANS.add(db, &first).await.unwrap();
    desk.book
        .to_ref()
        .compare_and_set(db, field!(Book, status), "on_shelf", lend_update())
        .await
        .unwrap();
    VisitBucket::BUCKET
        .append(db, &desk.member.to_ref(), &north_visit())
        .await
        .unwrap();
    let commands = sent(&desk.log);
    let callers = session_of(&commands[0]);
    assert!(
        commands[1..]
            .iter()
            .filter(|c| c.name != "commitTransaction")
            .all(|c| session_of(c) != callers),
        "not in the caller's transaction: {commands:#?}"
    );

    let before_commit = seen(&desk).await;
    assert_eq!(
        before_commit.loans,
        std::slice::from_ref(&first),
        "visible before the commit"
    );
    assert_eq!(before_commit.member.active_count, 1);
    assert_eq!(before_commit.book.unwrap().status, "lent");
    assert_eq!(before_commit.visits, 1);
    assert_eq!(
        before_commit.desk_log, 0,
        "only the service's own insert waits"
    );

    session.abort_transaction().await.unwrap();
    let after_abort = seen(&desk).await;
    assert_eq!(
        after_abort.loans,
        [first],
        "the abort cannot take them back"
    );
    assert_eq!(after_abort.member.active_count, 1);
    assert_eq!(after_abort.book.unwrap().status, "lent");
    assert_eq!((after_abort.desk_log, after_abort.visits), (0, 1));
}

/// `Schema::transaction` with the caller's session: its steps are sent once in the caller's
/// transaction and commit with it; an update step takes the driver's options (upsert, array
/// filters, hint).
#[tokio::test]
async fn the_schemas_transaction_joins_a_session_and_takes_the_drivers_update_options() {
    let desk = desk("sess_compose").await;
    let first = loan(&desk, 1_000);
    let fresh = ObjectId::new();
    let mut session = desk.client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    desk.log.clear();
    let report = desk
        .schema
        .transaction(&desk.db)
        .add(&Member::ACTIVE_LOANS, &first)
        .update_one::<Book>(
            doc! { "_id": fresh },
            doc! { "$set": { "title": "Emma", "status": "on_shelf" } },
        )
        .upsert(true)
        .hint(mongodb::options::Hint::Keys(doc! { "_id": 1 }))
        .update_one::<Member>(
            doc! { "_id": desk.member.id },
            doc! { "$set": { "active_loans.$[loan].title": "Dune!" } },
        )
        .array_filters([doc! { "loan.title": "Dune" }])
        .session(&mut session)
        .await
        .unwrap();
    assert_eq!(report.attempts, 1);
    assert_eq!(report.steps[2].label, "update_one books");
    assert_eq!(
        (report.steps[2].matched, report.steps[2].changed),
        (1, 1),
        "upserted"
    );
    let commands = sent(&desk.log);
    let callers = session_of(&commands[0]);
    assert!(callers.1.is_some());
    assert!(
        commands.iter().all(|c| session_of(c) == callers),
        "{commands:#?}"
    );
    assert!(!commands.iter().any(|c| c.name == "commitTransaction"));
    let upsert = &commands[2].command.get_array("updates").unwrap()[0];
    let upsert = upsert.as_document().unwrap();
    assert_eq!(upsert.get_bool("upsert"), Ok(true));
    assert_eq!(upsert.get_document("hint"), Ok(&doc! { "_id": 1 }));
    let filtered = &commands[3].command.get_array("updates").unwrap()[0];
    assert_eq!(
        filtered
            .as_document()
            .unwrap()
            .get_array("arrayFilters")
            .unwrap()[0],
        Bson::Document(doc! { "loan.title": "Dune" })
    );
    assert_eq!(
        seen(&desk).await,
        untouched(&desk),
        "nothing before the commit"
    );

    session.commit_transaction().await.unwrap();
    let after = seen(&desk).await;
    assert_eq!(after.loans, [first]);
    assert_eq!(after.member.active_loans[0].title, "Dune!");
    assert_eq!(
        Book::collection(&desk.db)
            .count_documents(doc! { "_id": fresh })
            .await
            .unwrap(),
        1
    );

    // an update option after a step that is not an update is refused before anything is sent
    desk.log.clear();
    let error = desk
        .schema
        .transaction(&desk.db)
        .insert_one(&entry("x"))
        .upsert(true)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument { argument, .. } if argument == "upsert"),
        "{error:#?}"
    );
    assert!(sent(&desk.log).is_empty(), "nothing sent");
}

/// The other helpers join the caller's transaction too: a subset's child update, delete and a
/// parent's rebuild, `delete_source`, a bounded push; a declared query reads inside it. Before
/// the commit nothing shows outside, an abort leaves nothing, a commit lands all of it.
#[tokio::test]
async fn subset_updates_deletes_rebuilds_source_deletes_pushes_and_queries_join_the_session() {
    let desk = desk("sess_more").await;
    let (kept, dropped) = (loan(&desk, 1_000), loan(&desk, 2_000));
    Member::ACTIVE_LOANS.add(&desk.db, &kept).await.unwrap();
    Member::ACTIVE_LOANS.add(&desk.db, &dropped).await.unwrap();
    // a count gone wrong, for the rebuild to repair
    Member::collection(&desk.db)
        .update_one(
            doc! { "_id": desk.member.id },
            doc! { "$set": { "active_count": 7_i64 } },
        )
        .await
        .unwrap();
    let before = seen(&desk).await;
    assert_eq!((before.loans.len(), before.member.active_count), (2, 7));

    for commit in [false, true] {
        let db = &desk.db;
        let mut session = desk.client.start_session().await.unwrap();
        session.start_transaction().await.unwrap();
        desk.log.clear();
        let matched = Member::ACTIVE_LOANS
            .update(
                db,
                &kept.to_ref(),
                doc! { "$set": { "loaned_at": DateTime::from_millis(5_000) } },
            )
            .session(&mut session)
            .await
            .unwrap();
        assert!(matched);
        let deleted = Member::ACTIVE_LOANS
            .delete(db, &dropped.to_ref())
            .session(&mut session)
            .await
            .unwrap();
        assert!(deleted);
        Member::ACTIVE_LOANS
            .rebuild(db, &desk.member.to_ref())
            .session(&mut session)
            .await
            .unwrap();
        let pushed = Member::NOTES
            .push(
                db,
                doc! { "_id": desk.member.id },
                &["returned late".to_owned()],
                None,
            )
            .session(&mut session)
            .await
            .unwrap();
        assert_eq!(pushed.matched, 1);
        let gone = desk
            .schema
            .delete_source::<Book>(db, &desk.book.id)
            .session(&mut session)
            .await
            .unwrap();
        assert!(gone.source.is_some());
        let rows = Loan::loans_of(db, &desk.member.to_ref())
            .session(&mut session)
            .await
            .unwrap();
        assert_eq!(
            rows,
            [Loan {
                loaned_at: DateTime::from_millis(5_000),
                ..kept.clone()
            }]
        );

        let commands = sent(&desk.log);
        let callers = session_of(&commands[0]);
        assert!(callers.1.is_some(), "{:?}", commands[0]);
        assert!(
            commands.iter().all(|c| session_of(c) == callers),
            "every command in the caller's transaction: {commands:#?}"
        );
        assert!(
            !commands
                .iter()
                .any(|c| c.name == "commitTransaction" || c.name == "abortTransaction"),
            "{commands:#?}"
        );
        assert_eq!(
            seen(&desk).await,
            before,
            "nothing outside before the commit"
        );

        if commit {
            session.commit_transaction().await.unwrap();
        } else {
            session.abort_transaction().await.unwrap();
            assert_eq!(seen(&desk).await, before, "the abort left nothing");
        }
    }
    let after = seen(&desk).await;
    assert_eq!(after.loans.len(), 1);
    assert_eq!(after.loans[0].loaned_at, DateTime::from_millis(5_000));
    assert_eq!(
        after.member.active_count, 1,
        "rebuilt from the one loan left"
    );
    assert_eq!(after.member.active_loans.len(), 1);
    assert_eq!(after.member.notes, ["returned late"]);
    assert_eq!(after.book, None, "the source deleted");
}
