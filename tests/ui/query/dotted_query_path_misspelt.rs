use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub number: i32,
}

/// A misspelt segment of a declared query's dotted path: one error, at the path.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "books")]
#[query(name = "by_series", eq(series.nmae), limit = 10)]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub series: Option<Series>,
}

fn main() {}
