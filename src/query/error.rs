//! Errors of the session and query layer.
//!
//! The pure validators (envelope, surface fold, legacy normalization) report a
//! [`Violation`]: which event broke which rule. The store and the query service turn a
//! violation into a [`QueryError`] whose variant depends on *where* it was found: the
//! same broken surface is [`QueryError::InvalidEvent`] when a caller tries to append it
//! (nothing was written) and [`QueryError::InvalidSurface`] when it is found in a log.
//!
//! [`QueryError`] is the closed set a caller matches on; every variant has a stable
//! `snake_case` [`QueryError::code`] for machine output such as the CLI's
//! `{"error":"<code>","message":...}`. A variant found through another error (a damaged log,
//! a parse failure, an I/O error) keeps it, so `source()` leads to the root cause.

use std::{fmt, io};

/// A broken rule found in one event (or in the log as a whole when `seq` is `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The seq of the offending event, when the rule concerns one event.
    pub seq: Option<u64>,
    /// What is wrong, in words (no trailing period).
    pub message: String,
}

impl Violation {
    /// A violation of a rule by the event at `seq`.
    pub fn at(seq: u64, message: impl Into<String>) -> Self {
        Self {
            seq: Some(seq),
            message: message.into(),
        }
    }

    /// A violation by the log as a whole (or by an event whose seq is unreadable).
    pub fn log(message: impl Into<String>) -> Self {
        Self {
            seq: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.seq {
            Some(seq) => write!(f, "event seq {seq}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Violation {}

/// Why a header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The header is well formed but its format version is not the one this build reads.
    #[error("{0}")]
    Unsupported(String),
    /// The header breaks a shape rule.
    #[error("invalid session header: {0}")]
    Invalid(String),
}

/// The boxed cause of a backend failure, kept so an operator can see the root error.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Every failure of the store and the query service.
///
/// The set is closed for callers within a release (match the variants you can act on
/// and treat the rest as failures); it is `#[non_exhaustive]` so new variants are not a
/// breaking change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// No live session and no persisted session has this id.
    #[error(
        "session \"{session_id}\" was not found among the live or stored sessions; list the sessions to check the id"
    )]
    SessionNotFound {
        /// The id that was asked for.
        session_id: String,
    },

    /// The session exists but has no event with this seq.
    #[error(
        "session \"{session_id}\" has no event with seq {seq}; seqs are 0-based and end at the log's length minus one"
    )]
    EventNotFound {
        /// The session that was read.
        session_id: String,
        /// The seq that was asked for.
        seq: u64,
    },

    /// A `before`/`after` window bound is not an integer in `0..=read_window_max`.
    #[error("invalid read window: {reason}")]
    InvalidWindow {
        /// What is wrong with the window.
        reason: String,
    },

    /// A session or event filter is malformed (unknown kind, bad range, blank text, ...).
    #[error("invalid filter: {reason}")]
    InvalidFilter {
        /// What is wrong with the filter.
        reason: String,
        /// The JSON error, when the filter did not parse.
        #[source]
        cause: Option<serde_json::Error>,
    },

    /// A log's surface operations break the fold rules, so its current surface is undefined.
    #[error(
        "session \"{session_id}\" has an invalid surface: {violation}; the log was written by a tool that broke the surface rules and needs repair"
    )]
    InvalidSurface {
        /// The session whose log is broken.
        session_id: String,
        /// The first rule broken.
        #[source]
        violation: Violation,
    },

    /// The `parentSession` links form a cycle.
    #[error(
        "session \"{session_id}\" has an invalid lineage: {reason}; fix the parentSession headers of the sessions named"
    )]
    InvalidLineage {
        /// The session whose lineage was traced.
        session_id: String,
        /// What is wrong (the cycle found).
        reason: String,
    },

    /// The live and the persisted copy of a session disagree on an immutable header field.
    #[error(
        "session \"{session_id}\": the live and the stored header disagree on {field} (live {live}, stored {persisted}); two writers used the same id, so neither copy can be trusted for this query"
    )]
    SourceConflict {
        /// The session both sources hold.
        session_id: String,
        /// The header field that differs.
        field: &'static str,
        /// The live (or first-read) value, as JSON.
        live: String,
        /// The persisted (or later-read) value, as JSON.
        persisted: String,
    },

    /// The stored log is damaged or breaks the event rules.
    #[error(
        "stored session \"{session_id}\" is corrupt: {cause}; the raw log is kept unchanged, inspect or restore it"
    )]
    CorruptSession {
        /// The damaged session.
        session_id: String,
        /// What is damaged: the persisted side's `SourceError`, or
        /// the [`Violation`] a read rule found.
        #[source]
        cause: Cause,
    },

    /// The stored log uses a format this build does not read (nothing is damaged).
    #[error("stored session \"{session_id}\" {cause}")]
    UnsupportedFormat {
        /// The session that was refused.
        session_id: String,
        /// Why, including the direction (newer/older) and what to do: the persisted side's
        /// `SourceError`, or the [`Violation`] of an unknown type.
        #[source]
        cause: Cause,
    },

    /// The persisted side (files, index) failed; the data may be fine.
    #[error(
        "{operation} failed in the persisted store: {cause}; retry, and check the store directory if it persists"
    )]
    PersistenceFailed {
        /// What was being done.
        operation: String,
        /// The underlying error.
        #[source]
        cause: Cause,
    },

    /// An event offered for append breaks a rule; nothing was written.
    #[error("rejected append to session \"{session_id}\": {violation}; nothing was written")]
    InvalidEvent {
        /// The session appended to.
        session_id: String,
        /// The rule broken.
        #[source]
        violation: Violation,
    },

    /// A session header offered for creation breaks a rule.
    #[error("{cause}")]
    InvalidHeader {
        /// What is wrong.
        #[source]
        cause: HeaderError,
    },

    /// A session id cannot be used as a directory name.
    #[error(
        "invalid session id {id:?}: {reason}; ids are 1-255 bytes without '/', '\\', ':', NUL, control characters or '..', and do not start with '.'"
    )]
    InvalidSessionId {
        /// The rejected id.
        id: String,
        /// Which rule it breaks.
        reason: String,
    },

    /// A session with this id already exists (live or persisted).
    #[error("session \"{session_id}\" already exists; choose another id")]
    SessionAlreadyExists {
        /// The taken id.
        session_id: String,
    },

    /// The session exists but is not open for writing through this store.
    #[error(
        "session \"{session_id}\" is not live in this store; only sessions created through this store in this process can be appended to"
    )]
    SessionNotLive {
        /// The session.
        session_id: String,
    },

    /// A configuration value is out of range.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// Which value and why.
        reason: String,
    },
}

