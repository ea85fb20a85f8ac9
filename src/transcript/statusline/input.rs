//! The status line's input: the JSON object Claude Code passes on stdin to a `statusLine`
//! command, and what it says of the model's context window.

use std::path::PathBuf;

/// The most stdin a status line reads (Claude Code sends well under a kilobyte).
pub const MAX_STATUS_INPUT: usize = 1 << 20;

/// The fields of Claude Code's status line input this command uses; others are ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusInput {
    /// `session_id`.
    pub session_id: Option<String>,
    /// `transcript_path`: the session's transcript.
    pub transcript_path: PathBuf,
    /// `model.id`.
    pub model_id: Option<String>,
    /// `model.display_name`.
    pub model_name: Option<String>,
    /// `cwd` (or `workspace.current_dir`).
    pub cwd: Option<String>,
}

/// Why the status line input was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatusInputError {
    /// Nothing, or only whitespace, on stdin.
    #[error("no status line input on stdin (Claude Code passes a JSON object)")]
    Empty,
    /// More than [`MAX_STATUS_INPUT`] bytes.
    #[error("the status line input is longer than {MAX_STATUS_INPUT} bytes")]
    TooLong,
    /// Not one JSON object.
    #[error("the status line input is not a JSON object: {0}")]
    NotJson(String),
    /// No `transcript_path` string.
    #[error("the status line input has no transcript_path string")]
    NoTranscript,
}

/// Reads Claude Code's status line input: one JSON object with at least a `transcript_path`
/// string; fields of another type are taken as absent, unknown fields are ignored (a key
/// given twice: the last, as JSON readers take it).
pub fn parse_status_input(bytes: &[u8]) -> Result<StatusInput, StatusInputError> {
    if bytes.len() > MAX_STATUS_INPUT {
        return Err(StatusInputError::TooLong);
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(StatusInputError::Empty);
    }
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| StatusInputError::NotJson(e.to_string()))?;
    if !value.is_object() {
        return Err(StatusInputError::NotJson("another JSON value".to_owned()));
    }
    // A string field, if it is a non-empty string (an object field of another type is absent).
    let text = |object: &str, key: &str| {
        let holder = if object.is_empty() {
            Some(&value)
        } else {
            value.get(object).filter(|v| v.is_object())
        };
        holder
            .and_then(|h| h.get(key))
            .and_then(serde_json::Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let path = text("", "transcript_path").ok_or(StatusInputError::NoTranscript)?;
    Ok(StatusInput {
        session_id: text("", "session_id"),
        transcript_path: PathBuf::from(path),
        model_id: text("model", "id"),
        model_name: text("model", "display_name"),
        cwd: text("", "cwd").or_else(|| text("workspace", "current_dir")),
    })
}

/// The context window of a Claude model, in tokens: 1,000,000 for the 1M-context variants
/// (an id or name with `[1m]` or `1M`), 200,000 for every other model.
pub fn context_window(model_id: Option<&str>, model_name: Option<&str>) -> u64 {
    let long = [model_id, model_name].into_iter().flatten().any(|m| {
        let m = m.to_ascii_lowercase();
        m.contains("[1m]") || m.contains("1m context") || m.contains("(1m")
    });
    if long { 1_000_000 } else { 200_000 }
}
