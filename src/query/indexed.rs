//! The persisted side read through agentlog's index: reads by seq and by type cost what they
//! return, not the log's length.
//!
//! Each session log has its own index (`events.index.redb` beside it), built with the session
//! profile: contiguous seqs and the rule for one stored line as line validator, so the index
//! records where the log stops being clean (`FoldState::first_break`). The rules are the JSONL
//! scanner's ([`scan_log`](super::source::scan_log)): damage at the first break ends the
//! committed region, unless a `turn/end` follows it, which makes the log corrupt; an event that
//! breaks a read rule makes it corrupt wherever it stands. Here that costs two index lookups
//! and, when the log has a break, reading that one line, instead of a scan.
//!
//! A session's validated index and header are kept between calls ([`SessionCache`]) while
//! its log stays as it was: a window read then costs its rows, not an open and a validation.
//! "As it was" is the log's stamp (inode, length, mtime, ctime), taken before the validation;
//! a log changed within [`SETTLED`] of its stamp is not kept, because a change inside the
//! filesystem's timestamp granularity could leave the stamp equal.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::envelope::parse_event;
use super::error::SourceError;
use super::legacy::needs_prefix;
use super::source::{JsonlSource, PersistedSource, StoredSlice, read_stored_header, stored_log};
use super::stored::{LineFault, RegionJudge, parse_stored_line};
use super::types::{SessionEvent, SessionHeader};
use crate::event::{LineValidator, Profile};
use crate::index::{Index, IndexError, IndexOptions};
use crate::log::{Line, LineScanner, LogError, LogPaths, SETTLED, Stamp};

/// The event type whose presence after damage proves the damage is in acknowledged history.
const TURN_END: &str = "turn/end";

/// The rule for one stored event line ([`parse_stored_line`]) as a line validator; for the
/// index, also that the line can be read alone.
#[derive(Debug)]
struct EventLineValidator {
    /// Whether a legacy message, whose reading needs the events before it, is refused.
    read_alone: bool,
}

impl LineValidator for EventLineValidator {
    fn name(&self) -> &'static str {
        // The name is part of the index's profile fingerprint: a new rule needs a new name, so
        // that an index built under another rule is rebuilt, not believed.
        if self.read_alone {
            "dsh-envelope/3"
        } else {
            "dsh-envelope/2"
        }
    }

    fn accepts(&self, line: &[u8]) -> bool {
        parse_stored_line(line).is_ok_and(|event| !(self.read_alone && needs_prefix(&event)))
    }
}

/// How session logs are indexed. The store's writer and [`IndexedSource`] must agree on it,
/// or each would find the other's index built differently and rebuild it.
///
/// The index's first break is the first line that cannot be read alone: damage, an event that
/// breaks the rule for one line, or a legacy message (whose id may come from the events before
/// it). A log that holds a legacy message is then judged whole when it is opened.
pub fn session_index_options() -> IndexOptions {
    options(true)
}

/// How a session log's lines are folded where only its committed region matters (the export):
/// the first break is where the committed region may end, as the JSONL scanner judges it, and
/// a legacy message is a line like any other.
#[cfg(feature = "export")]
pub(crate) fn session_log_options() -> IndexOptions {
    options(false)
}

fn options(read_alone: bool) -> IndexOptions {
    IndexOptions {
        profile: Profile::session(),
        line_validator: Some(Arc::new(EventLineValidator { read_alone })),
        ..IndexOptions::default()
    }
}

/// How many sessions keep their validated index open between calls. Each holds two file
/// handles and up to the index's page cache, filled only by what is read.
const CACHED_SESSIONS: usize = 8;

/// A [`PersistedSource`] over a store directory, reading through each session's index.
/// Clones share one cache of validated sessions.
#[derive(Debug, Clone)]
pub struct IndexedSource {
    root: PathBuf,
    /// Listing and headers: they only read first lines.
    plain: JsonlSource,
    options: IndexOptions,
    cache: Arc<SessionCache>,
    /// [`SETTLED`], shorter in tests.
    settled: Duration,
}

