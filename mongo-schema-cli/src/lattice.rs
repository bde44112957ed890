//! What was observed at one path, as a join-semilattice: [`Shape::join`] is commutative,
//! associative and idempotent on the facts it keeps (counts add, ranges widen, value sets unite
//! up to a cap, past which they are forgotten for good). Every stored value has a shape
//! ([`Shape::of`]); the shape of a set of values is the join of theirs, in any order. The Rust
//! type is decided from the joined shape afterwards (`infer`), where incompatible kinds meet at
//! the top: "undecided", a `Bson` field.
//!
//! Missing, `null` and `[]` stay distinct: a missing field is a parent document without the key
//! (`DocShape::count` minus the field's `count`), `null` is counted in `nulls`, an empty array in
//! `ArrayShape::empties`.

use std::collections::BTreeMap;

use mongodb::bson::{spec::BinarySubtype, Bson, Document};

/// How many distinct strings a path keeps; past it the values are forgotten (not an enum).
pub const VALUE_CAP: usize = 64;

/// Field names whose string value may tell the kinds of documents at one path apart.
pub const TAG_CANDIDATES: &[&str] = &[
    "type", "kind", "_type", "__t", "_t", "t", "method", "channel", "variant",
];

/// Whether a field name may be a tag: one of [`TAG_CANDIDATES`] or a name ending in `_type` or
/// `Type` (`channel_type`, `userType`).
pub fn is_tag_candidate(name: &str) -> bool {
    TAG_CANDIDATES.contains(&name) || name.ends_with("_type") || name.ends_with("Type")
}

/// A closed range of integers with the number of values in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRange {
    /// How many values.
    pub count: u64,
    /// The smallest.
    pub min: i64,
    /// The largest.
    pub max: i64,
}

impl IntRange {
    fn one(v: i64) -> Self {
        IntRange {
            count: 1,
            min: v,
            max: v,
        }
    }

    fn join(self, other: IntRange) -> IntRange {
        IntRange {
            count: self.count + other.count,
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

/// Strings seen at a path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Strings {
    /// How many.
    pub count: u64,
    /// The longest, in Unicode code points (what `maxLength` counts).
    pub max_len: u64,
    /// Each distinct value with its count, or `None` once more than [`VALUE_CAP`] were seen.
    pub values: Option<BTreeMap<String, u64>>,
}

impl Strings {
    fn one(s: &str) -> Self {
        Strings {
            count: 1,
            max_len: s.chars().count() as u64,
            values: Some(BTreeMap::from([(s.to_owned(), 1)])),
        }
    }

    fn join(self, other: Strings) -> Strings {
        let values = match (self.values, other.values) {
            (Some(mut a), Some(b)) => {
                for (k, n) in b {
                    *a.entry(k).or_default() += n;
                }
                (a.len() <= VALUE_CAP).then_some(a)
            }
            _ => None,
        };
        Strings {
            count: self.count + other.count,
            max_len: self.max_len.max(other.max_len),
            values,
        }
    }
}

/// The documents seen at a path: how many, and the shape of each field (a field's `count` is the
/// number of these documents that hold it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DocShape {
    /// How many documents.
    pub count: u64,
    /// Fields in the order first seen.
    pub fields: Vec<(String, Shape)>,
    /// The most keys one document had (what `maxProperties` counts, for maps).
    pub max_keys: u64,
    /// For each tag candidate field with a string value: the documents split by that value.
    pub split: BTreeMap<String, BTreeMap<String, DocShape>>,
}

impl DocShape {
    /// The shape of one document.
    pub fn of(document: &Document) -> DocShape {
        let fields: Vec<(String, Shape)> = document
            .iter()
            .map(|(k, v)| (k.clone(), Shape::of(v)))
            .collect();
        let mut split = BTreeMap::new();
        for (k, v) in document {
            if let Bson::String(tag) = v {
                if is_tag_candidate(k) {
                    let mut rest = document.clone();
                    rest.remove(k);
                    let inner = DocShape {
                        count: 1,
                        fields: rest
                            .iter()
                            .map(|(k, v)| (k.clone(), Shape::of(v)))
                            .collect(),
                        max_keys: rest.len() as u64,
                        split: BTreeMap::new(),
                    };
                    split.insert(k.clone(), BTreeMap::from([(tag.clone(), inner)]));
                }
            }
        }
        DocShape {
            count: 1,
            fields,
            max_keys: document.len() as u64,
            split,
        }
    }

