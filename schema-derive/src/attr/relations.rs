//! The relationships of a field: `#[reference]` and `#[embed]` (their types; their options are
//! read in `field.rs`), `#[extended_ref]` (copies) and `#[subset]` / `#[counter]`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Ident, LitStr};

use super::{
    one_of, parse_all, parse_type, positive, skip_value, string, unknown_near, value, Slot, Sp,
};
use crate::ctxt::Ctxt;
use crate::symbol::*;

#[derive(Clone, Copy, PartialEq)]
pub enum Sync {
    Frozen,
    Transactional,
    Async,
    Reconcile,
}

impl Sync {
    pub fn variant(self) -> &'static str {
        match self {
            Sync::Frozen => "Frozen",
            Sync::Transactional => "Transactional",
            Sync::Async => "Async",
            Sync::Reconcile => "Reconcile",
        }
    }
}

#[derive(Default)]
pub struct ExtendedRef {
    pub to: Option<syn::Type>,
    /// Rust field names of the source, with the literal they came from.
    pub fields: Vec<String>,
    pub fields_lit: Option<LitStr>,
    pub sync: Option<Sync>,
    /// `as = Name`: the generated copy type's name.
    pub name: Option<Ident>,
    pub max: Option<u64>,
    /// `on_delete = "keep" | "unset"`, with the value's literal for later checks.
    pub on_delete: Option<Sp<OnDelete>>,
}

/// What a deletion of the source does to its copies.
#[derive(Clone, Copy, PartialEq)]
pub enum OnDelete {
    Keep,
    Unset,
}

#[derive(Default)]
pub struct SubsetAttr {
    pub of: Option<syn::Type>,
    pub max: Option<u64>,
    /// Stored field of the child and preview, and 1 / -1.
    pub sort: Option<(String, i32)>,
    /// The `"-at"` literal, where a sort the child does not store is reported.
    pub sort_tokens: Option<TokenStream>,
    /// Rust field of the parent that counts the children.
    pub count: Option<Ident>,
    /// `filter = r#"{ "status": "active" }"#`: the JSON and the stored fields it names.
    pub filter: Option<SubsetFilter>,
    /// `sync = "..."` (default transactional).
    pub sync: Option<Sync>,
    /// `via = field`: the child's `#[reference]` field to the parent the subset follows (when
    /// the child holds several).
    pub via: Option<Ident>,
}

/// The equalities of a `#[subset(filter = ...)]`.
pub struct SubsetFilter {
    pub json: String,
    /// The stored fields compared (top-level names of the paths), for the check against the
    /// child's fields.
    pub fields: Vec<String>,
    pub span: proc_macro2::Span,
}

#[derive(Default)]
pub struct Reference {
    /// `max = N`: the bound of an array of references.
    pub max: Option<u64>,
    /// `to = T`: the target, for a plain id field.
    pub to: Option<syn::Type>,
}

pub struct Embed {
    pub max: Option<u64>,
    /// Parsed and validated; consumed by the capped-push update helpers (not generated yet).
    #[allow(dead_code)]
    pub cap: bool,
}

