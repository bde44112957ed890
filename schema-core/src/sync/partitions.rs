//! Workers of one name that share the stream: [`SyncWorker::partitions`](super::SyncWorker::partitions).
//!
//! The change events of a name are split among `n` partitions by a hash of the changed
//! document's `_id` (`documentKey._id`), computed by the server in the stream's `$match`, so each
//! partition's stream carries only its own events, and every event of one source document falls
//! in one partition, in the stream's order. Each partition is a lease of its own, in a token
//! document of its own (`_id: { worker, partition, of }`), with its own epoch, fence lanes
//! (`_id: { lease: <that id>, lane }`) and resume token: what one worker of an unpartitioned name
//! does, per partition.
//!
//! The processes running a name share its partitions through a membership document per process
//! (`_id: { worker, member }`, its heartbeat an expiry on the server's clock, renewed like a
//! lease). Each process reads the members and the partitions' leases every fifth of the lease
//! and computes its quota ([`quota`]): the live members ranked by id, the first `n % live` of
//! them get `ceil(n / live)` and the others `floor(n / live)`, so the quotas add up to `n`
//! exactly (a plain `ceil` would leave the third of three members with none of four partitions:
//! two and two are within it). A process over its quota releases the surplus, one under it
//! takes free or expired partitions ([`wanted`]); a process with a quota of zero stands by. A
//! member that stops renewing drops out of the live members once its heartbeat lapses (one
//! lease), at about the time its partitions' leases lapse, and the others take them.
//!
//! **The hash.** mongod (5.0+) has `$toHashedIndexKey`, the hash of a hashed index, which would
//! spread any `_id` type; SecantusDB 0.7 does not know it (error 168). The expression here
//! ([`expression`]) uses only operators both servers evaluate alike (checked against
//! SecantusDB, and against mongod's documented semantics: `$mod` truncates like C's `fmod`,
//! which the `(x mod n + n) mod n` form makes irrelevant; `$toString` of an ObjectId is its
//! lowercase hex):
//! - a number (int, long, double, decimal) between -9e18 and 9e18: its floor, modulo `n`
//!   (ids 7, 7_i64 and 7.0 meet; NaN, the infinities and larger numbers go to partition 0,
//!   where `$mod` would fail on SecantusDB);
//! - a date: its milliseconds, likewise;
//! - an ObjectId: its last three bytes (the counter of the process that made it, one up per
//!   id), read as six hex digits of its string, modulo `n`;
//! - a string: a polynomial hash (base 31, modulo 1,000,003) of its last 64 characters, each
//!   counted as its place in printable ASCII, or its UTF-8 length outside it;
//! - anything else (a binary UUID, a document, a boolean): partition 0. A collection keyed by
//!   UUIDs is not spread: every event of it falls in partition 0.
//!
//! [`partition_of`] computes the same in Rust (its unit tests and a live test hold the two
//! together).
//!
//! **Order and targets.** A copy is rewritten from its source's events: all in one partition,
//! applied in order, as by one worker. A subset parent is refreshed from its children's events,
//! which fall in the partitions of the children: two partitions may refresh one parent at
//! once. That is order-safe: a refresh reads the children and writes the parent in one
//! transaction, so of two that overlap the later commit has read the other's (a write to the
//! parent after its snapshot is a write conflict, and the retry reads again).

use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

use crate::Result;

/// Strings are hashed over their last this many characters.
const HASHED_CHARACTERS: i64 = 64;

/// The string hash's modulus (a prime; `value * 31 + 100` stays within an int32).
const STRING_MODULUS: i64 = 1_000_003;

/// Numbers outside (-this, this) go to partition 0 (as NaN and the infinities do).
const NUMBER_BOUND: f64 = 9.0e18;

/// One partition of a name's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partition {
    /// Its number, `0..count`.
    pub index: usize,
    /// How many partitions the name's events are split into (1: not split).
    pub count: usize,
}

impl Partition {
    /// The one partition of a name that is not split.
    pub(crate) fn whole() -> Partition {
        Partition { index: 0, count: 1 }
    }

    /// The `_id` of its token document: the name itself when the name is not split (so a
    /// deployment that adds no partitions resumes from its token), else a document that no
    /// name (a string) and no fence lane (`{ lease, lane }`) can equal.
    pub(crate) fn id(&self, name: &str) -> Bson {
        if self.count <= 1 {
            Bson::String(name.to_owned())
        } else {
            Bson::Document(partition_id(name, self.index, self.count))
        }
    }

