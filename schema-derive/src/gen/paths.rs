//! Typed field paths: the hidden `FieldPath<KEY>` impls of every stored named field (read by
//! `field!` and the declared queries), the `Ordered` marker of a derived type, and the field
//! list of a `BsonSchema` struct (read by a query's `project = Row`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Type;

use crate::ast::Derive;
use crate::ast::{field_key, unraw, Container, Data, Field, Repr, Style};
use crate::gen::private;

/// How a field's values are written, when a serde helper writes them: a function that calls the
/// helper with a driver serializer. `None` for fields serialized by their own type (and, in a
/// generic struct, where a nested function could not name the type's parameters).
pub fn encoder(cont: &Container, field: &Field) -> Option<TokenStream> {
    let private = private();
    if field.attrs.stored_as.is_some() {
        return None;
    }
    let Some((option, helper)) = field.attrs.custom_serialize.as_ref() else {
        return native(field.ty).map(|f| quote!(#private::#f));
    };
    if cont.is_generic() || helper.is_empty() {
        return None;
    }
    let path: syn::ExprPath = syn::parse_str(helper).ok()?;
    let call = if option.to_string() == "with" {
        quote!(#path::serialize)
    } else {
        quote!(#path)
    };
    let ty = field.ty;
    // the helper is called with the serializer the library picks (bson 2 and 3 differ), through
    // a wrapper whose `Serialize` is the helper, as serde's own `with` does
    Some(quote! {
        #private::Encoder::Custom({
            fn __encode(value: &#ty) -> ::core::result::Result<#private::bson::Bson, #private::bson_compat::SerError> {
                struct __With<'__a>(&'__a #ty);
                impl #private::serde::Serialize for __With<'_> {
                    fn serialize<__S: #private::serde::Serializer>(&self, serializer: __S) -> ::core::result::Result<__S::Ok, __S::Error> {
                        #call(self.0, serializer)
                    }
                }
                #private::stored_value(&__With(value))
            }
            __encode
        })
    })
}

/// How a field's stored values are read, when a serde helper reads them: a function that calls
/// the helper with a driver deserializer of the stored BSON value. `None` for fields read by
/// their own type (and in a generic struct, as for [`encoder`]).
pub fn decoder(cont: &Container, field: &Field) -> Option<TokenStream> {
    let private = private();
    if field.attrs.stored_as.is_some() || cont.is_generic() {
        return None;
    }
    let helper = field.attrs.custom_deserialize.as_ref()?;
    let path: syn::ExprPath = syn::parse_str(helper).ok()?;
    let ty = field.ty;
    Some(quote! {
        #private::Decoder::Custom({
            fn __decode(value: #private::bson::Bson) -> ::core::result::Result<#ty, #private::bson_compat::DeError> {
                struct __With(#ty);
                impl<'__de> #private::serde::Deserialize<'__de> for __With {
                    fn deserialize<__D: #private::serde::Deserializer<'__de>>(deserializer: __D) -> ::core::result::Result<Self, __D::Error> {
                        #path(deserializer).map(__With)
                    }
                }
                #private::stored_read::<__With>(value).map(|with| with.0)
            }
            __decode
        })
    })
}

/// The native encoder of a BSON type whose stored form is the value itself (its `Encoder`
/// constant in the facade's hidden module).
fn native(ty: &Type) -> Option<syn::Ident> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if !last.arguments.is_empty() || path.qself.is_some() {
        return None;
    }
    let name = match last.ident.to_string().as_str() {
        "ObjectId" => "NATIVE_OBJECT_ID",
        "DateTime" => "NATIVE_DATE_TIME",
        "i32" => "NATIVE_I32",
        "i64" => "NATIVE_I64",
        "f64" => "NATIVE_F64",
        "bool" => "NATIVE_BOOL",
        "Decimal128" => "NATIVE_DECIMAL128",
        _ => return None,
    };
    Some(syn::Ident::new(name, proc_macro2::Span::call_site()))
}

/// Whether `ty` (or the `T` of an `Option<T>`) is one of std's bounded arrays or sets
/// (`Some(true)`: `Vec`, `VecDeque`, `HashSet`, `BTreeSet`, a fixed-size array) or maps
/// (`Some(false)`), by its name; `None` for any other type (an alias, `Box<[T]>`), whose
/// `BoundedCollection` impl says.
fn known_collection(ty: &Type) -> Option<bool> {
    let ty = crate::ast::generic_arg(ty, &["Option"]).unwrap_or(ty);
    if matches!(ty, Type::Array(_)) {
        return Some(true);
    }
    let Type::Path(path) = ty else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    match path.path.segments.last()?.ident.to_string().as_str() {
        "Vec" | "VecDeque" | "HashSet" | "BTreeSet" => Some(true),
        "HashMap" | "BTreeMap" => Some(false),
        _ => None,
    }
}

