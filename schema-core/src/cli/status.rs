//! `status`: what the database records about the schema and its sync workers, read without
//! writing anything.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongodb::Database;
use serde_json::json;

use super::{table, Exit, Output, STALLED_WORKER_AFTER};
use crate::concern::OPERATOR_TIME_LIMIT;
use crate::deploy::observe::read_record;
use crate::migrate::MigrationState;
use crate::{Result, Schema, Warning, FAILURES_COLLECTION, META_COLLECTION, TOKENS_COLLECTION};

/// One sync worker name, or one partition of a name, as its token document holds it.
struct WorkerRow {
    name: String,
    /// The partition (its number, and how many the name is split into); `None`: a name that
    /// is not split.
    partition: Option<(i64, i64)>,
    owner: Option<String>,
    expires: Option<DateTime>,
    epoch: Option<i64>,
    token_time: Option<mongodb::bson::Timestamp>,
    lag_ms: Option<i64>,
    saved_at: Option<DateTime>,
    failures: u64,
    /// The watchdog's stalls recorded on the token document: how many, the last one's time
    /// and reason.
    stalls: Option<i64>,
    stalled_at: Option<DateTime>,
    stall: Option<String>,
}

/// Whether a worker whose lease is held has saved no progress (its token) for longer than
/// [`STALLED_WORKER_AFTER`]: a worker saves its token after every batch and, on a quiet stream,
/// at least every `token_save_interval` (60 s by default).
fn stalled(worker: &WorkerRow, now_ms: i64) -> bool {
    let bound = STALLED_WORKER_AFTER.as_millis() as i64;
    worker
        .saved_at
        .is_some_and(|at| now_ms - at.timestamp_millis() > bound)
}

/// Whether the worker's watchdog recorded a stall within the last [`STALLED_WORKER_AFTER`] (it
/// recovered by reopening its stream, but an operator must hear of it).
fn stalled_recently(worker: &WorkerRow, now_ms: i64) -> bool {
    let bound = STALLED_WORKER_AFTER.as_millis() as i64;
    worker
        .stalled_at
        .is_some_and(|at| now_ms - at.timestamp_millis() <= bound)
}

impl WorkerRow {
    /// The name in the table: `posts`, or `posts 2/4` for a partition of a split name.
    fn label(&self) -> String {
        match self.partition {
            Some((index, of)) => format!("{} {index}/{of}", self.name),
            None => self.name.clone(),
        }
    }
}

fn rfc3339(at: DateTime) -> String {
    at.try_to_rfc3339_string().unwrap_or_default()
}

fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The server's clock (`hello.localTime`), so lease expiries compare with the clock that set
/// them; this machine's when the server does not say.
async fn server_now(db: &Database) -> Result<DateTime> {
    let hello = db.run_command(doc! { "hello": 1 }).await?;
    Ok(hello
        .get_datetime("localTime")
        .copied()
        .unwrap_or_else(|_| DateTime::now()))
}

/// The oplog's window: from its oldest entry to `now`, in milliseconds (a resume token older
/// than that can no longer be resumed); `None` where the server has no readable oplog (a
/// standalone, or no rights on `local`).
async fn oplog_window_ms(db: &Database, now: DateTime) -> Option<i64> {
    let oldest = db
        .client()
        .database("local")
        .collection::<BsonDocument>("oplog.rs")
        .find_one(doc! {})
        .sort(doc! { "$natural": 1 })
        .max_time(OPERATOR_TIME_LIMIT)
        .await
        .ok()??;
    let oldest = oldest.get_timestamp("ts").ok()?;
    Some(now.timestamp_millis() - i64::from(oldest.time) * 1000)
}

fn as_i64(value: Option<&Bson>) -> Option<i64> {
    match value? {
        Bson::Int64(n) => Some(*n),
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Double(n) => Some(*n as i64),
        _ => None,
    }
}

