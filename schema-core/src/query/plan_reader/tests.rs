use super::*;

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn ixscan(index: &str, key: Document) -> Document {
    doc! {
        "stage": "IXSCAN", "keyPattern": key, "indexName": index, "isMultiKey": false,
        "isUnique": false, "isSparse": false, "isPartial": false, "indexVersion": 2,
        "direction": "forward",
    }
}

// ---- classic engine ------------------------------------------------------------------

/// mongod 6.0.3, classic engine, `find` with a sort the index does not give (top-k SORT):
/// github.com/zmproni/flight-dataset-preprocessing-and-loading, results/indexed/2nd-qry.js
/// (bounds, transformBy and most stats trimmed).
fn classic_blocking_sort() -> Document {
    let key = doc! { "startingAirport": 1, "destinationAirport": 1 };
    doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": "expedia.tickets",
            "maxIndexedOrSolutionsReached": false,
            "maxIndexedAndSolutionsReached": false,
            "maxScansToExplodeReached": false,
            "winningPlan": {
                "stage": "PROJECTION_DEFAULT",
                "inputStage": {
                    "stage": "SORT", "sortPattern": { "baseFare": 1 }, "memLimit": 104857600,
                    "limitAmount": 10, "type": "simple",
                    "inputStage": {
                        "stage": "FETCH",
                        "inputStage": ixscan("startingAirport_1_destinationAirport_1", key),
                    },
                },
            },
            "rejectedPlans": [],
        },
        "executionStats": {
            "executionSuccess": true, "nReturned": 10, "executionTimeMillis": 131,
            "totalKeysExamined": 128467, "totalDocsExamined": 128466,
            "executionStages": { "stage": "PROJECTION_DEFAULT", "nReturned": 10 },
        },
        "serverInfo": { "version": "6.0.3" },
        "ok": 1,
    }
}

#[test]
fn classic_find_with_blocking_sort() {
    let facts = read_plan(&classic_blocking_sort());
    assert_eq!(facts.layout, Layout::Classic);
    assert_eq!(
        facts.stages,
        strings(&["PROJECTION_DEFAULT", "SORT", "FETCH", "IXSCAN"])
    );
    assert_eq!(
        facts.indexes,
        strings(&["startingAirport_1_destinationAirport_1"])
    );
    assert_eq!(
        facts.index_keys,
        vec![doc! { "startingAirport": 1, "destinationAirport": 1 }]
    );
    assert!(facts.blocking_sort && !facts.sort_merge && !facts.collscan);
    assert!(!facts.covered && !facts.max_scans_to_explode_reached);
    assert_eq!(facts.returned, Some(10));
    assert_eq!(facts.keys_examined, Some(128467));
    assert_eq!(facts.docs_examined, Some(128466));
    assert_eq!(facts.shards, 0);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::BlockingSort);
    assert_eq!(sort_verdict(&facts, true), SortVerdict::UnknownOnThisServer);
}

/// `$in` with a sort served by merging index scans, as the planner explodes point
/// intervals. Constructed: a classic plan with a `SORT_MERGE` (`sortPattern`, `inputStages`
/// of IXSCAN) in the layout `getPlanStages` of jstests/libs/query/analyze_plan.js walks, with
/// the `queryPlanner` fields of the mongod 6/7 replies above.
fn sort_merge(max_scans: bool, sort_on_top: bool) -> Document {
    let key = doc! { "a": 1, "b": 1 };
    let merge = doc! {
        "stage": "SORT_MERGE", "sortPattern": { "b": 1 },
        "inputStages": [ixscan("a_1_b_1", key.clone()), ixscan("a_1_b_1", key)],
    };
    let mut plan = doc! { "stage": "FETCH", "inputStage": merge };
    if sort_on_top {
        plan = doc! { "stage": "SORT", "sortPattern": { "b": 1 }, "type": "simple",
        "inputStage": plan };
    }
    doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "maxIndexedOrSolutionsReached": false,
            "maxIndexedAndSolutionsReached": false,
            "maxScansToExplodeReached": max_scans,
            "winningPlan": plan,
            "rejectedPlans": [],
        },
    }
}

#[test]
fn sort_merge_is_index_order() {
    let facts = read_plan(&sort_merge(false, false));
    assert_eq!(
        facts.stages,
        strings(&["FETCH", "SORT_MERGE", "IXSCAN", "IXSCAN"])
    );
    // the same index, scanned twice, is listed once
    assert_eq!(facts.indexes, strings(&["a_1_b_1"]));
    assert!(facts.sort_merge && !facts.blocking_sort);
    assert!(!facts.max_scans_to_explode_reached);
    assert_eq!(facts.returned, None);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::InIndexOrder);
    assert_eq!(sort_verdict(&facts, true), SortVerdict::InIndexOrder);
}

#[test]
fn max_scans_to_explode_reached_is_read() {
    let facts = read_plan(&sort_merge(true, true));
    assert!(facts.max_scans_to_explode_reached);
    assert!(facts.blocking_sort);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::BlockingSort);
}

