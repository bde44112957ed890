//! Whether a filter's value can ever match what a field stores: the local validator judges the
//! value against the field's schema (partial-index filters, subset and counter filters).

use mongodb::bson::{doc, Bson, Document};

use super::LocalValidator;
use crate::json_schema;

/// What `path` stores, when no document `schema` accepts can hold `value` there (an equality
/// of a partial index's or a subset's filter on a value the field never stores: `"Paid"` for an
/// enum stored `"paid"`, the text `"5"` for an `i32`): the values of its enum, or its BSON
/// types. `None` when some document can hold it (on an array, as one of its elements), or
/// when the path leads nowhere (reported as an unknown field elsewhere).
pub(crate) fn never_holds(schema: &Document, path: &str, value: &Bson) -> Option<String> {
    let leaves = json_schema::schemas_at(schema, path);
    if leaves.is_empty() {
        return None;
    }
    // a query's number matches a stored number of any type with its value (`5` finds an
    // `i64` 5): each numeric form is tried
    let forms: Vec<Bson> = match value {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => {
            let n = match value {
                Bson::Int32(n) => f64::from(*n),
                Bson::Int64(n) => *n as f64,
                Bson::Double(n) => *n,
                _ => unreachable!(),
            };
            let mut forms = vec![Bson::Double(n)];
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                forms.push(Bson::Int64(n as i64));
                if let Ok(small) = i32::try_from(n as i64) {
                    forms.push(Bson::Int32(small));
                }
            }
            forms
        }
        other => vec![other.clone()],
    };
    let accepts = |candidate: &Document| -> bool {
        let validator = doc! { "$jsonSchema": {
            "bsonType": "object",
            "required": ["v"],
            "properties": { "v": candidate.clone() },
        } };
        // a schema the local evaluator cannot judge is taken to accept
        LocalValidator::new(&validator).map_or(true, |local| {
            forms
                .iter()
                .any(|form| local.check(&doc! { "v": form.clone() }).is_ok())
        })
    };
    let mut stored = Vec::new();
    for (leaf, _) in &leaves {
        // the field itself, its `anyOf` branches and an array's elements
        let candidates = json_schema::expand(vec![leaf.clone()]);
        if candidates.iter().any(accepts) {
            return None;
        }
        for candidate in candidates {
            let text = match (candidate.get_array("enum"), candidate.get("bsonType")) {
                (Ok(values), _) => values
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                (_, Some(Bson::String(t))) => t.clone(),
                (_, Some(Bson::Array(types))) => types
                    .iter()
                    .filter_map(Bson::as_str)
                    .collect::<Vec<_>>()
                    .join(" or "),
                _ => continue,
            };
            if !stored.contains(&text) {
                stored.push(text);
            }
        }
    }
    Some(if stored.is_empty() {
        "other values".to_owned()
    } else {
        stored.join("; ")
    })
}

#[cfg(test)]
mod tests {
    use mongodb::bson::{doc, Bson};

    use super::never_holds;

    #[test]
    fn a_value_the_field_never_holds_is_named_with_what_it_holds() {
        let schema = doc! { "bsonType": "object", "properties": {
            "stars": { "bsonType": "int" },
            "kind": { "bsonType": "string", "enum": ["verified", "guest"] },
            "note": { "bsonType": ["string", "null"] },
            "tags": { "bsonType": "array", "items": { "bsonType": "string" } },
        } };
        assert_eq!(never_holds(&schema, "stars", &Bson::Int32(5)), None);
        // a number finds a stored number of another type
        assert_eq!(never_holds(&schema, "stars", &Bson::Int64(5)), None);
        assert_eq!(never_holds(&schema, "stars", &Bson::Double(5.0)), None);
        assert_eq!(
            never_holds(&schema, "stars", &Bson::String("5".into())).as_deref(),
            Some("int")
        );
        assert_eq!(
            never_holds(&schema, "kind", &Bson::String("verified".into())),
            None
        );
        assert_eq!(
            never_holds(&schema, "kind", &Bson::String("Verified".into())).as_deref(),
            Some("\"verified\", \"guest\"")
        );
        assert_eq!(never_holds(&schema, "note", &Bson::Null), None);
        // an array field holds one element equal to it
        assert_eq!(
            never_holds(&schema, "tags", &Bson::String("rust".into())),
            None
        );
        assert!(never_holds(&schema, "tags", &Bson::Int32(1)).is_some());
        // a path the schema does not know is someone else's report
        assert_eq!(never_holds(&schema, "nope", &Bson::Int32(1)), None);
    }
}
