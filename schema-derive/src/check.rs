//! The rules of the attribute language that span several attributes or fields, one `check_*`
//! function per rule (SPEC §4). Rules only rustc can decide (is `T` a collection root? does a
//! constraint fit the type?) are emitted as type-level checks by `gen::checks`.

use quote::ToTokens;
use syn::{Ident, Type};

use crate::ast::{Container, Data, Field, RefKind};
use crate::attr::{ExtendedRef, IndexKey, KeyField, OnDelete, Sync};
use crate::ctxt::Ctxt;
use crate::expand::Derive;

mod mongod;

pub fn check(cx: &Ctxt, cont: &Container, derive: Derive) {
    check_derive_fits_item(cx, cont, derive);
    for field in cont.stored_fields() {
        check_copies(cx, cont, field, derive);
        check_reference(cx, field);
        check_bounded(cx, field);
        check_custom_serialization(cx, field);
    }
    if let Data::Enum(variants) = &cont.data {
        if variants.iter().all(|v| v.attrs.skip_serializing) && !variants.is_empty() {
            cx.error_spanned_by(
                cont.ident,
                "every variant is skipped: nothing can be stored",
            );
        }
        if let Some(additional) = &cont.attrs.additional_properties {
            cx.error_spanned_by(
                &additional.tokens,
                "`additional_properties` applies to structs",
            );
        }
    }
    check_bucket(cx, cont, derive);
    check_index_keys(cx, cont);
    check_unique_indexes_start_with_shard_key(cx, cont);
    mongod::check(cx, cont);
}

/// `Document` needs a named-field struct and a collection name; `#[collection]` and `#[index]`
/// need `Document`.
fn check_derive_fits_item(cx: &Ctxt, cont: &Container, derive: Derive) {
    match derive {
        Derive::Document => {
            if !matches!(cont.data, Data::Struct(_)) {
                cx.error_spanned_by(
                    cont.ident,
                    "`#[derive(Document)]` needs a struct with named fields: a collection stores documents",
                );
            }
            match &cont.attrs.collection {
                None => cx.error_spanned_by(
                    cont.ident,
                    "`#[derive(Document)]` needs the collection name: add `#[collection(name = \"...\")]`",
                ),
                Some(collection) if collection.value.name.is_none() => cx.error_spanned_by(
                    &collection.tokens,
                    "`#[collection]` needs `name = \"...\"`",
                ),
                Some(_) => {}
            }
        }
        Derive::BsonSchema => {
            if let Some(collection) = &cont.attrs.collection {
                cx.error_spanned_by(
                    &collection.tokens,
                    "`#[collection]` describes a collection root: use `#[derive(Document)]` instead of `#[derive(BsonSchema)]`",
                );
            }
            for index in &cont.attrs.indexes {
                cx.error_spanned_by(
                    &index.tokens,
                    "`#[index]` belongs on a collection root: use `#[derive(Document)]` instead of `#[derive(BsonSchema)]`",
                );
            }
        }
    }
}

