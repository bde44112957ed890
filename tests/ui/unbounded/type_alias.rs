use mongo_schema::prelude::*;

// The derive cannot see through an alias; the type-level check does.
type Tags = Vec<String>;

#[derive(BsonSchema)]
pub struct Ticket {
    pub tags: Tags,
}

fn main() {}
