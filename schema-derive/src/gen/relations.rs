//! What `#[reference]` fields generate: the reference table of the collection, the typed
//! `Relation` constants, the check that a plain id has the target's id type, and the relations
//! an embedded value declares to its holder (`__embedded_relations`, the holder's `.embedded`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{unraw, Container, Data, Field, RefKind};
use crate::check::type_name;
use crate::gen::private;
use crate::order::sort_key;

fn kind_tokens(kind: RefKind) -> TokenStream {
    let private = private();
    match kind {
        RefKind::One => quote!(#private::RefKind::One),
        RefKind::Optional => quote!(#private::RefKind::Optional),
        RefKind::Many => quote!(#private::RefKind::Many),
    }
}

fn references<'c, 'a>(cont: &'c Container<'a>) -> impl Iterator<Item = &'c Field<'a>> {
    cont.stored_fields().filter(|f| f.attrs.reference.is_some())
}

/// `.reference(ReferenceSpec::new(...))` calls for `CollectionSpec`.
pub fn reference_specs(cont: &Container) -> TokenStream {
    let private = private();
    references(cont)
        .filter_map(|field| {
            let shape = field.reference_shape()?;
            let target = shape.target?;
            let stored = &field.stored_name;
            let kind = kind_tokens(shape.kind);
            let target_name = type_name(&target);
            let max = field
                .attrs
                .reference
                .as_ref()
                .and_then(|r| r.value.max)
                .map(|max| quote!(.max(#max)));
            let order = (shape.kind != RefKind::Many)
                .then(|| sort_key(cont, stored))
                .flatten()
                .map(|(key, direction, unique)| quote!(.order(#key, #direction, #unique)));
            Some(quote! {
                .reference(#private::ReferenceSpec::new(
                    #stored,
                    <#target as #private::Document>::COLLECTION,
                    #target_name,
                    #kind,
                ) #max #order)
            })
        })
        .collect()
}

/// `impl Ticket { pub const CUSTOMER_ID: Relation<Ticket, Customer, ..> = ...; }`
pub fn relation_consts(cont: &Container) -> TokenStream {
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let consts: Vec<TokenStream> = references(cont)
        .filter_map(|field| {
            let shape = field.reference_shape()?;
            let target = shape.target?;
            let name = format_ident!("{}", unraw(field.ident?).to_uppercase());
            let stored = &field.stored_name;
            let sort_key = if shape.kind == RefKind::Many {
                None
            } else {
                sort_key(cont, stored)
            };
            let doc = format!(
                "The `#[reference]` field `{}` -> `{}`: typed `$lookup`s{}.",
                stored,
                type_name(&target),
                if sort_key.is_some() {
                    ", keyset pages of the children"
                } else {
                    ""
                }
            );
            Some(relation_const(
                &name, &target, stored, shape.kind, sort_key, &doc,
            ))
        })
        .collect();
    let mut consts = consts;
    consts.extend(extended_relation_consts(cont));
    let mut more = crate::gen::copies::consts(cont);
    more.extend(crate::gen::parts::consts(cont));
    if consts.is_empty() && more.is_empty() {
        return TokenStream::new();
    }
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#consts)*
            #more
        }
    }
}

/// `pub const CUSTOMER: Relation<Order, Customer, ..>` for every `#[extended_ref]` of a
/// collection root: the relation of its copied `_id` (`customer._id`), with lookups, resolves
/// and, when a declared index starts with `customer._id` and then a key, keyset pages of a
/// source's holders.
fn extended_relation_consts(cont: &Container) -> Vec<TokenStream> {
    if !matches!(cont.data, Data::Struct(_)) {
        return Vec::new();
    }
    cont.stored_fields()
        .filter_map(|field| {
            let extended = &field.attrs.extended_ref.as_ref()?.value;
            let target = extended.to.as_ref()?;
            let name = format_ident!("{}", unraw(field.ident?).to_uppercase());
            let stored = format!("{}._id", field.stored_name);
            let shape = crate::ast::copy_shape(field.ty).0;
            let sort_key = if shape == RefKind::Many { None } else { sort_key(cont, &stored) };
            let doc = format!(
                "The `#[extended_ref]` field `{}` -> `{}`, through its copied `{stored}`: typed `$lookup`s{}.",
                field.stored_name,
                type_name(target),
                if sort_key.is_some() { ", keyset pages of a source's holders" } else { "" }
            );
            Some(relation_const(&name, target, &stored, shape, sort_key, &doc))
        })
        .collect()
}

/// `pub const NAME: Relation<Self, Target[, SortKey]>` on the stored path `stored`.
fn relation_const(
    name: &syn::Ident,
    target: &syn::Type,
    stored: &str,
    kind: RefKind,
    sort_key: Option<(String, i32, bool)>,
    doc: &str,
) -> TokenStream {
    let private = private();
    let kind = kind_tokens(kind);
    match sort_key {
        Some((key, direction, unique)) => quote! {
            #[doc = #doc]
            pub const #name: #private::Relation<Self, #target, #private::SortKey> =
                #private::Relation::new(#stored, #kind).ordered(#private::SortKey {
                    field: #key,
                    direction: #private::SortKey::direction_of(#direction),
                    unique: #unique,
                });
        },
        None => quote! {
            #[doc = #doc]
            pub const #name: #private::Relation<Self, #target> = #private::Relation::new(#stored, #kind);
        },
    }
}

/// A plain id with `to = T` must have `T`'s id type.
pub fn id_type_checks(cont: &Container) -> TokenStream {
    let private = private();
    if !matches!(cont.data, Data::Struct(_)) {
        return TokenStream::new();
    }
    references(cont)
        .filter_map(|field| {
            let shape = field.reference_shape()?;
            let target = field.attrs.reference.as_ref()?.value.to.as_ref()?;
            if crate::ast::generic_arg(shape.element, &["Ref"]).is_some() {
                // `Ref<U>` with `to = T`: U must be T
                let element = shape.element;
                return Some(quote_spanned! {target.span()=>
                    #private::require_id_of::<#element, #private::Ref<#target>>();
                });
            }
            let element = shape.element;
            Some(quote_spanned! {element.span()=>
                #private::require_id_of::<#element, #target>();
            })
        })
        .collect()
}

/// `impl ChildOf<P> for T` for every type `P` that one field of `T` references (a
/// `#[reference]` to one parent, or else the `_id` of an `#[extended_ref]` to it): what a
/// `#[subset(of = T)]` of `P` reads to find a child's parent. A type referenced by two fields of
/// the same kind gets an empty path, which the subset's constant refuses.
pub fn child_of_impls(cont: &Container) -> TokenStream {
    use quote::ToTokens;
    if matches!(cont.data, Data::Enum(_)) {
        return TokenStream::new();
    }
    let private = private();
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    // (target as written, target, (stored path, Rust name) of references, of extended references)
    type Paths = Vec<(String, String)>;
    let mut targets: Vec<(String, syn::Type, Paths, Paths)> = Vec::new();
    let mut add = |target: &syn::Type, path: String, name: String, extended: bool| {
        let key = target.to_token_stream().to_string();
        let entry = match targets.iter_mut().find(|t| t.0 == key) {
            Some(entry) => entry,
            None => {
                targets.push((key, target.clone(), Vec::new(), Vec::new()));
                targets.last_mut().expect("just pushed")
            }
        };
        if extended {
            entry.3.push((path, name));
        } else {
            entry.2.push((path, name));
        }
    };
    for field in cont.stored_fields() {
        let name = field.ident.map(|i| i.to_string()).unwrap_or_default();
        if let Some(shape) = field.reference_shape() {
            if let (Some(target), false) = (&shape.target, shape.kind == RefKind::Many) {
                add(target, field.stored_name.clone(), name, false);
            }
        } else if let Some(extended) = &field.attrs.extended_ref {
            let many = crate::ast::copy_shape(field.ty).0 == RefKind::Many;
            if let (Some(target), false) = (&extended.value.to, many) {
                add(target, format!("{}._id", field.stored_name), name, true);
            }
        }
    }
    targets
        .into_iter()
        .map(|(key, target, references, extended)| {
            let paths = if references.is_empty() { extended } else { references };
            let (path, several) = match paths.as_slice() {
                [(one, _)] => (one.clone(), None),
                _ => (String::new(), Some(several_references(ident, &key, &paths))),
            };
            let several = several.map(|message| quote!(const SEVERAL: &'static str = #message;));
            quote! {
                #[automatically_derived]
                impl #impl_generics #private::ChildOf<#target> for #ident #ty_generics #where_clause {
                    const PARENT_FIELD: &'static str = #path;
                    #several
                }
            }
        })
        .collect()
}

/// Why a subset or counter of `target` over `child` must say `via`: the child's fields that
/// reference it, by their Rust names (what `via` takes).
fn several_references(child: &syn::Ident, target: &str, paths: &[(String, String)]) -> String {
    let target = target.replace(' ', "");
    let names: Vec<String> = paths.iter().map(|(_, name)| format!("`{name}`")).collect();
    let choices: Vec<String> = paths
        .iter()
        .map(|(_, name)| format!("`via = {name}`"))
        .collect();
    format!(
        "`{child}` holds {} references to `{target}` ({}): a `#[subset]` or `#[counter]` of `{target}` over `{child}` must say which one it follows, with {}",
        paths.len(),
        names.join(", "),
        choices.join(" or ")
    )
}

/// `.embedded("lines", <Lines as BoundedCollection>::__element_relations())` for every field
/// that may hold values with references or copies (one, an `Option` of one, a bounded array of
/// them, through aliases and generic arguments alike: the type system finds the relations the
/// derive cannot see), so the holder declares them under the field's path. Fields of known
/// scalars, relationship fields and fields stored through a helper hold none.
pub fn embedded_calls(cont: &Container) -> TokenStream {
    let private = private();
    cont.stored_fields()
        .filter(|field| {
            field.attrs.reference.is_none()
                && field.attrs.extended_ref.is_none()
                && field.attrs.subset.is_none()
                && field.attrs.counter.is_none()
                && field.attrs.flatten.is_none()
                && field.attrs.custom_serialize.is_none()
                && field.stored_type().is_none()
        })
        .filter_map(|field| {
            let ty = field.ty;
            let bounded = field.attrs.embed.as_ref().and_then(|e| e.value.max).is_some();
            if !crate::gen::checks::may_hold_relations(ty, bounded) {
                return None;
            }
            let stored = &field.stored_name;
            // spanned as the field's schema is, so a type without it is one error
            let relations = if bounded {
                quote_spanned!(ty.span()=> <#ty as #private::BoundedCollection>::__element_relations())
            } else {
                quote_spanned!(ty.span()=> <#ty as #private::BsonSchema>::__embedded_relations())
            };
            Some(quote!(.embedded(#stored, #relations)))
        })
        .collect()
}

/// `fn __embedded_relations()` of a `BsonSchema` struct: its references and copies, and those
/// of the values it embeds, relative to it (`None` when it has none).
pub fn embedded_relations_fn(cont: &Container) -> TokenStream {
    let private = private();
    if !matches!(cont.data, Data::Struct(_)) {
        return TokenStream::new();
    }
    let references = crate::gen::relations::reference_specs(cont);
    let copies = crate::gen::copies::copy_specs(cont);
    let embedded = embedded_calls(cont);
    let relations = cont
        .stored_fields()
        .any(|f| f.attrs.reference.is_some() || f.attrs.extended_ref.is_some());
    if !relations && embedded.is_empty() {
        return TokenStream::new();
    }
    quote! {
        fn __embedded_relations() -> ::core::option::Option<#private::CollectionSpec> {
            let relations = #private::CollectionSpec::new("", #private::bson::Document::new())
                #references
                #copies
                #embedded;
            relations.has_relations().then_some(relations)
        }
    }
}
