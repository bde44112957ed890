//! A support desk with every kind of copy, for the sync fault tests: cases copy the name of a
//! customer (transactional, unset when the customer is deleted), of an agent (async, unset) and
//! of a team (async, kept), and keep their three newest notes with a count (a subset).
#![allow(dead_code)]

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "agents")]
pub struct Agent {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "teams")]
pub struct Team {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NotePreview {
    pub at: DateTime,
    pub writer: i32,
}

impl From<&Note> for NotePreview {
    fn from(note: &Note) -> Self {
        NotePreview {
            at: note.at,
            writer: note.writer,
        }
    }
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "cases")]
pub struct Case {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional", on_delete = "unset")]
    pub customer: Option<CaseCustomer>,
    #[extended_ref(to = Agent, fields = "name", sync = "async", on_delete = "unset")]
    pub agent: Option<CaseAgent>,
    #[extended_ref(to = Team, fields = "name", sync = "async")]
    pub team: Option<CaseTeam>,
    #[subset(of = Note, max = 3, sort = "-at", count = "note_count")]
    pub notes: Vec<NotePreview>,
    pub note_count: i64,
    #[embed(max = 3)]
    pub labels: Vec<String>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "notes")]
#[index(keys(case_id = 1, at = -1))]
pub struct Note {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub case_id: Ref<Case>,
    pub at: DateTime,
    pub writer: i32,
}

pub fn schema() -> Schema {
    Schema::new()
        .model::<Customer>()
        .model::<Agent>()
        .model::<Team>()
        .model::<Case>()
        .model::<Note>()
        .build()
        .expect("the cases schema builds")
}

pub fn case(customer: &Customer, agent: &Agent, team: &Team, i: usize) -> Case {
    Case {
        id: ObjectId::new(),
        subject: format!("case {i}"),
        customer: Some(customer.into()),
        agent: Some(agent.into()),
        team: Some(team.into()),
        notes: vec![],
        note_count: 0,
        labels: vec![],
    }
}

/// A fresh database named after `prefix` with the schema applied.
pub async fn applied(prefix: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    schema().apply(&db).await.unwrap();
    db
}

pub fn agent(name: &str) -> Agent {
    Agent {
        id: ObjectId::new(),
        name: name.into(),
    }
}

pub fn customer(name: &str) -> Customer {
    Customer {
        id: ObjectId::new(),
        name: name.into(),
    }
}

pub fn team(id: i64, name: &str) -> Team {
    Team {
        id,
        name: name.into(),
    }
}

/// A desk: one customer (Ana), agent (Bo) and team (Billing), and `n` cases of theirs.
pub async fn desk(db: &mongodb::Database, n: usize) -> (Customer, Agent, Team, Vec<Case>) {
    let (c, a, t) = (customer("Ana"), agent("Bo"), team(1, "Billing"));
    Customer::collection(db).insert_one(&c).await.unwrap();
    Agent::collection(db).insert_one(&a).await.unwrap();
    Team::collection(db).insert_one(&t).await.unwrap();
    let cases: Vec<Case> = (0..n).map(|i| case(&c, &a, &t, i)).collect();
    if n > 0 {
        Case::collection(db).insert_many(&cases).await.unwrap();
    }
    (c, a, t, cases)
}

/// The names in the copies at `path` (`agent`, `team`, `customer`) of every case, in `_id` order.
pub async fn copied_names(db: &mongodb::Database, path: &str) -> Vec<Option<String>> {
    super::all(
        db.collection::<BsonDocument>("cases")
            .find(doc! {})
            .sort(doc! { "_id": 1 }),
    )
    .await
    .iter()
    .map(|c| {
        c.get_document(path)
            .ok()
            .and_then(|copy| copy.get_str("name").ok())
            .map(str::to_owned)
    })
    .collect()
}

/// Renames an agent with a plain driver write (as another service would).
pub async fn rename_agent(db: &mongodb::Database, id: ObjectId, name: &str) {
    Agent::collection(db)
        .update_one(doc! { "_id": id }, doc! { "$set": { "name": name } })
        .await
        .unwrap();
}

/// Whether `started` is the fan-out of an agent's name into the cases (what a test holds to
/// pause a worker in the middle of its writes).
pub fn agent_fan_out(started: &mongodb::event::command::CommandStartedEvent) -> bool {
    started.command_name == "update"
        && started.command.get_str("update").ok() == Some("cases")
        && started
            .command
            .get_array("updates")
            .ok()
            .and_then(|u| u.first()?.as_document()?.get_document("q").ok())
            .is_some_and(|q| q.contains_key("agent._id"))
}

/// Waits until the `n` cases' copies of the agent all say `name`, failing the test with `what`
/// after `timeout`.
pub async fn agent_copies_become(
    db: &mongodb::Database,
    n: usize,
    name: &str,
    timeout: std::time::Duration,
    what: &str,
) -> std::time::Duration {
    super::eventually(timeout, what, || async {
        copied_names(db, "agent").await == vec![Some(name.to_owned()); n]
    })
    .await
}

/// A standby's takeover from a worker paused in its fan-out (`held` hears the paused one's
/// [`agent_fan_out`]): renames `agent` to "Older" and waits until the paused worker is held
/// sending it, waits until `standby` takes over, renames the agent to "Newer" and waits until
/// the three cases' copies say so (`newer_lands`); 20 s each.
pub async fn take_over_from_a_paused_fan_out(
    db: &mongodb::Database,
    agent: ObjectId,
    held: std::sync::mpsc::Receiver<()>,
    standby: &mongo_schema::SyncWorkerHandle,
    newer_lands: &str,
) {
    let twenty = std::time::Duration::from_secs(20);
    rename_agent(db, agent, "Older").await;
    super::wait_until_held(held, "the first worker reached its fan-out").await;
    super::eventually(twenty, "the standby takes over", || async {
        standby.stats().is_active()
    })
    .await;
    rename_agent(db, agent, "Newer").await;
    agent_copies_become(db, 3, "Newer", twenty, newer_lands).await;
}
