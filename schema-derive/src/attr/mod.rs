//! Parses the attributes of a container, field or variant into typed slots, one
//! `parse_nested_meta` loop per attribute. Unknown, duplicated and malformed options are reported
//! to the [`Ctxt`] and parsing goes on, so every mistake of an item is reported at once.
//!
//! One file per attribute (as serde_derive keeps `internals/`):
//!
//! - `mod.rs` (this file): [`Sp`], `Slot` and the helpers every parser shares (option values,
//!   unknown options, serde renames, types);
//! - `container.rs`: [`Container`], the container's attributes, its `#[schema]` and `#[serde]`;
//! - `field.rs`: [`Field`], the field's attributes, `#[embed]`, `#[reference]`, its `#[schema]`
//!   and `#[serde]`;
//! - `variant.rs`: [`Variant`], an enum variant's `#[serde]` and `#[index]`;
//! - `collection.rs`: `#[collection(...)]` ([`Collection`]);
//! - `bucket.rs`: `#[bucket(...)]` ([`BucketAttr`]);
//! - `index.rs`: `#[index(...)]` ([`Index`]) and the index keys ([`IndexKey`], [`KeyField`],
//!   [`KeyKind`]) that `shard_key`, `#[query]` and `timeseries` share;
//! - `query.rs`: `#[query(...)]` ([`Query`]);
//! - `relations.rs`: `#[reference]`, `#[embed]`, `#[extended_ref]`, `#[subset]` and `#[counter]`;
//! - `schema.rs`: the constraints of a field's `#[schema(...)]` ([`Constraint`]);
//! - `collation.rs`, `geo.rs`, `timeseries.rs`: `collation(...)`, `near(..)` / `within(..)` and
//!   `timeseries(...)`, options of the attributes above.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{parenthesized, token, Expr, ExprLit, Lit, LitStr, Token};

use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::*;

mod bucket;
mod collation;
mod collection;
mod container;
mod field;
mod geo;
mod index;
mod query;
mod relations;
mod schema;
mod timeseries;
mod variant;
pub use bucket::BucketAttr;
pub use collation::Collation;
pub use collection::Collection;
pub use container::Container;
pub use field::Field;
pub use geo::GeoCondition;
use index::KeyFieldArg;
pub use index::{Index, IndexKey, KeyField, KeyKind};
pub use query::Query;
pub use relations::{Children, Embed, ExtendedRef, OnDelete, Reference, SubsetAttr, Sync};
pub use schema::{Constraint, ConstraintKind, ConstraintValue};
pub use timeseries::TimeSeriesAttr;
pub use variant::Variant;

/// A value with the tokens it came from, so later checks can point at them.
#[derive(Clone)]
pub struct Sp<T> {
    pub value: T,
    pub tokens: TokenStream,
}

/// One optional setting; setting it twice is an error on the second occurrence.
struct Slot<'c, T> {
    cx: &'c Ctxt,
    attr: &'static str,
    name: Symbol,
    value: Option<Sp<T>>,
}

impl<'c, T> Slot<'c, T> {
    fn new(cx: &'c Ctxt, attr: &'static str, name: Symbol) -> Self {
        Slot {
            cx,
            attr,
            name,
            value: None,
        }
    }

    fn set<A: ToTokens>(&mut self, tokens: A, value: T) {
        let tokens = tokens.into_token_stream();
        if self.value.is_some() {
            self.cx.error_spanned_by(
                tokens,
                format!("duplicate `{}` option `{}`", self.attr, self.name),
            );
        } else {
            self.value = Some(Sp { value, tokens });
        }
    }

    /// Marks a malformed option as given, so that no later check reports it missing (the
    /// malformed value was reported; nothing is generated while errors exist).
    fn poison<A: ToTokens>(&mut self, tokens: A)
    where
        T: Default,
    {
        if self.value.is_none() {
            self.value = Some(Sp {
                value: T::default(),
                tokens: tokens.into_token_stream(),
            });
        }
    }

    /// Sets the value, or records the error and poisons the slot.
    fn set_or_poison<A: ToTokens>(&mut self, path: A, parsed: syn::Result<(TokenStream, T)>)
    where
        T: Default,
    {
        match parsed {
            Ok((tokens, value)) => self.set(tokens, value),
            Err(error) => {
                self.cx.syn_error(error);
                self.poison(path);
            }
        }
    }

