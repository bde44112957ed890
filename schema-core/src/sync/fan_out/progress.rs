//! Where a fan-out of the sync worker got to, so that the next pass of the same change resumes
//! after the last chunk it committed instead of from its first holder.
//!
//! A fan-out over more than [`FAN_OUT_CHUNK`](super::FAN_OUT_CHUNK) holders commits chunk by chunk. When its pass is
//! cut short (the lease taken over, the watchdog reopening the stream, the process restarted),
//! the change is read again from the saved token and its fan-out walked again. Each full chunk
//! records, in its own fenced transaction, the change it applies (its event's resume token) and
//! its last holder's `_id`, in a document of the worker's tokens collection (`_id: { lease,
//! fan_out: <holder>.<path>, source: <source _id> }`); a pass of the same change walks on after
//! that holder. A pass of another change of the same source (a later value, or the same change
//! coalesced with a later one) starts from the first holder and overwrites the record; a pass
//! that finishes deletes it. A fan-out of one chunk records nothing.
//!
//! The holders before the recorded one were written with the same values by the committed
//! chunks, under the fence: what a new pass skips is what it would have rewritten to the same
//! values.

use std::sync::{Arc, Mutex};

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Collection};

use crate::Result;

/// The progress records of one lease (a worker name, or one of its partitions), as loaded when
/// its holder took over, and as its fan-outs recorded them since.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    tokens: Collection<BsonDocument>,
    lease: Bson,
    records: Arc<Mutex<Vec<Record>>>,
}

#[derive(Debug, Clone)]
struct Record {
    id: BsonDocument,
    event: Bson,
    after: Bson,
}

/// One fan-out's place in its lease's progress: the copy, the source, and the change applied.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    progress: Progress,
    id: BsonDocument,
    event: Bson,
}

impl Progress {
    /// The progress of lease `lease`, none recorded.
    pub(crate) fn new(tokens: Collection<BsonDocument>, lease: Bson) -> Progress {
        Progress {
            tokens,
            lease,
            records: Arc::default(),
        }
    }

    /// The progress records of lease `lease` on the server (read when its holder takes over).
    pub(crate) async fn load(tokens: Collection<BsonDocument>, lease: Bson) -> Result<Progress> {
        use futures_util::TryStreamExt;
        let progress = Progress::new(tokens, lease);
        let mut cursor = progress
            .tokens
            .find(doc! { "_id.lease": progress.lease.clone(), "_id.fan_out": { "$exists": true } })
            .await?;
        let mut records = Vec::new();
        while let Some(record) = cursor.try_next().await? {
            if let (Ok(id), Some(event), Some(after)) = (
                record.get_document("_id"),
                record.get("event"),
                record.get("after"),
            ) {
                records.push(Record {
                    id: id.clone(),
                    event: event.clone(),
                    after: after.clone(),
                });
            }
        }
        *progress.lock() = records;
        Ok(progress)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Record>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The place of the fan-out of copy `copy` (`holder.path`) of `source` that applies the
    /// change `event`.
    pub(crate) fn place(&self, copy: &str, source: &Bson, event: Bson) -> Place {
        Place {
            progress: self.clone(),
            id: doc! { "lease": self.lease.clone(), "fan_out": copy, "source": source.clone() },
            event,
        }
    }
}

impl Place {
    /// The holder `_id` after which this pass resumes: the last of the last chunk a pass of the
    /// same change committed; `None` to start from the first holder.
    pub(crate) fn resume_after(&self) -> Option<Bson> {
        self.progress
            .lock()
            .iter()
            .find(|r| r.id == self.id && r.event == self.event)
            .map(|r| r.after.clone())
    }

    /// Whether a record of this copy and source exists (of this change or an older one).
    fn recorded(&self) -> bool {
        self.progress.lock().iter().any(|r| r.id == self.id)
    }

    /// The write that records `after` as this pass's last committed holder, to run inside the
    /// chunk's transaction.
    pub(crate) fn write(&self, after: Bson) -> ProgressWrite {
        ProgressWrite {
            tokens: self.progress.tokens.clone(),
            id: self.id.clone(),
            event: self.event.clone(),
            after,
        }
    }

