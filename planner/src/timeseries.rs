//! Rule 9, time series: mongod indexes a time series collection's buckets
//! (`timeseries_index_schema_conversion_functions.cpp`), so an equality on the time field or a
//! measurement bounds a bucket's minimum and maximum, a range (`bucket_spec.cpp`
//! `createPredicatesOnBucketLevelField`).

use crate::QueryShape;

/// Rule 9: on a time series collection, the query with its equalities and `$in`s on the time
/// field and the measurements moved to its ranges (bounds on each bucket's minimum and
/// maximum); `None` for another collection.
pub(crate) fn bucket_ranges(query: &QueryShape) -> Option<QueryShape> {
    let ts = query.time_series.as_ref()?;
    let mut q = query.clone();
    let (points, ranges): (Vec<String>, Vec<String>) =
        q.eq.into_iter().partition(|p| !ts.is_bucket_bounded(p));
    q.eq = points;
    let ranges_in: Vec<String> = q
        .in_
        .iter()
        .filter(|(p, _)| ts.is_bucket_bounded(p))
        .map(|(p, _)| p.clone())
        .collect();
    q.in_.retain(|(p, _)| !ts.is_bucket_bounded(p));
    for path in ranges.into_iter().chain(ranges_in) {
        if !q.range.contains(&path) {
            q.range.push(path);
        }
    }
    Some(q)
}

/// Rule 9, time series: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
    vec![
        // Rule 9, time series: createBucketsSpecFromTimeseriesSpec, bucket-level predicates,
        // the bounded sort on the time field.
        (
            ix("sensor:1,at:1"),
            q().eq("sensor").range("at").sort("at:1").ts("at", "sensor"),
            served(false, 1),
            "one sensor's readings in time order",
        ),
        (
            ix("sensor.site:1,at:-1"),
            q().eq("sensor.site").sort("at:1").ts("at", "sensor"),
            served(true, 1),
            "a field under meta, time backwards",
        ),
        (
            ix("at:1,sensor:1"),
            q().eq("sensor,at").ts("at", "sensor"),
            Verdict::Examines(bucket("at", true)),
            "an equality on the time field is a bucket range",
        ),
        (
            ix("sensor:1,value:1,at:1"),
            q().eq("sensor,value").sort("at:1").ts("at", "sensor"),
            Verdict::BlockingSort(bucket("value", false)),
            "a measurement gives no point and no order",
        ),
        (
            ix("sensor:1,value:1"),
            q().eq("sensor").sort("value:1").ts("at", "sensor"),
            Verdict::BlockingSort(bucket("value", false)),
            "a sort on a measurement",
        ),
    ]
}
