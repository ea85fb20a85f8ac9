//! Fast, tolerant field extraction from one log line.
//!
//! We never build a DOM: a serde visitor walks the top-level object once, keeps the handful of
//! keys the index needs and skips everything else (still validating it as JSON). Duplicate keys:
//! the last one wins. A line nested deeper than [`MAX_NESTING`] is invalid JSON.
//!
//! That visitor defines what a line means. Most lines are read faster by a byte-level pass
//! (`fast`) that answers only when it is sure to agree with it, and hands it every other line.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::skip::Skip;

use super::coerce::TokenValue;
use super::profile::Profile;
use super::time::Timestamp;

mod fast;
mod memo;

pub use memo::LineMemo;

/// The deepest nesting a valid line may have, counting the top-level object as 1: `serde_json`'s
/// recursion limit, which applies to every value we read or `Skip` (but not to
/// `IgnoredAny`, which we therefore never use).
pub const MAX_NESTING: usize = 127;

/// Why a line is not an event. Such lines are skipped and counted, never fatal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineProblem {
    /// Empty or whitespace only. Counted apart from invalid lines.
    Blank,
    /// Not valid UTF-8.
    NotUtf8,
    /// Not valid JSON (or nested deeper than the parser's limit).
    NotJson,
    /// Valid JSON, but not an object.
    NotAnObject,
    /// Longer than the configured maximum line size; skipped without being buffered.
    TooLong,
}

impl LineProblem {
    /// A stable lowercase name, for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            LineProblem::Blank => "blank",
            LineProblem::NotUtf8 => "not_utf8",
            LineProblem::NotJson => "not_json",
            LineProblem::NotAnObject => "not_an_object",
            LineProblem::TooLong => "too_long",
        }
    }
}

/// What an event line is, under the profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Carries token usage; counts one API call.
    Token,
    /// Starts a new generation.
    Boundary,
    /// A session header (only possible at offset 0).
    Header,
    /// Anything else.
    Other,
}

/// A boundary's generation number, as found in the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum MoltCount {
    /// The key is absent (a legacy boundary): unverifiable.
    #[default]
    Missing,
    /// Present but not a JSON integer >= 0: unverifiable.
    Invalid,
    /// A JSON integer >= 0.
    Valid(u64),
}

impl MoltCount {
    /// The number, if the boundary carries a valid one.
    pub fn value(self) -> Option<u64> {
        match self {
            MoltCount::Valid(n) => Some(n),
            MoltCount::Missing | MoltCount::Invalid => None,
        }
    }
}

/// A field that may be absent, readable, or present but unreadable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Field<T> {
    /// The key is absent.
    #[default]
    Absent,
    /// The key is present and its value readable.
    Valid(T),
    /// The key is present but its value is not of the expected form.
    Invalid,
}

impl<T: Copy> Field<T> {
    /// The value, if readable.
    pub fn valid(self) -> Option<T> {
        match self {
            Field::Valid(v) => Some(v),
            Field::Absent | Field::Invalid => None,
        }
    }
}

/// The fields the index needs from one event line. Strings borrow from the line when possible.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventFields<'a> {
    /// `type` when it is a string, else `event` when it is a string.
    pub type_name: Option<Cow<'a, str>>,
    /// An explicit `seq` (a JSON integer >= 0).
    pub seq: Field<u64>,
    /// `ts` (seconds or ISO-8601), else `time` (milliseconds).
    pub time: Field<Timestamp>,
    /// The four token fields in profile order: input, output, cached, thinking.
    pub tokens: [TokenValue; 4],
    /// A boundary's generation number.
    pub molt_count: MoltCount,
    /// Who started a boundary; `None` means `"agent"`.
    pub initiator: Option<Cow<'a, str>>,
    /// A boundary's context size before the molt.
    pub before_tokens: TokenValue,
    /// A boundary's context size after the molt.
    pub after_tokens: TokenValue,
}

impl EventFields<'_> {
    /// Classifies the event under `profile`; `at_start` says whether the line is at offset 0.
    pub fn kind(&self, profile: &Profile, at_start: bool) -> EventKind {
        match self.type_name.as_deref() {
            Some(t) if t == profile.token_event => EventKind::Token,
            Some(t) if t == profile.boundary_event => EventKind::Boundary,
            Some(t) if at_start && t == profile.header_type => EventKind::Header,
            _ => EventKind::Other,
        }
    }

    /// The initiator with the default applied: `"agent"` when missing, not a string, or empty.
    pub fn initiator_or_default(&self) -> &str {
        match self.initiator.as_deref() {
            Some(s) if !s.is_empty() => s,
            _ => "agent",
        }
    }
}

