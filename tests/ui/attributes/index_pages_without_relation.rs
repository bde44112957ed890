use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `pages = false` keeps an index that starts with a reference and another key from ordering the
// reference's keyset pages; on an index that starts with no reference it changes nothing
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "loans")]
#[index(keys(loaned_at = -1, member_id = 1), pages = false)]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub member_id: ObjectId,
    pub loaned_at: DateTime,
}

fn main() {}
