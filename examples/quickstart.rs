//! Quickstart: seed 000's product with its parts embedded, bounded, validated, indexed, applied
//! and queried.
//!
//! ```text
//! cargo run --example quickstart            # an embedded SecantusDB server is started for you
//! MONGODB_URI=mongodb://localhost:27017 cargo run --example quickstart
//! ```

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// A part as the product page shows it. Parts are bounded, read with the product and owned by
/// it, so they are embedded (seed 000, "Embed Parts When They Belong with the Product").
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone)]
pub struct Part {
    #[serde(rename = "partId")]
    pub part_id: String,
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug)]
#[collection(name = "productsEmbedded")]
#[index(keys(name = 1))]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    /// A product has at most 50 parts: without this bound the struct does not compile.
    #[embed(max = 50)]
    pub parts: Vec<Part>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let uri = mongo_schema_testkit::uri(); // MONGODB_URI, or a local SecantusDB started for us
    let client = mongodb::Client::with_uri_str(&uri).await?;
    let db = client.database("mongo_schema_quickstart");
    println!("server: {uri}, database `{}`\n", db.name());

    println!("`productsEmbedded` validator, generated from the struct:");
    println!("{}\n", serde_json::to_string_pretty(&Product::validator())?);

    let schema = Schema::new().model::<Product>().build()?;
    println!("plan:\n{}", schema.plan(&db).await?);
    println!("apply:\n{}", schema.apply(&db).await?);
    println!(
        "apply again (what every later start-up does):\n{}",
        schema.apply(&db).await?
    );

    let products = Product::collection(&db);
    let bike = Product {
        id: "bike-1".into(),
        name: "City Bike".into(),
        parts: vec![
            Part {
                part_id: "wheel-1".into(),
                name: "Wheel".into(),
            },
            Part {
                part_id: "brake-1".into(),
                name: "Disc Brake".into(),
            },
        ],
    };
    products
        .replace_one(doc! { "_id": &bike.id }, &bike)
        .upsert(true)
        .await
        .in_collection(Product::COLLECTION)?;

    // db.productsEmbedded.findOne({ _id: "bike-1" }): the parts come with it, no join
    let found = products
        .find_one(doc! { "_id": "bike-1" })
        .await?
        .expect("just written");
    println!(
        "findOne({{ _id: \"bike-1\" }}) -> {} with parts {:?}\n",
        found.name,
        found
            .parts
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
    );

    // the bound holds on the server too: a 51st part is refused, with the field and the rule
    let too_many: Vec<Part> = (0..50)
        .map(|i| Part {
            part_id: format!("bolt-{i}"),
            name: "Bolt".into(),
        })
        .collect();
    let refused = products
        .update_one(
            doc! { "_id": "bike-1" },
            doc! { "$push": { "parts": { "$each": mongo_schema::bson::to_bson(&too_many)? } } },
        )
        .await
        .in_collection(Product::COLLECTION);
    match refused {
        Err(mongo_schema::Error::Validation(error)) => {
            println!("pushing 50 more parts: refused: {error}\n")
        }
        other => return Err(format!("expected a validation error, got {other:?}").into()),
    }

    // the search by name uses the declared index
    let explain = db
        .run_command(doc! { "explain": { "find": "productsEmbedded", "filter": { "name": "City Bike" } }, "verbosity": "queryPlanner" })
        .await?;
    let plan = explain
        .get_document("queryPlanner")?
        .get_document("winningPlan")?;
    let stage = plan
        .get_document("inputStage")
        .map(|s| s.get_str("stage").unwrap_or("?"))
        .unwrap_or_else(|_| plan.get_str("stage").unwrap_or("?"));
    println!("find({{ name: \"City Bike\" }}) is served by: {stage}");
    Ok(())
}
