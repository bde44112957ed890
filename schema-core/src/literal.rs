//! Values that must stay values: a cursor or an expected value that came back from a client
//! could hold a query operator, a regular expression or JavaScript, which a filter would run
//! instead of compare.

use mongodb::bson::Bson;

use crate::error::UnsafeKind;
use crate::{Error, Result};

/// Refuses `value` (described as `what`) if, anywhere inside it, a document has a key starting
/// with `$`, or it holds a regular expression or JavaScript.
pub(crate) fn refuse_operators(what: &str, value: &Bson) -> Result<()> {
    match find_operator(value) {
        Some((path, found)) => Err(Error::UnsafeValue {
            what: what.to_owned(),
            path,
            found,
        }),
        None => Ok(()),
    }
}

/// What in `value` a filter would run as a query (a `$` key, a regular expression,
/// JavaScript), and its dotted path inside `value` (empty for `value` itself).
pub(crate) fn find_operator(value: &Bson) -> Option<(String, UnsafeKind)> {
    let join = |head: &str, (tail, kind): (String, UnsafeKind)| {
        let path = if tail.is_empty() {
            head.to_owned()
        } else {
            format!("{head}.{tail}")
        };
        (path, kind)
    };
    match value {
        Bson::Document(document) => document.iter().find_map(|(key, inner)| {
            if key.starts_with('$') {
                Some((key.clone(), UnsafeKind::Operator(key.clone())))
            } else {
                find_operator(inner).map(|found| join(key, found))
            }
        }),
        Bson::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| find_operator(item).map(|found| join(&i.to_string(), found))),
        Bson::RegularExpression(_) => Some((String::new(), UnsafeKind::RegularExpression)),
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) => {
            Some((String::new(), UnsafeKind::JavaScript))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::refuse_operators;
    use crate::error::UnsafeKind;
    use mongodb::bson::{doc, Bson};

    #[test]
    fn operators_regexes_and_javascript_are_refused_anywhere_inside() {
        for bad in [
            Bson::Document(doc! { "$ne": null }),
            Bson::Document(doc! { "a": { "b": [1, { "$gt": 2 }] } }),
            Bson::RegularExpression(crate::bson_compat::regex(".*", "").unwrap()),
            Bson::JavaScriptCode("true".into()),
        ] {
            let error = refuse_operators("the key", &bad).unwrap_err();
            assert!(
                matches!(&error, crate::Error::UnsafeValue { what, .. } if what == "the key"),
                "{error}"
            );
        }
        let nested = refuse_operators(
            "the key",
            &Bson::Document(doc! { "a": { "b": [1, { "$gt": 2 }] } }),
        );
        assert!(
            matches!(&nested, Err(crate::Error::UnsafeValue { path, found: UnsafeKind::Operator(op), .. })
                if path == "a.b.1.$gt" && op == "$gt"),
            "{nested:?}"
        );
        for fine in [
            Bson::Int32(1),
            Bson::String("$ne".into()),
            Bson::Document(doc! { "a": "$b" }),
            Bson::Null,
        ] {
            assert!(refuse_operators("the key", &fine).is_ok(), "{fine}");
        }
    }
}
