use mongo_schema::prelude::*;
#[derive(BsonSchema)]
pub struct Address {
    pub city: String,
}

#[derive(Document)]
#[collection(name = "customers")]
pub struct Customer {
    #[reference]
    pub address: Ref<Address>,
}

fn main() {}
