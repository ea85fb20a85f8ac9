//! The byte-level fast path of [`Extractor::extract`].
//!
//! One pass over the line validates it as JSON and finds the top-level keys the index reads;
//! only those few values are handed on (plain numbers and strings straight to their type,
//! anything else to `serde_json` on its own bytes). Everything else is checked here, without
//! serde's per-value machinery.
//!
//! Strings are scanned eight bytes at a time as one `u64` (SWAR): a word's bytes that end or
//! interrupt a string's plain run (`"`, `\` and control bytes) are found with a few integer
//! operations, and the first is a `trailing_zeros` away. The same pass notes whether the line
//! has a non-ASCII byte: an all-ASCII line needs no UTF-8 check (wider SIMD compares gain
//! little on lingtai's short strings: docs/DECISIONS.md, "Not used: memmap2, fs4, wide, libc"). Positions travel as arguments and
//! results, not fields, so that they stay in registers along the walk's chain of dependent
//! steps, and lingtai's `": "` and `", "` separators are matched before any general
//! whitespace handling.
//!
//! The serde path stays the definition of what a line means. This path answers only when its
//! answer is certainly the same, and gives up (returns `None`) on anything it is not sure of:
//! any syntax error, invalid UTF-8, a key with an escape, a `\u` surrogate escape, a number
//! that might not fit an `f64`, nesting deeper than [`FAST_NESTING`]. Those lines are rare,
//! and the serde path reads them. The unit tests below, a property test and the
//! `extract_line` fuzz target check that the two paths agree on every line.

use serde::de::value::{BorrowedStrDeserializer, F64Deserializer, U64Deserializer};

use super::memo::LineMemo;
use super::{EventFields, Extractor, Key, RawFields, ValueReader};

/// Deeper lines go to the serde path (whose limit is [`super::MAX_NESTING`]).
const FAST_NESTING: usize = 64;

/// Numbers whose integer digits plus positive exponent stay under this are far from `f64`'s
/// overflow at about 1.8e308, so `serde_json` cannot reject them.
const SAFE_MAGNITUDE_DIGITS: usize = 300;

/// Extracts the fields of `line`, or `None` if the serde path must decide (which includes
/// every line that is not valid UTF-8). With a `memo`, members that repeat the previous line's
/// byte for byte are stepped over (see [`LineMemo`]), and a line read in full is remembered.
pub(super) fn extract<'a>(
    extractor: &Extractor,
    line: &'a [u8],
    mut memo: Option<&mut LineMemo>,
) -> Option<EventFields<'a>> {
    let mut cursor = Cursor::new(line);
    let mut raw = RawFields::default();
    let open = cursor.skip_whitespace(0);
    if cursor.byte(open)? != b'{' {
        return None;
    }
    if let Some(memo) = memo.as_deref_mut() {
        memo.begin(&extractor.by_len);
    }
    let mut at = cursor.skip_whitespace(open + 1);
    let mut close = at + 1;
    if cursor.byte(at)? != b'}' {
        let mut ordinal = 0;
        loop {
            if let Some(repeated) = memo
                .as_deref_mut()
                .and_then(|memo| memo.repeat(ordinal, line, at))
            {
                at = repeated.next;
                ordinal += repeated.count;
                continue;
            }
            let start = at;
            let (key_start, key_end, escaped, value_start) = cursor.key(at)?;
            if escaped {
                return None;
            }
            let key = extractor.classify(line.get(key_start..key_end)?);
            let (value_start, value_end, shape) = cursor.value(value_start, 1)?;
            if key != Key::Other {
                let value = ValueBytes {
                    bytes: line.get(value_start..value_end)?,
                    shape,
                };
                raw.read(key, value).ok()?;
            }
            // Python's `", "` first; else any whitespace around the comma.
            if line.get(value_end..)?.starts_with(b", ") {
                at = value_end + 2;
            } else {
                at = cursor.skip_whitespace(value_end);
                match cursor.byte(at)? {
                    b',' => at = cursor.skip_whitespace(at + 1),
                    b'}' => {
                        close = at + 1;
                        break;
                    }
                    _ => return None,
                }
            }
            if let Some(memo) = memo.as_deref_mut() {
                memo.walked(start, at, key);
            }
            ordinal += 1;
        }
    }
    if cursor.skip_whitespace(close) != line.len() {
        return None;
    }
    // Outside strings the cursor accepted only JSON syntax, which is ASCII, and it saw every
    // string byte: a line with no non-ASCII byte there is valid UTF-8.
    if cursor.saw_non_ascii() {
        std::str::from_utf8(line).ok()?;
    }
    if let Some(memo) = memo {
        memo.remember(line);
    }
    Some(raw.finish())
}

