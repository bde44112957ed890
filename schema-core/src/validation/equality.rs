//! BSON equality as mongod's `enum` and `uniqueItems` see it.
//!
//! `enum` is `$_internalSchemaEq` (`expression_internal_schema_eq.cpp`): the default element
//! comparator, so numbers compare by value whatever their type, strings and symbols by their
//! bytes, and embedded documents field by field in order. `uniqueItems`
//! (`expression_internal_schema_unique_items.h`) uses `UnorderedFieldsBSONElementComparator`:
//! the same, except that documents compare whatever their field order.

use mongodb::bson::{RawArray, RawBsonRef, RawDocument};

use super::number::Number;

/// Whether documents compare in field order (`enum`) or as sets of fields (`uniqueItems`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldOrder {
    Ordered,
    Unordered,
}

/// Whether `a` and `b` are the same BSON value for mongod.
pub(crate) fn same(a: RawBsonRef<'_>, b: RawBsonRef<'_>, order: FieldOrder) -> bool {
    if let (Some(a), Some(b)) = (Number::of_raw(a), Number::of_raw(b)) {
        return a.same(b);
    }
    match (a, b) {
        // string and symbol share a canonical type
        (
            RawBsonRef::String(a) | RawBsonRef::Symbol(a),
            RawBsonRef::String(b) | RawBsonRef::Symbol(b),
        ) => a == b,
        (RawBsonRef::Document(a), RawBsonRef::Document(b)) => same_document(a, b, order),
        (RawBsonRef::Array(a), RawBsonRef::Array(b)) => same_array(a, b, order),
        (RawBsonRef::Binary(a), RawBsonRef::Binary(b)) => {
            a.subtype == b.subtype && a.bytes == b.bytes
        }
        (RawBsonRef::RegularExpression(a), RawBsonRef::RegularExpression(b)) => {
            a.pattern == b.pattern && a.options == b.options
        }
        (RawBsonRef::JavaScriptCodeWithScope(a), RawBsonRef::JavaScriptCodeWithScope(b)) => {
            a.code == b.code && same_document(a.scope, b.scope, order)
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

fn same_array(a: &RawArray, b: &RawArray, order: FieldOrder) -> bool {
    let mut left = a.into_iter();
    let mut right = b.into_iter();
    loop {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some(Ok(x)), Some(Ok(y))) => {
                if !same(x, y, order) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

fn same_document(a: &RawDocument, b: &RawDocument, order: FieldOrder) -> bool {
    match order {
        FieldOrder::Ordered => {
            let mut left = a.into_iter();
            let mut right = b.into_iter();
            loop {
                match (left.next(), right.next()) {
                    (None, None) => return true,
                    (Some(Ok((ka, va))), Some(Ok((kb, vb)))) => {
                        if ka != kb || !same(va, vb, order) {
                            return false;
                        }
                    }
                    _ => return false,
                }
            }
        }
        FieldOrder::Unordered => {
            let count = |d: &RawDocument| d.into_iter().count();
            count(a) == count(b)
                && a.into_iter().all(|entry| match entry {
                    Ok((key, value)) => {
                        matches!(b.get(key), Ok(Some(other)) if same(value, other, order))
                    }
                    Err(_) => false,
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{rawdoc, Decimal128};
    use std::str::FromStr;

    #[test]
    fn numbers_by_value_documents_by_order_unless_unordered() {
        let values = rawdoc! {
            "int": 1, "long": 1_i64, "double": 1.0, "decimal": Decimal128::from_str("1.00").unwrap(),
            "ab": { "a": 1, "b": 2 }, "ba": { "b": 2, "a": 1 }, "s": "x",
            "nested": [{ "a": 1, "b": 2.0 }], "nested2": [{ "b": 2_i64, "a": 1 }],
        };
        let get = |k: &str| values.get(k).unwrap().unwrap();
        for other in ["long", "double", "decimal"] {
            assert!(same(get("int"), get(other), FieldOrder::Ordered), "{other}");
        }
        assert!(!same(get("ab"), get("ba"), FieldOrder::Ordered));
        assert!(same(get("ab"), get("ba"), FieldOrder::Unordered));
        assert!(same(get("nested"), get("nested2"), FieldOrder::Unordered));
        assert!(!same(get("nested"), get("nested2"), FieldOrder::Ordered));
        assert!(!same(get("s"), get("int"), FieldOrder::Unordered));
    }
}
