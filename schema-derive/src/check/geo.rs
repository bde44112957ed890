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
    let indexes: Vec<_> = cont.attrs.indexes.iter().chain(variant_indexes).collect();
    // an index whose keys did not parse (`"2DSphere"`) has its own error, which may be this
    // index: no second error for one mistake
    // (a malformed `keys(..)` leaves the option poisoned: given, and empty)
    if indexes
        .iter()
        .any(|index| index.value.keys.as_ref().is_none_or(|k| k.value.is_empty()))
    {
        return;
    }
    let indexed = indexes
        .iter()
        .filter_map(|index| index.value.keys.as_ref())
        .flat_map(|keys| &keys.value)
        .any(|key| {
            matches!(&key.kind, KeyKind::Special(kind) if kind == "2dsphere")
                && stored_key(cont, key) == path
        });
    if indexed {
        return;
    }
    // a field that is no GeoJSON point gets rustc's error at `require_geo` alone: an index
    // to declare on it would be the wrong fix (`Schema::build` still asks for the index of a
    // point whose type is named otherwise, an alias)
    if !names_a_point(cont, &geo.field) {
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

/// Whether the top-level field a geo query names is declared as a `Point` (`geo::Point`,
/// `Option<Point>`): the type a 2dsphere index serves. Nested paths are taken to be one.
fn names_a_point(cont: &Container, key: &crate::attr::KeyField) -> bool {
    let crate::attr::KeyField::Rust(ident) = key else {
        return true;
    };
    let wanted = crate::ast::unraw(ident);
    let Some(field) = super::named_fields(cont)
        .into_iter()
        .find(|f| f.ident.is_some_and(|i| crate::ast::unraw(i) == wanted))
    else {
        return true;
    };
    let ty = crate::ast::generic_arg(field.ty, &["Option"]).unwrap_or(field.ty);
    crate::serde_helpers::type_last_name(ty).is_none_or(|name| name == "Point")
}
