use super::*;
use crate::deploy::observe::Topology;
use crate::deploy::observe::{Observed, ObservedCollection};
use crate::deploy::sharding::ShardState;
use crate::CollectionSpec;
use crate::IndexSpec;
use mongodb::bson::Document;
use mongodb::bson::{doc, Document as BsonDocument};

fn messages() -> CollectionSpec {
    CollectionSpec::new("messages", doc! {})
        .index(IndexSpec::new(doc! { "ticket_id": 1, "at": 1 }))
        .shard_key(doc! { "ticket_id": 1, "at": 1 })
}

fn plan(topology: Topology, server: Option<ObservedCollection>, shard: bool) -> Plan {
    let mut plain = ObservedCollection::new("plain");
    plain.validator = Some(doc! {});
    let observed = Observed {
        collections: match server {
            Some(server) => vec![server, plain],
            None => Vec::new(),
        },
        topology: Some(topology),
    };
    let options = PlanOptions {
        shard_collections: shard,
        ..PlanOptions::default()
    };
    Plan::compute_with(
        &[messages(), CollectionSpec::new("plain", doc! {})],
        &observed,
        options,
    )
}

fn existing(shard_key: Option<BsonDocument>) -> ObservedCollection {
    let mut c = ObservedCollection::new("messages");
    c.validator = Some(doc! {});
    c.indexes
        .push(doc! { "key": { "ticket_id": 1, "at": 1 }, "name": "ticket_id_1_at_1" });
    c.shard_key = shard_key;
    c
}

#[test]
fn hello_tells_a_mongos_from_a_replica_set() {
    assert_eq!(
        Topology::from_hello(&doc! { "ismaster": true, "msg": "isdbgrid" }),
        Topology::Mongos
    );
    assert_eq!(
        Topology::from_hello(&doc! { "isWritablePrimary": true, "setName": "rs0" }),
        Topology::ReplicaSet
    );
    assert_eq!(
        Topology::from_hello(&doc! { "isWritablePrimary": true }),
        Topology::Standalone
    );
}

#[test]
fn on_a_mongos_a_new_collection_is_sharded_after_its_index() {
    let plan = plan(Topology::Mongos, None, true);
    let kinds: Vec<String> = plan
        .actions
        .iter()
        .map(|a| format!("{} {}", kind(a), a.collection()))
        .collect();
    assert_eq!(
        kinds,
        [
            "create messages",
            "createIndexes messages",
            "shardCollection messages",
            "create plain"
        ]
    );
    assert_eq!(plan.sharding.len(), 1, "only collections with a key");
    assert_eq!(plan.sharding[0].state, ShardState::ToShard);
}

fn kind(action: &Action) -> &'static str {
    match action {
        Action::CreateCollection { .. } => "create",
        Action::CreateIndexes { .. } => "createIndexes",
        Action::ShardCollection { .. } => "shardCollection",
        Action::UpdateValidator { .. } => "collMod",
        Action::DropIndex { .. } => "dropIndexes",
        Action::EnablePreImages { .. } => "collMod",
        Action::ModifyTimeSeries { .. } => "collMod",
    }
}

fn readings() -> CollectionSpec {
    crate::deploy::test_spec("readings").timeseries(
        crate::TimeSeries::new("at")
            .meta("sensor")
            .granularity(crate::Granularity::Minutes)
            .expire_after_secs(600),
    )
}

fn timeseries_on_server(options: Document) -> ObservedCollection {
    ObservedCollection::from_list_collections(&doc! {
        "name": "readings", "type": "timeseries", "options": options,
    })
}

