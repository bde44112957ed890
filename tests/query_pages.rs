//! Declared queries read in keyset pages (`#[query(.., pages)]`): across several pages every
//! matching document comes once, in the declared order with `_id` as the tie-break, no page is
//! empty and the last one has no `next`; ties on the sort key, `null` keys in both directions, a
//! range on the sort key and a projection row; the cursor survives a round trip through JSON,
//! and a cursor of another shape or with an operator in it is refused before anything is sent.

mod common;

use mongo_schema::bson::{doc, oid::ObjectId, Bson, DateTime};
use mongo_schema::prelude::*;
use mongo_schema::query::QueryCursor;
use serde::{Deserialize, Serialize};

// queries sharing arguments trip clippy's `duplicated_attributes` (rust-lang/rust-clippy#13238)
#[allow(clippy::duplicated_attributes)]
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "ledger")]
#[query(name = "by_amount", eq(account), sort(amount = -1), limit = 4, pages)]
#[query(
    name = "by_settled",
    eq(account),
    sort(settled_at = 1),
    limit = 3,
    pages
)]
#[query(
    name = "settled_latest",
    eq(account),
    sort(settled_at = -1),
    limit = 4,
    project = EntryRow,
    pages
)]
#[query(name = "in_order", eq(account), limit = 5, pages)]
#[query(
    name = "settled_between",
    eq(account),
    range(settled_at),
    sort(settled_at = 1),
    limit = 3,
    pages
)]
#[query(name = "unpaged", eq(account), sort(amount = -1))]
pub struct Entry {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub account: String,
    pub amount: i64,
    pub settled_at: Option<DateTime>,
    pub note: String,
}

/// A projection row without the sort key: the page reads it for the cursor and leaves it out.
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EntryRow {
    pub note: String,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Entry>()
        .build()
        .expect("the ledger schema is consistent")
}

/// 23 entries of account `a` with only 4 distinct amounts (ties) and every third unsettled
/// (`null` keys), and 5 of account `b` that no page of `a` may return.
async fn seed(db: &mongo_schema::mongodb::Database) -> Vec<Entry> {
    let mut entries = Vec::new();
    for i in 0..28_i64 {
        entries.push(Entry {
            id: ObjectId::new(),
            account: if i < 23 { "a" } else { "b" }.to_owned(),
            amount: (i * 7) % 4 * 100,
            settled_at: (i % 3 != 0).then(|| DateTime::from_millis(1_000 * ((i * 5) % 11))),
            note: format!("entry {i}"),
        });
    }
    Entry::collection(db).insert_many(&entries).await.unwrap();
    entries.into_iter().filter(|e| e.account == "a").collect()
}

/// `a` before `b` in the order of `key` (`None` lowest, as BSON sorts `null`), ties by `_id`,
/// every key in `direction`.
fn ordered<K: Ord>(entries: &[Entry], key: impl Fn(&Entry) -> K, direction: i32) -> Vec<ObjectId> {
    let mut sorted = entries.to_vec();
    sorted.sort_by(|a, b| {
        let order = key(a).cmp(&key(b)).then_with(|| a.id.cmp(&b.id));
        if direction < 0 {
            order.reverse()
        } else {
            order
        }
    });
    sorted.iter().map(|e| e.id).collect()
}

/// Reads every page of a query through `page`, checking each: never empty, full but for the
/// last, `next` on all but the last.
async fn every_page<Row, F, Fut>(what: &str, limit: usize, mut page: F) -> Vec<Row>
where
    F: FnMut(Option<QueryCursor>) -> Fut,
    Fut: std::future::Future<Output = mongo_schema::Result<mongo_schema::Page<Row, QueryCursor>>>,
{
    let mut rows = Vec::new();
    let mut after = None;
    for n in 1.. {
        assert!(n < 100, "{what}: pages do not end");
        let result = page(after.take()).await.unwrap();
        assert!(!result.items.is_empty(), "{what}: page {n} is empty");
        let full = result.items.len() == limit;
        rows.extend(result.items);
        match result.next {
            Some(next) => {
                assert!(full, "{what}: page {n} is short but announces another");
                // the cursor as a client would hold it
                let json = serde_json::to_string(&next).unwrap();
                after = Some(serde_json::from_str(&json).unwrap());
            }
            None => break,
        }
    }
    rows
}

