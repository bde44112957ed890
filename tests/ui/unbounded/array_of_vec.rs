use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// A fixed-size array is bounded, but its elements are unbounded arrays (type-level check).
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct WeeklyShifts {
    pub agent: String,
    pub shifts_by_day: [Vec<String>; 7],
}

fn main() {}
