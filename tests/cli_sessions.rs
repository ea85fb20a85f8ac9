//! The session commands' contract: sessions, events, read, trace-session, trace-event.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agentlog::query::{SessionEvent, SessionHeader, Store, StoreConfig, SurfaceOp};
use common::{agentlog, json};
use serde_json::{Value, json};

fn user(seq: u64, text: &str) -> SessionEvent {
    SessionEvent::new(
        "user/message",
        seq,
        i64::try_from(seq).unwrap() * 10,
        json!({"id": format!("u{seq}"), "role": "user", "source": {"kind": "user"},
               "content": [{"type": "text", "text": text}]}),
    )
    .with_surface_op(SurfaceOp::Append)
}

fn assistant(seq: u64, text: &str) -> SessionEvent {
    SessionEvent::new(
        "assistant/message",
        seq,
        i64::try_from(seq).unwrap() * 10,
        json!({"turn": 1, "step": 1, "message": {"id": format!("a{seq}"), "role": "assistant",
               "source": {"kind": "model", "provider": "p", "model": "m"},
               "content": [{"type": "text", "text": text}]}}),
    )
    .with_surface_op(SurfaceOp::Append)
}

/// A store with a lineage (root > child > grandchild, and an orphan) and, in "root", a turn
/// whose first exchange is replaced by a summary.
fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let header = |id: &str, created: u64, parent: Option<&str>| {
        let mut h = SessionHeader::new(id, created);
        h.parent_session = parent.map(str::to_owned);
        h
    };
    for (id, created, parent) in [
        ("root", 1, None),
        ("child", 2, Some("root")),
        ("grandchild", 3, Some("child")),
        ("orphan", 4, Some("missing")),
    ] {
        store.create_session(header(id, created, parent)).unwrap();
        store
            .append(
                id,
                vec![SessionEvent::new("turn/start", 0, 0, json!({"turn": 1}))],
            )
            .unwrap();
    }
    store
        .append(
            "root",
            vec![
                user(1, "the migration failed on step three"),
                assistant(2, "let me look"),
                user(3, "still broken"),
                assistant(4, "summary: migration retried")
                    .with_surface_op(SurfaceOp::Replace { start: 1, end: 2 })
                    .with_sources(vec![1, 2]),
                SessionEvent::new(
                    "turn/end",
                    5,
                    50,
                    json!({"turn": 1, "reason": {"kind": "completed"}}),
                ),
            ],
        )
        .unwrap();
    drop(store);
    dir
}

