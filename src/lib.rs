//! agentlog: an embedded storage engine for AI-agent session logs.
//!
//! An append-only `events.jsonl` is the source of truth; a derived redb index beside it
//! answers "tokens used since the last molt" in O(1) and is validated against the log on every
//! open, so a stale index is caught up, rebuilt, or stepped around, never silently believed.
//!
//! The layers, each depending only on those before it:
//!
//! * [`log`]: the file itself: framing of complete lines, window checksums, the single writer
//!   with its lock and durability policy.
//! * [`event`]: reading one line: fast field extraction, the coercion rule, the fold.
//! * [`index`]: the redb index: schema, validation, catch-up, rebuild; the [`index::Writer`].
//! * [`generation`]: an agent's generations and the tokens used since its last molt: the three
//!   tiers and the labelling rule.
//! * [`query`]: dsh-style session stores: live and persisted sessions, the surface fold,
//!   filters, windows, traces, legacy normalization, read through each session's index.
//! * [`transcript`]: the transcripts of Claude Code, Codex, pi, Gemini CLI, Copilot CLI,
//!   `OpenCode`, Qwen Code and Kimi Code read in place, with derived indexes in a per-user cache
//!   directory.
//! * [`archive`]: every transcript line kept, compressed, in a per-user data directory, so
//!   sessions the agents clean up still answer and can be restored byte for byte.
//! * `export` (feature `export`): Parquet datasets of agent logs and session stores for
//!   warehouse engines.
//! * `search` (feature `search`): full-text search over a store's sessions and over agent
//!   transcripts, from derived SQLite FTS5 indexes caught up with the files before every search.
//! * `mcp` (feature `mcp`): the Model Context Protocol server, a read-only presenter of the
//!   answers above.
//! * `serve` (feature `serve`): the local, read-only web viewer.
//!
//! Features: `cli` (the `agentlog` binary), `search`, `export`, `opencode`, `mcp` and `serve`
//! are on by default; `default-features = false` compiles the core alone (no clap, SQLite,
//! Parquet, HTTP or MCP).
//! * [`synth`]: realistic synthetic logs, for the demo, benchmarks and tests.
//!
//! The root re-exports the types a user starts from: the [`Writer`], the status answer
//! ([`current_generation`], [`StatusReport`]), the session [`Store`], a transcript's
//! [`TranscriptReport`] ([`read_report`]), the [`UsageReport`] ([`usage`]) and the
//! [`StatusLine`] ([`statusline`]), the search requests and the export run (`export::export`).
//!
//! ```
//! use agentlog::{GenerationRequest, LogPaths, Writer, WriterOptions, current_generation};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let mut writer = Writer::open(&LogPaths::for_agent_dir(dir.path()), WriterOptions::default())?;
//! writer.append_json(br#"{"type": "llm_response", "input_tokens": 7}"#)?;
//! writer.close()?;
//! let current = current_generation(dir.path(), &GenerationRequest::expecting(0))?;
//! assert_eq!(current.totals.input_tokens, 7);
//! # Ok(())
//! # }
//! ```
//!
//! See `README.md` for the command line and `docs/FORMAT.md` for the on-disk rules.

pub mod archive;
pub mod event;
#[cfg(feature = "export")]
pub mod export;
pub mod generation;
pub mod index;
pub mod log;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod query;
#[cfg(feature = "search")]
pub mod search;
#[cfg(feature = "serve")]
pub mod serve;
pub mod synth;
pub mod transcript;

// The front door: the types a user starts from, as redb's and tantivy's roots have them. Each
// module holds the rest of its own vocabulary.
#[cfg(feature = "export")]
pub use export::{ExportError, ExportOptions, ExportReport, export};
pub use generation::{
    CurrentGeneration, GenerationError, GenerationRequest, StatusReport, current_generation,
};
pub use index::{IndexError, Writer, WriterOptions};
pub use log::{LogError, LogPaths, SyncPolicy};
pub use query::{QueryError, QueryService, Store, StoreConfig};
#[cfg(feature = "search")]
pub use search::{
    EventSearchRequest, SearchError, SearchIndex, SessionSearchRequest, TranscriptSearch,
    TranscriptSearchRequest,
};
pub use transcript::{
    ReportOptions, StatusLine, StatusOptions, Transcript, TranscriptError, TranscriptReport,
    UsageOptions, UsageReport, read_report, statusline, usage,
};

/// The README's example, compiled and run as a doctest so it cannot rot.
#[cfg(all(doctest, feature = "cli"))]
#[doc = include_str!("../README.md")]
mod readme {}
