//! `timeseries(time = at, meta = sensor, granularity = "minutes")`, an option of
//! `#[collection]`: the collection is a time series collection.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;

use super::{one_of, unknown, value, KeyField, Slot, Sp};
use crate::ctxt::Ctxt;
use crate::symbol::*;

/// A time series as written: the time field (required), the meta field, the granularity.
#[derive(Default, Clone)]
pub struct TimeSeriesAttr {
    pub time: Option<Sp<KeyField>>,
    pub meta: Option<Sp<KeyField>>,
    pub granularity: Option<Sp<String>>,
}

impl Default for KeyField {
    fn default() -> Self {
        KeyField::Path(syn::LitStr::new("", proc_macro2::Span::call_site()))
    }
}

const EXAMPLE: &str = "timeseries(time = at, meta = sensor, granularity = \"minutes\")";

/// A field of the collection's own, by Rust name or quoted stored name (mongod takes top-level
/// fields only: `timeField` and `metaField` name no path).
fn field(meta: &ParseNestedMeta, option: &str) -> syn::Result<(TokenStream, KeyField)> {
    let expr = value(meta)?;
    let tokens = expr.to_token_stream();
    let field: KeyField = syn::parse2(tokens.clone()).map_err(|_| {
        syn::Error::new_spanned(
            &tokens,
            format!("`{option}` names a field of the collection: `{option} = at`"),
        )
    })?;
    if let KeyField::Nested(_) = field {
        return Err(syn::Error::new_spanned(
            &tokens,
            format!("`{option}` names a top-level field: mongod's `timeField` and `metaField` are no dotted paths"),
        ));
    }
    if let KeyField::Path(lit) = &field {
        if lit.value().contains('.') || lit.value().is_empty() {
            return Err(syn::Error::new_spanned(
                lit,
                format!("`{option}` names a top-level field: mongod's `timeField` and `metaField` are no dotted paths"),
            ));
        }
    }
    Ok((tokens, field))
}

/// Parses the parenthesised options; a missing time field is reported.
pub fn parse(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<(TokenStream, TimeSeriesAttr)> {
    let tokens = meta.path.to_token_stream();
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!("`timeseries` names its fields: `{EXAMPLE}`")));
    }
    let mut time: Slot<KeyField> = Slot::new(cx, "timeseries", TIME);
    let mut meta_field: Slot<KeyField> = Slot::new(cx, "timeseries", META);
    let mut granularity: Slot<String> = Slot::new(cx, "timeseries", GRANULARITY);
    meta.parse_nested_meta(|inner| {
        if inner.path == TIME {
            let parsed = field(&inner, "time");
            time.set_or_poison(&inner.path, parsed);
        } else if inner.path == META {
            let parsed = field(&inner, "meta");
            meta_field.set_or_poison(&inner.path, parsed);
        } else if inner.path == GRANULARITY {
            let parsed = one_of(&inner, &["seconds", "minutes", "hours"]);
            granularity.set_or_poison(&inner.path, parsed);
        } else {
            unknown(cx, &inner, "timeseries", &["time", "meta", "granularity"])?;
        }
        Ok(())
    })?;
    let time = time.get();
    if time.is_none() {
        return Err(syn::Error::new_spanned(
            tokens,
            format!(
                "`timeseries` needs its time field (a BSON date in every measurement): `{EXAMPLE}`"
            ),
        ));
    }
    Ok((
        tokens,
        TimeSeriesAttr {
            time,
            meta: meta_field.get(),
            granularity: granularity.get(),
        },
    ))
}
