//! `T::check` and `LocalValidator` without a server: no allocation beyond the serialization,
//! the `_id` the driver adds, a generic `Document` type (compiled once per instantiation), and
//! the `mongo_schema::testing` helpers.

#[path = "../examples/helpdesk/model.rs"]
mod helpdesk;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use helpdesk::{
    Author, MessagePreview, Status, StatusChange, Ticket, TicketAssignee, TicketCustomer,
};
use mongo_schema::bson::{self, doc};
use mongo_schema::prelude::*;
use mongo_schema::{testing, LocalValidator};
use serde::{Deserialize, Serialize};

/// Counts the allocations of the current thread (the tests of this binary run in parallel).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_of(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

fn ticket() -> Ticket {
    Ticket {
        id: ObjectId::new(),
        subject: "The printer prints blank pages".into(),
        team: "facilities".into(),
        status: Status::Open,
        priority: 2,
        customer: TicketCustomer {
            id: ObjectId::new(),
            name: "Ada".into(),
        },
        assignee: Some(TicketAssignee {
            id: ObjectId::new(),
            name: "Grace".into(),
        }),
        tags: vec![Ref::new("printer".to_owned())],
        history: (0..5)
            .map(|i| StatusChange {
                status: Status::Pending,
                at: DateTime::from_millis(i),
            })
            .collect(),
        last_message: Some(MessagePreview {
            from: Author::Customer,
            preview: "still blank".into(),
            at: DateTime::from_millis(9),
        }),
        message_count: 3,
        updated_at: DateTime::from_millis(10),
    }
}

#[test]
fn a_check_allocates_nothing_beyond_the_serialization() {
    let ticket = ticket();
    Ticket::check(&ticket).unwrap(); // compiles the validator once
    let raw = bson::to_raw_document_buf(&ticket).unwrap();
    let local = LocalValidator::new(&Ticket::validator()).unwrap();
    local.check_raw(&raw).unwrap();

    assert_eq!(
        allocations_of(|| local.check_raw(&raw).unwrap()),
        0,
        "check_raw of a valid document"
    );
    let serializing = allocations_of(|| drop(bson::to_raw_document_buf(&ticket).unwrap()));
    let checking = allocations_of(|| Ticket::check(&ticket).unwrap());
    assert!(serializing > 0);
    assert_eq!(
        checking, serializing,
        "T::check allocates what serializing does"
    );

    // control: the counter sees the allocations of a refusal (its failures are built)
    let mut broken = ticket.clone();
    broken.priority = 9;
    let refusing = allocations_of(|| {
        let error = Ticket::check(&broken).unwrap_err();
        assert_eq!(error.as_validation().unwrap().failures[0].rule, "maximum");
    });
    assert!(refusing > serializing, "{refusing} vs {serializing}");
}

/// A root with no `_id`: the driver's `insert_one` adds one first, and so does `T::check`.
#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[collection(name = "page_views", additional_properties = false)]
pub struct PageView {
    #[schema(max_length = 20)]
    pub path: String,
    pub at: DateTime,
}

#[test]
fn a_root_without_id_is_checked_with_the_id_the_driver_adds() {
    let view = PageView {
        path: "/".into(),
        at: DateTime::now(),
    };
    // serialized, the value has no `_id`; checked, it has the one the driver would add, which
    // the closed validator allows (the unit tests of `schema-core` show a validator requiring
    // it refusing the value without it)
    let raw = bson::to_raw_document_buf(&view).unwrap();
    assert!(!raw.as_bytes().windows(4).any(|w| w == b"_id\0"));
    PageView::check(&view).unwrap();
    let long = PageView {
        path: "/".repeat(21),
        ..view
    };
    testing::assert_invalid(&long, "path", "maxLength");
    assert_eq!(
        testing::failures(&long),
        [("path".to_owned(), "maxLength".to_owned())]
    );
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug)]
pub struct Reading {
    #[schema(minimum = 0)]
    pub celsius: i32,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug)]
pub struct Label {
    #[schema(max_length = 3)]
    pub text: String,
}

/// A generic collection root: each instantiation has its own validator, compiled once.
#[derive(Document, Serialize, Deserialize, Clone, Debug)]
#[collection(name = "entries")]
pub struct Entry<T: BsonSchema> {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub value: T,
}

