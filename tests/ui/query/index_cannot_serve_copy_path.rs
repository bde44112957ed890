use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "venues")]
pub struct Venue {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

// the index is on the same struct, its keys and the query's fields are stored paths the derive
// knows (the copy's `_id`, as a quoted path and as a dotted Rust path): fitted at compile time
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
#[serde(rename_all = "camelCase")]
#[index(keys("venue._id" = 1, status = 1, starts_at = -1), name = "by_date")]
#[query(name = "at_venue", eq(venue.id), sort(starts_at = -1), limit = 20, index = "by_date")]
pub struct Event {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Venue, fields = "name", sync = "async")]
    pub venue: EventVenue,
    pub status: String,
    pub starts_at: DateTime,
}

fn main() {}
