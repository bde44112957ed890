//! A declared query's equality on a held id (a reference, a copy's `_id`) on a collection of a
//! case-insensitive default collation (issue 47, try 4748's F1): the library compares the ids
//! documents hold exactly, its own reads and its declared queries alike. Live, through the test
//! server's rules, which run a command sent without a collation under the collection's default
//! as mongod does.
//!
//! - `of_patient("abc")` returns the 3 appointments of patient "abc", not "ABC"'s (under the
//!   collection's en/2 it returned 4): the query and its derived index have the simple collation;
//! - a query that also compares strings (which the collection's collation is meant for) is a
//!   `Schema::build` error that says to state `collation(..)` on the query; stated, it builds
//!   and runs under the stated one.

use mongo_schema::bson::{doc, oid::ObjectId, DateTime};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// Patients, keyed by a code whose case matters ("abc" and "ABC" are two patients).
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "patients")]
pub struct Patient {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// Appointments, compared case-insensitively (their reasons), each holding its patient's id
/// and name and a reference to its patient.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "appointments", collation(locale = "en", strength = 2))]
#[query(name = "of_patient", eq("patient._id"), sort(at = 1))]
#[query(name = "referring", eq(referrer), range(at))]
pub struct Appointment {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: DateTime,
    pub reason: String,
    #[extended_ref(to = Patient, fields = "name", sync = "transactional")]
    pub patient: AppointmentPatient,
    #[reference]
    pub referrer: Ref<Patient>,
}

/// Designs that compare a held id and a string in one query.
mod designs {
    use super::*;

    /// Both an equality on the held id and one on a string the collation is meant for.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "visits", collation(locale = "en", strength = 2))]
    #[query(name = "of_patient_for", eq("patient._id"), eq(reason))]
    pub struct Visit {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub reason: String,
        #[extended_ref(to = Patient, fields = "name", sync = "transactional")]
        pub patient: VisitPatient,
    }

    /// The same, with the query's collation stated.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "stays", collation(locale = "en", strength = 2))]
    #[query(
        name = "of_patient_for",
        eq("patient._id"),
        eq(reason),
        collation(locale = "en", strength = 2)
    )]
    pub struct Stay {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub reason: String,
        #[extended_ref(to = Patient, fields = "name", sync = "transactional")]
        pub patient: StayPatient,
    }
}

fn patient(id: &str, name: &str) -> Patient {
    Patient {
        id: id.into(),
        name: name.into(),
    }
}

fn appointment(at: i64, of: &Patient) -> Appointment {
    Appointment {
        id: ObjectId::new(),
        at: DateTime::from_millis(at),
        reason: "check-up".into(),
        patient: of.into(),
        referrer: Ref::new(of.id.clone()),
    }
}

#[tokio::test]
async fn of_patient_abc_returns_exactly_the_appointments_of_abc() {
    let db = mongo_schema_testkit::database("held_ids_of_patient").await;
    let schema = Schema::new()
        .model::<Patient>()
        .model::<Appointment>()
        .build()
        .unwrap_or_else(|e| panic!("the appointments build: {e}"));
    schema.apply(&db).await.unwrap();
    let (lower, upper) = (patient("abc", "Ann"), patient("ABC", "Bob"));
    Patient::collection(&db)
        .insert_many([&lower, &upper])
        .await
        .unwrap();
    let of_lower: Vec<Appointment> = (1..=3).map(|i| appointment(i * 1000, &lower)).collect();
    let of_upper = appointment(1500, &upper);
    Appointment::collection(&db)
        .insert_many(of_lower.iter().chain([&of_upper]))
        .await
        .unwrap();
    // positive control: the server compares the appointments under en/2 (a command sent
    // without a collation finds "ABC"'s too), so only the query's own collation separates them
    let raw = db
        .collection::<mongo_schema::bson::Document>("appointments")
        .count_documents(doc! { "patient._id": "abc" })
        .await
        .unwrap();
    assert_eq!(raw, 4);

    let rows = Appointment::of_patient(&db, "abc").await.unwrap();
    let ids: Vec<ObjectId> = rows.iter().map(|a| a.id).collect();
    let expected: Vec<ObjectId> = of_lower.iter().map(|a| a.id).collect();
    assert_eq!(ids, expected, "{rows:?}");
    let rows = Appointment::of_patient(&db, "ABC").await.unwrap();
    assert_eq!(rows.iter().map(|a| a.id).collect::<Vec<_>>(), [of_upper.id]);
    // a reference, with a range of dates: compared exactly too
    let rows = Appointment::referring(
        &db,
        &Ref::<Patient>::new("abc".into()),
        DateTime::from_millis(0)..,
    )
    .await
    .unwrap();
    let mut ids: Vec<ObjectId> = rows.iter().map(|a| a.id).collect();
    ids.sort();
    let mut expected = expected;
    expected.sort();
    assert_eq!(ids, expected, "{rows:?}");

    // the query, its fit and its derived index are of the simple collation
    let spec = schema.collection("appointments").unwrap();
    let simple = Some(mongo_schema::spec::Collation::simple());
    for query in &spec.queries {
        assert_eq!(query.collation, simple, "{}", query.name);
        let fit = query.fit.as_ref().unwrap();
        assert!(fit.problem.is_none(), "{}: {fit:?}", query.name);
        let index = fit.index.as_deref().unwrap();
        let index = spec.indexes.iter().find(|i| i.name == index).unwrap();
        assert_eq!(index.collation, simple, "{}: {index:?}", query.name);
    }
    let proof = schema.prove(&db).await.unwrap();
    assert!(proof.clone().into_result().is_ok(), "{proof}");
}

#[test]
fn a_query_of_a_held_id_and_a_string_states_its_collation() {
    use designs::*;
    let error = Schema::new()
        .model::<Patient>()
        .model::<Visit>()
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        // display-text: the build error names the query, both paths and the fix
        error.contains("query `of_patient_for` of `visits` compares the held id `patient._id`")
            // display-text: the build error names the fix
            && error.contains("`reason`")
            // display-text: the build error names the fix
            && error.contains("state `collation(..)` on the query"),
        "{error}"
    );
    let schema = Schema::new()
        .model::<Patient>()
        .model::<Stay>()
        .build()
        .unwrap_or_else(|e| panic!("a stated collation builds: {e}"));
    let spec = schema.collection("stays").unwrap();
    assert_eq!(
        spec.queries[0].collation,
        Some(mongo_schema::spec::Collation::new("en").strength(2))
    );
}
