//! The one coercion rule for token values, applied identically by every code path (index
//! build, reverse scan, full scan) and by every transcript reader (`crate::transcript`).
//!
//! * JSON integers in `0..=2^53` count as they are.
//! * Floats and plain decimal strings (`^[0-9]+(\.[0-9]+)?$`: no sign, no exponent, no
//!   whitespace) are truncated toward zero, if the result is in `0..=2^53`.
//! * An absent field counts 0 and is not reported: an event need not carry all four.
//! * Everything else present — `null`, booleans, negative or huge numbers, other strings,
//!   arrays, objects — counts 0 and is reported as a diagnostic.
//!
//! 2^53 is the largest integer every JSON reader (JavaScript included) holds exactly.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::skip::Skip;

/// The largest token value counted as is: 2^53.
pub const MAX_TOKEN_VALUE: u64 = 1 << 53;

/// How one token field of an event was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TokenValue {
    /// The field is absent: counts 0, not reported.
    #[default]
    Missing,
    /// A JSON integer in range: counts as is.
    Exact(u64),
    /// A float or a decimal string, truncated toward zero: counts the truncated value, reported.
    Truncated(u64),
    /// Any other value: counts 0, reported.
    Rejected,
}

impl TokenValue {
    /// The number this value contributes to a sum.
    pub fn count(self) -> u64 {
        self.known().unwrap_or(0)
    }

    /// The number, if the value is one (exact or truncated): for optional figures such as a
    /// boundary's context size, where 0 and unknown differ.
    pub fn known(self) -> Option<u64> {
        match self {
            TokenValue::Exact(v) | TokenValue::Truncated(v) => Some(v),
            TokenValue::Missing | TokenValue::Rejected => None,
        }
    }

    /// Applies the rule to a float (JSON numbers with a fraction or exponent, and integers too
    /// large for `u64`, arrive as floats).
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "2^53 is exact in f64, and the cast is of a whole number checked to be in 0..=2^53"
    )]
    pub fn from_f64(value: f64) -> TokenValue {
        // NaN fails both comparisons and is rejected; -0.0 is not negative and truncates to 0.
        if value >= 0.0 && value.trunc() <= MAX_TOKEN_VALUE as f64 {
            TokenValue::Truncated(value.trunc() as u64)
        } else {
            TokenValue::Rejected
        }
    }

    /// Applies the rule to a JSON string: only plain decimals count.
    pub fn from_str_value(text: &str) -> TokenValue {
        let Some(whole) = plain_decimal(text) else {
            return TokenValue::Rejected;
        };
        // Leading zeros are fine; u64 parsing fails only when the value is huge.
        match whole.parse::<u64>() {
            Ok(v) if v <= MAX_TOKEN_VALUE => TokenValue::Truncated(v),
            _ => TokenValue::Rejected,
        }
    }

    fn from_u64(value: u64) -> TokenValue {
        if value <= MAX_TOKEN_VALUE {
            TokenValue::Exact(value)
        } else {
            TokenValue::Rejected
        }
    }
}

/// The integer part of a plain decimal string (`^[0-9]+(\.[0-9]+)?$`: no sign, exponent or
/// whitespace), the only strings the rule reads as numbers; `None` for any other string.
pub(crate) fn plain_decimal(text: &str) -> Option<&str> {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (all_digits(whole) && fraction.is_none_or(all_digits)).then_some(whole)
}

impl<'de> de::Deserialize<'de> for TokenValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TokenValue, D::Error> {
        deserializer.deserialize_any(TokenValueVisitor)
    }
}

struct TokenValueVisitor;

impl<'de> Visitor<'de> for TokenValueVisitor {
    type Value = TokenValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_u64<E>(self, v: u64) -> Result<TokenValue, E> {
        Ok(TokenValue::from_u64(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<TokenValue, E> {
        Ok(u64::try_from(v).map_or(TokenValue::Rejected, TokenValue::from_u64))
    }

    fn visit_f64<E>(self, v: f64) -> Result<TokenValue, E> {
        Ok(TokenValue::from_f64(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<TokenValue, E> {
        Ok(TokenValue::from_str_value(v))
    }

    fn visit_bool<E>(self, _: bool) -> Result<TokenValue, E> {
        Ok(TokenValue::Rejected)
    }

    fn visit_unit<E>(self) -> Result<TokenValue, E> {
        Ok(TokenValue::Rejected)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TokenValue, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(TokenValue::Rejected)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TokenValue, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(TokenValue::Rejected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> TokenValue {
        serde_json::from_str::<TokenValue>(json).unwrap()
    }

    #[test]
    fn integers_in_range_count_as_is() {
        assert_eq!(read("0"), TokenValue::Exact(0));
        assert_eq!(read("48213"), TokenValue::Exact(48213));
        assert_eq!(read("9007199254740992"), TokenValue::Exact(MAX_TOKEN_VALUE));
    }

    #[test]
    fn floats_and_decimal_strings_truncate_toward_zero() {
        assert_eq!(read("12.7"), TokenValue::Truncated(12));
        assert_eq!(read("3.9"), TokenValue::Truncated(3));
        assert_eq!(read("1e3"), TokenValue::Truncated(1000));
        assert_eq!(read("-0.0"), TokenValue::Truncated(0));
        assert_eq!(read(r#""12.7""#), TokenValue::Truncated(12));
        assert_eq!(read(r#""12""#), TokenValue::Truncated(12));
        assert_eq!(read(r#""007""#), TokenValue::Truncated(7));
    }

    #[test]
    fn everything_else_counts_zero() {
        for json in [
            "null",
            "true",
            "false",
            "-1",
            "-0.5",
            "9007199254740993",
            "1e300",
            "18446744073709551616",
            r#""-3""#,
            r#""1e3""#,
            r#"" 12""#,
            r#""12 ""#,
            r#""12.""#,
            r#"".5""#,
            r#""+5""#,
            r#""""#,
            r#""twelve""#,
            r#""99999999999999999999""#,
            "[1]",
            r#"{"n":1}"#,
        ] {
            let value = read(json);
            assert_eq!(value, TokenValue::Rejected, "{json}");
            assert_eq!(value.count(), 0);
        }
    }

    #[test]
    fn missing_counts_zero() {
        assert_eq!(TokenValue::Missing.count(), 0);
    }
}
