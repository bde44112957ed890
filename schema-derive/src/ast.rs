//! The typed model of a derive input. Code generation sees only this, never raw syn.

use syn::{Ident, LitStr, Type};

use crate::attr;
use crate::case::RenameRule;
use crate::ctxt::Ctxt;

pub struct Container<'a> {
    pub ident: &'a Ident,
    pub attrs: attr::Container,
    pub data: Data<'a>,
    pub original: &'a syn::DeriveInput,
}

pub enum Data<'a> {
    /// A struct with named fields, stored as a document.
    Struct(Vec<Field<'a>>),
    /// A tuple struct of two or more fields, stored as an array of fixed length.
    Tuple(Vec<Field<'a>>),
    /// A newtype or `#[serde(transparent)]` struct, stored as its one field.
    Transparent(Box<Field<'a>>),
    /// An enum, stored in one of serde's four representations ([`Repr`]).
    Enum(Vec<Variant<'a>>),
    /// `#[schema(stored_as = T)]` or `#[serde(into = "T")]`: stored as `T`; the body is not read.
    StoredAs,
}

/// How serde stores an enum.
#[derive(Clone, PartialEq)]
pub enum Repr {
    /// `{ "Variant": content }`, a unit variant as the string `"Variant"` (serde's default).
    External,
    /// `#[serde(tag = "t")]`: `{ t: "Variant", ...fields }`.
    Internal(String),
    /// `#[serde(tag = "t", content = "c")]`: `{ t: "Variant", c: content }`.
    Adjacent(String, String),
    /// `#[serde(untagged)]`: the content alone.
    Untagged,
}

/// The shape of an enum variant.
#[derive(Clone, Copy, PartialEq)]
pub enum Style {
    Unit,
    Newtype,
    Tuple,
    Struct,
}

#[derive(Clone, Copy, PartialEq)]
pub enum RefKind {
    One,
    Optional,
    Many,
}

/// The shape of a `#[reference]` field, read from its type.
pub struct RefShape<'a> {
    pub kind: RefKind,
    /// The id type (`Ref<T>` or a plain id).
    pub element: &'a Type,
    /// The referenced `Document` type: `to = T`, or the `T` of `Ref<T>`.
    pub target: Option<Type>,
}

pub struct Field<'a> {
    pub ident: Option<&'a Ident>,
    /// The name serde writes (renames applied).
    pub stored_name: String,
    pub attrs: attr::Field,
    pub ty: &'a Type,
}

impl<'a> Field<'a> {
    /// Whether the field is ever written.
    pub fn is_stored(&self) -> bool {
        !self.attrs.skip_serializing
    }

    /// For a `#[reference]` field: one/optional/many, the element and the target.
    pub fn reference_shape(&self) -> Option<RefShape<'a>> {
        let reference = self.attrs.reference.as_ref()?;
        let (kind, element) = match generic_arg(self.ty, &["Option"]) {
            Some(inner) => match generic_arg(inner, SEQUENCES) {
                Some(element) => (RefKind::Many, element),
                None => (RefKind::Optional, inner),
            },
            None => match generic_arg(self.ty, SEQUENCES) {
                Some(element) => (RefKind::Many, element),
                None => match self.ty {
                    Type::Array(array) => (RefKind::Many, &*array.elem),
                    ty => (RefKind::One, ty),
                },
            },
        };
        let target = reference
            .value
            .to
            .clone()
            .or_else(|| generic_arg(element, &["Ref"]).cloned());
        Some(RefShape {
            kind,
            element,
            target,
        })
    }

    /// The type whose `BsonSchema` describes what is stored when it is not the field's own:
    /// `#[schema(stored_as = T)]`, or what a serde helper the derive knows writes.
    pub fn stored_type(&self) -> Option<Type> {
        if let Some(stored) = &self.attrs.stored_as {
            return Some(stored.value.clone());
        }
        let (_, helper) = self.attrs.custom_serialize.as_ref()?;
        let tokens = crate::serde_helpers::recognise(helper, self.ty)?;
        syn::parse2(tokens).ok()
    }

    /// The Rust name for messages.
    pub fn display_name(&self) -> String {
        self.ident.map(unraw).unwrap_or_else(|| "0".to_owned())
    }
}

