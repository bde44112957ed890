//! The models written through the typed collections and read back equal, on the server.

use super::*;

/// Writes `value` through the typed collection of `T`, reads it back by the id the server
/// reports (the model's own or the one the server assigned) and returns what was read, with the
/// `_id` removed when the model has none. `Ok(None)`: a generated id was already taken.
async fn write_and_read<T>(db: &mongodb::Database, value: &T) -> Result<Option<T>, String>
where
    T: mongo_schema::Document + Serialize + serde::de::DeserializeOwned + Send + Sync + Debug,
{
    let typed = T::collection(db);
    let id = match typed.insert_one(value).await.in_collection(T::COLLECTION) {
        Ok(result) => result.inserted_id,
        Err(e) if duplicate(&e) => return Ok(None),
        Err(e) => return Err(format!("{e}\n{value:?}")),
    };
    let read = typed
        .find_one(doc! { "_id": id })
        .await
        .map_err(|e| format!("{e}\n{value:?}"))?
        .ok_or_else(|| format!("not found: {value:?}"))?;
    Ok(Some(read))
}

/// One value of every model.
type AllModels = (
    (
        User,
        AuditEvent,
        Notification,
        Contact,
        Job,
        Member,
        Profile,
    ),
    (
        Preferences,
        Invoice,
        PageView,
        Comment,
        Payment,
        Ticket,
        TenantSettings,
    ),
    Reminder,
    (Activity, CatalogItem, Shipment),
);

/// Every value of every model, written and read back.
async fn round_trip_all(db: &mongodb::Database, values: AllModels) -> Result<(), TestCaseError> {
    let ((user, audit, notification, contact, job, member, profile), rest, reminder, probes) =
        values;
    let (activity, catalog_item, shipment) = probes;
    let (preferences, invoice, page_view, comment, payment, ticket, settings) = rest;
    macro_rules! check {
        ($value:expr) => {{
            let value = $value;
            match write_and_read(db, &value)
                .await
                .map_err(TestCaseError::fail)?
            {
                Some(read) => prop_assert_eq!(read, value),
                None => {}
            }
        }};
    }
    check!(user);
    check!(audit);
    // no `_id` in the kinds: serde ignores the server's `_id` when reading back
    check!(notification);
    check!(contact);
    check!(job);
    check!(member);
    check!(profile);
    check!(preferences);
    check!(invoice);
    // no `_id` field: read back by the id the server assigned
    check!(page_view);
    // `None` is not written: the server assigns the id, read back as `Some(id)`
    {
        let typed = Comment::collection(db);
        let id = typed
            .insert_one(&comment)
            .await
            .in_collection(Comment::COLLECTION)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{comment:?}")))?
            .inserted_id;
        let read = typed.find_one(doc! { "_id": &id }).await.unwrap().unwrap();
        let expected = Comment {
            id: Some(id.as_object_id().expect("an ObjectId")),
            ..comment
        };
        prop_assert_eq!(read, expected);
    }
    check!(payment);
    check!(ticket);
    check!(settings);
    check!(activity);
    check!(catalog_item);
    check!(shipment);
    // a kind whose `_id` is `None`: the server assigns it, read back as `Some(id)`
    {
        let typed = Reminder::collection(db);
        let id = typed
            .insert_one(&reminder)
            .await
            .in_collection(Reminder::COLLECTION)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{reminder:?}")))?
            .inserted_id
            .as_object_id()
            .expect("an ObjectId");
        if let Some(own) = reminder.id() {
            prop_assert_eq!(own, id);
        }
        let read = typed.find_one(doc! { "_id": id }).await.unwrap().unwrap();
        prop_assert_eq!(read, reminder.with_id(id));
    }
    Ok(())
}

