use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub customer: Ref<Customer>,
}

fn main() {
    let part: Ref<Part> = Ref::new(ObjectId::new());
    // a Ref<Part> cannot be passed where a Ref<Customer> is wanted
    let _order = Order { id: ObjectId::new(), customer: part };
}
