//! Query-service behaviour: ordering, classification, windows, overlay, failure
//! isolation, lineage, traces, filters and legacy logs on disk.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::*;
use crate::query::error::HeaderError;
use crate::query::filter::Availability;
use crate::query::source::{JsonlSource, PersistedSource};
use crate::query::store::StoreConfig;
use crate::query::test_support::*;
use crate::query::types::{SurfaceClass, SurfaceOp};

fn service(store: &Store) -> QueryService<'_> {
    QueryService::new(store, QueryConfig::default()).unwrap()
}

/// Creates, fills and closes a session so it is persisted only.
fn persist(dir: &std::path::Path, header: SessionHeader, events: Vec<SessionEvent>) {
    let store = manual_store(dir);
    let id = header.id.clone();
    store.create_session(header).unwrap();
    store.append(&id, events).unwrap();
    store.close_session(&id).unwrap();
}

#[test]
fn sessions_sort_by_created_at_descending_then_id() {
    let dir = tempfile::tempdir().unwrap();
    for (id, created) in [("older", 1), ("z", 5), ("a", 5)] {
        persist(dir.path(), SessionHeader::new(id, created), simple_turn(0));
    }
    let store = manual_store(dir.path());
    let ids: Vec<_> = service(&store)
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|r| r.header.id)
        .collect();
    assert_eq!(ids, ["a", "z", "older"]);
}

#[test]
fn replace_after_append_is_classified_shadowed_log_only_current() {
    let dir = tempfile::tempdir().unwrap();
    let events = vec![
        user(0, "u", "long"),
        log_only("compaction/summary", 1, json!({"summary": "s"})),
        replacing(user(2, "s", "short"), 0, 0, vec![1, 0]),
    ];
    persist(dir.path(), SessionHeader::new("s", 1), events.clone());
    let store = manual_store(dir.path());
    store.create_session(SessionHeader::new("live", 1)).unwrap();
    store.append("live", events).unwrap();
    for id in ["s", "live"] {
        let classes: Vec<_> = service(&store)
            .list_events(id)
            .unwrap()
            .into_iter()
            .map(|r| r.surface)
            .collect();
        assert_eq!(
            classes,
            [
                SurfaceClass::Shadowed,
                SurfaceClass::LogOnly,
                SurfaceClass::Current
            ],
            "{id}"
        );
    }
}

fn two_compactions() -> Vec<SessionEvent> {
    vec![
        user(0, "u0", "a"),
        assistant(1, "a1", "b"),
        replacing(user(2, "c2", "summary 1"), 0, 1, vec![0, 1]),
        user(3, "u3", "c"),
        replacing(user(4, "c4", "summary 2"), 2, 3, vec![2, 3]),
        assistant(5, "a5", "d"),
    ]
}

#[test]
fn read_surface_after_two_compactions() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("s", 1), two_compactions());
    let store = manual_store(dir.path());
    store
        .create_session(SessionHeader::new("empty", 2))
        .unwrap();
    let svc = service(&store);
    let surface = svc.read_surface("s").unwrap();
    let nodes: Vec<_> = surface
        .events
        .iter()
        .map(|e| (e.seq, e.event_type.as_str()))
        .collect();
    assert_eq!(nodes, [(4, "user/message"), (5, "assistant/message")]);
    assert_eq!(surface.captured_through_seq, Some(5));
    let empty = svc.read_surface("empty").unwrap();
    assert_eq!((empty.captured_through_seq, empty.events.len()), (None, 0));
}

#[test]
fn read_event_windows_are_bounded_and_validated() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("s", 1), two_compactions());
    let store = manual_store(dir.path());
    let svc = QueryService::new(&store, QueryConfig { read_window_max: 1 }).unwrap();
    let w = svc
        .read_event(&WindowRequest::new("s", 2).with_neighbours(1, 1))
        .unwrap();
    assert_eq!((w.start_seq, w.end_seq, w.target.seq), (1, 3, 2));
    assert_eq!(
        w.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let too_wide = WindowRequest::new("s", 2).with_neighbours(2, 0);
    assert_eq!(
        svc.read_event(&too_wide).unwrap_err().code(),
        "invalid_window"
    );
    assert_eq!(
        svc.read_event(&WindowRequest::new("s", 9))
            .unwrap_err()
            .code(),
        "event_not_found"
    );
    assert_eq!(
        svc.read_event(&WindowRequest::new("nope", 0))
            .unwrap_err()
            .code(),
        "session_not_found"
    );
}

