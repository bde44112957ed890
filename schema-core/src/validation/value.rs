//! BSON values read in place from a serialized document, for the evaluator's fast path.
//!
//! The `bson` crate's raw iterator validates every key and wraps every element in a `Result`,
//! which costs about as much as serializing the document again; the evaluator only needs the
//! type byte, the key's bytes and the value's bytes, so it walks the document itself (the
//! layout of the [BSON spec](https://bsonspec.org/spec.html)), allocating nothing. A malformed
//! element ends the walk as a value of type 0, which no schema accepts.

use mongodb::bson::{Bson, RawDocumentBuf};

/// The type byte of a value found malformed.
pub(crate) const MALFORMED: u8 = 0;

/// One value: its BSON type byte and exactly its bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Value<'a> {
    pub kind: u8,
    pub bytes: &'a [u8],
}

impl<'a> Value<'a> {
    /// A whole serialized document.
    pub(crate) fn document(bytes: &'a [u8]) -> Value<'a> {
        Value { kind: 3, bytes }
    }

    /// The fields (or array elements) of a document or array value.
    pub(crate) fn elements(self) -> Elements<'a> {
        Elements {
            bytes: if matches!(self.kind, 3 | 4) {
                self.bytes
            } else {
                &[]
            },
            at: 4,
        }
    }

    /// The text of a string or symbol, if valid UTF-8.
    pub(crate) fn text(self) -> Option<&'a str> {
        if !matches!(self.kind, 2 | 14) || self.bytes.len() < 5 {
            return None;
        }
        std::str::from_utf8(&self.bytes[4..self.bytes.len() - 1]).ok()
    }

    pub(crate) fn f64(self) -> f64 {
        f64::from_le_bytes(self.bytes[..8].try_into().expect("8 bytes"))
    }

    pub(crate) fn i32(self) -> i32 {
        i32::from_le_bytes(self.bytes[..4].try_into().expect("4 bytes"))
    }

    pub(crate) fn i64(self) -> i64 {
        i64::from_le_bytes(self.bytes[..8].try_into().expect("8 bytes"))
    }

    /// The value as an owned `Bson` (for the failures' `consideredValue`): read back through a
    /// one-field document.
    pub(crate) fn to_bson(self) -> Bson {
        let total = 4 + 1 + 2 + self.bytes.len() + 1;
        let mut buffer = Vec::with_capacity(total);
        buffer.extend_from_slice(&(total as i32).to_le_bytes());
        buffer.push(self.kind);
        buffer.extend_from_slice(b"v\0");
        buffer.extend_from_slice(self.bytes);
        buffer.push(0);
        RawDocumentBuf::from_bytes(buffer)
            .ok()
            .and_then(|d| {
                d.get("v")
                    .ok()
                    .flatten()
                    .and_then(|v| Bson::try_from(v).ok())
            })
            .unwrap_or(Bson::Null)
    }
}

/// The elements of a document: `(key, value)`.
pub(crate) struct Elements<'a> {
    bytes: &'a [u8],
    at: usize,
}

fn read_i32(bytes: &[u8], at: usize) -> Option<usize> {
    let raw = bytes.get(at..at + 4)?;
    usize::try_from(i32::from_le_bytes(raw.try_into().ok()?)).ok()
}

fn cstring_end(bytes: &[u8], from: usize) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|&b| b == 0)
        .map(|p| from + p)
}

impl<'a> Iterator for Elements<'a> {
    type Item = (&'a [u8], Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.bytes;
        let kind = *bytes.get(self.at)?;
        if kind == 0 {
            return None; // the document's terminator
        }
        let malformed = |this: &mut Self| {
            this.at = bytes.len();
            Some((
                &b""[..],
                Value {
                    kind: MALFORMED,
                    bytes: &[],
                },
            ))
        };
        let Some(key_end) = cstring_end(bytes, self.at + 1) else {
            return malformed(self);
        };
        let key = &bytes[self.at + 1..key_end];
        let start = key_end + 1;
        let length = match kind {
            1 | 9 | 17 | 18 => Some(8),
            2 | 13 | 14 => read_i32(bytes, start).map(|n| n + 4),
            3 | 4 | 15 => read_i32(bytes, start),
            5 => read_i32(bytes, start).map(|n| n + 5),
            6 | 10 | 0x7F | 0xFF => Some(0),
            7 => Some(12),
            8 => Some(1),
            11 => cstring_end(bytes, start)
                .and_then(|end| cstring_end(bytes, end + 1))
                .map(|end| end + 1 - start),
            12 => read_i32(bytes, start).map(|n| n + 4 + 12),
            16 => Some(4),
            19 => Some(16),
            _ => None,
        };
        let Some(end) = length.map(|n| start + n).filter(|&end| end < bytes.len()) else {
            return malformed(self);
        };
        self.at = end;
        Some((
            key,
            Value {
                kind,
                bytes: &bytes[start..end],
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{doc, oid::ObjectId, Binary, Decimal128, Timestamp};
    use std::str::FromStr;

    #[test]
    fn every_type_is_walked_and_read_back() {
        let document = doc! {
            "d": 1.5, "s": "été", "o": { "a": 1 }, "a": [1, "x"], "b": Binary { subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] },
            "u": Bson::Undefined, "id": ObjectId::new(), "t": true, "dt": mongodb::bson::DateTime::now(), "n": null,
            "r": crate::bson_compat::regex("^a", "i").unwrap(), "js": Bson::JavaScriptCode("f()".into()),
            "sym": Bson::Symbol("sy".into()), "i": 7, "ts": Timestamp { time: 1, increment: 2 }, "l": 8_i64,
            "dec": Decimal128::from_str("1.5").unwrap(), "min": Bson::MinKey, "max": Bson::MaxKey,
            "cws": Bson::JavaScriptCodeWithScope(mongodb::bson::JavaScriptCodeWithScope { code: "g()".into(), scope: doc! { "x": 1 } }),
        };
        let raw = crate::bson_compat::raw_from_document(&document).unwrap();
        let walked: Vec<(String, Bson)> = Value::document(raw.as_bytes())
            .elements()
            .map(|(k, v)| (String::from_utf8(k.to_vec()).unwrap(), v.to_bson()))
            .collect();
        let expected: Vec<(String, Bson)> = document.into_iter().collect();
        assert_eq!(walked, expected);
    }

    #[test]
    fn a_truncated_element_ends_the_walk_as_malformed() {
        let raw = crate::bson_compat::raw_from_document(&doc! { "a": "text", "b": 1 }).unwrap();
        let mut bytes = raw.as_bytes().to_vec();
        bytes[4 + 3] = 0x7F; // the string's length now points past the end
        let kinds: Vec<u8> = Value::document(&bytes)
            .elements()
            .map(|(_, v)| v.kind)
            .collect();
        assert_eq!(kinds, [MALFORMED]);
    }
}
