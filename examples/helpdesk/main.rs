//! The help desk of seed 003, end to end: schema applied, a few thousand tickets seeded, the four
//! frequent operations run, then an agent renamed and the copies followed until they converge.
//!
//! ```text
//! cargo run --example helpdesk                       # embedded SecantusDB test server
//! MONGODB_URI=mongodb://localhost:27017 cargo run --example helpdesk
//! ```
//!
//! The service's binary also carries the schema commands (`mongo_schema::cli`, feature `cli`),
//! run against the demo's database unless `--uri` / `--db` say otherwise:
//!
//! ```text
//! cargo run --example helpdesk -- schema plan        # exit 2 while there is work
//! cargo run --example helpdesk -- schema apply
//! cargo run --example helpdesk -- schema status --json
//! cargo run --example helpdesk -- schema report --format html > helpdesk.html
//! ```

mod model;
mod seed;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

use model::*;
use mongo_schema::bson::{doc, DateTime};
use mongo_schema::explain;
use mongo_schema::prelude::*;

const TICKETS: usize = 4000;

fn section(title: &str) {
    println!(
        "\n── {title} {}",
        "─".repeat(72usize.saturating_sub(title.len()))
    );
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The help desk service.
#[derive(Parser)]
struct App {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Schema operations: plan, apply, status, report, audit, reconcile, ...
    #[command(subcommand)]
    Schema(mongo_schema::cli::SchemaCommand),
}

#[tokio::main]
async fn main() -> ExitCode {
    // an argument error exits 1 (an error), not clap's 2, which the schema commands keep for
    // "work pending"
    let app = match App::try_parse() {
        Ok(app) => app,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match app.command {
        Some(Command::Schema(mut command)) => {
            if let Some(connection) = command.connection_mut() {
                // the demo's own server and database, unless told otherwise
                connection.uri.get_or_insert_with(mongo_schema_testkit::uri);
                connection
                    .db
                    .get_or_insert_with(|| "mongo_schema_helpdesk".to_owned());
            }
            mongo_schema::cli::run(&model::schema(), command).await
        }
        None => match demo().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        },
    }
}

async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    let uri = mongo_schema_testkit::uri();
    let client = mongodb::Client::with_uri_str(&uri).await?;
    let db = client.database("mongo_schema_helpdesk");
    db.drop().await?; // the demo's own database: start from nothing
    let schema = model::schema();

    section("schema");
    let started = Instant::now();
    let report = schema.apply(&db).await?;
    print!("{report}");
    println!("applied in {}; a second start-up:", ms(started.elapsed()));
    print!("{}", schema.apply(&db).await?);
    println!("copied fields and how each stays in sync:");
    for edge in &schema.sync_graph().edges {
        println!(
            "  {}.{{{}}} -> {}.{} ({})",
            edge.copy.source,
            edge.copy.fields.join(", "),
            edge.holder,
            edge.copy.path,
            edge.copy.strategy
        );
    }

    section("seed");
    let started = Instant::now();
    let seeded = seed::seed(&db, TICKETS).await?;
    println!(
        "{} tickets, {} messages, {} customers, {} agents, {} tags in {}",
        seeded.tickets.len(),
        seeded.messages,
        seeded.customers.len(),
        seeded.agents.len(),
        seeded.tags.len(),
        ms(started.elapsed())
    );

    section("the queries, proven by explain (every declared one and every one the library sends)");
    let proof = schema.prove(&db).await?;
    print!("{proof}");
    // on mongod a blocking sort or another index fails the demo; SecantusDB can only say so
    proof.into_result()?;

    section("1. the agent queue: open billing tickets by priority, then last update");
    // declared with `#[query(name = "agent_queue", ...)]`: typed arguments, the declared sort,
    // the query's name as the command's `comment`
    let started = Instant::now();
    let queue: Vec<Ticket> = Ticket::agent_queue(&db, "billing", &Status::Open)
        .limit(10)
        .await?;
    let took = started.elapsed();
    for t in &queue {
        let tags: Vec<&str> = t.tags.iter().map(|t| t.id().as_str()).collect();
        println!(
            "  p{} {:<30} {:<14} {:<14} [{}] {:?}: {}…",
            t.priority,
            t.subject,
            t.customer.name,
            t.assignee
                .as_ref()
                .map_or("(unassigned)", |a| a.name.as_str()),
            tags.join(","),
            t.last_message
                .as_ref()
                .map(|m| m.from)
                .unwrap_or(Author::Customer),
            t.last_message
                .as_ref()
                .map_or("", |m| &m.preview[..m.preview.len().min(32)])
        );
    }
    let plan = Ticket::agent_queue(&db, "billing", &Status::Open)
        .limit(10)
        .explain()
        .await?;
    println!(
        "one query, one collection, no $lookup: {} ({})",
        ms(took),
        plan
    );

    section("2. the ticket view: the ticket, then a page of its messages");
    let ticket = &queue[0];
    let started = Instant::now();
    let view = Ticket::ticket_view(&db, &ticket.id)
        .await?
        .pop()
        .expect("seeded");
    let page = Message::TICKET_ID
        .page_in(&db, &view.to_ref())
        .limit(20)
        .await?;
    let took = started.elapsed();
    println!(
        "  \"{}\" from {} ({} messages)",
        view.subject, view.customer.name, view.message_count
    );
    for m in &page.items {
        println!(
            "  {} {:?}: {}",
            m.at.try_to_rfc3339_string().unwrap_or_default(),
            m.from,
            m.body
        );
    }
    let by_id = explain(
        &db,
        doc! { "find": "tickets", "filter": { "_id": ticket.id } },
    )
    .await?;
    let thread = explain(
        &db,
        Message::TICKET_ID
            .page(&view.to_ref())
            .limit(20)
            .find_command(),
    )
    .await?;
    println!(
        "two indexed queries in {}:\n  ticket:   {by_id}\n  messages: {thread}",
        ms(took)
    );

    section("3. adding a message: the message and the ticket's preview in one transaction");
    let agent = seeded
        .agents
        .iter()
        .find(|a| a.team == view.team)
        .expect("a billing agent");
    let reply = Message {
        id: ObjectId::new(),
        ticket_id: view.to_ref(),
        from: Author::Agent,
        author_id: agent.id,
        body: "Thanks Ana, I have corrected the rate and reissued the invoice.".into(),
        attachments: vec![],
        at: DateTime::now(),
    };
    let started = Instant::now();
    Ticket::LAST_MESSAGE.add(&db, &reply).await?;
    let took = started.elapsed();
    let after = Ticket::collection(&db)
        .find_one(doc! { "_id": view.id })
        .await?
        .expect("seeded");
    println!(
        "  {}: count {} -> {}, preview now \"{}\"",
        ms(took),
        view.message_count,
        after.message_count,
        after
            .last_message
            .as_ref()
            .map_or("", |m| m.preview.as_str())
    );

    section("4. a status change by compare-and-set: two agents press \"pending\" at once");
    let contenders = ["first agent", "second agent"].map(|who| {
        let (db, ticket) = (db.clone(), after.to_ref());
        tokio::spawn(async move {
            let mut update = Ticket::HISTORY.push_update(&[StatusChange {
                status: Status::Pending,
                at: DateTime::now(),
            }])?;
            update.insert(
                "$set",
                doc! { "status": "pending", "updatedAt": DateTime::now() },
            );
            // a lost race is `Error::ConditionFailed`, the same as inside a transaction
            let won = match ticket
                .compare_and_set(&db, field!(Ticket, status), &after.status, update)
                .await
            {
                Ok(()) => true,
                Err(lost) if lost.is_condition_failed() => false,
                Err(other) => return Err(other),
            };
            Ok::<_, mongo_schema::Error>((who, won))
        })
    });
    for contender in contenders {
        let (who, won) = contender.await??;
        println!(
            "  {who}: {}",
            if won {
                "changed open -> pending"
            } else {
                "lost the race: the status had changed, reload"
            }
        );
    }

    section("5. renaming an agent: an async copy on every ticket assigned to them");
    // mongod answers the change stream as soon as a change arrives; SecantusDB only when
    // `maxAwaitTimeMS` is up (1 s by default), so the demo asks for 100 ms
    let worker = schema
        .sync_worker(&db)
        .name("helpdesk-demo")
        .max_await_time(Duration::from_millis(100))
        .spawn();
    worker.ready().await?;
    let busiest = busiest_agent(&db, &seeded.agents).await?;
    let holders = Ticket::collection(&db)
        .count_documents(doc! { "assignee._id": busiest.id })
        .await?;
    let new_name = format!("{} (team lead)", busiest.name);
    let started = Instant::now();
    Agent::collection(&db)
        .update_one(
            doc! { "_id": busiest.id },
            doc! { "$set": { "name": &new_name } },
        )
        .await?;
    // every change committed before this call is applied when it returns
    tokio::time::timeout(Duration::from_secs(30), worker.caught_up())
        .await
        .map_err(|_| "the worker did not catch up within 30 s")??;
    let stale = Ticket::collection(&db)
        .count_documents(doc! { "assignee._id": busiest.id, "assignee.name": { "$ne": &new_name } })
        .await?;
    if stale > 0 {
        return Err(format!("{stale} tickets still show the old name once caught up").into());
    }
    let stats = worker.stats().snapshot();
    println!(
        "  \"{}\" -> \"{new_name}\": all {holders} tickets show it {} after the rename (worker lag {} ms, {} tickets rewritten)",
        busiest.name,
        ms(started.elapsed()),
        stats.last_lag_ms,
        stats.copies_rewritten
    );
    worker.shutdown().await?;

    section("6. renaming a customer: a transactional copy");
    let customer = &queue[0].customer;
    let started = Instant::now();
    let update = schema
        .update_source::<Customer>(
            &db,
            &customer.id,
            doc! { "$set": { "name": format!("{} Jr.", customer.name) } },
        )
        .await?;
    println!(
        "  {} tickets rewritten in the same transaction as the customer ({} attempt(s), {})",
        update.total_rewritten(),
        update.attempts,
        ms(started.elapsed())
    );

    section("7. safety net: reconcile finds nothing to repair");
    let started = Instant::now();
    let report = schema.reconcile(&db).dry_run(true).await?;
    print!("{report}");
    println!("  checked in {}", ms(started.elapsed()));
    Ok(())
}

async fn busiest_agent(db: &mongodb::Database, agents: &[Agent]) -> mongo_schema::Result<Agent> {
    let mut best = (0, agents[0].clone());
    for agent in agents {
        let n = Ticket::collection(db)
            .count_documents(doc! { "assignee._id": agent.id })
            .await?;
        if n > best.0 {
            best = (n, agent.clone());
        }
    }
    Ok(best.1)
}
