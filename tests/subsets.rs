//! Subsets that stay current for the rest of a child's life (issue: a library-lending service):
//! `Subset::delete` and `Subset::update` (and their `_with` forms for several subsets of one
//! child) keep every member's previews and counts equal to what the loans say, checked after
//! each step by this test's own reads of the loans, not by the library's. Subsets of many
//! (`max = 3`) and of one (`max = 1`), `i64` and `i32` counts, a filtered subset (active loans
//! only), and a subset whose child names its parent through an extended reference.

mod common;

use common::{command_on, held_database};
use mongo_schema::bson::{doc, Bson};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    /// The three newest loans, whatever their status; `loan_count` counts them all (i64).
    #[subset(of = Loan, max = 3, sort = "-at", count = "loan_count")]
    pub recent: Vec<LoanPreview>,
    pub loan_count: i64,
    /// The newest active loan; `active_count` counts the active ones (i32).
    #[subset(of = Loan, max = 1, sort = "-at", count = "active_count", filter = r#"{ "status": "active" }"#)]
    pub last_active: Option<LoanPreview>,
    pub active_count: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "loans")]
#[index(keys(member_id = 1, at = -1))]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub member_id: Ref<Member>,
    pub title: String,
    pub at: i64,
    pub status: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LoanPreview {
    pub title: String,
    pub at: i64,
}

impl From<&Loan> for LoanPreview {
    fn from(loan: &Loan) -> Self {
        LoanPreview {
            title: loan.title.clone(),
            at: loan.at,
        }
    }
}

/// Members whose loans hold an extended reference to them (the member's name copied), which
/// is the subsets' reference: no second `member_id` field, no second index.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "readers")]
pub struct Reader {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    #[subset(of = Checkout, max = 2, sort = "-at", count = "checkouts")]
    pub recent: Vec<CheckoutPreview>,
    pub checkouts: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "checkouts")]
