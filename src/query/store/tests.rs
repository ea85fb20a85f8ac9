//! Persistence-contract behaviour of the store.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::query::source::JsonlSource;
use crate::query::test_support::*;
use crate::query::types::SurfaceOp;

/// A manual store in a fresh directory, with the session `s` created and nothing appended.
fn store_with_session() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = manual_store(dir.path());
    store.create_session(SessionHeader::new("s", 1)).unwrap();
    (dir, store)
}

fn log_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(id).join("events.jsonl")
}

#[test]
fn round_trip_is_byte_identical_and_keeps_lineage_fields() {
    let dir = tempfile::tempdir().unwrap();
    let mut header = SessionHeader::new("child", 7);
    header.parent_session = Some("parent".into());
    header.seed_length = Some(2);
    header.delegation_depth = Some(1);
    header.cwd = Some("/work".into());
    header.extra.insert("futureField".into(), json!([1, "x"]));
    let events = simple_turn(0);
    {
        let store = manual_store(dir.path());
        store.create_session(header.clone()).unwrap();
        store.append("child", events.clone()).unwrap();
        store.close_session("child").unwrap();
    }
    let bytes = std::fs::read_to_string(log_path(dir.path(), "child")).unwrap();
    let mut expected = serde_json::to_string(&header).unwrap() + "\n";
    for e in &events {
        expected.push_str(&e.to_line().unwrap());
        expected.push('\n');
    }
    assert_eq!(bytes, expected);

    let store = manual_store(dir.path());
    let stored = store.source().read_all("child").unwrap();
    assert_eq!(stored.header, header);
    assert_eq!(stored.events, events);
}

#[test]
fn sessions_created_but_never_appended_to_are_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    let store = manual_store(dir.path());
    store.create_session(SessionHeader::new("lazy", 1)).unwrap();
    store.checkpoint("lazy").unwrap();
    assert!(store.source().list_headers().unwrap().is_empty());
    assert!(!dir.path().join("lazy").exists());
}

#[test]
fn first_seq_mismatch_is_rejected() {
    let (_dir, store) = store_with_session();
    let err = store
        .append("s", vec![log_only("turn/start", 1, json!({"turn": 1}))])
        .unwrap_err();
    assert_eq!(err.code(), "invalid_event");
    assert!(
        err.to_string()
            .contains("seq 1 is not contiguous; expected 0"),
        "{err}"
    );
}

#[test]
fn gap_in_the_middle_of_a_batch_rejects_the_whole_batch() {
    let (dir, store) = store_with_session();
    let mut batch = simple_turn(0);
    batch[2].seq = 5;
    assert_eq!(
        store.append("s", batch).unwrap_err().code(),
        "invalid_event"
    );
    let receipt = store.append("s", vec![]).unwrap();
    assert_eq!(receipt.next_seq, 0);
    store.checkpoint("s").unwrap();
    assert!(!log_path(dir.path(), "s").exists());
}

#[test]
fn a_rejected_batch_takes_back_its_surface_pushes() {
    let (_dir, store) = store_with_session();
    store
        .append("s", vec![user(0, "u0", "a"), user(1, "u1", "b")])
        .unwrap();
    let before = store.with_live("s", |v| v.surface.clone()).unwrap();
    // An append, a replace over it and an older node, then a broken replace: the first two
    // were folded into the live surface before the third was checked.
    let batch = vec![
        user(2, "u2", "c"),
        replacing(user(3, "u3", "summary"), 1, 2, vec![1, 2]),
        replacing(user(4, "u4", "x"), 3, 0, vec![0, 3]),
    ];
    let err = store.append("s", batch).unwrap_err();
    assert!(err.to_string().contains("comes after end"), "{err}");
    let after = store.with_live("s", |v| v.surface.clone()).unwrap();
    assert_eq!(after, before);
    assert_eq!(after.nodes().collect::<Vec<_>>(), [0, 1]);
    // The session goes on from where it was.
    store
        .append(
            "s",
            vec![replacing(user(2, "u2", "summary"), 0, 1, vec![0, 1])],
        )
        .unwrap();
    let surface = store.with_live("s", |v| v.surface.to_fold()).unwrap();
    assert_eq!(surface.nodes, [2]);
    assert_eq!(surface.replacements.len(), 1);
}

#[test]
fn non_lossless_data_is_rejected_naming_the_event_type() {
    let (_dir, store) = store_with_session();
    let e = log_only("todo/write", 0, json!({"todos": [], "n": -0.0}));
    let err = store.append("s", vec![e]).unwrap_err();
    assert!(err.to_string().contains("todo/write"), "{err}");
}

#[test]
fn bad_event_after_a_checkpoint_writes_nothing() {
    let (dir, store) = store_with_session();
    store.append("s", simple_turn(0)).unwrap();
    store.checkpoint("s").unwrap();
    let size = std::fs::metadata(log_path(dir.path(), "s")).unwrap().len();
    let bad = replacing(user(4, "x", "x"), 99, 99, vec![1]);
    assert_eq!(
        store.append("s", vec![bad]).unwrap_err().code(),
        "invalid_event"
    );
    store.checkpoint("s").unwrap();
    assert_eq!(
        std::fs::metadata(log_path(dir.path(), "s")).unwrap().len(),
        size
    );
}

