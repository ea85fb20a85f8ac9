//! The fold: one pass over lines in file order that yields everything the O(1) answers need.
//!
//! The index build, the index catch-up and the full scan all run this same fold, so "the
//! latest boundary" and "the totals since it" have exactly one definition. File order (byte
//! offset) decides what is latest; timestamps never do.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::coerce::TokenValue;
use super::extract::{EventFields, EventKind, Extractor, Field, LineMemo, LineProblem, MoltCount};
use super::time::Timestamp;

/// How many invalid-line offsets a [`Diagnostics`] keeps (the index keeps all of them).
pub const INVALID_OFFSETS_KEPT: usize = 32;

/// Token sums and the number of token events (API calls).
///
/// Token sums are `u128`: each value is at most 2^53, so no log that fits on a disk can
/// overflow them, and every tier's sums agree exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Sum of `input_tokens` (which already includes cached tokens).
    pub input_tokens: u128,
    /// Sum of `output_tokens`.
    pub output_tokens: u128,
    /// Sum of `cached_tokens`.
    pub cached_tokens: u128,
    /// Sum of `thinking_tokens`.
    pub thinking_tokens: u128,
    /// Number of token events.
    pub api_calls: u64,
}

impl Totals {
    /// Adds one token event's values (input, output, cached, thinking) and counts one call.
    pub fn add_event(&mut self, tokens: &[TokenValue; 4]) {
        self.add_counts(&tokens.map(TokenValue::count));
    }

    /// Adds one token event's coerced counts (input, output, cached, thinking) and counts one
    /// call. Saturates: no log can reach the limits, but totals read back from a damaged index
    /// must not make an addition panic.
    pub fn add_counts(&mut self, counts: &[u64; 4]) {
        let [input, output, cached, thinking] = counts.map(u128::from);
        self.input_tokens = self.input_tokens.saturating_add(input);
        self.output_tokens = self.output_tokens.saturating_add(output);
        self.cached_tokens = self.cached_tokens.saturating_add(cached);
        self.thinking_tokens = self.thinking_tokens.saturating_add(thinking);
        self.api_calls = self.api_calls.saturating_add(1);
    }

    /// `self - earlier`, where `earlier` is a prefix of `self` (so nothing goes negative; a
    /// corrupt pair saturates at zero instead of panicking).
    #[must_use]
    pub fn since(&self, earlier: &Totals) -> Totals {
        Totals {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cached_tokens: self.cached_tokens.saturating_sub(earlier.cached_tokens),
            thinking_tokens: self.thinking_tokens.saturating_sub(earlier.thinking_tokens),
            api_calls: self.api_calls.saturating_sub(earlier.api_calls),
        }
    }

    /// `self + other`.
    #[must_use]
    pub fn plus(&self, other: &Totals) -> Totals {
        Totals {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_tokens: self.cached_tokens.saturating_add(other.cached_tokens),
            thinking_tokens: self.thinking_tokens.saturating_add(other.thinking_tokens),
            api_calls: self.api_calls.saturating_add(other.api_calls),
        }
    }
}

/// A generation boundary event as found in the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    /// Byte offset of the boundary line.
    pub offset: u64,
    /// Its timestamp, if readable.
    pub time: Option<Timestamp>,
    /// The generation number it claims (the count after the molt).
    pub molt_count: MoltCount,
    /// Who started it: `"agent"` when absent, otherwise e.g. `"system"`.
    pub initiator: String,
    /// Context size before the molt (coerced; 0 when absent).
    pub before_tokens: u64,
    /// Context size after the molt (coerced; 0 when absent).
    pub after_tokens: u64,
}

impl Boundary {
    /// Builds the boundary facts from an extracted boundary line.
    pub fn from_fields(offset: u64, fields: &EventFields<'_>) -> Boundary {
        Boundary {
            offset,
            time: fields.time.valid(),
            molt_count: fields.molt_count,
            initiator: fields.initiator_or_default().to_owned(),
            before_tokens: fields.before_tokens.count(),
            after_tokens: fields.after_tokens.count(),
        }
    }
}