#[test]
fn live_and_persisted_records_merge_with_live_winning() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("durable", 1), simple_turn(0));
    let store = manual_store(dir.path());
    store
        .create_session(SessionHeader::new("shared", 2))
        .unwrap();
    store.append("shared", simple_turn(0)).unwrap();
    store.checkpoint("shared").unwrap();
    store.append("shared", simple_turn(4)).unwrap(); // pending, live only
    let svc = service(&store);
    let flags: Vec<_> = svc
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|r| (r.header.id, r.live, r.persisted))
        .collect();
    assert_eq!(
        flags,
        [
            ("shared".to_string(), true, true),
            ("durable".to_string(), false, true)
        ]
    );
    assert_eq!(svc.list_events("shared").unwrap().len(), 8);
    let live_only = svc
        .filter_sessions(&[SessionFilter::Availability {
            values: vec![Availability::Live],
        }])
        .unwrap();
    assert_eq!(live_only.len(), 1);
}

#[test]
fn immutable_header_disagreement_is_a_source_conflict() {
    for (field, value) in [("cwd", json!("/other")), ("delegationDepth", json!(1))] {
        let dir = tempfile::tempdir().unwrap();
        let store = manual_store(dir.path());
        let mut header = SessionHeader::new("x", 1);
        header.cwd = Some("/mine".into());
        store.create_session(header).unwrap();
        store.append("x", simple_turn(0)).unwrap();
        // Another writer publishes a different log under the same id.
        let mut raw = raw_header("x", 1);
        raw["cwd"] = json!("/mine");
        raw[field] = value;
        write_raw_log(dir.path(), "x", &raw, &[]);
        let err = service(&store).list_sessions().unwrap_err();
        assert_eq!(err.code(), "source_conflict", "{field}");
        assert!(err.to_string().contains(field), "{err}");
        // Exact reads of the live session are unaffected.
        assert_eq!(service(&store).list_events("x").unwrap().len(), 4);
    }
}

/// A source that can be switched to failing and counts every call.
struct Flaky {
    inner: JsonlSource,
    failing: AtomicBool,
    corrupt: AtomicBool,
    calls: AtomicUsize,
}

impl Flaky {
    fn check(&self) -> Result<(), SourceError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.corrupt.load(Ordering::SeqCst) {
            return Err(SourceError::corrupt("bad checksum in frame 2"));
        }
        if self.failing.load(Ordering::SeqCst) {
            return Err(SourceError::Failed {
                context: "disk".into(),
                cause: Box::new(std::io::Error::other("EIO")),
            });
        }
        Ok(())
    }
}

impl PersistedSource for Flaky {
    fn list_headers(&self) -> Result<Vec<SessionHeader>, SourceError> {
        self.check()?;
        self.inner.list_headers()
    }
    fn read_header(&self, id: &str) -> Result<SessionHeader, SourceError> {
        self.check()?;
        self.inner.read_header(id)
    }
    fn read_range(&self, id: &str, from: u64, to: u64) -> Result<StoredSlice, SourceError> {
        self.check()?;
        self.inner.read_range(id, from, to)
    }
    fn read_types(&self, id: &str, types: &[&str]) -> Result<StoredSlice, SourceError> {
        self.check()?;
        self.inner.read_types(id, types)
    }
}

fn flaky_store(dir: &std::path::Path) -> (Store, Arc<Flaky>) {
    let flaky = Arc::new(Flaky {
        inner: JsonlSource::new(dir),
        failing: AtomicBool::new(false),
        corrupt: AtomicBool::new(false),
        calls: AtomicUsize::new(0),
    });
    let config = StoreConfig {
        checkpoint: crate::query::CheckpointPolicy {
            max_pending_events: usize::MAX,
            max_delay: std::time::Duration::from_hours(1),
        },
        ..Default::default()
    };
    let store = Store::with_source(dir, config, flaky.clone()).unwrap();
    (store, flaky)
}