/// What the cursor saw of a value: enough to read the plain ones without `serde_json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A string; `escaped` says whether it holds escapes.
    Str { escaped: bool },
    /// An unsigned integer of at most [`PLAIN_INTEGER_DIGITS`] digits.
    Integer,
    /// Digits with one `.` inside, at most [`PLAIN_DECIMAL_DIGITS`] digits in all.
    Decimal,
    /// Any other number, a literal, an array or an object.
    Other,
}

/// One JSON value's bytes, already validated by the cursor.
struct ValueBytes<'a> {
    bytes: &'a [u8],
    shape: Shape,
}

/// Integers of at most this many digits always fit a `u64`.
const PLAIN_INTEGER_DIGITS: usize = 19;

/// Decimals of at most this many digits have a significand below 2^53 and a power of ten
/// below 1e22: both exact in an `f64`, so one division rounds correctly, which is what
/// `serde_json` computes for them and what `str::parse` gives for every input.
const PLAIN_DECIMAL_DIGITS: usize = 15;

/// The powers of ten a plain decimal divides by, all exact in an `f64`.
const POWERS_OF_TEN: [f64; PLAIN_DECIMAL_DIGITS + 1] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The digits of `bytes` (skipping a `.`) as one integer, and how many follow the `.`. Only
/// for plain numbers, whose at most 19 digits cannot overflow.
fn digits_value(bytes: &[u8]) -> (u64, usize) {
    let mut value = 0u64;
    let mut after_dot = None;
    for &b in bytes {
        if b == b'.' {
            after_dot = Some(0);
        } else {
            value = value
                .wrapping_mul(10)
                .wrapping_add(u64::from(b.wrapping_sub(b'0')));
            after_dot = after_dot.map(|n: usize| n + 1);
        }
    }
    (value, after_dot.unwrap_or(0))
}

impl<'a> ValueReader<'a> for ValueBytes<'a> {
    type Error = serde_json::Error;

    /// The commonest shapes, a short unsigned integer or decimal and a string without escapes,
    /// are handed to `T` directly, exactly as `serde_json` would hand them (`visit_u64`,
    /// `visit_f64`, `visit_borrowed_str`), without starting a JSON parser for a few bytes.
    /// Anything else is parsed by `serde_json`.
    fn read<T: serde::Deserialize<'a>>(self) -> Result<T, serde_json::Error> {
        match self.shape {
            Shape::Integer => {
                let (n, _) = digits_value(self.bytes);
                return T::deserialize(U64Deserializer::new(n));
            }
            Shape::Decimal => {
                let (significand, places) = digits_value(self.bytes);
                if let Some(&power) = POWERS_OF_TEN.get(places) {
                    // Both exact (significand < 10^15 < 2^53), so the quotient is the
                    // correctly rounded value of the decimal, as `str::parse` gives it.
                    #[expect(clippy::cast_precision_loss, reason = "exact: see above")]
                    let significand = significand as f64;
                    return T::deserialize(F64Deserializer::new(significand / power));
                }
            }
            Shape::Str { escaped: false } => {
                let content = self
                    .bytes
                    .get(1..self.bytes.len().saturating_sub(1))
                    .map(std::str::from_utf8);
                if let Some(Ok(plain)) = content {
                    return T::deserialize(BorrowedStrDeserializer::new(plain));
                }
            }
            Shape::Str { escaped: true } | Shape::Other => {}
        }
        // `from_str`, not `from_slice`: the serde path's own instantiation, so LTO keeps one
        // copy of serde_json's string scan, inlined (a second instantiation puts it out of line).
        match std::str::from_utf8(self.bytes) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => Err(serde::de::Error::custom("not UTF-8")),
        }
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

/// Walks a line. Positions are passed in and returned rather than kept here, so that they
/// stay in registers along the walk's one long chain of dependent steps.
struct Cursor<'a> {
    bytes: &'a [u8],
    /// The OR of every word of string bytes scanned: a high bit set means a non-ASCII byte.
    high: u64,
}

