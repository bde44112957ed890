//! `pull` of a database a mongo-schema service made (issue 50, the vet clinic's try): what the
//! derive declared comes back, never dropped in silence.
//!
//! - a transactional copy of a collection whose `_id`s are strings, held in a collection of
//!   another default collation (so its fan-out index `preferredVet._id_1__id_1` is simple), and
//!   whose field name hints at no collection (`preferredVet` is no `vetId`): the derive's
//!   fan-out index and the version record are the evidence, and every held `_id` is a vet's;
//! - a time series whose meta field is a reference: mongod's (and the derive's) `{ pet: 1, at: 1 }`
//!   is the reference's index, not an index that declares no relationship there.

#[path = "common/scratch.rs"]
mod scratch;

use mongo_schema::bson::{doc, oid::ObjectId, DateTime, Document as BsonDocument};
use mongo_schema::{Document, Identified, Ref, Schema};
use mongo_schema_cli::pull::{pull, PullConfig};
use mongo_schema_cli::sample::ReadOptions;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A vet: string `_id`s that differ only by case are two vets.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "vets")]
pub struct Vet {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// An owner, compared case-insensitively, holding a copy of their vet's name.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "owners", collation(locale = "en", strength = 2))]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub email: String,
    #[extended_ref(to = Vet, fields = "name", sync = "transactional")]
    pub preferred_vet: OwnerPreferredVet,
}

/// A pet: the readings' meta field refers to it.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "pets")]
pub struct Pet {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

/// A pet's readings: a time series whose meta field is a reference.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(
    name = "readings",
    timeseries(time = at, meta = pet, granularity = "hours")
)]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: DateTime,
    #[reference]
    pub pet: Ref<Pet>,
    pub weight: f64,
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

