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
//! Layering inside the crate runs one way: `json` and `types` at the bottom, then
//! `envelope`, `surface`, `legacy`, `extract`, `filter`, `window`, `trace`, then
//! `source` and `store`, and `service` on top.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod envelope;
pub mod error;
pub mod text;
pub mod filter;
pub mod indexed;
pub mod json;
pub mod legacy;
pub mod repair;
pub mod service;
pub mod source;
pub mod store;
pub mod surface;
pub mod trace;
pub mod types;
pub mod window;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod test_support;

pub use error::{QueryError, Violation};
pub use filter::{Availability, EventFilter, SessionFilter};
pub use indexed::{IndexedSource, session_index_options};
pub use service::{QueryConfig, QueryService};
pub use source::{JsonlSource, PersistedSource, SourceError, StoredSlice};
pub use store::{AppendReceipt, CheckpointPolicy, Store, StoreConfig, validate_session_id};
pub use surface::{SurfaceFold, SurfaceState, fold_surface};
pub use types::{
    LineageResolution, Replacement, SessionEvent, SessionEventDocument, SessionEventRecord,
    SessionEventTrace, SessionEventWindow, SessionHeader, SessionLineageNode, SessionLineageTrace,
    SessionLogSnapshot, SessionRecord, SessionSurfaceSnapshot, SurfaceClass, SurfaceOp,
};
pub use window::WindowRequest;
