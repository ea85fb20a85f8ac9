//! Property tests: the incremental and whole-log folds against a naive model, windows
//! against an oracle slice, and normalization idempotence and determinism.

use proptest::prelude::*;
use serde_json::json;

use crate::query::legacy::normalize_log;
use crate::query::service::{QueryConfig, QueryService};
use crate::query::surface::{SurfaceState, fold_surface};
use crate::query::test_support::*;
use crate::query::types::{SessionEvent, SessionHeader, SurfaceClass, SurfaceOp};
use crate::query::window::WindowRequest;
use crate::query::{CheckpointPolicy, Store, StoreConfig};

#[derive(Debug, Clone)]
enum Op {
    LogOnly,
    Append(u8),
    Replace(usize, usize),
    Prune(usize),
    BadReversed(usize, usize),
    BadMissingSource(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::LogOnly),
        4 => any::<u8>().prop_map(Op::Append),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Replace(a, b)),
        1 => any::<usize>().prop_map(Op::Prune),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::BadReversed(a, b)),
        1 => any::<usize>().prop_map(Op::BadMissingSource),
    ]
}

/// Builds a valid log from `ops`, checking the incremental fold against a naive model
/// at every step and that rejected candidates leave the state untouched.
fn build(ops: &[Op]) -> (Vec<SessionEvent>, Vec<u64>, SurfaceState) {
    let mut events: Vec<SessionEvent> = Vec::new();
    let mut model: Vec<u64> = Vec::new();
    let mut state = SurfaceState::new();
    for op in ops {
        let seq = events.len() as u64;
        let len = model.len();
        let candidate = match op {
            Op::LogOnly => Some(log_only("step/start", seq, json!({"turn": 1, "step": seq}))),
            Op::Append(k) => {
                model.push(seq);
                Some(match k % 3 {
                    0 => user(seq, &format!("m{seq}"), "text"),
                    1 => assistant(seq, &format!("m{seq}"), "reply"),
                    _ => tool_result(seq, &format!("m{seq}"), &format!("c{seq}"), "output"),
                })
            }
            Op::Replace(a, b) if len > 0 => {
                let (lo, hi) = ((a % len).min(b % len), (a % len).max(b % len));
                let shadowed: Vec<u64> = model[lo..=hi].to_vec();
                let mut sources = shadowed.clone();
                sources.reverse();
                let e = replacing(
                    user(seq, &format!("m{seq}"), "summary"),
                    model[lo],
                    model[hi],
                    sources,
                );
                model.splice(lo..=hi, [seq]);
                Some(e)
            }
            Op::Prune(i) if len > 0 => {
                let target = model[i % len];
                let t = &events[usize::try_from(target).unwrap()];
                (t.event_type == "tool/result").then(|| {
                    let mut e = t.clone();
                    e.seq = seq;
                    e.data["message"]["content"][0]["content"] =
                        json!([{"type": "text", "text": "[pruned]"}]);
                    model[i % len] = seq;
                    replacing(e, target, target, vec![target])
                })
            }
            Op::BadReversed(a, b) if len > 1 && a % len != b % len => {
                let (lo, hi) = ((a % len).min(b % len), (a % len).max(b % len));
                let bad = replacing(user(seq, "bad", "x"), model[hi], model[lo], model.clone());
                let before = state.clone();
                assert!(state.push(&bad, &events).is_err());
                assert_eq!(state, before);
                None
            }
            Op::BadMissingSource(i) if len > 0 => {
                let target = model[i % len];
                let bad = replacing(user(seq, "bad", "x"), target, target, vec![]);
                let before = state.clone();
                assert!(state.push(&bad, &events).is_err());
                assert_eq!(state, before);
                None
            }
            _ => None,
        };
        if let Some(e) = candidate {
            state.push(&e, &events).unwrap();
            events.push(e);
            assert_eq!(state.nodes().collect::<Vec<_>>(), model);
        }
    }
    (events, model, state)
}

