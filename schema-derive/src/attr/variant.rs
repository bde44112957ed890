//! The attributes of an enum variant: `#[serde(...)]` and `#[index(...)]`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::LitStr;

use super::index::parse_index;
use super::{
    parse_all, parse_rename, parse_rename_all, skip_value, unsupported_serde, Index, Slot, Sp,
};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::*;

pub struct Variant {
    /// `#[serde(rename = "...")]`: the literal, so errors about the stored name point at it.
    pub rename: Option<LitStr>,
    pub skip_serializing: bool,
    /// `#[serde(rename_all = "...")]` on the variant: the rule for its fields.
    pub rename_all: Option<RenameRule>,
    /// `#[serde(untagged)]` on one variant of a tagged enum: stored as its content alone.
    pub untagged: Option<TokenStream>,
    /// `#[index(...)]` on a kind of a whole-document enum: a partial index on its tag.
    pub indexes: Vec<Sp<Index>>,
}

impl Variant {
    pub fn from_ast(cx: &Ctxt, variant: &syn::Variant) -> Self {
        let mut rename = Slot::new(cx, "serde", RENAME);
        let mut rename_all = Slot::new(cx, "serde", RENAME_ALL);
        let mut untagged = Slot::new(cx, "serde", UNTAGGED);
        let mut skip_serializing = false;
        let mut indexes = Vec::new();
        for attr in &variant.attrs {
            let path = attr.path();
            if path == SERDE {
                parse_all(cx, attr, |meta| {
                    if meta.path == RENAME {
                        if let Some(name) = parse_rename(&meta)? {
                            rename.set(&meta.path, name);
                        }
                    } else if meta.path == RENAME_ALL {
                        if let Some(rule) = parse_rename_all(cx, &meta)? {
                            rename_all.set(&meta.path, rule);
                        }
                    } else if meta.path == SKIP || meta.path == SKIP_SERIALIZING {
                        skip_serializing = true;
                    } else if meta.path == UNTAGGED {
                        untagged.set(&meta.path, ());
                    } else if meta.path == WITH || meta.path == SERIALIZE_WITH {
                        unsupported_serde(
                            cx,
                            &meta.path,
                            "the variant is written by custom code, whose stored shape the validator cannot see; \
                             move the custom code to a field and annotate it with `#[schema(stored_as = T)]`",
                        );
                        skip_value(&meta)?;
                    } else {
                        // alias, other, bound, borrow, deserialize_with, skip_deserializing:
                        // they change only how values are read
                        skip_value(&meta)?;
                    }
                    Ok(())
                });
            } else if path == INDEX {
                indexes.push(Sp {
                    value: parse_index(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == EMBED
                || path == SCHEMA
                || path == REFERENCE
                || path == EXTENDED_REF
                || path == SUBSET
                || path == COUNTER
                || path == COLLECTION
            {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "`#[{}]` does not apply to an enum variant; put it on a field of the variant",
                        path.to_token_stream()
                    ),
                );
            }
        }
        Variant {
            rename: rename.get().map(|r| r.value),
            skip_serializing,
            rename_all: rename_all.get().map(|r| r.value),
            untagged: untagged.get().map(|u| u.tokens),
            indexes,
        }
    }
}
