use std::path::PathBuf;
use std::time::Duration;

use super::{ReadOnlyReason, StaleReason};
use crate::log::LogError;

/// Errors of the index layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The log could not be opened or read.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A writer needed the index, but another process kept it open for longer than allowed.
    #[error(
        "index {path} is held by another process (waited {waited:?}); is another agentlog process indexing or writing this log?"
    )]
    Busy {
        /// The index file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// The index is stale and cannot be rebuilt by this process.
    #[error("index {path} is stale ({reason}) and cannot be rebuilt here: {why}")]
    StaleReadOnly {
        /// The index file.
        path: PathBuf,
        /// Why it is stale.
        reason: StaleReason,
        /// Why we could not rebuild it.
        why: ReadOnlyReason,
    },
    /// There is no usable index and none can be made.
    #[error("no usable index at {path}: {detail}")]
    Unavailable {
        /// The index file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The log changed (shrank) while it was being indexed; open again to re-validate.
    #[error("the log behind {path} changed while it was being indexed; open it again")]
    LogChanged {
        /// The index file.
        path: PathBuf,
    },
    /// The index file could not be read or written: a full disk, an I/O error. Nothing is
    /// known to be wrong with its contents, so it is not rebuilt for this; retry when the disk
    /// is healthy (a writer does so at its next commit).
    #[error("cannot read or write the index {path}: {source}")]
    Io {
        /// The index file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The storage engine failed while reading or writing the index.
    #[error("index {path}: storage error: {detail}")]
    Storage {
        /// The index file.
        path: PathBuf,
        /// What redb reported.
        detail: String,
    },
    /// A row of the index failed its checksum or decoding during a query.
    #[error("index {path} is damaged ({detail}); reopen it to rebuild from the log")]
    Damaged {
        /// The index file.
        path: PathBuf,
        /// Which row.
        detail: String,
    },
}
