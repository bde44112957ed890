//! The README's "Getting started in your service" and "Testing your service", as a service would
//! write them: `my_service` is the service's library crate (`src/lib.rs`), the rest its
//! `tests/blog.rs`. Every Rust block of those two README sections is in this file word for word
//! (checked by `readme_blocks_are_in_this_file`, ignoring indentation), so the README cannot drift
//! from the API.

mod my_service {
    use mongo_schema::mongodb::Database;
    use mongo_schema::prelude::*;
    use mongo_schema::{OnNewer, SyncWorkerHandle};
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
}

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use my_service::{start, Author, Post, PostAuthor};
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_renamed_author_reaches_the_posts() {
    let db = mongo_schema_testkit::database("blog").await; // a fresh database on the test server
    let (_schema, worker) = start(&db).await.unwrap();

    let ada = Author {
        id: ObjectId::new(),
        name: "Ada".into(),
    };
    Author::collection(&db).insert_one(&ada).await.unwrap();
    let post = Post {
        id: ObjectId::new(),
        title: "Notes".into(),
        published_at: DateTime::now(),
        author: PostAuthor::from(&ada),
        tags: vec!["math".into()],
    };
    Post::collection(&db).insert_one(&post).await.unwrap();

    Author::collection(&db)
        .update_one(
            doc! { "_id": ada.id },
            doc! { "$set": { "name": "Ada Lovelace" } },
        )
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stored = Post::collection(&db)
            .find_one(doc! { "_id": post.id })
            .await
            .unwrap();
        if stored.unwrap().author.name == "Ada Lovelace" {
            break;
        }
        assert!(Instant::now() < deadline, "the copy was not rewritten");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_database_refuses_what_the_model_forbids() {
    let db = mongo_schema_testkit::database("blog").await;
    let (_schema, worker) = start(&db).await.unwrap();

    let nameless = doc! { "_id": ObjectId::new(), "name": "" }; // min_length = 1
    let refused = Author::collection(&db)
        .clone_with_type()
        .insert_one(nameless)
        .await
        .in_collection(Author::COLLECTION);
    assert!(
        matches!(refused, Err(mongo_schema::Error::Validation(_))),
        "{refused:?}"
    );
    worker.shutdown().await.unwrap();
}

#[test]
fn a_post_is_checked_without_a_server() {
    let ada = Author {
        id: ObjectId::new(),
        name: "Ada".into(),
    };
    let post = Post {
        id: ObjectId::new(),
        title: "Notes".into(),
        published_at: DateTime::now(),
        author: PostAuthor::from(&ada),
        tags: vec!["math".into()],
    };
    Post::check(&post).unwrap(); // the validator `apply` installs, evaluated here
    mongo_schema::testing::assert_valid(&post);

    let crowded = Post {
        tags: vec!["t".into(); 21], // #[embed(max = 20)]
        ..post
    };
    mongo_schema::testing::assert_invalid(&crowded, "tags", "maxItems");

    let nameless = Author {
        name: String::new(), // min_length = 1
        ..ada
    };
    let error = Author::check(&nameless).unwrap_err();
    let failure = &error.as_validation().unwrap().failures[0];
    assert_eq!(
        (failure.path.as_str(), failure.rule.as_str()),
        ("name", "minLength")
    );
}

/// Every ```rust block of the two README sections is in this file, line for line (indentation
/// aside: here the service's library is the module `my_service`).
#[test]
fn readme_blocks_are_in_this_file() {
    let readme = include_str!("../README.md");
    let trimmed = |text: &str| -> String {
        text.lines()
            .map(|l| format!("{}\n", l.trim_start()))
            .collect()
    };
    let this_file = trimmed(include_str!("readme_service.rs"));
    let mut checked = 0;
    for section in [
        "## Getting started in your service",
        "## Testing your service",
    ] {
        let start = readme
            .find(&format!("\n{section}\n"))
            .unwrap_or_else(|| panic!("README has no section {section:?}"));
        let body = &readme[start + section.len() + 2..];
        let body = &body[..body.find("\n## ").unwrap_or(body.len())];
        for block in body.split("```rust\n").skip(1) {
            let block = &block[..block.find("```").expect("an unclosed code block")];
            let code = trimmed(block);
            assert!(
                this_file.contains(&code),
                "this README block of {section:?} is not in tests/readme_service.rs:\n{code}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} blocks found");

    // The Cargo.toml lines name the crates as they are and this repository.
    let repository = env!("CARGO_PKG_REPOSITORY");
    for line in [
        format!("{} = {{ git = \"{repository}\" }}", env!("CARGO_PKG_NAME")),
        format!("mongo-schema-testkit = {{ git = \"{repository}\" }}"),
    ] {
        assert!(
            readme.contains(&format!("\n{line}\n")),
            "README lacks {line}"
        );
    }
}

/// What the README says `apply` creates for this model.
#[test]
fn the_model_has_the_indexes_the_readme_names() {
    let keys: Vec<String> = Post::indexes().iter().map(|i| i.keys.to_string()).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.iter().any(|k| k.contains("published_at")), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains("author._id")), "{keys:?}");
}
