//! Serde helpers of this crate: stored forms that order like their values, for the types whose
//! default serde impl stores text that does not.
//!
//! Each is a module for `#[serde(with = "...")]` (its `serialize` and `deserialize` also for
//! `serialize_with` and `deserialize_with`), recognised by the derives by its name: the field's
//! `$jsonSchema`, its typed path's stored form and encoder follow the helper, so a filter's
//! value is written as the field stores it and a range, a sort or an index key on the field
//! compiles.

/// `rust_decimal::Decimal` stored as a BSON `decimal` (`Decimal128`), exactly (its 96-bit
/// coefficient and scale of 0 to 28 are the `Decimal128`'s coefficient and exponent), where
/// rust_decimal's own serde impl stores the text `"103.99"`, which sorts before `"6.99"`.
/// mongod compares `decimal`s as numbers: a range, a sort and an index on the field order like
/// the values.
///
/// ```text
/// use mongo_schema::prelude::*;
/// use rust_decimal::Decimal;
///
/// #[derive(Document, serde::Serialize, serde::Deserialize)]
/// #[collection(name = "products")]
/// #[query(name = "priced_between", eq(tag), range(price), limit = 20)]
/// pub struct Product {
///     #[serde(rename = "_id")]
///     pub id: ObjectId,
///     pub tag: String,
///     #[serde(with = "mongo_schema::serde_helpers::rust_decimal_as_decimal128")]
///     pub price: Decimal,
/// }
/// ```
///
/// Reading back, a stored `decimal` with more than 28 decimal places that are not zeros, a
/// value beyond `Decimal`'s range, `NaN` or an infinity is a deserialization error, never a
/// rounded value; another BSON type (the text an earlier version stored) is one too: convert
/// those documents first (`{ $set: { price: { $toDecimal: "$price" } } }`).
#[cfg(feature = "rust_decimal-1")]
#[cfg_attr(docsrs, doc(cfg(feature = "rust_decimal-1")))]
pub mod rust_decimal_as_decimal128 {
    use mongodb::bson::Decimal128;
    use rust_decimal::Decimal;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `value` as a BSON `decimal`.
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(value: &Decimal, serializer: S) -> Result<S::Ok, S::Error> {
        to_decimal128(value).serialize(serializer)
    }

