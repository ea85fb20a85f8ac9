//! Crash-repair closers: the events that close a turn a crash left open (docs/SESSIONS.md,
//! "Torn tails and corruption").
//!
//! A log whose last turn never ended was interrupted. Before such a session is resumed,
//! its open tool calls get synthetic error results (so the model learns their outcome
//! is unknown instead of waiting forever), then the open step and turn are closed with
//! `interrupted`. This module only *computes* the closers; the query layer never shows
//! them as stored events (they are not on disk), and writing them is the resumer's job.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::query::types::{SessionEvent, SurfaceOp};

struct PendingCall {
    call_id: String,
    turn: Value,
    step: Value,
}

/// The closers for `events` (a whole log, ascending seq); empty when no turn is open.
///
/// Seqs continue after the last event and every closer reuses its time.
pub fn interrupted_turn_closers(events: &[SessionEvent]) -> Vec<SessionEvent> {
    let mut open_turn: Option<Value> = None;
    let mut open_step: Option<Value> = None;
    let mut pending: Vec<PendingCall> = Vec::new();
    let mut call_seqs: HashMap<String, u64> = HashMap::new();

    for e in events {
        let data = &e.data;
        match e.event_type.as_str() {
            "turn/start" => {
                open_turn = Some(data.get("turn").cloned().unwrap_or(Value::Null));
                open_step = None;
                pending.clear();
            }
            "turn/end" => {
                open_turn = None;
                open_step = None;
                pending.clear();
            }
            "step/start" => open_step = Some(data.get("step").cloned().unwrap_or(Value::Null)),
            "step/end" => {
                open_step = None;
                pending.clear();
            }
            "assistant/message" => {
                let blocks = data.pointer("/message/content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) != Some("tool-call") {
                        continue;
                    }
                    if let Some(id) = block.get("id").and_then(Value::as_str)
                        && !pending.iter().any(|p| p.call_id == id)
                    {
                        pending.push(PendingCall {
                            call_id: id.to_string(),
                            turn: data.get("turn").cloned().unwrap_or(Value::Null),
                            step: data.get("step").cloned().unwrap_or(Value::Null),
                        });
                    }
                }
            }
            "tool/call" => {
                if let Some(id) = data.get("callId").and_then(Value::as_str) {
                    call_seqs.insert(id.to_string(), e.seq);
                }
            }
            "tool/result" => {
                if let Some(id) = data
                    .pointer("/message/source/callId")
                    .and_then(Value::as_str)
                {
                    pending.retain(|p| p.call_id != id);
                }
            }
            _ => {}
        }
    }

    let (Some(turn), Some(last)) = (open_turn, events.last()) else {
        return Vec::new();
    };
    let time = last.time;
    let mut seq = last.seq;
    let mut next_seq = || {
        seq = seq.saturating_add(1);
        seq
    };
    let mut closers = Vec::new();
    for call in pending {
        let s = next_seq();
        let recorded = call_seqs.get(&call.call_id).copied();
        let (name, code, text) = match recorded {
            Some(_) => (
                "ToolOutcomeUnknownError",
                "TOOL_OUTCOME_UNKNOWN",
                "The session was interrupted while this tool call was running, so its outcome is unknown. Retry it only if it is read-only or idempotent; otherwise check its effects first.",
            ),
            None => (
                "ToolNotStartedError",
                "TOOL_NOT_STARTED",
                "The session was interrupted before the Harness recorded this tool call as started. Retry it if it is still needed.",
            ),
        };
        let mut event = SessionEvent::new(
            "tool/result",
            s,
            time,
            json!({
                "turn": call.turn,
                "step": call.step,
                "message": {
                    "id": format!("interrupted-tool-result-{}-{s}", call.call_id),
                    "role": "user",
                    "content": [{"type": "tool-result", "toolCallId": call.call_id,
                                 "content": [{"type": "text", "text": text}], "isError": true}],
                    "source": {"kind": "tool", "callId": call.call_id},
                },
                "error": {"name": name, "code": code},
            }),
        )
        .with_surface_op(SurfaceOp::Append);
        if let Some(call_seq) = recorded {
            event = event.with_sources(vec![call_seq]);
        }
        closers.push(event);
    }
    if let Some(step) = open_step {
        closers.push(SessionEvent::new(
            "step/end",
            next_seq(),
            time,
            json!({"turn": turn, "step": step}),
        ));
    }
    closers.push(SessionEvent::new(
        "turn/end",
        next_seq(),
        time,
        json!({"turn": turn, "reason": {"kind": "interrupted"}}),
    ));
    closers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::envelope::check_message_shape;
    use crate::query::surface::fold_surface;
    use crate::query::test_support::*;

    fn types(closers: &[SessionEvent]) -> Vec<&str> {
        closers.iter().map(|e| e.event_type.as_str()).collect()
    }

    fn calling(seq: u64, ids: &[&str]) -> SessionEvent {
        let mut a = assistant(seq, &format!("a{seq}"), "");
        a.data["message"]["content"] = ids
            .iter()
            .map(|id| json!({"type": "tool-call", "id": id, "name": "run", "arguments": "{}"}))
            .collect();
        a
    }

    #[test]
    fn balanced_or_empty_logs_need_no_closers() {
        assert!(interrupted_turn_closers(&[]).is_empty());
        let balanced = [
            log_only("turn/start", 0, json!({"turn": 1})),
            log_only(
                "turn/end",
                1,
                json!({"turn": 1, "reason": {"kind": "completed"}}),
            ),
        ];
        assert!(interrupted_turn_closers(&balanced).is_empty());
    }

    #[test]
    fn open_turn_without_step_gets_only_a_turn_end() {
        let closers = interrupted_turn_closers(&[log_only("turn/start", 0, json!({"turn": 1}))]);
        assert_eq!(types(&closers), ["turn/end"]);
        assert_eq!(closers[0].data["reason"]["kind"], "interrupted");
        assert_eq!((closers[0].seq, closers[0].time), (1, 0));
    }

    #[test]
    fn open_calls_are_closed_in_log_order_then_step_then_turn() {
        let log = vec![
            log_only("turn/start", 0, json!({"turn": 1})),
            log_only("step/start", 1, json!({"turn": 1, "step": 1})),
            calling(2, &["c1", "c2"]),
            log_only(
                "tool/call",
                3,
                json!({"turn": 1, "step": 1, "callId": "c2", "name": "run", "arguments": "{}"}),
            ),
        ];
        let closers = interrupted_turn_closers(&log);
        assert_eq!(
            types(&closers),
            ["tool/result", "tool/result", "step/end", "turn/end"]
        );
        assert_eq!(closers[0].data["error"]["code"], "TOOL_NOT_STARTED");
        assert_eq!(closers[0].source_event_seqs, None);
        assert_eq!(closers[1].data["error"]["code"], "TOOL_OUTCOME_UNKNOWN");
        assert_eq!(closers[1].source_event_seqs, Some(vec![3]));
        // The closers are valid continuations of the log.
        let mut all = log;
        all.extend(closers.iter().cloned());
        fold_surface(&all).unwrap();
        for c in &closers {
            check_message_shape(c).unwrap();
        }
    }

    #[test]
    fn calls_from_closed_steps_are_ignored() {
        let log = [
            log_only("turn/start", 0, json!({"turn": 1})),
            log_only("step/start", 1, json!({"turn": 1, "step": 1})),
            calling(2, &["old"]),
            log_only("step/end", 3, json!({"turn": 1, "step": 1})),
        ];
        assert_eq!(types(&interrupted_turn_closers(&log)), ["turn/end"]);
    }
}
