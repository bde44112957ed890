//! Collations: how a collection, an index or a query compares strings
//! (`#[collection(collation(...))]`, `#[index(.., collation(...))]`, `#[query(.., collation(...))]`).

use std::fmt;

use mongodb::bson::{Bson, Document};

/// A collation, mongod's `collation` document: the locale and the ICU options that decide how
/// strings compare, sort and are indexed. `Collation::new("en").strength(2)` compares letters
/// without their case ("ana@x.io" equals "ANA@x.io") and with their accents.
///
/// mongod uses an index for a string predicate or a sort only when the index's collation is the
/// query's (`planner_ixselect.cpp` `_compatible`, `query_solution.cpp` `computeSortsForScan`), so
/// a case-insensitive lookup needs an index of the same collation: declare it on the collection
/// (`#[collection(collation(locale = "en", strength = 2))]`: every index and declared query of
/// the collection gets it) or on the index and the query. The library sends the collation with
/// every index it creates and every declared query it runs, so a server that does not apply a
/// collection's default (SecantusDB) behaves as mongod does.
///
/// `locale = "simple"` is the simple (binary) collation, mongod's default.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Collation {
    /// The ICU locale (`"en"`, `"fr_CA"`) or `"simple"`.
    pub locale: String,
    /// The comparison level, 1 to 5: 1 compares base letters only, 2 adds accents, 3 (ICU's
    /// default) adds case.
    pub strength: Option<u8>,
    /// `caseLevel`: case compared at strength 1 or 2.
    pub case_level: Option<bool>,
    /// `caseFirst`: `"upper"`, `"lower"` or `"off"`.
    pub case_first: Option<String>,
    /// `numericOrdering`: digits compared as numbers (`"10" > "9"`).
    pub numeric_ordering: Option<bool>,
    /// `alternate`: `"non-ignorable"` or `"shifted"` (spaces and punctuation ignored).
    pub alternate: Option<String>,
    /// `backwards`: accents compared from the end of the string (French Canadian).
    pub backwards: Option<bool>,
}

/// The value mongod gives an option a collation of `locale` leaves out, as it reports it in
/// `listIndexes` and `listCollections`: the locale's own (`collator_factory_icu.cpp`
/// `parseToCollationSpec` reads each option left out from the ICU collator, so `fr_CA` reports
/// `backwards: true` and `da` `caseFirst: "upper"`), ICU's root's for most
/// ([`fit::collation::defaults`](crate::query::fit::collation::defaults)). `None` for an option
/// this crate does not declare (`maxVariable`, `normalization`, `version`).
fn default_of(locale: &str, key: &str) -> Option<Bson> {
    let defaults = mongo_schema_planner::collation::defaults(locale);
    match key {
        "strength" => Some(Bson::Int32(i32::from(defaults.strength))),
        "caseLevel" => Some(Bson::Boolean(defaults.case_level)),
        "numericOrdering" => Some(Bson::Boolean(defaults.numeric_ordering)),
        "backwards" => Some(Bson::Boolean(defaults.backwards)),
        "caseFirst" => Some(Bson::String(defaults.case_first.to_owned())),
        "alternate" => Some(Bson::String(defaults.alternate.to_owned())),
        _ => None,
    }
}

impl Collation {
    /// The collation of `locale` with ICU's defaults.
    pub fn new(locale: impl Into<String>) -> Self {
        Collation {
            locale: locale.into(),
            strength: None,
            case_level: None,
            case_first: None,
            numeric_ordering: None,
            alternate: None,
            backwards: None,
        }
    }

    /// Sets `strength` (1 to 5).
    pub fn strength(mut self, strength: u8) -> Self {
        self.strength = Some(strength);
        self
    }

    /// Sets `caseLevel`.
    pub fn case_level(mut self, case_level: bool) -> Self {
        self.case_level = Some(case_level);
        self
    }

    /// Sets `caseFirst` (`"upper"`, `"lower"` or `"off"`).
    pub fn case_first(mut self, case_first: impl Into<String>) -> Self {
        self.case_first = Some(case_first.into());
        self
    }

    /// Sets `numericOrdering`.
    pub fn numeric_ordering(mut self, numeric_ordering: bool) -> Self {
        self.numeric_ordering = Some(numeric_ordering);
        self
    }

