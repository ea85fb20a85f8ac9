//! The status line's input: the JSON object Claude Code passes on stdin to a `statusLine`
//! command, and what it says of the model's context window.

use std::path::PathBuf;

/// The most stdin a status line reads (Claude Code sends well under a kilobyte).
pub const MAX_STATUS_INPUT: usize = 1 << 20;

/// The fields of Claude Code's status line input this command uses; others are ignored.
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// `context_window.context_window_size`: the window Claude Code says the model has.
    pub context_window_size: Option<u64>,
    /// `rate_limits.five_hour`: the plan's 5-hour limit.
    pub five_hour: Option<RateLimit>,
    /// `rate_limits.seven_day`: the plan's 7-day limit.
    pub seven_day: Option<RateLimit>,
}

/// A plan limit as Claude Code reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RateLimit {
    /// `used_percentage`.
    pub used_percentage: Option<f64>,
    /// `resets_at`, as given (a string, or a number written out).
    pub resets_at: Option<String>,
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
    let window = value
        .get("context_window")
        .and_then(|w| w.get("context_window_size"))
        .and_then(serde_json::Value::as_u64)
        .filter(|&n| n > 0);
    let limit = |name: &str| {
        let l = value.get("rate_limits")?.get(name)?;
        let used = l
            .get("used_percentage")
            .and_then(serde_json::Value::as_f64)
            .filter(|p| p.is_finite());
        let resets = l.get("resets_at").and_then(|r| match r {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        (used.is_some() || resets.is_some()).then_some(RateLimit {
            used_percentage: used,
            resets_at: resets,
        })
    };
    Ok(StatusInput {
        session_id: text("", "session_id"),
        transcript_path: PathBuf::from(path),
        model_id: text("model", "id"),
        model_name: text("model", "display_name"),
        cwd: text("", "cwd").or_else(|| text("workspace", "current_dir")),
        context_window_size: window,
        five_hour: limit("five_hour"),
        seven_day: limit("seven_day"),
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
