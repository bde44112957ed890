//! References and copies, confirmed on the server. A field of a root, or of a sub-document it holds
//! (also in arrays), whose values have the type of another collection's `_id` (ObjectId, uuid,
//! string, integer; strings and integers only with a name hint: `userId` -> `users`) is a reference
//! when a deduplicated sample of up to 100 of its values is found in the target's `_id` by one
//! `$in` count on the `_id` index, at the threshold ratio. A sub-document of a root holding such an
//! `_id` and some of the target's own fields (same stored names and types) is an extended
//! reference; its strategy is suggested from the data, compared over every holder by one
//! aggregation ([`comparison_pipeline`]), never a sample: copies that all equal their source now
//! were maintained (`transactional`, `async` when one source has more than [`ASYNC_FAN_OUT`]
//! holders, seed 003's question 4); a copy of which even one holder differs was a snapshot
//! (`frozen`), because a maintained strategy would rewrite that holder's history.
//!
//! A copy needs no minimum of sources or holders: a sub-document whose `_id` values are found in
//! the source (at the reference threshold of the distinct values, all of them when there are
//! few) and whose copied fields the source holds in every document with the same kind is a copy,
//! whether 5 venues are copied into 200 events or 1 into 2. A copied string that the samples
//! made a unit enum (few distinct names in many holders) matches the source's string: the
//! copy's schema is the source's. Every candidate source that was looked at and rejected is in
//! the report's `rejected_copies`, with why.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::Collation;
use mongodb::Database;

use crate::config::PullConfig;
use crate::infer::Observed;
use crate::model::{ExtendedRef, Model, PartOf, Reference, Ty};
use crate::names;
use crate::report::{CopyCheck, PartCheck, ReferenceCheck, Report};
use crate::sample::collection;

/// The simple collation, sent on every read here: ids are compared exactly, whatever the
/// default collation of the holder or the source (`"V-abc"` and `"V-ABC"` are two vets even in
/// a collection compared case-insensitively; mongod groups, looks up and compares under the
/// collection's default otherwise).
fn exact() -> Collation {
    Collation::builder().locale("simple").build()
}

/// Distinct values checked per candidate.
pub const VALUES_CHECKED: i64 = 100;

/// More holders of one source than this suggest `async` over `transactional`.
pub const ASYNC_FAN_OUT: u64 = 100;

fn id_type(ty: &Ty) -> bool {
    matches!(
        ty,
        Ty::ObjectId | Ty::Uuid | Ty::Str | Ty::I32 | Ty::I64 { with_int: false }
    )
}

fn strong(ty: &Ty) -> bool {
    matches!(ty, Ty::ObjectId | Ty::Uuid)
}

/// `(collection index, root's _id type)` of every collection with a required `_id`.
fn targets(model: &Model) -> Vec<(usize, Ty)> {
    model
        .collections
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kinds.is_none())
        .filter_map(|(i, c)| {
            let id = model.structs[c.root]
                .fields
                .iter()
                .find(|f| f.stored == "_id")?;
            (!id.presence.missing && !id.presence.null && id_type(&id.ty))
                .then(|| (i, id.ty.clone()))
        })
        .collect()
}

/// Candidates for a field of type `ty` named `stored`, hinted ones first (`true`); unhinted ones
/// only for ids that cannot match by chance, or, for strings and integers, where the derive's
/// index for the field is there (`evidence`, [`derives_index`]): then every collection of that
/// `_id` type is a candidate, accepted only when all values checked are found in it.
fn candidates(model: &Model, stored: &str, ty: &Ty, evidence: bool) -> Vec<(usize, bool)> {
    let hint = names::reference_hint(stored).to_ascii_lowercase();
    let mut hinted = Vec::new();
    let mut others = Vec::new();
    for (i, id) in targets(model) {
        if id != *ty {
            continue;
        }
        let name = names::singular(&model.collections[i].name).to_ascii_lowercase();
        let name = name.replace(['_', '-'], "");
        if !hint.is_empty()
            && (name == hint.replace('_', "") || name.ends_with(&hint.replace('_', "")))
        {
            hinted.push((i, true));
        } else if strong(ty) || evidence {
            others.push((i, false));
        }
    }
    hinted.extend(others);
    if !evidence {
        hinted.truncate(3);
    }
    hinted
}

