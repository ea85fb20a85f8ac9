//! Tolerant field types for reading transcript lines with serde: each accepts any JSON value
//! and says what it found, so a field of an unexpected type is a counted diagnostic for that
//! field instead of a parse failure for the whole line.
//!
//! Lines are parsed into small structs of these types; every other field is skipped without
//! being built (serde's `IgnoredAny`), which is what makes a full parse of the lines that can
//! matter cheap. Token counts are read by the one coercion rule ([`TokenValue`], docs/TOKENS.md,
//! "The coercion rule"); a cost by the same rule's idea of a number (a JSON number, or a plain
//! decimal string), without its truncation.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

pub(crate) use crate::event::TokenValue;
use crate::event::coerce::plain_decimal;

/// What a field holding a cost (a non-negative amount of money) held.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) enum Amount {
    /// The field was not there.
    #[default]
    Missing,
    /// JSON `null`.
    Null,
    /// A finite non-negative number.
    Exact(f64),
    /// A plain decimal string (`"0.25"`).
    Coerced(f64),
    /// Anything else.
    Invalid,
}

impl Amount {
    /// The value if there is one.
    pub(crate) fn known(self) -> Option<f64> {
        match self {
            Amount::Exact(x) | Amount::Coerced(x) => Some(x),
            _ => None,
        }
    }

    // Costs are f64 throughout; an integer above 2^53 rounds, as any JSON reader's would.
    #[allow(clippy::cast_precision_loss)]
    fn integer(v: i128) -> Amount {
        Amount::checked(v as f64, false)
    }

    fn from_text(text: &str) -> Amount {
        match plain_decimal(text).and_then(|_| text.parse::<f64>().ok()) {
            Some(x) => Amount::checked(x, true),
            None => Amount::Invalid,
        }
    }

    fn checked(x: f64, coerced: bool) -> Amount {
        match (x.is_finite() && x >= 0.0, coerced) {
            (true, false) => Amount::Exact(x),
            (true, true) => Amount::Coerced(x),
            (false, _) => Amount::Invalid,
        }
    }
}

/// A string field: `None` when absent, null or not a string (see [`Text::was_other`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum Text<'a> {
    /// Absent or null.
    #[default]
    None,
    /// A string.
    Str(Cow<'a, str>),
    /// Some other JSON value.
    Other,
}

impl<'a> Text<'a> {
    /// The string, if it is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Text::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The string if it is one and not empty.
    pub(crate) fn non_empty(&self) -> Option<&str> {
        self.as_str().filter(|s| !s.is_empty())
    }

    /// The string, if it is one, as it was read (borrowed from the line where it can be).
    pub(crate) fn into_cow(self) -> Option<Cow<'a, str>> {
        match self {
            Text::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the field held something other than a string or null.
    pub(crate) fn was_other(&self) -> bool {
        matches!(self, Text::Other)
    }

    /// Whether the field is exactly this string.
    pub(crate) fn is(&self, value: &str) -> bool {
        self.as_str() == Some(value)
    }
}

/// A boolean field: `true` only for JSON `true`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Flag(pub(crate) bool);

/// An object field read as `T`; anything else is remembered as what it was.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum Obj<T> {
    /// The field was not there.
    #[default]
    Missing,
    /// JSON `null`.
    Null,
    /// An object.
    Is(T),
    /// Some other JSON value.
    Other,
}

impl<T> Obj<T> {
    /// The object, if it is one.
    pub(crate) fn get(&self) -> Option<&T> {
        match self {
            Obj::Is(t) => Some(t),
            _ => None,
        }
    }
}