#[test]
fn sessions_are_listed_newest_first_with_their_lineage_fields() {
    let dir = store();
    let out = agentlog(&["sessions", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["orphan", "grandchild", "child", "root"]);
    let root = &v[3];
    assert_eq!(
        (root["parentSession"].clone(), root["createdAt"].clone()),
        (Value::Null, json!(1))
    );
    assert_eq!(
        (root["live"].clone(), root["persisted"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(v[2]["parentSession"], "root");
}

#[test]
fn events_carry_their_surface_class_and_filter() {
    let dir = store();
    let root = dir.path().to_str().unwrap();
    let all = json(&agentlog(&["events", root, "root", "--json"]));
    let classes: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["surface"].as_str().unwrap())
        .collect();
    assert_eq!(
        classes,
        [
            "log-only", "shadowed", "shadowed", "current", "current", "log-only"
        ]
    );
    assert_eq!(all[1]["type"], "user/message");
    assert_eq!(all[1]["time"], 10);
    let seqs = |v: Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(
        seqs(json(&agentlog(&[
            "events",
            root,
            "root",
            "--type",
            "user/message",
            "--json"
        ]))),
        [1, 3]
    );
    assert_eq!(
        seqs(json(&agentlog(&[
            "events",
            root,
            "root",
            "--type",
            "user/message",
            "--type",
            "turn/end",
            "--json"
        ]))),
        [1, 3, 5]
    );
    assert_eq!(
        seqs(json(&agentlog(&[
            "events",
            root,
            "root",
            "--surface",
            "current",
            "--json"
        ]))),
        [3, 4]
    );
    assert_eq!(
        seqs(json(&agentlog(&[
            "events",
            root,
            "root",
            "--text",
            "MIGRATION   failed",
            "--json"
        ]))),
        [1]
    );
    assert_eq!(
        seqs(json(&agentlog(&[
            "events",
            root,
            "root",
            "--text",
            "migration",
            "--surface",
            "current",
            "--json"
        ]))),
        [4]
    );
}

#[test]
fn read_returns_the_target_and_its_window() {
    let dir = store();
    let root = dir.path().to_str().unwrap();
    let v = json(&agentlog(&[
        "read", root, "root", "3", "--before", "1", "--after", "1", "--json",
    ]));
    assert_eq!(v["target"]["seq"], 3);
    assert_eq!(v["target"]["data"]["content"][0]["text"], "still broken");
    let seqs: Vec<u64> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [2, 3, 4]);
    assert_eq!(
        (v["startSeq"].clone(), v["endSeq"].clone()),
        (json!(2), json!(4))
    );
    let edge = json(&agentlog(&[
        "read", root, "root", "0", "--before", "5", "--json",
    ]));
    assert_eq!(edge["startSeq"], 0);
}

#[test]
fn errors_are_typed_json_with_a_non_zero_exit() {
    let dir = store();
    let root = dir.path().to_str().unwrap();
    for (args, code) in [
        (
            vec!["read", root, "root", "3", "--before", "51", "--json"],
            "invalid_window",
        ),
        (
            vec!["read", root, "root", "99", "--json"],
            "event_not_found",
        ),
        (
            vec!["events", root, "nobody", "--json"],
            "session_not_found",
        ),
        (
            vec!["trace-event", root, "root", "77", "--json"],
            "event_not_found",
        ),
        (
            vec!["events", root, "../root", "--json"],
            "invalid_session_id",
        ),
    ] {
        let out = agentlog(&args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        let v = json(&out);
        assert_eq!(v["error"], code, "{args:?}: {v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let out = agentlog(&["sessions", "/nonexistent/store", "--json"]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(json(&out)["error"], "no_store");
}

/// dsh's legacy worked example as stored lines (pre-identity messages, a legacy turn/start), its
/// prune at seq 6 replacing `start`.
fn legacy_log(start: u64) -> String {
    let lines = [
        json!({"type": "session", "version": 0, "id": "old", "createdAt": 1}),
        json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1, "trigger": {"kind": "user"}}}),
        json!({"type": "user/message", "seq": 1, "time": 2, "surfaceOp": "append", "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}}),
        json!({"type": "step/start", "seq": 2, "time": 3, "data": {"turn": 1, "step": 1}}),
        json!({"type": "assistant/message", "seq": 3, "time": 4, "surfaceOp": "append", "data": {"turn": 1, "step": 1, "content": [{"type": "text", "text": "reading"}], "provenance": {"provider": "p", "model": "m"}}}),
        json!({"type": "tool/call", "seq": 4, "time": 5, "data": {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}}),
        json!({"type": "tool/result", "seq": 5, "time": 6, "surfaceOp": "append", "sourceEventSeqs": [4], "data": {"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "big"}], "isError": false}}),
        json!({"type": "tool/result", "seq": 6, "time": 7, "surfaceOp": {"op": "replace", "start": start, "end": start}, "sourceEventSeqs": [start], "data": {"turn": 1, "step": 1, "callId": "c1", "content": [{"type": "text", "text": "[pruned]"}], "isError": false}}),
        json!({"type": "step/end", "seq": 7, "time": 8, "data": {"turn": 1, "step": 1}}),
        json!({"type": "turn/end", "seq": 8, "time": 9, "data": {"turn": 1, "reason": {"kind": "completed"}}}),
    ];
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

/// `read` refuses a session whose legacy prune replaces a seq with no recorded message id (the
/// `tool/call` at 4), as `events` does and as dsh does on load, even for a window that holds
/// neither the prune nor a legacy message; the same log with the prune of seq 5 answers, the
/// prune inheriting seq 5's id.
#[test]
fn read_refuses_a_legacy_prune_without_a_recorded_id() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("old")).unwrap();
    let log = dir.path().join("old/events.jsonl");
    let root = dir.path().to_str().unwrap();
    std::fs::write(&log, legacy_log(4)).unwrap();
    for args in [
        vec!["read", root, "old", "0", "--json"],
        vec!["read", root, "old", "8", "--before", "1", "--json"],
        vec!["events", root, "old", "--type", "step/start", "--json"],
        vec!["events", root, "old", "--json"],
    ] {
        // Twice: the first builds the session's index, the second reads through it.
        for _ in 0..2 {
            let out = agentlog(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let v = json(&out);
            assert_eq!(v["error"], "corrupt_session", "{args:?}: {v}");
            assert!(
                v["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("replaces seq 4, which has no recorded message id")),
                "{args:?}: {v}"
            );
        }
    }
    std::fs::write(&log, legacy_log(5)).unwrap();
    let v = json(&agentlog(&["read", root, "old", "6", "--json"]));
    assert_eq!(v["target"]["data"]["message"]["id"], "legacy-message:old:5");
    let v = json(&agentlog(&["read", root, "old", "0", "--json"]));
    assert_eq!(v["target"]["data"], json!({"turn": 1}));
}

#[test]
fn traces_follow_lineage_and_replacements() {
    let dir = store();
    let root = dir.path().to_str().unwrap();
    // The reference's shape: records are {header, live, persisted}, descendants a tree.
    let v = json(&agentlog(&["trace-session", root, "root", "--json"]));
    let record = |id: &str, created: u64, parent: Option<&str>| {
        let mut header = json!({"type": "session", "version": 0, "id": id, "createdAt": created});
        if let Some(parent) = parent {
            header["parentSession"] = json!(parent);
        }
        json!({"header": header, "live": false, "persisted": true})
    };
    assert_eq!(
        v,
        json!({
            "target": record("root", 1, None),
            "ancestors": [],
            "descendants": [{
                "session": record("child", 2, Some("root")),
                "descendants": [{
                    "session": record("grandchild", 3, Some("child")),
                    "descendants": [],
                }],
            }],
            "complete": true,
            "root": record("root", 1, None),
        })
    );
    let v = json(&agentlog(&["trace-session", root, "grandchild", "--json"]));
    let ancestors: Vec<&str> = v["ancestors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["header"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ancestors, ["child", "root"]);
    assert_eq!(v["root"]["header"]["id"], "root");
    let human = agentlog(&["trace-session", root, "root"]);
    assert_eq!(
        String::from_utf8(human.stdout).unwrap(),
        "session   root\nancestors -\nroot      root\ndescendants 2\n  child\n    grandchild\n"
    );
    let orphan = json(&agentlog(&["trace-session", root, "orphan", "--json"]));
    assert_eq!(
        (
            orphan["complete"].clone(),
            orphan["unresolvedParentId"].clone()
        ),
        (json!(false), json!("missing"))
    );
    assert!(orphan.get("root").is_none(), "{orphan}");
    let e = json(&agentlog(&["trace-event", root, "root", "1", "--json"]));
    assert_eq!(e["replacedBy"], 4);
    assert_eq!(e["derivedEventSeqs"], json!([4]));
    let s = json(&agentlog(&["trace-event", root, "root", "4", "--json"]));
    assert_eq!(s["replacedEventSeqs"], json!([1, 2]));
    assert_eq!(s["sourceEventSeqs"], json!([1, 2]));
}

#[test]
fn a_session_that_is_a_symlink_out_of_the_store_is_refused() {
    let outside = store();
    let dir = store();
    let root = dir.path().to_str().unwrap();
    // "evil" points at a real session directory in another store.
    std::os::unix::fs::symlink(outside.path().join("root"), dir.path().join("evil")).unwrap();
    let listed = json(&agentlog(&["sessions", root, "--json"]));
    assert!(
        listed.as_array().unwrap().iter().all(|s| s["id"] != "evil"),
        "{listed}"
    );
    let out = agentlog(&["events", root, "evil", "--json"]);
    assert_ne!(out.status.code(), Some(0));
    let v = json(&out);
    assert!(
        v["message"].as_str().unwrap().contains("symbolic link"),
        "{v}"
    );
    // A log file that is a link is refused too.
    std::fs::create_dir(dir.path().join("linked")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("root/events.jsonl"),
        dir.path().join("linked/events.jsonl"),
    )
    .unwrap();
    let out = agentlog(&["read", root, "linked", "0", "--json"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        json(&out)["message"]
            .as_str()
            .unwrap()
            .contains("symbolic link")
    );
}

/// 100,000 sessions in one chain: the JSON and the human output are written without one
/// call frame per level, which the CLI's main thread stack could not hold at this depth.
#[test]
fn trace_session_writes_a_100_000_deep_chain() {
    const N: usize = 100_000;
    // In memory where there is a tmpfs: creating and removing the directories on a disk would
    // be most of the test's time.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    for i in 0..N {
        let session = dir.path().join(format!("s{i}"));
        std::fs::create_dir(&session).unwrap();
        let parent = match i {
            0 => String::new(),
            _ => format!(",\"parentSession\":\"s{}\"", i - 1),
        };
        std::fs::write(
            session.join("events.jsonl"),
            format!(
                "{{\"type\":\"session\",\"version\":0,\"id\":\"s{i}\",\"createdAt\":{i}{parent}}}\n"
            ),
        )
        .unwrap();
    }
    let root = dir.path().to_str().unwrap();

    let out = agentlog(&["trace-session", root, "s0", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // serde_json's parser stops at 128 levels, so the document is checked with a scan: the
    // brackets balance (outside strings), the deepest level is the chain's, and the sessions
    // come in chain order.
    let text = std::str::from_utf8(&out.stdout).unwrap().trim_end();
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for byte in text.bytes() {
        match (in_string, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (false, _, b'"') => in_string = true,
            (false, _, b'{' | b'[') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b'}' | b']') => depth = depth.checked_sub(1).unwrap(),
            _ => {}
        }
    }
    assert_eq!((depth, in_string), (0, false));
    // The outer object and array, then per level a node, its descendants array and its
    // session record with the header inside.
    assert_eq!(deepest, 2 + 2 * (N - 1) + 1);
    let tree = &text[text.find("\"descendants\":[").unwrap()..text.rfind(",\"complete\"").unwrap()];
    let ids: Vec<&str> = tree
        .split("\"id\":\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert_eq!(ids.len(), N - 1);
    assert!(
        ids.iter()
            .enumerate()
            .all(|(i, id)| *id == format!("s{}", i + 1))
    );
    assert!(text.ends_with(",\"complete\":true,\"root\":{\"header\":{\"type\":\"session\",\"version\":0,\"id\":\"s0\",\"createdAt\":0},\"live\":false,\"persisted\":true}}"));

    let out = agentlog(&["trace-session", root, "s0"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let human = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines[3], format!("descendants {}", N - 1));
    assert_eq!(lines.len(), 4 + N - 1);
    assert_eq!(lines[4], "  s1");
    assert_eq!(
        lines.last().unwrap().trim_start(),
        format!("[depth {}] s{}", N - 1, N - 1)
    );
    assert!(
        lines.iter().all(|l| l.len() < 64),
        "indentation stays bounded"
    );
}

#[test]
fn a_reader_that_goes_away_ends_trace_session_quietly() {
    // `agentlog trace-session ... | head`: both outputs go through a buffered writer.
    let dir = store();
    let root = dir.path().to_str().unwrap();
    for args in [
        vec!["trace-session", root, "root", "--json"],
        vec!["trace-session", root, "root"],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}
