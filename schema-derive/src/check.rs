//! The rules of the attribute language that span several attributes or fields, one `check_*`
//! function per rule (SPEC §4). Rules only rustc can decide (is `T` a collection root? does a
//! constraint fit the type?) are emitted as type-level checks by `gen::checks`.

use quote::ToTokens;
use syn::{Ident, Type};

use crate::ast::Derive;
use crate::ast::{Container, Data, Field, RefKind, Repr, Style, Variant};
use crate::attr::{ExtendedRef, IndexKey, KeyField, KeyKind, OnDelete, Sync};
use crate::ctxt::Ctxt;

mod geo;
mod mongod;
mod timeseries;

pub fn check(cx: &Ctxt, cont: &Container, derive: Derive) {
    check_derive_fits_item(cx, cont, derive);
    for field in cont.all_stored_fields() {
        if derive == Derive::Document {
            check_optional_id(cx, field);
        }
        check_open(cx, field);
        check_not_null(cx, field);
        check_copies(cx, cont, field, derive);
        check_reference(cx, field);
        check_bounded(cx, field);
        check_custom_serialization(cx, field);
    }
    if let Data::Enum(variants) = &cont.data {
        check_enum(cx, cont, variants, derive);
    } else {
        check_enum_attributes_on_enums(cx, cont);
    }
    check_bucket(cx, cont, derive);
    check_part(cx, cont);
    check_index_keys(cx, cont);
    check_index_pages(cx, cont);
    check_queries(cx, cont);
    check_unique_indexes_start_with_shard_key(cx, cont);
    mongod::check(cx, cont);
    geo::check(cx, cont);
    timeseries::check(cx, cont);
}

/// `tag`, `content` and `untagged` describe enums.
fn check_enum_attributes_on_enums(cx: &Ctxt, cont: &Container) {
    let attrs = &cont.attrs;
    let tokens = attrs
        .tag
        .as_ref()
        .map(|t| &t.tokens)
        .or(attrs.content.as_ref().map(|c| &c.tokens))
        .or(attrs.untagged.as_ref());
    if let (Some(tokens), false) = (tokens, matches!(cont.data, Data::StoredAs)) {
        cx.error_spanned_by(
            tokens,
            "`tag`, `content` and `untagged` are described on enums; on a struct, add the field to the struct instead",
        );
    }
}

