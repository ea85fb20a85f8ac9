//! The searchable text of an event (docs/SESSIONS.md, "Text extraction").
//!
//! Only what a person would look for is kept: message text, tool names and
//! arguments, tool errors, todos and turn-end failures. Reasoning is deliberately left
//! out (it is the model's scratchpad, not the conversation), as are boundaries, chunks,
//! request headers and plugin payloads. Parts are trimmed, empty parts dropped, and the
//! rest joined with `\n`.

use serde_json::Value;

use crate::query::types::SessionEvent;

/// The searchable text of `event`; empty when it has none.
pub fn event_text(event: &SessionEvent) -> String {
    let mut parts = Vec::new();
    let data = &event.data;
    match event.event_type.as_str() {
        "user/message" => content_text(data.get("content"), &mut parts),
        "assistant/message" => content_text(data.pointer("/message/content"), &mut parts),
        "tool/call" => push_call(data, "arguments", &mut parts),
        "tool/result" => {
            content_text(data.pointer("/message/content"), &mut parts);
            push_value(data.pointer("/error/name"), &mut parts);
            push_value(data.pointer("/error/code"), &mut parts);
        }
        "todo/write" => {
            for todo in data
                .get("todos")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                push_value(todo.get("status"), &mut parts);
                push_value(todo.get("content"), &mut parts);
            }
        }
        "turn/end" => {
            let kind = data.pointer("/reason/kind").and_then(Value::as_str);
            match kind {
                Some("error") => {
                    parts.push("error".to_string());
                    push_value(data.pointer("/reason/error/message"), &mut parts);
                }
                Some(k @ ("aborted" | "max-tokens" | "interrupted")) => parts.push(k.to_string()),
                _ => {}
            }
        }
        _ => {}
    }
    join_parts(&parts)
}

/// The parts of a text, each trimmed, empty parts dropped, joined with `\n`.
pub(crate) fn join_parts(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Pushes a string value as is, any other non-null value as JSON.
pub(crate) fn push_value(value: Option<&Value>, parts: &mut Vec<String>) {
    match value {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => parts.push(s.clone()),
        Some(other) => parts.push(other.to_string()),
    }
}

/// A call (or a call's response): its name, then its `arguments` (the key they are under).
pub(crate) fn push_call(call: &Value, arguments: &str, parts: &mut Vec<String>) {
    push_value(call.get("name"), parts);
    push_value(call.get(arguments), parts);
}

/// The text of a content-block array in block order, through `block`, which pushes a block's
/// own text and answers the blocks nested in it (a tool result's) to descend into. An
/// explicit stack (pushed in reverse), so nesting cannot overflow.
pub(crate) fn blocks_text<'v>(
    content: Option<&'v Value>,
    parts: &mut Vec<String>,
    block: impl Fn(&'v Value, &mut Vec<String>) -> Option<&'v Vec<Value>>,
) {
    let mut stack: Vec<&Value> = match content.and_then(Value::as_array) {
        Some(blocks) => blocks.iter().rev().collect(),
        None => return,
    };
    while let Some(next) = stack.pop() {
        if let Some(inner) = block(next, parts) {
            stack.extend(inner.iter().rev());
        }
    }
}

/// The text of one of our logs' content-block arrays, descending into tool results.
fn content_text(content: Option<&Value>, parts: &mut Vec<String>) {
    blocks_text(content, parts, |block, parts| {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => push_value(block.get("text"), parts),
            Some("tool-call") => push_call(block, "arguments", parts),
            Some("tool-result") => return block.get("content").and_then(Value::as_array),
            // Reasoning and unknown blocks carry no searchable text.
            _ => {}
        }
        None
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_support::*;
    use serde_json::json;

    #[test]
    fn message_text_excludes_reasoning_and_includes_tool_blocks() {
        let mut e = assistant(1, "a", "");
        e.data["message"]["content"] = json!([
            {"type": "text", "text": " visible "},
            {"type": "reasoning", "text": "secret"},
            {"type": "tool-call", "id": "c", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": "nested"}]},
            {"type": "image", "attachment": {}},
        ]);
        assert_eq!(event_text(&e), "visible\nread\n{\"path\":\"a\"}\nnested");
    }

    #[test]
    fn tool_error_text_has_content_then_error_name_and_code() {
        let mut e = tool_result(1, "r", "c", "failed");
        e.data["error"] = json!({"name": "Oops", "code": "E_OOPS"});
        assert_eq!(event_text(&e), "failed\nOops\nE_OOPS");
    }

    #[test]
    fn todo_text_is_status_then_content() {
        let e = log_only(
            "todo/write",
            0,
            json!({"todos": [{"content": "ship search", "status": "in_progress"}]}),
        );
        assert_eq!(event_text(&e), "in_progress\nship search");
    }

    #[test]
    fn turn_end_reasons_give_their_kind() {
        let end = |reason: Value| {
            event_text(&log_only(
                "turn/end",
                0,
                json!({"turn": 1, "reason": reason}),
            ))
        };
        assert_eq!(
            end(json!({"kind": "error", "error": {"message": "boom", "code": "X"}})),
            "error\nboom"
        );
        assert_eq!(
            end(json!({"kind": "aborted", "reason": {"kind": "user"}})),
            "aborted"
        );
        assert_eq!(end(json!({"kind": "max-tokens"})), "max-tokens");
        assert_eq!(end(json!({"kind": "interrupted"})), "interrupted");
        assert_eq!(end(json!({"kind": "completed"})), "");
        assert_eq!(end(json!({"kind": "blocked"})), "");
    }

    #[test]
    fn tool_calls_and_boundaries() {
        let call = log_only(
            "tool/call",
            0,
            json!({"name": "grep", "arguments": "{\"q\":1}", "callId": "c"}),
        );
        assert_eq!(event_text(&call), "grep\n{\"q\":1}");
        assert_eq!(
            event_text(&log_only("turn/start", 0, json!({"turn": 1}))),
            ""
        );
        assert_eq!(
            event_text(&log_only(
                "request/header",
                0,
                json!({"header": {"system": "x"}})
            )),
            ""
        );
    }
}
