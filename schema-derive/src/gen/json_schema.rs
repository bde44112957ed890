//! `impl BsonSchema`: the `$jsonSchema` of a struct, newtype or unit-only enum.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Data, Field};
use crate::attr::{ConstraintKind, ConstraintValue};
use crate::expand::Derive;
use crate::gen::private;

pub fn bson_schema_impl(cont: &Container, derive: Derive) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    let generics = with_bounds(cont);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let mut type_checks = crate::gen::checks::constraint_checks(cont);
    type_checks.extend(crate::gen::relations::id_type_checks(cont));
    type_checks.extend(crate::gen::copies::checks(cont));
    let body = match &cont.data {
        Data::Struct(_) => {
            let properties = cont.stored_fields().map(|field| {
                let name = &field.stored_name;
                let schema = field_schema(field);
                let required = !field.attrs.skip_serializing_if;
                quote!(.property(#name, #schema, #required))
            });
            let collection_root = derive == Derive::Document;
            let deny = cont
                .attrs
                .collection
                .as_ref()
                .and_then(|c| c.value.additional_properties.as_ref())
                .or(cont.attrs.additional_properties.as_ref())
                .filter(|allowed| !allowed.value)
                .map(|_| quote!(.deny_additional(#collection_root)));
            quote! {
                #private::object()
                    #(#properties)*
                    #deny
                    .build()
            }
        }
        Data::Transparent(field) => field_schema(field),
        Data::Enum(variants) => {
            let names = variants
                .iter()
                .filter(|v| !v.attrs.skip_serializing)
                .map(|v| &v.stored_name);
            quote!(#private::string_enum(&[#(#names),*]))
        }
    };
    // a generic value holding a collection root embeds it too (rule 3)
    let params = cont.original.generics.type_params().map(|p| &p.ident);
    let root = derive == Derive::Document;
    let root = quote!(#root #(|| <#params as #private::BsonSchema>::__COLLECTION_ROOT)*);
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::BsonSchema for #ident #ty_generics #where_clause {
            #[inline]
            fn bson_schema() -> #private::bson::Document {
                #type_checks
                #body
            }
            const __COLLECTION_ROOT: bool = #root;
        }
    }
}

/// The schema expression of one field: its type's schema, or its bounded collection schema,
/// with `#[schema(...)]` constraints applied.
pub fn field_schema(field: &Field) -> TokenStream {
    let private = private();
    let ty = field.ty;
    let bound = field
        .attrs
        .embed
        .as_ref()
        .and_then(|e| e.value.max)
        .or_else(|| field.attrs.reference.as_ref().and_then(|r| r.value.max))
        .or_else(|| field.attrs.extended_ref.as_ref().and_then(|e| e.value.max))
        .or_else(|| {
            // a subset of more than one preview is a bounded array
            field
                .attrs
                .subset
                .as_ref()
                .and_then(|s| s.value.max)
                .filter(|m| *m > 1)
        });
    let helper = field
        .attrs
        .custom_serialize
        .as_ref()
        .and_then(|(_, helper)| crate::serde_helpers::recognise(helper, ty));
    let base = match (helper, bound) {
        (Some(stored), _) => {
            quote_spanned!(ty.span()=> <#stored as #private::BsonSchema>::bson_schema())
        }
        (None, bound) => match bound {
        Some(max) => {
            quote_spanned!(ty.span()=> <#ty as #private::BoundedCollection>::bounded_schema(#max))
        }
        None => quote_spanned!(ty.span()=> <#ty as #private::BsonSchema>::bson_schema()),
        },
    };
    if field.attrs.constraints.is_empty() {
        return base;
    }
    let constraints = field.attrs.constraints.iter().map(|c| {
        let keyword = c.value.keyword;
        let value = match &c.value.value {
            ConstraintValue::Int(v) => quote!(#private::int(#v)),
            ConstraintValue::Float(v) => quote!(#private::float(#v)),
            ConstraintValue::Str(v) => {
                quote!(#private::bson::Bson::String(::std::string::String::from(#v)))
            }
        };
        quote!((#keyword, #value))
    });
    quote!(#private::constrain(#base, &[#(#constraints),*]))
}

/// Adds `T: BsonSchema` for every type parameter, and the constraint bounds of fields whose type
/// involves one (`#[schema(max_length = 5)] label: T` needs `T: StringLike`).
fn with_bounds(cont: &Container) -> syn::Generics {
    let private = private();
    let mut generics = cont.original.generics.clone();
    let params: Vec<syn::Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
    let where_clause = generics.make_where_clause();
    for param in &params {
        where_clause
            .predicates
            .push(syn::parse_quote!(#param: #private::BsonSchema));
    }
    for field in cont.stored_fields() {
        if !crate::gen::checks::mentions_any(field.ty, &params) {
            continue;
        }
        let ty = field.ty;
        for constraint in &field.attrs.constraints {
            let bound = match constraint.value.kind {
                ConstraintKind::String => quote!(#private::StringLike),
                ConstraintKind::Number => quote!(#private::NumberLike),
            };
            where_clause.predicates.push(syn::parse_quote!(#ty: #bound));
        }
    }
    generics
}
