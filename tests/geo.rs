//! Places and distances on the real server: GeoJSON points with a `2dsphere` index, declared
//! `near` queries that return exactly the places within a distance, nearest first (the expected
//! set and order computed here with the haversine formula on mongod's sphere), `within` a
//! circle and a polygon, a latitude of 95 refused by the validator and by `Point::new`, and the
//! geo queries in the fit, `prove` and the report.

mod common;

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::geo::{Area, Point, EARTH_RADIUS_METRES};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Cafe,
    Bar,
}

// several indexes and queries name `location` (rust-lang/rust-clippy#13238)
#[allow(clippy::duplicated_attributes)]
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "places")]
#[index(keys(location = "2dsphere"))]
#[index(keys(kind = 1, location = "2dsphere"), name = "kind_location")]
#[query(name = "nearest", near(location), limit = 100)]
#[query(name = "nearest_of_kind", eq(kind), near(location), limit = 3)]
#[query(name = "inside", within(location))]
#[query(name = "inside_of_kind", eq(kind), within(location), sort(name = 1))]
pub struct Place {
    #[serde(rename = "_id")]
    pub id: i32,
    pub name: String,
    pub kind: Kind,
    pub location: Point,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Place>()
        .build()
        .expect("the places schema is consistent")
}

/// The centre the queries look around (Lisbon, Praça do Comércio).
fn centre() -> Point {
    Point::new(-9.1365, 38.7075).unwrap()
}

/// The great-circle distance in metres on mongod's sphere, by the haversine formula: written
/// here, not taken from the library, so that the server's answer is checked against it.
fn haversine(a: &Point, b: &Point) -> f64 {
    let (lat1, lat2) = (a.lat().to_radians(), b.lat().to_radians());
    let dlat = lat2 - lat1;
    let dlng = (b.lng() - a.lng()).to_radians();
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlng / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_METRES * h.sqrt().asin()
}

/// Forty places scattered up to about 11 km around the centre, at known coordinates (a fixed
/// sequence), none within 20 m of the query's distance, so that the server's spherical
/// arithmetic and the haversine formula agree on every membership.
fn places(max_metres: f64) -> Vec<Place> {
    let c = centre();
    let mut seed: u64 = 0x5eed_1234_abcd;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) as f64) / ((1u64 << 31) as f64)
    };
    let mut out = Vec::new();
    let mut id = 0;
    while out.len() < 40 {
        let lng = c.lng() + (next() - 0.5) * 0.25;
        let lat = c.lat() + (next() - 0.5) * 0.2;
        let location = Point::new(lng, lat).unwrap();
        if (haversine(&c, &location) - max_metres).abs() < 20.0 {
            continue;
        }
        id += 1;
        out.push(Place {
            id,
            name: format!("place {id:02}"),
            kind: if id % 3 == 0 { Kind::Bar } else { Kind::Cafe },
            location,
        });
    }
    out
}

/// The ids of `places` within `max` metres of the centre, nearest first.
fn expected_near(places: &[Place], max: f64, kind: Option<Kind>) -> Vec<i32> {
    let c = centre();
    let mut inside: Vec<(f64, i32)> = places
        .iter()
        .filter(|p| kind.is_none_or(|k| p.kind == k))
        .map(|p| (haversine(&c, &p.location), p.id))
        .filter(|(d, _)| *d <= max)
        .collect();
    inside.sort_by(|a, b| a.0.total_cmp(&b.0));
    inside.into_iter().map(|(_, id)| id).collect()
}

const MAX_METRES: f64 = 5000.0;

async fn seeded(prefix: &str) -> (mongodb::Database, Vec<Place>) {
    let db = mongo_schema_testkit::database(prefix).await;
    schema().apply(&db).await.unwrap();
    let places = places(MAX_METRES);
    Place::collection(&db).insert_many(&places).await.unwrap();
    (db, places)
}

use mongo_schema::mongodb;

