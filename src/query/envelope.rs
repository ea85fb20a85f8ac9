//! The exact envelope rules (docs/SESSIONS.md, "The header line" and "The event envelope").
//!
//! An event line is accepted only if its top level has exactly the known keys with the
//! right types; a message event must also carry a well-formed message. These rules run
//! both when an event is appended (so a bad event is rejected before anything is
//! written) and when a log is read (so a damaged or foreign log is refused instead of
//! being half understood). They never guess: a malformed event is an error, not a repair.

use std::collections::HashSet;

use serde::{Deserialize, Deserializer, de::Error as _};
use serde_json::{Map, Value};

use crate::query::error::{HeaderError, Violation};
use crate::query::json::{
    MAX_SAFE_INTEGER, as_non_empty_str, as_safe_i64, as_safe_u64, check_lossless, is_safe_i64,
};
use crate::query::types::{SESSION_FORMAT_VERSION, SessionEvent, SessionHeader, SurfaceOp};

// Deserializing runs the same rules as reading a log, so a value of these types read from
// JSON has always passed them; the impls live here, with the rules, so `types` needs nothing
// from this module.
impl<'de> Deserialize<'de> for SessionHeader {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_header(&Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for SurfaceOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_surface_op(&Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for SessionEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_event(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

/// The event types this build knows (`KNOWN_SESSION_EVENT_TYPES`, 48 entries).
///
/// A stored event of any other type is refused on read unless it is `ignorable`.
pub const KNOWN_EVENT_TYPES: [&str; 48] = [
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "assistant/chunk",
    "assistant/message",
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    "request/context",
    "request/header",
    "sandbox/mode",
    "schedule/change",
    "session/end-seed",
    "session/title",
    "session/title-llm-request",
    "step/end",
    "step/start",
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "todo/write",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/call",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "tool/result",
    "turn/end",
    "turn/start",
    "user/message",
    "web/deepseek-search-llm-request",
];

/// The top-level keys an event may have.
const EVENT_KEYS: [&str; 7] = [
    "type",
    "seq",
    "time",
    "data",
    "surfaceOp",
    "sourceEventSeqs",
    "ignorable",
];

/// Parses and validates a header line.
///
/// The version is checked first, before the shape, so a newer writer's header is
/// refused as "newer" even if its shape changed too.
pub fn parse_header(value: &Value) -> Result<SessionHeader, HeaderError> {
    let invalid = |m: &str| HeaderError::Invalid(m.to_string());
    let map = value
        .as_object()
        .ok_or_else(|| invalid("the header is not a JSON object"))?;
    let Some(version) = map.get("version") else {
        return Err(invalid("version is missing"));
    };
    if let Some(n) = version.as_i64().filter(|n| *n < 0) {
        return Err(HeaderError::Unsupported(format!(
            "uses log format v{n}, older than the supported v{SESSION_FORMAT_VERSION}, and this build ships no upgrade path"
        )));
    }
    let version = as_safe_u64(version).ok_or_else(|| invalid("version is not an integer"))?;
    if version != SESSION_FORMAT_VERSION {
        return Err(HeaderError::Unsupported(format!(
            "uses log format v{version}, but this build reads only v{SESSION_FORMAT_VERSION}: the log was written by a newer writer; upgrade agentlog to open it"
        )));
    }
    if map.get("type").and_then(Value::as_str) != Some("session") {
        return Err(invalid("type must be \"session\""));
    }
    for retired in ["sandboxMode", "approvalPolicy"] {
        if map.contains_key(retired) {
            return Err(HeaderError::Invalid(format!(
                "retired field {retired} is no longer supported"
            )));
        }
    }
    let id = map
        .get("id")
        .and_then(as_non_empty_str)
        .ok_or_else(|| invalid("id must be a non-empty string"))?
        .to_string();
    let created_at = map
        .get("createdAt")
        .and_then(as_safe_u64)
        .ok_or_else(|| invalid("createdAt must be a non-negative safe integer"))?;
    let opt_str = |key: &str| -> Result<Option<String>, HeaderError> {
        match map.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| HeaderError::Invalid(format!("{key} must be a string"))),
        }
    };
    let opt_u64 = |key: &str| -> Result<Option<u64>, HeaderError> {
        match map.get(key) {
            None => Ok(None),
            Some(v) => as_safe_u64(v).map(Some).ok_or_else(|| {
                HeaderError::Invalid(format!("{key} must be a non-negative safe integer"))
            }),
        }
    };
    let header = SessionHeader {
        version,
        id,
        created_at,
        cwd: opt_str("cwd")?,
        parent_session: opt_str("parentSession")?,
        seed_length: opt_u64("seedLength")?,
        origin: opt_str("origin")?,
        delegation_depth: opt_u64("delegationDepth")?,
        agent_preset: opt_str("agentPreset")?,
        extra: map
            .iter()
            .filter(|(k, _)| !KNOWN_HEADER_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Map<String, Value>>(),
    };
    validate_header(&header).map_err(HeaderError::Invalid)?;
    Ok(header)
}

const KNOWN_HEADER_KEYS: [&str; 11] = [
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
    // Listed so a header built in code cannot smuggle it into `extra` either.
    "sandboxMode",
];

/// Validates the typed fields of a header (used on creation and after parsing).
pub(crate) fn validate_header(header: &SessionHeader) -> Result<(), String> {
    if header.version != SESSION_FORMAT_VERSION {
        return Err(format!(
            "version must be {SESSION_FORMAT_VERSION}, not {}",
            header.version
        ));
    }
    if header.id.is_empty() {
        return Err("id must be a non-empty string".into());
    }
    if header.created_at > MAX_SAFE_INTEGER {
        return Err("createdAt must be a non-negative safe integer".into());
    }
    if let Some(cwd) = &header.cwd
        && !is_absolute_path(cwd)
    {
        return Err(format!("cwd {cwd:?} must be an absolute path"));
    }
    if header.parent_session.as_deref() == Some("") {
        return Err("parentSession must not be empty".into());
    }
    for (name, v) in [
        ("seedLength", header.seed_length),
        ("delegationDepth", header.delegation_depth),
    ] {
        if v.is_some_and(|n| n > MAX_SAFE_INTEGER) {
            return Err(format!("{name} must be a non-negative safe integer"));
        }
    }
    if let Some(origin) = &header.origin
        && origin != "subagent"
    {
        return Err(format!("origin must be \"subagent\", not {origin:?}"));
    }
    if let Some(key) = header
        .extra
        .keys()
        .find(|k| KNOWN_HEADER_KEYS.contains(&k.as_str()) || *k == "approvalPolicy")
    {
        return Err(format!(
            "extra field {key} collides with a known or retired header field"
        ));
    }
    Ok(())
}

/// Whether `path` is absolute on POSIX or Windows (logs travel between systems).
fn is_absolute_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    match bytes {
        [b'/', ..] | [b'\\', b'\\', ..] => true,
        [drive, b':', b'\\' | b'/', ..] => drive.is_ascii_alphabetic(),
        _ => false,
    }
}

/// Parses a `surfaceOp` value: `"append"` or exactly `{op:"replace", start, end}`.
pub(crate) fn parse_surface_op(value: &Value) -> Result<SurfaceOp, String> {
    if value.as_str() == Some("append") {
        return Ok(SurfaceOp::Append);
    }
    let bad = || {
        "surfaceOp must be \"append\" or {op:\"replace\",start,end} with non-negative safe integers"
            .to_string()
    };
    if !crate::query::json::has_exact_keys(value, &["op", "start", "end"])
        || value.get("op").and_then(Value::as_str) != Some("replace")
    {
        return Err(bad());
    }
    let start = value.get("start").and_then(as_safe_u64).ok_or_else(bad)?;
    let end = value.get("end").and_then(as_safe_u64).ok_or_else(bad)?;
    Ok(SurfaceOp::Replace { start, end })
}

/// Parses a `sourceEventSeqs` value (element checks only; the fold checks the rest).
fn parse_source_seqs(value: &Value) -> Result<Vec<u64>, String> {
    let items = value
        .as_array()
        .ok_or_else(|| "sourceEventSeqs must be an array".to_string())?;
    items
        .iter()
        .map(|item| {
            if item.is_null() {
                // A JSON null is where a sparse JavaScript array had its hole.
                Err("sourceEventSeqs must densely contain non-negative safe integers".to_string())
            } else {
                as_safe_u64(item).ok_or_else(|| {
                    "sourceEventSeqs must contain only non-negative safe integers".to_string()
                })
            }
        })
        .collect()
}

/// Parses one event line's JSON into an event, enforcing the exact envelope. The
/// value is taken so that its `data`, most of an event, moves into the event uncopied.
pub(crate) fn parse_event(value: Value) -> Result<SessionEvent, Violation> {
    let Value::Object(mut map) = value else {
        return Err(Violation::log("invalid event envelope: not a JSON object"));
    };
    let seq = map.get("seq").and_then(as_safe_u64);
    let fail = |m: String| match seq {
        Some(s) => Violation::at(s, m),
        None => Violation::log(m),
    };
    if let Some(key) = map.keys().find(|k| !EVENT_KEYS.contains(&k.as_str())) {
        return Err(fail(format!(
            "invalid event envelope: unexpected key {key:?}"
        )));
    }
    let event_type = map
        .get("type")
        .and_then(as_non_empty_str)
        .ok_or_else(|| fail("invalid event envelope: type must be a non-empty string".into()))?
        .to_string();
    let seq = seq.ok_or_else(|| {
        fail("invalid event envelope: seq must be a non-negative safe integer".into())
    })?;
    let time = map
        .get("time")
        .and_then(as_safe_i64)
        .ok_or_else(|| fail("invalid event envelope: time must be a safe integer".into()))?;
    if !map.contains_key("data") {
        return Err(fail("invalid event envelope: data is missing".into()));
    }
    let surface_op = match map.get("surfaceOp") {
        None => None,
        Some(v) => Some(parse_surface_op(v).map_err(fail)?),
    };
    let source_event_seqs = match map.get("sourceEventSeqs") {
        None => None,
        Some(v) => Some(parse_source_seqs(v).map_err(fail)?),
    };
    let ignorable = match map.get("ignorable") {
        None => false,
        Some(Value::Bool(true)) => true,
        Some(_) => {
            return Err(fail(
                "invalid event envelope: ignorable must be true when present".into(),
            ));
        }
    };
    let event = SessionEvent {
        event_type,
        seq,
        time,
        data: map.remove("data").unwrap_or_default(),
        source_event_seqs,
        surface_op,
        ignorable,
    };
    validate_envelope(&event)?;
    Ok(event)
}

/// Checks the envelope rules a typed event can still break: safe-integer ranges, a
/// non-empty type and a lossless payload.
pub(crate) fn validate_envelope(event: &SessionEvent) -> Result<(), Violation> {
    let fail = |m: &str| Violation::at(event.seq, format!("invalid event envelope: {m}"));
    if event.event_type.is_empty() {
        return Err(fail("type must be a non-empty string"));
    }
    if event.seq > MAX_SAFE_INTEGER {
        return Err(fail("seq must be a non-negative safe integer"));
    }
    if !is_safe_i64(event.time) {
        return Err(fail("time must be a safe integer"));
    }
    if let Some(SurfaceOp::Replace { start, end }) = event.surface_op
        && (start > MAX_SAFE_INTEGER || end > MAX_SAFE_INTEGER)
    {
        return Err(fail(
            "replace start and end must be non-negative safe integers",
        ));
    }
    if let Some(seqs) = &event.source_event_seqs
        && seqs.iter().any(|s| *s > MAX_SAFE_INTEGER)
    {
        return Err(fail(
            "sourceEventSeqs must contain only non-negative safe integers",
        ));
    }
    check_lossless(&event.data)
        .map_err(|m| Violation::at(event.seq, format!("{} event: {m}", event.event_type)))
}

/// Checks the fields only surface events may carry, on one event alone: `surfaceOp` and
/// `sourceEventSeqs` are refused on a log-only type, `surfaceOp` is required on a surface type,
/// and `sourceEventSeqs` is non-empty (but on `assistant/message`), without duplicates, and
/// cites only earlier seqs (docs/SESSIONS.md, "Surface events and replace"). The surface fold
/// runs it on every event; a stored line that fails it ends the committed region.
pub(crate) fn check_surface_fields(c: &SessionEvent) -> Result<(), Violation> {
    let fail = |m: String| Violation::at(c.seq, m);
    let ty = c.event_type.as_str();
    if !c.is_surface() {
        if c.surface_op.is_some() {
            return Err(fail(format!("{ty} cannot carry surfaceOp")));
        }
        if c.source_event_seqs.is_some() {
            return Err(fail(format!("{ty} cannot carry sourceEventSeqs")));
        }
        return Ok(());
    }
    if c.surface_op.is_none() {
        return Err(fail(format!("{ty} requires a surfaceOp")));
    }
    let Some(sources) = &c.source_event_seqs else {
        return Ok(());
    };
    if sources.is_empty() && ty != "assistant/message" {
        return Err(fail(format!("sourceEventSeqs must not be empty on {ty}")));
    }
    let mut seen = HashSet::with_capacity(sources.len());
    for &s in sources {
        if s > MAX_SAFE_INTEGER {
            return Err(fail(
                "sourceEventSeqs must contain only non-negative safe integers".into(),
            ));
        }
        if !seen.insert(s) {
            return Err(fail(format!(
                "sourceEventSeqs must not contain duplicates ({s})"
            )));
        }
        if s >= c.seq {
            return Err(fail(format!(
                "sourceEventSeqs must reference earlier events ({s} is not before {})",
                c.seq
            )));
        }
    }
    Ok(())
}

/// Checks that a message event carries a well-formed message (docs/SESSIONS.md, "The event
/// envelope", message shapes).
///
/// `user/message` data *is* the message; `assistant/message` and `tool/result` hold it
/// under `message`. Other types pass unchecked.
pub fn check_message_shape(event: &SessionEvent) -> Result<(), Violation> {
    let fail = |m: &str| Violation::at(event.seq, format!("{}: {m}", event.event_type));
    let (message, role) = match event.event_type.as_str() {
        "user/message" => (&event.data, "user"),
        "assistant/message" => (
            event
                .data
                .get("message")
                .ok_or_else(|| fail("data.message is missing"))?,
            "assistant",
        ),
        "tool/result" => (
            event
                .data
                .get("message")
                .ok_or_else(|| fail("data.message is missing"))?,
            "user",
        ),
        _ => return Ok(()),
    };
    if !message.is_object() {
        return Err(fail("the message is not an object"));
    }
    if message.get("id").and_then(as_non_empty_str).is_none() {
        return Err(fail("the message needs a non-empty string id"));
    }
    if message.get("role").and_then(Value::as_str) != Some(role) {
        return Err(fail(&format!("the message role must be {role:?}")));
    }
    let source = message.get("source");
    let kind = source
        .and_then(|s| s.get("kind"))
        .and_then(as_non_empty_str)
        .ok_or_else(|| fail("the message source.kind must be a non-empty string"))?;
    let content = message
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| fail("the message content must be an array"))?;
    match event.event_type.as_str() {
        "assistant/message" => {
            let ok = kind == "model"
                && source
                    .and_then(|s| s.get("provider"))
                    .and_then(as_non_empty_str)
                    .is_some()
                && source
                    .and_then(|s| s.get("model"))
                    .and_then(as_non_empty_str)
                    .is_some();
            if !ok {
                return Err(fail(
                    "an assistant message needs source.kind \"model\" with a non-empty provider and model",
                ));
            }
        }
        "tool/result" => {
            let call_id = source
                .and_then(|s| s.get("callId"))
                .and_then(as_non_empty_str)
                .filter(|_| kind == "tool")
                .ok_or_else(|| {
                    fail("a tool result needs source.kind \"tool\" with a non-empty callId")
                })?;
            let [block] = content.as_slice() else {
                return Err(fail("a tool result needs exactly one content block"));
            };
            if block.get("type").and_then(Value::as_str) != Some("tool-result")
                || !block.get("content").is_some_and(Value::is_array)
            {
                return Err(fail(
                    "a tool result's block must be a tool-result block with an array content",
                ));
            }
            if block.get("toolCallId").and_then(Value::as_str) != Some(call_id) {
                return Err(fail(
                    "the tool-result block's toolCallId must equal source.callId",
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Why an event type or shape is retired and can neither be appended nor read, if it is.
pub(crate) fn retired_shape(event: &SessionEvent) -> Option<String> {
    match event.event_type.as_str() {
        "request/header-delta" | "mode/set" => Some(format!(
            "retired event type {} is no longer supported",
            event.event_type
        )),
        "request/header"
            if event.data.get("reason").and_then(Value::as_str) == Some("fallback") =>
        {
            Some("retired request/header with reason \"fallback\" is no longer supported".into())
        }
        _ => None,
    }
}

/// The set of event types a reader accepts without `ignorable: true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    extra: Vec<String>,
}

impl Default for Vocabulary {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl Vocabulary {
    /// [`KNOWN_EVENT_TYPES`] plus `extra` (types your own plugins write).
    pub fn new(extra: Vec<String>) -> Self {
        Self { extra }
    }

    /// Whether `event_type` is known.
    pub fn knows(&self, event_type: &str) -> bool {
        KNOWN_EVENT_TYPES.contains(&event_type) || self.extra.iter().any(|t| t == event_type)
    }

    /// Refuses an unknown, non-ignorable event.
    pub fn check(&self, event: &SessionEvent) -> Result<(), Violation> {
        if event.ignorable || self.knows(&event.event_type) {
            Ok(())
        } else {
            Err(Violation::at(
                event.seq,
                format!(
                    "unknown event type {:?} is not marked ignorable; a newer writer produced it, upgrade agentlog (or register the type) to read this log",
                    event.event_type
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_support::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<SessionEvent, Violation> {
        parse_event(v)
    }

    #[test]
    fn unknown_top_level_key_is_rejected() {
        let err =
            parse(json!({"type":"turn/start","seq":0,"time":1,"data":{},"ts":1})).unwrap_err();
        assert!(err.message.contains("invalid event envelope"), "{err}");
    }

    #[test]
    fn seq_time_data_and_ignorable_are_checked() {
        for bad in [
            json!({"type":"t","seq":-1,"time":1,"data":{}}),
            json!({"type":"t","seq":0.5,"time":1,"data":{}}),
            json!({"type":"t","seq":0,"time":1.5,"data":{}}),
            json!({"type":"t","seq":0,"time":1}),
            json!({"type":"t","seq":0,"time":1,"data":{},"ignorable":false}),
            json!({"type":"","seq":0,"time":1,"data":{}}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
        let ok = parse(json!({"type":"t","seq":0,"time":-5,"data":null,"ignorable":true})).unwrap();
        assert!(ok.ignorable);
    }

    #[test]
    fn source_seqs_must_be_an_array() {
        let err = parse(json!({"type":"user/message","seq":1,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":3})).unwrap_err();
        assert!(err.message.contains("must be an array"), "{err}");
    }

    #[test]
    fn source_seqs_must_densely_contain_non_negative_safe_integers() {
        let hole = parse(json!({"type":"user/message","seq":1,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[0,null]})).unwrap_err();
        assert!(hole.message.contains("densely contain"), "{hole}");
        for bad in [json!("0"), json!(0.5), json!(-1)] {
            let err = parse(json!({"type":"user/message","seq":1,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[bad]})).unwrap_err();
            assert!(err.message.contains("non-negative safe integers"), "{err}");
        }
    }

    #[test]
    fn replace_op_needs_exactly_three_keys() {
        assert!(parse_surface_op(&json!({"op":"replace","start":1,"end":2})).is_ok());
        assert!(parse_surface_op(&json!({"op":"replace","start":1})).is_err());
        assert!(parse_surface_op(&json!({"op":"replace","start":1,"end":2,"x":0})).is_err());
        assert!(parse_surface_op(&json!({"op":"append","start":1,"end":2})).is_err());
        assert!(parse_surface_op(&json!("prepend")).is_err());
    }

    #[test]
    fn non_lossless_data_is_rejected_with_the_event_type_named() {
        let v: Value =
            serde_json::from_str(r#"{"type":"todo/write","seq":0,"time":1,"data":{"x":-0}}"#)
                .unwrap();
        let err = parse_event(v).unwrap_err();
        assert!(err.message.contains("todo/write"), "{err}");
    }

    #[test]
    fn newer_and_older_versions_are_refused_naming_the_direction() {
        let newer = parse_header(&json!({"type":"session","version":1,"id":"s","createdAt":1}))
            .unwrap_err();
        assert!(
            matches!(&newer, HeaderError::Unsupported(m) if m.contains("newer")),
            "{newer}"
        );
        let older = parse_header(&json!({"type":"session","version":-1,"id":"s","createdAt":1}))
            .unwrap_err();
        assert!(
            matches!(&older, HeaderError::Unsupported(m) if m.contains("older")),
            "{older}"
        );
    }

    #[test]
    fn header_numbers_must_be_non_negative_safe_integers() {
        for created in [json!(-1), json!(1.5), json!(-0.0), json!("1")] {
            let v = json!({"type":"session","version":0,"id":"s","createdAt":created});
            assert!(
                matches!(parse_header(&v), Err(HeaderError::Invalid(_))),
                "{v}"
            );
        }
        let v: Value = serde_json::from_str(
            r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":-0}"#,
        )
        .unwrap();
        assert!(parse_header(&v).is_err());
        let relative = json!({"type":"session","version":0,"id":"s","createdAt":1,"cwd":"rel/dir"});
        assert!(parse_header(&relative).is_err());
        let retired =
            json!({"type":"session","version":0,"id":"s","createdAt":1,"sandboxMode":"x"});
        assert!(parse_header(&retired).is_err());
    }

    #[test]
    fn message_shapes_are_checked() {
        assert!(check_message_shape(&user(1, "m1", "hi")).is_ok());
        assert!(check_message_shape(&assistant(2, "m2", "ok")).is_ok());
        assert!(check_message_shape(&tool_result(3, "m3", "c1", "out")).is_ok());

        let mut no_id = user(1, "m1", "hi");
        no_id.data.as_object_mut().unwrap().remove("id");
        assert!(check_message_shape(&no_id).is_err());

        let mut wrong_call = tool_result(3, "m3", "c1", "out");
        wrong_call.data["message"]["content"][0]["toolCallId"] = json!("c2");
        assert!(check_message_shape(&wrong_call).is_err());

        let mut no_model = assistant(2, "m2", "ok");
        no_model.data["message"]["source"]["model"] = json!("");
        assert!(check_message_shape(&no_model).is_err());
    }

    #[test]
    fn unknown_types_are_refused_unless_ignorable() {
        let vocab = Vocabulary::default();
        let e = SessionEvent::new("future/thing", 0, 1, json!({}));
        assert!(vocab.check(&e).is_err());
        assert!(vocab.check(&e.clone().with_ignorable()).is_ok());
        assert!(
            Vocabulary::new(vec!["future/thing".into()])
                .check(&e)
                .is_ok()
        );
    }
}
