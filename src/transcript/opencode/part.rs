//! One `OpenCode` part's `data` JSON (a database `part` row, or an older storage file
//! `storage/part/<message>/prt_*.json`): its type and what it holds (a text or reasoning
//! part's `text`; a tool part's `tool` and its `state.input` / `state.output`), and a store's
//! messages with their parts, in each session's time order. The rules:
//! `docs/TRANSCRIPTS.md, "OpenCode"`.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::Value;

use super::message::{NotAnObject, parse_head};
use super::{PartRow, Row, SessionInfo, Store};
use crate::transcript::json::{Obj, Text, parse_line};

/// The fields of a part the rules read (every one tolerant).
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct Data<'a> {
    #[serde(rename = "type")]
    kind: Text<'a>,
    text: Text<'a>,
    tool: Text<'a>,
    state: Obj<State>,
    #[serde(rename = "messageID")]
    message: Text<'a>,
    #[serde(rename = "sessionID")]
    session: Text<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct State {
    input: Value,
    output: Value,
}

/// What one part holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpenCodePart {
    /// `type`: `text`, `reasoning`, `tool`, `step-start`, `patch`, ...
    pub kind: Option<String>,
    /// `text` (text and reasoning parts).
    pub text: Option<String>,
    /// `tool` (tool parts).
    pub tool: Option<String>,
    /// `state.input` (tool parts), as it is.
    pub input: Option<Value>,
    /// `state.output` (tool parts), as it is.
    pub output: Option<Value>,
    /// `messageID`, if the data carries it (older storage files do).
    pub message: Option<String>,
    /// `sessionID`, if the data carries it.
    pub session: Option<String>,
}

/// Reads a part's `data`.
///
/// # Errors
/// [`NotAnObject`] when `data` is not a JSON object.
pub fn parse_part(data: &[u8]) -> Result<OpenCodePart, NotAnObject> {
    let d: Data = parse_line(data).ok_or(NotAnObject)?;
    let text = |t: &Text<'_>| t.non_empty().map(str::to_owned);
    let (input, output) = match d.state {
        Obj::Is(s) => (s.input, s.output),
        _ => (Value::Null, Value::Null),
    };
    let some = |v: Value| (!v.is_null()).then_some(v);
    Ok(OpenCodePart {
        kind: text(&d.kind),
        text: text(&d.text),
        tool: text(&d.tool),
        input: some(input),
        output: some(output),
        message: text(&d.message),
        session: text(&d.session),
    })
}

/// One message of a session with its parts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConversationMessage {
    /// The message id.
    pub(crate) id: String,
    /// Its session.
    pub(crate) session: String,
    /// Its 0-based index within its session, in time order.
    pub(crate) index: u64,
    /// `role`.
    pub(crate) role: Option<String>,
    /// `time.created`, ms since the Unix epoch.
    pub(crate) created_ms: Option<u64>,
    /// Its readable parts, by part id (ids grow with time).
    pub(crate) parts: Vec<OpenCodePart>,
    /// The message's `data` as stored.
    pub(crate) data: Vec<u8>,
    /// Each readable part's `data` as stored (a JSON object), in the order of `parts`.
    pub(crate) part_data: Vec<Vec<u8>>,
}

/// A store's messages with their parts.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Conversation {
    /// Every message, by session id, then index.
    pub(crate) messages: Vec<ConversationMessage>,
    /// Messages whose `data` is not a JSON object (kept, without role or time).
    pub(crate) odd_messages: u64,
    /// Parts skipped: not a JSON object, or of no message of the store.
    pub(crate) skipped_parts: u64,
    /// The sessions' own records.
    pub(crate) sessions: Vec<SessionInfo>,
}

/// A message row with its role and time.
type Head<'a> = (&'a Row, Option<String>, Option<u64>);

