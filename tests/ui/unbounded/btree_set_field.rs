use std::collections::BTreeSet;

use mongo_schema::prelude::*;

#[derive(BsonSchema)]
pub struct Part {
    pub sku: String,
    pub compatible_models: BTreeSet<String>,
}

fn main() {}
