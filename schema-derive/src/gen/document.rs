//! `impl Document`: collection name, validation settings and indexes.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Container;
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
    let indexes = cont.attrs.indexes.iter().map(|index| {
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
        quote! {
            .index(#private::IndexSpec::new(#keys) #name #unique #sparse #partial #ttl)
        }
    });
    let shard_key = collection.shard_key.as_ref().map(|keys| {
        let keys = keys_document(cont, &keys.value);
        quote!(.shard_key(#keys))
    });
    let references = crate::gen::relations::reference_specs(cont);
    let copies = crate::gen::copies::copy_specs(cont);
    let buckets = crate::gen::copies::bucket_indexes(cont);
    let relation_consts = crate::gen::relations::relation_consts(cont);
    let references_fn = crate::gen::relations::references_fn(cont);
    let has_fields = crate::gen::copies::has_field_impls(cont);
    let id_type = id_type(cont);
    let identified = identified_impl(cont);
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::Document for #ident #ty_generics #where_clause {
            const COLLECTION: &'static str = #collection_name;
            type Id = #id_type;

            #[inline]
            fn collection_spec() -> #private::CollectionSpec {
                #private::CollectionSpec::new(#collection_name, <Self as #private::Document>::validator())
                    .validation_level(#private::ValidationLevel::#level)
                    .validation_action(#private::ValidationAction::#action)
                    #(#indexes)*
                    #shard_key
                    #references
                    #copies
                    #buckets
            }

            #references_fn
        }
        #identified
        #relation_consts
        #has_fields
    }
}

/// The type of `_id`: the field stored as `_id`, or `ObjectId`.
fn id_type(cont: &Container) -> TokenStream {
    match cont.stored_fields().find(|f| f.stored_name == "_id") {
        Some(field) => {
            let ty = field.ty;
            quote!(#ty)
        }
        None => {
            let private = private();
            quote!(#private::bson::oid::ObjectId)
        }
    }
}

/// `impl Identified` (`id`, `to_ref`) when a field is stored as `_id`.
fn identified_impl(cont: &Container) -> Option<TokenStream> {
    let private = private();
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let member = cont
        .stored_fields()
        .find(|f| f.stored_name == "_id")?
        .ident?;
    Some(quote! {
        #[automatically_derived]
        impl #impl_generics #private::Identified for #ident #ty_generics #where_clause {
            #[inline]
            fn id(&self) -> &Self::Id {
                &self.#member
            }
        }
    })
}

/// What the derive emits next to its errors for a collection root it could model: every item
/// uses elsewhere name (the `Document` impl with its collection name and id type, `Identified`,
/// the relation, subset and array constants, the `HasField` impls a copy type of another struct
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
    let has_fields = crate::gen::copies::has_field_impls(cont);
    quote! {
        impl #impl_generics #private::Document for #ident #ty_generics #where_clause {
            const COLLECTION: &'static str = #collection_name;
            type Id = #id_type;
            fn collection_spec() -> #private::CollectionSpec {
                ::core::unimplemented!("mongo-schema: the derive reported errors")
            }
        }
        #identified
        #relation_consts
        #has_fields
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
