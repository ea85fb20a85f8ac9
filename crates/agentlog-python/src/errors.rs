//! The exception hierarchy: one Python class per Rust error enum, one subclass per variant a
//! caller can act on, all under `AgentlogError`. Every raised instance carries `code`, the
//! stable string the CLI prints as `{"error": code}`, plus the variant's fields as attributes.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::{IntoPyObjectExt, create_exception};

use agentlog::generation::{
    GenerationError as RustGenerationError, ManifestError as RustManifestError,
};
use agentlog::index::IndexError as RustIndexError;
use agentlog::log::LogError as RustLogError;
use agentlog::query::QueryError as RustQueryError;
use agentlog::search::SearchError as RustSearchError;
use agentlog::transcript::{Format, PriceError, TranscriptError as RustTranscriptError};

create_exception!(
    agentlog,
    AgentlogError,
    PyException,
    "Base class of every agentlog error; `code` is the CLI's stable error code."
);

create_exception!(
    agentlog,
    GenerationError,
    AgentlogError,
    "The current generation cannot be answered (the Rust `GenerationError`)."
);
create_exception!(
    agentlog,
    NoLog,
    GenerationError,
    "There is no log at `path` (`AGENT_DIR/logs/events.jsonl`)."
);
create_exception!(
    agentlog,
    MoltMismatch,
    GenerationError,
    "The log does not prove the expected generation: `expected` was asked for, the latest \
     boundary says `found` (None: it carries no valid molt_count, or there is no boundary)."
);
create_exception!(
    agentlog,
    ManifestError,
    GenerationError,
    "The agent's `.agent.json` cannot be read or holds no valid `molt_count`."
);

create_exception!(
    agentlog,
    LogError,
    AgentlogError,
    "Opening, reading or appending to the log failed (the Rust `LogError`)."
);
create_exception!(
    agentlog,
    NotAFile,
    LogError,
    "The log path exists but is not a regular file."
);
create_exception!(
    agentlog,
    Locked,
    LogError,
    "Another writer holds the log's lock (one writer per log; readers need none)."
);
create_exception!(
    agentlog,
    InvalidEvent,
    LogError,
    "An event is not one JSON object within the line limit; nothing of its batch was written. \
     `index` is its position in the batch."
);

create_exception!(
    agentlog,
    IndexFailure,
    AgentlogError,
    "The index failed in a way no lower tier can step around (the Rust `IndexError`; named so \
     as not to shadow Python's built-in IndexError)."
);
create_exception!(
    agentlog,
    IndexBusy,
    IndexFailure,
    "Another process kept the index busy for longer than allowed."
);
create_exception!(
    agentlog,
    IndexDamaged,
    IndexFailure,
    "A row of the index failed its checksum; reopening rebuilds it from the log."
);

create_exception!(
    agentlog,
    QueryError,
    AgentlogError,
    "A session-store query failed (the Rust `QueryError`); `code` names the variant."
);
create_exception!(
    agentlog,
    NoStore,
    QueryError,
    "The store root is not a directory."
);
create_exception!(
    agentlog,
    SessionNotFound,
    QueryError,
    "No session has this id."
);
create_exception!(
    agentlog,
    EventNotFound,
    QueryError,
    "The session has no event with this seq."
);
create_exception!(
    agentlog,
    InvalidQuery,
    QueryError,
    "A window, filter, session id or configuration value is malformed."
);
create_exception!(
    agentlog,
    InvalidCursor,
    InvalidQuery,
    "A search cursor was not made for this very request by this store's index; search again \
     without it."
);
create_exception!(
    agentlog,
    StaleCursor,
    InvalidCursor,
    "The sessions a search cursor covers changed since it was made; search again without it."
);
create_exception!(
    agentlog,
    SearchIndexFailed,
    QueryError,
    "The search index (`root/.agentlog-search/`) failed; the logs are untouched."
);
create_exception!(
    agentlog,
    CorruptSession,
    QueryError,
    "A stored session log is damaged, breaks the event rules, or has an invalid surface or \
     lineage."
);

