//! `#[extended_ref(...)]` on a field: the options it needs, their values, the fields it copies
//! and the type of the field. Each case is a module named by its rule, with its own `Ticket` (or
//! `Group`) holding a copy of the shared `Customer`.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

/// The case's `Ticket`, a collection root with the fields it is given.
macro_rules! ticket {
    ($($fields:tt)*) => {
        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "tickets")]
        pub struct Ticket { $($fields)* }
    };
}

/// `#[extended_ref]` needs its options: `to`, `fields` and `sync`.
mod bare_attribute {
    use super::*;

    ticket! {
        #[extended_ref]
        pub customer: TicketCustomer,
    }
}

/// `to`, the referenced type, is required.
mod missing_to {
    use super::*;

    ticket! {
        #[extended_ref(fields = "name", sync = "transactional")]
        pub customer: TicketCustomer,
    }
}

/// `fields` names at least one field of the source.
mod empty_fields {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "", sync = "async")]
        pub customer: TicketCustomer,
    }
}

/// `sync`, how the copy follows its source, is required.
mod missing_sync {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name")]
        pub customer: TicketCustomer,
    }
}

/// `sync` is one of "frozen", "transactional", "async" and "reconcile".
mod unknown_sync {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "eventually")]
        pub customer: TicketCustomer,
    }
}

/// Each option is given once.
mod duplicate_sync {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "async", sync = "frozen")]
        pub customer: TicketCustomer,
    }
}

/// The options are `to`, `fields`, `sync`, `as`, `max` and `on_delete`.
mod unknown_extended_ref_option {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "async", strategy = "async")]
        pub customer: TicketCustomer,
    }
}

/// The copy always holds the source's `_id`: `fields` lists the others.
mod id_in_fields {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "id, name", sync = "frozen")]
        pub customer: TicketCustomer,
    }
}

/// `fields` lists a field once.
mod field_listed_twice {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name, name", sync = "frozen")]
        pub reporter: TicketReporter,
    }
}

/// `fields` names stored fields of the source.
mod unknown_field {
    use super::*;

    // written out: built by `ticket!`, the derive's check of `fields` could not name a local it
    // declares (macro hygiene: one more error, E0425)
    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "tickets")]
    pub struct Ticket {
        #[extended_ref(to = Customer, fields = "nmae", sync = "transactional")]
        pub customer: TicketCustomer,
    }
}

/// The field's type is the copy type the derive generates, not the source.
mod wrong_field_type {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
        pub customer: Customer,
    }
}

/// `max` bounds an array of copies, not a single one.
mod max_on_single {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "async", max = 1)]
        pub customer: TicketCustomer,
    }
}

/// A field is one kind of relationship: not embedded and a copy.
mod embed_and_extended_ref {
    use super::*;

    ticket! {
        #[embed(max = 3)]
        #[extended_ref(to = Customer, fields = "name", sync = "async")]
        pub customer: TicketCustomer,
    }
}

/// `on_delete` is "keep" or "unset".
mod unknown_on_delete {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "async", on_delete = "cascade")]
        pub customer: Option<TicketCustomer>,
    }
}

/// `on_delete` is given once.
mod duplicate_on_delete {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "async", on_delete = "keep", on_delete = "unset")]
        pub customer: Option<TicketCustomer>,
    }
}

/// `on_delete = "unset"` sets the copy to null: an `Option` field.
mod on_delete_unset_not_option {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "transactional", on_delete = "unset")]
        pub customer: TicketCustomer,
    }
}

/// A frozen copy is a snapshot that deleting its source does not change: no `on_delete`.
mod on_delete_unset_frozen {
    use super::*;

    ticket! {
        #[extended_ref(to = Customer, fields = "name", sync = "frozen", on_delete = "unset")]
        pub customer: Option<TicketCustomer>,
    }
}

/// A group's copies of its members are an array: it needs a bound, `max`.
mod array_without_max {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "groups")]
    pub struct Group {
        #[extended_ref(to = Customer, fields = "name", sync = "reconcile")]
        pub members: Vec<GroupMembers>,
    }
}

/// `on_delete = "unset"` sets a copy to null: not an element of an array of copies.
mod on_delete_unset_on_vec {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "groups")]
    pub struct Group {
        #[extended_ref(to = Customer, fields = "name", sync = "async", max = 20, on_delete = "unset")]
        pub members: Vec<GroupMembers>,
    }
}

/// A copy is stored under a field's name: an embedded struct's named field holds one (`Invoice`),
/// a tuple struct's field cannot.
mod on_bson_schema {
    use super::*;

    #[derive(BsonSchema, Serialize, Deserialize)]
    pub struct Invoice {
        pub number: String,
        #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
        pub customer: InvoiceCustomer,
    }

    #[derive(BsonSchema, Serialize, Deserialize)]
    pub struct Billed(
        pub String,
        #[extended_ref(to = Customer, fields = "name", sync = "transactional")] pub String,
    );
}

fn main() {}
