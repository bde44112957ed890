//! From observed shapes to models: the Rust type of every path, decided from its joined
//! [`Shape`]. Pure: no I/O. The rules, in the order they are tried at one path:
//!
//! - a path forced undecided (the gate gave up on it), kinds no single Rust type holds, or a
//!   sub-document holding a field whose stored name has control or invisible characters (a
//!   newline in a name would end a comment and start code): `Bson`, with a report entry;
//! - numbers: `int` alone is `i32`; `int` with `long` is `i64`; any with `double` is `f64`; the
//!   validator keeps every stored kind;
//! - strings with at least `enum_min` values and from 2 distinct values up to fewer than their
//!   square root (quicktype's rule): a unit enum;
//! - documents: a map when forced, or when its keys look like ids, digits or dates, or are many
//!   more than one document holds; an internally tagged enum when a tag candidate's values split
//!   the other fields' presence; otherwise a struct;
//! - arrays: of one fixed length up to 4 (a GeoJSON position) a Rust array, else `Vec` with the
//!   bound `ceil(max x headroom)`.

use std::collections::{BTreeMap, BTreeSet};

use crate::lattice::{DocShape, Shape};
use crate::model::{Collection, Field, Model, Presence, Struct, Ty, Union, UnitEnum, Variant};
use crate::names;
use crate::report::{ArrayBound, Decision, Report};

/// What the rules may be told.
#[derive(Debug, Clone)]
pub struct Options {
    /// Array and map bounds are the observed maximum times this, rounded up.
    pub headroom: f64,
    /// Fewest string values for a unit enum.
    pub enum_min: u64,
    /// Arrays longer than this are reported as unbounded in practice ("reference instead").
    pub unbounded_threshold: u64,
    /// Paths forced to maps (`orders.stock`).
    pub maps: BTreeSet<String>,
    /// Paths forced to structs.
    pub structs: BTreeSet<String>,
    /// String paths forced to unit enums (when at most 64 distinct values were seen).
    pub enums: BTreeSet<String>,
    /// Paths forced to `Bson` (set by the gate when widening did not converge).
    pub undecided: BTreeSet<String>,
    /// What an existing `$jsonSchema` validator allows per path: kept even where no stored
    /// document uses it (`existing.rs`).
    pub existing: BTreeMap<String, crate::existing::Allowed>,
    /// Collections whose stored documents fail what their validator declares (its level is
    /// `moderate`, or its action `warn`): its bounds, enums and constraints are not kept, and
    /// no GeoJSON point is made `geo::Point` (set by the gate).
    pub loosened: BTreeSet<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            headroom: 2.0,
            enum_min: 10,
            unbounded_threshold: 1000,
            maps: BTreeSet::new(),
            structs: BTreeSet::new(),
            enums: BTreeSet::new(),
            undecided: BTreeSet::new(),
            existing: BTreeMap::new(),
            loosened: BTreeSet::new(),
        }
    }
}

/// One collection's observations.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The collection name.
    pub name: String,
    /// Documents it holds.
    pub count: u64,
    /// The join of the documents seen (the sample, the facts, the gate's failures).
    pub shape: DocShape,
    /// Paths whose facts are exact (counted over every document by the facts pass).
    pub exact: BTreeSet<String>,
}

/// The bound kept for an observed maximum: `ceil(max x headroom)`, at least 1.
pub fn bound(max: u64, headroom: f64) -> u64 {
    ((max as f64 * headroom).ceil() as u64).max(1)
}

struct Infer<'a> {
    options: &'a Options,
    model: Model,
    report: &'a mut Report,
    type_names: Vec<String>,
    exact: &'a BTreeSet<String>,
    /// The structs that are collection roots: never shared with a sub-document.
    roots: Vec<usize>,
}

/// Decides the models of all collections.
pub fn infer(observed: &[Observed], options: &Options, report: &mut Report) -> Model {
    report.decisions.clear();
    report.arrays.clear();
    report.undecided.clear();
    let mut type_names = Vec::new();
    // every root keeps its own name: reserved before any sub-document is named
    let root_names: Vec<String> = observed
        .iter()
        .map(|c| names::unique_type(names::type_name(&names::singular(&c.name)), &mut type_names))
        .collect();
    let mut roots = Vec::new();
    let mut model = Model::default();
    for (collection, root_name) in observed.iter().zip(root_names) {
        let mut infer = Infer {
            options,
            model,
            report,
            type_names,
            exact: &collection.exact,
            roots,
        };
        let whole = (!options.structs.contains(&collection.name))
            .then(|| tagged(&collection.shape))
            .flatten();
        let (root, kinds) = match whole {
            // a whole-document enum: the root struct is a placeholder carrying its name
            Some((tag, by_value)) => {
                let notes = &mut Vec::new();
                // the reserved name is the enum's
                infer.type_names.retain(|n| *n != root_name);
                let kinds = infer.union(
                    &collection.name,
                    &root_name,
                    &collection.name,
                    &tag,
                    &by_value,
                    notes,
                );
                let name = infer.model.unions[kinds].name.clone();
                infer.model.structs.push(Struct {
                    name,
                    path: collection.name.clone(),
                    fields: Vec::new(),
                    open: false,
                });
                (infer.model.structs.len() - 1, Some(kinds))
            }
            None => (
                infer.root(&collection.name, &root_name, &collection.shape),
                None,
            ),
        };
        infer.roots.push(root);
        model = infer.model;
        type_names = infer.type_names;
        roots = infer.roots;
        model.collections.push(Collection {
            name: collection.name.clone(),
            root,
            kinds,
            count: collection.count,
            indexes: Vec::new(),
            validation_level: None,
            validation_action: None,
            collation: None,
            part_of: None,
            timeseries: None,
            indexed: Vec::new(),
            unsaid: Vec::new(),
        });
    }
    model
}

impl<'a> Infer<'a> {
    fn decide(&mut self, path: &str, decision: String, evidence: String) {
        self.report.decisions.push(Decision {
            path: path.to_owned(),
            decision,
            evidence,
        });
    }