#[test]
fn each_instantiation_of_a_generic_document_has_its_own_validator() {
    let reading = Entry {
        id: ObjectId::new(),
        value: Reading { celsius: -4 },
    };
    let label = Entry {
        id: ObjectId::new(),
        value: Label {
            text: "long".into(),
        },
    };
    testing::assert_invalid(&reading, "value.celsius", "minimum");
    testing::assert_invalid(&label, "value.text", "maxLength");
    testing::assert_valid(&Entry {
        id: ObjectId::new(),
        value: Reading { celsius: 20 },
    });
    testing::assert_valid(&Entry {
        id: ObjectId::new(),
        value: Label { text: "ok".into() },
    });
}

#[test]
#[should_panic(
    expected = "expected a valid `tickets` document, but document failed validation in `tickets`"
)]
fn assert_valid_names_the_failures() {
    let mut ticket = ticket();
    ticket.subject = String::new();
    testing::assert_valid(&ticket);
}

#[test]
#[should_panic(expected = "found `priority` fails `maximum`")]
fn assert_invalid_says_what_it_found_instead() {
    let mut ticket = ticket();
    ticket.priority = 4;
    testing::assert_invalid(&ticket, "subject", "minLength");
}

#[test]
fn a_validator_mongod_refuses_is_refused_with_mongods_rule() {
    let error = LocalValidator::new(
        &doc! { "$jsonSchema": { "properties": { "a": { "maxLength": -1 } } } },
    )
    .unwrap_err()
    .to_string();
    assert!(
        // display-text: a SchemaError is its problems in words; this one names mongod's rule
        error.contains("maxLength") && error.contains("non-negative"),
        "{error}"
    );
}

#[path = "../examples/products/model.rs"]
mod products;

#[path = "../examples/followers/model.rs"]
mod followers;

mod generated_values_of_the_example_models {
    //! Every generated value of every example model (help desk, products, followers) passes
    //! `T::check`, within the bounds its attributes declare and at them; one past a bound, it
    //! is refused naming that path and rule.

    use super::{followers, helpdesk, products};
    use mongo_schema::prelude::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn text(min: usize, max: usize) -> impl Strategy<Value = String> {
        proptest::string::string_regex(&format!("[a-zA-Z0-9 éü日-]{{{min},{max}}}")).unwrap()
    }

    fn date() -> impl Strategy<Value = DateTime> {
        (0i64..4_102_444_800_000).prop_map(DateTime::from_millis)
    }

    fn status() -> impl Strategy<Value = helpdesk::Status> {
        prop_oneof![
            Just(helpdesk::Status::Open),
            Just(helpdesk::Status::Pending),
            Just(helpdesk::Status::Closed)
        ]
    }

    fn author() -> impl Strategy<Value = helpdesk::Author> {
        prop_oneof![
            Just(helpdesk::Author::Customer),
            Just(helpdesk::Author::Agent)
        ]
    }

    prop_compose! {
        fn ticket()(
            subject in text(1, 200), team in text(0, 20), status in status(), priority in 0i32..=3,
            customer in text(1, 120), assignee in proptest::option::of(text(1, 120)),
            tags in vec("[a-z]{1,32}", 0..=10),
            history in vec((status(), date()), 0..=50),
            last in proptest::option::of((author(), text(0, 80), date())),
            message_count in any::<i64>(), updated_at in date(),
        ) -> helpdesk::Ticket {
            helpdesk::Ticket {
                id: ObjectId::new(), subject, team, status, priority,
                customer: helpdesk::TicketCustomer { id: ObjectId::new(), name: customer },
                assignee: assignee.map(|name| helpdesk::TicketAssignee { id: ObjectId::new(), name }),
                tags: tags.into_iter().map(Ref::new).collect(),
                history: history.into_iter().map(|(status, at)| helpdesk::StatusChange { status, at }).collect(),
                last_message: last.map(|(from, preview, at)| helpdesk::MessagePreview { from, preview, at }),
                message_count, updated_at,
            }
        }
    }

    prop_compose! {
        fn products_embedded()(
            name in text(1, 80),
            parts in vec(("[a-z0-9-]{1,20}", text(1, 80)), 0..=50),
        ) -> products::ProductEmbedded {
            products::ProductEmbedded {
                id: "bike".into(), name,
                parts: parts.into_iter().map(|(part_id, name)| products::EmbeddedPart { part_id, name }).collect(),
            }
        }
    }

