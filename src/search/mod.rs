//! Full-text search over a store's sessions, from a derived index that is never stale; and the
//! same search over agent transcripts ([`TranscriptSearch`]).
//!
//! The semantics are the reference's search (docs/SEARCH.md): the whole query is one phrase
//! under the `unicode61` tokenizer (case and diacritics folded; `OR`, `*` and quotes are plain
//! text), or with [`MatchMode::All`] every term in any order; the documents are the events with
//! extracted text, in all three surface classes; sessions rank by their best event (most
//! matches, shortest text, latest), events likewise; pages are bound to their request and to
//! the state of what was searched by cursors.
//!
//! The index is SQLite FTS5 in `ROOT/.agentlog-search/`, derived from the logs and caught up
//! before every search: one `stat` per unchanged session, only the new bytes of a session that
//! grew, a whole re-read of one whose covered bytes changed. Deleting it loses nothing.
//!
//! ```
//! use agentlog::query::{SessionEvent, SessionHeader, Store, StoreConfig, SurfaceOp};
//! use agentlog::search::{SearchConfig, SearchIndex, SessionSearchRequest};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path(), StoreConfig::default())?;
//! store.create_session(SessionHeader::new("demo", 1_700_000_000_000))?;
//! store.append("demo", vec![SessionEvent::new("user/message", 0, 1, json!({
//!     "id": "m1", "role": "user", "source": {"kind": "user"},
//!     "content": [{"type": "text", "text": "Where is the Café?"}],
//! }))
//! .with_surface_op(SurfaceOp::Append)])?;
//! store.close_session("demo")?;
//! let mut search = SearchIndex::new(&store, SearchConfig::default());
//! let page = search.search_sessions(&SessionSearchRequest {
//!     query: "the cafe".into(),
//!     ..SessionSearchRequest::default()
//! })?;
//! assert_eq!(page.hits[0].best_match.snippet, "Where is the Café?");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

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

mod catch_up;
mod cursor;
mod db;
mod documents;
mod error;
mod fts5;
mod index;
mod live;
mod marked;
mod predicate;
mod rank;
mod reader;
mod request;
mod sessions;
mod snippet;
mod stamp;
mod transcripts;

pub use catch_up::Caught;
// The cursor encoding and the snippet cutter, for the fuzz targets (feature `testing`).
#[cfg(feature = "testing")]
pub use cursor::base64url_encode;
pub use db::{INDEX_DIR, INDEX_FILE};
pub use error::SearchError;
pub use index::{
    EventSearchHit, EventSearchPage, SearchConfig, SearchIndex, SessionSearchHit,
    SessionSearchPage, UnreadableSession,
};
pub use request::{
    DEFAULT_LIMIT, EventSearchRequest, MAX_LIMIT, MatchMode, SessionSearchRequest, normalize_query,
};
#[cfg(feature = "testing")]
pub use snippet::make_snippet;
pub use snippet::{DEFAULT_SNIPPET_CHARS, MARK_CLOSE, MARK_OPEN, Snippet};
pub use transcripts::{
    DEFAULT_LINE_CHARS, DEFAULT_WINDOW_SIDE, LineAnchor, LineWindowError, LineWindowRequest,
    MAX_LINE_CHARS, MAX_SCAN_BYTES, MAX_WINDOW_SIDE, TRANSCRIPT_SEARCH_DIR, TranscriptLineText,
    TranscriptSearch, TranscriptSearchHit, TranscriptSearchPage, TranscriptSearchRequest,
    TranscriptWindow, UnreadableTranscript, WindowedLine, transcript_line_text, transcript_window,
    user_prompt,
};
