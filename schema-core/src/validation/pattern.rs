//! `pattern` and `patternProperties`: mongod's PCRE regexes, run by the `regex` crate.
//!
//! mongod compiles a `pattern` into a `RegexMatchExpression` with no flags and the property
//! names of `patternProperties` against a regex with no flags
//! (`json_schema_parser.cpp`, `expression_internal_schema_allowed_properties.cpp`); both
//! search the whole string (unanchored), in PCRE's UTF mode without `UCP`. Where the two
//! engines mean the same syntax differently the pattern is rewritten, and where they cannot be
//! made to agree the pattern is refused (never evaluated differently):
//!
//! - `\d`, `\w`, `\s` and `\b` are ASCII in PCRE without `UCP` and Unicode in Rust: rewritten
//!   to their ASCII classes (`\s` as PCRE2 defines it: space, `\t`, `\n`, `\v`, `\f`, `\r`).
//! - `$` without the `m` flag also matches before a final newline in PCRE: a `$` at the end of
//!   its branch becomes `\n?\z`. A `$` followed by more of the pattern is refused.
//! - Refused: backreferences, lookaround, atomic groups, possessive quantifiers, `\Z`, `\h`,
//!   `\R`, `\K` and anything else the `regex` crate cannot parse; the `m`, `x`, `u` and `R`
//!   flags; `\v` (a class in PCRE, a character in Rust); `\u`/`\U` escapes; nested classes and
//!   class operators (`[a[b]]`, `&&`, `--`, `~~`: literal characters in PCRE); `\<`, `\>` and
//!   `\b{...}` (literals or errors in PCRE).
//! - Documented, not refused: case-insensitive matching of non-ASCII letters follows Rust's
//!   simple Unicode case folding, and `\p{...}` names follow Rust's Unicode tables.

use regex::Regex;
use regex_syntax::ast::{
    self, Assertion, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSet, ClassSetItem, Flag,
    Flags, FlagsItemKind, HexLiteralKind, LiteralKind, SpecialLiteralKind,
};

/// A `pattern` regex compiled for mongod's meaning.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    /// As the schema states it.
    pub source: String,
    regex: Regex,
}

impl Pattern {
    /// Compiles `source` with PCRE's meaning, or says why it cannot be evaluated here.
    pub(crate) fn new(source: &str) -> Result<Pattern, String> {
        let translated = translate(source)?;
        let regex = Regex::new(&translated).map_err(|e| {
            format!("the regex {source:?} cannot be compiled by the Rust regex engine: {e}")
        })?;
        Ok(Pattern {
            source: source.to_owned(),
            regex,
        })
    }

    /// Whether the regex matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

/// `source` rewritten so that the `regex` crate matches what PCRE matches.
fn translate(source: &str) -> Result<String, String> {
    let refuse = |why: &str| {
        format!("the regex {source:?} {why}; mongod's PCRE and the local engine would disagree, so it cannot be evaluated locally")
    };
    let ast = ast::parse::Parser::new().parse(source).map_err(|e| {
        refuse(&format!(
            "uses syntax the Rust regex engine lacks ({})",
            e.kind()
        ))
    })?;
    let mut edits = Vec::new();
    walk(&ast, true, &mut edits).map_err(refuse)?;
    edits.sort_by_key(|(start, _, _)| *start);
    let mut out = String::with_capacity(source.len() + 16);
    let mut at = 0;
    for (start, end, replacement) in edits {
        out.push_str(&source[at..start]);
        out.push_str(replacement);
        at = end;
    }
    out.push_str(&source[at..]);
    Ok(out)
}

type Edit = (usize, usize, &'static str);

/// Collects the rewrites of `ast`; `last` says whether it ends its branch (for `$`).
fn walk(ast: &Ast, last: bool, edits: &mut Vec<Edit>) -> Result<(), &'static str> {
    match ast {
        Ast::Empty(_) | Ast::Dot(_) | Ast::ClassUnicode(_) => Ok(()),
        Ast::Flags(set) => flags(&set.flags),
        Ast::Literal(literal) => literal_kind(&literal.kind),
        Ast::Assertion(assertion) => assertion_edit(assertion, last, edits),
        Ast::ClassPerl(class) => {
            edits.push(perl(class));
            Ok(())
        }
        Ast::ClassBracketed(class) => class_set(&class.kind, edits),
        // `a++`, `a*+`: possessive in PCRE, a repeated repetition for the `regex` crate
        Ast::Repetition(repetition) if matches!(*repetition.ast, Ast::Repetition(_)) => {
            Err("uses a possessive quantifier (or a quantifier of a quantifier)")
        }
        Ast::Repetition(repetition) => walk(&repetition.ast, false, edits),
        Ast::Group(group) => {
            if let Some(flags_of) = group.flags() {
                flags(flags_of)?;
            }
            walk(&group.ast, last, edits)
        }
        Ast::Alternation(alternation) => {
            for branch in &alternation.asts {
                walk(branch, last, edits)?;
            }
            Ok(())
        }
        Ast::Concat(concat) => {
            let n = concat.asts.len();
            for (i, item) in concat.asts.iter().enumerate() {
                walk(item, last && i + 1 == n, edits)?;
            }
            Ok(())
        }
    }
}

fn flags(flags: &Flags) -> Result<(), &'static str> {
    for item in &flags.items {
        match item.kind {
            FlagsItemKind::Flag(Flag::MultiLine) => {
                return Err("sets the `m` flag (the engines differ at a final newline)")
            }
            FlagsItemKind::Flag(Flag::IgnoreWhitespace) => {
                return Err("sets the `x` flag (the engines differ inside classes)")
            }
            FlagsItemKind::Flag(Flag::Unicode | Flag::CRLF) => {
                return Err("sets a flag PCRE does not have (`u` or `R`)")
            }
            _ => {}
        }
    }
    Ok(())
}

