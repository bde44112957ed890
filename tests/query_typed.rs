//! Declared queries take the field's type in every path form and encode it as the field is
//! stored: the social trial's two silent wrong results (a uuid copy id found with a plain
//! `Uuid` through the quoted and the dotted path; `eq(tags)` with one tag finding every post that
//! holds it), checked against the ids of the documents written.

mod common;

use std::collections::BTreeSet;

use mongo_schema::bson::{oid::ObjectId, DateTime};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "users")]
pub struct User {
    #[serde(
        rename = "_id",
        with = "mongo_schema::bson::serde_helpers::uuid_1_as_binary"
    )]
    pub id: uuid::Uuid,
    pub name: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Audit {
    pub edited_by: Option<String>,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Place {
    pub city_name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "posts")]
#[serde(rename_all = "camelCase")]
#[query(name = "by_author_quoted", eq("author._id"), sort(posted_at = -1))]
#[query(name = "by_author_path", eq(author.id), sort(posted_at = -1))]
#[query(name = "by_author_name", eq(author.name))]
#[query(name = "tagged", eq(tags), sort(posted_at = -1))]
#[query(name = "tagged_any", any_of(tags, max = 3))]
#[query(name = "in_city", eq(place.city_name))]
#[query(name = "in_city_quoted", eq("place.cityName"))]
#[query(name = "mentioning", eq("mentions._id"))]
#[query(name = "pinned_between", range(pinned_at))]
#[query(name = "edited_by", eq(audit.edited_by))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = User, fields = "name", sync = "transactional")]
    pub author: PostAuthor,
    #[embed(max = 10)]
    pub tags: Vec<String>,
    pub place: Option<Place>,
    #[extended_ref(to = User, fields = "name", sync = "frozen", max = 5, as = Mention)]
    pub mentions: Vec<Mention>,
    pub posted_at: DateTime,
    pub pinned_at: Option<DateTime>,
    #[serde(flatten)]
    pub audit: Audit,
}

fn schema() -> Schema {
    Schema::new()
        .model::<User>()
        .model::<Post>()
        .build()
        .expect("the social schema is consistent")
}

fn ids(posts: &[Post]) -> BTreeSet<ObjectId> {
    posts.iter().map(|p| p.id).collect()
}