/// Whether collection `ci` holds the index the derive creates for a relationship at `path` (a
/// reference's path, or a copy's `<path>._id`): the fan-out index of a maintained copy,
/// `{ <path>: 1, _id: 1 }` (`<field>._id_1__id_1`), in any database; in a database that holds
/// mongo-schema's version record, any index starting with the path (a reference's, a frozen
/// copy's, a declared one the derive extended). A string or integer id there is looked for in
/// every collection of that `_id` type, not only the one its name hints at.
fn derives_index(model: &Model, ci: usize, path: &str) -> bool {
    let c = &model.collections[ci];
    c.indexed.iter().any(|keys| {
        let starts = keys.first().is_some_and(|k| k == path);
        let fan_out = keys.len() == 2 && path.ends_with("._id") && keys[1] == "_id";
        starts && (fan_out || model.record.is_some())
    })
}

/// Whether `found` of `checked` values accept a candidate: the threshold's share for a hinted
/// or an unguessable id, all of them for strings and integers no name hints at.
fn accepts(config: &PullConfig, found: u64, checked: usize, hinted: bool, ty: &Ty) -> bool {
    if hinted || strong(ty) {
        found as f64 >= checked as f64 * config.reference_threshold
    } else {
        found >= checked as u64
    }
}

/// The rows of `pipeline` on `coll`, under the simple collation ([`exact`]) and the read
/// limit; an error says `what` failed.
async fn aggregate(
    db: &Database,
    config: &PullConfig,
    report: &mut Report,
    coll: &str,
    pipeline: Vec<Document>,
    what: &str,
) -> Result<Vec<Document>, String> {
    report.command("aggregate");
    let failed = |e: mongodb::error::Error| format!("{what}: {e}");
    collection(db, coll, &config.read)
        .aggregate(pipeline)
        .collation(exact())
        .max_time(config.read.limit())
        .await
        .map_err(failed)?
        .try_collect()
        .await
        .map_err(failed)
}

/// Up to [`VALUES_CHECKED`] distinct values at `path`; `arrays` are the arrays on the way
/// (`items`, or `tags` itself), unwound in order.
async fn distinct_values(
    db: &Database,
    config: &PullConfig,
    coll: &str,
    path: &str,
    arrays: &[String],
    report: &mut Report,
) -> Result<Vec<Bson>, String> {
    let mut pipeline = vec![doc! { "$match": { path: { "$exists": true, "$ne": Bson::Null } } }];
    for array in arrays {
        pipeline.push(doc! { "$unwind": format!("${array}") });
    }
    pipeline.push(doc! { "$group": { "_id": format!("${path}") } });
    pipeline.push(doc! { "$limit": VALUES_CHECKED });
    let rows = aggregate(
        db,
        config,
        report,
        coll,
        pipeline,
        &format!("`{coll}.{path}`"),
    )
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|mut r| r.remove("_id"))
        .filter(|v| *v != Bson::Null)
        .collect())
}

async fn found_in(
    db: &Database,
    config: &PullConfig,
    target: &str,
    values: &[Bson],
    report: &mut Report,
) -> Result<u64, String> {
    report.command("aggregate");
    collection(db, target, &config.read)
        .count_documents(doc! { "_id": { "$in": values.to_vec() } })
        .collation(exact())
        .max_time(config.read.limit())
        .await
        .map_err(|e| format!("`{target}`: {e}"))
}