    prop_compose! {
        fn message()(
            from in author(), body in text(0, 300),
            attachments in vec((text(1, 255), text(0, 30), 0i64..i64::MAX, text(0, 60)), 0..=20),
            at in date(),
        ) -> helpdesk::Message {
            helpdesk::Message {
                id: ObjectId::new(), ticket_id: Ref::new(ObjectId::new()), from,
                author_id: ObjectId::new(), body,
                attachments: attachments.into_iter().map(|(file_name, content_type, size, url)| {
                    helpdesk::Attachment { file_name, content_type, size, url }
                }).collect(),
                at,
            }
        }
    }

    /// `s` (within its bound) padded to exactly `len` characters (code points, as `maxLength`
    /// counts them).
    fn chars(s: &str, len: usize) -> String {
        s.chars().chain(std::iter::repeat('x')).take(len).collect()
    }

    /// `items` repeated (or `filler` when empty) to exactly `len` items.
    fn items<T: Clone>(items: &[T], filler: T, len: usize) -> Vec<T> {
        let pool = if items.is_empty() {
            vec![filler]
        } else {
            items.to_vec()
        };
        pool.iter().cycle().take(len).cloned().collect()
    }

    /// `value`'s failures are exactly `expected`: the one bound it was pushed past.
    fn refused<T: Document + serde::Serialize + 'static>(
        value: &T,
        path: &str,
        rule: &str,
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            mongo_schema::testing::failures(value),
            vec![(path.to_owned(), rule.to_owned())],
            "`{}` pushed one past its `{}`",
            path,
            rule
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

        /// The negative half: each generated value, taken to a bound, passes; one past it (an
        /// array one item over `max`, a string one character over `max_length`, a number one
        /// under `minimum` or over `maximum`), it is refused with that path and rule only. A
        /// `check` that accepted everything would fail here.
        #[test]
        fn one_past_each_bound_is_refused(t in ticket(), m in message(), p in products_embedded(), ids in vec("[a-z0-9-]{1,20}", 0..=200)) {
            let tag = Ref::new("t".to_owned());
            let change = helpdesk::StatusChange { status: helpdesk::Status::Open, at: DateTime::from_millis(0) };

            let mut at = t.clone();
            at.tags = items(&t.tags, tag.clone(), 10);
            at.history = items(&t.history, change.clone(), 50);
            at.subject = chars(&t.subject, 200);
            at.priority = 3;
            prop_assert!(helpdesk::Ticket::check(&at).is_ok(), "{:?}", helpdesk::Ticket::check(&at));

            let mut past = t.clone();
            past.tags = items(&t.tags, tag, 11);
            refused(&past, "tags", "maxItems")?;
            let mut past = t.clone();
            past.history = items(&t.history, change, 51);
            refused(&past, "history", "maxItems")?;
            let mut past = t.clone();
            past.subject = chars(&t.subject, 201);
            refused(&past, "subject", "maxLength")?;
            let mut past = t.clone();
            past.subject = String::new();
            refused(&past, "subject", "minLength")?;
            let mut past = t.clone();
            past.priority = -1;
            refused(&past, "priority", "minimum")?;
            let mut past = t.clone();
            past.priority = 4;
            refused(&past, "priority", "maximum")?;
            if let Some(last) = &t.last_message {
                let mut past = t.clone();
                past.last_message = Some(helpdesk::MessagePreview { preview: chars(&last.preview, 81), ..last.clone() });
                refused(&past, "lastMessage.preview", "maxLength")?;
            }

            let attachment = helpdesk::Attachment { file_name: "a".into(), content_type: String::new(), size: 0, url: String::new() };
            let mut at = m.clone();
            at.attachments = items(&m.attachments, attachment.clone(), 20);
            prop_assert!(helpdesk::Message::check(&at).is_ok(), "{:?}", helpdesk::Message::check(&at));
            let mut past = m.clone();
            past.attachments = items(&m.attachments, attachment.clone(), 21);
            refused(&past, "attachments", "maxItems")?;
            let mut past = m.clone();
            past.body = chars(&m.body, 20_001);
            refused(&past, "body", "maxLength")?;
            let mut past = m.clone();
            past.attachments = vec![helpdesk::Attachment { size: -1, ..attachment.clone() }];
            refused(&past, "attachments.0.size", "minimum")?;
            let mut past = m.clone();
            past.attachments = vec![helpdesk::Attachment { file_name: chars("", 256), ..attachment }];
            refused(&past, "attachments.0.fileName", "maxLength")?;

            let part = products::EmbeddedPart { part_id: "p".into(), name: "n".into() };
            let mut at = p.clone();
            at.parts = items(&p.parts, part.clone(), 50);
            prop_assert!(products::ProductEmbedded::check(&at).is_ok());
            let mut past = p.clone();
            past.parts = items(&p.parts, part, 51);
            refused(&past, "parts", "maxItems")?;
            let referenced = products::ProductReferenced {
                id: "bike".into(), name: "bike".into(),
                part_ids: items(&ids.into_iter().map(Ref::new).collect::<Vec<_>>(), Ref::new("p".into()), 201),
            };
            refused(&referenced, "partIds", "maxItems")?;
            let name = products::Part { id: "p-1".into(), name: chars(&p.name, 81) };
            refused(&name, "name", "maxLength")?;
        }