/// `$or` planned per clause (SUBPLAN over OR of two index scans) with FETCH above.
/// Constructed in the layout `getPlanStages` of jstests/libs/query/analyze_plan.js walks.
#[test]
fn subplan_or_lists_every_index() {
    let reply = doc! {
        "queryPlanner": {
            "winningPlan": {
                "stage": "SUBPLAN",
                "inputStage": {
                    "stage": "FETCH",
                    "inputStage": {
                        "stage": "OR",
                        "inputStages": [
                            ixscan("a_1", doc! { "a": 1 }),
                            ixscan("b_1", doc! { "b": 1 }),
                        ],
                    },
                },
            },
        },
    };
    let facts = read_plan(&reply);
    assert_eq!(
        facts.stages,
        strings(&["SUBPLAN", "FETCH", "OR", "IXSCAN", "IXSCAN"])
    );
    assert_eq!(facts.indexes, strings(&["a_1", "b_1"]));
    assert_eq!(facts.index_keys, vec![doc! { "a": 1 }, doc! { "b": 1 }]);
    assert!(facts.uses_index() && !facts.covered && !facts.blocking_sort);
}

/// A covered `find` (PROJECTION_COVERED over IXSCAN, no FETCH), the shape
/// `assertCoveredQueryAndCount` in jstests/libs/query/analyze_plan.js checks with
/// `isIndexOnly`. Constructed.
#[test]
fn covered_and_not_covered() {
    let covered = |docs: Bson| {
        doc! {
            "queryPlanner": { "winningPlan": {
                "stage": "PROJECTION_COVERED", "transformBy": { "_id": 0, "a": 1 },
                "inputStage": ixscan("a_1", doc! { "a": 1 }),
            } },
            "executionStats": { "nReturned": 3, "totalKeysExamined": 3,
                                "totalDocsExamined": docs },
        }
    };
    assert!(read_plan(&covered(Bson::Int32(0))).covered);
    // a covered-looking plan that examined documents is not covered
    assert!(!read_plan(&covered(Bson::Int32(3))).covered);
    // a FETCH that examined nothing (no match) is still not covered
    let mut fetch = classic_blocking_sort();
    fetch
        .get_document_mut("executionStats")
        .unwrap()
        .insert("totalDocsExamined", 0);
    assert!(!read_plan(&fetch).covered);
    // queryPlanner verbosity: no stats, the plan alone decides
    let mut planner_only = covered(Bson::Int32(0));
    planner_only.remove("executionStats");
    let facts = read_plan(&planner_only);
    assert!(facts.covered && facts.docs_examined.is_none());
}

/// Counts come as int32, int64 or double (the driver decodes what the server wrote).
#[test]
fn numbers_of_every_type() {
    let reply = doc! {
        "queryPlanner": { "winningPlan": { "stage": "COLLSCAN", "direction": "forward" } },
        "executionStats": {
            "nReturned": 7_i32, "totalKeysExamined": 5_000_000_000_i64,
            "totalDocsExamined": 50.0_f64,
        },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.returned, Some(7));
    assert_eq!(facts.keys_examined, Some(5_000_000_000));
    assert_eq!(facts.docs_examined, Some(50));
    assert!(facts.collscan && !facts.uses_index() && !facts.covered);
}

/// mongod ≤ 7 `_id` equality: IDHACK names no index (jstests/libs/query/analyze_plan.js
/// `isIdhack`). Constructed.
#[test]
fn idhack_counts_as_id_index() {
    let reply = doc! {
        "queryPlanner": { "winningPlan": { "stage": "IDHACK" } },
        "executionStats": { "nReturned": 1, "totalKeysExamined": 1, "totalDocsExamined": 1 },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.indexes, strings(&["_id_"]));
    assert_eq!(facts.index_keys, vec![doc! { "_id": 1 }]);
    assert!(facts.uses_index() && !facts.covered);
}

/// mongod 8.0.0-rc15 express path, key pattern as text: mongodb-js/compass,
/// packages/explain-plan-helper/test/fixtures/express_index_scan.json.
#[test]
fn express_index_scan() {
    let reply = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": "airbnb.t",
            "maxScansToExplodeReached": false,
            "winningPlan": {
                "isCached": false, "stage": "EXPRESS_IXSCAN",
                "keyPattern": "{ a: 1, b: 1 }", "indexName": "a_1_b_1",
            },
            "rejectedPlans": [],
        },
        "executionStats": {
            "executionSuccess": true, "nReturned": 1, "executionTimeMillis": 0,
            "totalKeysExamined": 1, "totalDocsExamined": 1,
            "executionStages": {
                "isCached": false, "stage": "EXPRESS_IXSCAN",
                "keyPattern": "{ a: 1, b: 1 }", "indexName": "a_1_b_1",
                "keysExamined": 1, "docsExamined": 1, "nReturned": 1,
            },
        },
        "serverInfo": { "version": "8.0.0-rc15" },
        "ok": 1,
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Classic);
    assert_eq!(facts.stages, strings(&["EXPRESS_IXSCAN"]));
    assert_eq!(facts.indexes, strings(&["a_1_b_1"]));
    assert_eq!(facts.index_keys, vec![doc! { "a": 1, "b": 1 }]);
    assert!(facts.uses_index() && !facts.covered && !facts.blocking_sort);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::InIndexOrder);
}

/// mongod 8.0.0-rc15 express path on a clustered collection, no index named:
/// mongodb-js/compass, packages/explain-plan-helper/test/fixtures/express_clustered_scan.json.
#[test]
fn express_clustered_scan() {
    let reply = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": "airbnb.cs",
            "winningPlan": { "isCached": false, "stage": "EXPRESS_CLUSTERED_IXSCAN" },
            "rejectedPlans": [],
        },
        "executionStats": {
            "nReturned": 1, "totalKeysExamined": 0, "totalDocsExamined": 1,
            "executionStages": { "stage": "EXPRESS_CLUSTERED_IXSCAN" },
        },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.indexes, strings(&["_id_"]));
    assert_eq!(facts.index_keys, vec![doc! { "_id": 1 }]);
    assert!(!facts.covered && !facts.collscan);
}

