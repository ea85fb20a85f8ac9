//! The status line of a transcript of any line format: `statusline` detects the format at
//! `transcript_path` (Codex, pi, Gemini CLI JSONL, GitHub Copilot CLI, Qwen Code, Kimi Code) and
//! answers the session's totals, its context and its usage since the latest compaction (where
//! the format records one) as the independent oracle counts them, on every vendored real file
//! of each format; `--transcript FILE` answers the same without Claude Code's JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::path::PathBuf;

use agentlog::transcript::{
    Format, StatusInput, StatusLine, StatusOptions, UsageFigures, statusline,
};
use oracle::Sum;
use serde_json::Value;

/// Each vendored file of `format`, copied alone into a directory of its own.
fn copies(format: Format, dir: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for (i, (path, f)) in fixtures::all().into_iter().enumerate() {
        if f != format {
            continue;
        }
        let copy = dir.join(format!("s{i}")).join(path.file_name().unwrap());
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(&path, &copy).unwrap();
        out.push((copy, std::fs::read(&path).unwrap()));
    }
    assert!(!out.is_empty(), "no vendored {} file", format.name());
    out
}

fn line_of(path: &std::path::Path, index: &std::path::Path) -> StatusLine {
    let input = StatusInput {
        transcript_path: path.to_path_buf(),
        ..StatusInput::default()
    };
    let options = StatusOptions {
        index_dir: Some(index.to_path_buf()),
        ..StatusOptions::default()
    };
    statusline(&input, &options).unwrap()
}

/// Every vendored file of `format`: the status line equals the oracle; returns how many
/// compactions the files record.
fn check(format: Format) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let mut boundaries = 0;
    for (path, bytes) in copies(format, dir.path()) {
        let e = oracle::expected(format, &bytes);
        // Twice: building the index, then from it.
        for _ in 0..2 {
            let line = line_of(&path, &dir.path().join("index"));
            let at = path.display();
            assert_eq!(line.session_total_tokens, e.lifetime.total, "{at}");
            assert_eq!(line.context_tokens, e.context, "{at}");
            assert_eq!(
                Sum::of(&line.since_compaction.tally),
                *e.generations.last().unwrap(),
                "{at}"
            );
            // The figures in the detected format's own names.
            let tally = line.since_compaction.tally;
            assert_eq!(
                line.since_compaction,
                UsageFigures::new(format, tally),
                "{at}"
            );
        }
        boundaries += e.boundaries.len();
    }
    boundaries
}

#[test]
fn codex() {
    check(Format::Codex);
}

#[test]
fn pi() {
    check(Format::Pi);
}

#[test]
fn gemini_jsonl() {
    check(Format::Gemini);
}

#[test]
fn copilot() {
    check(Format::Copilot);
}

#[test]
fn qwen() {
    check(Format::Qwen);
}

#[test]
fn kimi() {
    check(Format::Kimi);
}

/// Since-compaction where the format records compactions: the one vendored file that has
/// one (Kimi), and generated files of every format (compactions, replays, torn tails).
#[test]
fn since_compaction_on_generated_files_of_every_format() {
    assert!(check(Format::Kimi) > 0, "Kimi's vendored compaction");
    let dir = tempfile::tempdir().unwrap();
    let mut compacted = Vec::new();
    for format in [
        Format::Codex,
        Format::Pi,
        Format::Gemini,
        Format::Copilot,
        Format::Qwen,
        Format::Kimi,
    ] {
        for seed in 0..3u64 {
            let bytes = generate::transcript(format, 900 + seed, 120);
            let path = dir.path().join(format!("{}-{seed}/s.jsonl", format.name()));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
            let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let e = oracle::expected(format, &bytes[..end]);
            let line = line_of(&path, &dir.path().join("index"));
            let at = path.display();
            assert_eq!(line.session_total_tokens, e.lifetime.total, "{at}");
            assert_eq!(line.context_tokens, e.context, "{at}");
            let since = Sum::of(&line.since_compaction.tally);
            assert_eq!(since, *e.generations.last().unwrap(), "{at}");
            if !e.boundaries.is_empty() {
                compacted.push(format);
            }
        }
    }
    compacted.dedup();
    assert!(compacted.len() >= 4, "{compacted:?}");
}

fn agentlog(args: &[&str], stdin: Option<&[u8]>, home: &std::path::Path) -> (i32, Value) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("TZ", "UTC")
        .env("AGENTLOG_CACHE_DIR", home.join("cache"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        pipe.write_all(bytes).unwrap();
    }
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap(), json)
}

/// The CLI on a Codex rollout: `--transcript FILE` and Claude Code's JSON naming the same
/// file give the oracle's totals; the model is the one the rollout names.
#[test]
fn the_cli_answers_for_a_codex_rollout_with_or_without_the_hooks_json() {
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = copies(Format::Codex, dir.path()).pop().unwrap();
    let e = oracle::expected(Format::Codex, &bytes);
    let file = path.to_str().unwrap();
    let (code, flag) = agentlog(
        &["statusline", "--transcript", file, "--json"],
        None,
        dir.path(),
    );
    assert_eq!(code, 0);
    assert_eq!(flag["session_total_tokens"], e.lifetime.total);
    assert_ne!(flag["model"], "?");
    let input = serde_json::json!({"transcript_path": file}).to_string();
    let (code, hook) = agentlog(
        &["statusline", "--json"],
        Some(input.as_bytes()),
        dir.path(),
    );
    assert_eq!(code, 0);
    assert_eq!(hook["session_total_tokens"], e.lifetime.total);
    assert_eq!(hook["since_compaction"], flag["since_compaction"]);
}