#[test]
fn live_reads_never_touch_a_failing_backend() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("cold", 1), simple_turn(0));
    let (store, flaky) = flaky_store(dir.path());
    store.create_session(SessionHeader::new("hot", 2)).unwrap();
    store.append("hot", simple_turn(0)).unwrap();
    flaky.failing.store(true, Ordering::SeqCst);
    let calls = flaky.calls.load(Ordering::SeqCst);

    let svc = service(&store);
    assert_eq!(svc.list_events("hot").unwrap().len(), 4);
    assert_eq!(
        svc.read_event(&WindowRequest::new("hot", 1).with_neighbours(1, 1))
            .unwrap()
            .events
            .len(),
        3
    );
    assert_eq!(svc.read_surface("hot").unwrap().events.len(), 2);
    svc.trace_event("hot", 1).unwrap();
    svc.read_session("hot").unwrap();
    assert_eq!(
        flaky.calls.load(Ordering::SeqCst),
        calls,
        "the backend was called"
    );

    assert_eq!(
        svc.list_sessions().unwrap_err().code(),
        "persistence_failed"
    );
    assert_eq!(
        svc.list_events("cold").unwrap_err().code(),
        "persistence_failed"
    );

    flaky.corrupt.store(true, Ordering::SeqCst);
    let err = svc.list_events("cold").unwrap_err();
    assert_eq!(err.code(), "corrupt_session");
    assert!(err.to_string().contains("bad checksum in frame 2"), "{err}");
}

#[test]
fn window_reads_of_stored_sessions_read_only_their_range() {
    struct Recording {
        inner: JsonlSource,
        ranges: std::sync::Mutex<Vec<(u64, u64)>>,
    }
    impl PersistedSource for Recording {
        fn list_headers(&self) -> Result<Vec<SessionHeader>, SourceError> {
            self.inner.list_headers()
        }
        fn read_header(&self, id: &str) -> Result<SessionHeader, SourceError> {
            self.inner.read_header(id)
        }
        fn read_range(&self, id: &str, from: u64, to: u64) -> Result<StoredSlice, SourceError> {
            self.ranges.lock().unwrap().push((from, to));
            self.inner.read_range(id, from, to)
        }
        fn read_types(&self, id: &str, types: &[&str]) -> Result<StoredSlice, SourceError> {
            self.inner.read_types(id, types)
        }
        // An index answers this without reading events; the plain scanner stands in for one.
        fn event_types(&self, id: &str) -> Result<Vec<String>, SourceError> {
            self.inner.event_types(id)
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut events = simple_turn(0);
    events.extend(simple_turn(4));
    persist(dir.path(), SessionHeader::new("s", 1), events);
    let source = Arc::new(Recording {
        inner: JsonlSource::new(dir.path()),
        ranges: std::sync::Mutex::default(),
    });
    let store = Store::with_source(dir.path(), StoreConfig::default(), source.clone()).unwrap();
    let w = service(&store)
        .read_event(&WindowRequest::new("s", 5).with_neighbours(1, 1))
        .unwrap();
    assert_eq!((w.start_seq, w.end_seq), (4, 6));
    assert_eq!(*source.ranges.lock().unwrap(), [(4, 6)]);
}

#[test]
fn lineage_spans_live_and_persisted_sessions() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("root", 1), simple_turn(0));
    let store = manual_store(dir.path());
    let mut child = SessionHeader::new("child", 2);
    child.parent_session = Some("root".into());
    store.create_session(child).unwrap();
    let trace = service(&store).trace_session("child").unwrap();
    assert_eq!(trace.ancestors.len(), 1);
    let root = service(&store).trace_session("root").unwrap();
    assert_eq!(root.descendants.len(), 1);
    assert!(root.descendants[0].session.live);
}

#[test]
fn event_trace_and_filters_work_on_stored_logs() {
    let dir = tempfile::tempdir().unwrap();
    // The trace fixture's first turn up to the pruning, with a message to find by text.
    let mut events = trace_fixture();
    events.truncate(5);
    events[1] = user(1, "u", "Hello\n(AI)+ please");
    persist(dir.path(), SessionHeader::new("s", 1), events);
    let store = manual_store(dir.path());
    let svc = service(&store);
    let t = svc.trace_event("s", 2).unwrap();
    assert_eq!(t.derived_event_seqs, [3, 4]);
    let hits = svc
        .filter_events(
            "s",
            &[EventFilter::Text {
                text: "hello   (ai)+".into(),
            }],
        )
        .unwrap();
    assert_eq!(hits.iter().map(|d| d.record.seq).collect::<Vec<_>>(), [1]);
    let shadowed = svc
        .filter_events(
            "s",
            &[EventFilter::Surface {
                values: vec![SurfaceClass::Shadowed],
            }],
        )
        .unwrap();
    assert_eq!(
        shadowed.iter().map(|d| d.record.seq).collect::<Vec<_>>(),
        [3]
    );
    // Blank text fails before the log is read.
    let err = svc
        .filter_events("missing", &[EventFilter::Text { text: " ".into() }])
        .unwrap_err();
    assert_eq!(err.code(), "invalid_filter");
}

