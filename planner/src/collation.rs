//! The collation locales mongod accepts, and the options a locale sets unlike ICU's root (the
//! collators of rule 6).
//!
//! mongod builds a collator with ICU and refuses a locale unless ICU's collator reports that very
//! locale as its valid one (`collator_factory_icu.cpp`, `validateLocaleID`: "Field 'locale' is
//! invalid ... Did you mean 'en'?"), so `"english"`, `"en_GB"` (ICU falls back to `"en"`) and
//! `"en-US"` are refused. [`LOCALES`] is the table of mongod 7.0 and 8.0, which build ICU 57.1
//! (`src/third_party/icu4c-57.1`): the locales and variants of the manual's "Collation Locales
//! and Default Parameters" (`mongodb/docs`, `source/includes/collation-locale-table.rst`, the
//! list `collator_factory_icu_locales_test.cpp` creates one by one). A variant the manual does not
//! list is refused here, although some ICU build may take it.
//!
//! mongod reports a collation with every option filled in from the locale's own defaults
//! (`parseToCollationSpec` reads each option left out from the ICU collator), so a locale whose
//! tailoring sets an option ([`defaults`]) reports it unlike ICU's root: `fr_CA` compares accents
//! backwards, `da` and `mt` put upper case first, `th` ignores spaces and punctuation. Read from
//! ICU's collation data (every locale and variant of [`LOCALES`] created with ICU 72.1, each
//! option compared with the root's; the same four as the manual's table of default parameters).

use crate::{IndexShape, QueryShape, Rule};

/// One row of mongod's table: the locale, the language's name, the variants (`"phonebook"`
/// in `"de@collation=phonebook"`).
pub type Locale = (&'static str, &'static str, &'static [&'static str]);

