//! The persisted side read through agentlog's index: reads by seq and by type cost what they
//! return, not the log's length.
//!
//! Each session log has its own index (`events.index.redb` beside it), built with the session
//! profile: contiguous seqs and the dsh envelope as line validator, so the index records
//! where the committed region ends (`FoldState::first_break`). The rules are the JSONL
//! scanner's ([`scan_log`](super::source::scan_log)): the first unparsable, envelope-invalid or
//! out-of-place line ends the committed region, unless a `turn/end` follows it, which makes the
//! log corrupt. Here that costs two index lookups instead of a scan.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::envelope::parse_event;
use super::source::{JsonlSource, PersistedSource, SourceError, StoredSlice, stored_log_path};
use super::types::SessionEvent;
use crate::event::{LineValidator, Profile};
use crate::index::{Index, IndexError, IndexOptions};
use crate::log::{Line, LineScanner, LogError, LogPaths};

/// The event type whose presence after damage proves the damage is in acknowledged history.
const TURN_END: &str = "turn/end";

/// The dsh envelope rules, as the index's line validator.
#[derive(Debug)]
struct EnvelopeValidator;

impl LineValidator for EnvelopeValidator {
    fn name(&self) -> &str {
        "dsh-envelope/1"
    }

    fn accepts(&self, line: &[u8]) -> bool {
        serde_json::from_slice::<Value>(line)
            .ok()
            .is_some_and(|value| parse_event(&value).is_ok())
    }
}

/// How session logs are indexed. The store's writer and [`IndexedSource`] must agree on it,
/// or each would find the other's index built differently and rebuild it.
pub fn session_index_options() -> IndexOptions {
    IndexOptions {
        profile: Profile::session(),
        line_validator: Some(Arc::new(EnvelopeValidator)),
        ..IndexOptions::default()
    }
}

/// A [`PersistedSource`] over a store directory, reading through each session's index.
#[derive(Debug, Clone)]
pub struct IndexedSource {
    root: PathBuf,
    /// Listing and headers: they only read first lines.
    plain: JsonlSource,
    options: IndexOptions,
}

impl IndexedSource {
    /// A source over the store directory `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> IndexedSource {
        let root = root.into();
        IndexedSource {
            plain: JsonlSource::new(root.clone()),
            root,
            options: session_index_options(),
        }
    }

    /// Opens (and validates, catches up or builds) the index of one session and finds its
    /// committed region.
    fn committed(&self, session_id: &str) -> Result<Committed, SourceError> {
        let path = stored_log_path(&self.root, session_id)?;
        let paths = LogPaths::for_log_file(path);
        let index = Index::open(&paths, &self.options).map_err(|e| failed(session_id, e))?;
        let tail = read_tail(&index, &self.options).map_err(|e| failed(session_id, e))?;
        let mut committed = Committed {
            index,
            tail,
            end: u64::MAX,
            count: 0,
        };
        let state = committed.index.state().clone();
        match state.first_break {
            None => committed.count = state.events,
            Some(at) => {
                if committed
                    .turn_end_after(at)
                    .map_err(|e| failed(session_id, e))?
                {
                    return Err(SourceError::Corrupt(format!(
                        "damaged committed event at byte {at} of session \"{session_id}\": a later turn/end shows it was acknowledged"
                    )));
                }
                tracing::warn!(session = %session_id, offset = at, "treating the damaged tail after the last turn/end as torn");
                committed.end = at;
                committed.count = committed
                    .events_before(at)
                    .map_err(|e| failed(session_id, e))?;
            }
        }
        Ok(committed)
    }
}

/// A session's index and its committed region.
struct Committed {
    index: Index,
    /// (offset, line) of the complete lines after the index's watermark, folded in memory by a
    /// read-only open (another process is writing this session).
    tail: Vec<(u64, Vec<u8>)>,
    /// Where the committed region ends (the first break), or `u64::MAX`.
    end: u64,
    /// Committed events: they have seqs `0..count`.
    count: u64,
}

impl Committed {
    fn turn_end_after(&self, at: u64) -> Result<bool, IndexError> {
        if self
            .index
            .last_offset_of_type(TURN_END)?
            .is_some_and(|o| o > at)
        {
            return Ok(true);
        }
        Ok(self.tail.iter().any(|(offset, line)| {
            *offset > at
                && serde_json::from_slice::<Value>(line)
                    .ok()
                    .is_some_and(|v| v.get("type").and_then(Value::as_str) == Some(TURN_END))
        }))
    }