#[expect(
    clippy::inline_always,
    reason = "the per-byte steps are forced into the scanning loop, the cold paths kept out of it"
)]
impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, high: 0 }
    }

    /// Whether a string held a non-ASCII byte (or a byte beside one: a word may go past the
    /// string's end).
    fn saw_non_ascii(&self) -> bool {
        self.high & HIGHS != 0
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    /// Where the JSON whitespace (not the form feed that `is_ascii_whitespace` allows) that
    /// starts at `at` ends.
    #[inline]
    fn skip_whitespace(&self, mut at: usize) -> usize {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.byte(at) {
            at += 1;
        }
        at
    }

    /// Reads a string whose content starts at `start` (after its opening quote). Returns where
    /// the content ends (the closing quote) and whether it holds escapes.
    #[inline(always)]
    fn string(&mut self, start: usize) -> Option<(usize, bool)> {
        let mut at = start;
        let mut escaped = false;
        loop {
            let stop = self.next_stop(at)?;
            match self.byte(stop)? {
                b'"' => return Some((stop, escaped)),
                b'\\' => {
                    escaped = true;
                    at = self.escape(stop)?;
                }
                // A raw control byte: invalid JSON, which the serde path reports.
                _ => return None,
            }
        }
    }

    /// The position of the next `"`, `\` or control byte at or after `at`, eight bytes at a
    /// time; notes the high bits of the bytes it passes.
    #[inline(always)]
    fn next_stop(&mut self, mut at: usize) -> Option<usize> {
        while let Some(chunk) = self.bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
            let word = u64::from_le_bytes(*chunk);
            self.high |= word;
            let stops = string_stops(word);
            if stops != 0 {
                return Some(at + (stops.trailing_zeros() / 8) as usize);
            }
            at += 8;
        }
        for (i, &b) in self.bytes.get(at..)?.iter().enumerate() {
            if b == b'"' || b == b'\\' || b < 0x20 {
                return Some(at + i);
            }
            self.high |= u64::from(b);
        }
        None
    }

    /// Steps over the escape whose backslash is at `at`; returns where it ends.
    fn escape(&self, at: usize) -> Option<usize> {
        match self.byte(at + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(at + 2),
            b'u' => {
                let hex = self.bytes.get(at + 2..at + 6)?;
                let hex = std::str::from_utf8(hex).ok()?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let code = u32::from_str_radix(hex, 16).ok()?;
                // Surrogates must pair up; the serde path knows the rules.
                if (0xD800..=0xDFFF).contains(&code) {
                    return None;
                }
                Some(at + 6)
            }
            _ => None,
        }
    }

    /// Steps over the value at `at` (after any whitespace), validating it; `depth` counts the
    /// enclosing containers. Returns where the value starts and ends, and its shape.
    #[inline(always)]
    fn value(&mut self, at: usize, depth: usize) -> Option<(usize, usize, Shape)> {
        let end = match self.byte(at)? {
            b'"' => {
                let (end, escaped) = self.string(at + 1)?;
                return Some((at, end + 1, Shape::Str { escaped }));
            }
            b'-' | b'0'..=b'9' => {
                let (end, shape) = self.number(at)?;
                return Some((at, end, shape));
            }
            b'{' => self.object(at + 1, depth + 1),
            b'[' => self.array(at + 1, depth + 1),
            b't' => self.literal(at, b"true"),
            b'f' => self.literal(at, b"false"),
            b'n' => self.literal(at, b"null"),
            b' ' | b'\n' | b'\t' | b'\r' => return self.value_after_whitespace(at, depth),
            _ => None,
        };
        end.map(|end| (at, end, Shape::Other))
    }

    /// [`Cursor::value`] for a value after whitespace that starts at `at`.
    #[inline(never)]
    fn value_after_whitespace(&mut self, at: usize, depth: usize) -> Option<(usize, usize, Shape)> {
        let at = self.skip_whitespace(at);
        self.value(at, depth)
    }

    fn literal(&self, at: usize, word: &[u8]) -> Option<usize> {
        let found = self.bytes.get(at..at + word.len())?;
        (found == word).then_some(at + word.len())
    }

    /// An object whose opening brace is just before `at`; returns where it ends.
    #[inline(never)]
    fn object(&mut self, at: usize, depth: usize) -> Option<usize> {
        if depth > FAST_NESTING {
            return None;
        }
        self.members(at, b'}', |cursor, at| {
            let (_, _, _, value_start) = cursor.key(at)?;
            cursor.value(value_start, depth).map(|(_, end, _)| end)
        })
    }

    /// An object's key and its colon, from the key's opening quote at `at`: the key's content
    /// range, whether it holds escapes, and where its value starts.
    #[inline(always)]
    fn key(&mut self, at: usize) -> Option<(usize, usize, bool, usize)> {
        let at = match self.byte(at)? {
            b'"' => at,
            _ => self.skip_whitespace_before(at, b'"')?,
        };
        let (end, escaped) = self.string(at + 1)?;
        // Python's `": "` first, as lingtai writes it; else any whitespace around the colon.
        // Whitespace after it is left to `value`.
        let value = if self.bytes.get(end + 1..)?.starts_with(b": ") {
            end + 3
        } else {
            self.skip_whitespace_before(end + 1, b':')? + 1
        };
        Some((at + 1, end, escaped, value))
    }

    /// Where the whitespace from `at` ends, if `byte` follows it.
    #[inline(never)]
    fn skip_whitespace_before(&self, at: usize, byte: u8) -> Option<usize> {
        let at = self.skip_whitespace(at);
        (self.byte(at)? == byte).then_some(at)
    }

    /// An array whose opening bracket is just before `at`; returns where it ends.
    #[inline(never)]
    fn array(&mut self, at: usize, depth: usize) -> Option<usize> {
        if depth > FAST_NESTING {
            return None;
        }
        self.members(at, b']', |cursor, at| {
            cursor.value(at, depth).map(|(_, end, _)| end)
        })
    }

    /// The members of an object or array whose opening bracket is just before `at`: none, or
    /// `member`s separated by commas, then `close`. A member is given where it starts and
    /// returns where it ends; this returns where `close` ends.
    #[inline]
    fn members(
        &mut self,
        at: usize,
        close: u8,
        mut member: impl FnMut(&mut Self, usize) -> Option<usize>,
    ) -> Option<usize> {
        let mut at = self.skip_whitespace(at);
        if self.byte(at)? == close {
            return Some(at + 1);
        }
        loop {
            let end = member(self, at)?;
            // Python's `", "` first; else any whitespace around the comma. Whitespace after
            // it is left to `member` (`key` or `value`).
            if self.bytes.get(end..)?.starts_with(b", ") {
                at = end + 2;
                continue;
            }
            at = self.skip_whitespace(end);
            match self.byte(at)? {
                b',' => at = self.skip_whitespace(at + 1),
                byte if byte == close => return Some(at + 1),
                _ => return None,
            }
        }
    }

    /// The number that starts at `at`:
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, and only magnitudes well inside `f64`.
    /// Returns where it ends, and whether it is a plain [`Shape::Integer`] or
    /// [`Shape::Decimal`].
    #[inline(always)]
    fn number(&self, mut at: usize) -> Option<(usize, Shape)> {
        let negative = self.byte(at) == Some(b'-');
        if negative {
            at += 1;
        }
        let digits = |at: &mut usize| {
            let start = *at;
            while let Some(b'0'..=b'9') = self.byte(*at) {
                *at += 1;
            }
            *at - start
        };
        let integer_digits = match self.byte(at)? {
            b'0' => {
                at += 1;
                1
            }
            b'1'..=b'9' => digits(&mut at),
            _ => return None,
        };
        let mut fraction_digits = None;
        if self.byte(at) == Some(b'.') {
            at += 1;
            let count = digits(&mut at);
            if count == 0 {
                return None;
            }
            fraction_digits = Some(count);
        }
        let mut exponent = None;
        if let Some(b'e' | b'E') = self.byte(at) {
            at += 1;
            let negative = match self.byte(at) {
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
            let (value, _) = digits_value(self.bytes.get(start..at)?);
            exponent = Some(if negative {
                0
            } else {
                usize::try_from(value).ok()?
            });
        }
        if integer_digits + exponent.unwrap_or(0) >= SAFE_MAGNITUDE_DIGITS {
            return None;
        }
        let shape = match (negative, fraction_digits, exponent) {
            (false, None, None) if integer_digits <= PLAIN_INTEGER_DIGITS => Shape::Integer,
            (false, Some(places), None) if integer_digits + places <= PLAIN_DECIMAL_DIGITS => {
                Shape::Decimal
            }
            _ => Shape::Other,
        };
        Some((at, shape))
    }
}

#[cfg(test)]
mod tests;
