//! A server's collation document (`listCollections`' `options.collation`, `listIndexes`'
//! `collation`) as the derive's `collation(...)` attribute, when the attribute can say it.

use mongodb::bson::{Bson, Document};

/// `collation(locale = "en", strength = 2)` for `collation`, its options at mongod's defaults
/// left out; `Ok(None)` for the `simple` locale (no collation). `Err` names what the attribute
/// cannot say (`maxVariable`, `normalization`), for the report.
pub fn attribute(collation: &Document) -> Result<Option<String>, String> {
    let locale = collation.get_str("locale").unwrap_or("simple");
    if locale == "simple" {
        return Ok(None);
    }
    let mut parts = vec![format!("locale = {}", crate::emit::quote(locale))];
    let int = |key: &str| match collation.get(key) {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(Bson::Double(n)) => Some(*n as i64),
        _ => None,
    };
    if let Some(strength) = int("strength").filter(|s| *s != 3) {
        parts.push(format!("strength = {strength}"));
    }
    if collation.get_bool("caseLevel") == Ok(true) {
        parts.push("case_level = true".to_owned());
    }
    if let Ok(first) = collation.get_str("caseFirst") {
        if first != "off" {
            parts.push(format!("case_first = {}", crate::emit::quote(first)));
        }
    }
    if collation.get_bool("numericOrdering") == Ok(true) {
        parts.push("numeric_ordering = true".to_owned());
    }
    if let Ok(alternate) = collation.get_str("alternate") {
        if alternate != "non-ignorable" {
            parts.push(format!("alternate = {}", crate::emit::quote(alternate)));
        }
    }
    if collation.get_bool("backwards") == Ok(true) {
        parts.push("backwards = true".to_owned());
    }
    let mut unsaid = Vec::new();
    if collation.get_str("maxVariable").is_ok_and(|m| m != "punct") {
        unsaid.push("maxVariable");
    }
    if collation.get_bool("normalization") == Ok(true) {
        unsaid.push("normalization");
    }
    if !unsaid.is_empty() {
        return Err(format!(
            "its collation sets {}, which `collation(...)` cannot say",
            unsaid.join(" and ")
        ));
    }
    Ok(Some(format!("collation({})", parts.join(", "))))
}

#[cfg(test)]
mod tests {
    use mongodb::bson::doc;

    use super::attribute;

    #[test]
    fn mongods_expanded_collation_becomes_the_attribute() {
        // as mongod lists an index created with `{ locale: "en", strength: 2 }`
        let listed = doc! {
            "locale": "en", "caseLevel": false, "caseFirst": "off", "strength": 2,
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": false, "backwards": false, "version": "57.1",
        };
        assert_eq!(
            attribute(&listed),
            Ok(Some(r#"collation(locale = "en", strength = 2)"#.to_owned()))
        );
        let options = doc! {
            "locale": "fr_CA", "strength": 3, "caseFirst": "upper", "numericOrdering": true,
            "alternate": "shifted", "backwards": true, "caseLevel": true,
        };
        assert_eq!(
            attribute(&options),
            Ok(Some(
                r#"collation(locale = "fr_CA", case_level = true, case_first = "upper", numeric_ordering = true, alternate = "shifted", backwards = true)"#
                    .to_owned()
            ))
        );
        assert_eq!(attribute(&doc! { "locale": "simple" }), Ok(None));
        assert!(attribute(&doc! { "locale": "en", "maxVariable": "space" })
            .unwrap_err()
            .contains("maxVariable"));
    }
}
