//! Entry point of both derives: model -> checks -> generated impls, or every error at once with
//! stub impls that keep the rest of the user's crate from drowning in follow-up errors.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Container;
use crate::ctxt::Ctxt;
use crate::{check, gen};

use crate::ast::Derive;

pub fn derive(input: &syn::DeriveInput, derive: Derive) -> syn::Result<TokenStream> {
    let cx = Ctxt::new();
    let cont = Container::from_ast(&cx, input);
    if let Some(cont) = &cont {
        check::check(&cx, cont, derive);
    }
    if let Err(errors) = cx.check() {
        let mut tokens = errors.into_compile_error();
        let facade = cont.as_ref().and_then(|c| c.attrs.crate_path.as_ref());
        tokens.extend(gen::with_facade(facade.map(|path| &path.value), || {
            fallback(input, cont.as_ref(), derive)
        }));
        return Ok(tokens);
    }
    let cont = cont.expect("no model without errors");
    let facade = cont.attrs.crate_path.as_ref().map(|path| &path.value);
    Ok(gen::with_facade(facade, || generate(&cont, derive)))
}

/// The derive's items for a model without errors.
fn generate(cont: &Container, derive: Derive) -> TokenStream {
    let private_use = gen::private_use();
    let schema_impl = gen::json_schema::bson_schema_impl(cont, derive);
    let checks = gen::checks::type_checks(cont);
    let paths = gen::paths::field_paths(cont, derive, false);
    let (document_impl, copy_types) = match derive {
        Derive::Document => (
            gen::document::document_impl(cont),
            gen::copies::copy_types(cont),
        ),
        Derive::BsonSchema => (TokenStream::new(), gen::copies::copy_types(cont)),
    };
    quote! {
        #copy_types

        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_attributes, unused_qualifications, clippy::all)]
        const _: () = {
            #private_use
            #schema_impl
            #document_impl
            #checks
            #paths
        };
    }
}

/// Impls with the right names but no behaviour, emitted next to the errors: with a model, every
/// item the derive generates that code elsewhere names (consts, copy types, `Identified`, ...),
/// so that one mistake is one error, as thiserror's fallback impls do.
fn fallback(input: &syn::DeriveInput, cont: Option<&Container>, derive: Derive) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let private = gen::private();
    let private_use = gen::private_use();
    let collection_root = matches!(cont.map(|c| &c.data), Some(crate::ast::Data::Struct(_)));
    // the fields other structs' copies check theirs against, so that a mistake here is not
    // one more error in each of them
    let field_list = match (derive, cont) {
        (Derive::Document, Some(cont)) => gen::copies::field_list(cont, derive),
        _ => TokenStream::new(),
    };
    let (document, copy_types) = match derive {
        Derive::Document if collection_root => {
            let cont = cont.expect("a struct was modelled");
            (
                gen::document::fallback_document_items(cont),
                gen::copies::copy_types(cont),
            )
        }
        Derive::Document => (
            quote! {
                impl #impl_generics #private::Document for #ident #ty_generics #where_clause {
                    const COLLECTION: &'static str = "";
                    type Id = #private::bson::oid::ObjectId;
                    fn collection_spec() -> #private::CollectionSpec {
                        ::core::unimplemented!("mongo-schema: the derive reported errors")
                    }
                }
            },
            TokenStream::new(),
        ),
        // the copy types of an embedded struct, so its uses compile next to the errors
        Derive::BsonSchema if collection_root => (
            TokenStream::new(),
            gen::copies::copy_types(cont.expect("a struct was modelled")),
        ),
        Derive::BsonSchema => (TokenStream::new(), TokenStream::new()),
    };
    quote! {
        #copy_types

        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_attributes, unused_qualifications, clippy::all)]
        const _: () = {
            #private_use
            impl #impl_generics #private::BsonSchema for #ident #ty_generics #where_clause {
                fn bson_schema() -> #private::bson::Document {
                    ::core::unimplemented!("mongo-schema: the derive reported errors")
                }
                #field_list
            }
            #document
        };
    }
}
