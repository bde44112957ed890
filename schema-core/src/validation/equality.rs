//! BSON equality as mongod's `enum` and `uniqueItems` see it.
//!
//! Both `$_internalSchemaEq` (`enum`, `expression_internal_schema_eq.h`; `$_internalSchemaRootDocEq`
//! for a top-level `enum`) and `$_internalSchemaUniqueItems`
//! (`expression_internal_schema_unique_items.h`) compare with
//! `UnorderedFieldsBSONElementComparator`: numbers by value whatever their type (NaN equal to
//! NaN), strings and symbols by their bytes (one canonical type), arrays in order, and embedded
//! documents as sets of fields, whatever their order.

use super::number::Number;
use super::value::{Value, MALFORMED};

/// Whether `a` and `b` are the same BSON value for mongod.
pub(crate) fn same(a: Value<'_>, b: Value<'_>) -> bool {
    if a.kind == MALFORMED || b.kind == MALFORMED {
        return false;
    }
    if let (Some(a), Some(b)) = (Number::of_value(a), Number::of_value(b)) {
        return a.same(b);
    }
    match (a.kind, b.kind) {
        // string and symbol share a canonical type and a layout
        (2 | 14, 2 | 14) => a.bytes == b.bytes,
        (3, 3) => same_document(a, b),
        (4, 4) => same_array(a, b),
        (x, y) if x == y => a.bytes == b.bytes,
        _ => false,
    }
}

fn same_array(a: Value<'_>, b: Value<'_>) -> bool {
    let mut left = a.elements();
    let mut right = b.elements();
    loop {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some((_, x)), Some((_, y))) => {
                if !same(x, y) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

fn same_document(a: Value<'_>, b: Value<'_>) -> bool {
    a.elements().count() == b.elements().count()
        && a.elements().all(|(key, value)| {
            b.elements()
                .find(|(other, _)| *other == key)
                .is_some_and(|(_, other)| same(value, other))
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
        let get = |k: &str| {
            Value::document(values.as_bytes())
                .elements()
                .find(|(key, _)| *key == k.as_bytes())
                .unwrap()
                .1
        };
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
