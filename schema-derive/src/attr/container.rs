//! The container's attributes: `#[collection]`, `#[bucket]`, `#[index]` and `#[query]` are
//! handed to their parsers; `#[schema(...)]` and `#[serde(...)]` on the container are read here.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;

use super::bucket::parse_bucket;
use super::collection::parse_collection;
use super::index::parse_index;
use super::query::parse_query;
use super::{
    boolean, parse_all, parse_rename_all, skip_value, stored_type, string, unknown,
    unsupported_serde, value, BucketAttr, Collection, Index, Query, Slot, Sp,
};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::*;

pub struct Container {
    pub collection: Option<Sp<Collection>>,
    pub bucket: Option<Sp<BucketAttr>>,
    pub indexes: Vec<Sp<Index>>,
    /// `#[query(...)]`: declared access patterns.
    pub queries: Vec<Sp<Query>>,
    /// `#[schema(additional_properties = false)]` on the container.
    pub additional_properties: Option<Sp<bool>>,
    pub rename_all: RenameRule,
    /// `rename_all_fields`: the rule for the fields of struct variants.
    pub rename_all_fields: RenameRule,
    pub transparent: Option<TokenStream>,
    /// `#[serde(tag = "...")]`: internally (or, with `content`, adjacently) tagged.
    pub tag: Option<Sp<String>>,
    /// `#[serde(content = "...")]`.
    pub content: Option<Sp<String>>,
    /// `#[serde(untagged)]`.
    pub untagged: Option<TokenStream>,
    /// `#[schema(stored_as = T)]`, or serde's `into = "T"`: the value is stored as `T` is.
    pub stored_as: Option<Sp<syn::Type>>,
    /// `#[schema(crate = "path")]`: the facade crate by another path (a renamed dependency).
    pub crate_path: Option<Sp<syn::Path>>,
}

