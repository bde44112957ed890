//! The sync worker's metrics through the `metrics` facade: a recorder installed by the test (as
//! a Prometheus or OpenTelemetry exporter would be) sees the counters move by the expected
//! amounts for a rename of N holders, and not for a change of a field nobody copies.
//!
//! One test in this binary: the recorder is process-global.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

use common::helpdesk::{self, Agent};
use mongo_schema::bson::{doc, oid::ObjectId};
use mongo_schema::sync_metrics as names;
use mongo_schema::Document as _;

const HOLDERS: usize = 37;
const WORKER: &str = "metrics";
const COPY: &str = "tickets.assignee";

type Labels = Vec<(String, String)>;

/// What the test's recorder keeps per metric key (name and labels).
#[derive(Default)]
struct Store {
    counters: Mutex<HashMap<(String, Labels), Arc<AtomicU64>>>,
    gauges: Mutex<HashMap<(String, Labels), Arc<AtomicU64>>>,
    histograms: Mutex<HashMap<(String, Labels), Arc<Samples>>>,
}

#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().unwrap().push(value);
    }
}

fn id(key: &Key) -> (String, Labels) {
    let mut labels: Labels = key
        .labels()
        .map(|l| (l.key().to_owned(), l.value().to_owned()))
        .collect();
    labels.sort();
    (key.name().to_owned(), labels)
}

/// A recorder that keeps every value it is given (counters add up, gauges keep the last
/// value, histograms every sample), read without resetting anything.
#[derive(Clone, Default)]
struct Recording(Arc<Store>);

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let cell = self
            .0
            .counters
            .lock()
            .unwrap()
            .entry(id(key))
            .or_default()
            .clone();
        Counter::from_arc(cell)
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let cell = self
            .0
            .gauges
            .lock()
            .unwrap()
            .entry(id(key))
            .or_default()
            .clone();
        Gauge::from_arc(cell)
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let cell = self
            .0
            .histograms
            .lock()
            .unwrap()
            .entry(id(key))
            .or_default()
            .clone();
        Histogram::from_arc(cell)
    }
}

fn wanted(name: &str, labels: &[(&str, &str)]) -> (String, Labels) {
    let mut labels: Labels = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.sort();
    (name.to_owned(), labels)
}