/// Finds the references of every root's fields and of the sub-documents they hold (also in
/// arrays), and the extended references of every root's sub-documents.
pub async fn relate(
    db: &Database,
    model: &mut Model,
    _observed: &[Observed],
    config: &PullConfig,
    report: &mut Report,
) -> Result<(), String> {
    for ci in 0..model.collections.len() {
        if model.collections[ci].kinds.is_some() {
            continue; // a collection of kinds: references in its variants are not looked for
        }
        let root = model.collections[ci].root;
        let mut pending: Vec<(usize, String, Vec<String>)> =
            vec![(root, String::new(), Vec::new())];
        let mut seen = Vec::new();
        while let Some((si, prefix, arrays)) = pending.pop() {
            if seen.contains(&si) {
                continue; // a struct shared by two paths is decided at the first
            }
            seen.push(si);
            for fi in 0..model.structs[si].fields.len() {
                let field = model.structs[si].fields[fi].clone();
                if field.stored == "_id" || !plain(&field.stored) {
                    continue;
                }
                let path = format!("{prefix}{}", field.stored);
                let (element, array) = match &field.ty {
                    Ty::Array { items, .. } => ((**items).clone(), true),
                    other => (other.clone(), false),
                };
                let mut through = arrays.clone();
                if array {
                    through.push(path.clone());
                }
                // a unit enum made from few stored values may be the `_id`s of a collection:
                // checked against the collection its name hints at (a hold's `bookId`)
                let sampled_enum = matches!(&element, Ty::Enum(e) if model.enums[*e].from_samples);
                if id_type(&element) || sampled_enum {
                    reference(db, model, config, report, ci, (si, fi), &path, &through).await?;
                    continue;
                }
                match element {
                    Ty::Struct(inner) => {
                        let whole = si == root && !array;
                        if whole && !field.presence.missing && !field.presence.null {
                            extended(db, model, config, report, ci, fi, inner).await?;
                        }
                        if model.structs[si].fields[fi].extended.is_none() {
                            pending.push((inner, format!("{path}."), through));
                        }
                    }
                    _ => continue,
                }
            }
        }
    }
    Ok(())
}

/// Records one check of values against a target's `_id`s, and says it when `config` asks for
/// progress (one line a check: each is a server command over the holders).
fn checked(config: &PullConfig, report: &mut Report, check: ReferenceCheck) {
    config.say(&format!(
        "references and copies: `{}` against `{}`: {} of {} distinct values found",
        check.path,
        check.target,
        crate::names::count(check.found),
        crate::names::count(check.checked)
    ));
    report.references.push(check);
}

/// `ty` with its element (through arrays) replaced by `element`.
fn with_element(ty: &Ty, element: Ty) -> Ty {
    match ty {
        Ty::Array { items, max } => Ty::Array {
            items: Box::new(with_element(items, element)),
            max: *max,
        },
        _ => element,
    }
}

fn plain(stored: &str) -> bool {
    !stored.is_empty() && !stored.contains('.') && !stored.starts_with('$')
}

/// Checks one id-like field (`path` from the collection, through `arrays`) against its
/// candidate targets; the first accepted one makes it a reference.
#[allow(clippy::too_many_arguments)]
async fn reference(
    db: &Database,
    model: &mut Model,
    config: &PullConfig,
    report: &mut Report,
    ci: usize,
    (si, fi): (usize, usize),
    path: &str,
    arrays: &[String],
) -> Result<(), String> {
    let coll = model.collections[ci].name.clone();
    let field = model.structs[si].fields[fi].clone();
    // a unit enum of stored strings: strings, looked for in the hinted collection only
    let sampled_enum = matches!(field.ty.element(), Ty::Enum(_));
    let element = match field.ty.element() {
        Ty::Enum(_) => Ty::Str,
        other => other.clone(),
    };
    let evidence = arrays.is_empty() && derives_index(model, ci, path);
    let candidates = candidates(model, &field.stored, &element, evidence && !sampled_enum);
    for (target, hinted) in candidates
        .into_iter()
        .filter(|(_, hinted)| *hinted || !sampled_enum)
    {
        let target_name = model.collections[target].name.clone();
        let values = distinct_values(db, config, &coll, path, arrays, report).await?;
        if values.is_empty() {
            break;
        }
        let found = found_in(db, config, &target_name, &values, report).await?;
        let accepted = accepts(config, found, values.len(), hinted, &element);
        checked(
            config,
            report,
            ReferenceCheck {
                path: format!("{coll}.{path}"),
                target: target_name.clone(),
                checked: values.len() as u64,
                found,
                accepted,
            },
        );
        // a single reference gets the derive's index (an array of them needs none)
        let single = !matches!(field.ty, Ty::Array { .. });
        if accepted && !declared_here(model, ci, path, single, report, &target_name) {
            break;
        }
        if accepted {
            let type_name = model.structs[model.collections[target].root].name.clone();
            let f = &mut model.structs[si].fields[fi];
            if sampled_enum {
                // its values are ids of the target, not a closed set: a new book is a new id
                f.ty = with_element(&f.ty, Ty::Str);
                f.notes.retain(|note| !note.ends_with(": a unit enum"));
                report.decisions.push(crate::report::Decision {
                    path: format!("{coll}.{path}"),
                    decision: "reference, not a unit enum".to_owned(),
                    evidence: format!(
                        "{found} of {} distinct values are `_id`s of `{target_name}`",
                        values.len()
                    ),
                });
            }
            f.notes.push(format!(
                "`{}`: {found} of {} distinct values checked are `_id`s of `{target_name}`: a reference",
                field.stored,
                values.len()
            ));
            f.reference = Some(Reference {
                collection: target_name,
                type_name,
            });
            break;
        }
    }
    Ok(())
}

