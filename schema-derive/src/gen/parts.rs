//! What `#[collection(same_id_as = Owner)]` generates: the part's entry in the collection spec,
//! the `OWNER` constant with `of` and `of_all` beside it, the `PartOwner` impl that names the
//! owner, and the check that the `_id` has the owner's id type (spanned at the `_id` field's
//! type).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::Container;
use crate::check::type_name;
use crate::gen::private;

fn owner<'c>(cont: &'c Container) -> Option<&'c syn::Type> {
    Some(
        &cont
            .attrs
            .collection
            .as_ref()?
            .value
            .same_id_as
            .as_ref()?
            .value,
    )
}

fn optional(cont: &Container) -> bool {
    cont.attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.optional_part.as_ref())
        .is_some_and(|o| o.value)
}

/// `.part_of(PartSpec::new(..))` of `collection_spec`.
pub fn part_spec(cont: &Container) -> TokenStream {
    let private = private();
    let Some(owner) = owner(cont) else {
        return TokenStream::new();
    };
    let owner_name = type_name(owner);
    let optional = optional(cont);
    quote! {
        .part_of(#private::PartSpec::new(<#owner as #private::Document>::COLLECTION, #owner_name).optional(#optional))
    }
}

/// `OWNER`, `of` and `of_all`, inside the part's inherent impl.
pub fn consts(cont: &Container) -> TokenStream {
    let private = private();
    let Some(owner) = owner(cont) else {
        return TokenStream::new();
    };
    let owner_name = type_name(owner);
    let doc_const = format!(
        "This collection's documents are parts of `{owner_name}` documents, each under its owner's `_id`: read by it (`of`, `of_all`), joined to it (`lookup`), written with it in one transaction (`insert`); `Schema::delete_source::<{owner_name}>` deletes the part with its owner."
    );
    let doc_of = format!(
        "The part of the `{owner_name}` `owner` (`None`: it has none): one `find` by `_id`. Await it; `.session(&mut s)` reads in the caller's transaction."
    );
    let doc_of_all = format!(
        "The parts of the `{owner_name}` `owners`, with one `$in` query on `_id`, in their order (owners without one in `missing`)."
    );
    // generic in the owner `O` (always the declared owner: `PartOwner::Owner`), so that the
    // id types are compared only where the functions are called: an `_id` of another type is
    // one error, at the `_id` field (`checks`), not one more per function
    quote! {
        #[doc = #doc_const]
        pub const OWNER: #private::PartOf<#owner, Self> = #private::PartOf::new();

        #[doc = #doc_of]
        pub fn of<'a, O>(
            db: &'a #private::mongodb::Database,
            owner: &#private::Ref<O>,
        ) -> #private::Resolve<'a, Self>
        where
            Self: #private::PartOwner<Owner = O>,
            O: #private::Document<Id = <Self as #private::Document>::Id>,
            <Self as #private::Document>::Id: #private::serde::Serialize + ::core::clone::Clone,
        {
            #private::PartOf::<O, Self>::new().of(db, owner)
        }

        #[doc = #doc_of_all]
        pub fn of_all<'a, 'r, O>(
            db: &'a #private::mongodb::Database,
            owners: impl ::core::iter::IntoIterator<Item = &'r #private::Ref<O>>,
        ) -> #private::ResolveAll<'a, Self>
        where
            Self: #private::PartOwner<Owner = O>,
            O: #private::Document<Id = <Self as #private::Document>::Id> + 'r,
            <Self as #private::Document>::Id: #private::serde::Serialize + ::core::clone::Clone,
        {
            #private::PartOf::<O, Self>::new().of_all(db, owners)
        }
    }
}

/// `impl PartOwner for Part { type Owner = Owner; }`: which type `of` and `of_all` take the
/// reference of.
pub fn owner_impl(cont: &Container) -> TokenStream {
    let private = private();
    let Some(owner) = owner(cont) else {
        return TokenStream::new();
    };
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    // an owner that is no collection root is one error, at `same_id_as = ...`
    let owner_type = quote_spanned!(owner.span()=> type Owner = #owner;);
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::PartOwner for #ident #ty_generics #where_clause {
            #owner_type
        }
    }
}

/// The owner is a collection root, and the `_id` has its id type: spanned at the `_id`
/// field's type, the error says which type it must be.
pub fn checks(cont: &Container) -> TokenStream {
    let private = private();
    let Some(owner) = owner(cont) else {
        return TokenStream::new();
    };
    let Some(id) = cont.stored_fields().find(|f| f.stored_name == "_id") else {
        return TokenStream::new(); // reported by `check`
    };
    // (that the owner is a collection root is `PartOwner::Owner`'s bound, at `same_id_as`)
    let ty = id.ty;
    // by method resolution, so that an owner that is no collection root (reported by
    // `PartOwner`) is not reported again here
    let owner_kind = crate::gen::copies::respan(
        quote! {{
            #[allow(unused_imports)]
            use #private::{OtherOwner as _, TimeSeriesOwner as _};
            #private::require_part_owner((&&#private::OwnerProbe::<#owner>::new()).owner_kind());
        }},
        owner.span(),
    );
    let same_id = quote_spanned! {ty.span()=>
        #private::require_same_id::<#ty, <#owner as #private::Document>::Id, #owner>();
    };
    quote!(#owner_kind #same_id)
}