#[tokio::test]
async fn near_returns_exactly_the_places_within_the_distance_nearest_first() {
    let (db, places) = seeded("geo_near").await;
    let expected = expected_near(&places, MAX_METRES, None);
    // the data reaches past the distance: the query leaves places out
    assert!(
        expected.len() >= 5 && expected.len() < places.len() - 5,
        "{} of {} inside",
        expected.len(),
        places.len()
    );
    let found: Vec<i32> = Place::nearest(&db, &centre(), MAX_METRES)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(found, expected, "nearest first, exactly those within");
    // the same with an equality, cut at the declared limit
    let cafes = expected_near(&places, MAX_METRES, Some(Kind::Cafe));
    let found: Vec<i32> = Place::nearest_of_kind(&db, &Kind::Cafe, &centre(), MAX_METRES)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(found, cafes[..3], "the three nearest cafés");
    // a smaller distance keeps fewer, and the count agrees with the rows
    let near_half = expected_near(&places, 2500.0, None);
    assert!(near_half.len() < expected.len());
    let count = Place::nearest(&db, &centre(), 2500.0)
        .count()
        .await
        .unwrap();
    assert_eq!(count as usize, near_half.len());
    // rows decode without the distance field the stage adds
    let rows = Place::nearest(&db, &centre(), MAX_METRES)
        .limit(1)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0],
        *places.iter().find(|p| p.id == expected[0]).unwrap()
    );
    // a negative distance is refused before anything is sent
    let refused = Place::nearest(&db, &centre(), -1.0).await.unwrap_err();
    assert!(
        matches!(refused, Error::InvalidArgument { .. }),
        "{refused:?}"
    );
}

#[tokio::test]
async fn within_a_circle_or_a_polygon_keeps_the_places_inside() {
    let (db, places) = seeded("geo_within").await;
    let c = centre();
    let mut in_circle: Vec<i32> = expected_near(&places, MAX_METRES, None);
    in_circle.sort_unstable();
    let mut found: Vec<i32> = Place::inside(&db, &Area::circle(c, MAX_METRES).unwrap())
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    found.sort_unstable();
    assert_eq!(found, in_circle);
    // a box east of the centre (small enough that its edges are near the parallels)
    let (west, east, south, north) = (c.lng(), c.lng() + 0.1, c.lat() - 0.05, c.lat() + 0.05);
    let corner = |lng, lat| Point::new(lng, lat).unwrap();
    let area = Area::polygon([
        corner(west, south),
        corner(east, south),
        corner(east, north),
        corner(west, north),
    ])
    .unwrap();
    let margin = 0.002;
    let clearly_inside: Vec<i32> = places
        .iter()
        .filter(|p| {
            let (x, y) = (p.location.lng(), p.location.lat());
            x > west + margin && x < east - margin && y > south + margin && y < north - margin
        })
        .map(|p| p.id)
        .collect();
    let clearly_outside: Vec<i32> = places
        .iter()
        .filter(|p| {
            let (x, y) = (p.location.lng(), p.location.lat());
            x < west - margin || x > east + margin || y < south - margin || y > north + margin
        })
        .map(|p| p.id)
        .collect();
    assert!(!clearly_inside.is_empty() && !clearly_outside.is_empty());
    let found: Vec<i32> = Place::inside_of_kind(&db, &Kind::Cafe, &area)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    for id in &clearly_inside {
        let cafe = places.iter().any(|p| p.id == *id && p.kind == Kind::Cafe);
        assert_eq!(found.contains(id), cafe, "place {id}");
    }
    for id in &clearly_outside {
        assert!(!found.contains(id), "place {id} is outside the box");
    }
    // sorted by name, as declared
    let mut sorted = found.clone();
    sorted.sort_unstable();
    assert_eq!(found, sorted, "names follow ids here");
}

#[tokio::test]
async fn a_latitude_of_95_is_refused_by_the_validator_and_by_the_constructor() {
    let db = mongo_schema_testkit::database("geo_validator").await;
    schema().apply(&db).await.unwrap();
    assert!(matches!(
        Point::new(-9.0, 95.0),
        Err(Error::InvalidArgument { .. })
    ));
    let raw = db.collection::<BsonDocument>("places");
    let place = |id: i32, lat: f64| {
        doc! {
            "_id": id, "name": "raw", "kind": "cafe",
            "location": { "type": "Point", "coordinates": [-9.0, lat] },
        }
    };
    // control: a latitude of 38 is written as is
    raw.insert_one(place(1, 38.0)).await.unwrap();
    let refused = raw
        .insert_one(place(2, 95.0))
        .await
        .in_collection("places")
        .unwrap_err();
    let Error::Validation(failure) = &refused else {
        panic!("the validator refuses it (code 121): {refused:?}")
    };
    assert!(
        // display-text: the refusal names the coordinates for the reader
        failure.to_string().contains("location.coordinates"),
        "{failure}"
    );
    // the library's own check says the same before a write
    let bad: BsonDocument = place(3, 95.0);
    assert!(<Place as mongo_schema::Document>::validator()
        .get_document("$jsonSchema")
        .is_ok());
    let local = mongo_schema::LocalValidator::new(&Place::validator()).unwrap();
    assert!(local.check(&bad).is_err());
    assert!(local.check(&place(4, 38.0)).is_ok());
}