/// Implements the visitor methods shared by every tolerant type: each JSON kind maps to a
/// value through `$kind`, and containers are drained.
macro_rules! tolerant_visitor {
    ($visitor:ident, $out:ty, $expect:literal, |$v:ident| {
        bool => $bool:expr,
        u64 => $u64:expr,
        i64 => $i64:expr,
        f64 => $f64:expr,
        str => $str:expr,
        borrowed => $borrowed:expr,
        null => $null:expr,
        other => $other:expr $(,)?
    }) => {
        impl<'de> Visitor<'de> for $visitor {
            type Value = $out;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($expect)
            }
            fn visit_bool<E: de::Error>(self, $v: bool) -> Result<$out, E> {
                Ok($bool)
            }
            fn visit_u64<E: de::Error>(self, $v: u64) -> Result<$out, E> {
                Ok($u64)
            }
            fn visit_i64<E: de::Error>(self, $v: i64) -> Result<$out, E> {
                Ok($i64)
            }
            fn visit_f64<E: de::Error>(self, $v: f64) -> Result<$out, E> {
                Ok($f64)
            }
            fn visit_str<E: de::Error>(self, $v: &str) -> Result<$out, E> {
                Ok($str)
            }
            fn visit_borrowed_str<E: de::Error>(self, $v: &'de str) -> Result<$out, E> {
                Ok($borrowed)
            }
            fn visit_unit<E: de::Error>(self) -> Result<$out, E> {
                Ok($null)
            }
            fn visit_none<E: de::Error>(self) -> Result<$out, E> {
                Ok($null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$out, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok($other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$out, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok($other)
            }
        }
    };
}

struct AmountVisitor;
tolerant_visitor!(AmountVisitor, Amount, "an amount", |v| {
    bool => { let _ = v; Amount::Invalid },
    u64 => Amount::integer(i128::from(v)),
    i64 => Amount::integer(i128::from(v)),
    f64 => Amount::checked(v, false),
    str => Amount::from_text(v),
    borrowed => Amount::from_text(v),
    null => Amount::Null,
    other => Amount::Invalid,
});

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Amount, D::Error> {
        d.deserialize_any(AmountVisitor)
    }
}

struct TextVisitor;
tolerant_visitor!(TextVisitor, Text<'de>, "a string", |v| {
    bool => { let _ = v; Text::Other },
    u64 => { let _ = v; Text::Other },
    i64 => { let _ = v; Text::Other },
    f64 => { let _ = v; Text::Other },
    str => Text::Str(Cow::Owned(v.to_owned())),
    borrowed => Text::Str(Cow::Borrowed(v)),
    null => Text::None,
    other => Text::Other,
});

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text<'a>, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

struct FlagVisitor;
tolerant_visitor!(FlagVisitor, Flag, "a boolean", |v| {
    bool => Flag(v),
    u64 => { let _ = v; Flag(false) },
    i64 => { let _ = v; Flag(false) },
    f64 => { let _ = v; Flag(false) },
    str => { let _ = v; Flag(false) },
    borrowed => { let _ = v; Flag(false) },
    null => Flag(false),
    other => Flag(false),
});

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Flag, D::Error> {
        d.deserialize_any(FlagVisitor)
    }
}

