//! The constraints of a field's `#[schema(max_length = N, min_length = N, pattern = "...",
//! minimum = N, maximum = N)]` and the readers of their values (the options themselves are
//! read in `field.rs`, `stored_as` with the shared helpers).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Expr, ExprLit, ExprUnary, Lit};

#[derive(Clone, Copy, PartialEq)]
pub enum ConstraintKind {
    String,
    Number,
}

pub struct Constraint {
    /// The `$jsonSchema` keyword.
    pub keyword: &'static str,
    pub value: ConstraintValue,
    pub kind: ConstraintKind,
}

pub enum ConstraintValue {
    Int(i64),
    Float(f64),
    Str(String),
}

/// A string length bound: mongod reads `maxLength` / `minLength` as a 64-bit integer, so a bound
/// past `i64::MAX` would reach it negative.
pub(super) fn length(
    tokens: TokenStream,
    n: u64,
    option: &str,
    keyword: &str,
) -> syn::Result<ConstraintValue> {
    i64::try_from(n).map(ConstraintValue::Int).map_err(|_| {
        syn::Error::new_spanned(
            tokens,
            format!(
                "`{option} = {n}` is above i64::MAX: mongod reads `{keyword}` as a 64-bit integer, \
                 at most 9223372036854775807; use a smaller bound"
            ),
        )
    })
}

pub(super) fn number(expr: &Expr, option: &str) -> syn::Result<ConstraintValue> {
    let (negative, inner) = match expr {
        Expr::Unary(ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => (true, &**expr),
        other => (false, other),
    };
    let sign = if negative { -1 } else { 1 };
    match inner {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => {
            let magnitude = i128::try_from(lit.base10_parse::<u128>()?).ok();
            magnitude
                .and_then(|m| i64::try_from(sign as i128 * m).ok())
                .map(ConstraintValue::Int)
                .ok_or_else(|| {
                    syn::Error::new_spanned(
                        expr,
                        format!(
                            "`{option} = {}` does not fit in a 64-bit integer: BSON stores integers in at most \
                             64 bits, so mongod's `$jsonSchema` bound lies within -9223372036854775808..=9223372036854775807; \
                             use a bound in that range, or a float such as `1e19`",
                            expr.to_token_stream().to_string().replace(' ', "")
                        ),
                    )
                })
        }
        Expr::Lit(ExprLit {
            lit: Lit::Float(lit),
            ..
        }) => Ok(ConstraintValue::Float(
            sign as f64 * lit.base10_parse::<f64>()?,
        )),
        _ => Err(syn::Error::new_spanned(
            expr,
            "expected a number, e.g. `minimum = 0` or `maximum = 2.5`",
        )),
    }
}