pub(super) fn parse_extended_ref(cx: &Ctxt, attr: &syn::Attribute) -> ExtendedRef {
    let mut to = Slot::new(cx, "extended_ref", TO);
    let mut fields = Slot::new(cx, "extended_ref", FIELDS);
    let mut sync = Slot::new(cx, "extended_ref", SYNC);
    let mut name: Slot<Option<Ident>> = Slot::new(cx, "extended_ref", Symbol("as"));
    let mut max = Slot::new(cx, "extended_ref", MAX);
    let mut on_delete: Slot<Option<OnDelete>> = Slot::new(cx, "extended_ref", ON_DELETE);
    let mut fields_lit = None;
    if matches!(attr.meta, syn::Meta::Path(_)) {
        cx.error_spanned_by(
            attr,
            "`#[extended_ref]` needs `to = T`, `fields = \"...\"` and `sync = \"...\"`, e.g. `#[extended_ref(to = Customer, fields = \"name\", sync = \"transactional\")]`",
        );
        return ExtendedRef::default();
    }
    parse_all(cx, attr, |meta| {
        if meta.path == TO {
            let parsed = parse_type(&value(&meta)?, "to = Customer");
            to.set_or_poison(&meta.path, parsed);
        } else if meta.path == FIELDS {
            let parsed = string(&value(&meta)?, "fields = \"name, email\"").and_then(|lit| {
                let names: Vec<String> = lit
                    .value()
                    .split(',')
                    .map(|f| f.trim().to_owned())
                    .filter(|f| !f.is_empty())
                    .collect();
                if names.is_empty() {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "`fields` names at least one field of the referenced type",
                    ));
                }
                if let Some(bad) = names.iter().find(|n| syn::parse_str::<Ident>(n).is_err()) {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        format!("`{bad}` is not a field name"),
                    ));
                }
                if names.iter().any(|n| n == "id" || n == "_id") {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "the copy always holds the source's `_id` (as its field `id`): list only the other fields",
                    ));
                }
                if let Some((_, twice)) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)) {
                    return Err(syn::Error::new_spanned(&lit, format!("`{twice}` is listed twice")));
                }
                fields_lit = Some(lit.clone());
                Ok((lit.to_token_stream(), names))
            });
            fields.set_or_poison(&meta.path, parsed);
        } else if meta.path == SYNC {
            let parsed = one_of(&meta, &["frozen", "transactional", "async", "reconcile"]).map(
                |(tokens, s)| {
                    let sync = match s.as_str() {
                        "frozen" => Sync::Frozen,
                        "transactional" => Sync::Transactional,
                        "async" => Sync::Async,
                        _ => Sync::Reconcile,
                    };
                    (tokens, Some(sync))
                },
            );
            sync.set_or_poison(&meta.path, parsed);
        } else if meta.path == ON_DELETE {
            let parsed = one_of(&meta, &["keep", "unset"]).map(|(tokens, s)| {
                let on_delete = match s.as_str() {
                    "keep" => OnDelete::Keep,
                    _ => OnDelete::Unset,
                };
                (tokens, Some(on_delete))
            });
            on_delete.set_or_poison(&meta.path, parsed);
        } else if meta.path.is_ident("as") {
            let expr = value(&meta)?;
            let parsed = syn::parse2::<Ident>(expr.to_token_stream())
                .map(|ident| (expr.to_token_stream(), Some(ident)))
                .map_err(|_| {
                    syn::Error::new_spanned(
                        &expr,
                        "`as` expects the name of the copy type, e.g. `as = TicketCustomer`",
                    )
                });
            name.set_or_poison(&meta.path, parsed);
        } else if meta.path == MAX {
            let parsed = positive(&value(&meta)?, "max = 20");
            max.set_or_poison(&meta.path, parsed);
        } else {
            match unknown_near(
                cx,
                &meta,
                "extended_ref",
                &["to", "fields", "sync", "as", "max", "on_delete"],
            )? {
                Some("to") => to.poison(&meta.path),
                Some("fields") => fields.poison(&meta.path),
                Some("sync") => sync.poison(&meta.path),
                Some("max") => max.poison(&meta.path),
                _ => {}
            }
        }
        Ok(())
    });
    let sync = sync.get();
    if sync.is_none() {
        cx.error_spanned_by(
            attr,
            "`#[extended_ref]` needs `sync = \"...\"`: a copy without a sync strategy drifts unnoticed; \
             choose \"frozen\" (a snapshot), \"transactional\", \"async\" or \"reconcile\"",
        );
    }
    let to = to.get();
    if to.is_none() {
        cx.error_spanned_by(
            attr,
            "`#[extended_ref]` needs the referenced type: `to = T`",
        );
    }
    let fields = fields.get();
    if fields.is_none() {
        cx.error_spanned_by(
            attr,
            "`#[extended_ref]` needs the copied fields: `fields = \"name\"`",
        );
    }
    ExtendedRef {
        to: to.and_then(|t| t.value),
        fields: fields.map(|f| f.value).unwrap_or_default(),
        fields_lit,
        sync: sync.and_then(|s| s.value),
        name: name.get().and_then(|n| n.value),
        max: max.get().map(|m| m.value),
        on_delete: on_delete.get().and_then(|o| {
            Some(Sp {
                value: o.value?,
                tokens: o.tokens,
            })
        }),
    }
}

/// What a `#[subset]`-like attribute keeps of the children: previews and a count, or (a
/// `#[counter]`) the count alone.
#[derive(Clone, Copy, PartialEq)]
pub enum Children {
    Subset,
    Counter,
}

impl Children {
    fn name(self) -> &'static str {
        match self {
            Children::Subset => "subset",
            Children::Counter => "counter",
        }
    }
}