pub struct Variant<'a> {
    pub ident: &'a Ident,
    pub stored_name: String,
    pub attrs: attr::Variant,
    pub style: Style,
    pub fields: Vec<Field<'a>>,
}

impl Variant<'_> {
    /// Whether serde ever writes this variant.
    pub fn is_stored(&self) -> bool {
        !self.attrs.skip_serializing
    }
}

pub fn unraw(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}

impl<'a> Container<'a> {
    /// Builds the model; returns `None` (with errors in `cx`) for shapes that cannot be stored
    /// faithfully.
    pub fn from_ast(cx: &Ctxt, item: &'a syn::DeriveInput) -> Option<Container<'a>> {
        let attrs = attr::Container::from_ast(cx, item);
        let data = if attrs.stored_as.is_some() {
            Data::StoredAs
        } else {
            data_from_ast(cx, &attrs, item)?
        };
        Some(Container {
            ident: &item.ident,
            attrs,
            data,
            original: item,
        })
    }

    /// The stored fields of a struct; of an enum, those of its stored variants, once per stored
    /// name (the first variant that stores it).
    pub fn stored_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        let mut seen: Vec<&str> = Vec::new();
        self.all_stored_fields().filter(move |f| {
            if !matches!(self.data, Data::Enum(_)) {
                return true;
            }
            if seen.contains(&f.stored_name.as_str()) {
                return false;
            }
            seen.push(&f.stored_name);
            true
        })
    }

    /// Every stored field, of every stored variant of an enum (for the checks of each field).
    pub fn all_stored_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        let fields: Vec<&Field<'a>> = match &self.data {
            Data::Struct(fields) | Data::Tuple(fields) => fields.iter().collect(),
            Data::Transparent(field) => vec![&**field],
            Data::Enum(variants) => variants
                .iter()
                .filter(|v| v.is_stored())
                .flat_map(|v| &v.fields)
                .collect(),
            Data::StoredAs => Vec::new(),
        };
        fields.into_iter().filter(|f| f.is_stored())
    }

    /// How an enum is stored, from its serde attributes (errors reported by the checks).
    pub fn repr(&self) -> Repr {
        let attrs = &self.attrs;
        match (&attrs.tag, &attrs.content, &attrs.untagged) {
            (_, _, Some(_)) => Repr::Untagged,
            (Some(tag), Some(content), None) => {
                Repr::Adjacent(tag.value.clone(), content.value.clone())
            }
            (Some(tag), None, None) => Repr::Internal(tag.value.clone()),
            (None, _, None) => Repr::External,
        }
    }

    pub fn is_generic(&self) -> bool {
        !self.original.generics.params.is_empty()
    }
}

