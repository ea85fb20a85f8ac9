//! The byte-level fast path of [`Extractor::extract`].
//!
//! One pass over the line validates it as JSON and finds the top-level keys the index reads;
//! only those few values are handed to serde_json, each on its own bytes. Everything else is
//! checked here, without serde's per-value machinery: strings are scanned eight bytes at a time.
//!
//! The serde path stays the definition of what a line means. This path answers only when its
//! answer is certainly the same, and gives up (returns `None`) on anything it is not sure of:
//! any syntax error, a key with an escape, a `\u` surrogate escape, a number that might not fit
//! an `f64`, nesting deeper than [`FAST_NESTING`]. Those lines are rare, and the serde path
//! reads them. The unit tests below, a property test and the `extract_line` fuzz target check
//! that the two paths agree on every line.

use serde::de::value::{BorrowedStrDeserializer, F64Deserializer, U64Deserializer};

use super::{EventFields, Extractor, Key, RawFields, ValueReader};

/// Deeper lines go to the serde path (whose limit is [`super::MAX_NESTING`]).
const FAST_NESTING: usize = 64;

/// Numbers whose integer digits plus positive exponent stay under this are far from `f64`'s
/// overflow at about 1.8e308, so serde_json cannot reject them.
const SAFE_MAGNITUDE_DIGITS: usize = 300;

/// Extracts `text`'s fields, or `None` if the serde path must decide.
pub(super) fn extract<'a>(extractor: &Extractor, text: &'a str) -> Option<EventFields<'a>> {
    let mut cursor = Cursor {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let mut raw = RawFields::default();
    cursor.skip_whitespace();
    cursor.eat(b'{')?;
    cursor.members(b'}', |cursor| {
        let (key_start, key_end, escaped) = cursor.key()?;
        if escaped {
            return None;
        }
        let key = extractor.classify(text.get(key_start..key_end)?);
        let value_start = cursor.pos;
        let value_escaped = cursor.value(1)?;
        if key == Key::Other {
            return Some(());
        }
        let value = ValueBytes {
            text: text.get(value_start..cursor.pos)?,
            escaped: value_escaped,
        };
        raw.read(key, value).ok()
    })?;
    cursor.skip_whitespace();
    if cursor.pos != cursor.bytes.len() {
        return None;
    }
    Some(raw.finish())
}

/// One JSON value's bytes, already validated by the cursor.
struct ValueBytes<'a> {
    text: &'a str,
    /// Whether the value is a string with escapes.
    escaped: bool,
}

/// Integers of at most this many digits always fit a `u64`.
const PLAIN_INTEGER_DIGITS: usize = 19;

/// Decimals of at most this many digits have a significand below 2^53 and a power of ten
/// below 1e22: both exact in an `f64`, so one division rounds correctly, which is what
/// serde_json computes for them and what `str::parse` gives for every input.
const PLAIN_DECIMAL_DIGITS: usize = 15;

/// The shape of a plain number: an unsigned integer, or digits with one `.` inside.
enum PlainNumber {
    Integer,
    Decimal,
}

/// Whether `bytes` (a number the cursor validated) is plain enough to read without serde_json.
fn plain_number(bytes: &[u8]) -> Option<PlainNumber> {
    let mut dots = 0;
    for &b in bytes {
        match b {
            b'0'..=b'9' => {}
            b'.' => dots += 1,
            _ => return None,
        }
    }
    match dots {
        0 if bytes.len() <= PLAIN_INTEGER_DIGITS => Some(PlainNumber::Integer),
        1 if bytes.len() <= PLAIN_DECIMAL_DIGITS + 1 => Some(PlainNumber::Decimal),
        _ => None,
    }
}

