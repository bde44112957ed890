use mongo_schema::prelude::*;

// The outer array is bounded, but every row is itself an unbounded array.
#[derive(BsonSchema)]
pub struct Grid {
    #[embed(max = 3)]
    pub rows: Vec<Vec<i32>>,
}

fn main() {}
