//! Seed 000's followers: one relationship document per follow instead of an unbounded array,
//! a unique compound index, pages of 50 followers with `$gt` continuation, and the reversed
//! index for "who does this user follow?". Each user keeps its follower count
//! (`#[counter(via = followed_id)]`) and its three newest followers
//! (`#[subset(via = followed_id)]`): a follow holds two references to `User`, and `via` says
//! which one the count and the preview follow.
//!
//! ```text
//! cargo run --example followers
//! ```

mod model;

use model::*;
use mongo_schema::prelude::*;
use mongo_schema::{explain, Error};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = mongodb::Client::with_uri_str(mongo_schema_testkit::uri()).await?;
    let db = client.database("mongo_schema_followers");
    db.drop().await?;
    let schema = model::schema();
    print!("{}", schema.apply(&db).await?);

    let users: Vec<User> = (0..1200)
        .map(|i| User {
            id: format!("u{i}"),
            name: format!("User {i}"),
            follower_count: 0,
            newest_followers: Vec::new(),
        })
        .collect();
    User::collection(&db).insert_many(&users).await?;
    let u1 = users[1].to_ref();
    let at = |n: usize| DateTime::from_millis(1_700_000_000_000 + n as i64 * 1000);
    let follow = |followed: &User, follower: &User, n: usize| Follow {
        id: ObjectId::new(),
        followed_id: followed.to_ref(),
        follower_id: follower.to_ref(),
        at: at(n),
    };
    // a bulk import with plain driver calls: counts and previews are filled by reconcile
    let follows: Vec<Follow> = (2..1002)
        .map(|i| follow(&users[1], &users[i], i))
        .chain((5..25).map(|i| follow(&users[i], &users[1], i)))
        .collect();
    Follow::collection(&db).insert_many(&follows).await?;
    println!("\n{} follows of u1, u1 follows {}", 1000, 20);
    let repaired = schema.reconcile(&db).await?;
    println!(
        "reconcile after the import: {} users' counts and previews written",
        repaired.repaired()
    );
    for subset in &repaired.subsets {
        println!("  {subset}");
    }

    // from now on, each follow and unfollow keeps them: the follow, u1's count and u1's
    // preview in one transaction (the follower's own count and preview are not touched)
    let ada_follows = follow(&users[1], &users[1100], 5000);
    User::NEWEST_FOLLOWERS
        .add_with(&db, &ada_follows, &[&User::FOLLOWER_COUNT])
        .await?;
    let profile = |id: &str| {
        let (db, id) = (db.clone(), id.to_owned());
        async move {
            User::collection(&db)
                .find_one(doc! { "_id": id })
                .await?
                .ok_or_else(|| Box::<dyn std::error::Error>::from("the user"))
        }
    };
    let (u1_now, u1100) = (profile("u1").await?, profile("u1100").await?);
    println!(
        "u1100 follows u1: u1 has {} followers, newest {:?}; u1100 still has {}",
        u1_now.follower_count,
        u1_now
            .newest_followers
            .iter()
            .map(|p| p.follower_id.as_str())
            .collect::<Vec<_>>(),
        u1100.follower_count
    );
    User::NEWEST_FOLLOWERS
        .delete_with(&db, &ada_follows.to_ref(), &[&User::FOLLOWER_COUNT])
        .await?;
    let u1_after = profile("u1").await?;
    println!(
        "u1100 unfollows: u1 has {} followers, newest {:?} (refilled from the follows)",
        u1_after.follower_count,
        u1_after
            .newest_followers
            .iter()
            .map(|p| p.follower_id.as_str())
            .collect::<Vec<_>>()
    );
    assert_eq!(u1_after.follower_count, 1000);

    let again = Follow::collection(&db)
        .insert_one(follow(&users[1], &users[2], 6000))
        .await
        .in_collection(Follow::COLLECTION);
    match again {
        Err(Error::Duplicate { index, key, .. }) => {
            println!("following twice is refused by the unique index `{index}`: {key} is taken");
        }
        other => return Err(format!("expected a duplicate key error, got {other:?}").into()),
    }

    println!("\nu1's followers, 50 at a time, in followerId order:");
    let mut after = None;
    let mut pages = 0;
    let mut total = 0;
    loop {
        // the page as a description (its filter, for explain) and read
        let page = Follow::FOLLOWED_ID.page(&u1).after(after.clone());
        let result = Follow::FOLLOWED_ID
            .page_in(&db, &u1)
            .after(after.take())
            .await?;
        pages += 1;
        total += result.items.len();
        if pages <= 3 || result.next.is_none() {
            println!(
                "  page {pages}: {} followers, {} .. {}",
                result.items.len(),
                result
                    .items
                    .first()
                    .map_or("-", |f| f.follower_id.id().as_str()),
                result
                    .items
                    .last()
                    .map_or("-", |f| f.follower_id.id().as_str())
            );
        }
        if pages == 2 {
            println!("    filter {} sort {}", page.find_filter(), page.sort());
            println!("    explain: {}", explain(&db, page.find_command()).await?);
        }
        match result.next {
            Some(cursor) => after = Some(cursor),
            None => break,
        }
    }
    println!("  {total} followers in {pages} pages");

    // the first page is also the declared query `followers_of`: the same 50, in the same order
    let declared = Follow::followers_of(&db, &u1).await?;
    let first = Follow::FOLLOWED_ID.page_in(&db, &u1).await?;
    assert_eq!(
        declared, first.items,
        "the declared query is the first page"
    );
    println!(
        "  the declared query `followers_of` returns the first page ({} follows)",
        declared.len()
    );
    print!("{}", schema.prove(&db).await?);

    println!("\nwho does u1 follow? (the reversed index)");
    let following = Follow::FOLLOWER_ID.page_in(&db, &u1).await?;
    println!(
        "  {} users: {} ..",
        following.items.len(),
        following
            .items
            .iter()
            .take(5)
            .map(|f| f.followed_id.id().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  explain: {}",
        explain(&db, Follow::FOLLOWER_ID.page(&u1).find_command()).await?
    );
    Ok(())
}