    /// Notes a record whose transaction committed.
    pub(crate) fn committed(&self, write: &ProgressWrite) {
        let mut records = self.progress.lock();
        records.retain(|r| r.id != self.id);
        records.push(Record {
            id: self.id.clone(),
            event: write.event.clone(),
            after: write.after.clone(),
        });
    }

    /// The pass finished: its record (or an older change's) is deleted, so that no later pass
    /// resumes from it. An error is returned (the batch is applied again, which finds every
    /// holder written and deletes the record then).
    pub(crate) async fn finished(&self) -> Result<()> {
        if !self.recorded() {
            return Ok(());
        }
        self.progress
            .tokens
            .delete_one(doc! { "_id": self.id.clone() })
            .await?;
        self.progress.lock().retain(|r| r.id != self.id);
        Ok(())
    }
}

/// A progress record to write inside a chunk's transaction.
#[derive(Debug, Clone)]
pub(crate) struct ProgressWrite {
    tokens: Collection<BsonDocument>,
    id: BsonDocument,
    event: Bson,
    after: Bson,
}

impl ProgressWrite {
    /// Writes the record in `session`'s transaction.
    pub(crate) async fn run(&self, session: &mut ClientSession) -> Result<()> {
        self.tokens
            .update_one(
                doc! { "_id": self.id.clone() },
                doc! { "$set": {
                    "event": self.event.clone(),
                    "after": self.after.clone(),
                    "at": mongodb::bson::DateTime::now(),
                } },
            )
            .upsert(true)
            .session(session)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use mongodb::bson::{doc, Bson, Document as BsonDocument};

    use crate::model::copy::{CopyShape, CopySpec, SyncEdge, SyncStrategy};
    use crate::sync::failures::FailureLog;
    use crate::sync::fan_out::{FanOut, Writer, FAN_OUT_CHUNK};
    use crate::sync::lease::Lease;
    use crate::CollectionSpec;

    const HOLDERS: i64 = 3500;

    fn author_of_posts() -> SyncEdge {
        let copy = CopySpec::new(
            "author",
            "authors",
            "Author",
            &["name"],
            SyncStrategy::Async,
            CopyShape::One,
        );
        let posts = CollectionSpec::new("posts", doc! {}).copy(copy);
        SyncEdge {
            holder: "posts".into(),
            copy: posts.copies[0].clone(),
            reference: None,
            identities: None,
        }
    }

    async fn named(posts: &mongodb::Collection<BsonDocument>, name: &str) -> u64 {
        posts
            .count_documents(doc! { "author.name": name })
            .await
            .unwrap()
    }

    /// Issue 48, item 0: a fan-out cut short by a takeover after its first chunk resumes, in
    /// the new holder's pass of the same change, after the last holder the first pass
    /// committed (a holder before it that drifted since is left alone: the proof that the
    /// walk did not start again from the first holder), and deletes its record when done; a
    /// pass of another change of the same source starts from the first holder.
    #[tokio::test(flavor = "multi_thread", worker_threads = 3)]
    async fn a_fan_out_cut_short_resumes_after_the_last_chunk_it_committed() {
        assert_eq!(FAN_OUT_CHUNK, 1000, "the test counts chunks of 1,000");
        let db = mongo_schema_testkit::database("fan_out_resume").await;
        let posts = db.collection::<BsonDocument>("posts");
        let tokens = db.collection::<BsonDocument>("tokens");
        let source = Bson::Int64(7);
        let holders: Vec<BsonDocument> = (0..HOLDERS)
            .map(|i| doc! { "_id": i, "author": { "_id": 7_i64, "name": "Old" } })
            .collect();
        posts.insert_many(holders).await.unwrap();
        let edge = author_of_posts();
        let log = FailureLog::new("w");
        let renamed = doc! { "_id": 7_i64, "name": "New" };
        let (first_change, second_change) = (
            Bson::Document(doc! { "_data": "first" }),
            Bson::Document(doc! { "_data": "second" }),
        );

        // the first holder's pass: its second chunk's update is held while a standby takes over
        let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
            .await
            .unwrap();
        let updates = Arc::new(AtomicUsize::new(0));
        let seen = updates.clone();
        let (client, held, release) = mongo_schema_testkit::holding_client(&uri, move |started| {
            started.command_name == "update"
                && started.command.get_str("update").ok() == Some("posts")
                && seen.fetch_add(1, Ordering::SeqCst) == 1
        })
        .await;
        let busy = client.database(db.name());
        let period = Duration::from_secs(1);
        let first = Lease::new(busy.collection("tokens"), "w", period, 1);
        assert!(first.try_acquire().await.unwrap());
        let pass = tokio::spawn({
            let (fence, edge, log, renamed, change, source) = (
                first.fence().unwrap(),
                edge.clone(),
                log.clone(),
                renamed.clone(),
                first_change.clone(),
                source.clone(),
            );
            async move {
                let writer = Writer::Fenced {
                    fence: &fence,
                    lane: 0,
                };
                FanOut::new(&edge, &renamed)
                    .unwrap()
                    .run_resilient(&busy, &edge, &source, &log, writer, Some(&change), None)
                    .await
            }
        });
        tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(60)))
            .await
            .unwrap()
            .expect("the second chunk was held");
        let record = doc! { "_id": { "lease": "w", "fan_out": edge.label(), "source": 7_i64 } };
        let recorded = tokens.find_one(record.clone()).await.unwrap();
        assert_eq!(
            recorded.as_ref().and_then(|r| r.get("after")),
            Some(&Bson::Int64(FAN_OUT_CHUNK as i64 - 1)),
            "the first chunk recorded its last holder: {recorded:?}"
        );
        tokens
            .update_one(
                doc! { "_id": "w" },
                doc! { "$set": { "expires": mongodb::bson::DateTime::from_millis(0) } },
            )
            .await
            .unwrap();
        let standby = Lease::new(tokens.clone(), "w", period, 1);
        assert!(
            standby.try_acquire().await.unwrap(),
            "the standby takes over"
        );
        release.send(()).unwrap();
        let cut = tokio::time::timeout(Duration::from_secs(60), pass)
            .await
            .expect("the first pass ends")
            .unwrap();
        if let Ok(outcome) = &cut {
            assert!(outcome.fenced_off, "{outcome:?}");
        }
        assert_eq!(
            named(&posts, "New").await,
            FAN_OUT_CHUNK as u64,
            "only the first chunk landed"
        );