/// `#[bucket]`: a collection root whose named fields are a single reference to the parent, a
/// bounded array of entries, a count and the first and last keys.
fn check_bucket(cx: &Ctxt, cont: &Container, derive: Derive) {
    let Some(bucket) = &cont.attrs.bucket else {
        return;
    };
    if derive != Derive::Document {
        cx.error_spanned_by(
            &bucket.tokens,
            "`#[bucket]` describes a collection of bucket documents: use `#[derive(Document)]`",
        );
        return;
    }
    let b = &bucket.value;
    for ident in [&b.parent, &b.entries, &b.count, &b.first, &b.last]
        .into_iter()
        .flatten()
    {
        if bucket_field(cont, ident).is_none() {
            cx.error_spanned_by(
                ident,
                format!(
                    "no stored field `{}` in `{}`",
                    crate::ast::unraw(ident),
                    cont.ident
                ),
            );
        }
    }
    if let Some(parent) = b
        .parent
        .as_ref()
        .and_then(|p| bucket_field(cont, p).map(|f| (p, f)))
    {
        let single = parent
            .1
            .reference_shape()
            .is_some_and(|s| s.kind != RefKind::Many);
        if !single {
            cx.error_spanned_by(
                parent.0,
                format!("`parent` is the bucket's `#[reference]` to its parent: mark `{}` with `#[reference]` (a `Ref<T>`)", crate::ast::unraw(parent.0)),
            );
        }
    }
    if let Some(entries) = b
        .entries
        .as_ref()
        .and_then(|e| bucket_field(cont, e).map(|f| (e, f)))
    {
        let bounded = entries
            .1
            .attrs
            .embed
            .as_ref()
            .is_some_and(|e| e.value.max.is_some())
            && crate::ast::copy_shape(entries.1.ty).0 == RefKind::Many;
        if !bounded {
            cx.error_spanned_by(
                entries.0,
                format!(
                    "`entries` is the bucket's bounded array: `#[embed(max = N)] {}: Vec<Entry>` (a bucket without a bound is the unbounded array again)",
                    crate::ast::unraw(entries.0)
                ),
            );
        }
    }
}

pub fn bucket_field<'c, 'a>(cont: &'c Container<'a>, ident: &Ident) -> Option<&'c Field<'a>> {
    let wanted = crate::ast::unraw(ident);
    cont.stored_fields()
        .find(|f| f.ident.is_some_and(|i| crate::ast::unraw(i) == wanted))
}