fn literal_kind(kind: &LiteralKind) -> Result<(), &'static str> {
    match kind {
        LiteralKind::HexFixed(HexLiteralKind::UnicodeShort | HexLiteralKind::UnicodeLong)
        | LiteralKind::HexBrace(HexLiteralKind::UnicodeShort | HexLiteralKind::UnicodeLong) => {
            Err("uses a `\\u`/`\\U` escape, which PCRE refuses")
        }
        LiteralKind::Special(SpecialLiteralKind::VerticalTab) => {
            Err("uses `\\v`, a class of vertical spaces in PCRE but one character in Rust")
        }
        LiteralKind::Special(SpecialLiteralKind::Space) => {
            Err("escapes a space, which only means something in `x` mode")
        }
        _ => Ok(()),
    }
}

fn assertion_edit(
    assertion: &Assertion,
    last: bool,
    edits: &mut Vec<Edit>,
) -> Result<(), &'static str> {
    let span = (assertion.span.start.offset, assertion.span.end.offset);
    match assertion.kind {
        AssertionKind::StartLine | AssertionKind::StartText | AssertionKind::EndText => Ok(()),
        AssertionKind::EndLine if last => {
            edits.push((span.0, span.1, r"\n?\z"));
            Ok(())
        }
        AssertionKind::EndLine => Err("has a `$` followed by more of the pattern"),
        AssertionKind::WordBoundary => {
            edits.push((span.0, span.1, r"(?-u:\b)"));
            Ok(())
        }
        AssertionKind::NotWordBoundary => {
            edits.push((span.0, span.1, r"(?-u:\B)"));
            Ok(())
        }
        _ => Err("uses a word-boundary form PCRE reads as literal characters"),
    }
}

/// `\d`, `\s`, `\w` and their negations as PCRE's ASCII classes, valid both inside and outside
/// a bracketed class (the `regex` crate nests classes).
fn perl(class: &ClassPerl) -> Edit {
    let replacement = match (class.kind.clone(), class.negated) {
        (ClassPerlKind::Digit, false) => "[0-9]",
        (ClassPerlKind::Digit, true) => "[^0-9]",
        (ClassPerlKind::Space, false) => r"[\t\n\x0B\x0C\r ]",
        (ClassPerlKind::Space, true) => r"[^\t\n\x0B\x0C\r ]",
        (ClassPerlKind::Word, false) => "[0-9A-Za-z_]",
        (ClassPerlKind::Word, true) => "[^0-9A-Za-z_]",
    };
    (class.span.start.offset, class.span.end.offset, replacement)
}

fn class_set(set: &ClassSet, edits: &mut Vec<Edit>) -> Result<(), &'static str> {
    match set {
        ClassSet::BinaryOp(_) => Err("uses a class operator (`&&`, `--`, `~~`), literal in PCRE"),
        ClassSet::Item(item) => class_item(item, edits),
    }
}

fn class_item(item: &ClassSetItem, edits: &mut Vec<Edit>) -> Result<(), &'static str> {
    match item {
        ClassSetItem::Empty(_) | ClassSetItem::Ascii(_) | ClassSetItem::Unicode(_) => Ok(()),
        ClassSetItem::Literal(literal) => literal_kind(&literal.kind),
        ClassSetItem::Range(range) => {
            literal_kind(&range.start.kind)?;
            literal_kind(&range.end.kind)
        }
        ClassSetItem::Perl(class) => {
            edits.push(perl(class));
            Ok(())
        }
        ClassSetItem::Bracketed(_) => Err("nests a class (`[` is a literal inside a PCRE class)"),
        ClassSetItem::Union(union) => {
            for item in &union.items {
                class_item(item, edits)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        Pattern::new(pattern).unwrap().is_match(text)
    }

    #[test]
    fn perl_classes_are_ascii_as_in_pcre_without_ucp() {
        assert!(matches(r"^\d+$", "123"));
        assert!(!matches(r"^\d+$", "١٢٣")); // Arabic-Indic digits: Unicode \d, not PCRE's
        assert!(!matches(r"^\w+$", "été"));
        assert!(matches(r"^[\w-]+$", "a-b_c"));
        assert!(matches(r"^[^\d]+$", "abc"));
        assert!(matches(r"\bcat\b", "a cat!"));
        assert!(matches(r"^\s$", "\u{0B}"));
        assert!(!matches(r"^\s$", "\u{A0}"));
    }

    #[test]
    fn dollar_matches_before_a_final_newline() {
        assert!(matches("^abc$", "abc\n"));
        assert!(matches("^abc$", "abc"));
        assert!(!matches("^abc$", "abc\n\n"));
        assert!(matches("^(a|b$)", "b\n"));
        assert!(matches("^a$|^b$", "b\n"));
    }

    #[test]
    fn syntax_the_engines_read_differently_is_refused() {
        for pattern in [
            r"(a)\1", r"(?=a)b", r"(?<!a)b", r"a++", r"(?>a)", r"a$b", r"(?m)^a", r"(?x)a b",
            r"[a[b]]", r"[a&&b]", r"\v", r"\<a", r"a\Z", r"\h",
        ] {
            assert!(Pattern::new(pattern).is_err(), "{pattern}");
        }
        for pattern in [
            r"^[a-z]+$",
            r"(?i)abc",
            r"\p{L}+",
            r"[[:alpha:]]",
            r"a{2,3}?",
            r"(?s)a.b",
        ] {
            assert!(Pattern::new(pattern).is_ok(), "{pattern}");
        }
    }
}
