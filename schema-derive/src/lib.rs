//! Derive macros of [mongo-schema](https://docs.rs/mongo-schema): `Document` for collection roots
//! and `BsonSchema` for values stored inside documents.
//!
//! Each derive parses the item into a typed model (`ast`), checks the rules of the attribute
//! language (`check`), and generates small impls that call into `mongo_schema::__private`
//! (`expand`, `gen`). Errors from every stage are collected and reported together.
//! Use these through the `mongo-schema` crate, which documents the attribute language.

#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate proc_macro;

mod ast;
mod attr;
mod case;
mod check;
mod ctxt;
mod expand;
mod gen;
mod near;
mod order;
mod serde_helpers;
mod symbol;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `Document` (and `BsonSchema`) for a collection root: a struct with named fields (one
/// of them stored as `_id`, or none: the server assigns an ObjectId), or an internally tagged or
/// untagged enum of struct variants (one collection, several kinds of document).
///
/// Generates the `$jsonSchema` validator, the indexes (declared with `#[index]`, and those each
/// relationship and declared query needs), the collection spec `Schema::build` reads, the typed
/// field paths of `field!`, a function per `#[query]`, a `Relation` constant per `#[reference]`
/// and `#[extended_ref]`, a `Subset` constant per `#[subset]`, a `Counter` constant per
/// `#[counter]`, a `PartOf` constant `OWNER` with `of` and `of_all` for `same_id_as`, an
/// `EmbeddedArray` constant per
/// `#[embed(max = N)]` array, the copy type of each `#[extended_ref]`, and `T::check`.
///
/// Container attributes: `#[collection(name = "...", validation_level, validation_action,
/// additional_properties, shard_key(...), same_id_as = Owner, optional_part, collation(...),
/// timeseries(time, meta, granularity),
/// expire_after_secs)]` (required), `#[index(keys(...), unique, sparse, partial,
/// expire_after_secs, name, collation(...), pages)]`, `#[query(name, eq, any_of, range, sort, near,
/// within, limit, project, index, pages, collation(...))]`, `#[bucket(...)]`, `#[schema(stored_as
/// = T, crate = "path")]`. Field attributes: `#[embed(max = N,
/// cap)]`, `#[reference(to = T, max = N)]`, `#[extended_ref(to = T, fields = "...", sync =
/// "...", on_delete, as, max)]`, `#[subset(of = T, max, sort, count, filter, sync, via)]`,
/// `#[counter(of = T, filter, sync, via)]`,
/// `#[schema(max_length, min_length, pattern, minimum, maximum, stored_as, not_null, open)]`. Each is described
/// in the `mongo-schema` crate's documentation, sections *The attribute language*, *Queries* and
/// *What the derives refuse*; serde's own attributes are followed as serde means them.
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
        counter,
        query
    )
)]
pub fn derive_document(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input, ast::Derive::Document)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `BsonSchema` for a value stored inside documents: a struct with named fields, a tuple
/// or newtype struct, or an enum in any of serde's four representations (unit variants,
/// newtype, tuple and struct variants; externally, internally or adjacently tagged, or
/// untagged).
///
/// Generates the `$jsonSchema` fragment of the type, its typed field paths (for `field!`
/// through an embedded value) and the field list a query's `project = Row` checks. Takes the
/// field attributes `#[embed(max = N)]` (every array or map needs a bound) and `#[schema(...)]`
/// constraints, `#[schema(stored_as = T)]` on the type or a field, and `#[schema(crate =
/// "path")]` on the type (a renamed dependency); the collection-level
/// attributes (`collection`, `index`, `query`, `subset`, `counter`, `extended_ref`, `bucket`) belong on a
/// `#[derive(Document)]` root and are refused here with a message that says so. See the
/// `mongo-schema` crate's documentation, section *The attribute language*.
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
        counter,
        query
    )
)]
pub fn derive_bson_schema(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input, ast::Derive::BsonSchema)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `field!`'s key of one Rust field name, checked against the struct's stored fields while the
/// constant is evaluated: `__field_key!(name, Root)` is the call `name::<Root>::key("name",
/// "Root")`, where `name` is the `field!` macro's local import of
/// `mongo_schema::__private::FieldNames`. Every token carries the span of the name as the
/// caller wrote it, so that a misspelt name is one error at the name (a `macro_rules!` cannot
/// give its own tokens the caller's span). Not for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn __field_key(input: TokenStream) -> TokenStream {
    field_key::expand(input.into()).into()
}

mod field_key {
    use proc_macro2::{Delimiter, Group, Literal, Punct, Spacing, TokenStream, TokenTree};

    /// `name, Root` into `name::<Root>::key("name", "Root")`, spanned at `name`.
    pub fn expand(input: TokenStream) -> TokenStream {
        let mut tokens = input.into_iter();
        let Some(TokenTree::Ident(name)) = tokens.next() else {
            return quote::quote!(::core::compile_error!("`__field_key!(name, Root)`"));
        };
        let _comma = tokens.next();
        let root: TokenStream = tokens.collect();
        let span = name.span();
        let unraw = name.to_string();
        let unraw = unraw.strip_prefix("r#").unwrap_or(&unraw).to_owned();
        let root_text = root
            .to_string()
            .replace(" :: ", "::")
            .replace(":: ", "::")
            .replace(" <", "<")
            .replace("< ", "<")
            .replace(" >", ">")
            .replace(" ,", ",");
        let punct = |c: char, spacing: Spacing| {
            let mut p = Punct::new(c, spacing);
            p.set_span(span);
            TokenTree::Punct(p)
        };
        let literal = |text: &str| {
            let mut l = Literal::string(text);
            l.set_span(span);
            TokenTree::Literal(l)
        };
        let mut key = proc_macro2::Ident::new("key", span);
        key.set_span(span);
        let mut args = TokenStream::new();
        args.extend([
            literal(&unraw),
            punct(',', Spacing::Alone),
            literal(&root_text),
        ]);
        let mut call = Group::new(Delimiter::Parenthesis, args);
        call.set_span(span);
        let mut out = TokenStream::new();
        out.extend([
            TokenTree::Ident(name.clone()),
            punct(':', Spacing::Joint),
            punct(':', Spacing::Alone),
            punct('<', Spacing::Alone),
        ]);
        out.extend(root);
        out.extend([
            punct('>', Spacing::Alone),
            punct(':', Spacing::Joint),
            punct(':', Spacing::Alone),
            TokenTree::Ident(key),
            TokenTree::Group(call),
        ]);
        out
    }
}