create_exception!(
    agentlog,
    TranscriptError,
    AgentlogError,
    "A transcript could not be read (the Rust `TranscriptError`); `code` names the variant. \
     Problems with its index are never errors: the index is rebuilt or stepped around."
);
create_exception!(
    agentlog,
    NoTranscript,
    TranscriptError,
    "There is no file at `path`."
);
create_exception!(
    agentlog,
    EmptyTranscript,
    TranscriptError,
    "The transcript holds no complete line yet."
);
create_exception!(
    agentlog,
    UnknownFormat,
    TranscriptError,
    "No line among the first ones looks like Claude Code, Codex or pi; pass `format`."
);

create_exception!(
    agentlog,
    InvalidArgument,
    AgentlogError,
    "An argument does not parse (a day, a time zone, a cost mode, a grouping, a status-line \
     input); `argument` names it. The CLI's `bad_input`."
);
create_exception!(
    agentlog,
    PricingError,
    AgentlogError,
    "The price file cannot be read or is not a price table in LiteLLM's format; `path` names \
     it. The CLI's `bad_pricing`."
);

/// Registers every exception class on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("AgentlogError", py.get_type::<AgentlogError>())?;
    m.add("GenerationError", py.get_type::<GenerationError>())?;
    m.add("NoLog", py.get_type::<NoLog>())?;
    m.add("MoltMismatch", py.get_type::<MoltMismatch>())?;
    m.add("ManifestError", py.get_type::<ManifestError>())?;
    m.add("LogError", py.get_type::<LogError>())?;
    m.add("NotAFile", py.get_type::<NotAFile>())?;
    m.add("Locked", py.get_type::<Locked>())?;
    m.add("InvalidEvent", py.get_type::<InvalidEvent>())?;
    m.add("IndexFailure", py.get_type::<IndexFailure>())?;
    m.add("IndexBusy", py.get_type::<IndexBusy>())?;
    m.add("IndexDamaged", py.get_type::<IndexDamaged>())?;
    m.add("QueryError", py.get_type::<QueryError>())?;
    m.add("NoStore", py.get_type::<NoStore>())?;
    m.add("SessionNotFound", py.get_type::<SessionNotFound>())?;
    m.add("EventNotFound", py.get_type::<EventNotFound>())?;
    m.add("InvalidQuery", py.get_type::<InvalidQuery>())?;
    m.add("CorruptSession", py.get_type::<CorruptSession>())?;
    m.add("InvalidCursor", py.get_type::<InvalidCursor>())?;
    m.add("StaleCursor", py.get_type::<StaleCursor>())?;
    m.add("SearchIndexFailed", py.get_type::<SearchIndexFailed>())?;
    m.add("TranscriptError", py.get_type::<TranscriptError>())?;
    m.add("NoTranscript", py.get_type::<NoTranscript>())?;
    m.add("EmptyTranscript", py.get_type::<EmptyTranscript>())?;
    m.add("UnknownFormat", py.get_type::<UnknownFormat>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("PricingError", py.get_type::<PricingError>())?;
    Ok(())
}

/// An exception instance of class `E` with `message`, `code` and the given attributes.
fn raise<E: pyo3::PyTypeInfo>(
    py: Python<'_>,
    message: String,
    code: &str,
    attributes: &[(&str, Py<PyAny>)],
) -> PyErr {
    let err = PyErr::new::<E, _>(message);
    let value = err.value(py);
    // Setting an attribute on a fresh exception instance cannot fail in practice; if it did,
    // the exception is still raised, only without that attribute.
    let _ = value.setattr("code", code);
    for (name, attribute) in attributes {
        let _ = value.setattr(*name, attribute);
    }
    err
}

fn object<'py, T: IntoPyObjectExt<'py>>(py: Python<'py>, value: T) -> Py<PyAny> {
    value.into_py_any(py).unwrap_or_else(|_| py.None())
}

