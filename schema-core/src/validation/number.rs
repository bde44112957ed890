//! Numbers as mongod compares them: int, long, double and decimal side by side.
//!
//! mongod orders numbers of different types by value (`compareElementValues` in
//! `src/mongo/bson/bsonelement.cpp`): int and long against double exactly
//! (`compareLongToDouble`), and a decimal against a double after the double is converted to a
//! decimal of 34 digits (`compareDecimalToDouble`). `multipleOf` is `$_internalSchemaFmod`
//! (`expression_internal_schema_fmod.cpp`), which takes the remainder in Decimal128 of
//! `numberDecimal()` (a double converted with 15 significant digits) and compares it with 0.

use std::cmp::Ordering;
use std::fmt::Write as _;

use mongodb::bson::{Bson, Decimal128};

/// The largest coefficient of a Decimal128 (34 digits).
const MAX_COEFFICIENT: u128 = 10u128.pow(34) - 1;

/// A numeric BSON value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    /// int or long.
    Integer(i64),
    /// double.
    Double(f64),
    /// decimal.
    Decimal(Decimal),
}

/// A decoded Decimal128: `(-1)^negative * coefficient * 10^exponent`, or an infinity or NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Decimal {
    negative: bool,
    coefficient: u128,
    exponent: i32,
    special: Special,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    Finite,
    Infinity,
    NaN,
}

impl Number {
    /// The number a value read in place holds, if it is one.
    pub(crate) fn of_value(value: super::value::Value<'_>) -> Option<Number> {
        match value.kind {
            16 => Some(Number::Integer(i64::from(value.i32()))),
            18 => Some(Number::Integer(value.i64())),
            1 => Some(Number::Double(value.f64())),
            19 => Some(Number::Decimal(Decimal::from_bson(
                &Decimal128::from_bytes(value.bytes[..16].try_into().expect("16 bytes")),
            ))),
            _ => None,
        }
    }

    /// The same for an owned value (the keywords of a schema).
    pub(crate) fn of(value: &Bson) -> Option<Number> {
        match value {
            Bson::Int32(v) => Some(Number::Integer(i64::from(*v))),
            Bson::Int64(v) => Some(Number::Integer(*v)),
            Bson::Double(v) => Some(Number::Double(*v)),
            Bson::Decimal128(d) => Some(Number::Decimal(Decimal::from_bson(d))),
            _ => None,
        }
    }

    fn is_nan(self) -> bool {
        match self {
            Number::Integer(_) => false,
            Number::Double(v) => v.is_nan(),
            Number::Decimal(d) => d.special == Special::NaN,
        }
    }

    /// The order of two numbers; `None` when either is NaN, which mongod's comparison operators
    /// (`$lt`, `$gte`, ... that `minimum` and `maximum` become) never match
    /// (`ComparisonMatchExpressionBase::compareFieldValues`: "NaN is equal to NaN but otherwise
    /// always compares to false").
    pub(crate) fn compare(self, other: Number) -> Option<Ordering> {
        if self.is_nan() || other.is_nan() {
            return None;
        }
        Some(match (self, other) {
            (Number::Integer(a), Number::Integer(b)) => a.cmp(&b),
            (Number::Double(a), Number::Double(b)) => a.partial_cmp(&b)?,
            (Number::Integer(a), Number::Double(b)) => compare_long_to_double(a, b),
            (Number::Double(a), Number::Integer(b)) => compare_long_to_double(b, a).reverse(),
            (Number::Decimal(a), other) => a.compare(&other.to_decimal(34)),
            (other, Number::Decimal(b)) => other.to_decimal(34).compare(&b),
        })
    }

    /// Whether two numbers are equal as BSON values (NaN equals NaN, as in mongod's
    /// `compareElementValues`).
    pub(crate) fn same(self, other: Number) -> bool {
        if self.is_nan() || other.is_nan() {
            return self.is_nan() && other.is_nan();
        }
        self.compare(other) == Some(Ordering::Equal)
    }

    /// The value as a decimal: exact for integers, a double rounded to `digits` significant
    /// digits (mongod's `Decimal128(double, kRoundTo15Digits | kRoundTo34Digits)`).
    fn to_decimal(self, digits: usize) -> Decimal {
        match self {
            Number::Integer(v) => Decimal {
                negative: v < 0,
                coefficient: u128::from(v.unsigned_abs()),
                exponent: 0,
                special: Special::Finite,
            },
            Number::Decimal(d) => d,
            Number::Double(v) => Decimal::from_double(v, digits),
        }
    }

