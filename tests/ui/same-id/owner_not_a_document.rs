use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Dimensions {
    pub width: f64,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", same_id_as = Dimensions)]
pub struct ProductSpec {
    #[serde(rename = "_id")]
    pub id: String,
    pub sheet: String,
}

fn main() {}