/// The locales mongod accepts (see the module's documentation for where they come from), sorted
/// by locale; `"simple"` (the binary comparison) is accepted besides them.
pub const LOCALES: &[Locale] = &[
    ("af", "Afrikaans", &[]),
    ("am", "Amharic", &[]),
    ("ar", "Arabic", &["compat"]),
    ("as", "Assamese", &[]),
    ("az", "Azeri", &["search"]),
    ("be", "Belarusian", &[]),
    ("bg", "Bulgarian", &[]),
    ("bn", "Bengali", &["traditional"]),
    ("bo", "Tibetan", &[]),
    ("bs", "Bosnian", &["search"]),
    ("bs_Cyrl", "Bosnian (Cyrillic)", &[]),
    ("ca", "Catalan", &["search"]),
    ("chr", "Cherokee", &[]),
    ("cs", "Czech", &["search"]),
    ("cy", "Welsh", &[]),
    ("da", "Danish", &["search"]),
    ("de", "German", &["search", "eor", "phonebook"]),
    ("de_AT", "German (Austria)", &["phonebook"]),
    ("dsb", "Lower Sorbian", &[]),
    ("dz", "Dzongkha", &[]),
    ("ee", "Ewe", &[]),
    ("el", "Greek", &[]),
    ("en", "English", &[]),
    ("en_US", "English (United States)", &[]),
    ("en_US_POSIX", "English (United States, Computer)", &[]),
    ("eo", "Esperanto", &[]),
    ("es", "Spanish", &["search", "traditional"]),
    ("et", "Estonian", &[]),
    ("fa", "Persian", &[]),
    ("fa_AF", "Persian (Afghanistan)", &[]),
    ("fi", "Finnish", &["search", "traditional"]),
    ("fil", "Filipino", &[]),
    ("fo", "Faroese", &[]),
    ("fr", "French", &[]),
    ("fr_CA", "French (Canada)", &[]),
    ("ga", "Irish", &[]),
    ("gl", "Galician", &["search"]),
    ("gu", "Gujarati", &[]),
    ("ha", "Hausa", &[]),
    ("haw", "Hawaiian", &[]),
    ("he", "Hebrew", &["search"]),
    ("hi", "Hindi", &[]),
    ("hr", "Croatian", &["search"]),
    ("hsb", "Upper Sorbian", &[]),
    ("hu", "Hungarian", &[]),
    ("hy", "Armenian", &[]),
    ("id", "Indonesian", &[]),
    ("ig", "Igbo", &[]),
    ("is", "Icelandic", &["search"]),
    ("it", "Italian", &[]),
    ("ja", "Japanese", &["unihan"]),
    ("ka", "Georgian", &[]),
    ("kk", "Kazakh", &[]),
    ("kl", "Kalaallisut", &["search"]),
    ("km", "Khmer", &[]),
    ("kn", "Kannada", &["traditional"]),
    ("ko", "Korean", &["search", "searchjl", "unihan"]),
    ("kok", "Konkani", &[]),
    ("ky", "Kyrgyz", &[]),
    ("lb", "Luxembourgish", &[]),
    ("lkt", "Lakota", &[]),
    ("ln", "Lingala", &["phonetic"]),
    ("lo", "Lao", &[]),
    ("lt", "Lithuanian", &[]),
    ("lv", "Latvian", &[]),
    ("mk", "Macedonian", &[]),
    ("ml", "Malayalam", &[]),
    ("mn", "Mongolian", &[]),
    ("mr", "Marathi", &[]),
    ("ms", "Malay", &[]),
    ("mt", "Maltese", &[]),
    ("my", "Burmese", &[]),
    ("nb", "Norwegian Bokmål", &["search"]),
    ("ne", "Nepali", &[]),
    ("nl", "Dutch", &[]),
    ("nn", "Norwegian Nynorsk", &["search"]),
    ("om", "Oromo", &[]),
    ("or", "Oriya", &[]),
    ("pa", "Punjabi", &[]),
    ("pl", "Polish", &[]),
    ("ps", "Pashto", &[]),
    ("pt", "Portuguese", &[]),
    ("ro", "Romanian", &[]),
    ("ru", "Russian", &[]),
    ("se", "Northern Sami", &["search"]),
    ("si", "Sinhala", &["dictionary"]),
    ("sk", "Slovak", &["search"]),
    ("sl", "Slovenian", &[]),
    ("smn", "Inari Sami", &["search"]),
    ("sq", "Albanian", &[]),
    ("sr", "Serbian", &[]),
    ("sr_Latn", "Serbian (Latin)", &["search"]),
    ("sv", "Swedish", &["search"]),
    ("sw", "Swahili", &[]),
    ("ta", "Tamil", &[]),
    ("te", "Telugu", &[]),
    ("th", "Thai", &[]),
    ("to", "Tongan", &[]),
    ("tr", "Turkish", &["search"]),
    ("ug", "Uyghur", &[]),
    ("uk", "Ukrainian", &[]),
    ("ur", "Urdu", &[]),
    ("vi", "Vietnamese", &["traditional"]),
    ("wae", "Walser", &[]),
    ("yi", "Yiddish", &["search"]),
    ("yo", "Yoruba", &[]),
    (
        "zh",
        "Chinese",
        &["big5han", "gb2312han", "unihan", "zhuyin"],
    ),
    ("zh_Hant", "Chinese (Traditional)", &[]),
    ("zu", "Zulu", &[]),
];

/// The simple (binary) collation's locale.
pub const SIMPLE: &str = "simple";

/// Whether mongod accepts `locale` in a collation: `"simple"`, a locale of [`LOCALES`], or one
/// with a variant it lists (`"de@collation=phonebook"`).
pub fn is_supported(locale: &str) -> bool {
    if locale == SIMPLE {
        return true;
    }
    let (base, variant) = match locale.split_once("@collation=") {
        Some((base, variant)) => (base, Some(variant)),
        None => (locale, None),
    };
    LOCALES
        .iter()
        .any(|(name, _, variants)| *name == base && variant.is_none_or(|v| variants.contains(&v)))
}

