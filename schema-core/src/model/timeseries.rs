//! Time series collections (`#[collection(timeseries(time = at, meta = sensor, granularity =
//! "minutes"), expire_after_secs = N)]`): measurements that mongod stores in buckets of its own.

use std::fmt;

use mongodb::bson::{doc, Bson, Document};

/// How far apart a time series' measurements of one meta value arrive: mongod sizes its
/// buckets by it (`bucketMaxSpanSeconds` of an hour, a day, thirty days). It can be raised
/// later (`collMod`), never lowered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Granularity {
    /// Measurements seconds apart (mongod's default).
    Seconds,
    /// Measurements minutes apart.
    Minutes,
    /// Measurements hours apart.
    Hours,
}

impl Granularity {
    /// The server's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Seconds => "seconds",
            Granularity::Minutes => "minutes",
            Granularity::Hours => "hours",
        }
    }

    /// Reads the server's spelling.
    pub fn parse(text: &str) -> Option<Granularity> {
        match text {
            "seconds" => Some(Granularity::Seconds),
            "minutes" => Some(Granularity::Minutes),
            "hours" => Some(Granularity::Hours),
            _ => None,
        }
    }
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The options of a time series collection: its time field (a BSON date in every
/// measurement), its meta field (what one series is: a sensor, a host), the granularity of its
/// buckets, and how long measurements are kept.
///
/// mongod creates a time series collection only with `create` (an existing collection cannot
/// become one: `apply` creates it before anything else writes to it, and refuses, writing
/// nothing, when a plain collection of the name exists), changes only the granularity upward
/// and the expiry (`collMod`), and takes no validator on it (`create` and `collMod` refuse
/// `validator`, `validationLevel` and `validationAction` with `InvalidOptions`:
/// `jstests/core/timeseries/ddl/timeseries_create.js`, `timeseries_collmod.js`). The model's
/// `$jsonSchema` still checks a value in the library before a write (`T::check`).
///
/// Indexes follow mongod's time series rules
/// (`timeseries_commands_conversion_helper.cpp`, `timeseries_index_schema_conversion_functions.cpp`):
/// on the meta field (and fields under it), the time field (ascending or descending) and
/// measurements (ascending, descending or `2dsphere`); never unique, never `text`, sparse only
/// on the meta and time fields, no TTL index (the collection's `expireAfterSeconds` expires
/// measurements), no partial filter together with a collation. mongod (6.3 and later) creates
/// `{ <meta>: 1, <time>: 1 }` with the collection; the schema declares it too, so a server that
/// does not gets it from `apply`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TimeSeries {
    /// `timeField`: the stored name of the time field.
    pub time_field: String,
    /// `metaField`: the stored name of the meta field, if any.
    pub meta_field: Option<String>,
    /// `granularity` (`None`: mongod's default, seconds).
    pub granularity: Option<Granularity>,
    /// `expireAfterSeconds`: measurements older than this are removed (by bucket).
    pub expire_after_secs: Option<u64>,
}

impl TimeSeries {
    /// A time series whose measurements hold their time in `time_field`.
    pub fn new(time_field: impl Into<String>) -> Self {
        TimeSeries {
            time_field: time_field.into(),
            meta_field: None,
            granularity: None,
            expire_after_secs: None,
        }
    }

    /// Sets the meta field.
    pub fn meta(mut self, meta_field: impl Into<String>) -> Self {
        self.meta_field = Some(meta_field.into());
        self
    }

    /// Sets the granularity.
    pub fn granularity(mut self, granularity: Granularity) -> Self {
        self.granularity = Some(granularity);
        self
    }

    /// Removes measurements older than `secs` seconds.
    pub fn expire_after_secs(mut self, secs: u64) -> Self {
        self.expire_after_secs = Some(secs);
        self
    }

    /// The `timeseries` option of `create`.
    pub fn to_document(&self) -> Document {
        let mut doc = doc! { "timeField": self.time_field.clone() };
        if let Some(meta) = &self.meta_field {
            doc.insert("metaField", meta.clone());
        }
        if let Some(granularity) = self.granularity {
            doc.insert("granularity", granularity.as_str());
        }
        doc
    }

    /// The granularity mongod applies (seconds when none is given).
    pub fn effective_granularity(&self) -> Granularity {
        self.granularity.unwrap_or(Granularity::Seconds)
    }

    /// The planner's names of the fields (rule 9 of [`crate::query::fit`]).
    pub(crate) fn fields(&self) -> mongo_schema_planner::TimeSeriesFields {
        mongo_schema_planner::TimeSeriesFields {
            time: self.time_field.clone(),
            meta: self.meta_field.clone(),
        }
    }

    /// The time series a `listCollections` entry's options describe (`None`: not one).
    pub(crate) fn from_options(options: &Document) -> Option<TimeSeries> {
        let ts = options.get_document("timeseries").ok()?;
        let expire = match options.get("expireAfterSeconds") {
            Some(Bson::Int32(n)) => u64::try_from(*n).ok(),
            Some(Bson::Int64(n)) => u64::try_from(*n).ok(),
            Some(Bson::Double(n)) if *n >= 0.0 => Some(*n as u64),
            _ => None,
        };
        Some(TimeSeries {
            time_field: ts.get_str("timeField").unwrap_or_default().to_owned(),
            meta_field: ts.get_str("metaField").ok().map(str::to_owned),
            granularity: ts.get_str("granularity").ok().and_then(Granularity::parse),
            expire_after_secs: expire,
        })
    }
}

impl fmt::Display for TimeSeries {
    /// `time `at`, meta `sensor`, granularity minutes, expires after 86400 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "time `{}`", self.time_field)?;
        if let Some(meta) = &self.meta_field {
            write!(f, ", meta `{meta}`")?;
        }
        write!(f, ", granularity {}", self.effective_granularity())?;
        if let Some(secs) = self.expire_after_secs {
            write!(f, ", expires after {secs} s")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_read_back_from_list_collections() {
        let ts = TimeSeries::new("at")
            .meta("sensor")
            .granularity(Granularity::Minutes)
            .expire_after_secs(86_400);
        assert_eq!(
            ts.to_document(),
            doc! { "timeField": "at", "metaField": "sensor", "granularity": "minutes" }
        );
        let listed = doc! {
            "timeseries": { "timeField": "at", "metaField": "sensor", "granularity": "minutes",
                            "bucketMaxSpanSeconds": 86_400 },
            "expireAfterSeconds": 86_400_i64,
        };
        assert_eq!(TimeSeries::from_options(&listed), Some(ts));
        assert_eq!(TimeSeries::from_options(&doc! { "validator": {} }), None);
        assert!(Granularity::Seconds < Granularity::Minutes);
        assert!(Granularity::Minutes < Granularity::Hours);
    }
}
