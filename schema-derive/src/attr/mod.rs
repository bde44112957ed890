//! Parses the attributes of a container, field or variant into typed slots, one
//! `parse_nested_meta` loop per attribute. Unknown, duplicated and malformed options are reported
//! to the [`Ctxt`] and parsing goes on, so every mistake of an item is reported at once.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{parenthesized, token, Expr, ExprLit, ExprUnary, Ident, Lit, LitInt, LitStr, Token};

use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::*;

mod collation;
mod geo;
mod timeseries;
pub use collation::Collation;
pub use geo::GeoCondition;
pub use timeseries::TimeSeriesAttr;

/// A value with the tokens it came from, so later checks can point at them.
#[derive(Clone)]
pub struct Sp<T> {
    pub value: T,
    pub tokens: TokenStream,
}

/// One optional setting; setting it twice is an error on the second occurrence.
struct Slot<'c, T> {
    cx: &'c Ctxt,
    attr: &'static str,
    name: Symbol,
    value: Option<Sp<T>>,
}

impl<'c, T> Slot<'c, T> {
    fn new(cx: &'c Ctxt, attr: &'static str, name: Symbol) -> Self {
        Slot {
            cx,
            attr,
            name,
            value: None,
        }
    }

    fn set<A: ToTokens>(&mut self, tokens: A, value: T) {
        let tokens = tokens.into_token_stream();
        if self.value.is_some() {
            self.cx.error_spanned_by(
                tokens,
                format!("duplicate `{}` option `{}`", self.attr, self.name),
            );
        } else {
            self.value = Some(Sp { value, tokens });
        }
    }

    /// Marks a malformed option as given, so that no later check reports it missing (the
    /// malformed value was reported; nothing is generated while errors exist).
    fn poison<A: ToTokens>(&mut self, tokens: A)
    where
        T: Default,
    {
        if self.value.is_none() {
            self.value = Some(Sp {
                value: T::default(),
                tokens: tokens.into_token_stream(),
            });
        }
    }

    /// Sets the value, or records the error and poisons the slot.
    fn set_or_poison<A: ToTokens>(&mut self, path: A, parsed: syn::Result<(TokenStream, T)>)
    where
        T: Default,
    {
        match parsed {
            Ok((tokens, value)) => self.set(tokens, value),
            Err(error) => {
                self.cx.syn_error(error);
                self.poison(path);
            }
        }
    }

    fn get(self) -> Option<Sp<T>> {
        self.value
    }
}

// ---------------------------------------------------------------------------------------------
// container

pub struct Container {
    pub collection: Option<Sp<Collection>>,
    pub bucket: Option<Sp<BucketAttr>>,
    pub indexes: Vec<Sp<Index>>,
    /// `#[query(...)]`: declared access patterns.
    pub queries: Vec<Sp<Query>>,
    /// `#[schema(additional_properties = false)]` on the container.
    pub additional_properties: Option<Sp<bool>>,
    pub rename_all: RenameRule,
    /// `rename_all_fields`: the rule for the fields of struct variants.
    pub rename_all_fields: RenameRule,
    pub transparent: Option<TokenStream>,
    /// `#[serde(tag = "...")]`: internally (or, with `content`, adjacently) tagged.
    pub tag: Option<Sp<String>>,
    /// `#[serde(content = "...")]`.
    pub content: Option<Sp<String>>,
    /// `#[serde(untagged)]`.
    pub untagged: Option<TokenStream>,
    /// `#[schema(stored_as = T)]`, or serde's `into = "T"`: the value is stored as `T` is.
    pub stored_as: Option<Sp<syn::Type>>,
    /// `#[schema(crate = "path")]`: the facade crate by another path (a renamed dependency).
    pub crate_path: Option<Sp<syn::Path>>,
}

/// `#[bucket(parent = f, entries = f, count = f, key = "k", first = f, last = f)]`: Rust field
/// names of the bucket document, and the stored key of an entry.
#[derive(Default)]
pub struct BucketAttr {
    pub parent: Option<Ident>,
    pub entries: Option<Ident>,
    pub count: Option<Ident>,
    pub key: Option<String>,
    pub first: Option<Ident>,
    pub last: Option<Ident>,
}

pub struct Collection {
    pub name: Option<Sp<String>>,
    pub validation_level: Option<Sp<String>>,
    pub validation_action: Option<Sp<String>>,
    pub additional_properties: Option<Sp<bool>>,
    pub shard_key: Option<Sp<Vec<IndexKey>>>,
    /// `same_id_as = Owner`: a part stored under its owner's `_id` (seed 003's large and cold
    /// child).
    pub same_id_as: Option<Sp<syn::Type>>,
    /// `optional_part`: an owner may have no part (audit counts no missing ones).
    pub optional_part: Option<Sp<bool>>,
    /// `collation(...)`: the collection's default collation.
    pub collation: Option<Sp<Collation>>,
    /// `timeseries(...)`: a time series collection.
    pub timeseries: Option<Sp<TimeSeriesAttr>>,
    /// `expire_after_secs = N`: a time series collection's expiry.
    pub expire_after_secs: Option<Sp<u64>>,
}

/// `#[query(name = "...", eq(a, b), any_of(c, max = N), range(d), sort(e = -1), limit = N,
/// project = T, index = "...", pages)]`.
#[derive(Default)]
pub struct Query {
    pub name: Option<Sp<LitStr>>,
    pub eq: Vec<KeyField>,
    pub any_of: Vec<(KeyField, u64)>,
    pub range: Vec<KeyField>,
    pub sort: Vec<IndexKey>,
    pub limit: Option<Sp<u64>>,
    pub project: Option<Sp<syn::Type>>,
    pub index: Option<Sp<String>>,
    /// `pages`: read in keyset pages, `_id` appended to the sort as the tie-break.
    pub pages: bool,
    /// `collation(...)`: the query's collation.
    pub collation: Option<Sp<Collation>>,
    /// `near(field)` or `within(field)`.
    pub geo: Option<GeoCondition>,
}