/// A check of whole event lines beyond JSON validity, supplied by a higher layer (the session
/// layer checks the dsh envelope). The first line it rejects marks where the log stops being
/// clean ([`FoldState::first_break`](super::FoldState::first_break)).
pub trait LineValidator: Send + Sync + std::fmt::Debug {
    /// A name with a version, stored in the index: changing it forces a rebuild.
    fn name(&self) -> &str;
    /// Whether `line` (a valid JSON object) is acceptable.
    fn accepts(&self, line: &[u8]) -> bool;
}

/// The keys an extractor looks for, compiled from a [`Profile`] for fast matching.
#[derive(Clone, Debug)]
pub struct Extractor {
    profile: Profile,
    /// Candidate keys grouped by byte length, so most keys are dismissed by one comparison.
    /// Shared by clones, so a [`LineMemo`] can tell the extractor that filled it.
    by_len: std::sync::Arc<KeyTable>,
    validator: Option<std::sync::Arc<dyn LineValidator>>,
}

/// Candidate keys by byte length (see [`Extractor`]).
type KeyTable = Vec<Vec<(Box<[u8]>, Key)>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Type,
    Event,
    Ts,
    Time,
    Seq,
    Token(usize),
    MoltCount,
    Initiator,
    BeforeTokens,
    AfterTokens,
    Other,
}

impl Extractor {
    /// Compiles the key table for `profile`.
    pub fn new(profile: Profile) -> Extractor {
        let mut keys: Vec<(String, Key)> = vec![
            ("type".to_owned(), Key::Type),
            ("event".to_owned(), Key::Event),
            ("ts".to_owned(), Key::Ts),
            ("time".to_owned(), Key::Time),
            ("seq".to_owned(), Key::Seq),
            (profile.molt_count_field.clone(), Key::MoltCount),
            (profile.initiator_field.clone(), Key::Initiator),
            (profile.before_tokens_field.clone(), Key::BeforeTokens),
            (profile.after_tokens_field.clone(), Key::AfterTokens),
        ];
        for (i, name) in profile.token_fields.iter().enumerate() {
            keys.push((name.clone(), Key::Token(i)));
        }
        let mut by_len: KeyTable = Vec::new();
        for (name, key) in keys {
            let len = name.len();
            if by_len.len() <= len {
                by_len.resize_with(len + 1, Vec::new);
            }
            // The first mapping of a name wins, so a profile cannot shadow the envelope keys.
            if !by_len[len].iter().any(|(n, _)| **n == *name.as_bytes()) {
                by_len[len].push((name.into_bytes().into_boxed_slice(), key));
            }
        }
        Extractor {
            profile,
            by_len: std::sync::Arc::new(by_len),
            validator: None,
        }
    }

    /// Adds a line validator (see [`LineValidator`]).
    #[must_use]
    pub fn with_validator(
        mut self,
        validator: Option<std::sync::Arc<dyn LineValidator>>,
    ) -> Extractor {
        self.validator = validator;
        self
    }

    /// The line validator, if any.
    pub fn validator(&self) -> Option<&dyn LineValidator> {
        self.validator.as_deref()
    }

