use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "sensors")]
pub struct Sensor {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub site: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "alerts")]
pub struct Alert {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub reading_id: Ref<Reading>,
}

// a time series collection holds no copy kept in sync, no subset or counter, and is no part
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "readings", timeseries(time = at, meta = sensor), same_id_as = Sensor)]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: DateTime,
    pub sensor: String,
    #[extended_ref(to = Sensor, fields = "site", sync = "async")]
    pub site: ReadingSite,
    // a frozen copy is taken once: accepted
    #[extended_ref(to = Sensor, fields = "site", sync = "frozen", as = FirstSite)]
    pub first_site: FirstSite,
    #[counter(of = Alert)]
    pub alerts: i64,
}

fn main() {}
