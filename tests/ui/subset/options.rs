//! `#[subset(...)]` on a parent's field: the options it needs, their values and the shape of the
//! field. Each case is a module named by its rule, with its own `Ticket` and a `Message` child of
//! it.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct MessagePreview {
    #[schema(max_length = 40)]
    pub preview: String,
    pub at: DateTime,
}

/// The case's `Ticket`, a collection root with the fields it is given, and a `Message` that
/// refers to it, whose preview a subset copies.
macro_rules! ticket {
    // the ticket's own attributes, then its fields in braces
    ($(#[$attr:meta])* { $($fields:tt)* }) => {
        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "messages")]
        pub struct Message {
            #[reference]
            pub ticket_id: Ref<Ticket>,
            pub body: String,
            pub status: String,
            pub at: DateTime,
        }

        impl From<&Message> for MessagePreview {
            fn from(message: &Message) -> Self {
                MessagePreview { preview: message.body.chars().take(40).collect(), at: message.at }
            }
        }

        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "tickets")]
        $(#[$attr])*
        pub struct Ticket { $($fields)* }
    };
    // the ticket's fields
    ($($fields:tt)*) => {
        ticket!({ $($fields)* });
    };
}

/// `max` is required: at most `max` children are copied into the parent.
mod missing_max {
    use super::*;

    ticket! {
        #[subset(of = Message, sort = "-at", count = "message_count")]
        pub last_message: Option<MessagePreview>,
        pub message_count: i64,
    }
}

/// `of`, the child type, is required.
mod missing_of {
    use super::*;

    ticket! {
        #[subset(max = 3, sort = "-at")]
        pub recent: Vec<MessagePreview>,
    }
}

/// `sort`, the order that picks the children kept, is required.
mod missing_sort {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 3)]
        pub recent: Vec<MessagePreview>,
    }
}

/// `count` names a field of the parent.
mod count_missing_field {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 1, sort = "-at", count = "messages_count")]
        pub last_message: Option<MessagePreview>,
        pub message_count: i64,
    }
}

/// `sort` is a stored field with `-` first for descending, nothing between them.
mod malformed_sort {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 3, sort = "- at")]
        pub recent: Vec<MessagePreview>,
    }
}

/// `filter` compares fields the child stores.
mod filter_unknown_field {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 1, sort = "-at", filter = r#"{ "state": "open" }"#)]
        pub last_message: Option<MessagePreview>,
    }
}

/// `filter` holds equalities only: no query operators.
mod filter_with_operator {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 1, sort = "-at", filter = r#"{ "status": { "$in": ["open", "pending"] } }"#)]
        pub last_message: Option<MessagePreview>,
    }
}

/// The options are `of`, `max`, `sort`, `count`, `filter`, `sync` and `via`.
mod unknown_subset_option {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 3, sort = "-at", limit = 3)]
        pub recent: Vec<MessagePreview>,
    }
}

/// `count` names the field by its Rust name, `message_count`, not by the stored one.
mod count_stored_name {
    use super::*;

    ticket! {
        #[serde(rename_all = "camelCase")]
        {
            #[subset(of = Message, max = 1, sort = "-at", count = "messageCount")]
            pub last_message: Option<MessagePreview>,
            pub message_count: i64,
        }
    }
}

/// `#[subset]` belongs on a field of a collection root, not on a struct the root embeds.
mod subset_on_bson_schema {
    use super::*;

    ticket! {}

    #[derive(BsonSchema, Serialize, Deserialize)]
    pub struct Thread {
        #[subset(of = Message, max = 3, sort = "-at")]
        pub recent: Vec<MessagePreview>,
    }
}

/// `max = 1` keeps one preview: an `Option`, not a `Vec`.
mod max_one_on_vec {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 1, sort = "-at")]
        pub recent: Vec<MessagePreview>,
    }
}

/// A subset follows its children: it is never `sync = "frozen"`.
mod frozen_subset {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 1, sort = "-at", sync = "frozen")]
        pub last_message: Option<MessagePreview>,
    }
}

/// `max = 3` keeps up to three previews: a `Vec`, not an `Option`.
mod max_three_on_option {
    use super::*;

    ticket! {
        #[subset(of = Message, max = 3, sort = "-at")]
        pub last_message: Option<MessagePreview>,
    }
}

fn main() {}
