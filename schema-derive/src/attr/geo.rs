//! `near(field)` and `within(field)`, the geo conditions of `#[query]`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parenthesized;

use super::{KeyField, KeyFieldArg};
use crate::symbol::NEAR;

/// A declared query's geo condition on a GeoJSON point field.
#[derive(Clone)]
pub struct GeoCondition {
    /// The point field.
    pub field: KeyField,
    /// `near` (nearest first, within a distance); `within` (inside an area) otherwise.
    pub near: bool,
    /// The tokens of `near` / `within`, for errors about the condition.
    pub tokens: TokenStream,
}

/// `near(location)` or `within(location)`: one field.
pub fn parse(meta: &ParseNestedMeta) -> syn::Result<GeoCondition> {
    let near = meta.path == NEAR;
    let name = if near { "near" } else { "within" };
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!(
            "`{name}` names the GeoJSON point field it reads: `{name}(location)`"
        )));
    }
    let content;
    parenthesized!(content in meta.input);
    let field: KeyFieldArg = content.parse()?;
    if !content.is_empty() {
        return Err(content.error(format!(
            "`{name}` takes one field, `{name}(location)`: the point (and the distance) or the area are the arguments of the generated function"
        )));
    }
    Ok(GeoCondition {
        field: field.0,
        near,
        tokens: meta.path.to_token_stream(),
    })
}
