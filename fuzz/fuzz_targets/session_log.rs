//! One session's log (`ROOT/s/events.jsonl`, beside a fixed small session `p`) through the
//! query service and legacy normalization.
//!
//! Input: bytes starting with `{` are the whole log file; `h` + a header pick + raw bytes is
//! a chosen header line followed by those bytes; anything else is decoded with `arbitrary` into
//! a header pick and a list of mostly-valid events from a small dsh vocabulary (current and
//! legacy message shapes, compactions, prunes, steering, turn-end reasons, broken surface ops,
//! damaged lines, a torn tail), plus window/trace probes and a second batch appended later.
//!
//! Oracles:
//! * every answer (list_sessions, read_session, list_events, read_surface, filter_events,
//!   list_events_of_types, read_event windows, trace_event, trace_session; or the error's
//!   `QueryError::code()`) is the same from a store over the plain `JsonlSource` and from the
//!   default index-backed store, again after reopening it (index now built), and again after
//!   the second batch is appended (index caught up);
//! * a naive model re-derives the answers: header, `scan_log`, `normalize_log` and the read
//!   rules give the expected events or error code, a surface fold reimplemented here from the
//!   spec (§3) gives the classes, the surface and the traces; windows are the events whose seq
//!   lies in the clamped range;
//! * `normalize_log` is deterministic, keeps every envelope field but the legacy type, and is
//!   idempotent on the logs the reader accepts;
//! * a log the reader accepts unchanged (no legacy shape) is accepted as one append batch by a
//!   live session, which answers like the stored copy, and reads back the same once closed.
//!   A log refused only for its surface is refused as one batch, which leaves the live session
//!   as it was (every surface push taken back); the events before the first fault are then
//!   accepted and fold as the naive model says.
//!
//! Nothing may panic.
#![no_main]

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentlog::query::testing::{check_message_shape, normalize_log, parse_header, scan_log};
use agentlog::query::{
    CheckpointPolicy, JsonlSource, QueryConfig, QueryError, QueryService, SessionEvent,
    SessionEventDocument, SessionEventRecord, SessionEventTrace, SessionEventWindow,
    SessionHeader, SessionLineageTrace, SessionLogSnapshot, SessionRecord, SessionSurfaceSnapshot,
    SourceError, Store, StoreConfig, SurfaceClass, SurfaceOp, SurfaceState, Vocabulary,
    WindowRequest, event_text,
};
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;

/// The fuzzed session's id (and directory name).
const SID: &str = "s";
const MAX_EVENTS: usize = 64;
const MAX_PROBES: usize = 4;
const SAFE: u64 = (1 << 53) - 1;
const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// Header lines for session `s`; the first few are valid.
const HEADERS: [&str; 12] = [
    r#"{"type":"session","version":0,"id":"s","createdAt":1000}"#,
    r#"{"type":"session","version":0,"id":"s","createdAt":1000,"cwd":"/w","parentSession":"p"}"#,
    r#"{"type":"session","version":0,"id":"s","createdAt":500,"parentSession":"missing","origin":"subagent","delegationDepth":1,"agentPreset":"x"}"#,
    r#"{"type":"session","version":0,"id":"s","createdAt":1000,"parentSession":"s","zz":{"a":[1]}}"#,
    r#"{"type":"session","version":1,"id":"s","createdAt":1000}"#,
    r#"{"type":"session","version":0,"id":"t","createdAt":1000}"#,
    r#"{"type":"session","version":0,"id":"s","createdAt":9007199254740992}"#,
    r#"{"type":"session","version":0,"id":"s","createdAt":1000,"sandboxMode":"x"}"#,
    r#"{"type":"session","version":0,"id":"s","createdAt":1000,"cwd":"rel"}"#,
    r#"{"type":"session","version":-1,"id":"s","createdAt":1000}"#,
    r#"{"type":"session""#,
    "",
];

const PARENTS_OF_P: [Option<&str>; 4] = [None, Some("s"), Some("missing"), Some("p")];

const TEXTS: [&str; 10] = [
    "hello",
    "Hello  World",
    "café ÉCOLE",
    "a\tb\nc",
    "",
    "  ",
    "[pruned]",
    "ünïcode ß ΣΑΣ",
    "x",
    "{\"path\":\"a\"}",
];

const TYPE_SETS: [&[&str]; 5] = [
    &["user/message"],
    &["tool/call", "turn/end", "steering/message"],
    &["tool/result", "step/start"],
    &["assistant/message", "user/message", "tool/result"],
    &[],
];

// ---------------------------------------------------------------------------------------
// Input

