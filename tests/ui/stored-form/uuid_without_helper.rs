use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// serde writes a `uuid::Uuid` as binary subtype 0; `doc!`, mongosh and the other drivers write 4
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: uuid::Uuid,
    pub referrer: Option<uuid::Uuid>,
    #[embed(max = 5)]
    pub devices: Vec<uuid::Uuid>,
    // said out loud: compiles
    #[serde(with = "mongo_schema::bson::serde_helpers::uuid_1_as_binary")]
    pub external: uuid::Uuid,
    #[schema(stored_as = mongo_schema::bson::Binary)]
    pub legacy: uuid::Uuid,
    pub bson_uuid: mongo_schema::bson::Uuid,
}

fn main() {}
