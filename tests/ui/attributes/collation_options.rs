use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// every malformed collation option is reported, each at its token
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "accounts", collation(strength = 2))]
#[index(keys(email = 1), collation(locale = "en", strength = 7))]
#[query(name = "by_email", eq(email), collation(locale = "en", case_first = "first", strenght = 2))]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
}

fn main() {}