/// `#[subset(...)]`, or with `Children::Counter` `#[counter(of = C, filter = .., via = f,
/// sync = ..)]`: one parser, a counter being a subset without previews (its `max`, `sort` and
/// `count` are refused with what the counter is instead).
pub(super) fn parse_subset(cx: &Ctxt, attr: &syn::Attribute, kind: Children) -> SubsetAttr {
    let name = kind.name();
    let counter = kind == Children::Counter;
    let mut of = Slot::new(cx, name, OF);
    let mut max = Slot::new(cx, name, MAX);
    let mut sort: Slot<Option<(String, i32)>> = Slot::new(cx, name, SORT);
    let mut count: Slot<Option<Ident>> = Slot::new(cx, name, COUNT);
    let mut filter: Slot<Option<SubsetFilter>> = Slot::new(cx, name, FILTER);
    let mut sync: Slot<Option<Sync>> = Slot::new(cx, name, SYNC);
    let mut via: Slot<Option<Ident>> = Slot::new(cx, name, VIA);
    if matches!(attr.meta, syn::Meta::Path(_)) {
        let usage = if counter {
            "`#[counter]` needs the child type it counts: `of = T`, e.g. `#[counter(of = Like)] pub like_count: i64`"
        } else {
            "`#[subset]` needs `of = T`, `max = N` and `sort = \"-field\"`, e.g. `#[subset(of = Message, max = 1, sort = \"-at\", count = \"message_count\")]`"
        };
        cx.error_spanned_by(attr, usage);
        return SubsetAttr::default();
    }
    parse_all(cx, attr, |meta| {
        if meta.path == OF {
            let parsed = parse_type(&value(&meta)?, "of = Message");
            of.set_or_poison(&meta.path, parsed);
        } else if counter && (meta.path == MAX || meta.path == SORT || meta.path == COUNT) {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "a `#[counter]` keeps the count alone, in the field it is on: it has no `{}`; for previews of the children with their count, use `#[subset(of = T, max = N, sort = \"-field\", count = \"field\")]`",
                    meta.path.to_token_stream()
                ),
            );
            skip_value(&meta)?;
        } else if meta.path == MAX {
            let parsed = positive(&value(&meta)?, "max = 5");
            max.set_or_poison(&meta.path, parsed);
        } else if meta.path == SORT {
            let parsed = string(&value(&meta)?, "sort = \"-at\"").and_then(|lit| {
                let text = lit.value();
                let (field, direction) = match text.strip_prefix('-') {
                    Some(field) => (field.to_owned(), -1),
                    None => (text.trim_start_matches('+').to_owned(), 1),
                };
                if field.is_empty() || field.contains(char::is_whitespace) {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "`sort` is a stored field, `-` first for descending: `sort = \"-at\"`",
                    ));
                }
                Ok((lit.to_token_stream(), Some((field, direction))))
            });
            sort.set_or_poison(&meta.path, parsed);
        } else if meta.path == COUNT {
            let parsed = string(&value(&meta)?, "count = \"message_count\"").and_then(|lit| {
                syn::parse_str::<Ident>(&lit.value())
                    .map(|ident| {
                        (
                            lit.to_token_stream(),
                            Some(Ident::new(&ident.to_string(), lit.span())),
                        )
                    })
                    .map_err(|_| {
                        syn::Error::new_spanned(&lit, "`count` names a field of this struct")
                    })
            });
            count.set_or_poison(&meta.path, parsed);
        } else if meta.path == FILTER {
            let example = "filter = r#\"{ \"status\": \"active\" }\"#";
            let parsed = string(&value(&meta)?, example).and_then(|lit| {
                let filter = parse_subset_filter(&lit.value()).map_err(|problem| {
                    syn::Error::new_spanned(&lit, format!("{problem}, e.g. `{example}`"))
                })?;
                Ok((
                    lit.to_token_stream(),
                    Some(SubsetFilter {
                        json: lit.value(),
                        fields: filter,
                        span: lit.span(),
                    }),
                ))
            });
            filter.set_or_poison(&meta.path, parsed);
        } else if meta.path == SYNC {
            let parsed = one_of(&meta, &["transactional", "async", "reconcile", "frozen"]).and_then(
                |(tokens, s)| match s.as_str() {
                    "transactional" => Ok((tokens, Some(Sync::Transactional))),
                    "async" => Ok((tokens, Some(Sync::Async))),
                    "reconcile" => Ok((tokens, Some(Sync::Reconcile))),
                    _ if counter => Err(syn::Error::new_spanned(
                        &tokens,
                        "a counter is never frozen: it follows the children it counts; \
                         use `sync = \"transactional\"` (the helpers' transactions, the default), `\"async\"` (the sync worker follows the children) or `\"reconcile\"`",
                    )),
                    _ => Err(syn::Error::new_spanned(
                        &tokens,
                        "a subset is never frozen: its previews follow the children (seed 000: \"define how the preview stays current\"); \
                         use `sync = \"transactional\"` (the helpers' transactions, the default), `\"async\"` (the sync worker follows the children) or `\"reconcile\"`",
                    )),
                },
            );
            sync.set_or_poison(&meta.path, parsed);
        } else if meta.path == VIA {
            let expr = value(&meta)?;
            let parsed = syn::parse2::<Ident>(expr.to_token_stream())
                .map(|ident| (expr.to_token_stream(), Some(ident)))
                .map_err(|_| {
                    syn::Error::new_spanned(
                        &expr,
                        "`via` names the child's `#[reference]` field to this type, e.g. `via = followed`",
                    )
                });
            via.set_or_poison(&meta.path, parsed);
        } else {
            let expected: &[&str] = if counter {
                &["of", "filter", "sync", "via"]
            } else {
                &["of", "max", "sort", "count", "filter", "sync", "via"]
            };
            match unknown_near(cx, &meta, name, expected)? {
                Some("of") => of.poison(&meta.path),
                Some("sort") => sort.poison(&meta.path),
                Some("max") => max.poison(&meta.path),
                _ => {}
            }
        }
        Ok(())
    });
    let max = max.get();
    if max.is_none() && !counter {
        cx.error_spanned_by(
            attr,
            "`#[subset]` needs its bound: `max = N` children are copied into the parent (seed 003: a capped preview)",
        );
    }
    let of = of.get();
    if of.is_none() {
        cx.error_spanned_by(attr, format!("`#[{name}]` needs the child type: `of = T`"));
    }
    let sort = sort.get();
    if sort.is_none() && !counter {
        cx.error_spanned_by(
            attr,
            "`#[subset]` needs the order of the children: `sort = \"-at\"` (newest first)",
        );
    }
    SubsetAttr {
        of: of.and_then(|o| o.value),
        max: max.map(|m| m.value),
        sort_tokens: sort.as_ref().map(|s| s.tokens.clone()),
        sort: sort.and_then(|s| s.value),
        count: count.get().and_then(|c| c.value),
        filter: filter.get().and_then(|f| f.value),
        sync: sync.get().and_then(|s| s.value),
        via: via.get().and_then(|v| v.value),
    }
}