#[test]
fn a_time_series_is_created_without_a_validator_and_refused_over_a_plain_collection() {
    let spec = readings();
    let plan = Plan::for_collection(&spec, None);
    let Action::CreateCollection { timeseries, .. } = &plan.actions[0] else {
        panic!("{plan}")
    };
    assert_eq!(timeseries.as_ref(), spec.timeseries.as_ref());
    // display-text: the plan line tells the operator no validator is sent
    assert!(plan.actions[0].to_string().contains("no validator"));
    // mongod's `{ meta: 1, time: 1 }` is declared with the collection's indexes
    assert!(spec
        .indexes
        .iter()
        .any(|i| i.keys == doc! { "sensor": 1, "at": 1 }
            && i.reasons.contains(&crate::IndexReason::TimeSeries)));
    // a plain collection of the name: nothing planned, the refusal reported
    let plain = ObservedCollection::new("readings");
    let plan = Plan::for_collection(&spec, Some(&plain));
    assert!(plan.actions.is_empty(), "{plan}");
    assert!(matches!(
        &plan.warnings[..],
        [Warning::NotTimeSeries { .. }]
    ));
    assert!(plan.warnings[0].not_as_declared().is_some());
    // the other way round: a time series where a plain collection is declared
    let server = timeseries_on_server(doc! { "timeseries": { "timeField": "at" } });
    let plan = Plan::for_collection(&crate::deploy::test_spec("readings"), Some(&server));
    assert!(matches!(
        &plan.warnings[..],
        [Warning::NotACollection { kind, .. }] if kind == "timeseries"
    ));
}

#[test]
fn time_series_options_are_changed_as_mongod_changes_them() {
    let spec = readings();
    let same = timeseries_on_server(doc! {
        "timeseries": { "timeField": "at", "metaField": "sensor", "granularity": "minutes" },
        "expireAfterSeconds": 600_i64,
    });
    let mut indexed = same.clone();
    indexed.indexes = spec.indexes.iter().map(IndexSpec::to_document).collect();
    let plan = Plan::for_collection(&spec, Some(&indexed));
    assert!(
        plan.actions.is_empty() && plan.warnings.is_empty(),
        "{plan}"
    );
    // upward and the expiry: one collMod
    let lower = timeseries_on_server(doc! {
        "timeseries": { "timeField": "at", "metaField": "sensor" },
    });
    let plan = Plan::for_collection(&spec, Some(&lower));
    let modify = plan
        .actions
        .iter()
        .find(|a| kind(a) == "collMod")
        .unwrap_or_else(|| panic!("{plan}"));
    assert_eq!(
        modify,
        &Action::ModifyTimeSeries {
            collection: "readings".into(),
            granularity: Some(crate::Granularity::Minutes),
            expire_after_secs: Some(Some(600)),
            changes: vec![
                "granularity seconds -> minutes".into(),
                "expireAfterSeconds off -> 600 s".into()
            ],
        }
    );
    // downward and another meta field: reported, not changed
    let higher = timeseries_on_server(doc! {
        "timeseries": { "timeField": "at", "metaField": "host", "granularity": "hours" },
        "expireAfterSeconds": 600_i64,
    });
    let plan = Plan::for_collection(&spec, Some(&higher));
    assert!(!plan.actions.iter().any(|a| kind(a) == "collMod"), "{plan}");
    let Some(Warning::TimeSeriesDiffers { differences, .. }) = plan
        .warnings
        .iter()
        .find(|w| matches!(w, Warning::TimeSeriesDiffers { .. }))
    else {
        panic!("{plan}")
    };
    assert_eq!(differences.len(), 2, "{differences:?}");
    // an expiry removed: `off`
    let spec = crate::deploy::test_spec("readings")
        .timeseries(crate::TimeSeries::new("at").meta("sensor"));
    let expiring = timeseries_on_server(doc! {
        "timeseries": { "timeField": "at", "metaField": "sensor" },
        "expireAfterSeconds": 60_i64,
    });
    let plan = Plan::for_collection(&spec, Some(&expiring));
    assert!(plan.actions.iter().any(|a| matches!(
        a,
        Action::ModifyTimeSeries {
            expire_after_secs: Some(None),
            ..
        }
    )));
}

