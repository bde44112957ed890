//! Reads an `explain` reply into the facts `prove` reports: the indexes scanned, whether a
//! blocking sort ran, whether the plan was covered.
//!
//! Every layout that mongod 7 and 8 produce is read, as `jstests/libs/query/analyze_plan.js` in
//! the server's repository walks them (`getPlanStages`, `getWinningPlanFromExplain`,
//! `getAggPlanStages`, `getQueryPlanners`, `isIndexOnly`):
//!
//! - classic engine: `queryPlanner.winningPlan` is a tree of `stage` with `inputStage` /
//!   `inputStages` (and `thenStage`, `elseStage`, `outerStage`, `innerStage`, `child`,
//!   `leftChild`, `rightChild` where a stage has them);
//! - slot-based engine (SBE, `explainVersion: "2"`): the same tree under
//!   `queryPlanner.winningPlan.queryPlan`, beside `slotBasedPlan`;
//! - through mongos: `queryPlanner.winningPlan` is `SHARD_MERGE`, `SINGLE_SHARD` or
//!   `SHARD_MERGE_SORT` with `shards: [ { shardName, winningPlan, .. } ]`, and the totals in
//!   `executionStats` (per shard in `executionStats.executionStages.shards`);
//! - aggregate: `stages: [ { $cursor: { queryPlanner, executionStats } }, { $match: .. }, .. ]`
//!   (`$geoNearCursor` for `$geoNear`); a pipeline the server pushed down whole has a top-level
//!   `queryPlanner` (`optimizedPipeline`, or `explainVersion: "2"` with `$group` as a `GROUP`
//!   stage); through mongos, `splitPipeline.mergerPart` and `shards: { <name>: { stages } }` or
//!   `shards: { <name>: { queryPlanner, executionStats } }`.
//!
//! SecantusDB answers in the classic layout; its aggregate reply carries `stages` with a
//! `$cursor` and also a copy of the same plan at the top level (read once), and its
//! `executionStats.executionStages` leaves out the `SORT` that its `queryPlanner` shows, so the
//! stages are always read from the planner's section.

use mongodb::bson::{doc, Bson, Document};

/// What one `explain` reply says about how the server ran a query.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct PlanFacts {
    /// Every stage name of the winning plans, outermost first: for an aggregate the pipeline
    /// stages after the query layer (last first, `$sort`, `$group`, ...) and then the query
    /// layer's tree; through mongos the router's stage, then each shard's plan in turn.
    pub stages: Vec<String>,
    /// The indexes scanned (`IXSCAN`, `EXPRESS_IXSCAN`, `COUNT_SCAN`, `DISTINCT_SCAN`, `GEO_NEAR_*`,
    /// `TEXT`, ...), each once, in the order first met. `IDHACK`, `EXPRESS_CLUSTERED_IXSCAN` and
    /// `CLUSTERED_IXSCAN`, which name no index, count as `_id_`.
    pub indexes: Vec<String>,
    /// The key pattern of each entry of `indexes`, at the same position (an empty document when
    /// the reply gives none). mongod 8's express stages write it as text (`"{ a: 1, b: 1 }"`);
    /// it is parsed back into a document.
    pub index_keys: Vec<Document>,
    /// A `COLLSCAN` (or SBE `scan`) ran somewhere, on any shard.
    pub collscan: bool,
    /// A blocking sort ran: a `SORT` stage (SBE `sort`), or a `$sort` stage left in an aggregate
    /// pipeline (one the query layer did not absorb), on any shard or in the merging part.
    /// `SORT_MERGE`, `SHARD_MERGE_SORT`, `SORT_KEY_GENERATOR` and `$mergeCursors` merge or tag
    /// results that are already ordered and do not count.
    pub blocking_sort: bool,
    /// A `SORT_MERGE` stage merged index scans that are each in sort order (an `$or` or `$in`
    /// served in index order).
    pub sort_merge: bool,
    /// `maxScansToExplodeReached` was true in some `queryPlanner` (a shard's included): the planner
    /// gave up exploding point intervals into a merge sort, so a `SORT` may follow from the
    /// number of `$in` values rather than from the index.
    pub max_scans_to_explode_reached: bool,
    /// The plan read index keys only: an index was scanned, no stage fetched documents (`FETCH`,
    /// `COLLSCAN`, `IDHACK` and the express stages do) and, when `executionStats` were returned,
    /// no document was examined.
    pub covered: bool,
    /// `nReturned` of the query layer (summed over shards): for an aggregate, the documents the
    /// query layer passed to the pipeline.
    pub returned: Option<i64>,
    /// `totalKeysExamined`, summed over shards.
    pub keys_examined: Option<i64>,
    /// `totalDocsExamined`, summed over shards.
    pub docs_examined: Option<i64>,
    /// The shape of the reply that was read.
    pub layout: Layout,
    /// How many shards' plans the reply held (0 when it did not come through mongos).
    pub shards: usize,
}

