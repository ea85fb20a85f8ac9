//! Legacy normalization: reading logs written before message identity and before the
//! react-loop refactor (docs/SESSIONS.md, "Legacy import").
//!
//! Normalization runs on every read path and never on stored bytes: it takes events and
//! returns new, owned events in the current shapes. It is deterministic (a legacy
//! message gets the id `legacy-message:<session-id>:<seq>`), so repeated reads and mixed
//! legacy/current logs are stable, and it is idempotent on every log the reader accepts.
//! (One shape it rejects is not: a wrapped `steering/message` whose message has no id becomes
//! a `user/message` that a second pass would give a legacy id. The reader refuses it first.)
//!
//! Only an *exact* legacy shape is converted. A current-looking event that is malformed
//! is left as it is, so the validators reject it instead of it being guessed into shape.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::query::envelope::{check_message_shape, check_surface_fields, retired_shape};
use crate::query::error::Violation;
use crate::query::json::{as_non_empty_str, as_safe_u64, has_exact_keys};
use crate::query::types::{SessionEvent, SurfaceOp};

/// The deterministic id of a legacy message.
pub(crate) fn legacy_message_id(session_id: &str, seq: u64) -> String {
    format!("legacy-message:{session_id}:{seq}")
}

/// Refuses the whole log if it holds a retired event type or shape (docs/SESSIONS.md, "The
/// event envelope").
pub(crate) fn check_no_retired(events: &[SessionEvent]) -> Result<(), Violation> {
    match events
        .iter()
        .find_map(|e| retired_shape(e).map(|m| Violation::at(e.seq, m)))
    {
        Some(v) => Err(v),
        None => Ok(()),
    }
}

/// Normalizes a whole log (or a prefix of one, from seq 0) into current shapes.
///
/// Fails if the log holds a retired shape anywhere, or a malformed legacy event.
pub fn normalize_log(
    session_id: &str,
    events: Vec<SessionEvent>,
) -> Result<Vec<SessionEvent>, Violation> {
    check_no_retired(&events)?;
    let mut reader = LegacyReader::default();
    events
        .into_iter()
        .map(|event| reader.read(session_id, event))
        .collect()
}

/// Reads a log's events in seq order into current shapes, remembering each message's id for
/// the legacy rewrites after it that inherit one.
#[derive(Debug, Default)]
pub(crate) struct LegacyReader {
    ids: HashMap<u64, String>,
}

impl LegacyReader {
    /// The next event of the log, in its current shape.
    pub(crate) fn read(
        &mut self,
        session_id: &str,
        event: SessionEvent,
    ) -> Result<SessionEvent, Violation> {
        let normalized = normalize_event(session_id, event, &self.ids)?;
        self.remember(&normalized);
        Ok(normalized)
    }

    /// Checks what only the whole log shows about the next event (a legacy rewrite's inherited
    /// id), copying it only when its reading needs the events before it: the rule for one
    /// stored line has checked the rest.
    pub(crate) fn check(
        &mut self,
        session_id: &str,
        event: &SessionEvent,
    ) -> Result<(), Violation> {
        if needs_prefix(event) {
            self.read(session_id, event.clone()).map(drop)
        } else {
            self.remember(event);
            Ok(())
        }
    }

    fn remember(&mut self, event: &SessionEvent) {
        if let Some(id) = message_id(event) {
            self.ids.insert(event.seq, id.to_owned());
        }
    }
}

/// Whether reading `event` correctly needs the events before it (its normalization
/// may inherit an id recorded earlier), so a range read must start at seq 0.
pub(crate) fn needs_prefix(event: &SessionEvent) -> bool {
    event.event_type == "steering/message" || pre_identity_kind(event).is_some()
}

/// Checks what one stored event can be checked for alone, in the shape the reader sees: a
/// legacy shape must normalize, and the event it then is (or is as stored) must carry the
/// surface fields where they belong and a well-formed message.
///
/// A legacy `tool/result` rewrite inherits its message id from the event it replaces, which
/// only the whole log knows; here it is given a stand-in, and [`LegacyReader::check`], run on
/// the whole log, checks the real one.
pub(crate) fn check_event_alone(event: &SessionEvent) -> Result<(), Violation> {
    let legacy = match event.event_type.as_str() {
        "turn/start" => event.data.get("trigger").is_some(),
        "turn/end" | "steering/message" => true,
        _ => pre_identity_kind(event).is_some(),
    };
    let check = |event: &SessionEvent| {
        check_surface_fields(event)?;
        check_message_shape(event)
    };
    if !legacy {
        return check(event);
    }
    let ids = match event.surface_op {
        Some(SurfaceOp::Replace { start, .. }) => {
            HashMap::from([(start, "inherited-legacy-message".to_owned())])
        }
        _ => HashMap::new(),
    };
    check(&normalize_event("", event.clone(), &ids)?)
}

