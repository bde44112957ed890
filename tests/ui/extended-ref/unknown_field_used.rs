//! One misspelt copied field, and the generated items used as if it were right: one error.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub title: String,
    #[serde(rename = "by")]
    pub author: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "loans")]
#[index(keys(member_id = 1, at = -1))]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    #[extended_ref(to = Book, fields = "titel, author", sync = "transactional")]
    pub book: LoanBook,
    pub at: DateTime,
}

fn main() {
    let book = Book { id: ObjectId::new(), title: "Dune".into(), author: "Herbert".into() };
    let copy = LoanBook::from(&book);
    let by: &String = &copy.author;
    println!("{by} {:?}", copy.clone());
    let loan = Loan {
        id: ObjectId::new(),
        member_id: Ref::new(ObjectId::new()),
        book: (&book).into(),
        at: DateTime::now(),
    };
    let _ = loan.to_ref();
    let _ = Loan::MEMBER_ID;
    let _ = mongo_schema::bson::to_document(&copy);
    let _ = mongo_schema::bson::from_document::<LoanBook>(mongo_schema::bson::Document::new());
    let _ = mongo_schema::bson::to_document(&loan);
    let _ = (Loan::collection_spec(), LoanBook::bson_schema());
}
