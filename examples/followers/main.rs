//! Seed 000's followers: one relationship document per follow instead of an unbounded array,
//! a unique compound index, pages of 50 followers with `$gt` continuation, and the reversed
//! index for "who does this user follow?".
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
        })
        .collect();
    User::collection(&db).insert_many(&users).await?;
    let u1 = users[1].to_ref();
    let follows: Vec<Follow> = (2..1002)
        .map(|i| Follow {
            followed_id: u1.clone(),
            follower_id: users[i].to_ref(),
        })
        .chain((5..25).map(|i| Follow {
            followed_id: users[i].to_ref(),
            follower_id: u1.clone(),
        }))
        .collect();
    Follow::collection(&db).insert_many(&follows).await?;
    println!("\n{} follows of u1, u1 follows {}", 1000, 20);

    let again = Follow::collection(&db)
        .insert_one(Follow {
            followed_id: u1.clone(),
            follower_id: users[2].to_ref(),
        })
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