/// Maps a generation-layer error.
pub fn generation_error(py: Python<'_>, error: RustGenerationError) -> PyErr {
    let message = error.to_string();
    match error {
        RustGenerationError::NoLog { path } => raise::<NoLog>(
            py,
            message,
            "no_log",
            &[("path", object(py, path.as_os_str()))],
        ),
        RustGenerationError::MoltMismatch {
            expected,
            found,
            boundary,
            tier,
        } => raise::<MoltMismatch>(
            py,
            message,
            "molt_mismatch",
            &[
                ("expected", object(py, expected)),
                ("found", object(py, found)),
                ("boundary_offset", object(py, boundary.map(|b| b.offset))),
                ("tier", object(py, tier.as_str())),
            ],
        ),
        RustGenerationError::Manifest(e) => manifest_error(py, &e),
        RustGenerationError::Log(e) => log_error(py, e),
        RustGenerationError::Index(e) => index_error(py, e),
        RustGenerationError::Read { path, .. } => raise::<LogError>(
            py,
            message,
            "io_error",
            &[("path", object(py, path.as_os_str()))],
        ),
        // Variants added later surface as the family's class.
        _ => raise::<GenerationError>(py, message, "io_error", &[]),
    }
}

/// Maps a manifest error.
pub fn manifest_error(py: Python<'_>, error: &RustManifestError) -> PyErr {
    let message = error.to_string();
    let path = match error {
        RustManifestError::Read { path, .. }
        | RustManifestError::NotJson { path, .. }
        | RustManifestError::NotAnObject { path }
        | RustManifestError::BadMoltCount { path, .. } => object(py, path.as_os_str()),
        _ => py.None(),
    };
    raise::<ManifestError>(py, message, "bad_manifest", &[("path", path)])
}

/// Maps a log-layer error.
pub fn log_error(py: Python<'_>, error: RustLogError) -> PyErr {
    let message = error.to_string();
    match error {
        RustLogError::NotFound { path } => raise::<NoLog>(
            py,
            message,
            "no_log",
            &[("path", object(py, path.as_os_str()))],
        ),
        RustLogError::NotAFile { path, .. } => raise::<NotAFile>(
            py,
            message,
            "not_a_file",
            &[("path", object(py, path.as_os_str()))],
        ),
        RustLogError::Locked { path } => raise::<Locked>(
            py,
            message,
            "locked",
            &[("path", object(py, path.as_os_str()))],
        ),
        RustLogError::InvalidEvent { index, .. } => raise::<InvalidEvent>(
            py,
            message,
            "invalid_event",
            &[("index", object(py, index))],
        ),
        _ => raise::<LogError>(py, message, "io_error", &[]),
    }
}

/// Maps an index-layer error.
pub fn index_error(py: Python<'_>, error: RustIndexError) -> PyErr {
    let message = error.to_string();
    match error {
        RustIndexError::Log(e) => log_error(py, e),
        RustIndexError::Busy { .. } => raise::<IndexBusy>(py, message, "index_error", &[]),
        RustIndexError::Damaged { .. } => raise::<IndexDamaged>(py, message, "index_error", &[]),
        _ => raise::<IndexFailure>(py, message, "index_error", &[]),
    }
}

/// Maps a query-layer error; `code` is the Rust error's own code.
pub fn query_error(py: Python<'_>, error: RustQueryError) -> PyErr {
    use RustQueryError as Q;
    let message = error.to_string();
    let code = error.code();
    match error {
        Q::SessionNotFound { session_id } => {
            raise::<SessionNotFound>(py, message, code, &[("session_id", object(py, session_id))])
        }
        Q::EventNotFound { session_id, seq } => raise::<EventNotFound>(
            py,
            message,
            code,
            &[
                ("session_id", object(py, session_id)),
                ("seq", object(py, seq)),
            ],
        ),
        Q::InvalidWindow { .. }
        | Q::InvalidFilter { .. }
        | Q::InvalidSessionId { .. }
        | Q::InvalidConfig { .. } => raise::<InvalidQuery>(py, message, code, &[]),
        Q::CorruptSession { .. }
        | Q::UnsupportedFormat { .. }
        | Q::InvalidSurface { .. }
        | Q::InvalidLineage { .. }
        | Q::SourceConflict { .. } => raise::<CorruptSession>(py, message, code, &[]),
        _ => raise::<QueryError>(py, message, code, &[]),
    }
}

