//! Errors of the search service: the reference's codes, plus the query layer's own.

use crate::query::QueryError;

/// Why a search could not answer.
///
/// Every variant has a stable `snake_case` [`SearchError::code`]; the request errors
/// ([`SearchError::is_bad_request`]) are the caller's to fix and are found before any log is
/// read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query is empty after trimming, or holds NUL.
    #[error("invalid query: {reason}")]
    InvalidQuery {
        /// What is wrong with it.
        reason: String,
    },
    /// The limit is not an integer from 1 to the maximum.
    #[error("invalid limit {limit}: a limit is an integer from 1 to {max}")]
    InvalidLimit {
        /// The limit asked for.
        limit: u64,
        /// The largest limit accepted.
        max: u64,
    },
    /// The cursor was not made by this index for this very request.
    #[error("invalid cursor: {reason}; start again without a cursor")]
    InvalidCursor {
        /// Why it is refused.
        reason: String,
    },
    /// The sessions searched changed since the cursor was made, so its offset means nothing.
    #[error(
        "stale cursor: the sessions searched changed since this cursor was made; start again without a cursor"
    )]
    StaleCursor,
    /// The search index failed (SQLite, its files); the logs are untouched.
    #[error("the search index failed while {operation}: {cause}")]
    IndexFailed {
        /// What was being done.
        operation: String,
        /// The underlying error.
        #[source]
        cause: crate::query::Cause,
    },
    /// The session searched cannot be read (its log breaks a rule); nothing of it is searched
    /// until its log changes.
    #[error("{message}")]
    Unreadable {
        /// The session.
        session_id: String,
        /// The query layer's code for what is wrong (`corrupt_session`, `invalid_surface`, ...).
        code: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A failure of the query layer: a bad filter or session id, a missing or unreadable
    /// session, a configuration value out of range.
    #[error(transparent)]
    Query(#[from] QueryError),
}

impl SearchError {
    /// The stable `snake_case` code of this error, for machine-readable output.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidQuery { .. } => "invalid_query",
            Self::InvalidLimit { .. } => "invalid_limit",
            Self::InvalidCursor { .. } => "invalid_cursor",
            Self::StaleCursor => "stale_cursor",
            Self::IndexFailed { .. } => "index_failed",
            Self::Unreadable { code, .. } => code,
            Self::Query(e) => e.code(),
        }
    }

    /// Whether the request itself is wrong (the same request can never succeed), as opposed to
    /// a session or the index failing.
    pub fn is_bad_request(&self) -> bool {
        match self {
            Self::InvalidQuery { .. }
            | Self::InvalidLimit { .. }
            | Self::InvalidCursor { .. }
            | Self::StaleCursor => true,
            Self::IndexFailed { .. } | Self::Unreadable { .. } => false,
            Self::Query(e) => matches!(
                e,
                QueryError::InvalidFilter { .. }
                    | QueryError::InvalidSessionId { .. }
                    | QueryError::SessionNotFound { .. }
                    | QueryError::InvalidConfig { .. }
            ),
        }
    }

    pub(crate) fn index(operation: impl Into<String>, cause: rusqlite::Error) -> Self {
        Self::IndexFailed {
            operation: operation.into(),
            cause: Box::new(cause),
        }
    }

    pub(crate) fn index_io(operation: impl Into<String>, cause: std::io::Error) -> Self {
        Self::IndexFailed {
            operation: operation.into(),
            cause: Box::new(cause),
        }
    }

    /// The static code of an unreadable session's stored code.
    pub(crate) fn unreadable_code(code: &str) -> &'static str {
        match code {
            "unsupported_format" => "unsupported_format",
            "invalid_surface" => "invalid_surface",
            "persistence_failed" => "persistence_failed",
            _ => "corrupt_session",
        }
    }

    pub(crate) fn filter(reason: impl Into<String>) -> Self {
        Self::Query(QueryError::InvalidFilter {
            reason: reason.into(),
            cause: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_reference_and_the_query_layer() {
        assert_eq!(SearchError::StaleCursor.code(), "stale_cursor");
        let nf = SearchError::from(QueryError::SessionNotFound {
            session_id: "x".into(),
        });
        assert_eq!(nf.code(), "session_not_found");
        assert!(nf.is_bad_request());
        let corrupt = SearchError::from(QueryError::CorruptSession {
            session_id: "x".into(),
            cause: "r".into(),
        });
        assert!(!corrupt.is_bad_request());
    }
}