    /// Sets `alternate` (`"non-ignorable"` or `"shifted"`).
    pub fn alternate(mut self, alternate: impl Into<String>) -> Self {
        self.alternate = Some(alternate.into());
        self
    }

    /// Sets `backwards`.
    pub fn backwards(mut self, backwards: bool) -> Self {
        self.backwards = Some(backwards);
        self
    }

    /// The simple collation, `{ locale: "simple" }`: strings compared by their bytes, mongod's
    /// default. The library sends it with every command that compares ids held in documents
    /// (references, copies, a child's parent) on a collection whose default collation is
    /// another ([`Collation::for_identities`]).
    pub fn simple() -> Self {
        Collation::new("simple")
    }

    /// Whether it is the simple (binary) collation, mongod's default.
    pub fn is_simple(&self) -> bool {
        self.locale == "simple"
    }

    /// The collation under which the library compares the ids a collection's documents hold
    /// (a reference, the `_id` of a copy, a child's parent) on a collection whose default
    /// collation is `default`: the simple one where the default is another, so that `"abc"`
    /// never matches `"ABC"`; `None` where the default is simple already (the command needs
    /// none). The indexes that serve those comparisons get it too (mongod uses an index for a
    /// string comparison only under the index's own collation).
    ///
    /// A command on the collection's own `_id` alone is sent without a collation instead:
    /// mongod runs it under the collection's default, which its `_id` index has (and no other
    /// index on `{ _id: 1 }` may exist).
    pub fn for_identities(default: Option<&Collation>) -> Option<Collation> {
        default
            .filter(|c| !c.is_simple())
            .map(|_| Collation::simple())
    }

    /// Why mongod refuses this collation's locale (`collator_factory_icu.cpp`,
    /// `validateLocaleID`), with the locale it most likely means; `None` for a locale mongod
    /// accepts ([`fit::collation::LOCALES`](crate::query::fit::collation::LOCALES), or
    /// `"simple"`).
    pub fn locale_problem(&self) -> Option<String> {
        use mongo_schema_planner::collation;
        if collation::is_supported(&self.locale) {
            return None;
        }
        let head = format!(
            "mongod has no collation locale \"{}\" and refuses the collation (BadValue)",
            self.locale.escape_default()
        );
        Some(match collation::suggestion(&self.locale) {
            Some(near) => format!("{head}: did you mean \"{near}\"?"),
            None => format!(
                "{head}: use a locale mongod lists (an ICU locale such as \"en\", \"fr_CA\" or \"de@collation=phonebook\"), or \"simple\""
            ),
        })
    }

    /// The `collation` document of `create`, `createIndexes`, `find`, `aggregate` and `count`.
    pub fn to_document(&self) -> Document {
        let mut doc = Document::new();
        doc.insert("locale", self.locale.clone());
        if let Some(v) = self.strength {
            doc.insert("strength", i32::from(v));
        }
        if let Some(v) = self.case_level {
            doc.insert("caseLevel", v);
        }
        if let Some(v) = &self.case_first {
            doc.insert("caseFirst", v.clone());
        }
        if let Some(v) = self.numeric_ordering {
            doc.insert("numericOrdering", v);
        }
        if let Some(v) = &self.alternate {
            doc.insert("alternate", v.clone());
        }
        if let Some(v) = self.backwards {
            doc.insert("backwards", v);
        }
        doc
    }

    /// Whether the server's `collation` document (of `listIndexes` or `listCollections`) is
    /// this collation: the same locale, every option given here equal, and every option left
    /// out either absent or at the locale's default (mongod reports every option, filled in
    /// from the locale: `fr_CA`'s `backwards: true` is `fr_CA`'s own; SecantusDB reports those
    /// it was sent).
    pub fn matches(&self, server: &Document) -> bool {
        let mine = self.to_document();
        if server.get_str("locale").ok() != Some(self.locale.as_str()) {
            return false;
        }
        let same = |a: &Bson, b: &Bson| crate::json_schema::same(a, b);
        for (key, wanted) in &mine {
            if key == "locale" {
                continue;
            }
            match server.get(key) {
                Some(found) if same(found, wanted) => {}
                None if default_of(&self.locale, key).is_some_and(|d| same(&d, wanted)) => {}
                _ => return false,
            }
        }
        for (key, found) in server {
            if mine.contains_key(key) {
                continue;
            }
            if let Some(default) = default_of(&self.locale, key) {
                if !same(found, &default) {
                    return false;
                }
            }
        }
        true
    }

