//! Documents generated around a `$jsonSchema`: mostly what the schema allows, with a few values
//! pushed to the edges of a keyword or past them (a wrong type, a bound exceeded by one, an
//! extra or a missing property, a duplicate item, a number of another BSON type), for the
//! differential test of the local validator against the server.
#![allow(dead_code)]

use std::str::FromStr;

use mongo_schema::bson::{
    doc, oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Decimal128, Document,
    Timestamp,
};

/// SplitMix64: small, seedable, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// With probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The keywords whose branches a value takes one of.
const BRANCHES: [&str; 3] = ["oneOf", "anyOf", "allOf"];

/// The generator, with the probability that a node is pushed off its schema.
pub struct Generator {
    pub rng: Rng,
    pub break_rate: f64,
}

const WORDS: &[&str] = &[
    "",
    "a",
    "open",
    "closed",
    "pending",
    "x@y.org",
    "no-at-sign",
    "ABC-123",
    "abc-123",
    "été",
    "日本語テキスト",
    "ends with newline\n",
    "42",
    "a b c",
    "Z",
    "alpha_beta",
    "😀😀",
];

const KEYS: &[&str] = &[
    "a", "b", "c", "extra", "x1", "S_name", "n_count", "zzz", "_tmp",
];

fn number_value(v: f64) -> Bson {
    Bson::Double(v)
}

impl Generator {
    pub fn new(seed: u64, break_rate: f64) -> Generator {
        Generator {
            rng: Rng::new(seed),
            break_rate,
        }
    }

    /// A document for the validator's `$jsonSchema` (the root is always a document).
    pub fn document(&mut self, schema: &Document) -> Document {
        // a root of branches (a whole-document enum is a `oneOf` of objects) takes a branch,
        // as any value does; a value pushed off its schema there is an object all the same
        let branched = BRANCHES.iter().any(|k| schema.contains_key(*k));
        let root = if branched {
            self.value(schema, 0)
        } else {
            self.object(schema, 0)
        };
        match root {
            Bson::Document(d) => d,
            _ => match self.object(schema, 0) {
                Bson::Document(d) => d,
                _ => Document::new(),
            },
        }
    }

