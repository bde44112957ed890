//! The serde helpers whose stored shape is known without an annotation: the bson crate's
//! `serde_helpers` modules and functions, and `serde_bytes`.

use proc_macro2::TokenStream;

/// The type whose `BsonSchema` describes what `#[serde(with = "<path>")]` (or `serialize_with`)
/// writes for a field of type `ty`, when the helper is one the derive knows; `None` otherwise.
pub fn recognise(path: &str, ty: &syn::Type) -> Option<TokenStream> {
    let _ = (path, ty);
    None
}
