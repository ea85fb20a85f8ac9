//! Query requests against a small fixed store: session filters, event filters, event-type
//! reads and read windows, from JSON bytes or built with `arbitrary`.
//!
//! The store is built once per process: five stored sessions written through `Store` from a
//! deterministic generator (turns with chunks, tool calls and results, todos, the turn-end
//! reasons, a compaction replacing two nodes and a tool-result prune) in a lineage
//! root > child > grandchild plus an orphan, a legacy-shape log (normalized on read), a log
//! whose surface is broken, a live session with a checkpointed and a pending batch, and a live
//! session with no events.
//!
//! Input: `s` + JSON (session filters), `e` + session pick + JSON (event filters), `w` +
//! config pick + JSON (a window request), `t` + session pick + JSON (an array of event types);
//! anything else is decoded with `arbitrary` into up to 8 typed requests (filters with edge
//! bounds, NaN and infinities, arbitrary texts; windows with arbitrary seq/before/after and
//! `read_window_max`; arbitrary session ids).
//!
//! Oracle: each answer equals a naive one computed here from the reference listing and event
//! lists taken once at setup (`list_sessions`, `read_session`, `list_events`): the filter
//! semantics of spec §4.4 re-implemented (AND of clauses, OR of values, inclusive finite
//! ranges, whitespace-tolerant case-insensitive text by collapsing whitespace and searching a
//! substring), a window being the events whose seq lies in the clamped range, an event-type
//! read being the filtered `list_events`. Invalid requests must give the right typed
//! `QueryError` code (`invalid_filter`, `invalid_window`, `invalid_config`,
//! `invalid_session_id`, `session_not_found`, `event_not_found`, `invalid_surface`), never a
//! panic.
#![no_main]

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use agentlog::query::{
    Availability, CheckpointPolicy, EventFilter, QueryConfig, QueryError, QueryService,
    SessionEvent, SessionEventDocument, SessionEventRecord, SessionFilter, SessionHeader,
    SessionRecord, Store, StoreConfig, SurfaceClass, SurfaceOp, WindowRequest, event_text,
    parse_event_filters, parse_session_filters,
};
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;

