use mongo_schema::geo::Point;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// one mistake, one error: the index type's case, not also a `near` without its index
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "places")]
#[index(keys(location = "2DSphere"))]
#[query(name = "nearest", near(location), limit = 10)]
pub struct Place {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub location: Point,
}

fn main() {}