pub struct Index {
    pub keys: Option<Sp<Vec<IndexKey>>>,
    pub unique: Option<Sp<bool>>,
    pub sparse: Option<Sp<bool>>,
    pub partial: Option<Sp<String>>,
    pub expire_after_secs: Option<Sp<u64>>,
    pub name: Option<Sp<String>>,
    /// `collation(...)`: the index's collation.
    pub collation: Option<Sp<Collation>>,
}

#[derive(Clone)]
pub struct IndexKey {
    pub field: KeyField,
    pub kind: KeyKind,
    /// The tokens of the kind (`1`, `-1`, `"hashed"`), for errors about it.
    pub kind_tokens: TokenStream,
}

impl KeyField {
    /// The tokens of the key's field, for errors about it.
    pub fn tokens(&self) -> TokenStream {
        match self {
            KeyField::Rust(ident) => ident.to_token_stream(),
            KeyField::Nested(idents) => {
                let first = &idents[0];
                let rest = &idents[1..];
                quote::quote!(#first #(. #rest)*)
            }
            KeyField::Path(lit) => lit.to_token_stream(),
        }
    }
}

#[derive(Clone)]
pub enum KeyField {
    /// A Rust field name, translated through serde renames.
    Rust(Ident),
    /// A dotted path of Rust field names through embedded structs, options and copies
    /// (`author.id`), as `field!` takes it: at least two segments.
    Nested(Vec<Ident>),
    /// A stored path written as a string, e.g. `"customer._id"`.
    Path(LitStr),
}

#[derive(Clone)]
pub enum KeyKind {
    Direction(i32),
    Special(String),
}

impl Container {
    pub fn from_ast(cx: &Ctxt, item: &syn::DeriveInput) -> Self {
        let mut collection = None;
        let mut bucket = None;
        let mut indexes = Vec::new();
        let mut queries = Vec::new();
        let mut additional = Slot::new(cx, "schema", ADDITIONAL_PROPERTIES);
        let mut rename_all = Slot::new(cx, "serde", RENAME_ALL);
        let mut rename_all_fields = Slot::new(cx, "serde", RENAME_ALL_FIELDS);
        let mut transparent = Slot::new(cx, "serde", TRANSPARENT);
        let mut tag = Slot::new(cx, "serde", TAG);
        let mut content = Slot::new(cx, "serde", CONTENT);
        let mut untagged = Slot::new(cx, "serde", UNTAGGED);
        let mut stored_as: Slot<Option<syn::Type>> = Slot::new(cx, "schema", STORED_AS);
        let mut crate_path: Slot<Option<syn::Path>> = Slot::new(cx, "schema", CRATE);
        let mut into: Option<Sp<syn::Type>> = None;

        for attr in &item.attrs {
            let path = attr.path();
            if path == COLLECTION {
                if collection.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[collection]` attribute");
                    continue;
                }
                collection = Some(Sp {
                    value: parse_collection(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == BUCKET {
                if bucket.is_some() {
                    cx.error_spanned_by(path, "duplicate `#[bucket]` attribute");
                    continue;
                }
                bucket = Some(Sp {
                    value: parse_bucket(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == INDEX {
                indexes.push(Sp {
                    value: parse_index(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == QUERY {
                queries.push(Sp {
                    value: parse_query(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == SCHEMA {
                parse_all(cx, attr, |meta| {
                    if meta.path == ADDITIONAL_PROPERTIES {
                        let parsed = boolean(&value(&meta)?, "additional_properties = false");
                        additional.set_or_poison(&meta.path, parsed);
                    } else if meta.path == STORED_AS {
                        let parsed = stored_type(&meta);
                        stored_as.set_or_poison(&meta.path, parsed);
                    } else if meta.path == CRATE {
                        let parsed = crate_path_of(&meta);
                        crate_path.set_or_poison(&meta.path, parsed);
                    } else {
                        unknown(
                            cx,
                            &meta,
                            "schema",
                            &["additional_properties", "stored_as", "crate"],
                        )?;
                    }
                    Ok(())
                });
            } else if path == EMBED
                || path == REFERENCE
                || path == EXTENDED_REF
                || path == SUBSET
                || path == COUNTER
            {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "`#[{}]` is a field attribute; put it on the field it describes",
                        path.to_token_stream()
                    ),
                );
            } else if path == SERDE {
                parse_all(cx, attr, |meta| {
                    if meta.path == RENAME_ALL {
                        if let Some(rule) = parse_rename_all(cx, &meta)? {
                            rename_all.set(&meta.path, rule);
                        }
                    } else if meta.path == RENAME_ALL_FIELDS {
                        if let Some(rule) = parse_rename_all(cx, &meta)? {
                            rename_all_fields.set(&meta.path, rule);
                        }
                    } else if meta.path == TRANSPARENT {
                        transparent.set(&meta.path, ());
                    } else if meta.path == TAG || meta.path == CONTENT {
                        let lit = string(&value(&meta)?, "tag = \"type\"")?;
                        let slot = if meta.path == TAG {
                            &mut tag
                        } else {
                            &mut content
                        };
                        slot.set(&lit, lit.value());
                    } else if meta.path == UNTAGGED {
                        untagged.set(&meta.path, ());
                    } else if meta.path == INTO {
                        let lit = string(&value(&meta)?, "into = \"String\"")?;
                        let ty = lit.parse::<syn::Type>()?;
                        into = Some(Sp {
                            value: ty,
                            tokens: lit.to_token_stream(),
                        });
                    } else if meta.path == REMOTE
                        || meta.path == FIELD_IDENTIFIER
                        || meta.path == VARIANT_IDENTIFIER
                    {
                        unsupported_serde(cx, &meta.path, container_reason(&meta.path));
                        skip_value(&meta)?;
                    } else {
                        // everything else serde accepts on a container changes only how values
                        // are read (`default`, `deny_unknown_fields`, `from`, ...) or nothing
                        skip_value(&meta)?;
                    }
                    Ok(())
                });
            }
        }

        Container {
            collection,
            bucket,
            indexes,
            queries,
            additional_properties: additional.get(),
            rename_all: rename_all.get().map_or(RenameRule::None, |r| r.value),
            rename_all_fields: rename_all_fields
                .get()
                .map_or(RenameRule::None, |r| r.value),
            transparent: transparent.get().map(|t| t.tokens),
            tag: tag.get(),
            content: content.get(),
            untagged: untagged.get().map(|u| u.tokens),
            stored_as: stored_as
                .get()
                .and_then(|s| {
                    Some(Sp {
                        value: s.value?,
                        tokens: s.tokens,
                    })
                })
                .or(into),
            crate_path: crate_path.get().and_then(|s| {
                Some(Sp {
                    value: s.value?,
                    tokens: s.tokens,
                })
            }),
        }
    }
}

/// `crate = "path"`: a string holding the path the facade crate is reached by.
fn crate_path_of(meta: &ParseNestedMeta) -> syn::Result<(TokenStream, Option<syn::Path>)> {
    const EXAMPLE: &str = "crate = \"ms\"";
    let lit = string(&value(meta)?, EXAMPLE)?;
    let path: syn::Path = lit.parse_with(syn::Path::parse_mod_style).map_err(|_| {
        syn::Error::new_spanned(
            &lit,
            format!(
                "`crate` expects the path of the mongo-schema crate, e.g. `{EXAMPLE}` or `crate = \"::services::ms\"`; found `{}`",
                lit.value()
            ),
        )
    })?;
    Ok((lit.to_token_stream(), Some(path)))
}

fn container_reason(path: &syn::Path) -> &'static str {
    if path == REMOTE {
        "a remote derive serializes another crate's type, whose stored shape this derive cannot see; \
         derive `BsonSchema` on a local type with `#[schema(stored_as = T)]` naming what is stored"
    } else {
        "the validator cannot describe the stored shape faithfully"
    }
}

fn parse_bucket(cx: &Ctxt, attr: &syn::Attribute) -> BucketAttr {
    let example = "#[bucket(parent = sensor_id, entries = readings, count = count, key = \"at\", first = first_at, last = last_at)]";
    if matches!(attr.meta, syn::Meta::Path(_)) {
        cx.error_spanned_by(
            attr,
            format!("`#[bucket]` names the fields of the bucket document: `{example}`"),
        );
        return BucketAttr::default();
    }
    let mut slots: Vec<Slot<Option<Ident>>> = [PARENT, ENTRIES, COUNT, FIRST, LAST]
        .into_iter()
        .map(|name| Slot::new(cx, "bucket", name))
        .collect();
    let mut key: Slot<Option<String>> = Slot::new(cx, "bucket", KEY);
    parse_all(cx, attr, |meta| {
        if meta.path == KEY {
            let parsed = string(&value(&meta)?, "key = \"at\"")
                .map(|lit| (lit.to_token_stream(), Some(lit.value())));
            key.set_or_poison(&meta.path, parsed);
            return Ok(());
        }
        let Some(slot) = slots.iter_mut().find(|s| meta.path == s.name) else {
            return unknown(
                cx,
                &meta,
                "bucket",
                &["parent", "entries", "count", "key", "first", "last"],
            );
        };
        let expr = value(&meta)?;
        let parsed = syn::parse2::<Ident>(expr.to_token_stream())
            .map(|ident| (expr.to_token_stream(), Some(ident)))
            .map_err(|_| {
                syn::Error::new_spanned(
                    &expr,
                    format!(
                        "`{}` names a field of this struct, e.g. `{example}`",
                        slot.name
                    ),
                )
            });
        slot.set_or_poison(&meta.path, parsed);
        Ok(())
    });
    let mut values = slots.into_iter().map(|slot| {
        let name = slot.name;
        let value = slot.get().and_then(|v| v.value);
        (name, value)
    });
    let mut take = |cx: &Ctxt| {
        let (name, value) = values.next().expect("five slots");
        if value.is_none() {
            cx.error_spanned_by(
                attr,
                format!("`#[bucket]` needs `{name} = <field>`: `{example}`"),
            );
        }
        value
    };
    let (parent, entries, count, first, last) = (take(cx), take(cx), take(cx), take(cx), take(cx));
    let key = key.get().and_then(|k| k.value);
    if key.is_none() {
        cx.error_spanned_by(
            attr,
            format!("`#[bucket]` needs the entries' sort key: `key = \"at\"` (`{example}`)"),
        );
    }
    BucketAttr {
        parent,
        entries,
        count,
        key,
        first,
        last,
    }
}

fn parse_collection(cx: &Ctxt, attr: &syn::Attribute) -> Collection {
    let mut name = Slot::new(cx, "collection", NAME);
    let mut level = Slot::new(cx, "collection", VALIDATION_LEVEL);
    let mut action = Slot::new(cx, "collection", VALIDATION_ACTION);
    let mut additional = Slot::new(cx, "collection", ADDITIONAL_PROPERTIES);
    let mut shard_key = Slot::new(cx, "collection", SHARD_KEY);
    let mut same_id_as: Slot<Option<syn::Type>> = Slot::new(cx, "collection", SAME_ID_AS);
    let mut optional_part = Slot::new(cx, "collection", OPTIONAL_PART);
    let mut collation = Slot::new(cx, "collection", COLLATION);
    let mut timeseries = Slot::new(cx, "collection", TIMESERIES);
    let mut expire = Slot::new(cx, "collection", EXPIRE_AFTER_SECS);
    parse_all(cx, attr, |meta| {
        if meta.path == NAME {
            let parsed = string(&value(&meta)?, "name = \"tickets\"").and_then(|lit| {
                if lit.value().is_empty() {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "collection name must not be empty",
                    ));
                }
                Ok((lit.to_token_stream(), lit.value()))
            });
            name.set_or_poison(&meta.path, parsed);
        } else if meta.path == VALIDATION_LEVEL {
            let parsed = one_of(&meta, &["strict", "moderate"]);
            level.set_or_poison(&meta.path, parsed);
        } else if meta.path == VALIDATION_ACTION {
            let parsed = one_of(&meta, &["error", "warn"]);
            action.set_or_poison(&meta.path, parsed);
        } else if meta.path == ADDITIONAL_PROPERTIES {
            let parsed = boolean(&value(&meta)?, "additional_properties = false");
            additional.set_or_poison(&meta.path, parsed);
        } else if meta.path == SHARD_KEY {
            let parsed = parse_keys(&meta).map(|keys| (meta.path.to_token_stream(), keys));
            shard_key.set_or_poison(&meta.path, parsed);
        } else if meta.path == SAME_ID_AS {
            let parsed = stored_type_of(&meta, "same_id_as = Product");
            same_id_as.set_or_poison(&meta.path, parsed);
        } else if meta.path == OPTIONAL_PART {
            let parsed = flag(&meta);
            optional_part.set_or_poison(&meta.path, parsed);
        } else if meta.path == COLLATION {
            let parsed = collation::parse(cx, &meta);
            collation.set_or_poison(&meta.path, parsed);
        } else if meta.path == TIMESERIES {
            let parsed = timeseries::parse(cx, &meta);
            timeseries.set_or_poison(&meta.path, parsed);
        } else if meta.path == EXPIRE_AFTER_SECS {
            let parsed = unsigned(&value(&meta)?, "expire_after_secs = 86400");
            expire.set_or_poison(&meta.path, parsed);
        } else {
            unknown(
                cx,
                &meta,
                "collection",
                &[
                    "name",
                    "validation_level",
                    "validation_action",
                    "additional_properties",
                    "shard_key",
                    "same_id_as",
                    "optional_part",
                    "collation",
                    "timeseries",
                    "expire_after_secs",
                ],
            )?;
        }
        Ok(())
    });
    Collection {
        name: name.get(),
        validation_level: level.get(),
        validation_action: action.get(),
        additional_properties: additional.get(),
        shard_key: shard_key.get(),
        same_id_as: same_id_as.get().and_then(|s| {
            Some(Sp {
                value: s.value?,
                tokens: s.tokens,
            })
        }),
        optional_part: optional_part.get(),
        collation: collation.get(),
        timeseries: timeseries.get(),
        expire_after_secs: expire.get(),
    }
}

fn parse_index(cx: &Ctxt, attr: &syn::Attribute) -> Index {
    let mut keys = Slot::new(cx, "index", KEYS);
    let mut unique = Slot::new(cx, "index", UNIQUE);
    let mut sparse = Slot::new(cx, "index", SPARSE);
    let mut partial = Slot::new(cx, "index", PARTIAL);
    let mut expire = Slot::new(cx, "index", EXPIRE_AFTER_SECS);
    let mut name = Slot::new(cx, "index", NAME);
    let mut collation = Slot::new(cx, "index", COLLATION);
    parse_all(cx, attr, |meta| {
        if meta.path == KEYS {
            let parsed = parse_keys(&meta).map(|keys| (meta.path.to_token_stream(), keys));
            keys.set_or_poison(&meta.path, parsed);
        } else if meta.path == UNIQUE {
            let parsed = flag(&meta);
            unique.set_or_poison(&meta.path, parsed);
        } else if meta.path == SPARSE {
            let parsed = flag(&meta);
            sparse.set_or_poison(&meta.path, parsed);
        } else if meta.path == PARTIAL {
            let example = "partial = \"{\\\"status\\\": \\\"open\\\"}\"";
            let parsed = string(&value(&meta)?, example).and_then(|lit| {
                match serde_json::from_str::<serde_json::Value>(&lit.value()) {
                    Ok(serde_json::Value::Object(_)) => Ok((lit.to_token_stream(), lit.value())),
                    Ok(_) => Err(syn::Error::new_spanned(
                        &lit,
                        format!("`partial` must be a filter document in extended JSON, e.g. `{example}`"),
                    )),
                    Err(e) => Err(syn::Error::new_spanned(&lit, format!("`partial` is not valid JSON: {e}"))),
                }
            });
            partial.set_or_poison(&meta.path, parsed);
        } else if meta.path == EXPIRE_AFTER_SECS {
            let parsed = unsigned(&value(&meta)?, "expire_after_secs = 3600");
            expire.set_or_poison(&meta.path, parsed);
        } else if meta.path == NAME {
            let parsed = string(&value(&meta)?, "name = \"agent_queue\"").and_then(|lit| {
                if lit.value().is_empty() {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "index name must not be empty",
                    ));
                }
                Ok((lit.to_token_stream(), lit.value()))
            });
            name.set_or_poison(&meta.path, parsed);
        } else if meta.path == COLLATION {
            let parsed = collation::parse(cx, &meta);
            collation.set_or_poison(&meta.path, parsed);
        } else {
            unknown(
                cx,
                &meta,
                "index",
                &[
                    "keys",
                    "unique",
                    "sparse",
                    "partial",
                    "expire_after_secs",
                    "name",
                    "collation",
                ],
            )?;
        }
        Ok(())
    });
    Index {
        keys: keys.get(),
        unique: unique.get(),
        sparse: sparse.get(),
        partial: partial.get(),
        expire_after_secs: expire.get(),
        name: name.get(),
        collation: collation.get(),
    }
}

fn parse_query(cx: &Ctxt, attr: &syn::Attribute) -> Query {
    let mut name = Slot::new(cx, "query", NAME);
    let mut limit = Slot::new(cx, "query", LIMIT);
    let mut project: Slot<Option<syn::Type>> = Slot::new(cx, "query", PROJECT);
    let mut index = Slot::new(cx, "query", INDEX);
    let mut sort = Slot::new(cx, "query", SORT);
    let mut pages = Slot::new(cx, "query", PAGES);
    let mut collation = Slot::new(cx, "query", COLLATION);
    let mut query = Query::default();
    // a condition written, even one that failed to parse (its own error says why)
    let mut conditions_written = false;
    parse_all(cx, attr, |meta| {
        if meta.path == EQ
            || meta.path == ANY_OF
            || meta.path == RANGE
            || meta.path == SORT
            || meta.path == NEAR
            || meta.path == WITHIN
        {
            conditions_written = true;
        }
        if meta.path == NAME {
            let parsed = string(&value(&meta)?, "name = \"agent_queue\"").and_then(|lit| {
                let text = lit.value();
                if syn::parse_str::<Ident>(&text).is_err() || text.starts_with("r#") {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        format!("query name `{text}` must be a Rust identifier in snake_case: it names the function that runs the query"),
                    ));
                }
                Ok((lit.to_token_stream(), lit))
            });
            name.set_or_poison(&meta.path, parsed.map(|(t, l)| (t, Some(l))));
        } else if meta.path == EQ {
            let content;
            parenthesized!(content in meta.input);
            let fields = Punctuated::<KeyFieldArg, Token![,]>::parse_terminated(&content)?;
            if fields.is_empty() {
                return Err(meta.error("expected at least one field, e.g. `eq(team, status)`"));
            }
            query.eq.extend(fields.into_iter().map(|f| f.0));
        } else if meta.path == ANY_OF {
            let content;
            parenthesized!(content in meta.input);
            let field: KeyFieldArg = content.parse()?;
            content.parse::<Token![,]>().map_err(|_| {
                syn::Error::new(
                    content.span(),
                    "`any_of` needs the largest list it takes: `any_of(status, max = 3)`",
                )
            })?;
            let key: Ident = content.parse()?;
            if key != "max" {
                return Err(syn::Error::new_spanned(
                    key,
                    "expected `max = N`: `any_of(status, max = 3)`",
                ));
            }
            content.parse::<Token![=]>()?;
            let lit: LitInt = content.parse()?;
            let max: u64 = lit.base10_parse()?;
            if max == 0 {
                return Err(syn::Error::new_spanned(
                    lit,
                    "`max` of `any_of` must be at least 1",
                ));
            }
            query.any_of.push((field.0, max));
        } else if meta.path == RANGE {
            let content;
            parenthesized!(content in meta.input);
            let fields = Punctuated::<KeyFieldArg, Token![,]>::parse_terminated(&content)?;
            if fields.len() != 1 {
                return Err(meta.error("`range` takes one field (mongod bounds one range per index scan well; filter the others after): `range(placed_at)`"));
            }
            query.range.extend(fields.into_iter().map(|f| f.0));
        } else if meta.path == SORT {
            let parsed = parse_keys(&meta).and_then(|keys| {
                match keys.iter().find(|k| matches!(k.kind, KeyKind::Special(_))) {
                    Some(k) => Err(syn::Error::new_spanned(
                        &k.kind_tokens,
                        "a sort direction is 1 or -1",
                    )),
                    None => Ok((meta.path.to_token_stream(), keys)),
                }
            });
            sort.set_or_poison(&meta.path, parsed);
        } else if meta.path == LIMIT {
            let parsed = unsigned(&value(&meta)?, "limit = 50").and_then(|(t, n)| {
                if n == 0 {
                    Err(syn::Error::new_spanned(&t, "`limit` must be at least 1"))
                } else {
                    Ok((t, n))
                }
            });
            limit.set_or_poison(&meta.path, parsed);
        } else if meta.path == PROJECT {
            let parsed: syn::Result<(TokenStream, Option<syn::Type>)> =
                value(&meta).and_then(|expr| {
                    let ty: syn::Type = syn::parse2(expr.to_token_stream())?;
                    Ok((expr.to_token_stream(), Some(ty)))
                });
            project.set_or_poison(&meta.path, parsed);
        } else if meta.path == INDEX {
            let parsed = string(&value(&meta)?, "index = \"agent_queue\"")
                .map(|lit| (lit.to_token_stream(), lit.value()));
            index.set_or_poison(&meta.path, parsed);
        } else if meta.path == PAGES {
            pages.set(&meta.path, ());
        } else if meta.path == COLLATION {
            let parsed = collation::parse(cx, &meta);
            collation.set_or_poison(&meta.path, parsed);
        } else if meta.path == NEAR || meta.path == WITHIN {
            let condition = geo::parse(&meta)?;
            if query.geo.is_some() {
                cx.error_spanned_by(
                    &condition.tokens,
                    "a query has one geo condition (`near` or `within`)",
                );
            } else {
                query.geo = Some(condition);
            }
        } else {
            unknown(
                cx,
                &meta,
                "query",
                &[
                    "name",
                    "eq",
                    "any_of",
                    "range",
                    "sort",
                    "limit",
                    "project",
                    "index",
                    "pages",
                    "collation",
                    "near",
                    "within",
                ],
            )?;
        }
        Ok(())
    });
    query.name = name.get().and_then(|n| {
        Some(Sp {
            value: n.value?,
            tokens: n.tokens,
        })
    });
    query.limit = limit.get();
    query.project = project.get().and_then(|p| {
        Some(Sp {
            value: p.value?,
            tokens: p.tokens,
        })
    });
    query.index = index.get();
    query.pages = pages.get().is_some();
    query.collation = collation.get();
    query.sort = sort.get().map(|s| s.value).unwrap_or_default();
    if query.name.is_none() {
        cx.error_spanned_by(
            attr,
            "`#[query]` needs a name: `#[query(name = \"agent_queue\", ...)]`",
        );
    }
    if !conditions_written
        && query.eq.is_empty()
        && query.any_of.is_empty()
        && query.range.is_empty()
        && query.sort.is_empty()
        && query.geo.is_none()
    {
        cx.error_spanned_by(attr, "`#[query]` declares no condition and no sort: add `eq(..)`, `any_of(..)`, `range(..)` or `sort(..)`");
    }
    query
}

/// A field of `eq(..)`, `any_of(..)` or `range(..)`: a Rust name or a quoted stored path.
struct KeyFieldArg(KeyField);

impl Parse for KeyFieldArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        KeyField::parse(input).map(KeyFieldArg)
    }
}

impl KeyField {
    /// The Rust field a Rust name or a dotted path starts at.
    pub fn first_ident(&self) -> Option<&Ident> {
        match self {
            KeyField::Rust(ident) => Some(ident),
            KeyField::Nested(idents) => idents.first(),
            KeyField::Path(_) => None,
        }
    }
}

impl Parse for KeyField {
    /// A quoted stored path, a Rust field name, or a dotted path of Rust names (`author.id`).
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            return Ok(KeyField::Path(input.parse()?));
        }
        let first = input.call(syn::ext::IdentExt::parse_any)?;
        if !input.peek(Token![.]) {
            return Ok(KeyField::Rust(first));
        }
        let mut segments = vec![first];
        while input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            segments.push(input.call(syn::ext::IdentExt::parse_any)?);
        }
        Ok(KeyField::Nested(segments))
    }
}