/// For a locale mongod refuses, the one it most likely means: the same letters in mongod's case
/// and with `_` (`"en_us"`, `"en-US"` → `"en_US"`), the locale of a language's name
/// (`"english"` → `"en"`), the locale ICU falls back to (`"en_GB"` → `"en"`, as mongod's own
/// "Did you mean" says), the base of a variant mongod does not list, or a near spelling.
pub fn suggestion(locale: &str) -> Option<String> {
    let folded = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let wanted = folded(locale);
    if let Some((name, _, _)) = LOCALES.iter().find(|(name, _, _)| folded(name) == wanted) {
        return Some((*name).to_owned());
    }
    if let Some((name, _, _)) = LOCALES.iter().find(|(_, language, _)| {
        language.to_ascii_lowercase() == wanted
            || language.split(' ').next().map(str::to_ascii_lowercase) == Some(wanted.clone())
    }) {
        return Some((*name).to_owned());
    }
    let base = locale.split('@').next().unwrap_or(locale);
    if base != locale && is_supported(base) {
        return Some(base.to_owned());
    }
    // ICU's fallback: drop the last `_` component until a locale is known
    let mut prefix = base.replace('-', "_");
    while let Some((shorter, _)) = prefix.rsplit_once('_') {
        prefix = shorter.to_owned();
        if let Some((name, _, _)) = LOCALES
            .iter()
            .find(|(name, _, _)| folded(name) == folded(&prefix))
        {
            return Some((*name).to_owned());
        }
    }
    LOCALES
        .iter()
        .map(|(name, _, _)| (edit_distance(&wanted, &folded(name)), *name))
        .filter(|(d, name)| *d <= 2 && *d < name.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name.to_owned())
}

/// The options of a collator that mongod reports from the locale when a collation leaves them
/// out (`CollationSpec`'s fields; `maxVariable` and `normalization` are not kept here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    /// `strength`.
    pub strength: u8,
    /// `caseLevel`.
    pub case_level: bool,
    /// `caseFirst`: `"off"`, `"upper"` or `"lower"`.
    pub case_first: &'static str,
    /// `numericOrdering`.
    pub numeric_ordering: bool,
    /// `alternate`: `"non-ignorable"` or `"shifted"`.
    pub alternate: &'static str,
    /// `backwards`.
    pub backwards: bool,
}

/// ICU's root collator: every locale's options unless its tailoring sets one.
pub const ROOT: Defaults = Defaults {
    strength: 3,
    case_level: false,
    case_first: "off",
    numeric_ordering: false,
    alternate: "non-ignorable",
    backwards: false,
};