    /// How many events lie before `at`; in the clean region seq equals position, so it is the
    /// seq of the last one plus one.
    fn events_before(&self, at: u64) -> Result<u64, IndexError> {
        if let Some((_, line)) = self.tail.iter().rev().find(|(offset, _)| *offset < at) {
            return Ok(seq_of(line).map_or(0, |s| s + 1));
        }
        Ok(self
            .index
            .last_event_before(at)?
            .map_or(0, |(_, row)| row.seq + 1))
    }

    /// Committed events with `from <= seq <= to`.
    fn range(
        &self,
        session_id: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<SessionEvent>, SourceError> {
        let Some(last) = self.count.checked_sub(1) else {
            return Ok(Vec::new());
        };
        let to = to.min(last);
        if from > to {
            return Ok(Vec::new());
        }
        let mut events = Vec::new();
        let lines = self
            .index
            .lines_for_seqs(from, to)
            .map_err(|e| failed(session_id, e))?;
        for (_, offset, line) in lines {
            events.push(parse(session_id, offset, &line)?);
        }
        for (offset, line) in self.tail.iter().filter(|(o, _)| *o < self.end) {
            let event = parse(session_id, *offset, line)?;
            if (from..=to).contains(&event.seq) {
                events.push(event);
            }
        }
        events.sort_by_key(|e| e.seq);
        Ok(events)
    }

    /// Committed events whose type is one of `types`.
    fn of_types(&self, session_id: &str, types: &[&str]) -> Result<Vec<SessionEvent>, SourceError> {
        let mut events = Vec::new();
        for name in types {
            let lines = self
                .index
                .lines_of_type(name, self.end)
                .map_err(|e| failed(session_id, e))?;
            for (offset, line) in lines {
                events.push(parse(session_id, offset, &line)?);
            }
        }
        for (offset, line) in self.tail.iter().filter(|(o, _)| *o < self.end) {
            let event = parse(session_id, *offset, line)?;
            if types.contains(&event.event_type.as_str()) {
                events.push(event);
            }
        }
        events.sort_by_key(|e| e.seq);
        events.dedup_by_key(|e| e.seq);
        Ok(events)
    }
}

impl PersistedSource for IndexedSource {
    fn list_headers(&self) -> Result<Vec<super::types::SessionHeader>, SourceError> {
        self.plain.list_headers()
    }

    fn read_header(&self, session_id: &str) -> Result<super::types::SessionHeader, SourceError> {
        self.plain.read_header(session_id)
    }

    fn read_range(&self, session_id: &str, from: u64, to: u64) -> Result<StoredSlice, SourceError> {
        let header = self.plain.read_header(session_id)?;
        let events = self.committed(session_id)?.range(session_id, from, to)?;
        Ok(StoredSlice { header, events })
    }

    fn read_types(&self, session_id: &str, types: &[&str]) -> Result<StoredSlice, SourceError> {
        let header = self.plain.read_header(session_id)?;
        let events = self.committed(session_id)?.of_types(session_id, types)?;
        Ok(StoredSlice { header, events })
    }
}

/// The complete lines after the index's watermark (those a read-only open folded in memory).
fn read_tail(index: &Index, options: &IndexOptions) -> Result<Vec<(u64, Vec<u8>)>, IndexError> {
    let (start, end) = (index.watermark(), index.state().end);
    let mut lines = Vec::new();
    if start >= end {
        return Ok(lines);
    }
    let mut scanner = LineScanner::new(index.log_file(), start, end, options.max_line, 0);
    while let Some(line) = scanner
        .next_line()
        .map_err(|e| IndexError::Log(LogError::io("read", &index.paths().log, e)))?
    {
        if let Line::Complete { offset, bytes } = line {
            lines.push((offset, bytes.to_vec()));
        }
    }
    Ok(lines)
}

fn seq_of(line: &[u8]) -> Option<u64> {
    serde_json::from_slice::<Value>(line)
        .ok()?
        .get("seq")
        .and_then(Value::as_u64)
}

fn parse(session_id: &str, offset: u64, line: &[u8]) -> Result<SessionEvent, SourceError> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        SourceError::Corrupt(format!(
            "unparsable committed event at byte {offset} of session \"{session_id}\": {e}"
        ))
    })?;
    parse_event(&value).map_err(|v| {
        SourceError::Corrupt(format!(
            "invalid committed event at byte {offset} of session \"{session_id}\": {v}"
        ))
    })
}

fn failed(session_id: &str, error: IndexError) -> SourceError {
    match error {
        IndexError::Log(LogError::NotFound { .. }) => SourceError::NotFound,
        other => SourceError::Failed {
            context: format!("reading session \"{session_id}\" through its index"),
            cause: Box::new(other),
        },
    }
}
