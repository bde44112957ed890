//! Declared queries (`#[query(...)]`): the `QuerySpec` each adds to the collection's spec, the
//! typed function that runs it, and the compile-time checks of its fields.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::Ident;

use crate::ast::{field_key, unraw, Container};
use crate::attr::{KeyField, KeyKind, Query};
use crate::check::{resolve_field, rust_field};
use crate::ctxt::Ctxt;
use crate::gen::private;

fn stored(cont: &Container, field: &KeyField) -> String {
    // errors were reported by `check_queries`
    let cx = Ctxt::new();
    let path = resolve_field(&cx, cont, field);
    let _ = cx.check();
    path
}

/// The stored path of `field` in generated code: computed by rustc for a dotted Rust path.
fn stored_tokens(cont: &Container, field: &KeyField) -> TokenStream {
    match typed(cont, field) {
        Some(typed) => typed.stored,
        None => {
            let path = stored(cont, field);
            quote!(#path)
        }
    }
}

/// The span of a field as written (a name, a dotted path, a quoted path).
pub fn key_span(field: &KeyField) -> Span {
    span_of(field)
}

fn span_of(field: &KeyField) -> Span {
    match field {
        KeyField::Rust(ident) => ident.span(),
        // the whole path where the compiler can join spans (nightly), else its last segment:
        // the first is checked by the derive itself (a misspelt one is its own error, with the
        // nearest name), so a later one is what rustc finds missing, and the field whose type
        // a range, sort or argument is checked against
        KeyField::Nested(idents) => {
            let last = idents.last().expect("a dotted path has segments").span();
            idents[0].span().join(last).unwrap_or(last)
        }
        KeyField::Path(lit) => lit.span(),
    }
}

/// A declared query's field, typed: the struct that holds its last segment and that segment's
/// `FieldPath` key, and its stored path. Every form (a Rust name, a dotted Rust path, a quoted
/// stored path) resolves to one, so every argument has the field's type and is encoded through
/// the field's serde path.
struct Typed {
    /// The type whose `FieldPath<key>` impl is the field's.
    holder: TokenStream,
    /// The key: a literal, or a constant block looking a stored name up.
    key: TokenStream,
    /// The stored path: a literal, or a constant block joining the segments' stored names.
    stored: TokenStream,
    /// The hidden constants the key reads (a quoted path's segments after the first): name
    /// and value, emitted once in the struct's impl by `query_items`.
    keys: Vec<(Ident, TokenStream)>,
    /// In a generic struct, whether the field is an array and whether an `Option`, from its
    /// declaration (a constant there cannot name the struct's parameters).
    literal: Option<(bool, bool)>,
}

impl Typed {
    /// `<Holder as FieldPath<KEY>>`.
    fn field(&self) -> TokenStream {
        let (private, holder, key) = (private(), &self.holder, &self.key);
        quote!(<#holder as #private::FieldPath<#key>>)
    }

    /// The field's Rust type.
    fn ty(&self) -> TokenStream {
        let (private, holder, key) = (private(), &self.holder, &self.key);
        quote!(#private::TypeOf<#holder, #key>)
    }

    /// What describes its stored form.
    fn stored_ty(&self) -> TokenStream {
        let (private, holder, key) = (private(), &self.holder, &self.key);
        quote!(#private::StoredOf<#holder, #key>)
    }

    /// Whether the field is an `Option`, as a const generic argument.
    fn is_option(&self) -> TokenStream {
        if let Some((_, option)) = self.literal {
            return quote!(#option);
        }
        let field = self.field();
        quote!({ #field::IS_OPTION })
    }

    /// Whether the field is an array or a set, as a const generic argument.
    fn is_array(&self) -> TokenStream {
        if let Some((array, _)) = self.literal {
            return quote!(#array);
        }
        let field = self.field();
        quote!({ #field::IS_ARRAY })
    }

    /// The typed path (`Path<Self, Type, Stored>`), with the field's encoder.
    fn path(&self) -> TokenStream {
        let (private, holder, key, stored) = (private(), &self.holder, &self.key, &self.stored);
        quote!(#private::nested_path::<Self, #holder, #key>(#stored))
    }
}

/// `field` typed as rustc resolves it. `None` where `check_queries` reported an error, or where
/// a generic struct's parameters would have to appear in a constant (a path of more than one
/// segment in a generic struct, refused by `check_queries`).
fn typed(cont: &Container, field: &KeyField) -> Option<Typed> {
    let private = private();
    let generic = cont.is_generic();
    let root = if generic {
        quote!(Self)
    } else {
        let ident = cont.ident;
        quote!(#ident)
    };
    let mut keys = Vec::new();
    let mut literal = None;
    let own_rust = |name: &Ident| {
        let name = unraw(name);
        cont.stored_fields()
            .find(|f| f.ident.is_some_and(|i| unraw(i) == name))
    };
    let (holder, key, stored) = match field {
        KeyField::Rust(ident) => {
            let first = own_rust(ident)?;
            let key = field_key(&unraw(ident));
            let stored = &first.stored_name;
            if generic {
                literal = Some((
                    crate::gen::json_schema::collection_bound(first).is_some()
                        && !crate::serde_helpers::type_last_name(first.ty)
                            .is_some_and(|name| name.ends_with("Map")),
                    crate::ast::generic_arg(first.ty, &["Option"]).is_some(),
                ));
            }
            (root, quote!(#key), quote!(#stored))
        }
        KeyField::Nested(idents) => {
            let first = own_rust(&idents[0])?;
            if generic {
                return None;
            }
            let mut holder = root;
            let mut key = TokenStream::new();
            let mut segments = Vec::new();
            for (i, ident) in idents.iter().enumerate() {
                if i > 0 {
                    holder = quote!(#private::TypeOf<#holder, #key>);
                }
                let k = field_key(&unraw(ident));
                key = quote!(#k);
                segments.push(if i == 0 {
                    // a flattened value's fields are stored at this level
                    let stored = if first.attrs.flatten.is_some() {
                        ""
                    } else {
                        first.stored_name.as_str()
                    };
                    quote!(#stored)
                } else {
                    quote!(<#holder as #private::FieldPath<#key>>::STORED)
                });
            }
            let stored = quote!({
                const __SEGMENTS: &[&str] = &[#(#segments),*];
                const __LEN: usize = #private::joined_len(__SEGMENTS);
                const __BYTES: [u8; __LEN] = #private::join::<__LEN>(__SEGMENTS);
                const __PATH: &str = #private::message_text(&__BYTES);
                __PATH
            });
            (holder, key, stored)
        }
        KeyField::Path(lit) => {
            let path = lit.value();
            let mut segments = path.split('.');
            let first_name = segments.next().unwrap_or_default();
            let first = cont
                .stored_fields()
                .find(|f| f.ident.is_some() && f.stored_name == first_name)?;
            let first_key = field_key(&unraw(first.ident?));
            let rest: Vec<&str> = segments.collect();
            if !rest.is_empty() && generic {
                return None;
            }
            // the first field's elements when it is a bounded collection, its value otherwise
            let first_ty = first.ty;
            let mut fields = if crate::gen::json_schema::collection_bound(first).is_some() {
                quote!(<#first_ty as #private::BoundedCollection>::__ELEMENT_FIELDS)
            } else {
                quote!(<#first_ty as #private::Embedded>::FIELDS)
            };
            let mut holder = root.clone();
            let mut key = quote!(#first_key);
            for (i, segment) in rest.into_iter().enumerate() {
                holder = quote!(#private::TypeOf<#holder, #key>);
                // looked up once, in a hidden constant of the struct's impl, that every use
                // reads: a name that is not stored is one error
                let name = key_const_name(&path, i);
                keys.push((
                    name.clone(),
                    quote!(#private::stored_key(#fields, #segment)),
                ));
                key = quote!({ #root::#name });
                fields = quote!(<#private::TypeOf<#holder, #key> as #private::Embedded>::FIELDS);
            }
            (holder, key, quote!(#path))
        }
    };
    // every token at the field's, so that rustc's errors point there
    let span = span_of(field);
    Some(Typed {
        holder: crate::gen::copies::respan(holder, span),
        key: crate::gen::copies::respan(key, span),
        stored: crate::gen::copies::respan(stored, span),
        keys: keys
            .into_iter()
            .map(|(name, value)| (name, crate::gen::copies::respan(value, span)))
            .collect(),
        literal,
    })
}

/// The hidden constant holding the key of segment `i + 1` of the quoted path `path`.
fn key_const_name(path: &str, i: usize) -> Ident {
    let clean: String = path
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format_ident!("__QUERY_KEY_{}_{}", clean, i + 1)
}

/// Whether `field` is an id a document holds: a `#[reference]` field, or the `_id` of an
/// `#[extended_ref]` copy (`patient._id`, `patient.id`).
fn held_id(cont: &Container, field: &KeyField) -> bool {
    let own = |name: &str| {
        cont.stored_fields()
            .find(|f| f.ident.is_some_and(|i| unraw(i) == name))
    };
    match field {
        KeyField::Rust(ident) => own(&unraw(ident)).is_some_and(|f| f.attrs.reference.is_some()),
        KeyField::Nested(idents) => {
            idents.len() == 2
                && matches!(unraw(&idents[1]).as_str(), "id" | "_id")
                && own(&unraw(&idents[0])).is_some_and(|f| f.attrs.extended_ref.is_some())
        }
        KeyField::Path(lit) => {
            let path = lit.value();
            let (first, rest) = match path.split_once('.') {
                Some((first, rest)) => (first.to_owned(), Some(rest.to_owned())),
                None => (path.clone(), None),
            };
            cont.stored_fields()
                .find(|f| f.ident.is_some() && f.stored_name == first)
                .is_some_and(|f| match rest.as_deref() {
                    None => f.attrs.reference.is_some(),
                    Some("_id") => f.attrs.extended_ref.is_some(),
                    Some(_) => false,
                })
        }
    }
}

/// The `QuerySpec` of a declared query.
fn spec(cont: &Container, query: &Query) -> TokenStream {
    let private = private();
    let name = query
        .name
        .as_ref()
        .map(|n| n.value.value())
        .unwrap_or_default();
    let eq = query.eq.iter().map(|f| {
        let path = stored_tokens(cont, f);
        quote!(.eq(#path))
    });
    let any_of = query.any_of.iter().map(|(f, max)| {
        let path = stored_tokens(cont, f);
        let max = *max as usize;
        quote!(.any_of(#path, #max))
    });
    let range = query.range.iter().map(|f| {
        let path = stored_tokens(cont, f);
        quote!(.range(#path))
    });
    let sort = query.sort.iter().map(|k| {
        let path = stored_tokens(cont, &k.field);
        let direction = match k.kind {
            KeyKind::Direction(d) => d,
            KeyKind::Special(_) => 1,
        };
        quote!(.sort(#path, #direction))
    });
    let limit = query.limit.as_ref().map(|l| {
        let limit = l.value as i64;
        quote!(.limit(#limit))
    });
    let project = query.project.as_ref().map(|p| {
        let row = &p.value;
        quote!(.projection_of(
            <#row as #private::Fields>::STORED,
            <#row as #private::Fields>::HAS_ID,
            <#row as #private::BsonSchema>::bson_schema(),
        ))
    });
    let index = query.index.as_ref().map(|i| {
        let index = &i.value;
        quote!(.index(#index))
    });
    let pages = query.pages.then(|| quote!(.pages()));
    let geo = query.geo.as_ref().map(|g| {
        let path = stored_tokens(cont, &g.field);
        if g.near {
            quote!(.near(#path))
        } else {
            quote!(.within(#path))
        }
    });
    // the collection's default is the spec's, given by `CollectionSpec::query`; the function
    // that runs the query sends the spec it builds here, so it carries the default too. A query
    // that compares a held id (a reference, a copy's `_id`) and states no collation runs under
    // the simple one where the default is another: the library compares held ids exactly, its
    // own reads and declared queries alike (`Schema::build` refuses the query when it also
    // compares strings, which the default is meant for: one command has one collation)
    let default = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.collation.as_ref())
        .filter(|c| c.value.locale != "simple");
    let held = query
        .eq
        .iter()
        .chain(query.any_of.iter().map(|(f, _)| f))
        .any(|f| held_id(cont, f));
    let collation = match (&query.collation, default) {
        (Some(c), _) => Some(crate::gen::collation::expr(&c.value)),
        (None, Some(_)) if held => Some(quote!(#private::Collation::simple())),
        (None, c) => c.map(|c| crate::gen::collation::expr(&c.value)),
    }
    .map(|c| quote!(.collation(#c)));
    let exact_ids = (query.collation.is_none() && default.is_some() && held)
        .then(|| quote!(.__held_ids_exactly()));
    // likewise the collection's kind, which a near query's pipeline depends on
    let time_series = cont
        .attrs
        .collection
        .as_ref()
        .is_some_and(|c| c.value.timeseries.is_some())
        .then(|| quote!(.on_time_series()));
    quote! {
        #private::QuerySpec::new(#name) #(#eq)* #(#any_of)* #(#range)* #(#sort)* #geo #pages #limit #project #index #collation #exact_ids #time_series
    }
}

/// `.query(..)` of every declared query, for `collection_spec()`.
pub fn query_specs(cont: &Container) -> TokenStream {
    cont.attrs
        .queries
        .iter()
        .map(|q| {
            let spec = spec(cont, &q.value);
            quote!(.query(#spec))
        })
        .collect()
}

/// `base`, or `base_` (and so on) when a field's argument already has the name.
fn fresh_name(base: &str, taken: &mut Vec<String>) -> String {
    let mut name = base.to_owned();
    while taken.contains(&name) || name == "db" {
        name.push('_');
    }
    taken.push(name.clone());
    name
}

fn param_name(field: &KeyField, taken: &mut Vec<String>) -> Ident {
    let base = match field {
        KeyField::Rust(ident) => unraw(ident),
        KeyField::Nested(idents) => idents.iter().map(unraw).collect::<Vec<_>>().join("_"),
        KeyField::Path(lit) => lit
            .value()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect::<String>()
            .split('_')
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("_")
            .to_lowercase(),
    };
    let mut name = if base.is_empty() {
        "value".to_owned()
    } else {
        base
    };
    while taken.contains(&name) || name == "db" {
        name.push('_');
    }
    taken.push(name.clone());
    format_ident!("{}", name, span = span_of(field))
}

/// The function that runs a declared query, with one argument per condition in the field's
/// type.
fn query_fn(cont: &Container, query: &Query, fallback: bool) -> TokenStream {
    let private = private();
    let Some(name) = &query.name else {
        return TokenStream::new();
    };
    let fn_name = format_ident!("{}", name.value.value(), span = name.value.span());
    let row = query.project.as_ref().map_or_else(
        || quote!(Self),
        |p| {
            let ty = &p.value;
            quote!(#ty)
        },
    );
    let mut taken = Vec::new();
    let mut generics = Vec::new();
    let mut params = Vec::new();
    let mut steps = Vec::new();
    let mut docs = Vec::new();
    // a field `check_queries` refused: the argument takes any value and the function is still
    // emitted, so that its callers compile against its signature (one mistake, one error)
    fn untyped(
        param: &Ident,
        sized: bool,
        generics: &mut Vec<TokenStream>,
        steps: &mut Vec<TokenStream>,
    ) -> Ident {
        let g = format_ident!("__Arg{}", generics.len());
        generics.push(if sized {
            quote!(#g)
        } else {
            quote!(#g: ?::core::marker::Sized)
        });
        steps.push(quote!(let _ = #param;));
        g
    }
    for field in &query.eq {
        let param = param_name(field, &mut taken);
        match typed(cont, field) {
            Some(typed) => {
                let (ty, array, path) = (typed.ty(), typed.is_array(), typed.path());
                params.push(quote!(#param: &(impl #private::Value<<#ty as #private::QueryElem<#array>>::Elem> + ?::core::marker::Sized)));
                steps.push(quote! {
                    let __filter = __filter.eq(#private::query_elem::<Self, _, _, #array>(#path), #param);
                });
            }
            None => {
                let g = untyped(&param, false, &mut generics, &mut steps);
                params.push(quote!(#param: &#g));
            }
        }
        docs.push(format!("`{}` equal to `{param}`", stored(cont, field)));
    }
    let mut limits = Vec::new();
    for (field, max) in &query.any_of {
        let param = param_name(field, &mut taken);
        let stored_path = stored(cont, field);
        match typed(cont, field) {
            Some(typed) => {
                let (ty, array, path) = (typed.ty(), typed.is_array(), typed.path());
                let max = *max as usize;
                params.push(quote!(#param: &[impl #private::Value<<#ty as #private::QueryElem<#array>>::Elem>]));
                let stored = &typed.stored;
                limits.push(quote! {
                    if #param.len() > #max {
                        return #private::DeclaredQuery::__new(__db, __spec, ::core::result::Result::Err(#private::query_refused(#stored, #param.len(), #max)));
                    }
                });
                steps.push(quote! {
                    let __filter = __filter.is_in(#private::query_elem::<Self, _, _, #array>(#path), #param.iter());
                });
            }
            None => {
                let g = untyped(&param, true, &mut generics, &mut steps);
                params.push(quote!(#param: &[#g]));
            }
        }
        docs.push(format!(
            "`{stored_path}` one of `{param}` (at most {max} values)"
        ));
    }
    for field in &query.range {
        let param = param_name(field, &mut taken);
        match typed(cont, field) {
            Some(typed) => {
                let (ty, option, path) = (typed.ty(), typed.is_option(), typed.path());
                params.push(quote!(#param: impl ::core::ops::RangeBounds<<#ty as #private::RangeElem<#option>>::Elem>));
                // the field's order is checked once, by `query_items`, at its token
                steps.push(
                    quote!(let __filter = __filter.__range_checked_elsewhere(#path, #param);),
                );
            }
            None => {
                let g = untyped(&param, true, &mut generics, &mut steps);
                params.push(quote!(#param: impl ::core::ops::RangeBounds<#g>));
            }
        }
        docs.push(format!("`{}` in the range `{param}`", stored(cont, field)));
    }
    // the geo condition's arguments come last: the point and the distance, or the area
    let mut near = None;
    if let Some(geo) = &query.geo {
        let stored_path = stored(cont, &geo.field);
        if geo.near {
            let point = format_ident!("{}", fresh_name("near", &mut taken));
            let max = format_ident!("{}", fresh_name("max_metres", &mut taken));
            params.push(quote!(#point: &#private::geo::Point));
            params.push(quote!(#max: f64));
            near = Some(quote!(.__near(#point, #max)));
            docs.push(format!(
                "`{stored_path}` nearest to `{point}` first, at most `{max}` metres away"
            ));
        } else {
            let area = format_ident!("{}", fresh_name("within", &mut taken));
            params.push(quote!(#area: &#private::geo::Area));
            match typed(cont, &geo.field) {
                Some(typed) => {
                    let path = typed.path();
                    steps.push(quote!(let __filter = __filter.__within(#path, #area);));
                }
                None => steps.push(quote!(let _ = #area;)),
            }
            docs.push(format!("`{stored_path}` inside the area `{area}`"));
        }
    }
    let sort: Vec<String> = query
        .sort
        .iter()
        .map(|k| {
            let dir = match k.kind {
                KeyKind::Direction(d) => d,
                KeyKind::Special(_) => 1,
            };
            format!("{}: {dir}", stored(cont, &k.field))
        })
        .collect();
    let spec = spec(cont, query);
    let mut doc = format!(
        "Declared query `{}` of `{}`: ",
        name.value.value(),
        cont.ident
    );
    doc.push_str(&if docs.is_empty() {
        "every document".to_owned()
    } else {
        docs.join(", ")
    });
    if !sort.is_empty() {
        doc.push_str(&format!(", sorted `{{ {} }}`", sort.join(", ")));
    }
    if let Some(limit) = &query.limit {
        doc.push_str(&format!(", at most {}", limit.value));
    }
    if query.pages {
        doc.push_str(", read in keyset pages (`_id` the tie-break; `.page()`, `.after(cursor)`)");
    }
    let dotted = query
        .eq
        .iter()
        .chain(query.any_of.iter().map(|(f, _)| f))
        .chain(query.range.iter())
        .any(|f| stored(cont, f).contains('.'));
    if dotted {
        doc.push_str(". The conditions on paths under an array of sub-documents hold for one element of it: they are sent as one `$elemMatch` on the array");
    }
    doc.push_str(". Awaited, returns the rows; the command's `comment` is the query's name. Generated by `#[query]`; `Schema::build` fits it to an index by mongod's planner rules.");
    let paging = if query.pages {
        quote!(#private::Paged)
    } else {
        quote!(#private::Unpaged)
    };
    // next to the derive's errors, the signature alone: its callers compile against it
    let body = if fallback {
        quote!(::core::unimplemented!(
            "mongo-schema: the derive reported errors"
        ))
    } else {
        quote! {
            let __spec = #spec;
            #(#limits)*
            let __filter = #private::Filter::<Self>::new();
            #(#steps)*
            #private::DeclaredQuery::__new(__db, __spec, __filter.build()) #near
        }
    };
    quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments, unused_variables)]
        pub fn #fn_name<'__q, #(#generics),*>(
            __db: &'__q #private::mongodb::Database,
            #(#params),*
        ) -> #private::DeclaredQuery<'__q, Self, #row, #paging> {
            #body
        }
    }
}

/// The declared queries' functions with their signatures and no behaviour, emitted next to the
/// derive's errors (as thiserror's fallback impls): a mistake in the model is one error, not
/// one more at every call of its queries.
pub fn fallback_query_items(cont: &Container) -> TokenStream {
    if cont.attrs.queries.is_empty() {
        return TokenStream::new();
    }
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    // a name declared twice (an error of its own) is emitted once
    let mut names = Vec::new();
    let fns: Vec<TokenStream> = cont
        .attrs
        .queries
        .iter()
        .filter(|q| {
            let name = q.value.name.as_ref().map(|n| n.value.value());
            let first = !names.contains(&name);
            names.push(name);
            first
        })
        .map(|q| query_fn(cont, &q.value, true))
        .collect();
    let key_consts = key_consts(cont);
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #key_consts
            #(#fns)*
        }
    }
}

/// The inherent functions of the declared queries, and the checks of their fields' stored
/// order and projections.
pub fn query_items(cont: &Container) -> TokenStream {
    let private = private();
    let ident = cont.ident;
    if cont.attrs.queries.is_empty() && cont.attrs.indexes.is_empty() {
        return TokenStream::new();
    }
    let (impl_generics, ty_generics, where_clause) = cont.original.generics.split_for_impl();
    let fns = cont
        .attrs
        .queries
        .iter()
        .map(|q| query_fn(cont, &q.value, false));
    let key_consts = key_consts(cont);
    let mut order_checks = Vec::new();
    // a query's range or sort, in every path form
    for query in &cont.attrs.queries {
        let fields = query.value.range.iter();
        for field in fields.chain(query.value.sort.iter().map(|k| &k.field)) {
            if let Some(typed) = typed(cont, field) {
                // ordered, and (an enum's stored names sort as text) in the Rust order: one
                // call, one error
                let stored = typed.stored_ty();
                order_checks.push(crate::gen::copies::respan(
                    quote!(#private::require_rust_order::<#stored>();),
                    span_of(field),
                ));
            }
        }
    }
    // a geo condition reads a GeoJSON point
    for query in &cont.attrs.queries {
        let Some(geo) = &query.value.geo else {
            continue;
        };
        if let Some(typed) = typed(cont, &geo.field) {
            let ty = typed.ty();
            order_checks.push(crate::gen::copies::respan(
                quote!(#private::require_geo::<#ty>();),
                span_of(&geo.field),
            ));
        }
    }
    // an index key on an array indexes its elements (multikey): those must order
    let mut add = |field: &KeyField, elements: bool| {
        if let (KeyField::Rust(key_ident), Some(f)) = (field, rust_field(cont, field)) {
            let key = field_key(&unraw(key_ident));
            let stored = quote!(#private::StoredOf<#ident #ty_generics, #key>);
            let checked = if elements && crate::check::is_array_field(f) {
                quote!(<#stored as #private::Array>::Elem)
            } else {
                stored
            };
            // every token at the field's, so that rustc's error points there
            order_checks.push(crate::gen::copies::respan(
                quote!(#private::require_ordered::<#checked>();),
                key_ident.span(),
            ));
        }
    };
    for index in &cont.attrs.indexes {
        for key in index.value.keys.iter().flat_map(|k| &k.value) {
            if matches!(key.kind, KeyKind::Direction(_)) {
                add(&key.field, true);
            }
        }
    }
    let projections = cont.attrs.queries.iter().filter_map(|q| {
        let row = &q.value.project.as_ref()?.value;
        // every token at the row's, so that a failed evaluation points at `project = Row`
        Some(crate::gen::copies::respan(
            quote!(#private::check_projection::<#ident #ty_generics, #row>();),
            row.span(),
        ))
    });
    let generic = cont.is_generic();
    let const_checks = (!generic).then(|| {
        quote! {
            const _: () = {
                #(#order_checks)*
                #(#projections)*
            };
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #key_consts
            #(#fns)*
        }
        #const_checks
    }
}

/// The hidden constants of the keys of the quoted paths' segments (see [`Typed::keys`]), each
/// once.
fn key_consts(cont: &Container) -> TokenStream {
    let mut seen: Vec<Ident> = Vec::new();
    let mut out = TokenStream::new();
    for query in &cont.attrs.queries {
        let query = &query.value;
        let fields = query
            .eq
            .iter()
            .chain(query.any_of.iter().map(|(f, _)| f))
            .chain(query.range.iter())
            .chain(query.sort.iter().map(|k| &k.field))
            .chain(query.geo.iter().map(|g| &g.field));
        for typed in fields.filter_map(|f| typed(cont, f)) {
            for (name, value) in typed.keys {
                if !seen.contains(&name) {
                    out.extend(quote! {
                        #[doc(hidden)]
                        #[allow(non_upper_case_globals)]
                        pub const #name: u64 = #value;
                    });
                    seen.push(name);
                }
            }
        }
    }
    out
}