#[test]
fn invalid_surface_in_a_stored_log_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    // Each event passes the rules one line is checked for; the replace names a node that is
    // not on the surface, which only the fold sees.
    let lines: Vec<Value> = [
        user(0, "a", "a"),
        replacing(user(1, "b", "b"), 7, 7, vec![0]),
    ]
    .iter()
    .map(|e| serde_json::to_value(e).unwrap())
    .collect();
    write_raw_log(dir.path(), "bad", &raw_header("bad", 1), &lines);
    let store = manual_store(dir.path());
    let svc = service(&store);
    assert_eq!(
        svc.list_events("bad").unwrap_err().code(),
        "invalid_surface"
    );
    assert_eq!(
        svc.trace_event("bad", 7).unwrap_err().code(),
        "event_not_found"
    );
    // A window read does not fold, so it still answers.
    assert_eq!(
        svc.read_event(&WindowRequest::new("bad", 1))
            .unwrap()
            .target
            .seq,
        1
    );
}

/// dsh's legacy worked example (a pre-identity log with a pruning replacement) as raw stored
/// lines.
fn legacy_lines() -> Vec<Value> {
    vec![
        json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1, "trigger": {"kind": "user"}}}),
        json!({"type": "user/message", "seq": 1, "time": 2, "surfaceOp": "append", "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}}),
        json!({"type": "step/start", "seq": 2, "time": 3, "data": {"turn": 1, "step": 1}}),
        json!({"type": "assistant/message", "seq": 3, "time": 4, "surfaceOp": "append", "data": {"turn": 1, "step": 1, "content": [{"type": "text", "text": "reading"}], "provenance": {"provider": "p", "model": "m"}}}),
        json!({"type": "tool/call", "seq": 4, "time": 5, "data": {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}}),
        json!({"type": "tool/result", "seq": 5, "time": 6, "surfaceOp": "append", "sourceEventSeqs": [4], "data": {"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "big"}], "isError": false}}),
        json!({"type": "tool/result", "seq": 6, "time": 7, "surfaceOp": {"op": "replace", "start": 5, "end": 5}, "sourceEventSeqs": [5], "data": {"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "[pruned]"}], "isError": false}}),
        json!({"type": "step/end", "seq": 7, "time": 8, "data": {"turn": 1, "step": 1}}),
        json!({"type": "turn/end", "seq": 8, "time": 9, "data": {"turn": 1, "reason": {"kind": "aborted"}}}),
    ]
}

#[test]
fn legacy_logs_load_with_deterministic_ids_on_every_read_path() {
    let dir = tempfile::tempdir().unwrap();
    write_raw_log(dir.path(), "old", &raw_header("old", 1), &legacy_lines());
    let before = std::fs::read(dir.path().join("old/events.jsonl")).unwrap();
    let store = manual_store(dir.path());
    let svc = service(&store);
    let surface = svc.read_surface("old").unwrap();
    let ids: Vec<_> = surface
        .events
        .iter()
        .map(|e| crate::query::legacy::message_id(e).unwrap().to_string())
        .collect();
    assert_eq!(
        ids,
        [
            "legacy-message:old:1",
            "legacy-message:old:3",
            "legacy-message:old:5"
        ]
    );
    // A window starting at the replacement still inherits its target's id.
    let w = svc.read_event(&WindowRequest::new("old", 6)).unwrap();
    assert_eq!(w.events.len(), 1);
    assert_eq!(
        crate::query::legacy::message_id(&w.target),
        Some("legacy-message:old:5")
    );
    assert_eq!(w.events[0].data["message"]["id"], "legacy-message:old:5");
    let end = svc.read_event(&WindowRequest::new("old", 8)).unwrap();
    assert_eq!(
        end.target.data["reason"],
        json!({"kind": "aborted", "reason": {"kind": "legacy"}})
    );
    // Stored bytes are never rewritten.
    assert_eq!(
        std::fs::read(dir.path().join("old/events.jsonl")).unwrap(),
        before
    );
}

#[test]
fn each_malformed_legacy_shape_is_a_corrupt_session() {
    let malformed = [
        (
            0,
            json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1, "trigger": {}}}),
        ),
        (
            8,
            json!({"type": "turn/end", "seq": 8, "time": 9, "data": {"turn": 1, "step": 1, "reason": {"kind": "completed"}}}),
        ),
        (
            1,
            json!({"type": "steering/message", "seq": 1, "time": 2, "surfaceOp": "append", "data": {"turn": 1, "content": []}}),
        ),
    ];
    for (seq, line) in malformed {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = legacy_lines();
        lines[seq] = line;
        write_raw_log(dir.path(), "old", &raw_header("old", 1), &lines);
        let store = manual_store(dir.path());
        let err = service(&store).list_events("old").unwrap_err();
        assert_eq!(err.code(), "corrupt_session", "{seq}: {err}");
    }
}

#[test]
fn retired_shapes_refuse_even_window_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = legacy_lines();
    lines.push(json!({"type": "mode/set", "seq": 9, "time": 10, "data": {}}));
    write_raw_log(dir.path(), "old", &raw_header("old", 1), &lines);
    let store = manual_store(dir.path());
    let err = service(&store)
        .read_event(&WindowRequest::new("old", 0))
        .unwrap_err();
    assert_eq!(err.code(), "corrupt_session");
}

/// A legacy prune that replaces a seq with no recorded message id (here the `tool/call` at 4)
/// has no id to inherit: dsh refuses the whole session when it loads it, so every read refuses
/// it, the windows that neither hold the prune nor any legacy message included, through the
/// index and through the plain scanner, on a first read and on a kept one.
#[test]
fn a_legacy_prune_without_a_recorded_id_refuses_every_read() {
    let mut lines = legacy_lines();
    lines[6]["surfaceOp"] = json!({"op": "replace", "start": 4, "end": 4});
    lines[6]["sourceEventSeqs"] = json!([4]);
    for indexed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        write_raw_log(dir.path(), "old", &raw_header("old", 1), &lines);
        let store = if indexed {
            manual_store(dir.path())
        } else {
            let source = Arc::new(JsonlSource::new(dir.path()));
            Store::with_source(dir.path(), StoreConfig::default(), source).unwrap()
        };
        let svc = service(&store);
        for _ in 0..2 {
            let reads = [
                svc.read_event(&WindowRequest::new("old", 0)).map(drop),
                svc.read_event(&WindowRequest::new("old", 8).with_neighbours(1, 0))
                    .map(drop),
                svc.list_events_of_types("old", &["turn/start"]).map(drop),
                svc.list_events("old").map(drop),
                svc.trace_event("old", 0).map(drop),
            ];
            for (i, read) in reads.into_iter().enumerate() {
                let err = read.unwrap_err();
                assert_eq!(err.code(), "corrupt_session", "read {i}, indexed {indexed}");
                let cause = std::error::Error::source(&err).map(ToString::to_string);
                assert!(
                    cause.is_some_and(
                        |c| c.contains("replaces seq 4, which has no recorded message id")
                    ),
                    "read {i}, indexed {indexed}: {err}"
                );
            }
        }
        // The session is still listed: listing reads headers only.
        assert_eq!(svc.list_sessions().unwrap().len(), 1);
    }
}

#[test]
fn format_versions_and_unknown_types_are_refused_as_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let mut newer = raw_header("newer", 1);
    newer["version"] = json!(1);
    write_raw_log(dir.path(), "newer", &newer, &[]);
    let unknown = json!({"type": "future/kind", "seq": 0, "time": 1, "data": {}});
    write_raw_log(
        dir.path(),
        "unknown",
        &raw_header("unknown", 1),
        std::slice::from_ref(&unknown),
    );
    let mut skippable = unknown;
    skippable["ignorable"] = json!(true);
    write_raw_log(
        dir.path(),
        "skippable",
        &raw_header("skippable", 1),
        &[skippable],
    );

    let store = manual_store(dir.path());
    let svc = service(&store);
    let err = svc.list_events("newer").unwrap_err();
    assert_eq!(err.code(), "unsupported_format");
    assert!(err.to_string().contains("newer"), "{err}");
    assert_eq!(
        svc.list_events("unknown").unwrap_err().code(),
        "unsupported_format"
    );
    assert_eq!(svc.list_events("skippable").unwrap().len(), 1);
    // Listing skips what it cannot read instead of failing for everyone.
    let ids: Vec<_> = svc
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|r| r.header.id)
        .collect();
    assert_eq!(ids, ["skippable", "unknown"]);
}

