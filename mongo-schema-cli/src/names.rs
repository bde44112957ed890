//! Rust names from stored names: valid identifiers (keywords, `$`, `.`, digits and spaces are
//! handled; the stored name is kept with `#[serde(rename)]`), types named after their paths.

const STRICT_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Keywords that cannot be raw identifiers.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// The words of a stored name: split at non-alphanumerics and at lower-to-upper case changes
/// (`userId` -> `user`, `id`; `HTTPServer` -> `http`, `server`).
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        let boundary = !current.is_empty()
            && c.is_uppercase()
            && (chars[i - 1].is_lowercase()
                || chars[i - 1].is_ascii_digit()
                || chars.get(i + 1).is_some_and(|n| n.is_lowercase())
                    && chars[i - 1].is_uppercase());
        if boundary {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
        .into_iter()
        .map(|w| {
            w.chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// A field identifier: snake case, `r#` for keywords, `_` before a leading digit, `field` when
/// nothing is left (`$` alone).
pub fn field_ident(stored: &str) -> String {
    let mut ident = words(stored).join("_");
    if ident.is_empty() {
        ident = "field".to_owned();
    }
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    if stored.starts_with('_') && stored != "_id" && !ident.starts_with('_') {
        ident.insert(0, '_');
        ident.insert(0, 'u');
    }
    keyword_safe(ident)
}

fn keyword_safe(ident: String) -> String {
    if NOT_RAW.contains(&ident.as_str()) {
        format!("{ident}_")
    } else if STRICT_KEYWORDS.contains(&ident.as_str()) {
        format!("r#{ident}")
    } else {
        ident
    }
}

/// A type or variant name: upper camel case; `V` before a leading digit; `Value` when nothing is
/// left.
pub fn type_name(stored: &str) -> String {
    let mut name: String = words(stored)
        .iter()
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect();
    if name.is_empty() {
        name = "Value".to_owned();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, 'V');
    }
    if NOT_RAW.contains(&name.as_str()) {
        name.push('_');
    }
    name
}

/// The singular of an English plural, for element and root type names (`categories` ->
/// `category`, `addresses` -> `address`, `items` -> `item`).
pub fn singular(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let cut = |n: usize| name[..name.len() - n].to_owned();
    if lower.ends_with("ies") && name.len() > 3 {
        return cut(3) + "y";
    }
    for ending in ["sses", "shes", "ches", "xes", "zes"] {
        if lower.ends_with(ending) {
            return cut(2);
        }
    }
    if lower.ends_with('s') && !lower.ends_with("ss") && !lower.ends_with("us") && name.len() > 1 {
        return cut(1);
    }
    name.to_owned()
}

/// The type names the emitted module's scope already holds: Rust's prelude, the crate's
/// prelude, serde's derives and the `bson` items the module imports. A struct of the module
/// named so would shadow one (`struct Copy`, for a `copies` collection, breaks every `T: Copy`).
const IN_SCOPE: &[&str] = &[
    "AsMut",
    "AsRef",
    "BTreeMap",
    "Binary",
    "Box",
    "Bson",
    "BsonDocument",
    "BsonSchema",
    "Clone",
    "Copy",
    "DateTime",
    "Debug",
    "Decimal128",
    "Default",
    "Deserialize",
    "Document",
    "Drop",
    "Eq",
    "Err",
    "Extend",
    "Fn",
    "FnMut",
    "FnOnce",
    "From",
    "HashMap",
    "Hash",
    "Identified",
    "Into",
    "IntoIterator",
    "Iterator",
    "None",
    "ObjectId",
    "Ok",
    "Option",
    "Ord",
    "PartialEq",
    "PartialOrd",
    "Ref",
    "Regex",
    "Result",
    "ResultExt",
    "Schema",
    "Send",
    "Serialize",
    "ServerRules",
    "Sized",
    "Some",
    "String",
    "Sync",
    "Timestamp",
    "ToOwned",
    "ToString",
    "TryFrom",
    "TryInto",
    "Unpin",
    "Uuid",
    "Vec",
];

/// [`unique`] for the name of a type of the module: a name its scope already holds
/// (`IN_SCOPE`: Rust's prelude, the crate's, serde's) takes `Doc` first (`Copy` -> `CopyDoc`).
pub fn unique_type(candidate: String, taken: &mut Vec<String>) -> String {
    if IN_SCOPE.contains(&candidate.as_str()) {
        return unique(candidate + "Doc", taken);
    }
    unique(candidate, taken)
}

/// Makes `candidate` unique among `taken` by a numeric suffix, and records it.
pub fn unique(candidate: String, taken: &mut Vec<String>) -> String {
    let mut name = candidate.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{candidate}{n}");
        n += 1;
    }
    taken.push(name.clone());
    name
}

/// The stored name serde would write for a field identifier (raw prefix removed).
pub fn unraw(ident: &str) -> &str {
    ident.strip_prefix("r#").unwrap_or(ident)
}

/// Words of a stored field name that name a collection: `userId`, `user_id`, `user` -> `user`.
pub fn reference_hint(stored: &str) -> String {
    let mut w = words(stored);
    if w.len() > 1
        && matches!(
            w.last().map(String::as_str),
            Some("id" | "ids" | "ref" | "refs")
        )
    {
        w.pop();
    }
    singular(&w.join("_"))
}

/// Whether Rust's string escapes change `c`, quotes and backslashes aside: a control
/// character, or one that is invisible or reorders text (`\u{202e}`). A stored name holding
/// one is never written into code as is: `pull` types the sub-document that holds it `Bson`,
/// and refuses a collection whose documents hold it at the top level.
pub fn unprintable(c: char) -> bool {
    !matches!(c, '"' | '\'' | '\\') && c.escape_debug().len() > 1
}

/// Whether a stored name holds an [`unprintable`] character.
pub fn hostile(stored: &str) -> bool {
    stored.chars().any(unprintable)
}

/// A count as people write it: `12,000`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_valid_rust() {
        assert_eq!(field_ident("userId"), "user_id");
        assert_eq!(field_ident("type"), "r#type");
        assert_eq!(field_ident("self"), "self_");
        assert_eq!(field_ident("$price"), "price");
        assert_eq!(field_ident("a.b c"), "a_b_c");
        assert_eq!(field_ident("2fa"), "_2fa");
        assert_eq!(field_ident("$"), "field");
        assert_eq!(field_ident("__v"), "u_v");
        assert_eq!(field_ident("_id"), "id");
        assert_eq!(field_ident("HTTPServer"), "http_server");
        assert_eq!(type_name("order_items"), "OrderItems");
        assert_eq!(type_name("credit-card"), "CreditCard");
        assert_eq!(type_name("3ds"), "V3ds");
        assert_eq!(type_name(""), "Value");
    }

    #[test]
    fn names_a_reader_cannot_see_are_hostile() {
        for name in [
            "a\nb",
            "a\rb",
            "tab\there",
            "\u{202e}evil",
            "zero\u{200b}width",
            "\u{7f}",
        ] {
            assert!(hostile(name), "{name:?}");
        }
        for name in [
            "*/",
            "a\"b",
            "it's",
            "back\\slash",
            "`tick`",
            "caf\u{e9}",
            "\u{65e5}\u{672c}",
        ] {
            assert!(!hostile(name), "{name:?}");
        }
    }

    #[test]
    fn a_type_never_shadows_a_name_of_the_module_s_scope() {
        let mut taken = Vec::new();
        // a `copies` collection: `struct Copy` would break every `T: Copy`
        assert_eq!(
            unique_type(type_name(&singular("copies")), &mut taken),
            "CopyDoc"
        );
        assert_eq!(
            unique_type("Document".to_owned(), &mut taken),
            "DocumentDoc"
        );
        assert_eq!(unique_type("Book".to_owned(), &mut taken), "Book");
        assert_eq!(unique_type("Book".to_owned(), &mut taken), "Book2");
        assert_eq!(unique_type("Copy".to_owned(), &mut taken), "CopyDoc2");
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(7), "7");
        assert_eq!(count(7000), "7,000");
        assert_eq!(count(1234567), "1,234,567");
    }

    #[test]
    fn singulars_and_hints() {
        assert_eq!(singular("categories"), "category");
        assert_eq!(singular("addresses"), "address");
        assert_eq!(singular("items"), "item");
        assert_eq!(singular("status"), "status");
        assert_eq!(reference_hint("userId"), "user");
        assert_eq!(reference_hint("customer_id"), "customer");
        assert_eq!(reference_hint("productIds"), "product");
        assert_eq!(reference_hint("owner"), "owner");
    }
}
