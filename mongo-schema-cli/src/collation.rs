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

/// An index's own `collation(...)` attribute, from the `collation` `listIndexes` gives it
/// (`own`) and the collection's default one (`default`, only when the model says it): none when
/// it is the default (the derive creates every index with the collection's), whether listed
/// the same way or expanded otherwise; `collation(locale = "simple")` when the collection has a
/// default and the index is simple, listed with no collation (mongod) or with
/// `{ locale: "simple", .. }` (made simple on purpose: an index of held ids, compared exactly);
/// otherwise [`attribute`] of its own.
pub fn index_attribute(
    own: Option<&Document>,
    default: Option<&Document>,
) -> Result<Option<String>, String> {
    const SIMPLE: &str = r#"collation(locale = "simple")"#;
    let default = match default.map(attribute) {
        Some(Ok(Some(default))) => Some(default),
        _ => None,
    };
    match (own.map(attribute).transpose()?.flatten(), default) {
        (Some(own), Some(default)) if own == default => Ok(None),
        (Some(own), _) => Ok(Some(own)),
        (None, Some(_)) => Ok(Some(SIMPLE.to_owned())),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use mongodb::bson::doc;

    use super::{attribute, index_attribute};

    #[test]
    fn an_index_made_simple_on_a_collated_collection_stays_simple() {
        let default = doc! { "locale": "en", "strength": 2 };
        let simple = Some(r#"collation(locale = "simple")"#.to_owned());
        // listed with no collation (mongod), or with the simple locale and its version
        assert_eq!(index_attribute(None, Some(&default)), Ok(simple.clone()));
        let listed = doc! { "locale": "simple", "version": "57.1" };
        assert_eq!(index_attribute(Some(&listed), Some(&default)), Ok(simple));
        // the collection's own, listed short or expanded: none of its own
        assert_eq!(index_attribute(Some(&default), Some(&default)), Ok(None));
        let expanded = doc! {
            "locale": "en", "caseLevel": false, "caseFirst": "off", "strength": 2,
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": false, "backwards": false, "version": "57.1",
        };
        assert_eq!(index_attribute(Some(&expanded), Some(&default)), Ok(None));
        // another: its own
        let fr = doc! { "locale": "fr" };
        assert_eq!(
            index_attribute(Some(&fr), Some(&default)),
            Ok(Some(r#"collation(locale = "fr")"#.to_owned()))
        );
        assert_eq!(
            index_attribute(Some(&default), None),
            Ok(Some(r#"collation(locale = "en", strength = 2)"#.to_owned()))
        );
        // no default: simple is no collation
        assert_eq!(index_attribute(Some(&listed), None), Ok(None));
        assert_eq!(index_attribute(None, None), Ok(None));
        assert!(
            index_attribute(Some(&doc! { "locale": "en", "normalization": true }), None).is_err()
        );
    }

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
