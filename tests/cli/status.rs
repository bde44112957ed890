//! `status` as an operator reads it: a killed worker's lease expiring and a standby taking
//! over, an expired lease shown until someone takes it, a worker that holds its lease without
//! progress, a watchdog stall.

use super::*;

/// The worker rows of `status --json`, by name.
fn worker<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no worker `{name}` in {status}"))
}

pub(super) async fn status_shows_a_killed_workers_lease_expire_and_a_standby_take_over() {
    let db = mongo_schema_testkit::database("cli_status").await;
    let schema = helpdesk::schema();
    schema.apply(&db).await.unwrap();

    // applied, and the `async` copy never followed: exit 2, the copy named
    let status = run(args("status", &db, &["--json"])).await;
    assert_eq!(status.code, 2, "{}{}", status.stdout, status.stderr);
    let json = status.json();
    assert_eq!(json["command"], "status");
    assert_eq!(json["version"]["recorded"]["completed"], true);
    assert_eq!(json["pending_actions"], 0);
    assert_eq!(json["workers"].as_array().unwrap().len(), 0);
    assert_eq!(json["failures"]["total"], 0);
    assert_eq!(json["never_followed"][0], "tickets.assignee", "{json}");
    let table = run(args("status", &db, &[])).await;
    // display-text: the operator's table says it in words
    assert!(table.stdout.contains("NEVER FOLLOWED"), "{}", table.stdout);

    let spawn = |lease_ms: u64| {
        schema
            .sync_worker(&db)
            .name("cli-status")
            .lease(Duration::from_millis(lease_ms))
            .max_await_time(Duration::from_millis(100))
            .spawn()
    };
    let first = spawn(1500);
    common::ready(&first).await;
    // a standby of the same name, waiting
    let standby = spawn(1500);
    common::ready(&standby).await;
    assert!(standby.stats().is_standby());

    let before = run(args("status", &db, &["--json"])).await.json();
    // the control: with a worker on the name, nothing is left unfollowed
    assert_eq!(before["exit"], 0, "{before}");
    assert_eq!(before["never_followed"].as_array().unwrap().len(), 0);
    let row = worker(&before, "cli-status");
    let first_owner = row["owner"].as_str().expect("an owner").to_owned();
    assert_eq!(row["expired"], false);
    let epoch = row["epoch"].as_i64().expect("an epoch");
    assert!(row["lease_expires_in_ms"].as_i64().unwrap() > 0, "{row}");
    // positive control: a live owner renews (a third of the lease: every 0.5 s)
    let renewed_from = row["lease_expires"].clone();
    common::eventually(Duration::from_secs(10), "the lease renewed", || {
        let (db, renewed_from) = (db.clone(), renewed_from.clone());
        async move {
            let now = run(args("status", &db, &["--json"])).await.json();
            worker(&now, "cli-status")["lease_expires"] != renewed_from
        }
    })
    .await;
    // a rename the worker applies: its lag is saved with its token
    assert!(row["lag_ms"].is_null(), "no change applied yet: {row}");
    let (agent, _) = helpdesk::assigned_ticket(&db, "Ana").await;
    helpdesk::rename_agent(&db, agent.id, "Ana (lead)").await;
    common::eventually(Duration::from_secs(20), "the lag saved", || {
        let db = db.clone();
        async move {
            let now = run(args("status", &db, &["--json"])).await.json();
            worker(&now, "cli-status")["lag_ms"]
                .as_i64()
                .is_some_and(|lag| (0..20_000).contains(&lag))
        }
    })
    .await;
    let table = run(args("status", &db, &[])).await;
    assert!(table.stdout.contains("cli-status"), "{}", table.stdout);
    assert!(table.stdout.contains("expires in"), "{}", table.stdout);

    first.kill();
    // the lease is no longer renewed: while the killed worker still owns it, its expiry stays
    // put, then the standby owns it under the next epoch
    let killed = run(args("status", &db, &["--json"])).await.json();
    let frozen = worker(&killed, "cli-status").clone();
    let seen_expired = std::sync::Arc::new(AtomicBool::new(false));
    let took_over = Instant::now();
    common::eventually(Duration::from_secs(15), "the standby took over", || {
        let db = db.clone();
        let (frozen, first_owner) = (frozen.clone(), first_owner.clone());
        let seen_expired = seen_expired.clone();
        async move {
            let now = run(args("status", &db, &["--json"])).await.json();
            let row = worker(&now, "cli-status").clone();
            if row["owner"] == first_owner.as_str() {
                if frozen["owner"] == first_owner.as_str() {
                    assert_eq!(
                        row["lease_expires"], frozen["lease_expires"],
                        "a killed worker renewed its lease"
                    );
                }
                if row["expired"] == true {
                    seen_expired.store(true, Ordering::Relaxed);
                }
                return false;
            }
            row["owner"].is_string()
        }
    })
    .await;
    let after = run(args("status", &db, &["--json"])).await;
    let json = after.json();
    let row = worker(&json, "cli-status");
    assert_ne!(row["owner"], first_owner.as_str());
    assert_eq!(row["epoch"].as_i64(), Some(epoch + 1), "{row}");
    assert_eq!(row["expired"], false);
    assert!(standby.stats().is_active());
    eprintln!(
        "    takeover seen by `status` {:?} after the kill (expired lease caught in between: {})",
        took_over.elapsed(),
        seen_expired.load(Ordering::Relaxed)
    );
    standby.shutdown().await.unwrap();
    // every worker of the name shut down: its async copies drift until one runs again (a new
    // user's service read exit 0 here while its copies went stale)
    let released = run(args("status", &db, &["--json"])).await;
    assert_eq!(released.code, 2, "{}{}", released.stdout, released.stderr);
    let released = released.json();
    assert!(worker(&released, "cli-status")["owner"].is_null());
    assert_eq!(
        released["not_followed_now"],
        serde_json::json!(["cli-status"]),
        "{released}"
    );
}

