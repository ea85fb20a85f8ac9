//! Agent transcripts written by other programs (Claude Code, Codex CLI, pi, Gemini CLI, Qwen
//! Code), read in place.
//!
//! * Readers: one per format ([`Format`]), each turning its lines into the same fields. A
//!   [`Fold`] folds a transcript's complete lines, one at a time in file order, into a
//!   [`Summary`]: compaction boundaries, the [`Tally`] of each generation (its [`Usage`]: input,
//!   output, cache creation, cache read, reasoning, and their total), the lifetime tally, the
//!   context, and counted diagnostics. Each format's rules (which lines carry usage, how
//!   duplicates are merged, what marks a boundary, how its fields map to [`Usage`]) are in
//!   docs/TRANSCRIPTS.md.
//!
//! * The index: [`Transcript::open`] reads a transcript through a derived index kept in a per-user cache
//!   directory ([`cache_dir`]), validated on every open, caught up in O(new bytes), rebuilt
//!   after a rewrite or damage; the answer is a [`Transcript`] with the typed
//!   [`IndexOutcome`](crate::index::IndexOutcome) of what the open found and did.
//!
//! * The answers, typed and serializable (the CLI's `--json` prints them as they serialize):
//!   [`read_report`] ([`TranscriptReport`], one transcript), [`usage`] ([`UsageReport`], many),
//!   [`statusline`] ([`StatusLine`], Claude Code's status line), [`catalog_of_files`]
//!   ([`SessionCatalog`], the sessions newest first, each a usage row with its title and
//!   times).
//!
//! These files belong to the agent: agentlog never writes beside them.

mod cache;
mod checked_file;
mod claude;
mod codex;
mod copilot;
mod error;
mod fold;
mod format;
mod gemini;
mod kimi;
// The per-line native slots are read by the export only.
#[cfg_attr(not(feature = "export"), allow(dead_code))]
pub(crate) mod native;
// The tolerant field types also read the lines the Parquet export writes out one by one.
// The per-line facts and native token slots the readers give are read by the export only.
#[cfg_attr(not(feature = "export"), allow(dead_code))]
pub(crate) mod json;
mod opencode;
mod pi;
#[cfg(feature = "testing")]
mod pieces;
mod price;
mod qwen;
mod read;
// The export reads each line's own figures through the readers.
#[cfg_attr(not(feature = "export"), allow(dead_code))]
pub(crate) mod reader;
// The export reads each line's own figures through the readers' table.
#[cfg_attr(not(feature = "export"), allow(dead_code))]
pub(crate) mod readers;
mod report;
// The MCP server pages its usage rows with the listing's offset cursors.
pub(crate) mod sessions;
mod snapshot;
mod stat;
mod statusline;
mod store;
mod subagents;
mod tally;
mod tokens;
mod usage;

pub use cache::{CACHE_DIR_ENV, cache_dir, default_index_dir, index_file};
pub(crate) use cache::{ensure_private_dir, open_private_file, per_user_dir};
pub use error::TranscriptError;
pub use fold::{
    BoundaryKind, BucketKey, CompactionBoundary, Fold, Summary, TranscriptDiagnostics,
    UNKNOWN_MODEL, UNKNOWN_QUARTER,
};
pub use format::{Format, UnknownFormat};
pub use native::{NativeValue, native};
// Search and the export read `OpenCode` databases' messages and parts.
#[cfg(feature = "export")]
pub(crate) use opencode::{Conversation, ConversationMessage, root_of as opencode_root_of};
pub use opencode::{
    MAX_OPENCODE_MESSAGES, NotAnObject, OpenCodeDiagnostics, OpenCodeMessage, OpenCodeMessageRow,
    OpenCodeMessages, OpenCodePart, OpenCodeReport, OpenCodeSession,
    parse_message as parse_opencode_message, parse_part as parse_opencode_part, read_opencode,
    read_opencode_messages,
};
#[cfg(any(feature = "search", feature = "export"))]
pub(crate) use opencode::{conversation_of_database, is_database};
#[cfg(feature = "testing")]
pub use pieces::{Pieces, fold_at_once, fold_in_pieces};
pub use price::{
    CostMode, ModelPrice, PriceError, PriceSource, PriceTable, PricingReport, PricingRow, Rates,
    RowCost, SNAPSHOT_DATE, SNAPSHOT_VERSION, pricing, records_cost,
};
pub use read::fold_bytes;
pub use readers::detect_format;
pub use report::{
    GenerationReport, ReportError, ReportOptions, SubagentReport, TranscriptReport, UsageFigures,
    read_report,
};
// The report of an already opened transcript, for the tests (feature `testing`).
#[cfg(feature = "testing")]
pub use report::report;
pub use sessions::{
    CatalogFile, DEFAULT_SESSIONS_LIMIT, FactsCache, MAX_SESSIONS_LIMIT, PromptText, STORE_AGENT,
    SessionCatalog, SessionFile, SessionFilter, SessionListError, SessionPage, SessionRow,
    catalog_of_files,
};
pub(crate) use stat::StatsTaken;
pub use statusline::{
    MAX_STATUS_INPUT, RateLimit, StatusInput, StatusInputError, StatusLine, StatusOptions,
    context_window, parse_status_input, statusline,
};
#[cfg(any(feature = "search", feature = "export"))]
pub(crate) use store::open;
pub use store::{OpenOptions, Transcript, UNINDEXED_FILE, Verification};
pub use subagents::{Subagent, WithSubagents, subagent_files, with_subagents};
pub use tally::{LONG_PROMPT, Money, Tally};
pub use tokens::Usage;
pub use usage::{
    BLOCK_SECONDS, Block, BurnRate, GroupBy, LiveView, Projection, Skipped, SnapshotOutcome,
    UnknownGroupBy, UsageArgError, UsageOptions, UsageReport, UsageRow, day_in, day_of,
    default_roots, discover, discover_lines, live, live_with, parse_agent, parse_cost_mode,
    parse_day, parse_group_by, parse_timezone, read_by_lines, roots_or_default, session_of,
    system_zone, usage, usage_of_files, zone_named,
};
pub(crate) use usage::{path_order, sort_paths, usage_of_files_noting};