async fn extended(
    db: &Database,
    model: &mut Model,
    config: &PullConfig,
    report: &mut Report,
    ci: usize,
    fi: usize,
    si: usize,
) -> Result<(), String> {
    let coll = model.collections[ci].name.clone();
    let root = model.collections[ci].root;
    let field = model.structs[root].fields[fi].clone();
    let copy = model.structs[si].clone();
    // the derive's index of a copy there: what is not pulled as the copy is reported, with why
    let evidence = derives_index(model, ci, &format!("{}._id", field.stored));
    let unsaid = |report: &mut Report, reason: String| {
        if evidence {
            report.rejected_copies.push(crate::report::RejectedCopy {
                path: format!("{coll}.{}", field.stored),
                target: String::new(),
                reason: format!(
                    "the derive's index on `{}._id` is there, but {reason}: kept as a plain sub-document",
                    field.stored
                ),
            });
        }
    };
    let Some(id) = copy.fields.iter().find(|f| f.stored == "_id") else {
        unsaid(report, "not every copy holds an `_id`".to_owned());
        return Ok(());
    };
    if id.presence.missing || id.presence.null || !id_type(&id.ty) {
        unsaid(
            report,
            format!(
                "its `_id` is missing, `null` or no id type ({:?}) in some holders",
                id.ty
            ),
        );
        return Ok(());
    }
    let copied: Vec<&crate::model::Field> =
        copy.fields.iter().filter(|f| f.stored != "_id").collect();
    if copied.is_empty() {
        unsaid(report, "it copies no field".to_owned());
        return Ok(());
    }
    let valid_ident = |s: &str| {
        names::field_ident(s) == s
            || (s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit())
                && names::field_ident(s).len() == s.len()
                && !names::field_ident(s).starts_with("r#"))
    };
    let candidates = candidates(model, &field.stored, &id.ty, evidence);
    if candidates.is_empty() {
        unsaid(
            report,
            format!("no pulled collection has `_id`s of its type ({:?})", id.ty),
        );
    }
    for (target, hinted) in candidates {
        let source = &model.structs[model.collections[target].root];
        let target_name = model.collections[target].name.clone();
        let mismatch = copied.iter().find_map(|c| {
            if c.presence.missing || c.presence.null {
                return Some(format!(
                    "`{}` is missing or `null` in some holders",
                    c.stored
                ));
            }
            if !valid_ident(&c.stored) {
                return Some(format!("`{}` is no Rust field name as stored", c.stored));
            }
            match source.fields.iter().find(|s| s.stored == c.stored) {
                None => Some(format!("the source has no `{}`", c.stored)),
                Some(s) if s.presence.missing || s.presence.null => Some(format!(
                    "`{}` is missing or `null` in some sources",
                    c.stored
                )),
                Some(s) if !same_kind(model, &c.ty, &s.ty) => Some(format!(
                    "`{}` is {:?} in the holders and {:?} in the source",
                    c.stored, c.ty, s.ty
                )),
                Some(_) => None,
            }
        });
        if let Some(reason) = mismatch {
            report.rejected_copies.push(crate::report::RejectedCopy {
                path: format!("{coll}.{}", field.stored),
                target: target_name,
                reason,
            });
            continue;
        }
        let path = format!("{}._id", field.stored);
        let values = distinct_values(db, config, &coll, &path, &[], report).await?;
        if values.is_empty() {
            continue;
        }
        let found = found_in(db, config, &target_name, &values, report).await?;
        let accepted = accepts(config, found, values.len(), hinted, &id.ty);
        checked(
            config,
            report,
            ReferenceCheck {
                path: format!("{coll}.{path}"),
                target: target_name.clone(),
                checked: values.len() as u64,
                found,
                accepted,
            },
        );
        if accepted && !declared_here(model, ci, &path, false, report, &target_name) {
            return Ok(());
        }
        if !accepted {
            report.rejected_copies.push(crate::report::RejectedCopy {
                path: format!("{coll}.{}", field.stored),
                target: target_name,
                reason: format!(
                    "{found} of {} distinct `_id`s checked are `_id`s of the source{}",
                    values.len(),
                    if hinted || strong(&id.ty) {
                        ""
                    } else {
                        " (strings and integers no name hints at need all of them)"
                    }
                ),
            });
            continue;
        }
        let names: Vec<String> = copied.iter().map(|c| c.stored.clone()).collect();
        let compared = compare_copies(
            db,
            config,
            &coll,
            &field.stored,
            &target_name,
            &names,
            report,
        )
        .await?;
        let pipeline = vec![
            doc! { "$group": { "_id": format!("${path}"), "n": { "$sum": 1 } } },
            doc! { "$sort": { "n": -1 } },
            doc! { "$limit": 1 },
        ];
        let top = aggregate(
            db,
            config,
            report,
            &coll,
            pipeline,
            &format!("`{coll}.{path}`"),
        )
        .await?;
        let max_holders = top
            .first()
            .and_then(|d| match d.get("n") {
                Some(Bson::Int32(n)) => Some(*n as u64),
                Some(Bson::Int64(n)) => Some(*n as u64),
                _ => None,
            })
            .unwrap_or(0);
        // mongod refuses writes to a time series collection inside a transaction: its copies
        // are snapshots
        let sync = if model.collections[ci].timeseries.is_some() {
            "frozen"
        } else {
            strategy(&compared, max_holders)
        };
        report.copies.push(CopyCheck {
            path: format!("{coll}.{}", field.stored),
            target: target_name.clone(),
            fields: names.clone(),
            compared: compared.holders,
            equal: compared.holders - compared.differing,
            differing: compared.differing,
            sources_missing: compared.sources_missing,
            max_holders,
            sync: sync.to_owned(),
        });
        let type_name = model.structs[model.collections[target].root].name.clone();
        let f = &mut model.structs[root].fields[fi];
        f.notes.push(copy_note(
            &field.stored,
            &target_name,
            &names,
            &compared,
            max_holders,
            sync,
        ));
        f.extended = Some(ExtendedRef {
            collection: target_name,
            type_name,
            fields: names,
            sync: sync.to_owned(),
        });
        return Ok(());
    }
    Ok(())
}

