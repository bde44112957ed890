//! A time series collection (`#[collection(timeseries(...), expire_after_secs = N)]`): what
//! mongod accepts on one, one `check_*` function per rule. Whether the time field is stored as
//! a BSON date is rustc's to tell (`gen::timeseries` emits `require_bson_date`, spanned at the
//! field).
//!
//! mongod's rules (`src/mongo/db/timeseries/timeseries_commands_conversion_helper.cpp`,
//! `timeseries_index_schema_conversion_functions.cpp`, `jstests/core/timeseries/ddl/`):
//! `create` and `collMod` refuse a validator, a validation level and action; an index on a
//! time series collection is never unique, never `text`, sparse only on the time and meta
//! fields, never a TTL index (the collection's `expireAfterSeconds` is), never a partial filter
//! with a collation; a key on the time field is ascending or descending, one on a measurement
//! ascending, descending or `2dsphere`.

use super::{resolve_field, stored_key};
use crate::ast::Container;
use crate::attr::{Index, KeyField, KeyKind, Sp, TimeSeriesAttr};
use crate::ctxt::Ctxt;

pub fn check(cx: &Ctxt, cont: &Container) {
    let Some(collection) = &cont.attrs.collection else {
        return;
    };
    let collection = &collection.value;
    let Some(timeseries) = &collection.timeseries else {
        check_expiry_needs_timeseries(cx, cont);
        return;
    };
    let (time, meta) = check_fields(cx, cont, &timeseries.value);
    check_no_validator_options(cx, cont);
    check_relationships(cx, cont);
    for index in cont.attrs.indexes.iter().chain(variant_indexes(cont)) {
        check_index(cx, cont, &index.value, &time, meta.as_deref());
    }
}

fn variant_indexes<'c>(cont: &'c Container) -> Vec<&'c Sp<Index>> {
    match &cont.data {
        crate::ast::Data::Enum(variants) => {
            variants.iter().flat_map(|v| &v.attrs.indexes).collect()
        }
        _ => Vec::new(),
    }
}

/// `expire_after_secs` on a collection is a time series collection's expiry; a plain
/// collection expires documents with a TTL index.
fn check_expiry_needs_timeseries(cx: &Ctxt, cont: &Container) {
    if let Some(expire) = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.expire_after_secs.as_ref())
    {
        cx.error_spanned_by(
            &expire.tokens,
            "`expire_after_secs` on `#[collection]` is the expiry of a time series collection (`timeseries(time = at, ...)`); a plain collection expires documents with a TTL index: `#[index(keys(at = 1), expire_after_secs = N)]`",
        );
    }
}

/// The time field is a stored field that every measurement holds (not an `Option`: mongod
/// refuses a measurement without it); the meta field is another stored field.
fn check_fields(cx: &Ctxt, cont: &Container, ts: &TimeSeriesAttr) -> (String, Option<String>) {
    let time = ts
        .time
        .as_ref()
        .map(|t| resolve_field(cx, cont, &t.value))
        .unwrap_or_default();
    if let Some(t) = &ts.time {
        if let Some(field) = crate::check::rust_field(cont, &t.value) {
            if crate::ast::generic_arg(field.ty, &["Option"]).is_some() {
                cx.error_spanned_by(
                    t.value.tokens(),
                    format!(
                        "the time field `{}` of a time series collection is in every measurement (mongod refuses one without it): make it a `DateTime`, not an `Option`",
                        field.display_name()
                    ),
                );
            }
        }
    }
    let meta = ts.meta.as_ref().map(|m| {
        let path = resolve_field(cx, cont, &m.value);
        if path == time {
            cx.error_spanned_by(
                &m.tokens,
                "the meta field of a time series collection is another field than its time field",
            );
        }
        if path == "_id" {
            cx.error_spanned_by(
                &m.tokens,
                "`_id` is no meta field: the meta field says which series a measurement belongs to (a sensor, a host)",
            );
        }
        path
    });
    (time, meta)
}