/// The messages of `store` with their parts. A session's messages are in the order of their
/// `time.created` (a message without one last), then of their ids; that order's 0-based index
/// addresses a message (search hits, export rows).
pub(crate) fn conversation(store: &Store) -> Conversation {
    let mut out = Conversation {
        skipped_parts: store.skipped_parts,
        sessions: store.sessions.clone(),
        ..Conversation::default()
    };
    let mut sessions: BTreeMap<&str, Vec<Head<'_>>> = BTreeMap::new();
    for row in &store.rows {
        let (role, created) = parse_head(&row.data).unwrap_or_else(|NotAnObject| {
            out.odd_messages += 1;
            (None, None)
        });
        sessions
            .entry(row.session.as_str())
            .or_default()
            .push((row, role, created));
    }
    let mut parts: HashMap<&str, Vec<(&PartRow, OpenCodePart)>> = HashMap::new();
    for part in &store.parts {
        if let Ok(p) = parse_part(&part.data) {
            parts
                .entry(part.message.as_str())
                .or_default()
                .push((part, p));
        } else {
            tracing::debug!(part = %part.id, "an OpenCode part that is not a JSON object");
            out.skipped_parts += 1;
        }
    }
    for (session, mut messages) in sessions {
        messages.sort_by(|a, b| (a.2.is_none(), a.2, &a.0.id).cmp(&(b.2.is_none(), b.2, &b.0.id)));
        for (index, (row, role, created_ms)) in (0u64..).zip(messages) {
            let mut own = parts.remove(row.id.as_str()).unwrap_or_default();
            own.sort_by(|a, b| a.0.id.cmp(&b.0.id));
            out.messages.push(ConversationMessage {
                id: row.id.clone(),
                session: session.to_owned(),
                index,
                role,
                created_ms,
                data: row.data.clone(),
                part_data: own.iter().map(|(row, _)| row.data.clone()).collect(),
                parts: own.into_iter().map(|(_, p)| p).collect(),
            });
        }
    }
    // Parts of no message read: nowhere to put them.
    out.skipped_parts += parts.values().map(|p| p.len() as u64).sum::<u64>();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_read_tolerantly() {
        let text = parse_part(br#"{"type":"text","text":"hello","time":{"start":1}}"#).unwrap();
        assert_eq!(text.kind.as_deref(), Some("text"));
        assert_eq!(text.text.as_deref(), Some("hello"));
        let tool = parse_part(
            br#"{"type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"ls"},"output":"a\nb"}}"#,
        )
        .unwrap();
        assert_eq!(tool.tool.as_deref(), Some("bash"));
        assert_eq!(tool.input, Some(serde_json::json!({"command": "ls"})));
        assert_eq!(tool.output, Some(Value::String("a\nb".into())));
        let odd = parse_part(br#"{"type":7,"text":["x"],"state":"running"}"#).unwrap();
        assert_eq!(odd, OpenCodePart::default());
        assert_eq!(parse_part(b"[1]"), Err(NotAnObject));
        assert_eq!(parse_part(br#"{"type":"text""#), Err(NotAnObject));
    }

    fn row(id: &str, session: &str, data: &str) -> Row {
        Row {
            id: id.into(),
            session: session.into(),
            data: data.as_bytes().to_vec(),
            file: None,
        }
    }

    fn part(id: &str, message: &str, data: &str) -> PartRow {
        PartRow {
            id: id.into(),
            message: message.into(),
            data: data.as_bytes().to_vec(),
        }
    }

    #[test]
    fn messages_are_indexed_in_time_order_with_their_parts() {
        let store = Store {
            path: "/db".into(),
            rows: vec![
                row("m3", "s", r#"{"role":"assistant","time":{"created":30}}"#),
                row("m1", "s", r#"{"role":"user","time":{"created":10}}"#),
                row("m0", "s", r#"{"role":"user"}"#),
                row("m2", "t", "not json"),
            ],
            parts: vec![
                part("p2", "m1", r#"{"type":"text","text":"second"}"#),
                part("p1", "m1", r#"{"type":"text","text":"first"}"#),
                part("p3", "m3", "garbage"),
                part("p4", "gone", r#"{"type":"text","text":"orphan"}"#),
            ],
            sessions: Vec::new(),
            skipped_parts: 1,
            wal: false,
        };
        let c = conversation(&store);
        let order: Vec<(&str, &str, u64)> = c
            .messages
            .iter()
            .map(|m| (m.session.as_str(), m.id.as_str(), m.index))
            .collect();
        assert_eq!(
            order,
            [
                ("s", "m1", 0),
                ("s", "m3", 1),
                ("s", "m0", 2),
                ("t", "m2", 0)
            ]
        );
        let texts: Vec<_> = c.messages[0].parts.iter().map(|p| p.text.clone()).collect();
        assert_eq!(texts, [Some("first".into()), Some("second".into())]);
        assert_eq!(c.messages[0].role.as_deref(), Some("user"));
        assert_eq!(c.messages[1].created_ms, Some(30));
        assert_eq!(c.odd_messages, 1);
        assert_eq!(
            c.skipped_parts, 3,
            "one from the reader, a bad one, an orphan"
        );
    }
}
