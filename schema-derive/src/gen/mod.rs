//! Code generation, one file per generated item.

pub mod checks;
pub mod copies;
pub mod document;
pub mod json_schema;
pub mod paths;
pub mod queries;
pub mod relations;

use proc_macro2::TokenStream;
use quote::quote;

/// The facade's hidden module as generated code inside the derive's anonymous consts names it:
/// the alias [`private_use`] declares there (one token for the five of the full path, in the
/// hundreds of paths a model expands to: the derive's output, and so the user's compile time,
/// is smaller).
pub fn private() -> TokenStream {
    quote!(__mongo_schema)
}

/// The facade's hidden module by its full path, for generated items outside the anonymous
/// consts (the copy types and their checked constants).
pub fn private_path() -> TokenStream {
    quote!(::mongo_schema::__private)
}

/// The alias of the facade's hidden module, the first item of each of the derive's anonymous
/// consts.
pub fn private_use() -> TokenStream {
    quote!(
        #[allow(unused_imports)]
        use ::mongo_schema::__private as __mongo_schema;
    )
}