impl IndexedSource {
    /// A source over the store directory `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> IndexedSource {
        let root = root.into();
        IndexedSource {
            plain: JsonlSource::new(root.clone()),
            root,
            options: session_index_options(),
            cache: Arc::default(),
            settled: SETTLED,
        }
    }

    /// The session's header and committed region, and whether they came from the cache:
    /// from it when the log's stamp is the one they were read under, else read and
    /// validated now (and kept if the log has settled).
    fn session(&self, session_id: &str) -> Result<(Arc<Cached>, bool), SourceError> {
        // Taken first: "settled" must hold at the moment of the stamp, not after a long open.
        let stamped_at = SystemTime::now();
        let (path, metadata) = stored_log(&self.root, session_id)?;
        let stamp = match metadata {
            Ok(metadata) => Stamp::of(&metadata),
            Err(e) => {
                self.cache.remove(session_id);
                return Err(SourceError::io(format!("reading {}", path.display()), e));
            }
        };
        if let Some(hit) = self.cache.get(session_id, &stamp) {
            return Ok((hit, true));
        }
        let header = read_stored_header(&path, session_id)?;
        let committed = self.committed(session_id, path)?;
        // The index read the file the stamp describes (not one that replaced it since).
        let same_file = committed
            .index
            .log_file()
            .metadata()
            .is_ok_and(|m| Stamp::of(&m).same_file(&stamp));
        let keep = same_file && stamp.settled_at(stamped_at, self.settled);
        let read = Arc::new(Cached {
            stamp,
            header,
            committed,
        });
        if keep {
            self.cache.put(session_id, Arc::clone(&read));
        }
        Ok((read, false))
    }

    /// Runs `read` on the session. A failure on a cached index is tried once more on a fresh
    /// open: the index may have been damaged since, and an open validates (and rebuilds) it.
    fn with_session<T>(
        &self,
        session_id: &str,
        read: impl Fn(&Cached) -> Result<T, SourceError>,
    ) -> Result<T, SourceError> {
        let (session, cached) = self.session(session_id)?;
        match read(&session) {
            Err(e) if cached => {
                tracing::debug!(session = %session_id, error = %e, "a kept session index failed; opening it again");
                self.cache.remove(session_id);
                let (fresh, _) = self.session(session_id)?;
                read(&fresh)
            }
            result => result,
        }
    }

    /// Opens (and validates, catches up or builds) the index of one session and finds its
    /// committed region.
    fn committed(&self, session_id: &str, path: PathBuf) -> Result<Committed, SourceError> {
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
                let fault = committed.fault_at(at).map_err(|e| failed(session_id, e))?;
                if let BreakFault::Legacy = fault {
                    (committed.count, committed.end) =
                        committed.judge_whole(session_id, self.options.max_line)?;
                    return Ok(committed);
                }
                let acknowledged = committed
                    .turn_end_after(at)
                    .map_err(|e| failed(session_id, e))?;
                if acknowledged || !fault.is_damage() {
                    return Err(fault.refusal(session_id, at));
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

/// A session as read under one stamp of its log.
struct Cached {
    stamp: Stamp,
    header: SessionHeader,
    committed: Committed,
}

/// The most recently used sessions' [`Cached`] reads, newest first.
#[derive(Default)]
struct SessionCache {
    entries: Mutex<VecDeque<(String, Arc<Cached>)>>,
}

impl std::fmt::Debug for SessionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.lock();
        f.debug_list()
            .entries(entries.iter().map(|(id, _)| id))
            .finish()
    }
}

impl SessionCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(String, Arc<Cached>)>> {
        // Every change is one whole insertion or removal.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The session's read, if it was read under `stamp`; a read under another is dropped.
    fn get(&self, session_id: &str, stamp: &Stamp) -> Option<Arc<Cached>> {
        let mut entries = self.lock();
        let at = entries.iter().position(|(id, _)| id == session_id)?;
        let (id, cached) = entries.remove(at)?;
        if cached.stamp != *stamp {
            return None;
        }
        entries.push_front((id, Arc::clone(&cached)));
        Some(cached)
    }

    fn put(&self, session_id: &str, cached: Arc<Cached>) {
        let mut entries = self.lock();
        entries.retain(|(id, _)| id != session_id);
        entries.push_front((session_id.to_owned(), cached));
        entries.truncate(CACHED_SESSIONS);
    }