/// A boundary together with where it sits in the fold: its 1-based ordinal in file order and
/// the totals of everything before it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationStart {
    /// 1 for the first boundary in the file, 2 for the second, ... (generation 0 is "before any
    /// boundary").
    pub ordinal: u64,
    /// The boundary event.
    pub boundary: Boundary,
    /// Totals of all token events before the boundary.
    pub totals_before: Totals,
}

/// What was odd about the lines folded so far. Nothing here is fatal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// Empty or whitespace-only lines.
    pub blank_lines: u64,
    /// Lines that are not JSON objects (including too-long and non-UTF-8 lines).
    pub invalid_lines: u64,
    /// Of `invalid_lines`, those longer than the maximum line size.
    pub too_long_lines: u64,
    /// Offsets of the first invalid lines (at most [`INVALID_OFFSETS_KEPT`]).
    pub invalid_offsets: Vec<u64>,
    /// Token values accepted after truncation (floats, decimal strings).
    pub token_values_truncated: u64,
    /// Token values present but unusable, so counted as 0: null, booleans, negative or too
    /// large numbers, other strings, arrays, objects. An absent field is not counted here: an
    /// event need not carry all four.
    pub token_values_zeroed: u64,
    /// `ts`/`time` values present but unreadable (NaN, out of range, garbage).
    pub invalid_timestamps: u64,
    /// `seq` values present but not a non-negative integer (the line ordinal is used).
    pub invalid_seqs: u64,
}

impl Diagnostics {
    /// Records an invalid line at `offset`.
    pub fn note_invalid(&mut self, offset: u64, problem: LineProblem) {
        if problem == LineProblem::Blank {
            self.blank_lines += 1;
            return;
        }
        self.invalid_lines += 1;
        if problem == LineProblem::TooLong {
            self.too_long_lines += 1;
        }
        if self.invalid_offsets.len() < INVALID_OFFSETS_KEPT {
            self.invalid_offsets.push(offset);
        }
    }

    /// Records how a token event's values were read.
    pub fn note_tokens(&mut self, tokens: &[TokenValue; 4]) {
        for token in tokens {
            match token {
                TokenValue::Exact(_) | TokenValue::Missing => {}
                TokenValue::Truncated(_) => self.token_values_truncated += 1,
                TokenValue::Rejected => self.token_values_zeroed += 1,
            }
        }
    }

    /// Records unreadable envelope fields of an event.
    pub fn note_envelope(&mut self, fields: &EventFields<'_>) {
        if fields.time == Field::Invalid {
            self.invalid_timestamps += 1;
        }
        if fields.seq == Field::Invalid {
            self.invalid_seqs += 1;
        }
    }
}

/// Everything known about a log after folding its lines up to `end`: the O(1) facts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldState {
    /// Byte offset just after the last folded line (always just after a `\n`).
    pub end: u64,
    /// Complete lines folded, of every kind.
    pub lines: u64,
    /// Event lines (valid JSON objects other than the header).
    pub events: u64,
    /// Whether the line at offset 0 is a session header.
    pub has_header: bool,
    /// Totals over all token events.
    pub totals: Totals,
    /// Number of boundaries.
    pub boundaries: u64,
    /// The latest boundary in file order.
    pub latest: Option<GenerationStart>,
    /// Odd lines and values.
    pub diagnostics: Diagnostics,
    /// Offset of the first line where the log stops being clean: a blank or invalid line, a
    /// line the extractor's [`LineValidator`](super::LineValidator) rejects, or, when the
    /// profile wants contiguous seqs, an event whose seq is not its position. Session logs
    /// end their committed region there.
    #[serde(default)]
    pub first_break: Option<u64>,
}

