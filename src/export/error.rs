//! What can stop an export. Nothing here is a partial result: a failed source leaves its last
//! committed export in place (`docs/EXPORT.md`, "Commit protocol").

use std::path::{Path, PathBuf};

use parquet::errors::ParquetError;

use crate::log::LogError;

/// Errors of [`export`](super::export) and [`compact`](super::compact).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A SOURCE path does not exist.
    #[error("{path}: no such file or directory")]
    NoSource {
        /// The path given.
        path: PathBuf,
    },
    /// A SOURCE path is none of the kinds that can be exported.
    #[error("{path} is not an agent directory, a session store or a transcript: {reason}")]
    NotASource {
        /// The path given.
        path: PathBuf,
        /// What was found there.
        reason: String,
    },
    /// A SOURCE is of a kind this build cannot export yet.
    #[error("{path}: {what} cannot be exported by this build")]
    Unsupported {
        /// The path given.
        path: PathBuf,
        /// What it is.
        what: String,
    },
    /// The `--host` name cannot name files.
    #[error("invalid host name {host:?}: {reason}")]
    InvalidHost {
        /// The name given.
        host: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// Another export to the same dataset under the same host name is running.
    #[error("another export for host {host:?} holds {path}; wait for it to finish")]
    Locked {
        /// The host name.
        host: String,
        /// The lock file.
        path: PathBuf,
    },
    /// The log changed while it was being exported (rewritten or truncated under us);
    /// nothing of it was committed. Run the export again.
    #[error("{path} changed while it was exported; nothing was committed for it, run again")]
    Changed {
        /// The log.
        path: PathBuf,
    },
    /// A source used up the part serials its file names can carry.
    #[error("source {key}: no part serials left; delete its state to export it anew")]
    TooManyParts {
        /// The source's key (its state is `_agentlog/<host>/<key>.state`).
        key: String,
    },
    /// A crash test stopped the export after this file-system step.
    #[error("interrupted after step {step} (a crash test)")]
    Interrupted {
        /// The step.
        step: u64,
    },
    /// A log could not be opened.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A session store could not be listed.
    #[error("cannot list the session store {path}: {source}")]
    Store {
        /// The store directory.
        path: PathBuf,
        /// What went wrong.
        source: crate::query::SourceError,
    },
    /// A transcript could not be read.
    #[error("cannot read the transcript {path}: {source}")]
    Transcript {
        /// The transcript.
        path: PathBuf,
        /// What went wrong.
        source: crate::transcript::TranscriptError,
    },
    /// A file operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing or reading Parquet failed.
    #[error("parquet {path}: {source}")]
    Parquet {
        /// The part file.
        path: PathBuf,
        /// The underlying error.
        source: ParquetError,
    },
}

impl ExportError {
    /// An I/O error while doing `action` on `path`.
    pub fn io(action: &'static str, path: &Path, source: std::io::Error) -> ExportError {
        ExportError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// A Parquet error on the part file `path`.
    pub fn parquet(path: &Path, source: ParquetError) -> ExportError {
        ExportError::Parquet {
            path: path.to_path_buf(),
            source,
        }
    }
}