/// In a database mongo-schema made (it holds a version record), whether the schema declared a
/// relationship at `path` (a reference, or a copy's `_id`), as the derive's indexes tell: it
/// creates an index starting with every single reference (`indexed`: one must be there). What
/// was not declared is not written (its `apply` would create those indexes); the note says so.
/// An index that starts with the path and another key without the `_id` tie-break is kept
/// with `pages = false` (`keep_indexes`), so writing the relationship changes no index. Any
/// other database: always.
fn declared_here(
    model: &Model,
    ci: usize,
    path: &str,
    indexed: bool,
    report: &mut Report,
    target: &str,
) -> bool {
    let c = &model.collections[ci];
    let starts = |keys: &Vec<String>| keys.first().is_some_and(|k| k == path);
    let present = !indexed || c.indexed.iter().any(starts);
    if model.record.is_none() || present {
        return true;
    }
    report.notes.push(format!(
        "`{}.{path}`: its values are `_id`s of `{target}`, but the schema that made this database declares no relationship there (the derive's indexes are not there): kept as it is",
        c.name
    ));
    false
}

/// Whether a copied field of type `copy` can be the source's field of type `source`: the same
/// type, or strings either side (a unit enum the holders' few values made, a string the
/// source's many values left).
fn same_kind(model: &Model, copy: &Ty, source: &Ty) -> bool {
    let string = |ty: &Ty| match ty {
        Ty::Str => true,
        Ty::Enum(i) => model.enums.get(*i).is_some(),
        _ => false,
    };
    copy == source || (string(copy) && string(source))
}