#[tokio::test]
async fn pages_return_every_document_once_in_order_with_no_empty_last_page() {
    let db = mongo_schema_testkit::database("query_pages").await;
    schema().apply(&db).await.unwrap();
    let a = seed(&db).await;

    // ties on the amount, newest `_id` first among them
    let read = every_page("by_amount", 4, |after| {
        Entry::by_amount(&db, "a").after(after).page()
    })
    .await;
    let read: Vec<ObjectId> = read.iter().map(|e| e.id).collect();
    assert_eq!(read, ordered(&a, |e| e.amount, -1), "by_amount");
    assert_eq!(a.len(), 23);

    // `null` keys first in ascending order, then the dates
    let read = every_page("by_settled", 3, |after| {
        Entry::by_settled(&db, "a").after(after).page()
    })
    .await;
    let read: Vec<ObjectId> = read.iter().map(|e| e.id).collect();
    assert_eq!(read, ordered(&a, |e| e.settled_at, 1), "by_settled");

    // descending: the `null` keys last (a range of their own), read through a projection row
    // that holds no sort key (and refuses unknown fields)
    let read = every_page("settled_latest", 4, |after| {
        Entry::settled_latest(&db, "a").after(after).page()
    })
    .await;
    let notes: Vec<String> = read.into_iter().map(|row| row.note).collect();
    let expected: Vec<String> = ordered(&a, |e| e.settled_at, -1)
        .iter()
        .map(|id| a.iter().find(|e| e.id == *id).unwrap().note.clone())
        .collect();
    assert_eq!(notes, expected, "settled_latest");
    assert!(
        a.iter().filter(|e| e.settled_at.is_none()).count() >= 4,
        "the null keys span a page"
    );

    // no sort declared: `_id` order
    let read = every_page("in_order", 5, |after| {
        Entry::in_order(&db, "a").after(after).page()
    })
    .await;
    let mut ids: Vec<ObjectId> = a.iter().map(|e| e.id).collect();
    ids.sort();
    assert_eq!(
        read.iter().map(|e| e.id).collect::<Vec<_>>(),
        ids,
        "in_order"
    );

    // a range on the sort key: the cursor's range and the query's merge into one. (The range
    // is on an ascending index key: SecantusDB 0.7.0b3 scans too few keys for a range on a
    // descending one, e.g. `amount` of `{ account: 1, amount: -1, _id: -1 }`, and returns
    // wrong rows whatever the pages do.)
    let (from, to) = (DateTime::from_millis(2_000), DateTime::from_millis(8_000));
    let read = every_page("settled_between", 3, |after| {
        Entry::settled_between(&db, "a", from..=to)
            .after(after)
            .page()
    })
    .await;
    let within: Vec<Entry> = a
        .iter()
        .filter(|e| e.settled_at.is_some_and(|at| (from..=to).contains(&at)))
        .cloned()
        .collect();
    assert!(within.len() > 6, "the range spans three pages");
    assert_eq!(
        read.iter().map(|e| e.id).collect::<Vec<_>>(),
        ordered(&within, |e| e.settled_at, 1),
        "settled_between"
    );

    // `.limit` sets the page size; a page exactly as long as what is left has no `next`
    let all = Entry::by_amount(&db, "a").limit(23).page().await.unwrap();
    assert_eq!(all.items.len(), 23);
    assert_eq!(all.next, None, "nothing follows the 23rd");
    let first = Entry::by_amount(&db, "a").limit(22).page().await.unwrap();
    let last = Entry::by_amount(&db, "a")
        .after(first.next.clone())
        .limit(22)
        .page()
        .await
        .unwrap();
    assert_eq!(last.items.len(), 1);
    assert_eq!(last.next, None);

    // awaiting after a cursor returns the rows that follow it, as the page does
    let rows = Entry::by_amount(&db, "a")
        .after(first.next.clone())
        .await
        .unwrap();
    assert_eq!(rows, last.items);

    // count: the filter's matches, cursor and limit left out
    assert_eq!(
        Entry::by_amount(&db, "a")
            .after(first.next)
            .count()
            .await
            .unwrap(),
        23
    );
}

