//! `pull` as one pipeline: `sample` (shape) -> `facts` (exact counts) -> `infer` (types) ->
//! `verify` (the gate; what fails is joined into the shape and decided again) -> `relate`
//! (references and copies, confirmed on the server) -> `emit` (Rust text).

use std::collections::BTreeSet;
use std::time::Instant;

use mongodb::bson::Bson;
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
    let found = sample::sample(db, &config.collections, &config.read, &mut report)
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
        let mut shape = f.shape.clone();
        let facts = facts::count(
            db,
            &f.name,
            f.count,
            &mut shape,
            &config.read,
            config.max_paths,
            &mut report,
        )
        .await
        .map_err(|e| format!("`{}`: the facts aggregation failed: {e}", f.name))?;
        if let Some(validator) = &f.validator {
            report.notes.push(format!(
                "`{}` has a `$jsonSchema` validator: its level and action, the kinds it allows and its optional fields are kept (through `properties`; not inside arrays, `oneOf` or `anyOf`)",
                f.name
            ));
            options
                .existing
                .extend(crate::existing::allowed(&f.name, validator));
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
    lap(&mut report, "gate");
    if config.relations {
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
        let model = infer(observed, options, report);
        let validators = validator::validators(&model);
        let problems = verify::mongod_problems(&validators);
        if !problems.is_empty() {
            return Err(format!(
                "a generated validator breaks mongod's rules (a bug of pull): {}",
                problems.join("; ")
            ));
        }
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

/// Checks every collection once; the names of those with failing documents.
async fn check_all(
    db: &Database,
    model: &Model,
    observed: &[Observed],
    config: &PullConfig,
    report: &mut Report,
    round: u32,
) -> Result<Vec<String>, String> {
    let validators = validator::validators(model);
    let problems = verify::mongod_problems(&validators);
    if !problems.is_empty() {
        return Err(format!(
            "a generated validator breaks mongod's rules (a bug of pull): {}",
            problems.join("; ")
        ));
    }
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
            .chain(
                root.fields
                    .iter()
                    .filter(|f| f.extended.as_ref().is_some_and(|e| e.sync != "frozen"))
                    .map(|f| format!("{}._id", f.stored)),
            )
            .collect();
        for spec in &f.indexes {
            let name = spec.get_str("name").unwrap_or_default().to_owned();
            let keys = spec.get_document("key").cloned().unwrap_or_default();
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
            let collation = match spec.get_document("collation") {
                Ok(own) if Some(own) == default => None,
                Ok(own) => match crate::collation::attribute(own) {
                    Ok(collation) => collation,
                    Err(why) => {
                        note(format!("not kept: {why}; create it by hand"));
                        continue;
                    }
                },
                // listed without one on a collection that has one: made `simple` on purpose
                Err(_) if default.is_some() => Some(r#"collation(locale = "simple")"#.to_owned()),
                Err(_) => None,
            };
            if keys.len() == 1 && keys.keys().next().is_some_and(|k| derived.contains(k)) {
                note("kept by the relationship: the derive creates it".to_owned());
                continue;
            }
            let partial = spec
                .get_document("partialFilterExpression")
                .ok()
                .map(extended_json);
            let first = keys.keys().next().cloned().unwrap_or_default();
            let extended_by_derive = keys.len() > 1
                && root.fields.iter().any(|f| {
                    f.stored == first
                        && f.reference.is_some()
                        && !matches!(f.ty, crate::model::Ty::Array { .. })
                })
                && !keys.contains_key("_id");
            c.indexes.push(Index {
                keys,
                name: name.clone(),
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
            note(if extended_by_derive {
                format!("kept as #[index]; it starts with the reference `{first}`, so the derive appends `_id` to it for keyset pages of a parent's children, and `apply` warns that the server's differs until it is rebuilt")
            } else {
                "kept as #[index]".to_owned()
            });
        }
    }
}
