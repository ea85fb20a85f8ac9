//! What the lines of each transcript format hold for search: a [`LineParts`] per format,
//! registered in [`super::text`].
//!
//! This is each format's own knowledge, beside its reader's: these functions (and the
//! content-block walk they share) belong with the readers in `src/transcript/`, one per reader
//! file, with only the registration left in the search.

use serde_json::Value;

use crate::query::{blocks_text, push_call, push_value};
use crate::transcript::OpenCodePart;

/// A line's type and role.
type Kind = (String, Option<String>);

/// How one format's lines give text: from a line (a JSON object) and its `type`, the type and
/// role a hit shows, with the text's parts pushed to `parts`; `None` for a line that holds no
/// conversation.
pub(crate) type LineParts = fn(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind>;

fn role_of(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

/// `OpenCode`: a part of a message (not a line) whose `type` is `text` (its `text`) or `tool`
/// (its `tool`, `state.input` and `state.output`); reasoning and bookkeeping parts
/// (`step-start`, `patch`, ...) hold no conversation. Gives the part's type.
pub(crate) fn opencode_part(part: &OpenCodePart, parts: &mut Vec<String>) -> Option<String> {
    let kind = part.kind.as_deref()?;
    match kind {
        "text" => parts.extend(part.text.iter().cloned()),
        "tool" => {
            parts.extend(part.tool.iter().cloned());
            push_value(part.input.as_ref(), parts);
            push_value(part.output.as_ref(), parts);
        }
        _ => return None,
    }
    Some(kind.to_owned())
}

/// Claude Code: `user` and `assistant` lines, their `message.content` (a string, or blocks).
pub(crate) fn claude(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
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
pub(crate) fn codex(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
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
        "function_call" => push_call(payload, "arguments", parts),
        "custom_tool_call" => push_call(payload, "input", parts),
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
pub(crate) fn pi(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
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

/// GitHub Copilot CLI: `user.message` and `assistant.message` events (the assistant's text,
/// then each tool request's name and arguments), tool results, a compaction's summary.
pub(crate) fn copilot(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
    let data = line.get("data")?;
    let role = match kind {
        "user.message" => "user",
        "assistant.message" => {
            push_value(data.get("content"), parts);
            push_calls(data.get("toolRequests"), "arguments", parts);
            return Some((kind.to_owned(), Some("assistant".to_owned())));
        }
        "tool.execution_complete" => {
            push_value(data.pointer("/result/content"), parts);
            return Some((kind.to_owned(), Some("tool".to_owned())));
        }
        "session.compaction_complete" => {
            push_value(data.get("summaryContent"), parts);
            return Some((kind.to_owned(), None));
        }
        _ => return None,
    };
    push_value(data.get("content"), parts);
    Some((kind.to_owned(), Some(role.to_owned())))
}

/// Gemini CLI: `user` and `gemini` records (and the CLI's `info`, `error` and `warning`
/// notes), their `content` (a string, or Gemini API parts) and the `toolCalls` a `gemini`
/// record made (name, then arguments).
pub(crate) fn gemini(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
    if !matches!(kind, "user" | "gemini" | "info" | "error" | "warning") {
        return None;
    }
    match line.get("content") {
        Some(Value::String(s)) => parts.push(s.clone()),
        other => api_parts(other, parts),
    }
    push_calls(line.get("toolCalls"), "args", parts);
    Some((kind.to_owned(), None))
}

/// Qwen Code: `user`, `assistant` and `tool_result` records, their `message.parts`.
pub(crate) fn qwen(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
    if !matches!(kind, "user" | "assistant" | "tool_result") {
        return None;
    }
    let message = line.get("message")?;
    api_parts(message.get("parts"), parts);
    Some((kind.to_owned(), role_of(message.get("role"))))
}

/// [`push_call`] for each call of an array.
fn push_calls(calls: Option<&Value>, arguments: &str, parts: &mut Vec<String>) {
    for call in calls.and_then(Value::as_array).into_iter().flatten() {
        push_call(call, arguments, parts);
    }
}

/// The text of a Gemini API parts array: text parts (not thoughts), function calls (name,
/// then arguments) and function responses (name, then response).
fn api_parts(content: Option<&Value>, parts: &mut Vec<String>) {
    for part in content.and_then(Value::as_array).into_iter().flatten() {
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        push_value(part.get("text"), parts);
        if let Some(call) = part.get("functionCall") {
            push_call(call, "args", parts);
        }
        if let Some(response) = part.get("functionResponse") {
            push_call(response, "response", parts);
        }
    }
}

/// Kimi Code: the conversation as its wire log records it: `context.append_message`
/// messages, the assistant's text parts, tool calls (name, then arguments) and tool results
/// of `context.append_loop_event` lines, and a compaction's summary. Thinking parts give
/// nothing.
pub(crate) fn kimi(kind: &str, line: &Value, parts: &mut Vec<String>) -> Option<Kind> {
    match kind {
        "context.append_message" => {
            let message = line.get("message")?;
            match message.get("content") {
                Some(Value::String(s)) => parts.push(s.clone()),
                other => blocks(other, parts),
            }
            Some((kind.to_owned(), role_of(message.get("role"))))
        }
        "context.apply_compaction" => {
            push_value(line.get("summary"), parts);
            Some((kind.to_owned(), None))
        }
        "context.append_loop_event" => {
            let event = line.get("event")?;
            let event_kind = event.get("type").and_then(Value::as_str)?;
            let role = match event_kind {
                "content.part" => {
                    let part = event.get("part")?;
                    if part.get("type").and_then(Value::as_str) != Some("text") {
                        return None;
                    }
                    push_value(part.get("text"), parts);
                    "assistant"
                }
                "tool.call" => {
                    push_call(event, "args", parts);
                    "assistant"
                }
                "tool.result" => {
                    push_value(event.pointer("/result/output"), parts);
                    "tool"
                }
                _ => return None,
            };
            Some((event_kind.to_owned(), Some(role.to_owned())))
        }
        _ => None,
    }
}

/// The text of a content-block array in block order: text blocks, tool calls (name, then
/// input), tool results (their content, recursively); reasoning, images and unknown blocks
/// give nothing.
fn blocks(content: Option<&Value>, parts: &mut Vec<String>) {
    blocks_text(content, parts, |block, parts| {
        match block.get("type").and_then(Value::as_str) {
            Some("text" | "input_text" | "output_text") => push_value(block.get("text"), parts),
            // Claude Code's `tool_use`, pi's `toolCall`.
            Some("tool_use") => push_call(block, "input", parts),
            Some("toolCall") => push_call(block, "arguments", parts),
            Some("tool_result") => match block.get("content") {
                Some(Value::String(s)) => parts.push(s.clone()),
                Some(Value::Array(inner)) => return Some(inner),
                _ => {}
            },
            _ => {}
        }
        None
    });
}

#[cfg(test)]
mod tests {
    use crate::search::transcripts::text::transcript_line_text;
    use crate::transcript::Format;

    fn text(format: Format, line: &str) -> Option<String> {
        transcript_line_text(format, line.as_bytes()).map(|t| t.text)
    }

    /// The kind, role and text of the document `line` gives, and its time.
    type Read<'a> = ((&'a str, Option<&'a str>, &'a str), Option<i64>);

    /// Asserts the document `line` gives.
    fn assert_read(format: Format, line: &str, want: Read<'_>) {
        let got = transcript_line_text(format, line.as_bytes()).unwrap();
        let read = (got.kind.as_str(), got.role.as_deref(), got.text.as_str());
        assert_eq!((read, got.time), want, "{line}");
    }

    #[test]
    fn claude_code_messages_tool_calls_and_results_but_not_thinking() {
        let line = r#"{"type":"assistant","timestamp":"1970-01-01T00:00:01.5Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret"},{"type":"text","text":" hi "},{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}"#;
        let want = (
            "assistant",
            Some("assistant"),
            "hi\nBash\n{\"command\":\"ls\"}",
        );
        assert_read(Format::ClaudeCode, line, (want, Some(1500)));
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
        let want = ("message", Some("user"), "fix it");
        assert_read(Format::Codex, msg, (want, Some(1_767_225_600_000)));
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
    fn kimi_messages_parts_tools_and_summaries() {
        let user = r#"{"type":"context.append_message","message":{"role":"user","content":[{"type":"text","text":"run ls"}]},"time":1785613805458}"#;
        let want = ("context.append_message", Some("user"), "run ls");
        assert_read(Format::Kimi, user, (want, Some(1_785_613_805_458)));
        let event = |e: &str| format!(r#"{{"type":"context.append_loop_event","event":{e}}}"#);
        let part = event(r#"{"type":"content.part","part":{"type":"text","text":"Hi"}}"#);
        assert_eq!(text(Format::Kimi, &part).unwrap(), "Hi");
        let think = event(r#"{"type":"content.part","part":{"type":"think","think":"x"}}"#);
        assert_eq!(text(Format::Kimi, &think), None);
        let call = event(r#"{"type":"tool.call","name":"Bash","args":{"command":"ls"}}"#);
        assert_eq!(
            text(Format::Kimi, &call).unwrap(),
            "Bash\n{\"command\":\"ls\"}"
        );
        let result = event(r#"{"type":"tool.result","result":{"output":"a.md"}}"#);
        assert_eq!(text(Format::Kimi, &result).unwrap(), "a.md");
        let end = event(r#"{"type":"step.end","usage":{"output":1}}"#);
        assert_eq!(text(Format::Kimi, &end), None);
        let summary = r#"{"type":"context.apply_compaction","summary":"so far"}"#;
        assert_eq!(text(Format::Kimi, summary).unwrap(), "so far");
        let usage = r#"{"type":"usage.record","usage":{"output":1}}"#;
        assert_eq!(text(Format::Kimi, usage), None);
    }

    #[test]
    fn pi_messages_and_summaries() {
        let msg = r#"{"type":"message","timestamp":"2026-01-01T00:00:00.001Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"no"},{"type":"toolCall","name":"write","arguments":{"path":"a"}},{"type":"text","text":"ok"}]}}"#;
        let want = ("message", Some("assistant"), "write\n{\"path\":\"a\"}\nok");
        assert_read(Format::Pi, msg, (want, Some(1_767_225_600_001)));
        let bash = r#"{"type":"message","message":{"role":"bashExecution","command":"rm x","output":"gone"}}"#;
        assert_eq!(text(Format::Pi, bash).unwrap(), "rm x\ngone");
        let compaction = r#"{"type":"compaction","summary":"the story so far"}"#;
        assert_eq!(text(Format::Pi, compaction).unwrap(), "the story so far");
        assert_eq!(text(Format::Pi, r#"{"type":"model_change"}"#), None);
    }

    #[test]
    fn copilot_messages_tools_and_summaries() {
        let user = r#"{"type":"user.message","data":{"content":"fix it","transformedContent":"<x>fix it"},"timestamp":"2026-01-01T00:00:00Z"}"#;
        let want = ("user.message", Some("user"), "fix it");
        assert_read(Format::Copilot, user, (want, Some(1_767_225_600_000)));
        let reply = r#"{"type":"assistant.message","data":{"content":"ok","toolRequests":[{"name":"view","arguments":{"path":"a"}}],"outputTokens":3}}"#;
        assert_eq!(
            text(Format::Copilot, reply).unwrap(),
            "ok\nview\n{\"path\":\"a\"}"
        );
        let tool = r#"{"type":"tool.execution_complete","data":{"result":{"content":"done"}}}"#;
        assert_eq!(text(Format::Copilot, tool).unwrap(), "done");
        let summary =
            r#"{"type":"session.compaction_complete","data":{"summaryContent":"so far"}}"#;
        assert_eq!(text(Format::Copilot, summary).unwrap(), "so far");
        let start = r#"{"type":"session.start","data":{"context":{"cwd":"/"}}}"#;
        assert_eq!(text(Format::Copilot, start), None);
    }

    #[test]
    fn gemini_content_parts_and_tool_calls() {
        let user = r#"{"id":"a","type":"user","content":[{"text":"hi"}]}"#;
        assert_eq!(text(Format::Gemini, user).unwrap(), "hi");
        let reply = r#"{"id":"b","type":"gemini","content":"ok","toolCalls":[{"name":"ls","args":{"p":"."}}],"tokens":{"input":1}}"#;
        assert_eq!(
            text(Format::Gemini, reply).unwrap(),
            "ok\nls\n{\"p\":\".\"}"
        );
        assert_eq!(
            text(Format::Gemini, r#"{"$set":{"lastUpdated":"t"}}"#),
            None
        );
    }

    #[test]
    fn qwen_parts_but_not_thoughts_or_telemetry() {
        let reply = r#"{"type":"assistant","message":{"role":"model","parts":[{"text":"why","thought":true},{"text":"Done."},{"functionCall":{"name":"ls","args":{}}}]}}"#;
        let got = transcript_line_text(Format::Qwen, reply.as_bytes()).unwrap();
        assert_eq!(
            (got.text.as_str(), got.role.as_deref()),
            ("Done.\nls\n{}", Some("model"))
        );
        let telemetry = r#"{"type":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"response_text":"Done."}}}"#;
        assert_eq!(text(Format::Qwen, telemetry), None);
    }
}
