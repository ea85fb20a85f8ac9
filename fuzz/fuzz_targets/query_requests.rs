//! Query requests against a small fixed store: session filters, event filters, event-type
//! reads and read windows, from JSON bytes or built with `arbitrary`.
//!
//! The store is built once per process (`fuzz/common/query_requests_fixture.rs`): five stored
//! sessions written through `Store` from a deterministic generator (turns with chunks, tool
//! calls and results, todos, the turn-end reasons, a compaction replacing two nodes and a
//! tool-result prune) in a lineage root > child > grandchild plus an orphan, a legacy-shape log
//! (normalized on read), a log whose surface is broken, a live session with a checkpointed and a
//! pending batch, and a live session with no events.
//!
//! Input: `s` + JSON (session filters), `e` + session pick + JSON (event filters), `w` +
//! config pick + JSON (a window request), `t` + session pick + JSON (an array of event types);
//! anything else is decoded with `arbitrary` into up to 8 typed requests (filters with edge
//! bounds, NaN and infinities, arbitrary texts; windows with arbitrary seq/before/after and
//! `read_window_max`; arbitrary session ids).
//!
//! Oracle: each answer equals a naive one (`fuzz/common/query_requests_model.rs`) computed from
//! the reference listing and event lists taken once at setup (`list_sessions`, `read_session`,
//! `list_events`): the filter semantics of docs/SESSIONS.md, "Filters" re-implemented (AND of
//! clauses, OR of values, inclusive finite ranges, whitespace-tolerant case-insensitive text by
//! collapsing whitespace and searching a substring), a window being the events whose seq lies
//! in the clamped range, an event-type read being the filtered `list_events`. Invalid requests must give the right typed
//! `QueryError` code (`invalid_filter`, `invalid_window`, `invalid_config`,
//! `invalid_session_id`, `session_not_found`, `event_not_found`, `invalid_surface`), never a
//! panic.
#![no_main]

use agentlog::query::{
    Availability, EventFilter, QueryConfig, QueryError, QueryService, SessionFilter, SurfaceClass,
    WindowRequest, parse_event_filters, parse_session_filters,
};
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;
#[path = "../common/query_requests_fixture.rs"]
mod query_requests_fixture;
#[path = "../common/query_requests_model.rs"]
mod query_requests_model;

use query_requests_fixture::{Fixture, IDS, fixture};
use query_requests_model::{
    R, SAFE, naive_events, naive_sessions, naive_types, naive_window, naive_window_json,
};

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
            usize::try_from(req.seq).ok().and_then(|i| s.events.get(i)),
            "read_event({req:?}): target"
        );
        for e in &w.events {
            assert_eq!(
                Some(e),
                usize::try_from(e.seq).ok().and_then(|i| s.events.get(i)),
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
                    assert_eq!(got, &want, "WindowRequest::from_json({value})");
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
                check_sessions(f, &v.iter().map(session_filter).collect::<Vec<_>>());
            }
            Req::Events(id, v) => {
                check_events(f, id.get(), &v.iter().map(event_filter).collect::<Vec<_>>());
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