impl PlanFacts {
    /// Whether an index served the query and no collection scan ran.
    pub fn uses_index(&self) -> bool {
        !self.indexes.is_empty() && !self.collscan
    }

    /// Whether the reply held a plan that read anything: false for a plan of `EOF` alone (a
    /// collection that does not exist, or a filter that can match nothing) and for a reply
    /// whose layout was not recognised.
    pub fn has_plan(&self) -> bool {
        self.stages.iter().any(|stage| stage != "EOF")
    }
}

/// The layout of an `explain` reply, outermost wrapping first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Layout {
    /// Nothing recognised: no `queryPlanner` and no `stages`.
    #[default]
    Unknown,
    /// The classic engine: `queryPlanner.winningPlan` is the stage tree.
    Classic,
    /// The slot-based engine: the stage tree is `queryPlanner.winningPlan.queryPlan`.
    Sbe,
    /// Through mongos: the layout of the (first) shard's part inside.
    Sharded(Box<Layout>),
    /// An aggregate: the layout of its query layer inside (`Unknown` when the pipeline has none,
    /// such as one starting with `$documents`).
    Aggregate(Box<Layout>),
}

/// Whether a query with a sort was served in index order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortVerdict {
    /// No blocking sort: the index (or a `SORT_MERGE` of index scans) gave the order.
    InIndexOrder,
    /// A blocking sort ran on a server whose planner walks the index when it can.
    BlockingSort,
    /// The reply cannot tell: the server sorts in memory where mongod walks the index
    /// (SecantusDB), or the plan read nothing (`EOF`, or an unrecognised reply).
    UnknownOnThisServer,
}

/// Reads an `explain` reply (any verbosity) of `find`, `count`, `distinct` or `aggregate`,
/// from mongod, mongos or SecantusDB.
pub fn read_plan(reply: &Document) -> PlanFacts {
    let mut reader = Reader::default();
    reader.facts.layout = reader.node(reply);
    reader.finish()
}

/// What a sorted query's plan says about its order. `server_sorts_in_memory` is true on a
/// server that adds an in-memory `SORT` where mongod walks the index (SecantusDB, see
/// [`is_secantus`]): there a blocking sort proves nothing.
pub fn sort_verdict(facts: &PlanFacts, server_sorts_in_memory: bool) -> SortVerdict {
    if !facts.has_plan() {
        SortVerdict::UnknownOnThisServer
    } else if !facts.blocking_sort {
        SortVerdict::InIndexOrder
    } else if server_sorts_in_memory {
        SortVerdict::UnknownOnThisServer
    } else {
        SortVerdict::BlockingSort
    }
}

/// Whether a `buildInfo` reply comes from SecantusDB: it has a `secantusVersion` field (its
/// `version` imitates mongod's, `"8.2.11"` for SecantusDB 0.7.0b3, and cannot tell).
pub fn is_secantus(build_info: &Document) -> bool {
    build_info.contains_key("secantusVersion")
}

/// The stage tree children a plan stage may have (`flattenPlan` in `analyze_plan.js`).
const CHILD_STAGE: [&str; 8] = [
    "inputStage",
    "thenStage",
    "elseStage",
    "outerStage",
    "innerStage",
    "child",
    "leftChild",
    "rightChild",
];

/// Stages that read whole documents, so a plan with one of them is not covered.
const FETCHING: [&str; 9] = [
    "FETCH",
    "COLLSCAN",
    "IDHACK",
    "EXPRESS_IXSCAN",
    "EXPRESS_CLUSTERED_IXSCAN",
    "EXPRESS_UPDATE",
    "EXPRESS_DELETE",
    "CLUSTERED_IXSCAN",
    // SBE's execution tree: a `seek` reads the document of a record id, a `scan` the collection
    "seek",
];