    /// The planner's name of the collation ([`crate::query::fit::IndexShape::collation`]):
    /// `None` for the simple collation; an option given at the locale's default is left out, so
    /// that `{ locale: "en" }` and `{ locale: "en", strength: 3 }` (or `{ locale: "fr_CA" }` and
    /// `{ locale: "fr_CA", backwards: true }`) are one collator, as mongod's
    /// `CollatorInterface::collatorsMatch` finds them.
    pub(crate) fn planner_key(collation: Option<&Collation>) -> Option<String> {
        let collation = collation.filter(|c| !c.is_simple())?;
        let parts: Vec<String> = collation
            .to_document()
            .iter()
            .filter(|(key, value)| {
                default_of(&collation.locale, key)
                    .is_none_or(|d| !crate::json_schema::same(&d, value))
            })
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        Some(format!("{{ {} }}", parts.join(", ")))
    }

    /// Whether a server's `collation` (`None`: the simple collation) is `wanted` (`None`: the
    /// simple collation).
    pub(crate) fn same_as_server(wanted: Option<&Collation>, server: Option<&Document>) -> bool {
        let server = server.filter(|d| d.get_str("locale").ok() != Some("simple"));
        match (wanted.filter(|c| !c.is_simple()), server) {
            (None, None) => true,
            (Some(wanted), Some(server)) => wanted.matches(server),
            _ => false,
        }
    }

    /// The driver's collation option, for a `find`, `aggregate`, `count` or index of your own:
    /// `find(filter).collation(c)` with `c` from [`Relation::children_collation`](crate::Relation::children_collation)
    /// and `.to_driver()`. `None` only for an option the driver's type cannot hold (a strength
    /// or `caseFirst` out of range, which the crate's own collations never have).
    pub fn to_driver(&self) -> Option<mongodb::options::Collation> {
        crate::bson_compat::from_document(self.to_document()).ok()
    }
}

impl fmt::Display for Collation {
    /// `{ locale: "en", strength: 2 }`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .to_document()
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        write!(f, "{{ {} }}", parts.join(", "))
    }
}

/// The BSON types a collation never compares (`CollationIndexKey::isCollatableType`: strings,
/// objects and arrays are collated, symbols too).
const UNCOLLATED_TYPES: &[&str] = &[
    "double",
    "int",
    "long",
    "decimal",
    "date",
    "timestamp",
    "objectId",
    "bool",
    "binData",
    "null",
];