/// The strategy the data supports: a copy is maintained only when every holder equals its
/// source now; a single differing copy makes it a snapshot (`frozen`), because a maintained
/// strategy's first repair would rewrite that copy's history.
pub fn strategy(compared: &Compared, max_holders: u64) -> &'static str {
    if compared.differing > 0 || compared.holders == 0 {
        "frozen"
    } else if max_holders > ASYNC_FAN_OUT {
        "async"
    } else {
        "transactional"
    }
}

/// The comment on a copy: the counts behind its strategy and, for a snapshot, what a
/// maintained strategy would do to it.
fn copy_note(
    field: &str,
    target: &str,
    names: &[String],
    compared: &Compared,
    max_holders: u64,
    sync: &str,
) -> String {
    let holders = |n: u64| {
        format!(
            "{} holder{}",
            names::count(n),
            if n == 1 { "" } else { "s" }
        )
    };
    let mut note = format!(
        "`{field}`: a copy of `{target}` ({}): every one of {} compared with its source (one aggregation): ",
        names.join(", "),
        holders(compared.holders),
    );
    if compared.differing == 0 {
        note.push_str(&format!(
            "all equal it now, at most {} of one source: `{sync}`",
            holders(max_holders)
        ));
    } else {
        note.push_str(&format!(
            "{} differ{} from it now",
            names::count(compared.differing),
            if compared.differing == 1 { "s" } else { "" }
        ));
        if compared.sources_missing > 0 {
            note.push_str(&format!(
                " ({} whose source is gone)",
                names::count(compared.sources_missing)
            ));
        }
        note.push_str(&format!(
            ": `{sync}`, a snapshot. Warning: a maintained strategy (`async`, `transactional`) would rewrite those {} copies to their source's current values on its first repair, and their history would be lost",
            names::count(compared.differing)
        ));
    }
    note
}

/// What every holder's copy says against its source now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compared {
    /// Holders of a copy (documents whose copy is a sub-document).
    pub holders: u64,
    /// Of them, copies with a copied field that differs from the source's now, or whose
    /// source is gone.
    pub differing: u64,
    /// Of the differing, copies whose source is gone.
    pub sources_missing: u64,
}

/// The pipeline that compares every holder's copy at `field` with its source in `target`, in
/// one pass on the server: a `$lookup` on the source's `_id` index that brings back only the
/// copied fields (the one source kept as a document), and one `$group` that counts. The copied `names` must be plain identifiers
/// (no `.`, no `$`): they are written as paths. mongod 5.0 and later take `localField` with a
/// `pipeline`; the reply is one small document whatever the collection holds. Copied values
/// are compared with the server's equality (numbers by value, documents field by field).
pub fn comparison_pipeline(field: &str, target: &str, names: &[String]) -> Vec<Document> {
    let mut projection = doc! { "_id": 0 };
    for name in names {
        projection.insert(name.as_str(), 1);
    }
    // the copied names are plain identifiers (`extended` takes no other), so they are paths
    let copy = |name: &str| Bson::String(format!("$copy.{name}"));
    let source = |name: &str| Bson::String(format!("$source.{name}"));
    let differs: Vec<Bson> = names
        .iter()
        .map(|n| Bson::Document(doc! { "$ne": [copy(n), source(n)] }))
        .collect();
    // `$first` of no source is missing on mongod, `null` on SecantusDB: not a document either way
    let missing = doc! { "$ne": [{ "$type": "$source" }, "object"] };
    vec![
        doc! { "$match": { field: { "$type": "object" } } },
        doc! { "$project": { "_id": 0, "copy": format!("${field}") } },
        doc! { "$lookup": {
            "from": target,
            "localField": "copy._id",
            "foreignField": "_id",
            "pipeline": [{ "$project": projection }, { "$limit": 1 }],
            "as": "source",
        } },
        doc! { "$addFields": { "source": { "$first": "$source" } } },
        doc! { "$group": {
            "_id": Bson::Null,
            "holders": { "$sum": 1 },
            "differing": { "$sum": { "$cond": [{ "$or": [missing.clone(), { "$or": differs }] }, 1, 0] } },
            "missing": { "$sum": { "$cond": [missing, 1, 0] } },
        } },
    ]
}

