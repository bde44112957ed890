use mongo_schema::prelude::*;

#[derive(BsonSchema)]
pub struct Profile {
    pub display_name: String,
    pub tags: Option<Vec<String>>,
}

fn main() {}
