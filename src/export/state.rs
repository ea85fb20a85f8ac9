//! The export state of one source: what of its log is exported (coverage and the fold state
//! there, so the next export continues where this one stopped), and which part files hold it.
//!
//! On disk (`OUT/_agentlog/<host>/<key>.state`): one line
//! `agentlog-export-state <version> <body length> <crc32 of the body, 8 hex digits>`, then the
//! body, a JSON object. Anything else (a torn write, a foreign file, a damaged or hand-edited
//! state) is refused with a [`StateError`]; the exporter then re-exports that source whole.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::layout::{Table, is_date};
use super::rows::{ExportedGeneration, SessionRow};
use super::source::SourceKind;
use crate::event::FoldState;
use crate::log::Coverage;
use crate::transcript::is_database;

/// The first word of a state file.
pub const STATE_MAGIC: &str = "agentlog-export-state";

/// The state format this build reads and writes. Version 2 added the transcript columns to
/// every table: parts listed by a version-1 state lack them, so such a source is exported anew.
pub const STATE_VERSION: u32 = 2;

/// The largest state file we read (a state lists one entry per part; compaction keeps that
/// small).
pub const MAX_STATE_BYTES: usize = 64 << 20;

/// Serials are written with 10 digits in file names: a source can have at most this many
/// parts over its life (compaction does not give serials back, but no export comes near).
pub const MAX_SERIAL: u64 = 9_999_999_999;

/// Takes the next serial; `None` once [`MAX_SERIAL`] is used up.
pub fn take_serial(next: &mut u64) -> Option<u64> {
    let serial = *next;
    if serial >= MAX_SERIAL {
        return None;
    }
    *next += 1;
    Some(serial)
}

/// One committed part file of a source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// The table it belongs to.
    pub table: Table,
    /// Its partition date (`None`: the partition of rows without a date).
    pub date: Option<String>,
    /// Its serial, unique among the source's parts; the file name carries it.
    pub serial: u64,
    /// Rows in the file.
    pub rows: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// The export state of one source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceState {
    /// The source's kind.
    pub kind: SourceKind,
    /// Its `source_id`.
    pub source_id: String,
    /// Its log (symbolic links resolved).
    pub log: PathBuf,
    /// What of the log is exported.
    pub coverage: Coverage,
    /// The fold state at `coverage.end`, to continue from.
    pub fold: FoldState,
    /// The rows of the generations table (agents and transcripts).
    pub generations: Vec<ExportedGeneration>,
    /// The row of the sessions table (sessions and transcripts).
    pub session: Option<SessionRow>,
    /// The committed parts, oldest first; each is revealed (renamed to its final name) after
    /// the state that lists it is written.
    pub parts: Vec<Part>,
    /// Parts replaced by this state, deleted after it is written.
    pub retired: Vec<Part>,
    /// The serial of the next part.
    pub next_serial: u64,
}

/// Why a state file cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// The first line is not a state header of this format.
    #[error("not an export state (bad header line)")]
    BadHeader,
    /// A state of another format version.
    #[error("export state version {0} (this build reads {STATE_VERSION})")]
    Version(u32),
    /// The body is shorter or longer than the header says (a torn write).
    #[error("the body is {found} bytes, the header says {expected}")]
    Length {
        /// Bytes announced.
        expected: usize,
        /// Bytes found.
        found: usize,
    },
    /// The body's crc32 differs from the header's.
    #[error("checksum mismatch")]
    Checksum,
    /// The body is not the JSON of a state.
    #[error("unreadable body: {0}")]
    Body(String),
    /// The body reads but contradicts itself.
    #[error("inconsistent state: {0}")]
    Inconsistent(&'static str),
}

