use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Note {
    #[schema(max_length = 9223372036854775808)]
    pub body: String,
}

fn main() {}
