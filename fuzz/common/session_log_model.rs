//! The `session_log` fuzz target's oracle: the answers the query service gives for session `s`
//! ([`Answers`]), and a naive model of the read path ([`Model`]) that re-derives them from the
//! log: the header, the committed events (`scan_log`), the checks every read makes, legacy
//! normalization, and a surface fold written here from docs/SESSIONS.md, "Surface events and
//! replace".

use std::collections::{HashMap, HashSet};

use agentlog::query::testing::{check_message_shape, normalize_log, parse_header, scan_log};
use agentlog::query::{
    QueryConfig, QueryError, QueryService, SessionEvent, SessionEventDocument, SessionEventRecord,
    SessionEventTrace, SessionEventWindow, SessionHeader, SessionLineageTrace, SessionLogSnapshot,
    SessionRecord, SessionSurfaceSnapshot, SourceError, Store, SurfaceClass, SurfaceOp, Vocabulary,
    WindowRequest, event_text,
};
use serde_json::Value;

/// The fuzzed session's id (and directory name).
pub const SID: &str = "s";

/// The event types that go on the surface.
const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

/// The event type sets each answer set asks `list_events_of_types` for.
const TYPE_SETS: [&[&str]; 5] = [
    &["user/message"],
    &["tool/call", "turn/end", "steering/message"],
    &["tool/result", "step/start"],
    &["assistant/message", "user/message", "tool/result"],
    &[],
];

/// An answer, or the code of the error that refused it.
type R<T> = Result<T, &'static str>;

fn code<T>(r: Result<T, QueryError>) -> R<T> {
    r.map_err(|e| e.code())
}

/// What to ask besides the whole-log reads.
pub struct Plan {
    /// The window reads.
    pub windows: Vec<WindowRequest>,
    /// The seqs to trace.
    pub traces: Vec<u64>,
}

#[derive(Debug, PartialEq)]
pub struct Answers {
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

/// Asks `store` everything: the whole-log reads of `s`, the plan's windows and traces, the
/// lineages, and reads of ids that are not sessions.
pub fn ask(store: &Store, plan: &Plan) -> Answers {
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
pub fn same(what: &str, a: &Answers, b: &Answers, live: bool) {
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

/// The read path re-derived: header, committed events, legacy normalization, read rules.
pub struct Model {
    /// The header as listed (`None`: not listed).
    pub listed: Option<SessionHeader>,
    /// Where the header, the scan (which applies every rule one line is checked for), the
    /// retired-type or the unknown-type check fails: every read fails the same way.
    pub early: R<(SessionHeader, Vec<SessionEvent>)>,
    /// The normalized, checked events (or the code of the first read rule broken).
    pub events: R<Vec<SessionEvent>>,
    /// The naive fold of those events (`Err`: a surface rule is broken).
    pub fold: Option<Result<NaiveFold, ()>>,
}

/// The model of the log `log` (session `s`).
pub fn model(log: &[u8]) -> Model {
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
            let unknown = s
                .events
                .iter()
                .any(|e| e.event_type != "steering/message" && vocabulary.check(e).is_err());
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

/// The surface fold, re-derived from docs/SESSIONS.md, "Surface events and replace".
pub struct NaiveFold {
    /// The current surface, in surface order.
    pub nodes: Vec<u64>,
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

/// The surface fold of `events`, or `Err` at the first broken rule.
pub fn naive_fold(events: &[SessionEvent]) -> Result<NaiveFold, ()> {
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
                    let t = &events[usize::try_from(target).unwrap()];
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
pub fn check_model(m: &Model, got: &Answers, plan: &Plan, p_header: &SessionHeader) {
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
    let Some(Ok(fold)) = m.fold.as_ref() else {
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
            .map(|s| events[usize::try_from(*s).unwrap()].clone())
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
pub fn check_normalization(stored: &[SessionEvent]) {
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
