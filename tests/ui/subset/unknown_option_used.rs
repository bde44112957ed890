//! One unknown option, and the items the derive generates used as if it were right: one error.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone)]
pub struct LoanPreview {
    pub at: DateTime,
}

impl From<&Loan> for LoanPreview {
    fn from(loan: &Loan) -> Self {
        LoanPreview { at: loan.at }
    }
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "libraries")]
pub struct Library {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub library_id: Ref<Library>,
    #[subset(of = Loan, max = 3, sortt = "-at")]
    pub active_loans: Vec<LoanPreview>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "loans")]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    pub at: DateTime,
}

fn main() {
    let member = Member { id: ObjectId::new(), library_id: Ref::new(ObjectId::new()), active_loans: vec![] };
    let _ = member.to_ref();
    let _ = Member::ACTIVE_LOANS.path();
    let _ = Member::LIBRARY_ID;
    let _ = Loan::MEMBER_ID;
    let _ = (Member::COLLECTION, Member::collection_spec(), Member::validator());
    let _ = mongo_schema::bson::to_document(&member);
}
