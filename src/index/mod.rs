//! Derived indexes: the core every index of a growing file stands on (`derived/`), and
//! the agent log's index built on it: a redb file beside the log, keyed by byte offset,
//! validated against the log on every open and never silently believed.
//!
//! * [`Index`] is the reader's handle: open = validate, then catch up or rebuild (or, if the
//!   index is held by a writer or cannot be written, use its last commit plus an in-memory scan
//!   of what follows).
//! * [`Writer`] appends events to the log and keeps the index current.
//!
//! The schema and the open protocol are specified in `docs/FORMAT.md`.

mod blocks;
mod build;
mod commit;
mod committer;
pub(crate) mod derived;
mod error;
mod open;
mod opening;
mod reader;
mod rows;
#[cfg(feature = "testing")]
pub mod schema;
#[cfg(not(feature = "testing"))]
mod schema;
mod seq_runs;
#[cfg(feature = "testing")]
pub mod status_file;
#[cfg(not(feature = "testing"))]
mod status_file;
mod validate;
mod verify;
mod writer;

use std::sync::Arc;
use std::time::Duration;

use self::derived::storage::Settings;
use self::derived::unsynced::Syncs;

pub use self::derived::outcome::{IndexOutcome, ReadOnlyReason, StaleReason};
pub use error::IndexError;
pub use open::Progress;
pub use reader::Index;
pub use schema::EventRow;
pub(crate) use status_file::{StatusAnswer, answer as status_answer};
pub use verify::TableComparison;
pub use writer::{CommitPolicy, Writer, WriterOptions};

use crate::event::{Extractor, LineValidator, Profile};
use crate::log::{DEFAULT_MAX_LINE, Faults};

/// How long redb may spend repairing the index after an unclean shutdown before we give up
/// and rebuild it from the log instead.
pub const DEFAULT_REPAIR_BUDGET: Duration = Duration::from_secs(2);

/// redb's page cache. Builds only append at the right edge of each B-tree and queries read a
/// handful of pages, so a small cache costs them nothing and keeps a build's memory flat in
/// the log's size (docs/DECISIONS.md, "Build memory is bounded").
const CACHE_BYTES: usize = 16 << 20;

/// The default of [`IndexOptions::max_memory_tail`]: folding this much of a log in memory costs
/// about as much as committing it once. See
/// docs/DECISIONS.md, "A reader folds a small unindexed tail in memory".
pub const DEFAULT_MAX_MEMORY_TAIL: u64 = 256 << 10;

/// How to read the log and maintain its index.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// Which events carry tokens and mark boundaries.
    pub profile: Profile,
    /// Lines longer than this many bytes are invalid (and never buffered whole).
    pub max_line: usize,
    /// Never write the index, even if it is free (e.g. for `verify`).
    pub read_only: bool,
    /// During long builds, commit every this many bytes of log (default 16 MiB), so memory
    /// stays flat and a crash loses little work.
    pub commit_bytes: u64,
    /// Builds and catch-ups of more than one commit (`commit_bytes`) run on two threads: this
    /// one reads and folds lines while a helper thread, scoped to the call, writes and commits
    /// the previous chunk. A [`Writer`]'s commits by its [`CommitPolicy`] run on a helper
    /// thread too, while appends go on. Default `true`; `false` keeps all index work on the
    /// calling thread.
    pub two_threads: bool,
    /// How long redb may repair the index after a crash before we rebuild it instead.
    pub repair_budget: Duration,
    /// The longest unindexed tail, in bytes, that [`Index::open`] folds in memory (as a
    /// read-only open does: [`ReadOnlyReason::SmallTail`]) instead of committing it to the
    /// index. Default 256 KiB: a reader polling a log that another program appends to then
    /// writes nothing until that much has accumulated, where each commit would cost a
    /// writable open, a durable redb commit and a close (several `fdatasync`s). `0`
    /// commits every catch-up. A [`Writer`] always commits.
    pub max_memory_tail: u64,
    /// A check of whole lines beyond JSON validity (the session layer's envelope rules); the
    /// first line it rejects is recorded as [`FoldState::first_break`](crate::event::FoldState).
    pub line_validator: Option<Arc<dyn LineValidator>>,
    /// Injected I/O failures for the log writer and the index (tests only).
    #[cfg(feature = "testing")]
    pub faults: Option<Arc<Faults>>,
}

impl Default for IndexOptions {
    fn default() -> IndexOptions {
        IndexOptions {
            profile: Profile::lingtai(),
            max_line: DEFAULT_MAX_LINE,
            read_only: false,
            commit_bytes: 16 << 20,
            two_threads: true,
            repair_budget: DEFAULT_REPAIR_BUDGET,
            max_memory_tail: DEFAULT_MAX_MEMORY_TAIL,
            line_validator: None,
            #[cfg(feature = "testing")]
            faults: None,
        }
    }
}

impl IndexOptions {
    /// An extractor for this profile and line validator.
    pub fn extractor(&self) -> Extractor {
        Extractor::new(self.profile.clone()).with_validator(self.line_validator.clone())
    }

    /// What the index records of how lines were read: the profile and the validator's name.
    /// An index built with another fingerprint is rebuilt.
    pub fn fingerprint(&self) -> u32 {
        let mut hasher = crc32fast::Hasher::new_with_initial(self.profile.fingerprint());
        if let Some(validator) = &self.line_validator {
            hasher.update(validator.name().as_bytes());
        }
        hasher.finalize()
    }

    /// The injected failures to arm the writers with: `None` outside tests.
    #[cfg_attr(
        not(feature = "testing"),
        expect(clippy::unused_self, reason = "only the testing build stores faults")
    )]
    pub(crate) fn faults(&self) -> Option<&Arc<Faults>> {
        #[cfg(feature = "testing")]
        return self.faults.as_ref();
        #[cfg(not(feature = "testing"))]
        return None;
    }

    /// How the index file is kept, with `syncs` for the writes of the open to come.
    pub(crate) fn settings(&self, syncs: Syncs) -> Settings<'_> {
        Settings {
            cache_bytes: CACHE_BYTES,
            repair_budget: self.repair_budget,
            syncs,
            mode: 0o666,
            faults: self.faults(),
            sidecars: status_file::remove,
        }
    }
}