/// The message id an event carries, if it is a message event.
pub(crate) fn message_id(event: &SessionEvent) -> Option<&str> {
    let message = match event.event_type.as_str() {
        "user/message" => &event.data,
        "assistant/message" | "tool/result" => event.data.get("message")?,
        _ => return None,
    };
    message.get("id").and_then(Value::as_str)
}

/// Normalizes one event, given the message ids already recorded for earlier seqs.
///
/// The four steps of docs/SESSIONS.md, "Legacy import", in order (A to D below). Returns the
/// event unchanged when no legacy shape applies.
pub(crate) fn normalize_event(
    session_id: &str,
    event: SessionEvent,
    ids: &HashMap<u64, String>,
) -> Result<SessionEvent, Violation> {
    let fail = |m: &str| Violation::at(event.seq, m.to_string());
    // Most events are current shapes and move through unchanged.
    let (event_type, data) = match event.event_type.as_str() {
        "turn/start" if event.data.get("trigger").is_some() => {
            let data = normalize_turn_start(&event.data)
                .ok_or_else(|| fail("malformed pre-react-loop turn/start"))?;
            (None, data)
        }
        "turn/end" => {
            let data = normalize_turn_end(&event.data)
                .ok_or_else(|| fail("malformed pre-react-loop turn/end"))?;
            (None, data)
        }
        "steering/message" => {
            let data = normalize_steering(session_id, &event)
                .ok_or_else(|| fail("malformed pre-react-loop steering/message"))?;
            (Some("user/message"), data)
        }
        _ => match pre_identity_kind(&event) {
            Some(kind) => (None, normalize_pre_identity(session_id, &event, kind, ids)?),
            None => return Ok(event),
        },
    };
    let mut out = event;
    if let Some(event_type) = event_type {
        out.event_type = event_type.into();
    }
    out.data = data;
    Ok(out)
}

/// A. `{turn, trigger}` → `{turn}`.
fn normalize_turn_start(data: &Value) -> Option<Value> {
    let turn = data.get("turn").and_then(as_safe_u64).filter(|t| *t >= 1)?;
    let trigger_ok = data
        .get("trigger")
        .and_then(|t| t.get("kind"))
        .and_then(as_non_empty_str)
        .is_some();
    (has_exact_keys(data, &["turn", "trigger"]) && trigger_ok).then(|| json!({ "turn": turn }))
}

/// B. Every `turn/end`: exact `{turn, reason}`, then legacy reasons mapped by kind.
fn normalize_turn_end(data: &Value) -> Option<Value> {
    if !has_exact_keys(data, &["turn", "reason"]) {
        return None;
    }
    let turn = data.get("turn").and_then(as_safe_u64).filter(|t| *t >= 1)?;
    let reason = data.get("reason")?;
    let kind = reason.get("kind").and_then(Value::as_str)?;
    let only_kind = has_exact_keys(reason, &["kind"]);
    let new_reason = match kind {
        "completed" | "blocked" | "max-tokens" | "interrupted" => {
            only_kind.then(|| reason.clone())?
        }
        "aborted" if reason.get("reason").is_some() => reason.clone(),
        "aborted" => only_kind.then(|| json!({"kind": "aborted", "reason": {"kind": "legacy"}}))?,
        "disposed" => {
            only_kind.then(|| json!({"kind": "aborted", "reason": {"kind": "disposed"}}))?
        }
        "error" if reason.get("error").is_some() => reason.clone(),
        "error" => legacy_error_reason(reason)?,
        // Extension reasons pass through.
        _ => reason.clone(),
    };
    Some(json!({ "turn": turn, "reason": new_reason }))
}

/// The two old `error` reason shapes, mapped to `{kind:'error', error}`.
fn legacy_error_reason(reason: &Value) -> Option<Value> {
    reason.get("step").and_then(as_safe_u64)?;
    if has_exact_keys(reason, &["kind", "step", "failure"]) {
        let failure = reason.get("failure")?;
        let map = failure.as_object()?;
        let allowed = [
            "message",
            "code",
            "status",
            "providerRetryAfterMs",
            "requestId",
        ];
        let valid = map.keys().all(|k| allowed.contains(&k.as_str()))
            && failure.get("message").is_some_and(Value::is_string)
            && failure.get("code").is_some_and(Value::is_string);
        return valid.then(|| json!({"kind": "error", "error": failure}));
    }
    let shape2 = has_exact_keys(reason, &["kind", "step", "message"])
        || has_exact_keys(reason, &["kind", "step", "message", "code"]);
    let message = reason.get("message").filter(|m| m.is_string())?;
    let code = match reason.get("code") {
        None => Value::String("UNKNOWN".into()),
        Some(c) if c.is_string() => c.clone(),
        Some(_) => return None,
    };
    shape2.then(|| json!({"kind": "error", "error": {"message": message, "code": code}}))
}