/// The stored paths of `paths` whose every value is of a type no collation compares (a number,
/// a date, an ObjectId, a boolean...), by `schema`: under another collation than the index's,
/// their keys keep bounds and order (planner rule 6). A path the schema cannot tell is
/// assumed to hold strings.
pub(crate) fn uncollated(
    schema: Option<&Document>,
    paths: impl Iterator<Item = String>,
) -> Vec<String> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let uncollated_leaf = |leaf: &Document| {
        let types: Vec<&str> = match leaf.get("bsonType") {
            Some(Bson::String(t)) => vec![t.as_str()],
            Some(Bson::Array(ts)) => ts.iter().filter_map(Bson::as_str).collect(),
            _ => {
                // an enum of values of its own: collated when one of them is
                return leaf.get_array("enum").is_ok_and(|values| {
                    values
                        .iter()
                        .all(|v| !matches!(v, Bson::String(_) | Bson::Document(_) | Bson::Array(_)))
                });
            }
        };
        !types.is_empty() && types.iter().all(|t| UNCOLLATED_TYPES.contains(t))
    };
    paths
        .filter(|path| {
            let leaves = crate::json_schema::schemas_at(schema, path);
            !leaves.is_empty()
                && leaves
                    .iter()
                    .all(|(leaf, multikey)| !*multikey && uncollated_leaf(leaf))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn a_server_collation_matches_by_the_options_given() {
        let ci = Collation::new("en").strength(2);
        assert_eq!(ci.to_document(), doc! { "locale": "en", "strength": 2 });
        assert_eq!(ci.to_string(), "{ locale: \"en\", strength: 2 }");
        // SecantusDB reports what it was sent, mongod every option
        assert!(ci.matches(&doc! { "locale": "en", "strength": 2 }));
        assert!(ci.matches(&doc! {
            "locale": "en", "caseLevel": false, "caseFirst": "off", "strength": 2,
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": false, "backwards": false, "version": "57.1",
        }));
        // controls: another strength, another locale, a default strength for `en` alone
        assert!(!ci.matches(&doc! { "locale": "en", "strength": 3 }));
        assert!(!ci.matches(&doc! { "locale": "fr", "strength": 2 }));
        assert!(!Collation::new("en").matches(&doc! { "locale": "en", "strength": 2 }));
        assert!(Collation::new("en").matches(&doc! { "locale": "en", "strength": 3 }));
        // the simple collation is no collation
        assert!(Collation::same_as_server(None, None));
        assert!(Collation::same_as_server(
            Some(&Collation::new("simple")),
            None
        ));
        assert!(Collation::same_as_server(
            None,
            Some(&doc! { "locale": "simple" })
        ));
        assert!(!Collation::same_as_server(Some(&ci), None));
        assert!(!Collation::same_as_server(
            None,
            Some(&doc! { "locale": "en" })
        ));
        assert_eq!(
            Collation::planner_key(Some(&Collation::new("simple"))),
            None
        );
        assert_eq!(
            Collation::planner_key(Some(&Collation::new("en").strength(3))),
            Collation::planner_key(Some(&Collation::new("en")))
        );
        assert_ne!(
            Collation::planner_key(Some(&ci)),
            Collation::planner_key(Some(&Collation::new("en")))
        );
        assert!(ci.to_driver().is_some());
    }

    /// What mongod 7.0 reports for `{ locale: "fr_CA" }` and `{ locale: "da", strength: 2 }`
    /// (`listIndexes`, every option filled in from the locale's ICU collator), as its jstests
    /// show expanded specs (`jstests/core/collation.js`: "fr_CA" with `backwards: true`).
    #[test]
    fn a_locale_s_own_defaults_count_as_declared() {
        let expanded = |locale: &str, strength: i32, case_first: &str, backwards: bool| {
            doc! {
                "locale": locale, "caseLevel": false, "caseFirst": case_first,
                "strength": strength, "numericOrdering": false, "alternate": "non-ignorable",
                "maxVariable": "punct", "normalization": false, "backwards": backwards,
                "version": "57.1",
            }
        };
        let fr_ca = Collation::new("fr_CA");
        assert!(fr_ca.matches(&expanded("fr_CA", 3, "off", true)));
        assert!(!fr_ca.matches(&expanded("fr_CA", 3, "off", false)));
        assert!(Collation::new("fr_CA")
            .backwards(false)
            .matches(&expanded("fr_CA", 3, "off", false)));
        // `fr` has ICU's root's `backwards: false`
        assert!(!Collation::new("fr").matches(&expanded("fr", 3, "off", true)));
        let da = Collation::new("da").strength(2);
        assert!(da.matches(&expanded("da", 2, "upper", false)));
        assert!(!da.matches(&expanded("da", 2, "off", false)));
        assert!(Collation::new("th").matches(&doc! { "locale": "th", "alternate": "shifted" }));
        // one collator whether the locale's default is written or not
        assert_eq!(
            Collation::planner_key(Some(&Collation::new("fr_CA").backwards(true))),
            Collation::planner_key(Some(&fr_ca))
        );
        assert_eq!(
            Collation::planner_key(Some(&Collation::new("da").case_first("upper"))),
            Collation::planner_key(Some(&Collation::new("da")))
        );
    }

    #[test]
    fn a_locale_mongod_does_not_know_is_a_problem() {
        assert_eq!(Collation::new("en").locale_problem(), None);
        assert_eq!(Collation::new("simple").locale_problem(), None);
        assert_eq!(
            Collation::new("english").locale_problem().as_deref(),
            Some("mongod has no collation locale \"english\" and refuses the collation (BadValue): did you mean \"en\"?")
        );
        assert!(Collation::new("xx_NOPE")
            .locale_problem()
            .is_some_and(|p| p.contains("use a locale mongod lists")));
    }
}