fn quiet_store(dir: &std::path::Path, max_pending: usize) -> Store {
    let config = StoreConfig {
        checkpoint: CheckpointPolicy {
            max_pending_events: max_pending,
            max_delay: std::time::Duration::from_hours(1),
        },
        ..Default::default()
    };
    Store::open(dir, config).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn incremental_and_whole_log_folds_agree(ops in prop::collection::vec(op(), 0..60)) {
        let (events, model, state) = build(&ops);
        let whole = fold_surface(&events).unwrap();
        prop_assert_eq!(&whole.nodes, &model);
        prop_assert_eq!(whole, state.into_fold());
    }

    /// Undoing a run of pushes, last first, gives back exactly the state before them, as a
    /// live session's rejected batch needs.
    #[test]
    fn undoing_pushes_restores_the_state(
        ops in prop::collection::vec(op(), 0..60),
        split in any::<prop::sample::Index>(),
    ) {
        let (events, _, whole) = build(&ops);
        let at = split.index(events.len() + 1);
        let mut state = SurfaceState::new();
        for (i, e) in events[..at].iter().enumerate() {
            state.push(e, &events[..i]).unwrap();
        }
        let before = state.clone();
        let undos: Vec<_> = (at..events.len())
            .map(|i| state.push_undoable(&events[i], &events[..i]).unwrap())
            .collect();
        prop_assert_eq!(&state, &whole);
        for undo in undos.into_iter().rev() {
            state.undo(undo);
        }
        prop_assert_eq!(state, before);
    }

    #[test]
    fn normalization_is_idempotent_and_deterministic(kinds in prop::collection::vec(0u8..10, 0..30)) {
        let sid = "p";
        let mut events = Vec::new();
        let mut tool_results = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            let seq = i as u64;
            let e = match k {
                0 => log_only("turn/start", seq, json!({"turn": 1, "trigger": {"kind": "user"}})),
                1 => log_only("user/message", seq, json!({"content": [], "source": {"kind": "user"}, "extra": 1}))
                    .with_surface_op(SurfaceOp::Append),
                2 => log_only("assistant/message", seq, json!({"turn": 1, "step": 1, "content": [], "provenance": {"provider": "p", "model": "m"}, "usage": {}}))
                    .with_surface_op(SurfaceOp::Append),
                3 => { tool_results.push(seq); log_only("tool/result", seq, json!({"turn": 1, "step": 1, "callId": "c", "content": [], "isError": false}))
                    .with_surface_op(SurfaceOp::Append) }
                4 => match tool_results.last() {
                    Some(t) => log_only("tool/result", seq, json!({"turn": 1, "step": 1, "callId": "c", "content": ["x"], "isError": false}))
                        .with_surface_op(SurfaceOp::Replace { start: *t, end: *t }).with_sources(vec![*t]),
                    None => user(seq, "cur", "x"),
                },
                5 => log_only("steering/message", seq, json!({"turn": 1, "content": [], "source": {"kind": "user"}}))
                    .with_surface_op(SurfaceOp::Append),
                6 => log_only("turn/end", seq, json!({"turn": 1, "reason": {"kind": "error", "step": 0, "message": "m"}})),
                7 => log_only("turn/end", seq, json!({"turn": 1, "reason": {"kind": "disposed"}})),
                8 => tool_result(seq, &format!("t{seq}"), "c", "current"),
                _ => log_only("step/start", seq, json!({"turn": 1, "step": 1})),
            };
            events.push(e);
        }
        let once = normalize_log(sid, events.clone()).unwrap();
        prop_assert_eq!(&normalize_log(sid, events).unwrap(), &once);
        prop_assert_eq!(normalize_log(sid, once.clone()).unwrap(), once);
    }
}