impl QueryError {
    /// The stable `snake_case` code of this error, for machine-readable output.
    pub fn code(&self) -> &'static str {
        match self {
            Self::SessionNotFound { .. } => "session_not_found",
            Self::EventNotFound { .. } => "event_not_found",
            Self::InvalidWindow { .. } => "invalid_window",
            Self::InvalidFilter { .. } => "invalid_filter",
            Self::InvalidSurface { .. } => "invalid_surface",
            Self::InvalidLineage { .. } => "invalid_lineage",
            Self::SourceConflict { .. } => "source_conflict",
            Self::CorruptSession { .. } => "corrupt_session",
            Self::UnsupportedFormat { .. } => "unsupported_format",
            Self::PersistenceFailed { .. } => "persistence_failed",
            Self::InvalidEvent { .. } => "invalid_event",
            Self::InvalidHeader { .. } => "invalid_header",
            Self::InvalidSessionId { .. } => "invalid_session_id",
            Self::SessionAlreadyExists { .. } => "session_already_exists",
            Self::SessionNotLive { .. } => "session_not_live",
            Self::InvalidConfig { .. } => "invalid_config",
        }
    }

    /// The error as the CLI's JSON object: `{"error": code, "message": text}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "error": self.code(), "message": self.to_string() })
    }
}

/// Shorthand for results of this crate.
pub(crate) type Result<T, E = QueryError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_snake_case_and_json_carries_the_message() {
        let err = QueryError::EventNotFound {
            session_id: "s".into(),
            seq: 9,
        };
        assert_eq!(err.code(), "event_not_found");
        let json = err.to_json();
        assert_eq!(json["error"], "event_not_found");
        assert!(json["message"].as_str().unwrap().contains("seq 9"));
    }

    #[test]
    fn violation_names_the_event() {
        assert_eq!(
            Violation::at(2, "seq 2 is not contiguous; expected 1").to_string(),
            "event seq 2: seq 2 is not contiguous; expected 1"
        );
    }
}

/// Why the persisted side could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The session is not stored.
    #[error("the session is not stored")]
    NotFound,
    /// The stored log is damaged (unparsable or non-contiguous committed records, a bad
    /// header, an identity mismatch).
    #[error("{reason}")]
    Corrupt {
        /// What is damaged, and where.
        reason: String,
        /// The error that found it (a JSON error, a broken event or header rule), if any.
        #[source]
        cause: Option<Cause>,
    },
    /// The stored log uses a format version this build does not read.
    #[error("{0}")]
    Unsupported(#[source] HeaderError),
    /// The backend failed (I/O, index); the data may be intact.
    #[error("{context}: {cause}")]
    Failed {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        cause: Cause,
    },
}

impl SourceError {
    /// Damage described by `reason` alone.
    pub fn corrupt(reason: impl Into<String>) -> Self {
        Self::Corrupt {
            reason: reason.into(),
            cause: None,
        }
    }

    /// Damage found by `cause`; `reason` says what and where, and its text ends with the
    /// cause's.
    pub(crate) fn corrupt_by(reason: impl Into<String>, cause: impl Into<Cause>) -> Self {
        Self::Corrupt {
            reason: reason.into(),
            cause: Some(cause.into()),
        }
    }

    pub(crate) fn io(context: impl Into<String>, err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::NotFound {
            Self::NotFound
        } else {
            Self::Failed {
                context: context.into(),
                cause: Box::new(err),
            }
        }
    }
}

impl From<HeaderError> for SourceError {
    fn from(e: HeaderError) -> Self {
        match e {
            HeaderError::Unsupported(_) => Self::Unsupported(e),
            HeaderError::Invalid(ref m) => Self::corrupt_by(m.clone(), e),
        }
    }
}