    /// Its name in logs: `posts 2/4`.
    pub(crate) fn label(&self, name: &str) -> String {
        if self.count <= 1 {
            name.to_owned()
        } else {
            format!("{name} {}/{}", self.index, self.count)
        }
    }

    /// The condition its stream's `$match` adds (`None`: the name is not split).
    pub(crate) fn filter(&self) -> Option<BsonDocument> {
        (self.count > 1).then(|| {
            doc! { "$expr": { "$eq": [
                expression("$documentKey._id", self.count),
                self.index as i64,
            ] } }
        })
    }
}

/// The `_id` of partition `index` of `count` of the worker `name`.
pub(crate) fn partition_id(name: &str, index: usize, count: usize) -> BsonDocument {
    doc! { "worker": name, "partition": index as i64, "of": count as i64 }
}

/// The `_id` of a member's heartbeat document.
fn member_id(name: &str, owner: &str) -> BsonDocument {
    doc! { "worker": name, "member": owner }
}

/// The aggregation expression of the partition (`0..count`) of the `_id` at the field path
/// `id` (see the module documentation).
pub(crate) fn expression(id: &str, count: usize) -> Bson {
    let n = count as i64;
    // (x mod n + n) mod n: the same whether `$mod` truncates (mongod, C) or floors
    let modulo = |x: Bson| -> Bson {
        Bson::Document(doc! { "$mod": [{ "$add": [{ "$mod": [x, n] }, n] }, n] })
    };
    let number = |x: Bson| modulo(Bson::Document(doc! { "$floor": x }));
    let printable: String = (0x20_u8..0x7f).map(char::from).collect();
    let character = doc! { "$let": {
        "vars": { "c": { "$substrCP": ["$$s", "$$this", 1] } },
        "in": { "$let": {
            "vars": { "k": { "$indexOfCP": [{ "$literal": printable }, "$$c"] } },
            "in": { "$cond": [
                { "$gte": ["$$k", 0] },
                { "$add": ["$$k", 5] },
                { "$strLenBytes": "$$c" },
            ] },
        } },
    } };
    let string = |s: Bson| -> Bson {
        let hash = doc! { "$reduce": {
            "input": { "$range": [
                { "$max": [0, { "$subtract": ["$$len", HASHED_CHARACTERS] }] },
                "$$len",
            ] },
            "initialValue": 0,
            "in": { "$mod": [
                { "$add": [{ "$multiply": ["$$value", 31] }, character.clone()] },
                STRING_MODULUS,
            ] },
        } };
        Bson::Document(doc! { "$let": {
            "vars": { "s": s },
            "in": { "$let": {
                "vars": { "len": { "$strLenCP": "$$s" } },
                "in": { "$mod": [hash, n] },
            } },
        } })
    };
    // an ObjectId by its last three bytes (the counter of the process that made it, which
    // goes up by one per id): six hex digits read off its string, no loop
    let object_id = {
        let digits: Vec<Bson> = (0..6_i64)
            .map(|i| {
                Bson::Document(doc! { "$multiply": [
                    { "$indexOfBytes": ["0123456789abcdef", { "$substrBytes": ["$$h", 18 + i, 1] }] },
                    16_i64.pow(5 - i as u32),
                ] })
            })
            .collect();
        Bson::Document(doc! { "$let": {
            "vars": { "h": { "$toString": "$$id" } },
            "in": { "$mod": [{ "$add": digits }, n] },
        } })
    };
    let kind = doc! { "$type": "$$id" };
    let hashed = doc! { "$switch": {
        "branches": [
            // the commonest `_id` first: `$switch` tries the cases in order
            {
                "case": { "$eq": [kind.clone(), "objectId"] },
                "then": object_id,
            },
            {
                "case": { "$and": [
                    { "$in": [kind.clone(), ["double", "int", "long", "decimal"]] },
                    { "$gt": ["$$id", -NUMBER_BOUND] },
                    { "$lt": ["$$id", NUMBER_BOUND] },
                ] },
                "then": number(Bson::String("$$id".into())),
            },
            {
                "case": { "$eq": [kind.clone(), "date"] },
                "then": number(Bson::Document(doc! { "$toLong": "$$id" })),
            },
            {
                "case": { "$eq": [kind, "string"] },
                "then": string(Bson::String("$$id".into())),
            },
        ],
        "default": 0,
    } };
    Bson::Document(doc! { "$let": {
        "vars": { "id": id, },
        "in": { "$let": {
            "vars": { "r": hashed },
            // whatever a server made of an odd value, it lands in a partition
            "in": { "$cond": [
                { "$and": [{ "$gte": ["$$r", 0] }, { "$lt": ["$$r", n] }] },
                "$$r",
                0,
            ] },
        } },
    } })
}