#[test]
fn near_queries_are_fitted_to_their_2dsphere_index_and_within_gets_one_derived() {
    let schema = schema();
    let places = schema.collection("places").unwrap();
    let fit = |name: &str| common::fit_of(places, name);
    assert_eq!(
        fit("nearest").index.as_deref(),
        Some("location_2dsphere"),
        "{:?}",
        fit("nearest")
    );
    assert_eq!(
        fit("nearest_of_kind").index.as_deref(),
        Some("kind_location")
    );
    assert_eq!(fit("inside").index.as_deref(), Some("location_2dsphere"));
    // equality, sort, then the geo key (ESR with the geo key where a range goes)
    let inside_of_kind = fit("inside_of_kind");
    assert!(inside_of_kind.derived, "{inside_of_kind:?}");
    let derived = places
        .indexes
        .iter()
        .find(|i| Some(&i.name) == inside_of_kind.index.as_ref())
        .unwrap();
    assert_eq!(
        derived.keys,
        doc! { "kind": 1, "name": 1, "location": "2dsphere" }
    );
}

#[test]
fn a_near_query_without_a_2dsphere_index_is_refused_by_build_naming_the_index() {
    let spec = mongo_schema::spec::CollectionSpec::new("places", Place::validator()).query(
        mongo_schema::query::QuerySpec::new("nearest")
            .eq("kind")
            .near("location"),
    );
    let error = Schema::new().collection(spec).build().unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("only with a 2dsphere index on `location`")
            && text.contains("#[index(keys(kind = 1, location = \"2dsphere\"))]"),
        "{text}"
    );
    // control: with the index, it builds
    let spec = mongo_schema::spec::CollectionSpec::new("places", Place::validator())
        .index(mongo_schema::spec::IndexSpec::new(
            doc! { "kind": 1, "location": "2dsphere" },
        ))
        .query(
            mongo_schema::query::QuerySpec::new("nearest")
                .eq("kind")
                .near("location"),
        );
    assert!(Schema::new().collection(spec).build().is_ok());
}

/// A 2dsphere index on the point alone does not serve a near query with an equality: the
/// refusal says that the index exists and which condition it does not hold (the try's reading of
/// the older message was "it has one on `location`").
#[test]
fn a_near_query_whose_equality_the_2dsphere_index_lacks_names_the_condition() {
    let spec = mongo_schema::spec::CollectionSpec::new("places", Place::validator())
        .index(mongo_schema::spec::IndexSpec::new(
            doc! { "location": "2dsphere" },
        ))
        .query(
            mongo_schema::query::QuerySpec::new("nearest")
                .eq("kind")
                .near("location"),
        );
    let text = Schema::new()
        .collection(spec)
        .build()
        .unwrap_err()
        .to_string();
    // display-text: the refusal names the index, the condition it lacks and the index to declare
    assert!(
        text.contains("match `kind`, which the 2dsphere index `location_2dsphere` on `location` does not hold")
            && text.contains("#[index(keys(kind = 1, location = \"2dsphere\"))]"),
        "{text}"
    );
}

#[tokio::test]
async fn prove_and_the_report_show_the_geo_queries() {
    let (db, _) = seeded("geo_prove").await;
    let schema = schema();
    let proof = schema.prove(&db).await.unwrap();
    for name in ["nearest", "nearest_of_kind", "inside", "inside_of_kind"] {
        let entry = proof
            .queries
            .iter()
            .find(|q| q.query == name)
            .unwrap_or_else(|| panic!("{name} in {proof}"));
        assert!(entry.failure.is_none(), "{name}: {proof}");
        assert!(entry.expected_index.is_some(), "{name}");
    }
    // the near command is the `$geoNear` aggregation, served by the 2dsphere index on mongod
    let command = Place::nearest(&db, &centre(), 1.0).command().unwrap();
    let stage = command.get_array("pipeline").unwrap()[0]
        .as_document()
        .unwrap()
        .get_document("$geoNear")
        .unwrap()
        .clone();
    assert_eq!(stage.get_str("key").unwrap(), "location");
    assert!(stage.get_bool("spherical").unwrap());
    let report = schema.report().to_string();
    assert!(
        report.contains("`location` near a point, within a distance (`$geoNear`)")
            && report.contains("nearest first")
            && report.contains("`location` within an area (`$geoWithin`)"),
        "{report}"
    );
}
