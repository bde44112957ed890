//! What a declared query's filter costs against the hand-written `doc!` it replaces, counted in
//! instructions (`benches/filter-instructions.sh` runs this binary under callgrind, once per
//! mode, and subtracts the empty run): the wall clock cannot settle 5% on these machines.
//!
//! ```text
//! bash benches/filter-instructions.sh            # the instruction counts and their ratios
//! cargo bench --bench filter_cost -- --quick     # or BENCH_QUICK=1: the byte-for-byte check only
//! ```
//!
//! Modes (`cargo bench --bench filter_cost -- <mode> <calls>`):
//! - `none`: the process, the runtime and the client alone (the baseline subtracted);
//! - `doc`: `doc! { team, status }`, the hand-written filter of the help desk's agent queue;
//! - `filter`: the same filter built as `Ticket::agent_queue` builds it (`Filter` on the fields'
//!   typed paths, values encoded as stored);
//! - `query`: `Ticket::agent_queue(&db, team, &status)` whole (its `QuerySpec` and filter);
//! - `find`: the driver's `find(doc!).sort(doc!).limit(50).comment(..)` it replaces.

use std::hint::black_box;

#[path = "../examples/helpdesk/model.rs"]
mod helpdesk;

use helpdesk::{Status, Ticket};
use mongo_schema::bson::{self, doc, Document};

fn hand(team: &str, status: &str) -> Document {
    doc! { "team": team, "status": status }
}

fn typed(team: &str, status: &Status) -> Document {
    mongo_schema::query::Filter::new()
        .eq(mongo_schema::field!(Ticket, team), team)
        .eq(mongo_schema::field!(Ticket, status), status)
        .build()
        .unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let quick = std::env::var_os("BENCH_QUICK").is_some() || args.iter().any(|a| a == "--quick");
    let team = String::from("billing");
    let status = Status::Open;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // a client that never connects: building a query sends nothing
    let client = runtime.block_on(async {
        mongo_schema::mongodb::Client::with_uri_str(
            "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=1",
        )
        .await
        .unwrap()
    });
    let db = client.database("bench");

    // the same bytes, whichever way the filter was built
    let expected = bson::to_vec(&hand(&team, "open")).unwrap();
    assert_eq!(bson::to_vec(&typed(&team, &status)).unwrap(), expected);
    let query = Ticket::agent_queue(&db, &team, &status);
    assert_eq!(bson::to_vec(query.filter().unwrap()).unwrap(), expected);
    if quick || args.is_empty() {
        println!(
            "filter_cost: the declared query's filter is the hand-written doc!, byte for byte"
        );
        if !quick {
            println!("count instructions with: bash benches/filter-instructions.sh");
        }
        return;
    }
    let mode = args[0].as_str();
    let calls: u64 = args.get(1).map_or(100_000, |n| n.parse().unwrap());
    let tickets = db.collection::<Document>("tickets");
    runtime.block_on(async {
        for _ in 0..calls {
            match mode {
                "none" => {
                    black_box(&team);
                }
                "doc" => drop(black_box(hand(black_box(&team), black_box("open")))),
                "filter" => drop(black_box(typed(black_box(&team), black_box(&status)))),
                "query" => drop(black_box(Ticket::agent_queue(
                    &db,
                    black_box(&team),
                    black_box(&status),
                ))),
                "find" => drop(black_box(
                    tickets
                        .find(hand(black_box(&team), black_box("open")))
                        .sort(doc! { "priority": -1, "updatedAt": -1 })
                        .limit(50)
                        .comment("agent_queue"),
                )),
                other => panic!("unknown mode {other}: none, doc, filter, query or find"),
            }
        }
    });
}
