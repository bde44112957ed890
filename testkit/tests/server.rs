//! The testkit against a real server: the shared one (MONGODB_URI or embedded SecantusDB) and
//! dedicated `TestServer`s.

use std::path::PathBuf;

use mongo_schema_testkit::{client, database, monitored_client, uri, TestServer};
use mongodb::bson::{doc, Document};

#[tokio::test]
async fn shared_server_answers_ping() {
    let client = client().await;
    let reply = client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");
    let ok = reply.get("ok").and_then(|ok| {
        ok.as_f64()
            .or_else(|| ok.as_i32().map(f64::from))
            .or_else(|| ok.as_i64().map(|v| v as f64))
    });
    assert_eq!(ok, Some(1.0), "{reply}");
    // The same server for the whole process.
    assert_eq!(uri(), uri());
}

#[test]
fn uri_works_outside_any_runtime() {
    let uri = uri();
    assert!(uri.starts_with("mongodb://"), "{uri}");
}

#[tokio::test(flavor = "current_thread")]
async fn uri_works_inside_a_current_thread_runtime() {
    // Blocking, but must not deadlock or need the caller's runtime.
    let uri = uri();
    assert!(uri.starts_with("mongodb://"), "{uri}");
}

#[tokio::test]
async fn databases_are_distinct_and_usable() {
    let a = database("testkit-db").await;
    let b = database("testkit-db").await;
    assert_ne!(a.name(), b.name());
    assert!(a.name().starts_with("testkit_db_"), "{}", a.name());
    assert!(a.name().len() <= 63);

    a.collection::<Document>("c")
        .insert_one(doc! { "in": "a" })
        .await
        .expect("insert");
    assert_eq!(
        a.collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        b.collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn monitored_client_logs_commands() {
    let (client, log) = monitored_client().await;
    let db = client.database(database("testkit_monitor").await.name());
    db.collection::<Document>("c")
        .insert_one(doc! { "x": 1 })
        .await
        .expect("insert");
    assert!(
        log.names().contains(&"insert".to_owned()),
        "{:?}",
        log.names()
    );
    assert_eq!(log.count("insert"), 1);
    let insert = log
        .commands()
        .into_iter()
        .find(|c| c.name == "insert")
        .unwrap();
    assert_eq!(insert.database, db.name());
    assert_eq!(insert.command.get_str("insert").unwrap(), "c");

    log.clear();
    assert!(log.names().is_empty());
    db.collection::<Document>("c")
        .find_one(doc! {})
        .await
        .expect("find");
    assert_eq!(log.names(), ["find"]);
    assert_eq!(log.count("insert"), 0);
}

#[tokio::test]
async fn shared_server_is_a_replica_set_with_transactions() {
    if std::env::var("MONGODB_URI").is_ok_and(|u| !u.is_empty()) {
        return; // the user's server: its topology is the user's business
    }
    let client = client().await;
    let hello = client
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .unwrap();
    assert_eq!(hello.get_str("setName").ok(), Some("secantus"), "{hello}");

    let coll = client
        .database(database("testkit_txn").await.name())
        .collection::<Document>("c");
    coll.insert_one(doc! { "_id": 0 }).await.unwrap(); // create the collection outside the txn
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.insert_one(doc! { "_id": 1 })
        .session(&mut session)
        .await
        .unwrap();
    session.abort_transaction().await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mongo-schema-testkit-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn test_server_keeps_data_and_port_across_restart() {
    let storage = temp_dir("restart");
    let mut server = TestServer::start(Some(&storage)).expect("start");
    let port = server.port();
    assert_eq!(
        server.uri(),
        format!("mongodb://127.0.0.1:{port}/?directConnection=true")
    );
    assert!(server.is_running());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let uri = server.uri().to_owned();
    rt.block_on(async {
        let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
        client
            .database("keep")
            .collection::<Document>("c")
            .insert_one(doc! { "_id": 1, "v": "kept" })
            .await
            .unwrap();
    });

    server.restart().expect("restart");
    assert_eq!(server.port(), port);
    assert_eq!(server.uri(), uri);
    assert!(server.is_running());

    rt.block_on(async {
        let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
        let doc = client
            .database("keep")
            .collection::<Document>("c")
            .find_one(doc! { "_id": 1 })
            .await
            .unwrap()
            .expect("the document survives the restart");
        assert_eq!(doc.get_str("v").unwrap(), "kept");
    });

    server.stop();
    assert!(!server.is_running());
    // Stopped means gone: nothing accepts connections on the port any more.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    drop(server);
    let _ = std::fs::remove_dir_all(&storage);
}

#[tokio::test]
async fn in_memory_test_server_starts_empty_after_restart() {
    // Also: TestServer::start is fine to call from inside a runtime.
    let mut server = TestServer::start(None).expect("start");
    assert!(server.storage().is_none());
    let client = mongodb::Client::with_uri_str(server.uri()).await.unwrap();
    let coll = client.database("mem").collection::<Document>("c");
    coll.insert_one(doc! { "x": 1 }).await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);

    let port = server.port();
    server.restart().expect("restart");
    assert_eq!(server.port(), port);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
}