struct ObjVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
    type Value = Obj<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Obj<T>, E> {
        Ok(Obj::Other)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Obj<T>, E> {
        Ok(Obj::Other)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Obj<T>, E> {
        Ok(Obj::Other)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Obj<T>, E> {
        Ok(Obj::Other)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Obj<T>, E> {
        Ok(Obj::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Obj<T>, E> {
        Ok(Obj::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Obj<T>, E> {
        Ok(Obj::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Obj<T>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Obj::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Obj::Is)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Obj<T>, D::Error> {
        d.deserialize_any(ObjVisitor(std::marker::PhantomData))
    }
}

/// Parses a line as a JSON object into `T` (whose fields are all tolerant), or `None` if the
/// line is not a JSON object (not JSON at all, not UTF-8, another JSON value, or a key
/// repeated among the fields `T` reads).
pub(crate) fn parse_line<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Option<T> {
    // serde_json skips the strings of fields it ignores without checking their UTF-8, so a
    // bad byte would make a line count or not depending on which field it fell in.
    let text = std::str::from_utf8(line).ok()?;
    match serde_json::from_str::<Obj<T>>(text) {
        Ok(Obj::Is(t)) => Some(t),
        _ => None,
    }
}

/// The quarter-hour of an ISO-8601 timestamp, as whole quarter-hours since the Unix epoch
/// (UTC), and its time in whole milliseconds since the epoch (as JavaScript's `Date` reads it).
/// Usage is bucketed by quarter-hour so that a report by local day can be made for any time
/// zone whose offset is a whole number of quarter-hours; the milliseconds make billing blocks
/// exact. `None` if the text is not a timestamp.
pub(crate) fn quarter_and_millis(text: &str) -> Option<(i64, i64)> {
    let ts: jiff::Timestamp = text.trim().parse().ok()?;
    Some((ts.as_second().div_euclid(900), ts.as_millisecond()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Default)]
    #[serde(default, bound(deserialize = "'de: 'a"))]
    struct Probe<'a> {
        s: Text<'a>,
        n: TokenValue,
        f: Flag,
        a: Amount,
        o: Obj<Inner>,
    }

    #[derive(serde::Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Inner {
        x: TokenValue,
    }

    #[test]
    fn every_kind_of_value_is_accepted_and_classified() {
        let p: Probe =
            parse_line(br#"{"s":"a\u0062","n":"12","f":true,"a":"0.5","o":{"x":3}}"#).unwrap();
        assert_eq!(p.s.as_str(), Some("ab"));
        assert_eq!(p.n, TokenValue::Truncated(12));
        assert!(p.f.0);
        assert_eq!(p.a, Amount::Coerced(0.5));
        assert_eq!(
            p.o,
            Obj::Is(Inner {
                x: TokenValue::Exact(3)
            })
        );

        let p: Probe =
            parse_line(br#"{"s":5,"n":-1,"f":"yes","a":-2,"o":[1,{"x":1}],"extra":{"deep":[1]}}"#)
                .unwrap();
        assert!(p.s.was_other());
        assert_eq!(p.n, TokenValue::Rejected);
        assert!(!p.f.0);
        assert_eq!(p.a, Amount::Invalid);
        assert_eq!(p.o, Obj::Other);

        let p: Probe = parse_line(br#"{"s":null,"n":null,"o":null}"#).unwrap();
        assert_eq!(p.s, Text::None);
        // The one rule: null counts 0 and is reported, as any other value that is not a count.
        assert_eq!(p.n, TokenValue::Rejected);
        assert_eq!(p.o, Obj::Null);
        let p: Probe = parse_line(b"{}").unwrap();
        assert_eq!(p.n, TokenValue::Missing);
        assert_eq!(p.o, Obj::Missing);

        // The same rule as an agent log's token fields (event::coerce).
        for (n, want) in [("12.0", 12), ("1e3", 1000), ("1.5", 1), ("\"7.9\"", 7)] {
            let line = format!(r#"{{"n":{n}}}"#);
            let p: Probe = parse_line(line.as_bytes()).unwrap();
            assert_eq!(p.n, TokenValue::Truncated(want), "{n}");
        }
        let p: Probe = parse_line(b"{\"n\":281474976710657}").unwrap();
        assert_eq!(p.n, TokenValue::Exact(281_474_976_710_657));
        for n in [
            "1e300",
            "9007199254740993",
            "\" 12\"",
            "\"1e3\"",
            "true",
            "{}",
        ] {
            let line = format!(r#"{{"n":{n}}}"#);
            let p: Probe = parse_line(line.as_bytes()).unwrap();
            assert_eq!(p.n, TokenValue::Rejected, "{n}");
        }
        for (a, want) in [
            ("\"0.25\"", Amount::Coerced(0.25)),
            ("\" 1\"", Amount::Invalid),
        ] {
            let line = format!(r#"{{"a":{a}}}"#);
            let p: Probe = parse_line(line.as_bytes()).unwrap();
            assert_eq!(p.a, want, "{a}");
        }
    }

    #[test]
    fn lines_that_are_not_objects_are_refused() {
        for line in [
            &b"[1]"[..],
            b"12",
            b"{\"s\":",
            b"not json",
            b"",
            b"{\"n\":1,\"n\":2}",
            // Not UTF-8, in a field the probe ignores and in one it reads.
            b"{\"n\":1,\"other\":\"a\xd6b\"}",
            b"{\"s\":\"a\xd6b\"}",
        ] {
            assert!(parse_line::<Probe>(line).is_none(), "{line:?}");
        }
    }

    #[test]
    fn timestamps_fall_in_quarter_hours() {
        let quarter_hour = |t| quarter_and_millis(t).map(|(q, _)| q);
        assert_eq!(quarter_hour("1970-01-01T00:14:59.999Z"), Some(0));
        assert_eq!(quarter_hour("1970-01-01T00:15:00Z"), Some(1));
        assert_eq!(quarter_hour("1969-12-31T23:59:59Z"), Some(-1));
        assert_eq!(quarter_hour("yesterday"), None);
        assert_eq!(
            quarter_and_millis("1970-01-01T00:14:59.9999Z"),
            Some((0, 899_999))
        );
    }
}