/// A query on a collection that does not exist plans as EOF (analyze_plan.js `isEofPlan`).
/// Constructed.
#[test]
fn eof_plan_tells_nothing() {
    let reply = doc! { "queryPlanner": { "winningPlan": { "stage": "EOF" } } };
    let facts = read_plan(&reply);
    assert_eq!(facts.stages, strings(&["EOF"]));
    assert!(!facts.has_plan() && !facts.uses_index() && !facts.covered);
    assert_eq!(
        sort_verdict(&facts, false),
        SortVerdict::UnknownOnThisServer
    );
    let nothing = read_plan(&doc! { "ok": 1 });
    assert_eq!(nothing.layout, Layout::Unknown);
    assert_eq!(
        sort_verdict(&nothing, false),
        SortVerdict::UnknownOnThisServer
    );
}

#[test]
fn key_pattern_text() {
    assert_eq!(
        parse_key_pattern("{ a: 1, b.c: -1 }"),
        Some(doc! { "a": 1, "b.c": -1 })
    );
    assert_eq!(
        parse_key_pattern("{ loc: \"2dsphere\", n: 1.5 }"),
        Some(doc! { "loc": "2dsphere", "n": 1.5 })
    );
    assert_eq!(parse_key_pattern("{}"), Some(Document::new()));
    assert_eq!(parse_key_pattern("a: 1"), None);
}

// ---- slot-based engine ---------------------------------------------------------------

/// mongod 7/8 SBE `find`: `explainVersion: "2"`, the tree under `winningPlan.queryPlan`
/// beside `slotBasedPlan`. Constructed in the layout of the slot-based example of the server
/// manual's Explain Results page (v8) and of the SBE `$cursor` in mongodb-js/compass
/// packages/explain-plan-helper/test/fixtures/aggregate_$cursor_sbe.json.
fn sbe_find(sorted_in_memory: bool) -> Document {
    let scan = doc! {
        "stage": "IXSCAN", "planNodeId": 1, "keyPattern": { "a": 1, "b": -1 },
        "indexName": "a_1_b_-1", "isMultiKey": false, "direction": "forward",
    };
    let fetch = doc! { "stage": "FETCH", "planNodeId": 2, "inputStage": scan };
    let tree = if sorted_in_memory {
        doc! { "stage": "SORT", "planNodeId": 3, "sortPattern": { "c": 1 },
        "type": "simple", "inputStage": fetch }
    } else {
        fetch
    };
    doc! {
        "explainVersion": "2",
        "queryPlanner": {
            "namespace": "test.items",
            "maxScansToExplodeReached": false,
            "winningPlan": {
                "isCached": false,
                "queryPlan": tree,
                "slotBasedPlan": { "slots": "$$RESULT=s12 env: { }", "stages": "[3] sort ..." },
            },
            "rejectedPlans": [],
        },
        "executionStats": {
            "nReturned": 7_i64, "totalKeysExamined": 7_i64, "totalDocsExamined": 7_i64,
            "executionStages": { "stage": "sort", "inputStage": { "stage": "nlj" } },
        },
    }
}

#[test]
fn sbe_find_reads_query_plan() {
    let facts = read_plan(&sbe_find(true));
    assert_eq!(facts.layout, Layout::Sbe);
    assert_eq!(facts.stages, strings(&["SORT", "FETCH", "IXSCAN"]));
    assert_eq!(facts.indexes, strings(&["a_1_b_-1"]));
    assert!(facts.blocking_sort);
    assert_eq!(facts.returned, Some(7));
    let facts = read_plan(&sbe_find(false));
    assert!(!facts.blocking_sort);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::InIndexOrder);
}

/// An execution tree alone (no planner section): SBE's lowercase `sort` and `ixseek`
/// (stage names as in the execution trees of the compass SBE fixtures). Constructed.
#[test]
fn sbe_execution_tree_fallback() {
    let reply = doc! {
        "executionStats": {
            "nReturned": 2, "totalKeysExamined": 2, "totalDocsExamined": 2,
            "executionStages": {
                "stage": "sort",
                "inputStage": {
                    "stage": "nlj",
                    "outerStage": { "stage": "ixseek", "indexName": "a_1" },
                    "innerStage": { "stage": "seek" },
                },
            },
        },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.stages, strings(&["sort", "nlj", "ixseek", "seek"]));
    assert!(facts.blocking_sort && !facts.covered);
    assert_eq!(facts.indexes, strings(&["a_1"]));
}

// ---- aggregate -----------------------------------------------------------------------