    /// `$_internalSchemaFmod` with remainder 0: whether `self` is a multiple of `divisor`,
    /// computed exactly in decimal (a double is first rounded to 15 digits, as
    /// `BSONElement::numberDecimal` does). NaN and infinities are multiples of nothing.
    pub(crate) fn is_multiple_of(self, divisor: Number) -> bool {
        let value = self.to_decimal(15);
        let divisor = divisor.to_decimal(15);
        if value.special != Special::Finite || divisor.special != Special::Finite {
            return false;
        }
        if divisor.coefficient == 0 {
            return false; // refused by mongod's parser; never a multiple
        }
        if value.coefficient == 0 {
            return true;
        }
        let d = divisor.coefficient;
        // value / divisor = (cv / cd) * 10^(ev - ed)
        let shift = i64::from(value.exponent) - i64::from(divisor.exponent);
        if shift >= 0 {
            let scale = pow_mod(10, shift as u64, d);
            mul_mod(value.coefficient % d, scale, d) == 0
        } else {
            // cv must be divisible by cd * 10^-shift
            let cut = (-shift) as u32;
            if cut > 38 {
                return false; // cv < 10^34
            }
            let power = 10u128.pow(cut);
            value.coefficient.is_multiple_of(power) && (value.coefficient / power).is_multiple_of(d)
        }
    }
}

impl Decimal {
    /// Decodes the BID encoding of a Decimal128 (IEEE 754-2008, as the BSON spec stores it).
    pub(crate) fn from_bson(value: &Decimal128) -> Decimal {
        let bytes = value.bytes();
        let low = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let high = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"));
        let negative = high >> 63 == 1;
        let combination = (high >> 58) & 0x1F;
        let special = match combination {
            0x1F => Special::NaN,
            0x1E => Special::Infinity,
            _ => Special::Finite,
        };
        let (exponent, coefficient) = if (high >> 61) & 0b11 == 0b11 {
            // the "11" form: an implicit 100 prefix makes every such coefficient exceed 34
            // digits, so it is non-canonical and reads as zero
            (((high >> 47) & 0x3FFF) as i32, 0)
        } else {
            let coefficient = (u128::from(high & 0x1_FFFF_FFFF_FFFF) << 64) | u128::from(low);
            (((high >> 49) & 0x3FFF) as i32, coefficient)
        };
        Decimal {
            negative,
            coefficient: if coefficient > MAX_COEFFICIENT {
                0
            } else {
                coefficient
            },
            exponent: exponent - 6176,
            special,
        }
    }

    /// A double rounded to `digits` significant digits (ties to even, as Rust's formatting and
    /// the Intel decimal library both round).
    fn from_double(value: f64, digits: usize) -> Decimal {
        let negative = value.is_sign_negative();
        if value.is_nan() {
            return Decimal {
                negative,
                coefficient: 0,
                exponent: 0,
                special: Special::NaN,
            };
        }
        if value.is_infinite() {
            return Decimal {
                negative,
                coefficient: 0,
                exponent: 0,
                special: Special::Infinity,
            };
        }
        if value == 0.0 {
            return Decimal {
                negative,
                coefficient: 0,
                exponent: 0,
                special: Special::Finite,
            };
        }
        // `1.2345e-7`: no allocation, the text fits on the stack
        let mut text = StackText::default();
        let _ = write!(text, "{:.*e}", digits - 1, value.abs());
        let text = text.as_str();
        let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
        let mut coefficient: u128 = 0;
        let mut fraction_digits = 0i32;
        let mut after_point = false;
        for byte in mantissa.bytes() {
            match byte {
                b'.' => after_point = true,
                b'0'..=b'9' => {
                    coefficient = coefficient * 10 + u128::from(byte - b'0');
                    if after_point {
                        fraction_digits += 1;
                    }
                }
                _ => {}
            }
        }
        let exponent: i32 = exponent.parse().unwrap_or(0);
        Decimal {
            negative,
            coefficient,
            exponent: exponent - fraction_digits,
            special: Special::Finite,
        }
    }

