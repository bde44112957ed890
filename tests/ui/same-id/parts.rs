//! `#[collection(same_id_as = Owner)]`: a part stored under its owner's `_id`, which it holds,
//! of the owner's `_id` type, never an `Option`; the owner is a collection root.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// The owner: a product, whose `_id` is a `String`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
}

/// The spec sheet of a product, under the product's `_id`: a `String`, not an `i64`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", same_id_as = Product)]
pub struct IdTypeDiffers {
    #[serde(rename = "_id")]
    pub id: i64,
    pub sheet: String,
}

/// The `_id` of a part is its owner's, never left to the server: not an `Option`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", same_id_as = Product)]
pub struct OptionalId {
    pub sheet: String,
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A part holds its owner's `_id`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", same_id_as = Product)]
pub struct PartWithoutId {
    pub sheet: String,
}

/// `optional_part` (an owner may have no part) goes with `same_id_as`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", optional_part)]
pub struct OptionalPartAlone {
    #[serde(rename = "_id")]
    pub id: String,
}

/// The owner is a collection root, not a struct that roots embed.
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Dimensions {
    pub width: f64,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", same_id_as = Dimensions)]
pub struct OwnerNotADocument {
    #[serde(rename = "_id")]
    pub id: String,
    pub sheet: String,
}

fn main() {}
