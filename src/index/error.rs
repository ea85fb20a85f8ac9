//! [`IndexError`]: what can go wrong with the agent log's index.

use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use super::derived::cause::{Cause, Source};
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
        /// The error behind it, when there is one (redb's or the file system's).
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
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
    #[error("index {path}: storage error: {source}")]
    Storage {
        /// The index file.
        path: PathBuf,
        /// What redb reported: its error, or what went wrong where it gave none (a row that
        /// does not decode, a panic inside it).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A row of the index failed its checksum or decoding during a query.
    #[error("index {path} is damaged ({detail}); reopen it to rebuild from the log")]
    Damaged {
        /// The index file.
        path: PathBuf,
        /// Which row, or what failed.
        detail: String,
        /// The storage error the damage was found by, if it was found by one.
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl IndexError {
    /// The storage engine failed on the index file with `e`.
    pub(crate) fn storage(path: &Path, e: impl Into<Source>) -> IndexError {
        IndexError::Storage {
            path: path.to_path_buf(),
            source: e.into(),
        }
    }

    /// The index is damaged: `detail` says where, with no error behind it.
    pub(crate) fn damaged(path: &Path, detail: impl Into<String>) -> IndexError {
        IndexError::Damaged {
            path: path.to_path_buf(),
            detail: detail.into(),
            source: None,
        }
    }

    /// No usable index, for `cause`.
    pub(crate) fn unavailable(path: &Path, cause: Cause) -> IndexError {
        IndexError::Unavailable {
            path: path.to_path_buf(),
            detail: cause.detail,
            source: cause.source,
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
        IndexError::damaged(path, "an earlier write panicked inside redb")
    }
}

/// Why a writable open of the agent log's index did not happen.
pub(crate) type Unwritable = super::derived::sequence::Unwritable<IndexError>;

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    #[test]
    fn a_storage_error_keeps_redbs_error_as_its_source() {
        let path = Path::new("events.index.redb");
        let corrupted = || redb::Error::Corrupted("page 3".to_owned());
        let e = IndexError::redb_failure(path, corrupted());
        assert_eq!(
            e.to_string(),
            format!("index events.index.redb: storage error: {}", corrupted())
        );
        let source = e.source().and_then(|s| s.downcast_ref::<redb::Error>());
        assert!(matches!(source, Some(redb::Error::Corrupted(_))), "{e:?}");
        // A file shorter than its pages say is storage damage too, with the I/O error behind.
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        let e = IndexError::redb_failure(path, redb::Error::Io(eof));
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            source.map(std::io::Error::kind),
            Some(std::io::ErrorKind::UnexpectedEof)
        );
    }

    #[test]
    fn an_unavailable_index_keeps_the_error_behind_it_and_a_description_has_none() {
        let path = Path::new("events.index.redb");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = IndexError::unavailable(path, Cause::error(denied));
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            source.map(std::io::Error::kind),
            Some(std::io::ErrorKind::PermissionDenied)
        );
        let e = IndexError::unavailable(path, Cause::described("there is no index"));
        assert!(e.source().is_none());
        assert_eq!(
            e.to_string(),
            "no usable index at events.index.redb: there is no index"
        );
    }
}
