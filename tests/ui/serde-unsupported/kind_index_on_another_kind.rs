use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
#[serde(tag = "kind")]
pub enum Event {
    #[index(keys(rows = 1))]
    Login { user: String },
    Import { rows: i64 },
}

fn main() {}
