use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BookPreview {
    pub title: String,
}

impl From<&Book> for BookPreview {
    fn from(book: &Book) -> Self {
        BookPreview {
            title: book.title.clone(),
        }
    }
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "books")]
#[serde(rename_all = "camelCase")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    pub title: String,
    pub added_at: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "shelves")]
pub struct Shelf {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // the Rust name: `Book` stores `addedAt`
    #[subset(of = Book, max = 3, sort = "-added_at")]
    pub newest: Vec<BookPreview>,
}

fn main() {}
