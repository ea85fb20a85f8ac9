//! GitHub Copilot CLI: a resumed session's shutdowns summed, a killed process's output counted
//! with its input unknown, a process's own output never counted twice, compactions as
//! boundaries, the real files by plain reading, pre-1.0 files, catching up as a shutdown
//! arrives, and discovery under `~/.copilot/session-state` and `COPILOT_HOME`, read-only.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use agentlog::transcript::{Format, OpenOptions, Transcript, detect_format, fold_bytes};
use serde_json::{Value, json};

fn lines(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn event(kind: &str, time: &str, data: &Value) -> Value {
    json!({"type": kind, "data": data, "id": format!("{kind}-{time}"),
        "timestamp": format!("2026-05-01T{time}:00.000Z"), "parentId": null})
}

fn metric(requests: u64, [input, output, read, write, reasoning]: [u64; 5]) -> Value {
    json!({"requests": {"count": requests, "cost": 1},
        "usage": {"inputTokens": input, "outputTokens": output, "cacheReadTokens": read,
            "cacheWriteTokens": write, "reasoningTokens": reasoning}})
}

/// Process A ends in its shutdown; B is resumed, compacts and ends in its shutdown; C is
/// resumed, switches model, compacts and is killed (no shutdown).
fn resumed_session() -> Vec<u8> {
    let message = |time: &str, output: u64| {
        event(
            "assistant.message",
            time,
            &json!({"content": "ok", "outputTokens": output}),
        )
    };
    let compaction = |time: &str, input: u64, output: u64, cached: u64| {
        event(
            "session.compaction_complete",
            time,
            &json!({"success": true, "preCompactionTokens": 9000,
                "compactionTokensUsed": {"input": input, "output": output, "cachedInput": cached}}),
        )
    };
    lines(&[
        event(
            "session.start",
            "10:00",
            &json!({"sessionId": "s", "context": {"cwd": "/w"}}),
        ),
        event(
            "session.model_change",
            "10:00",
            &json!({"newModel": "claude-sonnet-4.5"}),
        ),
        message("10:01", 100),
        message("10:02", 50),
        event(
            "session.shutdown",
            "10:05",
            &json!({"modelMetrics": {"claude-sonnet-4.5": metric(2, [1000, 150, 600, 30, 20])},
                "currentTokens": 700}),
        ),
        event("session.resume", "11:00", &json!({"eventCount": 5})),
        message("11:01", 70),
        compaction("11:10", 500, 40, 100),
        message("11:11", 30),
        event(
            "session.shutdown",
            "11:20",
            &json!({"modelMetrics": {
                "claude-sonnet-4.5": metric(3, [5000, 300, 4000, 10, 0]),
                "gpt-5": metric(1, [200, 20, 0, 0, 0])}}),
        ),
        event("session.resume", "12:00", &json!({"eventCount": 10})),
        event(
            "session.model_change",
            "12:00",
            &json!({"newModel": "gpt-5"}),
        ),
        message("12:01", 11),
        compaction("12:10", 300, 25, 50),
        message("12:11", 7),
    ])
}

/// (input, output, cache creation, cache read, reasoning, messages) of a tally.
fn figures(t: &agentlog::transcript::Tally) -> [u64; 6] {
    let u = &t.usage;
    [
        u.input,
        u.output,
        u.cache_creation,
        u.cache_read,
        u.reasoning,
        t.messages,
    ]
}

#[test]
fn a_resumed_session_sums_its_shutdowns_and_counts_the_killed_process_output() {
    let bytes = resumed_session();
    assert_eq!(
        detect_format(bytes.split(|&b| b == b'\n')),
        Some(Format::Copilot)
    );
    let fold = fold_bytes(Format::Copilot, &bytes);
    let s = fold.summary();
    // A's and B's shutdowns, then C's two messages and its compaction call.
    assert_eq!(
        figures(&s.lifetime),
        [
            400 + 1000 + 200 + 250,
            150 + 300 + 20 + 11 + 25 + 7,
            30 + 10,
            600 + 4000 + 50,
            20,
            2 + 3 + 1 + 3
        ]
    );
    // Not a per-field maximum over the processes: their sum.
    assert!(s.lifetime.usage.cache_read > 4000 && s.lifetime.usage.output > 300);
    assert_eq!(s.diagnostics.input_unknown, 3);
    let kinds: Vec<&str> = s.boundaries.iter().map(|b| b.kind.name()).collect();
    assert_eq!(kinds, ["compaction_complete", "compaction_complete"]);
    assert_eq!(s.boundaries[0].pre_tokens, Some(9000));
    // A's totals land at its shutdown, before the first compaction; B's at its shutdown, after
    // it; C's first message and compaction call before the second compaction, its last after.
    assert_eq!(figures(&s.generations[0]), [400, 150, 30, 600, 20, 2]);
    assert_eq!(
        figures(&s.generations[1]),
        [
            1000 + 200 + 250,
            300 + 20 + 11 + 25,
            10,
            4000 + 50,
            0,
            4 + 2
        ]
    );
    assert_eq!(figures(&s.generations[2]), [0, 7, 0, 0, 0, 1]);
    assert_eq!(s.since_compaction().usage.output, 7);
    assert_eq!(s.context, Some(0), "the latest line is after a compaction");
    let total: u64 = s.generations.iter().map(|g| g.usage.total()).sum();
    assert_eq!(total, s.lifetime.usage.total());
    // By model: gpt-5 holds B's shutdown figures and all of C's.
    let mut by_model: BTreeMap<String, u64> = BTreeMap::new();
    for ((_, model), tally) in fold.buckets() {
        let name = s.models.get(model as usize).cloned().unwrap_or_default();
        *by_model.entry(name).or_default() += tally.usage.output;
    }
    assert_eq!(by_model["gpt-5"], 20 + 11 + 25 + 7);
    assert_eq!(by_model["claude-sonnet-4.5"], 150 + 300);
}

fn options(cache: &Path) -> OpenOptions {
    OpenOptions {
        index_dir: Some(cache.to_path_buf()),
        load_dedup: true,
        ..OpenOptions::default()
    }
}

#[test]
fn a_shutdown_appended_later_replaces_what_its_process_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let whole = resumed_session();
    // Up to A's second message: A is still running.
    let cut = whole
        .split_inclusive(|&b| b == b'\n')
        .take(4)
        .map(<[u8]>::len)
        .sum::<usize>();
    std::fs::write(&path, &whole[..cut]).unwrap();
    let cache = dir.path().join("cache");
    let t = Transcript::open(&path, &options(&cache)).unwrap();
    assert_eq!(figures(&t.summary.lifetime), [0, 150, 0, 0, 0, 2]);
    assert_eq!(t.summary.diagnostics.input_unknown, 2);
    std::fs::write(&path, &whole).unwrap();
    let t = Transcript::open(&path, &options(&cache)).unwrap();
    assert_eq!(&t.summary, fold_bytes(Format::Copilot, &whole).summary());
    assert_eq!(t.summary.diagnostics.input_unknown, 3);
    // Every bucket the catch-up touched, summed, is the lifetime.
    let mut sum = agentlog::transcript::Tally::default();
    for (_, tally) in t.buckets().unwrap() {
        sum.add(&tally);
    }
    assert_eq!(sum, t.summary.lifetime);
}

