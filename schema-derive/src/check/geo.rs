//! Declared geo queries (`near(field)`, `within(field)`): what mongod needs to answer them, one
//! `check_*` function per rule. Whether the field is a GeoJSON point is rustc's to tell
//! (`gen::queries` emits `require_geo`, spanned at the field).

use super::{resolve_field, stored_key};
use crate::ast::{Container, Data};
use crate::attr::{KeyKind, Query};
use crate::ctxt::Ctxt;

pub fn check(cx: &Ctxt, cont: &Container) {
    for query in &cont.attrs.queries {
        let query = &query.value;
        let Some(geo) = &query.geo else {
            continue;
        };
        resolve_field(cx, cont, &geo.field);
        if geo.near {
            check_near_has_2dsphere_index(cx, cont, query);
            check_near_takes_no_sort(cx, query);
        }
    }
}

/// mongod answers `$near` / `$geoNear` only with a `2dsphere` index on the field
/// (`document_source_geo_near.cpp`: "unable to find index for $geoNear query"), which the
/// schema never derives: the model declares it.
fn check_near_has_2dsphere_index(cx: &Ctxt, cont: &Container, query: &Query) {
    let Some(geo) = &query.geo else {
        return;
    };
    let silent = Ctxt::new();
    let path = resolve_field(&silent, cont, &geo.field);
    let _ = silent.check();
    let variant_indexes = match &cont.data {
        Data::Enum(variants) => variants.iter().flat_map(|v| &v.attrs.indexes).collect(),
        _ => Vec::new(),
    };
    let indexed = cont
        .attrs
        .indexes
        .iter()
        .chain(variant_indexes)
        .filter_map(|index| index.value.keys.as_ref())
        .flat_map(|keys| &keys.value)
        .any(|key| {
            matches!(&key.kind, KeyKind::Special(kind) if kind == "2dsphere")
                && stored_key(cont, key) == path
        });
    if indexed {
        return;
    }
    let field = geo.field.tokens();
    let mut keys: Vec<String> = query
        .eq
        .iter()
        .map(|f| format!("{} = 1", f.tokens()))
        .collect();
    keys.push(format!("{field} = \"2dsphere\""));
    cx.error_spanned_by(
        &field,
        format!(
            "`near({field})` reads the documents nearest to a point first, which mongod answers only with a 2dsphere index on `{path}` (`$geoNear` fails without one): declare `#[index(keys({}))]`",
            keys.join(", ")
        ),
    );
}

/// A near query returns the documents nearest first: `$geoNear` gives that order and no other,
/// and a keyset page of distances has no stable cursor.
fn check_near_takes_no_sort(cx: &Ctxt, query: &Query) {
    let Some(geo) = &query.geo else {
        return;
    };
    if let Some(first) = query.sort.first() {
        cx.error_spanned_by(
            first.field.tokens(),
            "a `near` query returns the documents nearest first: it takes no `sort` (sort the rows after, or declare a `within` query with a sort)",
        );
    }
    if query.pages {
        cx.error_spanned_by(
            &geo.tokens,
            "a `near` query is not read in keyset pages (`pages`): its order is a distance no index holds; use `limit`",
        );
    }
}