    /// The join of two sets of documents.
    pub fn join(mut self, other: DocShape) -> DocShape {
        self.count += other.count;
        self.max_keys = self.max_keys.max(other.max_keys);
        for (name, shape) in other.fields {
            match self.fields.iter_mut().find(|(n, _)| *n == name) {
                Some((_, mine)) => *mine = std::mem::take(mine).join(shape),
                None => self.fields.push((name, shape)),
            }
        }
        for (tag, by_value) in other.split {
            let mine = self.split.entry(tag).or_default();
            for (value, docs) in by_value {
                let slot = mine.entry(value).or_default();
                *slot = std::mem::take(slot).join(docs);
            }
        }
        self
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Shape> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// The field named `name`, created empty when missing.
    pub fn field_mut(&mut self, name: &str) -> &mut Shape {
        if let Some(i) = self.fields.iter().position(|(n, _)| n == name) {
            return &mut self.fields[i].1;
        }
        self.fields.push((name.to_owned(), Shape::default()));
        &mut self.fields.last_mut().expect("just pushed").1
    }
}

/// The arrays seen at a path.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArrayShape {
    /// How many arrays.
    pub count: u64,
    /// How many of them were empty.
    pub empties: u64,
    /// The longest.
    pub max_len: u64,
    /// The shortest.
    pub min_len: u64,
    /// The shape of every element of every array.
    pub items: Shape,
}

/// Everything observed at one path. `Default` is the bottom: nothing seen.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Shape {
    /// Values seen at the path, `null` included.
    pub count: u64,
    /// `null`s.
    pub nulls: u64,
    /// `int` (int32) values.
    pub ints: Option<IntRange>,
    /// `long` (int64) values.
    pub longs: Option<IntRange>,
    /// `double` values, and how many of them are integral.
    pub doubles: u64,
    /// `double`s with no fractional part.
    pub integral_doubles: u64,
    /// `decimal` values.
    pub decimals: u64,
    /// Strings.
    pub strings: Option<Strings>,
    /// Booleans.
    pub bools: u64,
    /// BSON dates.
    pub dates: u64,
    /// ObjectIds.
    pub object_ids: u64,
    /// Regular expressions.
    pub regexes: u64,
    /// Timestamps.
    pub timestamps: u64,
    /// Binary values by subtype byte.
    pub binaries: BTreeMap<u8, u64>,
    /// Kinds no Rust type of the models says (JavaScript, symbol, min/max key, ...), by name.
    pub others: BTreeMap<String, u64>,
    /// Documents.
    pub doc: Option<Box<DocShape>>,
    /// Arrays.
    pub array: Option<Box<ArrayShape>>,
}

