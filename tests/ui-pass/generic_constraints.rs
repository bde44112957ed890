//! A constraint on a generic field is a bound of the impl: `Labeled<String>` has a schema.

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;

#[derive(BsonSchema)]
pub struct Labeled<T> {
    #[schema(max_length = 5)]
    pub label: T,
}

pub fn main() {
    let schema = <Labeled<String> as BsonSchema>::bson_schema();
    assert_eq!(
        schema
            .get_document("properties")
            .unwrap()
            .get_document("label")
            .unwrap(),
        &doc! { "bsonType": "string", "maxLength": 5_i64 }
    );
}