proptest! {
    // Each case writes real files, so fewer cases.
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn live_and_stored_reads_agree_with_the_fold(
        ops in prop::collection::vec(op(), 1..40),
        max_pending in 1usize..6,
        chunk in 1usize..5,
    ) {
        let (events, _, _) = build(&ops);
        let dir = tempfile::tempdir().unwrap();
        let expected: Vec<SurfaceClass> = {
            let fold = fold_surface(&events).unwrap();
            events.iter().map(|e| fold.classify(e.seq)).collect()
        };
        let classes = |store: &Store| -> Vec<SurfaceClass> {
            QueryService::new(store, QueryConfig::default()).unwrap()
                .list_events("p").unwrap().into_iter().map(|r| r.surface).collect()
        };
        // The surface and a surface type's records, naively: each node looked up by a scan.
        let (expected_surface, expected_users): (Vec<SessionEvent>, Vec<(u64, SurfaceClass)>) = {
            let fold = fold_surface(&events).unwrap();
            (
                fold.nodes.iter().map(|s| events.iter().find(|e| e.seq == *s).unwrap().clone()).collect(),
                events.iter().filter(|e| e.event_type == "user/message").map(|e| (e.seq, fold.classify(e.seq))).collect(),
            )
        };
        let surface_reads = |store: &Store| {
            let svc = QueryService::new(store, QueryConfig::default()).unwrap();
            let users: Vec<(u64, SurfaceClass)> = svc.list_events_of_types("p", &["user/message"]).unwrap()
                .into_iter().map(|r| (r.seq, r.surface)).collect();
            (svc.read_surface("p").unwrap().events, users)
        };
        {
            let store = quiet_store(dir.path(), max_pending);
            store.create_session(SessionHeader::new("p", 1)).unwrap();
            for batch in events.chunks(chunk) {
                store.append("p", batch.to_vec()).unwrap();
            }
            prop_assert_eq!(classes(&store), expected.clone());
            prop_assert_eq!(surface_reads(&store), (expected_surface.clone(), expected_users.clone()));
            store.close_session("p").unwrap();
        }
        let store = quiet_store(dir.path(), max_pending);
        if events.is_empty() {
            // Nothing was ever appended, so nothing was written (lazy materialization).
            let svc = QueryService::new(&store, QueryConfig::default()).unwrap();
            prop_assert_eq!(svc.list_events("p").unwrap_err().code(), "session_not_found");
            return Ok(());
        }
        prop_assert_eq!(classes(&store), expected);
        prop_assert_eq!(surface_reads(&store), (expected_surface, expected_users));
        let stored = QueryService::new(&store, QueryConfig::default()).unwrap().read_session("p").unwrap();
        prop_assert_eq!(stored.events, events);
    }

    #[test]
    fn any_window_equals_the_oracle_slice(
        n in 1u64..30,
        seq in 0u64..34,
        before in 0u64..8,
        after in 0u64..8,
        max in 0u64..6,
    ) {
        let events: Vec<SessionEvent> = (0..n)
            .map(|s| if s % 3 == 0 { log_only("step/start", s, json!({"turn": 1, "step": s})) } else { user(s, &format!("m{s}"), "x") })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let live = quiet_store(dir.path(), usize::MAX);
        live.create_session(SessionHeader::new("w", 1)).unwrap();
        live.append("w", events.clone()).unwrap();
        let other = tempfile::tempdir().unwrap();
        {
            let s = quiet_store(other.path(), usize::MAX);
            s.create_session(SessionHeader::new("w", 1)).unwrap();
            s.append("w", events.clone()).unwrap();
        }
        let stored = quiet_store(other.path(), usize::MAX);
        let request = WindowRequest::new("w", seq).with_neighbours(before, after);
        for store in [&live, &stored] {
            let svc = QueryService::new(store, QueryConfig { read_window_max: max }).unwrap();
            let got = svc.read_event(&request);
            if before > max || after > max {
                prop_assert_eq!(got.unwrap_err().code(), "invalid_window");
            } else if seq >= n {
                prop_assert_eq!(got.unwrap_err().code(), "event_not_found");
            } else {
                let lo = usize::try_from(seq.saturating_sub(before)).unwrap();
                let hi = usize::try_from((seq + after).min(n - 1)).unwrap();
                let w = got.unwrap();
                prop_assert_eq!(&w.events, &events[lo..=hi].to_vec());
                prop_assert_eq!(&w.target, &events[usize::try_from(seq).unwrap()]);
                prop_assert_eq!((w.start_seq, w.end_seq), (lo as u64, hi as u64));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The type-index path (only the matching events, plus the surface events when a surface
    /// type is asked for) classifies exactly like the whole-log fold, live and stored.
    #[test]
    fn events_of_types_agree_with_the_whole_log(
        ops in prop::collection::vec(op(), 1..50),
        mask in 1u8..16,
    ) {
        let (events, _, _) = build(&ops);
        let all = ["step/start", "user/message", "assistant/message", "tool/result"];
        let types: Vec<&str> = all.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, t)| *t).collect();
        let dir = tempfile::tempdir().unwrap();
        let check = |store: &Store| -> Result<(), TestCaseError> {
            let svc = QueryService::new(store, QueryConfig::default()).unwrap();
            let whole: Vec<_> = svc.list_events("p").unwrap().into_iter().filter(|r| types.contains(&r.event_type.as_str())).collect();
            prop_assert_eq!(svc.list_events_of_types("p", &types).unwrap(), whole);
            Ok(())
        };
        {
            let store = quiet_store(dir.path(), 7);
            store.create_session(SessionHeader::new("p", 1)).unwrap();
            store.append("p", events.clone()).unwrap();
            check(&store)?;
            store.close_session("p").unwrap();
        }
        // With no accepted event nothing was written, so there is nothing stored to read.
        if !events.is_empty() {
            check(&quiet_store(dir.path(), 7))?;
        }
    }
}
