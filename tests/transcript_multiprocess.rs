//! Several real processes on one transcript at once: each answers exactly what the transcript
//! holds, whether it builds the index, waits for nothing, or folds in memory beside the
//! process that holds the index.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_gen.rs"]
mod generate;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use agentlog::transcript::{Format, UsageFigures, fold_bytes};
use serde_json::Value;

fn spawn(transcript: &Path, cache: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["transcript", transcript.to_str().unwrap(), "--json"])
        .env("AGENTLOG_CACHE_DIR", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The answer equals one parse of the transcript as it is; returns the outcome.
fn check(out: &Output, bytes: &[u8]) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fold = fold_bytes(Format::ClaudeCode, bytes);
    let s = fold.summary();
    let figures = |t| serde_json::to_value(UsageFigures::new(Format::ClaudeCode, t)).unwrap();
    assert_eq!(v["lifetime"], figures(s.lifetime));
    assert_eq!(v["since_compaction"], figures(s.since_compaction()));
    assert_eq!(
        v["boundaries"].as_array().map(Vec::len),
        Some(s.boundaries.len())
    );
    assert_eq!(v["lines"], s.lines);
    match &v["index"] {
        Value::Object(o) => format!(
            "{}{}",
            o["outcome"].as_str().unwrap_or("?"),
            o.get("why")
                .map(|w| format!(" {}", w.as_str().unwrap_or("?")))
                .unwrap_or_default()
        ),
        other => panic!("no index outcome: {other}"),
    }
}

#[test]
fn a_process_holding_the_index_does_not_keep_another_from_the_right_answer() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    let cache = dir.path().join("cache");
    std::fs::write(
        &transcript,
        generate::transcript(Format::ClaudeCode, 1, 300),
    )
    .unwrap();
    let first = spawn(&transcript, &cache).wait_with_output().unwrap();
    assert_eq!(
        check(&first, &std::fs::read(&transcript).unwrap()),
        "created"
    );
    let v: Value = serde_json::from_slice(&first.stdout).unwrap();
    let index = v["index_path"].as_str().unwrap().to_owned();

    // This process holds the index for writing, as another agentlog would mid-commit.
    let held = redb::Builder::new()
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .create(&index)
        .unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    file.write_all(&generate::transcript(Format::ClaudeCode, 2, 40))
        .unwrap();
    let bytes = std::fs::read(&transcript).unwrap();
    let out = spawn(&transcript, &cache).wait_with_output().unwrap();
    assert_eq!(check(&out, &bytes), "read_only held_by_another_process");
    drop(held);
    let out = spawn(&transcript, &cache).wait_with_output().unwrap();
    assert_eq!(check(&out, &bytes), "caught_up");
}

#[test]
fn processes_started_together_all_answer_right() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    let cache = dir.path().join("cache");
    std::fs::write(
        &transcript,
        generate::transcript(Format::ClaudeCode, 3, 6000),
    )
    .unwrap();
    let mut outcomes = Vec::new();
    for round in 0..4u64 {
        let bytes = std::fs::read(&transcript).unwrap();
        let children: Vec<_> = (0..3).map(|_| spawn(&transcript, &cache)).collect();
        for child in children {
            outcomes.push(check(&child.wait_with_output().unwrap(), &bytes));
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&transcript)
            .unwrap();
        file.write_all(&generate::transcript(Format::ClaudeCode, 10 + round, 200))
            .unwrap();
    }
    // Whoever raced, the index ends current and right.
    let bytes = std::fs::read(&transcript).unwrap();
    let last = spawn(&transcript, &cache).wait_with_output().unwrap();
    let outcome = check(&last, &bytes);
    assert!(outcome == "caught_up" || outcome == "fresh", "{outcome}");
    let again = spawn(&transcript, &cache).wait_with_output().unwrap();
    assert_eq!(check(&again, &bytes), "fresh");
    eprintln!("outcomes seen: {outcomes:?}");
}