impl Shape {
    /// The shape of one value.
    pub fn of(value: &Bson) -> Shape {
        let mut s = Shape {
            count: 1,
            ..Shape::default()
        };
        match value {
            Bson::Null | Bson::Undefined => s.nulls = 1,
            Bson::Int32(v) => s.ints = Some(IntRange::one(i64::from(*v))),
            Bson::Int64(v) => s.longs = Some(IntRange::one(*v)),
            Bson::Double(v) => {
                s.doubles = 1;
                s.integral_doubles = u64::from(v.fract() == 0.0);
            }
            Bson::Decimal128(_) => s.decimals = 1,
            Bson::String(v) => s.strings = Some(Strings::one(v)),
            Bson::Boolean(_) => s.bools = 1,
            Bson::DateTime(_) => s.dates = 1,
            Bson::ObjectId(_) => s.object_ids = 1,
            Bson::RegularExpression(_) => s.regexes = 1,
            Bson::Timestamp(_) => s.timestamps = 1,
            Bson::Binary(b) => {
                s.binaries.insert(u8::from(b.subtype), 1);
            }
            Bson::Document(d) => s.doc = Some(Box::new(DocShape::of(d))),
            Bson::Array(items) => {
                let mut joined = Shape::default();
                for item in items {
                    joined = joined.join(Shape::of(item));
                }
                s.array = Some(Box::new(ArrayShape {
                    count: 1,
                    empties: u64::from(items.is_empty()),
                    max_len: items.len() as u64,
                    min_len: items.len() as u64,
                    items: joined,
                }));
            }
            other => {
                s.others.insert(format!("{:?}", other.element_type()), 1);
            }
        }
        s
    }

    /// The join of two shapes: what a path holds when it holds the values of both.
    pub fn join(self, other: Shape) -> Shape {
        fn opt<T>(a: Option<T>, b: Option<T>, f: impl FnOnce(T, T) -> T) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(f(a, b)),
                (a, b) => a.or(b),
            }
        }
        fn add_map<K: Ord>(mut a: BTreeMap<K, u64>, b: BTreeMap<K, u64>) -> BTreeMap<K, u64> {
            for (k, n) in b {
                *a.entry(k).or_default() += n;
            }
            a
        }
        Shape {
            count: self.count + other.count,
            nulls: self.nulls + other.nulls,
            ints: opt(self.ints, other.ints, IntRange::join),
            longs: opt(self.longs, other.longs, IntRange::join),
            doubles: self.doubles + other.doubles,
            integral_doubles: self.integral_doubles + other.integral_doubles,
            decimals: self.decimals + other.decimals,
            strings: opt(self.strings, other.strings, Strings::join),
            bools: self.bools + other.bools,
            dates: self.dates + other.dates,
            object_ids: self.object_ids + other.object_ids,
            regexes: self.regexes + other.regexes,
            timestamps: self.timestamps + other.timestamps,
            binaries: add_map(self.binaries, other.binaries),
            others: add_map(self.others, other.others),
            doc: opt(self.doc, other.doc, |a, b| Box::new((*a).join(*b))),
            array: opt(self.array, other.array, |a, b| {
                let (a, b) = (*a, *b);
                Box::new(ArrayShape {
                    count: a.count + b.count,
                    empties: a.empties + b.empties,
                    max_len: a.max_len.max(b.max_len),
                    min_len: a.min_len.min(b.min_len),
                    items: a.items.join(b.items),
                })
            }),
        }
    }

    /// The BSON kinds seen, by their `$type` names, `null` included.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut kinds = Vec::new();
        let mut push = |seen: bool, name: &'static str| {
            if seen {
                kinds.push(name);
            }
        };
        push(self.ints.is_some(), "int");
        push(self.longs.is_some(), "long");
        push(self.doubles > 0, "double");
        push(self.decimals > 0, "decimal");
        push(self.strings.is_some(), "string");
        push(self.bools > 0, "bool");
        push(self.dates > 0, "date");
        push(self.object_ids > 0, "objectId");
        push(self.regexes > 0, "regex");
        push(self.timestamps > 0, "timestamp");
        push(!self.binaries.is_empty(), "binData");
        push(self.doc.is_some(), "object");
        push(self.array.is_some(), "array");
        push(!self.others.is_empty(), "other");
        push(self.nulls > 0, "null");
        kinds
    }

    /// Values that are not `null`.
    pub fn non_null(&self) -> u64 {
        self.count - self.nulls
    }
}

