//! Calls of a declared query's function (and of the typed filter builder) that rustc refuses: a
//! value of another type than the field's, and pages of a query not declared with `pages`.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[query(name = "agent_queue", eq(team), sort(priority = -1), limit = 50)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub priority: i32,
}

/// A value of the field's type (`wrong_value_type`).
async fn queue(db: &mongodb::Database) {
    // `team` is a String: an integer is refused by the declared query's function...
    let _ = Ticket::agent_queue(db, &7).await;
    // ...and by the typed filter builder
    let _ = mongo_schema::query::Filter::<Ticket>::new().eq(field!(Ticket, priority), "high");
}

/// Pages of a query declared with `pages` (`page_without_pages`).
async fn second_page(db: &mongo_schema::mongodb::Database) {
    let first = Ticket::agent_queue(db, "billing").page().await;
}

fn main() {}