impl<'a> ValueReader<'a> for ValueBytes<'a> {
    type Error = serde_json::Error;

    /// The commonest shapes, a short unsigned integer or decimal and a string without escapes,
    /// are handed to `T` directly, exactly as serde_json would hand them (`visit_u64`,
    /// `visit_f64`, `visit_borrowed_str`), without starting a JSON parser for a few bytes.
    /// Anything else is parsed by serde_json.
    fn read<T: serde::Deserialize<'a>>(self) -> Result<T, serde_json::Error> {
        // The cursor validated numbers: no leading zeros, digits on both sides of a dot.
        match plain_number(self.text.as_bytes()) {
            Some(PlainNumber::Integer) => {
                if let Ok(n) = self.text.parse::<u64>() {
                    return T::deserialize(U64Deserializer::new(n));
                }
            }
            Some(PlainNumber::Decimal) => {
                if let Ok(x) = self.text.parse::<f64>() {
                    return T::deserialize(F64Deserializer::new(x));
                }
            }
            None => {}
        }
        if !self.escaped
            && let Some(plain) = self
                .text
                .strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
        {
            return T::deserialize(BorrowedStrDeserializer::new(plain));
        }
        serde_json::from_str(self.text)
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is zero. Bits above the first zero byte may be
/// wrong (borrows), so only the lowest set bit is meaningful.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The high bit of each byte that ends or interrupts a string's plain run: `"`, `\` or a
/// control byte below 0x20. As for [`zero_bytes`], only the lowest set bit is meaningful.
fn string_stops(word: u64) -> u64 {
    zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
        | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// JSON whitespace only (not the form feed that `is_ascii_whitespace` allows).
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The position of the next `"`, `\` or control byte at or after `self.pos`.
    #[inline]
    fn next_string_stop(&self) -> Option<usize> {
        let mut at = self.pos;
        while let Some(chunk) = self.bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            let stops = string_stops(word);
            if stops != 0 {
                return Some(at + (stops.trailing_zeros() / 8) as usize);
            }
            at += 8;
        }
        let rest = self.bytes.get(at..)?;
        let found = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        Some(at + found)
    }

    /// Reads a string whose opening quote was just eaten. Returns the content's range and
    /// whether it holds escapes; the cursor ends after the closing quote.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.pos = self.next_string_stop()?;
            match self.peek()? {
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    return Some((start, end, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                // A raw control byte: invalid JSON, which the serde path reports.
                _ => return None,
            }
        }
    }

    /// Steps over one escape, starting at its backslash.
    fn escape(&mut self) -> Option<()> {
        match *self.bytes.get(self.pos + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.pos += 2;
                Some(())
            }
            b'u' => {
                let hex = self.bytes.get(self.pos + 2..self.pos + 6)?;
                let hex = std::str::from_utf8(hex).ok()?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let code = u32::from_str_radix(hex, 16).ok()?;
                // Surrogates must pair up; the serde path knows the rules.
                if (0xD800..=0xDFFF).contains(&code) {
                    return None;
                }
                self.pos += 6;
                Some(())
            }
            _ => None,
        }
    }

    /// Steps over any value, validating it; `depth` counts the enclosing containers. Says
    /// whether the value is a string with escapes.
    fn value(&mut self, depth: usize) -> Option<bool> {
        let plain = match self.peek()? {
            b'"' => {
                self.pos += 1;
                return self.string().map(|(_, _, escaped)| escaped);
            }
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        };
        plain.map(|()| false)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let found = self.bytes.get(self.pos..self.pos + word.len())?;
        (found == word).then(|| self.pos += word.len())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > FAST_NESTING {
            return None;
        }
        self.pos += 1;
        self.members(b'}', |cursor| {
            cursor.key()?;
            cursor.value(depth).map(drop)
        })
    }

    /// An object's key and its colon; returns what [`Cursor::string`] does for the key.
    fn key(&mut self) -> Option<(usize, usize, bool)> {
        self.eat(b'"')?;
        let key = self.string()?;
        self.skip_whitespace();
        self.eat(b':')?;
        self.skip_whitespace();
        Some(key)
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > FAST_NESTING {
            return None;
        }
        self.pos += 1;
        self.members(b']', |cursor| cursor.value(depth).map(drop))
    }

    /// The members of an object or array whose opening bracket was just eaten: none, or
    /// `member`s separated by commas, then `close`. The cursor ends after `close`.
    fn members(
        &mut self,
        close: u8,
        mut member: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.skip_whitespace();
        if self.peek()? == close {
            self.pos += 1;
            return Some(());
        }
        loop {
            member(self)?;
            self.skip_whitespace();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.skip_whitespace();
                }
                byte if byte == close => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, and only magnitudes well inside `f64`.
    fn number(&mut self) -> Option<()> {
        let mut at = self.pos;
        if self.bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        let digits = |at: &mut usize| {
            let start = *at;
            while let Some(b'0'..=b'9') = self.bytes.get(*at) {
                *at += 1;
            }
            *at - start
        };
        let integer_digits = match self.bytes.get(at)? {
            b'0' => {
                at += 1;
                1
            }
            b'1'..=b'9' => digits(&mut at),
            _ => return None,
        };
        if self.bytes.get(at) == Some(&b'.') {
            at += 1;
            if digits(&mut at) == 0 {
                return None;
            }
        }
        let mut exponent = 0;
        if let Some(b'e' | b'E') = self.bytes.get(at) {
            at += 1;
            let negative = match self.bytes.get(at) {
                Some(b'-') => {
                    at += 1;
                    true
                }
                Some(b'+') => {
                    at += 1;
                    false
                }
                _ => false,
            };
            let start = at;
            let count = digits(&mut at);
            if count == 0 || count > 3 {
                return None;
            }
            let value: usize = std::str::from_utf8(self.bytes.get(start..at)?)
                .ok()?
                .parse()
                .ok()?;
            if !negative {
                exponent = value;
            }
        }
        if integer_digits + exponent >= SAFE_MAGNITUDE_DIGITS {
            return None;
        }
        self.pos = at;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Profile;
    use proptest::prelude::{Just, Strategy, any, prop_oneof};

    fn both(line: &str) {
        let extractor = Extractor::new(Profile::lingtai());
        let serde = extractor.extract_with_serde(line.as_bytes());
        let fast = extract(&extractor, line);
        if let Some(fast) = &fast {
            assert_eq!(Ok(fast), serde.as_ref(), "{line:?}");
        }
        assert_eq!(extractor.extract(line.as_bytes()), serde, "{line:?}");
    }

    fn takes_fast_path(line: &str) -> bool {
        extract(&Extractor::new(Profile::lingtai()), line).is_some()
    }

    #[test]
    fn ordinary_lines_take_the_fast_path_and_agree() {
        for line in [
            r#"{"type": "llm_response", "ts": 1786000004.512, "kernel_runtime": {"version": "0.19.5", "list": [1, -2.5e-3, true, false, null, {}, []]}, "input_tokens": 48213, "output_tokens": "912", "thinking_tokens": 3.9, "cached_tokens": null}"#,
            r#"{"type":"psyche_molt","molt_count":4,"before_tokens":171234,"after_tokens":9120,"initiator":"system"}"#,
            r#"  {"event":"daemon_start","ts":"2026-08-08T09:00:00Z","note":"tab\t and \"quotes\" and \u00e9 and é"} "#,
            r#"{"type":"x","time":1786000000500,"seq":7,"seq":-1}"#,
            r#"{"type":"a","type":1,"event":"b"}"#,
            r#"{"type":"x","initiator":"\u0041gent","molt_count":0}"#,
            "{}",
            "{\"type\":\"x\"}\r",
            // Plain numbers and strings, read without serde_json, beside ones just past the limits.
            r#"{"ts":1786000005.962,"input_tokens":9067,"seq":0,"initiator":"agent"}"#,
            r#"{"ts":123456789012345.6,"time":12345678901234.5,"input_tokens":18446744073709551615}"#,
            r#"{"ts":0.000000000000001,"output_tokens":9999999999999999999,"molt_count":10000000000000000000}"#,
            r#"{"ts":0.1,"time":9007199254740993.0,"cached_tokens":"912","thinking_tokens":3.0}"#,
        ] {
            assert!(takes_fast_path(line), "{line}");
            both(line);
        }
    }

    #[test]
    fn doubtful_lines_fall_back_and_still_agree() {
        for line in [
            r#"{"typ\u0065":"llm_response"}"#,
            r#"{"a":"\ud83d\ude00"}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":1e400}"#,
            r#"{"a":1e299}"#,
            r#"{"a":12345e296}"#,
            r#"{"a":1e0001}"#,
            "{\"a\":\"\u{1}\"}",
            "{\"a\":1,}",
            "{\"a\":01}",
            "{\"a\":1.}",
            "{\"a\":-}",
            "{\"a\":tru}",
            "{\"a\" 1}",
            "{} {}",
            "[1]",
            "\u{c}{}",
            "",
            "  ",
            "{\"type\":",
        ] {
            assert!(!takes_fast_path(line), "{line}");
            both(line);
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert!(!takes_fast_path(&deep));
        both(&deep);
        let shallow = format!("{{\"a\":{}{}}}", "[".repeat(60), "]".repeat(60));
        assert!(takes_fast_path(&shallow));
        both(&shallow);
    }

    #[test]
    fn string_stops_are_found_in_every_lane() {
        for at in 0..20 {
            for stop in [b'"', b'\\', 0x1f, 0x00] {
                let mut bytes = vec![b'a'; 24];
                bytes.push(b'"');
                bytes[at] = stop;
                let cursor = Cursor {
                    bytes: &bytes,
                    pos: 0,
                };
                assert_eq!(cursor.next_string_stop(), Some(at), "{stop} at {at}");
            }
        }
        // Bytes that look close to a stop are not stops: 0x20, 0x7f, non-ASCII.
        let mut bytes = [0x20, 0x7f, 0xa2, 0xdc, 0x21, 0x5b, 0x5d, 0x23].repeat(3);
        bytes.push(b'"');
        let cursor = Cursor {
            bytes: &bytes,
            pos: 0,
        };
        assert_eq!(cursor.next_string_stop(), Some(24));
    }

    /// A JSON value as text, from pieces chosen to sit on the fast path's edges: escapes,
    /// surrogates, control bytes, number shapes near its limits, odd whitespace.
    fn json_value() -> impl Strategy<Value = String> + Clone {
        let string_piece = prop_oneof![
            60 => "[a-z ]{0,12}",
            3 => Just("\\\"".to_owned()),
            3 => Just("\\\\".to_owned()),
            3 => Just("\\n\\t\\/".to_owned()),
            3 => Just("\\u00e9".to_owned()),
            3 => Just("\\ud83d\\ude00".to_owned()),
            3 => Just("é€😀".to_owned()),
            1 => Just("\\ud800".to_owned()),
            1 => Just("\\udc00".to_owned()),
            1 => Just("\\x".to_owned()),
            1 => Just("\t".to_owned()),
            1 => Just("\u{1}".to_owned()),
        ];
        let string = proptest::collection::vec(string_piece, 0..4)
            .prop_map(|pieces| format!("\"{}\"", pieces.concat()));
        let number = prop_oneof![
            8 => any::<i64>().prop_map(|n| n.to_string()),
            8 => any::<u64>().prop_map(|n| n.to_string()),
            8 => any::<f64>().prop_map(|f| format!("{f:e}")),
            4 => (0u32..400, -400i32..400).prop_map(|(m, e)| format!("{m}e{e}")),
            2 => (1usize..330).prop_map(|n| "9".repeat(n)),
            2 => (1usize..330).prop_map(|n| format!("0.{}", "1".repeat(n))),
            // Plain decimals on both sides of `PLAIN_DECIMAL_DIGITS`, as timestamps look.
            8 => (any::<u64>(), 1usize..20, 0usize..20).prop_map(|(digits, whole, places)| {
                let digits = format!("{digits:020}");
                let whole = digits[..whole].trim_start_matches('0');
                let whole = if whole.is_empty() { "0" } else { whole };
                format!("{whole}.{}", &digits[20 - places.max(1)..])
            }),
            2 => Just("-0".to_owned()),
            1 => Just("01".to_owned()),
            1 => Just("1.".to_owned()),
            1 => Just("1e0005".to_owned()),
            1 => Just("-".to_owned()),
        ];
        let leaf = prop_oneof![
            4 => string.clone(),
            4 => number,
            1 => prop_oneof![
                6 => Just("true"), 6 => Just("false"), 6 => Just("null"), 1 => Just("nul"), 1 => Just("True")
            ]
            .prop_map(str::to_owned),
        ];
        leaf.prop_recursive(4, 32, 6, move |inner| {
            let key = prop_oneof![
                3 => prop_oneof![
                    Just("type"), Just("event"), Just("ts"), Just("time"), Just("seq"),
                    Just("input_tokens"), Just("output_tokens"), Just("cached_tokens"),
                    Just("thinking_tokens"), Just("molt_count"), Just("initiator"),
                    Just("before_tokens"), Just("after_tokens"), Just("other"),
                ]
                .prop_map(|k| format!("\"{k}\"")),
                1 => string.clone(),
            ];
            let ws = prop_oneof![5 => Just(""), 5 => Just(" "), 2 => Just("\t"), 2 => Just("\r\n"), 1 => Just("\u{c}")];
            prop_oneof![
                proptest::collection::vec((key, ws.clone(), inner.clone()), 0..6).prop_map(
                    |members| {
                        let body: Vec<String> = members
                            .into_iter()
                            .map(|(k, w, v)| format!("{k}{w}:{w}{v}"))
                            .collect();
                        format!("{{{}}}", body.join(", "))
                    }
                ),
                proptest::collection::vec(inner, 0..5)
                    .prop_map(|items| format!("[{}]", items.join(","))),
            ]
        })
    }

    /// A line: an object (the usual case) of such values under index keys and others.
    fn json_line() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("type"),
            Just("event"),
            Just("ts"),
            Just("time"),
            Just("seq"),
            Just("input_tokens"),
            Just("output_tokens"),
            Just("cached_tokens"),
            Just("thinking_tokens"),
            Just("molt_count"),
            Just("initiator"),
            Just("before_tokens"),
            Just("after_tokens"),
            Just("other"),
            Just("other"),
            Just("typ\\u0065"),
        ];
        let ws = prop_oneof![5 => Just(""), 5 => Just(" "), 2 => Just("\n"), 1 => Just("\u{c}")];
        prop_oneof![
            9 => (proptest::collection::vec((key, json_value()), 0..8), ws.clone(), ws).prop_map(
                |(members, lead, trail)| {
                    let body: Vec<String> =
                        members.into_iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{lead}{{{}}}{trail}", body.join(", "))
                }
            ),
            1 => json_value(),
        ]
    }

    #[test]
    fn a_fair_share_of_generated_lines_exercise_the_fast_path() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let extractor = Extractor::new(Profile::lingtai());
        let strategy = json_line();
        let fast = (0..1000)
            .filter(|_| {
                let line = strategy
                    .new_tree(&mut runner)
                    .map(|t| t.current())
                    .unwrap_or_default();
                extract(&extractor, &line).is_some()
            })
            .count();
        assert!(
            fast > 200,
            "only {fast} of 1000 generated lines took the fast path"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        /// Whatever the line, the fast path and the serde path give the same answer.
        #[test]
        fn the_fast_path_agrees_with_serde_on_any_line(
            value in json_line(),
            edit in proptest::option::weighted(0.3, (any::<proptest::sample::Index>(), any::<u8>())),
        ) {
            let mut line = value.into_bytes();
            if let Some((at, byte)) = edit
                && !line.is_empty()
            {
                let i = at.index(line.len());
                line[i] = byte;
            }
            let extractor = Extractor::new(Profile::lingtai());
            let fast = std::str::from_utf8(&line).ok().and_then(|text| extract(&extractor, text));
            let serde = extractor.extract_with_serde(&line);
            if let Some(fast) = fast {
                proptest::prop_assert_eq!(Ok(fast), serde.clone());
            }
            proptest::prop_assert_eq!(extractor.extract(&line), serde);
        }
    }
}
