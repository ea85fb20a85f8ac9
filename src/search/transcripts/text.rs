//! The searchable text of one transcript line (docs/SEARCH.md, "Transcript search").
//!
//! The same rule as a store's events (docs/SESSIONS.md, "Text extraction"): what a person
//! would look for is the conversation, so message text, tool names and inputs, and tool
//! results are kept; reasoning, images and bookkeeping lines are not. Parts are trimmed, empty
//! parts dropped, the rest joined with `\n`, non-string values written as JSON.

use serde::Serialize;
use serde_json::Value;

use crate::query::{join_parts, push_value};
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
    let (kind, role) = match format {
        Format::ClaudeCode => claude(kind, &line, &mut parts)?,
        Format::Codex => codex(kind, &line, &mut parts)?,
        Format::Pi => pi(kind, &line, &mut parts)?,
    };
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

type Kind = (String, Option<String>);

fn role_of(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

/// Claude Code: `user` and `assistant` lines, their `message.content` (a string, or blocks).
fn claude(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
    if !matches!(kind, "user" | "assistant") {
        return None;
    }
    let message = line.get("message")?;
    let content = message.get("content");
    match content {
        Some(Value::String(s)) => parts.push(s.clone()),
        other => blocks(other, parts),
    }
    Some((kind.to_owned(), role_of(message.get("role"))))
}

/// Codex: `response_item` messages of the user and the assistant (developer and system
/// messages are the agent's instructions), tool calls and their outputs; a `compacted` line's
/// summary.
fn codex(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
    let payload = line.get("payload")?;
    match kind {
        "compacted" => {
            push_value(payload.get("message"), parts);
            return Some((kind.to_owned(), None));
        }
        "response_item" => {}
        _ => return None,
    }
    let item = payload.get("type").and_then(Value::as_str)?;
    let mut role = None;
    match item {
        "message" => {
            role = role_of(payload.get("role"));
            if !matches!(role.as_deref(), Some("user" | "assistant")) {
                return None;
            }
            blocks(payload.get("content"), parts);
        }
        "function_call" => {
            push_value(payload.get("name"), parts);
            push_value(payload.get("arguments"), parts);
        }
        "custom_tool_call" => {
            push_value(payload.get("name"), parts);
            push_value(payload.get("input"), parts);
        }
        "local_shell_call" => push_value(payload.pointer("/action/command"), parts),
        "function_call_output" | "custom_tool_call_output" => {
            push_value(payload.get("output"), parts);
        }
        _ => return None,
    }
    Some((item.to_owned(), role))
}

/// pi: `message` entries (user, assistant, tool results, shell runs), and the summaries of
/// `compaction` and `branch_summary` entries.
fn pi(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
    match kind {
        "compaction" | "branch_summary" => {
            push_value(line.get("summary"), parts);
            Some((kind.to_owned(), None))
        }
        "message" | "custom_message" => {
            let message = if kind == "message" {
                line.get("message")?
            } else {
                line
            };
            match message.get("content") {
                Some(Value::String(s)) => parts.push(s.clone()),
                other => blocks(other, parts),
            }
            let role = role_of(message.get("role"));
            if role.as_deref() == Some("bashExecution") {
                push_value(message.get("command"), parts);
                push_value(message.get("output"), parts);
            }
            Some((kind.to_owned(), role))
        }
        _ => None,
    }
}

/// The text of a content-block array in block order: text blocks, tool calls (name, then
/// input), tool results (their content, recursively); reasoning, images and unknown blocks
/// give nothing. An explicit stack, so nesting cannot overflow.
fn blocks(content: Option<&Value>, parts: &mut Vec<String>) {
    let mut stack: Vec<&Value> = match content.and_then(Value::as_array) {
        Some(blocks) => blocks.iter().rev().collect(),
        None => return,
    };
    while let Some(block) = stack.pop() {
        match block.get("type").and_then(Value::as_str) {
            Some("text" | "input_text" | "output_text") => push_value(block.get("text"), parts),
            // Claude Code's `tool_use`, pi's `toolCall`.
            Some("tool_use") => {
                push_value(block.get("name"), parts);
                push_value(block.get("input"), parts);
            }
            Some("toolCall") => {
                push_value(block.get("name"), parts);
                push_value(block.get("arguments"), parts);
            }
            Some("tool_result") => match block.get("content") {
                Some(Value::String(s)) => parts.push(s.clone()),
                Some(Value::Array(inner)) => stack.extend(inner.iter().rev()),
                _ => {}
            },
            _ => {}
        }
    }
}

/// The line's time: an ISO-8601 `timestamp` (all three formats write one), else a numeric one
/// in epoch ms.
fn time_of(line: &Value) -> Option<i64> {
    match line.get("timestamp")? {
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

    fn text(format: Format, line: &str) -> Option<String> {
        transcript_line_text(format, line.as_bytes()).map(|t| t.text)
    }

    #[test]
    fn claude_code_messages_tool_calls_and_results_but_not_thinking() {
        let line = r#"{"type":"assistant","timestamp":"1970-01-01T00:00:01.5Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret"},{"type":"text","text":" hi "},{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}"#;
        let got = transcript_line_text(Format::ClaudeCode, line.as_bytes()).unwrap();
        assert_eq!(got.text, "hi\nBash\n{\"command\":\"ls\"}");
        assert_eq!(got.time, Some(1500));
        assert_eq!(
            (got.kind.as_str(), got.role.as_deref()),
            ("assistant", Some("assistant"))
        );
        let result = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"out"},{"type":"image"}]},{"type":"tool_result","content":"plain"}]}}"#;
        assert_eq!(text(Format::ClaudeCode, result).unwrap(), "out\nplain");
        let string = r#"{"type":"user","message":{"role":"user","content":"hello"}}"#;
        assert_eq!(text(Format::ClaudeCode, string).unwrap(), "hello");
        for none in [
            r#"{"type":"progress","message":{"content":"x"}}"#,
            r#"{"type":"user","message":{"content":"  "}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"x"}]}}"#,
            "[1]",
            "not json",
        ] {
            assert_eq!(text(Format::ClaudeCode, none), None, "{none}");
        }
    }

    #[test]
    fn codex_user_and_assistant_messages_and_tools() {
        let msg = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}"#;
        let got = transcript_line_text(Format::Codex, msg.as_bytes()).unwrap();
        assert_eq!(
            (got.kind.as_str(), got.role.as_deref(), got.text.as_str()),
            ("message", Some("user"), "fix it")
        );
        let dev = msg.replace("\"user\"", "\"developer\"");
        assert_eq!(text(Format::Codex, &dev), None);
        let call = r#"{"type":"response_item","payload":{"type":"function_call","name":"exec","arguments":"{\"cmd\":\"ls\"}"}}"#;
        assert_eq!(text(Format::Codex, call).unwrap(), "exec\n{\"cmd\":\"ls\"}");
        let out =
            r#"{"type":"response_item","payload":{"type":"function_call_output","output":"done"}}"#;
        assert_eq!(text(Format::Codex, out).unwrap(), "done");
        let reasoning = r#"{"type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"x"}]}}"#;
        assert_eq!(text(Format::Codex, reasoning), None);
        let event = r#"{"type":"event_msg","payload":{"type":"user_message","message":"fix it"}}"#;
        assert_eq!(text(Format::Codex, event), None, "a copy of the message");
    }

    #[test]
    fn pi_messages_and_summaries() {
        let msg = r#"{"type":"message","timestamp":"2026-01-01T00:00:00.001Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"no"},{"type":"toolCall","name":"write","arguments":{"path":"a"}},{"type":"text","text":"ok"}]}}"#;
        let got = transcript_line_text(Format::Pi, msg.as_bytes()).unwrap();
        assert_eq!(got.text, "write\n{\"path\":\"a\"}\nok");
        assert_eq!(got.time, Some(1_767_225_600_001));
        let bash = r#"{"type":"message","message":{"role":"bashExecution","command":"rm x","output":"gone"}}"#;
        assert_eq!(text(Format::Pi, bash).unwrap(), "rm x\ngone");
        let compaction = r#"{"type":"compaction","summary":"the story so far"}"#;
        assert_eq!(text(Format::Pi, compaction).unwrap(), "the story so far");
        assert_eq!(text(Format::Pi, r#"{"type":"model_change"}"#), None);
    }
}
