//! `#[query(...)]`: a declared access pattern.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{parenthesized, Ident, LitInt, LitStr, Token};

use super::index::parse_keys;
use super::{
    collation, geo, parse_all, string, unknown, unsigned, value, Collation, GeoCondition, IndexKey,
    KeyField, KeyFieldArg, KeyKind, Slot, Sp,
};
use crate::ctxt::Ctxt;
use crate::symbol::*;

/// `#[query(name = "...", eq(a, b), any_of(c, max = N), range(d), sort(e = -1), limit = N,
/// project = T, index = "...", pages)]`.
#[derive(Default)]
pub struct Query {
    pub name: Option<Sp<LitStr>>,
    pub eq: Vec<KeyField>,
    pub any_of: Vec<(KeyField, u64)>,
    pub range: Vec<KeyField>,
    pub sort: Vec<IndexKey>,
    pub limit: Option<Sp<u64>>,
    pub project: Option<Sp<syn::Type>>,
    pub index: Option<Sp<String>>,
    /// `pages`: read in keyset pages, `_id` appended to the sort as the tie-break.
    pub pages: bool,
    /// `collation(...)`: the query's collation.
    pub collation: Option<Sp<Collation>>,
    /// `near(field)` or `within(field)`.
    pub geo: Option<GeoCondition>,
}