/// mongod 8.0.0-rc15, `[{$match: {a: 1}}, {$count: "count"}]`: `$group` pushed into SBE as
/// GROUP over COUNT_SCAN, `$project` left in `stages`: mongodb-js/compass,
/// packages/explain-plan-helper/test/fixtures/count_scan.json (slotBasedPlan and SBE
/// execution tree trimmed).
#[test]
fn aggregate_group_pushdown_count_scan() {
    let reply = doc! {
        "explainVersion": "2",
        "stages": [
            { "$cursor": {
                "queryPlanner": {
                    "namespace": "air.count_scan",
                    "maxIndexedOrSolutionsReached": false,
                    "maxIndexedAndSolutionsReached": false,
                    "maxScansToExplodeReached": false,
                    "winningPlan": {
                        "isCached": false,
                        "queryPlan": {
                            "stage": "GROUP", "planNodeId": 2,
                            "inputStage": {
                                "stage": "COUNT_SCAN", "planNodeId": 1,
                                "keyPattern": { "a": 1 }, "indexName": "a_1",
                                "isMultiKey": true, "indexVersion": 2,
                                "indexBounds": { "startKey": { "a": 1 },
                                                 "startKeyInclusive": true,
                                                 "endKey": { "a": 1 },
                                                 "endKeyInclusive": true },
                            },
                        },
                        "slotBasedPlan": { "slots": "$$RESULT=s8", "stages": "[2] project" },
                    },
                    "rejectedPlans": [],
                },
                "executionStats": {
                    "executionSuccess": true, "nReturned": 1, "executionTimeMillis": 2,
                    "totalKeysExamined": 2, "totalDocsExamined": 0,
                    "executionStages": { "stage": "project", "planNodeId": 2 },
                },
              },
              "nReturned": 1, "executionTimeMillisEstimate": 2 },
            { "$project": { "count": true, "_id": false },
              "nReturned": 1, "executionTimeMillisEstimate": 2 },
        ],
        "serverInfo": { "version": "8.0.0-rc15" },
        "command": { "aggregate": "count_scan",
                     "pipeline": [{ "$match": { "a": 1 } }, { "$count": "count" }] },
        "ok": 1,
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Aggregate(Box::new(Layout::Sbe)));
    assert_eq!(facts.stages, strings(&["$project", "GROUP", "COUNT_SCAN"]));
    assert_eq!(facts.indexes, strings(&["a_1"]));
    assert!(facts.covered && !facts.blocking_sort && !facts.collscan);
    assert_eq!(facts.returned, Some(1));
    assert_eq!(facts.keys_examined, Some(2));
    assert_eq!(facts.docs_examined, Some(0));
}

/// mongod 5.3 SBE `$cursor` with `$unwind` and `$limit` after it: mongodb-js/compass,
/// packages/explain-plan-helper/test/fixtures/aggregate_$cursor_sbe.json (trimmed).
#[test]
fn aggregate_sbe_cursor() {
    let reply = doc! {
        "explainVersion": "2",
        "stages": [
            { "$cursor": {
                "queryPlanner": {
                    "namespace": "bigDB.faker_hacker",
                    "maxScansToExplodeReached": false,
                    "winningPlan": {
                        "queryPlan": {
                            "stage": "LIMIT", "planNodeId": 3, "limitAmount": 6,
                            "inputStage": {
                                "stage": "FETCH", "planNodeId": 2,
                                "inputStage": ixscan("abbr_index",
                                                     doc! { "abbreviation": 1 }),
                            },
                        },
                        "slotBasedPlan": { "slots": "$$RESULT=s25", "stages": "[3] limit 6" },
                    },
                    "rejectedPlans": [],
                },
                "executionStats": {
                    "nReturned": 6, "totalKeysExamined": 479, "totalDocsExamined": 6,
                    "executionStages": { "stage": "limit" },
                },
              },
              "nReturned": 6, "executionTimeMillisEstimate": 0 },
            { "$unwind": { "path": "$noun", "preserveNullAndEmptyArrays": true },
              "nReturned": 6, "executionTimeMillisEstimate": 0 },
            { "$limit": 6, "nReturned": 6, "executionTimeMillisEstimate": 0 },
        ],
        "serverInfo": { "version": "5.3.0-rc3" },
        "ok": 1,
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Aggregate(Box::new(Layout::Sbe)));
    assert_eq!(
        facts.stages,
        strings(&["$limit", "$unwind", "LIMIT", "FETCH", "IXSCAN"])
    );
    assert_eq!(facts.indexes, strings(&["abbr_index"]));
    assert_eq!(facts.keys_examined, Some(479));
    assert!(!facts.blocking_sort && !facts.covered);
}

/// mongod classic aggregate whose `$sort` follows a `$group` and so stays in the pipeline
/// (analyze_plan.js `getAggPlanStages(explain, "$sort")` finds it in `stages`; `sortKey` as
/// mongod writes a `$sort` in explain). Constructed.
#[test]
fn aggregate_sort_not_absorbed_is_blocking() {
    let reply = doc! {
        "explainVersion": "1",
        "stages": [
            { "$cursor": { "queryPlanner": {
                "winningPlan": { "stage": "PROJECTION_COVERED",
                                 "inputStage": ixscan("a_1", doc! { "a": 1 }) },
            } } },
            { "$group": { "_id": "$a", "n": { "$sum": { "$const": 1 } } } },
            { "$sort": { "sortKey": { "n": -1 } } },
        ],
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Aggregate(Box::new(Layout::Classic)));
    assert_eq!(
        facts.stages,
        strings(&["$sort", "$group", "PROJECTION_COVERED", "IXSCAN"])
    );
    assert!(facts.blocking_sort && facts.covered);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::BlockingSort);
}

