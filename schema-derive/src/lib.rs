//! Derive macros of [mongo-schema](https://docs.rs/mongo-schema): `Document` for collection roots
//! and `BsonSchema` for values stored inside documents.
//!
//! Each derive parses the item into a typed model (`ast`), checks the rules of the attribute
//! language (`check`), and generates small impls that call into `mongo_schema::__private`
//! (`expand`, `gen`). Errors from every stage are collected and reported together.
//! Use these through the `mongo-schema` crate, which documents the attribute language.

extern crate proc_macro;

mod ast;
mod attr;
mod case;
mod check;
mod ctxt;
mod expand;
mod gen;
mod near;
mod serde_helpers;
mod symbol;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `Document` (and `BsonSchema`) for a collection root. See the `mongo-schema` crate.
#[proc_macro_derive(
    Document,
    attributes(
        collection,
        index,
        bucket,
        embed,
        schema,
        reference,
        extended_ref,
        subset,
        query
    )
)]
pub fn derive_document(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input, expand::Derive::Document)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `BsonSchema` for a struct or unit-only enum stored inside documents. See the
/// `mongo-schema` crate.
#[proc_macro_derive(
    BsonSchema,
    attributes(
        collection,
        index,
        bucket,
        embed,
        schema,
        reference,
        extended_ref,
        subset,
        query
    )
)]
pub fn derive_bson_schema(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input, expand::Derive::BsonSchema)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
