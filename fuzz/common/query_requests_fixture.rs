//! The `query_requests` fuzz target's fixed store, built once per process: five stored sessions
//! written through `Store` from a deterministic generator (turns with chunks, tool calls and
//! results, todos, the turn-end reasons, a compaction replacing two nodes and a tool-result
//! prune) in a lineage root > child > grandchild plus an orphan, a legacy-shape log, a log whose
//! surface is broken, a live session with a checkpointed and a pending batch, and a live session
//! with no events; with the reference answers taken once from it.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use agentlog::query::{
    CheckpointPolicy, QueryConfig, QueryService, SessionEvent, SessionEventRecord, SessionHeader,
    SessionRecord, Store, StoreConfig, SurfaceOp,
};
use serde_json::{Value, json};

/// Session ids a request may name: every stored and live one, then unknown and invalid ids.
pub const IDS: [&str; 14] = [
    "root",
    "child",
    "grandchild",
    "orphan",
    "legacy",
    "broken",
    "live",
    "empty-live",
    "nope",
    "missing",
    "../root",
    "",
    ".hidden",
    "a:b",
];
/// Events of a realistic session, as a runtime appends them.
struct Gen {
    events: Vec<SessionEvent>,
    nodes: Vec<u64>,
    t0: i64,
    rng: u64,
}

impl Gen {
    fn next(&mut self, n: u64) -> u64 {
        self.rng = self
            .rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.rng >> 33) % n
    }

    fn push(&mut self, ty: &str, data: Value) -> u64 {
        let seq = self.events.len() as u64;
        self.events.push(SessionEvent::new(
            ty,
            seq,
            self.t0 + 3 * i64::try_from(seq).unwrap(),
            data,
        ));
        seq
    }

    fn surface(&mut self, ty: &str, data: Value, op: SurfaceOp, sources: Option<Vec<u64>>) -> u64 {
        let seq = self.push(ty, data);
        let e = self.events.last_mut().unwrap();
        e.surface_op = Some(op);
        e.source_event_seqs = sources;
        match op {
            SurfaceOp::Append => self.nodes.push(seq),
            SurfaceOp::Replace { start, end } => {
                let lo = self.nodes.iter().position(|n| *n == start).unwrap();
                let hi = self.nodes.iter().position(|n| *n == end).unwrap();
                self.nodes.splice(lo..=hi, [seq]);
            }
        }
        seq
    }

    fn session(turns: u64, t0: i64, seed: u64) -> Vec<SessionEvent> {
        const USER: [&str; 5] = [
            "Hello  World",
            "read the file café.txt",
            "Σίσυφος ΣΑΣ",
            "what's\tup",
            "École\u{a0}normale",
        ];
        const REPLY: [&str; 3] = ["General\n Kenobi", "I'll read it", "ok"];
        let mut g = Gen {
            events: Vec::new(),
            nodes: Vec::new(),
            t0,
            rng: seed,
        };
        let mut results = Vec::new();
        for turn in 1..=turns {
            g.push("turn/start", json!({"turn": turn}));
            let text = USER[usize::try_from(g.next(5)).unwrap()];
            g.surface(
                "user/message",
                json!({"id": format!("u{}", g.events.len()), "role": "user", "source": {"kind": "user"},
                       "content": [{"type": "text", "text": text}]}),
                SurfaceOp::Append,
                None,
            );
            g.push("step/start", json!({"turn": turn, "step": 1}));
            let chunks: Vec<u64> = (0..g.next(3))
                .map(|_| g.push("assistant/chunk", json!({"turn": turn, "delta": "…"})))
                .collect();
            let reply = REPLY[usize::try_from(g.next(3)).unwrap()];
            g.surface(
                "assistant/message",
                json!({"turn": turn, "step": 1, "message": {"id": format!("a{}", g.events.len()),
                       "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"},
                       "content": [{"type": "text", "text": reply},
                                   {"type": "reasoning", "text": "hidden thoughts"}]}}),
                SurfaceOp::Append,
                Some(chunks),
            );
            if g.next(3) > 0 {
                let call = g.push(
                    "tool/call",
                    json!({"turn": turn, "step": 1, "callId": format!("c{turn}"), "name": "read",
                           "arguments": "{\"path\":\"café.txt\"}"}),
                );
                let data = json!({"turn": turn, "step": 1, "message": {"id": format!("r{}", g.events.len()),
                    "role": "user", "source": {"kind": "tool", "callId": format!("c{turn}")},
                    "content": [{"type": "tool-result", "toolCallId": format!("c{turn}"),
                                 "content": [{"type": "text", "text": "file body: hello"}]}]}});
                let seq = g.surface(
                    "tool/result",
                    data.clone(),
                    SurfaceOp::Append,
                    Some(vec![call]),
                );
                results.push((seq, data));
            }
            g.push("step/end", json!({"turn": turn, "step": 1}));
            if g.next(2) == 0 {
                g.push(
                    "todo/write",
                    json!({"todos": [{"status": "pending", "content": "write tests"}]}),
                );
            }
            let reasons = [
                json!({"kind": "completed"}),
                json!({"kind": "error", "error": {"message": "Boom  again", "code": "E"}}),
                json!({"kind": "aborted", "reason": {"kind": "user"}}),
                json!({"kind": "max-tokens"}),
                json!({"kind": "interrupted"}),
            ];
            let reason = reasons[usize::try_from(g.next(5)).unwrap()].clone();
            g.push("turn/end", json!({"turn": turn, "reason": reason}));
            if turn == 2 && g.nodes.len() >= 2 {
                // A compaction replaces the first two nodes with a summary.
                let start = g.push("compaction/start", json!({"turn": turn}));
                let summary = g.push(
                    "compaction/summary",
                    json!({"turn": turn, "summary": "so far"}),
                );
                let (a, b) = (g.nodes[0], g.nodes[1]);
                g.surface(
                    "user/message",
                    json!({"id": format!("u{}", g.events.len()), "role": "user", "source": {"kind": "compaction"},
                           "content": [{"type": "text", "text": "Summary: hello world"}]}),
                    SurfaceOp::Replace { start: a, end: b },
                    Some(vec![start, summary, a, b]),
                );
            }
            if turn == 3
                && let Some((target, data)) = results
                    .iter()
                    .rev()
                    .find(|(s, _)| g.nodes.contains(s))
                    .cloned()
            {
                // A prune rewrites a tool result's content only.
                g.push("compaction/prune", json!({"turn": turn, "seqs": [target]}));
                let mut pruned = data;
                pruned["message"]["content"][0]["content"] =
                    json!([{"type": "text", "text": "[pruned]"}]);
                g.surface(
                    "tool/result",
                    pruned,
                    SurfaceOp::Replace {
                        start: target,
                        end: target,
                    },
                    Some(vec![target]),
                );
            }
        }
        g.events
    }
}

