//! Declared queries (`#[query(...)]`): the `QuerySpec` each adds to the collection's spec, the
//! typed function that runs it, and the compile-time checks of its fields.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use crate::ast::{field_key, unraw, Container};
use crate::attr::{KeyField, KeyKind, Query};
use crate::check::{resolve_field, rust_field};
use crate::ctxt::Ctxt;
use crate::gen::private;

fn stored(cont: &Container, field: &KeyField) -> String {
    // errors were reported by `check_queries`
    let cx = Ctxt::new();
    let path = resolve_field(&cx, cont, field);
    let _ = cx.check();
    path
}

fn span_of(field: &KeyField) -> Span {
    match field {
        KeyField::Rust(ident) => ident.span(),
        KeyField::Path(lit) => lit.span(),
    }
}

/// The `QuerySpec` of a declared query.
fn spec(cont: &Container, query: &Query) -> TokenStream {
    let private = private();
    let name = query
        .name
        .as_ref()
        .map(|n| n.value.value())
        .unwrap_or_default();
    let eq = query.eq.iter().map(|f| {
        let path = stored(cont, f);
        quote!(.eq(#path))
    });
    let any_of = query.any_of.iter().map(|(f, max)| {
        let path = stored(cont, f);
        let max = *max as usize;
        quote!(.any_of(#path, #max))
    });
    let range = query.range.iter().map(|f| {
        let path = stored(cont, f);
        quote!(.range(#path))
    });
    let sort = query.sort.iter().map(|k| {
        let path = stored(cont, &k.field);
        let direction = match k.kind {
            KeyKind::Direction(d) => d,
            KeyKind::Special(_) => 1,
        };
        quote!(.sort(#path, #direction))
    });
    let limit = query.limit.as_ref().map(|l| {
        let limit = l.value as i64;
        quote!(.limit(#limit))
    });
    let project = query.project.as_ref().map(|p| {
        let row = &p.value;
        quote!(.projection_of(
            <#row as #private::Fields>::STORED,
            <#row as #private::Fields>::HAS_ID,
            <#row as #private::BsonSchema>::bson_schema(),
        ))
    });
    let index = query.index.as_ref().map(|i| {
        let index = &i.value;
        quote!(.index(#index))
    });
    quote! {
        #private::QuerySpec::new(#name) #(#eq)* #(#any_of)* #(#range)* #(#sort)* #limit #project #index
    }
}

/// `.query(..)` of every declared query, for `collection_spec()`.
pub fn query_specs(cont: &Container) -> TokenStream {
    cont.attrs
        .queries
        .iter()
        .map(|q| {
            let spec = spec(cont, &q.value);
            quote!(.query(#spec))
        })
        .collect()
}

/// The path of a key in generated code: typed through `FieldPath` for a Rust field, a plain
/// path for a quoted one.
fn path_tokens(cont: &Container, field: &KeyField, value_ty: &TokenStream) -> TokenStream {
    let private = private();
    match field {
        KeyField::Rust(ident) => {
            let key = field_key(&unraw(ident));
            quote_spanned!(ident.span()=> #private::field_path::<Self, #key>())
        }
        KeyField::Path(lit) => {
            let path = stored(cont, field);
            quote_spanned!(lit.span()=> #private::Path::<Self, #value_ty, #private::bson::Bson>::__new(#path, #private::Encoder::Plain, ::core::option::Option::None))
        }
    }
}

fn param_name(field: &KeyField, taken: &mut Vec<String>) -> Ident {
    let base = match field {
        KeyField::Rust(ident) => unraw(ident),
        KeyField::Path(lit) => lit
            .value()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect::<String>()
            .split('_')
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("_")
            .to_lowercase(),
    };
    let mut name = if base.is_empty() {
        "value".to_owned()
    } else {
        base
    };
    while taken.contains(&name) || name == "db" {
        name.push('_');
    }
    taken.push(name.clone());
    format_ident!("{}", name, span = span_of(field))
}

/// The function that runs a declared query, with one argument per condition in the field's
/// type.
fn query_fn(cont: &Container, query: &Query) -> TokenStream {
    let private = private();
    let Some(name) = &query.name else {
        return TokenStream::new();
    };
    let fn_name = format_ident!("{}", name.value.value(), span = name.value.span());
    let row = query.project.as_ref().map_or_else(
        || quote!(Self),
        |p| {
            let ty = &p.value;
            quote!(#ty)
        },
    );
    let mut taken = Vec::new();
    let mut generics = Vec::new();
    let mut params = Vec::new();
    let mut steps = Vec::new();
    let mut docs = Vec::new();
    let field_type = |field: &KeyField| match field {
        KeyField::Rust(ident) => {
            let key = field_key(&unraw(ident));
            Some(quote!(<Self as #private::FieldPath<#key>>::Type))
        }
        KeyField::Path(_) => None,
    };
    for (i, field) in query.eq.iter().enumerate() {
        let param = param_name(field, &mut taken);
        let (ty, value_ty) = match field_type(field) {
            Some(t) => (quote!(&(impl #private::Value<#t> + ?Sized)), t),
            None => {
                let g = format_ident!("__Eq{}", i);
                generics.push(quote!(#g: #private::serde::Serialize + ?Sized));
                (quote!(&#g), quote!(#g))
            }
        };
        let path = path_tokens(cont, field, &value_ty);
        params.push(quote!(#param: #ty));
        steps.push(quote!(let __filter = __filter.eq(#path, #param);));
        docs.push(format!("`{}` equal to `{param}`", stored(cont, field)));
    }
    let mut limits = Vec::new();
    for (i, (field, max)) in query.any_of.iter().enumerate() {
        let param = param_name(field, &mut taken);
        let (ty, value_ty) = match field_type(field) {
            Some(t) => (quote!(&[#t]), t),
            None => {
                let g = format_ident!("__In{}", i);
                generics.push(quote!(#g: #private::serde::Serialize));
                (quote!(&[#g]), quote!(#g))
            }
        };
        let path = path_tokens(cont, field, &value_ty);
        let max = *max as usize;
        let stored_path = stored(cont, field);
        params.push(quote!(#param: #ty));
        limits.push(quote! {
            if #param.len() > #max {
                return #private::DeclaredQuery::__new(__db, __spec, ::core::result::Result::Err(#private::query_refused(#stored_path, #param.len(), #max)));
            }
        });
        steps.push(quote!(let __filter = __filter.is_in(#path, #param.iter());));
        docs.push(format!(
            "`{stored_path}` one of `{param}` (at most {max} values)"
        ));
    }
    for (i, field) in query.range.iter().enumerate() {
        let param = param_name(field, &mut taken);
        let (ty, value_ty) = match field_type(field) {
            Some(t) => (quote!(impl ::core::ops::RangeBounds<#t>), t),
            None => {
                let g = format_ident!("__Range{}", i);
                generics.push(quote!(#g: #private::serde::Serialize));
                (quote!(impl ::core::ops::RangeBounds<#g>), quote!(#g))
            }
        };
        let path = path_tokens(cont, field, &value_ty);
        params.push(quote!(#param: #ty));
        let span = span_of(field);
        // the field's order is checked once, by `query_items`, at its token
        steps.push(quote_spanned!(span=> let __filter = __filter.__range_checked_elsewhere(#path, #param);));
        docs.push(format!("`{}` in the range `{param}`", stored(cont, field)));
    }
    let sort: Vec<String> = query
        .sort
        .iter()
        .map(|k| {
            let dir = match k.kind {
                KeyKind::Direction(d) => d,
                KeyKind::Special(_) => 1,
            };
            format!("{}: {dir}", stored(cont, &k.field))
        })
        .collect();
    let spec = spec(cont, query);
    let mut doc = format!(
        "Declared query `{}` of `{}`: ",
        name.value.value(),
        cont.ident
    );
    doc.push_str(&if docs.is_empty() {
        "every document".to_owned()
    } else {
        docs.join(", ")
    });
    if !sort.is_empty() {
        doc.push_str(&format!(", sorted `{{ {} }}`", sort.join(", ")));
    }
    if let Some(limit) = &query.limit {
        doc.push_str(&format!(", at most {}", limit.value));
    }
    doc.push_str(". Awaited, returns the rows; the command's `comment` is the query's name. Generated by `#[query]`; `Schema::build` fits it to an index by mongod's planner rules.");
    quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments)]
        pub fn #fn_name<'__q, #(#generics),*>(
            __db: &'__q #private::mongodb::Database,
            #(#params),*
        ) -> #private::DeclaredQuery<'__q, Self, #row> {
            let __spec = #spec;
            #(#limits)*
            let __filter = #private::Filter::<Self>::new();
            #(#steps)*
            #private::DeclaredQuery::__new(__db, __spec, __filter.build())
        }
    }
}

/// The inherent functions of the declared queries, and the checks of their fields' stored
/// order and projections.
pub fn query_items(cont: &Container) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    if cont.attrs.queries.is_empty() && cont.attrs.indexes.is_empty() {
        return TokenStream::new();
    }
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let fns = cont.attrs.queries.iter().map(|q| query_fn(cont, &q.value));
    let mut order_checks = Vec::new();
    // an index key on an array indexes its elements (multikey): those must order
    let mut add = |field: &KeyField, elements: bool| {
        if let (KeyField::Rust(key_ident), Some(f)) = (field, rust_field(cont, field)) {
            let key = field_key(&unraw(key_ident));
            let stored = quote!(<#ident #ty_generics as #private::FieldPath<#key>>::Stored);
            let checked = if elements && crate::check::is_array_field(f) {
                quote!(<#stored as #private::Array>::Elem)
            } else {
                stored
            };
            // every token at the field's, so that rustc's error points there
            order_checks.push(crate::gen::copies::respan(
                quote!(#private::require_ordered::<#checked>();),
                key_ident.span(),
            ));
        }
    };
    for query in &cont.attrs.queries {
        query.value.range.iter().for_each(|f| add(f, false));
        query.value.sort.iter().for_each(|k| add(&k.field, false));
    }
    for index in &cont.attrs.indexes {
        for key in index.value.keys.iter().flat_map(|k| &k.value) {
            if matches!(key.kind, KeyKind::Direction(_)) {
                add(&key.field, true);
            }
        }
    }
    let projections = cont.attrs.queries.iter().filter_map(|q| {
        let row = &q.value.project.as_ref()?.value;
        // every token at the row's, so that a failed evaluation points at `project = Row`
        Some(crate::gen::copies::respan(
            quote!(#private::check_projection::<#ident #ty_generics, #row>();),
            row.span(),
        ))
    });
    let generic = cont.is_generic();
    let const_checks = (!generic).then(|| {
        quote! {
            const _: () = {
                #(#order_checks)*
                #(#projections)*
            };
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#fns)*
        }
        #const_checks
    }
}