#[test]
fn generated_values_of_every_model_are_accepted_and_read_back_equal() {
    let live = live("shapes_ok");
    let accepted = std::cell::Cell::new(0);
    let models = (
        (
            user(),
            audit_event(),
            notification(),
            contact(),
            job(),
            member(),
            profile(),
        ),
        (
            preferences(),
            invoice(),
            page_view(),
            comment(),
            payment(),
            ticket(),
            tenant_settings(),
        ),
        reminder(),
        (activity(), catalog_item(), shipment()),
    );
    proptest!(config(), |(values in models)| {
        live.runtime.block_on(round_trip_all(&live.db, values))?;
        accepted.set(accepted.get() + 1);
    });
    println!(
        "{} generated values of each of the 18 models accepted and read back equal",
        accepted.get()
    );
    assert_eq!(accepted.get(), 40, "every one of the 40 cases");
}

/// Hand-written values: every variant of every enum at least once, whatever the generator draws.
#[test]
fn every_variant_written_by_hand_is_accepted_and_read_back_equal() {
    let live = live("shapes_variants");
    let at = DateTime::from_millis(1_700_000_000_000);
    let users: Vec<User> = [
        EmailStatus::Verified,
        EmailStatus::Pending {
            token: "t".into(),
            expiry: at,
        },
        EmailStatus::Moving {
            new_email: "b@c.io".into(),
            token: "t".into(),
            expiry: at,
        },
    ]
    .into_iter()
    .map(|email_status| User {
        id: ObjectId::new(),
        email: "a@b.io".into(),
        email_status,
        display_name: Some("Ada".into()),
        roles: vec![Role::Admin, Role::Member, Role::Guest],
    })
    .collect();
    let audit = vec![
        AuditEvent::Login {
            id: ObjectId::new(),
            user: "ada".into(),
            at,
            ip: "10.0.0.1".into(),
            mfa: true,
        },
        AuditEvent::PasswordChanged {
            id: ObjectId::new(),
            user: "ada".into(),
            at,
        },
        AuditEvent::RoleGranted {
            id: ObjectId::new(),
            user: "bob".into(),
            role: Role::Admin,
            by: "ada".into(),
            at,
        },
        AuditEvent::DataExported {
            id: ObjectId::new(),
            user: "ada".into(),
            at,
            tables: vec!["users".into(), "orders".into()],
        },
    ];
    let notifications = vec![
        Notification::Mention {
            user_id: 1,
            comment_id: 2,
            read: false,
        },
        Notification::Digest {
            user_id: 1,
            items: vec!["a".into(); 5],
        },
        Notification::System {
            message: "maintenance at noon".into(),
        },
    ];
    let contacts = vec![
        Contact::Person {
            id: 1,
            first: "Ada".into(),
            last: "Lovelace".into(),
        },
        Contact::Company {
            id: 2,
            name: "ACME".into(),
            vat: "DE12345678".into(),
        },
    ];
    let jobs: Vec<Job> = [
        JobState::Queued,
        JobState::Running {
            worker: "w1".into(),
            started_at: at,
        },
        JobState::Failed {
            error: "timeout".into(),
            attempts: u32::MAX,
        },
        JobState::Done { finished_at: at },
    ]
    .into_iter()
    .enumerate()
    .map(|(i, status)| Job {
        id: format!("job{i}"),
        kind: "email".into(),
        status,
        times: Timestamps {
            created_at: at,
            updated_at: at,
        },
    })
    .collect();
    let channels: HashMap<String, Channel> = [
        (
            "work".to_owned(),
            Channel::Email {
                address: "a@b.io".into(),
            },
        ),
        (
            "mobile".to_owned(),
            Channel::Sms {
                phone_number: "+4912345".into(),
            },
        ),
        (
            "phone".to_owned(),
            Channel::Push {
                device_token: "abc".into(),
                show_badge: true,
            },
        ),
        ("fax".to_owned(), Channel::Off),
    ]
    .into_iter()
    .collect();
    let actions = [
        Action::Notify(Channel::Push {
            device_token: "abc".into(),
            show_badge: false,
        }),
        Action::Notify(Channel::Off),
        Action::Webhook {
            url: "https://x.io/hook".into(),
            secret: Some("s3cret".into()),
        },
        Action::Webhook {
            url: "https://x.io/hook".into(),
            secret: None,
        },
        Action::Ignore,
    ];
    let preferences = |on_alert: Action| Preferences {
        id: ObjectId::new(),
        on_alert,
        channels: channels.clone(),
        tags: [
            Tag {
                name: "vip".into(),
                color: Color::Red,
            },
            Tag {
                name: "vip".into(),
                color: Color::Green,
            },
            Tag {
                name: "beta".into(),
                color: Color::Blue,
            },
        ]
        .into_iter()
        .collect(),
    };
    let payments: Vec<Payment> = [
        PaymentMethod::Cash,
        PaymentMethod::Card {
            last4: "4242".into(),
            brand: CardBrand::Amex,
        },
        PaymentMethod::BankTransfer("DE89370400440532013000".into()),
        PaymentMethod::Split(100, -5),
        PaymentMethod::Voucher(Voucher {
            code: "X1".into(),
            value: 5,
        }),
        PaymentMethod::Wallets(vec!["apple".into(), "google".into(), "paypal".into()]),
    ]
    .into_iter()
    .map(|method| Payment {
        id: ObjectId::new(),
        method,
        events: vec![
            PaymentEvent::Created,
            PaymentEvent::Authorized {
                amount: 100,
                currency: "EUR".into(),
            },
            PaymentEvent::Captured(100),
            PaymentEvent::Refunded(5, "damaged".into()),
        ],
        last_event: PaymentEvent::Refunded(5, "damaged".into()),
    })
    .collect();
    let tickets = vec![
        Ticket {
            id: 1,
            title: "a".into(),
            assignee: Some(Assignee::Id(7)),
            priority: Some(Priority::VeryHigh),
            previous_state: Some(JobState::Failed {
                error: "x".into(),
                attempts: 2,
            }),
            reopen_count: 0,
            watchers: vec![Assignee::Id(1), Assignee::Name("bob".into())],
            created_at: at,
            source: Source::Email,
        },
        Ticket {
            id: 2,
            title: "b".into(),
            assignee: Some(Assignee::Name("ada".into())),
            priority: None,
            previous_state: None,
            reopen_count: 3,
            watchers: vec![],
            created_at: at,
            source: Source::Web,
        },
        Ticket {
            id: 3,
            title: "c".into(),
            assignee: None,
            priority: Some(Priority::Low),
            previous_state: Some(JobState::Queued),
            reopen_count: -1,
            watchers: vec![],
            created_at: at,
            source: Source::Other("phone".into()),
        },
    ];
    live.runtime.block_on(async {
        let db = &live.db;
        macro_rules! check_all {
            ($values:expr) => {
                for value in $values {
                    let read = write_and_read(db, &value)
                        .await
                        .unwrap()
                        .expect("a fresh id");
                    assert_eq!(read, value);
                }
            };
        }
        check_all!(users);
        check_all!(audit);
        check_all!(notifications);
        check_all!(contacts);
        check_all!(jobs);
        check_all!([Member {
            id: MemberKey { server: 1, user: 2 },
            nickname: None,
            roles: [1, 2, 3, 4].into_iter().collect(),
            joined_at: at,
        }]);
        check_all!([Profile {
            id: UserId("u_ada".into()),
            handle: Handle("ada".into()),
            referrer: Some(UserId("u_bob".into())),
            location: Some(GeoPoint(52.5, 13.4)),
            friends: vec![UserId("u_bob".into())],
        }]);
        check_all!(actions.into_iter().map(preferences));
        check_all!([Invoice {
            id: 1,
            total: -1205,
            due: DateTime::from_millis(1_700_000_000_000),
            api_version: SemVer {
                major: 1,
                minor: 22,
                patch: 3,
            },
            sku: Sku {
                vendor: "ACME".into(),
                code: "x-1".into(),
            },
        }]);
        check_all!([PageView {
            path: "/".into(),
            at,
            referrers: vec![],
            duration_ms: None,
        }]);
        check_all!([Comment {
            id: Some(ObjectId::new()),
            author: "ada".into(),
            body: "hi".into(),
            likes: 0,
        }]);
        check_all!(payments);
        check_all!(tickets);
        check_all!([TenantSettings {
            id: "t1".into(),
            plan: Role::Guest,
            extra: [("x_a".to_owned(), "1".to_owned())].into_iter().collect(),
        }]);
        let base = ActivityBase {
            actor: "ada".into(),
            at,
        };
        check_all!([
            Activity::Commented {
                id: ObjectId::new(),
                base: base.clone(),
                text: "nice".into(),
                reply_to: Some(ObjectId::new()),
            },
            Activity::Commented {
                id: ObjectId::new(),
                base: base.clone(),
                text: "nice".into(),
                reply_to: None,
            },
            Activity::Liked {
                id: ObjectId::new(),
                base,
            },
        ]);
        let item = |packaging, price, meta| CatalogItem {
            id: ObjectId::new(),
            packaging,
            price,
            attributes: vec![Attr("weight".into(), 3), Attr("colour".into(), -1)],
            warehouse: Some(Box::new(Address {
                city: "Lyon".into(),
            })),
            meta,
        };
        let meta = Some(Meta {
            source: "erp".into(),
            imported_at: at,
        });
        check_all!([
            item(Packaging::Loose, Price::Fixed { amount: 5 }, None),
            item(
                Packaging::InABox(Boxed {
                    label: "A4".into(),
                    size: Dimensions {
                        width: 21.0,
                        height: 29.7,
                    },
                }),
                Price::Range { min: 1, max: 9 },
                meta.clone(),
            ),
            item(
                Packaging::OnPallet {
                    stacked_with: vec![],
                },
                Price::Fixed { amount: -5 },
                meta.clone(),
            ),
            item(
                Packaging::OnPallet {
                    stacked_with: vec!["a".into(), "b".into()],
                },
                Price::Fixed { amount: 0 },
                None,
            ),
        ]);
        check_all!(
            [None, Some(DateTime::from_millis(7_000))].map(|delivered_at| {
                Shipment {
                    id: ShipmentId(ObjectId::new()),
                    tracking: mongo_schema::bson::Uuid::new(),
                    delivered_at,
                    level: Level::Medium,
                }
            })
        );
        check_all!([
            Reminder::OnceAt {
                id: Some(ObjectId::new()),
                user_id: 1,
                at,
            },
            Reminder::Daily {
                id: Some(ObjectId::new()),
                user_id: 1,
                hour: 23,
            },
        ]);
    });
}

#[test]
fn the_index_declared_on_one_kind_is_partial_on_its_tag() {
    let live = live("shapes_index");
    live.runtime.block_on(async {
        use futures_util::TryStreamExt;
        for (collection, keys, partial) in [
            (
                AuditEvent::COLLECTION,
                doc! { "user": 1, "at": -1 },
                doc! { "type": "login" },
            ),
            (
                Reminder::COLLECTION,
                doc! { "user_id": 1, "at": 1 },
                doc! { "kind": "onceAt" },
            ),
        ] {
            let indexes: Vec<_> = live
                .db
                .collection::<BsonDocument>(collection)
                .list_indexes()
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            let index = indexes
                .iter()
                .find(|i| i.keys == keys)
                .unwrap_or_else(|| panic!("{collection}: no index on {keys}: {indexes:?}"));
            let filter = index
                .options
                .as_ref()
                .and_then(|o| o.partial_filter_expression.clone());
            assert_eq!(filter, Some(partial), "{collection}: {index:?}");
        }
    });
}
