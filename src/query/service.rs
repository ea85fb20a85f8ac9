//! The query service: exact reads, filters and traces over the corpus (docs/SESSIONS.md,
//! "Queries").
//!
//! The corpus is the union of the store's live sessions and its persisted side. For one
//! id the live copy always wins, and an exact read of a live session never touches the
//! persisted side, so a broken backend cannot hide or delay live data. A persisted
//! session is read as: stored header, then the checks every read makes first (damage, retired
//! and unknown types, answered from the index without reading the log), then the events, then
//! a check that the header stored with the events still matches (a log replaced in between is
//! a [`QueryError::SourceConflict`]), then legacy normalization and the read-side rules. So
//! every read of a damaged session refuses alike, the cheap ones included.
//!
//! Whole-log operations (list/filter events, read surface, read session, trace event)
//! fold the surface; a violation is [`QueryError::InvalidSurface`]. A window read
//! ([`QueryService::read_event`]) reads only the seq range it returns (plus the prefix
//! when a legacy event needs earlier ids) and does not fold, so it stays cheap on an
//! index; a replace that only the fold finds wrong does not stop it.

use std::collections::BTreeMap;

use crate::query::envelope::{Vocabulary, check_message_shape};
use crate::query::error::SourceError;
use crate::query::error::{QueryError, Result, Violation};
use crate::query::filter::{
    EventFilter, SessionFilter, compile_event_filters, compile_session_filters,
};
use crate::query::json::MAX_SAFE_INTEGER;
use crate::query::legacy::{check_no_retired, needs_prefix, normalize_log};
use crate::query::source::StoredSlice;
use crate::query::source::validate_session_id;
use crate::query::store::Store;
use crate::query::surface::{SurfaceFold, fold_surface, fold_surface_events};
use crate::query::text::event_text;
use crate::query::trace::{trace_event, trace_lineage};
use crate::query::types::{
    SURFACE_EVENT_TYPES, SessionEvent, SessionEventDocument, SessionEventRecord, SessionEventTrace,
    SessionEventWindow, SessionHeader, SessionLineageTrace, SessionLogSnapshot, SessionRecord,
    SessionSurfaceSnapshot, is_surface_type,
};
use crate::query::window::{DEFAULT_READ_WINDOW_MAX, WindowRequest, cut_window};

/// The event types that can make a log retired (docs/SESSIONS.md, "The event envelope"):
/// `request/header` only with one reason, so its events are read to tell.
const RETIRED_TYPES: [&str; 3] = ["request/header-delta", "mode/set", "request/header"];

/// The legacy type read as a `user/message`.
const STEERING: &str = "steering/message";

/// Configuration of the query service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryConfig {
    /// The largest `before`/`after` a window read accepts (default 50).
    pub read_window_max: u64,
}

impl Default for QueryConfig {
    fn default() -> Self {
        Self {
            read_window_max: DEFAULT_READ_WINDOW_MAX,
        }
    }
}

/// Exact queries over a [`Store`]'s corpus.
#[derive(Debug)]
pub struct QueryService<'s> {
    store: &'s Store,
    config: QueryConfig,
    vocabulary: Vocabulary,
}

/// A whole log, with the surface fold when it is already known (live sessions).
struct Loaded {
    header: SessionHeader,
    events: Vec<SessionEvent>,
    fold: Option<SurfaceFold>,
}

impl<'s> QueryService<'s> {
    /// A service over `store`; a `read_window_max` above 2^53-1 is
    /// [`QueryError::InvalidConfig`].
    pub fn new(store: &'s Store, config: QueryConfig) -> Result<Self> {
        if config.read_window_max > MAX_SAFE_INTEGER {
            return Err(QueryError::InvalidConfig {
                reason: format!("read_window_max {} is above 2^53-1", config.read_window_max),
            });
        }
        Ok(Self {
            store,
            config,
            vocabulary: store.config().vocabulary.clone(),
        })
    }

    /// Every session, newest first (`createdAt` descending, then id ascending).
    ///
    /// Reads headers only. A live and a stored header that disagree on an immutable
    /// field are a [`QueryError::SourceConflict`].
    pub fn list_sessions(&self) -> Result<Vec<SessionRecord>> {
        let stored = self
            .store
            .source()
            .list_headers()
            .map_err(|e| source_error("", "listing sessions", e))?;
        let mut records: BTreeMap<String, SessionRecord> = self
            .store
            .live_headers()
            .into_iter()
            .map(|header| {
                let record = SessionRecord {
                    header,
                    live: true,
                    persisted: false,
                };
                (record.header.id.clone(), record)
            })
            .collect();
        for header in stored {
            match records.get_mut(&header.id) {
                Some(record) => {
                    check_compatible(&record.header, &header)?;
                    record.persisted = true;
                }
                None => {
                    records.insert(
                        header.id.clone(),
                        SessionRecord {
                            header,
                            live: false,
                            persisted: true,
                        },
                    );
                }
            }
        }
        let mut list: Vec<SessionRecord> = records.into_values().collect();
        list.sort_by(|a, b| {
            b.header
                .created_at
                .cmp(&a.header.created_at)
                .then_with(|| a.header.id.cmp(&b.header.id))
        });
        Ok(list)
    }