/// C. `steering/message` → the data of a `user/message`.
fn normalize_steering(session_id: &str, event: &SessionEvent) -> Option<Value> {
    let data = &event.data;
    if has_exact_keys(data, &["turn", "message"]) {
        data.get("turn").and_then(as_safe_u64)?;
        return data.get("message").filter(|m| m.is_object()).cloned();
    }
    if has_exact_keys(data, &["turn", "content", "source"]) {
        let mut message = Map::new();
        message.insert("content".into(), data.get("content")?.clone());
        message.insert("source".into(), data.get("source")?.clone());
        message.insert(
            "id".into(),
            Value::String(legacy_message_id(session_id, event.seq)),
        );
        message.insert("role".into(), Value::String("user".into()));
        return Some(Value::Object(message));
    }
    None
}

#[derive(Clone, Copy)]
enum PreIdentity {
    User,
    Assistant,
    ToolResult,
}

/// D. Which pre-identity message shape `event` has, if any.
fn pre_identity_kind(event: &SessionEvent) -> Option<PreIdentity> {
    let map = event.data.as_object()?;
    let has = |k: &str| map.contains_key(k);
    match event.event_type.as_str() {
        "user/message"
            if !has("id") && !has("role") && !has("message") && has("content") && has("source") =>
        {
            Some(PreIdentity::User)
        }
        "assistant/message"
            if !has("message")
                && has("content")
                && map.get("provenance").is_some_and(Value::is_object) =>
        {
            Some(PreIdentity::Assistant)
        }
        "tool/result" if !has("message") && has("callId") && has("content") && has("isError") => {
            Some(PreIdentity::ToolResult)
        }
        _ => None,
    }
}