impl Parse for IndexKey {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let field = KeyField::parse(input)?;
        input.parse::<Token![=]>()?;
        let mut kind_tokens = TokenStream::new();
        let kind = if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            lit.to_tokens(&mut kind_tokens);
            match lit.value().as_str() {
                "text" | "2dsphere" | "2d" | "hashed" => KeyKind::Special(lit.value()),
                other => {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        format!("unknown index type `{other}`, expected 1, -1, \"text\", \"2dsphere\", \"2d\" or \"hashed\""),
                    ))
                }
            }
        } else {
            let minus = input.parse::<Option<Token![-]>>()?;
            let negative = minus.is_some();
            let lit: LitInt = input.parse()?;
            minus.to_tokens(&mut kind_tokens);
            lit.to_tokens(&mut kind_tokens);
            let value: i32 = lit.base10_parse()?;
            match (negative, value) {
                (false, 1) => KeyKind::Direction(1),
                (true, 1) => KeyKind::Direction(-1),
                _ => {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        "an index direction is 1 (ascending) or -1 (descending)",
                    ))
                }
            }
        };
        Ok(IndexKey {
            field,
            kind,
            kind_tokens,
        })
    }
}

fn parse_keys(meta: &ParseNestedMeta) -> syn::Result<Vec<IndexKey>> {
    let content;
    parenthesized!(content in meta.input);
    let keys = Punctuated::<IndexKey, Token![,]>::parse_terminated(&content)?;
    if keys.is_empty() {
        return Err(meta.error("expected at least one key, e.g. `keys(team = 1, status = -1)`"));
    }
    Ok(keys.into_iter().collect())
}

