use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

mod as_millis {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &i64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(*value * 1000)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        let millis: i64 = serde::Deserialize::deserialize(deserializer)?;
        Ok(millis / 1000)
    }
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "sessions")]
pub struct Session {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[serde(with = "as_millis")]
    pub expires_at: i64,
}

fn main() {
    // the generated items are there: uses compile
    let _ = Session::validator();
}
