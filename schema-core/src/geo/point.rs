//! The GeoJSON point.

use std::fmt;

use mongodb::bson::{doc, Document};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{BsonSchema, Error, Result};

/// A place on the earth: a GeoJSON point, stored as
/// `{ type: "Point", coordinates: [longitude, latitude] }`, longitude first as GeoJSON (and
/// mongod's `2dsphere` index) has it.
///
/// [`Point::new`] refuses a longitude outside -180..=180 or a latitude outside -90..=90 (or a
/// value that is not finite), and so does deserializing a stored one; its `$jsonSchema`
/// refuses both on the server (a latitude of 95 written by another client is code 121).
///
/// ```
/// use mongo_schema_core::geo::Point;
/// let lisbon = Point::new(-9.1393, 38.7223)?;
/// assert_eq!(lisbon.lat(), 38.7223);
/// assert!(Point::new(-9.1393, 95.0).is_err());
/// # Ok::<(), mongo_schema_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    lng: f64,
    lat: f64,
}

impl Point {
    /// Longitude 0, latitude 0.
    pub const ORIGIN: Point = Point { lng: 0.0, lat: 0.0 };

    /// The point at longitude `lng` and latitude `lat`, in degrees.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a longitude outside -180..=180, a latitude outside
    /// -90..=90, or a coordinate that is not finite (mongod refuses each in a `2dsphere` index).
    pub fn new(lng: f64, lat: f64) -> Result<Point> {
        check(lng, lat).map_err(|why| Error::invalid_argument("point", why))?;
        Ok(Point { lng, lat })
    }

    /// The longitude, in degrees.
    pub fn lng(&self) -> f64 {
        self.lng
    }

    /// The latitude, in degrees.
    pub fn lat(&self) -> f64 {
        self.lat
    }

    /// The GeoJSON document (`$geoNear`'s `near`, `$geometry`).
    pub fn to_document(&self) -> Document {
        doc! { "type": "Point", "coordinates": [self.lng, self.lat] }
    }
}

/// Why `(lng, lat)` is no point on the earth.
fn check(lng: f64, lat: f64) -> std::result::Result<(), String> {
    if !lng.is_finite() || !lat.is_finite() {
        return Err(format!(
            "the coordinates ({lng}, {lat}) of a point must be finite numbers"
        ));
    }
    if !(-180.0..=180.0).contains(&lng) {
        return Err(format!(
            "a longitude of {lng}: a point's longitude is -180 to 180 degrees (GeoJSON puts the longitude first: `Point::new(lng, lat)`)"
        ));
    }
    if !(-90.0..=90.0).contains(&lat) {
        return Err(format!(
            "a latitude of {lat}: a point's latitude is -90 to 90 degrees (GeoJSON puts the longitude first: `Point::new(lng, lat)`)"
        ));
    }
    Ok(())
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.lng, self.lat)
    }
}

impl Serialize for Point {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut point = serializer.serialize_struct("Point", 2)?;
        point.serialize_field("type", "Point")?;
        point.serialize_field("coordinates", &[self.lng, self.lat])?;
        point.end()
    }
}

impl<'de> Deserialize<'de> for Point {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Point, D::Error> {
        struct PointVisitor;

        impl<'de> Visitor<'de> for PointVisitor {
            type Value = Point;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a GeoJSON point { type: \"Point\", coordinates: [lng, lat] }")
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Point, A::Error> {
                let mut kind: Option<String> = None;
                let mut coordinates: Option<Vec<f64>> = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "type" => kind = Some(map.next_value()?),
                        "coordinates" => coordinates = Some(map.next_value()?),
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                match kind.as_deref() {
                    Some("Point") => {}
                    Some(other) => {
                        return Err(de::Error::custom(format!(
                            "a GeoJSON `{other}` where a `Point` is stored"
                        )))
                    }
                    None => return Err(de::Error::missing_field("type")),
                }
                let coordinates =
                    coordinates.ok_or_else(|| de::Error::missing_field("coordinates"))?;
                let [lng, lat] = coordinates[..] else {
                    return Err(de::Error::invalid_length(
                        coordinates.len(),
                        &"two coordinates, [lng, lat]",
                    ));
                };
                check(lng, lat).map_err(de::Error::custom)?;
                Ok(Point { lng, lat })
            }
        }

        deserializer.deserialize_struct("Point", &["type", "coordinates"], PointVisitor)
    }
}

impl BsonSchema for Point {
    /// `{ type: "Point", coordinates: [lng, lat] }` with the longitude in -180..=180 and the
    /// latitude in -90..=90 (numbers of any BSON type: GeoJSON written by others may hold
    /// integers).
    fn bson_schema() -> Document {
        let coordinate = |limit: f64| {
            doc! { "bsonType": "number", "minimum": -limit, "maximum": limit }
        };
        doc! {
            "bsonType": "object",
            "required": ["type", "coordinates"],
            "additionalProperties": false,
            "properties": {
                "type": { "bsonType": "string", "enum": ["Point"] },
                "coordinates": crate::json_schema::compose::tuple(vec![coordinate(180.0), coordinate(90.0)]),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_geojson_point_is_bounded() {
        let point = <Point as crate::model::bson_schema::BsonSchema>::bson_schema();
        let bound = crate::model::size::SizeBound::of(
            &doc! { "bsonType": "object", "properties": { "at": point } },
        );
        assert!(bound.is_known(), "{bound}");
    }

    #[test]
    fn the_constructor_and_the_stored_form_refuse_what_is_no_place() {
        assert!(Point::new(180.0, -90.0).is_ok());
        for (lng, lat) in [(0.0, 95.0), (0.0, -90.5), (180.5, 0.0), (f64::NAN, 0.0)] {
            let error = Point::new(lng, lat).unwrap_err();
            assert!(
                matches!(error, Error::InvalidArgument { .. }),
                "({lng}, {lat}): {error:?}"
            );
        }
        let point = Point::new(-9.1393, 38.7223).unwrap();
        let stored = crate::bson_compat::to_document(&point).unwrap();
        assert_eq!(
            stored,
            doc! { "type": "Point", "coordinates": [-9.1393, 38.7223] }
        );
        let back: Point = crate::bson_compat::from_document(stored).unwrap();
        assert_eq!(back, point);
        let bad: std::result::Result<Point, _> =
            crate::bson_compat::from_document(doc! { "type": "Point", "coordinates": [1.0, 95.0] });
        assert!(bad.is_err());
        let line: std::result::Result<Point, _> = crate::bson_compat::from_document(
            doc! { "type": "LineString", "coordinates": [1.0, 5.0] },
        );
        assert!(line.is_err());
    }

    #[test]
    fn the_schema_refuses_a_latitude_of_95() {
        let validator =
            crate::LocalValidator::new(&doc! { "$jsonSchema": Point::bson_schema() }).unwrap();
        assert!(validator
            .check(&doc! { "type": "Point", "coordinates": [-9.1, 38.7] })
            .is_ok());
        assert!(validator
            .check(&doc! { "type": "Point", "coordinates": [-9, 38] })
            .is_ok());
        for bad in [
            doc! { "type": "Point", "coordinates": [-9.1, 95.0] },
            doc! { "type": "Point", "coordinates": [-190.0, 38.7] },
            doc! { "type": "Point", "coordinates": [-9.1] },
            doc! { "type": "Polygon", "coordinates": [-9.1, 38.7] },
        ] {
            assert!(validator.check(&bad).is_err(), "{bad}");
        }
    }
}