    fn exactness(&self, path: &str) -> &'static str {
        if self.exact.contains(path) {
            "every document"
        } else {
            "the sample and the gate"
        }
    }

    /// What the collection's validator declares at `path`, unless the gate found its
    /// documents failing it.
    fn declared(&self, path: &str) -> Option<&'a crate::existing::Allowed> {
        let collection = path.split(['.', '[', '<']).next().unwrap_or(path);
        if self.options.loosened.contains(collection) {
            return None;
        }
        self.options.existing.get(path)
    }

    /// Whether `path` is one the collection's validator says nothing of, in a collection that
    /// has one: whatever it holds, and whether it holds anything, the server accepts today, so
    /// the samples do not make it required, nor an enum of the values seen.
    fn left_open(&self, path: &str) -> bool {
        let collection = path.split(['.', '[', '<']).next().unwrap_or(path);
        path != collection
            && self.options.existing.contains_key(collection)
            && !self.options.existing.contains_key(path)
    }

    /// Whether the collection's validator checks nothing at `path` (it does not declare it, or
    /// declares it with no constraint): the pulled validator leaves it so (`#[schema(open)]`).
    fn unchecked(&self, path: &str) -> bool {
        let collection = path.split(['.', '[', '<']).next().unwrap_or(path);
        path != collection
            && self.options.existing.contains_key(collection)
            && !self.options.loosened.contains(collection)
            && self
                .options
                .existing
                .get(path)
                .is_none_or(|a| a.unconstrained)
    }

    /// Whether `null` at `path` is refused today, so that the pulled validator must refuse it
    /// too: the server's validator refuses it there, or the collection has none (the samples
    /// and the gate decide, as they do the kinds). A path the validator leaves open, or a
    /// collection whose documents fail its validator, takes `null`.
    fn refuses_null(&self, path: &str) -> bool {
        let collection = path.split(['.', '[', '<']).next().unwrap_or(path);
        if self.left_open(path) || self.options.loosened.contains(collection) {
            return false;
        }
        match self.declared(path) {
            Some(allowed) => allowed.refuses_null(),
            None => !self.options.existing.contains_key(collection),
        }
    }

    /// Whether the validator describes the object at `path` and leaves it open.
    fn open(&self, path: &str) -> bool {
        self.options
            .existing
            .get(path)
            .is_some_and(|a| a.closed == Some(false))
    }

    /// A collection's root struct, under its reserved name, never shared with a sub-document.
    fn root(&mut self, path: &str, name: &str, shape: &DocShape) -> usize {
        let fields = self.fields(path, name, shape);
        let open = self.open(path);
        self.model.structs.push(Struct {
            name: name.to_owned(),
            path: path.to_owned(),
            fields,
            open,
        });
        self.model.structs.len() - 1
    }

    /// A struct for the documents at `path`; identical sub-documents are emitted once (a root
    /// is never one of them: it keeps its name).
    fn structure(&mut self, path: &str, name: &str, shape: &DocShape) -> usize {
        let fields = self.fields(path, name, shape);
        let open = self.open(path);
        if let Some(i) = self
            .model
            .structs
            .iter()
            .enumerate()
            .position(|(i, s)| !self.roots.contains(&i) && s.fields == fields && s.open == open)
        {
            return i;
        }
        let name = names::unique_type(name.to_owned(), &mut self.type_names);
        self.model.structs.push(Struct {
            name,
            path: path.to_owned(),
            fields,
            open,
        });
        self.model.structs.len() - 1
    }

    fn fields(&mut self, path: &str, owner: &str, shape: &DocShape) -> Vec<Field> {
        let mut idents = Vec::new();
        let mut fields = Vec::new();
        // the properties the validator declares here that no stored document holds: kept (a
        // closed struct without them would refuse a document the server takes)
        let prefix = format!("{path}.");
        let unseen: Vec<(String, Shape)> = self
            .options
            .existing
            .keys()
            .filter_map(|key| key.strip_prefix(&prefix))
            .filter(|name| !name.is_empty() && !name.contains(['.', '[', '<']))
            .filter(|name| shape.field(name).is_none())
            .map(|name| (name.to_owned(), Shape::default()))
            .collect();
        for (stored, field_shape) in shape.fields.iter().chain(&unseen) {
            let field_path = format!("{path}.{stored}");
            let ident = names::unique(names::field_ident(stored), &mut idents);
            let hint = format!("{owner}{}", names::type_name(stored));
            let unseen = field_shape.count == 0;
            let mut presence = Presence {
                // a declared field no stored document holds: missing in them, or, in an empty
                // collection, as `required` says (below)
                missing: field_shape.count < shape.count,
                null: field_shape.nulls > 0,
            };
            let mut notes = Vec::new();
            if stored != "_id" && !presence.missing && self.left_open(&field_path) {
                presence.missing = true;
                notes.push(format!(
                    "`{stored}`: in every document, but the collection's validator leaves it open: optional"
                ));
            }
            if unseen {
                notes.push(format!(
                    "`{stored}`: declared by the validator, in no stored document: kept"
                ));
            }
            if presence.missing || presence.null {
                notes.push(format!(
                    "`{stored}`: in {} of {} documents, null in {}",
                    names::count(field_shape.count),
                    names::count(shape.count),
                    names::count(field_shape.nulls)
                ));
            }
            let widened;
            let mut field_shape = field_shape;
            // every stored document has an `_id`, whatever a validator requires (in an empty
            // collection, the validator is all there is)
            let existing = self
                .options
                .existing
                .get(&field_path)
                .filter(|_| stored != "_id" || unseen);
            if let Some(allowed) = existing {
                let (shape, kept) = allowed.widen(field_shape, &mut presence);
                if !kept.is_empty() {
                    notes.push(format!(
                        "`{stored}`: the existing validator allows {}, which no stored document uses: kept",
                        kept.join(", ")
                    ));
                    self.decide(
                        &field_path,
                        "kept from the existing validator".to_owned(),
                        kept.join(", "),
                    );
                }
                widened = shape;
                field_shape = &widened;
            }
            let mut ty = self.ty(&field_path, &hint, stored, field_shape, &mut notes);
            let declared = self.declared(&field_path).filter(|_| stored != "_id");
            if let Some(values) = declared.and_then(|a| a.values.as_ref()) {
                if let Some(e) =
                    self.declared_enum(&field_path, &hint, stored, values, field_shape, &mut notes)
                {
                    ty = e;
                }
            }
            let mut constraints = self.constraints(&field_path, &ty, stored, &mut notes);
            if presence.missing && presence.null && matches!(ty, Ty::Array { .. } | Ty::Map { .. })
            {
                // `Option<Option<Vec<T>>>` would need a bound inside `stored_as`, which no
                // attribute says
                self.undecided(
                    &field_path,
                    "an array or map that is missing in some documents and `null` in others",
                    &mut notes,
                );
                ty = Ty::Any;
                // a `Bson` field takes no string or number constraint: the module would not
                // compile
                constraints.clear();
            }
            let not_null = stored != "_id"
                && presence.missing
                && !presence.null
                && !matches!(ty, Ty::Any)
                && self.refuses_null(&field_path);
            if not_null {
                notes.push(format!(
                    "`{stored}`: optional, and {}: `#[schema(not_null)]`",
                    if self.declared(&field_path).is_some() {
                        "the existing validator refuses `null`"
                    } else {
                        "`null` in no document"
                    }
                ));
            }
            let open = stored != "_id" && self.unchecked(&field_path);
            if open {
                notes.push(format!(
                    "`{stored}`: the collection's validator checks nothing here: `#[schema(open)]`, so the pulled one takes any value too (the type is what the documents hold)"
                ));
            }
            fields.push(Field {
                stored: stored.clone(),
                ident,
                ty,
                presence,
                not_null,
                open,
                reference: None,
                extended: None,
                notes,
                constraints,
            });
        }
        fields
    }

    /// A unit enum of the values the validator declares at `path`, in its order, with any stored
    /// value it lacks after them (a document stored before the validator); `None` when the
    /// stored strings are too many to know.
    fn declared_enum(
        &mut self,
        path: &str,
        hint: &str,
        stored: &str,
        declared: &[String],
        shape: &Shape,
        notes: &mut Vec<String>,
    ) -> Option<Ty> {
        let kinds: Vec<&str> = shape.kinds().into_iter().filter(|k| *k != "null").collect();
        if kinds != ["string"] {
            return None;
        }
        let seen = shape.strings.as_ref()?.values.as_ref()?;
        let mut values: Vec<String> = declared.to_vec();
        let extra: Vec<&String> = seen.keys().filter(|v| !declared.contains(v)).collect();
        values.extend(extra.iter().map(|v| (*v).clone()));
        if values.iter().any(|v| v.is_empty()) {
            return None;
        }
        let evidence = format!(
            "the validator's `enum` of {} values{}",
            declared.len(),
            if extra.is_empty() {
                String::new()
            } else {
                format!(" and {} stored values it lacks", extra.len())
            }
        );
        notes.push(format!("`{stored}`: {evidence}: a unit enum"));
        if !extra.is_empty() {
            let shown: Vec<String> = extra.iter().take(5).map(|v| format!("{v:?}")).collect();
            self.report.notes.push(format!(
                "`{path}`: stored values the validator's `enum` refuses ({}{}): documents written past the validator (`bypassDocumentValidation`, or before it); the pulled enum takes them, so `apply` of the pulled schema accepts them from now on: fix those documents and pull again to keep the server's `enum`",
                shown.join(", "),
                if extra.len() > 5 { ", ..." } else { "" }
            ));
        }
        self.decide(path, "unit enum (declared)".to_owned(), evidence);
        let mut taken = Vec::new();
        let variants: Vec<(String, String)> = values
            .into_iter()
            .map(|v| (names::unique(names::type_name(&v), &mut taken), v))
            .collect();
        if let Some(i) = self.model.enums.iter().position(|e| e.variants == variants) {
            return Some(Ty::Enum(i));
        }
        let name = names::unique_type(hint.to_owned(), &mut self.type_names);
        self.model.enums.push(UnitEnum {
            name,
            variants,
            from_samples: false,
        });
        Some(Ty::Enum(self.model.enums.len() - 1))
    }

    /// The validator's `maxLength`, `minLength`, `pattern`, `minimum` and `maximum` at `path`
    /// (at `path[]` for an array of scalars), for a type the attribute takes them on.
    fn constraints(
        &mut self,
        path: &str,
        ty: &Ty,
        stored: &str,
        notes: &mut Vec<String>,
    ) -> Vec<(String, mongodb::bson::Bson)> {
        use mongodb::bson::Bson;
        let (scalar, at) = match ty {
            Ty::Array { items, .. } => (&**items, format!("{path}[]")),
            other => (other, path.to_owned()),
        };
        let strings = matches!(scalar, Ty::Str);
        let numbers = matches!(scalar, Ty::I32 | Ty::I64 { .. } | Ty::F64 { .. });
        let Some(declared) = self.declared(&at) else {
            return Vec::new();
        };
        let kept: Vec<(String, Bson)> = declared
            .constraints
            .iter()
            .filter_map(|(keyword, value)| {
                let string_keyword =
                    matches!(keyword.as_str(), "maxLength" | "minLength" | "pattern");
                if (string_keyword && !strings) || (!string_keyword && !numbers) {
                    return None;
                }
                // as the attribute writes them: integers as `long`, others as `double`
                let value = match value {
                    Bson::Int32(n) => Bson::Int64(i64::from(*n)),
                    Bson::Int64(n) => Bson::Int64(*n),
                    Bson::Double(n) if n.is_finite() => Bson::Double(*n),
                    Bson::String(p) if keyword == "pattern" => Bson::String(p.clone()),
                    _ => return None,
                };
                Some((keyword.clone(), value))
            })
            .collect();
        if !kept.is_empty() {
            let said: Vec<String> = kept.iter().map(|(k, v)| format!("`{k}: {v}`")).collect();
            notes.push(format!(
                "`{stored}`: the validator declares {}: kept",
                said.join(", ")
            ));
        }
        kept
    }

    fn ty(
        &mut self,
        path: &str,
        hint: &str,
        stored: &str,
        shape: &Shape,
        notes: &mut Vec<String>,
    ) -> Ty {
        if self.options.undecided.contains(path) {
            self.undecided(path, "the gate could not converge on a type", notes);
            return Ty::Any;
        }
        let kinds: Vec<&str> = shape.kinds().into_iter().filter(|k| *k != "null").collect();
        if kinds.is_empty() {
            self.undecided(path, "only `null` was seen", notes);
            return Ty::Any;
        }
        let numbers = ["int", "long", "double"];
        if kinds.iter().all(|k| numbers.contains(k)) {
            let (int, long, double) = (
                shape.ints.is_some(),
                shape.longs.is_some(),
                shape.doubles > 0,
            );
            let ty = if double {
                Ty::F64 {
                    with_int: int,
                    with_long: long,
                }
            } else if long {
                Ty::I64 { with_int: int }
            } else {
                Ty::I32
            };
            if kinds.len() > 1 {
                notes.push(format!(
                    "`{stored}`: stored as {} ({}): the validator keeps every kind",
                    kinds.join(" and "),
                    self.exactness(path)
                ));
                self.decide(
                    path,
                    format!("{ty:?}"),
                    format!("kinds {} seen", kinds.join(", ")),
                );
            }
            return ty;
        }
        if kinds.len() > 1 {
            self.undecided(
                path,
                &format!("kinds {} have no common Rust type", kinds.join(", ")),
                notes,
            );
            return Ty::Any;
        }
        match kinds[0] {
            "decimal" => Ty::Decimal,
            "string" => self.string(path, hint, stored, shape, notes),
            "bool" => Ty::Bool,
            "date" => Ty::Date,
            "objectId" => Ty::ObjectId,
            "regex" => Ty::Regex,
            "timestamp" => Ty::Timestamp,
            "binData" => {
                let subtypes: Vec<u8> = shape.binaries.keys().copied().collect();
                if subtypes == [4] {
                    Ty::Uuid
                } else {
                    let names: Vec<String> = subtypes
                        .iter()
                        .map(|s| format!("{s} ({})", crate::lattice::binary_subtype_name(*s)))
                        .collect();
                    notes.push(format!(
                        "`{stored}`: binary of subtype {}: kept as `Binary`",
                        names.join(", ")
                    ));
                    Ty::Binary
                }
            }
            "object" => {
                let doc = shape.doc.as_deref().expect("object kind has a shape");
                self.object(path, hint, stored, doc, notes)
            }
            "array" => {
                let array = shape.array.as_deref().expect("array kind has a shape");
                if array.items.count == 0 {
                    self.undecided(path, "only empty arrays were seen", notes);
                    return Ty::Any;
                }
                if array.items.array.is_some() {
                    self.undecided(path, "arrays of arrays (each needs its own bound)", notes);
                    return Ty::Any;
                }
                let item_hint = format!("{hint}Item");
                let singular_hint = names::type_name(&names::singular(stored));
                let element_hint = if singular_hint != names::type_name(stored) {
                    format!(
                        "{}{singular_hint}",
                        hint.strip_suffix(&names::type_name(stored)).unwrap_or(hint)
                    )
                } else {
                    item_hint
                };
                let items_path = format!("{path}[]");
                let mut item_notes = Vec::new();
                let items = self.ty(
                    &items_path,
                    &element_hint,
                    stored,
                    &array.items,
                    &mut item_notes,
                );
                notes.extend(item_notes);
                let declared_max = self.declared(path).and_then(|a| a.max_items);
                // a fixed length the validator does not declare would refuse its other lengths
                let fixed = !self.options.existing.contains_key(path)
                    && array.empties == 0
                    && array.min_len == array.max_len
                    && (1..=4).contains(&array.max_len)
                    && array.count >= 2
                    && !matches!(items, Ty::Struct(_) | Ty::Union(_) | Ty::Any);
                if fixed {
                    notes.push(format!(
                        "`{stored}`: every array holds {} items ({} arrays)",
                        array.max_len, array.count
                    ));
                    return Ty::Fixed {
                        items: Box::new(items),
                        len: array.max_len,
                    };
                }
                let max = match declared_max {
                    // as declared: never below what is stored
                    Some(declared) => declared.max(array.max_len),
                    None => bound(array.max_len, self.options.headroom),
                };
                if let Some(declared) = declared_max.filter(|d| *d < array.max_len) {
                    self.report.notes.push(format!(
                        "`{path}`: a stored array holds {} items, past the validator's `maxItems` of {declared}: documents written past the validator (`bypassDocumentValidation`, or before it); the pulled bound is {max}, so `apply` of the pulled schema accepts such arrays from now on: fix those documents and pull again to keep the server's bound",
                        array.max_len
                    ));
                }
                let unbounded = array.max_len > self.options.unbounded_threshold;
                notes.push(format!(
                    "`{stored}`: at most {} items ({}), bound {max} ({}){}",
                    array.max_len,
                    self.exactness(path),
                    match declared_max {
                        Some(declared) if declared < array.max_len => format!(
                            "past the validator's `maxItems` of {declared}: a stored document breaks it"
                        ),
                        Some(_) => "the validator's `maxItems`".to_owned(),
                        None => format!("{}x headroom", self.options.headroom),
                    },
                    if array.empties > 0 {
                        format!("; {} empty", array.empties)
                    } else {
                        String::new()
                    }
                ));
                self.report.arrays.push(ArrayBound {
                    path: path.to_owned(),
                    observed_max: array.max_len,
                    exact: self.exact.contains(path),
                    bound: max,
                    unbounded_in_practice: unbounded,
                });
                Ty::Array {
                    items: Box::new(items),
                    max,
                }
            }
            _ => {
                self.undecided(path, "a BSON kind the models do not say", notes);
                Ty::Any
            }
        }
    }

    fn undecided(&mut self, path: &str, why: &str, notes: &mut Vec<String>) {
        notes.push(format!("undecided ({why}): `Bson`"));
        self.report.undecided.push(Decision {
            path: path.to_owned(),
            decision: "Bson".to_owned(),
            evidence: why.to_owned(),
        });
    }

    fn string(
        &mut self,
        path: &str,
        hint: &str,
        stored: &str,
        shape: &Shape,
        notes: &mut Vec<String>,
    ) -> Ty {
        let strings = shape.strings.as_ref().expect("string kind");
        let Some(values) = &strings.values else {
            return Ty::Str;
        };
        let n = strings.count;
        let k = values.len() as u64;
        let short = values
            .keys()
            .all(|v| !v.is_empty() && v.chars().count() <= 64);
        let forced = self.options.enums.contains(path);
        // the validator declares strings here: the samples' few values do not narrow them (a
        // declared `enum` is taken in `fields`)
        let declared = self
            .options
            .existing
            .get(path)
            .is_some_and(|a| a.kinds.iter().any(|k| k == "string"));
        // nor where the collection's validator leaves the path open: any string is accepted
        // there today
        if (declared || self.left_open(path)) && !forced {
            return Ty::Str;
        }
        if !forced && (n < self.options.enum_min || k < 2 || (k * k) >= n || !short) {
            return Ty::Str;
        }
        let variants = variant_idents(values.keys());
        let evidence = format!(
            "{k} values in {} documents ({}){}",
            names::count(n),
            self.exactness(path),
            if forced { ", forced by --enum" } else { "" }
        );
        notes.push(format!("`{stored}`: {evidence}: a unit enum"));
        self.decide(path, "unit enum".to_owned(), evidence);
        if let Some(i) = self.model.enums.iter().position(|e| e.variants == variants) {
            return Ty::Enum(i);
        }
        let name = names::unique_type(hint.to_owned(), &mut self.type_names);
        self.model.enums.push(UnitEnum {
            name,
            variants,
            from_samples: !forced,
        });
        Ty::Enum(self.model.enums.len() - 1)
    }

    fn object(
        &mut self,
        path: &str,
        hint: &str,
        stored: &str,
        doc: &DocShape,
        notes: &mut Vec<String>,
    ) -> Ty {
        let forced_map = self.options.maps.contains(path);
        let forced_struct = self.options.structs.contains(path);
        if forced_map || (!forced_struct && looks_like_map(doc)) {
            let mut values = Shape::default();
            for (_, s) in &doc.fields {
                values = values.join(s.clone());
            }
            let mut value_notes = Vec::new();
            let value_hint = format!("{hint}Value");
            let values_ty = self.ty(
                &format!("{path}.*"),
                &value_hint,
                stored,
                &values,
                &mut value_notes,
            );
            notes.extend(value_notes);
            let max = match self.declared(path).and_then(|a| a.max_items) {
                Some(declared) => declared.max(doc.max_keys),
                None => bound(doc.max_keys, self.options.headroom),
            };
            let why = if forced_map {
                "forced by --map".to_owned()
            } else {
                format!(
                    "{} distinct keys such as `{}`, at most {} in one document",
                    doc.fields.len(),
                    doc.fields.first().map(|f| f.0.as_str()).unwrap_or(""),
                    doc.max_keys
                )
            };
            notes.push(format!("`{stored}`: a map ({why}), bound {max}"));
            self.decide(path, "map".to_owned(), why);
            self.report.arrays.push(ArrayBound {
                path: path.to_owned(),
                observed_max: doc.max_keys,
                exact: false,
                bound: max,
                unbounded_in_practice: doc.max_keys > self.options.unbounded_threshold,
            });
            return Ty::Map {
                values: Box::new(values_ty),
                max,
            };
        }
        if let Some((name, _)) = doc.fields.iter().find(|(name, _)| names::hostile(name)) {
            // a name no identifier or rename should carry: its sub-document is kept whole,
            // and the name is written only escaped, in this comment
            self.undecided(
                path,
                &format!(
                    "it holds a field whose stored name has control or invisible characters ({})",
                    format!("{name:?}").trim_matches('"')
                ),
                notes,
            );
            return Ty::Any;
        }
        if !forced_struct {
            if let Some((tag, by_value)) = tagged(doc) {
                return Ty::Union(self.union(path, hint, stored, &tag, &by_value, notes));
            }
        }
        let collection = path.split(['.', '[', '<']).next().unwrap_or(path);
        if geo_point(doc) && !self.options.loosened.contains(collection) {
            notes.push(format!(
                "`{stored}`: a GeoJSON point (`type` \"Point\", two numbers) in every document: `geo::Point`"
            ));
            return Ty::GeoPoint;
        }
        let name = geo_name(doc).unwrap_or(hint);
        Ty::Struct(self.structure(path, name, doc))
    }

    /// An internally tagged enum of the documents at `path`, one variant per tag value.
    fn union(
        &mut self,
        path: &str,
        hint: &str,
        stored: &str,
        tag: &str,
        by_value: &BTreeMap<String, DocShape>,
        notes: &mut Vec<String>,
    ) -> usize {
        let evidence = format!(
            "`{tag}` has {} values ({}) that split the other fields' presence",
            by_value.len(),
            by_value.keys().cloned().collect::<Vec<_>>().join(", ")
        );
        notes.push(format!("`{stored}`: an internally tagged enum: {evidence}"));
        self.decide(path, format!("tagged enum on `{tag}`"), evidence);
        let idents = variant_idents(by_value.keys());
        let mut variants = Vec::new();
        for ((ident, value), docs) in idents.into_iter().zip(by_value.values()) {
            let variant_path = format!("{path}<{tag}={value}>");
            let fields = self.fields(&variant_path, &format!("{hint}{ident}"), docs);
            variants.push(Variant {
                ident,
                value,
                fields,
            });
        }
        if let Some(i) = self
            .model
            .unions
            .iter()
            .position(|u| u.tag == tag && u.variants == variants)
        {
            return i;
        }
        let name = names::unique_type(hint.to_owned(), &mut self.type_names);
        self.model.unions.push(Union {
            name,
            path: path.to_owned(),
            tag: tag.to_owned(),
            variants,
        });
        self.model.unions.len() - 1
    }
}

