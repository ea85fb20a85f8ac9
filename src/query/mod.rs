//! Sessions and exact queries (dsh semantics): the store, the live/persisted overlay, the
//! surface fold, filters, read windows, traces and legacy import.
//!
//! This crate is the pure logic behind agentlog's dsh-style session logs: the event
//! model, the envelope rules, the surface fold (what the model currently sees and what
//! was replaced), legacy normalization, text extraction, filters, read windows and
//! traces, plus a small [`Store`] that writes sessions as JSONL and overlays the sessions
//! it is writing ("live") on what is already on disk ("persisted").
//!
//! The persisted side is read through the narrow [`PersistedSource`] trait. The plain
//! [`JsonlSource`] implementation scans files; the engine's redb index will implement
//! the same trait with seeks by seq and by type, without any change above it.
//!
//! ```
//! use agentlog::query::{QueryConfig, QueryService, SessionEvent, SessionHeader, Store, StoreConfig, SurfaceOp};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path(), StoreConfig::default())?;
//! store.create_session(SessionHeader::new("demo", 1_700_000_000_000))?;
//! store.append("demo", vec![
//!     SessionEvent::new("turn/start", 0, 1, json!({"turn": 1})),
//!     SessionEvent::new("user/message", 1, 2, json!({
//!         "id": "m1", "role": "user", "source": {"kind": "user"},
//!         "content": [{"type": "text", "text": "hello"}],
//!     }))
//!     .with_surface_op(SurfaceOp::Append),
//! ])?;
//! let service = QueryService::new(&store, QueryConfig::default())?;
//! let events = service.list_events("demo")?;
//! assert_eq!(events.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every item is reached by one path, `agentlog::query::Item`; the submodules are private.
//! Inside, the layering runs one way: `json`, `error` and `types` at the bottom, then
//! `envelope`, `surface`, `legacy`, `text`, `filter`, `window`, `trace`, `repair`, then
//! `source`, `indexed` and `store`, then `service`, and `report` (the CLI's JSON shapes) on top.

// Beyond the crate's policy (Cargo.toml): the query layer indexes no slice, so a bad offset in a
// session's data is an error, never a panic. Tests may (clippy.toml).
#![deny(clippy::indexing_slicing)]

mod envelope;
mod error;
mod filter;
mod indexed;
mod json;
mod legacy;
mod repair;
mod report;
mod service;
mod source;
mod store;
mod stored;
mod surface;
mod text;
mod trace;
mod types;
mod window;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod test_support;

pub use envelope::{KNOWN_EVENT_TYPES, Vocabulary};
pub use error::{Cause, HeaderError, QueryError, SourceError, Violation};
pub use filter::{
    Availability, EventFilter, SessionFilter, parse_event_filters, parse_session_filters,
};
pub use indexed::{IndexedSource, session_index_options};
pub use repair::interrupted_turn_closers;
pub use report::{EventSummary, select_events, session_summary_json};
pub use service::{QueryConfig, QueryService};
pub use source::{JsonlSource, LOG_FILE_NAME, PersistedSource, StoredSlice, validate_session_id};
pub use store::{AppendReceipt, CheckpointPolicy, LiveView, Store, StoreConfig};
pub use surface::{EventLookup, SurfaceFold, SurfaceState, fold_surface};
pub use text::event_text;
#[cfg(feature = "search")]
pub(crate) use text::{blocks_text, join_parts, push_call, push_value};
pub use types::{
    LineageResolution, Replacement, SESSION_FORMAT_VERSION, SURFACE_EVENT_TYPES, SessionEvent,
    SessionEventDocument, SessionEventRecord, SessionEventTrace, SessionEventWindow, SessionHeader,
    SessionLineageNode, SessionLineageTrace, SessionLogSnapshot, SessionRecord,
    SessionSurfaceSnapshot, SurfaceClass, SurfaceOp,
};
pub use window::{DEFAULT_READ_WINDOW_MAX, WindowRequest};

// The read rules of a stored log, for the search index's reader (src/search/reader.rs), which
// must judge a log exactly as the query service does.
#[cfg(feature = "search")]
pub(crate) use envelope::{check_message_shape, parse_header};
#[cfg(feature = "search")]
pub(crate) use filter::{compile_event_filters, compile_session_filters};
#[cfg(feature = "export")]
pub(crate) use indexed::session_log_options;
#[cfg(feature = "search")]
pub(crate) use legacy::{needs_prefix, normalize_log};
#[cfg(feature = "search")]
pub(crate) use stored::parse_stored_line;

/// Internals that the fuzz targets and integration tests check against their own models
/// (feature `testing`): not part of the supported API.
#[cfg(feature = "testing")]
pub mod testing {
    pub use super::envelope::{check_message_shape, parse_header};
    pub use super::legacy::normalize_log;
    pub use super::source::{ScannedLog, scan_log};
}
