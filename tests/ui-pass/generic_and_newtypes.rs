//! Generic structs, newtypes and `#[serde(transparent)]`.

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Page<T> {
    #[embed(max = 50)]
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// A newtype is stored as its one field.
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Email(#[schema(max_length = 254)] String);

/// So is a `#[serde(transparent)]` struct with named fields.
#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sku {
    #[schema(pattern = "^[A-Z]{3}-[0-9]{4}$")]
    pub code: String,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Part {
    pub sku: Sku,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: Email,
    pub recent_parts: Page<Part>,
}

pub fn main() {
    assert_eq!(
        Email::bson_schema(),
        doc! { "bsonType": "string", "maxLength": 254_i64 }
    );
    assert_eq!(
        Sku::bson_schema(),
        doc! { "bsonType": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$" }
    );

    let page = Page::<i64>::bson_schema();
    assert_eq!(
        page.get_document("properties")
            .unwrap()
            .get_document("items")
            .unwrap(),
        &doc! { "bsonType": "array", "maxItems": 50_i64, "items": { "bsonType": "long" } }
    );

    let validator = Customer::validator();
    let properties = validator
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap();
    assert_eq!(
        properties.get_document("email").unwrap(),
        &Email::bson_schema()
    );
    let items = properties
        .get_document("recent_parts")
        .unwrap()
        .get_document("properties")
        .unwrap()
        .get_document("items")
        .unwrap();
    assert_eq!(items.get_document("items").unwrap(), &Part::bson_schema());
}
