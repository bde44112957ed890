//! Places and distances: a GeoJSON [`Point`] stored as MongoDB's `2dsphere` indexes read it,
//! with a `$jsonSchema` that refuses a longitude outside ±180 and a latitude outside ±90, and
//! the [`Area`] a declared `within` query looks in.
//!
//! A model stores a point as a field of type [`Point`], indexes it with
//! `#[index(keys(location = "2dsphere"))]`, and declares its geo queries:
//!
//! - `#[query(name = "near_by", eq(kind), near(location), limit = 20)]`: the places of a kind
//!   nearest to a point first, within a distance in metres; the generated function takes
//!   `near: &Point` and `max_metres: f64` after the equalities' arguments. It runs a `$geoNear`
//!   stage (mongod answers it with the `2dsphere` index, `GEO_NEAR_2DSPHERE`, nearest first; a
//!   server that does not sort `$near`'s matches by distance, as SecantusDB, sorts `$geoNear`'s
//!   too), which needs the `2dsphere` index on the field: a `near` without one is a compile
//!   error when the model declares its indexes, and a `Schema::build` error otherwise.
//! - `#[query(name = "inside", within(location))]`: the places inside an [`Area`] (a circle of
//!   a radius in metres, or a polygon), with `$geoWithin`; `Schema::build` derives a `2dsphere`
//!   index for it when no declared one serves it, like any other declared query.
//!
//! Distances are on mongod's sphere of radius [`EARTH_RADIUS_METRES`].

mod area;
mod point;

pub use area::Area;
pub use point::Point;

/// The radius of the sphere mongod measures distances on: `kRadiusOfEarthInMeters`
/// (`src/mongo/db/geo/geoconstants.h`, 6378.1 km). A `$centerSphere` radius in radians is a
/// distance in metres divided by it.
pub const EARTH_RADIUS_METRES: f64 = 6_378_100.0;

/// A field a geo query (`near`, `within`) reads: a [`Point`], or an `Option` of one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a GeoJSON point: `near` and `within` read a `mongo_schema::geo::Point` field",
    label = "not a `geo::Point`",
    note = "store the location as `mongo_schema::geo::Point` (GeoJSON `{{ type: \"Point\", coordinates: [lng, lat] }}`) and index it with `#[index(keys(field = \"2dsphere\"))]`"
)]
pub trait GeoField {}

impl GeoField for Point {}
impl GeoField for Option<Point> {}