async fn indexes(db: &mongo_schema::mongodb::Database, name: &str) -> Vec<BsonDocument> {
    use futures_util::TryStreamExt;
    db.run_cursor_command(doc! { "listIndexes": name })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_copy_of_string_ids_in_a_collated_holder_is_pulled_as_the_copy() {
    let db = mongo_schema_testkit::database("pull_collated_copy").await;
    let schema = Schema::new()
        .model::<Vet>()
        .model::<Owner>()
        .name("clinic")
        .version(1)
        .build()
        .expect("the service's schema builds");
    schema.apply(&db).await.expect("the service's apply");
    // `V-abc` and `V-ABC` are two vets of different names: a case-insensitive comparison of
    // the held ids would find the wrong one
    let vets: Vec<Vet> = ["V-abc", "V-ABC", "V-x1", "V-X1", "V-q"]
        .iter()
        .enumerate()
        .map(|(i, id)| Vet {
            id: (*id).to_owned(),
            name: format!("Vet {i}"),
        })
        .collect();
    Vet::collection(&db)
        .insert_many(vets.clone())
        .await
        .unwrap();
    let owners: Vec<Owner> = (0..40)
        .map(|i| Owner {
            id: ObjectId::new(),
            email: format!("owner{i}@pets.io"),
            preferred_vet: (&vets[i % vets.len()]).into(),
        })
        .collect();
    Owner::collection(&db).insert_many(owners).await.unwrap();
    // another collection of string `_id`s, with no `name`: looked at, rejected, reported
    db.collection::<BsonDocument>("rooms")
        .insert_many([
            doc! { "_id": "V-abc", "floor": 1 },
            doc! { "_id": "R-2", "floor": 2 },
        ])
        .await
        .unwrap();
    let fan_out = indexes(&db, "owners").await;
    assert!(
        fan_out
            .iter()
            .any(|i| i.get_str("name") == Ok("preferredVet._id_1__id_1")),
        "the derive's fan-out index: {fan_out:?}"
    );

    let pulled = pull(&db, &config())
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    let module = &pulled.module;
    let report = &pulled.report;
    eprintln!("{}\n{module}", report.summary());
    for c in &report.collections {
        assert_eq!((c.server_violators, c.local_violators), (0, 0), "{c:?}");
    }
    assert!(
        module.contains("#[extended_ref(to = Vet, fields = \"name\", sync = \"transactional\")]"),
        "the copy is not in the module:\n{module}\nrejected: {:?}\nreferences: {:?}",
        report.rejected_copies,
        report.references
    );
    let copy = report
        .copies
        .iter()
        .find(|c| c.path == "owners.preferredVet")
        .unwrap_or_else(|| panic!("the copy is not in the report: {:?}", report.copies));
    // every copy equals its own vet (not `V-ABC`'s when it holds `V-abc`)
    assert_eq!(
        (copy.target.as_str(), copy.compared, copy.differing),
        ("vets", 40, 0),
        "{copy:?}"
    );
    let reference = report
        .references
        .iter()
        .find(|r| r.path == "owners.preferredVet._id")
        .expect("the held ids' check is in the report");
    assert_eq!(
        (reference.checked, reference.found),
        (5, 5),
        "{reference:?}"
    );
    assert!(
        report
            .rejected_copies
            .iter()
            .any(|r| r.path == "owners.preferredVet"
            && r.target == "rooms"
            // display-text: the rejected candidate's reason names the field it lacks
            && r.reason.contains("`name`")),
        "{:?}",
        report.rejected_copies
    );
    let index = report
        .indexes
        .iter()
        .find(|i| i.name == "preferredVet._id_1__id_1")
        .expect("the fan-out index is in the report");
    assert_eq!(
        index.outcome, "kept by the relationship: the derive creates it",
        "{index:?}"
    );
    assert!(
        !module.contains("preferredVet._id_1__id_1"),
        "the fan-out index is the copy's, not declared:\n{module}"
    );

    // the service's collections alone (`rooms` is none of them, and `plan` would warn of it):
    // the module plans nothing
    db.collection::<BsonDocument>("rooms").drop().await.unwrap();
    let only = PullConfig {
        collections: vec!["owners".to_owned(), "vets".to_owned()],
        ..config()
    };
    let pulled = pull(&db, &only)
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    assert!(
        pulled
            .module
            .contains("#[extended_ref(to = Vet, fields = \"name\", sync = \"transactional\")]"),
        "{}",
        pulled.module
    );
    scratch::plans_nothing("pulled-collated-copy", &pulled.module, db.name());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_time_series_reference_in_its_meta_field_is_pulled_as_the_reference() {
    let db = mongo_schema_testkit::database("pull_timeseries_reference").await;
    let schema = Schema::new()
        .model::<Pet>()
        .model::<Reading>()
        .name("clinic")
        .version(1)
        .build()
        .expect("the service's schema builds");
    schema.apply(&db).await.expect("the service's apply");
    let pets: Vec<Pet> = (0..6)
        .map(|i| Pet {
            id: ObjectId::new(),
            name: format!("Pet {i}"),
        })
        .collect();
    Pet::collection(&db)
        .insert_many(pets.clone())
        .await
        .unwrap();
    let start = DateTime::now().timestamp_millis();
    let readings: Vec<Reading> = (0..120)
        .map(|i| Reading {
            id: ObjectId::new(),
            at: DateTime::from_millis(start - i as i64 * 3_600_000),
            pet: pets[i % pets.len()].to_ref(),
            weight: 3.0 + (i % 10) as f64,
        })
        .collect();
    Reading::collection(&db)
        .insert_many(readings)
        .await
        .unwrap();
    let listed = indexes(&db, "readings").await;
    assert!(
        listed.iter().any(|i| i.get_str("name") == Ok("pet_1_at_1")),
        "the time series' index: {listed:?}"
    );

    let pulled = pull(&db, &config())
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    let module = &pulled.module;
    let report = &pulled.report;
    eprintln!("{}\n{module}", report.summary());
    for c in &report.collections {
        assert_eq!((c.server_violators, c.local_violators), (0, 0), "{c:?}");
    }
    assert!(
        module.contains("timeseries(time = \"at\", meta = \"pet\", granularity = \"hours\")"),
        "{module}"
    );
    assert!(
        module.contains("#[reference]\n    pub pet: Ref<Pet>,"),
        "the reference is not in the module:\n{module}\nnotes: {:?}",
        report.notes
    );
    assert!(
        !report
            .notes
            .iter()
            .any(|n| n.contains("declares no relationship")),
        "{:?}",
        report.notes
    );
    let index = report
        .indexes
        .iter()
        .find(|i| i.name == "pet_1_at_1")
        .expect("the time series' index is in the report");
    // display-text: the outcome names the reference the index serves
    assert!(index.outcome.contains("the reference `pet`"), "{index:?}");
    assert!(!module.contains("pet_1_at_1"), "{module}");
    scratch::plans_nothing("pulled-timeseries-reference", module, db.name());
}
