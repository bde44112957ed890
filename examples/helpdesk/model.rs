//! The help desk of seed 003 ("A worked example: a help desk"), modelled as the seed decides.
//!
//! | relationship              | outcome                                   | why (seed 003)                          |
//! |---------------------------|-------------------------------------------|-----------------------------------------|
//! | ticket - messages         | reference + subset (last message, count)  | unbounded; the queue needs a preview    |
//! | ticket - customer         | extended reference, transactional         | read in the queue, small fan-out        |
//! | ticket - assignee (agent) | extended reference, async                 | thousands of tickets per agent          |
//! | ticket - tags             | bounded array of tag keys + tags collection | many-to-many, bounded on the ticket side |
//! | ticket - status history   | embedded, `$slice` cap                    | bounded in practice, atomic with status |
//! | message - attachments     | embedded metadata                         | bounded, never read without the message |
#![allow(dead_code)]

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// The types stand in two files that the README's and the guide's doc tests include as they are:
// what the docs show is what this example runs.
include!("model/around_ticket.rs");
include!("model/ticket.rs"); // and the schema of them all