// ---------------------------------------------------------------------------------------------
// fields

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
}

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

#[derive(Clone, Copy, PartialEq)]
pub enum ConstraintKind {
    String,
    Number,
}

pub struct Constraint {
    /// The `$jsonSchema` keyword.
    pub keyword: &'static str,
    pub value: ConstraintValue,
    pub kind: ConstraintKind,
}

pub enum ConstraintValue {
    Int(i64),
    Float(f64),
    Str(String),
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
            stored_as: stored_as.get().and_then(|s| {
                Some(Sp {
                    value: s.value?,
                    tokens: s.tokens,
                })
            }),
        }
    }
}

fn parse_type(expr: &Expr, example: &str) -> syn::Result<(TokenStream, Option<syn::Type>)> {
    syn::parse2::<syn::Type>(expr.to_token_stream())
        .map(|ty| (expr.to_token_stream(), Some(ty)))
        .map_err(|_| {
            syn::Error::new_spanned(
                expr,
                format!(
                    "`{}` expects a type, e.g. `{example}`",
                    option_name(example)
                ),
            )
        })
}

/// `name = T`, read as a type (an expression parser would take `Option<i64>` for two
/// comparisons): `example` shows the option.
fn stored_type_of(
    meta: &ParseNestedMeta,
    example: &str,
) -> syn::Result<(TokenStream, Option<syn::Type>)> {
    let ty: syn::Type = meta.value()?.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!(
                "`{}` expects a type, e.g. `{example}`",
                option_name(example)
            ),
        )
    })?;
    Ok((ty.to_token_stream(), Some(ty)))
}