        #[test]
        fn help_desk(t in ticket(), m in message(), name in text(1, 120), email in text(0, 254), team in text(0, 20), key in "[a-z-]{1,32}", label in text(0, 40)) {
            prop_assert!(helpdesk::Ticket::check(&t).is_ok(), "{:?}", helpdesk::Ticket::check(&t));
            prop_assert!(helpdesk::Message::check(&m).is_ok(), "{:?}", helpdesk::Message::check(&m));
            let customer = helpdesk::Customer { id: ObjectId::new(), name: name.clone(), email };
            prop_assert!(helpdesk::Customer::check(&customer).is_ok());
            let agent = helpdesk::Agent { id: ObjectId::new(), name, team };
            prop_assert!(helpdesk::Agent::check(&agent).is_ok());
            let tag = helpdesk::Tag { key, label };
            prop_assert!(helpdesk::Tag::check(&tag).is_ok());
        }

        #[test]
        fn products_and_followers(
            name in text(1, 80),
            parts in vec(("[a-z0-9-]{1,20}", text(1, 80)), 0..=50),
            ids in vec("[a-z0-9-]{1,20}", 0..=200),
            user in text(0, 60),
        ) {
            let part = products::Part { id: "p-1".into(), name: name.clone() };
            prop_assert!(products::Part::check(&part).is_ok());
            let embedded = products::ProductEmbedded {
                id: "bike".into(), name: name.clone(),
                parts: parts.iter().map(|(id, name)| products::EmbeddedPart { part_id: id.clone(), name: name.clone() }).collect(),
            };
            prop_assert!(products::ProductEmbedded::check(&embedded).is_ok(), "{:?}", products::ProductEmbedded::check(&embedded));
            let referenced = products::ProductReferenced {
                id: "bike".into(), name: name.clone(),
                part_ids: ids.iter().cloned().map(Ref::new).collect(),
            };
            prop_assert!(products::ProductReferenced::check(&referenced).is_ok());
            let hybrid = products::ProductHybrid {
                id: "bike".into(), name,
                parts: parts.iter().map(|(id, name)| products::Part { id: id.clone(), name: name.clone() }).map(|p| products::ProductHybridParts::from(&p)).collect(),
            };
            prop_assert!(products::ProductHybrid::check(&hybrid).is_ok(), "{:?}", products::ProductHybrid::check(&hybrid));
            let follow = followers::Follow {
                id: ObjectId::new(),
                followed_id: Ref::new("u2".into()),
                follower_id: Ref::new("u1".into()),
                at: DateTime::from_millis(1_700_000_000_000),
            };
            prop_assert!(followers::Follow::check(&follow).is_ok());
            let follower = followers::User {
                id: "u1".into(),
                name: user,
                follower_count: 1,
                newest_followers: vec![followers::FollowerPreview::from(&follow)],
            };
            prop_assert!(followers::User::check(&follower).is_ok());
            let spec = products::ProductSpec { id: "bike".into(), sheet: "spec ".repeat(100) };
            prop_assert!(products::ProductSpec::check(&spec).is_ok());
        }
    }
}
