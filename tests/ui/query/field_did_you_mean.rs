use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub slug: String,
    pub starts_at: DateTime,
}

fn main() {
    // a misspelt field: one error, at `strats_at`, with the field it is near
    let _ = field!(Event, strats_at);
    // the stored (serde) name where `field!` takes the Rust name: one error, naming `starts_at`
    let _ = field!(Event, startsAt);
    // the first segment of a dotted path is checked the same way (a swap is one edit)
    let _ = field!(Event, slgu.len);
    // a name near none: the struct's stored fields are listed
    let _ = field!(Event, venue);
    // a local variable of the field's name does not get in the way of a correct path
    let starts_at = 1;
    let _ = (starts_at, field!(Event, starts_at));
}