const SAFE: u64 = (1 << 53) - 1;
const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// Session ids a request may name: every stored and live one, then unknown and invalid ids.
const IDS: [&str; 14] = [
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

const TYPES: [&str; 16] = [
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "assistant/chunk",
    "assistant/message",
    "user/message",
    "tool/call",
    "tool/result",
    "todo/write",
    "compaction/start",
    "compaction/summary",
    "compaction/prune",
    "steering/message",
    "mode/set",
    "Turn/Start",
];

const TEXTS: [&str; 22] = [
    "hello",
    "HELLO   world",
    "hello world",
    "café",
    "CAFÉ.TXT",
    "read",
    "{\"path\"",
    "boom again",
    "error",
    "pruned]",
    "σίσυφος",
    "ΣΑΣ",
    "what's up",
    "école normale",
    "ſ",
    "general\nkenobi",
    " ",
    "",
    "\u{feff}",
    "\u{85}",
    "aborted",
    "write tests",
];

// ---------------------------------------------------------------------------------------
// The fixed store

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
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.rng >> 33) % n
    }

    fn push(&mut self, ty: &str, data: Value) -> u64 {
        let seq = self.events.len() as u64;
        self.events
            .push(SessionEvent::new(ty, seq, self.t0 + 3 * seq as i64, data));
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
            let text = USER[g.next(5) as usize];
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
            let reply = REPLY[g.next(3) as usize];
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
            let reason = reasons[g.next(5) as usize].clone();
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

/// The legacy worked example of spec §6 (pre-identity messages, a legacy prune).
fn legacy_events() -> Vec<Value> {
    let ev = |ty: &str, seq: u64, data: Value| json!({"type": ty, "seq": seq, "time": -50 + seq as i64, "data": data});
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
struct SessionRef {
    /// Every event, normalized (the raw log for the broken session).
    events: Vec<SessionEvent>,
    /// `list_events`, or the error it gives.
    records: Result<Vec<SessionEventRecord>, &'static str>,
}

struct Fixture {
    store: Store,
    sessions: Vec<SessionRecord>,
    refs: HashMap<&'static str, SessionRef>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = common::workdir().join("qstore");
        let _ = std::fs::remove_dir_all(&root);
        let config = StoreConfig {
            checkpoint: CheckpointPolicy { max_pending_events: usize::MAX, max_delay: Duration::from_secs(3600) },
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
            store.append(&id, Gen::session(turns, 100 * seed as i64, seed)).unwrap();
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

// ---------------------------------------------------------------------------------------
// Naive semantics

type R<T> = Result<T, &'static str>;

/// Spec §1.1: 1-255 bytes, no separators, controls or `..`, no leading `.`.
fn id_is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 255
        && !id.contains(['/', '\\', ':'])
        && !id.chars().any(char::is_control)
        && !id.contains("..")
        && !id.starts_with('.')
}

/// The session a request names, or the error naming it gives.
fn session<'a>(f: &'a Fixture, id: &str) -> R<&'a SessionRef> {
    if !id_is_valid(id) {
        return Err("invalid_session_id");
    }
    f.refs.get(id).ok_or("session_not_found")
}

fn range_ok(from: Option<f64>, to: Option<f64>) -> bool {
    from.is_none_or(f64::is_finite)
        && to.is_none_or(f64::is_finite)
        && !matches!((from, to), (Some(a), Some(b)) if a > b)
}

fn in_range(n: f64, from: Option<f64>, to: Option<f64>) -> bool {
    from.is_none_or(|f| f <= n) && to.is_none_or(|t| n <= t)
}

fn naive_sessions(all: &[SessionRecord], filters: &[SessionFilter]) -> R<Vec<SessionRecord>> {
    let valid = filters.iter().all(|f| match f {
        SessionFilter::CreatedAt { from, to } => range_ok(*from, *to),
        _ => true,
    });
    if !valid {
        return Err("invalid_filter");
    }
    let keep = |r: &SessionRecord| {
        filters.iter().all(|f| match f {
            SessionFilter::Id { values } => values.contains(&r.header.id),
            SessionFilter::Cwd { values } => values.contains(&r.header.cwd),
            SessionFilter::CreatedAt { from, to } => {
                in_range(r.header.created_at as f64, *from, *to)
            }
            SessionFilter::Parent { values } => values.contains(&r.header.parent_session),
            SessionFilter::Availability { values } => values.iter().any(|a| match a {
                Availability::Live => r.live,
                Availability::Persisted => r.persisted,
            }),
        })
    };
    Ok(all.iter().filter(|r| keep(r)).cloned().collect())
}

/// JavaScript's `\s`, listed.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Simple case folding, approximated per character as the spec's `/iu` regex compares:
/// upper then lower case when each is one character, else lower case, else the character.
fn fold(c: char) -> char {
    fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }
    single(c.to_uppercase())
        .and_then(|u| single(u.to_lowercase()))
        .or_else(|| single(c.to_lowercase()))
        .unwrap_or(c)
}