    /// The sessions passing every filter, in [`Self::list_sessions`] order.
    pub fn filter_sessions(&self, filters: &[SessionFilter]) -> Result<Vec<SessionRecord>> {
        let matcher = compile_session_filters(filters)?;
        Ok(self
            .list_sessions()?
            .into_iter()
            .filter(|r| matcher.matches(r))
            .collect())
    }

    /// A whole session after full validation, including the surface fold.
    pub fn read_session(&self, session_id: &str) -> Result<SessionLogSnapshot> {
        let loaded = self.load(session_id)?;
        fold(session_id, &loaded)?;
        Ok(SessionLogSnapshot {
            session: loaded.header,
            events: loaded.events,
        })
    }

    /// One record per event, ascending seq, classified by the surface fold.
    pub fn list_events(&self, session_id: &str) -> Result<Vec<SessionEventRecord>> {
        let loaded = self.load(session_id)?;
        let fold = fold(session_id, &loaded)?;
        Ok(loaded
            .events
            .iter()
            .map(|e| event_record(session_id, e, &fold))
            .collect())
    }

    /// Records of the events whose type is one of `types`, ascending seq, classified by the
    /// surface fold.
    ///
    /// A stored session is read through the persisted source's type index: only the events
    /// of those types (and, when a surface type is asked for, the surface events that decide
    /// its class) are read, so the cost follows the matches, not the log. The read rules are
    /// those of a windowed read: retired types refuse the whole log, stored events are
    /// normalized and checked, and the whole log is read when legacy normalization needs the
    /// events before them.
    pub fn list_events_of_types(
        &self,
        session_id: &str,
        types: &[&str],
    ) -> Result<Vec<SessionEventRecord>> {
        validate_session_id(session_id)?;
        let wanted = |e: &SessionEvent| types.contains(&e.event_type.as_str());
        if let Some(records) = self.store.with_live(session_id, |v| {
            let fold = v.surface.to_fold();
            v.events
                .iter()
                .filter(|e| wanted(e))
                .map(|e| event_record(session_id, e, &fold))
                .collect::<Vec<_>>()
        }) {
            return Ok(records);
        }
        let source = self.store.source();
        let read_err = |e| source_error(session_id, "reading the log", e);
        let listed = self.checked_stored_header(session_id)?;
        let mut to_read: Vec<&str> = types.to_vec();
        if types.iter().any(|t| is_surface_type(t)) {
            to_read.extend(SURFACE_EVENT_TYPES);
            // A legacy steering message is read as a `user/message`, so it is part of the
            // surface; finding one sends the read down the whole-log path below.
            to_read.push(STEERING);
        }
        let slice = source.read_types(session_id, &to_read).map_err(read_err)?;
        if slice.events.iter().any(needs_prefix) {
            let all = self.list_events(session_id)?;
            return Ok(all
                .into_iter()
                .filter(|r| types.contains(&r.event_type.as_str()))
                .collect());
        }
        check_compatible(&listed, &slice.header)?;
        let events = self.prepare_stored(session_id, slice.events)?;
        // A record needs the event's seq, type and time; the fold needs the surface events
        // whole, so they are moved to it rather than copied (payloads are most of the memory).
        let mut wanted_events = Vec::new();
        let mut surface = Vec::new();
        for event in events {
            if wanted(&event) {
                wanted_events.push((event.seq, event.event_type.clone(), event.time));
            }
            if event.is_surface() {
                surface.push(event);
            }
        }
        let fold =
            fold_surface_events(&surface).map_err(|violation| QueryError::InvalidSurface {
                session_id: session_id.to_string(),
                violation,
            })?;
        Ok(wanted_events
            .into_iter()
            .map(|(seq, event_type, time)| SessionEventRecord {
                session_id: session_id.to_string(),
                seq,
                event_type,
                time,
                surface: fold.classify(seq),
            })
            .collect())
    }