    /// The profile this extractor was compiled from.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    fn classify(&self, key: &[u8]) -> Key {
        self.by_len
            .get(key.len())
            // The first byte settles most mismatches without a call to memcmp.
            .and_then(|candidates| {
                candidates
                    .iter()
                    .find(|(name, _)| name.first() == key.first() && **name == *key)
            })
            .map_or(Key::Other, |(_, k)| *k)
    }

    /// Extracts the index fields from one line (without its `\n`).
    ///
    /// Most lines take a byte-level fast path (`fast`); any line it is not certain about is
    /// read by `serde_json`, which defines the answer.
    pub fn extract<'a>(&self, line: &'a [u8]) -> Result<EventFields<'a>, LineProblem> {
        if let Some(fields) = fast::extract(self, line, None) {
            return Ok(fields);
        }
        self.read_with_serde(line)
    }

    /// [`Extractor::extract`] for one of a sequence of lines: members that repeat the previous
    /// line's byte for byte, under keys the index ignores (a runtime's envelope), are compared
    /// instead of parsed again. The answer is the same as `extract`'s. A memo last used by
    /// another extractor (one not cloned from this one) is emptied first.
    pub fn extract_with_memo<'a>(
        &self,
        memo: &mut LineMemo,
        line: &'a [u8],
    ) -> Result<EventFields<'a>, LineProblem> {
        if let Some(fields) = fast::extract(self, line, Some(memo)) {
            return Ok(fields);
        }
        self.read_with_serde(line)
    }

    /// [`Extractor::extract`] without the fast path: every line is read by `serde_json`. The
    /// two always agree; this exists so tests and fuzz targets can check that they do.
    #[cfg(any(test, feature = "testing"))]
    pub fn extract_with_serde<'a>(&self, line: &'a [u8]) -> Result<EventFields<'a>, LineProblem> {
        self.read_with_serde(line)
    }

    /// The `serde_json` reading of a line, which defines the answer.
    fn read_with_serde<'a>(&self, line: &'a [u8]) -> Result<EventFields<'a>, LineProblem> {
        let text = std::str::from_utf8(line).map_err(|_| LineProblem::NotUtf8)?;
        self.extract_text_with_serde(text)
    }

    fn extract_text_with_serde<'a>(&self, text: &'a str) -> Result<EventFields<'a>, LineProblem> {
        if text.bytes().all(|b| b.is_ascii_whitespace()) {
            return Err(LineProblem::Blank);
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let mut raw = RawFields::default();
        let parsed = (&mut de)
            .deserialize_map(LineVisitor {
                extractor: self,
                raw: &mut raw,
            })
            .and_then(|()| de.end());
        match parsed {
            Ok(()) => Ok(raw.finish()),
            Err(e) if e.is_data() => Err(LineProblem::NotAnObject),
            Err(_) => Err(LineProblem::NotJson),
        }
    }
}

/// What the visitor collects; resolved into [`EventFields`] once the whole object is read.
#[derive(Default)]
struct RawFields<'a> {
    type_field: Option<StrValue<'a>>,
    event_field: Option<StrValue<'a>>,
    ts: Field<Timestamp>,
    time_ms: Field<Timestamp>,
    fields: EventFields<'a>,
}

impl<'a> RawFields<'a> {
    /// Reads the value of `key` into its slot; a later duplicate key overwrites an earlier one.
    fn read<R: ValueReader<'a>>(&mut self, key: Key, value: R) -> Result<(), R::Error> {
        match key {
            Key::Type => self.type_field = Some(value.read()?),
            Key::Event => self.event_field = Some(value.read()?),
            Key::Ts => self.ts = value.read::<SecondsValue>()?.0,
            Key::Time => self.time_ms = value.read::<MillisValue>()?.0,
            Key::Seq => {
                let count = value.read::<CountValue>()?.0;
                self.fields.seq = count.map_or(Field::Invalid, Field::Valid);
            }
            Key::Token(i) => {
                let token = value.read()?;
                if let Some(slot) = self.fields.tokens.get_mut(i) {
                    *slot = token;
                }
            }
            Key::MoltCount => {
                let count = value.read::<CountValue>()?.0;
                self.fields.molt_count = count.map_or(MoltCount::Invalid, MoltCount::Valid);
            }
            Key::Initiator => {
                self.fields.initiator = match value.read()? {
                    StrValue::Str(s) => Some(s),
                    StrValue::NotStr => None,
                }
            }
            Key::BeforeTokens => self.fields.before_tokens = value.read()?,
            Key::AfterTokens => self.fields.after_tokens = value.read()?,
            Key::Other => {
                value.read::<Skip>()?;
            }
        }
        Ok(())
    }

    fn finish(mut self) -> EventFields<'a> {
        self.fields.type_name = match (self.type_field, self.event_field) {
            (Some(StrValue::Str(t)), _) => Some(t),
            (_, Some(StrValue::Str(e))) => Some(e),
            _ => None,
        };
        // `ts` wins over `time`; an unreadable `ts` still falls back to a readable `time`.
        self.fields.time = match (self.ts, self.time_ms) {
            (Field::Valid(t), _) | (_, Field::Valid(t)) => Field::Valid(t),
            (Field::Invalid, _) | (_, Field::Invalid) => Field::Invalid,
            (Field::Absent, Field::Absent) => Field::Absent,
        };
        self.fields
    }
}