/// Index scans that name no index: the `_id` (or clustered) index.
const ID_SCAN: [&str; 5] = [
    "IDHACK",
    "EXPRESS_CLUSTERED_IXSCAN",
    "EXPRESS_UPDATE",
    "EXPRESS_DELETE",
    "CLUSTERED_IXSCAN",
];

#[derive(Default)]
struct Reader {
    facts: PlanFacts,
    fetches: bool,
}

/// `nReturned`, `totalKeysExamined`, `totalDocsExamined`.
type Counts = [Option<i64>; 3];

const COUNT_FIELDS: [&str; 3] = ["nReturned", "totalKeysExamined", "totalDocsExamined"];

impl Reader {
    fn finish(mut self) -> PlanFacts {
        let facts = &mut self.facts;
        facts.covered = !facts.indexes.is_empty()
            && !self.fetches
            && !facts.collscan
            && facts.docs_examined.is_none_or(|docs| docs == 0);
        self.facts
    }

    /// A whole reply, or one shard's part of a sharded aggregate.
    fn node(&mut self, node: &Document) -> Layout {
        if let Some(shards) = document(node, "shards") {
            return self.sharded_aggregate(node, shards);
        }
        if let Some(pipeline) = array(node, "stages") {
            return self.aggregate(node, pipeline);
        }
        if node.contains_key("queryPlanner") {
            let layout = self.query_layer(node, true);
            let aggregate = document(node, "command").is_some_and(|c| c.contains_key("aggregate"))
                || document(node, "queryPlanner").is_some_and(|qp| flag(qp, "optimizedPipeline"));
            return if aggregate {
                Layout::Aggregate(Box::new(layout))
            } else {
                layout
            };
        }
        if let Some(stats) = document(node, "executionStats") {
            // no planner section: walk the execution tree (`getPlanStages` on executionStages)
            if let Some(root) = document(stats, "executionStages") {
                self.walk(root);
            }
            self.add_counts(counts(stats));
            return Layout::Classic;
        }
        Layout::Unknown
    }

    /// `{ splitPipeline: { mergerPart }, shards: { <name>: { stages | queryPlanner } } }`.
    fn sharded_aggregate(&mut self, node: &Document, shards: &Document) -> Layout {
        if let Some(merger) = document(node, "splitPipeline").and_then(|s| array(s, "mergerPart")) {
            for stage in merger.iter().rev().filter_map(Bson::as_document) {
                self.pipeline_stage(stage);
            }
        }
        let mut inner = None;
        for (_, shard) in shards.iter() {
            let Some(shard) = shard.as_document() else {
                continue;
            };
            self.facts.shards += 1;
            let layout = match self.node(shard) {
                aggregate @ Layout::Aggregate(_) => aggregate,
                other => Layout::Aggregate(Box::new(other)),
            };
            inner.get_or_insert(layout);
        }
        Layout::Sharded(Box::new(inner.unwrap_or_default()))
    }

    /// `{ stages: [ { $cursor: { queryPlanner, executionStats } }, { $sort: .. }, .. ] }`.
    fn aggregate(&mut self, node: &Document, pipeline: &[Bson]) -> Layout {
        let stages: Vec<&Document> = pipeline.iter().filter_map(Bson::as_document).collect();
        let cursor = stages.first().and_then(|first| {
            document(first, "$cursor").or_else(|| document(first, "$geoNearCursor"))
        });
        let rest = if cursor.is_some() {
            &stages[1..]
        } else {
            &stages[..]
        };
        for stage in rest.iter().rev() {
            self.pipeline_stage(stage);
        }
        let inner = match cursor {
            Some(cursor) if cursor.contains_key("queryPlanner") => {
                let layout = self.query_layer(cursor, false);
                if cursor.contains_key("executionStats") {
                    self.add_counts(document(cursor, "executionStats").map_or([None; 3], counts));
                } else if let Some(stats) = document(node, "executionStats") {
                    self.add_counts(counts(stats));
                }
                layout
            }
            // no query layer in the pipeline; a top-level planner section stands for it
            _ if node.contains_key("queryPlanner") => self.query_layer(node, true),
            _ => Layout::Unknown,
        };
        Layout::Aggregate(Box::new(inner))
    }