    /// The events with searchable text that pass every filter, ascending seq.
    pub fn filter_events(
        &self,
        session_id: &str,
        filters: &[EventFilter],
    ) -> Result<Vec<SessionEventDocument>> {
        let matcher = compile_event_filters(filters)?;
        let loaded = self.load(session_id)?;
        let fold = fold(session_id, &loaded)?;
        Ok(loaded
            .events
            .iter()
            .filter_map(|e| {
                let text = event_text(e);
                (!text.is_empty()).then(|| SessionEventDocument {
                    record: event_record(session_id, e, &fold),
                    text,
                })
            })
            .filter(|doc| matcher.matches(doc))
            .collect())
    }

    /// The current surface events in surface order, and the last seq folded.
    pub fn read_surface(&self, session_id: &str) -> Result<SessionSurfaceSnapshot> {
        let loaded = self.load(session_id)?;
        let fold = fold(session_id, &loaded)?;
        let captured_through_seq = loaded.events.last().map(|e| e.seq);
        // Events ascend by seq, and each node is a distinct seq: each is found by binary
        // search and moved out once, so a long surface costs n log n, not n squared.
        let seqs: Vec<u64> = loaded.events.iter().map(|e| e.seq).collect();
        let mut events: Vec<Option<SessionEvent>> = loaded.events.into_iter().map(Some).collect();
        let surface = fold
            .nodes
            .iter()
            .filter_map(|seq| events.get_mut(seqs.binary_search(seq).ok()?)?.take())
            .collect();
        Ok(SessionSurfaceSnapshot {
            captured_through_seq,
            session: loaded.header,
            events: surface,
        })
    }

    /// One event with up to `before`/`after` raw neighbours.
    ///
    /// The bounds are checked before anything is read.
    pub fn read_event(&self, request: &WindowRequest) -> Result<SessionEventWindow> {
        let (before, after) = request.bounds(self.config.read_window_max)?;
        let id = request.session_id.as_str();
        validate_session_id(id)?;
        let (lo, hi) = request.seq_range(before, after);
        let (header, events) = match self.store.with_live(id, |v| {
            let first = usize::try_from(lo).unwrap_or(usize::MAX);
            let last = usize::try_from(hi).unwrap_or(usize::MAX);
            let window = v
                .events
                .get(first.min(v.events.len())..last.saturating_add(1).min(v.events.len()))
                .unwrap_or_default()
                .to_vec();
            (v.header.clone(), window)
        }) {
            Some(live) => live,
            None => self.load_persisted_range(id, lo, hi)?,
        };
        let (target, events, start_seq, end_seq) = cut_window(events, request.seq, before, after)
            .ok_or_else(|| QueryError::EventNotFound {
            session_id: id.to_string(),
            seq: request.seq,
        })?;
        Ok(SessionEventWindow {
            session: header,
            target,
            events,
            start_seq,
            end_seq,
        })
    }

    /// The lineage of a session through `parentSession`.
    pub fn trace_session(&self, session_id: &str) -> Result<SessionLineageTrace> {
        validate_session_id(session_id)?;
        trace_lineage(&self.list_sessions()?, session_id)
    }

    /// How one event relates to others through replacements and provenance.
    pub fn trace_event(&self, session_id: &str, seq: u64) -> Result<SessionEventTrace> {
        let loaded = self.load(session_id)?;
        trace_event(session_id, &loaded.events, seq)
    }

    /// The whole log of a session, live first.
    fn load(&self, session_id: &str) -> Result<Loaded> {
        // An id that could never name a session (a path, `..`, NUL) says so.
        validate_session_id(session_id)?;
        let live = |s: &Self| {
            s.store.with_live(session_id, |v| Loaded {
                header: v.header.clone(),
                events: v.events.to_vec(),
                fold: Some(v.surface.to_fold()),
            })
        };
        if let Some(loaded) = live(self) {
            return Ok(loaded);
        }
        let listed = self.checked_stored_header(session_id)?;
        let slice = self
            .store
            .source()
            .read_all(session_id)
            .map_err(|e| source_error(session_id, "reading the log", e))?;
        // The session may have gone live while we read; live data wins.
        if let Some(loaded) = live(self) {
            return Ok(loaded);
        }
        check_compatible(&listed, &slice.header)?;
        let events = self.prepare_stored(session_id, slice.events)?;
        Ok(Loaded {
            header: slice.header,
            events,
            fold: None,
        })
    }

