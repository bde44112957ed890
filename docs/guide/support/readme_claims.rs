// The README's claims about the help desk's indexes, checked by its doc test (included with
// `examples/helpdesk/model/around_ticket.rs` beside the README's own ten-line ticket).

/// What the README says of the help desk's indexes (its doc test calls this): the agent queue's
/// index derived by ESR, and the fan-out index of each copy.
#[allow(dead_code)]
fn readme_claims() {
    let schema = Schema::new()
        .model::<Customer>()
        .model::<Agent>()
        .model::<Tag>()
        .model::<Ticket>()
        .model::<Message>()
        .build()
        .expect("the help desk");
    let tickets = schema.collection("tickets").expect("declared");
    let keys: Vec<_> = tickets.indexes.iter().map(|index| index.keys.clone()).collect();
    for claimed in [
        doc! { "team": 1, "status": 1, "priority": -1, "updatedAt": -1 },
        doc! { "customer._id": 1, "_id": 1 },
        doc! { "assignee._id": 1, "_id": 1 },
    ] {
        assert!(keys.contains(&claimed), "{claimed} in {keys:?}");
    }
}