#[tokio::test]
async fn every_path_form_takes_the_field_type_and_finds_what_was_written() {
    let db = mongo_schema_testkit::database("query_typed").await;
    schema().apply(&db).await.unwrap();
    let ada = User {
        id: uuid::Uuid::new_v4(),
        name: "Ada".into(),
    };
    let bo = User {
        id: uuid::Uuid::new_v4(),
        name: "Bo".into(),
    };
    User::collection(&db)
        .insert_many([&ada, &bo])
        .await
        .unwrap();
    let post =
        |author: &User, tags: &[&str], city: Option<&str>, mention: Option<&User>, i: i64| Post {
            id: ObjectId::new(),
            author: PostAuthor::from(author),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            place: city.map(|c| Place {
                city_name: c.to_owned(),
            }),
            mentions: mention.into_iter().map(Mention::from).collect(),
            posted_at: DateTime::from_millis(1_700_000_000_000 + i * 1000),
            // posts 1, 3 and 5 pinned, at 10, 30 and 50
            pinned_at: (i % 2 == 1).then(|| DateTime::from_millis(i * 10)),
            audit: Audit {
                edited_by: (i <= 2).then(|| "ed".to_owned()),
            },
        };
    let posts = vec![
        post(&ada, &["rust"], Some("Lyon"), Some(&bo), 1),
        post(&ada, &["rust", "mongodb"], None, None, 2),
        post(&ada, &["go"], Some("Lyon"), None, 3),
        post(
            &bo,
            &["mongodb", "rust", "serde"],
            Some("Oslo"),
            Some(&ada),
            4,
        ),
        post(&bo, &[], None, None, 5),
    ];
    Post::collection(&db).insert_many(&posts).await.unwrap();
    let written =
        |pick: &[usize]| -> BTreeSet<ObjectId> { pick.iter().map(|&i| posts[i].id).collect() };

    // a plain `Uuid`, encoded through the id's helper (binary subtype 4), in both path forms
    let quoted = Post::by_author_quoted(&db, &ada.id).await.unwrap();
    assert_eq!(
        ids(&quoted),
        written(&[0, 1, 2]),
        "the quoted path `author._id`"
    );
    assert_eq!(
        quoted.iter().map(|p| p.posted_at).collect::<Vec<_>>(),
        vec![posts[2].posted_at, posts[1].posted_at, posts[0].posted_at],
        "newest first"
    );
    let dotted = Post::by_author_path(&db, &bo.id).await.unwrap();
    assert_eq!(
        ids(&dotted),
        written(&[3, 4]),
        "the dotted path `author.id`"
    );
    let by_name = Post::by_author_name(&db, "Bo").await.unwrap();
    assert_eq!(
        ids(&by_name),
        written(&[3, 4]),
        "a copied field by its borrowed form"
    );

    // `eq` on an array field takes one element and matches every array holding it
    let rust = Post::tagged(&db, "rust").await.unwrap();
    assert_eq!(
        ids(&rust),
        written(&[0, 1, 3]),
        "one tag finds posts with one and several tags"
    );
    let mongodb = Post::tagged(&db, &String::from("mongodb")).await.unwrap();
    assert_eq!(ids(&mongodb), written(&[1, 3]));
    let none = Post::tagged(&db, "java").await.unwrap();
    assert!(none.is_empty(), "a tag no post holds finds none");
    // `.count()`: the same filter, counted by the server (the declared limit left out)
    assert_eq!(Post::tagged(&db, "rust").count().await.unwrap(), 3);
    assert_eq!(Post::tagged(&db, "rust").limit(1).count().await.unwrap(), 3);
    assert_eq!(Post::by_author_path(&db, &ada.id).count().await.unwrap(), 3);
    assert_eq!(Post::tagged(&db, "java").count().await.unwrap(), 0);
    let any = Post::tagged_any(&db, &["go".to_owned(), "serde".to_owned()])
        .await
        .unwrap();
    assert_eq!(
        ids(&any),
        written(&[2, 3]),
        "any_of on an array takes elements"
    );
    // the same list as `&str`s (a `String` field's borrowed form, as `eq` takes `&str`)
    let any_str = Post::tagged_any(&db, &["go", "serde"]).await.unwrap();
    assert_eq!(ids(&any_str), written(&[2, 3]), "any_of takes `&str`s");

    // through an `Option` of an embedded struct, by Rust path and by stored path
    let lyon = Post::in_city(&db, "Lyon").await.unwrap();
    assert_eq!(ids(&lyon), written(&[0, 2]));
    let oslo = Post::in_city_quoted(&db, "Oslo").await.unwrap();
    assert_eq!(
        ids(&oslo),
        written(&[3]),
        "the quoted path `place.cityName`"
    );

    // through an array of copies: the element's id, encoded through the source id's helper
    let mentions_ada = Post::mentioning(&db, &ada.id).await.unwrap();
    assert_eq!(ids(&mentions_ada), written(&[3]));
    let mentions_bo = Post::mentioning(&db, &bo.id).await.unwrap();
    assert_eq!(ids(&mentions_bo), written(&[0]));

    // a range on an `Option` takes bounds of its value (a `null` bound would match nothing)
    let pinned = Post::pinned_between(&db, DateTime::from_millis(20)..)
        .await
        .unwrap();
    assert_eq!(ids(&pinned), written(&[2, 4]), "pinned at 30 and 50");
    let early = Post::pinned_between(&db, ..=DateTime::from_millis(30))
        .await
        .unwrap();
    assert_eq!(
        ids(&early),
        written(&[0, 2]),
        "pinned at 10 and 30, none of the unpinned"
    );
    // a field of a flattened struct is stored at the root: `audit.edited_by` is `edited_by`
    let edited = Post::edited_by(&db, "ed").await.unwrap();
    assert_eq!(ids(&edited), written(&[0, 1]));
    // a limit below 1 is refused before anything is sent (0 would read every document)
    for limit in [0, -1] {
        let refused = Post::tagged(&db, "rust").limit(limit).await;
        assert!(
            matches!(refused, Err(mongo_schema::Error::InvalidArgument { .. })),
            "{limit}: {refused:?}"
        );
    }
    assert_eq!(Post::tagged(&db, "rust").limit(1).await.unwrap().len(), 1);
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "follows")]
#[index(keys(followed_id = 1, follower_id = 1), name = "by_followed")]
#[query(
    name = "following_page",
    eq(follower_id),
    range(followed_id),
    sort(followed_id = 1)
)]
#[query(name = "queue", eq(team, status), sort(priority = -1), limit = 10)]
#[query(
    name = "queue_reversed",
    eq(status, team),
    sort(priority = 1),
    limit = 10
)]
pub struct Follow {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub follower_id: ObjectId,
    pub followed_id: ObjectId,
    pub team: String,
    pub status: String,
    pub priority: i32,
}

