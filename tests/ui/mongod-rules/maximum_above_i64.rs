use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Reading {
    #[schema(minimum = -9223372036854775808, maximum = 18446744073709551615)]
    pub value: i64,
}

fn main() {}
