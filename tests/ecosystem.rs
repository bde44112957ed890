//! Ecosystem types and known serde helpers on the real server: for each family (chrono, time,
//! uuid and rust_decimal, std's `NonZero*` and addresses, bson's serde helpers, serde_bytes) a
//! derived model is applied; generated values written through the typed collection (the
//! driver's raw serializer) are all accepted and read back equal; documents broken per type
//! (wrong BSON type, out of range, a malformed string against the pattern, the other path's
//! shape) inserted raw are refused with code 121, naming the field.

mod common;

use common::live::Live;

use std::fmt::Debug;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::num::{
    NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI8, NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU8,
    NonZeroUsize,
};

use chrono::{FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use mongo_schema::bson::serde_helpers::{
    bson_datetime_as_rfc3339_string, deserialize_bson_datetime_from_rfc3339_string,
    deserialize_hex_string_from_object_id, hex_string_as_object_id,
    serialize_bson_datetime_as_rfc3339_string, serialize_hex_string_as_object_id,
    serialize_object_id_as_hex_string, serialize_u32_as_i32, serialize_u64_as_i64, u32_as_f64,
};
use mongo_schema::bson::spec::BinarySubtype;
use mongo_schema::bson::{self, doc, Binary, Bson, Document as BsonDocument, Timestamp};
use mongo_schema::prelude::*;
use mongodb::error::{ErrorKind, WriteFailure};
use proptest::prelude::*;
use rust_decimal::Decimal;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// models

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "chronoValues", additional_properties = false)]
pub struct ChronoValues {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub utc: chrono::DateTime<Utc>,
    pub fixed: chrono::DateTime<FixedOffset>,
    pub date: NaiveDate,
    pub local: NaiveDateTime,
    pub time: NaiveTime,
    pub maybe: Option<chrono::DateTime<Utc>>,
    #[serde(with = "chrono::serde::ts_seconds")]
    pub seconds: chrono::DateTime<Utc>,
    #[serde(with = "chrono::serde::ts_milliseconds_option")]
    pub millis: Option<chrono::DateTime<Utc>>,
    #[serde(with = "chrono::naive::serde::ts_nanoseconds")]
    pub nanos: NaiveDateTime,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "timeValues", additional_properties = false)]
pub struct TimeValues {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: time::OffsetDateTime,
    pub date: time::Date,
    pub local: time::PrimitiveDateTime,
    pub time: time::Time,
    pub offset: time::UtcOffset,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "idsAndAmounts", additional_properties = false)]
pub struct IdsAndAmounts {
    // existing data keeps serde's subtype 0, said out loud
    #[serde(rename = "_id")]
    #[schema(stored_as = Binary)]
    pub id: uuid::Uuid,
    #[schema(stored_as = Option<Binary>)]
    pub other: Option<uuid::Uuid>,
    pub amount: Decimal,
    pub maybe_amount: Option<Decimal>,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "stdValues", additional_properties = false)]
pub struct StdValues {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub u8: NonZeroU8,
    pub u16: NonZeroU16,
    pub u32: NonZeroU32,
    pub u64: NonZeroU64,
    pub usize: NonZeroUsize,
    pub i8: NonZeroI8,
    pub i16: NonZeroI16,
    pub i32: NonZeroI32,
    pub i64: NonZeroI64,
    pub ip: IpAddr,
    pub v4: Ipv4Addr,
    pub v6: Ipv6Addr,
    pub socket: SocketAddr,
    pub socket_v4: SocketAddrV4,
    pub socket_v6: SocketAddrV6,
    pub timeout: std::time::Duration,
    pub seen: std::time::SystemTime,
}

