//! Line transcripts (every format `usage` reads but `OpenCode`'s database, in `opencode`) as
//! export sources: one event row per complete line, with the line's own usage and message
//! keys; the generations and their deduplicated usage from the transcript's own index
//! (`docs/EXPORT.md`, "Transcripts").
//!
//! The index answers with the boundaries and per-generation tallies of exactly the bytes it
//! covers, and its running crc: the scan reads the same bytes and must reach the same crc, so
//! the event rows and the generation figures of one export describe one version of the file.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::error::ExportError;
use super::layout::utc_date;
use super::probe::subagent_parent;
use super::rows::{EventRow, ExportedGeneration, SessionRow, TranscriptUsage};
use super::scan::{Batch, Resume, ScanOptions, Scanned};
use super::source::Source;
use crate::event::{FoldState, Timestamp};
use crate::log::{Coverage, DEFAULT_MAX_LINE, Line, LineScanner, bytes_unchanged};
use crate::transcript::native::{self, Slot, SlotValues, native_slots};
use crate::transcript::readers::reader;
use crate::transcript::{Format, OpenOptions, Tally, Transcript, TranscriptError, session_of};

/// Reads a transcript through its index (caught up to its complete lines); `None` when it
/// holds no complete line yet.
pub fn open(path: &Path, index_dir: Option<&PathBuf>) -> Result<Option<Transcript>, ExportError> {
    let options = OpenOptions {
        index_dir: index_dir.cloned(),
        ..OpenOptions::default()
    };
    match crate::transcript::open(path, &options) {
        Ok(t) => Ok(Some(t)),
        Err(TranscriptError::Empty { .. }) => Ok(None),
        Err(source) => Err(ExportError::Transcript {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Why the event rows already exported cannot be continued from, if they cannot: the index's
/// boundaries before the exported end differ from the generations recorded then (another
/// build's reader rules).
pub fn resume_mismatch(
    recorded: &[ExportedGeneration],
    end: u64,
    answer: Option<&Transcript>,
) -> Option<String> {
    let now: Vec<u64> = answer
        .map(|t| &t.summary.boundaries[..])
        .unwrap_or_default()
        .iter()
        .map(|b| b.offset)
        .filter(|&o| o < end)
        .collect();
    let before: Vec<u64> = recorded.iter().filter_map(|g| g.boundary_offset).collect();
    (now != before).then(|| {
        "the transcript's boundaries before the exported end differ from those exported".to_owned()
    })
}

/// What one line says of itself, in the event row's terms.
#[derive(Default)]
struct Facts<'a> {
    type_name: Option<Cow<'a, str>>,
    ts: Option<i64>,
    message_id: Option<Cow<'a, str>>,
    request_id: Option<Cow<'a, str>>,
    cwd: Option<Cow<'a, str>>,
    tokens: [Option<u64>; 6],
    cost: Option<f64>,
}

/// A line's or a tally's figures in the columns' order: input, output, cached, thinking,
/// cache-write, total (docs/EXPORT.md, "Transcripts": each in the format's own terms, so
/// Codex's input includes its cached input).
fn columns(figures: &SlotValues) -> [Option<u64>; 6] {
    let get = |slot: Slot| figures.get(slot as usize).copied().flatten();
    [
        get(Slot::Input).or_else(|| get(Slot::InputWithCacheRead)),
        get(Slot::Output),
        get(Slot::CacheRead),
        get(Slot::Reasoning),
        get(Slot::CacheCreation),
        get(Slot::Total),
    ]
}

/// The line's own facts in `format`: its type, time, message keys and usage (not
/// deduplicated: a Claude Code message's streaming lines each carry theirs).
fn facts(format: Format, bytes: &[u8]) -> Facts<'_> {
    let line = reader(format).facts(bytes);
    Facts {
        ts: line
            .timestamp
            .as_deref()
            .and_then(Timestamp::parse)
            .map(Timestamp::micros),
        tokens: columns(&line.figures),
        type_name: line.kind,
        message_id: line.message_id,
        request_id: line.request_id,
        cwd: line.cwd,
        cost: line.cost,
    }
}

/// A generation's tally in the columns' order, as its format names its figures.
fn tally_columns(format: Format, tally: &Tally) -> [Option<u64>; 6] {
    columns(&native_slots(format, tally))
}

/// Writes the complete lines of a transcript after `resume`, up to what `answer` (its index,
/// just caught up) covers, as event rows; the generations carry the index's figures. Fails
/// with [`ExportError::Changed`] if the bytes read are not the bytes the index covers.
#[allow(clippy::too_many_lines)]
pub fn scan(
    source: &Source,
    log: &File,
    resume: Resume,
    answer: Option<&Transcript>,
    options: &ScanOptions<'_>,
    mut batch: Batch<'_>,
) -> Result<Scanned, ExportError> {
    let io = |e| ExportError::io("read", &source.log, e);
    let changed = || ExportError::Changed {
        path: source.log.clone(),
    };
    let start = resume.fold.end;
    let end = answer.map_or(0, |t| t.coverage.end);
    if end < start {
        return Err(changed());
    }
    let boundaries = answer.map_or(&[][..], |t| &t.summary.boundaries[..]);
    let mut next_boundary = boundaries.partition_point(|b| b.offset < start);
    let mut generations = resume.generations;
    let mut session = resume.session;
    let mut lines = resume.fold.lines;
    let mut scanner = LineScanner::new(log, start, end, DEFAULT_MAX_LINE, resume.crc);
    while let Some(line) = scanner.next_line().map_err(io)? {
        let (offset, bytes) = match line {
            Line::Complete { offset, bytes } => (offset, Some(bytes)),
            Line::TooLong { offset, .. } => (offset, None),
        };
        lines += 1;
        if generations.is_empty() {
            generations.push(ExportedGeneration {
                boundary_initiator: "boot".to_owned(),
                ..ExportedGeneration::default()
            });
        }
        let facts = match (answer, bytes) {
            (Some(t), Some(bytes)) => facts(t.format, bytes),
            _ => Facts::default(),
        };
        // A boundary line opens its generation.
        while let Some(b) = boundaries.get(next_boundary).filter(|b| b.offset <= offset) {
            generations.push(ExportedGeneration {
                generation: generations.len() as u64,
                boundary_offset: Some(b.offset),
                boundary_initiator: b.trigger.clone().unwrap_or_else(|| "unknown".to_owned()),
                boundary_ts: (b.offset == offset).then_some(facts.ts).flatten(),
                before_tokens: b.pre_tokens,
                transcript: Some(TranscriptUsage {
                    boundary_kind: Some(b.kind.name().to_owned()),
                    ..TranscriptUsage::default()
                }),
                ..ExportedGeneration::default()
            });
            next_boundary += 1;
        }
        let generation = generations.len().saturating_sub(1) as u64;
        if let Some(g) = generations.last_mut() {
            g.events = g.events.saturating_add(1);
            if g.first_ts.is_none() {
                g.first_ts = facts.ts;
            }
        }
        let row = session.get_or_insert_with(SessionRow::default);
        if row.created_at.is_none() {
            row.created_at = facts.ts;
        }
        if facts.ts.is_some() {
            row.last_ts = facts.ts;
        }
        if row.cwd.is_none() {
            row.cwd = facts
                .cwd
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(str::to_owned);
        }
        let date = facts.ts.and_then(utc_date);
        let event = EventRow {
            source_id: &source.id,
            host: options.host,
            offset,
            line: lines,
            seq: lines - 1,
            type_name: facts.type_name.as_deref(),
            ts: facts.ts,
            generation,
            molt_count: None,
            tokens: facts.tokens,
            cost: facts.cost,
            message_id: facts.message_id.as_deref(),
            request_id: facts.request_id.as_deref(),
            json: options.json_text.then_some(bytes).flatten(),
        };
        batch.push(date.as_ref(), &event, offset)?;
    }
    let parts = batch.close(end)?;
    let crc = scanner.crc();
    // The rows must be of the bytes the index's figures are of, and still the file's.
    if scanner.end() != end
        || answer.is_some_and(|t| t.coverage.crc != crc)
        || !bytes_unchanged(log, (start, resume.crc), end, crc).map_err(io)?
    {
        return Err(changed());
    }
    let coverage = Coverage::measure(log, end, crc)
        .map_err(io)?
        .ok_or_else(changed)?;
    if let Some(t) = answer {
        if generations.len() != t.summary.generations.len() {
            return Err(changed());
        }
        // Only a format that records costs has a cost column.
        let records_cost = native::fields(t.format)
            .iter()
            .any(|(_, slot)| *slot == Slot::Cost);
        for (row, tally) in generations.iter_mut().zip(&t.summary.generations) {
            row.api_calls = tally.messages;
            let usage = row.transcript.get_or_insert_with(TranscriptUsage::default);
            usage.tokens = tally_columns(t.format, tally);
            usage.cost = records_cost.then_some(tally.cost.dollars());
        }
        if let Some(row) = &mut session {
            let (_, project) = session_of(&t.path, t.format);
            row.format = Some(t.format.name().to_owned());
            row.project = Some(project);
            row.path = Some(t.path.display().to_string());
            if let Some(parent) = subagent_parent(&t.path) {
                row.parent_session = Some(parent);
                row.origin = Some("subagent".to_owned());
            }
        }
    }
    Ok(Scanned {
        coverage,
        fold: FoldState {
            end,
            lines,
            events: lines,
            boundaries: generations.len().saturating_sub(1) as u64,
            ..FoldState::default()
        },
        generations,
        session,
        parts,
        stopped_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_formats_line_usage_lands_in_its_columns() {
        let claude = br#"{"type":"assistant","timestamp":"2026-03-01T10:00:00Z","requestId":"r","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":3,"cache_read_input_tokens":4}}}"#;
        let f = facts(Format::ClaudeCode, claude);
        assert_eq!(f.tokens, [Some(1), Some(2), Some(4), None, Some(3), None]);
        assert_eq!(f.message_id.as_deref(), Some("m"));
        assert_eq!(f.request_id.as_deref(), Some("r"));
        assert_eq!(f.ts, Some(1_772_359_200_000_000));
        let codex = br#"{"timestamp":"2026-03-01T10:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":99},"last_token_usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":5,"reasoning_output_tokens":2,"total_tokens":15}}}}"#;
        let f = facts(Format::Codex, codex);
        assert_eq!(
            f.tokens,
            [Some(10), Some(5), Some(4), Some(2), None, Some(15)]
        );
        assert_eq!(f.type_name.as_deref(), Some("event_msg"));
        let pi = br#"{"type":"message","id":"e1","timestamp":"2026-03-01T10:00:00Z","message":{"role":"assistant","usage":{"input":7,"output":8,"cacheRead":9,"cacheWrite":1,"totalTokens":25,"cost":{"total":0.5}}}}"#;
        let f = facts(Format::Pi, pi);
        assert_eq!(
            f.tokens,
            [Some(7), Some(8), Some(9), None, Some(1), Some(25)]
        );
        assert_eq!(f.cost, Some(0.5));
        assert_eq!(f.message_id.as_deref(), Some("e1"));
        let session = br#"{"type":"session_meta","payload":{"cwd":"/w"}}"#;
        assert_eq!(facts(Format::Codex, session).cwd.as_deref(), Some("/w"));
        let broken = facts(Format::ClaudeCode, b"not json");
        assert_eq!(broken.tokens, [None; 6]);
        assert!(broken.type_name.is_none() && broken.ts.is_none());
    }

    #[test]
    fn tallies_land_in_the_same_columns_as_lines() {
        use crate::transcript::Usage;
        let t = Tally {
            usage: Usage {
                input: 1,
                output: 2,
                cache_creation: 3,
                cache_read: 4,
                reasoning: 1,
                cache_creation_1h: 0,
            },
            messages: 1,
            ..Tally::default()
        };
        assert_eq!(
            tally_columns(Format::ClaudeCode, &t),
            [Some(1), Some(2), Some(4), None, Some(3), Some(10)]
        );
        // Codex's own input includes its cached input.
        assert_eq!(
            tally_columns(Format::Codex, &t),
            [Some(5), Some(2), Some(4), Some(1), None, Some(10)]
        );
        assert_eq!(
            tally_columns(Format::Pi, &t),
            [Some(1), Some(2), Some(4), None, Some(3), Some(10)]
        );
    }
}
