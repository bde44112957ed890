//! The renamed dependency's models on the real server: the schema applies, a ticket with its
//! customer's copy is accepted, and typed paths encode through the derive's generated code.

use std::time::Duration;

use mongo_schema_compat_renamed::{schema, Customer, Status, Ticket, TicketCustomer};
use ms::bson::{doc, Bson};
use ms::prelude::*;
use ms::query::Filter;

#[test]
fn the_generated_items_are_there() {
    assert_eq!(Ticket::COLLECTION, "tickets");
    assert_eq!(field!(Ticket, customer.name).as_str(), "customer.name");
    assert_eq!(field!(Ticket, history.status).as_str(), "history.status");
    // the serde helper's encoder: a `u32` stored as a double
    let filter = Filter::new()
        .eq(field!(Customer, code), &7_u32)
        .build()
        .unwrap();
    assert_eq!(filter, doc! { "code": 7.0_f64 });
    assert!(Ticket::validator().get_document("$jsonSchema").is_ok());
}

#[tokio::test]
async fn applied_and_written() {
    let db = mongo_schema_testkit::database("renamed").await;
    let schema = schema().unwrap();
    tokio::time::timeout(Duration::from_secs(60), schema.apply(&db))
        .await
        .expect("apply within a minute")
        .unwrap();
    let customer = Customer {
        id: ObjectId::new(),
        name: "Ada".into(),
        code: 7,
    };
    Customer::collection(&db)
        .insert_one(&customer)
        .await
        .unwrap();
    let ticket = Ticket {
        id: ObjectId::new(),
        status: Status::Open,
        customer: TicketCustomer::from(&customer),
        history: Vec::new(),
    };
    Ticket::collection(&db).insert_one(&ticket).await.unwrap();
    let found = Customer::collection(&db)
        .find_one(
            Filter::new()
                .eq(field!(Customer, code), &7_u32)
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(found, Some(customer));
    // the validator of the renamed crate's model refuses the wrong shape
    let raw = db.collection::<ms::bson::Document>(Ticket::COLLECTION);
    let error = raw
        .insert_one(doc! { "_id": ObjectId::new(), "status": "lost", "customer": Bson::Null, "history": [] })
        .await
        .unwrap_err();
    let error = ms::Error::from(error);
    assert!(error.as_validation().is_some(), "{error:#?}");
}