/// The options mongod reports for `locale` when a collation leaves them out: [`ROOT`], but for
/// the locales whose ICU tailoring sets one (`[backwards 2]` of `fr_CA`, `[caseFirst upper]` of
/// `da` and `mt`, `[alternate shifted]` of `th`; their variants set none).
pub fn defaults(locale: &str) -> Defaults {
    match locale {
        "fr_CA" => Defaults {
            backwards: true,
            ..ROOT
        },
        "da" | "mt" => Defaults {
            case_first: "upper",
            ..ROOT
        },
        "th" => Defaults {
            alternate: "shifted",
            ..ROOT
        },
        _ => ROOT,
    }
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

// Rule 6, a collation other than the query's: `planner_ixselect.cpp` `_compatible` assigns no
// predicate comparing a string, an array or an object to the index, `computeSortsForScan` counts
// such a key among the unsupported fields.

/// Whether a key on `path` is one a collation compares: under another collation than the
/// query's, every path the query does not name as uncollated (rule 6).
pub(crate) fn collated(path: &str, index: &IndexShape, query: &QueryShape) -> bool {
    index.collation != query.collation && !query.uncollated_paths.iter().any(|p| p == path)
}

pub(crate) fn collation_rule(index: &IndexShape, query: &QueryShape) -> Rule {
    Rule::CollationDiffers {
        index: index.name.clone(),
        index_collation: index.collation.clone(),
        query_collation: query.collation.clone(),
    }
}

/// Rule 6, collation: its rows of the planner's table (index, query, verdict, what the row shows;
/// the comment above a group or a row names the mongod source or test it comes from), run by
/// `crate::tests::planner_table`.
#[cfg(test)]
pub(crate) fn cases() -> Vec<crate::tests::Case> {
    use crate::tests::*;
    vec![
        // Rule 6, collation: planner_ixselect.cpp _compatible, computeSortsForScan.
        (
            with(ix("a:1,b:1"), |i| i.collation = Some(s("fr"))),
            q().eq("a").sort("b:1"),
            Verdict::Unusable(Rule::CollationDiffers {
                index: s("x"),
                index_collation: Some(s("fr")),
                query_collation: None,
            }),
            "collation differs",
        ),
        (
            with(ix("a:1,b:1"), |i| i.collation = Some(s("fr"))),
            q().eq("a").sort("b:1").coll("fr"),
            served(false, 1),
            "same collation",
        ),
        // `_compatible` assigns a predicate comparing a number to an index of another
        // collation; `computeSortsForScan` cuts the sort only at keys with string bounds.
        (
            with(ix("n:1,b:1"), |i| i.collation = Some(s("en/2"))),
            q().eq("n").sort("b:1").unc("n,b"),
            served(false, 1),
            "another collation, numbers only: served",
        ),
        (
            with(ix("n:1,email:1"), |i| i.collation = Some(s("en/2"))),
            q().eq("n").sort("email:1").unc("n"),
            Verdict::BlockingSort(Rule::CollationDiffers {
                index: s("x"),
                index_collation: Some(s("en/2")),
                query_collation: None,
            }),
            "another collation, sort on a string: no order",
        ),
        (
            with(ix("n:1,email:1"), |i| i.collation = Some(s("en/2"))),
            q().eq("n,email").unc("n"),
            Verdict::Examines(Rule::CollationDiffers {
                index: s("x"),
                index_collation: Some(s("en/2")),
                query_collation: None,
            }),
            "another collation, equality on a string: filtered",
        ),
        (
            ix("email:1"),
            q().eq("email").coll("en/2"),
            Verdict::Unusable(Rule::CollationDiffers {
                index: s("x"),
                index_collation: None,
                query_collation: Some(s("en/2")),
            }),
            "a case-insensitive lookup and a simple index",
        ),
        (
            with(ix("email:1"), |i| {
                i.collation = Some(s("en/2"));
                i.unique = true;
            }),
            q().eq("email").coll("en/2"),
            served(false, 1),
            "a case-insensitive lookup and its unique index",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_has_no_duplicate() {
        for pair in LOCALES.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        assert_eq!(LOCALES.len(), 109);
    }

    #[test]
    fn mongod_accepts_its_locales_and_variants_and_simple() {
        for locale in [
            "simple",
            "en",
            "en_US",
            "en_US_POSIX",
            "fr_CA",
            "zh_Hant",
            "de@collation=phonebook",
            "zh@collation=unihan",
        ] {
            assert!(is_supported(locale), "{locale}");
        }
    }

    #[test]
    fn mongod_refuses_the_rest_and_the_nearest_is_suggested() {
        // collator_factory_icu_test.cpp: garbage, root, en_, en_us, zh_HANT, en-US,
        // en_US@collation=phonebook, @collation=phonebook are all BadValue
        let cases = [
            ("xx_NOPE", None),
            ("garbage", None),
            ("root", None),
            ("", None),
            ("english", Some("en")),
            ("French", Some("fr")),
            ("en_us", Some("en_US")),
            ("en-US", Some("en_US")),
            ("zh_HANT", Some("zh_Hant")),
            ("en_GB", Some("en")),
            ("en_US@collation=phonebook", Some("en_US")),
            ("@collation=phonebook", None),
            ("fr_CAN", Some("fr")),
            ("ern", Some("en")),
        ];
        for (locale, suggested) in cases {
            assert!(!is_supported(locale), "{locale}");
            assert_eq!(suggestion(locale).as_deref(), suggested, "{locale}");
        }
    }

    #[test]
    fn a_locale_whose_tailoring_sets_an_option_reports_it() {
        assert!(defaults("fr_CA").backwards);
        assert!(!defaults("fr").backwards);
        assert_eq!(defaults("da").case_first, "upper");
        assert_eq!(defaults("mt").case_first, "upper");
        assert_eq!(defaults("th").alternate, "shifted");
        assert_eq!(defaults("da@collation=search"), ROOT);
        assert_eq!(defaults("en"), ROOT);
    }
}