/// The partition (`0..count`) of `id`, as [`expression`] computes it on the server. Decimals
/// are read as their `f64` value (exact for integers below 2^53).
pub(crate) fn partition_of(id: &Bson, count: usize) -> usize {
    let count = count.max(1);
    let n = count as i64;
    let number = |x: f64| -> usize {
        if !(x > -NUMBER_BOUND && x < NUMBER_BOUND) {
            return 0;
        }
        let floor = x.floor();
        // exact: |floor| < 2^63, and an f64 integer's remainder by a small n is exact
        let modulo = ((floor % n as f64) + n as f64) % n as f64;
        modulo as usize
    };
    let string = |s: &str| -> usize {
        let chars: Vec<char> = s.chars().collect();
        let start = chars.len().saturating_sub(HASHED_CHARACTERS as usize);
        let hash = chars[start..].iter().fold(0_i64, |value, &c| {
            let v = if (' '..='~').contains(&c) {
                i64::from(c as u8 - b' ') + 5
            } else {
                c.len_utf8() as i64
            };
            (value * 31 + v) % STRING_MODULUS
        });
        (hash % n) as usize
    };
    match id {
        Bson::Int32(i) => (i64::from(*i).rem_euclid(n)) as usize,
        Bson::Int64(i) if (*i as f64) > -NUMBER_BOUND && (*i as f64) < NUMBER_BOUND => {
            i.rem_euclid(n) as usize
        }
        Bson::Int64(_) => 0,
        Bson::Double(x) => number(*x),
        Bson::Decimal128(d) => d.to_string().parse::<f64>().map_or(0, number),
        Bson::DateTime(at) => at.timestamp_millis().rem_euclid(n) as usize,
        Bson::ObjectId(oid) => {
            let b = oid.bytes();
            let counter = (u64::from(b[9]) << 16) | (u64::from(b[10]) << 8) | u64::from(b[11]);
            (counter % n as u64) as usize
        }
        Bson::String(s) => string(s),
        _ => 0,
    }
}

/// How many partitions the member of rank `rank` among `live` members holds: `count` shared
/// out so that the quotas add up to `count` (the first `count % live` ranks take one more).
pub(crate) fn quota(count: usize, live: usize, rank: usize) -> usize {
    let live = live.max(1);
    count / live + usize::from(rank < count % live)
}

/// The order in which the member of rank `rank` among `live` keeps and takes partitions: from
/// its own offset on, round, so that members acquiring at once aim at different partitions.
fn preference(count: usize, live: usize, rank: usize) -> impl Iterator<Item = usize> {
    let offset = rank * count / live.max(1);
    (0..count).map(move |i| (offset + i) % count)
}

/// Who holds a partition, as one member sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// This member (its partition task holds the lease).
    Me,
    /// Another worker whose lease has not expired.
    Other,
    /// Nobody: released, expired, or never taken.
    Free,
}

/// The partitions the member of rank `rank` among `live` wants: the ones it holds, up to its
/// quota (the surplus is released), then free ones, up to its quota.
pub(crate) fn wanted(holders: &[Holder], live: usize, rank: usize) -> Vec<bool> {
    let count = holders.len();
    let quota = quota(count, live, rank);
    let mut want = vec![false; count];
    let mut kept = 0;
    for pick in [Holder::Me, Holder::Free] {
        for p in preference(count, live, rank) {
            if kept < quota && holders[p] == pick {
                want[p] = true;
                kept += 1;
            }
        }
    }
    want
}

/// A member of a name, as its heartbeat document records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    /// Its owner id (the one its partitions' leases carry).
    pub owner: String,
    /// When it joined (server time, milliseconds).
    pub since: i64,
    /// How many partitions it splits the name into.
    pub partitions: usize,
}

