//! Why an archive call failed: the typed errors of every archive operation.

use std::io;
use std::path::PathBuf;

/// Why an archive operation failed. Damage inside the archive is not an error of the reading
/// calls: a damaged frame or record is skipped and reported beside the answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// No data directory: none of `$AGENTLOG_DATA_DIR`, `$XDG_DATA_HOME`, `$HOME` is set.
    #[error("no data directory: set AGENTLOG_DATA_DIR, XDG_DATA_HOME or HOME")]
    NoDataDir,
    /// Another `agentlog archive` holds the archive's lock.
    #[error("the archive in {dir} is being written by another process; try again when it ends")]
    Locked {
        /// The archive directory.
        dir: PathBuf,
    },
    /// A file of the archive does not start with this format's header (another program's
    /// file, or a newer format).
    #[error("{path} is not an agentlog archive file of a version this build reads")]
    NotAnArchive {
        /// The file.
        path: PathBuf,
    },
    /// Nothing in the archive matches what was asked for.
    #[error("nothing in the archive matches {what}")]
    NoMatch {
        /// The session id, path or version asked for.
        what: String,
    },
    /// Restoring would overwrite a file that exists: nothing was written.
    #[error("{path} exists; restore never overwrites (choose another place with --to DIR)")]
    Exists {
        /// The file that is there.
        path: PathBuf,
    },
    /// An archived version cannot be put back whole: a frame or record of it is damaged or
    /// missing.
    #[error("version {version} of {path} cannot be restored whole: {why}")]
    Incomplete {
        /// The original path.
        path: PathBuf,
        /// The version.
        version: u32,
        /// What is missing or damaged.
        why: String,
    },
    /// A path given to archive is not a regular file (a FIFO, socket or device): it is not
    /// opened, so nothing blocks on it.
    #[error("{path} is a {kind}, not a transcript file; it cannot be archived")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// A transcript line is too long for one frame (1 GiB).
    #[error("{path} has a line of more than 1 GiB at offset {offset}; it cannot be archived")]
    LineTooLong {
        /// The transcript.
        path: PathBuf,
        /// Where the line starts.
        offset: u64,
    },
    /// Reading or writing failed.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What we tried.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl ArchiveError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
        source: io::Error,
    ) -> ArchiveError {
        ArchiveError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
