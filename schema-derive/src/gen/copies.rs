//! What copies generate: the extended-reference copy types (their field types taken from the
//! source's `FieldPath` impls), the hidden field list every collection root offers, the
//! copy and subset tables, and the `Subset` / `EmbeddedArray` constants.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use crate::ast::{copy_shape, field_key, unraw, Container, RefKind};
use crate::attr::OnDelete;
use crate::check::type_name;
use crate::gen::private;

use crate::ast::copy_type_name;

fn shape_tokens(kind: RefKind) -> TokenStream {
    let private = private();
    match kind {
        RefKind::One => quote!(#private::CopyShape::One),
        RefKind::Optional => quote!(#private::CopyShape::Optional),
        RefKind::Many => quote!(#private::CopyShape::Many),
    }
}

/// `const __FIELDS` of a struct's `BsonSchema` impl: its stored named fields (but `_id`), which
/// a copy type of another struct checks its `fields` against (a collection root's list, its
/// flattened fields included, as `fields` names them) and a query's `project = Row` its row
/// (an embedded struct's, flattened fields left out). Nothing for other types.
pub fn field_list(cont: &Container, derive: crate::ast::Derive) -> TokenStream {
    let private = private();
    if !matches!(cont.data, crate::ast::Data::Struct(_)) {
        return TokenStream::new();
    }
    let root = derive == crate::ast::Derive::Document;
    let (names, stored): (Vec<String>, Vec<&String>) = cont
        .stored_fields()
        .filter(|field| field.stored_name != "_id" && (root || field.attrs.flatten.is_none()))
        .filter_map(|field| Some((unraw(field.ident?), &field.stored_name)))
        .unzip();
    let id = cont
        .stored_fields()
        .find(|f| f.stored_name == "_id")
        .and_then(|f| f.ident)
        .map(unraw);
    let has_id = id.is_some();
    let id = id.unwrap_or_default();
    quote! {
        const __FIELDS: ::core::option::Option<#private::FieldList> =
            ::core::option::Option::Some(#private::FieldList {
                names: &[#(#names),*],
                stored: &[#(#stored),*],
                has_id: #has_id,
                id: #id,
            });
    }
}

/// Whether `ty` names no type with bounds on its parameters (a plain path, or std's containers of
/// such): a type whose well-formedness rustc checks again at the accessor's signature would be
/// reported a second time inside the macro, so those keep an accessor spanned at the type.
pub fn unbounded_type(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    if path.qself.is_some() {
        return false;
    }
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    match &last.arguments {
        syn::PathArguments::None => path.path.segments.iter().all(|s| s.arguments.is_none()),
        syn::PathArguments::AngleBracketed(args) => {
            const STD: &[&str] = &[
                "Option", "Vec", "VecDeque", "Box", "HashSet", "BTreeSet", "HashMap", "BTreeMap",
            ];
            STD.contains(&last.ident.to_string().as_str())
                && args.args.iter().all(|arg| match arg {
                    syn::GenericArgument::Type(inner) => unbounded_type(inner),
                    _ => false,
                })
        }
        syn::PathArguments::Parenthesized(_) => false,
    }
}

/// The copy types of the `#[extended_ref]` fields: emitted next to the struct (not inside the
/// derive's anonymous const), so the user names them in the field types.
pub fn copy_types(cont: &Container) -> TokenStream {
    let facade = crate::gen::facade();
    // the struct and its checked constants are outside the anonymous const: full paths
    let ms = private();
    let private = crate::gen::private_path();
    let private_use = crate::gen::private_use();
    let vis = &cont.original.vis;
    let mut out = TokenStream::new();
    for field in cont.stored_fields() {
        let Some(extended) = &field.attrs.extended_ref else {
            continue;
        };
        let extended = &extended.value;
        // without `sync` (an error), still emitted so that uses of the copy type compile
        let Some(source) = &extended.to else {
            continue;
        };
        let name = copy_type_name(cont, field);
        let span = extended
            .fields_lit
            .as_ref()
            .map_or_else(Span::call_site, |l| l.span());
        let source_span = source.span();
        let idents: Vec<Ident> = extended
            .fields
            .iter()
            .map(|f| Ident::new(f, span))
            .collect();
        let copied_names = &extended.fields;
        // Every item below reaches the source through the constants checked here, each of which
        // fails to evaluate when its check fails: the types naming a failed constant are error
        // types, about which rustc reports nothing more, so one mistake is one error. Each
        // checked constant is named once, in a hidden alias (`Checked<Source, { .. }>`), that
        // the items read: one anonymous constant for rustc to evaluate, not one per use.
        let source_alias = format_ident!("__{}_source_", name);
        let checked_source =
            quote_spanned!(source_span=> <#source_alias as #private::CheckedSource>);
        // named after the field: rustc's error says "evaluation of `LoanBook::__FIELD_titel`"
        let key_consts: Vec<Ident> = extended
            .fields
            .iter()
            .map(|f| format_ident!("__FIELD_{}", f))
            .collect();
        let field_aliases: Vec<Ident> = extended
            .fields
            .iter()
            .map(|f| format_ident!("__{}_field_{}", name, f))
            .collect();
        let field_checks = extended
            .fields
            .iter()
            .zip(&key_consts)
            .map(|(f, key_const)| {
                let key = field_key(f);
                let prefix = format!(
                    "`{}` has no stored field `{f}` to copy into `{name}` \
                 (`#[extended_ref(fields = ...)]` of `{}.{}`); the stored fields of `{}` are: ",
                    type_name(source),
                    cont.ident,
                    field.display_name(),
                    type_name(source),
                );
                // how to fix it: the source's stored name (a field renamed in the source is
                // renamed in `fields` too)
                let suffix = format!(
                    "; name the field in `fields` as `{}` names it now",
                    type_name(source)
                );
                quote_spanned! {span=>
                    #[doc(hidden)]
                    pub const #key_const: u64 =
                        #facade::__copied_field_key!(#checked_source::NAMES, #f, #prefix, #suffix, #key, {
                            ::core::panic!("{}", #private::message_text(&MESSAGE));
                        });
                }
            });
        let field_types: Vec<TokenStream> = field_aliases
            .iter()
            .map(|alias| quote_spanned!(span=> <#alias as #private::CheckedField>::Type))
            .collect();
        let field_values = field_aliases
            .iter()
            .map(|alias| quote_spanned!(span=> <#alias as #private::CheckedField>::field(source)));
        let stored_names = extended.fields.iter().map(
            |f| quote!(#private::stored_name(#checked_source::NAMES, #checked_source::STORED, #f)),
        );
        let checked_inner = quote_spanned!(source_span=> <#source_alias as #ms::CheckedSource>);
        let document_check =
            quote_spanned!(source_span=> #private::copy_from_document::<#source>());
        // every token at the source's, so that a failed evaluation points at `to = Source`
        let source_check = respan(
            quote!(#private::copy_source::<#source, { #name::__DOCUMENT }>()),
            source_span,
        );
        let n = extended.fields.len();
        let stored: Vec<TokenStream> = (0..n).map(|i| quote!(#name::__STORED[#i])).collect();
        let count = n + 1;
        let on_delete = match extended.on_delete.as_ref().map(|o| o.value) {
            Some(OnDelete::Unset) => "set to `null`",
            Some(OnDelete::Keep) | None => "kept with its last values",
        };
        let doc = format!(
            "Copy of `_id` and `{}` of a `{}`, held by `{}.{}` and kept by the `{}` sync strategy; \
             when the source is deleted, the copy is {on_delete}. Generated by `#[extended_ref]`.",
            extended.fields.join("`, `"),
            type_name(source),
            cont.ident,
            field.stored_name,
            extended
                .sync
                .map_or_else(String::new, |s| s.variant().to_lowercase())
        );
        let name_str = name.to_string();
        let locals: Vec<Ident> = (0..n).map(|i| format_ident!("__field{}", i)).collect();
        // `(Option<Id>, (Option<T0>, ... ()))`, its decoders and the pattern of its values
        let slots = field_types.iter().rev().fold(
            quote!(()),
            |tail, ty| quote!((::core::option::Option<#ty>, #tail)),
        );
        let slots = quote!((::core::option::Option<#checked_inner::Id>, #slots));
        let decoders = field_aliases.iter().rev().fold(
            quote!(()),
            |tail, alias| quote!((<#alias as #ms::CheckedField>::DECODER, #tail)),
        );
        let decoders = quote!((#checked_inner::ID_DECODER, #decoders));
        let values = locals
            .iter()
            .rev()
            .fold(quote!(()), |tail, local| quote!((#local, #tail)));
        let values = quote!((__id, #values));
        let id_key = field_key("id");
        let path_keys: Vec<u64> = extended.fields.iter().map(|f| field_key(f)).collect();
        let path_positions: Vec<usize> = (0..n).collect();
        let source_checked =
            quote_spanned!(source_span=> #private::Checked<#source, { #name::__SOURCE }>);
        let fields_checked = key_consts.iter().map(
            |key_const| quote_spanned!(span=> #private::Checked<#source, { #name::#key_const }>),
        );
        out.extend(quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            type #source_alias = #source_checked;
            #(
                #[doc(hidden)]
                #[allow(non_camel_case_types)]
                type #field_aliases = #fields_checked;
            )*

            #[doc = #doc]
            #[derive(Debug, Clone, PartialEq)]
            #vis struct #name {
                /// The `_id` of the source document.
                pub id: #checked_source::Id,
                #(
                    #[allow(missing_docs)]
                    pub #idents: #field_types,
                )*
            }

            // outside the anonymous const, so that rustc names a failed check `LoanBook::__...`
            #[doc(hidden)]
            #[allow(non_upper_case_globals, clippy::all)]
            impl #name {
                #[doc(hidden)]
                pub const __DOCUMENT: u64 = #document_check;
                #[doc(hidden)]
                pub const __SOURCE: u64 = #source_check;
                #( #field_checks )*
                /// Stored names of the copied fields, as in the source.
                #[doc(hidden)]
                pub const __STORED: [&'static str; #n] = [#(#stored_names),*];
            }

            #[doc(hidden)]
            #[allow(clippy::all)]
            const _: () = {
                #private_use
                #[automatically_derived]
                impl #ms::FieldPath<#id_key> for #name {
                    type Form = (#checked_inner::Id,);
                    const STORED: &'static str = "_id";
                    const ENCODER: #ms::Encoder<#checked_inner::Id> = #checked_inner::ID_ENCODER;
                    const DECODER: #ms::Decoder<#checked_inner::Id> = #checked_inner::ID_DECODER;
                }
                #(
                    #facade::__copied_field_path!(#name, #path_keys, #field_aliases, #path_positions);
                )*
                #[automatically_derived]
                impl #ms::Ordered for #name {}

                #[automatically_derived]
                impl ::core::convert::From<&#source> for #name {
                    #[inline]
                    fn from(source: &#source) -> Self {
                        #name {
                            id: ::core::clone::Clone::clone(#checked_inner::source_id(source)),
                            #( #idents: ::core::clone::Clone::clone(#field_values), )*
                        }
                    }
                }

                #[automatically_derived]
                impl #ms::serde::Serialize for #name {
                    fn serialize<S: #ms::serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                        use #ms::serde::ser::SerializeStruct as _;
                        let mut state = serializer.serialize_struct(#name_str, #count)?;
                        // each value as its source field is stored: through its helper
                        state.serialize_field("_id", &#ms::Encoded(&self.id, #checked_inner::ID_ENCODER))?;
                        #( state.serialize_field(#stored, &#ms::Encoded(&self.#idents, <#field_aliases as #ms::CheckedField>::ENCODER))?; )*
                        state.end()
                    }
                }

                #[automatically_derived]
                impl<'de> #ms::serde::Deserialize<'de> for #name {
                    fn deserialize<D: #ms::serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<Self, D::Error> {
                        const __FIELDS: [&str; #count] = ["_id", #(#stored),*];
                        // one visitor for every copy type, over the slots of its fields
                        #ms::deserialize_copy::<D, #slots, Self>(
                            deserializer,
                            #name_str,
                            &__FIELDS,
                            #decoders,
                            |#values| #name { id: __id, #( #idents: #locals, )* },
                        )
                    }
                }

                #[automatically_derived]
                impl #ms::BsonSchema for #name {
                    #[inline]
                    fn bson_schema() -> #ms::bson::Document {
                        #ms::copy_schema(#checked_inner::source_schema(), &#name::__STORED)
                    }
                    const __FIELDS: ::core::option::Option<#ms::FieldList> =
                        ::core::option::Option::Some(#ms::FieldList {
                            names: &[#(#copied_names),*],
                            stored: &#name::__STORED,
                            has_id: true,
                            id: "id",
                        });
                }
            };
        });
    }
    out
}

/// `.copy(...)`, `.subset(...)` and `.embed(...)` calls of `collection_spec`.
pub fn copy_specs(cont: &Container) -> TokenStream {
    let private = private();
    let mut out = TokenStream::new();
    for field in cont.stored_fields() {
        let path = &field.stored_name;
        if let Some(embed) = &field.attrs.embed {
            if let Some(max) = embed.value.max {
                let cap = embed.value.cap;
                let element = type_name(copy_shape(field.ty).1);
                out.extend(quote! {
                    .embed(#private::EmbedSpec::new(#path, #max, #cap, #element))
                });
            }
        }
        if let Some(extended) = &field.attrs.extended_ref {
            let extended = &extended.value;
            let (Some(source), Some(sync)) = (&extended.to, extended.sync) else {
                continue;
            };
            let copy_type = copy_type_name(cont, field);
            let source_alias = format_ident!("__{}_source_", copy_type);
            let sync = format_ident!("{}", sync.variant());
            let shape = shape_tokens(copy_shape(field.ty).0);
            let source_name = type_name(source);
            let on_delete = match extended.on_delete.as_ref().map(|o| o.value) {
                Some(OnDelete::Unset) => quote!(.on_delete(#private::OnDelete::Unset)),
                Some(OnDelete::Keep) | None => TokenStream::new(),
            };
            let order = (copy_shape(field.ty).0 != RefKind::Many)
                .then(|| crate::order::sort_key(cont, &format!("{path}._id")))
                .flatten()
                .map(|(key, direction, unique)| quote!(.order(#key, #direction, #unique)));
            out.extend(quote! {
                .copy(#private::CopySpec::new(
                    #path,
                    <#source_alias as #private::CheckedSource>::COLLECTION,
                    #source_name,
                    &#copy_type::__STORED,
                    #private::SyncStrategy::#sync,
                    #shape,
                )#on_delete #order)
            });
        }
        if let Some(subset) = &field.attrs.subset {
            let subset = &subset.value;
            let (Some(child), Some(_), Some(_), Some(ident)) =
                (&subset.of, subset.max, &subset.sort, field.ident)
            else {
                continue;
            };
            let name = format_ident!("{}", unraw(ident).to_uppercase());
            let child_name = type_name(child);
            out.extend(quote! {
                .subset(Self::#name.spec(#child_name))
            });
        }
        // a counter is a subset without previews: the schema describes it as one
        if let (Some(counter), Some(ident)) = (&field.attrs.counter, field.ident) {
            let Some(child) = &counter.value.of else {
                continue;
            };
            let name = format_ident!("{}", unraw(ident).to_uppercase());
            let child_name = type_name(child);
            out.extend(quote! {
                .subset(Self::#name.spec(#child_name))
            });
        }
    }
    out
}

/// The check of a `#[counter]` field's type, spanned at it: an integer the library `$inc`s; an
/// `i64` unless `#[schema(maximum = N)]` bounds it (the children it counts are unbounded, so an
/// `i32` could overflow).
fn counter_type(field: &crate::ast::Field) -> TokenStream {
    let private = private();
    let ty = field.ty;
    let bounded = field
        .attrs
        .constraints
        .iter()
        .any(|c| c.value.keyword == "maximum");
    if bounded {
        quote_spanned!(ty.span()=> #private::require_counter::<#ty>())
    } else {
        quote_spanned!(ty.span()=> #private::require_unbounded_count::<#ty>())
    }
}

fn count_stored(cont: &Container, count: Option<&Ident>) -> Option<String> {
    let wanted = unraw(count?);
    cont.stored_fields()
        .find(|f| f.ident.is_some_and(|i| unraw(i) == wanted))
        .map(|f| f.stored_name.clone())
}

/// The type of a subset's count field.
fn count_field<'a>(cont: &'a Container, count: Option<&Ident>) -> Option<&'a syn::Type> {
    let wanted = unraw(count?);
    cont.stored_fields()
        .find(|f| f.ident.is_some_and(|i| unraw(i) == wanted))
        .map(|f| f.ty)
}

/// The stored names of a `#[bucket]`'s fields, and its bound and entry type.
struct BucketFields<'a> {
    parent: String,
    entries: String,
    count: String,
    key: String,
    first: String,
    last: String,
    max: u64,
    element: &'a syn::Type,
    count_ty: &'a syn::Type,
}

fn bucket_fields<'a>(cont: &'a Container) -> Option<BucketFields<'a>> {
    let b = &cont.attrs.bucket.as_ref()?.value;
    let field = |ident: &Option<Ident>| crate::check::bucket_field(cont, ident.as_ref()?);
    let entries = field(&b.entries)?;
    let count = field(&b.count)?;
    Some(BucketFields {
        parent: field(&b.parent)?.stored_name.clone(),
        entries: entries.stored_name.clone(),
        count: count.stored_name.clone(),
        key: b.key.clone()?,
        first: field(&b.first)?.stored_name.clone(),
        last: field(&b.last)?.stored_name.clone(),
        max: entries.attrs.embed.as_ref()?.value.max?,
        element: copy_shape(entries.ty).1,
        count_ty: count.ty,
    })
}

/// The indexes of a `#[bucket]`: finding a parent's open bucket, and reading in key order.
pub fn bucket_indexes(cont: &Container) -> TokenStream {
    let private = private();
    let Some(b) = bucket_fields(cont) else {
        return TokenStream::new();
    };
    let (parent, count, last) = (&b.parent, &b.count, &b.last);
    quote! {
        .require_index(#private::IndexSpec::new({
            let mut keys = #private::bson::Document::new();
            keys.insert(#parent, 1_i32);
            keys.insert(#count, 1_i32);
            keys
        }).reason(#private::IndexReason::Bucket { purpose: ::std::string::String::from("the open bucket of a parent") }))
        .require_index(#private::IndexSpec::new({
            let mut keys = #private::bson::Document::new();
            keys.insert(#parent, 1_i32);
            keys.insert(#last, 1_i32);
            keys
        }).reason(#private::IndexReason::Bucket { purpose: ::std::string::String::from("a parent's entries in key order") }))
    }
}

/// `Subset`, `EmbeddedArray` and `Bucket` constants, inside the struct's inherent impl.
pub fn consts(cont: &Container) -> TokenStream {
    let private = private();
    let mut out = TokenStream::new();
    if let Some(b) = bucket_fields(cont) {
        let BucketFields {
            parent,
            entries,
            count,
            key,
            first,
            last,
            max,
            element,
            count_ty,
        } = b;
        let doc = format!(
            "The `#[bucket]` of this collection: `append` an entry to a parent's open bucket (at most {max} entries each), read a parent's `entries` in `{key}` order."
        );
        // spanned like the check in `checks`, so a count that is no integer is one error
        let count_type = quote_spanned!(count_ty.span()=> #private::require_counter::<#count_ty>());
        out.extend(quote! {
            #[doc = #doc]
            pub const BUCKET: #private::Bucket<Self, #element> =
                #private::Bucket::new(#parent, #entries, #max, #count, #key, #first, #last)
                    .count_type(#count_type);
        });
    }
    for field in cont.stored_fields() {
        let Some(ident) = field.ident else { continue };
        let name = format_ident!("{}", unraw(ident).to_uppercase());
        let path = &field.stored_name;
        if let Some(subset) = &field.attrs.subset {
            let subset = &subset.value;
            // a missing `max` or `sort` is an error of the attribute: the constant is still
            // emitted (with placeholders) next to it, so that its uses compile
            let Some(child) = &subset.of else {
                continue;
            };
            let max = subset.max.unwrap_or(1);
            let parent_field = parent_field(subset, child, &quote!(Self));
            let (sort, direction) = subset.sort.clone().unwrap_or_else(|| (String::new(), -1));
            let preview = copy_shape(field.ty).1;
            let count = match count_stored(cont, subset.count.as_ref()) {
                Some(stored) => quote!(::core::option::Option::Some(#stored)),
                None => quote!(::core::option::Option::None),
            };
            // spanned like the check in `checks`, so a count that is no integer is one error
            let count_type = match (count_field(cont, subset.count.as_ref()), &subset.count) {
                (Some(ty), Some(count)) => {
                    let call = quote_spanned!(count.span()=> #private::require_counter::<#ty>());
                    quote!(.count_type(#call))
                }
                _ => TokenStream::new(),
            };
            let doc = format!(
                "The `#[subset]` `{path}`: add, update and delete children with their previews and count kept here (`add`, `update`, `delete`), `rebuild` from the children."
            );
            // spanned at `of = C`: a child without a reference to this type (or with two) is one
            // error there; the preview built `From<&C>` likewise at the preview type
            let parent = respan(
                quote!(.parent(#parent_field)),
                subset
                    .via
                    .as_ref()
                    .map_or_else(|| child.span(), Ident::span),
            );
            let preview_fn = respan(
                quote!(.preview(#private::subset_preview::<#child, #preview>)),
                preview.span(),
            );
            let filter = subset.filter.as_ref().map(|f| {
                let json = &f.json;
                quote!(.filter(#json))
            });
            let strategy = subset.sync.map(|sync| {
                let sync = format_ident!("{}", sync.variant());
                quote!(.strategy(#private::SyncStrategy::#sync))
            });
            out.extend(quote! {
                #[doc = #doc]
                pub const #name: #private::Subset<Self, #child, #preview> =
                    #private::Subset::new(#path, #max, #sort, #direction, #count)#count_type #parent #preview_fn #filter #strategy;
            });
        }
        if let Some(counter) = &field.attrs.counter {
            let counter = &counter.value;
            let Some(child) = &counter.of else {
                continue;
            };
            let count_type = counter_type(field);
            let parent_field = parent_field(counter, child, &quote!(Self));
            let parent = respan(
                quote!(.parent(#parent_field)),
                counter
                    .via
                    .as_ref()
                    .map_or_else(|| child.span(), Ident::span),
            );
            let filter = counter.filter.as_ref().map(|f| {
                let json = &f.json;
                quote!(.filter(#json))
            });
            let strategy = counter.sync.map(|sync| {
                let sync = format_ident!("{}", sync.variant());
                quote!(.strategy(#private::SyncStrategy::#sync))
            });
            let doc = format!(
                "The `#[counter]` `{path}`: the number of `{}` children{}, kept by `add` and `delete` (the child and the count in one transaction), recounted by `rebuild` and `Schema::reconcile`.",
                type_name(child),
                if counter.filter.is_some() { " matching its filter" } else { "" }
            );
            out.extend(quote! {
                #[doc = #doc]
                pub const #name: #private::Counter<Self, #child> =
                    #private::Counter::new(#path).count_type(#count_type) #parent #filter #strategy;
            });
        }
        if let Some(embed) = &field.attrs.embed {
            // without `max` (an error), emitted with a placeholder bound next to the error
            let (max, (RefKind::Many, element)) =
                (embed.value.max.unwrap_or(1), copy_shape(field.ty))
            else {
                continue;
            };
            let cap = embed.value.cap;
            let doc = format!(
                "The embedded array `{path}` (at most {max}){}: `push` helpers that respect the bound.",
                if cap { ", capped: pushes keep the newest items" } else { "" }
            );
            out.extend(quote! {
                #[doc = #doc]
                pub const #name: #private::EmbeddedArray<Self, #element> = #private::EmbeddedArray::new(#path, #max, #cap);
            });
        }
    }
    out
}

/// Type-level checks: a subset's (or counter's) child is a collection root holding one reference
/// to this type (or the one `via` names) and the fields its filter compares; a count is a
/// number (a counter's an `i64` unless bounded); a bucket's count is a number.
pub fn checks(cont: &Container) -> TokenStream {
    let private = private();
    let bucket = bucket_fields(cont).map(|b| {
        let ty = b.count_ty;
        quote_spanned!(ty.span()=> #private::require_counter::<#ty>();)
    });
    // the source of a copy kept in sync is no time series collection: at `to = Source`
    let sources = cont.stored_fields().filter_map(|field| {
        let extended = &field.attrs.extended_ref.as_ref()?.value;
        let source = extended.to.as_ref()?;
        if extended.sync.is_none_or(|s| s == crate::attr::Sync::Frozen) {
            return None;
        }
        Some(respan(
            quote!(#private::require_copy_source::<#source>();),
            source.span(),
        ))
    });
    bucket
        .into_iter()
        .chain(sources)
        .chain(cont.stored_fields().filter_map(|field| {
            // a subset, or a counter (a subset without previews, whose field is the count)
            let (subset, counted) = match (&field.attrs.subset, &field.attrs.counter) {
                (Some(subset), _) => (&subset.value, false),
                (None, Some(counter)) => (&counter.value, true),
                (None, None) => return None,
            };
            let child = subset.of.as_ref()?;
            let count = if counted {
                let check = counter_type(field);
                Some(quote!(#check;))
            } else {
                subset.count.as_ref().and_then(|count| {
                    let wanted = unraw(count);
                    let counter = cont
                        .stored_fields()
                        .find(|f| f.ident.is_some_and(|i| unraw(i) == wanted))?;
                    let ty = counter.ty;
                    Some(quote_spanned!(count.span()=> #private::require_counter::<#ty>();))
                })
            };
            // every field the filter compares is stored by the child (a constant, evaluated
            // once; only for non-generic types, whose constants cannot name the parameters)
            let filter = subset
                .filter
                .as_ref()
                .filter(|_| !cont.is_generic())
                .map(|filter| {
                    filter
                        .fields
                        .iter()
                        .map(|field| {
                            let prefix = format!(
                                "`#[{}(filter)]` compares `{field}`, which `{}` does not store: name the child's field as it is stored (after serde's `rename` / `rename_all`), one of ",
                                if counted { "counter" } else { "subset" },
                                type_name(child)
                            );
                            respan(stored_by_child(child, field, &prefix), filter.span)
                        })
                        .collect::<TokenStream>()
                });
            // the sort key is a stored field of the child (a top-level one: a dotted key is
            // checked by `Schema::build`, against the composed validator)
            let sort = subset
                .sort
                .as_ref()
                .zip(subset.sort_tokens.as_ref())
                .filter(|((field, _), _)| !counted && !cont.is_generic() && !field.contains('.'))
                .map(|((field, _), tokens)| {
                    let prefix = format!(
                        "`#[subset(sort)]` names `{field}`, which `{}` does not store: name the child's field as it is stored (after serde's `rename` / `rename_all`), one of ",
                        type_name(child)
                    );
                    let span = tokens
                        .clone()
                        .into_iter()
                        .next()
                        .map_or_else(|| child.span(), |t| t.span());
                    respan(stored_by_child(child, field, &prefix), span)
                });
            // (the preview's `From<&C>` is checked where the subset's constant names it)
            // the child's one reference to this type, as a free constant: `cargo check`
            // evaluates it (the subset's own constant is evaluated only by a build)
            let ident = cont.ident;
            let parent = (!cont.is_generic()).then(|| {
                let field = parent_field(subset, child, &quote!(#ident));
                respan(
                    quote!(const _: &str = #field;),
                    subset.via.as_ref().map_or_else(|| child.span(), Ident::span),
                )
            });
            // a time series collection is no child (its writes are in no transaction and no
            // change stream): one error, at `of = Child`
            let kind = respan(
                quote!(#private::require_subset_child::<#child>();),
                child.span(),
            );
            Some(quote! {
                #private::require_document::<#child>();
                #kind
                #count
                #filter
                #sort
                #parent
            })
        }))
        .collect()
}

/// A constant `cargo check` evaluates: `field` is a top-level stored name of `child`, else an
/// error of `prefix` followed by the names it stores.
fn stored_by_child(child: &syn::Type, field: &str, prefix: &str) -> TokenStream {
    let private = private();
    quote! {
        const _: () = {
            const NAMES: &[&str] = <#child as #private::Fields>::STORED;
            const LEN: usize = #private::list_message_len(#prefix, NAMES, "");
            const MESSAGE: [u8; LEN] = #private::list_message(#prefix, NAMES, "");
            if #private::position(NAMES, #field).is_none() {
                ::core::panic!("{}", #private::message_text(&MESSAGE));
            }
        };
    }
}

/// The child's stored field holding the parent's `_id`: the one named by `via`, or the child's
/// only reference to the parent.
fn parent_field(
    subset: &crate::attr::SubsetAttr,
    child: &syn::Type,
    parent: &TokenStream,
) -> TokenStream {
    let private = private();
    match &subset.via {
        Some(via) => {
            let key = crate::ast::field_key(&unraw(via));
            quote!(#private::via_parent_field::<#child, #parent, #key>())
        }
        None => quote!(#private::child_parent_field::<#child, #parent>()),
    }
}

/// `tokens` with every token spanned at `span`, so that an error of rustc about the whole
/// expression (a bound, a constant's evaluation) points at the user's token.
pub(crate) fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(group) = &tree {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = proc_macro2::TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}