/// mongod 7+: an aggregate pushed down whole has `queryPlanner` at the top (the shape
/// `getAggPlanStages` handles with `optimizedPipeline`, and `explainVersion: "2"` with the
/// `$group` as GROUP, as on each shard of the compass multi-shard fixture below).
/// Constructed.
#[test]
fn aggregate_pushed_down_whole() {
    let reply = doc! {
        "explainVersion": "2",
        "queryPlanner": {
            "namespace": "test.items",
            "optimizedPipeline": true,
            "maxScansToExplodeReached": false,
            "winningPlan": {
                "isCached": true,
                "queryPlan": {
                    "stage": "GROUP", "planNodeId": 3,
                    "inputStage": { "stage": "FETCH", "planNodeId": 2,
                                    "inputStage": ixscan("a_1_b_-1",
                                                         doc! { "a": 1, "b": -1 }) },
                },
                "slotBasedPlan": { "slots": "", "stages": "" },
            },
        },
        "executionStats": { "nReturned": 1, "totalKeysExamined": 7, "totalDocsExamined": 7 },
        "command": { "aggregate": "items", "pipeline": [] },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Aggregate(Box::new(Layout::Sbe)));
    assert_eq!(facts.stages, strings(&["GROUP", "FETCH", "IXSCAN"]));
    assert_eq!(facts.docs_examined, Some(7));
    assert!(!facts.blocking_sort);
}

// ---- sharded -------------------------------------------------------------------------

/// mongos over three shards, one of which scans the collection: mongodb-js/compass,
/// packages/explain-plan-helper/test/fixtures/sharded_mixed_index_3.2.json (serverInfo and
/// per-stage counters trimmed; the layout is unchanged in mongod 7/8).
#[test]
fn sharded_find_mixed() {
    let shard = |name: &str, tree: Document| {
        doc! {
            "shardName": name, "connectionString": "Groot.local:27051",
            "namespace": "mongodb.fanclub", "indexFilterSet": false,
            "parsedQuery": { "age": { "$eq": 40 } },
            "winningPlan": { "stage": "SHARDING_FILTER", "inputStage": tree },
            "rejectedPlans": [],
        }
    };
    let fetch = doc! { "stage": "FETCH", "inputStage": ixscan("age_1", doc! { "age": 1 }) };
    let reply = doc! {
        "queryPlanner": {
            "mongosPlannerVersion": 1,
            "winningPlan": {
                "stage": "SHARD_MERGE",
                "shards": [
                    shard("shard01", doc! { "stage": "COLLSCAN", "direction": "forward" }),
                    shard("shard02", fetch.clone()),
                    shard("shard03", fetch),
                ],
            },
        },
        "executionStats": {
            "nReturned": 22528, "executionTimeMillis": 260,
            "totalKeysExamined": 15485, "totalDocsExamined": 330552,
            "executionStages": {
                "stage": "SHARD_MERGE", "nReturned": 22528,
                "totalKeysExamined": 15485, "totalDocsExamined": 330552,
                "shards": [
                    { "shardName": "shard01",
                      "executionStages": { "stage": "SHARDING_FILTER" } },
                ],
            },
        },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Sharded(Box::new(Layout::Classic)));
    assert_eq!(facts.shards, 3);
    assert_eq!(
        facts.stages,
        strings(&[
            "SHARD_MERGE",
            "SHARDING_FILTER",
            "COLLSCAN",
            "SHARDING_FILTER",
            "FETCH",
            "IXSCAN",
            "SHARDING_FILTER",
            "FETCH",
            "IXSCAN",
        ])
    );
    assert_eq!(facts.indexes, strings(&["age_1"]));
    assert!(facts.collscan && !facts.uses_index() && !facts.covered);
    assert_eq!(facts.returned, Some(22528));
    assert_eq!(facts.docs_examined, Some(330552));
}

/// mongos merge-sorting two shards that each walk the index, `SORT_KEY_GENERATOR` on each
/// for the merge: mongodb/mongo,
/// jstests/query_golden_sharding/expected_output/sharded_explain_find_with_limit_skip
/// ("Simple limit targeting multiple shards"; the summary gives the execution trees, the
/// planner trees have the same stages). `sort_on_second` puts a SORT on the second shard.
fn sharded_merge_sort(sort_on_second: bool, sbe_second: bool) -> Document {
    let shard_tree = |sorted: bool| {
        let base = doc! {
            "stage": "FETCH",
            "inputStage": { "stage": "SHARDING_FILTER",
                            "inputStage": ixscan("x_1", doc! { "x": 1 }) },
        };
        let base = if sorted {
            doc! { "stage": "SORT", "sortPattern": { "x": 1 }, "inputStage": base }
        } else {
            base
        };
        doc! {
            "stage": "LIMIT", "limitAmount": 5,
            "inputStage": { "stage": "PROJECTION_DEFAULT",
                            "inputStage": { "stage": "SORT_KEY_GENERATOR",
                                            "inputStage": base } },
        }
    };
    let second_plan = if sbe_second {
        doc! { "queryPlan": shard_tree(sort_on_second), "slotBasedPlan": { "stages": "" } }
    } else {
        shard_tree(sort_on_second)
    };
    doc! {
        "queryPlanner": {
            "mongosPlannerVersion": 1,
            "winningPlan": {
                "stage": "SHARD_MERGE_SORT",
                "shards": [
                    { "shardName": "shard-rs0", "explainVersion": "1",
                      "maxScansToExplodeReached": false,
                      "winningPlan": shard_tree(false), "rejectedPlans": [] },
                    { "shardName": "shard-rs1", "explainVersion": "1",
                      "maxScansToExplodeReached": sort_on_second,
                      "winningPlan": second_plan, "rejectedPlans": [] },
                ],
            },
        },
        "executionStats": {
            "nReturned": 5,
            "executionStages": {
                "stage": "SHARD_MERGE_SORT", "limitAmount": 5, "nReturned": 5,
                "totalDocsExamined": 10, "totalKeysExamined": 29,
                "shards": [
                    { "executionStages": { "stage": "LIMIT" }, "nReturned": 5,
                      "totalDocsExamined": 5, "totalKeysExamined": 5 },
                    { "executionStages": { "stage": "LIMIT" }, "nReturned": 5,
                      "totalDocsExamined": 5, "totalKeysExamined": 24 },
                ],
            },
        },
    }
}

