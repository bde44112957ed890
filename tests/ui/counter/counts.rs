//! `#[counter(of = Child)]`: an `i64` field of a collection root, whose children refer to it
//! (once, or `via` names the reference), and the count alone, without a subset's options. Each
//! case is a module named by its rule, or the root where the message names the types.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// The case's `Post`, a collection root with the fields it is given, and a `Like` of it.
macro_rules! post {
    ($($fields:tt)*) => {
        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "likes")]
        pub struct Like {
            #[serde(rename = "_id")]
            pub id: ObjectId,
            #[reference]
            pub post_id: Ref<Post>,
        }

        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "posts")]
        pub struct Post { $($fields)* }
    };
}

/// The case's `User`, a collection root with the fields it is given, and a `Follow`, which holds
/// two references to `User` and a note.
macro_rules! user {
    ($($fields:tt)*) => {
        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "users")]
        pub struct User { $($fields)* }

        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "follows")]
        pub struct Follow {
            pub note: String,
            #[reference]
            pub follower: Ref<User>,
            #[reference]
            pub followed: Ref<User>,
        }
    };
}

/// The likes of a post are unbounded: an `i32` could overflow.
mod i32_without_maximum {
    use super::*;

    post! {
        #[counter(of = Like)]
        pub like_count: i32,
    }
}

/// A count is an integer.
mod not_an_integer {
    use super::*;

    post! {
        #[counter(of = Like)]
        pub like_count: String,
    }
}

/// A counter keeps the count alone: no `max` or `sort` of previews, and never frozen.
mod preview_options {
    use super::*;

    post! {
        #[counter(of = Like, max = 3, sort = "-at", sync = "frozen")]
        pub like_count: i64,
    }
}

/// `#[counter]` belongs on a field of a collection root, not on a struct the root embeds.
mod counter_on_bson_schema {
    use super::*;

    post! {
        pub stats: Stats,
    }

    #[derive(BsonSchema, Serialize, Deserialize)]
    pub struct Stats {
        #[counter(of = Like)]
        pub like_count: i64,
    }
}

/// A child that refers to the parent twice says which reference the count follows, with `via`.
mod two_references_without_via {
    use super::*;

    user! {
        #[counter(of = Follow)]
        pub follower_count: i64,
    }
}

// `via` names the child's reference to the parent: `note` is a string (`via_not_a_reference`).
user! {
    #[counter(of = Follow, via = note)]
    pub follower_count: i64,
}

fn main() {}