        // a holder the first chunk wrote drifts; the new holder's pass of the same change
        // starts after the first chunk, so it stays
        posts
            .update_one(
                doc! { "_id": 5_i64 },
                doc! { "$set": { "author.name": "Drift" } },
            )
            .await
            .unwrap();
        let fence = standby.fence().unwrap();
        let writer = Writer::Fenced {
            fence: &fence,
            lane: 0,
        };
        let resumed = FanOut::new(&edge, &renamed)
            .unwrap()
            .run_resilient(&db, &edge, &source, &log, writer, Some(&first_change), None)
            .await
            .unwrap();
        assert_eq!(
            resumed.rewritten,
            (HOLDERS - FAN_OUT_CHUNK as i64) as u64,
            "{resumed:?}"
        );
        assert_eq!(
            named(&posts, "Drift").await,
            1,
            "resumed after the first chunk"
        );
        assert_eq!(named(&posts, "New").await, HOLDERS as u64 - 1);
        assert_eq!(
            tokens.count_documents(record.clone()).await.unwrap(),
            0,
            "a finished pass deletes its record"
        );

        // another change of the same source: from the first holder
        let again = FanOut::new(&edge, &renamed)
            .unwrap()
            .run_resilient(
                &db,
                &edge,
                &source,
                &log,
                writer,
                Some(&second_change),
                None,
            )
            .await
            .unwrap();
        assert_eq!(again.rewritten, 1, "{again:?}");
        assert_eq!(named(&posts, "New").await, HOLDERS as u64);
        assert_eq!(tokens.count_documents(record).await.unwrap(), 0);
        drop(first);
    }
}