    /// A value of any type, for a value pushed off its schema.
    pub fn any(&mut self, depth: usize) -> Bson {
        match self.rng.below(if depth > 2 { 14 } else { 16 }) {
            0 => Bson::Null,
            1 => Bson::Boolean(self.rng.chance(0.5)),
            2 => Bson::Int32(self.small_int() as i32),
            3 => Bson::Int64(self.small_int()),
            4 => Bson::Double(*self.rng.pick(&[0.5, -0.0, 1.0, 2.5, f64::NAN, 1e300, -7.0])),
            5 => Bson::Decimal128(self.decimal()),
            6 => Bson::String(self.word()),
            7 => Bson::ObjectId(ObjectId::new()),
            8 => Bson::DateTime(DateTime::from_millis(self.rng.below(1 << 40) as i64)),
            9 => Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![1, 2, 3],
            }),
            10 => Bson::Timestamp(Timestamp {
                time: 1,
                increment: 2,
            }),
            11 => Bson::Undefined,
            12 => Bson::MinKey,
            13 => Bson::Symbol("sym".into()),
            14 => {
                let n = self.rng.below(4);
                Bson::Array((0..n).map(|_| self.any(depth + 1)).collect())
            }
            _ => {
                let mut d = Document::new();
                for _ in 0..self.rng.below(3) {
                    let key = *self.rng.pick(KEYS);
                    let value = self.any(depth + 1);
                    d.insert(key, value);
                }
                Bson::Document(d)
            }
        }
    }

    fn small_int(&mut self) -> i64 {
        *self.rng.pick(&[
            0, 1, -1, 2, 3, 5, 7, 10, 23, 24, 100, 255, 256, -129, 65535, 65536,
        ])
    }

    fn decimal(&mut self) -> Decimal128 {
        let text = *self.rng.pick(&[
            "0",
            "1",
            "1.0",
            "1.00",
            "-1",
            "2.5",
            "3",
            "0.1",
            "1E+2",
            "NaN",
            "Infinity",
            "-0",
            "7.50",
            "1000000000000000000000000000000001",
        ]);
        Decimal128::from_str(text).expect("a decimal")
    }

    fn word(&mut self) -> String {
        if self.rng.chance(0.2) {
            let n = self.rng.below(70);
            return "w".repeat(n);
        }
        (*self.rng.pick(WORDS)).to_owned()
    }

    fn broken(&mut self) -> bool {
        self.rng.chance(self.break_rate)
    }

    /// A value for `schema` at nesting `depth`.
    pub fn value(&mut self, schema: &Document, depth: usize) -> Bson {
        if depth > 6 || self.broken() {
            return self.any(depth);
        }
        if let Ok(values) = schema.get_array("enum") {
            if !values.is_empty() && !self.rng.chance(0.1) {
                let chosen = self.rng.pick(values).clone();
                // the same number in another BSON type: equal for mongod
                return match chosen {
                    Bson::Int32(v) if self.rng.chance(0.3) => Bson::Double(f64::from(v)),
                    Bson::Int64(v) if self.rng.chance(0.3) => Bson::Int32(v as i32),
                    other => other,
                };
            }
        }
        for keyword in BRANCHES {
            if let Ok(branches) = schema.get_array(keyword) {
                let branches: Vec<&Document> =
                    branches.iter().filter_map(Bson::as_document).collect();
                if !branches.is_empty() && self.rng.chance(0.85) {
                    let branch = (*self.rng.pick(&branches)).clone();
                    let mut merged = schema.clone();
                    merged.remove(keyword);
                    for (k, v) in branch {
                        merged.insert(k, v);
                    }
                    return self.value(&merged, depth + 1);
                }
            }
        }
        let types = self.types(schema);
        let ty = self.rng.pick(&types).clone();
        match ty.as_str() {
            "object" => self.object(schema, depth),
            "array" => self.array(schema, depth),
            "string" => self.string(schema),
            "int" | "long" | "double" | "decimal" | "number" => self.number(schema, &ty),
            "bool" | "boolean" => Bson::Boolean(self.rng.chance(0.5)),
            "null" => Bson::Null,
            "objectId" => Bson::ObjectId(ObjectId::new()),
            "date" => Bson::DateTime(DateTime::from_millis(
                (self.rng.next() % 4_102_444_800_000) as i64,
            )),
            "binData" => Bson::Binary(Binary {
                subtype: if self.rng.chance(0.5) {
                    BinarySubtype::Generic
                } else {
                    BinarySubtype::Uuid
                },
                bytes: if self.rng.chance(0.5) {
                    vec![7; 16]
                } else {
                    vec![1, 2]
                },
            }),
            "timestamp" => Bson::Timestamp(Timestamp {
                time: 5,
                increment: 1,
            }),
            _ => self.any(depth),
        }
    }

    /// The types a value of `schema` may take: its `bsonType`/`type`, or what its keywords
    /// suggest.
    fn types(&mut self, schema: &Document) -> Vec<String> {
        for keyword in ["bsonType", "type"] {
            match schema.get(keyword) {
                Some(Bson::String(t)) => return vec![t.clone()],
                Some(Bson::Array(ts)) => {
                    let names: Vec<String> = ts
                        .iter()
                        .filter_map(|t| t.as_str().map(str::to_owned))
                        .collect();
                    if !names.is_empty() {
                        return names;
                    }
                }
                _ => {}
            }
        }
        let has = |keys: &[&str]| keys.iter().any(|k| schema.contains_key(*k));
        if has(&[
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
        ]) || has(&["minProperties", "maxProperties", "dependencies"])
        {
            vec!["object".into()]
        } else if has(&[
            "items",
            "additionalItems",
            "minItems",
            "maxItems",
            "uniqueItems",
        ]) {
            vec!["array".into()]
        } else if has(&["minLength", "maxLength", "pattern"]) {
            vec!["string".into()]
        } else if has(&["minimum", "maximum", "multipleOf"]) {
            vec!["number".into()]
        } else {
            vec!["any".into()]
        }
    }

    fn object(&mut self, schema: &Document, depth: usize) -> Bson {
        let mut out = Document::new();
        let required: Vec<String> = schema
            .get_array("required")
            .map(|r| {
                r.iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if let Ok(properties) = schema.get_document("properties") {
            for (name, property) in properties {
                let Some(property) = property.as_document() else {
                    continue;
                };
                let wanted = required.contains(name) || self.rng.chance(0.7);
                // a required property left out, now and then
                if wanted && !(required.contains(name) && self.broken()) {
                    let value = self.value(property, depth + 1);
                    out.insert(name.clone(), value);
                }
            }
        }
        for name in &required {
            if !out.contains_key(name) && !self.broken() && self.rng.chance(0.9) {
                out.insert(name.clone(), self.any(depth + 1));
            }
        }
        let max = schema
            .get("maxProperties")
            .and_then(|m| m.as_i64().or_else(|| m.as_i32().map(i64::from)))
            .unwrap_or(3)
            .min(5) as usize;
        match schema.get("additionalProperties") {
            // a map: a few entries of the value schema
            Some(Bson::Document(values)) => {
                for _ in 0..self.rng.below(max + 2) {
                    let key = format!("{}{}", self.rng.pick(KEYS), self.rng.below(9));
                    let value = self.value(values, depth + 1);
                    out.insert(key, value);
                }
            }
            // closed: an extra property now and then
            Some(Bson::Boolean(false)) => {
                if self.broken() {
                    out.insert(*self.rng.pick(KEYS), self.any(depth + 1));
                }
            }
            _ => {
                if schema.contains_key("patternProperties") || self.rng.chance(0.1) {
                    for _ in 0..self.rng.below(3) {
                        let key = *self.rng.pick(KEYS);
                        let value = if let Ok(patterns) = schema.get_document("patternProperties") {
                            match patterns.iter().nth(self.rng.below(patterns.len())) {
                                Some((_, Bson::Document(p))) => self.value(p, depth + 1),
                                _ => self.any(depth + 1),
                            }
                        } else {
                            self.any(depth + 1)
                        };
                        out.insert(key, value);
                    }
                }
            }
        }
        if let Ok(dependencies) = schema.get_document("dependencies") {
            for (name, _) in dependencies {
                if self.rng.chance(0.5) && !out.contains_key(name) {
                    out.insert(name.clone(), self.any(depth + 1));
                }
            }
        }
        Bson::Document(out)
    }

    fn array(&mut self, schema: &Document, depth: usize) -> Bson {
        let bound = |key: &str| {
            schema
                .get(key)
                .and_then(|m| m.as_i64().or_else(|| m.as_i32().map(i64::from)))
        };
        let min = bound("minItems").unwrap_or(0).max(0) as usize;
        let max = bound("maxItems").unwrap_or(4).clamp(0, 6) as usize;
        let mut n = if max > min {
            min + self.rng.below(max - min + 1)
        } else {
            min
        };
        if self.broken() {
            n = if self.rng.chance(0.5) {
                max + 1
            } else {
                min.saturating_sub(1)
            };
        }
        let mut items: Vec<Bson> = Vec::with_capacity(n);
        for i in 0..n {
            let item = match schema.get("items") {
                Some(Bson::Document(each)) => self.value(each, depth + 1),
                Some(Bson::Array(tuple)) => match tuple.get(i).and_then(Bson::as_document) {
                    Some(each) => self.value(each, depth + 1),
                    None => match schema.get("additionalItems") {
                        Some(Bson::Document(rest)) => self.value(rest, depth + 1),
                        _ => self.any(depth + 1),
                    },
                },
                _ => self.any(depth + 1),
            };
            items.push(item);
        }
        // a duplicate, for `uniqueItems`
        if !items.is_empty() && self.rng.chance(0.1) {
            let first = items[0].clone();
            let duplicate = match first {
                Bson::Document(d) => {
                    // the same fields in another order: equal for `uniqueItems`
                    let mut reversed = Document::new();
                    let fields: Vec<(&String, &Bson)> = d.iter().collect();
                    for (k, v) in fields.into_iter().rev() {
                        reversed.insert(k.clone(), v.clone());
                    }
                    Bson::Document(reversed)
                }
                Bson::Int32(v) => Bson::Int64(i64::from(v)),
                other => other,
            };
            items.push(duplicate);
        }
        Bson::Array(items)
    }

    fn string(&mut self, schema: &Document) -> Bson {
        let bound = |key: &str| {
            schema
                .get(key)
                .and_then(|m| m.as_i64().or_else(|| m.as_i32().map(i64::from)))
        };
        let mut text = self.word();
        if let (Some(max), true) = (bound("maxLength"), self.rng.chance(0.3)) {
            // the bound itself, or one past it, in a multi-byte character
            let n = (max + if self.broken() { 1 } else { 0 }).clamp(0, 300) as usize;
            text = "é".repeat(n);
        } else if let (Some(min), true) = (bound("minLength"), self.rng.chance(0.3)) {
            let n = min.clamp(0, 300) as usize;
            text = "日".repeat(n);
        }
        Bson::String(text)
    }

    fn number(&mut self, schema: &Document, ty: &str) -> Bson {
        let bound = |key: &str| -> Option<f64> {
            match schema.get(key)? {
                Bson::Int32(v) => Some(f64::from(*v)),
                Bson::Int64(v) => Some(*v as f64),
                Bson::Double(v) => Some(*v),
                Bson::Decimal128(d) => d.to_string().parse().ok(),
                _ => None,
            }
        };
        let (min, max) = (bound("minimum"), bound("maximum"));
        let mut candidates: Vec<f64> = vec![0.0, 1.0, 3.0, -1.0, 7.0, 2.5];
        for b in [min, max].into_iter().flatten() {
            candidates.extend([b, b - 1.0, b + 1.0, b + 0.5, b - 0.5]);
        }
        if let Some(m) = bound("multipleOf") {
            candidates.extend([m, m * 3.0, m * 2.5]);
        }
        let mut v = *self.rng.pick(&candidates);
        if let (Some(min), Some(max)) = (min, max) {
            if !self.broken() && (v < min || v > max) {
                v = min;
            }
        }
        let ty = if ty == "number" {
            *self.rng.pick(&["int", "long", "double", "decimal"])
        } else {
            ty
        };
        let whole = v.fract() == 0.0 && v.abs() < 2e9;
        match ty {
            "int" if whole => Bson::Int32(v as i32),
            "long" if whole => Bson::Int64(v as i64),
            "decimal" => Bson::Decimal128(
                Decimal128::from_str(&format!("{v}"))
                    .unwrap_or_else(|_| Decimal128::from_str("0").expect("zero")),
            ),
            _ => number_value(v),
        }
    }
}

/// The same document with `_id` first and unique (`n`), of the type the schema gives `_id`.
pub fn with_unique_id(mut document: Document, schema: &Document, n: u64) -> Document {
    // the root's `_id`, or the first branch's of a root of branches (a whole-document enum)
    let of = |schema: &Document| {
        schema
            .get_document("properties")
            .ok()
            .and_then(|p| p.get_document("_id").ok())
            .cloned()
    };
    let id_schema = of(schema).or_else(|| {
        BRANCHES.iter().find_map(|k| {
            schema
                .get_array(*k)
                .ok()?
                .iter()
                .filter_map(Bson::as_document)
                .find_map(of)
        })
    });
    let id_schema = id_schema.as_ref();
    let ty = id_schema
        .and_then(|s| s.get("bsonType"))
        .and_then(|t| match t {
            Bson::String(t) => Some(t.clone()),
            Bson::Array(ts) => ts.first().and_then(Bson::as_str).map(str::to_owned),
            _ => None,
        })
        .unwrap_or_else(|| "objectId".into());
    let id = match ty.as_str() {
        "string" => Bson::String(format!("id-{n}")),
        "int" => Bson::Int32(n as i32),
        "long" => Bson::Int64(n as i64),
        "object" => match document.get("_id") {
            // a composite id: keep it, with a unique first field when it has one
            Some(Bson::Document(d)) => {
                let mut d = d.clone();
                if let Some(first) = d.keys().next().cloned() {
                    if matches!(d.get(&first), Some(Bson::Int64(_) | Bson::Int32(_))) {
                        d.insert(first, Bson::Int64(n as i64));
                    }
                }
                Bson::Document(d)
            }
            _ => Bson::Document(doc! { "n": n as i64 }),
        },
        _ => Bson::ObjectId(ObjectId::new()),
    };
    document.remove("_id");
    let mut out = doc! { "_id": id };
    out.extend(document);
    out
}