/// Whether every document at a path is a GeoJSON point as `geo::Point` stores it: `type`
/// "Point" and `coordinates` of two numbers, nothing else (the gate checks the ranges).
fn geo_point(doc: &DocShape) -> bool {
    if doc.fields.len() != 2 {
        return false;
    }
    let Some(kind) = doc.field("type") else {
        return false;
    };
    let only_point = kind.count == doc.count
        && kind.kinds() == ["string"]
        && kind
            .strings
            .as_ref()
            .and_then(|s| s.values.as_ref())
            .is_some_and(|v| v.len() == 1 && v.contains_key("Point"));
    let Some(coordinates) = doc.field("coordinates") else {
        return false;
    };
    let pairs = coordinates.count == doc.count
        && coordinates.kinds() == ["array"]
        && coordinates.array.as_deref().is_some_and(|a| {
            a.min_len == 2
                && a.max_len == 2
                && a.empties == 0
                && a.items
                    .kinds()
                    .iter()
                    .all(|k| ["int", "long", "double"].contains(k))
        });
    only_point && pairs
}

/// `Point` for `{ type: "Point", coordinates }` documents (GeoJSON).
fn geo_name(doc: &DocShape) -> Option<&'static str> {
    let values = doc.field("type")?.strings.as_ref()?.values.as_ref()?;
    doc.field("coordinates")?;
    let geo = [
        "Point",
        "MultiPoint",
        "LineString",
        "MultiLineString",
        "Polygon",
        "MultiPolygon",
    ];
    values.keys().all(|v| geo.contains(&v.as_str())).then(|| {
        if values.len() == 1 && values.contains_key("Point") {
            "GeoPoint"
        } else {
            "Geometry"
        }
    })
}

