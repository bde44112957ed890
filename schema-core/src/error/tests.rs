use super::*;

#[test]
fn transient_errors_are_the_ones_a_retry_may_cure() {
    let io = Error::Driver(mongodb::error::Error::from(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "reset by peer",
    )));
    assert!(io.is_transient(), "{io}");
    let timeout = Error::Timeout {
        operation: "the transaction".into(),
        after: Duration::from_secs(1),
        last: None,
    };
    assert!(timeout.is_transient());
    // the control: errors a retry cannot cure
    let refused = Error::BoundExceeded {
        path: "tickets.tags".into(),
        max: 2,
        attempted: 3,
    };
    assert!(!refused.is_transient() && !refused.is_duplicate_key());
    let lost = Error::ConditionFailed {
        collection: "books".into(),
        label: "compare_and_set books.copies".into(),
        position: None,
        rollback: Rollback::NothingWritten,
    };
    assert!(lost.is_condition_failed() && !lost.is_transient());
    assert!(!refused.is_condition_failed());
    let contended = Error::Contended {
        operation: "apply".into(),
        attempts: 5,
    };
    assert!(contended.is_transient());
    let other = Error::Driver(mongodb::error::Error::custom("something else"));
    assert!(
        !other.is_transient(),
        "an unnamed driver error is not assumed transient"
    );
    let in_migration = Error::Migration {
        version: 2,
        name: "dedupe".into(),
        source: Box::new(io),
    };
    assert!(in_migration.is_transient(), "a migration's transient cause");
}

#[test]
fn debug_shows_the_sentence_and_the_alternate_form_the_structure() {
    let schema = Error::Schema(SchemaError {
        problems: vec![
            "`loans.member_id` references `Member`, which is not part of the schema".into(),
        ],
    });
    let debug = format!("{schema:?}");
    assert_eq!(debug, schema.to_string());
    assert!(
        debug.starts_with("invalid schema: `loans.member_id`"),
        "{debug}"
    );
    assert!(format!("{schema:#?}").starts_with("Schema("));
    let refused = Error::BoundExceeded {
        path: "tickets.tags".into(),
        max: 2,
        attempted: 3,
    };
    assert_eq!(format!("{refused:?}"), refused.to_string());
    assert!(format!("{refused:#?}").starts_with("BoundExceeded {"));
    let downgrade = Error::Downgrade {
        recorded: 5,
        applying: 4,
    };
    assert_eq!(format!("{downgrade:?}"), downgrade.to_string());
    assert!(format!("{downgrade:#?}").contains("recorded: 5"));
}

