//! A realistic help desk data set: teams, agents, customers, tags, tickets and their threads.
#![allow(dead_code)]

use mongo_schema::bson::DateTime;
use mongo_schema::prelude::*;

use super::model::*;

pub const TEAMS: [&str; 4] = ["billing", "shipping", "accounts", "returns"];

const SUBJECTS: [&str; 8] = [
    "Invoice shows the wrong rate",
    "Parcel stuck in transit",
    "Cannot reset my password",
    "Refund not received",
    "Charged twice this month",
    "Address change after dispatch",
    "Two-factor code never arrives",
    "Return label is missing",
];

const FIRST: [&str; 10] = [
    "Ana", "Bo", "Chidi", "Dana", "Emil", "Farah", "Goran", "Hana", "Ines", "Jun",
];
const LAST: [&str; 10] = [
    "Silva", "Larsen", "Okafor", "Novak", "Berg", "Haddad", "Petrov", "Sato", "Costa", "Kim",
];

/// Deterministic pseudo-random numbers, so every run seeds the same data set.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub struct Seeded {
    pub agents: Vec<Agent>,
    pub customers: Vec<Customer>,
    pub tags: Vec<Tag>,
    pub tickets: Vec<Ticket>,
    pub messages: usize,
}

/// Inserts `tickets` tickets with 1-6 messages each; the subset fields (last message, count) are
/// computed from the thread, as the write path would have kept them.
pub async fn seed(db: &mongodb::Database, tickets: usize) -> mongo_schema::Result<Seeded> {
    let mut rng = Rng::new(0x5eed_0003);
    let now = DateTime::now().timestamp_millis();
    let agents: Vec<Agent> = (0..40)
        .map(|i| Agent {
            id: ObjectId::new(),
            name: format!("{} {}", FIRST[i % 10], LAST[(i / 10 + i) % 10]),
            team: TEAMS[i % TEAMS.len()].to_owned(),
        })
        .collect();
    let customers: Vec<Customer> = (0..800)
        .map(|i| {
            let name = format!("{} {}", FIRST[(i * 7) % 10], LAST[(i * 3 + i / 10) % 10]);
            Customer {
                id: ObjectId::new(),
                email: format!("customer{i}@example.org"),
                name,
            }
        })
        .collect();
    let tags: Vec<Tag> = [
        "vip",
        "refund",
        "invoice",
        "delivery",
        "login",
        "bug",
        "urgent",
        "churn-risk",
    ]
    .iter()
    .map(|k| Tag {
        key: (*k).to_owned(),
        label: k.replace('-', " "),
    })
    .collect();
    Agent::collection(db).insert_many(&agents).await?;
    Customer::collection(db).insert_many(&customers).await?;
    Tag::collection(db).insert_many(&tags).await?;

    let mut all_tickets = Vec::with_capacity(tickets);
    let mut messages = Vec::new();
    let mut message_count = 0;
    for i in 0..tickets {
        let team = TEAMS[rng.below(TEAMS.len())];
        let team_agents: Vec<&Agent> = agents.iter().filter(|a| a.team == team).collect();
        let customer = &customers[rng.below(customers.len())];
        let assignee = (rng.below(5) > 0).then(|| team_agents[rng.below(team_agents.len())]);
        let status = match rng.below(10) {
            0..=5 => Status::Open,
            6..=7 => Status::Pending,
            _ => Status::Closed,
        };
        let opened = now - (rng.below(30 * 24 * 3600) as i64) * 1000;
        let ticket_id = ObjectId::new();
        let thread = 1 + rng.below(6);
        let mut at = opened;
        let mut thread_messages = Vec::with_capacity(thread);
        for m in 0..thread {
            at += (rng.below(3600) as i64 + 60) * 1000;
            let from = if m % 2 == 0 {
                Author::Customer
            } else {
                Author::Agent
            };
            thread_messages.push(Message {
                id: ObjectId::new(),
                ticket_id: Ref::new(ticket_id),
                from,
                author_id: match (from, assignee) {
                    (Author::Agent, Some(agent)) => agent.id,
                    _ => customer.id,
                },
                body: format!(
                    "{} #{i}: {}",
                    if from == Author::Customer {
                        "Hello, about ticket"
                    } else {
                        "Thanks for waiting, on ticket"
                    },
                    SUBJECTS[(i + m) % SUBJECTS.len()].to_lowercase()
                ),
                attachments: if rng.below(8) == 0 {
                    vec![Attachment {
                        file_name: format!("screenshot-{i}-{m}.png"),
                        content_type: "image/png".into(),
                        size: 20_000 + rng.below(500_000) as i64,
                        url: format!("s3://helpdesk-attachments/{ticket_id}/{m}.png"),
                    }]
                } else {
                    vec![]
                },
                at: DateTime::from_millis(at),
            });
        }
        let last = thread_messages.last().expect("at least one message");
        let mut tag_keys: Vec<Ref<Tag>> = Vec::new();
        for _ in 0..rng.below(4) {
            let tag = Ref::new(tags[rng.below(tags.len())].key.clone());
            if !tag_keys.contains(&tag) {
                tag_keys.push(tag);
            }
        }
        all_tickets.push(Ticket {
            id: ticket_id,
            subject: SUBJECTS[i % SUBJECTS.len()].to_owned(),
            team: team.to_owned(),
            status,
            priority: rng.below(4) as i32,
            customer: customer.into(),
            assignee: assignee.map(Into::into),
            tags: tag_keys,
            history: vec![StatusChange {
                status: Status::Open,
                at: DateTime::from_millis(opened),
            }],
            last_message: Some(last.into()),
            message_count: thread as i64,
            updated_at: last.at,
        });
        message_count += thread;
        messages.extend(thread_messages);
        if messages.len() >= 5000 {
            Message::collection(db).insert_many(&messages).await?;
            messages.clear();
        }
    }
    if !messages.is_empty() {
        Message::collection(db).insert_many(&messages).await?;
    }
    for chunk in all_tickets.chunks(2000) {
        Ticket::collection(db).insert_many(chunk).await?;
    }
    Ok(Seeded {
        agents,
        customers,
        tags,
        tickets: all_tickets,
        messages: message_count,
    })
}