/// Variant identifiers for stored values, unique, each paired with its value.
fn variant_idents<'a>(values: impl Iterator<Item = &'a String>) -> Vec<(String, String)> {
    let mut taken = Vec::new();
    values
        .map(|v| (names::unique(names::type_name(v), &mut taken), v.clone()))
        .collect()
}

/// Keys that are data, not names: ObjectId hex, uuids, digits, dates, or one prefix with a
/// number (`wh1`, `sku-20`).
fn id_like(key: &str) -> bool {
    let hex = key.len() == 24 && key.chars().all(|c| c.is_ascii_hexdigit());
    let uuid = key.len() == 36
        && key.chars().enumerate().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    let digits = !key.is_empty() && key.chars().all(|c| c.is_ascii_digit());
    let date =
        key.len() >= 7 && key.as_bytes()[4] == b'-' && key[..4].chars().all(|c| c.is_ascii_digit());
    hex || uuid || digits || date
}

fn prefix_number(key: &str) -> Option<&str> {
    let digits = key.trim_end_matches(|c: char| c.is_ascii_digit());
    (digits.len() < key.len() && !digits.is_empty()).then(|| digits.trim_end_matches(['-', '_']))
}

fn looks_like_map(doc: &DocShape) -> bool {
    let keys: Vec<&str> = doc.fields.iter().map(|(k, _)| k.as_str()).collect();
    if keys.len() < 2 {
        return false;
    }
    if keys.iter().all(|k| id_like(k)) {
        return true;
    }
    let prefixes: BTreeSet<Option<&str>> = keys.iter().map(|k| prefix_number(k)).collect();
    if prefixes.len() == 1 && prefixes.iter().next().is_some_and(Option::is_some) && keys.len() >= 3
    {
        return true;
    }
    // many more keys than one document holds: each key is in few of the documents
    keys.len() >= 20 && doc.max_keys * 4 <= keys.len() as u64
}

