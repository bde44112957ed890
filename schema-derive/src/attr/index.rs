//! `#[index(...)]`, and the index keys it shares with `shard_key(..)` of `#[collection]` and
//! `sort(..)` and the fields of `#[query]`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{parenthesized, Ident, LitInt, LitStr, Token};

use super::{collation, flag, parse_all, string, unknown, unsigned, value, Collation, Slot, Sp};
use crate::ctxt::Ctxt;
use crate::symbol::*;

pub struct Index {
    pub keys: Option<Sp<Vec<IndexKey>>>,
    pub unique: Option<Sp<bool>>,
    pub sparse: Option<Sp<bool>>,
    pub partial: Option<Sp<String>>,
    pub expire_after_secs: Option<Sp<u64>>,
    pub name: Option<Sp<String>>,
    /// `collation(...)`: the index's collation.
    pub collation: Option<Sp<Collation>>,
    /// `pages = false`: an index that starts with a reference (or a copy's `_id`) and another
    /// key is kept as declared: it does not order the relation's keyset pages, so the derive
    /// does not append the `_id` tie-break to it.
    pub pages: Option<Sp<bool>>,
}

#[derive(Clone)]
pub struct IndexKey {
    pub field: KeyField,
    pub kind: KeyKind,
    /// The tokens of the kind (`1`, `-1`, `"hashed"`), for errors about it.
    pub kind_tokens: TokenStream,
}

impl KeyField {
    /// The tokens of the key's field, for errors about it.
    pub fn tokens(&self) -> TokenStream {
        match self {
            KeyField::Rust(ident) => ident.to_token_stream(),
            KeyField::Nested(idents) => {
                let first = &idents[0];
                let rest = &idents[1..];
                quote::quote!(#first #(. #rest)*)
            }
            KeyField::Path(lit) => lit.to_token_stream(),
        }
    }
}

#[derive(Clone)]
pub enum KeyField {
    /// A Rust field name, translated through serde renames.
    Rust(Ident),
    /// A dotted path of Rust field names through embedded structs, options and copies
    /// (`author.id`), as `field!` takes it: at least two segments.
    Nested(Vec<Ident>),
    /// A stored path written as a string, e.g. `"customer._id"`.
    Path(LitStr),
}

#[derive(Clone)]
pub enum KeyKind {
    Direction(i32),
    Special(String),
}

pub(super) fn parse_index(cx: &Ctxt, attr: &syn::Attribute) -> Index {
    let mut keys = Slot::new(cx, "index", KEYS);
    let mut unique = Slot::new(cx, "index", UNIQUE);
    let mut sparse = Slot::new(cx, "index", SPARSE);
    let mut partial = Slot::new(cx, "index", PARTIAL);
    let mut expire = Slot::new(cx, "index", EXPIRE_AFTER_SECS);
    let mut name = Slot::new(cx, "index", NAME);
    let mut collation = Slot::new(cx, "index", COLLATION);
    let mut pages = Slot::new(cx, "index", PAGES);
    parse_all(cx, attr, |meta| {
        if meta.path == KEYS {
            let parsed = parse_keys(&meta).map(|keys| (meta.path.to_token_stream(), keys));
            keys.set_or_poison(&meta.path, parsed);
        } else if meta.path == UNIQUE {
            let parsed = flag(&meta);
            unique.set_or_poison(&meta.path, parsed);
        } else if meta.path == SPARSE {
            let parsed = flag(&meta);
            sparse.set_or_poison(&meta.path, parsed);
        } else if meta.path == PARTIAL {
            let example = "partial = \"{\\\"status\\\": \\\"open\\\"}\"";
            let parsed = string(&value(&meta)?, example).and_then(|lit| {
                match serde_json::from_str::<serde_json::Value>(&lit.value()) {
                    Ok(serde_json::Value::Object(_)) => Ok((lit.to_token_stream(), lit.value())),
                    Ok(_) => Err(syn::Error::new_spanned(
                        &lit,
                        format!("`partial` must be a filter document in extended JSON, e.g. `{example}`"),
                    )),
                    Err(e) => Err(syn::Error::new_spanned(&lit, format!("`partial` is not valid JSON: {e}"))),
                }
            });
            partial.set_or_poison(&meta.path, parsed);
        } else if meta.path == EXPIRE_AFTER_SECS {
            let parsed = unsigned(&value(&meta)?, "expire_after_secs = 3600");
            expire.set_or_poison(&meta.path, parsed);
        } else if meta.path == NAME {
            let parsed = string(&value(&meta)?, "name = \"agent_queue\"").and_then(|lit| {
                if lit.value().is_empty() {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "index name must not be empty",
                    ));
                }
                Ok((lit.to_token_stream(), lit.value()))
            });
            name.set_or_poison(&meta.path, parsed);
        } else if meta.path == COLLATION {
            let parsed = collation::parse(cx, &meta);
            collation.set_or_poison(&meta.path, parsed);
        } else if meta.path == PAGES {
            // an error about the option points at its name
            let parsed = flag(&meta).map(|(_, pages)| (meta.path.to_token_stream(), pages));
            pages.set_or_poison(&meta.path, parsed);
        } else {
            unknown(
                cx,
                &meta,
                "index",
                &[
                    "keys",
                    "unique",
                    "sparse",
                    "partial",
                    "expire_after_secs",
                    "name",
                    "collation",
                    "pages",
                ],
            )?;
        }
        Ok(())
    });
    Index {
        keys: keys.get(),
        unique: unique.get(),
        sparse: sparse.get(),
        partial: partial.get(),
        expire_after_secs: expire.get(),
        name: name.get(),
        collation: collation.get(),
        pages: pages.get(),
    }
}

