//! The area a `within` query looks in.

use mongodb::bson::{doc, Bson, Document};

use super::{Point, EARTH_RADIUS_METRES};
use crate::{Error, Result};

/// Where a declared `within(field)` query looks: a circle of a radius in metres around a
/// point, or a polygon. Sent as `$geoWithin` with `$centerSphere` (the radius in radians of
/// mongod's sphere, [`EARTH_RADIUS_METRES`]) or with a GeoJSON `Polygon` `$geometry`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Area {
    /// The points at most `radius_metres` from `center`.
    Circle {
        /// The centre.
        center: Point,
        /// The radius, in metres.
        radius_metres: f64,
    },
    /// The points inside a ring of at least three corners (closed: its last point is its
    /// first).
    Polygon(Vec<Point>),
}

impl Area {
    /// The points at most `radius_metres` from `center`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a radius that is negative or not finite.
    pub fn circle(center: Point, radius_metres: f64) -> Result<Area> {
        if !radius_metres.is_finite() || radius_metres < 0.0 {
            return Err(Error::invalid_argument(
                "radius_metres",
                format!("a circle's radius of {radius_metres} metres: it is 0 or more"),
            ));
        }
        Ok(Area::Circle {
            center,
            radius_metres,
        })
    }

    /// The points inside the polygon of `corners`, in order (the ring is closed for you when
    /// the last corner is not the first).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for fewer than three distinct corners (mongod refuses a
    /// GeoJSON ring of fewer than four positions, the first repeated last).
    pub fn polygon(corners: impl IntoIterator<Item = Point>) -> Result<Area> {
        let mut ring: Vec<Point> = corners.into_iter().collect();
        if ring.len() > 1 && ring.first() == ring.last() {
            ring.pop();
        }
        if ring.len() < 3 {
            return Err(Error::invalid_argument(
                "corners",
                format!(
                    "a polygon of {} distinct corner(s): it needs three or more",
                    ring.len()
                ),
            ));
        }
        ring.push(ring[0]);
        Ok(Area::Polygon(ring))
    }

    /// The `$geoWithin` operand.
    pub(crate) fn geo_within(&self) -> Document {
        match self {
            Area::Circle {
                center,
                radius_metres,
            } => doc! {
                "$centerSphere": [[center.lng(), center.lat()], radius_metres / EARTH_RADIUS_METRES]
            },
            Area::Polygon(ring) => {
                let positions: Vec<Bson> = ring
                    .iter()
                    .map(|p| Bson::Array(vec![Bson::Double(p.lng()), Bson::Double(p.lat())]))
                    .collect();
                doc! { "$geometry": { "type": "Polygon", "coordinates": [positions] } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_polygon_is_closed_and_a_circle_in_radians() {
        let p = |lng, lat| Point::new(lng, lat).unwrap();
        let triangle = Area::polygon([p(0.0, 0.0), p(1.0, 0.0), p(0.0, 1.0)]).unwrap();
        let Area::Polygon(ring) = &triangle else {
            panic!("{triangle:?}")
        };
        assert_eq!(ring.len(), 4);
        assert_eq!(ring[0], ring[3]);
        assert!(Area::polygon([p(0.0, 0.0), p(1.0, 0.0), p(0.0, 0.0)]).is_err());
        let circle = Area::circle(p(0.0, 0.0), EARTH_RADIUS_METRES).unwrap();
        assert_eq!(
            circle.geo_within(),
            doc! { "$centerSphere": [[0.0, 0.0], 1.0] }
        );
        assert!(Area::circle(p(0.0, 0.0), -1.0).is_err());
    }
}
