//! The per-transcript index: a redb file in the cache directory, on the derived-index core
//! (`index/derived/`) as the agent log's index is: validated against the transcript on every
//! open (versions, length, head and tail windows), caught up in O(new bytes) after appends,
//! rebuilt after a rewrite, a truncation or damage, and stepped around (the answer folded in
//! memory) when another process holds it or it cannot be written. This module keeps only the
//! transcript's schema, its checks and its fold into rows. The protocol: docs/TRANSCRIPTS.md,
//! "The index".

mod answer;
mod document;
mod open;
mod recall;
mod scan;
pub(crate) mod schema;
mod source;
mod validate;
mod verify;
mod write;

use std::path::PathBuf;
use std::time::Duration;

pub(crate) use open::open;
pub use verify::Verification;

use std::path::Path;

use crate::transcript::error::TranscriptError;

use crate::index::IndexOutcome;
use crate::index::derived::storage::Settings;
use crate::index::derived::unsynced::Syncs;
use crate::log::{Coverage, DEFAULT_MAX_LINE};
use crate::transcript::fold::{BucketKey, Dedup, Summary};
use crate::transcript::format::Format;
use crate::transcript::stat::Stat;
use crate::transcript::tally::Tally;

/// How to read a transcript and keep its index.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Read it as this format instead of detecting one from its first lines.
    pub format: Option<Format>,
    /// Where index files go (default: [`default_index_dir`](super::default_index_dir)).
    pub index_dir: Option<PathBuf>,
    /// Lines longer than this many bytes are counted as too long and not read.
    pub max_line: usize,
    /// Never write the index (answer from its last commit and a fold of what follows).
    pub read_only: bool,
    /// New bytes up to this many are folded in memory instead of committed (default 0: every
    /// catch-up is committed).
    pub max_memory_tail: u64,
    /// A transcript no longer than this that has no index yet is folded whole in memory and
    /// given none. For a file of a few kilobytes the fold costs less than creating and syncing
    /// an index of at least 72 KiB, and a run-level answer (the usage snapshot) keeps it from
    /// being read again while it does not change. `None` (the default): the caller's default,
    /// [`UNINDEXED_FILE`](crate::transcript::UNINDEXED_FILE) for a usage report's files, no
    /// limit when the usage snapshot reads every file (a file gets its index when it grows),
    /// and 0 (every transcript gets an index) for one transcript opened alone.
    pub max_unindexed_file: Option<u64>,
    /// How long redb may repair an index after a crash before it is rebuilt instead.
    pub repair_budget: Duration,
    /// Also load every dedup key and bucket (for merging transcripts, or comparing).
    pub load_dedup: bool,
    /// Also load every bucket, every Claude Code message id without the messages (a merge of
    /// many transcripts finds the ids they share, then loads only those) and every pi entry.
    pub load_ids: bool,
    /// Also load the Claude Code messages filed under these ids (point lookups: a session's
    /// subagents merge with the few ids they share without reading the session's every key).
    /// The answer's dedup rows then hold at least these ids' messages.
    pub load_messages: Vec<String>,
    /// Also load the buckets from this quarter-hour on (a day's total without reading every
    /// key); [`Transcript::buckets`] then holds at least those.
    pub buckets_from: Option<i64>,
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            format: None,
            index_dir: None,
            max_line: DEFAULT_MAX_LINE,
            read_only: false,
            max_memory_tail: 0,
            max_unindexed_file: None,
            repair_budget: Duration::from_secs(2),
            load_dedup: false,
            load_ids: false,
            load_messages: Vec::new(),
            buckets_from: None,
        }
    }
}

/// The largest transcript a usage report reads without giving it an index, unless
/// [`OpenOptions::max_unindexed_file`] says otherwise: folding 1 MiB costs a few
/// milliseconds, about what creating an index costs, and a file grown since the last run is
/// re-read no slower than an index catches up (measured: docs/PERFORMANCE.md). Most
/// transcripts of the agents that write one file per session (Qwen Code, pi, Gemini CLI,
/// Codex) are smaller.
pub const UNINDEXED_FILE: u64 = 1 << 20;

/// redb's page cache for a transcript index: a transcript index is small, and an open reads
/// a handful of pages.
const CACHE_BYTES: usize = 4 << 20;

/// How a transcript index's file is kept: private (0600), and every write session without
/// syncs behind the core's marker (a power cut costs one transcript's rebuild).
fn settings(options: &OpenOptions) -> Settings<'static> {
    Settings {
        cache_bytes: CACHE_BYTES,
        repair_budget: options.repair_budget,
        syncs: Syncs::SkippedForSession,
        mode: 0o600,
        faults: None,
        sidecars: |_| {},
    }
}

impl OpenOptions {
    /// Whether the answer carries rows (keys, ids or buckets).
    pub(crate) fn wants_rows(&self) -> bool {
        self.load_dedup
            || self.load_ids
            || !self.load_messages.is_empty()
            || self.buckets_from.is_some()
    }
}

/// A transcript's answer: what its complete lines add up to, and what opening its index did.
#[derive(Clone, Debug)]
pub struct Transcript {
    /// The transcript's canonical path.
    pub path: PathBuf,
    /// The format it was read as.
    pub format: Format,
    /// The index file used, if any.
    pub index: Option<PathBuf>,
    /// What the answer covers of the transcript (a torn last line is not covered).
    pub coverage: Coverage,
    /// What the covered lines add up to.
    pub summary: Summary,
    /// What opening the index found and did.
    pub outcome: IndexOutcome,
    pub(crate) dedup: Option<Dedup>,
    /// The file's `stat` when it was opened, before it was read.
    pub(crate) opened: Stat,
}

impl Transcript {
    /// Reads a transcript through its index: validates the index, then catches it up, rebuilds
    /// it, or steps around it, and answers. Only a problem with the transcript itself is an
    /// error.
    pub fn open(path: &Path, options: &OpenOptions) -> Result<Transcript, TranscriptError> {
        open::open(path, options)
    }

    /// Checks a transcript's index deeply (O(transcript)) without changing it.
    pub fn verify(path: &Path, options: &OpenOptions) -> Result<Verification, TranscriptError> {
        verify::verify(path, options)
    }

    /// The tally since the latest boundary.
    pub fn since_compaction(&self) -> Tally {
        self.summary.since_compaction()
    }

    /// The tally of every generation.
    pub fn lifetime(&self) -> Tally {
        self.summary.lifetime
    }

    /// The tally of every (quarter-hour, model) bucket, if [`OpenOptions::load_dedup`] was set
    /// (at least those from [`OpenOptions::buckets_from`] on, if that was).
    pub fn buckets(&self) -> Option<Vec<(BucketKey, Tally)>> {
        let dedup = self.dedup.as_ref()?;
        let mut out: Vec<_> = dedup.buckets.iter().map(|(k, t)| (*k, *t)).collect();
        out.sort_by_key(|(k, _)| *k);
        Some(out)
    }
}
