//! `pull` gives back what `apply` made (issue 50): a service's schema with a time series, a
//! GeoJSON point, a transactional copy of 20 venues in 200 events, at most 10 tags (the data
//! holds at most 3), an enum with a value no document uses, declared lengths and ranges, and an
//! events collection that takes fields it does not name, is applied and filled on the real test
//! server, then pulled. The pulled module must keep what the server declares, and:
//!
//! - the invariant: every stored document and every boundary document the server's validator
//!   accepts (tags at `maxItems`, a title at `maxLength`, the optional note absent, an extra
//!   field) is accepted by the pulled validator, locally; a document the server's validator
//!   refuses (11 tags) is the positive control that the boundary documents are at the boundary;
//! - the module compiles (a crate of its own), declares the time series and
//!   `#[extended_ref(to = Venue, ..)]`, and its `schema()` carries the database's record (name
//!   and version): `plan` finds nothing to do, `apply` is as declared;
//! - afterwards the server accepts an event with 10 tags and one with a field it accepted
//!   before.

#[path = "common/scratch.rs"]
mod scratch;

use mongo_schema::bson::{doc, oid::ObjectId, Bson, DateTime, Document as BsonDocument};
use mongo_schema::geo::Point;
use mongo_schema::{BsonSchema, Document, LocalValidator, Schema};
use mongo_schema_cli::pull::{pull, PullConfig};
use mongo_schema_cli::sample::ReadOptions;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A venue: the source of the events' copies.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "venues", additional_properties = false)]
pub struct Venue {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(max_length = 60)]
    pub name: String,
    pub city: String,
}

/// An event's state; `cancelled` is in no stored document.
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Draft,
    OnSale,
    SoldOut,
    Cancelled,
}

/// An event: open to fields it does not name (no `additional_properties = false`).
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "events")]
#[index(keys(location = "2dsphere"))]
pub struct Event {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(max_length = 80)]
    pub title: String,
    #[embed(max = 10)]
    pub tags: Vec<String>,
    #[extended_ref(to = Venue, fields = "name", sync = "transactional")]
    pub venue: EventVenue,
    pub location: Point,
    pub status: Status,
    #[schema(minimum = 0, maximum = 100000)]
    pub seats: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Scans at the gates: a time series.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(
    name = "gate_scans",
    timeseries(time = at, meta = gate, granularity = "minutes"),
    expire_after_secs = 86400
)]
pub struct GateScan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: DateTime,
    pub gate: String,
    pub count: i32,
}

fn service() -> Schema {
    Schema::new()
        .model::<Venue>()
        .model::<Event>()
        .model::<GateScan>()
        .name("tickets")
        .version(2)
        .build()
        .expect("the service's schema builds")
}

fn config() -> PullConfig {
    PullConfig {
        read: ReadOptions {
            sample: 1000,
            max_time: Some(Duration::from_secs(900)),
            secondary: false,
        },
        ..PullConfig::default()
    }
}

async fn fill(db: &mongo_schema::mongodb::Database) {
    let venues: Vec<Venue> = (0..20)
        .map(|i| Venue {
            id: ObjectId::new(),
            name: format!("Hall {i}"),
            city: ["Lisbon", "Porto", "Faro"][i % 3].to_owned(),
        })
        .collect();
    Venue::collection(db)
        .insert_many(venues.clone())
        .await
        .unwrap();
    let events: Vec<Event> = (0..200)
        .map(|i| Event {
            id: ObjectId::new(),
            title: format!("Show {i}"),
            tags: (0..(i % 4)).map(|t| format!("tag{t}")).collect(),
            venue: (&venues[i % 20]).into(),
            location: Point::new(-9.0 - (i % 10) as f64 / 10.0, 38.0 + (i % 7) as f64 / 10.0)
                .unwrap(),
            status: [Status::Draft, Status::OnSale, Status::SoldOut][i % 3],
            seats: (i * 10) as i32,
            note: (i % 5 == 0).then(|| format!("note {i}")),
        })
        .collect();
    Event::collection(db).insert_many(events).await.unwrap();
    let start = DateTime::now().timestamp_millis();
    let scans: Vec<GateScan> = (0..60)
        .map(|i| GateScan {
            id: ObjectId::new(),
            at: DateTime::from_millis(start - i * 60_000),
            // no validator describes a time series: every gate its own name, so that the
            // samples do not make the meta field a unit enum the service did not declare
            gate: format!("gate {i}"),
            count: i as i32,
        })
        .collect();
    GateScan::collection(db).insert_many(scans).await.unwrap();
}