impl SourceState {
    /// Encodes the state as its file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        // A state is plain data (strings, numbers, vectors): serializing it cannot fail, and an
        // empty body would be refused by `decode` rather than trusted.
        let body = serde_json::to_vec(self).unwrap_or_default();
        let mut out = format!(
            "{STATE_MAGIC} {STATE_VERSION} {} {:08x}\n",
            body.len(),
            crc32fast::hash(&body)
        )
        .into_bytes();
        out.extend_from_slice(&body);
        out
    }

    /// Decodes and checks a state file's bytes.
    pub fn decode(bytes: &[u8]) -> Result<SourceState, StateError> {
        let newline = memchr::memchr(b'\n', bytes).ok_or(StateError::BadHeader)?;
        let (header, body) = (&bytes[..newline], &bytes[newline + 1..]);
        let header = std::str::from_utf8(header).map_err(|_| StateError::BadHeader)?;
        let fields: Vec<&str> = header.split(' ').collect();
        let [magic, version, len, crc] = fields.as_slice() else {
            return Err(StateError::BadHeader);
        };
        let number = |s: &str| s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty();
        if *magic != STATE_MAGIC || !number(version) || !number(len) || crc.len() != 8 {
            return Err(StateError::BadHeader);
        }
        let version: u32 = version.parse().map_err(|_| StateError::BadHeader)?;
        if version != STATE_VERSION {
            return Err(StateError::Version(version));
        }
        let expected: usize = len.parse().map_err(|_| StateError::BadHeader)?;
        if expected != body.len() {
            return Err(StateError::Length {
                expected,
                found: body.len(),
            });
        }
        let crc = u32::from_str_radix(crc, 16).map_err(|_| StateError::BadHeader)?;
        if crc != crc32fast::hash(body) {
            return Err(StateError::Checksum);
        }
        let state: SourceState =
            serde_json::from_slice(body).map_err(|e| StateError::Body(e.to_string()))?;
        state.check()?;
        Ok(state)
    }

    /// The rules every state we write keeps.
    pub fn check(&self) -> Result<(), StateError> {
        let fail = |why| Err(StateError::Inconsistent(why));
        if self.source_id.is_empty() {
            return fail("empty source_id");
        }
        // An `OpenCode` session is read from a database, not by bytes: its state covers no
        // bytes and keeps its messages' checksum as the crc and their count as the lines.
        let database = self.kind == SourceKind::Transcript
            && is_database(&self.log)
            && self.coverage.end == 0
            && self.coverage.head.len == 0
            && self.coverage.tail.len == 0
            && self.coverage.tail.start == 0;
        if !self.coverage.is_well_formed() && !database {
            return fail("coverage windows do not match its end");
        }
        if self.fold.end != self.coverage.end {
            return fail("the fold ends elsewhere than the coverage");
        }
        // Counters the next export increments stay far from overflowing: each line is at
        // least one byte of a file that exists.
        let f = &self.fold;
        let d = &f.diagnostics;
        let lines_ok = (f.lines <= f.end || database)
            && f.events <= f.lines
            && f.boundaries <= f.events
            && d.blank_lines <= f.lines
            && d.invalid_lines <= f.lines
            && d.too_long_lines <= d.invalid_lines
            && d.invalid_timestamps <= f.events
            && d.invalid_seqs <= f.events
            && d.token_values_truncated <= f.events.saturating_mul(4)
            && d.token_values_zeroed <= f.events.saturating_mul(4);
        if !lines_ok {
            return fail("the fold's counts exceed its lines");
        }
        let generations_ok = self
            .generations
            .iter()
            .all(|g| g.events <= f.events && g.api_calls <= g.events);
        let expected_generations = match self.kind {
            SourceKind::Session => 0,
            // A transcript's generations start with its first line.
            SourceKind::Transcript if f.lines == 0 => 0,
            _ => f.boundaries + 1,
        };
        if !generations_ok || self.generations.len() as u64 != expected_generations {
            return fail("the generations do not match the fold");
        }
        if self.next_serial > MAX_SERIAL {
            return fail("next_serial is out of range");
        }
        let mut serials = std::collections::BTreeSet::new();
        for part in self.parts.iter().chain(&self.retired) {
            if part.serial >= self.next_serial {
                return fail("a part's serial is not below next_serial");
            }
            if !serials.insert(part.serial) {
                return fail("two parts share a serial");
            }
            if part.date.as_deref().is_some_and(|d| !is_date(d)) {
                return fail("a part's date is not YYYY-MM-DD");
            }
        }
        let event_rows = self
            .parts
            .iter()
            .filter(|p| p.table == Table::Events)
            .try_fold(0u64, |sum, p| sum.checked_add(p.rows));
        if event_rows != Some(self.fold.events) {
            return fail("the event parts do not hold the folded events");
        }
        let in_order = self
            .generations
            .iter()
            .enumerate()
            .all(|(i, g)| g.generation == i as u64);
        if !in_order {
            return fail("generations are not numbered 0, 1, 2, ...");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SourceState {
        SourceState {
            kind: SourceKind::Agent,
            source_id: "a".into(),
            log: "/x/logs/events.jsonl".into(),
            coverage: Coverage::default(),
            fold: FoldState::default(),
            generations: vec![ExportedGeneration::default()],
            session: None,
            parts: vec![Part {
                table: Table::Generations,
                date: Some("2026-01-02".into()),
                serial: 0,
                rows: 1,
                bytes: 10,
            }],
            retired: Vec::new(),
            next_serial: 1,
        }
    }

    #[test]
    fn states_round_trip_and_damage_is_refused() {
        let s = state();
        let bytes = s.encode();
        assert_eq!(SourceState::decode(&bytes), Ok(s.clone()));
        assert_eq!(
            SourceState::decode(&bytes[..bytes.len() - 1]),
            Err(StateError::Length {
                expected: bytes.len() - bytes.iter().position(|&b| b == b'\n').unwrap() - 1,
                found: bytes.len() - bytes.iter().position(|&b| b == b'\n').unwrap() - 2,
            })
        );
        let mut flipped = bytes.clone();
        let last = flipped.len() - 2;
        flipped[last] ^= 1;
        assert_eq!(SourceState::decode(&flipped), Err(StateError::Checksum));
        assert_eq!(SourceState::decode(b""), Err(StateError::BadHeader));
        let mut bad = s.clone();
        bad.next_serial = 0;
        assert!(matches!(
            SourceState::decode(&bad.encode()),
            Err(StateError::Inconsistent(_))
        ));
    }
}