    fn remove(&self, session_id: &str) {
        self.lock().retain(|(id, _)| id != session_id);
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

    /// What is wrong with the line at the first break `at`, read back from the log (one line).
    fn fault_at(&self, at: u64) -> Result<BreakFault, IndexError> {
        let line = match self.tail.iter().find(|(offset, _)| *offset == at) {
            Some((_, line)) => Some(line.clone()),
            None => self.index.line_at(at)?,
        };
        Ok(match line.map(|line| parse_stored_line(&line)) {
            None => BreakFault::NotAnEvent,
            Some(Err(fault)) => BreakFault::Line(fault),
            Some(Ok(event)) if needs_prefix(&event) => BreakFault::Legacy,
            Some(Ok(event)) => BreakFault::OutOfPlace(event.seq),
        })
    }

    /// The committed region of a log that holds a legacy message, judged by reading every line
    /// the index covers in order ([`RegionJudge`], as the JSONL scanner does): how many events
    /// it holds and where it ends. Only such logs pay for it, once per state of the file kept.
    fn judge_whole(&self, session_id: &str, max_line: usize) -> Result<(u64, u64), SourceError> {
        let (log, path) = (self.index.log_file(), &self.index.paths().log);
        let read_err = |e| failed(session_id, IndexError::Log(LogError::io("read", path, e)));
        let mut scanner = LineScanner::new(log, 0, self.index.state().end, max_line, 0);
        let mut judge: Option<RegionJudge> = None;
        while let Some(line) = scanner.next_line().map_err(read_err)? {
            let (offset, len, bytes) = match line {
                Line::Complete { offset, bytes } => (offset, bytes.len() as u64, Some(bytes)),
                Line::TooLong { offset, len } => (offset, len, None),
            };
            match &mut judge {
                // The header line, read and checked before: the events start after it.
                None => judge = Some(RegionJudge::new(session_id, offset + len + 1)),
                Some(judge) => {
                    judge.line(offset, bytes)?;
                }
            }
        }
        Ok(judge.map_or((0, 0), RegionJudge::finish))
    }

    /// The event types of the index (and of the lines after its watermark), or `None` when there
    /// are so many that listing them one id at a time would cost more than reading the log.
    fn type_names(&self) -> Option<Vec<String>> {
        // Ids are given out from 0 upwards; the index only looks a name up by id linearly.
        const MOST_LISTED: u32 = 1024;
        let mut names: Vec<String> = (0..=MOST_LISTED)
            .map_while(|id| self.index.type_name(id).map(str::to_owned))
            .collect();
        if names.len() > MOST_LISTED as usize {
            return None;
        }
        for (_, line) in &self.tail {
            if let Some(name) = type_of(line) {
                names.push(name);
            }
        }
        names.sort_unstable();
        names.dedup();
        Some(names)
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

    fn read_header(&self, session_id: &str) -> Result<SessionHeader, SourceError> {
        let (path, metadata) = stored_log(&self.root, session_id)?;
        let kept = metadata
            .ok()
            .and_then(|metadata| self.cache.get(session_id, &Stamp::of(&metadata)));
        match kept {
            Some(cached) => Ok(cached.header.clone()),
            None => read_stored_header(&path, session_id),
        }
    }

    fn read_range(&self, session_id: &str, from: u64, to: u64) -> Result<StoredSlice, SourceError> {
        self.with_session(session_id, |session| {
            Ok(StoredSlice {
                header: session.header.clone(),
                events: session.committed.range(session_id, from, to)?,
            })
        })
    }

    fn read_types(&self, session_id: &str, types: &[&str]) -> Result<StoredSlice, SourceError> {
        self.with_session(session_id, |session| {
            Ok(StoredSlice {
                header: session.header.clone(),
                events: session.committed.of_types(session_id, types)?,
            })
        })
    }

    fn event_types(&self, session_id: &str) -> Result<Vec<String>, SourceError> {
        self.with_session(session_id, |session| {
            if let Some(names) = session.committed.type_names() {
                return Ok(names);
            }
            let mut names: Vec<String> = session
                .committed
                .range(session_id, 0, u64::MAX)?
                .into_iter()
                .map(|e| e.event_type)
                .collect();
            names.sort_unstable();
            names.dedup();
            Ok(names)
        })
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

fn type_of(line: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(line)
        .ok()?
        .get_mut("type")?
        .take()
    {
        Value::String(name) => Some(name),
        _ => None,
    }
}

fn seq_of(line: &[u8]) -> Option<u64> {
    serde_json::from_slice::<Value>(line)
        .ok()?
        .get("seq")
        .and_then(Value::as_u64)
}

fn parse(session_id: &str, offset: u64, line: &[u8]) -> Result<SessionEvent, SourceError> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        SourceError::corrupt_by(
            format!("unparsable committed event at byte {offset} of session \"{session_id}\": {e}"),
            e,
        )
    })?;
    parse_event(value).map_err(|v| {
        SourceError::corrupt_by(
            format!("invalid committed event at byte {offset} of session \"{session_id}\": {v}"),
            v,
        )
    })
}

/// What the line where a log stops being clean is.
enum BreakFault {
    /// No event row: a line that is not a JSON object, blank, or too long.
    NotAnEvent,
    /// A line the rule refuses.
    Line(LineFault),
    /// An event that passes the rule, with this seq, out of place.
    OutOfPlace(u64),
    /// A legacy message: the log is judged whole.
    Legacy,
}

impl BreakFault {
    /// Whether a crash can leave it (so it is torn unless a later `turn/end` follows), rather
    /// than an event that breaks a read rule (corrupt wherever it stands).
    fn is_damage(&self) -> bool {
        match self {
            Self::Line(fault) => fault.is_damage(),
            Self::NotAnEvent | Self::OutOfPlace(_) | Self::Legacy => true,
        }
    }

    /// The refusal of the session whose first break, at `at`, this is.
    fn refusal(self, session_id: &str, at: u64) -> SourceError {
        let event = format!("committed event at byte {at} of session \"{session_id}\"");
        let acknowledged = "a later turn/end shows it was acknowledged";
        match self {
            Self::NotAnEvent => SourceError::corrupt(format!(
                "damaged {event}: not a JSON object; {acknowledged}"
            )),
            Self::OutOfPlace(seq) => SourceError::corrupt(format!(
                "damaged {event}: seq {seq} out of place; {acknowledged}"
            )),
            Self::Legacy => SourceError::corrupt(format!(
                "{event} is a legacy message, which is judged with the whole log"
            )),
            Self::Line(fault) if fault.is_damage() => SourceError::corrupt_by(
                format!("damaged {event}: {fault}; {acknowledged}"),
                fault.into_cause(),
            ),
            Self::Line(fault) => {
                SourceError::corrupt_by(format!("invalid {event}: {fault}"), fault.into_cause())
            }
        }
    }
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

#[cfg(test)]
mod tests;