/// mongod refuses writes to a time series collection inside a transaction
/// (`OperationNotSupportedInTransaction`: `jstests/core/timeseries/write/
/// timeseries_insert_in_transaction.js` and its neighbours), and its change streams do not show
/// them, so a time series collection holds none of the relationships the library keeps with
/// either: no copy kept in sync, no subset or counter, no part of another collection. (Its part
/// as another struct's child, source or owner is checked through `CollectionKind`, at that
/// struct's attribute.)
fn check_relationships(cx: &Ctxt, cont: &Container) {
    const TXN: &str = "mongod refuses writes to a time series collection inside a transaction";
    if let Some(owner) = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.same_id_as.as_ref())
    {
        cx.error_spanned_by(
            &owner.tokens,
            format!("a time series collection cannot be a part stored under another collection's `_id` (`same_id_as`): a part is deleted with its owner in one transaction, and {TXN}; hold a `#[reference]` to the owner instead"),
        );
    }
    for field in cont.all_stored_fields() {
        if let Some(extended) = &field.attrs.extended_ref {
            if extended
                .value
                .sync
                .is_some_and(|s| s != crate::attr::Sync::Frozen)
            {
                cx.error_spanned_by(
                    &extended.tokens,
                    format!("a time series collection cannot hold a copy kept in sync (`{}`): the library updates the copies of each source change in its holders (in the source's transaction with `sync = \"transactional\"`), {TXN} and limits the updates of its measurements; copy the source once with `sync = \"frozen\"`, or hold a `#[reference]`", field.display_name()),
                );
            }
        }
        let maintained = field
            .attrs
            .subset
            .as_ref()
            .map(|s| ("#[subset]", &s.tokens))
            .or_else(|| {
                field
                    .attrs
                    .counter
                    .as_ref()
                    .map(|c| ("#[counter]", &c.tokens))
            });
        if let Some((attribute, tokens)) = maintained {
            cx.error_spanned_by(
                tokens,
                format!("a time series collection cannot hold a `{attribute}` (`{}`): the library updates it in the transaction that writes each child, and {TXN}; count or list the children with a declared query instead", field.display_name()),
            );
        }
    }
}

/// mongod refuses `validator`, `validationLevel` and `validationAction` on a time series
/// collection (`create` and `collMod`: InvalidOptions).
fn check_no_validator_options(cx: &Ctxt, cont: &Container) {
    let Some(collection) = &cont.attrs.collection else {
        return;
    };
    let c = &collection.value;
    let given = [
        c.validation_level.as_ref().map(|s| &s.tokens),
        c.validation_action.as_ref().map(|s| &s.tokens),
        c.additional_properties.as_ref().map(|s| &s.tokens),
    ];
    for tokens in given.into_iter().flatten() {
        cx.error_spanned_by(
            tokens,
            "mongod takes no validator on a time series collection (`create` and `collMod` refuse `validator`, `validationLevel` and `validationAction`): the model's `$jsonSchema` is checked in the library (`T::check`) instead; remove this option",
        );
    }
}

/// One index of a time series collection against mongod's rules.
fn check_index(cx: &Ctxt, cont: &Container, index: &Index, time: &str, meta: Option<&str>) {
    let is_meta = |path: &str| {
        meta.is_some_and(|m| path == m || path.strip_prefix(m).is_some_and(|r| r.starts_with('.')))
    };
    if let Some(unique) = index.unique.as_ref().filter(|u| u.value) {
        cx.error_spanned_by(
            &unique.tokens,
            "mongod builds no unique index on a time series collection (\"Unique indexes are not supported on time-series collections\"): drop `unique`",
        );
    }
    if let Some(ttl) = &index.expire_after_secs {
        cx.error_spanned_by(
            &ttl.tokens,
            "a time series collection expires its measurements itself: put `expire_after_secs = N` on `#[collection]`, not on an index",
        );
    }
    if let (Some(partial), Some(_)) = (&index.partial, &index.collation) {
        cx.error_spanned_by(
            &partial.tokens,
            "on a time series collection mongod refuses a partial filter together with a collation (IndexOptionsConflict): drop one of them",
        );
    }
    let Some(keys) = &index.keys else {
        return;
    };
    for key in &keys.value {
        let path = stored_key(cont, key);
        let kind = match &key.kind {
            KeyKind::Special(kind) => Some(kind.as_str()),
            KeyKind::Direction(_) => None,
        };
        let tokens = || match &key.field {
            KeyField::Path(lit) => quote::ToTokens::to_token_stream(lit),
            field => field.tokens(),
        };
        if kind == Some("text") {
            cx.error_spanned_by(
                &key.kind_tokens,
                "mongod builds no text index on a time series collection",
            );
        } else if path == time && kind.is_some() {
            cx.error_spanned_by(
                &key.kind_tokens,
                format!("a key on the time field `{time}` of a time series collection is ascending or descending (1 or -1)"),
            );
        } else if path != time && !is_meta(&path) && kind.is_some_and(|k| k != "2dsphere") {
            cx.error_spanned_by(
                &key.kind_tokens,
                format!("a key on a measurement (`{path}`) of a time series collection is ascending, descending or \"2dsphere\"; index the meta field for other kinds"),
            );
        }
        if index.sparse.as_ref().is_some_and(|s| s.value) && path != time && !is_meta(&path) {
            cx.error_spanned_by(
                tokens(),
                format!("mongod builds a sparse index of a time series collection on its time and meta fields only, and `{path}` is a measurement: drop `sparse`"),
            );
        }
    }
}
