//! Code generation, one file per generated item.

pub mod checks;
pub mod collation;
pub mod copies;
pub mod document;
pub mod json_schema;
pub mod parts;
pub mod paths;
pub mod queries;
pub mod relations;
pub mod timeseries;

use std::cell::RefCell;

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

thread_local! {
    /// The facade crate's path for the derive running on this thread: set by [`with_facade`]
    /// from the container's `#[schema(crate = "...")]`. A scoped value rather than an argument:
    /// the path is one fact every generator names, and threading it through each of them would
    /// change every generator's signature for a token.
    static FACADE: RefCell<Option<TokenStream>> = const { RefCell::new(None) };
}

/// Runs `generate` with the facade crate reached by `path` (`#[schema(crate = "...")]`), or by
/// `::mongo_schema` without one.
pub fn with_facade<R>(path: Option<&syn::Path>, generate: impl FnOnce() -> R) -> R {
    struct Reset(Option<TokenStream>);
    impl Drop for Reset {
        fn drop(&mut self) {
            FACADE.with(|facade| *facade.borrow_mut() = self.0.take());
        }
    }
    let previous = FACADE.with(|facade| facade.replace(path.map(ToTokens::to_token_stream)));
    let _reset = Reset(previous);
    generate()
}

/// The facade crate's path: `::mongo_schema`, or what `#[schema(crate = "...")]` names.
pub fn facade() -> TokenStream {
    FACADE
        .with(|facade| facade.borrow().clone())
        .unwrap_or_else(|| quote!(::mongo_schema))
}

/// The facade's hidden module as generated code inside the derive's anonymous consts names it:
/// the alias [`private_use`] declares there (one token for the five of the full path, in the
/// hundreds of paths a model expands to: the derive's output, and so the user's compile time,
/// is smaller).
pub fn private() -> proc_macro2::Ident {
    proc_macro2::Ident::new("__mongo_schema", proc_macro2::Span::call_site())
}

/// The facade's hidden module by its full path, for generated items outside the anonymous
/// consts (the copy types and their checked constants).
pub fn private_path() -> TokenStream {
    let facade = facade();
    quote!(#facade::__private)
}

/// The alias of the facade's hidden module, the first item of each of the derive's anonymous
/// consts.
pub fn private_use() -> TokenStream {
    let facade = facade();
    quote!(
        #[allow(unused_imports)]
        use #facade::__private as __mongo_schema;
    )
}
