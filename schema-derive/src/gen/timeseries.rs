//! A time series collection's part of `collection_spec()` and the check that its time field is
//! stored as a BSON date.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{field_key, unraw, Container};
use crate::attr::KeyField;
use crate::check::resolve_field;
use crate::ctxt::Ctxt;
use crate::gen::private;

/// `.timeseries(TimeSeries::new("at").meta("sensor")...)`, after the declared indexes (its
/// `{ meta: 1, time: 1 }` index merges with a declared one).
pub fn spec(cont: &Container) -> TokenStream {
    let private = private();
    let Some(collection) = &cont.attrs.collection else {
        return TokenStream::new();
    };
    let Some(ts) = &collection.value.timeseries else {
        return TokenStream::new();
    };
    let ts = &ts.value;
    let cx = Ctxt::new();
    let stored = |field: &KeyField| resolve_field(&cx, cont, field);
    let time = ts
        .time
        .as_ref()
        .map(|t| stored(&t.value))
        .unwrap_or_default();
    let meta = ts.meta.as_ref().map(|m| {
        let meta = stored(&m.value);
        quote!(.meta(#meta))
    });
    let _ = cx.check();
    let granularity = ts.granularity.as_ref().map(|g| {
        let variant = match g.value.as_str() {
            "minutes" => quote!(Minutes),
            "hours" => quote!(Hours),
            _ => quote!(Seconds),
        };
        quote!(.granularity(#private::Granularity::#variant))
    });
    let expire = collection.value.expire_after_secs.as_ref().map(|e| {
        let secs = e.value;
        quote!(.expire_after_secs(#secs))
    });
    quote! {
        .timeseries(#private::TimeSeries::new(#time) #meta #granularity #expire)
    }
}

/// The time field is stored as a BSON date (through its serde helper): rustc checks its stored
/// form, the error at the field's name in `timeseries(time = ...)`.
pub fn checks(cont: &Container) -> TokenStream {
    let private = private();
    let Some(time) = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.timeseries.as_ref())
        .and_then(|ts| ts.value.time.as_ref())
    else {
        return TokenStream::new();
    };
    if cont.is_generic() {
        return TokenStream::new();
    }
    let ident = cont.ident;
    let key = match &time.value {
        KeyField::Rust(name) => field_key(&unraw(name)),
        KeyField::Path(lit) => {
            let Some(name) = cont
                .stored_fields()
                .find(|f| f.stored_name == lit.value())
                .and_then(|f| f.ident)
            else {
                return TokenStream::new();
            };
            field_key(&unraw(name))
        }
        KeyField::Nested(_) => return TokenStream::new(),
    };
    crate::gen::copies::respan(
        quote! {
            const _: () = #private::require_bson_date::<#private::StoredOf<#ident, #key>>();
        },
        crate::gen::queries::key_span(&time.value),
    )
}

/// `impl CollectionKind`: whether the collection is a time series, which the relationships of
/// other structs check through their bounds (`require_subset_child`, `require_copy_source`,
/// `require_part_owner`).
pub fn kind_impl(cont: &Container) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let time_series = cont
        .attrs
        .collection
        .as_ref()
        .is_some_and(|c| c.value.timeseries.is_some());
    let kind = if time_series {
        quote!(#private::TimeSeriesCollection)
    } else {
        quote!(#private::PlainCollection)
    };
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::CollectionKind for #ident #ty_generics #where_clause {
            type Kind = #kind;
        }
    }
}