/// Every bson 2.x helper, under the prefixes a model may use, and serde_bytes.
#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "bsonHelpers", additional_properties = false)]
pub struct BsonHelpers {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[serde(with = "bson::serde_helpers::chrono_datetime_as_bson_datetime")]
    pub chrono_date: chrono::DateTime<Utc>,
    #[serde(with = "mongodb::bson::serde_helpers::chrono_datetime_as_bson_datetime_optional")]
    pub chrono_maybe: Option<chrono::DateTime<Utc>>,
    #[serde(with = "mongo_schema::bson::serde_helpers::time_0_3_offsetdatetime_as_bson_datetime")]
    pub time_date: time::OffsetDateTime,
    #[serde(with = "bson::serde_helpers::rfc3339_string_as_bson_datetime")]
    pub rfc3339_in: String,
    #[serde(with = "bson_datetime_as_rfc3339_string")]
    pub rfc3339_out: DateTime,
    #[serde(
        serialize_with = "serialize_bson_datetime_as_rfc3339_string",
        deserialize_with = "deserialize_bson_datetime_from_rfc3339_string"
    )]
    pub rfc3339_fn: DateTime,
    #[serde(with = "hex_string_as_object_id")]
    pub hex_in: String,
    #[serde(
        serialize_with = "serialize_hex_string_as_object_id",
        deserialize_with = "deserialize_hex_string_from_object_id"
    )]
    pub hex_fn: String,
    #[serde(
        serialize_with = "serialize_object_id_as_hex_string",
        deserialize_with = "object_id_from_hex"
    )]
    pub hex_out: ObjectId,
    #[serde(with = "u32_as_f64")]
    pub u32_double: u32,
    #[serde(with = "bson::serde_helpers::u64_as_f64")]
    pub u64_double: u64,
    #[serde(with = "bson::serde_helpers::i64_as_bson_datetime")]
    pub millis: i64,
    #[serde(serialize_with = "serialize_u32_as_i32")]
    pub u32_int: u32,
    #[serde(serialize_with = "bson::serde_helpers::serialize_u64_as_i32")]
    pub u64_int: u64,
    #[serde(serialize_with = "bson::serde_helpers::serialize_u32_as_i64")]
    pub u32_long: u32,
    #[serde(serialize_with = "serialize_u64_as_i64")]
    pub u64_long: u64,
    #[serde(with = "bson::serde_helpers::u32_as_timestamp")]
    pub ts_in: u32,
    #[serde(with = "bson::serde_helpers::timestamp_as_u32")]
    pub ts_out: Timestamp,
    #[serde(with = "bson::serde_helpers::uuid_1_as_binary")]
    pub uuid: uuid::Uuid,
    #[serde(with = "bson::serde_helpers::uuid_1_as_java_legacy_binary")]
    pub uuid_java: uuid::Uuid,
    #[serde(with = "bson::serde_helpers::uuid_1_as_c_sharp_legacy_binary")]
    pub uuid_c_sharp: uuid::Uuid,
    #[serde(with = "bson::serde_helpers::uuid_1_as_python_legacy_binary")]
    pub uuid_python: uuid::Uuid,
    #[serde(with = "serde_bytes")]
    pub bytes_fixed: [u8; 16],
    #[serde(with = "serde_bytes")]
    pub bytes_maybe: Option<[u8; 8]>,
    /// binary, not an array: no bound needed
    #[serde(with = "serde_bytes")]
    pub bytes_vec: Vec<u8>,
}

/// serde_with's `#[serde_as]` rewrites each `as` into `with = ":: serde_with :: As :: < ... >"`
/// before the derive reads it; bson 2's `DateTime` and `Uuid` are the converters.
#[serde_with::serde_as]
#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "serdeAs", additional_properties = false)]
pub struct SerdeAs {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[serde_as(as = "bson::DateTime")]
    pub chrono: chrono::DateTime<Utc>,
    #[serde_as(as = "Option<bson::DateTime>")]
    pub maybe: Option<chrono::DateTime<Utc>>,
    #[serde_as(as = "mongodb::bson::DateTime")]
    pub time: time::OffsetDateTime,
    #[serde_as(as = "bson::Uuid")]
    pub uuid: uuid::Uuid,
}

/// The reverse of `serialize_object_id_as_hex_string`, which bson 2 does not export.
fn object_id_from_hex<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectId, D::Error> {
    let hex = String::deserialize(d)?;
    ObjectId::parse_str(&hex).map_err(serde::de::Error::custom)
}

// ---------------------------------------------------------------------------------------------
// strategies

fn chrono_utc() -> impl Strategy<Value = chrono::DateTime<Utc>> {
    let (min, max) = (
        chrono::DateTime::<Utc>::MIN_UTC.timestamp(),
        chrono::DateTime::<Utc>::MAX_UTC.timestamp(),
    );
    prop_oneof![
        (min..=max, 0u32..1_000_000_000),
        (0i64..4_102_444_800, 0u32..1_000_000_000),
        // whole milliseconds and seconds: the shorter fractions
        (
            0i64..4_102_444_800,
            (0u32..1000).prop_map(|ms| ms * 1_000_000)
        ),
        (0i64..4_102_444_800, Just(0u32)),
    ]
    .prop_map(|(secs, nanos)| Utc.timestamp_opt(secs, nanos).unwrap())
}

/// A time of day, leap seconds (`23:59:60.x`) included.
fn chrono_time() -> impl Strategy<Value = NaiveTime> {
    prop_oneof![
        (0u32..86_400, 0u32..1_000_000_000)
            .prop_map(|(s, n)| NaiveTime::from_num_seconds_from_midnight_opt(s, n).unwrap()),
        (0u32..1_000_000_000).prop_map(|n| NaiveTime::from_hms_nano_opt(
            23,
            59,
            59,
            1_000_000_000 + n
        )
        .unwrap()),
    ]
}

fn chrono_values() -> impl Strategy<Value = ChronoValues> {
    let (min, max) = (
        chrono::DateTime::<Utc>::MIN_UTC.timestamp(),
        chrono::DateTime::<Utc>::MAX_UTC.timestamp(),
    );
    (
        chrono_utc(),
        // an offset in whole minutes (chrono writes no seconds of an offset), years that stay
        // in chrono's range once shifted
        (
            -6_000_000_000_000i64..6_000_000_000_000,
            -(23 * 60 + 59)..=(23 * 60 + 59),
        ),
        chrono_utc(),
        chrono_time(),
        proptest::option::of(chrono_utc()),
        (
            // what the `ts_*` helpers keep: whole seconds, milliseconds, nanoseconds in an i64
            min..=max,
            proptest::option::of(
                chrono::DateTime::<Utc>::MIN_UTC.timestamp_millis()
                    ..=chrono::DateTime::<Utc>::MAX_UTC.timestamp_millis(),
            ),
            any::<i64>(),
        ),
    )
        .prop_map(
            |(utc, (secs, minutes), other, time, maybe, (seconds, millis, nanos))| ChronoValues {
                id: ObjectId::new(),
                utc,
                fixed: FixedOffset::east_opt(minutes * 60)
                    .unwrap()
                    .timestamp_opt(secs, 0)
                    .unwrap(),
                date: other.date_naive(),
                local: other.naive_utc().date().and_time(time),
                time,
                maybe,
                seconds: Utc.timestamp_opt(seconds, 0).unwrap(),
                millis: millis.map(|ms| Utc.timestamp_millis_opt(ms).unwrap()),
                nanos: chrono::DateTime::from_timestamp_nanos(nanos).naive_utc(),
            },
        )
}