impl FoldState {
    /// Totals since the latest boundary (all totals when there is none).
    pub fn since_latest(&self) -> Totals {
        match &self.latest {
            Some(start) => self.totals.since(&start.totals_before),
            None => self.totals,
        }
    }
}

/// One folded event line, for callers that store per-event rows (the index).
#[derive(Debug)]
pub struct FoldedEvent<'a> {
    /// Byte offset of the line.
    pub offset: u64,
    /// Length of the line without its `\n`.
    pub len: u64,
    /// The explicit `seq`, else the line ordinal (0-based, not counting a header line).
    pub seq: u64,
    /// Whether `seq` came from the line.
    pub explicit_seq: bool,
    /// Timestamp, if readable.
    pub time: Option<Timestamp>,
    /// The event type (`type`, else `event`), if any.
    pub type_name: Option<Cow<'a, str>>,
    /// Token, boundary or other.
    pub kind: EventKind,
    /// The generation this event belongs to (0 before any boundary; a boundary belongs to the
    /// generation it starts).
    pub generation: u64,
    /// A token event's counts after coercion (input, output, cached, thinking); zeros for
    /// other events.
    pub tokens: [u64; 4],
}

/// What folding one line did.
#[derive(Debug)]
pub enum Folded<'a> {
    /// The line is not an event (blank or invalid); it was counted.
    Skipped(LineProblem),
    /// The line is the session header.
    Header,
    /// The line is an event.
    Event(FoldedEvent<'a>),
}

/// Folds lines, in file order, into a [`FoldState`].
#[derive(Clone, Debug)]
pub struct Folder {
    extractor: Extractor,
    /// The extractor's memo of the previous line (the folder reads lines in sequence).
    memo: LineMemo,
    state: FoldState,
}

impl Folder {
    /// Starts folding at `state` (use `FoldState::default()` for the start of a log).
    pub fn new(extractor: Extractor, state: FoldState) -> Folder {
        Folder {
            extractor,
            memo: LineMemo::new(),
            state,
        }
    }

    /// The state so far.
    pub fn state(&self) -> &FoldState {
        &self.state
    }

    /// Consumes the folder, returning its state.
    pub fn into_state(self) -> FoldState {
        self.state
    }

    /// The extractor (and so the profile) in use.
    pub fn extractor(&self) -> &Extractor {
        &self.extractor
    }

