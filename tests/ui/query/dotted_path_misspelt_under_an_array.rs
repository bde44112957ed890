use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Treatment {
    pub code: String,
    pub qty: i32,
}

/// A misspelt segment under an array of sub-documents: one error, at the misspelt segment.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "appointments")]
#[query(name = "with_treatment", eq(treatments.cod), limit = 10)]
pub struct Appointment {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[embed(max = 8)]
    pub treatments: Vec<Treatment>,
}

fn main() {}