#[derive(Arbitrary, Debug)]
struct Structured {
    header: u8,
    parent_of_p: u8,
    events: Vec<Ev>,
    tail: Tail,
    more: Vec<Ev>,
    probes: Vec<Probe>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Ev {
    TurnStart {
        legacy: bool,
    },
    TurnEnd(u8),
    Step {
        end: bool,
    },
    Chunk(u8),
    User {
        legacy: bool,
        text: u8,
    },
    Assistant {
        legacy: bool,
        text: u8,
        sources: u8,
    },
    ToolCall(u8),
    ToolResult {
        legacy: bool,
        text: u8,
        cite_call: bool,
        error: bool,
    },
    Steering(u8),
    Compact {
        from: u8,
        to: u8,
        cite: u8,
    },
    Prune {
        pick: u8,
        legacy: bool,
        change: bool,
    },
    Todo(u8),
    Other(u8),
    Unknown {
        ignorable: bool,
    },
    Retired(u8),
    Tamper(u8),
    BadMessage(u8),
    Garbage(u8),
    TimeJump(i32),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Tail {
    None,
    /// The next event, cut after this many bytes; the second batch completes it.
    Torn(u8),
    Garbage(u8),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct Probe {
    seq: SeqPick,
    before: Bound,
    after: Bound,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum SeqPick {
    Index(u8),
    FromEnd(u8),
    Raw(u64),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Bound {
    Absent,
    Small(u8),
    Huge(u64),
}

/// What one input asks for.
struct Case {
    log: Vec<u8>,
    more: Vec<u8>,
    parent_of_p: Option<&'static str>,
    probes: Vec<Probe>,
}

impl Case {
    fn decode(data: &[u8]) -> Case {
        match data {
            [b'{', ..] => Case::raw(data.to_vec()),
            [b'h', pick, body @ ..] => {
                let mut log = HEADERS[usize::from(*pick) % HEADERS.len()]
                    .as_bytes()
                    .to_vec();
                log.push(b'\n');
                log.extend_from_slice(body);
                Case::raw(log)
            }
            [_, rest @ ..] => Case::structured(rest),
            [] => Case::raw(Vec::new()),
        }
    }

    fn raw(log: Vec<u8>) -> Case {
        Case {
            log,
            more: Vec::new(),
            parent_of_p: Some("missing"),
            probes: default_probes(),
        }
    }

    fn structured(bytes: &[u8]) -> Case {
        let Ok(mut s) = Structured::arbitrary_take_rest(Unstructured::new(bytes)) else {
            return Case::raw(Vec::new());
        };
        s.events.truncate(MAX_EVENTS);
        s.more.truncate(MAX_EVENTS / 4);
        s.probes.truncate(MAX_PROBES);
        // Mostly a valid header.
        let pick = usize::from(s.header) % 32;
        let header = if pick < HEADERS.len() {
            HEADERS[pick]
        } else {
            HEADERS[0]
        };
        let mut b = Builder::new(header);
        for ev in &s.events {
            b.event(*ev);
        }
        let mut more = Vec::new();
        match s.tail {
            Tail::None => {}
            Tail::Torn(cut) => {
                let line = b.render_next(Ev::Step { end: false });
                let cut = usize::from(cut) % line.len().max(1);
                b.out.extend_from_slice(&line[..cut]);
                more.extend_from_slice(&line[cut..]);
            }
            Tail::Garbage(k) => b.out.extend_from_slice(GARBAGE_TAILS[usize::from(k) % 3]),
        }
        let split = b.out.len();
        for ev in &s.more {
            b.event(*ev);
        }
        more.extend_from_slice(&b.out[split..]);
        b.out.truncate(split);
        Case {
            log: b.out,
            more,
            parent_of_p: PARENTS_OF_P[usize::from(s.parent_of_p) % PARENTS_OF_P.len()],
            probes: if s.probes.is_empty() {
                default_probes()
            } else {
                s.probes
            },
        }
    }
}

const GARBAGE_TAILS: [&[u8]; 3] = [b"{\"type\":\"turn/end\",\"seq\":", b"\xff\xfe", b"   "];

fn default_probes() -> Vec<Probe> {
    use Bound::*;
    use SeqPick::*;
    vec![
        Probe {
            seq: Index(0),
            before: Absent,
            after: Absent,
        },
        Probe {
            seq: Index(1),
            before: Small(1),
            after: Small(1),
        },
        Probe {
            seq: FromEnd(1),
            before: Small(50),
            after: Small(50),
        },
        Probe {
            seq: FromEnd(0),
            before: Small(0),
            after: Huge(u64::MAX),
        },
        Probe {
            seq: Raw(u64::MAX),
            before: Small(2),
            after: Small(51),
        },
        Probe {
            seq: Raw(SAFE + 1),
            before: Small(3),
            after: Absent,
        },
    ]
}

// ---------------------------------------------------------------------------------------
// Generating mostly-valid logs

#[derive(Clone)]
struct ToolResultInfo {
    data: Value,
    call_id: String,
    legacy: bool,
}

struct Builder {
    out: Vec<u8>,
    seq: u64,
    time: i64,
    turn: u64,
    /// The surface as the generator believes it is (to aim replaces at current nodes).
    nodes: Vec<u64>,
    results: HashMap<u64, ToolResultInfo>,
    calls: Vec<(u64, String)>,
    chunks: Vec<u64>,
}

fn text_block(t: u8) -> Value {
    json!([{"type": "text", "text": TEXTS[usize::from(t) % TEXTS.len()]}])
}

impl Builder {
    fn new(header: &str) -> Builder {
        let mut out = header.as_bytes().to_vec();
        out.push(b'\n');
        Builder {
            out,
            seq: 0,
            time: 1_000,
            turn: 1,
            nodes: Vec::new(),
            results: HashMap::new(),
            calls: Vec::new(),
            chunks: Vec::new(),
        }
    }

    fn envelope(&self, ty: &str, data: Value) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), json!(ty));
        m.insert("seq".into(), json!(self.seq));
        m.insert("time".into(), json!(self.time));
        m.insert("data".into(), data);
        m
    }

    fn push(&mut self, m: Map<String, Value>) {
        self.push_raw(Value::Object(m).to_string().as_bytes());
        self.seq += 1;
        self.time += 7;
    }

    fn push_raw(&mut self, line: &[u8]) {
        self.out.extend_from_slice(line);
        self.out.push(b'\n');
    }

    fn surface(&mut self, ty: &str, data: Value, op: SurfaceOp, sources: Option<Vec<u64>>) {
        let mut m = self.envelope(ty, data);
        m.insert("surfaceOp".into(), serde_json::to_value(op).unwrap());
        if let Some(s) = sources {
            m.insert("sourceEventSeqs".into(), json!(s));
        }
        let seq = self.seq;
        match op {
            SurfaceOp::Append => self.nodes.push(seq),
            SurfaceOp::Replace { start, end } => {
                let pos = |s| self.nodes.iter().position(|n| *n == s);
                if let (Some(lo), Some(hi)) = (pos(start), pos(end))
                    && lo <= hi
                {
                    self.nodes.splice(lo..=hi, [seq]);
                }
            }
        }
        self.push(m);
    }

    /// The line the next `ev` would write, without writing it.
    fn render_next(&mut self, ev: Ev) -> Vec<u8> {
        let (len, seq, time) = (self.out.len(), self.seq, self.time);
        let nodes = self.nodes.clone();
        self.event(ev);
        let line = self.out.split_off(len);
        (self.seq, self.time, self.nodes) = (seq, time, nodes);
        line
    }

    fn event(&mut self, ev: Ev) {
        let turn = self.turn;
        match ev {
            Ev::TurnStart { legacy } => {
                let data = if legacy {
                    json!({"turn": turn, "trigger": {"kind": "user"}})
                } else {
                    json!({"turn": turn})
                };
                let m = self.envelope("turn/start", data);
                self.push(m);
            }
            Ev::TurnEnd(k) => {
                let reasons = [
                    json!({"kind": "completed"}),
                    json!({"kind": "aborted"}),
                    json!({"kind": "disposed"}),
                    json!({"kind": "error", "step": 0, "failure": {"message": "boom", "code": "E"}}),
                    json!({"kind": "error", "step": 1, "message": "Boom  Again"}),
                    json!({"kind": "error", "error": {"message": "x", "code": "y"}}),
                    json!({"kind": "max-tokens"}),
                    json!({"kind": "custom", "x": 1}),
                    json!({"kind": "completed", "extra": 1}),
                    json!({"kind": "aborted", "reason": {"kind": "user"}}),
                    json!({"kind": "interrupted"}),
                    json!({"kind": "error", "step": -1, "message": "m"}),
                ];
                let i = usize::from(k) % (reasons.len() + 1);
                let data = match reasons.get(i) {
                    Some(reason) => json!({"turn": turn, "reason": reason}),
                    None => json!({"turn": turn, "step": 1, "reason": {"kind": "completed"}}),
                };
                let m = self.envelope("turn/end", data);
                self.push(m);
                self.turn += 1;
            }
            Ev::Step { end } => {
                let ty = if end { "step/end" } else { "step/start" };
                let m = self.envelope(ty, json!({"turn": turn, "step": 1}));
                self.push(m);
            }
            Ev::Chunk(t) => {
                self.chunks.push(self.seq);
                let m = self.envelope(
                    "assistant/chunk",
                    json!({"turn": turn, "step": 1, "delta": TEXTS[usize::from(t) % TEXTS.len()]}),
                );
                self.push(m);
            }
            Ev::User { legacy, text } => {
                let data = if legacy {
                    json!({"content": text_block(text), "source": {"kind": "user"}, "extra": 1})
                } else {
                    json!({"id": format!("u{}", self.seq), "role": "user",
                           "source": {"kind": "user"}, "content": text_block(text)})
                };
                self.surface("user/message", data, SurfaceOp::Append, None);
            }
            Ev::Assistant {
                legacy,
                text,
                sources,
            } => {
                let data = if legacy {
                    json!({"turn": turn, "step": 1, "content": text_block(text),
                           "provenance": {"provider": "p", "model": "m"}, "usage": {}})
                } else {
                    json!({"turn": turn, "step": 1, "message": {"id": format!("a{}", self.seq),
                           "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"},
                           "content": text_block(text)}})
                };
                let chunks = std::mem::take(&mut self.chunks);
                let sources = match sources % 3 {
                    0 => Some(chunks),
                    1 => Some(Vec::new()),
                    _ => None,
                };
                self.surface("assistant/message", data, SurfaceOp::Append, sources);
            }
            Ev::ToolCall(k) => {
                let call_id = format!("c{}", k % 4);
                self.calls.push((self.seq, call_id.clone()));
                let m = self.envelope(
                    "tool/call",
                    json!({"turn": turn, "step": 1, "callId": call_id, "name": "read", "arguments": "{\"path\":\"a\"}"}),
                );
                self.push(m);
            }
            Ev::ToolResult {
                legacy,
                text,
                cite_call,
                error,
            } => {
                let (call_seq, call_id) = self.calls.last().cloned().unwrap_or((0, "c0".into()));
                let mut data = if legacy {
                    json!({"turn": turn, "step": 1, "callId": call_id, "content": text_block(text), "isError": error})
                } else {
                    json!({"turn": turn, "step": 1, "message": {"id": format!("r{}", self.seq), "role": "user",
                           "source": {"kind": "tool", "callId": call_id},
                           "content": [{"type": "tool-result", "toolCallId": call_id, "content": text_block(text)}]}})
                };
                if error {
                    data["error"] = json!({"name": "Oops", "code": "E_OOPS"});
                }
                let info = ToolResultInfo {
                    data: data.clone(),
                    call_id,
                    legacy,
                };
                self.results.insert(self.seq, info);
                let sources = (cite_call && call_seq < self.seq).then(|| vec![call_seq]);
                self.surface("tool/result", data, SurfaceOp::Append, sources);
            }
            Ev::Steering(k) => {
                let seq = self.seq;
                let (data, op) = match k % 4 {
                    0 => (
                        json!({"turn": turn, "content": text_block(k), "source": {"kind": "user"}}),
                        true,
                    ),
                    1 => (
                        json!({"turn": turn, "message": {"id": format!("w{seq}"), "role": "user",
                                 "source": {"kind": "user"}, "content": text_block(k)}}),
                        true,
                    ),
                    2 => (
                        json!({"turn": turn, "message": {"content": text_block(k), "source": {"kind": "user"}}}),
                        true,
                    ),
                    _ => (json!({"turn": turn, "content": []}), false),
                };
                if op {
                    self.surface("steering/message", data, SurfaceOp::Append, None);
                } else {
                    let m = self.envelope("steering/message", data);
                    self.push(m);
                }
            }
            Ev::Compact { from, to, cite } => {
                if self.nodes.is_empty() {
                    return self.event(Ev::Step { end: false });
                }
                let len = self.nodes.len();
                let (a, b) = (usize::from(from) % len, usize::from(to) % len);
                let (lo, hi) = if cite % 5 == 4 {
                    (a.max(b), a.min(b))
                } else {
                    (a.min(b), a.max(b))
                };
                let start_seq = self.seq;
                let m = self.envelope("compaction/start", json!({"turn": turn}));
                self.push(m);
                let m = self.envelope(
                    "compaction/summary",
                    json!({"turn": turn, "summary": "sum"}),
                );
                self.push(m);
                let shadowed: Vec<u64> = self.nodes[lo.min(hi)..=hi.max(lo)].to_vec();
                let mut sources = vec![start_seq, start_seq + 1];
                sources.extend(&shadowed);
                let sources = match cite % 5 {
                    1 => {
                        sources.pop();
                        Some(sources)
                    }
                    2 => None,
                    3 => {
                        sources.push(start_seq);
                        Some(sources)
                    }
                    _ => Some(sources),
                };
                let data = json!({"id": format!("u{}", self.seq), "role": "user",
                                  "source": {"kind": "compaction"}, "content": text_block(0)});
                let op = SurfaceOp::Replace {
                    start: self.nodes[lo],
                    end: self.nodes[hi],
                };
                self.surface("user/message", data, op, sources);
            }
            Ev::Prune {
                pick,
                legacy,
                change,
            } => {
                let current: Vec<u64> = self
                    .nodes
                    .iter()
                    .copied()
                    .filter(|n| self.results.contains_key(n))
                    .collect();
                let Some(&target) = current.get(usize::from(pick) % current.len().max(1)) else {
                    return self.event(Ev::Todo(pick));
                };
                let info = self.results[&target].clone();
                let m = self.envelope("compaction/prune", json!({"turn": turn, "seqs": [target]}));
                self.push(m);
                let pruned = json!([{"type": "text", "text": "[pruned]"}]);
                let mut data = if legacy && info.legacy {
                    let mut d = info.data.clone();
                    d["content"] = pruned;
                    d
                } else if legacy {
                    json!({"turn": turn, "step": 1, "callId": info.call_id, "content": pruned, "isError": false})
                } else {
                    let mut d = info.data.clone();
                    if let Some(c) = d.pointer_mut("/message/content/0/content") {
                        *c = pruned;
                    }
                    d
                };
                if change {
                    data["step"] = json!(2);
                }
                self.results.insert(
                    self.seq,
                    ToolResultInfo {
                        data: data.clone(),
                        ..info
                    },
                );
                let op = SurfaceOp::Replace {
                    start: target,
                    end: target,
                };
                self.surface("tool/result", data, op, Some(vec![target]));
            }
            Ev::Todo(k) => {
                let m = self.envelope(
                    "todo/write",
                    json!({"todos": [{"status": "pending", "content": TEXTS[usize::from(k) % TEXTS.len()]}]}),
                );
                self.push(m);
            }
            Ev::Other(k) => {
                let types = [
                    "request/context",
                    "session/title",
                    "hook/invoked",
                    "llm/retry",
                    "plan/mode",
                    "request/header",
                    "goal/change",
                    "command/run",
                ];
                let ty = types[usize::from(k) % types.len()];
                let m = self.envelope(ty, json!({"turn": turn, "reason": "normal", "title": "T"}));
                self.push(m);
            }
            Ev::Unknown { ignorable } => {
                let mut m = self.envelope("future/thing", json!({"x": 1}));
                if ignorable {
                    m.insert("ignorable".into(), json!(true));
                }
                self.push(m);
            }
            Ev::Retired(k) => {
                let m = match k % 3 {
                    0 => self.envelope("mode/set", json!({})),
                    1 => self.envelope("request/header-delta", json!({})),
                    _ => self.envelope(
                        "request/header",
                        json!({"header": {}, "reason": "fallback"}),
                    ),
                };
                self.push(m);
            }
            Ev::Tamper(k) => {
                let seq = self.seq;
                let user = json!({"id": format!("u{seq}"), "role": "user",
                                  "source": {"kind": "user"}, "content": text_block(k)});
                match k % 8 {
                    0 => {
                        let mut m = self.envelope("step/start", json!({"turn": turn, "step": 1}));
                        m.insert("surfaceOp".into(), json!("append"));
                        self.push(m);
                    }
                    1 => {
                        let mut m = self.envelope("step/start", json!({"turn": turn, "step": 1}));
                        m.insert("sourceEventSeqs".into(), json!([0]));
                        self.push(m);
                    }
                    2 => {
                        let m = self.envelope("user/message", user);
                        self.push(m);
                    }
                    3 => self.surface("user/message", user, SurfaceOp::Append, Some(vec![])),
                    4 => self.surface("user/message", user, SurfaceOp::Append, Some(vec![seq])),
                    5 => self.surface("user/message", user, SurfaceOp::Append, Some(vec![0, 0])),
                    6 => {
                        let op = SurfaceOp::Replace {
                            start: 999,
                            end: 999,
                        };
                        self.surface("user/message", user, op, Some(vec![0]));
                    }
                    _ => {
                        let mut m = self.envelope("step/start", json!({"turn": turn, "step": 1}));
                        m.insert(
                            "surfaceOp".into(),
                            json!({"op": "replace", "start": 0, "end": 0}),
                        );
                        self.push(m);
                    }
                }
            }
            Ev::BadMessage(k) => {
                let seq = self.seq;
                let (ty, data) = match k % 5 {
                    0 => (
                        "user/message",
                        json!({"role": "user", "id": "", "source": {"kind": "user"}, "content": []}),
                    ),
                    1 => (
                        "assistant/message",
                        json!({"turn": turn, "step": 1, "message": {"id": format!("a{seq}"),
                          "role": "user", "source": {"kind": "model", "provider": "p", "model": "m"}, "content": []}}),
                    ),
                    2 => (
                        "tool/result",
                        json!({"turn": turn, "step": 1, "message": {"id": format!("r{seq}"), "role": "user",
                          "source": {"kind": "tool", "callId": "c1"},
                          "content": [{"type": "tool-result", "toolCallId": "c2", "content": []}]}}),
                    ),
                    3 => (
                        "assistant/message",
                        json!({"turn": turn, "step": 1, "message": {"id": format!("a{seq}"),
                          "role": "assistant", "source": {"kind": "model", "provider": "p"}, "content": []}}),
                    ),
                    _ => ("user/message", json!("just a string")),
                };
                self.surface(ty, data, SurfaceOp::Append, None);
            }
            Ev::Garbage(k) => {
                let (seq, time) = (self.seq, self.time);
                match k % 11 {
                    0 => self.push_raw(b"{not json"),
                    1 => self.push_raw(b""),
                    2 => self.push_raw(
                        format!(
                            r#"{{"type":"turn/start","seq":{seq},"time":{time},"data":{{}},"x":1}}"#
                        )
                        .as_bytes(),
                    ),
                    3 => {
                        self.seq += 1;
                        self.event(Ev::Step { end: false });
                    }
                    4 if seq > 0 => {
                        self.seq -= 1;
                        self.event(Ev::Step { end: true });
                    }
                    5 => {
                        self.push_raw(
                            format!(r#"{{"type":"todo/write","seq":{seq},"time":{time},"data":{{"x":-0}}}}"#).as_bytes(),
                        );
                        self.seq += 1;
                    }
                    6 => {
                        let mut line = self.render_next(Ev::Step { end: false });
                        line.pop();
                        line.extend_from_slice(b"\r\n");
                        self.out.extend_from_slice(&line);
                        self.seq += 1;
                    }
                    7 => {
                        self.push_raw(
                            format!(r#"{{"type":"step/start","seq":{seq},"time":9007199254740992,"data":{{}}}}"#).as_bytes(),
                        );
                        self.seq += 1;
                    }
                    8 => self.push_raw(
                        format!(r#"{{"type":"step/start","seq":"{seq}","time":1,"data":{{}}}}"#)
                            .as_bytes(),
                    ),
                    9 => self.push_raw(b"\xff\xfe{}"),
                    _ => self.push_raw(b"[]"),
                }
            }
            Ev::TimeJump(d) => {
                self.time = self.time.saturating_add(i64::from(d) * 1000);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Answers

type R<T> = Result<T, &'static str>;

fn code<T>(r: Result<T, QueryError>) -> R<T> {
    r.map_err(|e| e.code())
}

/// What to ask.
struct Plan {
    windows: Vec<WindowRequest>,
    traces: Vec<u64>,
}

impl Plan {
    fn new(probes: &[Probe], n: u64) -> Plan {
        let resolve = |p: SeqPick| match p {
            SeqPick::Index(i) => u64::from(i),
            SeqPick::FromEnd(i) => n.saturating_sub(u64::from(i)),
            SeqPick::Raw(v) => v,
        };
        let bound = |b: Bound| match b {
            Bound::Absent => None,
            Bound::Small(v) => Some(u64::from(v)),
            Bound::Huge(v) => Some(v),
        };
        let windows = probes
            .iter()
            .map(|p| WindowRequest {
                session_id: SID.into(),
                seq: resolve(p.seq),
                before: bound(p.before),
                after: bound(p.after),
            })
            .collect();
        let mut traces = vec![0, n.saturating_sub(1), n];
        for p in probes.iter().take(2) {
            let s = resolve(p.seq);
            if !traces.contains(&s) {
                traces.push(s);
            }
        }
        Plan { windows, traces }
    }
}

#[derive(Debug, PartialEq)]
struct Answers {
    sessions: R<Vec<SessionRecord>>,
    read: R<SessionLogSnapshot>,
    events: R<Vec<SessionEventRecord>>,
    surface: R<SessionSurfaceSnapshot>,
    documents: R<Vec<SessionEventDocument>>,
    of_types: Vec<R<Vec<SessionEventRecord>>>,
    windows: Vec<R<SessionEventWindow>>,
    traces: Vec<R<SessionEventTrace>>,
    lineages: Vec<R<SessionLineageTrace>>,
    bad_ids: Vec<&'static str>,
}

fn ask(store: &Store, plan: &Plan) -> Answers {
    let svc = QueryService::new(store, QueryConfig::default()).unwrap();
    let err = |r: Result<SessionLogSnapshot, QueryError>| match r {
        Ok(_) => "ok",
        Err(e) => e.code(),
    };
    Answers {
        sessions: code(svc.list_sessions()),
        read: code(svc.read_session(SID)),
        events: code(svc.list_events(SID)),
        surface: code(svc.read_surface(SID)),
        documents: code(svc.filter_events(SID, &[])),
        of_types: TYPE_SETS
            .iter()
            .map(|t| code(svc.list_events_of_types(SID, t)))
            .collect(),
        windows: plan
            .windows
            .iter()
            .map(|w| code(svc.read_event(w)))
            .collect(),
        traces: plan
            .traces
            .iter()
            .map(|s| code(svc.trace_event(SID, *s)))
            .collect(),
        lineages: [SID, "p", "missing"]
            .iter()
            .map(|id| code(svc.trace_session(id)))
            .collect(),
        bad_ids: vec![
            err(svc.read_session("nope")),
            err(svc.read_session("../s")),
            err(svc.read_session("")),
        ],
    }
}

/// Compares two answer sets field by field, naming the first difference.
fn same(what: &str, a: &Answers, b: &Answers, live: bool) {
    macro_rules! eq {
        ($field:ident) => {
            assert_eq!(a.$field, b.$field, "{what}: {}", stringify!($field));
        };
    }
    eq!(read);
    eq!(events);
    eq!(surface);
    eq!(documents);
    eq!(of_types);
    eq!(windows);
    eq!(traces);
    eq!(bad_ids);
    if !live {
        // A live session is listed as live, and the live store holds no session `p`.
        eq!(sessions);
        eq!(lineages);
    }
}

// ---------------------------------------------------------------------------------------
// The naive model

/// The read path re-derived: header, committed events, legacy normalization, read rules.
struct Model {
    /// The header as listed (`None`: not listed).
    listed: Option<SessionHeader>,
    /// Where the header, the scan (which applies every rule one line is checked for), the
    /// retired-type or the unknown-type check fails: every read fails the same way.
    early: R<(SessionHeader, Vec<SessionEvent>)>,
    /// The normalized, checked events (or the code of the first read rule broken).
    events: R<Vec<SessionEvent>>,
    fold: Option<Result<NaiveFold, ()>>,
}

fn model(log: &[u8]) -> Model {
    let listed = log
        .iter()
        .position(|b| *b == b'\n')
        .and_then(|end| serde_json::from_slice::<Value>(&log[..end]).ok())
        .and_then(|v| parse_header(&v).ok())
        .filter(|h| h.id == SID);
    let early = scan_log(log)
        .map_err(|e| match e {
            SourceError::Unsupported(_) => "unsupported_format",
            _ => "corrupt_session",
        })
        .and_then(|s| {
            if s.header.id == SID {
                Ok(s)
            } else {
                Err("corrupt_session")
            }
        })
        .and_then(|s| {
            let retired = s.events.iter().any(|e| {
                matches!(e.event_type.as_str(), "mode/set" | "request/header-delta")
                    || (e.event_type == "request/header"
                        && e.data.get("reason").and_then(Value::as_str) == Some("fallback"))
            });
            // A steering message is read as a user message, a known type.
            let vocabulary = Vocabulary::default();
            let unknown = s.events.iter().any(|e| {
                e.event_type != "steering/message" && vocabulary.check(e).is_err()
            });
            if retired {
                Err("corrupt_session")
            } else if unknown {
                Err("unsupported_format")
            } else {
                Ok((s.header, s.events))
            }
        });
    // What only the whole log shows: a legacy rewrite's inherited id.
    let events = early.clone().and_then(|(_, stored)| {
        let events = normalize_log(SID, stored).map_err(|_| "corrupt_session")?;
        for e in &events {
            check_message_shape(e).map_err(|_| "corrupt_session")?;
        }
        Ok(events)
    });
    let fold = events.as_ref().ok().map(|e| naive_fold(e));
    Model {
        listed,
        early,
        events,
        fold,
    }
}

/// The surface fold, re-derived from the spec (§3).
struct NaiveFold {
    nodes: Vec<u64>,
    replaced_by: HashMap<u64, u64>,
    replaced: HashMap<u64, Vec<u64>>,
}

impl NaiveFold {
    fn class(&self, seq: u64) -> SurfaceClass {
        if self.nodes.contains(&seq) {
            SurfaceClass::Current
        } else if self.replaced_by.contains_key(&seq) {
            SurfaceClass::Shadowed
        } else {
            SurfaceClass::LogOnly
        }
    }
}

/// `data` without `message.content[0].content` (the one part a tool-result rewrite may change).
fn without_content(data: &Value) -> Value {
    let mut d = data.clone();
    if let Some(block) = d
        .pointer_mut("/message/content/0")
        .and_then(Value::as_object_mut)
    {
        block.remove("content");
    }
    d
}

fn naive_fold(events: &[SessionEvent]) -> Result<NaiveFold, ()> {
    let mut f = NaiveFold {
        nodes: Vec::new(),
        replaced_by: HashMap::new(),
        replaced: HashMap::new(),
    };
    for (i, e) in events.iter().enumerate() {
        if e.seq != i as u64 {
            return Err(());
        }
        if !SURFACE_TYPES.contains(&e.event_type.as_str()) {
            if e.surface_op.is_some() || e.source_event_seqs.is_some() {
                return Err(());
            }
            continue;
        }
        let op = e.surface_op.ok_or(())?;
        let sources = e.source_event_seqs.clone();
        if let Some(s) = &sources {
            let unique: HashSet<u64> = s.iter().copied().collect();
            if (s.is_empty() && e.event_type != "assistant/message")
                || unique.len() != s.len()
                || s.iter().any(|x| *x >= e.seq)
            {
                return Err(());
            }
        }
        match op {
            SurfaceOp::Append => f.nodes.push(e.seq),
            SurfaceOp::Replace { start, end } => {
                let lo = f.nodes.iter().position(|n| *n == start).ok_or(())?;
                let hi = f.nodes.iter().position(|n| *n == end).ok_or(())?;
                if lo > hi {
                    return Err(());
                }
                let shadowed: Vec<u64> = f.nodes[lo..=hi].to_vec();
                let cited = sources.unwrap_or_default();
                if shadowed.iter().any(|s| !cited.contains(s)) {
                    return Err(());
                }
                if e.event_type == "tool/result" {
                    let [target] = shadowed[..] else {
                        return Err(());
                    };
                    let t = &events[target as usize];
                    if t.event_type != "tool/result"
                        || without_content(&t.data) != without_content(&e.data)
                    {
                        return Err(());
                    }
                }
                for s in &shadowed {
                    f.replaced_by.insert(*s, e.seq);
                }
                f.nodes.splice(lo..=hi, [e.seq]);
                f.replaced.insert(e.seq, shadowed);
            }
        }
    }
    Ok(f)
}

fn record(e: &SessionEvent, fold: &NaiveFold) -> SessionEventRecord {
    SessionEventRecord {
        session_id: SID.into(),
        seq: e.seq,
        event_type: e.event_type.clone(),
        time: e.time,
        surface: fold.class(e.seq),
    }
}

/// Checks the answers of the JSONL-backed store against the model.
fn check_model(m: &Model, got: &Answers, plan: &Plan, p_header: &SessionHeader) {
    // The listing: `p`, and `s` when its header is readable, newest first.
    let mut listed: Vec<SessionRecord> = [Some(p_header.clone()), m.listed.clone()]
        .into_iter()
        .flatten()
        .map(|header| SessionRecord {
            header,
            live: false,
            persisted: true,
        })
        .collect();
    listed.sort_by(|a, b| {
        b.header
            .created_at
            .cmp(&a.header.created_at)
            .then_with(|| a.header.id.cmp(&b.header.id))
    });
    assert_eq!(got.sessions, Ok(listed), "model: list_sessions");
    let header = match &m.early {
        Ok((h, _)) => h.clone(),
        Err(c) => {
            for (i, w) in got.windows.iter().enumerate() {
                if plan.windows[i].bounds(50).is_ok() {
                    assert_eq!(w.as_ref().err(), Some(c), "model: window {i}");
                }
            }
            for (i, t) in got.of_types.iter().enumerate() {
                assert_eq!(t.as_ref().err(), Some(c), "model: types {:?}", TYPE_SETS[i]);
            }
            SessionHeader::new(SID, 0)
        }
    };
    let events = match &m.events {
        Ok(e) => e,
        Err(c) => {
            assert_eq!(got.read.as_ref().err(), Some(c), "model: read_session");
            assert_eq!(got.events.as_ref().err(), Some(c), "model: list_events");
            assert_eq!(got.surface.as_ref().err(), Some(c), "model: read_surface");
            assert_eq!(
                got.documents.as_ref().err(),
                Some(c),
                "model: filter_events"
            );
            for (i, t) in got.traces.iter().enumerate() {
                assert_eq!(
                    t.as_ref().err(),
                    Some(c),
                    "model: trace_event {}",
                    plan.traces[i]
                );
            }
            return;
        }
    };
    // Windows read raw events without folding.
    for (i, (w, req)) in got.windows.iter().zip(&plan.windows).enumerate() {
        let want = match req.bounds(50) {
            Err(_) => Err("invalid_window"),
            Ok((before, after)) => match events.iter().find(|e| e.seq == req.seq) {
                None => Err("event_not_found"),
                Some(target) => {
                    let (lo, hi) = (
                        req.seq.saturating_sub(before),
                        req.seq.saturating_add(after),
                    );
                    let slice: Vec<SessionEvent> = events
                        .iter()
                        .filter(|e| (lo..=hi).contains(&e.seq))
                        .cloned()
                        .collect();
                    Ok(SessionEventWindow {
                        session: header.clone(),
                        target: target.clone(),
                        start_seq: slice.first().map_or(req.seq, |e| e.seq),
                        end_seq: slice.last().map_or(req.seq, |e| e.seq),
                        events: slice,
                    })
                }
            },
        };
        assert_eq!(w, &want, "model: window {i} {req:?}");
    }
    let fold = match m.fold.as_ref() {
        Some(Ok(f)) => f,
        _ => {
            let c = Some(&"invalid_surface");
            assert_eq!(
                got.read.as_ref().err(),
                c,
                "model: read_session of a broken surface"
            );
            assert_eq!(
                got.events.as_ref().err(),
                c,
                "model: list_events of a broken surface"
            );
            assert_eq!(
                got.surface.as_ref().err(),
                c,
                "model: read_surface of a broken surface"
            );
            assert_eq!(
                got.documents.as_ref().err(),
                c,
                "model: filter_events of a broken surface"
            );
            for (i, t) in got.traces.iter().enumerate() {
                let s = plan.traces[i];
                let want = if events.iter().any(|e| e.seq == s) {
                    "invalid_surface"
                } else {
                    "event_not_found"
                };
                assert_eq!(
                    t.as_ref().err(),
                    Some(&want),
                    "model: trace_event {s} of a broken surface"
                );
            }
            return;
        }
    };
    let records: Vec<SessionEventRecord> = events.iter().map(|e| record(e, fold)).collect();
    let want_read = SessionLogSnapshot {
        session: header.clone(),
        events: events.clone(),
    };
    assert_eq!(got.read, Ok(want_read), "model: read_session");
    assert_eq!(got.events, Ok(records.clone()), "model: list_events");
    let want_surface = SessionSurfaceSnapshot {
        session: header.clone(),
        captured_through_seq: events.last().map(|e| e.seq),
        events: fold
            .nodes
            .iter()
            .map(|s| events[*s as usize].clone())
            .collect(),
    };
    assert_eq!(got.surface, Ok(want_surface), "model: read_surface");
    let docs: Vec<SessionEventDocument> = events
        .iter()
        .map(|e| (record(e, fold), event_text(e)))
        .filter(|(_, text)| !text.is_empty())
        .map(|(record, text)| SessionEventDocument { record, text })
        .collect();
    assert_eq!(got.documents, Ok(docs), "model: filter_events");
    for (i, t) in got.of_types.iter().enumerate() {
        let want: Vec<SessionEventRecord> = records
            .iter()
            .filter(|r| TYPE_SETS[i].contains(&r.event_type.as_str()))
            .cloned()
            .collect();
        assert_eq!(
            t,
            &Ok(want),
            "model: list_events_of_types {:?}",
            TYPE_SETS[i]
        );
    }
    for (t, &seq) in got.traces.iter().zip(&plan.traces) {
        let want = match events.iter().find(|e| e.seq == seq) {
            None => Err("event_not_found"),
            Some(target) => {
                let mut chain = Vec::new();
                let mut next = fold.replaced_by.get(&seq).copied();
                while let Some(r) = next {
                    chain.push(r);
                    next = fold.replaced_by.get(&r).copied();
                }
                Ok(SessionEventTrace {
                    target: record(target, fold),
                    replaced_by: fold.replaced_by.get(&seq).copied(),
                    replacement_chain: chain,
                    replaced_event_seqs: fold.replaced.get(&seq).cloned().unwrap_or_default(),
                    source_event_seqs: target.source_event_seqs.clone().unwrap_or_default(),
                    derived_event_seqs: events
                        .iter()
                        .filter(|e| {
                            e.seq > seq
                                && e.source_event_seqs
                                    .as_ref()
                                    .is_some_and(|s| s.contains(&seq))
                        })
                        .map(|e| e.seq)
                        .collect(),
                })
            }
        };
        assert_eq!(t, &want, "model: trace_event {seq}");
    }
}

/// Legacy normalization on its own: deterministic, envelope-preserving, idempotent on the
/// logs the reader accepts.
fn check_normalization(stored: &[SessionEvent]) {
    let once = normalize_log(SID, stored.to_vec());
    assert_eq!(
        normalize_log(SID, stored.to_vec()),
        once,
        "normalize_log is not deterministic"
    );
    let Ok(once) = once else { return };
    assert_eq!(
        once.len(),
        stored.len(),
        "normalize_log changed the event count"
    );
    for (n, s) in once.iter().zip(stored) {
        let ty_ok = n.event_type == s.event_type
            || (s.event_type == "steering/message" && n.event_type == "user/message");
        assert!(
            ty_ok,
            "normalize_log turned {} into {}",
            s.event_type, n.event_type
        );
        assert_eq!(
            (
                n.seq,
                n.time,
                n.surface_op,
                &n.source_event_seqs,
                n.ignorable
            ),
            (
                s.seq,
                s.time,
                s.surface_op,
                &s.source_event_seqs,
                s.ignorable
            ),
            "normalize_log changed the envelope of seq {}",
            s.seq
        );
    }
    // A normalized log the reader rejects (a message shape it cannot accept) may normalize
    // further; one it accepts must be a fixed point.
    if once.iter().all(|e| check_message_shape(e).is_ok()) {
        assert_eq!(
            normalize_log(SID, once.clone()).as_ref(),
            Ok(&once),
            "normalize_log is not idempotent"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Driver

fn dirs() -> (PathBuf, PathBuf) {
    let work = common::workdir();
    (work.join("store"), work.join("live"))
}

fn reset(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
}

fn quiet() -> StoreConfig {
    StoreConfig {
        checkpoint: CheckpointPolicy {
            max_pending_events: usize::MAX,
            max_delay: Duration::from_secs(3600),
        },
        ..StoreConfig::default()
    }
}

fn jsonl_store(root: &Path) -> Store {
    Store::with_source(
        root,
        StoreConfig::default(),
        Arc::new(JsonlSource::new(root)),
    )
    .unwrap()
}

/// Asks the JSONL-backed store, checks it against the model, and returns its answers.
fn check_phase(log: &[u8], root: &Path, plan: &Plan, p_header: &SessionHeader) -> (Answers, Model) {
    let m = model(log);
    let plain = ask(&jsonl_store(root), plan);
    check_model(&m, &plain, plan, p_header);
    if let Ok((_, stored)) = &m.early {
        check_normalization(stored);
    }
    (plain, m)
}

/// A log the reader accepts unchanged is accepted by a live session, which answers the same,
/// and reads back the same once closed.
fn check_live(m: &Model, stored: &Answers, plan: &Plan, live_root: &Path) {
    let (Ok((header, raw)), Ok(events), Some(fold)) = (&m.early, &m.events, &m.fold) else {
        return;
    };
    if raw != events {
        return; // legacy shapes: an append must refuse them
    }
    reset(live_root);
    if fold.is_err() {
        check_refused_batch(header, events, live_root);
        return;
    }
    {
        let store = Store::open(live_root, quiet()).unwrap();
        if let Err(e) = store.create_session(header.clone()) {
            panic!("a header the reader accepts was refused by create_session: {e}");
        }
        if let Err(e) = store.append(SID, events.clone()) {
            panic!("a log the reader accepts was refused as an append batch: {e}");
        }
        same("live vs stored", &ask(&store, plan), stored, true);
        if let Err(e) = store.close_session(SID) {
            panic!("closing the live session failed: {e}");
        }
    }
    if events.is_empty() {
        return; // nothing was appended, so nothing was written (lazy materialization)
    }
    let reopened = ask(&Store::open(live_root, quiet()).unwrap(), plan);
    same(
        "written by a live session vs the original",
        &reopened,
        stored,
        true,
    );
}

/// A log whose only fault is its surface is refused as one append batch, and the refusal
/// takes back every surface push the batch made: the live session is as it was, and the
/// events before the first fault are then accepted and fold as the spec says.
fn check_refused_batch(header: &SessionHeader, events: &[SessionEvent], live_root: &Path) {
    let Some(fault) = (0..events.len()).find(|&k| naive_fold(&events[..=k]).is_err()) else {
        panic!("the naive fold refuses the log but no prefix of it");
    };
    let store = Store::open(live_root, quiet()).unwrap();
    if let Err(e) = store.create_session(header.clone()) {
        panic!("a header the reader accepts was refused by create_session: {e}");
    }
    match store.append(SID, events.to_vec()) {
        Err(e) => assert_eq!(e.code(), "invalid_event", "{e}"),
        Ok(_) => panic!("a batch with a surface fault at event {fault} was accepted"),
    }
    let untouched = store.with_live(SID, |v| (v.events.len(), v.surface.clone()));
    assert_eq!(
        untouched,
        Some((0, SurfaceState::new())),
        "a refused batch left its pushes in the live session"
    );
    if let Err(e) = store.append(SID, events[..fault].to_vec()) {
        panic!("the {fault} events before the fault were refused after the refused batch: {e}");
    }
    let nodes = store.with_live(SID, |v| v.surface.nodes().collect::<Vec<_>>());
    let expected = naive_fold(&events[..fault]).map(|f| f.nodes).ok();
    assert_eq!(nodes, expected, "the live surface after the refused batch");
}

fn run(case: &Case) {
    let (root, live_root) = dirs();
    reset(&root);
    let mut p_header = SessionHeader::new("p", 1000);
    p_header.parent_session = case.parent_of_p.map(str::to_string);
    let p_dir = root.join("p");
    std::fs::create_dir_all(&p_dir).unwrap();
    let p_log = format!(
        "{}\n{}\n{}\n",
        serde_json::to_string(&p_header).unwrap(),
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        r#"{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
    );
    std::fs::write(p_dir.join("events.jsonl"), p_log).unwrap();
    let s_dir = root.join(SID);
    std::fs::create_dir_all(&s_dir).unwrap();
    let log_path = s_dir.join("events.jsonl");
    std::fs::write(&log_path, &case.log).unwrap();

    let n = scan_log(&case.log).map_or(8, |s| s.events.len() as u64);
    let plan = Plan::new(&case.probes, n);

    // Phase 1: a fresh index, then the same index reopened.
    let (plain, m) = check_phase(&case.log, &root, &plan, &p_header);
    same(
        "indexed (built) vs plain",
        &ask(&Store::open(&root, StoreConfig::default()).unwrap(), &plan),
        &plain,
        false,
    );
    let indexed = Store::open(&root, StoreConfig::default()).unwrap();
    same(
        "indexed (reopened) vs plain",
        &ask(&indexed, &plan),
        &plain,
        false,
    );
    check_live(&m, &plain, &plan, &live_root);

    // Phase 2: more lines appended; the index catches up.
    if !case.more.is_empty() {
        let mut log = case.log.clone();
        log.extend_from_slice(&case.more);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&log_path)
            .unwrap();
        file.write_all(&case.more).unwrap();
        drop(file);
        let n = scan_log(&log).map_or(8, |s| s.events.len() as u64);
        let plan = Plan::new(&case.probes, n);
        let (plain, _) = check_phase(&log, &root, &plan, &p_header);
        same(
            "indexed (caught up) vs plain",
            &ask(&indexed, &plan),
            &plain,
            false,
        );
    }
}

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    run(&Case::decode(data));
});