/// Compares every holder's copy with its source now ([`comparison_pipeline`]).
async fn compare_copies(
    db: &Database,
    config: &PullConfig,
    coll: &str,
    field: &str,
    target: &str,
    names: &[String],
    report: &mut Report,
) -> Result<Compared, String> {
    let pipeline = comparison_pipeline(field, target, names);
    let what = format!("`{coll}.{field}`: comparing the copies with `{target}`");
    let rows = aggregate(db, config, report, coll, pipeline, &what).await?;
    let row = rows.into_iter().next().unwrap_or_default();
    let count = |key: &str| match row.get(key) {
        Some(Bson::Int32(n)) => *n as u64,
        Some(Bson::Int64(n)) => *n as u64,
        Some(Bson::Double(n)) => *n as u64,
        _ => 0,
    };
    Ok(Compared {
        holders: count("holders"),
        differing: count("differing"),
        sources_missing: count("missing"),
    })
}

/// Turns the copies of collection `name` back into plain sub-documents (their check failed).
pub fn drop_copies(model: &mut Model, name: &str, report: &mut Report) {
    let Some(c) = model.collections.iter().find(|c| c.name == name) else {
        return;
    };
    for f in model.structs[c.root].fields.iter_mut() {
        if let Some(e) = f.extended.take() {
            report.notes.push(format!(
                "`{name}.{}`: the copy of `{}` fails stored documents as an extended reference: kept as a plain sub-document",
                f.stored, e.collection
            ));
        }
    }
}

/// Whether `part`'s name hints that it belongs to `owner`: it starts with the owner's singular
/// (`product_specs`, `productSpecs` of `products`).
fn part_hint(part: &str, owner: &str) -> bool {
    let squash = |s: &str| s.to_ascii_lowercase().replace(['_', '-'], "");
    let (part, owner) = (squash(part), squash(&names::singular(owner)));
    !owner.is_empty() && part.len() > owner.len() && part.starts_with(&owner)
}

/// The documents of `from` whose `_id` is no `_id` of `other`, counted over all of them in one
/// aggregation (a `$lookup` on `other`'s `_id` index, only the `_id` kept).
async fn unmatched(
    db: &Database,
    config: &PullConfig,
    from: &str,
    other: &str,
    report: &mut Report,
) -> Result<u64, String> {
    let pipeline = vec![
        doc! { "$project": { "_id": 1 } },
        doc! { "$lookup": {
            "from": other,
            "localField": "_id",
            "foreignField": "_id",
            "pipeline": [{ "$project": { "_id": 1 } }],
            "as": "same",
        } },
        doc! { "$match": { "same": { "$size": 0 } } },
        doc! { "$count": "n" },
    ];
    let what = format!("`{from}`: looking its `_id`s up in `{other}`");
    let rows = aggregate(db, config, report, from, pipeline, &what).await?;
    Ok(match rows.first().and_then(|r| r.get("n")) {
        Some(Bson::Int32(n)) => *n as u64,
        Some(Bson::Int64(n)) => *n as u64,
        _ => 0,
    })
}

