//! The `session_log` fuzz target's generator: mostly-valid dsh session logs built from fuzzed
//! event picks ([`Ev`]): current and legacy message shapes, compactions and tool-result
//! prunes aimed at current surface nodes, steering, turn-end reasons, and deliberate faults
//! (broken surface ops, tampered and malformed messages, retired and unknown types, garbage
//! lines).

use std::collections::HashMap;

use agentlog::query::SurfaceOp;
use arbitrary::Arbitrary;
use serde_json::{Map, Value, json};

/// Message texts, with case, whitespace and Unicode that text filters must handle.
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

/// One fuzzed event pick, turned into a line by [`Builder::event`].
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Ev {
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
#[derive(Clone)]
struct ToolResultInfo {
    data: Value,
    call_id: String,
    legacy: bool,
}

/// Writes a log event by event, tracking what later events refer to.
pub struct Builder {
    /// The log so far.
    pub out: Vec<u8>,
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
    /// A log that starts with the header line `header`.
    pub fn new(header: &str) -> Builder {
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
    pub fn render_next(&mut self, ev: Ev) -> Vec<u8> {
        let (len, seq, time) = (self.out.len(), self.seq, self.time);
        let nodes = self.nodes.clone();
        self.event(ev);
        let line = self.out.split_off(len);
        (self.seq, self.time, self.nodes) = (seq, time, nodes);
        line
    }

    /// Writes the line (or lines) of `ev`.
    pub fn event(&mut self, ev: Ev) {
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
