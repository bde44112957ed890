//! `impl BsonSchema`: the `$jsonSchema` of a struct, newtype or unit-only enum.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::ast::Derive;
use crate::ast::{Container, Data, Field, Repr, Style, Variant};
use crate::attr::{ConstraintKind, ConstraintValue};
use crate::gen::private;

pub fn bson_schema_impl(cont: &Container, derive: Derive) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    let generics = with_bounds(cont);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let mut type_checks = crate::gen::checks::constraint_checks(cont);
    type_checks.extend(crate::gen::relations::id_type_checks(cont));
    type_checks.extend(crate::gen::copies::checks(cont));
    type_checks.extend(crate::gen::parts::checks(cont));
    let root = derive == Derive::Document;
    let closed = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.additional_properties.as_ref())
        .or(cont.attrs.additional_properties.as_ref())
        .is_some_and(|allowed| !allowed.value);
    let body = match &cont.data {
        Data::Struct(fields) => object_schema(fields, closed, root),
        Data::Tuple(fields) => tuple_schema(fields),
        Data::Transparent(field) => field_schema(field),
        Data::Enum(variants) => enum_schema(cont, variants, closed, root),
        Data::StoredAs => {
            let ty = &cont.attrs.stored_as.as_ref().expect("stored_as").value;
            quote_spanned!(ty.span()=> <#ty as #private::BsonSchema>::bson_schema())
        }
    };
    // a generic value holding a collection root embeds it too (rule 3)
    let params: Vec<_> = cont
        .original
        .generics
        .type_params()
        .map(|p| &p.ident)
        .collect();
    let root = derive == Derive::Document;
    // `false` is the trait's default: an embedded type without parameters leaves it out
    let root = (root || !params.is_empty()).then(|| {
        quote!(const __COLLECTION_ROOT: bool = #root #(|| <#params as #private::BsonSchema>::__COLLECTION_ROOT)*;)
    });
    let embedded =
        (derive == Derive::BsonSchema).then(|| crate::gen::relations::embedded_relations_fn(cont));
    let field_list = crate::gen::copies::field_list(cont, derive);
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::BsonSchema for #ident #ty_generics #where_clause {
            #[inline]
            fn bson_schema() -> #private::bson::Document {
                #type_checks
                #body
            }
            #root
            #field_list
            #embedded
        }
    }
}

/// `object().property(...)...build()` over the stored fields, flattened ones merged.
fn object_schema(fields: &[Field], closed: bool, root: bool) -> TokenStream {
    let private = private();
    let parts = fields.iter().filter(|f| f.is_stored()).map(|field| {
        let schema = field_schema(field);
        if field.attrs.flatten.is_some() {
            return quote!(.flatten(#schema));
        }
        let name = &field.stored_name;
        let required = !field.attrs.skip_serializing_if;
        if field.attrs.open.is_some() {
            // left unchecked, as a validator that does not declare the field leaves it
            return quote!(.property(#name, #private::bson::Document::new(), #required));
        }
        if (name == "_id" && !required) || field.attrs.not_null.is_some() {
            // an `Option` id skipped when `None` (the server assigns one), or one declared
            // absent-never-null: never `null`
            return quote!(.property(#name, #private::not_null(#schema), #required));
        }
        quote!(.property(#name, #schema, #required))
    });
    let finish = match (closed, root) {
        (true, _) => quote!(.deny_additional(#root)),
        (false, true) => quote!(.root()),
        (false, false) => TokenStream::new(),
    };
    quote! {
        #private::object()
            #(#parts)*
            #finish
            .build()
    }
}

/// A tuple struct or tuple variant: an array of its stored fields, in order.
fn tuple_schema(fields: &[Field]) -> TokenStream {
    let private = private();
    let items = fields.iter().filter(|f| f.is_stored()).map(field_schema);
    quote!(#private::tuple(::std::vec![#(#items),*]))
}

/// An enum in its serde representation; a unit-only enum stored as its names is `{ enum }`.
fn enum_schema(cont: &Container, variants: &[Variant], closed: bool, root: bool) -> TokenStream {
    let private = private();
    let repr = cont.repr();
    let stored: Vec<&Variant> = variants.iter().filter(|v| v.is_stored()).collect();
    let names_only = repr == Repr::External
        && stored
            .iter()
            .all(|v| v.style == Style::Unit && v.attrs.untagged.is_none());
    if names_only {
        let names = stored.iter().map(|v| &v.stored_name);
        return quote!(#private::string_enum(&[#(#names),*]));
    }
    let tagging = match &repr {
        Repr::External => quote!(#private::Tagging::External),
        Repr::Internal(tag) => quote!(#private::Tagging::Internal(#tag)),
        Repr::Adjacent(tag, content) => quote!(#private::Tagging::Adjacent(#tag, #content)),
        Repr::Untagged => quote!(#private::Tagging::Untagged),
    };
    let branches = stored.iter().map(|variant| {
        let name = &variant.stored_name;
        let untagged = variant.attrs.untagged.is_some();
        let content = match variant.style {
            Style::Unit => quote!(::core::option::Option::None),
            Style::Newtype => {
                let schema = field_schema(&variant.fields[0]);
                quote!(::core::option::Option::Some(#schema))
            }
            Style::Tuple => {
                let schema = tuple_schema(&variant.fields);
                quote!(::core::option::Option::Some(#schema))
            }
            Style::Struct => {
                // internally tagged: the enum closes the object once the tag is in it
                let close = closed && (untagged || !matches!(repr, Repr::Internal(_)));
                // stored as its content alone: of a whole-document enum, the document itself
                let alone = repr == Repr::Untagged || untagged;
                let schema = object_schema(&variant.fields, close, root && alone);
                quote!(::core::option::Option::Some(#schema))
            }
        };
        quote! {
            #private::VariantSchema { name: #name, content: #content, untagged: #untagged }
        }
    });
    quote! {
        #private::enum_schema(#tagging, ::std::vec![#(#branches),*], #closed, #root)
    }
}

/// The bound of a field stored as a bounded collection (`#[embed(max)]`, `#[reference(max)]`,
/// `#[extended_ref(max)]`, a subset of more than one preview): its type implements
/// `BoundedCollection`.
pub fn collection_bound(field: &Field) -> Option<u64> {
    field
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
        })
}

/// The schema expression of one field: its type's schema, or its bounded collection schema,
/// with `#[schema(...)]` constraints applied.
pub fn field_schema(field: &Field) -> TokenStream {
    let private = private();
    let ty = field.ty;
    let bound = collection_bound(field);
    let helper = match &field.attrs.stored_as {
        Some(stored) => Some(stored.value.to_token_stream()),
        None => field
            .attrs
            .custom_serialize
            .as_ref()
            .and_then(|(_, helper)| crate::serde_helpers::recognise(helper, ty)),
    };
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