#[test]
fn sharded_merge_sort_is_index_order() {
    let facts = read_plan(&sharded_merge_sort(false, false));
    assert_eq!(facts.layout, Layout::Sharded(Box::new(Layout::Classic)));
    assert_eq!(facts.shards, 2);
    assert_eq!(facts.stages[0], "SHARD_MERGE_SORT");
    assert_eq!(
        facts
            .stages
            .iter()
            .filter(|s| *s == "SORT_KEY_GENERATOR")
            .count(),
        2
    );
    assert!(!facts.blocking_sort && !facts.sort_merge);
    assert!(!facts.max_scans_to_explode_reached);
    assert_eq!(facts.indexes, strings(&["x_1"]));
    // totals: mongos's executionStats, then its executionStages
    assert_eq!(facts.returned, Some(5));
    assert_eq!(facts.keys_examined, Some(29));
    assert_eq!(facts.docs_examined, Some(10));
    assert_eq!(sort_verdict(&facts, false), SortVerdict::InIndexOrder);
}

#[test]
fn sharded_one_shard_sorts() {
    let facts = read_plan(&sharded_merge_sort(true, true));
    assert!(facts.blocking_sort);
    assert!(facts.max_scans_to_explode_reached);
    // the first shard decides the inner layout; the second's SBE tree is read all the same
    assert_eq!(facts.layout, Layout::Sharded(Box::new(Layout::Classic)));
    assert_eq!(facts.stages.iter().filter(|s| *s == "SORT").count(), 1);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::BlockingSort);
}

/// Totals summed over `executionStages.shards` when mongos gives none of its own.
#[test]
fn sharded_totals_summed_over_shards() {
    let mut reply = sharded_merge_sort(false, false);
    let stats = reply.get_document_mut("executionStats").unwrap();
    stats.remove("nReturned");
    let stages = stats.get_document_mut("executionStages").unwrap();
    for field in COUNT_FIELDS {
        stages.remove(field);
    }
    let facts = read_plan(&reply);
    assert_eq!(facts.returned, Some(10));
    assert_eq!(facts.keys_examined, Some(29));
    assert_eq!(facts.docs_examined, Some(10));
}

/// mongos `distinct` on the shard key, DISTINCT_SCAN under PROJECTION_COVERED on each
/// shard: mongodb/mongo,
/// jstests/query_golden_sharding/expected_output/distinct_scan_multi_chunk.md.
#[test]
fn sharded_distinct_scan_covered() {
    let tree = doc! {
        "stage": "PROJECTION_COVERED", "transformBy": { "_id": 0, "shardKey": 1 },
        "inputStage": { "stage": "DISTINCT_SCAN", "direction": "forward",
                        "indexName": "shardKey_1", "isFetching": false,
                        "isShardFiltering": true, "keyPattern": { "shardKey": 1 } },
    };
    let reply = doc! {
        "queryPlanner": { "winningPlan": {
            "stage": "SHARD_MERGE",
            "shards": [
                { "shardName": "distinct_scan_multi_chunk-rs0", "winningPlan": tree.clone(),
                  "rejectedPlans": [] },
                { "shardName": "distinct_scan_multi_chunk-rs1", "winningPlan": tree,
                  "rejectedPlans": [] },
            ],
        } },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.shards, 2);
    assert_eq!(facts.indexes, strings(&["shardKey_1"]));
    assert!(facts.covered && facts.uses_index());
}

/// mongos aggregate, `$group` pushed down to SBE on each shard, no `stages` there:
/// mongodb-js/compass,
/// packages/explain-plan-helper/test/fixtures/multi-shard-aggregate-without-stages.json
/// (mongod 5.3; slotBasedPlan and execution trees trimmed).
#[test]
fn sharded_aggregate_without_stages() {
    let shard = |docs: i32, returned: i32| {
        doc! {
            "host": "localhost:8002",
            "queryPlanner": {
                "namespace": "sharded-db.listings",
                "optimizedPipeline": true,
                "maxScansToExplodeReached": false,
                "winningPlan": {
                    "queryPlan": {
                        "stage": "GROUP", "planNodeId": 3,
                        "inputStage": {
                            "stage": "SHARDING_FILTER", "planNodeId": 2,
                            "inputStage": { "stage": "COLLSCAN", "planNodeId": 1,
                                            "filter": {}, "direction": "forward" },
                        },
                    },
                    "slotBasedPlan": { "slots": "", "stages": "[3] mkbson" },
                },
                "rejectedPlans": [],
            },
            "executionStats": {
                "executionSuccess": true, "nReturned": returned,
                "totalKeysExamined": 0, "totalDocsExamined": docs,
                "executionStages": { "stage": "mkbson" },
            },
        }
    };
    let reply = doc! {
        "mergeType": "anyShard",
        "splitPipeline": {
            "shardsPart": [{ "$group": { "_id": { "$const": null } } }],
            "mergerPart": [
                { "$mergeCursors": { "compareWholeSortKey": false } },
                { "$group": { "_id": "$$ROOT._id", "$doingMerge": true } },
                { "$unwind": { "path": "$host_ids" } },
            ],
        },
        "shards": { "shard2": shard(0, 0), "shard1": shard(5555, 1) },
        "command": { "aggregate": "listings" },
        "ok": 1,
    };
    let facts = read_plan(&reply);
    assert_eq!(
        facts.layout,
        Layout::Sharded(Box::new(Layout::Aggregate(Box::new(Layout::Sbe))))
    );
    assert_eq!(facts.shards, 2);
    assert_eq!(
        &facts.stages[..4],
        &strings(&["$unwind", "$group", "$mergeCursors", "GROUP"])[..]
    );
    assert!(facts.collscan && !facts.blocking_sort && !facts.covered);
    assert_eq!(facts.docs_examined, Some(5555));
    assert_eq!(facts.returned, Some(1));
}