#[index(keys("reader._id" = 1, at = -1))]
pub struct Checkout {
    #[serde(rename = "_id")]
    pub id: i64,
    #[extended_ref(to = Reader, fields = "name", sync = "transactional")]
    pub reader: CheckoutReader,
    pub title: String,
    pub at: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CheckoutPreview {
    pub title: String,
    pub at: i64,
}

impl From<&Checkout> for CheckoutPreview {
    fn from(c: &Checkout) -> Self {
        CheckoutPreview {
            title: c.title.clone(),
            at: c.at,
        }
    }
}

fn schema() -> Schema {
    Schema::new()
        .model::<Member>()
        .model::<Loan>()
        .model::<Reader>()
        .model::<Checkout>()
        .build()
        .unwrap()
}

async fn setup(name: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(name).await;
    schema().apply(&db).await.unwrap();
    db
}

fn member(id: i64) -> Member {
    Member {
        id,
        name: format!("member {id}"),
        recent: vec![],
        loan_count: 0,
        last_active: None,
        active_count: 0,
    }
}

fn loan(id: i64, member: i64, at: i64, status: &str) -> Loan {
    Loan {
        id,
        member_id: Ref::new(member),
        title: format!("book {id}"),
        at,
        status: status.to_owned(),
    }
}

/// What `member`'s subsets must hold, computed here from a plain read of every loan.
async fn expected(db: &mongodb::Database, member: i64) -> Member {
    let mut loans: Vec<Loan> =
        common::all(Loan::collection(db).find(doc! { "member_id": member })).await;
    loans.sort_by_key(|l| std::cmp::Reverse(l.at));
    let active: Vec<&Loan> = loans.iter().filter(|l| l.status == "active").collect();
    Member {
        id: member,
        name: format!("member {member}"),
        recent: loans.iter().take(3).map(LoanPreview::from).collect(),
        loan_count: loans.len() as i64,
        last_active: active.first().map(|l| LoanPreview::from(*l)),
        active_count: active.len() as i32,
    }
}

async fn stored(db: &mongodb::Database, member: i64) -> Member {
    Member::collection(db)
        .find_one(doc! { "_id": member })
        .await
        .unwrap()
        .expect("the member")
}

async fn assert_current(db: &mongodb::Database, member: i64, step: &str) {
    assert_eq!(
        stored(db, member).await,
        expected(db, member).await,
        "after {step}"
    );
}

/// Member 1 with six loans, at 10..=60; loans 2 and 5 returned.
async fn lend(db: &mongodb::Database) {
    for id in [1, 2] {
        Member::collection(db).insert_one(member(id)).await.unwrap();
    }
    for (id, status) in [
        (1, "active"),
        (2, "returned"),
        (3, "active"),
        (4, "active"),
        (5, "returned"),
        (6, "active"),
    ] {
        Member::RECENT
            .add_with(db, &loan(id, 1, id * 10, status), &[&Member::LAST_ACTIVE])
            .await
            .unwrap();
    }
    assert_current(db, 1, "six loans").await;
}

#[tokio::test]
async fn deleting_the_newest_child_of_a_full_subset_refills_it_from_the_next() {
    let db = setup("subsets_delete").await;
    lend(&db).await;
    let before = stored(&db, 1).await;
    assert_eq!(
        before.recent.iter().map(|p| p.at).collect::<Vec<_>>(),
        [60, 50, 40]
    );
    assert_eq!(before.last_active.as_ref().map(|p| p.at), Some(60));
    assert_eq!((before.loan_count, before.active_count), (6, 4));

    // the newest, active: both subsets refill (the fourth newest enters `recent`, the next
    // active loan becomes `last_active`) and both counts go down
    let deleted = Member::RECENT
        .delete_with(&db, &Ref::new(6), &[&Member::LAST_ACTIVE])
        .await
        .unwrap();
    assert!(deleted);
    let after = stored(&db, 1).await;
    assert_eq!(
        after.recent.iter().map(|p| p.at).collect::<Vec<_>>(),
        [50, 40, 30]
    );
    assert_eq!(after.last_active.as_ref().map(|p| p.at), Some(40));
    assert_eq!((after.loan_count, after.active_count), (5, 3));
    assert_current(&db, 1, "deleting the newest").await;

    // a returned loan: counted by `recent` only; `last_active` and `active_count` stay
    assert!(Member::RECENT
        .delete_with(&db, &Ref::new(5), &[&Member::LAST_ACTIVE])
        .await
        .unwrap());
    let after = stored(&db, 1).await;
    assert_eq!(
        after.recent.iter().map(|p| p.at).collect::<Vec<_>>(),
        [40, 30, 20]
    );
    assert_eq!((after.loan_count, after.active_count), (4, 3));
    assert_current(&db, 1, "deleting a returned loan").await;

    // a loan that is gone already: nothing deleted, nothing counted
    assert!(!Member::RECENT.delete(&db, &Ref::new(6)).await.unwrap());
    assert_current(&db, 1, "deleting a missing loan").await;

    // down to none: the subset of one is empty again, the counts are 0
    for id in [1, 2, 3, 4] {
        Member::RECENT
            .delete_with(&db, &Ref::new(id), &[&Member::LAST_ACTIVE])
            .await
            .unwrap();
    }
    let empty = stored(&db, 1).await;
    assert_eq!(
        (
            empty.recent.len(),
            empty.last_active,
            empty.loan_count,
            empty.active_count
        ),
        (0, None, 0, 0)
    );
    assert_current(&db, 1, "deleting every loan").await;
}

#[tokio::test]
async fn updating_a_child_refreshes_moves_and_refilters_its_previews() {
    let db = setup("subsets_update").await;
    lend(&db).await;

    // a preview field: the new title shows in both subsets
    assert!(Member::RECENT
        .update_with(
            &db,
            &Ref::new(6),
            doc! { "$set": { "title": "Dune (2nd ed.)" } },
            &[&Member::LAST_ACTIVE]
        )
        .await
        .unwrap());
    let after = stored(&db, 1).await;
    assert_eq!(after.recent[0].title, "Dune (2nd ed.)");
    assert_eq!(after.last_active.as_ref().unwrap().title, "Dune (2nd ed.)");
    assert_current(&db, 1, "renaming a book").await;

    // the sort key, past the cut: the newest becomes the oldest, the fourth enters
    Member::RECENT
        .update_with(
            &db,
            &Ref::new(6),
            doc! { "$set": { "at": 1_i64 } },
            &[&Member::LAST_ACTIVE],
        )
        .await
        .unwrap();
    let after = stored(&db, 1).await;
    assert_eq!(
        after.recent.iter().map(|p| p.at).collect::<Vec<_>>(),
        [50, 40, 30]
    );
    assert_eq!(after.last_active.as_ref().map(|p| p.at), Some(40));
    assert_current(&db, 1, "moving a loan past the cut").await;

    // leaving the filter: loan 4 returned, the active count drops, the next active shows
    Member::RECENT
        .update_with(
            &db,
            &Ref::new(4),
            doc! { "$set": { "status": "returned" } },
            &[&Member::LAST_ACTIVE],
        )
        .await
        .unwrap();
    let after = stored(&db, 1).await;
    assert_eq!((after.active_count, after.loan_count), (3, 6));
    assert_eq!(after.last_active.as_ref().map(|p| p.at), Some(30));
    assert_current(&db, 1, "a loan leaving the filter").await;

    // entering it: loan 5 active again, newest active now
    Member::LAST_ACTIVE
        .update_with(
            &db,
            &Ref::new(5),
            doc! { "$set": { "status": "active" } },
            &[&Member::RECENT],
        )
        .await
        .unwrap();
    let after = stored(&db, 1).await;
    assert_eq!(after.active_count, 4);
    assert_eq!(after.last_active.as_ref().map(|p| p.at), Some(50));
    assert_current(&db, 1, "a loan entering the filter").await;

    // to another member: both members' subsets and counts follow
    Member::RECENT
        .update_with(
            &db,
            &Ref::new(5),
            doc! { "$set": { "member_id": 2_i64 } },
            &[&Member::LAST_ACTIVE],
        )
        .await
        .unwrap();
    let (one, two) = (stored(&db, 1).await, stored(&db, 2).await);
    assert_eq!((one.loan_count, one.active_count), (5, 3));
    assert_eq!((two.loan_count, two.active_count), (1, 1));
    assert_eq!(two.last_active.as_ref().map(|p| p.at), Some(50));
    assert_current(&db, 1, "moving a loan away").await;
    assert_current(&db, 2, "moving a loan in").await;

    // a pipeline update (its effect unknown before it runs) and an update matching nothing
    Member::RECENT
        .update_with(
            &db,
            &Ref::new(3),
            vec![doc! { "$set": { "at": { "$add": ["$at", 100] } } }],
            &[&Member::LAST_ACTIVE],
        )
        .await
        .unwrap();
    assert_eq!(stored(&db, 1).await.recent[0].at, 130);
    assert_current(&db, 1, "a pipeline update").await;
    assert!(!Member::RECENT
        .update(&db, &Ref::new(99), doc! { "$set": { "title": "x" } })
        .await
        .unwrap());
}

#[tokio::test]
async fn a_child_added_outside_the_filter_is_neither_previewed_nor_counted() {
    let db = setup("subsets_filter_add").await;
    Member::collection(&db).insert_one(member(1)).await.unwrap();
    Member::LAST_ACTIVE
        .add_with(&db, &loan(1, 1, 10, "active"), &[&Member::RECENT])
        .await
        .unwrap();
    // newer, but returned: `recent` shows it, `last_active` keeps the active one
    Member::LAST_ACTIVE
        .add_with(&db, &loan(2, 1, 20, "returned"), &[&Member::RECENT])
        .await
        .unwrap();
    Member::LAST_ACTIVE
        .add_then_update(&db, &loan(3, 1, 30, "returned"))
        .await
        .unwrap();
    Member::RECENT
        .add_then_update(&db, &loan(4, 1, 5, "returned"))
        .await
        .unwrap();
    let after = stored(&db, 1).await;
    assert_eq!(after.last_active.as_ref().map(|p| p.at), Some(10));
    assert_eq!(after.active_count, 1);
    // `recent` was not told about loan 3 (added for `last_active` alone)
    assert_eq!(
        after.recent.iter().map(|p| p.at).collect::<Vec<_>>(),
        [20, 10, 5]
    );
    assert_eq!(after.loan_count, 3);
    Member::RECENT.rebuild(&db, &Ref::new(1)).await.unwrap();
    Member::LAST_ACTIVE
        .rebuild(&db, &Ref::new(1))
        .await
        .unwrap();
    assert_current(&db, 1, "rebuilding").await;
}

#[tokio::test]
async fn must_match_after_a_filtered_add_counts_the_child_write() {
    let db = setup("subsets_filter_must_match").await;
    Member::collection(&db).insert_one(member(1)).await.unwrap();
    // a returned loan is outside `last_active`'s filter: the parent is left alone, and the
    // child's insert is the write that matched
    let report = schema()
        .transaction(&db)
        .add(&Member::LAST_ACTIVE, &loan(1, 1, 10, "returned"))
        .must_match()
        .await
        .expect("a child outside the filter is no miss");
    assert_eq!(report.steps.len(), 2, "{report:?}");
    assert_eq!((report.steps[1].matched, report.steps[1].changed), (1, 0));
    assert_eq!(
        Loan::collection(&db)
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
    let after = stored(&db, 1).await;
    assert_eq!((after.last_active, after.active_count), (None, 0));
    // control: an active loan of a member that does not exist matches no parent and aborts,
    // the loan's insert with it
    let missed = schema()
        .transaction(&db)
        .add(&Member::LAST_ACTIVE, &loan(2, 99, 20, "active"))
        .must_match()
        .await
        .expect_err("no member 99");
    assert!(
        matches!(&missed, mongo_schema::Error::ConditionFailed { collection, position: Some(p), .. }
            if collection == "members" && (p.number, p.of) == (2, 2)),
        "{missed:#?}"
    );
    assert_eq!(
        Loan::collection(&db)
            .count_documents(doc! {})
            .await
            .unwrap(),
        1,
        "the aborted transaction inserted nothing"
    );
}

#[tokio::test]
async fn an_extended_reference_to_the_parent_is_the_subsets_reference() {
    let db = setup("subsets_extended").await;
    let reader = Reader {
        id: 1,
        name: "Ada".into(),
        recent: vec![],
        checkouts: 0,
    };
    Reader::collection(&db).insert_one(&reader).await.unwrap();
    for (id, at) in [(1, 10), (2, 20), (3, 30)] {
        let checkout = Checkout {
            id,
            reader: CheckoutReader::from(&reader),
            title: format!("book {id}"),
            at,
        };
        Reader::RECENT.add(&db, &checkout).await.unwrap();
    }
    Reader::RECENT.delete(&db, &Ref::new(3)).await.unwrap();
    let stored = common::stored::<Reader>(&db, 1).await;
    assert_eq!(
        stored.recent.iter().map(|p| p.at).collect::<Vec<_>>(),
        [20, 10]
    );
    assert_eq!(stored.checkouts, 2);
    // the path read is the copy's `_id`, and the schema records it
    assert_eq!(Reader::RECENT.parent_field().unwrap(), "reader._id");
    let spec = Reader::collection_spec();
    assert_eq!(spec.subsets[0].parent_field, "reader._id");
    let loans = Member::collection_spec();
    let active = loans
        .subsets
        .iter()
        .find(|s| s.path == "last_active")
        .unwrap();
    assert_eq!(active.filter, Some(doc! { "status": "active" }));
    assert_eq!(active.parent_field, "member_id");
    assert_eq!(active.count_type, mongo_schema::CounterType::Int32);
    assert_eq!(
        Bson::from(active.strategy.as_str()),
        Bson::from("transactional")
    );
}

#[tokio::test]
async fn reconcile_and_audit_find_and_repair_corrupted_previews_and_counts() {
    let db = setup("subsets_reconcile").await;
    lend(&db).await;
    for id in 3..=40 {
        Member::collection(&db)
            .insert_one(member(id))
            .await
            .unwrap();
        Member::RECENT
            .add_with(
                &db,
                &loan(100 + id, id, 5, "active"),
                &[&Member::LAST_ACTIVE],
            )
            .await
            .unwrap();
    }
    let schema = schema();
    let clean = schema.reconcile(&db).dry_run(true).await.unwrap();
    let subsets: Vec<_> = clean
        .subsets
        .iter()
        .map(|s| (s.subset.as_str(), s.checked, s.drifted))
        .collect();
    assert_eq!(
        subsets,
        [
            ("members.recent", 40, 0),
            ("members.last_active", 40, 0),
            ("readers.recent", 0, 0)
        ]
    );
    // corrupt: a wrong count (i64), a wrong count (i32), a stale preview title, a missing
    // subset of one, a subset showing a deleted child, one preview too many dropped
    let members = db.collection::<mongo_schema::bson::Document>("members");
    members
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "loan_count": 99_i64 } })
        .await
        .unwrap();
    members
        .update_one(doc! { "_id": 3 }, doc! { "$set": { "active_count": 7 } })
        .await
        .unwrap();
    members
        .update_one(
            doc! { "_id": 4 },
            doc! { "$set": { "recent.0.title": "stale" } },
        )
        .await
        .unwrap();
    members
        .update_one(doc! { "_id": 5 }, doc! { "$set": { "last_active": null } })
        .await
        .unwrap();
    // a child deleted behind the helpers' back
    Loan::collection(&db)
        .delete_one(doc! { "_id": 106 })
        .await
        .unwrap();
    members
        .update_one(doc! { "_id": 7 }, doc! { "$pop": { "recent": 1 } })
        .await
        .unwrap();

    let audit = schema.audit(&db).await.unwrap();
    let text = audit.to_string();
    assert!(
        text.contains("members.recent (transactional): 4 of 40 parents"),
        "{text}"
    );
    assert!(
        text.contains("members.last_active (transactional): 3 of 40 parents"),
        "{text}"
    );
    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(dry.drifted(), 7);
    assert_eq!(dry.repaired(), 0);
    let fixed = schema.reconcile(&db).await.unwrap();
    assert_eq!(fixed.repaired(), 7, "{fixed}");
    for id in [1, 3, 4, 5, 6, 7] {
        assert_current(&db, id, "reconcile").await;
    }
    assert_eq!(
        schema.reconcile(&db).dry_run(true).await.unwrap().drifted(),
        0
    );
    let text = schema.audit(&db).await.unwrap().to_string();
    assert!(!text.contains("subsets that disagree"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subset_repair_never_overwrites_a_parent_written_meanwhile() {
    let db = setup("subsets_reconcile_race").await;
    lend(&db).await;
    let members = db.collection::<mongo_schema::bson::Document>("members");
    members
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "loan_count": 99_i64 } })
        .await
        .unwrap();
    // reconcile through a client that holds its first write to `members` (the repair) until
    // another writer has set the count
    let (held_db, held, release) = held_database(&db, command_on("update", "members")).await;
    let reconciling = tokio::spawn(async move { schema().reconcile(&held_db).await });
    tokio::task::spawn_blocking(move || held.recv_timeout(std::time::Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the repair is held within 30 s");
    members
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "loan_count": 42_i64 } })
        .await
        .unwrap();
    release.send(()).unwrap();
    let report = tokio::time::timeout(std::time::Duration::from_secs(60), reconciling)
        .await
        .expect("reconcile within a minute")
        .unwrap()
        .unwrap();
    let recent = report
        .subsets
        .iter()
        .find(|s| s.subset == "members.recent")
        .unwrap();
    assert_eq!(
        (recent.drifted, recent.repaired, recent.changed_meanwhile),
        (1, 0, 1),
        "{report}"
    );
    // the other writer's value stays; the next pass repairs it
    assert_eq!(stored(&db, 1).await.loan_count, 42);
    schema().reconcile(&db).await.unwrap();
    assert_current(&db, 1, "the next pass").await;
}

