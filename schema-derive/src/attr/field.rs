//! The field's attributes: `#[embed]`, `#[reference]` and the field's `#[schema(...)]` and
//! `#[serde(...)]` are read here; `#[extended_ref]`, `#[subset]` and `#[counter]` are handed to
//! their parsers in `relations.rs`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Expr, ExprLit, Lit, LitStr};

use super::relations::{parse_extended_ref, parse_subset};
use super::schema::{length, number};
use super::{
    parse_all, parse_rename, positive, skip_value, stored_type, string, unknown, unknown_near,
    unsigned, unsupported_serde, value, Children, Constraint, ConstraintKind, ConstraintValue,
    Embed, ExtendedRef, Reference, Slot, Sp, SubsetAttr,
};
use crate::ctxt::Ctxt;
use crate::symbol::*;

pub struct Field {
    pub embed: Option<Sp<Embed>>,
    pub constraints: Vec<Sp<Constraint>>,
    /// Any of `#[reference]`, `#[extended_ref]`, `#[subset]`, `#[counter]` (for the bound
    /// check).
    pub relation: Option<TokenStream>,
    pub reference: Option<Sp<Reference>>,
    pub extended_ref: Option<Sp<ExtendedRef>>,
    pub subset: Option<Sp<SubsetAttr>>,
    /// `#[counter(of = C, filter = .., via = f, sync = ..)]`: a subset without previews (its
    /// `max`, `sort` and `count` unset).
    pub counter: Option<Sp<SubsetAttr>>,
    /// `#[serde(rename = "...")]`: the literal, so errors about the stored name point at it.
    pub rename: Option<LitStr>,
    /// `skip` or `skip_serializing`: never written.
    pub skip_serializing: bool,
    /// `skip_serializing_if`: sometimes absent.
    pub skip_serializing_if: bool,
    /// `serialize_with` / `with`: written by custom code (the option's tokens and the helper's
    /// path as written in the string).
    pub custom_serialize: Option<(TokenStream, String)>,
    /// `deserialize_with` / `with`: read by custom code (the function's path as written, with
    /// `::deserialize` for `with`).
    pub custom_deserialize: Option<String>,
    /// `#[serde(flatten)]`: the value's fields are stored at this level.
    pub flatten: Option<TokenStream>,
    /// `#[schema(stored_as = T)]`: the value is stored as `T` would be.
    pub stored_as: Option<Sp<syn::Type>>,
    /// `#[schema(not_null)]`: an `Option` serde skips when `None`, whose validator refuses
    /// `null` (absent, never null).
    pub not_null: Option<TokenStream>,
    /// `#[schema(open)]`: the validator leaves the field's value unchecked (`{}`), as a
    /// server's validator that does not declare it did; the Rust type is this service's.
    pub open: Option<TokenStream>,
}