pub(super) async fn status_shows_an_expired_lease_until_someone_takes_it() {
    let db = mongo_schema_testkit::database("cli_expired").await;
    let schema = helpdesk::schema();
    schema.apply(&db).await.unwrap();
    let only = schema
        .sync_worker(&db)
        .name("lonely")
        .lease(Duration::from_millis(600))
        .max_await_time(Duration::from_millis(100))
        .spawn();
    common::ready(&only).await;
    let live = run(args("status", &db, &[])).await;
    assert_eq!(live.code, 0, "{}{}", live.stdout, live.stderr);
    assert!(!live.stdout.contains("EXPIRED"), "{}", live.stdout);
    only.kill();
    common::eventually(Duration::from_secs(10), "the lease shown expired", || {
        let db = db.clone();
        async move {
            let table = run(args("status", &db, &[])).await;
            table.code == 2 && table.stdout.contains("EXPIRED")
        }
    })
    .await;
    let json = run(args("status", &db, &["--json"])).await.json();
    assert_eq!(json["exit"], 2);
    let row = worker(&json, "lonely");
    assert_eq!(row["expired"], true);
    assert!(row["lease_expires_in_ms"].as_i64().unwrap() < 0);
}

/// A worker that holds its lease and has stopped progressing: the server holds the commit of
/// its first rewrite (a `failCommand` that blocks that one command of the worker's client, as a
/// lock, a slow disk or a lost primary would), while its lease renewals go on. `status` shows
/// its lease live and, once its last saved progress is older than [`STALLED_WORKER_AFTER`],
/// calls it stalled and exits 2. The bound is five minutes: the progress document is written as
/// the worker leaves it after a stall that long (its last save moved back by the bound and a
/// minute), which this worker, being stalled, cannot overwrite. The controls: before the stall
/// and once the commit goes through (the worker saves its progress), `status` exits 0.
///
/// [`STALLED_WORKER_AFTER`]: mongo_schema::cli::STALLED_WORKER_AFTER
pub(super) async fn status_exits_2_for_a_worker_that_holds_its_lease_without_progress() {
    const APP: &str = "cli-stalled-worker";
    const BLOCKED: Duration = Duration::from_secs(20);
    // a server of its own, with the test commands (`configureFailPoint`)
    let server = common::failpoint_server().await;
    let uri = server.uri().to_owned();
    let db = mongodb::Client::with_uri_str(&uri)
        .await
        .unwrap()
        .database("cli_stalled");
    let status = |more: &'static [&'static str]| status_args(&uri, &db, more);
    let schema = helpdesk::schema();
    schema.apply(&db).await.unwrap();
    let (agent, ticket) = helpdesk::assigned_ticket(&db, "Ana").await;
    // the worker's own client, named so that the server can tell its commands apart
    let mut options = mongodb::options::ClientOptions::parse(&uri).await.unwrap();
    options.app_name = Some(APP.to_owned());
    let client = mongodb::Client::with_options(options).unwrap();
    let stalled_worker = schema
        .sync_worker(&client.database(db.name()))
        .name("stalled")
        .lease(Duration::from_millis(1500))
        .max_await_time(Duration::from_millis(100))
        .token_save_interval(Duration::from_millis(200))
        .spawn();
    common::ready(&stalled_worker).await;
    let tokens = db.collection::<BsonDocument>(mongo_schema::TOKENS_COLLECTION);
    let saved_at = || {
        let tokens = tokens.clone();
        async move {
            let token = tokens
                .find_one(mongo_schema::bson::doc! { "_id": "stalled" })
                .await
                .unwrap()
                .expect("the worker's document");
            (
                *token.get_datetime("updated_at").unwrap(),
                *token.get_datetime("expires").unwrap(),
            )
        }
    };
    // the control: a live worker on a quiet stream is not stalled
    let live = run(status(&["--json"])).await;
    assert_eq!(live.code, 0, "{}{}", live.stdout, live.stderr);
    assert_eq!(worker(&live.json(), "stalled")["stalled"], false);

    // the server holds the commit of the worker's first rewrite
    let admin = db.client().database("admin");
    admin
        .run_command(mongo_schema::bson::doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": {
                "failCommands": ["commitTransaction"],
                "appName": APP,
                "blockConnection": true,
                "blockTimeMS": BLOCKED.as_millis() as i64,
            },
        })
        .await
        .unwrap();
    let blocked = Instant::now();
    helpdesk::rename_agent(&db, agent.id, "Ana (lead)").await;
    // stalled: its progress stops while its lease is renewed
    let (stopped_at, _) = saved_at().await;
    common::eventually(
        Duration::from_secs(10),
        "the worker stops saving progress and keeps its lease",
        || async {
            let (saved, expires) = saved_at().await;
            let now = mongo_schema::bson::DateTime::now().timestamp_millis();
            now - saved.timestamp_millis() > 1000 && expires.timestamp_millis() > now
        },
    )
    .await;
    let (saved, _) = saved_at().await;
    assert!(saved >= stopped_at);
    // the document as a worker stalled for the bound and a minute leaves it
    let bound = mongo_schema::cli::STALLED_WORKER_AFTER + Duration::from_secs(60);
    let long_ago = mongo_schema::bson::DateTime::from_millis(
        saved.timestamp_millis() - bound.as_millis() as i64,
    );
    tokens
        .update_one(
            mongo_schema::bson::doc! { "_id": "stalled", "updated_at": saved },
            mongo_schema::bson::doc! { "$set": { "updated_at": long_ago } },
        )
        .await
        .unwrap();
    let stalled = run(status(&["--json"])).await;
    let json = stalled.json();
    let row = worker(&json, "stalled");
    assert_eq!(stalled.code, 2, "{json}");
    assert_eq!(row["stalled"], true, "{row}");
    assert_eq!(row["expired"], false, "the lease is live: {row}");
    assert!(row["lease_expires_in_ms"].as_i64().unwrap() > 0, "{row}");
    assert_eq!(
        json["failures"]["total"], 0,
        "exit 2 for the stall alone: {json}"
    );
    assert_eq!(json["pending_actions"], 0, "{json}");
    let table = run(status(&[])).await;
    assert_eq!(table.code, 2, "{}{}", table.stdout, table.stderr);
    assert!(
        table
            .stdout
            .contains("STALLED: held, no progress saved for"),
        "{}",
        table.stdout
    );
    assert!(
        blocked.elapsed() < BLOCKED,
        "the checks ran while the commit was held ({:?})",
        blocked.elapsed()
    );

    // the commit goes through: the worker applies the rename and saves its progress
    common::eventually(
        BLOCKED + Duration::from_secs(20),
        "the worker progresses again",
        || async {
            let (saved, _) = saved_at().await;
            saved > long_ago
                && helpdesk::Ticket::collection(&db)
                    .find_one(mongo_schema::bson::doc! { "_id": ticket.id })
                    .await
                    .unwrap()
                    .and_then(|t| t.assignee)
                    .is_some_and(|a| a.display_name == "Ana (lead)")
        },
    )
    .await;
    let after = run(status(&["--json"])).await;
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
    assert_eq!(worker(&after.json(), "stalled")["stalled"], false);
    common::shut_down(stalled_worker).await;
    drop(server);
}