/// Seed 003's sixth outcome, found in the data: a collection whose every `_id` is an `_id` of
/// another (a spec sheet under its product's `_id`) is a part stored under its owner's `_id`.
/// Candidates have the same `_id` type and no more documents than the owner; `_id`s that can
/// match by chance (strings and integers) need a name that hints at the pair
/// (`product_specs` of `products`). A sample of the part's `_id`s is looked up in the owner with
/// one `$in` count; when (nearly) all are found, every part is looked up (one aggregation). With no
/// orphan, `same_id_as` is written (`optional_part` when some owners have no part); with a few
/// orphans, or two collections of equal `_id` sets that no name tells apart, a comment proposes
/// it.
pub async fn parts(
    db: &Database,
    model: &mut Model,
    config: &PullConfig,
    report: &mut Report,
) -> Result<(), String> {
    let ids = targets(model);
    for &(pi, ref ty) in &ids {
        let part = model.collections[pi].name.clone();
        let count = model.collections[pi].count;
        if count == 0 {
            continue;
        }
        // the owner a name hints at first, then the others
        let mut owners: Vec<usize> = ids
            .iter()
            .filter(|(oi, oty)| *oi != pi && oty == ty && model.collections[*oi].count >= count)
            .map(|(oi, _)| *oi)
            .filter(|oi| strong(ty) || part_hint(&part, &model.collections[*oi].name))
            .collect();
        owners.sort_by_key(|oi| !part_hint(&part, &model.collections[*oi].name));
        // a few candidates: two commands each
        owners.truncate(5);
        if owners.is_empty() {
            continue;
        }
        let values = distinct_values(db, config, &part, "_id", &[], report).await?;
        if values.is_empty() {
            continue;
        }
        for oi in owners {
            let owner = model.collections[oi].name.clone();
            let owners_count = model.collections[oi].count;
            let found = found_in(db, config, &owner, &values, report).await?;
            if (found as f64) < values.len() as f64 * config.reference_threshold {
                report.parts.push(PartCheck {
                    part: part.clone(),
                    owner,
                    checked: values.len() as u64,
                    found,
                    orphans: 0,
                    owners_without_part: 0,
                    proposed: false,
                    written: false,
                });
                continue;
            }
            // the sample saw every part, or every part is looked up
            let orphans = if count <= values.len() as u64 {
                values.len() as u64 - found
            } else {
                unmatched(db, config, &part, &owner, report).await?
            };
            let owners_without_part = owners_count.saturating_sub(count - orphans);
            let hinted = part_hint(&part, &owner);
            // equal sets: which one is the part only a name can tell
            let ambiguous = owners_without_part == 0 && orphans == 0 && !hinted;
            let certain = orphans == 0 && !ambiguous;
            let type_name = model.structs[model.collections[oi].root].name.clone();
            let evidence = format!(
                "every one of the {} `_id`s of `{part}` {} an `_id` of `{owner}` ({}){}: a part stored under its owner's `_id` (seed 003: large and cold)",
                names::count(count),
                if orphans == 0 { "is".to_owned() } else { format!("but {} is", names::count(orphans)) },
                if count <= values.len() as u64 {
                    "all looked up with one `$in` count".to_owned()
                } else {
                    format!("a sample of {} with one `$in` count, then all with one aggregation", values.len())
                },
                if owners_without_part > 0 {
                    format!("; {} of the {} owners have none: `optional_part`", names::count(owners_without_part), names::count(owners_count))
                } else {
                    String::new()
                },
            );
            // many orphans: no part of that owner
            let proposed = orphans * 10 <= count;
            report.parts.push(PartCheck {
                part: part.clone(),
                owner: owner.clone(),
                checked: values.len() as u64,
                found,
                orphans,
                owners_without_part,
                proposed,
                written: certain && proposed,
            });
            if !proposed {
                continue;
            }
            model.collections[pi].part_of = Some(PartOf {
                owner,
                type_name,
                optional: owners_without_part > 0,
                certain,
                evidence,
            });
            break;
        }
    }
    // an owner that is itself a part would not build (`same_id_as` names the first owner):
    // such a pair is only proposed
    let chained: Vec<usize> = (0..model.collections.len())
        .filter(|&i| {
            model.collections[i].part_of.as_ref().is_some_and(|p| {
                p.certain
                    && model
                        .collections
                        .iter()
                        .any(|o| o.name == p.owner && o.part_of.as_ref().is_some_and(|q| q.certain))
            })
        })
        .collect();
    for i in chained {
        let name = model.collections[i].name.clone();
        for check in report.parts.iter_mut().filter(|c| c.part == name) {
            check.written = false;
        }
        if let Some(p) = model.collections[i].part_of.as_mut() {
            p.certain = false;
            p.evidence.push_str(
                "; the owner is itself a part of another collection: name that one instead",
            );
        }
    }
    Ok(())
}
