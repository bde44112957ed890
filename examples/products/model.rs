//! The models of seed 000's products and parts example, shared with the report tests.
#![allow(dead_code)]

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// The parts catalog: canonical details, searched by name.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "parts")]
#[index(keys(name = 1))]
// seed 000: "frequent part searches by name" are why `name` is indexed
#[query(name = "parts_by_name", eq(name), index = "name_1")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: String,
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct EmbeddedPart {
    #[serde(rename = "partId")]
    pub part_id: String,
    pub name: String,
}

/// Embedded: bounded parts, read and managed with the product.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "productsEmbedded")]
pub struct ProductEmbedded {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[embed(max = 50)]
    pub parts: Vec<EmbeddedPart>,
}

/// Referenced: shared parts with their own lifecycle; a bounded array of ids.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "productsReferenced")]
pub struct ProductReferenced {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[serde(rename = "partIds")]
    #[reference(max = 200)]
    pub part_ids: Vec<Ref<Part>>,
}

/// Hybrid: references plus the display names, kept current in the same transaction as a rename.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "productsHybrid")]
pub struct ProductHybrid {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[extended_ref(to = Part, fields = "name", sync = "transactional", max = 50)]
    pub parts: Vec<ProductHybridParts>,
}

/// Large and cold (seed 003, question 6): the specification sheet of a product, up to 64 KB,
/// read on the product's own page and never in listings, so it is not embedded: it lives in a
/// second collection under the product's `_id`.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "productSpecs", same_id_as = ProductReferenced, optional_part)]
pub struct ProductSpec {
    #[serde(rename = "_id")]
    pub id: String,
    #[schema(max_length = 65536)]
    pub sheet: String,
}

/// The example's schema.
pub fn schema() -> Schema {
    Schema::new()
        .model::<Part>()
        .model::<ProductEmbedded>()
        .model::<ProductReferenced>()
        .model::<ProductSpec>()
        .model::<ProductHybrid>()
        .build()
        .expect("a consistent schema")
}