fn data_from_ast<'a>(
    cx: &Ctxt,
    attrs: &attr::Container,
    item: &'a syn::DeriveInput,
) -> Option<Data<'a>> {
    let stored_as = "or say what is stored with `#[schema(stored_as = T)]`";
    let data = match &item.data {
        syn::Data::Struct(data) => match &data.fields {
            syn::Fields::Named(named) => {
                let fields = fields_from_ast(cx, attrs.rename_all, named.named.iter());
                if attrs.transparent.is_some() {
                    let mut stored = fields.into_iter().filter(Field::is_stored);
                    match (stored.next(), stored.next()) {
                        (Some(field), None) => Data::Transparent(Box::new(field)),
                        _ => {
                            cx.error_spanned_by(
                                item.ident.clone(),
                                "`#[serde(transparent)]` needs exactly one stored field",
                            );
                            return None;
                        }
                    }
                } else {
                    Data::Struct(fields)
                }
            }
            syn::Fields::Unnamed(unnamed) if unnamed.unnamed.len() == 1 => {
                let mut fields = fields_from_ast(cx, RenameRule::None, unnamed.unnamed.iter());
                Data::Transparent(Box::new(fields.remove(0)))
            }
            syn::Fields::Unnamed(unnamed) => Data::Tuple(fields_from_ast(
                cx,
                RenameRule::None,
                unnamed.unnamed.iter(),
            )),
            syn::Fields::Unit => {
                cx.error_spanned_by(
                    item.ident.clone(),
                    format!("a unit struct is stored as `null` and carries no data; use a struct with named fields or a unit-only enum, {stored_as}"),
                );
                return None;
            }
        },
        syn::Data::Enum(data) => {
            let variants = data
                .variants
                .iter()
                .map(|variant| {
                    let attrs_v = attr::Variant::from_ast(cx, variant);
                    let stored_name = attrs_v.rename.as_ref().map_or_else(
                        || attrs.rename_all.apply_to_variant(&unraw(&variant.ident)),
                        LitStr::value,
                    );
                    let rule = attrs_v.rename_all.unwrap_or(attrs.rename_all_fields);
                    let (style, fields) = match &variant.fields {
                        syn::Fields::Unit => (Style::Unit, Vec::new()),
                        syn::Fields::Named(named) => {
                            (Style::Struct, fields_from_ast(cx, rule, named.named.iter()))
                        }
                        syn::Fields::Unnamed(unnamed) => (
                            if unnamed.unnamed.len() == 1 {
                                Style::Newtype
                            } else {
                                Style::Tuple
                            },
                            fields_from_ast(cx, RenameRule::None, unnamed.unnamed.iter()),
                        ),
                    };
                    Variant {
                        ident: &variant.ident,
                        stored_name,
                        attrs: attrs_v,
                        style,
                        fields,
                    }
                })
                .collect();
            Data::Enum(variants)
        }
        syn::Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                "unions cannot be stored in MongoDB documents",
            );
            return None;
        }
    };
    Some(data)
}

fn fields_from_ast<'a>(
    cx: &Ctxt,
    rename_all: RenameRule,
    fields: impl Iterator<Item = &'a syn::Field>,
) -> Vec<Field<'a>> {
    fields
        .map(|field| {
            let attrs = attr::Field::from_ast(cx, field);
            let stored_name = attrs.rename.as_ref().map_or_else(
                || {
                    field
                        .ident
                        .as_ref()
                        .map(|i| rename_all.apply_to_field(&unraw(i)))
                        .unwrap_or_default()
                },
                LitStr::value,
            );
            Field {
                ident: field.ident.as_ref(),
                stored_name,
                attrs,
                ty: &field.ty,
            }
        })
        .collect()
}

const SEQUENCES: &[&str] = &["Vec", "VecDeque", "HashSet", "BTreeSet", "SmallVec"];

/// `T` of `Name<T>` when the type's last path segment is one of `names`.
pub fn generic_arg<'t>(ty: &'t Type, names: &[&str]) -> Option<&'t Type> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    if !names.iter().any(|n| segment.ident == n) {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// The shape of a copy or subset field: one, optional or an array, and the element type.
pub fn copy_shape(ty: &Type) -> (RefKind, &Type) {
    if let Some(inner) = generic_arg(ty, &["Option"]) {
        return (RefKind::Optional, inner);
    }
    if let Some(inner) = generic_arg(ty, SEQUENCES) {
        return (RefKind::Many, inner);
    }
    (RefKind::One, ty)
}

/// FNV-1a of a field name: the key of the hidden per-field trait a `Document` implements, so
/// another derive can name a field's type (`#[extended_ref(fields = "name")]`).
pub fn field_key(name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Which derive runs: a collection root (`Document`) or a stored value (`BsonSchema`).
#[derive(Clone, Copy, PartialEq)]
pub enum Derive {
    Document,
    BsonSchema,
}

/// `as = Name`, or `<Struct><Field in PascalCase>`.
pub fn copy_type_name(cont: &Container, field: &Field) -> Ident {
    if let Some(name) = field
        .attrs
        .extended_ref
        .as_ref()
        .and_then(|e| e.value.name.clone())
    {
        return name;
    }
    let field_name = crate::case::RenameRule::PascalCase.apply_to_field(&field.display_name());
    quote::format_ident!("{}{}", cont.ident, field_name)
}
