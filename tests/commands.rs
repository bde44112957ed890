//! Commands per operation, counted with driver command monitoring: each generated helper sends
//! what the hand-written driver code would, no more.

mod common;

use common::helpdesk::*;
use futures_util::TryStreamExt;
use mongo_schema::bson::doc;
use mongo_schema::prelude::*;

/// The commands `log` saw since it was cleared, without the driver's own (`endSessions`).
fn sent(log: &mongo_schema_testkit::CommandLog) -> Vec<String> {
    log.names()
        .into_iter()
        .filter(|n| n != "endSessions")
        .collect()
}

#[tokio::test]
async fn each_helper_sends_the_hand_written_minimum() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let plain = mongo_schema_testkit::database("commands").await;
    let db = client.database(plain.name());
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let ana = customer("Ana");
    Customer::collection(&db).insert_one(&ana).await.unwrap();
    let tickets: Vec<Ticket> = (0..3).map(|i| ticket(&ana, None, i)).collect();
    Ticket::collection(&db).insert_many(&tickets).await.unwrap();

    // a message with its preview and count: update (which also finds the parent: a child of a
    // parent that does not exist is refused before it is written), insert, commit
    for i in 0..3 {
        let message = Message {
            id: ObjectId::new(),
            ticket_id: tickets[0].to_ref(),
            body: format!("message {i}"),
            at: DateTime::from_millis(1_000 + i),
        };
        log.clear();
        Ticket::LAST_MESSAGE.add(&db, &message).await.unwrap();
        assert_eq!(
            sent(&log),
            ["update", "insert", "commitTransaction"],
            "Subset::add"
        );
    }
    // an older message: still one update, whose $cond keeps the newer preview
    let older = Message {
        id: ObjectId::new(),
        ticket_id: tickets[0].to_ref(),
        body: "older".into(),
        at: DateTime::from_millis(10),
    };
    log.clear();
    Ticket::LAST_MESSAGE.add(&db, &older).await.unwrap();
    assert_eq!(sent(&log), ["update", "insert", "commitTransaction"]);
    let stored = Ticket::collection(&db)
        .find_one(doc! { "_id": tickets[0].id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.message_count, 4);
    assert_eq!(stored.last_message.unwrap().preview, "message 2");

    // a transactional rename: findAndModify, one update per copy it touches, commit
    log.clear();
    let report = schema
        .update_source::<Customer>(&db, &ana.id, doc! { "$set": { "name": "Ana 2" } })
        .await
        .unwrap();
    assert_eq!(report.total_rewritten(), 3);
    assert_eq!(
        sent(&log),
        ["findAndModify", "update", "commitTransaction"],
        "update_source"
    );
    // a change of a field no copy holds: no update of the holders at all
    log.clear();
    schema
        .update_source::<Customer>(&db, &ana.id, doc! { "$set": { "email": "a@b.c" } })
        .await
        .unwrap();
    assert_eq!(sent(&log), ["findAndModify", "commitTransaction"]);

    // a batch of references: one find
    log.clear();
    let refs: Vec<Ref<Ticket>> = tickets.iter().map(|t| t.to_ref()).collect();
    let resolved = Ref::resolve_all(&db, &refs).await.unwrap();
    assert_eq!(resolved.documents.len(), 3);
    assert_eq!(sent(&log), ["find"], "Ref::resolve_all");

    // the first page of a parent's children: one find
    log.clear();
    let page = Message::TICKET_ID
        .page_in(&db, &tickets[0].to_ref())
        .limit(2)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(sent(&log), ["find"], "Relation::page, first page");

    // every later page, also inside a run of equal keys (`at` is not unique): one find each
    let tied: Vec<Message> = (0..5)
        .map(|i| Message {
            id: ObjectId::new(),
            ticket_id: tickets[0].to_ref(),
            body: format!("tied {i}"),
            at: DateTime::from_millis(1_001),
        })
        .collect();
    Message::collection(&db).insert_many(&tied).await.unwrap();
    let mut expected: Vec<(i64, ObjectId)> = Message::collection(&db)
        .find(
            Message::TICKET_ID
                .children_filter(&tickets[0].to_ref())
                .unwrap(),
        )
        .await
        .unwrap()
        .try_collect::<Vec<Message>>()
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.at.timestamp_millis(), m.id))
        .collect();
    expected.sort_by(|a, b| b.cmp(a)); // the index order: at descending, then _id descending
    let mut read = Vec::new();
    let mut pages = 0;
    let mut next = None;
    loop {
        assert!(pages < 10, "paging does not end: {read:?}");
        let cursor = next.take();
        let page = Message::TICKET_ID
            .page(&tickets[0].to_ref())
            .limit(2)
            .after(cursor.clone());
        if pages > 0 {
            // `at` is a required date: no range for null keys beside the ties and older dates
            let filter = page.find_filter();
            assert_eq!(filter.get_array("$or").unwrap().len(), 2, "{filter}");
        }
        log.clear();
        let result = Message::TICKET_ID
            .page_in(&db, &tickets[0].to_ref())
            .limit(2)
            .after(cursor)
            .await
            .unwrap();
        assert_eq!(sent(&log), ["find"], "Relation::page, page {}", pages + 1);
        pages += 1;
        read.extend(result.items.iter().map(|m| (m.at.timestamp_millis(), m.id)));
        match result.next {
            Some(cursor) => next = Some(cursor),
            None => break,
        }
    }
    assert_eq!(read, expected, "every child once, in index order");
    assert_eq!(pages, 5, "9 children in pages of 2, the last one short");
}
