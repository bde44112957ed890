//! bson 3's serde helpers (the `serde_as` converter types of `bson::serde_helpers`, which
//! replaced bson 2's helper functions) on the real server, in a build where the driver
//! re-exports bson 3: the derive reads each converter's stored form, the validator it emits
//! accepts what the driver writes and refuses the other shape, values read back equal, and a
//! typed filter through the converter (the library serializes with bson 3) finds the document.

use std::time::Duration;

use chrono::{TimeZone, Utc};
use mongo_schema::bson::{self, doc, Bson, Document as BsonDocument, Timestamp};
use mongo_schema::prelude::*;
use mongo_schema::query::Filter;
use mongodb::error::{ErrorKind, WriteFailure};
use serde::{Deserialize, Serialize};

#[serde_with::serde_as]
#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "bson3Helpers", additional_properties = false)]
pub struct Bson3Helpers {
    #[serde(rename = "_id")]
    #[serde_as(as = "bson::serde_helpers::uuid_1::AsBinary")]
    pub id: uuid::Uuid,
    #[serde_as(as = "bson::serde_helpers::datetime::FromChrono04DateTime")]
    pub chrono: chrono::DateTime<Utc>,
    #[serde_as(as = "Option<bson::serde_helpers::datetime::FromChrono04DateTime>")]
    pub maybe: Option<chrono::DateTime<Utc>>,
    #[serde_as(as = "bson::serde_helpers::datetime::FromTime03OffsetDateTime")]
    pub time: time::OffsetDateTime,
    #[serde_as(as = "bson::serde_helpers::datetime::AsRfc3339String")]
    pub rfc3339: bson::DateTime,
    #[serde_as(as = "bson::serde_helpers::datetime::FromI64")]
    pub millis: i64,
    #[serde_as(as = "bson::serde_helpers::object_id::AsHexString")]
    pub hex: ObjectId,
    #[serde_as(as = "bson::serde_helpers::object_id::FromHexString")]
    pub from_hex: String,
    #[serde_as(as = "bson::serde_helpers::u32::AsF64")]
    pub u32_as_f64: u32,
    #[serde_as(as = "bson::serde_helpers::u64::AsI64")]
    pub u64_as_i64: u64,
    #[serde_as(as = "bson::serde_helpers::u32::AsI32")]
    pub u32_as_i32: u32,
    #[serde_as(as = "bson::serde_helpers::timestamp::FromU32")]
    pub from_u32: u32,
    #[serde_as(as = "bson::serde_helpers::timestamp::AsU32")]
    pub as_u32: Timestamp,
}

fn value(i: u32) -> Bson3Helpers {
    let at = Utc
        .timestamp_millis_opt(1_700_000_000_000 + i64::from(i))
        .unwrap();
    Bson3Helpers {
        id: uuid::Uuid::from_u128(0x7000_0000_0000_4000_8000_0000_0000_0000 + u128::from(i)),
        chrono: at,
        maybe: i.is_multiple_of(2).then_some(at),
        time: time::OffsetDateTime::from_unix_timestamp(1_700_000_000 + i64::from(i)).unwrap(),
        rfc3339: bson::DateTime::from_millis(1_600_000_000_000 + i64::from(i)),
        millis: 1_500_000_000_000 + i64::from(i),
        hex: ObjectId::new(),
        from_hex: ObjectId::new().to_hex(),
        u32_as_f64: u32::MAX - i,
        u64_as_i64: u64::from(u32::MAX) + u64::from(i),
        u32_as_i32: i,
        from_u32: 1_000 + i,
        // bson 3 writes the `time` of a timestamp whose increment is 0 (and refuses any other)
        as_u32: Timestamp {
            time: 2_000 + i,
            increment: 0,
        },
    }
}

fn property(name: &str) -> BsonDocument {
    Bson3Helpers::validator()
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap()
        .get_document(name)
        .unwrap()
        .clone()
}

#[test]
fn the_build_uses_bson_3() {
    assert_eq!(mongo_schema::bson_compat::BSON_MAJOR, 3);
    // the service's own `bson` is the driver's: one crate, so one `Document` type
    let ours: bson::Document = doc! { "a": 1 };
    let _: mongodb::bson::Document = ours;
}

#[test]
fn each_converter_is_described_by_its_stored_form() {
    for (field, bson_type) in [
        ("_id", Bson::from("binData")),
        ("chrono", "date".into()),
        ("maybe", Bson::Array(vec!["date".into(), "null".into()])),
        ("time", "date".into()),
        ("rfc3339", "string".into()),
        ("millis", "date".into()),
        ("hex", "string".into()),
        ("from_hex", "objectId".into()),
        ("u32_as_f64", "double".into()),
        ("u64_as_i64", "long".into()),
        ("u32_as_i32", "int".into()),
        ("from_u32", "timestamp".into()),
        ("as_u32", "long".into()),
    ] {
        assert_eq!(
            property(field).get("bsonType"),
            Some(&bson_type),
            "{field}: {}",
            property(field)
        );
    }
}