struct LineVisitor<'x, 'r, 'a> {
    extractor: &'x Extractor,
    raw: &'r mut RawFields<'a>,
}

impl<'de> Visitor<'de> for LineVisitor<'_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(KeySeed(self.extractor))? {
            self.raw.read(key, &mut map)?;
        }
        Ok(())
    }
}

/// Reads the one value that follows a key: from serde's map, or (on the fast path) from the
/// value's own bytes.
trait ValueReader<'de> {
    type Error;
    fn read<T: de::Deserialize<'de>>(self) -> Result<T, Self::Error>;
}

impl<'de, A: MapAccess<'de>> ValueReader<'de> for &mut A {
    type Error = A::Error;

    fn read<T: de::Deserialize<'de>>(self) -> Result<T, A::Error> {
        self.next_value()
    }
}

struct KeySeed<'x>(&'x Extractor);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, v: &str) -> Result<Key, E> {
        Ok(self.0.classify(v.as_bytes()))
    }
}

/// A value that we only want if it is a string.
enum StrValue<'a> {
    Str(Cow<'a, str>),
    NotStr,
}

impl<'de> de::Deserialize<'de> for StrValue<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyValue(|v: Scalar<'de>| match v {
            Scalar::Str(s) => StrValue::Str(s),
            _ => StrValue::NotStr,
        }))
    }
}

/// `ts`: epoch seconds as a number or numeric string, or an ISO-8601 string.
struct SecondsValue(Field<Timestamp>);

impl<'de> de::Deserialize<'de> for SecondsValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyValue(|v: Scalar<'_>| {
            SecondsValue(match v {
                Scalar::Str(s) => readable(Timestamp::parse(&s)),
                number => readable(number.number().and_then(Timestamp::from_seconds)),
            })
        }))
    }
}

/// `time`: epoch milliseconds as a number.
struct MillisValue(Field<Timestamp>);

impl<'de> de::Deserialize<'de> for MillisValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyValue(|v: Scalar<'_>| {
            MillisValue(readable(v.number().and_then(Timestamp::from_millis)))
        }))
    }
}

/// `seq`, `molt_count`: a JSON integer >= 0, or not.
struct CountValue(Option<u64>);

impl<'de> de::Deserialize<'de> for CountValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyValue(|v: Scalar<'_>| {
            CountValue(match v {
                Scalar::U64(n) => Some(n),
                _ => None,
            })
        }))
    }
}

fn readable(ts: Option<Timestamp>) -> Field<Timestamp> {
    ts.map_or(Field::Invalid, Field::Valid)
}

/// The shape of any JSON value, with compound values skipped.
enum Scalar<'a> {
    U64(u64),
    I64(i64),
    F64(f64),
    Str(Cow<'a, str>),
    Other,
}

impl Scalar<'_> {
    /// A number's value (none for a string or anything else).
    #[expect(
        clippy::cast_precision_loss,
        reason = "an integer past 2^53 is out of the timestamp range however it rounds"
    )]
    fn number(&self) -> Option<f64> {
        match *self {
            Scalar::U64(n) => Some(n as f64),
            Scalar::I64(n) => Some(n as f64),
            Scalar::F64(n) => Some(n),
            Scalar::Str(_) | Scalar::Other => None,
        }
    }
}

/// Accepts any JSON value, skipping arrays and objects, and maps it through `F`.
struct AnyValue<F>(F);

impl<'de, T, F: FnOnce(Scalar<'de>) -> T> Visitor<'de> for AnyValue<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_u64<E>(self, v: u64) -> Result<T, E> {
        Ok((self.0)(Scalar::U64(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<T, E> {
        Ok((self.0)(Scalar::I64(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<T, E> {
        Ok((self.0)(Scalar::F64(v)))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
        Ok((self.0)(Scalar::Str(Cow::Borrowed(v))))
    }

    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(Scalar::Str(Cow::Owned(v.to_owned()))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok((self.0)(Scalar::Other))
    }

    fn visit_unit<E>(self) -> Result<T, E> {
        Ok((self.0)(Scalar::Other))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok((self.0)(Scalar::Other))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok((self.0)(Scalar::Other))
    }
}

#[cfg(test)]
mod tests;
