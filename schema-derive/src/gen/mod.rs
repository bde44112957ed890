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

/// The facade's hidden module, the only path generated code names.
pub fn private() -> TokenStream {
    quote!(::mongo_schema::__private)
}
