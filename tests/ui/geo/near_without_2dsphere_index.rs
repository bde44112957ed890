use mongo_schema::geo::Point;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// mongod answers `$geoNear` only with a 2dsphere index on the field
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "places")]
#[index(keys(kind = 1))]
#[query(name = "nearest", eq(kind), near(location), limit = 10)]
pub struct Place {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub kind: String,
    pub location: Point,
}

fn main() {}
