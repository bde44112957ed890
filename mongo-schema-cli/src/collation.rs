//! A server's collation document (`listCollections`' `options.collation`, `listIndexes`'
//! `collation`) as the derive's `collation(...)` attribute, when the attribute can say it.

use mongodb::bson::{Bson, Document};

/// `collation(locale = "en", strength = 2)` for `collation`, its options at the locale's own
/// defaults left out (`fr_CA`'s `backwards: true`, `da`'s `caseFirst: "upper"`, as mongod fills
/// them in); `Ok(None)` for the `simple` locale (no collation). `Err` names what the attribute
/// cannot say (`maxVariable`, `normalization`), for the report.
pub fn attribute(collation: &Document) -> Result<Option<String>, String> {
    let locale = collation.get_str("locale").unwrap_or("simple");
    if locale == "simple" {
        return Ok(None);
    }
    let defaults = mongo_schema_core::query::fit::collation::defaults(locale);
    let mut parts = vec![format!("locale = {}", crate::emit::quote(locale))];
    let int = |key: &str| match collation.get(key) {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(Bson::Double(n)) => Some(*n as i64),
        _ => None,
    };
    if let Some(strength) = int("strength").filter(|s| *s != i64::from(defaults.strength)) {
        parts.push(format!("strength = {strength}"));
    }
    if let Some(case_level) = collation
        .get_bool("caseLevel")
        .ok()
        .filter(|c| *c != defaults.case_level)
    {
        parts.push(format!("case_level = {case_level}"));
    }
    if let Ok(first) = collation.get_str("caseFirst") {
        if first != defaults.case_first {
            parts.push(format!("case_first = {}", crate::emit::quote(first)));
        }
    }
    if let Some(numeric) = collation
        .get_bool("numericOrdering")
        .ok()
        .filter(|n| *n != defaults.numeric_ordering)
    {
        parts.push(format!("numeric_ordering = {numeric}"));
    }
    if let Ok(alternate) = collation.get_str("alternate") {
        if alternate != defaults.alternate {
            parts.push(format!("alternate = {}", crate::emit::quote(alternate)));
        }
    }
    if let Some(backwards) = collation
        .get_bool("backwards")
        .ok()
        .filter(|b| *b != defaults.backwards)
    {
        parts.push(format!("backwards = {backwards}"));
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
            "locale": "fr", "strength": 3, "caseFirst": "upper", "numericOrdering": true,
            "alternate": "shifted", "backwards": true, "caseLevel": true,
        };
        assert_eq!(
            attribute(&options),
            Ok(Some(
                r#"collation(locale = "fr", case_level = true, case_first = "upper", numeric_ordering = true, alternate = "shifted", backwards = true)"#
                    .to_owned()
            ))
        );
        // a locale's own defaults, as mongod fills them in, are left out
        let fr_ca =
            doc! { "locale": "fr_CA", "caseFirst": "off", "strength": 3, "backwards": true };
        assert_eq!(
            attribute(&fr_ca),
            Ok(Some(r#"collation(locale = "fr_CA")"#.to_owned()))
        );
        let fr_ca = doc! { "locale": "fr_CA", "backwards": false };
        assert_eq!(
            attribute(&fr_ca),
            Ok(Some(
                r#"collation(locale = "fr_CA", backwards = false)"#.to_owned()
            ))
        );
        let da = doc! { "locale": "da", "caseFirst": "upper", "strength": 2 };
        assert_eq!(
            attribute(&da),
            Ok(Some(r#"collation(locale = "da", strength = 2)"#.to_owned()))
        );
        assert_eq!(attribute(&doc! { "locale": "simple" }), Ok(None));
        assert!(attribute(&doc! { "locale": "en", "maxVariable": "space" })
            .unwrap_err()
            .contains("maxVariable"));
    }
}
