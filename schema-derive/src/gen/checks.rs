//! Type-level checks: the rules only rustc can decide, spanned at the user's tokens.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::Container;
use crate::attr::ConstraintKind;
use crate::check::type_name;
use crate::gen::private;

/// Whether `ty` names one of the type parameters.
pub fn mentions_any(ty: &syn::Type, params: &[syn::Ident]) -> bool {
    use quote::ToTokens;
    fn walk(tokens: proc_macro2::TokenStream, params: &[syn::Ident]) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Ident(ident) => params.contains(&ident),
            proc_macro2::TokenTree::Group(group) => walk(group.stream(), params),
            _ => false,
        })
    }
    !params.is_empty() && walk(ty.to_token_stream(), params)
}

/// `#[schema(max_length)]` needs a string type, `#[schema(minimum)]` a number (checked inside
/// `bson_schema`, so it also works for generic types).
pub fn constraint_checks(cont: &Container) -> TokenStream {
    let private = private();
    let params: Vec<syn::Ident> = cont
        .original
        .generics
        .type_params()
        .map(|p| p.ident.clone())
        .collect();
    let mut checks = TokenStream::new();
    for field in cont.stored_fields() {
        // constraints apply to what is stored
        let stored = field.stored_type();
        let ty = stored.as_ref().unwrap_or(field.ty);
        if mentions_any(ty, &params) {
            continue; // a where-bound of the impl instead (see `json_schema::with_bounds`)
        }
        for constraint in &field.attrs.constraints {
            let span = constraint
                .tokens
                .clone()
                .into_iter()
                .next()
                .map_or_else(|| ty.span(), |t| t.span());
            if known_to_satisfy(ty, constraint.value.kind) {
                continue; // nothing for rustc to check: keeps the expansion small
            }
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
    let mut checks = uuid_checks(cont);
    let mut root_checks = TokenStream::new();
    for field in cont.stored_fields() {
        if field.attrs.reference.is_some()
            || field.attrs.extended_ref.is_some()
            || field.attrs.subset.is_some()
            || field.stored_type().is_some()
        {
            // ids, generated copies, previews, or a stored type of their own: no collection
            // root embedded
            continue;
        }
        let ty = field.ty;
        let is_root = if field.attrs.embed.is_some() {
            quote_spanned!(ty.span()=> <#ty as #private::BoundedCollection>::__ELEMENT_COLLECTION_ROOT)
        } else {
            quote_spanned!(ty.span()=> <#ty as #private::BsonSchema>::__COLLECTION_ROOT)
        };
        let inner = innermost(ty, field.attrs.embed.is_some());
        if scalar_name(inner).is_some() {
            continue; // a string, number, id or date is never a collection root
        }
        let generic = matches!(inner, syn::Type::Path(p)
            if p.path.segments.last().is_some_and(|s| !s.arguments.is_empty()));
        let message = format!(
            "field `{}` embeds `{}`, {} (#[derive(Document)]) with its own collection; \
             store its id with #[reference], or copy the fields this document reads with #[extended_ref(...)]",
            field.display_name(),
            type_name(inner),
            if generic { "which contains a collection root" } else { "a collection root" },
        );
        root_checks.extend(quote_spanned! {ty.span()=>
            if #is_root { ::core::panic!(#message) }
        });
    }
    // one constant for the model's fields: one body for rustc to check and evaluate, not one
    // per embedded field (each `panic!` keeps its field's span)
    if !root_checks.is_empty() {
        checks.extend(quote!(const _: () = { #root_checks };));
    }
    checks
}

/// A `uuid::Uuid` field (or an `Option` or bounded array of them, or a plain id with
/// `#[reference]`) written by serde alone: binary subtype 0, where `doc!`, mongosh and every
/// other driver write subtype 4, so the service's own filters would match nothing. Only fields
/// whose innermost type is spelt `Uuid` are asked about (bson's `Uuid` answers `false`).
fn uuid_checks(cont: &Container) -> TokenStream {
    let private = private();
    let mut checks = TokenStream::new();
    for field in cont.stored_fields() {
        if field.attrs.extended_ref.is_some()
            || field.attrs.subset.is_some()
            || field.attrs.custom_serialize.is_some()
            || field.stored_type().is_some()
        {
            continue;
        }
        let ty = field.ty;
        let embedded = field.attrs.embed.is_some();
        let inner = innermost(ty, embedded);
        let syn::Type::Path(path) = inner else {
            continue;
        };
        if path.path.segments.last().is_none_or(|s| s.ident != "Uuid") {
            continue;
        }
        let is_generic_uuid = if embedded {
            quote_spanned!(ty.span()=> <#ty as #private::BoundedCollection>::__ELEMENT_GENERIC_UUID)
        } else {
            quote_spanned!(ty.span()=> <#ty as #private::BsonSchema>::__GENERIC_UUID)
        };
        let message = format!(
            "field `{}` is a `uuid::Uuid` with no serde helper: serde stores it as binary subtype 0, \
             while `doc!`, mongosh and every other driver write subtype 4, so filters of one form match nothing of the other; \
             add `#[serde(with = \"mongo_schema::bson::serde_helpers::uuid_1_as_binary\")]` (subtype 4, what every tool writes), \
             or `#[schema(stored_as = mongo_schema::bson::Binary)]` to keep subtype 0 for existing data",
            field.display_name(),
        );
        checks.extend(quote_spanned! {ty.span()=>
            const _: () = if #is_generic_uuid { ::core::panic!(#message) };
        });
    }
    checks
}

/// Whether values of a field of type `ty` (bounded by `#[embed]` when `bounded`) may hold
/// references or copies: not known scalars (under `Option`, `Box`, `&`, and the bounded
/// collection), nor an unbounded array or map (an error of its own).
pub fn may_hold_relations(ty: &syn::Type, bounded: bool) -> bool {
    let inner = innermost(ty, bounded);
    if scalar_name(inner).is_some() {
        return false;
    }
    let unbounded = !bounded
        && crate::ast::generic_arg(
            inner,
            &[
                "Vec", "VecDeque", "HashSet", "BTreeSet", "HashMap", "BTreeMap",
            ],
        )
        .is_some();
    !unbounded
}

/// Scalar types the derives know by name (std, or bson through the prelude), which no
/// generated check needs to ask rustc about.
const STRINGS: &[&str] = &["String", "str"];
const NUMBERS: &[&str] = &[
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "usize",
    "f32",
    "f64",
    "Decimal128",
];
const OTHER_SCALARS: &[&str] = &["bool", "char", "ObjectId", "DateTime"];

/// The name of `ty` when it is one of the known scalars, written bare (`String`, `i64`).
fn scalar_name(ty: &syn::Type) -> Option<String> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let ident = path.path.get_ident()?.to_string();
    let known = STRINGS.iter().chain(NUMBERS).chain(OTHER_SCALARS);
    (path.qself.is_none() && known.into_iter().any(|k| *k == ident)).then_some(ident)
}

/// Whether `ty` is a bare scalar that takes constraints of `kind` (a `String` with
/// `max_length`, an `i64` with `minimum`).
fn known_to_satisfy(ty: &syn::Type, kind: ConstraintKind) -> bool {
    let wanted = match kind {
        ConstraintKind::String => STRINGS,
        ConstraintKind::Number => NUMBERS,
    };
    scalar_name(ty).is_some_and(|name| wanted.contains(&name.as_str()))
}

/// The value type under `Option`, `Box` and `&` (and under one collection when `embedded`).
fn innermost(ty: &syn::Type, embedded: bool) -> &syn::Type {
    let wrappers: &[&str] = if embedded {
        &["Option", "Box", "Vec", "VecDeque", "HashSet", "BTreeSet"]
    } else {
        &["Option", "Box"]
    };
    match ty {
        syn::Type::Reference(r) => innermost(&r.elem, embedded),
        syn::Type::Array(a) => innermost(&a.elem, false),
        syn::Type::Path(path) => {
            let Some(segment) = path.path.segments.last() else {
                return ty;
            };
            let name = segment.ident.to_string();
            let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
                return ty;
            };
            let types: Vec<&syn::Type> = args
                .args
                .iter()
                .filter_map(|a| match a {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .collect();
            match (name.as_str(), types.as_slice()) {
                (w, [inner]) if wrappers.contains(&w) => innermost(
                    inner,
                    embedded && !matches!(w, "Vec" | "VecDeque" | "HashSet" | "BTreeSet"),
                ),
                ("HashMap" | "BTreeMap", [_, value]) if embedded => innermost(value, false),
                _ => ty,
            }
        }
        _ => ty,
    }
}
