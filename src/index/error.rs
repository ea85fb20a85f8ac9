use std::path::{Path, PathBuf};
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

impl IndexError {
    /// The storage engine failed on the index file, saying `e`.
    pub(crate) fn storage(path: &Path, e: impl std::fmt::Display) -> IndexError {
        IndexError::Storage {
            path: path.to_path_buf(),
            detail: e.to_string(),
        }
    }

    /// A redb failure: an I/O failure of the disk ([`IndexError::Io`]), or anything else, which
    /// means the file is not a sound index ([`IndexError::Storage`]). A read past the end of the
    /// file is the latter: the file is shorter than its own pages say (damaged or truncated).
    pub(crate) fn redb_failure(path: &Path, e: impl Into<redb::Error>) -> IndexError {
        match e.into() {
            redb::Error::Io(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                IndexError::storage(path, source)
            }
            redb::Error::Io(source) => IndexError::Io {
                path: path.to_path_buf(),
                source,
            },
            redb::Error::PreviousIo => IndexError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other(
                    "an earlier I/O error left the index unusable until it is reopened",
                ),
            },
            other => IndexError::storage(path, other),
        }
    }

    /// A failure to read the log (as opposed to the index).
    pub(crate) fn log_read(log: &Path, e: std::io::Error) -> IndexError {
        IndexError::Log(LogError::io("read", log, e))
    }

    /// The index after a write panicked inside redb: its handle was leaked and is gone.
    pub(crate) fn damaged_earlier(path: &Path) -> IndexError {
        IndexError::Damaged {
            path: path.to_path_buf(),
            detail: "an earlier write panicked inside redb".to_owned(),
        }
    }
}

/// Why a writable open did not happen.
pub(crate) enum Unwritable {
    /// Another process holds the index for writing.
    Busy,
    /// The index cannot be written here.
    NotWritable(String),
    /// Any other failure.
    Failed(IndexError),
}

impl From<IndexError> for Unwritable {
    fn from(e: IndexError) -> Unwritable {
        Unwritable::Failed(e)
    }
}
