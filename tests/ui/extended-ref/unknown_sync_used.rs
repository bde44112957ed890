//! One wrong option of `#[extended_ref]`, and the items the derive generates used as if it were
//! right (the copy type, its `From`, `to_ref`, the relation constant): one error.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "books")]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub title: String,
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
    #[extended_ref(to = Book, fields = "title", sync = "eventually")]
    pub book: LoanBook,
    pub at: DateTime,
}

fn main() {
    let book = Book { id: ObjectId::new(), title: "Dune".into() };
    let copy = LoanBook::from(&book);
    let title: &String = &copy.title;
    println!("{title}");
    let loan = Loan { id: ObjectId::new(), member_id: Ref::new(ObjectId::new()), book: copy, at: DateTime::now() };
    let _: Ref<Loan> = loan.to_ref();
    let _ = (Loan::MEMBER_ID, Loan::COLLECTION);
    let _ = mongo_schema::bson::to_document(&loan);
}
