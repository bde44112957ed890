//! The README's "Getting started in your service" and the guide's testing page
//! (`docs/guide/testing.md`), as a service would write them: `my_service` is the service's library
//! crate (`src/lib.rs`: `readme_service/my_service.rs`, the README's first block of that section),
//! the rest its `tests/blog.rs`. `readme_blocks_are_in_these_files` checks that every such block
//! is in these files word for word (indentation and rustdoc's hidden `# ` lines aside), so the
//! README cannot drift from the API; the doc tests of `mongo-schema` compile the same blocks, and
//! these tests run them on the test server.

#[path = "readme_service/my_service.rs"]
mod my_service;

use mongo_schema::prelude::*;
use mongo_schema::query::Update;
use my_service::{start, Author, Post, PostAuthor};

#[tokio::test]
async fn a_renamed_author_reaches_the_posts() -> mongo_schema::Result<()> {
    let db = mongo_schema_testkit::database("blog").await; // a fresh database on the test server
    let (_schema, worker) = start(&db).await?;

    let ada = Author {
        id: ObjectId::new(),
        name: "Ada".into(),
    };
    Author::collection(&db).insert_one(&ada).await?;
    let post = Post {
        id: ObjectId::new(),
        title: "Notes".into(),
        published_at: DateTime::now(),
        author: PostAuthor::from(&ada),
        tags: vec!["math".into()],
    };
    Post::collection(&db).insert_one(&post).await?;

    // a plain driver write, as another service would send it: the worker follows it.
    // `set` and `inc` borrow a value of the field's type (here a `&str` for a `String`;
    // `&Status::Closed` for an enum, `&1` for an `i64`), written as the field stores it
    let rename = Update::new()
        .set(field!(Author, name), "Ada Lovelace")
        .build()?;
    Author::collection(&db)
        .update_one(ada.to_ref().filter(), rename)
        .await?;
    worker.caught_up().await?; // every change committed before this call is applied
    let stored = post.to_ref().resolve(&db).await?.expect("stored");
    assert_eq!(stored.author.name, "Ada Lovelace");
    worker.shutdown().await
}

/// The guide's "Testing with the test server" (`docs/guide/testing.md`), a second test of the
/// same `tests/blog.rs`.
#[tokio::test]
async fn the_database_refuses_what_the_model_forbids() -> mongo_schema::Result<()> {
    let db = mongo_schema_testkit::database("blog").await;
    let (_schema, worker) = start(&db).await?;

    let nameless = Author {
        id: ObjectId::new(),
        name: String::new(), // min_length = 1
    };
    let refused = Author::collection(&db)
        .insert_one(&nameless)
        .await
        .in_collection(Author::COLLECTION);
    assert!(
        matches!(refused, Err(mongo_schema::Error::Validation(_))),
        "{refused:?}"
    );
    worker.shutdown().await
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

/// Every ```rust block of the README's "Getting started in your service" is in these files, and
/// so is every block of `docs/guide/testing.md` that tests `my_service` on a server, line for
/// line (indentation and rustdoc's hidden lines aside: a doc test's `# mod my_service { .. }`
/// stands for the service's crate).
#[test]
fn readme_blocks_are_in_these_files() {
    let trimmed = |text: &str| -> String {
        text.lines()
            .filter(|l| !(l.starts_with("# ") || *l == "#"))
            .map(|l| format!("{}\n", l.trim_start()))
            .collect()
    };
    let blocks = |page: &str, section: Option<&str>| -> Vec<String> {
        let body = match section {
            Some(section) => {
                let start = page
                    .find(&format!("\n{section}\n"))
                    .unwrap_or_else(|| panic!("no section {section:?}"));
                let body = &page[start + section.len() + 2..];
                &body[..body.find("\n## ").unwrap_or(body.len())]
            }
            None => page,
        };
        body.split("```rust\n")
            .skip(1)
            .map(|b| trimmed(&b[..b.find("```").expect("an unclosed code block")]))
            .collect()
    };
    let library = trimmed(include_str!("readme_service/my_service.rs"));
    let this_file = trimmed(include_str!("readme_service.rs"));

    let readme = include_str!("../README.md");
    let started = blocks(readme, Some("## Getting started in your service"));
    assert_eq!(started.len(), 2, "the library and its test");
    assert!(
        library.contains(&started[0]),
        "README's library block is not readme_service/my_service.rs:\n{}",
        started[0]
    );
    assert!(
        this_file.contains(&started[1]),
        "README's test block is not in tests/readme_service.rs:\n{}",
        started[1]
    );

    let testing = include_str!("../docs/guide/testing.md");
    let on_server: Vec<String> = blocks(testing, None)
        .into_iter()
        .filter(|b| b.contains("#[tokio::test]"))
        .collect();
    assert!(
        !on_server.is_empty(),
        "docs/guide/testing.md has no test of my_service"
    );
    for block in &on_server {
        assert!(
            this_file.contains(block),
            "this block of docs/guide/testing.md is not in tests/readme_service.rs:\n{block}"
        );
    }

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
