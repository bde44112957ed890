//! `impl Document`: collection name, validation settings and indexes.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{Container, Data, Field, Repr, Variant};
use crate::attr::{IndexKey, KeyKind};
use crate::check::resolve_key;
use crate::ctxt::Ctxt;
use crate::gen::private;

pub fn document_impl(cont: &Container) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let collection = &cont.attrs.collection.as_ref().expect("checked").value;
    let collection_name = &collection.name.as_ref().expect("checked").value;
    let level = match collection
        .validation_level
        .as_ref()
        .map(|l| l.value.as_str())
    {
        Some("moderate") => quote!(Moderate),
        _ => quote!(Strict),
    };
    let action = match collection
        .validation_action
        .as_ref()
        .map(|a| a.value.as_str())
    {
        Some("warn") => quote!(Warn),
        _ => quote!(Error),
    };
    let kinds = match (&cont.data, cont.repr()) {
        (Data::Enum(variants), Repr::Internal(tag)) => variants
            .iter()
            .flat_map(|v| {
                let kind = &v.stored_name;
                let tag = tag.clone();
                v.attrs
                    .indexes
                    .iter()
                    .map(move |index| (index, Some((tag.clone(), kind.clone()))))
            })
            .collect(),
        _ => Vec::new(),
    };
    let all_indexes = cont
        .attrs
        .indexes
        .iter()
        .map(|index| (index, None))
        .chain(kinds);
    let indexes = all_indexes.map(|(index, kind)| {
        let index = &index.value;
        let keys = keys_document(cont, &index.keys.as_ref().expect("checked").value);
        let name = index.name.as_ref().map(|n| {
            let n = &n.value;
            quote!(.name(#n))
        });
        let unique = index
            .unique
            .as_ref()
            .filter(|u| u.value)
            .map(|_| quote!(.unique(true)));
        let sparse = index
            .sparse
            .as_ref()
            .filter(|s| s.value)
            .map(|_| quote!(.sparse(true)));
        let partial = index.partial.as_ref().map(|p| {
            let json = &p.value;
            quote!(.partial_filter(#private::partial_filter(#collection_name, #json)))
        });
        let ttl = index.expire_after_secs.as_ref().map(|t| {
            let secs = t.value;
            quote!(.expire_after_secs(#secs))
        });
        let kind = kind.map(|(tag, kind)| quote!(.kind(#tag, #kind)));
        let collation = index.collation.as_ref().map(|c| {
            let c = crate::gen::collation::expr(&c.value);
            quote!(.collation(#c))
        });
        quote! {
            .index(#private::IndexSpec::new(#keys) #name #unique #sparse #partial #kind #ttl #collation)
        }
    });
    // first: every index and query the spec gets after it takes the default
    let collation = collection.collation.as_ref().map(|c| {
        let c = crate::gen::collation::expr(&c.value);
        quote!(.collation(#c))
    });
    // the relationship helpers read it without building the whole spec
    let default_collation = collection.collation.as_ref().map_or_else(
        || quote!(::core::option::Option::None),
        |c| {
            let c = crate::gen::collation::expr(&c.value);
            quote!(::core::option::Option::Some(#c))
        },
    );
    let shard_key = collection.shard_key.as_ref().map(|keys| {
        let keys = keys_document(cont, &keys.value);
        quote!(.shard_key(#keys))
    });
    let timeseries = crate::gen::timeseries::spec(cont);
    let timeseries_checks = crate::gen::timeseries::checks(cont);
    let references = crate::gen::relations::reference_specs(cont);
    let queries = crate::gen::queries::query_specs(cont);
    let query_items = crate::gen::queries::query_items(cont);
    let copies = crate::gen::copies::copy_specs(cont);
    let part = crate::gen::parts::part_spec(cont);
    // a generic holder's impl does not bound its parameters by `BsonSchema`
    let embedded = (!cont.is_generic()).then(|| crate::gen::relations::embedded_calls(cont));
    let buckets = crate::gen::copies::bucket_indexes(cont);
    let relation_consts = crate::gen::relations::relation_consts(cont);
    let child_of = crate::gen::relations::child_of_impls(cont);
    let part_owner = crate::gen::parts::owner_impl(cont);
    let id_type = id_type(cont);
    let id_encoder = match (id_field(cont), &cont.data) {
        ((Some(field), None), Data::Struct(_)) => {
            // the trait's default is the type's own (a BSON scalar's native encoder): named
            // here only for a serde helper, or as `Plain` where a helper or `stored_as` writes
            // what no encoder of the derive's can
            let helper = field.attrs.custom_serialize.is_some() || field.attrs.stored_as.is_some();
            let encoder = helper
                .then(|| {
                    crate::gen::paths::encoder(cont, field)
                        .unwrap_or_else(|| quote!(#private::Encoder::Plain))
                })
                .map(|e| quote!(const ID_ENCODER: #private::Encoder<Self::Id> = #e;));
            let decoder = crate::gen::paths::decoder(cont, field)
                .map(|d| quote!(const ID_DECODER: #private::Decoder<Self::Id> = #d;));
            Some(quote!(#encoder #decoder))
        }
        _ => None,
    };
    let identified = identified_impl(cont);
    let kind = crate::gen::timeseries::kind_impl(cont);
    quote! {
        #child_of
        #part_owner
        #kind
        #query_items
        #[automatically_derived]
        impl #impl_generics #private::Document for #ident #ty_generics #where_clause {
            const COLLECTION: &'static str = #collection_name;
            type Id = #id_type;
            #id_encoder

            #[inline]
            fn __default_collation() -> ::core::option::Option<#private::Collation> {
                #default_collation
            }

            #[inline]
            fn collection_spec() -> #private::CollectionSpec {
                #private::CollectionSpec::new(#collection_name, <Self as #private::Document>::validator())
                    .validation_level(#private::ValidationLevel::#level)
                    .validation_action(#private::ValidationAction::#action)
                    #collation
                    #(#indexes)*
                    #timeseries
                    #shard_key
                    #references
                    #copies
                    #part
                    #embedded
                    #buckets
                    #queries
            }
        }
        #identified
        #relation_consts
        #timeseries_checks
    }
}

/// The field stored as `_id`, and the `T` of an `Option<T>` one (skipped when `None`, checked:
/// the stored id is a `T`, assigned by the server when absent).
fn id_field<'c, 'a>(cont: &'c Container<'a>) -> (Option<&'c Field<'a>>, Option<&'a syn::Type>) {
    let field = cont.stored_fields().find(|f| f.stored_name == "_id");
    let optional = field.and_then(|f| crate::ast::generic_arg(f.ty, &["Option"]));
    (field, optional)
}

/// The type of `_id`: the field stored as `_id` (the `T` of an `Option<T>`), or `ObjectId`.
fn id_type(cont: &Container) -> TokenStream {
    match id_field(cont) {
        (_, Some(inner)) => quote!(#inner),
        (Some(field), None) => {
            let ty = field.ty;
            quote!(#ty)
        }
        (None, None) => {
            let private = private();
            quote!(#private::bson::oid::ObjectId)
        }
    }
}

/// `impl Identified` (`id`, `to_ref`) when every document holds its `_id` (a struct's field, or
/// every kind's); none for an `Option` id, which a document has no id to lend for before it is
/// written.
fn identified_impl(cont: &Container) -> Option<TokenStream> {
    let private = private();
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let (field, optional) = id_field(cont);
    if optional.is_some() {
        return None;
    }
    let body = match &cont.data {
        Data::Enum(variants) => kind_ids(variants)?,
        _ => {
            let member = field?.ident?;
            quote!(&self.#member)
        }
    };
    Some(quote! {
        #[automatically_derived]
        impl #impl_generics #private::Identified for #ident #ty_generics #where_clause {
            #[inline]
            fn id(&self) -> &Self::Id {
                #body
            }
        }
    })
}

/// The body of `Identified::id` of a whole-document enum whose every kind holds `_id` (checked
/// to be of one type): a match on the kinds.
fn kind_ids(variants: &[Variant]) -> Option<TokenStream> {
    let mut arms = Vec::new();
    for variant in variants {
        let ident = variant.ident;
        if !variant.is_stored() {
            arms.push(quote!(Self::#ident { .. } => ::core::unreachable!("a skipped variant is never stored"),));
            continue;
        }
        let member = variant
            .fields
            .iter()
            .find(|f| f.is_stored() && f.stored_name == "_id")?
            .ident?;
        arms.push(quote!(Self::#ident { #member: id, .. } => id,));
    }
    Some(quote!(match self { #(#arms)* }))
}

/// What the derive emits next to its errors for a collection root it could model: every item
/// uses elsewhere name (the `Document` impl with its collection name and id type, `Identified`,
/// the relation, subset and array constants, the `Fields` list and `FieldPath` impls a copy type of another struct
/// reads), with bodies that are never run, so that one mistake in the attributes is one error
/// and not one more per use of a generated item.
pub fn fallback_document_items(cont: &Container) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let collection_name = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.name.as_ref())
        .map_or_else(String::new, |n| n.value.clone());
    let id_type = id_type(cont);
    let identified = identified_impl(cont);
    let relation_consts = crate::gen::relations::relation_consts(cont);
    // a copy type of another struct reads the fields through their `FieldPath` impls
    let paths = match cont.data {
        Data::Enum(_) => TokenStream::new(),
        _ => crate::gen::paths::field_paths(cont, crate::ast::Derive::Document, true),
    };
    let child_of = crate::gen::relations::child_of_impls(cont);
    let part_owner = crate::gen::parts::owner_impl(cont);
    let queries = crate::gen::queries::fallback_query_items(cont);
    let kind = crate::gen::timeseries::kind_impl(cont);
    quote! {
        #paths
        #child_of
        #part_owner
        #kind
        #queries
        impl #impl_generics #private::Document for #ident #ty_generics #where_clause {
            const COLLECTION: &'static str = #collection_name;
            type Id = #id_type;
            fn collection_spec() -> #private::CollectionSpec {
                ::core::unimplemented!("mongo-schema: the derive reported errors")
            }
        }
        #identified
        #relation_consts
    }
}

/// An ordered key document, with Rust field names translated to stored names.
fn keys_document(cont: &Container, keys: &[IndexKey]) -> TokenStream {
    let private = private();
    let cx = Ctxt::new();
    let inserts = keys.iter().map(|key| {
        let stored = resolve_key(&cx, cont, key);
        let value = match &key.kind {
            KeyKind::Direction(d) => quote!(#d),
            KeyKind::Special(s) => quote!(#s),
        };
        quote!(keys.insert(#stored, #value);)
    });
    let tokens = quote! {{
        let mut keys = #private::bson::Document::new();
        #(#inserts)*
        keys
    }};
    cx.check().expect("index keys were checked");
    tokens
}