/// The real files read plainly: each shutdown's figures added; without a shutdown, the
/// messages' `outputTokens`.
#[test]
fn the_real_files_add_up_to_their_plain_reading() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transcripts/copilot");
    for (file, input, output, read, messages, unknown) in [
        (
            "test_conversation_copilot.jsonl",
            186_809,
            2848,
            151_738,
            6,
            0,
        ),
        (
            "07c40cd0-ff51-4d6e-bdcd-ac2f90877203/events.jsonl",
            0,
            22_185,
            0,
            75,
            75,
        ),
    ] {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let (mut p_input, mut p_output, mut p_read, mut p_messages) = (0, 0, 0, 0);
        let mut shutdowns = 0;
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).unwrap();
            if v["type"] == "session.shutdown" {
                shutdowns += 1;
                for m in v["data"]["modelMetrics"].as_object().unwrap().values() {
                    p_input += m["usage"]["inputTokens"].as_u64().unwrap();
                    p_output += m["usage"]["outputTokens"].as_u64().unwrap();
                    p_read += m["usage"]["cacheReadTokens"].as_u64().unwrap();
                    p_messages += m["requests"]["count"].as_u64().unwrap();
                }
            }
        }
        if shutdowns == 0 {
            for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let v: Value = serde_json::from_slice(line).unwrap();
                if v["type"] == "assistant.message" {
                    p_output += v["data"]["outputTokens"].as_u64().unwrap();
                    p_messages += 1;
                }
            }
        }
        assert_eq!(
            (p_input, p_output, p_read, p_messages),
            (input, output, read, messages),
            "{file}: the plain reading"
        );
        let s = fold_bytes(Format::Copilot, &bytes).summary().clone();
        let u = &s.lifetime.usage;
        assert_eq!(
            (
                u.input + u.cache_read,
                u.output,
                u.cache_read,
                s.lifetime.messages
            ),
            (input, output, read, messages),
            "{file}"
        );
        assert_eq!(s.diagnostics.input_unknown, unknown, "{file}");
        // On the file with a shutdown, its messages' output is its shutdown's output: the
        // shutdown's `outputTokens` is the messages' own (reasoning is 0 there).
        if shutdowns == 1 {
            assert_eq!(u.output, 2848);
        }
    }
}