    /// Extracts the fields of `line`, the next of a sequence, with this folder's extractor
    /// and its memo of the line before ([`Extractor::extract_with_memo`]).
    pub fn extract<'a>(&mut self, line: &'a [u8]) -> Result<EventFields<'a>, LineProblem> {
        self.extractor.extract_with_memo(&mut self.memo, line)
    }

    /// Folds one complete line at `offset`; `line` excludes its `\n`.
    pub fn fold_line<'a>(&mut self, offset: u64, line: &'a [u8]) -> Folded<'a> {
        let extracted = self.extract(line);
        self.fold_extracted(offset, line, extracted)
    }

    /// Folds the line `line` at `offset` whose fields were already extracted (by this
    /// folder's extractor), so a writer that validated an event need not parse it twice.
    pub fn fold_extracted<'a>(
        &mut self,
        offset: u64,
        line: &[u8],
        extracted: Result<EventFields<'a>, LineProblem>,
    ) -> Folded<'a> {
        let ordinal = self.next_line(offset, line.len() as u64);
        let fields = match extracted {
            Ok(fields) => fields,
            Err(problem) => {
                self.state.diagnostics.note_invalid(offset, problem);
                self.state.first_break.get_or_insert(offset);
                return Folded::Skipped(problem);
            }
        };
        let kind = fields.kind(self.extractor.profile(), offset == 0);
        if kind == EventKind::Header {
            self.state.has_header = true;
            return Folded::Header;
        }
        if self.state.first_break.is_none() && !self.is_clean(&fields, line) {
            self.state.first_break = Some(offset);
        }
        let state = &mut self.state;
        state.events += 1;
        state.diagnostics.note_envelope(&fields);
        let mut tokens = [0; 4];
        match kind {
            EventKind::Token => {
                state.diagnostics.note_tokens(&fields.tokens);
                tokens = fields.tokens.map(TokenValue::count);
                state.totals.add_counts(&tokens);
            }
            EventKind::Boundary => {
                state.boundaries += 1;
                state.latest = Some(GenerationStart {
                    ordinal: state.boundaries,
                    boundary: Boundary::from_fields(offset, &fields),
                    totals_before: state.totals,
                });
            }
            EventKind::Header | EventKind::Other => {}
        }
        let implicit_seq = ordinal - u64::from(state.has_header);
        Folded::Event(FoldedEvent {
            offset,
            len: line.len() as u64,
            seq: fields.seq.valid().unwrap_or(implicit_seq),
            explicit_seq: fields.seq.valid().is_some(),
            time: fields.time.valid(),
            type_name: fields.type_name,
            kind,
            generation: state.boundaries,
            tokens,
        })
    }

    /// Folds a line that was longer than the maximum line size (never buffered, never parsed).
    pub fn fold_too_long(&mut self, offset: u64, len: u64) {
        self.next_line(offset, len);
        self.state
            .diagnostics
            .note_invalid(offset, LineProblem::TooLong);
        self.state.first_break.get_or_insert(offset);
    }

    /// Whether an event line keeps the log clean: its seq is its position (when the profile
    /// asks for that) and the validator accepts it. Only asked until the first break.
    fn is_clean(&self, fields: &EventFields<'_>, line: &[u8]) -> bool {
        let in_place = !self.extractor.profile().contiguous_seqs
            || fields.seq.valid() == Some(self.state.events);
        in_place && self.extractor.validator().is_none_or(|v| v.accepts(line))
    }

    /// Advances past one line; returns its 0-based ordinal.
    fn next_line(&mut self, offset: u64, len: u64) -> u64 {
        let ordinal = self.state.lines;
        self.state.lines += 1;
        self.state.end = offset + len + 1;
        ordinal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Profile;

    fn fold(lines: &[&str]) -> FoldState {
        let mut folder = Folder::new(Extractor::new(Profile::lingtai()), FoldState::default());
        let mut offset = 0;
        for line in lines {
            folder.fold_line(offset, line.as_bytes());
            offset += line.len() as u64 + 1;
        }
        folder.into_state()
    }

    #[test]
    fn since_latest_resets_at_each_boundary_in_file_order() {
        let state = fold(&[
            r#"{"type":"llm_response","ts":1,"input_tokens":500,"output_tokens":100,"thinking_tokens":10,"cached_tokens":300}"#,
            r#"{"type":"psyche_molt","ts":10,"molt_count":1}"#,
            r#"{"type":"llm_response","ts":5,"input_tokens":100,"output_tokens":1,"thinking_tokens":0,"cached_tokens":0}"#,
            r#"{"type":"llm_response","ts":11,"input_tokens":200,"output_tokens":1,"thinking_tokens":0,"cached_tokens":0}"#,
        ]);
        let since = state.since_latest();
        assert_eq!(since.api_calls, 2);
        assert_eq!(since.input_tokens, 300);
        assert_eq!(state.totals.input_tokens, 800);
        let latest = state.latest.unwrap();
        assert_eq!(latest.ordinal, 1);
        assert_eq!(latest.boundary.molt_count, MoltCount::Valid(1));
        assert_eq!(latest.boundary.initiator, "agent");
    }

    #[test]
    fn invalid_and_blank_lines_are_counted_with_offsets() {
        let state = fold(&["{", "", r#"{"type":"x"}"#, "nope"]);
        assert_eq!(state.diagnostics.invalid_lines, 2);
        assert_eq!(state.diagnostics.blank_lines, 1);
        assert_eq!(state.diagnostics.invalid_offsets, vec![0, 16]);
        assert_eq!(state.events, 1);
        assert_eq!(state.lines, 4);
        assert_eq!(state.end, 21);
    }

    #[test]
    fn token_diagnostics_follow_the_coercion_rule() {
        let state = fold(&[
            r#"{"type":"llm_response","input_tokens":"12.7","output_tokens":3.9,"cached_tokens":null}"#,
        ]);
        assert_eq!(state.totals.input_tokens, 12);
        assert_eq!(state.totals.output_tokens, 3);
        assert_eq!(state.diagnostics.token_values_truncated, 2);
        // The null is unusable; the absent thinking_tokens is not reported.
        assert_eq!(state.diagnostics.token_values_zeroed, 1);
    }

    #[derive(Debug)]
    struct NoRedTypes;

    impl crate::event::LineValidator for NoRedTypes {
        fn name(&self) -> &'static str {
            "no-red/1"
        }
        fn accepts(&self, line: &[u8]) -> bool {
            !line.windows(5).any(|w| w == b"\"red\"")
        }
    }

    fn first_break(profile: Profile, validator: bool, lines: &[&str]) -> Option<u64> {
        let extractor = Extractor::new(profile)
            .with_validator(validator.then(|| std::sync::Arc::new(NoRedTypes) as _));
        let mut folder = Folder::new(extractor, FoldState::default());
        let mut offset = 0;
        for line in lines {
            folder.fold_line(offset, line.as_bytes());
            offset += line.len() as u64 + 1;
        }
        folder.into_state().first_break
    }

    #[test]
    fn first_break_marks_where_a_log_stops_being_clean() {
        let header = r#"{"type":"session","id":"s"}"#;
        let seq = |n: u64, t: &str| format!(r#"{{"type":"{t}","seq":{n}}}"#);
        let clean = [header.to_owned(), seq(0, "a"), seq(1, "b"), seq(2, "a")];
        let refs: Vec<&str> = clean.iter().map(String::as_str).collect();
        assert_eq!(first_break(Profile::session(), true, &refs), None);
        // A seq out of place, under a profile that wants contiguous seqs.
        let gap = [header.to_owned(), seq(0, "a"), seq(2, "b"), seq(3, "a")];
        let refs: Vec<&str> = gap.iter().map(String::as_str).collect();
        let at = (header.len() + seq(0, "a").len() + 2) as u64;
        assert_eq!(first_break(Profile::session(), false, &refs), Some(at));
        assert_eq!(
            first_break(Profile::lingtai(), false, &refs),
            None,
            "lingtai logs need no seqs"
        );
        // A line the validator rejects, an invalid line, a blank line: the first one counts.
        let rejected = [
            header.to_owned(),
            seq(0, "a"),
            seq(1, "red"),
            "{".to_owned(),
            seq(3, "a"),
        ];
        let refs: Vec<&str> = rejected.iter().map(String::as_str).collect();
        assert_eq!(first_break(Profile::session(), true, &refs), Some(at));
        let blank = [header.to_owned(), seq(0, "a"), "  ".to_owned(), seq(1, "a")];
        let refs: Vec<&str> = blank.iter().map(String::as_str).collect();
        assert_eq!(first_break(Profile::session(), true, &refs), Some(at));
    }

    #[test]
    fn header_line_does_not_take_a_seq() {
        let mut folder = Folder::new(Extractor::new(Profile::lingtai()), FoldState::default());
        let header = br#"{"type":"session","id":"s"}"#;
        assert!(matches!(folder.fold_line(0, header), Folded::Header));
        let off = header.len() as u64 + 1;
        match folder.fold_line(off, br#"{"type":"user/message"}"#) {
            Folded::Event(e) => assert_eq!((e.seq, e.explicit_seq), (0, false)),
            other => panic!("unexpected {other:?}"),
        }
        // "session" anywhere else is an ordinary event.
        match folder.fold_line(off + 24, header) {
            Folded::Event(e) => assert_eq!(e.seq, 1),
            other => panic!("unexpected {other:?}"),
        }
    }
}