fn time_values() -> impl Strategy<Value = TimeValues> {
    let days = time::Date::MIN.to_julian_day()..=time::Date::MAX.to_julian_day();
    (
        days.clone(),
        0u64..86_400_000_000_000,
        -93_599i32..=93_599,
        days,
        0u64..86_400_000_000_000,
    )
        .prop_map(|(day, nanos, offset, other_day, other_nanos)| {
            let date = time::Date::from_julian_day(day).unwrap();
            let time_of = |n: u64| {
                time::Time::from_hms_nano(
                    (n / 3_600_000_000_000) as u8,
                    (n / 60_000_000_000 % 60) as u8,
                    (n / 1_000_000_000 % 60) as u8,
                    (n % 1_000_000_000) as u32,
                )
                .unwrap()
            };
            let offset = time::UtcOffset::from_whole_seconds(offset).unwrap();
            let other = time::Date::from_julian_day(other_day).unwrap();
            TimeValues {
                id: ObjectId::new(),
                // the fields, not the instant: the stored tuple is the local date and time
                at: time::PrimitiveDateTime::new(date, time_of(nanos)).assume_offset(offset),
                date: other,
                local: time::PrimitiveDateTime::new(other, time_of(other_nanos)),
                time: time_of(other_nanos),
                offset,
            }
        })
}

fn decimal() -> impl Strategy<Value = Decimal> {
    let max = Decimal::MAX.mantissa();
    (-max..=max, 0u32..=28).prop_map(|(m, scale)| Decimal::from_i128_with_scale(m, scale))
}

/// A uuid no other case uses (proptest replays shrunk values, which would repeat an `_id`).
fn fresh_uuid() -> uuid::Uuid {
    let mut bytes = [0; 16];
    bytes[..12].copy_from_slice(&ObjectId::new().bytes());
    uuid::Uuid::from_bytes(bytes)
}

fn ids_and_amounts() -> impl Strategy<Value = IdsAndAmounts> {
    (
        any::<u128>(),
        proptest::option::of(any::<u128>()),
        decimal(),
        proptest::option::of(decimal()),
    )
        .prop_map(|(_, other, amount, maybe_amount)| IdsAndAmounts {
            id: fresh_uuid(),
            other: other.map(uuid::Uuid::from_u128),
            amount,
            maybe_amount,
        })
}

fn v6() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(Ipv6Addr::from)
}

fn std_values() -> impl Strategy<Value = StdValues> {
    (
        (
            any::<NonZeroU8>(),
            any::<NonZeroU16>(),
            any::<NonZeroU32>(),
            (1u64..=i64::MAX as u64).prop_map(|v| NonZeroU64::new(v).unwrap()),
            (1usize..=i64::MAX as usize).prop_map(|v| NonZeroUsize::new(v).unwrap()),
            any::<NonZeroI8>(),
            any::<NonZeroI16>(),
            any::<NonZeroI32>(),
            any::<NonZeroI64>(),
        ),
        (
            prop_oneof![
                any::<[u8; 4]>().prop_map(IpAddr::from),
                v6().prop_map(IpAddr::V6)
            ],
            any::<[u8; 4]>().prop_map(Ipv4Addr::from),
            v6(),
            prop_oneof![
                (any::<[u8; 4]>(), any::<u16>()).prop_map(|(o, p)| SocketAddr::from((o, p))),
                (v6(), any::<u16>()).prop_map(|(ip, p)| SocketAddr::from((ip, p))),
            ],
            (any::<[u8; 4]>(), any::<u16>())
                .prop_map(|(o, p)| SocketAddrV4::new(Ipv4Addr::from(o), p)),
            // serde's compact form keeps neither flow info nor scope id
            (v6(), any::<u16>()).prop_map(|(ip, p)| SocketAddrV6::new(ip, p, 0, 0)),
        ),
        (
            (0..=i64::MAX as u64, 0u32..1_000_000_000),
            (0..=i64::MAX as u64 / 4, 0u32..1_000_000_000),
        ),
    )
        .prop_map(
            |(
                (u8, u16, u32, u64, usize, i8, i16, i32, i64),
                (ip, v4, v6, socket, socket_v4, socket_v6),
                ((secs, nanos), (seen_secs, seen_nanos)),
            )| {
                StdValues {
                    id: ObjectId::new(),
                    u8,
                    u16,
                    u32,
                    u64,
                    usize,
                    i8,
                    i16,
                    i32,
                    i64,
                    ip,
                    v4,
                    v6,
                    socket,
                    socket_v4,
                    socket_v6,
                    timeout: std::time::Duration::new(secs, nanos),
                    seen: std::time::UNIX_EPOCH + std::time::Duration::new(seen_secs, seen_nanos),
                }
            },
        )
}