#[test]
fn appends_must_use_current_shapes_and_known_types() {
    let (_dir, store) = store_with_session();
    let pre_identity = log_only(
        "user/message",
        0,
        json!({"content": [], "source": {"kind": "user"}}),
    )
    .with_surface_op(SurfaceOp::Append);
    let legacy_start = log_only(
        "turn/start",
        0,
        json!({"turn": 1, "trigger": {"kind": "user"}}),
    );
    let steering = log_only(
        "steering/message",
        0,
        json!({"turn": 1, "content": [], "source": {"kind": "user"}}),
    );
    let retired = log_only("mode/set", 0, json!({}));
    let unknown = log_only("my/plugin", 0, json!({}));
    for bad in [
        pre_identity,
        legacy_start,
        steering,
        retired,
        unknown.clone(),
    ] {
        let err = store.append("s", vec![bad.clone()]).unwrap_err();
        assert_eq!(err.code(), "invalid_event", "{bad:?}");
    }
    store.append("s", vec![unknown.with_ignorable()]).unwrap();
}

#[test]
fn new_session_colliding_with_a_stored_id_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = manual_store(dir.path());
        store
            .create_session(SessionHeader::new("taken", 1))
            .unwrap();
        store.append("taken", simple_turn(0)).unwrap();
        store.close_session("taken").unwrap();
    }
    let store = manual_store(dir.path());
    let err = store
        .create_session(SessionHeader::new("taken", 2))
        .unwrap_err();
    assert_eq!(err.code(), "session_already_exists");
    let err = store.append("taken", simple_turn(4)).unwrap_err();
    assert_eq!(err.code(), "session_not_live");
    assert_eq!(
        store.append("nobody", vec![]).unwrap_err().code(),
        "session_not_found"
    );
}

#[test]
fn abandoned_lazy_id_can_be_reused() {
    let dir = tempfile::tempdir().unwrap();
    let store = manual_store(dir.path());
    store
        .create_session(SessionHeader::new("again", 1))
        .unwrap();
    assert_eq!(
        store
            .create_session(SessionHeader::new("again", 1))
            .unwrap_err()
            .code(),
        "session_already_exists"
    );
    store.close_session("again").unwrap();
    store
        .create_session(SessionHeader::new("again", 2))
        .unwrap();
}

#[test]
fn ids_and_headers_are_validated_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let store = manual_store(dir.path());
    for bad in ["../escape", "/abs", "a/b", ".hidden", ""] {
        let err = store
            .create_session(SessionHeader::new(bad, 1))
            .unwrap_err();
        assert_eq!(err.code(), "invalid_session_id", "{bad:?}");
    }
    let mut relative = SessionHeader::new("ok", 1);
    relative.cwd = Some("relative".into());
    assert_eq!(
        store.create_session(relative).unwrap_err().code(),
        "invalid_header"
    );
}

#[test]
fn checkpoint_triggers_on_event_count() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        checkpoint: CheckpointPolicy {
            max_pending_events: 3,
            max_delay: Duration::from_hours(1),
        },
        ..Default::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    store.create_session(SessionHeader::new("s", 1)).unwrap();
    let events = simple_turn(0);
    store.append("s", events[..2].to_vec()).unwrap();
    assert!(!log_path(dir.path(), "s").exists());
    let receipt = store.append("s", events[2..3].to_vec()).unwrap();
    assert_eq!(receipt.durable_events, 3);
    assert_eq!(
        store.source().read_all("s").unwrap().events,
        events[..3].to_vec()
    );
}

#[test]
fn checkpoint_triggers_on_interval() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        checkpoint: CheckpointPolicy {
            max_pending_events: usize::MAX,
            max_delay: Duration::from_millis(20),
        },
        ..Default::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    store.create_session(SessionHeader::new("s", 1)).unwrap();
    store.append("s", simple_turn(0)).unwrap();
    assert!(!log_path(dir.path(), "s").exists());
    std::thread::sleep(Duration::from_millis(30));
    store.checkpoint_due().unwrap();
    assert_eq!(store.source().read_all("s").unwrap().events.len(), 4);
}

#[test]
fn dropping_the_store_flushes_pending_events() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = manual_store(dir.path());
        store.create_session(SessionHeader::new("s", 1)).unwrap();
        store.append("s", simple_turn(0)).unwrap();
    }
    let source = JsonlSource::new(dir.path());
    assert_eq!(source.read_all("s").unwrap().events.len(), 4);
}

#[test]
fn zero_event_checkpoint_policy_is_invalid_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        checkpoint: CheckpointPolicy {
            max_pending_events: 0,
            max_delay: Duration::ZERO,
        },
        ..Default::default()
    };
    assert_eq!(
        Store::open(dir.path(), config).unwrap_err().code(),
        "invalid_config"
    );
}

#[test]
fn later_checkpoints_append_only_new_lines() {
    let (dir, store) = store_with_session();
    store.append("s", simple_turn(0)).unwrap();
    store.checkpoint("s").unwrap();
    let first = std::fs::read(log_path(dir.path(), "s")).unwrap();
    store.append("s", simple_turn(4)).unwrap();
    store.checkpoint("s").unwrap();
    let second = std::fs::read(log_path(dir.path(), "s")).unwrap();
    assert!(second.starts_with(&first));
    assert_eq!(store.source().read_all("s").unwrap().events.len(), 8);
}

#[test]
fn range_and_type_reads_return_exactly_what_was_asked_without_mutating() {
    let (dir, store) = store_with_session();
    let mut events = simple_turn(0);
    events.extend(simple_turn(4));
    store.append("s", events.clone()).unwrap();
    store.checkpoint("s").unwrap();
    let before = std::fs::read(log_path(dir.path(), "s")).unwrap();
    let source = store.source();
    assert_eq!(
        source.read_range("s", 6, u64::MAX).unwrap().events,
        events[6..].to_vec()
    );
    assert!(
        source
            .read_range("s", 99, u64::MAX)
            .unwrap()
            .events
            .is_empty()
    );
    let ends: Vec<u64> = source
        .read_types("s", &["turn/end"])
        .unwrap()
        .events
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(ends, [3, 7]);
    assert_eq!(std::fs::read(log_path(dir.path(), "s")).unwrap(), before);
}