impl Field {
    pub fn from_ast(cx: &Ctxt, field: &syn::Field) -> Self {
        let mut embed: Option<Sp<Embed>> = None;
        let mut constraints = Vec::new();
        let mut relation = None;
        let mut reference: Option<Sp<Reference>> = None;
        let mut extended_ref: Option<Sp<ExtendedRef>> = None;
        let mut subset: Option<Sp<SubsetAttr>> = None;
        let mut counter: Option<Sp<SubsetAttr>> = None;
        let mut rename = Slot::new(cx, "serde", RENAME);
        let mut skip_serializing = false;
        let mut skip_serializing_if = false;
        let mut custom_serialize = None;
        let mut custom_deserialize = None;
        let mut flatten = None;
        let mut stored_as: Slot<Option<syn::Type>> = Slot::new(cx, "schema", STORED_AS);
        let mut seen_constraints: Vec<&'static str> = Vec::new();
        let mut not_null = Slot::new(cx, "schema", NOT_NULL);
        let mut open = Slot::new(cx, "schema", OPEN);

        for attr in &field.attrs {
            let path = attr.path();
            if path == EMBED {
                if embed.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[embed]` attribute");
                    continue;
                }
                let mut max = Slot::new(cx, "embed", MAX);
                let mut cap = Slot::new(cx, "embed", CAP);
                if matches!(attr.meta, syn::Meta::Path(_)) {
                    embed = Some(Sp {
                        value: Embed {
                            max: None,
                            cap: false,
                        },
                        tokens: attr.to_token_stream(),
                    });
                    continue;
                }
                parse_all(cx, attr, |meta| {
                    if meta.path == MAX {
                        let parsed = positive(&value(&meta)?, "max = 20");
                        max.set_or_poison(&meta.path, parsed);
                    } else if meta.path == CAP {
                        cap.set(&meta.path, ());
                    } else if unknown_near(cx, &meta, "embed", &["max", "cap"])? == Some("max") {
                        // a misspelt `max` (`maxx`): one error, not also "needs its bound"
                        max.poison(&meta.path);
                    }
                    Ok(())
                });
                embed = Some(Sp {
                    value: Embed {
                        max: max.get().map(|m| m.value),
                        cap: cap.get().is_some(),
                    },
                    tokens: attr.to_token_stream(),
                });
            } else if path == SCHEMA {
                parse_all(cx, attr, |meta| {
                    if meta.path == STORED_AS {
                        let parsed = stored_type(&meta);
                        stored_as.set_or_poison(&meta.path, parsed);
                        return Ok(());
                    }
                    if meta.path == NOT_NULL {
                        not_null.set(&meta.path, ());
                        return Ok(());
                    }
                    if meta.path == OPEN {
                        open.set(&meta.path, ());
                        return Ok(());
                    }
                    let (keyword, kind) = if meta.path == MAX_LENGTH {
                        ("maxLength", ConstraintKind::String)
                    } else if meta.path == MIN_LENGTH {
                        ("minLength", ConstraintKind::String)
                    } else if meta.path == PATTERN {
                        ("pattern", ConstraintKind::String)
                    } else if meta.path == MINIMUM {
                        ("minimum", ConstraintKind::Number)
                    } else if meta.path == MAXIMUM {
                        ("maximum", ConstraintKind::Number)
                    } else {
                        return unknown(
                            cx,
                            &meta,
                            "schema",
                            &[
                                "max_length",
                                "min_length",
                                "pattern",
                                "minimum",
                                "maximum",
                                "stored_as",
                                "not_null",
                                "open",
                            ],
                        );
                    };
                    let expr = value(&meta)?;
                    let parsed = match keyword {
                        "pattern" => string(&expr, "pattern = \"^[A-Z]{3}$\"")
                            .map(|lit| ConstraintValue::Str(lit.value())),
                        "maxLength" | "minLength" => {
                            let option = meta.path.to_token_stream().to_string();
                            unsigned(&expr, &format!("{option} = 80"))
                                .and_then(|(tokens, n)| length(tokens, n, &option, keyword))
                        }
                        _ => number(&expr, &meta.path.to_token_stream().to_string()),
                    };
                    let value = match parsed {
                        Ok(value) => value,
                        Err(error) => {
                            cx.syn_error(error);
                            return Ok(());
                        }
                    };
                    if seen_constraints.contains(&keyword) {
                        cx.error_spanned_by(
                            &meta.path,
                            format!(
                                "duplicate `schema` option `{}`",
                                meta.path.to_token_stream()
                            ),
                        );
                    } else {
                        seen_constraints.push(keyword);
                        constraints.push(Sp {
                            value: Constraint {
                                keyword,
                                value,
                                kind,
                            },
                            tokens: meta.path.to_token_stream(),
                        });
                    }
                    Ok(())
                });
            } else if path == REFERENCE {
                if reference.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[reference]` attribute");
                    continue;
                }
                let mut max = Slot::new(cx, "reference", MAX);
                let mut to = Slot::new(cx, "reference", TO);
                if !matches!(attr.meta, syn::Meta::Path(_)) {
                    parse_all(cx, attr, |meta| {
                        if meta.path == MAX {
                            let parsed = positive(&value(&meta)?, "max = 200");
                            max.set_or_poison(&meta.path, parsed);
                        } else if meta.path == TO {
                            let expr = value(&meta)?;
                            let parsed = syn::parse2::<syn::Type>(expr.to_token_stream())
                                .map(|ty| (expr.to_token_stream(), Some(ty)))
                                .map_err(|_| {
                                    syn::Error::new_spanned(
                                        &expr,
                                        "`to` expects the referenced type, e.g. `to = Customer`",
                                    )
                                });
                            to.set_or_poison(&meta.path, parsed);
                        } else {
                            match unknown_near(cx, &meta, "reference", &["max", "to"])? {
                                Some("max") => max.poison(&meta.path),
                                Some("to") => to.poison(&meta.path),
                                _ => {}
                            }
                        }
                        Ok(())
                    });
                }
                reference = Some(Sp {
                    value: Reference {
                        max: max.get().map(|m| m.value),
                        to: to.get().and_then(|t| t.value),
                    },
                    tokens: attr.to_token_stream(),
                });
            } else if path == EXTENDED_REF {
                if extended_ref.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[extended_ref]` attribute");
                    continue;
                }
                relation = Some(path.to_token_stream());
                extended_ref = Some(Sp {
                    value: parse_extended_ref(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == SUBSET {
                if subset.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[subset]` attribute");
                    continue;
                }
                relation = Some(path.to_token_stream());
                subset = Some(Sp {
                    value: parse_subset(cx, attr, Children::Subset),
                    tokens: attr.to_token_stream(),
                });
            } else if path == COUNTER {
                if counter.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[counter]` attribute");
                    continue;
                }
                relation = Some(path.to_token_stream());
                counter = Some(Sp {
                    value: parse_subset(cx, attr, Children::Counter),
                    tokens: attr.to_token_stream(),
                });
            } else if path == COLLECTION || path == INDEX || path == QUERY {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "`#[{}]` is a container attribute; put it on the struct",
                        path.to_token_stream()
                    ),
                );
            } else if path == SERDE {
                parse_all(cx, attr, |meta| {
                    if meta.path == RENAME {
                        if let Some(name) = parse_rename(&meta)? {
                            rename.set(&meta.path, name);
                        }
                    } else if meta.path == SKIP || meta.path == SKIP_SERIALIZING {
                        skip_serializing = true;
                    } else if meta.path == SKIP_SERIALIZING_IF {
                        skip_serializing_if = true;
                        skip_value(&meta)?;
                    } else if meta.path == FLATTEN {
                        flatten = Some(meta.path.to_token_stream());
                    } else if meta.path == WITH || meta.path == SERIALIZE_WITH {
                        let expr = value(&meta)?;
                        let helper = match &expr {
                            Expr::Lit(ExprLit {
                                lit: Lit::Str(lit), ..
                            }) => lit.value(),
                            _ => String::new(),
                        };
                        if meta.path == WITH && !helper.is_empty() {
                            custom_deserialize = Some(format!("{helper}::deserialize"));
                        }
                        custom_serialize = Some((meta.path.to_token_stream(), helper));
                    } else if meta.path.is_ident("deserialize_with") {
                        if let Expr::Lit(ExprLit {
                            lit: Lit::Str(lit), ..
                        }) = value(&meta)?
                        {
                            custom_deserialize = Some(lit.value());
                        }
                    } else if meta.path == GETTER {
                        unsupported_serde(cx, &meta.path, "remote derives are not supported");
                        skip_value(&meta)?;
                    } else {
                        // skip_deserializing, default, alias, borrow, bound:
                        // they change only how values are read
                        skip_value(&meta)?;
                    }
                    Ok(())
                });
            }
        }

        Field {
            embed,
            constraints,
            relation,
            reference,
            extended_ref,
            subset,
            counter,
            rename: rename.get().map(|r| r.value),
            skip_serializing,
            skip_serializing_if,
            custom_serialize,
            custom_deserialize,
            flatten,
            not_null: not_null.get().map(|n| n.tokens),
            open: open.get().map(|o| o.tokens),
            stored_as: stored_as.get().and_then(|s| {
                Some(Sp {
                    value: s.value?,
                    tokens: s.tokens,
                })
            }),
        }
    }
}