/// `s` folded, with every whitespace run collapsed to one space.
fn canonical(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if !js_space(c) {
            out.push(fold(c));
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    out
}

/// The query's words joined by single spaces, searched in the collapsed text (the words hold
/// no whitespace, so a gap matches exactly one collapsed run).
fn text_matches(query: &str, text: &str) -> bool {
    let words: Vec<String> = query
        .split(js_space)
        .filter(|w| !w.is_empty())
        .map(canonical)
        .collect();
    canonical(text).contains(&words.join(" "))
}

fn event_filters_valid(filters: &[EventFilter]) -> bool {
    filters.iter().all(|f| match f {
        EventFilter::Seq { from, to } | EventFilter::Time { from, to } => range_ok(*from, *to),
        EventFilter::Text { text } => text.chars().any(|c| !js_space(c)),
        _ => true,
    })
}

fn naive_events(f: &Fixture, id: &str, filters: &[EventFilter]) -> R<Vec<SessionEventDocument>> {
    if !event_filters_valid(filters) {
        return Err("invalid_filter");
    }
    let s = session(f, id)?;
    let records = s.records.clone()?;
    let docs = s
        .events
        .iter()
        .zip(records)
        .map(|(e, record)| SessionEventDocument {
            record,
            text: event_text(e),
        })
        .filter(|d| !d.text.is_empty());
    let keep = |d: &SessionEventDocument| {
        let r = &d.record;
        filters.iter().all(|flt| match flt {
            EventFilter::Seq { from, to } => in_range(r.seq as f64, *from, *to),
            EventFilter::Time { from, to } => in_range(r.time as f64, *from, *to),
            EventFilter::Type { values } => values.contains(&r.event_type),
            EventFilter::Surface { values } => values.contains(&r.surface),
            EventFilter::Text { text } => text_matches(text, &d.text),
        })
    };
    Ok(docs.filter(|d| keep(d)).collect())
}

fn naive_types(f: &Fixture, id: &str, types: &[&str]) -> R<Vec<SessionEventRecord>> {
    let s = session(f, id)?;
    match &s.records {
        Ok(records) => Ok(records
            .iter()
            .filter(|r| types.contains(&r.event_type.as_str()))
            .cloned()
            .collect()),
        // A broken surface: only a read that needs no fold (no surface type asked) answers.
        Err(e) if types.iter().any(|t| SURFACE_TYPES.contains(t)) => Err(e),
        Err(_) => Ok(s
            .events
            .iter()
            .filter(|e| types.contains(&e.event_type.as_str()))
            .map(|e| SessionEventRecord {
                session_id: id.to_string(),
                seq: e.seq,
                event_type: e.event_type.clone(),
                time: e.time,
                surface: SurfaceClass::LogOnly,
            })
            .collect()),
    }
}

/// The window as (target seq, events' seqs, start, end).
fn naive_window(f: &Fixture, req: &WindowRequest, max: u64) -> R<(u64, Vec<u64>, u64, u64)> {
    let before = req.before.unwrap_or(0);
    let after = req.after.unwrap_or(0);
    if before > max || after > max {
        return Err("invalid_window");
    }
    let s = session(f, &req.session_id)?;
    if !s.events.iter().any(|e| e.seq == req.seq) {
        return Err("event_not_found");
    }
    let (lo, hi) = (
        req.seq.saturating_sub(before),
        req.seq.saturating_add(after),
    );
    let seqs: Vec<u64> = s
        .events
        .iter()
        .map(|e| e.seq)
        .filter(|s| (lo..=hi).contains(s))
        .collect();
    Ok((req.seq, seqs.clone(), seqs[0], *seqs.last().unwrap()))
}

/// `{sessionId, seq, before?, after?}` parsed by hand.
fn naive_window_json(v: &Value) -> Option<WindowRequest> {
    let safe = |v: &Value| v.as_u64().filter(|n| *n <= SAFE);
    let bound = |key: &str| match v.get(key) {
        None | Some(Value::Null) => Some(None),
        Some(b) => safe(b).map(Some),
    };
    Some(WindowRequest {
        session_id: v.get("sessionId")?.as_str()?.to_string(),
        seq: safe(v.get("seq")?)?,
        before: bound("before")?,
        after: bound("after")?,
    })
}

// ---------------------------------------------------------------------------------------
// Checks

fn code<T>(r: Result<T, QueryError>) -> R<T> {
    r.map_err(|e| e.code())
}

fn service(f: &Fixture) -> QueryService<'_> {
    QueryService::new(&f.store, QueryConfig::default()).unwrap()
}

fn check_sessions(f: &Fixture, filters: &[SessionFilter]) {
    let got = code(service(f).filter_sessions(filters));
    assert_eq!(
        got,
        naive_sessions(&f.sessions, filters),
        "filter_sessions({filters:?})"
    );
}

fn check_events(f: &Fixture, id: &str, filters: &[EventFilter]) {
    let got = code(service(f).filter_events(id, filters));
    assert_eq!(
        got,
        naive_events(f, id, filters),
        "filter_events({id:?}, {filters:?})"
    );
}

fn check_types(f: &Fixture, id: &str, types: &[&str]) {
    let got = code(service(f).list_events_of_types(id, types));
    assert_eq!(
        got,
        naive_types(f, id, types),
        "list_events_of_types({id:?}, {types:?})"
    );
}

