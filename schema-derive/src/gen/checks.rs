//! Type-level checks: the rules only rustc can decide, spanned at the user's tokens.

use proc_macro2::TokenStream;
use quote::quote_spanned;
use syn::spanned::Spanned;

use crate::ast::Container;
use crate::attr::ConstraintKind;
use crate::check::type_name;
use crate::gen::private;

/// `#[schema(max_length)]` needs a string type, `#[schema(minimum)]` a number (checked inside
/// `bson_schema`, so it also works for generic types).
pub fn constraint_checks(cont: &Container) -> TokenStream {
    let private = private();
    let mut checks = TokenStream::new();
    for field in cont.stored_fields() {
        let ty = field.ty;
        for constraint in &field.attrs.constraints {
            let span = constraint
                .tokens
                .clone()
                .into_iter()
                .next()
                .map_or_else(|| ty.span(), |t| t.span());
            let check = match constraint.value.kind {
                ConstraintKind::String => {
                    quote_spanned!(span=> #private::require_string_like::<#ty>();)
                }
                ConstraintKind::Number => {
                    quote_spanned!(span=> #private::require_number_like::<#ty>();)
                }
            };
            checks.extend(check);
        }
    }
    checks
}

/// Rule 3: a collection root (`#[derive(Document)]`) is never embedded. Evaluated as constants,
/// so only for non-generic types.
pub fn type_checks(cont: &Container) -> TokenStream {
    if cont.is_generic() {
        return TokenStream::new();
    }
    let private = private();
    let mut checks = TokenStream::new();
    for field in cont.stored_fields() {
        let ty = field.ty;
        let is_root = if field.attrs.embed.is_some() {
            quote_spanned!(ty.span()=> <#ty as #private::BoundedCollection>::__ELEMENT_COLLECTION_ROOT)
        } else {
            quote_spanned!(ty.span()=> <#ty as #private::BsonSchema>::__COLLECTION_ROOT)
        };
        let message = format!(
            "field `{}` embeds a collection root: `{}` {} a #[derive(Document)] type, which has its own collection; \
             store its id with #[reference], or copy the fields this document reads with #[extended_ref(...)]",
            field.display_name(),
            type_name(ty),
            if field.attrs.embed.is_some() { "holds" } else { "is" },
        );
        checks.extend(quote_spanned! {ty.span()=>
            const _: () = if #is_root { ::core::panic!(#message) };
        });
    }
    checks
}
