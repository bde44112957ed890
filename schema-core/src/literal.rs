//! Values that must stay values: a cursor or an expected value that came back from a client
//! could hold a query operator, a regular expression or JavaScript, which a filter would run
//! instead of compare.

use mongodb::bson::Bson;

use crate::{Error, Result};

/// Refuses `value` (described as `what`) if, anywhere inside it, a document has a key starting
/// with `$`, or it holds a regular expression or JavaScript.
pub(crate) fn refuse_operators(what: &str, value: &Bson) -> Result<()> {
    match find_operator(value) {
        Some(found) => Err(Error::Refused(format!(
            "{what} holds {found}, which a filter would run as a query instead of matching as a value"
        ))),
        None => Ok(()),
    }
}

/// What in `value` a filter would run as a query: a `$` key, a regular expression, JavaScript.
pub(crate) fn find_operator(value: &Bson) -> Option<String> {
    match value {
        Bson::Document(document) => document.iter().find_map(|(key, inner)| {
            if key.starts_with('$') {
                Some(format!("the operator `{key}`"))
            } else {
                find_operator(inner)
            }
        }),
        Bson::Array(items) => items.iter().find_map(find_operator),
        Bson::RegularExpression(_) => Some("a regular expression".to_owned()),
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) => Some("JavaScript".to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::refuse_operators;
    use mongodb::bson::{doc, Bson, Regex};

    #[test]
    fn operators_regexes_and_javascript_are_refused_anywhere_inside() {
        for bad in [
            Bson::Document(doc! { "$ne": null }),
            Bson::Document(doc! { "a": { "b": [1, { "$gt": 2 }] } }),
            Bson::RegularExpression(Regex {
                pattern: ".*".into(),
                options: String::new(),
            }),
            Bson::JavaScriptCode("true".into()),
        ] {
            let error = refuse_operators("the key", &bad).unwrap_err();
            assert!(
                error.to_string().starts_with("refused: the key holds"),
                "{error}"
            );
        }
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
