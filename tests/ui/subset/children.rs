//! What a `#[subset(of = Child)]` asks of its child and its preview type: a child that refers to
//! the parent (once, or `via` names the reference), and a preview built `From<&Child>`.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct MessagePreview {
    pub body: String,
    pub at: DateTime,
}

/// A preview of a message too, which (unlike `MessagePreview`) is built from one.
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Snippet {
    pub body: String,
}

/// A message of a thread, which holds the id of its ticket, but not as a `#[reference]`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct Message {
    #[reference]
    pub thread_id: Ref<Thread>,
    pub ticket: ObjectId,
    pub body: String,
    pub at: DateTime,
}

/// The child of a subset refers to the parent (`child_without_reference`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[subset(of = Message, max = 1, sort = "-at")]
    pub last_message: Option<Snippet>,
}

/// The preview is built from the child: `impl From<&Message> for MessagePreview`
/// (`preview_without_from`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "threads")]
pub struct Thread {
    #[subset(of = Message, max = 1, sort = "-at")]
    pub last_message: Option<MessagePreview>,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct FollowerPreview {
    pub follower_name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "follows")]
pub struct Follow {
    pub follower_name: String,
    pub at: DateTime,
    #[reference]
    pub follower: Ref<Person>,
    #[reference]
    pub followed: Ref<Person>,
}

/// `via` names the child's reference to the parent: `follower_name` is a string
/// (`via_not_a_reference`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "people")]
pub struct Person {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[subset(of = Follow, via = follower_name, max = 1, sort = "-at")]
    pub newest_follower: Option<FollowerPreview>,
}

// the previews of the children above, built from them
impl From<&Message> for Snippet {
    fn from(message: &Message) -> Self {
        Snippet {
            body: message.body.clone(),
        }
    }
}

impl From<&Follow> for FollowerPreview {
    fn from(follow: &Follow) -> Self {
        FollowerPreview {
            follower_name: follow.follower_name.clone(),
        }
    }
}

/// A child that refers to the parent twice says which reference the subset follows, with `via`.
mod child_with_two_references {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "messages")]
    pub struct Message {
        pub body: String,
        pub at: DateTime,
        #[reference]
        pub ticket_id: Ref<Ticket>,
        #[reference]
        pub merged_into: Option<Ref<Ticket>>,
    }

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "tickets")]
    pub struct Ticket {
        #[subset(of = Message, max = 1, sort = "-at")]
        pub last_message: Option<Snippet>,
    }

    impl From<&Message> for Snippet {
        fn from(message: &Message) -> Self {
            Snippet {
                body: message.body.clone(),
            }
        }
    }
}

fn main() {}