/// mongos aggregate with `stages` on each shard (`$geoNearCursor`) and a merge-sorting
/// `$mergeCursors`: mongodb-js/compass,
/// packages/explain-plan-helper/test/fixtures/multi-shard-aggregate-with-stages.json
/// (mongod 5.3; trimmed). A `$sort` in one shard's `stages` is a blocking sort.
#[test]
fn sharded_aggregate_with_stages() {
    let shard = |sort: bool| {
        let key = doc! { "address.location": "2dsphere" };
        let mut stages = vec![Bson::Document(doc! {
            "$geoNearCursor": {
                "queryPlanner": {
                    "maxScansToExplodeReached": false,
                    "winningPlan": {
                        "stage": "SHARDING_FILTER",
                        "inputStage": {
                            "stage": "GEO_NEAR_2DSPHERE", "keyPattern": key.clone(),
                            "indexName": "address_location", "indexVersion": 2,
                            "inputStage": { "stage": "FETCH",
                                            "inputStage": ixscan("address_location", key) },
                        },
                    },
                    "rejectedPlans": [],
                },
                "executionStats": { "nReturned": 0, "totalKeysExamined": 0,
                                    "totalDocsExamined": 0 },
            },
            "nReturned": 0, "executionTimeMillisEstimate": 0,
        })];
        if sort {
            stages.push(Bson::Document(
                doc! { "$sort": { "sortKey": { "name": 1 } } },
            ));
        }
        doc! { "host": "localhost:8002", "stages": stages }
    };
    let reply = |sort: bool| {
        doc! {
            "mergeType": "anyShard",
            "splitPipeline": {
                "shardsPart": [{ "$geoNear": { "distanceField": "distance" } }],
                "mergerPart": [
                    { "$mergeCursors": { "sort": { "distance": 1 },
                                         "compareWholeSortKey": false } },
                    { "$group": { "_id": { "$const": null } } },
                    { "$unwind": { "path": "$host_ids" } },
                ],
            },
            "shards": { "shard2": shard(false), "shard1": shard(sort) },
        }
    };
    let facts = read_plan(&reply(false));
    assert_eq!(
        facts.layout,
        Layout::Sharded(Box::new(Layout::Aggregate(Box::new(Layout::Classic))))
    );
    assert_eq!(facts.shards, 2);
    assert_eq!(facts.indexes, strings(&["address_location"]));
    assert_eq!(
        facts.index_keys,
        vec![doc! { "address.location": "2dsphere" }]
    );
    assert!(!facts.blocking_sort && !facts.collscan);
    assert_eq!(facts.returned, Some(0));
    let facts = read_plan(&reply(true));
    assert!(facts.blocking_sort);
}

// ---- SecantusDB 0.7.0b3 (captured from `secantusd-py --storage-path :memory:`) --------
//
// Collection `plancheck.items`: 50 documents `{_id: i, a: i % 7, b: i, c: "x<i>"}`,
// indexes `a_1_b_-1` ({a: 1, b: -1}) and `c_1`. `$clusterTime`, `operationTime`,
// `command` and `multiKeyPaths` left out.

fn secantus_index(index: &str, key: Document) -> Document {
    doc! {
        "stage": "IXSCAN", "keyPattern": key, "indexName": index, "isMultiKey": false,
        "multiKeyPaths": {}, "isUnique": false, "isSparse": false, "isPartial": false,
        "indexVersion": 2, "direction": "forward",
    }
}

/// `find {a: 3} sort {b: -1}`: mongod walks `a_1_b_-1` in order; SecantusDB adds a SORT to
/// the planner's tree, and its execution tree leaves the SORT out.
fn secantus_find_index_sort() -> Document {
    let key = doc! { "a": 1, "b": -1 };
    doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": "plancheck.items",
            "indexFilterSet": false,
            "parsedQuery": { "a": { "$eq": 3 } },
            "winningPlan": {
                "isCached": false, "stage": "SORT", "sortPattern": { "b": -1 },
                "memLimit": 104857600, "type": "simple",
                "inputStage": { "stage": "FETCH",
                                "inputStage": secantus_index("a_1_b_-1", key) },
            },
            "rejectedPlans": [],
        },
        "serverInfo": { "host": "secantus", "port": 0, "version": "8.2.11",
                        "gitVersion": "0000000000000000000000000000000000000000" },
        "ok": 1.0,
        "executionStats": {
            "executionSuccess": true, "nReturned": 7, "executionTimeMillis": 0,
            "totalKeysExamined": 7, "totalDocsExamined": 7,
            "executionStages": { "stage": "FETCH", "nReturned": 7,
                                 "inputStage": { "stage": "IXSCAN", "nReturned": 7 } },
        },
    }
}