/// What a member decides at one look at its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// Per partition: whether this member should hold it.
    pub want: Vec<bool>,
    /// Whether every partition is held, by this member or another live worker.
    pub covered: bool,
}

/// Decides, for the member `me`, from the live members of its name, who holds each of its
/// partitions, and whether the name's unsplit lease (`_id: name`, a worker without
/// partitions) is held by a live worker. Members that split the name differently and joined
/// earlier, or a live worker without partitions, keep the name: this member stands by until
/// they leave (a change of the partition count rolls out without two layouts applying at
/// once).
pub(crate) fn decide(
    me: &Member,
    members: &[Member],
    holders: &[Holder],
    unsplit_held: bool,
) -> Decision {
    let covered = holders.iter().all(|h| *h != Holder::Free);
    let older_layout = members
        .iter()
        .any(|m| m.partitions != me.partitions && (m.since, &m.owner) < (me.since, &me.owner));
    if unsplit_held || older_layout {
        return Decision {
            want: vec![false; holders.len()],
            covered: true,
        };
    }
    let mut peers: Vec<&str> = members
        .iter()
        .filter(|m| m.partitions == me.partitions)
        .map(|m| m.owner.as_str())
        .chain(std::iter::once(me.owner.as_str()))
        .collect();
    peers.sort_unstable();
    peers.dedup();
    let rank = peers.iter().position(|o| *o == me.owner).unwrap_or(0);
    Decision {
        want: wanted(holders, peers.len(), rank),
        covered,
    }
}

/// One member's view of its name: its heartbeat and what it reads of the others.
#[derive(Debug)]
pub(crate) struct Membership {
    tokens: Collection<BsonDocument>,
    name: String,
    owner: String,
    count: usize,
    lease: Duration,
    since: Option<i64>,
}

/// What one look at a name found.
#[derive(Debug)]
pub(crate) struct Look {
    /// The live members (this one included).
    pub members: Vec<Member>,
    /// Per partition: its live owner, if any.
    pub owners: Vec<Option<String>>,
    /// Whether the unsplit lease (`_id: name`) is held by a live worker.
    pub unsplit_held: bool,
}

fn millis(value: Option<&Bson>) -> Option<i64> {
    match value? {
        Bson::DateTime(at) => Some(at.timestamp_millis()),
        Bson::Int64(n) => Some(*n),
        Bson::Int32(n) => Some(i64::from(*n)),
        _ => None,
    }
}

impl Membership {
    pub(crate) fn new(
        tokens: Collection<BsonDocument>,
        name: &str,
        owner: &str,
        count: usize,
        lease: Duration,
    ) -> Self {
        Membership {
            tokens,
            name: name.to_owned(),
            owner: owner.to_owned(),
            count,
            lease,
            since: None,
        }
    }

    /// This member, as its heartbeat recorded it (after the first).
    pub(crate) fn me(&self) -> Member {
        Member {
            owner: self.owner.clone(),
            since: self.since.unwrap_or(i64::MAX),
            partitions: self.count,
        }
    }

    /// Renews this member's heartbeat (an expiry a lease away on the server's clock) and
    /// returns the server's time, in milliseconds.
    pub(crate) async fn heartbeat(&mut self) -> Result<i64> {
        let lease = self.lease.as_millis() as i64;
        let update = vec![doc! { "$set": {
            "expires": { "$add": ["$$NOW", lease] },
            "since": { "$ifNull": ["$since", "$$NOW"] },
            "partitions": self.count as i64,
        } }];
        let after = self
            .tokens
            .find_one_and_update(doc! { "_id": member_id(&self.name, &self.owner) }, update)
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await?
            .unwrap_or_default();
        self.since = millis(after.get("since")).or(self.since);
        let now = millis(after.get("expires")).map_or_else(
            || mongodb::bson::DateTime::now().timestamp_millis(),
            |expires| expires - lease,
        );
        Ok(now)
    }

