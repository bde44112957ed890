use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `not_null` says "absent, never null": the validator refuses `null`, so the field must be an
// `Option` that serde leaves out when `None`
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // serde writes `None` as `null`, which the validator would then refuse
    #[schema(not_null)]
    pub nickname: Option<String>,
    // never null already
    #[schema(not_null)]
    pub name: String,
    // as meant: absent when `None`, never `null`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(not_null, max_length = 20)]
    pub phone: Option<String>,
}

fn main() {}