/// The stored fields of a subset's filter: a JSON object of equalities on stored fields, the
/// shape a partial index takes (`{ "status": "active", "kind.name": "book" }`), values being
/// strings, numbers, booleans or `null`. Anything else is refused with what to write instead.
fn parse_subset_filter(json: &str) -> Result<Vec<String>, String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("`filter` is not valid JSON: {e}"))?;
    let serde_json::Value::Object(filter) = value else {
        return Err("`filter` is a document of equalities on the child's stored fields".to_owned());
    };
    if filter.is_empty() {
        return Err("`filter` is empty: leave it out to preview every child".to_owned());
    }
    let mut fields = Vec::new();
    for (key, value) in &filter {
        if key.starts_with('$') {
            return Err(format!(
                "`filter` holds equalities only, and `{key}` is an operator: a subset must decide locally and on the server alike whether a child belongs"
            ));
        }
        if key.is_empty() || key.split('.').any(|s| s.is_empty() || s.starts_with('$')) {
            return Err(format!("`{key}` is not a stored field path"));
        }
        if key == "_id" || key.starts_with("_id.") {
            return Err("`filter` compares the child's fields, not its `_id`".to_owned());
        }
        match value {
            serde_json::Value::Object(inner) if inner.keys().any(|k| k.starts_with('$')) => {
                let operator = inner
                    .keys()
                    .find(|k| k.starts_with('$'))
                    .cloned()
                    .unwrap_or_default();
                return Err(format!(
                    "`filter` holds equalities only, and `{key}` uses `{operator}`: compare with a value, `\"{key}\": \"active\"`"
                ));
            }
            serde_json::Value::Object(_) | serde_json::Value::Array(_) => {
                return Err(format!(
                    "`{key}` is compared with a document or an array: a subset's filter compares a field with a string, number, boolean or null"
                ));
            }
            _ => {}
        }
        let top = key.split('.').next().unwrap_or(key).to_owned();
        if !fields.contains(&top) {
            fields.push(top);
        }
    }
    Ok(fields)
}
