use std::io;
use std::path::PathBuf;

/// Errors of the log layer: opening, reading and appending to `events.jsonl`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// There is no log file at the path.
    #[error("no log at {path}")]
    NotFound {
        /// The path looked at.
        path: PathBuf,
    },
    /// The path exists but is not a regular file (a directory, FIFO, socket, device).
    #[error("{path} is a {kind}, not a regular file; agentlog only reads and writes plain files")]
    NotAFile {
        /// The path looked at.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Another process (or another writer in this process) holds the log's writer lock.
    #[error(
        "{path} is locked by another writer; agentlog allows one writer per log (readers need no lock)"
    )]
    Locked {
        /// The log.
        path: PathBuf,
    },
    /// An event given to `append` is not a single JSON object; nothing of its batch was
    /// written.
    #[error("event {index} of the batch rejected, nothing written: {reason}")]
    InvalidEvent {
        /// Its position in the batch (0 for a single event).
        index: usize,
        /// What is wrong with it.
        reason: String,
        /// The error behind it, for an event that could not be serialized.
        source: Option<serde_json::Error>,
    },
    /// A write failed. `rolled_back` says whether the partial bytes were removed again; if not,
    /// the next append terminates the fragment first so it cannot merge with a new event.
    #[error("cannot append to {path}: {source} (partial write rolled back: {rolled_back})")]
    Write {
        /// The log.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
        /// Whether the log is back at its previous length.
        rolled_back: bool,
    },
    /// Any other I/O failure, with the operation that failed.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What we tried (e.g. "open", "read", "sync").
        op: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl LogError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> LogError {
        LogError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
