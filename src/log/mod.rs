//! The log file itself: paths, framing of complete lines, window checksums, and the single
//! writer with its lock and durability policy.
//!
//! `events.jsonl` is the source of truth. This layer knows bytes and lines, not events.

mod coverage;
mod error;
// Without the `testing` feature nothing can arm a fault: every hook sees `None`.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
mod faults;
mod file;
mod lines;
mod stamp;
mod window;
mod writer;

use std::path::{Path, PathBuf};

pub use coverage::{Coverage, CoverageBuilder, CoverageCheck, NotLineEnd, scan_lines};
pub use error::LogError;
#[cfg(not(feature = "testing"))]
pub(crate) use faults::Faults;
#[cfg(feature = "testing")]
pub use faults::{FaultKind, FaultPlan, Faults};
pub(crate) use file::open_for_read_inspected;
pub use file::{check_regular, open_for_append, open_for_read};
pub(crate) use lines::bytes_unchanged;
pub use lines::{
    DEFAULT_MAX_LINE, FoundRun, Line, LineScanner, ReadAhead, Run, read_at_retrying, read_exact_at,
};
pub(crate) use stamp::{SETTLED, Stamp};
pub use window::{WINDOW_BYTES, WindowSum};
pub(crate) use writer::LogSync;
pub use writer::{Appended, LogWriter, SyncPolicy};

/// Where a log and its derived index live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogPaths {
    /// The log: `events.jsonl`.
    pub log: PathBuf,
    /// The derived index beside it: `events.index.redb`.
    pub index: PathBuf,
}

impl LogPaths {
    /// The paths of an agent directory: `DIR/logs/events.jsonl` and `DIR/logs/events.index.redb`.
    pub fn for_agent_dir(dir: impl AsRef<Path>) -> LogPaths {
        LogPaths::for_log_file(dir.as_ref().join("logs").join("events.jsonl"))
    }

    /// The paths for a log file anywhere: the index is `<stem>.index.redb` beside it.
    pub fn for_log_file(log: impl Into<PathBuf>) -> LogPaths {
        let log = log.into();
        let stem = log
            .file_stem()
            .map_or_else(|| "events".into(), |s| s.to_string_lossy().into_owned());
        let index = log.with_file_name(format!("{stem}.index.redb"));
        LogPaths { log, index }
    }
}