pub(super) fn parse_query(cx: &Ctxt, attr: &syn::Attribute) -> Query {
    let mut name = Slot::new(cx, "query", NAME);
    let mut limit = Slot::new(cx, "query", LIMIT);
    let mut project: Slot<Option<syn::Type>> = Slot::new(cx, "query", PROJECT);
    let mut index = Slot::new(cx, "query", INDEX);
    let mut sort = Slot::new(cx, "query", SORT);
    let mut pages = Slot::new(cx, "query", PAGES);
    let mut collation = Slot::new(cx, "query", COLLATION);
    let mut query = Query::default();
    // a condition written, even one that failed to parse (its own error says why)
    let mut conditions_written = false;
    parse_all(cx, attr, |meta| {
        if meta.path == EQ
            || meta.path == ANY_OF
            || meta.path == RANGE
            || meta.path == SORT
            || meta.path == NEAR
            || meta.path == WITHIN
        {
            conditions_written = true;
        }
        if meta.path == NAME {
            let parsed = string(&value(&meta)?, "name = \"agent_queue\"").and_then(|lit| {
                let text = lit.value();
                if syn::parse_str::<Ident>(&text).is_err() || text.starts_with("r#") {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        format!("query name `{text}` must be a Rust identifier in snake_case: it names the function that runs the query"),
                    ));
                }
                Ok((lit.to_token_stream(), lit))
            });
            name.set_or_poison(&meta.path, parsed.map(|(t, l)| (t, Some(l))));
        } else if meta.path == EQ {
            let content;
            parenthesized!(content in meta.input);
            let fields = Punctuated::<KeyFieldArg, Token![,]>::parse_terminated(&content)?;
            if fields.is_empty() {
                return Err(meta.error("expected at least one field, e.g. `eq(team, status)`"));
            }
            query.eq.extend(fields.into_iter().map(|f| f.0));
        } else if meta.path == ANY_OF {
            let content;
            parenthesized!(content in meta.input);
            let field: KeyFieldArg = content.parse()?;
            content.parse::<Token![,]>().map_err(|_| {
                syn::Error::new(
                    content.span(),
                    "`any_of` needs the largest list it takes: `any_of(status, max = 3)`",
                )
            })?;
            let key: Ident = content.parse()?;
            if key != "max" {
                return Err(syn::Error::new_spanned(
                    key,
                    "expected `max = N`: `any_of(status, max = 3)`",
                ));
            }
            content.parse::<Token![=]>()?;
            let lit: LitInt = content.parse()?;
            let max: u64 = lit.base10_parse()?;
            if max == 0 {
                return Err(syn::Error::new_spanned(
                    lit,
                    "`max` of `any_of` must be at least 1",
                ));
            }
            query.any_of.push((field.0, max));
        } else if meta.path == RANGE {
            let content;
            parenthesized!(content in meta.input);
            let fields = Punctuated::<KeyFieldArg, Token![,]>::parse_terminated(&content)?;
            if fields.len() != 1 {
                return Err(meta.error("`range` takes one field (mongod bounds one range per index scan well; filter the others after): `range(placed_at)`"));
            }
            query.range.extend(fields.into_iter().map(|f| f.0));
        } else if meta.path == SORT {
            let parsed = parse_keys(&meta).and_then(|keys| {
                match keys.iter().find(|k| matches!(k.kind, KeyKind::Special(_))) {
                    Some(k) => Err(syn::Error::new_spanned(
                        &k.kind_tokens,
                        "a sort direction is 1 or -1",
                    )),
                    None => Ok((meta.path.to_token_stream(), keys)),
                }
            });
            sort.set_or_poison(&meta.path, parsed);
        } else if meta.path == LIMIT {
            let parsed = unsigned(&value(&meta)?, "limit = 50").and_then(|(t, n)| {
                if n == 0 {
                    Err(syn::Error::new_spanned(&t, "`limit` must be at least 1"))
                } else {
                    Ok((t, n))
                }
            });
            limit.set_or_poison(&meta.path, parsed);
        } else if meta.path == PROJECT {
            let parsed: syn::Result<(TokenStream, Option<syn::Type>)> =
                value(&meta).and_then(|expr| {
                    let ty: syn::Type = syn::parse2(expr.to_token_stream())?;
                    Ok((expr.to_token_stream(), Some(ty)))
                });
            project.set_or_poison(&meta.path, parsed);
        } else if meta.path == INDEX {
            let parsed = string(&value(&meta)?, "index = \"agent_queue\"")
                .map(|lit| (lit.to_token_stream(), lit.value()));
            index.set_or_poison(&meta.path, parsed);
        } else if meta.path == PAGES {
            pages.set(&meta.path, ());
        } else if meta.path == COLLATION {
            let parsed = collation::parse(cx, &meta);
            collation.set_or_poison(&meta.path, parsed);
        } else if meta.path == NEAR || meta.path == WITHIN {
            let condition = geo::parse(&meta)?;
            if query.geo.is_some() {
                cx.error_spanned_by(
                    &condition.tokens,
                    "a query has one geo condition (`near` or `within`)",
                );
            } else {
                query.geo = Some(condition);
            }
        } else {
            unknown(
                cx,
                &meta,
                "query",
                &[
                    "name",
                    "eq",
                    "any_of",
                    "range",
                    "sort",
                    "limit",
                    "project",
                    "index",
                    "pages",
                    "collation",
                    "near",
                    "within",
                ],
            )?;
        }
        Ok(())
    });
    query.name = name.get().and_then(|n| {
        Some(Sp {
            value: n.value?,
            tokens: n.tokens,
        })
    });
    query.limit = limit.get();
    query.project = project.get().and_then(|p| {
        Some(Sp {
            value: p.value?,
            tokens: p.tokens,
        })
    });
    query.index = index.get();
    query.pages = pages.get().is_some();
    query.collation = collation.get();
    query.sort = sort.get().map(|s| s.value).unwrap_or_default();
    if query.name.is_none() {
        cx.error_spanned_by(
            attr,
            "`#[query]` needs a name: `#[query(name = \"agent_queue\", ...)]`",
        );
    }
    if !conditions_written
        && query.eq.is_empty()
        && query.any_of.is_empty()
        && query.range.is_empty()
        && query.sort.is_empty()
        && query.geo.is_none()
    {
        cx.error_spanned_by(attr, "`#[query]` declares no condition and no sort: add `eq(..)`, `any_of(..)`, `range(..)` or `sort(..)`");
    }
    query
}
