//! Event builders shared by the unit tests.

use serde_json::{Value, json};

use crate::query::types::{SessionEvent, SurfaceOp};

/// The time the helpers give the event at `seq`.
fn time_of(seq: u64) -> i64 {
    i64::try_from(seq).unwrap() * 10
}

/// A current-shape `user/message` appended to the surface.
pub fn user(seq: u64, id: &str, text: &str) -> SessionEvent {
    SessionEvent::new(
        "user/message",
        seq,
        time_of(seq),
        json!({"id": id, "role": "user", "source": {"kind": "user"},
               "content": [{"type": "text", "text": text}]}),
    )
    .with_surface_op(SurfaceOp::Append)
}

/// A current-shape `assistant/message` appended to the surface.
pub fn assistant(seq: u64, id: &str, text: &str) -> SessionEvent {
    SessionEvent::new(
        "assistant/message",
        seq,
        time_of(seq),
        json!({"turn": 1, "step": 1, "message": {"id": id, "role": "assistant",
               "source": {"kind": "model", "provider": "p", "model": "m"},
               "content": [{"type": "text", "text": text}]}}),
    )
    .with_surface_op(SurfaceOp::Append)
}

/// A current-shape `tool/result` appended to the surface.
pub fn tool_result(seq: u64, id: &str, call_id: &str, text: &str) -> SessionEvent {
    SessionEvent::new(
        "tool/result",
        seq,
        time_of(seq),
        json!({"turn": 1, "step": 1, "message": {"id": id, "role": "user",
               "source": {"kind": "tool", "callId": call_id},
               "content": [{"type": "tool-result", "toolCallId": call_id,
                            "content": [{"type": "text", "text": text}]}]}}),
    )
    .with_surface_op(SurfaceOp::Append)
}

/// A log-only event of `event_type` with `data`.
pub fn log_only(event_type: &str, seq: u64, data: Value) -> SessionEvent {
    SessionEvent::new(event_type, seq, time_of(seq), data)
}

/// `event` turned into a replace of `start..=end` citing `sources`.
pub fn replacing(event: SessionEvent, start: u64, end: u64, sources: Vec<u64>) -> SessionEvent {
    event
        .with_surface_op(SurfaceOp::Replace { start, end })
        .with_sources(sources)
}

/// A store over `dir` that checkpoints only when asked (or on close/drop).
pub fn manual_store(dir: &std::path::Path) -> crate::query::Store {
    let config = crate::query::StoreConfig {
        checkpoint: crate::query::CheckpointPolicy {
            max_pending_events: usize::MAX,
            max_delay: std::time::Duration::from_hours(1),
        },
        ..Default::default()
    };
    crate::query::Store::open(dir, config).unwrap()
}

/// Writes a raw session log (header line + lines, each newline-terminated) under `root`.
pub fn write_raw_log(root: &std::path::Path, id: &str, header: &Value, lines: &[Value]) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = format!("{header}\n");
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
}

/// A minimal header value for raw logs.
pub fn raw_header(id: &str, created_at: u64) -> Value {
    json!({"type": "session", "version": 0, "id": id, "createdAt": created_at})
}

/// A short valid turn: start, user message, assistant reply, end.
pub fn simple_turn(first_seq: u64) -> Vec<SessionEvent> {
    let s = first_seq;
    vec![
        log_only("turn/start", s, json!({"turn": 1})),
        user(s + 1, &format!("u{}", s + 1), "hello there"),
        assistant(s + 2, &format!("a{}", s + 2), "general kenobi"),
        log_only(
            "turn/end",
            s + 3,
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]
}

/// dsh's `appendTraceEvents` test fixture.
pub fn trace_fixture() -> Vec<SessionEvent> {
    let result = tool_result(3, "r", "c1", "full output").with_sources(vec![2]);
    let mut pruned = result.clone();
    pruned.seq = 4;
    pruned.data["message"]["content"][0]["content"] = json!([{"type": "text", "text": "[pruned]"}]);
    vec![
        log_only("turn/start", 0, json!({"turn": 1})),
        user(1, "u", "please read a"),
        log_only(
            "tool/call",
            2,
            json!({"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}),
        ),
        result,
        replacing(pruned, 3, 3, vec![3, 2]),
        assistant(5, "a", "done"),
        log_only(
            "turn/end",
            6,
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
        log_only("compaction/start", 7, json!({})),
        replacing(user(8, "s", "summary"), 4, 4, vec![2, 4]),
    ]
}