/// The error of the page of `by_amount` on `account` after `cursor`, which must be refused.
async fn by_amount_after(
    db: &mongodb::Database,
    account: &str,
    cursor: impl Into<Option<QueryCursor>>,
) -> mongo_schema::Error {
    Entry::by_amount(db, account)
        .after(cursor)
        .page()
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_cursor_of_another_shape_or_with_an_operator_is_refused_before_anything_is_sent() {
    let db = mongo_schema_testkit::database("query_pages_refused").await;
    schema().apply(&db).await.unwrap();
    let entries_of_a = seed(&db).await;

    // `by_amount` sorts on `amount`, `_id`: a cursor of `in_order` (one key) is not its own
    let other = Entry::in_order(&db, "a").limit(1).page().await.unwrap();
    let error = by_amount_after(&db, "a", other.next).await;
    assert!(
        matches!(error, mongo_schema::Error::InvalidArgument { .. }),
        "{error:?}"
    );

    // a cursor of another query with as many keys (the new-user try's silent empty page)
    let other = Entry::by_settled(&db, "a").page().await.unwrap();
    let error = by_amount_after(&db, "a", other.next).await;
    assert!(
        matches!(error, mongo_schema::Error::InvalidArgument { .. }),
        "{error:?}"
    );
    // a cursor of the right query called for another account (a web API's cursor kept across
    // a switch of the account in its URL): refused, where it read a wrong page
    let first_of_a = Entry::by_amount(&db, "a").page().await.unwrap();
    let cursor_of_a = first_of_a
        .next
        .clone()
        .expect("account a has more than one page");
    let error = by_amount_after(&db, "b", cursor_of_a.clone()).await;
    match &error {
        mongo_schema::Error::InvalidArgument {
            argument, reason, ..
        } => {
            assert_eq!(argument, "after");
            let names_the_query =
                // display-text: the refusal names the query and says why (other arguments)
                reason.contains("`by_amount` called with other arguments");
            assert!(names_the_query, "{reason}");
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // ... and so is the same cursor after a round trip through a client (JSON): opaque
    let through_json: QueryCursor =
        serde_json::from_str(&serde_json::to_string(&cursor_of_a).unwrap()).unwrap();
    let error = by_amount_after(&db, "b", through_json.clone()).await;
    assert!(
        matches!(error, mongo_schema::Error::InvalidArgument { .. }),
        "{error:?}"
    );
    // the control: the same call continues from it (through JSON too), with the next rows of
    // account a in the declared order, ids compared
    let expected = ordered(&entries_of_a, |e| e.amount, -1);
    let first_ids: Vec<ObjectId> = first_of_a.items.iter().map(|e| e.id).collect();
    assert_eq!(first_ids, expected[..4]);
    for cursor in [cursor_of_a.clone(), through_json] {
        let second_of_a = Entry::by_amount(&db, "a")
            .after(cursor)
            .page()
            .await
            .unwrap();
        let second_ids: Vec<ObjectId> = second_of_a.items.iter().map(|e| e.id).collect();
        assert_eq!(second_ids, expected[4..8]);
    }
    // a forged cursor of the right call with a text where the amount is a number
    let mut forged = serde_json::to_value(&cursor_of_a).unwrap();
    forged["keys"] = serde_json::json!(["zzz", { "$oid": "000000000000000000000000" }]);
    let forged: QueryCursor = serde_json::from_value(forged).unwrap();
    let error = by_amount_after(&db, "a", forged).await;
    assert!(
        matches!(error, mongo_schema::Error::InvalidArgument { .. }),
        "{error:?}"
    );

    // a client's cursor with an operator where a key was
    let mut hostile = serde_json::to_value(&cursor_of_a).unwrap();
    hostile["keys"] = serde_json::json!([{ "$gt": "" }, { "$oid": "000000000000000000000000" }]);
    let hostile: QueryCursor = serde_json::from_value(hostile).unwrap();
    assert_eq!(hostile.keys()[0], Bson::Document(doc! { "$gt": "" }));
    let error = by_amount_after(&db, "a", hostile).await;
    assert!(
        matches!(error, mongo_schema::Error::UnsafeValue { .. }),
        "{error:?}"
    );

    // a page size out of range
    let error = Entry::by_amount(&db, "a")
        .limit(5_000)
        .page()
        .await
        .unwrap_err();
    assert!(
        matches!(error, mongo_schema::Error::InvalidArgument { .. }),
        "{error:?}"
    );
}

/// The paged queries' sort ends with `_id`, and the index derived for each holds it: one index
/// serves every page in order; the unpaged query with the same sort keeps its own shape.
#[test]
fn a_paged_query_is_fitted_and_derived_with_its_tie_break() {
    let schema = schema();
    let ledger = schema.collection("ledger").unwrap();
    let query = |name: &str| common::declared_query(ledger, name).clone();
    let by_amount = query("by_amount");
    assert!(by_amount.pages);
    assert_eq!(
        by_amount.sort_document(),
        doc! { "amount": -1, "_id": -1 },
        "the tie-break follows the last key's direction"
    );
    let fit = by_amount.fit.clone().unwrap();
    assert_eq!(fit.problem, None, "{fit:?}");
    let index = ledger
        .indexes
        .iter()
        .find(|i| Some(&i.name) == fit.index.as_ref())
        .unwrap();
    assert_eq!(index.keys, doc! { "account": 1, "amount": -1, "_id": -1 });
    assert_eq!(query("in_order").sort_document(), doc! { "_id": 1 });
    assert_eq!(query("unpaged").sort_document(), doc! { "amount": -1 });
}