impl Recording {
    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.0
            .counters
            .lock()
            .unwrap()
            .get(&wanted(name, labels))
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }

    fn gauge(&self, name: &str) -> Option<f64> {
        self.0
            .gauges
            .lock()
            .unwrap()
            .get(&wanted(name, &[("worker", WORKER)]))
            .map(|g| f64::from_bits(g.load(Ordering::SeqCst)))
    }

    fn samples(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.0
            .histograms
            .lock()
            .unwrap()
            .get(&wanted(name, labels))
            .map_or_else(Vec::new, |h| h.0.lock().unwrap().clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_of_n_holders_moves_the_counters_by_n() {
    let recorder = Recording::default();
    metrics::set_global_recorder(recorder.clone()).expect("the only recorder of this process");

    let db = mongo_schema_testkit::database("sync_metrics").await;
    let schema = helpdesk::schema();
    schema.apply(&db).await.unwrap();
    let agent = Agent {
        id: ObjectId::new(),
        display_name: "Ana".into(),
        team: "billing".into(),
    };
    let other = Agent {
        id: ObjectId::new(),
        display_name: "Bo".into(),
        team: "billing".into(),
    };
    Agent::collection(&db)
        .insert_many([&agent, &other])
        .await
        .unwrap();
    let customer = helpdesk::customer("Cy");
    let mut tickets: Vec<_> = (0..HOLDERS)
        .map(|i| helpdesk::ticket(&customer, Some(&agent), i))
        .collect();
    // holders of another agent: not rewritten by Ana's rename
    tickets.extend((0..5).map(|i| helpdesk::ticket(&customer, Some(&other), 100 + i)));
    helpdesk::Ticket::collection(&db)
        .insert_many(&tickets)
        .await
        .unwrap();

    let worker = common::ready_worker(&schema, &db, WORKER).await;
    let w = [("worker", WORKER)];
    let wc = [("worker", WORKER), ("copy", COPY)];
    assert_eq!(recorder.counter(names::TAKEOVERS, &w), 1);
    assert_eq!(recorder.gauge(names::ACTIVE), Some(1.0));
    let events = recorder.counter(names::EVENTS, &w);
    let applied = recorder.counter(names::EVENTS_APPLIED, &w);
    let rewritten = recorder.counter(names::HOLDERS_REWRITTEN, &wc);
    let timed = recorder.samples(names::FAN_OUT_SECONDS, &wc).len();
    let c = [("copy", COPY)];
    let chunks = recorder.samples(names::CHUNK_SECONDS, &c).len();

    // control: a change of a field no copy holds is seen, and applied nowhere
    Agent::collection(&db)
        .update_one(
            doc! { "_id": agent.id },
            doc! { "$set": { "team": "support" } },
        )
        .await
        .unwrap();
    common::eventually(Duration::from_secs(20), "the team change seen", || async {
        recorder.counter(names::EVENTS, &w) > events
    })
    .await;
    assert_eq!(recorder.counter(names::EVENTS, &w), events + 1);
    assert_eq!(recorder.counter(names::EVENTS_APPLIED, &w), applied);
    assert_eq!(recorder.counter(names::HOLDERS_REWRITTEN, &wc), rewritten);

    // the rename: one event, applied, N holders rewritten by one fan-out
    Agent::collection(&db)
        .update_one(
            doc! { "_id": agent.id },
            doc! { "$set": { "displayName": "Ana (lead)" } },
        )
        .await
        .unwrap();
    common::eventually(Duration::from_secs(20), "the rename applied", || async {
        recorder.counter(names::EVENTS_APPLIED, &w) > applied
    })
    .await;
    assert_eq!(recorder.counter(names::EVENTS, &w), events + 2);
    assert_eq!(recorder.counter(names::EVENTS_APPLIED, &w), applied + 1);
    assert_eq!(
        recorder.counter(names::HOLDERS_REWRITTEN, &wc),
        rewritten + HOLDERS as u64
    );
    assert_eq!(
        recorder.counter(names::HOLDERS_REWRITTEN, &wc),
        worker.stats().snapshot().copies_rewritten,
        "the metric and the worker's own counter agree"
    );
    assert_eq!(recorder.counter(names::FAILURES, &wc), 0);
    let samples = recorder.samples(names::FAN_OUT_SECONDS, &wc)[timed..].to_vec();
    assert_eq!(samples.len(), 1, "one fan-out timed: {samples:?}");
    assert!(samples[0] > 0.0 && samples[0] < 20.0, "{samples:?}");
    // the 37 holders fit one chunk: one chunk timed, no longer than its fan-out
    let chunked = recorder.samples(names::CHUNK_SECONDS, &c)[chunks..].to_vec();
    assert_eq!(chunked.len(), 1, "one chunk timed: {chunked:?}");
    assert!(
        chunked[0] > 0.0 && chunked[0] <= samples[0],
        "{chunked:?} {samples:?}"
    );
    let lag = recorder
        .gauge(names::LAG_SECONDS)
        .expect("lag measured from wallTime");
    assert!((0.0..20.0).contains(&lag), "lag {lag} s");
    let token_age = recorder
        .gauge(names::TOKEN_AGE_SECONDS)
        .expect("a token saved");
    assert!((0.0..20.0).contains(&token_age), "token age {token_age} s");
    // the copies really moved
    let stale = helpdesk::Ticket::collection(&db)
        .count_documents(
            doc! { "assignee._id": agent.id, "assignee.displayName": { "$ne": "Ana (lead)" } },
        )
        .await
        .unwrap();
    assert_eq!(stale, 0);
    eprintln!(
        "    {HOLDERS} holders: rewritten +{}, fan-out {:.1} ms, lag {:.3} s",
        recorder.counter(names::HOLDERS_REWRITTEN, &wc) - rewritten,
        samples[0] * 1000.0,
        lag
    );

    worker.shutdown().await.unwrap();
    assert_eq!(recorder.gauge(names::ACTIVE), Some(0.0));
    assert_eq!(recorder.counter(names::TAKEOVERS, &w), 1);
}
