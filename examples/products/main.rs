//! Seed 000's products and parts, in the three models the seed compares: embedded, referenced
//! and hybrid (references plus copied names with a declared sync strategy); and seed 003's
//! sixth outcome, the product's 40 KB specification sheet as a large and cold part under the
//! product's `_id` in a second collection.
//!
//! ```text
//! cargo run --example products
//! ```

mod model;

use futures_util::TryStreamExt;
use model::*;
use mongo_schema::bson::doc;
use mongo_schema::explain;
use mongo_schema::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = mongodb::Client::with_uri_str(mongo_schema_testkit::uri()).await?;
    let db = client.database("mongo_schema_products");
    db.drop().await?;
    let schema = model::schema();
    print!("{}", schema.apply(&db).await?);

    let wheel = Part {
        id: "wheel-1".into(),
        name: "Wheel".into(),
    };
    let brake = Part {
        id: "brake-1".into(),
        name: "Disc Brake".into(),
    };
    Part::collection(&db).insert_many([&wheel, &brake]).await?;
    // the declared search by name (`#[query(name = "parts_by_name", ...)]`), on the `name_1` index
    let found = Part::parts_by_name(&db, "Wheel").await?;
    println!(
        "parts named \"Wheel\": {:?} ({})",
        found.iter().map(|p| &p.id).collect::<Vec<_>>(),
        Part::parts_by_name(&db, "Wheel").explain().await?
    );

    println!("\nembedded: db.productsEmbedded.findOne({{ _id: \"bike-1\" }})");
    ProductEmbedded::collection(&db)
        .insert_one(ProductEmbedded {
            id: "bike-1".into(),
            name: "City Bike".into(),
            parts: vec![
                EmbeddedPart {
                    part_id: "wheel-1".into(),
                    name: "Wheel".into(),
                },
                EmbeddedPart {
                    part_id: "brake-1".into(),
                    name: "Disc Brake".into(),
                },
            ],
        })
        .await?;
    let bike = ProductEmbedded::collection(&db)
        .find_one(doc! { "_id": "bike-1" })
        .await?
        .expect("inserted");
    println!(
        "  {} with {:?}: one read, no join",
        bike.name,
        bike.parts.iter().map(|p| &p.name).collect::<Vec<_>>()
    );

    println!("\nreferenced: $match then $lookup on partIds -> parts._id");
    ProductReferenced::collection(&db)
        .insert_one(ProductReferenced {
            id: "bike-1".into(),
            name: "City Bike".into(),
            part_ids: vec![wheel.to_ref(), brake.to_ref()],
        })
        .await?;
    let lookup = ProductReferenced::PART_IDS
        .lookup_in(&db)
        .filter(doc! { "_id": "bike-1" });
    for stage in lookup.pipeline() {
        println!("  {stage}");
    }
    // the join's command, for explain, before the lookup is awaited (and consumed)
    let join = lookup.related_find_command(vec!["wheel-1", "brake-1"].into());
    for joined in lookup.await? {
        println!(
            "  {} with {:?}",
            joined.doc.name,
            joined.related.iter().map(|p| &p.name).collect::<Vec<_>>()
        );
    }
    println!("  join: {}", explain(&db, join).await?);
    let product = ProductReferenced::collection(&db)
        .find_one(doc! { "_id": "bike-1" })
        .await?
        .expect("inserted");
    let resolved = Ref::resolve_all(&db, &product.part_ids).await?;
    println!(
        "  or application-side, one $in query: {:?} (missing: {})",
        resolved
            .documents
            .iter()
            .map(|p| &p.name)
            .collect::<Vec<_>>(),
        resolved.missing.len()
    );

    println!("\nhybrid: references plus copied names, transactional");
    ProductHybrid::collection(&db)
        .insert_one(ProductHybrid {
            id: "bike-1".into(),
            name: "City Bike".into(),
            parts: vec![(&wheel).into(), (&brake).into()],
        })
        .await?;
    let rename = schema
        .update_source::<Part>(
            &db,
            &brake.id,
            doc! { "$set": { "name": "Hydraulic Disc Brake" } },
        )
        .await?;
    let hybrid = ProductHybrid::collection(&db)
        .find_one(doc! { "_id": "bike-1" })
        .await?
        .expect("inserted");
    println!(
        "  renamed brake-1: {} product(s) refreshed in the same transaction -> {:?}",
        rename.total_rewritten(),
        hybrid.parts.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
    let embedded = ProductEmbedded::collection(&db)
        .find_one(doc! { "_id": "bike-1" })
        .await?
        .expect("inserted");
    println!(
        "  the embedded model has no sync policy, so its copy is still {:?}: the drift the seed warns about",
        embedded.parts[1].name
    );

    println!("\nlarge and cold: the 40 KB specification sheet under the product's `_id`");
    let trike = ProductReferenced {
        id: "trike-1".into(),
        name: "Cargo Trike".into(),
        part_ids: vec![wheel.to_ref()],
    };
    let sheet = ProductSpec {
        id: trike.id.clone(),
        sheet: "frame: aluminium; load: 120 kg; ".repeat(1280),
    };
    // the product and its sheet, in one transaction
    ProductSpec::OWNER.insert(&db, &trike, &sheet).await?;
    let listing: Vec<mongo_schema::bson::Document> = db
        .collection::<mongo_schema::bson::Document>("productsReferenced")
        .find(doc! {})
        .await?
        .try_collect()
        .await?;
    let listed: usize = listing
        .iter()
        .map(|p| mongo_schema::bson::to_vec(p).map_or(0, |b| b.len()))
        .sum();
    println!(
        "  the listing reads {} products in {listed} bytes: no sheet in it",
        listing.len()
    );
    let read = ProductSpec::of(&db, &trike.to_ref())
        .await?
        .ok_or("the trike's sheet")?;
    println!(
        "  ProductSpec::of(trike-1): {} bytes of sheet, one find on `_id` ({})",
        read.sheet.len(),
        explain(
            &db,
            doc! { "find": "productSpecs", "filter": { "_id": "trike-1" } }
        )
        .await?
    );
    let joined = ProductSpec::OWNER
        .lookup_in(&db)
        .filter(doc! { "_id": { "$in": ["bike-1", "trike-1"] } })
        .await?;
    for row in &joined {
        println!(
            "  $lookup on _id: {} with {}",
            row.doc.name,
            if row.one().is_some() {
                "its sheet"
            } else {
                "no sheet (optional_part)"
            }
        );
    }
    let audit = schema.audit(&db).await?;
    let specs = audit
        .parts
        .iter()
        .find(|p| p.part == "productSpecs")
        .ok_or("the part is audited")?;
    println!(
        "  audit: {} orphan sheets, {} products without one counted (the sheet is optional)",
        specs.orphans, specs.owners_without_part
    );
    let deleted = schema
        .delete_source::<ProductReferenced>(&db, &trike.id)
        .await?;
    println!(
        "  delete_source::<ProductReferenced>(trike-1) deleted the product and, in the same transaction, {:?}",
        deleted.parts_deleted
    );
    assert!(ProductSpec::of(&db, &trike.to_ref()).await?.is_none());

    println!("\nthe parts catalog searched by name: db.parts.find({{ name: \"Wheel\" }})");
    let found: Vec<Part> = Part::collection(&db)
        .find(doc! { "name": "Wheel" })
        .await?
        .try_collect()
        .await?;
    println!("  {:?}", found.iter().map(|p| &p.id).collect::<Vec<_>>());
    println!(
        "  {}",
        explain(&db, doc! { "find": "parts", "filter": { "name": "Wheel" } }).await?
    );
    Ok(())
}