/// Maps a search error: bad requests are `InvalidQuery` (cursors: `InvalidCursor`,
/// `StaleCursor`) or the query layer's own class; `code` is the Rust error's own code.
pub fn search_error(py: Python<'_>, error: RustSearchError) -> PyErr {
    use RustSearchError as S;
    let message = error.to_string();
    let code = error.code();
    match error {
        S::InvalidQuery { .. } => raise::<InvalidQuery>(py, message, code, &[]),
        S::InvalidLimit { limit, max } => raise::<InvalidQuery>(
            py,
            message,
            code,
            &[("limit", object(py, limit)), ("max", object(py, max))],
        ),
        S::InvalidCursor { .. } => raise::<InvalidCursor>(py, message, code, &[]),
        S::StaleCursor => raise::<StaleCursor>(py, message, code, &[]),
        S::IndexFailed { .. } => raise::<SearchIndexFailed>(py, message, code, &[]),
        S::Unreadable { session_id, .. } => {
            raise::<CorruptSession>(py, message, code, &[("session_id", object(py, session_id))])
        }
        S::Query(e) => query_error(py, e),
        // Variants added later surface as the family's class.
        _ => raise::<QueryError>(py, message, code, &[]),
    }
}

/// Maps a transcript error; `code` is the CLI's for the same error.
pub fn transcript_error(py: Python<'_>, error: RustTranscriptError) -> PyErr {
    use RustTranscriptError as T;
    let message = error.to_string();
    match error {
        T::NotFound { path } => raise::<NoTranscript>(
            py,
            message,
            "no_transcript",
            &[("path", object(py, path.as_os_str()))],
        ),
        T::NotAFile { path, .. } => raise::<TranscriptError>(
            py,
            message,
            "not_a_file",
            &[("path", object(py, path.as_os_str()))],
        ),
        T::Empty { path } => raise::<EmptyTranscript>(
            py,
            message,
            "empty_transcript",
            &[("path", object(py, path.as_os_str()))],
        ),
        T::UnknownFormat { path } => raise::<UnknownFormat>(
            py,
            message,
            "unknown_format",
            &[("path", object(py, path.as_os_str()))],
        ),
        T::Io { path, .. } => raise::<TranscriptError>(
            py,
            message,
            "io_error",
            &[("path", object(py, path.as_os_str()))],
        ),
        // Variants added later surface as the family's class.
        _ => raise::<TranscriptError>(py, message, "io_error", &[]),
    }
}

/// `subagents=True` for a transcript that is not Claude Code's (the CLI's `bad_input`).
pub fn transcript_subagents_refused(
    py: Python<'_>,
    path: &std::path::Path,
    found: Format,
) -> PyErr {
    raise::<TranscriptError>(
        py,
        format!(
            "subagents apply to Claude Code transcripts; {} is {found}",
            path.display()
        ),
        "bad_input",
        &[("path", object(py, path.as_os_str()))],
    )
}

/// A missing store root.
pub fn no_store(py: Python<'_>, root: &std::path::Path) -> PyErr {
    raise::<NoStore>(
        py,
        format!("{} is not a session store directory", root.display()),
        "no_store",
        &[("path", object(py, root.as_os_str()))],
    )
}

/// An argument named `argument` that the library's parser refused (`error` says why).
pub fn invalid_argument(py: Python<'_>, argument: &str, error: &dyn std::fmt::Display) -> PyErr {
    raise::<InvalidArgument>(
        py,
        format!("{argument}: {error}"),
        "bad_input",
        &[("argument", object(py, argument))],
    )
}

/// A price file that cannot be used.
pub fn pricing_error(py: Python<'_>, path: &std::path::Path, error: &PriceError) -> PyErr {
    raise::<PricingError>(
        py,
        error.to_string(),
        "bad_pricing",
        &[("path", object(py, path.as_os_str()))],
    )
}

/// A failure inside the binding itself (a poisoned lock, an unrepresentable value).
pub fn internal(py: Python<'_>, message: String) -> PyErr {
    raise::<AgentlogError>(py, message, "internal", &[])
}
