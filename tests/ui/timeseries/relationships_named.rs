use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "readings", timeseries(time = at, meta = sensor))]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: DateTime,
    #[reference]
    pub sensor: Ref<Sensor>,
    pub celsius: f64,
}

// a time series collection is no subset or counter child, no source of a copy kept in sync, no
// owner of a part
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "sensors")]
pub struct Sensor {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[counter(of = Reading, via = sensor)]
    pub readings: i64,
    #[extended_ref(to = Reading, fields = "celsius", sync = "transactional")]
    pub last: SensorLast,
    // a frozen copy is taken once: accepted
    #[extended_ref(to = Reading, fields = "celsius", sync = "frozen", as = FirstReading)]
    pub first: FirstReading,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "reading_notes", same_id_as = Reading)]
pub struct ReadingNote {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub text: String,
}

fn main() {}