fn header(id: &str, created_at: u64, parent: Option<&str>, cwd: Option<&str>) -> SessionHeader {
    let mut h = SessionHeader::new(id, created_at);
    h.parent_session = parent.map(str::to_string);
    h.cwd = cwd.map(str::to_string);
    h
}

fn write_raw(root: &std::path::Path, h: &SessionHeader, events: &[Value]) {
    let dir = root.join(&h.id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = serde_json::to_string(h).unwrap() + "\n";
    for e in events {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
}

/// dsh's legacy worked example (pre-identity messages, a legacy prune).
fn legacy_events() -> Vec<Value> {
    let ev = |ty: &str, seq: u64, data: Value| json!({"type": ty, "seq": seq, "time": -50 + i64::try_from(seq).unwrap(), "data": data});
    let mut v = vec![
        ev(
            "turn/start",
            0,
            json!({"turn": 1, "trigger": {"kind": "user"}}),
        ),
        ev(
            "user/message",
            1,
            json!({"content": [{"type": "text", "text": "hello from the past"}], "source": {"kind": "user"}}),
        ),
        ev("step/start", 2, json!({"turn": 1, "step": 1})),
        ev(
            "assistant/message",
            3,
            json!({"turn": 1, "step": 1, "content": [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], "provenance": {"provider": "p", "model": "m"}}),
        ),
        ev(
            "tool/call",
            4,
            json!({"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}),
        ),
        ev(
            "tool/result",
            5,
            json!({"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "big"}], "isError": false}),
        ),
        ev(
            "tool/result",
            6,
            json!({"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "[pruned]"}], "isError": false}),
        ),
        ev("step/end", 7, json!({"turn": 1, "step": 1})),
        ev(
            "turn/end",
            8,
            json!({"turn": 1, "reason": {"kind": "error", "step": 1, "message": "Boom again"}}),
        ),
    ];
    for (seq, op, sources) in [
        (1, json!("append"), None),
        (3, json!("append"), None),
        (5, json!("append"), Some(json!([4]))),
        (
            6,
            json!({"op": "replace", "start": 5, "end": 5}),
            Some(json!([5])),
        ),
    ] {
        v[seq]["surfaceOp"] = op;
        if let Some(s) = sources {
            v[seq]["sourceEventSeqs"] = s;
        }
    }
    v
}

/// What the service says about one session when asked for everything (taken once).
pub struct SessionRef {
    /// Every event, normalized (the raw log for the broken session).
    pub events: Vec<SessionEvent>,
    /// `list_events`, or the error it gives.
    pub records: Result<Vec<SessionEventRecord>, &'static str>,
}

/// The store and its reference answers.
pub struct Fixture {
    /// The store (stored and live sessions).
    pub store: Store,
    /// `list_sessions`.
    pub sessions: Vec<SessionRecord>,
    /// Each session's reference answers, by id.
    pub refs: HashMap<&'static str, SessionRef>,
}

/// The fixture, built on first use.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = crate::common::workdir().join("qstore");
        let _ = std::fs::remove_dir_all(&root);
        let config = StoreConfig {
            checkpoint: CheckpointPolicy { max_pending_events: usize::MAX, max_delay: Duration::from_hours(1) },
            ..StoreConfig::default()
        };
        let store = Store::open(&root, config).unwrap();
        for (h, turns, seed) in [
            (header("root", 1, None, Some("/w")), 4, 1),
            (header("child", 2, Some("root"), None), 3, 2),
            (header("grandchild", 3, Some("child"), Some("C:\\w")), 2, 3),
            (header("orphan", 3, Some("missing"), Some("/w")), 1, 4),
        ] {
            let id = h.id.clone();
            store.create_session(h).unwrap();
            store.append(&id, Gen::session(turns, 100 * i64::try_from(seed).unwrap(), seed)).unwrap();
            store.close_session(&id).unwrap();
        }
        write_raw(&root, &header("legacy", 0, None, None), &legacy_events());
        // A valid prefix, then a replace of a node that is not on the surface.
        let mut broken = Gen::session(1, 7, 5);
        let bad = SessionEvent::new(
            "user/message",
            broken.len() as u64,
            9,
            json!({"id": "bad", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hello"}]}),
        )
        .with_surface_op(SurfaceOp::Replace { start: 999, end: 999 })
        .with_sources(vec![0]);
        broken.push(bad);
        let lines: Vec<Value> = broken.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        write_raw(&root, &header("broken", 5, Some("root"), None), &lines);
        // Live: one checkpointed batch and one pending.
        let live = Gen::session(3, 600, 6);
        store.create_session(header("live", 6, Some("root"), Some("/w"))).unwrap();
        store.append("live", live[..5].to_vec()).unwrap();
        store.checkpoint("live").unwrap();
        store.append("live", live[5..].to_vec()).unwrap();
        store.create_session(header("empty-live", 6, None, None)).unwrap();

        let svc = QueryService::new(&store, QueryConfig::default()).unwrap();
        let sessions = svc.list_sessions().unwrap();
        assert_eq!(sessions.len(), 8, "fixture sessions: {sessions:?}");
        let mut refs = HashMap::new();
        for id in &IDS[..8] {
            let (events, records) = if *id == "broken" {
                let err = svc.list_events(id).unwrap_err().code();
                assert_eq!(err, "invalid_surface");
                (broken.clone(), Err(err))
            } else {
                let events = svc.read_session(id).unwrap().events;
                (events, Ok(svc.list_events(id).unwrap()))
            };
            refs.insert(*id, SessionRef { events, records });
        }
        assert!(refs["root"].events.len() > 20 && refs["legacy"].events[1].data["id"].is_string());
        drop(svc);
        Fixture { store, sessions, refs }
    })
}