/// `#[extended_ref]` and `#[subset]`: on a collection root, one relationship attribute per
/// field, the shape the bound asks for, and the generated copy type as the field's type.
fn check_copies(cx: &Ctxt, cont: &Container, field: &Field, derive: Derive) {
    let name = field.display_name();
    let attrs = &field.attrs;
    let kinds = [
        attrs.embed.is_some(),
        attrs.reference.is_some(),
        attrs.extended_ref.is_some(),
        attrs.subset.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() > 1 {
        cx.error_spanned_by(
            field.ty,
            format!("field `{name}` has more than one of `#[embed]`, `#[reference]`, `#[extended_ref]`, `#[subset]`: keep one"),
        );
        return;
    }
    if let Some(extended) = &attrs.extended_ref {
        if derive != Derive::Document {
            cx.error_spanned_by(&extended.tokens, "`#[extended_ref]` belongs on a field of a `#[derive(Document)]` struct, whose collection holds the copy");
            return;
        }
        let shape = crate::ast::copy_shape(field.ty);
        match (shape.0, extended.value.max) {
            (RefKind::Many, None) => cx.error_spanned_by(
                field.ty,
                format!("field `{name}` is an unbounded array of copies: bound it with `#[extended_ref(..., max = N)]`"),
            ),
            (RefKind::One | RefKind::Optional, Some(_)) => cx.error_spanned_by(
                &extended.tokens,
                format!("`max` bounds an array of copies, and field `{name}` holds a single one"),
            ),
            _ => {}
        }
        let expected = crate::gen::copies::copy_type_name(cont, field);
        check_on_delete(cx, field, &extended.value, shape.0, &expected);
        let found = match shape.1 {
            syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        if found.as_deref() != Some(&expected.to_string()) {
            let hint = if extended.value.name.is_some() {
                ""
            } else {
                "; name it differently with `as = Name`"
            };
            cx.error_spanned_by(
                shape.1,
                format!(
                    "the type of field `{name}` is the copy type this derive generates: `{expected}` \
                     (or `Option<{expected}>`, `Vec<{expected}>`){hint}"
                ),
            );
        }
    }
    if let Some(subset) = &attrs.subset {
        if derive != Derive::Document {
            cx.error_spanned_by(
                &subset.tokens,
                "`#[subset]` belongs on a field of a `#[derive(Document)]` struct",
            );
            return;
        }
        let shape = crate::ast::copy_shape(field.ty);
        match (subset.value.max, shape.0) {
            (Some(1), RefKind::Optional) | (Some(2..), RefKind::Many) | (None, _) => {}
            (Some(1), _) => cx.error_spanned_by(
                field.ty,
                format!(
                    "`#[subset(max = 1)]` keeps one preview: make field `{name}` an `Option<{preview}>`, or keep several with `max = N` and a `Vec<{preview}>`",
                    preview = type_name(shape.1)
                ),
            ),
            (Some(_), _) => cx.error_spanned_by(
                field.ty,
                format!(
                    "`#[subset(max = N)]` keeps up to N previews: make field `{name}` a `Vec<{preview}>`, or keep one with `max = 1` and an `Option<{preview}>`",
                    preview = type_name(shape.1)
                ),
            ),
        }
        if let Some(count) = &subset.value.count {
            let wanted = crate::ast::unraw(count);
            let exists = cont
                .stored_fields()
                .any(|f| f.ident.is_some_and(|i| crate::ast::unraw(i) == wanted));
            if !exists {
                cx.error_spanned_by(
                    count,
                    format!(
                        "`count` names no stored field `{wanted}` of `{}`",
                        cont.ident
                    ),
                );
            }
        }
    }
}

/// `on_delete = "unset"` writes `null` over the copy when its source is deleted: the field must
/// be able to hold `null`, and a frozen snapshot is never rewritten.
fn check_on_delete(cx: &Ctxt, field: &Field, extended: &ExtendedRef, kind: RefKind, copy: &Ident) {
    let Some(on_delete) = &extended.on_delete else {
        return;
    };
    if on_delete.value != OnDelete::Unset {
        return;
    }
    let name = field.display_name();
    if extended.sync == Some(Sync::Frozen) {
        cx.error_spanned_by(
            &on_delete.tokens,
            "`on_delete = \"unset\"` does not apply to a `sync = \"frozen\"` copy: a frozen copy is a snapshot \
             that no sync path rewrites, so deleting its source must not change it; remove `on_delete`, \
             or pick a strategy that follows the source (\"transactional\", \"async\" or \"reconcile\")",
        );
        return;
    }
    match kind {
        RefKind::Optional => {}
        RefKind::One => cx.error_spanned_by(
            &on_delete.tokens,
            format!(
                "`on_delete = \"unset\"` sets the copy to null when its source is deleted, so field `{name}` \
                 must be an `Option`: declare it `{name}: Option<{copy}>` or use `on_delete = \"keep\"`"
            ),
        ),
        RefKind::Many => cx.error_spanned_by(
            &on_delete.tokens,
            format!(
                "`on_delete = \"unset\"` sets the copy to null when its source is deleted, so it needs an `Option` \
                 field, and field `{name}` is an array of copies (`{ty}`): use `on_delete = \"keep\"` \
                 (the copies of a deleted source stay in the array)",
                ty = type_name(field.ty)
            ),
        ),
    }
}

/// `#[reference]`: a `Ref<T>` (or `to = T`), arrays bounded, not also embedded.
fn check_reference(cx: &Ctxt, field: &Field) {
    let (Some(reference), Some(shape)) = (&field.attrs.reference, field.reference_shape()) else {
        return;
    };
    let name = field.display_name();
    if field.attrs.embed.is_some() {
        cx.error_spanned_by(
            &reference.tokens,
            format!("field `{name}` cannot be both `#[embed]`ded and a `#[reference]`: keep one"),
        );
    }
    match (shape.kind, reference.value.max) {
        (RefKind::Many, None) => cx.error_spanned_by(
            field.ty,
            format!(
                "field `{name}` is an unbounded array of references: nothing limits how many ids it holds; \
                 bound it with `#[reference(max = N)]`, or when nothing limits the count, store the reference \
                 on the other side (each child holding its parent's id with `#[reference]`)"
            ),
        ),
        (RefKind::One | RefKind::Optional, Some(_)) => cx.error_spanned_by(
            &reference.tokens,
            format!("`max` bounds an array of references, and field `{name}` holds a single one"),
        ),
        _ => {}
    }
    if shape.target.is_none() {
        cx.error_spanned_by(
            shape.element,
            format!(
                "`#[reference]` on field `{name}` needs a typed id `Ref<T>` (or `Option<Ref<T>>`, `Vec<Ref<T>>`), \
                 or the referenced type for a plain id: `#[reference(to = T)]`"
            ),
        );
    }
}

/// Rule 1: every array or map carries a bound.
fn check_bounded(cx: &Ctxt, field: &Field) {
    if field.attrs.relation.is_some() || field.attrs.reference.is_some() {
        return; // reported by the attribute parser or `check_reference`
    }
    match (&field.attrs.embed, collection_kind(field.ty)) {
        (Some(embed), _) if embed.value.max.is_none() => cx.error_spanned_by(
            &embed.tokens,
            format!(
                "`#[embed]` on field `{}` needs its bound: write `#[embed(max = N)]`",
                field.display_name()
            ),
        ),
        (Some(_), _) => {}
        (None, Some(kind)) => cx.error_spanned_by(
            field.ty,
            format!(
                "field `{}` is an unbounded {kind}: nothing limits how many elements it holds, and a document cannot grow past 16 MiB; \
                 bound it with `#[embed(max = N)]`, store ids of another collection with `#[reference]`, \
                 or keep only the newest few children with `#[subset(...)]`",
                field.display_name()
            ),
        ),
        (None, None) => {}
    }
}

/// Rule 6: custom serialization hides the stored shape from the derive.
fn check_custom_serialization(cx: &Ctxt, field: &Field) {
    if let Some((tokens, helper)) = &field.attrs.custom_serialize {
        if crate::serde_helpers::recognise(helper, field.ty).is_some() {
            return;
        }
        cx.error_spanned_by(
            tokens,
            format!(
                "`#[serde({})]` on field `{}` writes the value with custom code, so the validator cannot know its stored shape; \
                 store a type that derives `BsonSchema` (or implements it by hand) instead",
                tokens,
                field.display_name()
            ),
        );
    }
}

/// Index and shard keys name stored fields.
fn check_index_keys(cx: &Ctxt, cont: &Container) {
    let mut names: Vec<String> = Vec::new();
    for index in &cont.attrs.indexes {
        let Some(keys) = &index.value.keys else {
            cx.error_spanned_by(
                &index.tokens,
                "`#[index]` needs its keys, e.g. `#[index(keys(team = 1, status = -1))]`",
            );
            continue;
        };
        for key in &keys.value {
            resolve_key(cx, cont, key);
        }
        if let Some(ttl) = &index.value.expire_after_secs {
            if keys.value.len() > 1 {
                cx.error_spanned_by(
                    &ttl.tokens,
                    "a TTL index (`expire_after_secs`) must have a single key, a date field",
                );
            }
        }
        if let Some(name) = &index.value.name {
            if names.contains(&name.value) {
                cx.error_spanned_by(
                    &name.tokens,
                    format!("two indexes are named `{}`", name.value),
                );
            }
            names.push(name.value.clone());
        }
    }
    if let Some(shard_key) = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.shard_key.as_ref())
    {
        for key in &shard_key.value {
            resolve_key(cx, cont, key);
        }
    }
}

/// Rule 5: with a shard key, a unique index must start with the shard key's fields.
fn check_unique_indexes_start_with_shard_key(cx: &Ctxt, cont: &Container) {
    let Some(shard_key) = cont
        .attrs
        .collection
        .as_ref()
        .and_then(|c| c.value.shard_key.as_ref())
    else {
        return;
    };
    let shard: Vec<String> = shard_key
        .value
        .iter()
        .map(|k| stored_key(cont, k))
        .collect();
    for index in &cont.attrs.indexes {
        let (Some(unique), Some(keys)) = (&index.value.unique, &index.value.keys) else {
            continue;
        };
        if !unique.value {
            continue;
        }
        let keys: Vec<String> = keys.value.iter().map(|k| stored_key(cont, k)).collect();
        if !keys.starts_with(&shard) {
            cx.error_spanned_by(
                &unique.tokens,
                format!(
                    "a unique index of a sharded collection must start with the shard key ({}); this one starts with ({}): \
                     put the shard key fields first in `keys(...)` or drop `unique`",
                    shard.join(", "),
                    keys.join(", ")
                ),
            );
        }
    }
}

/// The stored name of an index key, reporting names that are not stored fields.
pub fn resolve_key(cx: &Ctxt, cont: &Container, key: &IndexKey) -> String {
    match &key.field {
        KeyField::Rust(ident) => {
            let wanted = crate::ast::unraw(ident);
            let all: Vec<&Field> = match &cont.data {
                Data::Struct(fields) => fields.iter().collect(),
                _ => Vec::new(),
            };
            match all
                .iter()
                .find(|f| f.ident.is_some_and(|i| crate::ast::unraw(i) == wanted))
            {
                Some(field) if field.is_stored() => field.stored_name.clone(),
                Some(_) => {
                    cx.error_spanned_by(
                        ident,
                        format!("field `{wanted}` is skipped by serde and cannot be indexed"),
                    );
                    wanted
                }
                None => {
                    cx.error_spanned_by(
                        ident,
                        format!(
                            "no field `{wanted}` in `{}`; index keys name fields of the struct (or a quoted stored path such as \"customer._id\")",
                            cont.ident
                        ),
                    );
                    wanted
                }
            }
        }
        KeyField::Path(lit) => {
            let path = lit.value();
            let first = path.split('.').next().unwrap_or_default();
            let known = first == "_id"
                || first.starts_with('$')
                || cont.stored_fields().any(|f| f.stored_name == first);
            if !known || path.is_empty() || path.split('.').any(str::is_empty) {
                cx.error_spanned_by(
                    lit,
                    format!(
                        "`{first}` in \"{path}\" is not a stored field of `{}`",
                        cont.ident
                    ),
                );
            }
            path
        }
    }
}

fn stored_key(cont: &Container, key: &IndexKey) -> String {
    // errors were reported by `check_index_keys`
    let cx = Ctxt::new();
    let name = resolve_key(&cx, cont, key);
    let _ = cx.check();
    name
}

/// Whether a type is a growable array, set or map (looking through `Option`, `Box` and `&`).
fn collection_kind(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Paren(inner) => collection_kind(&inner.elem),
        Type::Group(inner) => collection_kind(&inner.elem),
        Type::Reference(inner) => collection_kind(&inner.elem),
        Type::Slice(_) => Some("array"),
        Type::Path(path) => {
            let segment = path.path.segments.last()?;
            let name = segment.ident.to_string();
            match name.as_str() {
                "Vec" | "VecDeque" | "LinkedList" | "BinaryHeap" | "SmallVec" => Some("array"),
                "HashSet" | "BTreeSet" | "IndexSet" => Some("set"),
                "HashMap" | "BTreeMap" | "IndexMap" => Some("map"),
                "Option" | "Box" | "Rc" | "Arc" => match &segment.arguments {
                    syn::PathArguments::AngleBracketed(args) => {
                        args.args.iter().find_map(|arg| match arg {
                            syn::GenericArgument::Type(inner) => collection_kind(inner),
                            _ => None,
                        })
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// For messages: a type as the user wrote it.
pub fn type_name(ty: &Type) -> String {
    ty.to_token_stream()
        .to_string()
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace(" :: ", "::")
        .replace("& ", "&")
}