#[test]
fn torn_tail_on_disk_is_not_returned() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("s", 1), simple_turn(0));
    let path = dir.path().join("s/events.jsonl");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"type":"turn/start","seq":4,"ti"#);
    std::fs::write(&path, bytes).unwrap();
    let store = manual_store(dir.path());
    assert_eq!(service(&store).list_events("s").unwrap().len(), 4);
}

#[test]
fn surface_op_replace_survives_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("s", 1), two_compactions());
    let store = manual_store(dir.path());
    let snapshot = service(&store).read_session("s").unwrap();
    assert_eq!(
        snapshot.events[4].surface_op,
        Some(SurfaceOp::Replace { start: 2, end: 3 })
    );
    assert_eq!(snapshot.events, two_compactions());
}

/// A legacy `steering/message` is read as a `user/message` (docs/SESSIONS.md, "Legacy
/// import", step 3), so the type-index read
/// must find it: both as a wanted type and as a surface node a later replace points at.
/// Found by the `session_log` fuzz target (`fuzz/regressions/session_log/steering-*`).
#[test]
fn type_reads_see_legacy_steering_messages_as_user_messages() {
    let steering = json!({"type": "steering/message", "seq": 0, "time": 1000, "surfaceOp": "append",
        "data": {"turn": 1, "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}});
    let replacing = json!({"type": "user/message", "seq": 1, "time": 1010,
        "surfaceOp": {"op": "replace", "start": 0, "end": 0}, "sourceEventSeqs": [0],
        "data": {"id": "u1", "role": "user", "source": {"kind": "compaction"}, "content": []}});
    for lines in [vec![steering.clone()], vec![steering, replacing]] {
        let dir = tempfile::tempdir().unwrap();
        write_raw_log(dir.path(), "s", &raw_header("s", 1000), &lines);
        let store = manual_store(dir.path());
        let service = service(&store);
        let all = service.list_events("s").unwrap();
        assert_eq!(all.len(), lines.len());
        for types in [
            &["user/message"][..],
            &["user/message", "turn/end"],
            &["tool/result"],
        ] {
            let expected: Vec<_> = all
                .iter()
                .filter(|r| types.contains(&r.event_type.as_str()))
                .cloned()
                .collect();
            assert_eq!(
                service.list_events_of_types("s", types).unwrap(),
                expected,
                "{types:?} of {} lines",
                lines.len()
            );
        }
    }
}

/// The chain of `source()`s below `err`, outermost first.
fn causes(err: &dyn std::error::Error) -> Vec<String> {
    std::iter::successors(err.source(), |e| e.source())
        .map(ToString::to_string)
        .collect()
}

#[test]
fn refusals_keep_the_errors_that_found_them() {
    let dir = tempfile::tempdir().unwrap();
    persist(dir.path(), SessionHeader::new("s", 1), simple_turn(0));
    let log = dir.path().join("s/events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let store = manual_store(dir.path());

    // A header that is not JSON: the query error, the source's damage, the JSON error.
    std::fs::write(&log, text.replacen('{', "{{", 1)).unwrap();
    let err = service(&store).list_events("s").unwrap_err();
    assert_eq!(err.code(), "corrupt_session");
    let chain = causes(&err);
    assert_eq!(chain.len(), 2, "{chain:?}");
    assert!(
        chain[0].starts_with("the header line is not JSON: "),
        "{chain:?}"
    );
    assert!(err.to_string().contains(&chain[0]), "{err}");
    let json = std::error::Error::source(&err)
        .and_then(std::error::Error::source)
        .unwrap();
    assert!(json.downcast_ref::<serde_json::Error>().is_some());

    // A newer format version: the header error is kept.
    std::fs::write(&log, text.replacen("\"version\":0", "\"version\":7", 1)).unwrap();
    let err = service(&store).list_events("s").unwrap_err();
    assert_eq!(err.code(), "unsupported_format");
    let header = std::error::Error::source(&err)
        .and_then(std::error::Error::source)
        .and_then(|e| e.downcast_ref::<HeaderError>());
    assert!(matches!(header, Some(HeaderError::Unsupported(_))), "{err}");

    // A filter that does not parse keeps its JSON error.
    let err = crate::query::filter::parse_event_filters(&json!([{"kind": 3}])).unwrap_err();
    assert_eq!(err.code(), "invalid_filter");
    assert!(
        std::error::Error::source(&err)
            .is_some_and(|e| e.downcast_ref::<serde_json::Error>().is_some())
    );
}
