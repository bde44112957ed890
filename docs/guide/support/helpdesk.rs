// The help desk of `examples/helpdesk/model.rs`, for the guide's doc tests
// (`include!("../docs/guide/support/helpdesk.rs")`, a path relative to `src/lib.rs`): the
// example's own files, included as they are.

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

include!("../../../examples/helpdesk/model/around_ticket.rs");
include!("../../../examples/helpdesk/model/ticket.rs");