/// The guide's "Subsets that stay current" example (`docs/guide/subsets.md`), as written there.
#[rustfmt::skip]
mod readme {
    use mongo_schema::bson::doc;
    use mongo_schema::prelude::*;
    use mongo_schema::query::Update;
    use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")] pub id: i64,
    #[subset(of = Loan, max = 3, sort = "-at", count = "loan_count")]
    pub recent: Vec<LoanPreview>,                  // the three newest loans
    pub loan_count: i64,
    #[subset(of = Loan, max = 1, sort = "-at", count = "active_count",
             filter = r#"{ "status": "active" }"#, sync = "async")]
    pub last_active: Option<LoanPreview>,         // the newest active loan
    pub active_count: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "loans")]
#[index(keys(member_id = 1, at = -1))]            // the refill's one indexed query
pub struct Loan {
    #[serde(rename = "_id")] pub id: i64,
    #[reference] pub member_id: Ref<Member>,      // what the subsets follow
    pub title: String, pub at: i64, pub status: String,
}

    #[derive(BsonSchema, Serialize, Deserialize, Debug, PartialEq)]
    pub struct LoanPreview {
        pub title: String,
        pub at: i64,
    }

    impl From<&Loan> for LoanPreview {
        fn from(loan: &Loan) -> Self {
            LoanPreview { title: loan.title.clone(), at: loan.at }
        }
    }

    pub async fn run(db: mongodb::Database) -> mongo_schema::Result<()> {
        let schema = Schema::new().model::<Member>().model::<Loan>().build()?;
        schema.apply(&db).await?;
        Member::collection(&db)
            .insert_one(Member { id: 1, recent: vec![], loan_count: 0, last_active: None, active_count: 0 })
            .await?;
        let loan = Loan { id: 1, member_id: Ref::new(1), title: "Dune".into(), at: 10, status: "active".into() };
Member::RECENT.add_with(&db, &loan, &[&Member::LAST_ACTIVE]).await?;
        let added = Member::collection(&db).find_one(doc! { "_id": 1 }).await?.expect("member");
        assert_eq!((added.loan_count, added.active_count, added.recent.len()), (1, 1, 1));
let returned = Update::new().set(field!(Loan, status), "returned").build()?;
Member::RECENT.update_with(&db, &loan.to_ref(), returned, &[&Member::LAST_ACTIVE]).await?;
        let returned = Member::collection(&db).find_one(doc! { "_id": 1 }).await?.expect("member");
        assert_eq!((returned.loan_count, returned.active_count, returned.last_active), (1, 0, None));
Member::RECENT.delete_with(&db, &loan.to_ref(), &[&Member::LAST_ACTIVE]).await?;
        let deleted = Member::collection(&db).find_one(doc! { "_id": 1 }).await?.expect("member");
        assert_eq!((deleted.loan_count, deleted.recent.len()), (0, 0));
        Ok(())
    }
}