/// The server's `validator` of each collection, as `listCollections` lists it.
async fn server_validators(db: &mongo_schema::mongodb::Database) -> Vec<(String, BsonDocument)> {
    use futures_util::TryStreamExt;
    let listed: Vec<BsonDocument> = db
        .run_cursor_command(doc! { "listCollections": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    listed
        .into_iter()
        .filter_map(|c| {
            let name = c.get_str("name").ok()?.to_owned();
            let validator = c
                .get_document("options")
                .ok()?
                .get_document("validator")
                .ok()?;
            Some((name, validator.clone()))
        })
        .collect()
}

/// Documents at the boundary of what the events' validator takes, made from a stored one:
/// tags at `maxItems`, the title at `maxLength`, the optional note absent, a field it does not
/// name, the seats at their maximum; and one past it (11 tags), the positive control.
fn boundary_events(stored: &BsonDocument) -> (Vec<BsonDocument>, BsonDocument) {
    let with = |key: &str, value: Bson| {
        let mut d = stored.clone();
        d.insert("_id", ObjectId::new());
        d.insert(key, value);
        d
    };
    let tags = |n: usize| Bson::Array((0..n).map(|t| Bson::from(format!("t{t}"))).collect());
    let mut absent = stored.clone();
    absent.insert("_id", ObjectId::new());
    absent.remove("note");
    let inside = vec![
        with("tags", tags(10)),
        with("title", Bson::from("x".repeat(80))),
        absent,
        with("promo", Bson::from("spring")),
        with("seats", Bson::Int32(100000)),
    ];
    (inside, with("tags", tags(11)))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_pulls_into_a_module_that_applies_as_declared() {
    let db = mongo_schema_testkit::database("pull_round_trip").await;
    let schema = service();
    schema.apply(&db).await.expect("the service's apply");
    fill(&db).await;
    let declared = server_validators(&db).await;
    assert!(declared.iter().any(|(n, _)| n == "events"), "{declared:?}");

    let pulled = pull(&db, &config())
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    let module = &pulled.module;
    eprintln!("{}\n{module}", pulled.report.summary());
    for c in &pulled.report.collections {
        assert_eq!((c.server_violators, c.local_violators), (0, 0), "{c:?}");
    }
    for needle in [
        // the time series, as declared
        "timeseries(time = \"at\", meta = \"gate\", granularity = \"minutes\")",
        "expire_after_secs = 86400",
        // the copy of 20 venues, and the root that keeps its name
        "#[extended_ref(to = Venue, fields = \"name\", sync = \"transactional\")]",
        "pub struct Venue {",
        // the point and its index
        "pub location: mongo_schema::geo::Point,",
        "#[index(keys(\"location\" = \"2dsphere\"), name = \"location_2dsphere\")]",
        // the bound and the constraints as declared, not as sampled
        "#[embed(max = 10)]",
        "#[schema(max_length = 80)]",
        "#[schema(minimum = 0, maximum = 100000)]",
        // the adopted record
        ".name(\"tickets\")",
        ".version(2)",
    ] {
        assert!(
            module.contains(needle),
            "`{needle}` is not in the module:\n{module}"
        );
    }
    // the enum's value no document holds is kept
    assert!(module.contains("Cancelled"), "{module}");
    // events is open, as declared; venues closed, as declared
    assert!(
        module.contains("#[collection(name = \"events\")]"),
        "{module}"
    );
    assert!(
        module.contains("#[collection(name = \"venues\", additional_properties = false)]"),
        "{module}"
    );

    // the invariant, locally: what the server's validator takes, the pulled one takes
    let pulled_validators = mongo_schema_cli::validator::validators(&pulled.model);
    let pulled_events = pulled_validators
        .iter()
        .find(|(n, _)| n == "events")
        .map(|(_, v)| LocalValidator::new(v).unwrap())
        .unwrap();
    let server_events = declared
        .iter()
        .find(|(n, _)| n == "events")
        .map(|(_, v)| LocalValidator::new(v).unwrap())
        .unwrap();
    let stored: Vec<BsonDocument> = {
        use futures_util::TryStreamExt;
        db.collection::<BsonDocument>("events")
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    };
    assert_eq!(stored.len(), 200);
    let (inside, outside) = boundary_events(&stored[0]);
    assert!(
        server_events.check(&outside).is_err(),
        "the positive control: the server's validator refuses 11 tags"
    );
    for d in stored.iter().chain(&inside) {
        assert!(server_events.check(d).is_ok(), "{d}");
        assert!(
            pulled_events.check(d).is_ok(),
            "the pulled validator refuses what the server's takes: {d}: {:?}",
            pulled_events.check(d)
        );
    }
    for (name, validator) in &declared {
        let Some((_, mine)) = pulled_validators.iter().find(|(n, _)| n == name) else {
            continue;
        };
        assert!(
            mongo_schema_cli::validator::same(validator, mine),
            "`{name}`: the pulled validator is not the server's:\n  server {validator}\n  pulled {mine}"
        );
    }

    // the module compiles, plans nothing, applies as declared
    scratch::plans_nothing("pulled-round-trip", module, db.name());
    // the record was not moved: the pulled schema is the version the service recorded
    let plan = schema.plan(&db).await.unwrap();
    assert!(
        plan.version.as_ref().is_some_and(|v| v.is_current()),
        "{plan}"
    );

    // afterwards the server takes what it took before
    let events = db.collection::<BsonDocument>("events");
    for d in &inside {
        events
            .insert_one(d)
            .await
            .unwrap_or_else(|e| panic!("refused after the pulled apply: {d}: {e}"));
    }
    assert!(
        events.insert_one(&outside).await.is_err(),
        "11 tags are refused, as before"
    );
}

/// A database no mongo-schema service made (documents written as they are): a copy of 5 venues
/// in 200 events is found (its names, 5 values in 200 holders, would be a unit enum by the
/// samples; the source's are strings), and a sub-document holding venue `_id`s with a field no
/// venue has is rejected as a copy, with why, in the report. Capped, clustered and pre-image
/// collections are said in comments and notes; the record-less database gets no version.
#[tokio::test(flavor = "multi_thread")]
async fn a_copy_of_five_sources_is_found_and_the_unsaid_options_are_reported() {
    let db = mongo_schema_testkit::database("pull_few_sources").await;
    let venues: Vec<BsonDocument> = (0..5)
        .map(|i| doc! { "_id": ObjectId::new(), "name": format!("Hall {i}"), "city": "Lisbon" })
        .collect();
    db.collection::<BsonDocument>("venues")
        .insert_many(venues.clone())
        .await
        .unwrap();
    let events: Vec<BsonDocument> = (0..200)
        .map(|i| {
            let venue = &venues[i % 5];
            doc! {
                "_id": ObjectId::new(),
                "title": format!("Show {i}"),
                "venue": { "_id": venue.get_object_id("_id").unwrap(), "name": venue.get_str("name").unwrap() },
                // venue ids with a field no venue has: no copy
                "host": { "_id": venue.get_object_id("_id").unwrap(), "badge": format!("b{}", i % 3) },
            }
        })
        .collect();
    db.collection::<BsonDocument>("events")
        .insert_many(events)
        .await
        .unwrap();
    db.run_command(doc! { "create": "log", "capped": true, "size": 1_048_576_i64 })
        .await
        .unwrap();
    db.collection::<BsonDocument>("log")
        .insert_one(doc! { "_id": 1, "line": "started" })
        .await
        .unwrap();
    db.run_command(doc! {
        "create": "changes",
        "changeStreamPreAndPostImages": { "enabled": true },
    })
    .await
    .unwrap();
    db.collection::<BsonDocument>("changes")
        .insert_one(doc! { "_id": 1, "what": "x" })
        .await
        .unwrap();

    let pulled = pull(&db, &config())
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    let module = &pulled.module;
    eprintln!("{}\n{module}", pulled.report.summary());
    assert!(
        module.contains("#[extended_ref(to = Venue, fields = \"name\", sync = \"transactional\")]"),
        "{module}"
    );
    let copy = pulled
        .report
        .copies
        .iter()
        .find(|c| c.path == "events.venue")
        .expect("the copy is in the report");
    assert_eq!((copy.compared, copy.differing), (200, 0), "{copy:?}");
    let rejected: Vec<_> = pulled
        .report
        .rejected_copies
        .iter()
        .filter(|r| r.path == "events.host")
        .collect();
    assert!(
        rejected
            .iter()
            // display-text: the rejected candidate's reason names the field that differs
            .any(|r| r.target == "venues" && r.reason.contains("badge")),
        "{:?}",
        pulled.report.rejected_copies
    );
    // the control: the host stays a plain sub-document
    assert!(
        !module.contains("#[extended_ref(to = Venue, fields = \"badge\""),
        "{module}"
    );
    assert!(
        pulled
            .report
            .notes
            .iter()
            .any(|n| n.starts_with("`log`: not kept: a capped collection")),
        "{:?}",
        pulled.report.notes
    );
    assert!(
        pulled
            .report
            .notes
            .iter()
            .any(|n| n.starts_with("`changes`: not kept: change stream pre- and post-images")),
        "{:?}",
        pulled.report.notes
    );
    assert!(
        module.contains("// not kept: a capped collection"),
        "{module}"
    );
    assert!(pulled.model.record.is_none());
    assert!(!module.contains(".version("), "{module}");
}