/// Each variant's `source()`: the error it keeps, and none for the refusals that keep
/// none.
#[test]
fn every_variant_gives_the_source_it_keeps() {
    use std::error::Error as _;
    let driver = || mongodb::error::Error::custom("the driver's error");
    let same = |source: Option<&(dyn std::error::Error + 'static)>, expected: &str| {
        assert_eq!(source.map(ToString::to_string).as_deref(), Some(expected));
    };
    let driver_text = driver().to_string();

    // validation: the ValidationError, whose own source is the driver's error
    let mut validation = ValidationError::from_err_info(&mongodb::bson::Document::new());
    assert!(
        validation.source().is_none(),
        "a local failure keeps no driver error"
    );
    validation.driver = Some(Box::new(driver()));
    let error = Error::Validation(Box::new(validation));
    let source = error.source().expect("the validation error");
    assert!(source.downcast_ref::<ValidationError>().is_some());
    same(source.source(), &driver_text);

    let schema = Error::Schema(SchemaError {
        problems: vec!["x".into()],
    });
    assert!(schema
        .source()
        .unwrap()
        .downcast_ref::<SchemaError>()
        .is_some());
    for error in [
        Error::Apply {
            action: "create".into(),
            source: driver(),
        },
        Error::Duplicate {
            collection: "c".into(),
            index: "i".into(),
            key: "k".into(),
            source: Box::new(driver()),
        },
        Error::Driver(driver()),
    ] {
        let source = error.source().expect("the driver's error");
        assert!(
            source.downcast_ref::<mongodb::error::Error>().is_some(),
            "{error}"
        );
    }

    let last = || Some(Box::new(Error::Driver(driver())));
    for error in [
        Error::Timeout {
            operation: "t".into(),
            after: Duration::from_secs(1),
            last: last(),
        },
        Error::CommitUnknown {
            operation: "transaction".into(),
            cause: CommitUnknownCause::UnknownCommitResult,
            last: last(),
        },
        Error::Worker {
            kind: WorkerStop::Unauthorized,
            detail: String::new(),
            source: last(),
        },
        Error::Migration {
            version: 2,
            name: "m".into(),
            source: last().unwrap(),
        },
    ] {
        let source = error.source().expect("the error underneath");
        assert!(
            matches!(source.downcast_ref::<Error>(), Some(Error::Driver(_))),
            "{error}"
        );
    }
    // without one underneath
    for error in [
        Error::Timeout {
            operation: "t".into(),
            after: Duration::from_secs(1),
            last: None,
        },
        Error::CommitUnknown {
            operation: "transaction".into(),
            cause: CommitUnknownCause::Deadline {
                after: Duration::from_secs(1),
            },
            last: None,
        },
        Error::worker(WorkerStop::FencedOff, ""),
    ] {
        assert!(error.source().is_none(), "{error}");
    }

    // serialization: the bson crate's error itself
    let ser = crate::bson_compat::to_document(&1_i32).unwrap_err();
    let error = Error::serialization("a number", ser.clone());
    let source = error.source().expect("the bson error");
    assert!(source
        .downcast_ref::<crate::bson_compat::SerError>()
        .is_some());
    same(Some(source), &ser.to_string());
    let de =
        crate::bson_compat::from_document::<String>(mongodb::bson::Document::new()).unwrap_err();
    let error = Error::from(de);
    assert!(error
        .source()
        .and_then(|s| s.downcast_ref::<crate::bson_compat::DeError>())
        .is_some());
    // a driver error of a value that does not serialize is the same variant under bson 2;
    // under bson 3 the driver keeps it in `ErrorKind::Bson`, a variant that exists only
    // with the driver's `bson-3` feature: named with this crate's `bson-3` feature, else it
    // stays a driver error (the library's own conversions go straight to `Serialization`)
    let error = Error::from(mongodb::error::Error::from(ser));
    if crate::bson_compat::BSON_MAJOR == 2 || cfg!(feature = "bson-3") {
        assert!(matches!(error, Error::Serialization { .. }), "{error:#?}");
    } else {
        assert!(matches!(error, Error::Driver(_)), "{error:#?}");
    }

    // the service's own error: transparent
    let inner = std::io::Error::other("the export is not ready");
    let error = Error::other(inner);
    assert_eq!(error.to_string(), "the export is not ready");
    assert!(error.source().is_none(), "the inner error's own source");
    assert!(error
        .as_other()
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .is_some());
    assert!(!error.is_transient());

    // the refusals keep nothing underneath
    for error in [
        Error::ConditionFailed {
            collection: "c".into(),
            label: "l".into(),
            position: Some(StepPosition::new(1, 2)),
            rollback: Rollback::NothingWritten,
        },
        Error::BoundExceeded {
            path: "p".into(),
            max: 1,
            attempted: 2,
        },
        Error::UnsafeValue {
            what: "w".into(),
            path: String::new(),
            found: UnsafeKind::Array,
        },
        Error::invalid_argument("limit", "0"),
        Error::LockLost {
            lock: LockKind::Apply,
            during: "a step".into(),
        },
        Error::Contended {
            operation: "apply".into(),
            attempts: 5,
        },
        Error::NotServed {
            queries: vec!["q".into()],
        },
        Error::Downgrade {
            recorded: 2,
            applying: 1,
        },
    ] {
        assert!(error.source().is_none(), "{error}");
    }
}

#[test]
fn a_worker_stops_with_the_kind_of_its_error() {
    let command = |code: i32| {
        let reply = mongodb::bson::doc! { "ok": 0, "code": code, "errmsg": "no" };
        let command: mongodb::error::CommandError =
            crate::bson_compat::from_document(reply).expect("a command error");
        Error::Driver(mongodb::error::Error::from(
            mongodb::error::ErrorKind::Command(command),
        ))
    };
    for (code, kind) in [
        (18, WorkerStop::Unauthorized),
        (13, WorkerStop::Unauthorized),
        (40573, WorkerStop::ChangeStreamsUnsupported),
        (72, WorkerStop::Refused),
        (2, WorkerStop::Other),
    ] {
        let stopped = Error::worker_stopped_by(command(code));
        assert!(
            matches!(&stopped, Error::Worker { kind: k, source: Some(_), .. } if *k == kind),
            "{code}: {stopped:#?}"
        );
        assert_eq!(
            stopped.code(),
            Some(code),
            "the driver's error is reachable"
        );
    }
    // a worker error stays as it is
    let fenced = Error::worker_stopped_by(Error::worker(WorkerStop::FencedOff, ""));
    assert!(matches!(
        fenced,
        Error::Worker {
            kind: WorkerStop::FencedOff,
            source: None,
            ..
        }
    ));
}

#[test]
fn a_duplicate_key_message_names_its_collection_index_and_key() {
    assert_eq!(
        duplicate_parts(
            r#"E11000 duplicate key error collection: shop.customers index: email_1 dup key: { email: "ada@example.com" }"#
        ),
        (
            "shop.customers".to_owned(),
            "email_1".to_owned(),
            r#"{ email: "ada@example.com" }"#.to_owned()
        )
    );
    assert_eq!(
        duplicate_parts("E11000 duplicate key error"),
        (String::new(), String::new(), String::new())
    );
}

#[test]
fn a_schema_error_lists_one_problem_per_line() {
    let error = SchemaError {
        problems: vec!["first".into(), "second".into()],
    };
    assert_eq!(
        format!("{error:?}"),
        "invalid schema:\n  - first\n  - second"
    );
    assert_eq!(error.to_string(), "invalid schema: first; second");
    assert!(format!("{error:#?}").starts_with("SchemaError {"));
}