#[tokio::test]
async fn the_readme_example_runs() {
    let db = mongo_schema_testkit::database("subsets_readme").await;
    readme::run(db).await.unwrap();
}

/// Every ```rust block of the guide's subset section is in this file, line for line
/// (indentation and rustdoc's hidden `# ` lines aside).
#[test]
fn the_readme_blocks_are_in_this_file() {
    let readme = include_str!("../docs/guide/subsets.md");
    let trimmed = |text: &str| -> String {
        text.lines()
            .filter(|l| !(l.starts_with("# ") || *l == "#"))
            .map(|l| format!("{}\n", l.trim_start()))
            .collect()
    };
    let this_file = trimmed(include_str!("subsets.rs"));
    let section = "## Subsets that stay current";
    let start = readme
        .find(&format!("\n{section}\n"))
        .expect("the guide's section");
    let body = &readme[start + section.len() + 2..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let mut checked = 0;
    for block in body.split("```rust\n").skip(1) {
        let block = trimmed(&block[..block.find("```").expect("an unclosed code block")]);
        // each type of the example is a run of lines of this file; each call's lines are here
        for part in block.split("\n\n") {
            if part.contains("pub struct") {
                assert!(
                    this_file.contains(&trimmed(part)),
                    "not in tests/subsets.rs:\n{part}"
                );
            } else {
                for line in part.lines() {
                    assert!(
                        this_file.contains(&trimmed(line)),
                        "not in tests/subsets.rs: {line}"
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} parts found");
}

/// Shelves whose `_id`s other drivers wrote in mixed BSON types.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "shelves")]
pub struct Shelf {
    #[serde(rename = "_id")]
    pub id: Bson,
    #[subset(of = Book, max = 2, sort = "-at", count = "books")]
    pub newest: Vec<BookPreview>,
    pub books: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "books")]
#[index(keys(shelf_id = 1, at = -1))]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    pub at: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BookPreview {
    pub at: i64,
}

impl From<&Book> for BookPreview {
    fn from(book: &Book) -> Self {
        BookPreview { at: book.at }
    }
}

#[tokio::test]
async fn rebuild_all_walks_parents_of_every_id_type_and_resumes_across_types() {
    use mongo_schema::bson::{oid::ObjectId, spec::BinarySubtype, Binary, DateTime};
    let db = mongo_schema_testkit::database("subsets_mixed_ids").await;
    Schema::new()
        .model::<Shelf>()
        .model::<Book>()
        .build()
        .unwrap()
        .apply(&db)
        .await
        .unwrap();
    // in the server's order: numbers, strings, binary, ObjectIds, dates
    let ids = [
        Bson::Int32(1),
        Bson::Int64(2),
        Bson::Double(2.5),
        Bson::String("a".into()),
        Bson::String("b".into()),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![1, 2],
        }),
        Bson::ObjectId(ObjectId::new()),
        Bson::DateTime(DateTime::from_millis(1_700_000_000_000)),
    ];
    let mut book = 0;
    for id in &ids {
        // counts left at 0 and no previews: every parent needs its rebuild
        Shelf::collection(&db)
            .insert_one(Shelf {
                id: id.clone(),
                newest: vec![],
                books: 0,
            })
            .await
            .unwrap();
        for at in 0..3 {
            book += 1;
            Book::collection(&db)
                .insert_one(Book {
                    id: book,
                    shelf_id: Ref::new(id.clone()),
                    at,
                })
                .await
                .unwrap();
        }
    }
    // resumed after the second string: the binary, ObjectId and date parents follow
    let mut progress = mongo_schema::RebuildProgress::default();
    progress.last_done = Some(Bson::String("b".into()));
    Shelf::NEWEST
        .resume_rebuild_all(&db, &mut progress)
        .await
        .unwrap();
    assert_eq!(progress.rebuilt, 3, "{progress:?}");
    assert_eq!(progress.last_done, Some(ids[7].clone()));
    // the whole walk: every type, its progress reported per batch of parents
    let (events, _guard) = progress_events();
    assert_eq!(
        Shelf::NEWEST.rebuild_all(&db).await.unwrap(),
        ids.len() as u64
    );
    let events = events.lock().unwrap().clone();
    assert_eq!(
        events.last(),
        Some(&("rebuild shelves.newest".to_owned(), ids.len() as u64)),
        "{events:?}"
    );
    for id in &ids {
        let shelf = common::stored::<Shelf>(&db, id.clone()).await;
        assert_eq!(
            (
                shelf.books,
                shelf.newest.iter().map(|p| p.at).collect::<Vec<_>>()
            ),
            (3, vec![2, 1]),
            "{id}"
        );
    }
}

/// Progress events as `(task, done)`, in the order emitted.
type Events = std::sync::Arc<std::sync::Mutex<Vec<(String, u64)>>>;

/// The progress events the library emits while the guard lives.
fn progress_events() -> (Events, tracing::subscriber::DefaultGuard) {
    use tracing_subscriber::layer::SubscriberExt;

    #[derive(Default)]
    struct Fields {
        task: Option<String>,
        done: Option<u64>,
    }
    impl tracing::field::Visit for Fields {
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            if field.name() == "task" {
                self.task = Some(value.to_owned());
            }
        }
        fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
            if field.name() == "done" {
                self.done = Some(value);
            }
        }
        fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
    }
    struct Keep(Events);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Keep {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if event.metadata().target() != mongo_schema::PROGRESS_TARGET {
                return;
            }
            let mut fields = Fields::default();
            event.record(&mut fields);
            if let (Some(task), Some(done)) = (fields.task, fields.done) {
                self.0.lock().unwrap().push((task, done));
            }
        }
    }
    let events = std::sync::Arc::default();
    let subscriber = tracing_subscriber::registry().with(Keep(std::sync::Arc::clone(&events)));
    (events, tracing::subscriber::set_default(subscriber))
}

