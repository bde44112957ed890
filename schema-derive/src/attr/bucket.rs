//! `#[bucket(...)]`: the fields of a bucket document.

use quote::ToTokens;
use syn::Ident;

use super::{parse_all, string, unknown, value, Slot};
use crate::ctxt::Ctxt;
use crate::symbol::*;

/// `#[bucket(parent = f, entries = f, count = f, key = "k", first = f, last = f)]`: Rust field
/// names of the bucket document, and the stored key of an entry.
#[derive(Default)]
pub struct BucketAttr {
    pub parent: Option<Ident>,
    pub entries: Option<Ident>,
    pub count: Option<Ident>,
    pub key: Option<String>,
    pub first: Option<Ident>,
    pub last: Option<Ident>,
}

pub(super) fn parse_bucket(cx: &Ctxt, attr: &syn::Attribute) -> BucketAttr {
    let example = "#[bucket(parent = sensor_id, entries = readings, count = count, key = \"at\", first = first_at, last = last_at)]";
    if matches!(attr.meta, syn::Meta::Path(_)) {
        cx.error_spanned_by(
            attr,
            format!("`#[bucket]` names the fields of the bucket document: `{example}`"),
        );
        return BucketAttr::default();
    }
    let mut slots: Vec<Slot<Option<Ident>>> = [PARENT, ENTRIES, COUNT, FIRST, LAST]
        .into_iter()
        .map(|name| Slot::new(cx, "bucket", name))
        .collect();
    let mut key: Slot<Option<String>> = Slot::new(cx, "bucket", KEY);
    parse_all(cx, attr, |meta| {
        if meta.path == KEY {
            let parsed = string(&value(&meta)?, "key = \"at\"")
                .map(|lit| (lit.to_token_stream(), Some(lit.value())));
            key.set_or_poison(&meta.path, parsed);
            return Ok(());
        }
        let Some(slot) = slots.iter_mut().find(|s| meta.path == s.name) else {
            return unknown(
                cx,
                &meta,
                "bucket",
                &["parent", "entries", "count", "key", "first", "last"],
            );
        };
        let expr = value(&meta)?;
        let parsed = syn::parse2::<Ident>(expr.to_token_stream())
            .map(|ident| (expr.to_token_stream(), Some(ident)))
            .map_err(|_| {
                syn::Error::new_spanned(
                    &expr,
                    format!(
                        "`{}` names a field of this struct, e.g. `{example}`",
                        slot.name
                    ),
                )
            });
        slot.set_or_poison(&meta.path, parsed);
        Ok(())
    });
    let mut values = slots.into_iter().map(|slot| {
        let name = slot.name;
        let value = slot.get().and_then(|v| v.value);
        (name, value)
    });
    let mut take = |cx: &Ctxt| {
        let (name, value) = values.next().expect("five slots");
        if value.is_none() {
            cx.error_spanned_by(
                attr,
                format!("`#[bucket]` needs `{name} = <field>`: `{example}`"),
            );
        }
        value
    };
    let (parent, entries, count, first, last) = (take(cx), take(cx), take(cx), take(cx), take(cx));
    let key = key.get().and_then(|k| k.value);
    if key.is_none() {
        cx.error_spanned_by(
            attr,
            format!("`#[bucket]` needs the entries' sort key: `key = \"at\"` (`{example}`)"),
        );
    }
    BucketAttr {
        parent,
        entries,
        count,
        key,
        first,
        last,
    }
}