#[tokio::test]
async fn written_read_back_and_found_by_a_typed_filter_and_the_other_shape_refused() {
    let db = mongo_schema_testkit::database("bson3_helpers").await;
    let schema = Schema::new().model::<Bson3Helpers>().build().unwrap();
    tokio::time::timeout(Duration::from_secs(60), schema.apply(&db))
        .await
        .expect("apply within a minute")
        .unwrap();
    let typed = db.collection::<Bson3Helpers>(Bson3Helpers::COLLECTION);
    let values: Vec<Bson3Helpers> = (0..6).map(value).collect();
    for v in &values {
        typed.insert_one(v).await.expect("the validator accepts it");
    }
    // read back equal, each found through its `_id`'s converter (binary of subtype 4) and the
    // hex string of `hex`, encoded by the library as the driver stores them
    for v in &values {
        let filter = Filter::new()
            .eq(field!(Bson3Helpers, id), &v.id)
            .eq(field!(Bson3Helpers, hex), &v.hex)
            .build()
            .unwrap();
        let stored_id = filter.get("_id").expect("an `_id` condition");
        assert!(
            matches!(stored_id, Bson::Binary(b) if b.subtype == bson::spec::BinarySubtype::Uuid),
            "{stored_id}"
        );
        let read = typed.find_one(filter).await.unwrap().expect("found");
        assert_eq!(&read, v);
    }
    // the other shape of each converter is refused with 121
    let raw = db.collection::<BsonDocument>(Bson3Helpers::COLLECTION);
    let valid = raw
        .find_one(doc! { "_id": values[0].id_stored() })
        .await
        .unwrap()
        .unwrap();
    let breaches: [(&str, Bson); 8] = [
        ("chrono", "2024-01-01T00:00:00Z".into()),
        ("rfc3339", Bson::DateTime(bson::DateTime::now())),
        ("hex", Bson::ObjectId(ObjectId::new())),
        ("from_hex", ObjectId::new().to_hex().into()),
        ("u32_as_f64", Bson::Int64(1)),
        ("u64_as_i64", Bson::Double(1.0)),
        ("u32_as_i32", Bson::Int64(1)),
        ("from_u32", Bson::Int64(1)),
    ];
    let mut refused = 0;
    for (n, (field, wrong)) in breaches.iter().enumerate() {
        let mut broken = valid.clone();
        broken.insert("_id", value(100 + n as u32).id_stored());
        broken.insert(*field, wrong.clone());
        let error = raw
            .insert_one(&broken)
            .await
            .expect_err(&format!("`{field}: {wrong}` accepted"));
        match error.kind.as_ref() {
            ErrorKind::Write(WriteFailure::WriteError(e)) => assert_eq!(e.code, 121, "{field}"),
            other => panic!("{field}: {other:?}"),
        }
        refused += 1;
    }
    assert_eq!(refused, breaches.len());
    // the unbroken document, under a new `_id`, is accepted: the refusals are the breaches'
    let mut unbroken = valid.clone();
    unbroken.insert("_id", value(200).id_stored());
    raw.insert_one(&unbroken).await.expect("accepted");
}

impl Bson3Helpers {
    /// The `_id` as stored: binary of subtype 4.
    fn id_stored(&self) -> Bson {
        Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: self.id.as_bytes().to_vec(),
        })
    }
}

/// A child referencing a root whose `_id` goes through bson 3's `uuid_1::AsBinary`.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "bson3Sessions")]
pub struct Session {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub account: Ref<Bson3Helpers>,
}

/// The library's own filters write the `_id` through the converter as the driver stores it
/// (binary of subtype 4) and read it back through it: a reference finds its document, and a
/// relation its children.
#[tokio::test]
async fn references_through_a_bson_3_converter() {
    let db = mongo_schema_testkit::database("bson3_refs").await;
    Schema::new()
        .model::<Bson3Helpers>()
        .model::<Session>()
        .build()
        .unwrap()
        .apply(&db)
        .await
        .unwrap();
    let account = value(7);
    Bson3Helpers::collection(&db)
        .insert_one(&account)
        .await
        .unwrap();
    let session = Session {
        id: ObjectId::new(),
        account: account.to_ref(),
    };
    Session::collection(&db).insert_one(&session).await.unwrap();
    let stored = db
        .collection::<BsonDocument>(Session::COLLECTION)
        .find_one(doc! {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.get("account"), Some(&account.id_stored()));
    assert_eq!(account.to_ref().to_bson(), account.id_stored());
    let read: Session = mongo_schema::bson_compat::from_document(stored).unwrap();
    assert_eq!(read, session);
    let found = Bson3Helpers::collection(&db)
        .find_one(account.to_ref().filter())
        .await
        .unwrap();
    assert_eq!(found.as_ref(), Some(&account));
    let resolved = Ref::resolve_all(&db, &[session.account]).await.unwrap();
    assert_eq!(resolved.documents, vec![account.clone()]);
    assert!(resolved.missing.is_empty());
    let children = Session::collection(&db)
        .count_documents(Session::ACCOUNT.children_filter(&account.to_ref()).unwrap())
        .await
        .unwrap();
    assert_eq!(children, 1);
}
