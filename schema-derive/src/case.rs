//! serde's `rename_all` rules, reproduced exactly so the validator names what serde writes.

use self::RenameRule::*;

#[derive(Copy, Clone, PartialEq)]
pub enum RenameRule {
    None,
    LowerCase,
    UpperCase,
    PascalCase,
    CamelCase,
    SnakeCase,
    ScreamingSnakeCase,
    KebabCase,
    ScreamingKebabCase,
}

static RULES: &[(&str, RenameRule)] = &[
    ("lowercase", LowerCase),
    ("UPPERCASE", UpperCase),
    ("PascalCase", PascalCase),
    ("camelCase", CamelCase),
    ("snake_case", SnakeCase),
    ("SCREAMING_SNAKE_CASE", ScreamingSnakeCase),
    ("kebab-case", KebabCase),
    ("SCREAMING-KEBAB-CASE", ScreamingKebabCase),
];

impl RenameRule {
    pub fn from_str(rule: &str) -> Result<Self, String> {
        RULES
            .iter()
            .find(|(name, _)| *name == rule)
            .map(|(_, rule)| *rule)
            .ok_or_else(|| {
                let names: Vec<&str> = RULES.iter().map(|(name, _)| *name).collect();
                format!(
                    "unknown rename rule `{rule}`, expected one of {}",
                    names.join(", ")
                )
            })
    }

    /// Applies the rule to a variant name written in PascalCase.
    pub fn apply_to_variant(self, variant: &str) -> String {
        match self {
            None | PascalCase => variant.to_owned(),
            LowerCase => variant.to_ascii_lowercase(),
            UpperCase => variant.to_ascii_uppercase(),
            CamelCase => variant[..1].to_ascii_lowercase() + &variant[1..],
            SnakeCase => {
                let mut snake = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        snake.push('_');
                    }
                    snake.push(ch.to_ascii_lowercase());
                }
                snake
            }
            ScreamingSnakeCase => SnakeCase.apply_to_variant(variant).to_ascii_uppercase(),
            KebabCase => SnakeCase.apply_to_variant(variant).replace('_', "-"),
            ScreamingKebabCase => ScreamingSnakeCase
                .apply_to_variant(variant)
                .replace('_', "-"),
        }
    }

    /// Applies the rule to a field name written in snake_case.
    pub fn apply_to_field(self, field: &str) -> String {
        match self {
            None | LowerCase | SnakeCase => field.to_owned(),
            UpperCase | ScreamingSnakeCase => field.to_ascii_uppercase(),
            PascalCase => {
                let mut pascal = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            CamelCase => {
                let pascal = PascalCase.apply_to_field(field);
                pascal[..1].to_ascii_lowercase() + &pascal[1..]
            }
            KebabCase => field.replace('_', "-"),
            ScreamingKebabCase => ScreamingSnakeCase.apply_to_field(field).replace('_', "-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_fields() {
        for (original, snake, camel, kebab) in [
            ("Outcome", "outcome", "outcome", "outcome"),
            ("VeryTasty", "very_tasty", "veryTasty", "very-tasty"),
            ("A", "a", "a", "a"),
        ] {
            assert_eq!(SnakeCase.apply_to_variant(original), snake);
            assert_eq!(CamelCase.apply_to_variant(original), camel);
            assert_eq!(KebabCase.apply_to_variant(original), kebab);
        }
        assert_eq!(CamelCase.apply_to_field("updated_at"), "updatedAt");
        assert_eq!(PascalCase.apply_to_field("updated_at"), "UpdatedAt");
        assert_eq!(
            ScreamingKebabCase.apply_to_field("updated_at"),
            "UPDATED-AT"
        );
        assert!(RenameRule::from_str("Camel").is_err());
    }
}
