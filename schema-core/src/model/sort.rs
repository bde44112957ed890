//! The direction of a sort or an index key, in place of a bare `1` / `-1`.

use mongodb::bson::Bson;

/// Ascending or descending: the order of a sort key, of an index key, of a subset's previews.
/// Stored and sent as `1` / `-1`; compares equal to those numbers
/// (`assert_eq!(Ticket::ASSIGNEE_ID.sort_key().direction, -1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SortDirection {
    /// Smallest first, `1`.
    #[default]
    Ascending,
    /// Largest first, `-1`.
    Descending,
}

impl SortDirection {
    /// The direction of a key written as a number, as mongod reads one: a negative number is
    /// descending, any other ascending.
    pub const fn from_sign(direction: i32) -> Self {
        if direction < 0 {
            SortDirection::Descending
        } else {
            SortDirection::Ascending
        }
    }

    /// `1` or `-1`, as a sort or index document holds it.
    pub const fn as_i32(self) -> i32 {
        match self {
            SortDirection::Ascending => 1,
            SortDirection::Descending => -1,
        }
    }

    /// Whether this is [`SortDirection::Descending`].
    pub const fn is_descending(self) -> bool {
        matches!(self, SortDirection::Descending)
    }

    /// The other direction.
    pub const fn reverse(self) -> Self {
        match self {
            SortDirection::Ascending => SortDirection::Descending,
            SortDirection::Descending => SortDirection::Ascending,
        }
    }
}

impl From<i32> for SortDirection {
    /// As [`SortDirection::from_sign`].
    fn from(direction: i32) -> Self {
        SortDirection::from_sign(direction)
    }
}

impl From<SortDirection> for i32 {
    fn from(direction: SortDirection) -> i32 {
        direction.as_i32()
    }
}

impl From<SortDirection> for Bson {
    fn from(direction: SortDirection) -> Bson {
        Bson::Int32(direction.as_i32())
    }
}

impl PartialEq<i32> for SortDirection {
    fn eq(&self, other: &i32) -> bool {
        self.as_i32() == *other
    }
}

impl std::fmt::Display for SortDirection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_i32().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::SortDirection;

    #[test]
    fn a_direction_reads_and_writes_as_mongod_numbers() {
        assert_eq!(SortDirection::from_sign(-1), SortDirection::Descending);
        assert_eq!(SortDirection::from_sign(1), SortDirection::Ascending);
        assert_eq!(SortDirection::from(-5), SortDirection::Descending);
        assert_eq!(SortDirection::Descending.as_i32(), -1);
        assert_eq!(SortDirection::Ascending, 1);
        assert_ne!(SortDirection::Ascending, -1);
        assert_eq!(
            SortDirection::Ascending.reverse(),
            SortDirection::Descending
        );
        assert_eq!(
            mongodb::bson::Bson::from(SortDirection::Descending),
            mongodb::bson::Bson::Int32(-1)
        );
    }
}