impl Container {
    pub fn from_ast(cx: &Ctxt, item: &syn::DeriveInput) -> Self {
        let mut collection = None;
        let mut bucket = None;
        let mut indexes = Vec::new();
        let mut queries = Vec::new();
        let mut additional = Slot::new(cx, "schema", ADDITIONAL_PROPERTIES);
        let mut rename_all = Slot::new(cx, "serde", RENAME_ALL);
        let mut rename_all_fields = Slot::new(cx, "serde", RENAME_ALL_FIELDS);
        let mut transparent = Slot::new(cx, "serde", TRANSPARENT);
        let mut tag = Slot::new(cx, "serde", TAG);
        let mut content = Slot::new(cx, "serde", CONTENT);
        let mut untagged = Slot::new(cx, "serde", UNTAGGED);
        let mut stored_as: Slot<Option<syn::Type>> = Slot::new(cx, "schema", STORED_AS);
        let mut crate_path: Slot<Option<syn::Path>> = Slot::new(cx, "schema", CRATE);
        let mut into: Option<Sp<syn::Type>> = None;

        for attr in &item.attrs {
            let path = attr.path();
            if path == COLLECTION {
                if collection.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[collection]` attribute");
                    continue;
                }
                collection = Some(Sp {
                    value: parse_collection(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == BUCKET {
                if bucket.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[bucket]` attribute");
                    continue;
                }
                bucket = Some(Sp {
                    value: parse_bucket(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == INDEX {
                indexes.push(Sp {
                    value: parse_index(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == QUERY {
                queries.push(Sp {
                    value: parse_query(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == SCHEMA {
                parse_all(cx, attr, |meta| {
                    if meta.path == ADDITIONAL_PROPERTIES {
                        let parsed = boolean(&value(&meta)?, "additional_properties = false");
                        additional.set_or_poison(&meta.path, parsed);
                    } else if meta.path == STORED_AS {
                        let parsed = stored_type(&meta);
                        stored_as.set_or_poison(&meta.path, parsed);
                    } else if meta.path == CRATE {
                        let parsed = crate_path_of(&meta);
                        crate_path.set_or_poison(&meta.path, parsed);
                    } else {
                        unknown(
                            cx,
                            &meta,
                            "schema",
                            &["additional_properties", "stored_as", "crate"],
                        )?;
                    }
                    Ok(())
                });
            } else if path == EMBED
                || path == REFERENCE
                || path == EXTENDED_REF
                || path == SUBSET
                || path == COUNTER
            {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "`#[{}]` is a field attribute; put it on the field it describes",
                        path.to_token_stream()
                    ),
                );
            } else if path == SERDE {
                parse_all(cx, attr, |meta| {
                    if meta.path == RENAME_ALL {
                        if let Some(rule) = parse_rename_all(cx, &meta)? {
                            rename_all.set(&meta.path, rule);
                        }
                    } else if meta.path == RENAME_ALL_FIELDS {
                        if let Some(rule) = parse_rename_all(cx, &meta)? {
                            rename_all_fields.set(&meta.path, rule);
                        }
                    } else if meta.path == TRANSPARENT {
                        transparent.set(&meta.path, ());
                    } else if meta.path == TAG || meta.path == CONTENT {
                        let lit = string(&value(&meta)?, "tag = \"type\"")?;
                        let slot = if meta.path == TAG {
                            &mut tag
                        } else {
                            &mut content
                        };
                        slot.set(&lit, lit.value());
                    } else if meta.path == UNTAGGED {
                        untagged.set(&meta.path, ());
                    } else if meta.path == INTO {
                        let lit = string(&value(&meta)?, "into = \"String\"")?;
                        let ty = lit.parse::<syn::Type>()?;
                        into = Some(Sp {
                            value: ty,
                            tokens: lit.to_token_stream(),
                        });
                    } else if meta.path == REMOTE
                        || meta.path == FIELD_IDENTIFIER
                        || meta.path == VARIANT_IDENTIFIER
                    {
                        unsupported_serde(cx, &meta.path, container_reason(&meta.path));
                        skip_value(&meta)?;
                    } else {
                        // everything else serde accepts on a container changes only how values
                        // are read (`default`, `deny_unknown_fields`, `from`, ...) or nothing
                        skip_value(&meta)?;
                    }
                    Ok(())
                });
            }
        }

        Container {
            collection,
            bucket,
            indexes,
            queries,
            additional_properties: additional.get(),
            rename_all: rename_all.get().map_or(RenameRule::None, |r| r.value),
            rename_all_fields: rename_all_fields
                .get()
                .map_or(RenameRule::None, |r| r.value),
            transparent: transparent.get().map(|t| t.tokens),
            tag: tag.get(),
            content: content.get(),
            untagged: untagged.get().map(|u| u.tokens),
            stored_as: stored_as
                .get()
                .and_then(|s| {
                    Some(Sp {
                        value: s.value?,
                        tokens: s.tokens,
                    })
                })
                .or(into),
            crate_path: crate_path.get().and_then(|s| {
                Some(Sp {
                    value: s.value?,
                    tokens: s.tokens,
                })
            }),
        }
    }
}

/// `crate = "path"`: a string holding the path the facade crate is reached by.
fn crate_path_of(meta: &ParseNestedMeta) -> syn::Result<(TokenStream, Option<syn::Path>)> {
    const EXAMPLE: &str = "crate = \"ms\"";
    let lit = string(&value(meta)?, EXAMPLE)?;
    let path: syn::Path = lit.parse_with(syn::Path::parse_mod_style).map_err(|_| {
        syn::Error::new_spanned(
            &lit,
            format!(
                "`crate` expects the path of the mongo-schema crate, e.g. `{EXAMPLE}` or `crate = \"::services::ms\"`; found `{}`",
                lit.value()
            ),
        )
    })?;
    Ok((lit.to_token_stream(), Some(path)))
}

fn container_reason(path: &syn::Path) -> &'static str {
    if path == REMOTE {
        "a remote derive serializes another crate's type, whose stored shape this derive cannot see; \
         derive `BsonSchema` on a local type with `#[schema(stored_as = T)]` naming what is stored"
    } else {
        "the validator cannot describe the stored shape faithfully"
    }
}
