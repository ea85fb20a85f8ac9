//! Why a transcript could not be read: the typed errors of every transcript call.

use std::io;
use std::path::{Path, PathBuf};

/// Why a transcript could not be read. Problems with its index are never errors: a damaged,
/// busy or unwritable index is rebuilt or stepped around, and the outcome says so.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// There is no file at the path.
    #[error("no transcript at {path}")]
    NotFound {
        /// The path looked at.
        path: PathBuf,
    },
    /// The path is not a regular file (a directory, FIFO, socket, device).
    #[error("{path} is a {kind}, not a transcript file")]
    NotAFile {
        /// The path looked at.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// The file is empty, or holds no complete line yet.
    #[error("{path} holds no complete line yet; nothing to read")]
    Empty {
        /// The transcript.
        path: PathBuf,
    },
    /// No line among the first ones looks like a transcript of a supported agent.
    #[error(
        "{path} does not look like a Claude Code, Codex, pi, Gemini CLI, Qwen Code, Copilot CLI or Kimi Code transcript (pass --format to read it as one)"
    )]
    UnknownFormat {
        /// The transcript.
        path: PathBuf,
    },
    /// A `.json` file read as an older single-JSON Gemini CLI session is not one (not JSON,
    /// truncated, or `messages` is not a list).
    #[error("{path} is not a Gemini CLI session document: {detail}")]
    NotADocument {
        /// The file.
        path: PathBuf,
        /// What the JSON reader found.
        detail: String,
    },
    /// The file is there but cannot be read as its format says (a damaged database, a
    /// database that kept changing while it was copied).
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Reading the transcript failed (permissions, I/O).
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

impl TranscriptError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
        source: io::Error,
    ) -> TranscriptError {
        TranscriptError::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// An error of `op` on `path`: [`TranscriptError::NotFound`] when nothing is there.
    pub(crate) fn at(op: &'static str, path: &Path, source: io::Error) -> TranscriptError {
        match source.kind() {
            io::ErrorKind::NotFound => TranscriptError::NotFound {
                path: path.to_path_buf(),
            },
            _ => TranscriptError::io(op, path, source),
        }
    }
}