/// A tag candidate held as a string by every document whose values split the presence of the
/// other fields: `(tag, documents by value)`.
fn tagged(doc: &DocShape) -> Option<(String, BTreeMap<String, DocShape>)> {
    let mut candidates: Vec<&String> = doc.split.keys().collect();
    candidates.sort_by_key(|t| {
        crate::lattice::TAG_CANDIDATES
            .iter()
            .position(|c| c == t)
            .unwrap_or(usize::MAX)
    });
    for tag in candidates {
        let by_value = &doc.split[tag];
        let field = doc.field(tag)?;
        let every = field.count == doc.count
            && field.strings.as_ref().is_some_and(|s| s.count == doc.count);
        if !every || !(2..=16).contains(&by_value.len()) {
            continue;
        }
        // the presence of some field differs between two values
        let sets: BTreeSet<Vec<&str>> = by_value
            .values()
            .map(|d| {
                let mut keys: Vec<&str> = d
                    .fields
                    .iter()
                    .filter(|(_, s)| s.count == d.count)
                    .map(|(k, _)| k.as_str())
                    .collect();
                keys.sort_unstable();
                keys
            })
            .collect();
        if sets.len() > 1 {
            return Some((tag.clone(), by_value.clone()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{doc, Bson, Document};

    fn observe(docs: &[Document]) -> Observed {
        let mut shape = DocShape::default();
        for d in docs {
            shape = shape.join(DocShape::of(d));
        }
        Observed {
            name: "orders".into(),
            count: docs.len() as u64,
            shape,
            exact: BTreeSet::new(),
        }
    }

    fn root(model: &Model) -> &Struct {
        &model.structs[model.collections[0].root]
    }

    #[test]
    fn numbers_missing_null_and_enums() {
        let docs: Vec<Document> = (0..100)
            .map(|i| {
                let status = ["open", "paid", "shipped"][i as usize % 3];
                let mut d = doc! { "_id": i, "status": status };
                d.insert(
                    "price",
                    if i % 2 == 0 {
                        Bson::Int32(i)
                    } else {
                        Bson::Double(1.5)
                    },
                );
                if i % 3 == 0 {
                    d.insert("note", Bson::Null);
                } else {
                    d.insert("note", "x");
                }
                if i % 4 == 0 {
                    d.insert("coupon", "SAVE");
                }
                d
            })
            .collect();
        let mut report = Report::default();
        let model = infer(&[observe(&docs)], &Options::default(), &mut report);
        let r = root(&model);
        assert_eq!(r.name, "Order");
        let field = |n: &str| r.fields.iter().find(|f| f.stored == n).unwrap();
        assert_eq!(field("_id").ty, Ty::I32);
        assert_eq!(
            field("price").ty,
            Ty::F64 {
                with_int: true,
                with_long: false
            }
        );
        assert_eq!(
            field("note").presence,
            Presence {
                missing: false,
                null: true
            }
        );
        assert_eq!(
            field("coupon").presence,
            Presence {
                missing: true,
                null: false
            }
        );
        assert!(matches!(field("status").ty, Ty::Enum(_)));
        assert_eq!(
            model.enums[0].variants[0],
            ("Open".to_owned(), "open".to_owned())
        );
    }

    #[test]
    fn an_array_missing_and_null_is_undecided() {
        let docs = vec![
            doc! { "_id": 1, "tags": ["a"] },
            doc! { "_id": 2, "tags": null },
            doc! { "_id": 3 },
        ];
        let mut report = Report::default();
        let model = infer(&[observe(&docs)], &Options::default(), &mut report);
        assert_eq!(root(&model).fields[1].ty, Ty::Any);
        assert!(report.undecided.iter().any(|u| u.path == "orders.tags"));
    }

    #[test]
    fn incompatible_kinds_are_undecided_not_guessed() {
        let docs = vec![doc! { "_id": 1, "v": "a" }, doc! { "_id": 2, "v": true }];
        let mut report = Report::default();
        let model = infer(&[observe(&docs)], &Options::default(), &mut report);
        assert_eq!(root(&model).fields[1].ty, Ty::Any);
        assert_eq!(report.undecided.len(), 1);
    }

    #[test]
    fn maps_tagged_unions_and_bounds() {
        let docs: Vec<Document> = (0..40)
            .map(|i| {
                let payment = if i % 2 == 0 {
                    doc! { "type": "card", "last4": "4242" }
                } else {
                    doc! { "type": "paypal", "email": "a@b.c" }
                };
                doc! {
                    "_id": i,
                    "payment": payment,
                    "stock": { format!("wh{}", i % 7): i, format!("wh{}", (i + 1) % 7): 1 },
                    "tags": (0..(i % 5)).map(|t| format!("t{}", i * 10 + t)).collect::<Vec<_>>(),
                }
            })
            .collect();
        let mut report = Report::default();
        let model = infer(&[observe(&docs)], &Options::default(), &mut report);
        let r = root(&model);
        assert!(matches!(r.fields[1].ty, Ty::Union(_)));
        assert_eq!(model.unions[0].tag, "type");
        assert_eq!(model.unions[0].variants.len(), 2);
        assert_eq!(
            r.fields[2].ty,
            Ty::Map {
                values: Box::new(Ty::I32),
                max: 4
            }
        );
        assert_eq!(
            r.fields[3].ty,
            Ty::Array {
                items: Box::new(Ty::Str),
                max: 8
            }
        );
        assert_eq!(bound(3, 2.0), 6);
        assert_eq!(bound(0, 2.0), 1);
        assert_eq!(bound(5, 1.5), 8);
    }

    /// What the server's validator declares is kept: the bound, the enum with a value no
    /// document holds, the lengths and ranges, the open root; the samples (3 tags at most, 2
    /// statuses, 2 tag values) narrow none of it. The control: the same documents with no
    /// validator get the sampled bound and a closed root.
    #[test]
    fn declarations_are_kept_as_declared() {
        let validator = doc! { "$jsonSchema": {
            "bsonType": "object",
            "required": ["_id", "tags", "status", "title", "seats"],
            "properties": {
                "_id": { "bsonType": "int" },
                "tags": { "bsonType": "array", "maxItems": 10_i64, "items": { "bsonType": "string", "maxLength": 20_i64 } },
                "status": { "bsonType": "string", "enum": ["draft", "on_sale", "cancelled"] },
                "title": { "bsonType": "string", "maxLength": 80_i64 },
                "seats": { "bsonType": "int", "minimum": 0_i64, "maximum": 100_i64 },
                // in no stored document
                "promo": { "bsonType": ["string", "null"] },
            },
        } };
        let docs: Vec<Document> = (0..40)
            .map(|i| {
                doc! {
                    "_id": i,
                    "tags": (0..(i % 4)).map(|t| format!("t{}", t % 2)).collect::<Vec<_>>(),
                    "status": (["draft", "on_sale"][i as usize % 2]),
                    "title": format!("show {i}"),
                    "seats": i,
                }
            })
            .collect();
        let mut options = Options::default();
        options
            .existing
            .extend(crate::existing::allowed("orders", &validator));
        let mut report = Report::default();
        let model = infer(&[observe(&docs)], &options, &mut report);
        let r = root(&model);
        assert!(r.open, "the validator leaves the root open");
        let field = |n: &str| r.fields.iter().find(|f| f.stored == n).unwrap().clone();
        assert_eq!(
            field("tags").ty,
            Ty::Array {
                items: Box::new(Ty::Str),
                max: 10
            }
        );
        assert_eq!(
            field("tags").constraints,
            vec![("maxLength".to_owned(), Bson::Int64(20))]
        );
        let Ty::Enum(status) = field("status").ty else {
            panic!("{:?}", field("status").ty)
        };
        let values: Vec<&str> = model.enums[status]
            .variants
            .iter()
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(values, ["draft", "on_sale", "cancelled"]);
        assert_eq!(
            field("seats").constraints,
            vec![
                ("minimum".to_owned(), Bson::Int64(0)),
                ("maximum".to_owned(), Bson::Int64(100))
            ]
        );
        let promo = field("promo");
        assert_eq!(promo.ty, Ty::Str);
        assert!(promo.presence.missing && promo.presence.null);
        // the validator the models install is the server's
        let installed = crate::validator::validators(&model);
        assert!(
            crate::validator::same(&installed[0].1, &validator),
            "{}\n{}",
            installed[0].1,
            validator
        );

        // the control: no validator, the samples decide
        let model = infer(&[observe(&docs)], &Options::default(), &mut report);
        let r = root(&model);
        assert!(!r.open);
        let tags = r.fields.iter().find(|f| f.stored == "tags").unwrap();
        assert!(matches!(tags.ty, Ty::Array { max: 6, .. }), "{:?}", tags.ty);
        assert!(tags.constraints.is_empty());
    }

    /// What a validator leaves open stays open (a field it does not declare is neither required
    /// nor an enum of the values seen), and what stored documents hold past it is said.
    #[test]
    fn a_validator_s_open_paths_stay_open_and_what_breaks_it_is_said() {
        let validator = doc! { "$jsonSchema": {
            "bsonType": "object",
            "required": ["_id", "status"],
            "properties": {
                "_id": { "bsonType": "int" },
                "status": { "bsonType": "string", "enum": ["active", "suspended"] },
                "phones": { "bsonType": "array", "maxItems": 3_i64, "minItems": 1_i64,
                            "items": { "bsonType": "string" } },
            },
        } };
        // `language` in every document, 3 values: without the validator, a required enum
        let docs: Vec<Document> = (0..300)
            .map(|i| {
                let mut d = doc! {
                    "_id": i,
                    "status": "active",
                    "language": (["de", "en", "fr"][i as usize % 3]),
                    "phones": ["1"],
                };
                if i == 7 {
                    // written past the validator (bypassDocumentValidation)
                    d.insert("status", "banned");
                    d.insert("phones", vec!["1", "2", "3", "4", "5"]);
                }
                d
            })
            .collect();
        let mut options = Options::default();
        options
            .existing
            .extend(crate::existing::allowed("orders", &validator));
        let mut report = Report::default();
        let model = infer(&[observe(&docs)], &options, &mut report);
        let r = root(&model);
        let field = |n: &str| r.fields.iter().find(|f| f.stored == n).unwrap().clone();
        let language = field("language");
        assert_eq!(language.ty, Ty::Str, "not an enum of the values seen");
        assert!(
            language.presence.missing,
            "not required: the server does not require it"
        );
        assert!(language.open, "unchecked: the server checks nothing there");
        assert!(
            !field("status").open,
            "declared with a kind and an enum: checked"
        );
        // the stored document past the validator: taken, and said at the collection
        assert!(matches!(field("phones").ty, Ty::Array { max: 5, .. }));
        let said = report.notes.join("\n");
        // display-text: the notes are what the operator reads of it
        assert!(
            said.contains("`orders.phones`: a stored array holds 5 items, past the validator's `maxItems` of 3"),
            "{said}"
        );
        assert!(
            said.contains(
                "`orders.status`: stored values the validator's `enum` refuses (\"banned\")"
            ),
            "{said}"
        );
        let allowed = crate::existing::allowed("orders", &validator);
        assert_eq!(allowed["orders.phones"].unkept, ["minItems"]);

        // the control: no validator, the samples decide (required, an enum)
        let mut report = Report::default();
        let model = infer(&[observe(&docs)], &Options::default(), &mut report);
        let language = root(&model)
            .fields
            .iter()
            .find(|f| f.stored == "language")
            .unwrap();
        assert!(matches!(language.ty, Ty::Enum(_)), "{:?}", language.ty);
        assert!(!language.presence.missing);
        assert!(!language.open, "no validator: the samples decide, checked");
    }

    /// An optional field is never-null (`#[schema(not_null)]`) where `null` is refused today:
    /// by the server's validator, or, in a collection without one, by every stored document;
    /// nullable where the validator takes `null`, leaves the path open, or a document holds one.
    #[test]
    fn an_optional_field_refuses_null_where_the_server_does() {
        let validator = doc! { "$jsonSchema": {
            "bsonType": "object",
            "properties": {
                "phone": { "bsonType": "string" },
                "fax": { "bsonType": ["string", "null"] },
                "pager": { "enum": ["a", "b", null] },
            },
        } };
        let docs: Vec<Document> = (0..40)
            .map(|i| match i % 2 {
                0 => doc! { "_id": i, "phone": "1", "fax": "2", "pager": "a", "email": "e", "note": "n" },
                _ if i == 5 => doc! { "_id": i, "note": Bson::Null },
                _ => doc! { "_id": i },
            })
            .collect();
        let not_null = |options: &Options| -> Vec<(String, bool)> {
            let model = infer(&[observe(&docs)], options, &mut Report::default());
            let mut fields: Vec<_> = root(&model)
                .fields
                .iter()
                .filter(|f| f.stored != "_id")
                .map(|f| (f.stored.clone(), f.not_null))
                .collect();
            fields.sort();
            fields
        };
        let mut options = Options::default();
        options
            .existing
            .extend(crate::existing::allowed("orders", &validator));
        // (field, not null with the validator, without it)
        let expected = [
            // left open by the validator (as `note` is)
            ("email", false, true),
            // the validator takes `null`
            ("fax", false, true),
            ("note", false, false),
            // an enum with `null` takes it, whatever else it names
            ("pager", false, true),
            // declared, `null` not among its kinds
            ("phone", true, true),
        ];
        let with_validator = expected.map(|(field, with, _)| (field.to_owned(), with));
        assert_eq!(not_null(&options), with_validator);
        // the control: no validator, the documents decide (`note` holds one `null`)
        let without = expected.map(|(field, _, without)| (field.to_owned(), without));
        assert_eq!(not_null(&Options::default()), without);
    }

    /// A root keeps its name, however like a sub-document of another collection it is.
    #[test]
    fn roots_keep_their_names() {
        let venue = |i: i32| doc! { "_id": i, "name": format!("Hall {}", i % 5) };
        let events: Vec<Document> = (0..30)
            .map(|i| doc! { "_id": i, "venue": venue(i % 5) })
            .collect();
        let venues: Vec<Document> = (0..5).map(venue).collect();
        let mut observed = vec![observe(&events), observe(&venues)];
        observed[0].name = "events".into();
        observed[1].name = "venues".into();
        let mut report = Report::default();
        let model = infer(
            &observed,
            &Options {
                enum_min: 1000,
                ..Options::default()
            },
            &mut report,
        );
        assert_eq!(model.root_name("events"), Some("Event"));
        assert_eq!(model.root_name("venues"), Some("Venue"));
        let event = &model.structs[model.collections[0].root];
        let Ty::Struct(sub) = event.fields[1].ty else {
            panic!()
        };
        assert_eq!(model.structs[sub].name, "EventVenue");
        assert_ne!(sub, model.collections[1].root);
    }
}