/// A field of `eq(..)`, `any_of(..)` or `range(..)`: a Rust name or a quoted stored path.
pub(super) struct KeyFieldArg(pub(super) KeyField);

impl Parse for KeyFieldArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        KeyField::parse(input).map(KeyFieldArg)
    }
}

impl KeyField {
    /// The Rust field a Rust name or a dotted path starts at.
    pub fn first_ident(&self) -> Option<&Ident> {
        match self {
            KeyField::Rust(ident) => Some(ident),
            KeyField::Nested(idents) => idents.first(),
            KeyField::Path(_) => None,
        }
    }
}

impl Parse for KeyField {
    /// A quoted stored path, a Rust field name, or a dotted path of Rust names (`author.id`).
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            return Ok(KeyField::Path(input.parse()?));
        }
        let first = input.call(syn::ext::IdentExt::parse_any)?;
        if !input.peek(Token![.]) {
            return Ok(KeyField::Rust(first));
        }
        let mut segments = vec![first];
        while input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            segments.push(input.call(syn::ext::IdentExt::parse_any)?);
        }
        Ok(KeyField::Nested(segments))
    }
}

impl Parse for IndexKey {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let field = KeyField::parse(input)?;
        input.parse::<Token![=]>()?;
        let mut kind_tokens = TokenStream::new();
        let kind = if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            lit.to_tokens(&mut kind_tokens);
            match lit.value().as_str() {
                "text" | "2dsphere" | "2d" | "hashed" => KeyKind::Special(lit.value()),
                other => {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        format!("unknown index type `{other}`, expected 1, -1, \"text\", \"2dsphere\", \"2d\" or \"hashed\""),
                    ))
                }
            }
        } else {
            let minus = input.parse::<Option<Token![-]>>()?;
            let negative = minus.is_some();
            let lit: LitInt = input.parse()?;
            minus.to_tokens(&mut kind_tokens);
            lit.to_tokens(&mut kind_tokens);
            let value: i32 = lit.base10_parse()?;
            match (negative, value) {
                (false, 1) => KeyKind::Direction(1),
                (true, 1) => KeyKind::Direction(-1),
                _ => {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "an index direction is 1 (ascending) or -1 (descending)",
                    ))
                }
            }
        };
        Ok(IndexKey {
            field,
            kind,
            kind_tokens,
        })
    }
}

pub(super) fn parse_keys(meta: &ParseNestedMeta) -> syn::Result<Vec<IndexKey>> {
    let content;
    parenthesized!(content in meta.input);
    let keys = Punctuated::<IndexKey, Token![,]>::parse_terminated(&content)?;
    if keys.is_empty() {
        return Err(meta.error("expected at least one key, e.g. `keys(team = 1, status = -1)`"));
    }
    Ok(keys.into_iter().collect())
}
