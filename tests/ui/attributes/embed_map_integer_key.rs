use std::collections::HashMap;

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Stock {
    pub sku: String,
    #[embed(max = 20)]
    pub quantity_by_bin: HashMap<u32, i64>,
}

fn main() {}
