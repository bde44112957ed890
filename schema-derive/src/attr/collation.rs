//! `collation(locale = "en", strength = 2, ...)`, an option of `#[collection]`, `#[index]` and
//! `#[query]`: mongod's collation document, option by option.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;

use super::{boolean, one_of, string, unknown, unsigned, value, Slot, Sp};
use crate::ctxt::Ctxt;
use crate::symbol::*;

/// A collation as written; `locale` is required.
#[derive(Default, Clone)]
pub struct Collation {
    pub locale: String,
    pub strength: Option<u8>,
    pub case_level: Option<bool>,
    pub case_first: Option<String>,
    pub numeric_ordering: Option<bool>,
    pub alternate: Option<String>,
    pub backwards: Option<bool>,
}

const EXAMPLE: &str = "collation(locale = \"en\", strength = 2)";

/// A locale mongod refuses to build a collator for (`collator_factory_icu.cpp`,
/// `validateLocaleID`), with the locale it most likely means.
fn unknown_locale(locale: &str) -> String {
    let head = format!(
        "mongod has no collation locale \"{}\" and refuses the collation (BadValue)",
        locale.escape_default()
    );
    match mongo_schema_planner::collation::suggestion(locale) {
        Some(near) => format!("{head}: did you mean \"{near}\"?"),
        None => format!(
            "{head}: use a locale mongod lists (an ICU locale such as \"en\", \"fr_CA\" or \
             \"de@collation=phonebook\"), or \"simple\" for the binary comparison"
        ),
    }
}

/// Parses the parenthesised options of `collation`; each malformed or unknown option is
/// reported to `cx`, a missing locale too.
pub fn parse(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<(TokenStream, Collation)> {
    let mut locale: Slot<String> = Slot::new(cx, "collation", LOCALE);
    let mut strength: Slot<u8> = Slot::new(cx, "collation", STRENGTH);
    let mut case_level: Slot<bool> = Slot::new(cx, "collation", CASE_LEVEL);
    let mut case_first: Slot<String> = Slot::new(cx, "collation", CASE_FIRST);
    let mut numeric: Slot<bool> = Slot::new(cx, "collation", NUMERIC_ORDERING);
    let mut alternate: Slot<String> = Slot::new(cx, "collation", ALTERNATE);
    let mut backwards: Slot<bool> = Slot::new(cx, "collation", BACKWARDS);
    let tokens = meta.path.to_token_stream();
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!(
            "`collation` lists its options: `{EXAMPLE}` (a case-insensitive comparison)"
        )));
    }
    meta.parse_nested_meta(|inner| {
        if inner.path == LOCALE {
            let parsed = string(&value(&inner)?, "locale = \"en\"").and_then(|lit| {
                if lit.value().is_empty() {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "a collation's `locale` is an ICU locale such as \"en\" or \"fr_CA\", or \"simple\"",
                    ));
                }
                let name = lit.value();
                if !mongo_schema_planner::collation::is_supported(&name) {
                    return Err(syn::Error::new_spanned(&lit, unknown_locale(&name)));
                }
                Ok((lit.to_token_stream(), name))
            });
            locale.set_or_poison(&inner.path, parsed);
        } else if inner.path == STRENGTH {
            let parsed = unsigned(&value(&inner)?, "strength = 2").and_then(|(t, n)| {
                if (1..=5).contains(&n) {
                    Ok((t, n as u8))
                } else {
                    Err(syn::Error::new_spanned(
                        &t,
                        "a collation's `strength` is 1 (base letters) to 5 (identical); 2 ignores case, 3 (the default) does not",
                    ))
                }
            });
            strength.set_or_poison(&inner.path, parsed);
        } else if inner.path == CASE_LEVEL {
            let parsed = boolean(&value(&inner)?, "case_level = true");
            case_level.set_or_poison(&inner.path, parsed);
        } else if inner.path == CASE_FIRST {
            let parsed = one_of(&inner, &["upper", "lower", "off"]);
            case_first.set_or_poison(&inner.path, parsed);
        } else if inner.path == NUMERIC_ORDERING {
            let parsed = boolean(&value(&inner)?, "numeric_ordering = true");
            numeric.set_or_poison(&inner.path, parsed);
        } else if inner.path == ALTERNATE {
            let parsed = one_of(&inner, &["non-ignorable", "shifted"]);
            alternate.set_or_poison(&inner.path, parsed);
        } else if inner.path == BACKWARDS {
            let parsed = boolean(&value(&inner)?, "backwards = true");
            backwards.set_or_poison(&inner.path, parsed);
        } else {
            unknown(
                cx,
                &inner,
                "collation",
                &[
                    "locale",
                    "strength",
                    "case_level",
                    "case_first",
                    "numeric_ordering",
                    "alternate",
                    "backwards",
                ],
            )?;
        }
        Ok(())
    })?;
    let Some(locale) = locale.get() else {
        return Err(syn::Error::new_spanned(
            tokens,
            format!("`collation` needs a locale: `{EXAMPLE}`"),
        ));
    };
    fn given<T>(slot: Option<Sp<T>>) -> Option<T> {
        slot.map(|s| s.value)
    }
    Ok((
        tokens,
        Collation {
            locale: locale.value,
            strength: given(strength.get()),
            case_level: given(case_level.get()),
            case_first: given(case_first.get()),
            numeric_ordering: given(numeric.get()),
            alternate: given(alternate.get()),
            backwards: given(backwards.get()),
        },
    ))
}