pub(crate) async fn status(schema: &Schema, db: &Database) -> Result<Output> {
    let plan = schema.plan(db).await?;
    let meta = db.collection::<BsonDocument>(META_COLLECTION);
    let recorded = read_record(&meta, schema.name()).await?;
    let now = server_now(db).await?;
    let drift: Vec<String> = plan
        .warnings
        .iter()
        .filter(|w| {
            matches!(
                w,
                Warning::Drifted { .. } | Warning::SameVersionChanged { .. }
            )
        })
        .map(ToString::to_string)
        .collect();

    // migrations: declared, the pending ones as plan found them, and what the changelog
    // records of this schema's steps (of every version: after a downgrade the record holds
    // the newer version's steps, which this binary does not declare)
    let declared = schema.migrations().len();
    let changelog = crate::migrate::changelog::read_all(db, schema.name()).await?;
    let recorded_as = |state| changelog.iter().filter(|r| r.state == state).count();
    let done = recorded_as(MigrationState::Done);
    let failed = recorded_as(MigrationState::Failed);

    // failure records, by copy and by worker
    let records = db.collection::<BsonDocument>(FAILURES_COLLECTION);
    let mut by_copy: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_worker: BTreeMap<String, u64> = BTreeMap::new();
    let mut cursor = records
        .find(doc! {})
        .projection(doc! { "copy": 1, "worker": 1 })
        .max_time(OPERATOR_TIME_LIMIT)
        .await?;
    let mut total_failures = 0_u64;
    while let Some(record) = cursor.try_next().await? {
        total_failures += 1;
        *by_copy
            .entry(record.get_str("copy").unwrap_or("?").to_owned())
            .or_default() += 1;
        *by_worker
            .entry(record.get_str("worker").unwrap_or("?").to_owned())
            .or_default() += 1;
    }

    // workers: one token document per name (`_id` a string), or per partition of a split name
    // (`_id: { worker, partition, of }`); the fence lanes (`{ lease, lane }`) and the members'
    // heartbeats (`{ worker, member }`) are read apart
    let tokens = db.collection::<BsonDocument>(TOKENS_COLLECTION);
    let mut workers = Vec::new();
    let mut members: BTreeMap<String, Vec<(String, DateTime, i64)>> = BTreeMap::new();
    let mut cursor = tokens
        .find(doc! { "$or": [
            { "_id": { "$type": "string" } },
            { "_id.worker": { "$type": "string" } },
        ] })
        .max_time(OPERATOR_TIME_LIMIT)
        .await?;
    while let Some(token) = cursor.try_next().await? {
        let (name, partition) = match token.get("_id") {
            Some(Bson::String(name)) => (name.clone(), None),
            Some(Bson::Document(id)) => {
                let name = id.get_str("worker").unwrap_or_default().to_owned();
                if let Ok(member) = id.get_str("member") {
                    if let Ok(expires) = token.get_datetime("expires") {
                        members.entry(name).or_default().push((
                            member.to_owned(),
                            *expires,
                            as_i64(token.get("partitions")).unwrap_or(0),
                        ));
                    }
                    continue;
                }
                match (as_i64(id.get("partition")), as_i64(id.get("of"))) {
                    (Some(index), Some(of)) => (name, Some((index, of))),
                    _ => continue,
                }
            }
            _ => continue,
        };
        workers.push(WorkerRow {
            partition,
            failures: by_worker.get(&name).copied().unwrap_or(0),
            owner: token.get_str("owner").ok().map(str::to_owned),
            expires: token.get_datetime("expires").ok().copied(),
            epoch: as_i64(token.get("epoch")),
            token_time: token.get_timestamp("token_time").ok(),
            lag_ms: as_i64(token.get("lag_ms")),
            saved_at: token.get_datetime("updated_at").ok().copied(),
            stalls: as_i64(token.get("stalls")),
            stalled_at: token.get_datetime("stalled_at").ok().copied(),
            stall: token.get_str("stall").ok().map(str::to_owned),
            name,
        });
    }
    workers.sort_by(|a, b| (&a.name, a.partition).cmp(&(&b.name, b.partition)));
    let window = oplog_window_ms(db, now).await;
    let now_ms = now.timestamp_millis();

    let status_text = plan
        .version
        .as_ref()
        .map_or("unknown".to_owned(), ToString::to_string);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "schema `{}`: declared version {}, fingerprint {}",
        schema.name(),
        schema.version().unwrap_or(0),
        schema.fingerprint()
    );
    let _ = writeln!(
        text,
        "recorded: {}",
        recorded
            .as_ref()
            .map_or("nothing (never applied)".to_owned(), ToString::to_string)
    );
    let _ = writeln!(text, "status: {status_text}");
    let _ = writeln!(
        text,
        "pending: {} action(s); {}",
        plan.actions.len(),
        // each warning names itself ("DRIFT: ...")
        if drift.is_empty() {
            "drift: none".to_owned()
        } else {
            drift.join("; ")
        }
    );
    let _ = writeln!(
        text,
        "migrations: {declared} declared, {done} done, {failed} failed, {} pending",
        plan.migrations.len()
    );
    for step in &plan.migrations {
        let _ = writeln!(text, "  pending: {step}");
    }
    // what only a sync worker keeps current: with none ever run, it has never been followed
    let followed: Vec<String> = schema
        .sync_graph()
        .edges
        .iter()
        .filter(|e| e.copy.strategy == crate::SyncStrategy::Async)
        .map(crate::model::copy::SyncEdge::label)
        .chain(
            schema
                .sync_graph()
                .subsets
                .iter()
                .filter(|s| s.subset.strategy == crate::SyncStrategy::Async)
                .map(|s| format!("{}.{}", s.parent, s.subset.path)),
        )
        .collect();
    let never_followed = workers.is_empty() && !followed.is_empty();
    let mut expired_leases = 0;
    let mut stalled_workers = 0;
    // names whose every token document (every partition) was released: a worker of the name
    // shut down and none runs now, so the async copies it keeps drift (an expired lease, a
    // worker that died, is counted apart)
    let mut unfollowed: Vec<&str> = Vec::new();
    if !followed.is_empty() {
        for w in &workers {
            let name = w.name.as_str();
            if !unfollowed.contains(&name)
                && workers
                    .iter()
                    .filter(|other| other.name == name)
                    .all(|other| other.owner.is_none())
            {
                unfollowed.push(name);
            }
        }
    }
    if never_followed {
        let _ = writeln!(
            text,
            "sync workers: none has run against this database, and the sync worker alone keeps {} (`async`) current: NEVER FOLLOWED, start one (`schema.sync_worker(..)`)",
            followed.join(", ")
        );
    } else if workers.is_empty() {
        text.push_str("sync workers: none has run against this database\n");
    } else {
        let mut rows = vec![[
            "worker",
            "owner",
            "lease",
            "epoch",
            "lag",
            "token age",
            "token saved",
            "failures",
        ]
        .map(str::to_owned)
        .to_vec()];
        for w in &workers {
            let lease = match (w.owner.as_ref(), w.expires) {
                (Some(_), Some(expires))
                    if expires.timestamp_millis() >= now_ms && stalled(w, now_ms) =>
                {
                    stalled_workers += 1;
                    format!(
                        "STALLED: held, no progress saved for {}",
                        w.saved_at.map_or("ever".to_owned(), |at| seconds(
                            now_ms - at.timestamp_millis()
                        ))
                    )
                }
                (Some(_), Some(expires)) if expires.timestamp_millis() >= now_ms => format!(
                    "expires in {}",
                    seconds(expires.timestamp_millis() - now_ms)
                ),
                (Some(_), Some(expires)) => {
                    expired_leases += 1;
                    format!(
                        "EXPIRED {} ago",
                        seconds(now_ms - expires.timestamp_millis())
                    )
                }
                _ => "released".to_owned(),
            };
            let age = w.token_time.map_or("-".to_owned(), |t| {
                let age = now_ms - i64::from(t.time) * 1000;
                match window {
                    Some(window) => format!(
                        "{} ({:.0}% of the oplog window)",
                        seconds(age),
                        age as f64 / window.max(1) as f64 * 100.0
                    ),
                    None => seconds(age),
                }
            });
            rows.push(vec![
                w.label(),
                w.owner.clone().unwrap_or_else(|| "-".to_owned()),
                lease,
                w.epoch.map_or("-".to_owned(), |e| e.to_string()),
                w.lag_ms.map_or("-".to_owned(), seconds),
                age,
                w.saved_at.map_or("-".to_owned(), rfc3339),
                w.failures.to_string(),
            ]);
        }
        text.push_str(&table(&rows));
        for (name, seen) in &members {
            let live: Vec<&(String, DateTime, i64)> = seen
                .iter()
                .filter(|(_, expires, _)| expires.timestamp_millis() >= now_ms)
                .collect();
            let held = |member: &str| {
                workers
                    .iter()
                    .filter(|w| {
                        w.name == *name
                            && w.partition.is_some()
                            && w.owner.as_deref() == Some(member)
                            && w.expires.is_some_and(|e| e.timestamp_millis() >= now_ms)
                    })
                    .count()
            };
            let _ = writeln!(
                text,
                "members of `{name}`: {} live{}",
                live.len(),
                live.iter()
                    .map(|(member, _, _)| format!(", {member} holding {}", held(member)))
                    .collect::<String>()
            );
        }
        for name in &unfollowed {
            let _ = writeln!(
                text,
                "NOT FOLLOWED NOW: every worker of `{name}` released its lease (shut down), and the sync worker alone keeps {} (`async`) current: changes since its token wait until one of that name runs again",
                followed.join(", ")
            );
        }
        for w in workers.iter().filter(|w| stalled_recently(w, now_ms)) {
            stalled_workers += 1;
            let _ = writeln!(
                text,
                "STALLED: worker `{}`'s watchdog found it stalled {} ago ({} time(s) in all): {}; it reopened its stream from the saved token",
                w.label(),
                w.stalled_at.map_or("-".to_owned(), |at| seconds(now_ms - at.timestamp_millis())),
                w.stalls.unwrap_or(1),
                w.stall.as_deref().unwrap_or("no reason recorded"),
            );
        }
    }
    let _ = writeln!(
        text,
        "oplog window: {}",
        window.map_or("unknown (no readable oplog)".to_owned(), seconds)
    );
    let _ = writeln!(text, "sync failure records: {total_failures}");
    for (copy, n) in &by_copy {
        let _ = writeln!(text, "  {copy}: {n}");
    }

    // this binary is older than the recorded version: its apply refuses (a rollback needs
    // `--allow-downgrade`), which an operator must see in the exit code too
    let older = plan
        .version
        .as_ref()
        .is_some_and(crate::VersionStatus::is_downgrade);
    // a record of an apply that failed for good, or that left part of the schema off the
    // server (`partial`)
    let record_trouble = recorded
        .as_ref()
        .is_some_and(|r| r.failure.is_some() || !r.missing.is_empty());
    let trouble = older
        || record_trouble
        || never_followed
        || failed > 0
        || !plan.actions.is_empty()
        || !plan.migrations.is_empty()
        || !drift.is_empty()
        || expired_leases > 0
        || !unfollowed.is_empty()
        || stalled_workers > 0
        || total_failures > 0;
    Ok(Output {
        text,
        code: if trouble { Exit::Attention } else { Exit::Done },
        json: json!({
            "schema": schema.name(),
            "version": {
                "declared": schema.version().unwrap_or(0),
                "fingerprint": schema.fingerprint(),
                "recorded": recorded.as_ref().map(|r| json!({
                    "version": r.version,
                    "fingerprint": r.fingerprint,
                    "completed": r.completed,
                    "applied_at": r.applied_at.map(rfc3339),
                    "failure": r.failure,
                    "missing": r.missing,
                })),
                "status": status_text,
            },
            "pending_actions": plan.actions.len(),
            "never_followed": if never_followed { followed.clone() } else { Vec::new() },
            "not_followed_now": unfollowed,
            "drift": drift,
            "migrations": {
                "declared": declared,
                "done": done,
                "failed": failed,
                "pending": plan.migrations.iter().map(|m| json!({
                    "version": m.version,
                    "name": m.name,
                    "recorded": m.recorded.map(|s| s.to_string()),
                })).collect::<Vec<_>>(),
            },
            "workers": workers.iter().map(|w| {
                let expires_in = w.expires.map(|e| e.timestamp_millis() - now_ms);
                json!({
                    "name": w.name,
                    "partition": w.partition.map(|(index, _)| index),
                    "partitions": w.partition.map(|(_, of)| of),
                    "holder": w.owner.as_ref().filter(|_| expires_in.is_some_and(|ms| ms >= 0)),
                    "owner": w.owner,
                    "lease_expires": w.expires.map(rfc3339),
                    "lease_expires_in_ms": expires_in,
                    "expired": w.owner.is_some() && expires_in.is_some_and(|ms| ms < 0),
                    "stalled": w.owner.is_some() && expires_in.is_some_and(|ms| ms >= 0) && stalled(w, now_ms),
                    "epoch": w.epoch,
                    "lag_ms": w.lag_ms,
                    "token_time": w.token_time.map(|t| rfc3339(DateTime::from_millis(i64::from(t.time) * 1000))),
                    "token_age_ms": w.token_time.map(|t| now_ms - i64::from(t.time) * 1000),
                    "token_saved_at": w.saved_at.map(rfc3339),
                    "oplog_window_ms": window,
                    "failures": w.failures,
                    "stalls": w.stalls.unwrap_or(0),
                    "stalled_at": w.stalled_at.map(rfc3339),
                    "stall": w.stall,
                    "stalled_recently": stalled_recently(w, now_ms),
                })
            }).collect::<Vec<_>>(),
            "members": members.iter().map(|(name, seen)| json!({
                "name": name,
                "members": seen.iter().map(|(member, expires, partitions)| json!({
                    "member": member,
                    "partitions": partitions,
                    "heartbeat_expires": rfc3339(*expires),
                    "live": expires.timestamp_millis() >= now_ms,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "failures": { "total": total_failures, "by_copy": by_copy },
        }),
    })
}
