//! The first pass, and the only reading of the database's layout: collections with their
//! validators and indexes, and a `$sample` of each (plus its oldest and newest document by
//! `_id`) whose join is the shape the facts pass then counts exactly.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{ReadPreference, SelectionCriteria};
use mongodb::{Collection, Database};

use crate::lattice::DocShape;
use crate::report::Report;

/// How the database is read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Documents per `$sample`.
    pub sample: u64,
    /// `maxTimeMS` of every read; [`DEFAULT_MAX_TIME`] when `None`.
    pub max_time: Option<std::time::Duration>,
    /// Read from a secondary when one is there (`secondaryPreferred`).
    pub secondary: bool,
}

/// `maxTimeMS` of every read unless `--max-time-ms` says otherwise: no read waits for ever.
pub const DEFAULT_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(1800);

impl ReadOptions {
    /// The `maxTimeMS` of a read.
    pub fn limit(&self) -> std::time::Duration {
        self.max_time.unwrap_or(DEFAULT_MAX_TIME)
    }
}

/// A collection as found.
#[derive(Debug, Clone)]
pub struct Found {
    /// The name.
    pub name: String,
    /// Its documents, counted.
    pub count: u64,
    /// The join of the sampled documents.
    pub shape: DocShape,
    /// Documents sampled.
    pub sampled: u64,
    /// `listIndexes`, the `_id` index left out.
    pub indexes: Vec<Document>,
    /// The existing `$jsonSchema` validator, level and action.
    pub validator: Option<Document>,
    /// `validationLevel`.
    pub validation_level: Option<String>,
    /// `validationAction`.
    pub validation_action: Option<String>,
    /// The collection's default collation (`options.collation`).
    pub collation: Option<Document>,
    /// `listCollections`' `options`, as the server lists them (time series, capped,
    /// clustered, pre- and post-images are read from it by `pull`).
    pub options: Document,
}

/// The collection handle with the read options.
pub fn collection(db: &Database, name: &str, read: &ReadOptions) -> Collection<Document> {
    if read.secondary {
        let options = mongodb::options::CollectionOptions::builder()
            .selection_criteria(SelectionCriteria::ReadPreference(
                ReadPreference::SecondaryPreferred {
                    options: Default::default(),
                },
            ))
            .build();
        return db.collection_with_options(name, options);
    }
    db.collection::<Document>(name)
}

/// The collections of `db` (`only` when given), sampled; `progress` hears of each as it is
/// done.
pub async fn sample(
    db: &Database,
    only: &[String],
    read: &ReadOptions,
    report: &mut Report,
    progress: &mut (dyn FnMut(&Found) + Send),
) -> mongodb::error::Result<Vec<Found>> {
    report.command("listCollections");
    let mut specs: Vec<Document> = db
        .run_cursor_command(doc! {
            "listCollections": 1,
            "filter": { "type": { "$in": ["collection", "timeseries"] } },
        })
        .await?
        .try_collect()
        .await?;
    specs.sort_by(|a, b| {
        a.get_str("name")
            .unwrap_or("")
            .cmp(b.get_str("name").unwrap_or(""))
    });
    let mut found = Vec::new();
    for spec in specs {
        let name = spec.get_str("name").unwrap_or_default().to_owned();
        if name.starts_with("system.") || name.starts_with("mongo_schema_") {
            continue;
        }
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let options = spec.get_document("options").cloned().unwrap_or_default();
        let validator = options
            .get_document("validator")
            .ok()
            .filter(|v| v.contains_key("$jsonSchema"))
            .cloned();
        let coll = collection(db, &name, read);
        report.command("aggregate");
        let count = coll.count_documents(doc! {}).max_time(read.limit()).await?;
        let mut docs: Vec<Document> = Vec::new();
        if count <= read.sample {
            report.command("find");
            docs = coll
                .find(doc! {})
                .max_time(read.limit())
                .await?
                .try_collect()
                .await?;
        } else {
            report.command("aggregate");
            let agg = coll
                .aggregate(vec![doc! { "$sample": { "size": read.sample as i64 } }])
                .max_time(read.limit());
            docs.extend(agg.await?.try_collect::<Vec<_>>().await?);
            for direction in [1, -1] {
                report.command("find");
                if let Some(d) = coll
                    .find_one(doc! {})
                    .sort(doc! { "_id": direction })
                    .await?
                {
                    docs.push(d);
                }
            }
        }
        let mut shape = DocShape::default();
        for d in &docs {
            shape = shape.join(DocShape::of(d));
        }
        report.command("listIndexes");
        let indexes: Vec<Document> = db
            .run_cursor_command(doc! { "listIndexes": &name })
            .await?
            .try_collect()
            .await?;
        let indexes = indexes
            .into_iter()
            .filter(|i| i.get_str("name") != Ok("_id_"))
            .collect();
        found.push(Found {
            name,
            count,
            sampled: docs.len() as u64,
            shape,
            indexes,
            validator,
            validation_level: options
                .get_str("validationLevel")
                .ok()
                .filter(|l| *l != "strict")
                .map(str::to_owned),
            validation_action: options
                .get_str("validationAction")
                .ok()
                .filter(|a| *a != "error")
                .map(str::to_owned),
            collation: options.get_document("collation").ok().cloned(),
            options,
        });
        progress(&found[found.len() - 1]);
    }
    Ok(found)
}

/// Relaxed extended JSON of a document, for `partial = "..."`.
pub fn extended_json(document: &Document) -> String {
    Bson::Document(document.clone())
        .into_relaxed_extjson()
        .to_string()
}
