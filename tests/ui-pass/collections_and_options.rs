//! Maps, fixed arrays, sets, `Option` with and without `skip_serializing_if`, element
//! constraints and `additional_properties = false`.

use std::collections::{BTreeSet, HashMap};

use mongo_schema::bson::{doc, Bson};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "devices", additional_properties = false)]
pub struct Device {
    pub name: String,
    #[embed(max = 5)]
    pub counters: HashMap<String, i64>,
    pub ipv4: [u8; 4],
    #[embed(max = 8)]
    pub roles: BTreeSet<String>,
    #[embed(max = 10)]
    #[schema(max_length = 32)]
    pub labels: Vec<String>,
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[embed(max = 3)]
    pub aliases: Option<Vec<String>>,
    #[schema(minimum = 0, maximum = 100)]
    pub battery: Option<i32>,
}

#[derive(BsonSchema, Serialize, Deserialize)]
#[schema(additional_properties = false)]
pub struct Coordinates {
    pub lat: f64,
    pub lng: f64,
}

pub fn main() {
    let validator = Device::validator();
    let schema = validator.get_document("$jsonSchema").unwrap();
    assert_eq!(schema.get_bool("additionalProperties"), Ok(false));

    // `location` may be absent; `note` is always written (as null when None)
    let required = schema.get_array("required").unwrap();
    assert!(required.contains(&Bson::from("note")));
    assert!(!required.contains(&Bson::from("location")));
    assert_eq!(required.len(), 8);

    let properties = schema.get_document("properties").unwrap();
    // a root without an `_id` field still admits the server-generated one
    assert_eq!(
        properties.get_document("_id").unwrap(),
        &doc! { "bsonType": "objectId" }
    );
    assert_eq!(
        properties.get_document("counters").unwrap(),
        &doc! { "bsonType": "object", "maxProperties": 5_i64, "additionalProperties": { "bsonType": "long" } }
    );
    assert_eq!(
        properties.get_document("ipv4").unwrap(),
        &doc! {
            "bsonType": "array", "minItems": 4_i64, "maxItems": 4_i64,
            "items": { "bsonType": "int", "minimum": 0_i64, "maximum": 255_i64 },
        }
    );
    assert_eq!(
        properties
            .get_document("roles")
            .unwrap()
            .get_bool("uniqueItems"),
        Ok(true)
    );
    assert_eq!(
        properties.get_document("labels").unwrap(),
        &doc! { "bsonType": "array", "maxItems": 10_i64, "items": { "bsonType": "string", "maxLength": 32_i64 } }
    );
    assert_eq!(
        properties.get_document("note").unwrap(),
        &doc! { "bsonType": ["string", "null"] }
    );
    assert_eq!(
        properties.get_document("location").unwrap(),
        &doc! { "bsonType": ["string", "null"] }
    );
    assert_eq!(
        properties
            .get_document("aliases")
            .unwrap()
            .get_array("bsonType")
            .unwrap(),
        &vec![Bson::from("array"), Bson::from("null")]
    );
    assert_eq!(
        properties.get_document("battery").unwrap(),
        &doc! { "bsonType": ["int", "null"], "minimum": 0_i64, "maximum": 100_i64 }
    );

    let coordinates = Coordinates::bson_schema();
    assert_eq!(coordinates.get_bool("additionalProperties"), Ok(false));
    assert!(!coordinates
        .get_document("properties")
        .unwrap()
        .contains_key("_id"));
}
