use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

// no index orders a member's loans: `Loan::MEMBER_ID` has no pages
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "loans")]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    pub loaned_at: DateTime,
}

fn main() {
    let member: Ref<Member> = Ref::new(ObjectId::new());
    let _page = Loan::MEMBER_ID.page(&member);
}