    fn get(self) -> Option<Sp<T>> {
        self.value
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

/// Runs `f` on every option of `attr`; a parse error is recorded and the attribute abandoned.
fn parse_all(cx: &Ctxt, attr: &syn::Attribute, f: impl FnMut(ParseNestedMeta) -> syn::Result<()>) {
    if let Err(err) = attr.parse_nested_meta(f) {
        cx.syn_error(err);
    }
}

fn unknown(cx: &Ctxt, meta: &ParseNestedMeta, attr: &str, expected: &[&str]) -> syn::Result<()> {
    unknown_near(cx, meta, attr, expected).map(drop)
}

/// [`unknown`], returning the expected option the name is a misspelling of (`sortt` for
/// `sort`), which the caller marks as given: one mistake, one error, not a second one for the
/// option it then misses.
fn unknown_near<'e>(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    attr: &str,
    expected: &[&'e str],
) -> syn::Result<Option<&'e str>> {
    let name = meta.path.to_token_stream().to_string().replace(' ', "");
    let near = crate::near::near_miss(&name, expected);
    let hint = near.map_or_else(String::new, |n| format!("; did you mean `{n}`?"));
    cx.error_spanned_by(
        &meta.path,
        format!(
            "unknown `{attr}` option `{name}`, expected one of: {}{hint}",
            expected.join(", ")
        ),
    );
    skip_value(meta)?;
    Ok(near)
}

fn unsupported_serde(cx: &Ctxt, path: &syn::Path, why: &str) {
    cx.error_spanned_by(
        path,
        format!(
            "`#[serde({})]` is not supported by mongo-schema: {why}",
            path.to_token_stream()
        ),
    );
}

/// Consumes `= value` or `(...)` of an option we do not interpret.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(token::Paren) {
        let content;
        parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// Reads `= <expression>` whole, so that a malformed value is reported by the interpreting
/// function and never desynchronises the rest of the option list.
/// The value after `=`; a value a `macro_rules!` passed in (`name = $name`) comes in an
/// invisible group, taken off here so that it reads as written.
fn value(meta: &ParseNestedMeta) -> syn::Result<Expr> {
    let mut expr: Expr = meta.value()?.parse()?;
    while let Expr::Group(group) = expr {
        expr = *group.expr;
    }
    Ok(expr)
}

fn option_name(example: &str) -> &str {
    example.split(" =").next().unwrap_or(example)
}

fn string(expr: &Expr, example: &str) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{}` expects a string, e.g. `{example}`",
                option_name(example)
            ),
        )),
    }
}

fn unsigned(expr: &Expr, example: &str) -> syn::Result<(TokenStream, u64)> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => Ok((lit.to_token_stream(), lit.base10_parse::<u64>()?)),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{}` expects a positive integer, e.g. `{example}`",
                option_name(example)
            ),
        )),
    }
}

fn boolean(expr: &Expr, example: &str) -> syn::Result<(TokenStream, bool)> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(lit),
            ..
        }) => Ok((lit.to_token_stream(), lit.value)),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{}` expects `true` or `false`, e.g. `{example}`",
                option_name(example)
            ),
        )),
    }
}

/// `unique` or `unique = true|false`.
fn flag(meta: &ParseNestedMeta) -> syn::Result<(TokenStream, bool)> {
    if meta.input.peek(Token![=]) {
        let name = meta.path.to_token_stream().to_string();
        boolean(&value(meta)?, &format!("{name} = true"))
    } else {
        Ok((meta.path.to_token_stream(), true))
    }
}

fn one_of(meta: &ParseNestedMeta, allowed: &[&str]) -> syn::Result<(TokenStream, String)> {
    let name = meta.path.to_token_stream().to_string();
    let expected = allowed
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(" or ");
    let lit = string(&value(meta)?, &format!("{name} = \"{}\"", allowed[0]))?;
    let found = lit.value();
    if allowed.contains(&found.as_str()) {
        Ok((lit.to_token_stream(), found))
    } else {
        Err(syn::Error::new_spanned(
            &lit,
            format!("unknown `{name}` value `{found}`, expected {expected}"),
        ))
    }
}

/// `rename = "x"` or `rename(serialize = "x", deserialize = "y")`: the name serde writes.
fn parse_rename(meta: &ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse::<LitStr>()?));
    }
    let mut serialize = None;
    meta.parse_nested_meta(|inner| {
        let lit: LitStr = inner.value()?.parse()?;
        if inner.path == SERIALIZE {
            serialize = Some(lit);
        }
        Ok(())
    })?;
    Ok(serialize)
}

fn parse_rename_all(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<RenameRule>> {
    let lit = if meta.input.peek(Token![=]) {
        Some(meta.value()?.parse::<LitStr>()?)
    } else {
        let mut serialize = None;
        meta.parse_nested_meta(|inner| {
            let lit: LitStr = inner.value()?.parse()?;
            if inner.path == SERIALIZE {
                serialize = Some(lit);
            }
            Ok(())
        })?;
        serialize
    };
    Ok(
        lit.and_then(|lit| match RenameRule::from_str(&lit.value()) {
            Ok(rule) => Some(rule),
            Err(message) => {
                cx.error_spanned_by(&lit, message);
                None
            }
        }),
    )
}

// ---------------------------------------------------------------------------------------------
// shared by several attributes: types and positive bounds

fn parse_type(expr: &Expr, example: &str) -> syn::Result<(TokenStream, Option<syn::Type>)> {
    syn::parse2::<syn::Type>(expr.to_token_stream())
        .map(|ty| (expr.to_token_stream(), Some(ty)))
        .map_err(|_| {
            syn::Error::new_spanned(
                expr,
                format!(
                    "`{}` expects a type, e.g. `{example}`",
                    option_name(example)
                ),
            )
        })
}

/// `name = T`, read as a type (an expression parser would take `Option<i64>` for two
/// comparisons): `example` shows the option.
fn stored_type_of(
    meta: &ParseNestedMeta,
    example: &str,
) -> syn::Result<(TokenStream, Option<syn::Type>)> {
    let ty: syn::Type = meta.value()?.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!(
                "`{}` expects a type, e.g. `{example}`",
                option_name(example)
            ),
        )
    })?;
    Ok((ty.to_token_stream(), Some(ty)))
}

/// `stored_as = T`, read as a type (an expression parser would take `Option<i64>` for two
/// comparisons).
fn stored_type(meta: &ParseNestedMeta) -> syn::Result<(TokenStream, Option<syn::Type>)> {
    let ty: syn::Type = meta.value()?.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "`stored_as` expects the type whose serialization has the stored shape, e.g. `stored_as = String`",
        )
    })?;
    Ok((ty.to_token_stream(), Some(ty)))
}

fn positive(expr: &Expr, example: &str) -> syn::Result<(TokenStream, u64)> {
    unsigned(expr, example).and_then(|(tokens, n)| {
        if n == 0 {
            Err(syn::Error::new_spanned(&tokens, "`max` must be at least 1"))
        } else {
            Ok((tokens, n))
        }
    })
}