/// `impl FieldPath<KEY>` for every stored named field (a collection root's with the field's
/// accessor), and `Ordered` for an embeddable type.
pub fn field_paths(cont: &Container, derive: Derive, fallback: bool) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    // a generic struct's field list is its `BsonSchema` impl's, which bounds its parameters:
    // its impls read it where the struct is one
    let mut generics = cont.original.generics.clone();
    if cont.is_generic() {
        generics
            .make_where_clause()
            .predicates
            .push(syn::parse_quote!(Self: #private::StoredNames));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let mut out = TokenStream::new();
    // the fields of an enum's variants sit beside its tag only when internally tagged or
    // untagged (external and adjacent tags nest them under the variant's or the content's name)
    let fields: Vec<&Field> = match (&cont.data, cont.repr()) {
        (Data::Struct(_), _) | (Data::Enum(_), Repr::Internal(_) | Repr::Untagged) => {
            cont.stored_fields().filter(|f| f.ident.is_some()).collect()
        }
        _ => Vec::new(),
    };
    // a collection root struct's fields are the sources of other structs' copies: their
    // `FieldPath` impls carry the accessor `From<&Source>` reads
    let root = derive == Derive::Document && matches!(cont.data, Data::Struct(_));
    // one stream for all the impls, each field's parts interpolated into it (every stream
    // spliced into another is a round trip to rustc for the derive)
    let mut keys = Vec::with_capacity(fields.len());
    let mut forms = Vec::with_capacity(fields.len());
    let mut stored_names = Vec::with_capacity(fields.len());
    let mut items = Vec::with_capacity(fields.len());
    for field in &fields {
        let member = field.ident.expect("named");
        let key = field_key(&unraw(member));
        let ty = field.ty;
        let stored_ty = field.stored_type();
        // a struct's stored names are its field list's (the trait's default `STORED`); a
        // flattened value's fields are stored at this level: its segment is empty, and
        // `field!(T, meta.revision)` is `revision`
        let stored = if field.attrs.flatten.is_some() {
            Some(quote!(
                const STORED: &'static str = "";
            ))
        } else if matches!(cont.data, Data::Struct(_)) {
            None
        } else {
            let name = &field.stored_name;
            Some(quote!(const STORED: &'static str = #name;))
        };
        // a BSON scalar's form carries its native encoder; a serde helper's encoder is the
        // impl's own
        let native = (field.attrs.stored_as.is_none() && field.attrs.custom_serialize.is_none())
            .then(|| native(ty))
            .flatten();
        let encoder = native
            .is_none()
            .then(|| encoder(cont, field))
            .flatten()
            .map(|e| quote!(const ENCODER: #private::Encoder<#ty> = #e;));
        let decoder =
            decoder(cont, field).map(|d| quote!(const DECODER: #private::Decoder<#ty> = #d;));
        let cap = field
            .attrs
            .embed
            .as_ref()
            .filter(|e| e.value.cap)
            .and_then(|e| e.value.max)
            .map(|max| {
                let max = u32::try_from(max).unwrap_or(u32::MAX);
                quote!(const CAP: ::core::option::Option<u32> = ::core::option::Option::Some(#max);)
            });
        // an array or a set: a declared query's `eq` compares one element
        // (in a generic struct, from the type's name: its impl has no bound that would let
        // the collection say it; next to the derive's errors likewise, where a bound may be on
        // no collection at all)
        // (next to the derive's errors, a sequence type whose bound is the error counts too, so
        // that the callers of `eq` on it are not one more error each)
        let unbounded_sequence = fallback
            && (crate::ast::generic_arg(ty, &["Option"]).map_or(
                crate::ast::copy_shape(ty).0 == crate::ast::RefKind::Many,
                |inner| crate::ast::copy_shape(inner).0 == crate::ast::RefKind::Many,
            ) || matches!(ty, syn::Type::Array(_)));
        let bound = crate::gen::json_schema::collection_bound(field)
            .map(|_| ())
            .or(unbounded_sequence.then_some(()));
        // a bounded collection of std's, stored as itself: an array's or a set's form says it
        // is one, a map's is the default (no `IS_ARRAY` in the impl either way)
        let known = bound
            .and(stored_ty.as_ref().map_or(Some(()), |_| None))
            .filter(|()| !cont.is_generic() && !fallback)
            .and_then(|()| known_collection(ty));
        let form = match (&native, &stored_ty) {
            (Some(_), _) => quote!(#private::Native<#ty>),
            (None, Some(stored)) => quote!((#ty, #stored)),
            (None, None) if known == Some(true) => quote!(#private::Sequence<#ty>),
            (None, None) => quote!((#ty,)),
        };
        let is_array = bound.filter(|()| known.is_none()).map(|()| {
            if cont.is_generic() || fallback {
                let sequence = !crate::serde_helpers::type_last_name(ty)
                    .is_some_and(|name| name.ends_with("Map"));
                quote!(const IS_ARRAY: bool = #sequence;)
            } else {
                quote!(const IS_ARRAY: bool = <#ty as #private::BoundedCollection>::__IS_SEQUENCE;)
            }
        });
        // an `Option`: a declared query's range takes the values inside it
        let is_option = crate::ast::generic_arg(ty, &["Option"]).is_some().then(|| {
            quote!(
                const IS_OPTION: bool = true;
            )
        });
        // a type with bounds on its parameters keeps its accessor spanned at the type, as the
        // struct's own report of an ill-formed type is, which rustc then reports once
        // (not `_id`'s: a copy reads the source's id through `Identified`, and `fields` cannot
        // name it)
        let accessor = (root && field.stored_name != "_id").then(|| {
            if cont.is_generic() || !crate::gen::copies::unbounded_type(ty) {
                quote_spanned! {ty.span()=>
                    #[inline]
                    fn field(&self) -> &#ty {
                        &self.#member
                    }
                }
            } else {
                quote! {
                    #[inline]
                    fn field(&self) -> &#ty {
                        &self.#member
                    }
                }
            }
        });
        keys.push(key);
        forms.push(form);
        stored_names.push(stored);
        items.push([encoder, decoder, cap, is_array, is_option, accessor]);
    }
    // the impls written out rather than through a `macro_rules!` call: rustc expands the
    // call into the same impl, and matching it costs more than the tokens it saves
    // (`KIND=plain COUNT=instructions benches/compile-time.sh 100`: 1.3% fewer
    // instructions for the derive's whole rebuild); no `#[automatically_derived]`: no lint
    // reads it on a hidden trait's impl, and it is a thousand attributes in a hundred models
    out.extend(quote! {
        #(
            impl #impl_generics #private::FieldPath<#keys> for #ident #ty_generics #where_clause {
                type Form = #forms;
                #stored_names
                #(#items)*
            }
        )*
    });
    // a collection root is never a stored value of another document (rule 3), so never a sort
    // key's or a range's type: only embeddable types need the marker
    if derive == Derive::BsonSchema && ordered(cont) {
        // an enum whose stored names do not sort in declaration order: an index on it serves
        // equalities, a declared query's range or sort on it is refused
        let text_order = text_order_differs(cont).then(|| {
            quote!(
                const __TEXT_ORDER_DIFFERS: bool = true;
            )
        });
        out.extend(quote! {
            #[automatically_derived]
            impl #impl_generics #private::Ordered for #ident #ty_generics #where_clause {
                #text_order
            }
        });
    }
    out
}

/// Whether a derived type's stored form orders like its values (or has no order to betray): a
/// struct or an enum does; a newtype or a `stored_as` type as the type it stores, unless that is
/// text that sorts unlike the value (a decimal, a chrono or time date). A tuple struct of two
/// or more fields does not: serde stores it as an array, which mongod sorts by its smallest
/// (ascending) or largest (descending) element and whose range conditions match any element.
fn ordered(cont: &Container) -> bool {
    let inner: Option<&Type> = match &cont.data {
        Data::Tuple(_) => return false,
        Data::Transparent(field) => Some(field.ty),
        Data::StoredAs => cont.attrs.stored_as.as_ref().map(|s| &s.value),
        _ => None,
    };
    inner.is_none_or(|ty| !misordered(ty))
}

/// A unit-only enum stored as its variants' names, which do not sort as text in declaration
/// order: an index on it serves equalities, but a range or a sort compares the text, not the
/// order of the Rust values (a derived `Ord`).
pub fn text_order_differs(cont: &Container) -> bool {
    let Data::Enum(variants) = &cont.data else {
        return false;
    };
    if cont.repr() != Repr::External || !variants.iter().all(|v| matches!(v.style, Style::Unit)) {
        return false;
    }
    let names: Vec<&str> = variants
        .iter()
        .filter(|v| v.is_stored())
        .map(|v| v.stored_name.as_str())
        .collect();
    !names.windows(2).all(|w| w[0] < w[1])
}

/// Types serde stores as text that does not sort like the value.
pub fn misordered(ty: &Type) -> bool {
    let Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let name = last.ident.to_string();
    match name.as_str() {
        "Decimal" | "NaiveDateTime" | "NaiveTime" | "OffsetDateTime" | "PrimitiveDateTime"
        | "Rfc3339UtcString" => true,
        // chrono's `DateTime<Tz>`; bson's `DateTime` has no parameter
        "DateTime" => !last.arguments.is_empty(),
        _ => false,
    }
}
