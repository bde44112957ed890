//! BSON equality as mongod's `enum` and `uniqueItems` see it.
//!
//! Both `$_internalSchemaEq` (`enum`, `expression_internal_schema_eq.h`; `$_internalSchemaRootDocEq`
//! for a top-level `enum`) and `$_internalSchemaUniqueItems`
//! (`expression_internal_schema_unique_items.h`) compare with
//! `UnorderedFieldsBSONElementComparator`: numbers by value whatever their type (NaN equal to
//! NaN), strings and symbols by their bytes (one canonical type), arrays in order, and embedded
//! documents as sets of fields, whatever their order.

use mongodb::bson::{RawArray, RawBsonRef, RawDocument};

use super::number::Number;

/// Whether `a` and `b` are the same BSON value for mongod.
pub(crate) fn same(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> bool {
    if let (Some(a), Some(b)) = (Number::of_raw(a), Number::of_raw(b)) {
        return a.same(b);
    }
    match (a, b) {
        // string and symbol share a canonical type
        (
            RawBsonRef::String(a) | RawBsonRef::Symbol(a),
            RawBsonRef::String(b) | RawBsonRef::Symbol(b),
        ) => a == b,
        (RawBsonRef::Document(a), RawBsonRef::Document(b)) => same_document(a, b),
        (RawBsonRef::Array(a), RawBsonRef::Array(b)) => same_array(a, b),
        (RawBsonRef::Binary(a), RawBsonRef::Binary(b)) => {
            a.subtype == b.subtype && a.bytes == b.bytes
        }
        (RawBsonRef::RegularExpression(a), RawBsonRef::RegularExpression(b)) => {
            a.pattern == b.pattern && a.options == b.options
        }
        (RawBsonRef::JavaScriptCodeWithScope(a), RawBsonRef::JavaScriptCodeWithScope(b)) => {
            a.code == b.code && same_document(a.scope, b.scope)
        }
        (RawBsonRef::DbPointer(a), RawBsonRef::DbPointer(b)) => a == b,
        (RawBsonRef::Boolean(a), RawBsonRef::Boolean(b)) => a == b,
        (RawBsonRef::ObjectId(a), RawBsonRef::ObjectId(b)) => a == b,
        (RawBsonRef::DateTime(a), RawBsonRef::DateTime(b)) => a == b,
        (RawBsonRef::Timestamp(a), RawBsonRef::Timestamp(b)) => a == b,
        (RawBsonRef::JavaScriptCode(a), RawBsonRef::JavaScriptCode(b)) => a == b,
        (RawBsonRef::Null, RawBsonRef::Null)
        | (RawBsonRef::Undefined, RawBsonRef::Undefined)
        | (RawBsonRef::MinKey, RawBsonRef::MinKey)
        | (RawBsonRef::MaxKey, RawBsonRef::MaxKey) => true,
        _ => false,
    }
}

fn same_array(a: &RawArray, b: &RawArray) -> bool {
    let mut left = a.into_iter();
    let mut right = b.into_iter();
    loop {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some(Ok(x)), Some(Ok(y))) => {
                if !same(x, y) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

fn same_document(a: &RawDocument, b: &RawDocument) -> bool {
    let count = |d: &RawDocument| d.into_iter().count();
    count(a) == count(b)
        && a.into_iter().all(|entry| match entry {
            Ok((key, value)) => matches!(b.get(key), Ok(Some(other)) if same(value, other)),
            Err(_) => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{rawdoc, Decimal128};
    use std::str::FromStr;

    #[test]
    fn numbers_by_value_documents_whatever_their_field_order() {
        let values = rawdoc! {
            "int": 1, "long": 1_i64, "double": 1.0, "decimal": Decimal128::from_str("1.00").unwrap(),
            "ab": { "a": 1, "b": 2 }, "ba": { "b": 2, "a": 1 }, "s": "x",
            "nested": [{ "a": 1, "b": 2.0 }], "nested2": [{ "b": 2_i64, "a": 1 }],
            "abc": { "a": 1, "b": 2, "c": 3 }, "nan": f64::NAN, "nan2": f64::NAN, "t": true,
            "list": [1, 2], "reversed": [2, 1],
        };
        let get = |k: &str| values.get(k).unwrap().unwrap();
        for other in ["long", "double", "decimal"] {
            assert!(same(get("int"), get(other)), "{other}");
        }
        assert!(same(get("ab"), get("ba")));
        assert!(same(get("nested"), get("nested2")));
        assert!(same(get("nan"), get("nan2")));
        assert!(!same(get("ab"), get("abc")));
        assert!(!same(get("s"), get("int")));
        assert!(!same(get("t"), get("int")));
        assert!(!same(get("list"), get("reversed")));
    }
}