/// The subtype byte of a binary subtype, for messages.
pub fn binary_subtype_name(subtype: u8) -> &'static str {
    match BinarySubtype::from(subtype) {
        BinarySubtype::Generic => "generic",
        BinarySubtype::Uuid => "uuid",
        BinarySubtype::UuidOld => "uuid (old)",
        BinarySubtype::Md5 => "md5",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{doc, oid::ObjectId, Binary, DateTime};

    fn values() -> Vec<Bson> {
        vec![
            Bson::Null,
            Bson::Int32(3),
            Bson::Int64(1 << 40),
            Bson::Double(2.5),
            Bson::Double(4.0),
            Bson::String("open".into()),
            Bson::String("closed".into()),
            Bson::Boolean(true),
            Bson::DateTime(DateTime::from_millis(7)),
            Bson::ObjectId(ObjectId::new()),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Uuid,
                bytes: vec![0; 16],
            }),
            Bson::Array(vec![]),
            Bson::Array(vec![Bson::Int32(1), Bson::String("x".into())]),
            Bson::Document(doc! { "type": "card", "last4": "4242" }),
            Bson::Document(doc! { "type": "paypal", "email": "a@b", "n": null }),
            Bson::Document(doc! {}),
        ]
    }

    #[test]
    fn join_is_commutative_and_associative() {
        let shapes: Vec<Shape> = values().iter().map(Shape::of).collect();
        for a in &shapes {
            assert_eq!(a.clone().join(Shape::default()), *a, "bottom is the unit");
            for b in &shapes {
                assert_eq!(
                    a.clone().join(b.clone()).normalized(),
                    b.clone().join(a.clone()).normalized()
                );
                for c in &shapes {
                    let left = a.clone().join(b.clone()).join(c.clone());
                    let right = a.clone().join(b.clone().join(c.clone()));
                    assert_eq!(left.normalized(), right.normalized());
                }
            }
        }
    }

    #[test]
    fn the_order_of_values_does_not_change_the_join() {
        let forward = values()
            .iter()
            .fold(Shape::default(), |s, v| s.join(Shape::of(v)));
        let backward = values()
            .iter()
            .rev()
            .fold(Shape::default(), |s, v| s.join(Shape::of(v)));
        assert_eq!(forward.clone().normalized(), backward.normalized());
        assert_eq!(forward.count, 16);
        assert_eq!(forward.nulls, 1);
        assert_eq!(forward.ints.map(|r| r.count), Some(1));
        assert_eq!(forward.array.as_ref().map(|a| a.empties), Some(1));
        let docs = forward.doc.as_ref().expect("documents");
        assert_eq!(docs.count, 3);
        assert_eq!(docs.field("type").map(|s| s.count), Some(2));
        assert_eq!(docs.field("n").map(|s| s.nulls), Some(1));
        assert_eq!(docs.split["type"].len(), 2);
    }

    #[test]
    fn too_many_values_are_forgotten_for_good() {
        let mut s = Shape::default();
        for i in 0..=VALUE_CAP {
            s = s.join(Shape::of(&Bson::String(format!("v{i}"))));
        }
        assert_eq!(s.strings.as_ref().map(|s| s.values.is_none()), Some(true));
        let s = s.join(Shape::of(&Bson::String("v0".into())));
        assert!(s.strings.unwrap().values.is_none());
    }

    impl Shape {
        /// Field order is first-seen order, which depends on the order of the join; the facts do not.
        fn normalized(mut self) -> Shape {
            if let Some(doc) = self.doc.as_mut() {
                normalize_doc(doc);
            }
            if let Some(array) = self.array.as_mut() {
                array.items = std::mem::take(&mut array.items).normalized();
            }
            self
        }
    }

    fn normalize_doc(doc: &mut DocShape) {
        doc.fields.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, s) in doc.fields.iter_mut() {
            *s = std::mem::take(s).normalized();
        }
        for by_value in doc.split.values_mut() {
            for d in by_value.values_mut() {
                normalize_doc(d);
            }
        }
    }
}