/// An enum: its serde representation is one serde can write and the validator can describe.
fn check_enum(cx: &Ctxt, cont: &Container, variants: &[Variant], derive: Derive) {
    let attrs = &cont.attrs;
    if variants.iter().all(|v| !v.is_stored()) && !variants.is_empty() {
        cx.error_spanned_by(
            cont.ident,
            "every variant is skipped: nothing can be stored",
        );
    }
    // `content` without `tag`, `untagged` with `tag`, a tuple variant of an internally tagged
    // enum and a field stored under the tag's name are reported by serde's own derive (and, for
    // a hand-written `Serialize`, found by `Schema::build`): not reported twice here
    let data = variants
        .iter()
        .any(|v| v.style != Style::Unit || v.attrs.untagged.is_some());
    if let (Some(additional), false) = (&attrs.additional_properties, data) {
        cx.error_spanned_by(
            &additional.tokens,
            "`additional_properties` closes the documents of a struct or of an enum's data variants, and this enum stores only names",
        );
    }
    let repr = cont.repr();
    for variant in variants.iter().filter(|v| v.is_stored()) {
        for field in &variant.fields {
            if variant.style != Style::Struct {
                continue;
            }
            let relation = match (
                &field.attrs.extended_ref,
                &field.attrs.subset,
                &field.attrs.counter,
            ) {
                (Some(extended), _, _) => Some((&extended.tokens, "#[extended_ref]")),
                (None, Some(subset), _) => Some((&subset.tokens, "#[subset]")),
                (None, None, Some(counter)) => Some((&counter.tokens, "#[counter]")),
                (None, None, None) => None,
            };
            if let Some((tokens, name)) = relation {
                cx.error_spanned_by(
                    tokens,
                    format!(
                        "`{name}` on a field of an enum variant is not supported: copies and subsets are kept in sync on a struct document; \
                         move the field to a `#[derive(Document)]` struct, or store a `#[reference]`"
                    ),
                );
            }
        }
        if !variant.attrs.indexes.is_empty() {
            let kind_of_document = derive == Derive::Document && matches!(repr, Repr::Internal(_));
            if !kind_of_document {
                for index in &variant.attrs.indexes {
                    cx.error_spanned_by(
                        &index.tokens,
                        "`#[index]` on a variant indexes one kind of a whole-document enum (a partial index on its tag): \
                         it needs `#[derive(Document)]` on an internally tagged enum (`#[serde(tag = \"...\")]`)",
                    );
                }
            }
        }
    }
    if derive == Derive::Document {
        check_kind_ids(cx, variants);
        for variant in variants {
            for index in &variant.attrs.indexes {
                if let Some(keys) = &index.value.keys {
                    for key in &keys.value {
                        check_kind_key(cx, variant, key);
                    }
                }
                if let Some(sparse) = index.value.sparse.as_ref().filter(|s| s.value) {
                    cx.error_spanned_by(
                        &sparse.tokens,
                        "an index of one kind is a partial index on the tag, and mongod refuses an index that is both sparse and partial: remove `sparse`",
                    );
                }
            }
        }
        let kinds = matches!(repr, Repr::Internal(_) | Repr::Untagged)
            && variants
                .iter()
                .filter(|v| v.is_stored())
                .all(|v| v.style == Style::Struct);
        if !kinds {
            cx.error_spanned_by(
                cont.ident,
                "`#[derive(Document)]` on an enum stores one kind of document per variant: it needs an internally tagged \
                 (`#[serde(tag = \"kind\")]`) or untagged enum whose variants all have named fields",
            );
        }
    }
}

/// The kinds of a whole-document enum share one `_id` type, or none holds `_id` (the server
/// assigns an ObjectId).
fn check_kind_ids(cx: &Ctxt, variants: &[Variant]) {
    let stored: Vec<&Variant> = variants.iter().filter(|v| v.is_stored()).collect();
    let ids: Vec<(&Variant, Option<&Field>)> = stored
        .iter()
        .map(|v| {
            let id = v
                .fields
                .iter()
                .find(|f| f.is_stored() && f.stored_name == "_id");
            (*v, id)
        })
        .collect();
    let Some((first, Some(first_id))) = ids.iter().find(|(_, id)| id.is_some()) else {
        return; // no kind holds `_id`
    };
    let first_ty = type_name(first_id.ty);
    for (variant, id) in &ids {
        match id {
            None => cx.error_spanned_by(
                variant.ident,
                format!(
                    "kind `{}` holds no `_id` while kind `{}` holds one of type `{first_ty}`: the server would give this kind an ObjectId, \
                     so one collection would mix `_id` types; add `#[serde(rename = \"_id\")] id: {first_ty}` to every kind, or remove it from all",
                    variant.ident, first.ident
                ),
            ),
            Some(id) if type_name(id.ty) != first_ty => cx.error_spanned_by(
                id.ty,
                format!(
                    "the `_id` of kind `{}` is of type `{}`, and that of kind `{}` of type `{first_ty}`: the kinds of one collection share one `_id` type",
                    variant.ident,
                    type_name(id.ty),
                    first.ident
                ),
            ),
            Some(_) => {}
        }
    }
}

/// A key of a kind's index names a field of that kind.
fn check_kind_key(cx: &Ctxt, variant: &Variant, key: &IndexKey) {
    let found = match &key.field {
        KeyField::Rust(_) | KeyField::Nested(_) => {
            let wanted = crate::ast::unraw(key.field.first_ident().expect("a Rust name"));
            variant
                .fields
                .iter()
                .any(|f| f.is_stored() && f.ident.is_some_and(|i| crate::ast::unraw(i) == wanted))
        }
        KeyField::Path(lit) => {
            let path = lit.value();
            let first = path.split('.').next().unwrap_or_default().to_owned();
            first == "_id"
                || variant
                    .fields
                    .iter()
                    .any(|f| f.is_stored() && f.stored_name == first)
        }
    };
    if !found {
        cx.error_spanned_by(
            key.field.tokens(),
            format!(
                "kind `{}` has no stored field `{}`: the index of a kind names that kind's fields",
                variant.ident,
                key.field.tokens().to_string().trim_matches('"')
            ),
        );
    }
}

