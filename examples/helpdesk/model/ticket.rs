// The ticket and its queries, and the help desk's schema. Included by `../model.rs`, and as it is by the guide's doc tests
// (no `use` lines or inner attributes here).

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tickets")]
#[index(keys(team = 1, status = 1, priority = -1, updated_at = -1), name = "agent_queue")]
// the agent queue (seed 003): open tickets of a team by priority and last update; one query on
// one collection, no `$lookup`, served by `agent_queue` in its sort order
#[query(name = "agent_queue", eq(team, status), sort(priority = -1, updated_at = -1), limit = 50, index = "agent_queue")]
// the ticket view: the ticket by id (then its thread, `Message::TICKET_ID.page`)
#[query(name = "ticket_view", eq(id))]
// a customer's tickets, newest first: the schema derives `{ customer._id: 1, updatedAt: -1 }`
#[query(name = "customer_tickets", eq("customer._id"), sort(updated_at = -1), limit = 20)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 200)]
    pub subject: String,
    pub team: String,
    pub status: Status,
    #[schema(minimum = 0, maximum = 3)]
    pub priority: i32,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: TicketCustomer,
    #[extended_ref(to = Agent, fields = "name", sync = "async")]
    pub assignee: Option<TicketAssignee>,
    #[reference(max = 10)]
    pub tags: Vec<Ref<Tag>>,
    #[embed(max = 50, cap)]
    pub history: Vec<StatusChange>,
    #[subset(of = Message, max = 1, sort = "-at", count = "message_count")]
    pub last_message: Option<MessagePreview>,
    pub message_count: i64,
    pub updated_at: DateTime,
}

/// The help desk's schema.
pub fn schema() -> Schema {
    Schema::new()
        .model::<Customer>()
        .model::<Agent>()
        .model::<Tag>()
        .model::<Ticket>()
        .model::<Message>()
        .build()
        .expect("the help desk schema is consistent")
}