/// `stored_as = T`, read as a type (an expression parser would take `Option<i64>` for two
/// comparisons).
fn stored_type(meta: &ParseNestedMeta) -> syn::Result<(TokenStream, Option<syn::Type>)> {
    let ty: syn::Type = meta.value()?.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "`stored_as` expects the type whose serialization has the stored shape, e.g. `stored_as = String`",
        )
    })?;
    Ok((ty.to_token_stream(), Some(ty)))
}

fn positive(expr: &Expr, example: &str) -> syn::Result<(TokenStream, u64)> {
    unsigned(expr, example).and_then(|(tokens, n)| {
        if n == 0 {
            Err(syn::Error::new_spanned(&tokens, "`max` must be at least 1"))
        } else {
            Ok((tokens, n))
        }
    })
}

fn parse_extended_ref(cx: &Ctxt, attr: &syn::Attribute) -> ExtendedRef {
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
fn parse_subset(cx: &Ctxt, attr: &syn::Attribute, kind: Children) -> SubsetAttr {
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

// ---------------------------------------------------------------------------------------------
// variants

pub struct Variant {
    /// `#[serde(rename = "...")]`: the literal, so errors about the stored name point at it.
    pub rename: Option<LitStr>,
    pub skip_serializing: bool,
    /// `#[serde(rename_all = "...")]` on the variant: the rule for its fields.
    pub rename_all: Option<RenameRule>,
    /// `#[serde(untagged)]` on one variant of a tagged enum: stored as its content alone.
    pub untagged: Option<TokenStream>,
    /// `#[index(...)]` on a kind of a whole-document enum: a partial index on its tag.
    pub indexes: Vec<Sp<Index>>,
}

impl Variant {
    pub fn from_ast(cx: &Ctxt, variant: &syn::Variant) -> Self {
        let mut rename = Slot::new(cx, "serde", RENAME);
        let mut rename_all = Slot::new(cx, "serde", RENAME_ALL);
        let mut untagged = Slot::new(cx, "serde", UNTAGGED);
        let mut skip_serializing = false;
        let mut indexes = Vec::new();
        for attr in &variant.attrs {
            let path = attr.path();
            if path == SERDE {
                parse_all(cx, attr, |meta| {
                    if meta.path == RENAME {
                        if let Some(name) = parse_rename(&meta)? {
                            rename.set(&meta.path, name);
                        }
                    } else if meta.path == RENAME_ALL {
                        if let Some(rule) = parse_rename_all(cx, &meta)? {
                            rename_all.set(&meta.path, rule);
                        }
                    } else if meta.path == SKIP || meta.path == SKIP_SERIALIZING {
                        skip_serializing = true;
                    } else if meta.path == UNTAGGED {
                        untagged.set(&meta.path, ());
                    } else if meta.path == WITH || meta.path == SERIALIZE_WITH {
                        unsupported_serde(
                            cx,
                            &meta.path,
                            "the variant is written by custom code, whose stored shape the validator cannot see; \
                             move the custom code to a field and annotate it with `#[schema(stored_as = T)]`",
                        );
                        skip_value(&meta)?;
                    } else {
                        // alias, other, bound, borrow, deserialize_with, skip_deserializing:
                        // they change only how values are read
                        skip_value(&meta)?;
                    }
                    Ok(())
                });
            } else if path == INDEX {
                indexes.push(Sp {
                    value: parse_index(cx, attr),
                    tokens: attr.to_token_stream(),
                });
            } else if path == EMBED
                || path == SCHEMA
                || path == REFERENCE
                || path == EXTENDED_REF
                || path == SUBSET
                || path == COUNTER
                || path == COLLECTION
            {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "`#[{}]` does not apply to an enum variant; put it on a field of the variant",
                        path.to_token_stream()
                    ),
                );
            }
        }
        Variant {
            rename: rename.get().map(|r| r.value),
            skip_serializing,
            rename_all: rename_all.get().map(|r| r.value),
            untagged: untagged.get().map(|u| u.tokens),
            indexes,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

/// Runs `f` on every option of `attr`; a parse error is recorded and the attribute abandoned.
fn parse_all(cx: &Ctxt, attr: &syn::Attribute, f: impl FnMut(ParseNestedMeta) -> syn::Result<()>) {
    if let Err(err) = attr.parse_nested_meta(f) {
        cx.syn_error(err);
    }
}

fn unknown(cx: &Ctxt, meta: &ParseNestedMeta, attr: &str, expected: &[&str]) -> syn::Result<()> {
    unknown_near(cx, meta, attr, expected).map(drop)
}

/// [`unknown`], returning the expected option the name is a misspelling of (`sortt` for
/// `sort`), which the caller marks as given: one mistake, one error, not a second one for the
/// option it then misses.
fn unknown_near<'e>(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    attr: &str,
    expected: &[&'e str],
) -> syn::Result<Option<&'e str>> {
    let name = meta.path.to_token_stream().to_string().replace(' ', "");
    let near = crate::near::near_miss(&name, expected);
    let hint = near.map_or_else(String::new, |n| format!("; did you mean `{n}`?"));
    cx.error_spanned_by(
        &meta.path,
        format!(
            "unknown `{attr}` option `{name}`, expected one of: {}{hint}",
            expected.join(", ")
        ),
    );
    skip_value(meta)?;
    Ok(near)
}

fn unsupported_serde(cx: &Ctxt, path: &syn::Path, why: &str) {
    cx.error_spanned_by(
        path,
        format!(
            "`#[serde({})]` is not supported by mongo-schema: {why}",
            path.to_token_stream()
        ),
    );
}

/// Consumes `= value` or `(...)` of an option we do not interpret.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(token::Paren) {
        let content;
        parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// Reads `= <expression>` whole, so that a malformed value is reported by the interpreting
/// function and never desynchronises the rest of the option list.
fn value(meta: &ParseNestedMeta) -> syn::Result<Expr> {
    meta.value()?.parse()
}

fn option_name(example: &str) -> &str {
    example.split(" =").next().unwrap_or(example)
}

fn string(expr: &Expr, example: &str) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{}` expects a string, e.g. `{example}`",
                option_name(example)
            ),
        )),
    }
}

fn unsigned(expr: &Expr, example: &str) -> syn::Result<(TokenStream, u64)> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => Ok((lit.to_token_stream(), lit.base10_parse::<u64>()?)),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{}` expects a positive integer, e.g. `{example}`",
                option_name(example)
            ),
        )),
    }
}

