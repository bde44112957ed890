use mongo_schema::prelude::*;

#[derive(BsonSchema)]
pub struct Attachment {
    pub file_name: String,
    pub chunks: Box<[u8]>,
}

fn main() {}