/// A follower of a user: two references to `Person`, and the subset follows `followed`.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "people")]
pub struct Person {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    /// The two newest followers, and how many follow this person.
    #[subset(of = Follow, via = followed, max = 2, sort = "-at", count = "follower_count")]
    pub followers: Vec<FollowerPreview>,
    pub follower_count: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "follows")]
pub struct Follow {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub follower: Ref<Person>,
    #[reference]
    pub followed: Ref<Person>,
    pub follower_name: String,
    pub at: DateTime,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct FollowerPreview {
    pub follower_name: String,
    pub at: DateTime,
}

impl From<&Follow> for FollowerPreview {
    fn from(follow: &Follow) -> Self {
        FollowerPreview {
            follower_name: follow.follower_name.clone(),
            at: follow.at,
        }
    }
}

#[tokio::test]
async fn a_subset_via_one_of_two_references_updates_the_followed_not_the_followers() {
    let db = mongo_schema_testkit::database("subset_via").await;
    let schema = Schema::new()
        .model::<Person>()
        .model::<Follow>()
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    let person = |id: i64, name: &str| Person {
        id,
        name: name.into(),
        followers: Vec::new(),
        follower_count: 0,
    };
    let (ada, bo, cy) = (person(1, "Ada"), person(2, "Bo"), person(3, "Cy"));
    Person::collection(&db)
        .insert_many([&ada, &bo, &cy])
        .await
        .unwrap();
    for (id, follower, at) in [(10, &bo, 1_000), (11, &cy, 2_000)] {
        let follow = Follow {
            id,
            follower: follower.to_ref(),
            followed: ada.to_ref(),
            follower_name: follower.name.clone(),
            at: DateTime::from_millis(at),
        };
        Person::FOLLOWERS.add(&db, &follow).await.unwrap();
    }
    let read = |id: i64| {
        let db = db.clone();
        async move { common::stored::<Person>(&db, id).await }
    };
    let ada_now = read(1).await;
    assert_eq!(ada_now.follower_count, 2);
    assert_eq!(
        ada_now
            .followers
            .iter()
            .map(|p| p.follower_name.as_str())
            .collect::<Vec<_>>(),
        ["Cy", "Bo"],
        "newest first"
    );
    for other in [read(2).await, read(3).await] {
        assert_eq!(other.follower_count, 0, "{}", other.name);
        assert!(other.followers.is_empty(), "{}", other.name);
    }
    // the follows were written, and a rebuild from them (the refill on `followed`) agrees
    assert_eq!(
        Follow::collection(&db)
            .count_documents(doc! { "followed": 1 })
            .await
            .unwrap(),
        2
    );
    Person::collection(&db)
        .update_one(
            doc! { "_id": 1 },
            doc! { "$set": { "followers": [], "follower_count": 0_i64 } },
        )
        .await
        .unwrap();
    schema.reconcile(&db).await.unwrap();
    let repaired = read(1).await;
    assert_eq!(repaired.follower_count, 2);
    assert_eq!(repaired.followers, ada_now.followers);
    assert_eq!(read(2).await.follower_count, 0);
}

/// An id read from a stored child is a value, never an operator: a loan stored (past the
/// validator) with `member_id: { "$ne": null }` names no member, so deleting it refreshes no
/// member's previews or count; before, the refresh's `{ "_id": { "$ne": null } }` rewrote the
/// first member, which that loan never belonged to. The control: deleting a real loan of that
/// member still refreshes it.
#[tokio::test]
async fn an_operator_shaped_parent_id_in_a_stored_child_aims_no_refresh() {
    let db = setup("subsets_hostile_parent").await;
    lend(&db).await;
    db.collection::<mongo_schema::bson::Document>("loans")
        .insert_one(doc! {
            "_id": 99_i64,
            "member_id": { "$ne": Bson::Null },
            "title": "not a member's",
            "at": 1_000_i64,
            "status": "active",
        })
        .bypass_document_validation(true)
        .await
        .unwrap();
    let (one, two) = (stored(&db, 1).await, stored(&db, 2).await);
    assert!(Member::RECENT
        .delete_with(&db, &Ref::new(99), &[&Member::LAST_ACTIVE])
        .await
        .unwrap());
    assert_eq!(stored(&db, 1).await, one, "member 1 was not touched");
    assert_eq!(stored(&db, 2).await, two, "member 2 was not touched");
    assert_current(&db, 1, "deleting the loan with an operator for a parent").await;
    assert_current(&db, 2, "deleting the loan with an operator for a parent").await;

    // the control: a loan of member 1 refreshes member 1
    assert!(Member::RECENT
        .delete_with(&db, &Ref::new(6), &[&Member::LAST_ACTIVE])
        .await
        .unwrap());
    let after = stored(&db, 1).await;
    assert_eq!((after.loan_count, after.active_count), (5, 3));
    assert_current(&db, 1, "deleting loan 6").await;
}
