use mongo_schema::geo::Point;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// a near query returns the nearest first: no sort of its own, no keyset pages
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "places")]
#[index(keys(location = "2dsphere"))]
#[query(name = "nearest", near(location), sort(name = 1))]
#[query(name = "nearest_pages", near(location), pages)]
pub struct Place {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub location: Point,
}

fn main() {}