#[test]
fn on_a_mongos_only_when_asked_and_not_twice() {
    let plan_unasked = plan(Topology::Mongos, Some(existing(None)), false);
    assert!(plan_unasked.is_empty());
    assert_eq!(plan_unasked.sharding[0].state, ShardState::NotRequested);
    // display-text: the plan's advice, read by a person
    assert!(plan_unasked.to_string().contains("shard_collections(true)"));

    let asked = plan(Topology::Mongos, Some(existing(None)), true);
    assert!(
        matches!(&asked.actions[..], [Action::ShardCollection { key, .. }] if key == &doc! { "ticket_id": 1, "at": 1 })
    );

    let done = plan(
        Topology::Mongos,
        Some(existing(Some(doc! { "ticket_id": 1_i64, "at": 1_i64 }))),
        true,
    );
    assert!(done.is_empty(), "{done}");
    assert_eq!(done.sharding[0].state, ShardState::Sharded);
}

#[test]
fn another_key_is_reported_and_left_alone() {
    let plan = plan(
        Topology::Mongos,
        Some(existing(Some(doc! { "_id": "hashed" }))),
        true,
    );
    assert!(plan.is_empty());
    assert!(matches!(plan.sharding[0].state, ShardState::OtherKey(_)));
    assert!(matches!(
        &plan.warnings[..],
        [Warning::ShardKeyDiffers { .. }]
    ));
}

#[test]
fn without_a_supporting_index_nothing_is_sharded() {
    let mut server = existing(None);
    server.indexes.truncate(1);
    // the schema's index conflicts with one of the server's (same name, other keys)
    server
        .indexes
        .push(doc! { "key": { "at": 1 }, "name": "ticket_id_1_at_1" });
    let plan = plan(Topology::Mongos, Some(server), true);
    assert!(plan.is_empty(), "{plan}");
    assert_eq!(plan.sharding[0].state, ShardState::NoSupportingIndex);
}

#[test]
fn on_a_replica_set_there_is_nothing_to_shard() {
    for shard in [false, true] {
        let plan = plan(Topology::ReplicaSet, Some(existing(None)), shard);
        assert!(plan.is_empty());
        assert_eq!(
            plan.sharding[0].state,
            ShardState::NotAShardedCluster(Topology::ReplicaSet)
        );
        // display-text: the plan's advice, read by a person
        assert!(plan.to_string().contains(
            "`messages` declares the shard key { \"ticket_id\": 1, \"at\": 1 }; the database is on a replica set: nothing to shard"
        ), "{plan}");
    }
}

#[test]
fn unobserved_topology_plans_no_sharding() {
    let observed = Observed::default();
    let plan = Plan::compute_with(
        &[messages()],
        &observed,
        PlanOptions {
            shard_collections: true,
            ..PlanOptions::default()
        },
    );
    assert!(plan.sharding.is_empty());
    assert!(!plan
        .actions
        .iter()
        .any(|a| matches!(a, Action::ShardCollection { .. })));
}

#[tokio::test]
async fn a_plan_says_what_apply_would_leave_off_the_server_in_the_callers_terms() {
    let plan = Plan {
        missing: vec![
            "the validator of `gadgets`".to_owned(),
            "index `sku_1` of `gadgets`".to_owned(),
        ],
        ..Plan::default()
    };
    let text = plan.to_string();
    assert!(
        text.contains("NOT AS DECLARED after apply: the validator of `gadgets`; index `sku_1` of `gadgets` would not be on the server"),
        "{text}"
    );
    assert!(
        text.contains("`ApplyReport::is_as_declared()` is false"),
        "{text}"
    );
    let from_the_cli = crate::terms::in_cli_terms(async { plan.to_string() }).await;
    assert!(from_the_cli.contains("(`apply` exits 3)"), "{from_the_cli}");
    assert!(!from_the_cli.contains("is_as_declared"), "{from_the_cli}");
    // the control: nothing missing, no such line
    // display-text: the plan an operator reads
    assert!(!Plan::default().to_string().contains("NOT AS DECLARED"));
}