    /// One stage of an aggregate pipeline: its name is its first `$` field (with
    /// `executionStats` it has `nReturned` and others beside it).
    fn pipeline_stage(&mut self, stage: &Document) {
        let Some(name) = stage.keys().find(|key| key.starts_with('$')) else {
            return;
        };
        if name == "$sort" {
            self.facts.blocking_sort = true;
        }
        self.facts.stages.push(name.clone());
    }

    /// A document with `queryPlanner` (and maybe `executionStats`): a reply, a `$cursor`, a
    /// shard's part. `with_counts` adds its `executionStats` totals.
    fn query_layer(&mut self, holder: &Document, with_counts: bool) -> Layout {
        let sbe_version = matches!(holder.get("explainVersion"), Some(Bson::String(v)) if v == "2");
        let mut layout = Layout::Unknown;
        if let Some(planner) = document(holder, "queryPlanner") {
            if let Some(winning) = document(planner, "winningPlan") {
                if array(winning, "shards").is_some() {
                    self.max_scans(planner);
                    let first = self.walk(winning);
                    layout = Layout::Sharded(Box::new(first.unwrap_or_default()));
                } else {
                    layout = self.planner_section(planner);
                }
            }
        }
        if layout == Layout::Unknown {
            if let Some(root) =
                document(holder, "executionStats").and_then(|s| document(s, "executionStages"))
            {
                self.walk(root);
                layout = Layout::Classic;
            }
        }
        if sbe_version && layout == Layout::Classic {
            layout = Layout::Sbe;
        }
        if with_counts {
            if let Some(stats) = document(holder, "executionStats") {
                self.add_counts(counts(stats));
            }
        }
        layout
    }

    /// A `queryPlanner` (or a shard's entry in `winningPlan.shards`): walks its winning plan and
    /// tells the engine.
    fn planner_section(&mut self, planner: &Document) -> Layout {
        self.max_scans(planner);
        let Some(winning) = document(planner, "winningPlan") else {
            return Layout::Unknown;
        };
        match document(winning, "queryPlan") {
            Some(tree) => {
                self.walk(tree);
                Layout::Sbe
            }
            None => {
                self.walk(winning);
                if winning.contains_key("slotBasedPlan") {
                    Layout::Sbe
                } else {
                    Layout::Classic
                }
            }
        }
    }

    fn max_scans(&mut self, planner: &Document) {
        if flag(planner, "maxScansToExplodeReached") {
            self.facts.max_scans_to_explode_reached = true;
        }
    }

    /// Walks a stage tree (`getPlanStages`); returns the layout of the first shard met under a
    /// `shards` array.
    fn walk(&mut self, stage: &Document) -> Option<Layout> {
        let name = match stage.get("stage").or_else(|| stage.get("nodeType")) {
            Some(Bson::String(name)) => Some(name.as_str()),
            _ => None,
        };
        if let Some(name) = name {
            self.stage(name, stage);
        }
        let mut first_shard = None;
        for key in CHILD_STAGE {
            if let Some(child) = document(stage, key) {
                let found = self.walk(child);
                first_shard = first_shard.or(found);
            }
        }
        if let Some(children) = array(stage, "inputStages") {
            for child in children.iter().filter_map(Bson::as_document) {
                let found = self.walk(child);
                first_shard = first_shard.or(found);
            }
        }
        if let Some(shards) = array(stage, "shards") {
            for shard in shards.iter().filter_map(Bson::as_document) {
                self.facts.shards += 1;
                let layout = if shard.contains_key("winningPlan") {
                    let sbe =
                        matches!(shard.get("explainVersion"), Some(Bson::String(v)) if v == "2");
                    match self.planner_section(shard) {
                        Layout::Classic if sbe => Layout::Sbe,
                        other => other,
                    }
                } else if let Some(root) = document(shard, "executionStages") {
                    self.walk(root);
                    Layout::Classic
                } else {
                    Layout::Unknown
                };
                first_shard.get_or_insert(layout);
            }
        }
        first_shard
    }

