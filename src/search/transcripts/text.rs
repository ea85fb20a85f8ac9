//! The searchable text of one transcript line (docs/SEARCH.md, "Transcript search").
//!
//! The same rule as a store's events (docs/SESSIONS.md, "Text extraction"): what a person
//! would look for is the conversation, so message text, tool names and inputs, and tool
//! results are kept; reasoning, images and bookkeeping lines are not. Parts are trimmed, empty
//! parts dropped, the rest joined with `\n`, non-string values written as JSON.
//!
//! What each format's lines hold is its own ([`formats`]); a format is registered here by one
//! line of [`line_parts`].

use serde::Serialize;
use serde_json::Value;

use crate::query::join_parts;
use crate::search::transcripts::formats::{self, LineParts};
use crate::transcript::Format;

/// What a transcript line holds for search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TranscriptLineText {
    /// The line's type as its format names it (Claude Code `user`/`assistant`, Codex's payload
    /// type such as `message` or `function_call`, pi `message`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The message's role, when the line is a message.
    pub role: Option<String>,
    /// The line's time, epoch ms, when it has a readable one.
    pub time: Option<i64>,
    /// The searchable text; never empty.
    pub text: String,
}

/// The searchable text of one complete transcript line (without its `\n`), or `None` when the
/// line holds none (not a JSON object, not a message, or a message without text).
pub fn transcript_line_text(format: Format, line: &[u8]) -> Option<TranscriptLineText> {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(line) else {
        return None;
    };
    let line = Value::Object(object);
    let kind = line.get("type").and_then(Value::as_str)?;
    let mut parts = Vec::new();
    let (kind, role) = line_parts(format)(kind, &line, &mut parts)?;
    let text = join_parts(&parts);
    if text.is_empty() {
        return None;
    }
    Some(TranscriptLineText {
        kind,
        role,
        time: time_of(&line),
        text,
    })
}

/// The text of a line a user wrote (its role `user`), or `None`: how the session catalog
/// finds a session's title (`agentlog::transcript::PromptText`).
pub fn user_prompt(format: Format, line: &[u8]) -> Option<String> {
    transcript_line_text(format, line)
        .filter(|t| t.role.as_deref() == Some("user"))
        .map(|t| t.text)
}

/// How the lines of `format` give their parts: the one place a format is registered.
fn line_parts(format: Format) -> LineParts {
    match format {
        Format::ClaudeCode => formats::claude,
        Format::Codex => formats::codex,
        Format::Pi => formats::pi,
        Format::Copilot => formats::copilot,
        Format::Gemini => formats::gemini,
        Format::Qwen => formats::qwen,
        // A database, not lines: no line of a file reads as it.
        Format::OpenCode => |_, _, _| None,
        Format::Kimi => formats::kimi,
    }
}

/// The line's time: an ISO-8601 `timestamp` (Claude Code, Codex and pi write one), else a
/// numeric one in epoch ms, else Kimi Code's `time` in epoch ms.
fn time_of(line: &Value) -> Option<i64> {
    match line.get("timestamp").or_else(|| line.get("time"))? {
        Value::String(s) => s
            .trim()
            .parse::<jiff::Timestamp>()
            .ok()
            .map(jiff::Timestamp::as_millisecond),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_is_the_timestamp_in_iso_or_epoch_ms() {
        let line = |ts: &str| {
            format!(
                r#"{{"type":"user","timestamp":{ts},"message":{{"role":"user","content":"hi"}}}}"#
            )
        };
        let time = |ts: &str| {
            transcript_line_text(Format::ClaudeCode, line(ts).as_bytes())
                .unwrap()
                .time
        };
        assert_eq!(time(r#""1970-01-01T00:00:01.5Z""#), Some(1500));
        assert_eq!(time("1500"), Some(1500));
        assert_eq!(time(r#""yesterday""#), None);
        assert_eq!(time("null"), None);
    }
}
