use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};
#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    PendingReply,
    #[serde(rename = "done")]
    Closed,
}
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct StatusChange {
    pub status: Status,
    pub at: DateTime,
}
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets", additional_properties = false)]
#[index(keys(team = 1, status = 1, priority = -1, updated_at = -1), name = "agent_queue")]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(max_length = 40)]
    pub team: String,
    pub status: Status,
    #[schema(minimum = 0, maximum = 5)]
    pub priority: i32,
    #[embed(max = 10)]
    #[schema(max_length = 20)]
    pub tags: Vec<String>,
    #[embed(max = 50, cap)]
    pub history: Vec<StatusChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub updated_at: DateTime,
}
fn main() {
    println!(
        "{}",
        serde_json::to_string_pretty(&Ticket::validator()).unwrap()
    );
    println!("{:#?}", Ticket::collection_spec().indexes);
}