#[test]
fn a_file_without_token_fields_answers_zero_with_a_diagnostic() {
    let bytes = lines(&[
        event("session.start", "10:00", &json!({"sessionId": "s"})),
        event("user.message", "10:01", &json!({"content": "hi"})),
        event("assistant.message", "10:02", &json!({"content": "hello"})),
        event("assistant.message", "10:03", &json!({"content": "bye"})),
    ]);
    let fold = fold_bytes(Format::Copilot, &bytes);
    let s = fold.summary();
    assert!(s.lifetime.is_empty());
    assert_eq!(s.diagnostics.missing_usage, 2);
    assert_eq!(s.diagnostics.input_unknown, 0);
}

/// Every file under `dir`: (path, bytes, mtime).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
            }
            let bytes = if meta.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            out.push((path, bytes, meta.modified().unwrap()));
        }
    }
    out.sort();
    out
}

fn usage_by_session(home: &Path, cache: &Path, copilot_home: Option<&str>) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentlog"));
    cmd.args(["usage", "--by", "session", "--json"])
        .env("HOME", home)
        .env("AGENTLOG_CACHE_DIR", cache)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("COPILOT_HOME");
    if let Some(dirs) = copilot_home {
        cmd.env("COPILOT_HOME", dirs);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sessions_are_found_where_copilot_keeps_them_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let state = home.join(".copilot/session-state");
    std::fs::create_dir_all(state.join("sess-a")).unwrap();
    std::fs::write(state.join("sess-a/events.jsonl"), resumed_session()).unwrap();
    std::fs::write(state.join("sess-a/workspace.yaml"), "id: sess-a\n").unwrap();
    // Before 1.0: one file per session, named by its id.
    std::fs::write(
        state.join("sess-old.jsonl"),
        lines(&[event(
            "assistant.message",
            "09:00",
            &json!({"content": "x", "outputTokens": 5}),
        )]),
    )
    .unwrap();
    let before = snapshot(&home);
    let cache = dir.path().join("cache");
    let v = usage_by_session(&home, &cache, None);
    let rows: BTreeMap<String, (String, u64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["session"].as_str().unwrap().to_owned(),
                (
                    r["project"].as_str().unwrap().to_owned(),
                    r["output_tokens"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(rows["sess-a"], ("copilot".to_owned(), 513));
    assert_eq!(rows["sess-old"], ("copilot".to_owned(), 5));
    assert_eq!(rows.len(), 2);
    assert_eq!(v["totals"]["output_tokens"], 518);
    assert_eq!(
        snapshot(&home),
        before,
        "nothing changed beside the agent's files"
    );

    // COPILOT_HOME (a comma-separated list) replaces ~/.copilot.
    let other = dir.path().join("elsewhere");
    std::fs::create_dir_all(other.join("session-state/sess-b")).unwrap();
    std::fs::write(
        other.join("session-state/sess-b/events.jsonl"),
        resumed_session(),
    )
    .unwrap();
    let list = format!("{},{}", other.display(), home.join(".copilot").display());
    let v = usage_by_session(&home, &cache, Some(&list));
    assert_eq!(v["totals"]["output_tokens"], 513 + 518);
    let v = usage_by_session(&home, &cache, Some(other.to_str().unwrap()));
    assert_eq!(v["totals"]["output_tokens"], 513);
}
