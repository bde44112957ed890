//! `#[collection(...)]`: the collection's name, validation, shard key, `same_id_as`,
//! `optional_part`, collation, time series and expiry.

use quote::ToTokens;

use super::index::parse_keys;
use super::{
    boolean, collation, flag, one_of, parse_all, stored_type_of, string, timeseries, unknown,
    unsigned, value, Collation, IndexKey, Slot, Sp, TimeSeriesAttr,
};
use crate::ctxt::Ctxt;
use crate::symbol::*;

pub struct Collection {
    pub name: Option<Sp<String>>,
    pub validation_level: Option<Sp<String>>,
    pub validation_action: Option<Sp<String>>,
    pub additional_properties: Option<Sp<bool>>,
    pub shard_key: Option<Sp<Vec<IndexKey>>>,
    /// `same_id_as = Owner`: a part stored under its owner's `_id` (seed 003's large and cold
    /// child).
    pub same_id_as: Option<Sp<syn::Type>>,
    /// `optional_part`: an owner may have no part (audit counts no missing ones).
    pub optional_part: Option<Sp<bool>>,
    /// `collation(...)`: the collection's default collation.
    pub collation: Option<Sp<Collation>>,
    /// `timeseries(...)`: a time series collection.
    pub timeseries: Option<Sp<TimeSeriesAttr>>,
    /// `expire_after_secs = N`: a time series collection's expiry.
    pub expire_after_secs: Option<Sp<u64>>,
}

pub(super) fn parse_collection(cx: &Ctxt, attr: &syn::Attribute) -> Collection {
    let mut name = Slot::new(cx, "collection", NAME);
    let mut level = Slot::new(cx, "collection", VALIDATION_LEVEL);
    let mut action = Slot::new(cx, "collection", VALIDATION_ACTION);
    let mut additional = Slot::new(cx, "collection", ADDITIONAL_PROPERTIES);
    let mut shard_key = Slot::new(cx, "collection", SHARD_KEY);
    let mut same_id_as: Slot<Option<syn::Type>> = Slot::new(cx, "collection", SAME_ID_AS);
    let mut optional_part = Slot::new(cx, "collection", OPTIONAL_PART);
    let mut collation = Slot::new(cx, "collection", COLLATION);
    let mut timeseries = Slot::new(cx, "collection", TIMESERIES);
    let mut expire = Slot::new(cx, "collection", EXPIRE_AFTER_SECS);
    parse_all(cx, attr, |meta| {
        if meta.path == NAME {
            let parsed = string(&value(&meta)?, "name = \"tickets\"").and_then(|lit| {
                if lit.value().is_empty() {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "collection name must not be empty",
                    ));
                }
                Ok((lit.to_token_stream(), lit.value()))
            });
            name.set_or_poison(&meta.path, parsed);
        } else if meta.path == VALIDATION_LEVEL {
            let parsed = one_of(&meta, &["strict", "moderate"]);
            level.set_or_poison(&meta.path, parsed);
        } else if meta.path == VALIDATION_ACTION {
            let parsed = one_of(&meta, &["error", "warn"]);
            action.set_or_poison(&meta.path, parsed);
        } else if meta.path == ADDITIONAL_PROPERTIES {
            let parsed = boolean(&value(&meta)?, "additional_properties = false");
            additional.set_or_poison(&meta.path, parsed);
        } else if meta.path == SHARD_KEY {
            let parsed = parse_keys(&meta).map(|keys| (meta.path.to_token_stream(), keys));
            shard_key.set_or_poison(&meta.path, parsed);
        } else if meta.path == SAME_ID_AS {
            let parsed = stored_type_of(&meta, "same_id_as = Product");
            same_id_as.set_or_poison(&meta.path, parsed);
        } else if meta.path == OPTIONAL_PART {
            let parsed = flag(&meta);
            optional_part.set_or_poison(&meta.path, parsed);
        } else if meta.path == COLLATION {
            let parsed = collation::parse(cx, &meta);
            collation.set_or_poison(&meta.path, parsed);
        } else if meta.path == TIMESERIES {
            let parsed = timeseries::parse(cx, &meta);
            timeseries.set_or_poison(&meta.path, parsed);
        } else if meta.path == EXPIRE_AFTER_SECS {
            let parsed = unsigned(&value(&meta)?, "expire_after_secs = 86400");
            expire.set_or_poison(&meta.path, parsed);
        } else {
            unknown(
                cx,
                &meta,
                "collection",
                &[
                    "name",
                    "validation_level",
                    "validation_action",
                    "additional_properties",
                    "shard_key",
                    "same_id_as",
                    "optional_part",
                    "collation",
                    "timeseries",
                    "expire_after_secs",
                ],
            )?;
        }
        Ok(())
    });
    Collection {
        name: name.get(),
        validation_level: level.get(),
        validation_action: action.get(),
        additional_properties: additional.get(),
        shard_key: shard_key.get(),
        same_id_as: same_id_as.get().and_then(|s| {
            Some(Sp {
                value: s.value?,
                tokens: s.tokens,
            })
        }),
        optional_part: optional_part.get(),
        collation: collation.get(),
        timeseries: timeseries.get(),
        expire_after_secs: expire.get(),
    }
}