#[test]
fn secantus_find_with_index_and_sort() {
    let facts = read_plan(&secantus_find_index_sort());
    assert_eq!(facts.layout, Layout::Classic);
    assert_eq!(facts.stages, strings(&["SORT", "FETCH", "IXSCAN"]));
    assert_eq!(facts.indexes, strings(&["a_1_b_-1"]));
    assert!(facts.blocking_sort && !facts.covered && !facts.collscan);
    assert_eq!(
        (facts.returned, facts.keys_examined, facts.docs_examined),
        (Some(7), Some(7), Some(7))
    );
    assert_eq!(sort_verdict(&facts, true), SortVerdict::UnknownOnThisServer);
    assert_eq!(sort_verdict(&facts, false), SortVerdict::BlockingSort);
}

/// `find {b: {$gt: 10}, c: {$exists: true}, zz: null}`: not every predicate is on one
/// index, so SecantusDB scans the collection.
#[test]
fn secantus_find_collscan() {
    let filter = doc! { "$and": [
        { "zz": { "$eq": null } }, { "b": { "$gt": 10 } }, { "c": { "$exists": true } },
    ] };
    let reply = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": "plancheck.items", "indexFilterSet": false,
            "parsedQuery": filter.clone(),
            "winningPlan": { "isCached": false, "stage": "COLLSCAN", "filter": filter,
                             "direction": "forward" },
            "rejectedPlans": [],
        },
        "serverInfo": { "host": "secantus", "port": 0, "version": "8.2.11" },
        "ok": 1.0,
        "executionStats": {
            "executionSuccess": true, "nReturned": 39, "executionTimeMillis": 1,
            "totalKeysExamined": 0, "totalDocsExamined": 50,
            "executionStages": { "stage": "COLLSCAN", "nReturned": 39 },
        },
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Classic);
    assert_eq!(facts.stages, strings(&["COLLSCAN"]));
    assert!(facts.collscan && facts.indexes.is_empty() && !facts.uses_index());
    assert_eq!(facts.docs_examined, Some(50));
    assert_eq!(facts.returned, Some(39));
    assert_eq!(sort_verdict(&facts, true), SortVerdict::InIndexOrder);
}

/// `aggregate [{$match: {a: 3}}, {$sort: {b: -1}}]`: SecantusDB keeps `$sort` in `stages`
/// after a `$cursor`, and repeats the query layer's `queryPlanner` and `executionStats` at
/// the top level (read once).
#[test]
fn secantus_aggregate_match_sort() {
    let key = doc! { "a": 1, "b": -1 };
    let planner = doc! {
        "namespace": "plancheck.items", "indexFilterSet": false,
        "parsedQuery": { "a": { "$eq": 3 } },
        "winningPlan": { "isCached": false, "stage": "FETCH",
                         "inputStage": secantus_index("a_1_b_-1", key) },
        "rejectedPlans": [],
    };
    let stats = doc! {
        "executionSuccess": true, "nReturned": 7, "executionTimeMillis": 0,
        "totalKeysExamined": 7, "totalDocsExamined": 7,
        "executionStages": { "stage": "FETCH", "nReturned": 7,
                             "inputStage": { "stage": "IXSCAN", "nReturned": 7 } },
    };
    let reply = doc! {
        "stages": [
            { "$cursor": { "queryPlanner": planner.clone(), "executionStats": stats.clone() } },
            { "$match": { "a": 3 } },
            { "$sort": { "b": -1 } },
        ],
        "queryPlanner": planner,
        "explainVersion": "1",
        "serverInfo": { "host": "secantus", "port": 0, "version": "8.2.11" },
        "ok": 1.0,
        "executionStats": stats,
    };
    let facts = read_plan(&reply);
    assert_eq!(facts.layout, Layout::Aggregate(Box::new(Layout::Classic)));
    assert_eq!(
        facts.stages,
        strings(&["$sort", "$match", "FETCH", "IXSCAN"])
    );
    assert_eq!(facts.indexes, strings(&["a_1_b_-1"]));
    // counted once, not twice
    assert_eq!(
        (facts.returned, facts.keys_examined, facts.docs_examined),
        (Some(7), Some(7), Some(7))
    );
    assert!(facts.blocking_sort);
    assert_eq!(sort_verdict(&facts, true), SortVerdict::UnknownOnThisServer);
}

/// SecantusDB 0.7.0b3's `buildInfo` (`$clusterTime` and `operationTime` left out) beside a
/// mongod-shaped one (the fields the server manual's buildInfo page lists; values
/// illustrative).
#[test]
fn secantus_build_info() {
    let secantus = doc! {
        "version": "8.2.11", "secantusVersion": "0.7.0b3",
        "gitVersion": "0000000000000000000000000000000000000000",
        "versionArray": [8, 2, 11, 0], "bits": 64, "debug": false,
        "maxBsonObjectSize": 16777216, "ok": 1.0,
    };
    let mongod = doc! {
        "version": "8.0.4", "gitVersion": "bc35ab4305d9920d9d0491c1c9ef9b72383d31f9",
        "modules": [], "allocator": "tcmalloc-google", "javascriptEngine": "mozjs",
        "sysInfo": "deprecated", "versionArray": [8, 0, 4, 0],
        "openssl": { "running": "OpenSSL 3.0.13 30 Jan 2024" },
        "buildEnvironment": { "distmod": "ubuntu2404" }, "bits": 64, "debug": false,
        "maxBsonObjectSize": 16777216, "storageEngines": ["devnull", "wiredTiger"], "ok": 1.0,
    };
    assert!(is_secantus(&secantus));
    assert!(!is_secantus(&mongod));
}