fn boolean(expr: &Expr, example: &str) -> syn::Result<(TokenStream, bool)> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(lit),
            ..
        }) => Ok((lit.to_token_stream(), lit.value)),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{}` expects `true` or `false`, e.g. `{example}`",
                option_name(example)
            ),
        )),
    }
}

/// `unique` or `unique = true|false`.
fn flag(meta: &ParseNestedMeta) -> syn::Result<(TokenStream, bool)> {
    if meta.input.peek(Token![=]) {
        let name = meta.path.to_token_stream().to_string();
        boolean(&value(meta)?, &format!("{name} = true"))
    } else {
        Ok((meta.path.to_token_stream(), true))
    }
}

fn one_of(meta: &ParseNestedMeta, allowed: &[&str]) -> syn::Result<(TokenStream, String)> {
    let name = meta.path.to_token_stream().to_string();
    let expected = allowed
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(" or ");
    let lit = string(&value(meta)?, &format!("{name} = \"{}\"", allowed[0]))?;
    let found = lit.value();
    if allowed.contains(&found.as_str()) {
        Ok((lit.to_token_stream(), found))
    } else {
        Err(syn::Error::new_spanned(
            &lit,
            format!("unknown `{name}` value `{found}`, expected {expected}"),
        ))
    }
}

/// A string length bound: mongod reads `maxLength` / `minLength` as a 64-bit integer, so a bound
/// past `i64::MAX` would reach it negative.
fn length(
    tokens: TokenStream,
    n: u64,
    option: &str,
    keyword: &str,
) -> syn::Result<ConstraintValue> {
    i64::try_from(n).map(ConstraintValue::Int).map_err(|_| {
        syn::Error::new_spanned(
            tokens,
            format!(
                "`{option} = {n}` is above i64::MAX: mongod reads `{keyword}` as a 64-bit integer, \
                 at most 9223372036854775807; use a smaller bound"
            ),
        )
    })
}

fn number(expr: &Expr, option: &str) -> syn::Result<ConstraintValue> {
    let (negative, inner) = match expr {
        Expr::Unary(ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => (true, &**expr),
        other => (false, other),
    };
    let sign = if negative { -1 } else { 1 };
    match inner {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => {
            let magnitude = i128::try_from(lit.base10_parse::<u128>()?).ok();
            magnitude
                .and_then(|m| i64::try_from(sign as i128 * m).ok())
                .map(ConstraintValue::Int)
                .ok_or_else(|| {
                    syn::Error::new_spanned(
                        expr,
                        format!(
                            "`{option} = {}` does not fit in a 64-bit integer: BSON stores integers in at most \
                             64 bits, so mongod's `$jsonSchema` bound lies within -9223372036854775808..=9223372036854775807; \
                             use a bound in that range, or a float such as `1e19`",
                            expr.to_token_stream().to_string().replace(' ', "")
                        ),
                    )
                })
        }
        Expr::Lit(ExprLit {
            lit: Lit::Float(lit),
            ..
        }) => Ok(ConstraintValue::Float(
            sign as f64 * lit.base10_parse::<f64>()?,
        )),
        _ => Err(syn::Error::new_spanned(
            expr,
            "expected a number, e.g. `minimum = 0` or `maximum = 2.5`",
        )),
    }
}

/// `rename = "x"` or `rename(serialize = "x", deserialize = "y")`: the name serde writes.
fn parse_rename(meta: &ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse::<LitStr>()?));
    }
    let mut serialize = None;
    meta.parse_nested_meta(|inner| {
        let lit: LitStr = inner.value()?.parse()?;
        if inner.path == SERIALIZE {
            serialize = Some(lit);
        }
        Ok(())
    })?;
    Ok(serialize)
}

fn parse_rename_all(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<RenameRule>> {
    let lit = if meta.input.peek(Token![=]) {
        Some(meta.value()?.parse::<LitStr>()?)
    } else {
        let mut serialize = None;
        meta.parse_nested_meta(|inner| {
            let lit: LitStr = inner.value()?.parse()?;
            if inner.path == SERIALIZE {
                serialize = Some(lit);
            }
            Ok(())
        })?;
        serialize
    };
    Ok(
        lit.and_then(|lit| match RenameRule::from_str(&lit.value()) {
            Ok(rule) => Some(rule),
            Err(message) => {
                cx.error_spanned_by(&lit, message);
                None
            }
        }),
    )
}