/// Milliseconds of the BSON dates generated: years 0001-9999. RFC 3339 writes years 0000-9999,
/// mongod stores any 64-bit date, but the test server (SecantusDB, on Python's bson) refuses a
/// date outside Python's `datetime` (`year 253259 is out of range`).
const DATE_MILLIS: std::ops::RangeInclusive<i64> = -62_135_596_800_000..=253_402_300_799_999;

fn bson_helpers() -> impl Strategy<Value = BsonHelpers> {
    // values with millisecond precision, as a BSON date keeps them
    (
        (
            DATE_MILLIS,
            proptest::option::of(DATE_MILLIS),
            DATE_MILLIS,
            DATE_MILLIS,
            DATE_MILLIS,
            DATE_MILLIS,
            any::<[u8; 12]>(),
            any::<[u8; 12]>(),
            DATE_MILLIS,
        ),
        (
            any::<u32>(),
            // exactly representable: 53 significant bits, shifted
            (0u64..1 << 53, 0u32..=11).prop_map(|(m, shift)| m << shift),
            0..=i32::MAX as u32,
            0..=i32::MAX as u64,
            any::<u32>(),
            0..=i64::MAX as u64,
            any::<u32>(),
            any::<u32>(),
        ),
        (
            any::<[u128; 4]>(),
            any::<[u8; 16]>(),
            proptest::option::of(any::<[u8; 8]>()),
            proptest::collection::vec(any::<u8>(), 0..64),
        ),
    )
        .prop_map(
            |(
                (chrono, maybe, time, rfc_in, rfc_out, rfc_fn, hex_in, hex_fn, millis),
                (u32_double, u64_double, u32_int, u64_int, u32_long, u64_long, ts_in, ts_out),
                (uuids, bytes_fixed, bytes_maybe, bytes_vec),
            )| {
                let chrono_of = |ms: i64| Utc.timestamp_millis_opt(ms).unwrap();
                BsonHelpers {
                    id: ObjectId::new(),
                    chrono_date: chrono_of(chrono),
                    chrono_maybe: maybe.map(chrono_of),
                    time_date: DateTime::from_millis(time).to_time_0_3(),
                    rfc3339_in: DateTime::from_millis(rfc_in)
                        .try_to_rfc3339_string()
                        .unwrap(),
                    rfc3339_out: DateTime::from_millis(rfc_out),
                    rfc3339_fn: DateTime::from_millis(rfc_fn),
                    hex_in: ObjectId::from_bytes(hex_in).to_hex(),
                    hex_fn: ObjectId::from_bytes(hex_fn).to_hex(),
                    hex_out: ObjectId::new(),
                    u32_double,
                    u64_double,
                    millis,
                    u32_int,
                    u64_int,
                    u32_long,
                    u64_long,
                    ts_in,
                    ts_out: Timestamp {
                        time: ts_out,
                        increment: 0,
                    },
                    uuid: uuid::Uuid::from_u128(uuids[0]),
                    uuid_java: uuid::Uuid::from_u128(uuids[1]),
                    uuid_c_sharp: uuid::Uuid::from_u128(uuids[2]),
                    uuid_python: uuid::Uuid::from_u128(uuids[3]),
                    bytes_fixed,
                    bytes_maybe,
                    bytes_vec,
                }
            },
        )
}

fn serde_as_values() -> impl Strategy<Value = SerdeAs> {
    (
        DATE_MILLIS,
        proptest::option::of(DATE_MILLIS),
        DATE_MILLIS,
        any::<u128>(),
    )
        .prop_map(|(chrono, maybe, time, uuid)| SerdeAs {
            id: ObjectId::new(),
            chrono: Utc.timestamp_millis_opt(chrono).unwrap(),
            maybe: maybe.map(|ms| Utc.timestamp_millis_opt(ms).unwrap()),
            time: DateTime::from_millis(time).to_time_0_3(),
            uuid: uuid::Uuid::from_u128(uuid),
        })
}

// ---------------------------------------------------------------------------------------------
// the server

fn live(prefix: &str) -> Live {
    Live::new(
        prefix,
        Schema::new()
            .model::<ChronoValues>()
            .model::<TimeValues>()
            .model::<IdsAndAmounts>()
            .model::<StdValues>()
            .model::<BsonHelpers>()
            .model::<SerdeAs>()
            .build()
            .unwrap(),
    )
}

fn config() -> ProptestConfig {
    common::live::config(40)
}

/// Writes `value` through the typed collection and reads it back.
async fn round_trip<T>(db: &mongodb::Database, value: &T) -> Result<(), TestCaseError>
where
    T: Document + Serialize + DeserializeOwned + PartialEq + Debug + Send + Sync,
{
    let collection = T::collection(db);
    let id = collection
        .insert_one(value)
        .await
        .in_collection(T::COLLECTION)
        .map_err(|e| TestCaseError::fail(format!("{e}\n{value:?}")))?
        .inserted_id;
    let read = collection
        .find_one(doc! { "_id": id })
        .await
        .map_err(|e| TestCaseError::fail(format!("{e}")))?
        .ok_or_else(|| TestCaseError::fail("not found"))?;
    prop_assert_eq!(&read, value);
    Ok(())
}