    /// Reads a BSON `decimal` as a `Decimal`.
    ///
    /// # Errors
    ///
    /// Another BSON type, or a `decimal` that a `Decimal` does not hold exactly.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Decimal, D::Error> {
        let stored = Decimal128::deserialize(deserializer)?;
        from_decimal128(&stored).map_err(serde::de::Error::custom)
    }

    /// The exponent bias of a `Decimal128`.
    const BIAS: u128 = 6176;
    /// The bits of a `Decimal128`'s coefficient (its small form).
    const COEFFICIENT_BITS: u32 = 113;
    /// The largest coefficient a `Decimal` holds: 2^96 - 1.
    const DECIMAL_MAX: u128 = (1 << 96) - 1;

    /// `value` as a `Decimal128`: the same coefficient and exponent.
    pub fn to_decimal128(value: &Decimal) -> Decimal128 {
        let mantissa = value.mantissa();
        let sign = u128::from(mantissa < 0) << 127;
        let exponent = (BIAS - u128::from(value.scale())) << COEFFICIENT_BITS;
        Decimal128::from_bytes((sign | exponent | mantissa.unsigned_abs()).to_le_bytes())
    }

    /// `stored` as a `Decimal`, when one holds it exactly.
    ///
    /// # Errors
    ///
    /// `NaN`, an infinity, a non-canonical encoding, more than 28 decimal places that are not
    /// zeros, or a value beyond `Decimal`'s range.
    pub fn from_decimal128(stored: &Decimal128) -> Result<Decimal, String> {
        let bits = u128::from_le_bytes(stored.bytes());
        let negative = bits >> 127 == 1;
        if (bits >> 125) & 0b11 == 0b11 {
            return Err(if (bits >> 122) & 0b11111 >= 0b11110 {
                format!("the stored decimal {stored} is not a number a `Decimal` holds")
            } else {
                format!("the stored decimal {stored} is not canonical")
            });
        }
        let mut exponent = ((bits >> COEFFICIENT_BITS) & 0x3FFF) as i64 - BIAS as i64;
        let mut coefficient = bits & ((1 << COEFFICIENT_BITS) - 1);
        let out_of_range = || format!("the stored decimal {stored} is beyond `Decimal`'s range");
        while exponent > 0 {
            coefficient = coefficient
                .checked_mul(10)
                .filter(|c| *c <= DECIMAL_MAX)
                .ok_or_else(out_of_range)?;
            exponent -= 1;
        }
        // trailing zeros beyond what a `Decimal` holds: dropped, the value unchanged
        while (exponent < -28 || coefficient > DECIMAL_MAX)
            && exponent < 0
            && coefficient.is_multiple_of(10)
        {
            coefficient /= 10;
            exponent += 1;
        }
        if exponent < -28 {
            return Err(format!(
                "the stored decimal {stored} has more than 28 decimal places, which a `Decimal` does not hold"
            ));
        }
        if coefficient > DECIMAL_MAX {
            return Err(out_of_range());
        }
        let signed = if negative {
            -(coefficient as i128)
        } else {
            coefficient as i128
        };
        Decimal::try_from_i128_with_scale(signed, (-exponent) as u32).map_err(|e| e.to_string())
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::str::FromStr;

        #[test]
        fn the_decimal128_is_the_one_bson_parses_from_the_same_text() {
            for text in [
                "0",
                "0.00",
                "-0.5",
                "1.10",
                "-12.345",
                "103.99",
                "6.99",
                "0.0000001",
                "79228162514264337593543950335",
                "-79228162514264337593543950335",
                "0.0000000000000000000000000001",
                "12345678901234567890.12345678",
            ] {
                let decimal = Decimal::from_str(text).unwrap();
                let ours = to_decimal128(&decimal);
                let bson = Decimal128::from_str(text).unwrap();
                assert_eq!(ours.bytes(), bson.bytes(), "{text}");
                let back = from_decimal128(&ours).unwrap();
                assert_eq!(back, decimal, "{text}");
                assert_eq!(back.scale(), decimal.scale(), "{text}");
            }
        }

        #[test]
        fn a_stored_decimal_a_decimal_cannot_hold_exactly_is_refused() {
            for (text, ok) in [
                ("1E+3", Some("1000")),
                (
                    "1.000000000000000000000000000000",
                    Some("1.0000000000000000000000000000"),
                ),
                ("1.0000000000000000000000000000001", None),
                ("1E+29", None),
                ("NaN", None),
                ("Infinity", None),
                ("-Infinity", None),
            ] {
                let stored = Decimal128::from_str(text).unwrap();
                let read = from_decimal128(&stored);
                match ok {
                    Some(expected) => {
                        assert_eq!(
                            read.unwrap(),
                            Decimal::from_str(expected).unwrap(),
                            "{text}"
                        )
                    }
                    None => assert!(read.is_err(), "{text}: {read:?}"),
                }
            }
        }
    }
}

/// `Option<rust_decimal::Decimal>` stored as a BSON `decimal` or `null`
/// ([`rust_decimal_as_decimal128`] inside an `Option`).
#[cfg(feature = "rust_decimal-1")]
#[cfg_attr(docsrs, doc(cfg(feature = "rust_decimal-1")))]
pub mod rust_decimal_as_decimal128_optional {
    use mongodb::bson::Decimal128;
    use rust_decimal::Decimal;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `value` as a BSON `decimal`, `None` as `null`.
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(
        value: &Option<Decimal>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value
            .as_ref()
            .map(super::rust_decimal_as_decimal128::to_decimal128)
            .serialize(serializer)
    }

    /// Reads a BSON `decimal` or `null`.
    ///
    /// # Errors
    ///
    /// As [`super::rust_decimal_as_decimal128::deserialize`].
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Decimal>, D::Error> {
        Option::<Decimal128>::deserialize(deserializer)?
            .map(|stored| super::rust_decimal_as_decimal128::from_decimal128(&stored))
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}