    /// The stored header of a non-live session, once every check that concerns the whole log
    /// but not its order has passed, so that every read of a session refuses alike
    /// (docs/SESSIONS.md, "Reading a damaged session"): the header reads, the committed region
    /// holds no acknowledged damage (the source refuses on open), no retired shape
    /// (`corrupt_session`) and no unknown type without `ignorable` (`unsupported_format`).
    /// The source lists the log's types, so only events of a retired or unknown type are read.
    fn checked_stored_header(&self, session_id: &str) -> Result<SessionHeader> {
        let source = self.store.source();
        let read_err = |e| source_error(session_id, "reading the log", e);
        let listed = source
            .read_header(session_id)
            .map_err(|e| source_error(session_id, "reading the header", e))?;
        let types = source.event_types(session_id).map_err(read_err)?;
        // A steering message is read as a `user/message`, a known type.
        let suspect: Vec<&str> = types
            .iter()
            .map(String::as_str)
            .filter(|t| RETIRED_TYPES.contains(t) || !(self.vocabulary.knows(t) || *t == STEERING))
            .collect();
        if suspect.is_empty() {
            return Ok(listed);
        }
        let slice = source.read_types(session_id, &suspect).map_err(read_err)?;
        check_compatible(&listed, &slice.header)?;
        check_no_retired(&slice.events).map_err(|v| corrupt(session_id, v))?;
        for event in &slice.events {
            self.vocabulary
                .check(event)
                .map_err(|v| unsupported(session_id, v))?;
        }
        Ok(listed)
    }

    /// The stored events `lo..=hi` of a non-live session, normalized and checked.
    fn load_persisted_range(
        &self,
        session_id: &str,
        lo: u64,
        hi: u64,
    ) -> Result<(SessionHeader, Vec<SessionEvent>)> {
        let source = self.store.source();
        let read_err = |e| source_error(session_id, "reading the log", e);
        let listed = self.checked_stored_header(session_id)?;
        let mut slice: StoredSlice = source.read_range(session_id, lo, hi).map_err(read_err)?;
        if slice.events.iter().any(needs_prefix) {
            slice = source.read_range(session_id, 0, hi).map_err(read_err)?;
        }
        check_compatible(&listed, &slice.header)?;
        let mut events = self.prepare_stored(session_id, slice.events)?;
        events.retain(|e| e.seq >= lo);
        Ok((slice.header, events))
    }

    /// Normalizes stored events and applies the read-side rules (message shapes,
    /// vocabulary).
    fn prepare_stored(
        &self,
        session_id: &str,
        stored: Vec<SessionEvent>,
    ) -> Result<Vec<SessionEvent>> {
        let events = normalize_log(session_id, stored).map_err(|v| corrupt(session_id, v))?;
        for event in &events {
            check_message_shape(event).map_err(|v| corrupt(session_id, v))?;
            self.vocabulary
                .check(event)
                .map_err(|v| unsupported(session_id, v))?;
        }
        Ok(events)
    }
}

/// The surface fold of a loaded log (reusing the live incremental fold when there is one).
fn fold(session_id: &str, loaded: &Loaded) -> Result<SurfaceFold> {
    match &loaded.fold {
        Some(fold) => Ok(fold.clone()),
        None => fold_surface(&loaded.events).map_err(|violation| QueryError::InvalidSurface {
            session_id: session_id.to_string(),
            violation,
        }),
    }
}

/// Maps a persisted-side failure to the query error a caller acts on.
fn source_error(session_id: &str, operation: &str, err: SourceError) -> QueryError {
    match err {
        SourceError::NotFound if !session_id.is_empty() => QueryError::SessionNotFound {
            session_id: session_id.to_string(),
        },
        SourceError::Corrupt { .. } => QueryError::CorruptSession {
            session_id: session_id.to_string(),
            cause: Box::new(err),
        },
        SourceError::Unsupported(_) => QueryError::UnsupportedFormat {
            session_id: session_id.to_string(),
            cause: Box::new(err),
        },
        SourceError::Failed { context, cause } => QueryError::PersistenceFailed {
            operation: format!("{operation} ({context})"),
            cause,
        },
        other => QueryError::PersistenceFailed {
            operation: operation.to_string(),
            cause: Box::new(other),
        },
    }
}

fn corrupt(session_id: &str, violation: Violation) -> QueryError {
    QueryError::CorruptSession {
        session_id: session_id.to_string(),
        cause: Box::new(violation),
    }
}

fn unsupported(session_id: &str, violation: Violation) -> QueryError {
    QueryError::UnsupportedFormat {
        session_id: session_id.to_string(),
        cause: Box::new(violation),
    }
}

fn check_compatible(first: &SessionHeader, second: &SessionHeader) -> Result<()> {
    match first.incompatibility(second) {
        None => Ok(()),
        Some((field, live, persisted)) => Err(QueryError::SourceConflict {
            session_id: first.id.clone(),
            field,
            live,
            persisted,
        }),
    }
}

fn event_record(session_id: &str, e: &SessionEvent, fold: &SurfaceFold) -> SessionEventRecord {
    SessionEventRecord {
        session_id: session_id.to_string(),
        seq: e.seq,
        event_type: e.event_type.clone(),
        time: e.time,
        surface: fold.classify(e.seq),
    }
}

#[cfg(test)]
mod tests;
