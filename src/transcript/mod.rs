//! Agent transcripts written by other programs (Claude Code, Codex CLI, pi), read in place.
//!
//! * Readers: [`Fold`] folds a transcript's complete lines, one at a time in file order, into a
//!   [`Summary`]: compaction boundaries, the [`Tally`] of each generation, the lifetime tally,
//!   and counted diagnostics. Each format's rules (which lines carry usage, how duplicates are
//!   merged, what marks a boundary) are in docs/TRANSCRIPTS.md.
//!
//! * The index: [`open`] reads a transcript through a derived index kept in a per-user cache
//!   directory ([`cache_dir`]), validated on every open, caught up in O(new bytes), rebuilt
//!   after a rewrite or damage; the answer is a [`Transcript`] with the typed
//!   [`IndexOutcome`](crate::index::IndexOutcome) of what the open found and did.
//!
//! These files belong to the agent: agentlog never writes beside them.

mod cache;
mod claude;
mod codex;
mod error;
mod fold;
mod format;
// The tolerant field types also read the lines the Parquet export writes out one by one.
pub(crate) mod json;
mod pi;
#[cfg(feature = "testing")]
mod pieces;
mod read;
mod report;
mod snapshot;
mod statusline;
mod store;
mod subagents;
mod tally;
mod usage;

pub(crate) use cache::ensure_private_dir;
pub use cache::{CACHE_DIR_ENV, cache_dir, default_index_dir, index_file};
pub use error::TranscriptError;
pub use fold::{
    Boundary, BoundaryKind, BucketKey, Diagnostics, Fold, Summary, UNKNOWN_MODEL, UNKNOWN_QUARTER,
};
pub use format::{Format, UnknownFormat, detect_format};
#[cfg(feature = "testing")]
pub use pieces::{Pieces, fold_at_once, fold_in_pieces};
pub use read::fold_bytes;
pub use report::{report, write_report};
pub use snapshot::{SnapshotOutcome, usage_with_snapshot};
pub use statusline::{
    MAX_STATUS_INPUT, StatusInput, StatusInputError, context_tokens, context_window,
    parse_status_input,
};
pub use store::{OpenOptions, Transcript, Verification, open, verify};
pub use subagents::{Subagent, WithSubagents, subagent_files, with_subagents};
pub use tally::Tally;
pub use usage::{
    GroupBy, Report, Row, Skipped, Tokens, UsageOptions, day_of, default_roots, discover,
    session_of, usage,
};
