//! A part stored under its owner's `_id` in a second collection
//! (`#[collection(name = "product_specs", same_id_as = Product)]`): seed 003's sixth outcome,
//! "bounded and read together, but large and cold: reference with the same `_id` in a second
//! collection". The owner's listings never carry the part; the part is read by the owner's id.

/// The owner of a part collection, as the derive describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartSpec {
    /// The owner's collection.
    pub owner: String,
    /// The owner's Rust type, for messages.
    pub owner_type: String,
    /// An owner may have no part (`optional_part`); otherwise `audit` counts the owners
    /// without one.
    pub optional: bool,
}

impl PartSpec {
    /// A required part of the documents of `owner`.
    pub fn new(owner: impl Into<String>, owner_type: impl Into<String>) -> Self {
        PartSpec {
            owner: owner.into(),
            owner_type: owner_type.into(),
            optional: false,
        }
    }

    /// Whether an owner may have no part.
    pub fn optional(mut self, optional: bool) -> Self {
        self.optional = optional;
        self
    }
}
