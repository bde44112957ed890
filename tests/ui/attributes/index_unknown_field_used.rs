//! One misspelt index key, and the items the derive generates used as if it were right (the
//! relation and subset constants, the embedded array, `to_ref`): one error.
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
#[collection(name = "members")]
#[index(keys(nmae = 1))]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    #[embed(max = 3)]
    pub phones: Vec<String>,
    #[subset(of = Loan, max = 3, sort = "-at")]
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
    let member = Member { id: ObjectId::new(), name: "Ada".into(), phones: vec![], active_loans: vec![] };
    let _: Ref<Member> = member.to_ref();
    let _ = (Member::ACTIVE_LOANS.path(), Member::PHONES.max(), Loan::MEMBER_ID);
    let _ = Member::COLLECTION;
}