/// `Document` needs a named-field struct (or an enum of kinds) and a collection name;
/// `#[collection]` and `#[index]` need `Document`.
fn check_derive_fits_item(cx: &Ctxt, cont: &Container, derive: Derive) {
    match derive {
        Derive::Document => {
            if !matches!(cont.data, Data::Struct(_) | Data::Enum(_)) {
                cx.error_spanned_by(
                    cont.ident,
                    "`#[derive(Document)]` needs a struct with named fields (or an enum of kinds): a collection stores documents",
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
            for query in &cont.attrs.queries {
                cx.error_spanned_by(
                    &query.tokens,
                    "`#[query]` declares a query of a collection: put it on the `#[derive(Document)]` root",
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
        attrs.counter.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() > 1 {
        cx.error_spanned_by(
            field.ty,
            format!("field `{name}` has more than one of `#[embed]`, `#[reference]`, `#[extended_ref]`, `#[subset]`, `#[counter]`: keep one"),
        );
        return;
    }
    if matches!(cont.data, Data::Enum(_))
        && (attrs.extended_ref.is_some() || attrs.subset.is_some() || attrs.counter.is_some())
    {
        return; // reported by `check_enum`
    }
    if let (Some(counter), false) = (&attrs.counter, derive == Derive::Document) {
        cx.error_spanned_by(
            &counter.tokens,
            "`#[counter]` belongs on an integer field of a `#[derive(Document)]` struct: the count of that document's children",
        );
    }
    if let Some(extended) = &attrs.extended_ref {
        // inside a struct embedded in documents (directly, in an `Option` or a bounded array),
        // the holder declares it under the embedding field's path
        if derive != Derive::Document && !matches!(cont.data, Data::Struct(_)) {
            cx.error_spanned_by(&extended.tokens, "`#[extended_ref]` belongs on a named field of a struct: a `#[derive(Document)]` root, or a `#[derive(BsonSchema)]` struct that roots embed (the copy is stored under the field's name)");
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
        let expected = crate::ast::copy_type_name(cont, field);
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
                // `count` names a Rust field of this struct: a stored name (after serde's
                // renames) is told apart, a misspelling gets the nearest field
                let by_stored = cont
                    .stored_fields()
                    .find(|f| f.ident.is_some() && f.stored_name == wanted);
                let names: Vec<String> = cont
                    .stored_fields()
                    .filter_map(|f| f.ident.map(crate::ast::unraw))
                    .collect();
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let message = match (by_stored, crate::near::near_miss(&wanted, &refs)) {
                    (Some(field), _) => format!(
                        "`count` names the field by its Rust name: `{wanted}` is how `{}` stores `{}`; write `count = \"{}\"`",
                        cont.ident,
                        crate::ast::unraw(field.ident.expect("named")),
                        crate::ast::unraw(field.ident.expect("named")),
                    ),
                    (None, Some(near)) => format!(
                        "`count` names no field `{wanted}` of `{}`: did you mean `{near}`?",
                        cont.ident
                    ),
                    (None, None) => format!(
                        "`count` names no field `{wanted}` of `{}`: name the integer field of this struct that holds the count (its Rust name)",
                        cont.ident
                    ),
                };
                cx.error_spanned_by(count, message);
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
    if field.stored_type().is_some() {
        return; // the stored type says what is stored (`stored_as`, `serde_bytes`, ...)
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

/// An `Option` `_id` that serde writes as `null` for `None`: a second such document is a
/// duplicate key.
fn check_optional_id(cx: &Ctxt, field: &Field) {
    let optional = crate::ast::generic_arg(field.ty, &["Option"]).is_some();
    if field.stored_name == "_id" && optional && !field.attrs.skip_serializing_if {
        cx.error_spanned_by(
            field.ty,
            format!(
                "field `{}` is the `_id` and an `Option`: serde writes `_id: null` for `None`, so a second such document \
                 is a duplicate key; let the server assign it with \
                 `#[serde(skip_serializing_if = \"Option::is_none\")]`, or make the id required",
                field.display_name()
            ),
        );
    }
}

/// `#[schema(open)]` leaves the value unchecked: a constraint or `not_null` beside it would
/// check nothing.
fn check_open(cx: &Ctxt, field: &Field) {
    if field.attrs.open.is_some() {
        let checks = field
            .attrs
            .constraints
            .iter()
            .map(|c| &c.tokens)
            .chain(&field.attrs.not_null);
        for tokens in checks {
            cx.error_spanned_by(
                tokens,
                format!(
                    "`{}` on field `{}`, which `open` leaves unchecked by the validator: it would check nothing; \
                     remove one of the two",
                    tokens.to_string().replace(' ', ""),
                    field.display_name()
                ),
            );
        }
    }
}

/// `#[schema(not_null)]` refuses `null` in the validator: only on an `Option` that serde leaves
/// out when `None` (else the crate's own writes of `None` would be refused).
fn check_not_null(cx: &Ctxt, field: &Field) {
    let Some(tokens) = &field.attrs.not_null else {
        return;
    };
    if crate::ast::generic_arg(field.ty, &["Option"]).is_none() {
        cx.error_spanned_by(
            tokens,
            format!(
                "`not_null` on field `{}`, which is not an `Option`: its validator already refuses `null`; \
                 remove `not_null`",
                field.display_name()
            ),
        );
    } else if !field.attrs.skip_serializing_if {
        cx.error_spanned_by(
            tokens,
            format!(
                "`not_null` on field `{}`, which serde writes as `null` when `None`: the validator would refuse \
                 the crate's own writes; add `#[serde(skip_serializing_if = \"Option::is_none\")]` so that `None` \
                 is an absent field",
                field.display_name()
            ),
        );
    }
}

/// `#[collection(same_id_as = Owner)]`: a struct whose `_id` it writes itself (the owner's), and
/// `optional_part` only with it.
fn check_part(cx: &Ctxt, cont: &Container) {
    let Some(collection) = &cont.attrs.collection else {
        return;
    };
    let collection = &collection.value;
    let Some(owner) = &collection.same_id_as else {
        if let Some(optional) = &collection.optional_part {
            cx.error_spanned_by(
                &optional.tokens,
                "`optional_part` says an owner may have no part: it goes with `same_id_as = Owner`, e.g. `#[collection(name = \"product_specs\", same_id_as = Product, optional_part)]`",
            );
        }
        return;
    };
    if !matches!(cont.data, Data::Struct(_)) {
        cx.error_spanned_by(
            &owner.tokens,
            "`same_id_as` stores one document under its owner's `_id`: it belongs on a struct",
        );
        return;
    }
    let id = cont.stored_fields().find(|f| f.stored_name == "_id");
    match id {
        None => cx.error_spanned_by(
            &owner.tokens,
            format!(
                "a part stored under its owner's `_id` holds that `_id`: add the field `#[serde(rename = \"_id\")] pub id: ...` with the id type of `{}`",
                type_name(&owner.value)
            ),
        ),
        Some(field) if crate::ast::generic_arg(field.ty, &["Option"]).is_some() => {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "the `_id` of a part is its owner's, never assigned by the server: make field `{}` the id type of `{}`, not an `Option`",
                    field.display_name(),
                    type_name(&owner.value)
                ),
            );
        }
        Some(_) => {}
    }
}

/// Rule 6: custom serialization hides the stored shape from the derive, unless the field says
/// what is stored (`#[schema(stored_as = T)]`) or the helper is one the derive knows.
fn check_custom_serialization(cx: &Ctxt, field: &Field) {
    if field.attrs.stored_as.is_some() {
        return;
    }
    if let Some((tokens, helper)) = &field.attrs.custom_serialize {
        if crate::serde_helpers::recognise(helper, field.ty).is_some() {
            return;
        }
        cx.error_spanned_by(
            tokens,
            format!(
                "`#[serde({tokens})]` on field `{}` writes the value with custom code, so the validator cannot know its stored shape; \
                 say what the code stores with `#[schema(stored_as = T)]` (e.g. `#[schema(stored_as = String)]` for a value written \
                 as a string), where `T` is a type whose serialization has the same shape",
                field.display_name()
            ),
        );
    }
}

/// `pages = false` keeps an index from ordering a relation's keyset pages (no `_id` appended):
/// on an index that does not start with a reference (or a copy's `_id`) and another key, it
/// would change nothing.
fn check_index_pages(cx: &Ctxt, cont: &Container) {
    let relations: Vec<String> = cont
        .stored_fields()
        .filter_map(|f| {
            if f.attrs.reference.is_some() {
                Some(f.stored_name.clone())
            } else if f.attrs.extended_ref.is_some() {
                Some(format!("{}._id", f.stored_name))
            } else {
                None
            }
        })
        .collect();
    for index in &cont.attrs.indexes {
        let (Some(pages), Some(keys)) = (&index.value.pages, &index.value.keys) else {
            continue;
        };
        if pages.value {
            continue;
        }
        // the keys' own errors were reported by `check_index_keys`
        let quiet = Ctxt::new();
        let stored: Vec<String> = keys
            .value
            .iter()
            .map(|k| resolve_key(&quiet, cont, k))
            .collect();
        let _ = quiet.check();
        let ordered = keys.value.len() >= 2
            && matches!(keys.value[1].kind, KeyKind::Direction(_))
            && relations.contains(&stored[0]);
        if !ordered {
            cx.error_spanned_by(
                &pages.tokens,
                "`pages = false` changes nothing here: it keeps an index that starts with a `#[reference]` field \
                 (or a copy's `_id`) and another key from ordering that relation's keyset pages; remove it",
            );
        }
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
    if let KeyField::Nested(idents) = &key.field {
        cx.error_spanned_by(
            key.field.tokens(),
            format!(
                "an index or shard key names a Rust field (`{}`) or a quoted stored path (\"customer._id\"), not a dotted Rust path",
                idents[0]
            ),
        );
    }
    resolve_field(cx, cont, &key.field)
}

/// The Rust field a key names, when it names one (a quoted path names none).
pub fn rust_field<'c, 'a>(cont: &'c Container<'a>, field: &KeyField) -> Option<&'c Field<'a>> {
    let KeyField::Rust(ident) = field else {
        return None;
    };
    let wanted = crate::ast::unraw(ident);
    let all: Vec<&Field> = match &cont.data {
        Data::Struct(fields) => fields.iter().collect(),
        Data::Enum(variants) => variants.iter().flat_map(|v| &v.fields).collect(),
        _ => Vec::new(),
    };
    all.into_iter()
        .find(|f| f.ident.is_some_and(|i| crate::ast::unraw(i) == wanted))
}

/// `#[query]`: fields exist, names are unique, the sort is not on a field stored as text that
/// orders unlike its values (checked by rustc through `Ordered` where the type decides).
fn check_queries(cx: &Ctxt, cont: &Container) {
    let mut names: Vec<String> = Vec::new();
    for query in &cont.attrs.queries {
        let query = &query.value;
        if let Some(name) = &query.name {
            let text = name.value.value();
            if names.contains(&text) {
                cx.error_spanned_by(&name.tokens, format!("two queries are named `{text}`"));
            }
            names.push(text);
        }
        let fields = query
            .eq
            .iter()
            .chain(query.any_of.iter().map(|(f, _)| f))
            .chain(query.range.iter())
            .chain(query.sort.iter().map(|k| &k.field));
        for field in fields {
            resolve_field(cx, cont, field);
        }
        for field in query
            .range
            .iter()
            .chain(query.sort.iter().map(|k| &k.field))
        {
            check_stored_order(cx, cont, field);
        }
        check_query_index(cx, cont, query);
    }
    for index in &cont.attrs.indexes {
        for key in index.value.keys.iter().flat_map(|k| &k.value) {
            if matches!(key.kind, KeyKind::Direction(_)) {
                check_stored_order(cx, cont, &key.field);
            }
        }
    }
}

/// Whether a Rust field is stored as an array (a multikey path when indexed).
pub fn is_array_field(field: &Field) -> bool {
    if field.attrs.embed.is_some() {
        return !crate::serde_helpers::type_last_name(field.ty)
            .is_some_and(|name| name.ends_with("Map"));
    }
    // an extended reference or a subset's previews in a sequence: copies kept in an array
    let copies_in_array = (field.attrs.extended_ref.is_some() || field.attrs.subset.is_some())
        && crate::ast::copy_shape(field.ty).0 == RefKind::Many;
    copies_in_array
        || field
            .reference_shape()
            .is_some_and(|shape| shape.kind == RefKind::Many)
}

/// The stored path a query field or an index key names when this derive knows it, and whether
/// it is multikey (under an array field): a Rust field, a quoted path whose first segment is a
/// stored field of the struct, or a dotted path to the `_id` of an extended reference's copy
/// (`customer.id`, stored `customer._id`). A dotted path through another struct's fields is
/// stored under names only that struct's derive knows (`None`: `Schema::build` checks it).
fn known_stored_path(cont: &Container, field: &KeyField) -> Option<(String, bool)> {
    match field {
        KeyField::Rust(_) => {
            let f = rust_field(cont, field)?;
            f.is_stored()
                .then(|| (f.stored_name.clone(), is_array_field(f)))
        }
        KeyField::Path(path) => {
            let path = path.value();
            let first = path.split('.').next()?;
            if first == "_id" {
                return Some((path.clone(), false));
            }
            let f = named_fields(cont)
                .into_iter()
                .find(|f| f.is_stored() && f.stored_name == first)?;
            Some((path.clone(), is_array_field(f)))
        }
        KeyField::Nested(idents) => {
            let [first, rest] = idents.as_slice() else {
                return None;
            };
            let f = rust_field(cont, &KeyField::Rust(first.clone()))?;
            (f.is_stored() && f.attrs.extended_ref.is_some() && crate::ast::unraw(rest) == "id")
                .then(|| (format!("{}._id", f.stored_name), is_array_field(f)))
        }
    }
}

/// `#[query(index = "name")]` naming an index declared on the same struct, all of whose keys
/// and the query's fields are paths whose stored form this derive knows (Rust fields, quoted
/// paths, the `_id` of a copy: [`known_stored_path`]): fitted here by mongod's planner rules, so
/// an index that cannot serve the query is a compile error at `index = `. Other cases are
/// checked by `Schema::build`, which sees every index.
fn check_query_index(cx: &Ctxt, cont: &Container, query: &crate::attr::Query) {
    use mongo_schema_planner::{esr_keys, fit, IndexShape, KeyDir, QueryShape, Verdict};
    let Some(wanted) = &query.index else {
        return;
    };
    let silent = Ctxt::new();
    let dir = |kind: &KeyKind| match kind {
        KeyKind::Direction(d) if *d < 0 => KeyDir::Desc,
        KeyKind::Direction(_) => KeyDir::Asc,
        KeyKind::Special(s) => KeyDir::Special(s.clone()),
    };
    let query_fields = query
        .eq
        .iter()
        .chain(query.any_of.iter().map(|(f, _)| f))
        .chain(query.range.iter())
        .chain(query.sort.iter().map(|k| &k.field));
    let mut multikey: Vec<String> = Vec::new();
    for field in query_fields {
        match known_stored_path(cont, field) {
            Some((path, true)) => multikey.push(path),
            Some((_, false)) => {}
            None => {
                let _ = silent.check();
                return;
            }
        }
    }
    let found = cont.attrs.indexes.iter().find_map(|index| {
        let keys = index.value.keys.as_ref()?;
        let stored: Vec<(String, KeyDir)> = keys
            .value
            .iter()
            .map(|k| (resolve_key(&silent, cont, k), dir(&k.kind)))
            .collect();
        let default = stored
            .iter()
            .map(|(p, d)| format!("{p}_{}", d.to_string().trim_matches('"')))
            .collect::<Vec<_>>()
            .join("_");
        let name = index
            .value
            .name
            .as_ref()
            .map_or(default, |n| n.value.clone());
        (name == wanted.value && index.value.partial.is_none()).then_some((
            name,
            stored,
            keys,
            index.value.collation.as_ref(),
        ))
    });
    let Some((name, keys, key_tokens, index_collation)) = found else {
        let _ = silent.check();
        return;
    };
    // another collation than the index's: which keys hold strings is `Schema::build`'s to
    // tell (it reads the validator), so the fit waits for it
    if effective_collation(cont, query.collation.as_ref())
        != effective_collation(cont, index_collation)
    {
        let _ = silent.check();
        return;
    }
    for key in &key_tokens.value {
        match known_stored_path(cont, &key.field) {
            Some((path, true)) if !multikey.contains(&path) => multikey.push(path),
            Some(_) => {}
            None => {
                let _ = silent.check();
                return;
            }
        }
    }
    // every path is known here (checked above)
    let stored = |f: &KeyField| {
        known_stored_path(cont, f)
            .map(|(p, _)| p)
            .unwrap_or_default()
    };
    let shape = QueryShape {
        eq: query.eq.iter().map(stored).collect(),
        in_: query
            .any_of
            .iter()
            .map(|(f, max)| (stored(f), *max as usize))
            .collect(),
        range: query.range.iter().map(stored).collect(),
        sort: query
            .sort
            .iter()
            .map(|k| (stored(&k.field), dir(&k.kind)))
            .collect(),
        collation: None,
        multikey_paths: multikey.clone(),
        // the most any release serves: `Schema::build` checks with the schema's own rules
        rules: mongo_schema_planner::ServerRules::Mongod81,
        geo: query
            .geo
            .as_ref()
            .map(|g| mongo_schema_planner::GeoPredicate {
                path: resolve_field(&silent, cont, &g.field),
                kind: if g.near {
                    mongo_schema_planner::GeoKind::Near
                } else {
                    mongo_schema_planner::GeoKind::Within
                },
            }),
        ..QueryShape::default()
    };
    let mut shape = shape;
    if query.pages && !shape.sort.iter().any(|(p, _)| p == "_id") {
        let direction = shape.sort.last().map_or(KeyDir::Asc, |(_, d)| d.clone());
        shape.sort.push(("_id".to_owned(), direction));
    }
    let _ = silent.check();
    let index = IndexShape {
        name: name.clone(),
        keys,
        unique: false,
        sparse: false,
        partial: false,
        collation: None,
        multikey_paths: multikey,
    };
    let conditions = !shape.eq.is_empty() || !shape.in_.is_empty() || !shape.range.is_empty();
    let rule = match fit(&index, &shape) {
        Verdict::Served { full_scan, .. } if !(full_scan && conditions) => return,
        Verdict::Served { .. } => format!(
            "index `{name}` does not start with a field the query constrains: mongod would scan all of it for the order"
        ),
        Verdict::BlockingSort(rule) | Verdict::Unusable(rule) | Verdict::Examines(rule) => rule.to_string(),
    };
    let esr: Vec<String> = esr_keys(&shape)
        .iter()
        .map(|(p, d)| format!("{p}: {d}"))
        .collect();
    cx.error_spanned_by(
        &wanted.tokens,
        format!(
            "query `{}` cannot be served by index `{name}`: {rule}; an index on {{ {} }} would serve it (declare it, or leave out `index =` and let the schema derive it)",
            query.name.as_ref().map(|n| n.value.value()).unwrap_or_default(),
            esr.join(", ")
        ),
    );
}

/// The collation a query or an index of the container runs under, as text: its own, or the
/// collection's default (`None`: the simple collation).
fn effective_collation(
    cont: &Container,
    own: Option<&crate::attr::Sp<crate::attr::Collation>>,
) -> Option<String> {
    let collation = own.or_else(|| {
        cont.attrs
            .collection
            .as_ref()
            .and_then(|c| c.value.collation.as_ref())
    })?;
    let c = &collation.value;
    (c.locale != "simple").then(|| {
        format!(
            "{}/{:?}/{:?}/{:?}/{:?}/{:?}/{:?}",
            c.locale,
            c.strength,
            c.case_level,
            c.case_first,
            c.numeric_ordering,
            c.alternate,
            c.backwards
        )
    })
}

/// A number or a date the user stores as a string (`#[schema(stored_as = String)]`): its text
/// does not sort like its values.
fn check_stored_order(cx: &Ctxt, cont: &Container, key: &KeyField) {
    let Some(field) = rust_field(cont, key) else {
        return;
    };
    let Some(stored) = &field.attrs.stored_as else {
        return;
    };
    let stored_name = crate::serde_helpers::type_last_name(&stored.value);
    let rust_name = crate::serde_helpers::type_last_name(field.ty);
    const ORDERED: &[&str] = &[
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "isize",
        "f32",
        "f64",
        "Decimal",
        "DateTime",
        "NaiveDateTime",
        "NaiveDate",
        "OffsetDateTime",
        "PrimitiveDateTime",
        "SystemTime",
    ];
    if stored_name.as_deref() == Some("String")
        && rust_name.as_deref().is_some_and(|n| ORDERED.contains(&n))
    {
        cx.error_spanned_by(
            key.tokens(),
            format!(
                "`{}` is a `{}` stored as a string (`stored_as = String`): text does not sort like the values (\"10\" < \"9\"), so an index key, a sort or a range on it is wrong; store it as a number or a date",
                field.display_name(),
                rust_name.unwrap_or_default()
            ),
        );
    }
}

/// The fields a key may name: a struct's, or those of every variant of an enum.
pub fn named_fields<'c, 'a>(cont: &'c Container<'a>) -> Vec<&'c Field<'a>> {
    match &cont.data {
        Data::Struct(fields) => fields.iter().collect(),
        Data::Enum(variants) => variants.iter().flat_map(|v| &v.fields).collect(),
        _ => Vec::new(),
    }
}

/// The stored path a key names (a Rust field through serde's renames, or a quoted path).
pub fn resolve_field(cx: &Ctxt, cont: &Container, key: &KeyField) -> String {
    match key {
        // the first segment's stored name, then Rust names: the stored path of the rest is
        // computed by rustc from the embedded types' `FieldPath` impls (see `gen::queries`)
        KeyField::Nested(idents) => {
            let first = resolve_field(cx, cont, &KeyField::Rust(idents[0].clone()));
            std::iter::once(first)
                .chain(idents[1..].iter().map(crate::ast::unraw))
                .collect::<Vec<_>>()
                .join(".")
        }
        KeyField::Rust(ident) => {
            let wanted = crate::ast::unraw(ident);
            let all = named_fields(cont);
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
                    let names: Vec<String> = all
                        .iter()
                        .filter_map(|f| f.ident.map(crate::ast::unraw))
                        .collect();
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    let hint = match crate::near::near_miss(&wanted, &names) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None => "index keys and query fields name fields of the struct (or a quoted stored path such as \"customer._id\")".to_owned(),
                    };
                    cx.error_spanned_by(
                        ident,
                        format!("no field `{wanted}` in `{}`; {hint}", cont.ident),
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
                let stored: Vec<&str> = cont
                    .stored_fields()
                    .map(|f| f.stored_name.as_str())
                    .collect();
                let hint = crate::near::near_miss(first, &stored)
                    .map(|near| format!("; did you mean \"{near}\"?"))
                    .unwrap_or_default();
                cx.error_spanned_by(
                    lit,
                    format!(
                        "`{first}` in \"{path}\" is not a stored field of `{}`{hint}",
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