/// D. Builds the identified message payload for a pre-identity event. A rewrite that replaces a
/// seq with no recorded message id has no id to inherit, and is refused.
fn normalize_pre_identity(
    session_id: &str,
    event: &SessionEvent,
    kind: PreIdentity,
    ids: &HashMap<u64, String>,
) -> Result<Value, Violation> {
    let mut rest = event.data.as_object().cloned().unwrap_or_default();
    let fresh_id = Value::String(legacy_message_id(session_id, event.seq));
    match kind {
        PreIdentity::User => {
            rest.insert("id".into(), fresh_id);
            rest.insert("role".into(), Value::String("user".into()));
        }
        PreIdentity::Assistant => {
            let content = rest.remove("content").unwrap_or(Value::Null);
            let mut source = match rest.remove("provenance") {
                Some(Value::Object(p)) => p,
                _ => Map::new(),
            };
            source.insert("kind".into(), Value::String("model".into()));
            rest.insert(
                "message".into(),
                json!({"id": fresh_id, "role": "assistant", "content": content, "source": source}),
            );
        }
        PreIdentity::ToolResult => {
            let call_id = rest.remove("callId").unwrap_or(Value::Null);
            let content = rest.remove("content").unwrap_or(Value::Null);
            let is_error = rest.remove("isError").unwrap_or(Value::Null);
            // A pruning rewrite keeps its target's identity (the content-only rule).
            let id = match event.surface_op {
                Some(SurfaceOp::Replace { start, .. }) => {
                    Value::String(ids.get(&start).cloned().ok_or_else(|| {
                        Violation::at(
                            event.seq,
                            format!(
                                "a legacy tool/result rewrite replaces seq {start}, which has no recorded message id"
                            ),
                        )
                    })?)
                }
                _ => fresh_id,
            };
            let mut message = Map::new();
            message.insert("id".into(), id);
            message.insert("role".into(), Value::String("user".into()));
            message.insert(
                "content".into(),
                json!([{"type": "tool-result", "toolCallId": call_id, "content": content, "isError": is_error}]),
            );
            message.insert("source".into(), json!({"kind": "tool", "callId": call_id}));
            rest.insert("message".into(), Value::Object(message));
        }
    }
    Ok(Value::Object(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::envelope::check_message_shape;
    use crate::query::surface::fold_surface;
    use crate::query::test_support::*;

    const SID: &str = "old";

    /// dsh's worked example: a pre-identity log with a pruning replacement.
    pub(crate) fn legacy_message_log() -> Vec<SessionEvent> {
        vec![
            log_only("turn/start", 0, json!({"turn": 1, "trigger": {"kind": "user"}})),
            log_only("user/message", 1, json!({"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}))
                .with_surface_op(SurfaceOp::Append),
            log_only("step/start", 2, json!({"turn": 1, "step": 1})),
            log_only("assistant/message", 3, json!({"turn": 1, "step": 1, "content": [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], "provenance": {"provider": "p", "model": "m"}}))
                .with_surface_op(SurfaceOp::Append),
            log_only("tool/call", 4, json!({"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"})),
            log_only("tool/result", 5, json!({"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "big"}], "isError": false}))
                .with_surface_op(SurfaceOp::Append)
                .with_sources(vec![4]),
            log_only("tool/result", 6, json!({"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "[pruned]"}], "isError": false}))
                .with_surface_op(SurfaceOp::Replace { start: 5, end: 5 })
                .with_sources(vec![5]),
            log_only("step/end", 7, json!({"turn": 1, "step": 1})),
            log_only("turn/end", 8, json!({"turn": 1, "reason": {"kind": "completed"}})),
        ]
    }

    #[test]
    fn worked_example_gets_deterministic_and_inherited_ids() {
        let out = normalize_log(SID, legacy_message_log()).unwrap();
        let ids: Vec<_> = out
            .iter()
            .filter_map(|e| message_id(e).map(|id| (e.seq, id.to_string())))
            .collect();
        assert_eq!(
            ids,
            vec![
                (1, "legacy-message:old:1".to_string()),
                (3, "legacy-message:old:3".to_string()),
                (5, "legacy-message:old:5".to_string()),
                (6, "legacy-message:old:5".to_string()),
            ]
        );
        for e in &out {
            check_message_shape(e).unwrap();
        }
        assert_eq!(out[0].data, json!({"turn": 1}));
        // The content-only rewrite rule holds after normalization.
        let fold = fold_surface(&out).unwrap();
        assert_eq!(fold.nodes, vec![1, 3, 6]);
        let surface_ids: Vec<_> = fold
            .nodes
            .iter()
            .map(|s| message_id(&out[usize::try_from(*s).unwrap()]).unwrap())
            .collect();
        assert_eq!(
            surface_ids,
            [
                "legacy-message:old:1",
                "legacy-message:old:3",
                "legacy-message:old:5"
            ]
        );
    }

    #[test]
    fn normalization_is_deterministic_and_idempotent() {
        let input = legacy_message_log();
        let once = normalize_log(SID, input.clone()).unwrap();
        assert_eq!(normalize_log(SID, input).unwrap(), once);
        assert_eq!(normalize_log(SID, once.clone()).unwrap(), once);
    }

    #[test]
    fn legacy_replacement_without_a_recorded_target_is_refused() {
        let prune = |seq, start| {
            log_only(
                "tool/result",
                seq,
                json!({"callId": "c", "content": [], "isError": false}),
            )
            .with_surface_op(SurfaceOp::Replace { start, end: start })
        };
        // A seq not yet written, and a log-only event, have no message id to inherit.
        let not_yet = normalize_log(SID, vec![prune(0, 9)]).unwrap_err();
        assert_eq!(not_yet.seq, Some(0));
        assert!(
            not_yet
                .message
                .contains("replaces seq 9, which has no recorded message id")
        );
        let log_only_target = vec![log_only("turn/start", 0, json!({"turn": 1})), prune(1, 0)];
        assert!(normalize_log(SID, log_only_target.clone()).is_err());
        // The streaming check says the same without copying current events.
        let mut reader = LegacyReader::default();
        reader.check(SID, &log_only_target[0]).unwrap();
        assert!(reader.check(SID, &log_only_target[1]).is_err());
        // A prune of a recorded message inherits its id, on both paths.
        let mut log = legacy_message_log();
        log.truncate(7);
        let mut reader = LegacyReader::default();
        for e in &log {
            reader.check(SID, e).unwrap();
        }
        assert_eq!(
            message_id(&normalize_log(SID, log).unwrap()[6]),
            Some("legacy-message:old:5")
        );
    }

    #[test]
    fn steering_messages_become_user_messages() {
        let wrapped = log_only("steering/message", 3, json!({"turn": 1, "message": {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}}))
            .with_surface_op(SurfaceOp::Append);
        let out = normalize_log(SID, vec![wrapped]).unwrap();
        assert_eq!(out[0].event_type, "user/message");
        assert_eq!(out[0].data["id"], "m");

        let flat = log_only(
            "steering/message",
            4,
            json!({"turn": 1, "content": [], "source": {"kind": "user"}}),
        )
        .with_surface_op(SurfaceOp::Append);
        let out = normalize_event(SID, flat.clone(), &HashMap::new()).unwrap();
        assert_eq!(out.data["id"], "legacy-message:old:4");
        assert_eq!(out.data["role"], "user");
        assert_eq!(out.surface_op, Some(SurfaceOp::Append));

        let bad = log_only("steering/message", 5, json!({"turn": 1, "content": []}));
        let err = normalize_event(SID, bad, &HashMap::new()).unwrap_err();
        assert!(
            err.message
                .contains("malformed pre-react-loop steering/message")
        );
    }

    fn turn_end(reason: &Value) -> Result<Value, Violation> {
        normalize_event(
            SID,
            log_only("turn/end", 0, json!({"turn": 1, "reason": reason})),
            &HashMap::new(),
        )
        .map(|e| e.data["reason"].clone())
    }

    #[test]
    fn legacy_turn_end_reasons_are_mapped() {
        assert_eq!(
            turn_end(&json!({"kind": "completed"})).unwrap(),
            json!({"kind": "completed"})
        );
        assert_eq!(
            turn_end(&json!({"kind": "aborted"})).unwrap(),
            json!({"kind": "aborted", "reason": {"kind": "legacy"}})
        );
        assert_eq!(
            turn_end(&json!({"kind": "disposed"})).unwrap(),
            json!({"kind": "aborted", "reason": {"kind": "disposed"}})
        );
        assert_eq!(
            turn_end(
                &json!({"kind": "error", "step": 2, "failure": {"message": "boom", "code": "E"}})
            )
            .unwrap(),
            json!({"kind": "error", "error": {"message": "boom", "code": "E"}})
        );
        assert_eq!(
            turn_end(&json!({"kind": "error", "step": 2, "message": "boom"})).unwrap(),
            json!({"kind": "error", "error": {"message": "boom", "code": "UNKNOWN"}})
        );
        let current = json!({"kind": "error", "error": {"message": "x", "code": "y"}});
        assert_eq!(turn_end(&current).unwrap(), current);
        assert_eq!(
            turn_end(&json!({"kind": "custom", "x": 1})).unwrap(),
            json!({"kind": "custom", "x": 1})
        );
    }

    #[test]
    fn malformed_turn_boundaries_are_rejected_not_repaired() {
        let stray_step = log_only(
            "turn/end",
            0,
            json!({"turn": 1, "step": 1, "reason": {"kind": "completed"}}),
        );
        let err = normalize_event(SID, stray_step, &HashMap::new()).unwrap_err();
        assert!(err.message.contains("malformed pre-react-loop turn/end"));
        assert!(turn_end(&json!({"kind": "completed", "extra": 1})).is_err());
        assert!(turn_end(&json!({"kind": "error", "step": -1, "message": "m"})).is_err());

        let bad_start = log_only(
            "turn/start",
            0,
            json!({"turn": 0, "trigger": {"kind": "user"}}),
        );
        assert!(normalize_event(SID, bad_start, &HashMap::new()).is_err());
        let no_kind = log_only("turn/start", 0, json!({"turn": 1, "trigger": {}}));
        assert!(normalize_event(SID, no_kind, &HashMap::new()).is_err());
    }

    #[test]
    fn current_looking_malformed_messages_are_left_for_the_validator() {
        // Has an id, so it is not a pre-identity shape; it lacks a role and stays broken.
        let e = log_only(
            "user/message",
            0,
            json!({"id": "x", "content": [], "source": {"kind": "user"}}),
        )
        .with_surface_op(SurfaceOp::Append);
        let out = normalize_log(SID, vec![e.clone()]).unwrap();
        assert_eq!(out[0], e);
        assert!(check_message_shape(&out[0]).is_err());
    }

    #[test]
    fn retired_shapes_refuse_the_whole_log() {
        for e in [
            log_only("request/header-delta", 1, json!({})),
            log_only("mode/set", 1, json!({})),
            log_only(
                "request/header",
                1,
                json!({"header": {}, "reason": "fallback"}),
            ),
        ] {
            let log = vec![log_only("turn/start", 0, json!({"turn": 1})), e];
            assert!(normalize_log(SID, log).is_err());
        }
    }
}