#[test]
fn generated_values_are_accepted_and_read_back_equal() {
    let live = live("ecosystem_ok");
    let accepted = std::cell::Cell::new(0);
    proptest!(config(), |(
        c in chrono_values(),
        t in time_values(),
        i in ids_and_amounts(),
        s in std_values(),
        h in bson_helpers(),
        a in serde_as_values(),
    )| {
        live.runtime.block_on(async {
            round_trip(&live.db, &c).await?;
            round_trip(&live.db, &t).await?;
            round_trip(&live.db, &i).await?;
            round_trip(&live.db, &s).await?;
            round_trip(&live.db, &h).await?;
            round_trip(&live.db, &a).await?;
            Ok::<(), TestCaseError>(())
        })?;
        accepted.set(accepted.get() + 6);
    });
    println!(
        "{} generated documents accepted and read back equal",
        accepted.get()
    );
    assert_eq!(accepted.get(), 6 * config().cases);
}

// ---------------------------------------------------------------------------------------------
// broken documents

/// What `insert_one` stores for `value`.
fn stored<T: Serialize>(value: &T) -> BsonDocument {
    let raw = bson::to_raw_document_buf(value).unwrap();
    BsonDocument::try_from(raw.as_ref()).unwrap()
}

/// A field set to a value its schema refuses.
type Breach = (&'static str, Bson);

fn chrono_breaches() -> Vec<Breach> {
    vec![
        ("utc", Bson::DateTime(DateTime::now())),
        ("utc", "2023-11-14T22:13:20+01:00".into()),
        ("utc", "2023-11-14 22:13:20Z".into()),
        ("utc", "yesterday".into()),
        ("fixed", "2023-11-14T22:13:20".into()),
        ("fixed", "2023-11-14T22:13:20+1:00".into()),
        ("date", "14.11.2023".into()),
        ("date", "2023-11-14T00:00:00".into()),
        ("local", "2023-11-14T22:13:20Z".into()),
        ("time", "1:02:03".into()),
        ("time", "01:02:03.1234".into()),
        ("maybe", 0_i64.into()),
        // the `ts_*` helpers write an i64
        ("seconds", 0.into()),
        ("seconds", "2023-11-14T22:13:20Z".into()),
        ("millis", Bson::DateTime(DateTime::now())),
        ("nanos", 1.5.into()),
    ]
}

fn time_breaches() -> Vec<Breach> {
    let ints = |v: &[i32]| Bson::from(v.to_vec());
    vec![
        ("at", Bson::DateTime(DateTime::now())),
        ("at", "2023-11-14T22:13:20Z".into()),
        ("date", ints(&[2024, 367])),
        ("date", ints(&[2024, 0])),
        ("date", ints(&[2024])),
        // time's range: bson builds it with `large-dates` (years up to ±999,999)
        ("date", ints(&[time::Date::MAX.year() + 1, 1])),
        (
            "time",
            vec![Bson::Int32(24), 0.into(), 0.into(), Bson::Int64(0)].into(),
        ),
        // the nanosecond is a long
        ("time", ints(&[0, 0, 0, 0])),
        ("offset", ints(&[26, 0, 0])),
        ("offset", ints(&[0, 0])),
        (
            "local",
            vec![
                Bson::Int32(2024),
                1.into(),
                0.into(),
                60.into(),
                0.into(),
                Bson::Int64(0),
            ]
            .into(),
        ),
    ]
}

fn ids_breaches() -> Vec<Breach> {
    vec![
        // what `bson::to_document` writes for a `uuid::Uuid`
        ("other", "12345678-9abc-def0-1234-56789abcdef0".into()),
        ("amount", "1e5".into()),
        ("amount", "12.".into()),
        ("amount", " 1".into()),
        ("amount", 1.5.into()),
        (
            "amount",
            Bson::Decimal128("1.5".parse::<bson::Decimal128>().unwrap()),
        ),
        ("maybe_amount", "1,5".into()),
    ]
}

fn std_breaches() -> Vec<Breach> {
    let ints = |v: &[i32]| Bson::from(v.to_vec());
    vec![
        ("u8", 0.into()),
        ("u8", 256.into()),
        ("u16", 0.into()),
        ("u32", Bson::Int64(0)),
        ("u32", Bson::Int32(5)),
        ("u64", Bson::Int64(0)),
        ("usize", Bson::Int64(-1)),
        ("i8", 0.into()),
        ("i8", 128.into()),
        ("i16", 0.into()),
        ("i32", 0.into()),
        ("i64", Bson::Int64(0)),
        ("i64", Bson::Int32(1)),
        // what `bson::to_document` writes for addresses
        ("ip", "10.0.0.1".into()),
        ("ip", doc! { "V5": [1, 2, 3, 4] }.into()),
        ("ip", doc! { "V4": [1, 2, 3, 4], "V6": [1, 2, 3, 4] }.into()),
        ("ip", doc! { "V4": [1, 2, 3] }.into()),
        ("v4", "10.0.0.1".into()),
        ("v4", ints(&[10, 0, 0, 256])),
        ("v6", ints(&[0; 15])),
        ("socket", "10.0.0.1:80".into()),
        ("socket_v4", ints(&[10, 0, 0, 1, 80])),
        (
            "socket_v4",
            vec![ints(&[10, 0, 0, 1]), 65_536.into()].into(),
        ),
        ("socket_v6", vec![ints(&[0; 16])].into()),
        ("timeout", Bson::Int64(5)),
        ("timeout", doc! { "secs": 1_i64 }.into()),
        ("timeout", doc! { "secs": -1_i64, "nanos": 0_i64 }.into()),
        (
            "timeout",
            doc! { "secs": 1_i64, "nanos": 1_000_000_000_i64 }.into(),
        ),
        ("seen", Bson::DateTime(DateTime::now())),
    ]
}

fn helper_breaches() -> Vec<Breach> {
    let oid = ObjectId::new();
    vec![
        ("chrono_date", "2023-11-14T22:13:20Z".into()),
        ("chrono_maybe", "2023-11-14T22:13:20Z".into()),
        ("time_date", Bson::Int64(0)),
        ("rfc3339_in", "2023-11-14T22:13:20Z".into()),
        ("rfc3339_out", Bson::DateTime(DateTime::now())),
        ("rfc3339_out", "2023-11-14T22:13:20+01:00".into()),
        ("rfc3339_fn", "2023-11-14T22:13:20.1234Z".into()),
        ("hex_in", oid.to_hex().into()),
        ("hex_fn", oid.to_hex().into()),
        ("hex_out", oid.into()),
        ("hex_out", oid.to_hex().to_uppercase().into()),
        ("hex_out", oid.to_hex()[1..].into()),
        ("u32_double", Bson::Int64(1)),
        ("u32_double", (-1.0).into()),
        ("u32_double", 4_294_967_296.0.into()),
        ("u64_double", (-1.0).into()),
        ("u64_double", 18_446_744_073_709_551_616.0.into()),
        ("millis", Bson::Int64(0)),
        ("u32_int", Bson::Int64(1)),
        ("u32_int", (-1).into()),
        ("u64_int", (-1).into()),
        ("u32_long", Bson::Int64(u32::MAX as i64 + 1)),
        ("u32_long", Bson::Int32(1)),
        ("u64_long", Bson::Int64(-1)),
        ("ts_in", Bson::Int64(1)),
        (
            "ts_out",
            Bson::Timestamp(Timestamp {
                time: 1,
                increment: 0,
            }),
        ),
        ("ts_out", Bson::Int64(-1)),
        ("uuid", uuid::Uuid::nil().to_string().into()),
        ("uuid_java", 0.into()),
        ("bytes_fixed", Bson::from(vec![0; 16])),
        ("bytes_maybe", "bytes".into()),
        ("bytes_maybe", Bson::from(Vec::<i32>::new())),
        ("bytes_vec", Bson::from(vec![1, 2, 3])),
    ]
}

fn serde_as_breaches() -> Vec<Breach> {
    vec![
        // what the types write without `serde_as`
        ("chrono", "2023-11-14T22:13:20Z".into()),
        ("maybe", "2023-11-14T22:13:20Z".into()),
        ("time", vec![2023, 318].into()),
        ("uuid", uuid::Uuid::nil().to_string().into()),
    ]
}

/// A new `_id` of the same type as `id` (an `ObjectId`, or a uuid's binary).
fn fresh_id(id: &Bson) -> Bson {
    match id {
        Bson::ObjectId(_) => ObjectId::new().into(),
        Bson::Binary(binary) => {
            let mut bytes = ObjectId::new().bytes().to_vec();
            bytes.extend_from_slice(&[0; 4]);
            Bson::Binary(bson::Binary {
                subtype: binary.subtype,
                bytes,
            })
        }
        other => panic!("no fresh id for {other}"),
    }
}

/// Inserts `valid` raw (accepted), then each breach of it (refused with 121 naming the field).
async fn expect_refused(
    db: &mongodb::Database,
    collection: &str,
    valid: BsonDocument,
    breaches: &[Breach],
) -> Result<usize, TestCaseError> {
    let raw = db.collection::<BsonDocument>(collection);
    raw.insert_one(&valid)
        .await
        .map_err(|e| TestCaseError::fail(format!("the unbroken document was refused: {e}")))?;
    for (field, value) in breaches {
        let mut broken = valid.clone();
        broken.insert("_id", fresh_id(valid.get("_id").unwrap()));
        broken.insert(*field, value.clone());
        let error = match raw.insert_one(&broken).await {
            Ok(_) => {
                return Err(TestCaseError::fail(format!(
                    "`{field}: {value}` was accepted in {collection}"
                )))
            }
            Err(error) => error,
        };
        let code = match error.kind.as_ref() {
            ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
            _ => None,
        };
        prop_assert_eq!(code, Some(121), "`{}: {}`: {}", field, value, error);
        let typed = Err::<(), _>(error).in_collection(collection).unwrap_err();
        let validation = typed
            .as_validation()
            .ok_or_else(|| TestCaseError::fail(format!("not a validation error: {typed}")))?;
        prop_assert!(
            validation
                .paths()
                .iter()
                .any(|p| *p == *field || p.starts_with(&format!("{field}."))),
            "`{}: {}` names {:?}",
            field,
            value,
            validation.paths()
        );
    }
    Ok(breaches.len())
}

#[test]
fn documents_broken_per_type_are_refused_with_121_naming_the_field() {
    let live = live("ecosystem_broken");
    let refused = std::cell::Cell::new(0);
    let cases = ProptestConfig {
        cases: 8,
        ..config()
    };
    proptest!(cases, |(
        c in chrono_values(),
        t in time_values(),
        i in ids_and_amounts(),
        s in std_values(),
        h in bson_helpers(),
        a in serde_as_values(),
    )| {
        let n = live.runtime.block_on(async {
            let db = &live.db;
            let mut n = 0;
            n += expect_refused(db, ChronoValues::COLLECTION, stored(&c), &chrono_breaches())
                .await?;
            n += expect_refused(db, TimeValues::COLLECTION, stored(&t), &time_breaches()).await?;
            n += expect_refused(db, IdsAndAmounts::COLLECTION, stored(&i), &ids_breaches())
                .await?;
            n += expect_refused(db, StdValues::COLLECTION, stored(&s), &std_breaches()).await?;
            n += expect_refused(db, BsonHelpers::COLLECTION, stored(&h), &helper_breaches())
                .await?;
            n += expect_refused(db, SerdeAs::COLLECTION, stored(&a), &serde_as_breaches())
                .await?;
            Ok::<usize, TestCaseError>(n)
        })?;
        refused.set(refused.get() + n);
    });
    println!("{} broken documents refused with 121", refused.get());
    let per_case = [
        chrono_breaches().len(),
        time_breaches().len(),
        ids_breaches().len(),
        std_breaches().len(),
        helper_breaches().len(),
        serde_as_breaches().len(),
    ];
    assert_eq!(per_case.iter().sum::<usize>(), 100, "{per_case:?}");
    // each of the 8 cases refused all 100 breaches
    assert_eq!(refused.get(), 800);
}

/// `bson::to_document` (human readable) writes some of these types differently from the
/// driver: such a document is refused, the driver's own write is accepted.
#[test]
fn the_human_readable_shape_is_refused_where_it_differs() {
    let live = live("ecosystem_human");
    let value = IdsAndAmounts {
        id: uuid::Uuid::from_u128(7),
        other: Some(uuid::Uuid::from_u128(8)),
        amount: Decimal::new(-12_345, 3),
        maybe_amount: None,
    };
    let human = bson::to_document(&value).unwrap();
    assert_eq!(
        human.get("other"),
        Some(&Bson::from("00000000-0000-0000-0000-000000000008"))
    );
    live.runtime.block_on(async {
        let raw = live
            .db
            .collection::<BsonDocument>(IdsAndAmounts::COLLECTION);
        let error = raw.insert_one(&human).await.unwrap_err();
        let typed = Err::<(), _>(error)
            .in_collection(IdsAndAmounts::COLLECTION)
            .unwrap_err();
        let validation = typed.as_validation().expect("a validation error");
        let mut paths = validation.paths();
        paths.sort();
        assert_eq!(paths, ["_id", "other"], "{validation}");
        IdsAndAmounts::collection(&live.db)
            .insert_one(&value)
            .await
            .unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// the emitted schemas

fn property(validator: &BsonDocument, name: &str) -> BsonDocument {
    validator
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap()
        .get_document(name)
        .unwrap()
        .clone()
}

#[test]
fn ecosystem_types_emit_the_stored_shape() {
    let chrono = ChronoValues::validator();
    assert_eq!(
        property(&chrono, "date"),
        doc! {
            "bsonType": "string",
            "maxLength": 13_i64,
            "pattern": "^([0-9]{4}|[+-][0-9]{4,6})-[0-9]{2}-[0-9]{2}$",
        }
    );
    assert_eq!(
        property(&chrono, "maybe").get("bsonType"),
        Some(&Bson::from(vec!["string", "null"]))
    );
    assert_eq!(property(&chrono, "seconds"), doc! { "bsonType": "long" });
    assert_eq!(
        property(&chrono, "millis"),
        doc! { "bsonType": ["long", "null"] }
    );
    let time = TimeValues::validator();
    assert_eq!(
        property(&time, "offset"),
        doc! {
            "bsonType": "array",
            "minItems": 3_i64,
            "maxItems": 3_i64,
            "items": [
                { "bsonType": "int", "minimum": -25_i64, "maximum": 25_i64 },
                { "bsonType": "int", "minimum": -59_i64, "maximum": 59_i64 },
                { "bsonType": "int", "minimum": -59_i64, "maximum": 59_i64 },
            ],
        }
    );
    let ids = IdsAndAmounts::validator();
    assert_eq!(property(&ids, "_id"), doc! { "bsonType": "binData" });
    assert_eq!(
        property(&ids, "other"),
        doc! { "bsonType": ["binData", "null"] }
    );
    let std = StdValues::validator();
    assert_eq!(
        property(&std, "u8"),
        doc! { "bsonType": "int", "minimum": 1_i64, "maximum": 255_i64 }
    );
    assert_eq!(
        property(&std, "i16"),
        doc! {
            "bsonType": "int",
            "minimum": -32_768_i64,
            "maximum": 32_767_i64,
            "not": { "enum": [0] },
        }
    );
    assert_eq!(
        property(&std, "ip")
            .get_document("properties")
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["V4", "V6"]
    );
}

#[test]
fn known_helpers_emit_what_they_write() {
    let helpers = BsonHelpers::validator();
    let expected = [
        ("chrono_date", doc! { "bsonType": "date" }),
        ("chrono_maybe", doc! { "bsonType": ["date", "null"] }),
        ("time_date", doc! { "bsonType": "date" }),
        ("rfc3339_in", doc! { "bsonType": "date" }),
        ("hex_in", doc! { "bsonType": "objectId" }),
        ("hex_fn", doc! { "bsonType": "objectId" }),
        ("millis", doc! { "bsonType": "date" }),
        (
            "u32_int",
            doc! { "bsonType": "int", "minimum": 0_i64, "maximum": i64::from(i32::MAX) },
        ),
        (
            "u32_long",
            doc! { "bsonType": "long", "minimum": 0_i64, "maximum": i64::from(u32::MAX) },
        ),
        ("ts_in", doc! { "bsonType": "timestamp" }),
        ("uuid_python", doc! { "bsonType": "binData" }),
        ("bytes_fixed", doc! { "bsonType": "binData" }),
        ("bytes_maybe", doc! { "bsonType": ["binData", "null"] }),
        ("bytes_vec", doc! { "bsonType": "binData" }),
    ];
    for (field, schema) in expected {
        assert_eq!(property(&helpers, field), schema, "{field}");
    }
    assert_eq!(
        property(&helpers, "hex_out").get_str("pattern"),
        Ok("^[0-9a-f]{24}$")
    );
    assert_eq!(
        property(&helpers, "rfc3339_out"),
        property(&helpers, "rfc3339_fn")
    );
    let serde_as = SerdeAs::validator();
    for (field, schema) in [
        ("chrono", doc! { "bsonType": "date" }),
        ("maybe", doc! { "bsonType": ["date", "null"] }),
        ("time", doc! { "bsonType": "date" }),
        ("uuid", doc! { "bsonType": "binData" }),
    ] {
        assert_eq!(property(&serde_as, field), schema, "{field}");
    }
}

/// A collection keyed by a `uuid::Uuid` stored as subtype 4 (bson's helper), with a child
/// referencing it.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "uuid_accounts")]
pub struct UuidAccount {
    #[serde(rename = "_id", with = "bson::serde_helpers::uuid_1_as_binary")]
    pub id: uuid::Uuid,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "uuid_sessions")]
pub struct UuidSession {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub account: Ref<UuidAccount>,
}

/// The library's own filters write an id as `insert_one` does (binary for a `uuid::Uuid`, where
/// `bson::to_bson` writes a string): a reference finds its document, and a relation its children.
#[test]
fn library_filters_write_ids_as_the_driver_stores_them() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let db = mongo_schema_testkit::database("uuid_refs").await;
        Schema::new()
            .model::<UuidAccount>()
            .model::<UuidSession>()
            .build()
            .unwrap()
            .apply(&db)
            .await
            .unwrap();
        let account = UuidAccount {
            id: uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0),
            name: "ada".into(),
        };
        UuidAccount::collection(&db)
            .insert_one(&account)
            .await
            .unwrap();
        let session = UuidSession {
            id: ObjectId::new(),
            account: account.to_ref(),
        };
        UuidSession::collection(&db)
            .insert_one(&session)
            .await
            .unwrap();
        // the helper's subtype 4, in the account, in the reference its child stores, and in
        // every filter the library writes
        let subtype = |value: Option<&Bson>| match value {
            Some(Bson::Binary(binary)) => Some(binary.subtype),
            _ => None,
        };
        let raw = |name: &str| db.collection::<BsonDocument>(name);
        let stored_account = raw(UuidAccount::COLLECTION)
            .find_one(doc! {})
            .await
            .unwrap()
            .unwrap();
        let stored_session = raw(UuidSession::COLLECTION)
            .find_one(doc! {})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            subtype(stored_account.get("_id")),
            Some(BinarySubtype::Uuid)
        );
        assert_eq!(
            subtype(stored_session.get("account")),
            Some(BinarySubtype::Uuid)
        );
        assert_eq!(
            subtype(Some(&account.to_ref().to_bson())),
            Some(BinarySubtype::Uuid)
        );
        // and read back through the helper
        let read: UuidSession = bson::from_document(stored_session).unwrap();
        assert_eq!(read, session);
        let found = UuidAccount::collection(&db)
            .find_one(account.to_ref().filter())
            .await
            .unwrap();
        assert_eq!(found, Some(account.clone()));
        let resolved = Ref::resolve_all(&db, &[session.account]).await.unwrap();
        assert_eq!(resolved.documents, vec![account.clone()]);
        assert!(resolved.missing.is_empty());
        let children = UuidSession::collection(&db)
            .count_documents(
                UuidSession::ACCOUNT
                    .children_filter(&account.to_ref())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(children, 1);
    });
}
