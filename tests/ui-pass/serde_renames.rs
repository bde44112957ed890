//! serde renames are followed into the validator's property names, `required` list, enum values
//! and index keys.

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Channel {
    Email,
    PhoneCall,
    #[serde(rename = "web-chat")]
    WebChat,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "supportTickets")]
#[serde(rename_all = "camelCase")]
#[index(keys(customer_name = 1, r#type = 1, opened_by = -1))]
pub struct SupportTicket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub customer_name: String,
    pub r#type: String,
    pub channel: Channel,
    #[serde(rename(serialize = "openedBy", deserialize = "opened_by"))]
    pub opened_by: String,
    #[serde(rename = "sla_hours")]
    pub sla_hours_remaining: i32,
    #[serde(skip)]
    pub cached_score: f64,
    #[serde(default, alias = "prio")]
    pub priority: i32,
}

fn properties(validator: &BsonDocument) -> Vec<String> {
    validator
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

pub fn main() {
    let validator = SupportTicket::validator();
    assert_eq!(
        properties(&validator),
        [
            "_id",
            "customerName",
            "type",
            "channel",
            "openedBy",
            "sla_hours",
            "priority"
        ]
    );
    let schema = validator.get_document("$jsonSchema").unwrap();
    let required: Vec<Bson> = schema.get_array("required").unwrap().clone();
    assert_eq!(required.len(), 7);
    assert!(!required.contains(&Bson::from("cachedScore")));
    assert_eq!(
        schema
            .get_document("properties")
            .unwrap()
            .get_document("channel")
            .unwrap(),
        &doc! { "bsonType": "string", "enum": ["EMAIL", "PHONE_CALL", "web-chat"] }
    );
    assert_eq!(
        SupportTicket::indexes()[0].keys,
        doc! { "customerName": 1, "type": 1, "openedBy": -1 }
    );
}