#[test]
fn the_fit_derives_by_esr_and_merges_equalities_as_a_set() {
    use mongo_schema::bson::doc;
    let schema = Schema::new().model::<Follow>().build().unwrap();
    let follows = schema.collection("follows").unwrap();
    let keys: Vec<_> = follows.indexes.iter().map(|i| i.keys.clone()).collect();
    // the declared index gives the order but walks every `followed_id` of the range: the ESR
    // index is derived beside it
    assert!(
        keys.contains(&doc! { "follower_id": 1, "followed_id": 1 }),
        "{keys:?}"
    );
    assert!(
        keys.contains(&doc! { "followed_id": 1, "follower_id": 1 }),
        "{keys:?}"
    );
    // the queue and its reverse with the equalities the other way round: one index
    let queues: Vec<_> = keys.iter().filter(|k| k.contains_key("priority")).collect();
    assert_eq!(queues.len(), 1, "{keys:?}");
    let fit = |name: &str| common::fit_of(follows, name);
    assert_ne!(fit("following_page").index.as_deref(), Some("by_followed"));
    assert_eq!(fit("queue").index, fit("queue_reversed").index);
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "articles")]
#[query(name = "tagged_in", eq(tags), any_of(status, max = 3), sort(at = -1))]
#[query(name = "any_tag_latest", any_of(tags, max = 3), sort(at = -1))]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[embed(max = 10)]
    pub tags: Vec<String>,
    pub status: String,
    pub at: DateTime,
}

/// mongod 7.0 and 8.0 explode no `$in` of a multikey index for a sort (8.1 does,
/// SERVER-56865): by default the `$in` follows the sort keys in the derived index; with
/// `server_rules(Mongod81)` it is exploded in front of them. Both fits are served.
#[test]
fn the_explode_rule_follows_the_schemas_server_rules() {
    use mongo_schema::bson::doc;
    use mongo_schema::query::fit::ServerRules;
    let derived = |rules: ServerRules| {
        let schema = Schema::new()
            .model::<Article>()
            .server_rules(rules)
            .build()
            .unwrap();
        let articles = schema.collection("articles").unwrap();
        let query = common::declared_query(articles, "tagged_in");
        let fit = query.fit.clone().unwrap();
        assert_eq!(fit.problem, None, "{rules:?}: {fit:?}");
        let index = articles
            .indexes
            .iter()
            .find(|i| Some(&i.name) == fit.index.as_ref())
            .unwrap();
        (index.keys.clone(), fit.merge_scans)
    };
    assert_eq!(
        derived(ServerRules::Mongod70),
        (doc! { "tags": 1, "at": -1, "status": 1 }, 1)
    );
    assert_eq!(
        derived(ServerRules::Mongod81),
        (doc! { "tags": 1, "status": 1, "at": -1 }, 3)
    );
}

/// Nothing but an `$in` on an array bounds `any_tag_latest`: the derived index keeps it in
/// front (`{ tags, at: -1 }`, a bounded scan) rather than after the sort (a scan of the whole
/// index). mongod 7.0/8.0 sort its rows in memory, and the fit says so for that index; 8.1
/// merges the three scans.
#[test]
fn an_in_on_an_array_alone_keeps_the_scan_bounded() {
    use mongo_schema::bson::doc;
    use mongo_schema::query::fit::ServerRules;
    for rules in [ServerRules::Mongod70, ServerRules::Mongod81] {
        let schema = Schema::new()
            .model::<Article>()
            .server_rules(rules)
            .build()
            .unwrap();
        let articles = schema.collection("articles").unwrap();
        // (on 7.0 merged with `tagged_in`'s `{ tags, at: -1, status }`, which it prefixes)
        assert!(
            articles.indexes.iter().any(|i| {
                let first: Vec<_> = i.keys.iter().take(2).collect();
                first == doc! { "tags": 1, "at": -1 }.iter().collect::<Vec<_>>()
            }),
            "{rules:?}: {:?}",
            articles.indexes
        );
        let query = common::declared_query(articles, "any_tag_latest");
        let fit = query.fit.clone().unwrap();
        match rules {
            ServerRules::Mongod70 => {
                assert_eq!(fit.index, None, "{fit:?}");
                assert!(fit.problem.is_some(), "{fit:?}");
            }
            _ => assert_eq!(
                (fit.index.as_deref(), fit.merge_scans),
                (Some("tags_1_at_-1"), 3),
                "{fit:?}"
            ),
        }
    }
}