    /// Records one plan stage.
    fn stage(&mut self, name: &str, stage: &Document) {
        let facts = &mut self.facts;
        facts.stages.push(name.to_owned());
        match name {
            "COLLSCAN" | "scan" => facts.collscan = true,
            "SORT" | "sort" => facts.blocking_sort = true,
            "SORT_MERGE" => facts.sort_merge = true,
            _ => {}
        }
        if FETCHING.contains(&name) {
            self.fetches = true;
        }
        let index = match stage.get("indexName") {
            Some(Bson::String(index)) => Some(index.clone()),
            _ if ID_SCAN.contains(&name) => Some("_id_".to_owned()),
            _ => None,
        };
        if let Some(index) = index {
            let key = match stage.get("keyPattern") {
                Some(Bson::Document(key)) => key.clone(),
                Some(Bson::String(text)) => parse_key_pattern(text).unwrap_or_default(),
                _ if index == "_id_" => doc! { "_id": 1 },
                _ => Document::new(),
            };
            let seen = self
                .facts
                .indexes
                .iter()
                .zip(&self.facts.index_keys)
                .any(|(name, pattern)| *name == index && *pattern == key);
            if !seen {
                self.facts.indexes.push(index);
                self.facts.index_keys.push(key);
            }
        }
    }

    fn add_counts(&mut self, counts: Counts) {
        let facts = &mut self.facts;
        for (total, count) in [
            &mut facts.returned,
            &mut facts.keys_examined,
            &mut facts.docs_examined,
        ]
        .into_iter()
        .zip(counts)
        {
            if let Some(count) = count {
                *total = Some(total.unwrap_or(0).saturating_add(count));
            }
        }
    }
}

/// The totals of an `executionStats`: its own fields, else those of its `executionStages` (as
/// mongos writes them), else the sum over `executionStages.shards`.
fn counts(stats: &Document) -> Counts {
    let stages = document(stats, "executionStages");
    let shards = stages.and_then(|s| array(s, "shards"));
    COUNT_FIELDS.map(|field| {
        number(stats, field)
            .or_else(|| stages.and_then(|s| number(s, field)))
            .or_else(|| {
                shards.and_then(|shards| {
                    shards
                        .iter()
                        .filter_map(Bson::as_document)
                        .filter_map(|shard| {
                            number(shard, field).or_else(|| {
                                document(shard, "executionStats").and_then(|s| number(s, field))
                            })
                        })
                        .reduce(i64::saturating_add)
                })
            })
    })
}

/// Parses the text form of a key pattern (`"{ a: 1, b: -1 }"`, `"{ loc: \"2dsphere\" }"`).
fn parse_key_pattern(text: &str) -> Option<Document> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?.trim();
    let mut pattern = Document::new();
    if inner.is_empty() {
        return Some(pattern);
    }
    for part in inner.split(',') {
        let (field, value) = part.rsplit_once(':')?;
        let field = unquote(field.trim());
        let value = value.trim();
        if field.is_empty() || value.is_empty() {
            return None;
        }
        let value = if let Ok(v) = value.parse::<i32>() {
            Bson::Int32(v)
        } else if let Ok(v) = value.parse::<i64>() {
            Bson::Int64(v)
        } else if let Ok(v) = value.parse::<f64>() {
            Bson::Double(v)
        } else {
            Bson::String(unquote(value).to_owned())
        };
        pattern.insert(field, value);
    }
    Some(pattern)
}

fn unquote(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

fn document<'a>(doc: &'a Document, key: &str) -> Option<&'a Document> {
    match doc.get(key) {
        Some(Bson::Document(value)) => Some(value),
        _ => None,
    }
}

fn array<'a>(doc: &'a Document, key: &str) -> Option<&'a [Bson]> {
    match doc.get(key) {
        Some(Bson::Array(value)) => Some(value.as_slice()),
        _ => None,
    }
}

fn flag(doc: &Document, key: &str) -> bool {
    matches!(doc.get(key), Some(Bson::Boolean(true)))
}

/// An int32, int64 or double count (a double is truncated; NaN and infinities are ignored).
fn number(doc: &Document, key: &str) -> Option<i64> {
    match doc.get(key) {
        Some(Bson::Int32(v)) => Some(i64::from(*v)),
        Some(Bson::Int64(v)) => Some(*v),
        Some(Bson::Double(v)) if v.is_finite() => Some(*v as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