    /// Total order of two non-NaN decimals (mongod's `Decimal128::compareDecimals`).
    fn compare(&self, other: &Decimal) -> Ordering {
        let sign = |d: &Decimal| -> i8 {
            match (d.special, d.coefficient, d.negative) {
                (Special::Finite, 0, _) => 0,
                (_, _, true) => -1,
                _ => 1,
            }
        };
        let (a, b) = (sign(self), sign(other));
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let magnitude = match (self.special, other.special) {
            (Special::Infinity, Special::Infinity) => Ordering::Equal,
            (Special::Infinity, _) => Ordering::Greater,
            (_, Special::Infinity) => Ordering::Less,
            _ => compare_magnitudes(self, other),
        };
        if a < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

fn digit_count(mut value: u128) -> i32 {
    let mut digits = 0;
    while value > 0 {
        value /= 10;
        digits += 1;
    }
    digits
}

/// `|a|` against `|b|`, both finite and non-zero.
fn compare_magnitudes(a: &Decimal, b: &Decimal) -> Ordering {
    let (da, db) = (digit_count(a.coefficient), digit_count(b.coefficient));
    // the power of ten of the leading digit
    let (la, lb) = (a.exponent + da, b.exponent + db);
    if la != lb {
        return la.cmp(&lb);
    }
    // same leading power: pad the shorter coefficient (both have at most 34 digits, so
    // 10^34 * 10^34 never happens: the padding is at most 33 digits onto a 1-digit number)
    let (mut ca, mut cb) = (a.coefficient, b.coefficient);
    match da.cmp(&db) {
        Ordering::Less => ca *= 10u128.pow((db - da) as u32),
        Ordering::Greater => cb *= 10u128.pow((da - db) as u32),
        Ordering::Equal => {}
    }
    ca.cmp(&cb)
}

/// mongod's `compareLongToDouble`: exact, without converting the long to a double.
fn compare_long_to_double(long: i64, double: f64) -> Ordering {
    // 2^63 is the first double past i64::MAX
    if double >= 9_223_372_036_854_775_808.0 {
        return Ordering::Less;
    }
    if double < -9_223_372_036_854_775_808.0 {
        return Ordering::Greater;
    }
    let floor = double.floor();
    let floor_long = floor as i64; // exact: within range
    match long.cmp(&floor_long) {
        Ordering::Equal if double == floor => Ordering::Equal,
        Ordering::Equal => Ordering::Less,
        other => other,
    }
}

/// `a * b mod m` without overflow (`a, b < m < 2^127`).
fn mul_mod(mut a: u128, mut b: u128, m: u128) -> u128 {
    let mut result = 0u128;
    a %= m;
    while b > 0 {
        if b & 1 == 1 {
            result = add_mod(result, a, m);
        }
        a = add_mod(a, a, m);
        b >>= 1;
    }
    result
}

fn add_mod(a: u128, b: u128, m: u128) -> u128 {
    // a, b < m < 2^127: the sum does not overflow
    let sum = a + b;
    if sum >= m {
        sum - m
    } else {
        sum
    }
}

fn pow_mod(base: u128, mut exponent: u64, m: u128) -> u128 {
    if m == 1 {
        return 0;
    }
    let mut result = 1u128;
    let mut base = base % m;
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = mul_mod(result, base, m);
        }
        base = mul_mod(base, base, m);
        exponent >>= 1;
    }
    result
}

/// A small text buffer on the stack for formatting a double.
struct StackText {
    bytes: [u8; 64],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            bytes: [0; 64],
            len: 0,
        }
    }
}

impl StackText {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.bytes.len() {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn dec(text: &str) -> Number {
        Number::Decimal(Decimal::from_bson(&Decimal128::from_str(text).unwrap()))
    }

    #[test]
    fn numbers_of_every_type_compare_by_value() {
        use Ordering::*;
        let cases = [
            (Number::Integer(3), Number::Double(3.0), Equal),
            (Number::Integer(3), Number::Double(3.5), Less),
            (Number::Integer(-3), Number::Double(-3.5), Greater),
            (
                Number::Integer(i64::MAX),
                Number::Double(9_223_372_036_854_775_808.0),
                Less,
            ),
            (Number::Integer(5), dec("5.000"), Equal),
            (Number::Integer(5), dec("5.0001"), Less),
            (dec("1E+3"), Number::Integer(1000), Equal),
            (dec("-0"), Number::Integer(0), Equal),
            (dec("0.1"), Number::Double(0.1), Less), // 0.1 as a double is 0.1000000000000000055...
            (dec("Infinity"), Number::Double(1e308), Greater),
            (dec("-Infinity"), Number::Integer(i64::MIN), Less),
            (dec("12.5"), dec("125E-1"), Equal),
            (dec("12.5"), dec("1.26E1"), Less),
            // 34 digits: the largest coefficients decode whole
            (
                dec("1000000000000000000000000000000001"),
                Number::Integer(3),
                Greater,
            ),
            (
                dec("9999999999999999999999999999999999"),
                dec("1E+34"),
                Less,
            ),
        ];
        for (a, b, expected) in cases {
            assert_eq!(a.compare(b), Some(expected), "{a:?} vs {b:?}");
            assert_eq!(b.compare(a), Some(expected.reverse()), "{b:?} vs {a:?}");
        }
        assert_eq!(Number::Double(f64::NAN).compare(Number::Integer(1)), None);
        assert_eq!(dec("NaN").compare(Number::Integer(1)), None);
        assert!(dec("NaN").same(Number::Double(f64::NAN)));
    }

    #[test]
    fn multiples_are_exact_in_decimal() {
        assert!(Number::Integer(10).is_multiple_of(Number::Integer(5)));
        assert!(!Number::Integer(11).is_multiple_of(Number::Integer(5)));
        // a double is rounded to 15 digits first: 0.3 is a multiple of 0.1 for mongod
        assert!(Number::Double(0.3).is_multiple_of(Number::Double(0.1)));
        assert!(!Number::Double(0.35).is_multiple_of(Number::Double(0.1)));
        assert!(dec("7.50").is_multiple_of(dec("2.5")));
        assert!(!Number::Double(1e300).is_multiple_of(Number::Integer(7)));
        assert!(Number::Double(1e300).is_multiple_of(Number::Integer(5)));
        assert!(Number::Integer(0).is_multiple_of(Number::Double(0.7)));
        assert!(!Number::Double(f64::INFINITY).is_multiple_of(Number::Integer(1)));
        assert!(!Number::Double(f64::NAN).is_multiple_of(Number::Integer(1)));
        assert!(Number::Integer(-12).is_multiple_of(Number::Integer(4)));
    }
}