/// `status` exits 2 for five minutes after a worker's watchdog found it stalled (it recovered
/// by reopening its stream, but an operator must hear of it), and names the reason; the
/// control: exit 0 before the stall.
pub(super) async fn status_exits_2_after_a_watchdog_stall() {
    let db = mongo_schema_testkit::database("cli_watchdog").await;
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let status = |more: &'static [&'static str]| status_args(&uri, &db, more);
    let schema = helpdesk::schema();
    schema.apply(&db).await.unwrap();
    let (agent, _) = helpdesk::assigned_ticket(&db, "Ana").await;
    let watched = schema
        .sync_worker(&db)
        .name("watched")
        .max_await_time(Duration::from_millis(100))
        .stall_timeout(Duration::from_secs(1))
        .__stall_next_batch()
        .spawn();
    common::ready(&watched).await;
    let before = run(status(&["--json"])).await;
    assert_eq!(before.code, 0, "{}{}", before.stdout, before.stderr);
    assert_eq!(worker(&before.json(), "watched")["stalls"], 0);
    helpdesk::rename_agent(&db, agent.id, "Ana (lead)").await;
    common::within(Duration::from_secs(30), "caught up", watched.caught_up())
        .await
        .unwrap();
    assert_eq!(watched.stats().snapshot().stalls, 1);
    let after = run(status(&["--json"])).await;
    let json = after.json();
    let row = worker(&json, "watched");
    assert_eq!(after.code, 2, "{json}");
    assert_eq!(row["stalls"], 1, "{row}");
    assert_eq!(row["stalled_recently"], true, "{row}");
    assert!(
        row["stall"]
            .as_str()
            .is_some_and(|r| r.contains("no write committed")),
        "{row}"
    );
    let table = run(status(&[])).await;
    assert_eq!(table.code, 2, "{}{}", table.stdout, table.stderr);
    assert!(
        table
            .stdout
            .contains("STALLED: worker `watched`'s watchdog found it stalled"),
        "{}",
        table.stdout
    );
    common::shut_down(watched).await;
}
