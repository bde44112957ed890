use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers", collation(locale = "xx_NOPE", strength = 2))]
#[index(keys(email = 1), collation(locale = "english", strength = 2))]
#[index(keys(name = 1), collation(locale = "en_GB"))]
// mongod's own names: accepted
#[index(keys(city = 1), collation(locale = "simple"))]
#[index(keys(name = 1, city = 1), collation(locale = "de@collation=phonebook"))]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
    pub name: String,
    pub city: String,
}

fn main() {}
