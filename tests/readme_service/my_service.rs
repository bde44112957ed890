use mongo_schema::deploy::OnNewer;
use mongo_schema::mongodb::Database;
use mongo_schema::prelude::*;
use mongo_schema::sync::SyncWorkerHandle;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "authors")]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug)]
#[collection(name = "posts")]
#[index(keys(published_at = -1))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub title: String,
    pub published_at: DateTime,
    /// A copy of the author's name, rewritten by the sync worker when the author is renamed.
    #[extended_ref(to = Author, fields = "name", sync = "async")]
    pub author: PostAuthor,
    #[embed(max = 20)] // without a bound this does not compile
    pub tags: Vec<String>,
}

/// At start-up, before serving: bring the database to the schema, start the sync worker.
/// `main` calls it with its `Database`, and `worker.shutdown().await?` on the way out.
pub async fn start(db: &Database) -> mongo_schema::Result<(Schema, SyncWorkerHandle)> {
    let schema = Schema::new().model::<Author>().model::<Post>().build()?;
    let report = schema
        .apply(db)
        .on_newer(OnNewer::Continue) // an older instance during a rolling deploy keeps serving
        .await?; // writes only what differs; safe from many instances
    println!("{report}");
    let worker = schema.sync_worker(db).name("posts").spawn();
    worker.ready().await?; // following the authors' change stream
    Ok((schema, worker))
}