fn check_window(f: &Fixture, req: &WindowRequest, max: u64) {
    let svc = match QueryService::new(
        &f.store,
        QueryConfig {
            read_window_max: max,
        },
    ) {
        Ok(svc) => svc,
        Err(e) => {
            assert!(
                max > SAFE && e.code() == "invalid_config",
                "QueryService::new(max {max}): {e}"
            );
            return;
        }
    };
    assert!(
        max <= SAFE,
        "QueryService::new accepted read_window_max {max}"
    );
    let got = code(svc.read_event(req));
    let seqs = got.as_ref().map(|w| {
        (
            w.target.seq,
            w.events.iter().map(|e| e.seq).collect(),
            w.start_seq,
            w.end_seq,
        )
    });
    assert_eq!(
        seqs.map_err(|e| *e),
        naive_window(f, req, max),
        "read_event({req:?}, max {max})"
    );
    if let Ok(w) = got {
        // The events themselves are the reference's.
        let s = &f.refs[req.session_id.as_str()];
        assert_eq!(
            Some(&w.target),
            s.events.get(req.seq as usize),
            "read_event({req:?}): target"
        );
        for e in &w.events {
            assert_eq!(
                Some(e),
                s.events.get(e.seq as usize),
                "read_event({req:?}): event {}",
                e.seq
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Input

#[derive(Arbitrary, Debug)]
enum Req {
    Sessions(Vec<SFilter>),
    Events(Id, Vec<EFilter>),
    Window {
        id: Id,
        seq: Num,
        before: Option<Num>,
        after: Option<Num>,
        max: Num,
    },
    Types(Id, Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Id {
    Known(u8),
    Any(String),
}

impl Id {
    fn get(&self) -> &str {
        match self {
            Id::Known(i) => IDS[usize::from(*i) % IDS.len()],
            Id::Any(s) => s,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Num {
    Small(u8),
    Big(u64),
    NearSafe(u8),
}

impl Num {
    fn get(self) -> u64 {
        match self {
            Num::Small(n) => u64::from(n),
            Num::Big(n) => n,
            Num::NearSafe(d) => (SAFE - 2).saturating_add(u64::from(d % 5)),
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Float {
    Int(i16),
    Half(i16),
    Raw(f64),
}

impl Float {
    fn get(self) -> f64 {
        match self {
            Float::Int(n) => f64::from(n),
            Float::Half(n) => f64::from(n) + 0.5,
            Float::Raw(x) => x,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum SFilter {
    Id(Vec<Id>),
    Cwd(Vec<Option<u8>>),
    CreatedAt(Option<Float>, Option<Float>),
    Parent(Vec<Option<Id>>),
    Availability(Vec<bool>),
}

#[derive(Arbitrary, Debug)]
enum EFilter {
    Seq(Option<Float>, Option<Float>),
    Time(Option<Float>, Option<Float>),
    Type(Vec<u8>),
    Surface(Vec<u8>),
    Text(Text),
}

#[derive(Arbitrary, Debug)]
enum Text {
    Known(u8),
    Any(String),
}

fn session_filter(f: &SFilter) -> SessionFilter {
    const CWDS: [&str; 3] = ["/w", "C:\\w", "/x"];
    let get = |x: &Option<Float>| x.map(Float::get);
    match f {
        SFilter::Id(v) => SessionFilter::Id {
            values: v.iter().map(|i| i.get().to_string()).collect(),
        },
        SFilter::Cwd(v) => SessionFilter::Cwd {
            values: v
                .iter()
                .map(|c| c.map(|c| CWDS[usize::from(c) % CWDS.len()].to_string()))
                .collect(),
        },
        SFilter::CreatedAt(a, b) => SessionFilter::CreatedAt {
            from: get(a),
            to: get(b),
        },
        SFilter::Parent(v) => SessionFilter::Parent {
            values: v
                .iter()
                .map(|p| p.as_ref().map(|i| i.get().to_string()))
                .collect(),
        },
        SFilter::Availability(v) => SessionFilter::Availability {
            values: v
                .iter()
                .map(|l| {
                    if *l {
                        Availability::Live
                    } else {
                        Availability::Persisted
                    }
                })
                .collect(),
        },
    }
}

fn event_filter(f: &EFilter) -> EventFilter {
    const CLASSES: [SurfaceClass; 3] = [
        SurfaceClass::Current,
        SurfaceClass::Shadowed,
        SurfaceClass::LogOnly,
    ];
    let get = |x: &Option<Float>| x.map(Float::get);
    match f {
        EFilter::Seq(a, b) => EventFilter::Seq {
            from: get(a),
            to: get(b),
        },
        // Times of the fixture lie around -50..1000.
        EFilter::Time(a, b) => EventFilter::Time {
            from: get(a),
            to: get(b),
        },
        EFilter::Type(v) => EventFilter::Type {
            values: v
                .iter()
                .map(|t| TYPES[usize::from(*t) % TYPES.len()].to_string())
                .collect(),
        },
        EFilter::Surface(v) => EventFilter::Surface {
            values: v.iter().map(|c| CLASSES[usize::from(*c) % 3]).collect(),
        },
        EFilter::Text(Text::Known(i)) => EventFilter::Text {
            text: TEXTS[usize::from(*i) % TEXTS.len()].to_string(),
        },
        EFilter::Text(Text::Any(s)) => EventFilter::Text { text: s.clone() },
    }
}

/// `read_window_max` picks for the JSON window mode.
const MAXES: [u64; 5] = [50, 0, 3, SAFE, SAFE + 1];

fn run_json(f: &Fixture, kind: u8, pick: u8, json: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    let id = IDS[usize::from(pick) % IDS.len()];
    match kind {
        b's' => match parse_session_filters(&value) {
            Ok(filters) => check_sessions(f, &filters),
            Err(e) => assert_eq!(
                e.code(),
                "invalid_filter",
                "parse_session_filters({value}): {e}"
            ),
        },
        b'e' => match parse_event_filters(&value) {
            Ok(filters) => check_events(f, id, &filters),
            Err(e) => assert_eq!(
                e.code(),
                "invalid_filter",
                "parse_event_filters({value}): {e}"
            ),
        },
        b'w' => {
            let parsed = WindowRequest::from_json(&value);
            match (&parsed, naive_window_json(&value)) {
                (Ok(got), Some(want)) => {
                    assert_eq!(got, &want, "WindowRequest::from_json({value})")
                }
                (Err(e), None) => assert_eq!(
                    e.code(),
                    "invalid_window",
                    "WindowRequest::from_json({value}): {e}"
                ),
                (got, want) => {
                    panic!("WindowRequest::from_json({value}): got {got:?}, want {want:?}")
                }
            }
            if let Ok(req) = parsed {
                check_window(f, &req, MAXES[usize::from(pick) % MAXES.len()]);
            }
        }
        _ => {
            let Some(types) = value
                .as_array()
                .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
            else {
                return;
            };
            check_types(f, id, &types);
        }
    }
}

fn run_structured(f: &Fixture, bytes: &[u8]) {
    let Ok(requests) = Vec::<Req>::arbitrary_take_rest(Unstructured::new(bytes)) else {
        return;
    };
    for req in requests.iter().take(8) {
        match req {
            Req::Sessions(v) => {
                check_sessions(f, &v.iter().map(session_filter).collect::<Vec<_>>())
            }
            Req::Events(id, v) => {
                check_events(f, id.get(), &v.iter().map(event_filter).collect::<Vec<_>>())
            }
            Req::Window {
                id,
                seq,
                before,
                after,
                max,
            } => {
                let req = WindowRequest {
                    session_id: id.get().to_string(),
                    seq: seq.get(),
                    before: before.map(Num::get),
                    after: after.map(Num::get),
                };
                // Mostly the default maximum, so windows are mostly valid.
                let max = match max {
                    Num::Small(n) if *n >= 8 => 50,
                    other => other.get(),
                };
                check_window(f, &req, max);
            }
            Req::Types(id, picks) => {
                let types: Vec<&str> = picks
                    .iter()
                    .map(|t| TYPES[usize::from(*t) % TYPES.len()])
                    .collect();
                check_types(f, id.get(), &types);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    let f = fixture();
    match data {
        [b's', json @ ..] => run_json(f, b's', 0, json),
        [kind @ (b'e' | b'w' | b't'), pick, json @ ..] => run_json(f, *kind, *pick, json),
        _ => run_structured(f, data),
    }
});
