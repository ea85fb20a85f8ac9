//! One session's log (`ROOT/s/events.jsonl`, beside a fixed small session `p`) through the
//! query service and legacy normalization.
//!
//! Input: bytes starting with `{` are the whole log file; `h` + a header pick + raw bytes is
//! a chosen header line followed by those bytes; anything else is decoded with `arbitrary` into
//! a header pick and a list of mostly-valid events from a small dsh vocabulary (current and
//! legacy message shapes, compactions, prunes, steering, turn-end reasons, broken surface ops,
//! damaged lines, a torn tail), plus window/trace probes and a second batch appended later.
//!
//! The generator is `fuzz/common/session_log_builder.rs`, the answers and the naive model
//! `fuzz/common/session_log_model.rs`.
//!
//! Oracles:
//! * every answer (`list_sessions`, `read_session`, `list_events`, `read_surface`,
//!   `filter_events`, `list_events_of_types`, `read_event` windows, `trace_event`,
//!   `trace_session`; or the error's
//!   `QueryError::code()`) is the same from a store over the plain `JsonlSource` and from the
//!   default index-backed store, again after reopening it (index now built), and again after
//!   the second batch is appended (index caught up);
//! * a naive model re-derives the answers: header, `scan_log`, `normalize_log` and the read
//!   rules give the expected events or error code, a surface fold reimplemented from
//!   docs/SESSIONS.md, "Surface events and replace" gives the classes, the surface and the
//!   traces; windows are the events whose seq lies in the clamped range;
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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentlog::query::testing::scan_log;
use agentlog::query::{
    CheckpointPolicy, JsonlSource, SessionEvent, SessionHeader, Store, StoreConfig, SurfaceState,
    WindowRequest,
};
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;
#[path = "../common/session_log_builder.rs"]
mod session_log_builder;
#[path = "../common/session_log_model.rs"]
mod session_log_model;

use session_log_builder::{Builder, Ev};
use session_log_model::{
    Answers, Model, Plan, SID, ask, check_model, check_normalization, model, naive_fold, same,
};

const MAX_EVENTS: usize = 64;
const MAX_PROBES: usize = 4;
const SAFE: u64 = (1 << 53) - 1;

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

/// The windows and traces `probes` ask for in a log of `n` events.
fn plan_for(probes: &[Probe], n: u64) -> Plan {
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

const GARBAGE_TAILS: [&[u8]; 3] = [b"{\"type\":\"turn/end\",\"seq\":", b"\xff\xfe", b"   "];

fn default_probes() -> Vec<Probe> {
    use Bound::{Absent, Huge, Small};
    use SeqPick::{FromEnd, Index, Raw};
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
            max_delay: Duration::from_hours(1),
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
    let from_jsonl = ask(&jsonl_store(root), plan);
    check_model(&m, &from_jsonl, plan, p_header);
    if let Ok((_, stored)) = &m.early {
        check_normalization(stored);
    }
    (from_jsonl, m)
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
/// events before the first fault are then accepted and fold as the naive fold says.
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
    let plan = plan_for(&case.probes, n);

    // Phase 1: a fresh index, then the same index reopened.
    let (from_jsonl, m) = check_phase(&case.log, &root, &plan, &p_header);
    same(
        "indexed (built) vs plain",
        &ask(&Store::open(&root, StoreConfig::default()).unwrap(), &plan),
        &from_jsonl,
        false,
    );
    let indexed = Store::open(&root, StoreConfig::default()).unwrap();
    same(
        "indexed (reopened) vs plain",
        &ask(&indexed, &plan),
        &from_jsonl,
        false,
    );
    check_live(&m, &from_jsonl, &plan, &live_root);

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
        let plan = plan_for(&case.probes, n);
        let (from_jsonl, _) = check_phase(&log, &root, &plan, &p_header);
        same(
            "indexed (caught up) vs plain",
            &ask(&indexed, &plan),
            &from_jsonl,
            false,
        );
    }
}

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    run(&Case::decode(data));
});
