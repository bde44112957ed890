//! `pull` as one pipeline: `sample` (shape) -> `facts` (exact counts) -> `infer` (types) ->
//! `verify` (the gate; what fails is joined into the shape and decided again) -> `relate`
//! (references and copies, confirmed on the server) -> `emit` (Rust text).

use std::collections::BTreeSet;
use std::time::Instant;

use mongodb::bson::{Bson, Document};
use mongodb::Database;

pub use crate::config::PullConfig;
use crate::infer::{infer, Observed, Options};
use crate::lattice::DocShape;
use crate::model::{Index, Model};
use crate::report::{CollectionSummary, IndexNote, Report, Widening};
use crate::sample::extended_json;
use crate::{emit, facts, relate, sample, validator, verify};

/// What `pull` produced.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The Rust module.
    pub module: String,
    /// The report.
    pub report: Report,
    /// The models.
    pub model: Model,
}

/// Runs the pipeline on `db`. An `Err` means nothing should be written: the message says why.
pub async fn pull(db: &Database, config: &PullConfig) -> Result<Pulled, String> {
    let started = Instant::now();
    let mut report = Report {
        database: db.name().to_owned(),
        ..Report::default()
    };
    let say = |line: String| config.say(&line);
    say(format!(
        "sampling `{}` ({} documents a collection at most)",
        db.name(),
        crate::names::count(config.read.sample)
    ));
    let mut sampled = |f: &sample::Found| {
        say(format!(
            "sampled `{}`: {} documents, {} read ({:.0} s so far)",
            f.name,
            crate::names::count(f.count),
            crate::names::count(f.sampled),
            started.elapsed().as_secs_f64()
        ))
    };
    let found = sample::sample(
        db,
        &config.collections,
        &config.read,
        &mut report,
        &mut sampled,
    )
    .await
    .map_err(|e| format!("sampling failed: {e}"))?;
    if found.is_empty() {
        return Err(format!("`{}` holds no collection to pull", db.name()));
    }
    let mut phase = Instant::now();
    let mut lap = |report: &mut Report, name: &str| {
        report
            .phases
            .push((name.to_owned(), phase.elapsed().as_secs_f64()));
        phase = Instant::now();
    };
    report
        .phases
        .push(("sample".to_owned(), started.elapsed().as_secs_f64()));
    let mut options = config.infer.clone();
    let mut observed = Vec::new();
    let mut counted = Vec::new();
    for f in &found {
        // a time series is counted whole: its measurements' `_id`s have no index to walk in
        // order (a sort on them unpacks and sorts every bucket)
        let chunk = if f.options.contains_key("timeseries") {
            u64::MAX
        } else {
            config.facts_chunk
        };
        say(format!(
            "facts of `{}`: {} documents, {} ({:.0} s so far)",
            f.name,
            crate::names::count(f.count),
            if f.count > chunk {
                format!(
                    "counted in runs of {}",
                    crate::names::count(config.facts_chunk)
                )
            } else {
                "one aggregation over every one".to_owned()
            },
            started.elapsed().as_secs_f64()
        ));
        let mut shape = f.shape.clone();
        let mut progress = |counted: u64| {
            say(format!(
                "facts of `{}`: {} of {} documents counted ({:.0} s so far)",
                f.name,
                crate::names::count(counted),
                crate::names::count(f.count.max(counted)),
                started.elapsed().as_secs_f64()
            ))
        };
        let facts = facts::count(
            db,
            &f.name,
            f.count,
            &mut shape,
            &mut facts::Counting {
                read: &config.read,
                max_paths: config.max_paths,
                chunk,
                progress: &mut progress,
            },
            &mut report,
        )
        .await
        .map_err(|e| format!("`{}`: the facts aggregation failed: {e}", f.name))?;
        if let Some(validator) = &f.validator {
            report.notes.push(format!(
                "`{}` has a `$jsonSchema` validator: kept as declared where the models can say it (level, action, kinds, optional fields, open objects, `maxItems`, `enum`, lengths, ranges; through `properties`, `items` and a nullable `anyOf`, not `oneOf`)",
                f.name
            ));
            let allowed = crate::existing::allowed(&f.name, validator);
            for (path, a) in allowed.iter().filter(|(_, a)| !a.unkept.is_empty()) {
                report.notes.push(format!(
                    "`{path}`: the validator's {} cannot be said by the models: not kept, so `apply` of the pulled schema stops checking it",
                    a.unkept
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            options.existing.extend(allowed);
        }
        observed.push(Observed {
            name: f.name.clone(),
            count: f.count,
            exact: facts.apply(&mut shape),
            shape,
        });
        counted.push(facts);
    }
    lap(&mut report, "facts");
    let (mut model, rounds) = gate(
        db,
        &mut observed,
        &counted,
        &mut options,
        config,
        &mut report,
    )
    .await?;
    refuse_hostile_names(&model)?;
    for (c, f) in model.collections.iter_mut().zip(&found) {
        c.indexed = f
            .indexes
            .iter()
            .filter_map(|i| Some(i.get_document("key").ok()?.keys().cloned().collect()))
            .collect();
        collection_options(c, &f.options, &mut report);
        if c.timeseries.is_some() && c.kinds.is_none() {
            // mongod takes no validator on a time series collection, and the derive refuses
            // `additional_properties` on one
            model.structs[c.root].open = true;
        }
    }
    model.record = record(db, &model, &mut report).await?;
    lap(&mut report, "gate");
    if config.relations {
        say(format!(
            "references and copies: checked against their candidate collections ({:.0} s so far)",
            started.elapsed().as_secs_f64()
        ));
        relate::relate(db, &mut model, &observed, config, &mut report).await?;
        relate::parts(db, &mut model, config, &mut report).await?;
        // the copies' validators are their sources' fields: check again, drop what fails
        let rejected = check_all(db, &model, &observed, config, &mut report, rounds + 1).await?;
        if !rejected.is_empty() {
            for c in &rejected {
                relate::drop_copies(&mut model, c, &mut report);
            }
            let still = check_all(db, &model, &observed, config, &mut report, rounds + 2).await?;
            if !still.is_empty() {
                return Err(format!(
                    "the validators of {} fail stored documents after dropping the copies",
                    still.join(", ")
                ));
            }
        }
    }
    lap(&mut report, "relate");
    for (c, f) in model.collections.iter_mut().zip(&found) {
        c.validation_level = f.validation_level.clone();
        c.validation_action = f.validation_action.clone();
        match f.collation.as_ref().map(crate::collation::attribute) {
            Some(Ok(collation)) => c.collation = collation,
            Some(Err(why)) => report.notes.push(format!(
                "`{}`: the collection's default collation is not kept: {why}; its indexes and queries are compared without it",
                c.name
            )),
            None => {}
        }
    }
    // what the pulled models install, against what the server declares
    for ((name, mine), f) in validator::validators(&model).iter().zip(&found) {
        if let Some(server) = &f.validator {
            report.notes.push(if validator::same(server, mine) {
                format!("`{name}`: the pulled validator is the server's, as declared")
            } else {
                format!("`{name}`: the pulled validator differs from the server's (what the models cannot say, or what the stored documents fail); `apply` of the pulled schema replaces it, and it accepts every stored document")
            });
        }
    }
    keep_indexes(&mut model, &found, &mut report);
    for (c, f) in model.collections.iter().zip(&found) {
        let summary = report
            .collections
            .iter_mut()
            .find(|s| s.name == c.name)
            .expect("checked");
        summary.type_name = model.structs[c.root].name.clone();
        summary.sampled = f.sampled;
    }
    report.gate_rounds = rounds;
    let documents = found.iter().map(|f| f.count).sum();
    let module = emit::module(
        &model,
        &emit::Header {
            database: db.name(),
            documents,
            rounds,
        },
    );
    lap(&mut report, "emit");
    report.seconds = started.elapsed().as_secs_f64();
    Ok(Pulled {
        module,
        report,
        model,
    })
}

/// Refuses a collection whose documents hold, at the top level, a field whose stored name has
/// control or invisible characters: no Rust field can stand for it without writing the name
/// into the module (a sub-document holding one is `Bson` instead, see `infer`).
fn refuse_hostile_names(model: &Model) -> Result<(), String> {
    for c in &model.collections {
        let root = &model.structs[c.root];
        let variants = c
            .kinds
            .iter()
            .flat_map(|k| model.unions[*k].variants.iter().flat_map(|v| &v.fields));
        if let Some(field) = root
            .fields
            .iter()
            .chain(variants)
            .find(|f| crate::names::hostile(&f.stored))
        {
            return Err(format!(
                "`{}`: its documents hold a top-level field whose stored name has control or invisible characters ({:?}); no model can name it safely: rename the field in the data, or leave the collection out with --collections",
                c.name.escape_debug(),
                field.stored
            ));
        }
    }
    Ok(())
}

/// Decide, check every document, join what fails, until the server and the local check both
/// count zero violators.
async fn gate(
    db: &Database,
    observed: &mut [Observed],
    counted: &[facts::Facts],
    options: &mut Options,
    config: &PullConfig,
    report: &mut Report,
) -> Result<(Model, u32), String> {
    for round in 1..=config.max_rounds + 1 {
        config.say(&format!(
            "gate, round {round}: the validators checked against every document"
        ));
        let model = infer(observed, options, report);
        let validators = checked_validators(&model)?;
        let mut failed = false;
        report.collections.clear();
        for ((o, facts), (name, v)) in observed.iter_mut().zip(counted).zip(&validators) {
            let checked = verify::check(
                db,
                name,
                o.count,
                v,
                &config.read,
                config.failures_kept,
                report,
            )
            .await?;
            report.collections.push(CollectionSummary {
                name: name.clone(),
                type_name: String::new(),
                documents: o.count,
                sampled: 0,
                server_violators: checked.server,
                local_violators: checked.local,
            });
            if checked.passes() {
                continue;
            }
            // counted violators fail the round, whether or not any document was kept to
            // widen from (without one, the rules' top-level fields become `Bson` at the last
            // rounds)
            failed = true;
            for (rule, documents) in &checked.rules {
                report.widenings.push(Widening {
                    round,
                    collection: name.clone(),
                    rule: rule.clone(),
                    documents: *documents,
                });
            }
            // what the collection's validator declares, or a `geo::Point`, failed stored
            // documents (its level is `moderate`, or its action `warn`): not kept from now on
            let tightened = checked.rules.keys().any(|rule| {
                let first = rule.split(['.', ':', '[']).next().unwrap_or("").trim();
                options.existing.contains_key(&format!("{name}.{first}"))
                    || model.collections.iter().any(|c| {
                        c.name == *name
                            && model.structs[c.root].fields.iter().any(|f| {
                                f.stored == first
                                    && matches!(f.ty.element(), crate::model::Ty::GeoPoint)
                            })
                    })
            });
            if tightened && options.loosened.insert(name.clone()) {
                report.notes.push(format!(
                    "`{name}`: stored documents fail what its validator declares (or a GeoJSON point's ranges): its bounds, enums and constraints are not kept, and its points stay structs"
                ));
            }
            if round >= config.max_rounds {
                // did not converge: the top-level fields that keep failing become `Bson`
                for rule in checked.rules.keys() {
                    let first = rule.split(['.', ':']).next().unwrap_or("").trim();
                    if !first.is_empty() && first != "_id" && !first.starts_with('(') {
                        options.undecided.insert(format!("{name}.{first}"));
                    }
                }
            }
            let mut joined = std::mem::take(&mut o.shape);
            for d in &checked.failing {
                joined = joined.join(DocShape::of(d));
            }
            // the facts counted these documents already: their exact counts stand
            o.exact = facts.apply(&mut joined);
            o.shape = joined;
        }
        if !failed {
            return Ok((model, round));
        }
    }
    Err(format!(
        "the gate did not converge in {} rounds: see the widenings of the report",
        config.max_rounds + 1
    ))
}

/// `model`'s validators (by collection name); an error where one breaks mongod's rules.
fn checked_validators(model: &Model) -> Result<Vec<(String, Document)>, String> {
    let validators = validator::validators(model);
    let problems = verify::mongod_problems(&validators);
    if !problems.is_empty() {
        return Err(format!(
            "a generated validator breaks mongod's rules (a bug of pull): {}",
            problems.join("; ")
        ));
    }
    Ok(validators)
}

/// Checks every collection once; the names of those with failing documents.
async fn check_all(
    db: &Database,
    model: &Model,
    observed: &[Observed],
    config: &PullConfig,
    report: &mut Report,
    round: u32,
) -> Result<Vec<String>, String> {
    let validators = checked_validators(model)?;
    let mut failing = Vec::new();
    for (o, (name, v)) in observed.iter().zip(&validators) {
        let checked = verify::check(
            db,
            name,
            o.count,
            v,
            &config.read,
            config.failures_kept,
            report,
        )
        .await?;
        if let Some(s) = report.collections.iter_mut().find(|s| s.name == *name) {
            s.server_violators = checked.server;
            s.local_violators = checked.local;
        }
        if !checked.passes() {
            for (rule, documents) in &checked.rules {
                report.widenings.push(Widening {
                    round,
                    collection: name.clone(),
                    rule: rule.clone(),
                    documents: *documents,
                });
            }
            failing.push(name.clone());
        }
    }
    Ok(failing)
}

/// The options of a collection the model keeps (a time series with its fields, granularity and
/// expiry), and those the attributes cannot say (capped, clustered, pre- and post-images,
/// custom buckets), which are written above the model and in the report's notes.
fn collection_options(
    c: &mut crate::model::Collection,
    options: &mongodb::bson::Document,
    report: &mut Report,
) {
    let number = |key: &str| match options.get(key) {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(Bson::Double(n)) => Some(*n as i64),
        _ => None,
    };
    if let Ok(ts) = options.get_document("timeseries") {
        let custom_buckets =
            ts.contains_key("bucketMaxSpanSeconds") && !ts.contains_key("granularity");
        c.timeseries = Some(crate::model::TimeSeries {
            time: ts.get_str("timeField").unwrap_or_default().to_owned(),
            meta: ts.get_str("metaField").ok().map(str::to_owned),
            granularity: ts.get_str("granularity").ok().map(str::to_owned),
            expire_after_secs: number("expireAfterSeconds"),
            custom_buckets,
        });
        if custom_buckets {
            c.unsaid.push(format!(
                "not kept: the time series' custom buckets ({}); the attribute says a granularity only",
                sample::extended_json(ts)
            ));
        }
    }
    if options.get_bool("capped").unwrap_or(false) {
        c.unsaid.push(format!(
            "not kept: a capped collection (size {}, max {}): the attributes cannot say it; `apply` leaves it as it is",
            number("size").map_or("?".to_owned(), |n| n.to_string()),
            number("max").map_or("none".to_owned(), |n| n.to_string()),
        ));
    }
    if let Ok(clustered) = options.get_document("clusteredIndex") {
        c.unsaid.push(format!(
            "not kept: a clustered collection ({}): the attributes cannot say it; `apply` leaves it as it is",
            sample::extended_json(clustered)
        ));
    }
    let pre_images = options
        .get_document("changeStreamPreAndPostImages")
        .ok()
        .and_then(|p| p.get_bool("enabled").ok())
        .unwrap_or(false);
    if pre_images {
        c.unsaid.push(
            "not kept: change stream pre- and post-images are enabled; the derive enables them only for an async subset, and `apply` does not disable them"
                .to_owned(),
        );
    }
    for unsaid in &c.unsaid {
        report.notes.push(format!("`{}`: {unsaid}", c.name));
    }
}

/// The mongo-schema version record that holds the pulled collections (`mongo_schema_meta`): a
/// database a mongo-schema service made is adopted under its schema's name and version, so that
/// `plan` of the pulled schema finds nothing to do. A record that was renamed (`renamed_to`) is
/// followed; several records of the pulled collections are reported, and none is taken.
async fn record(
    db: &Database,
    model: &Model,
    report: &mut Report,
) -> Result<Option<crate::model::Record>, String> {
    use futures_util::TryStreamExt;
    report.command("find");
    let records: Vec<mongodb::bson::Document> = db
        .collection::<mongodb::bson::Document>(mongo_schema_core::META_COLLECTION)
        .find(mongodb::bson::doc! {})
        .await
        .map_err(|e| format!("reading `{}`: {e}", mongo_schema_core::META_COLLECTION))?
        .try_collect()
        .await
        .map_err(|e| format!("reading `{}`: {e}", mongo_schema_core::META_COLLECTION))?;
    let pulled: BTreeSet<&str> = model.collections.iter().map(|c| c.name.as_str()).collect();
    let mut matching: Vec<crate::model::Record> = records
        .iter()
        .filter(|r| !r.contains_key("renamed_to"))
        .filter(|r| {
            // a record of the collections it claimed (older records list none)
            r.get_array("collections")
                .map_or(records.len() == 1, |names| {
                    names
                        .iter()
                        .filter_map(Bson::as_str)
                        .any(|n| pulled.contains(n))
                })
        })
        .filter_map(|r| {
            let version = match r.get("version") {
                Some(Bson::Int64(v)) => u64::try_from(*v).ok(),
                Some(Bson::Int32(v)) => u64::try_from(*v).ok(),
                _ => None,
            }?;
            Some(crate::model::Record {
                name: r.get_str("_id").ok()?.to_owned(),
                version,
            })
        })
        .collect();
    match matching.len() {
        0 => Ok(None),
        1 => {
            let record = matching.remove(0);
            report.notes.push(format!(
                "the database holds mongo-schema's record of schema `{}` version {}: the pulled `schema()` is that name and version",
                record.name, record.version
            ));
            Ok(Some(record))
        }
        _ => {
            let names: Vec<String> = matching
                .iter()
                .map(|r| format!("`{}` v{}", r.name, r.version))
                .collect();
            report.notes.push(format!(
                "several mongo-schema records hold the pulled collections ({}): none is taken; pull each schema's collections with --collections",
                names.join(", ")
            ));
            Ok(None)
        }
    }
}

/// The existing indexes as `#[index]` attributes, where the attributes can say them.
fn keep_indexes(model: &mut Model, found: &[sample::Found], report: &mut Report) {
    for (c, f) in model.collections.iter_mut().zip(found) {
        if c.kinds.is_some() {
            for spec in &f.indexes {
                report.indexes.push(IndexNote {
                    collection: c.name.clone(),
                    name: spec.get_str("name").unwrap_or_default().to_owned(),
                    outcome: "not kept: the collection holds several kinds of document (an index belongs on a variant, as a partial index on its tag)".to_owned(),
                });
            }
            continue;
        }
        let root = &model.structs[c.root];
        // the derive adds `{ field: 1 }` for every single reference itself
        let derived: BTreeSet<String> = root
            .fields
            .iter()
            .filter(|f| f.reference.is_some() && !matches!(f.ty, crate::model::Ty::Array { .. }))
            .map(|f| f.stored.clone())
            .collect();
        // and `{ <copy>._id: 1, _id: 1 }` for every maintained copy
        let fan_outs: BTreeSet<String> = root
            .fields
            .iter()
            .filter(|f| f.extended.as_ref().is_some_and(|e| e.sync != "frozen"))
            .map(|f| format!("{}._id", f.stored))
            .collect();
        for spec in &f.indexes {
            let name = spec.get_str("name").unwrap_or_default().to_owned();
            let keys = spec.get_document("key").cloned().unwrap_or_default();
            if let Some(ts) = &c.timeseries {
                // mongod creates `{ meta: 1, time: 1 }` with a time series collection
                let made = ts.meta.as_ref().is_some_and(|meta| {
                    keys.len() == 2
                        && keys
                            .keys()
                            .map(String::as_str)
                            .eq([meta.as_str(), ts.time.as_str()])
                        && keys.values().all(|v| {
                            v.as_f64()
                                .or(v.as_i32().map(f64::from))
                                .or(v.as_i64().map(|n| n as f64))
                                == Some(1.0)
                        })
                });
                if made {
                    // (mongod's, and the derive's: it declares it with the time series, and a
                    // reference in the meta field is served by it)
                    let meta = ts.meta.as_deref().unwrap_or_default();
                    let outcome = if derived.contains(meta) {
                        format!("mongod's own index of a time series collection (made with it), and the derive's for the reference `{meta}` (the meta field): not declared")
                    } else {
                        "mongod's own index of a time series collection (made with it): not declared".to_owned()
                    };
                    report.indexes.push(IndexNote {
                        collection: c.name.clone(),
                        name,
                        outcome,
                    });
                    continue;
                }
            }
            let mut note = |outcome: String| {
                report.indexes.push(IndexNote {
                    collection: c.name.clone(),
                    name: name.clone(),
                    outcome,
                })
            };
            let special = keys.iter().find_map(|(_, v)| match v {
                Bson::String(kind) if kind != "hashed" && kind != "2dsphere" => Some(kind.clone()),
                _ => None,
            });
            if let Some(kind) = special {
                note(format!("not kept: a `{kind}` index (the attributes cannot say its options); create it by hand"));
                continue;
            }
            // an index of the collection's default collation needs none of its own: the
            // derive creates every index with the collection's
            // (only when the model says it: a default it could not say is no default of the
            // pulled model, and an index of that collation is reported, not kept without it)
            let default = f
                .collation
                .as_ref()
                .filter(|d| d.get_str("locale").is_ok_and(|l| l != "simple"))
                .filter(|_| c.collation.is_some());
            // listed without one, or `{ locale: "simple", .. }`, on a collection that has one:
            // made `simple` on purpose
            let collation = match crate::collation::index_attribute(
                spec.get_document("collation").ok(),
                default,
            ) {
                Ok(collation) => collation,
                Err(why) => {
                    note(format!("not kept: {why}; create it by hand"));
                    continue;
                }
            };
            // the derive's own: `{ field: 1 }` of a reference or copy, and `{ copy._id: 1, _id: 1 }`
            // of a maintained copy (its repairs page through the holders of one source)
            let first_key = keys.keys().next().cloned().unwrap_or_default();
            let copy_pages = keys.len() == 2
                && keys.keys().nth(1).is_some_and(|k| k == "_id")
                && fan_outs.contains(&first_key);
            if copy_pages || keys.len() == 1 && derived.contains(&first_key) {
                note("kept by the relationship: the derive creates it".to_owned());
                continue;
            }
            if keys.len() == 1 && fan_outs.contains(&first_key) {
                note(format!(
                    "not kept: the derive creates `{{ {first_key}: 1, _id: 1 }}` for the copy's fan-out, of which this index is a prefix (redundant after `apply`: drop it with `--drop-stale-indexes`)"
                ));
                continue;
            }
            let partial = spec
                .get_document("partialFilterExpression")
                .ok()
                .map(extended_json);
            // an index that starts with a single reference (or a copy's `_id`) and another key
            // orders the relation's keyset pages, and the derive would append the `_id`
            // tie-break to it: another index than the server's (under the server's name mongod
            // refuses other keys, code 86). `pages = false` keeps it as it is.
            let second_ordered = keys
                .values()
                .nth(1)
                .is_some_and(|v| !matches!(v, Bson::String(_)));
            let orders_pages = second_ordered
                && !keys.contains_key("_id")
                && root.fields.iter().any(|f| {
                    !matches!(f.ty, crate::model::Ty::Array { .. })
                        && ((f.reference.is_some() && f.stored == first_key)
                            || (f.extended.is_some() && first_key == format!("{}._id", f.stored)))
                });
            c.indexes.push(Index {
                keys,
                name: name.clone(),
                pages: !orders_pages,
                unique: spec.get_bool("unique").unwrap_or(false),
                sparse: spec.get_bool("sparse").unwrap_or(false),
                expire_after_secs: match spec.get("expireAfterSeconds") {
                    Some(Bson::Int32(v)) => Some(i64::from(*v)),
                    Some(Bson::Int64(v)) => Some(*v),
                    Some(Bson::Double(v)) => Some(*v as i64),
                    _ => None,
                },
                partial,
                collation,
            });
            note(if orders_pages {
                format!("kept as #[index] with `pages = false`: it starts with the relationship `{first_key}` and another key, an order the derive would give the relation's keyset pages by appending the `_id` tie-break, a longer index than the server's; remove `pages = false` and the server's `name` to have the pages (`apply` then builds the longer index under the derive's name, and this one is a redundant prefix to drop with `--drop-stale-indexes`; under the same name mongod refuses other keys)")
            } else {
                "kept as #[index]".to_owned()
            });
        }
    }
}