    /// Reads the members, the partitions' leases and the unsplit lease of the name, judging
    /// expiries against the server's time `now`; removes the heartbeats of members gone for
    /// longer than ten leases.
    pub(crate) async fn look(&self, now: i64) -> Result<Look> {
        let mut cursor = self
            .tokens
            .find(doc! { "$or": [
                { "_id": &self.name },
                { "_id.worker": &self.name, "_id.member": { "$exists": true } },
                { "_id.worker": &self.name, "_id.of": self.count as i64 },
            ] })
            .projection(doc! { "owner": 1, "expires": 1, "since": 1, "partitions": 1 })
            .await?;
        let mut look = Look {
            members: Vec::new(),
            owners: vec![None; self.count],
            unsplit_held: false,
        };
        let live = |d: &BsonDocument| millis(d.get("expires")).is_some_and(|at| at > now);
        let mut gone = Vec::new();
        while let Some(found) = cursor.try_next().await? {
            let owner = found.get_str("owner").ok().map(str::to_owned);
            match found.get("_id") {
                Some(Bson::String(_)) => look.unsplit_held = owner.is_some() && live(&found),
                Some(Bson::Document(id)) if id.contains_key("member") => {
                    let Ok(member) = id.get_str("member") else {
                        continue;
                    };
                    if live(&found) {
                        look.members.push(Member {
                            owner: member.to_owned(),
                            since: millis(found.get("since")).unwrap_or(now),
                            partitions: found
                                .get("partitions")
                                .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)))
                                .map_or(self.count, |p| p.max(1) as usize),
                        });
                    } else if millis(found.get("expires"))
                        .is_some_and(|at| now - at > 10 * self.lease.as_millis() as i64)
                    {
                        gone.push(Bson::Document(id.clone()));
                    }
                }
                Some(Bson::Document(id)) => {
                    let index = id
                        .get("partition")
                        .and_then(|p| p.as_i64().or(p.as_i32().map(i64::from)));
                    if let Some(index) = index.filter(|i| (0..self.count as i64).contains(i)) {
                        look.owners[index as usize] = owner.filter(|_| live(&found));
                    }
                }
                _ => {}
            }
        }
        if !gone.is_empty() {
            // best effort: a heartbeat left behind by a process that died
            let _ = self
                .tokens
                .delete_many(doc! { "_id": { "$in": gone } })
                .await;
        }
        Ok(look)
    }

    /// Removes this member's heartbeat (it leaves: the others share its partitions at once).
    pub(crate) async fn leave(&self) {
        let leave = self
            .tokens
            .delete_one(doc! { "_id": member_id(&self.name, &self.owner) });
        if let Ok(Err(error)) = tokio::time::timeout(Duration::from_secs(5), leave).await {
            tracing::warn!(worker = %self.name, %error, "could not remove this member's heartbeat; it expires by itself");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::oid::ObjectId;

    #[test]
    fn quotas_add_up_to_the_partitions() {
        for count in 1..=12 {
            for live in 1..=15 {
                let quotas: Vec<usize> = (0..live).map(|r| quota(count, live, r)).collect();
                assert_eq!(quotas.iter().sum::<usize>(), count, "{count} among {live}");
                let (min, max) = (quotas.iter().min().unwrap(), quotas.iter().max().unwrap());
                assert!(max - min <= 1, "{count} among {live}: {quotas:?}");
                assert_eq!(*max, count.div_ceil(live), "{count} among {live}");
            }
        }
        // four among three: 2, 1, 1 (ceil alone would allow 2, 2, 0)
        assert_eq!(
            (0..3).map(|r| quota(4, 3, r)).collect::<Vec<_>>(),
            [2, 1, 1]
        );
        // more members than partitions: the last ones stand by
        assert_eq!(
            (0..3).map(|r| quota(2, 3, r)).collect::<Vec<_>>(),
            [1, 1, 0]
        );
    }

    #[test]
    fn a_member_keeps_its_quota_releases_the_surplus_and_takes_free_ones() {
        use Holder::{Free, Me, Other};
        // alone: every partition
        assert_eq!(wanted(&[Free; 4], 1, 0), [true; 4]);
        // holding all four when a second member joins: rank 0 keeps 0 and 1
        assert_eq!(wanted(&[Me; 4], 2, 0), [true, true, false, false]);
        // ... and rank 1 keeps 2 and 3
        assert_eq!(wanted(&[Me; 4], 2, 1), [false, false, true, true]);
        // the newcomer takes what the other released, its own offset first
        assert_eq!(
            wanted(&[Other, Other, Free, Free], 2, 1),
            [false, false, true, true]
        );
        // none free: it waits (standing by)
        assert_eq!(wanted(&[Other; 4], 2, 1), [false; 4]);
        // a third joins: rank 2's quota is one, taken from what is free
        assert_eq!(
            wanted(&[Other, Other, Free, Other], 3, 2),
            [false, false, true, false]
        );
        // its peer that held two of four, now at quota one, releases one
        assert_eq!(
            wanted(&[Other, Other, Me, Me], 3, 1)
                .iter()
                .filter(|w| **w)
                .count(),
            1
        );
        // a member that died: its partitions are free once its leases lapse
        assert_eq!(
            wanted(&[Me, Me, Free, Free], 1, 0),
            [true, true, true, true]
        );
    }

    /// Starting from any holding, members that each act on `wanted` (release, then take what
    /// is free) end with every partition held and each at its quota.
    #[test]
    fn rebalancing_converges() {
        for count in [1, 2, 4, 5, 8] {
            for live in 1..=5 {
                // start: member 0 holds everything
                let mut owner: Vec<Option<usize>> = vec![Some(0); count];
                for _round in 0..4 {
                    for member in 0..live {
                        let holders: Vec<Holder> = owner
                            .iter()
                            .map(|o| match o {
                                Some(m) if *m == member => Holder::Me,
                                Some(_) => Holder::Other,
                                None => Holder::Free,
                            })
                            .collect();
                        let want = wanted(&holders, live, member);
                        for (p, w) in want.iter().enumerate() {
                            match (owner[p], w) {
                                (Some(m), false) if m == member => owner[p] = None,
                                (None, true) => owner[p] = Some(member),
                                _ => {}
                            }
                        }
                    }
                }
                assert!(
                    owner.iter().all(Option::is_some),
                    "{count}/{live}: {owner:?}"
                );
                for member in 0..live {
                    let held = owner.iter().filter(|o| **o == Some(member)).count();
                    assert_eq!(
                        held,
                        quota(count, live, member),
                        "{count}/{live}: {owner:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_older_layout_or_an_unsplit_holder_keeps_the_name() {
        let me = Member {
            owner: "b".into(),
            since: 20,
            partitions: 4,
        };
        let peer = Member {
            owner: "a".into(),
            since: 10,
            partitions: 4,
        };
        let holders = [Holder::Free; 4];
        let shared = decide(&me, &[peer.clone(), me.clone()], &holders, false);
        assert_eq!(shared.want, [false, false, true, true]);
        assert!(!shared.covered);
        let older = Member {
            partitions: 8,
            ..peer.clone()
        };
        let waiting = decide(&me, &[older, me.clone()], &holders, false);
        assert_eq!(waiting.want, [false; 4]);
        let unsplit = decide(&me, std::slice::from_ref(&me), &holders, true);
        assert_eq!(unsplit.want, [false; 4]);
        // a newer member of another layout waits for this one instead
        let newer = Member {
            owner: "c".into(),
            since: 30,
            partitions: 2,
        };
        assert_eq!(
            decide(&me, &[newer, me.clone()], &holders, false).want,
            [true; 4]
        );
    }

    #[test]
    fn ids_hash_alike_whatever_their_number_type() {
        for count in [2, 3, 4, 7] {
            assert_eq!(
                partition_of(&Bson::Int32(7), count),
                partition_of(&Bson::Int64(7), count)
            );
            assert_eq!(
                partition_of(&Bson::Double(7.0), count),
                partition_of(&Bson::Int64(7), count)
            );
            assert_eq!(
                partition_of(&Bson::Double(7.5), count),
                partition_of(&Bson::Int64(7), count)
            );
        }
        // the values SecantusDB computed for the expression (`$project` of `expression`)
        let oid = ObjectId::parse_str("64b7f0c2a1b2c3d4e5f60718").unwrap();
        let cases: Vec<(Bson, usize, usize)> = vec![
            (Bson::ObjectId(oid), 0, 5),
            (Bson::String("abc".into()), 3, 5),
            (Bson::Int32(7), 3, 0),
            (Bson::Int64(-3), 1, 4),
            (Bson::Double(7.5), 3, 0),
            (Bson::Double(-7.5), 0, 6),
            (Bson::Double(f64::NAN), 0, 0),
            (Bson::Double(f64::INFINITY), 0, 0),
            (Bson::Double(f64::NEG_INFINITY), 0, 0),
            (Bson::Double(1e300), 0, 0),
            (Bson::Int64(i64::MIN), 0, 0),
            (Bson::String("ünï€😀".into()), 2, 3),
            (Bson::String(String::new()), 0, 0),
            (Bson::String("x".repeat(100)), 2, 0),
            (
                Bson::DateTime(mongodb::bson::DateTime::from_millis(1_704_164_645_000)),
                0,
                6,
            ),
            (Bson::Document(doc! { "a": 1 }), 0, 0),
            (Bson::Boolean(true), 0, 0),
            (Bson::Null, 0, 0),
        ];
        for (id, four, seven) in cases {
            assert_eq!(partition_of(&id, 4), four, "{id} of 4");
            assert_eq!(partition_of(&id, 7), seven, "{id} of 7");
        }
    }

    /// The server computes what [`partition_of`] computes, for every kind of `_id` (the test
    /// server, or mongod with `MONGODB_URI`; `tests/sync_partitions.rs` runs the streams).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_server_hashes_as_the_model_does() {
        use futures_util::TryStreamExt;
        let db = mongo_schema_testkit::database("partition_hash").await;
        let ids = db.collection::<BsonDocument>("ids");
        let mut all: Vec<Bson> = vec![
            Bson::Int32(7),
            Bson::Int64(-3),
            Bson::Int64(1 << 40),
            Bson::Double(-7.5),
            Bson::Double(f64::NAN),
            Bson::Double(f64::INFINITY),
            Bson::Double(1e300),
            Bson::Int64(i64::MIN),
            Bson::String("ünï€😀".into()),
            Bson::String(String::new()),
            Bson::String("$not a path".into()),
            Bson::String("y".repeat(300)),
            Bson::DateTime(mongodb::bson::DateTime::from_millis(-86_400_001)),
            Bson::Boolean(false),
            Bson::Document(doc! { "a": 1 }),
        ];
        all.extend((0..100).map(|_| Bson::ObjectId(ObjectId::new())));
        all.extend((0..100).map(|i| Bson::String(format!("user-{i}"))));
        all.extend((100..200).map(Bson::Int64));
        ids.insert_many(all.iter().map(|id| doc! { "_id": id.clone() }))
            .await
            .unwrap();
        for count in [2, 4, 7] {
            let computed: Vec<BsonDocument> = ids
                .aggregate([doc! { "$project": { "p": expression("$_id", count) } }])
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            assert_eq!(computed.len(), all.len());
            for row in computed {
                let id = row.get("_id").unwrap();
                let server = match row.get("p").unwrap() {
                    Bson::Int32(n) => i64::from(*n),
                    Bson::Int64(n) => *n,
                    Bson::Double(n) => *n as i64,
                    other => panic!("{other}"),
                };
                assert_eq!(
                    server,
                    partition_of(id, count) as i64,
                    "the partition of {id} among {count}"
                );
            }
        }
    }

    #[test]
    fn object_ids_spread_over_the_partitions() {
        let mut counts = [0_usize; 4];
        for _ in 0..4000 {
            counts[partition_of(&Bson::ObjectId(ObjectId::new()), 4)] += 1;
        }
        assert!(counts.iter().all(|c| *c > 700), "{counts:?}");
        let mut counts = [0_usize; 4];
        for i in 0..4000 {
            counts[partition_of(&Bson::String(format!("user-{i}")), 4)] += 1;
        }
        assert!(counts.iter().all(|c| *c > 700), "{counts:?}");
    }

    #[test]
    fn ids_of_a_split_name_collide_with_no_name_and_no_lane() {
        let partition = Partition { index: 2, count: 4 };
        assert_eq!(
            partition.id("posts"),
            Bson::Document(partition_id("posts", 2, 4))
        );
        assert_eq!(Partition::whole().id("posts"), Bson::String("posts".into()));
        assert_eq!(partition.label("posts"), "posts 2/4");
        assert!(Partition::whole().filter().is_none());
        assert!(partition.filter().is_some());
        let id = partition_id("posts", 2, 4);
        assert!(!id.contains_key("lease") && !id.contains_key("member"));
    }
}
