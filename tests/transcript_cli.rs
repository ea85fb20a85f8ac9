//! `agentlog transcript`: the JSON shape, the cache directory's environment variables, the
//! human table, and typed errors with the CLI's exit codes.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use agentlog::transcript::{Format, fold_bytes};
use serde_json::Value;

fn agentlog(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentlog"));
    cmd.args(args)
        .env_remove("AGENTLOG_CACHE_DIR")
        .env_remove("XDG_CACHE_HOME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn the_json_has_the_issues_shape_in_each_formats_own_names() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for (path, format) in fixtures::all() {
        let (_tmp, copy) = fixtures::copy_to_temp(&path);
        let bytes = std::fs::read(&copy).unwrap();
        let fold = fold_bytes(format, &bytes);
        let summary = fold.summary();
        let out = agentlog(
            &["transcript", s(&copy), "--json"],
            &[("AGENTLOG_CACHE_DIR", &cache)],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json(&out);
        assert_eq!(v["format"], format.name());
        assert_eq!(v["index_outcome"], "created");
        let boundaries = v["boundaries"].as_array().unwrap();
        assert_eq!(boundaries.len(), summary.boundaries.len());
        for (b, expected) in boundaries.iter().zip(&summary.boundaries) {
            assert_eq!(b["offset"], expected.offset);
            assert_eq!(b["line"], expected.line);
            assert_eq!(b["kind"], expected.kind.name());
            assert!(b.get("trigger").is_some() && b.get("pre_tokens").is_some());
        }
        let generations = v["generations"].as_array().unwrap();
        assert_eq!(generations.len(), boundaries.len() + 1);
        assert_eq!(generations[0]["offset"], 0);
        for (g, b) in generations[1..].iter().zip(boundaries) {
            assert_eq!(g["offset"], b["offset"]);
        }
        assert_eq!(v["since_compaction"], generations.last().unwrap()["usage"]);
        let names: Vec<&str> = match format {
            Format::ClaudeCode => vec![
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "total_tokens",
                "messages",
            ],
            Format::Codex => vec![
                "input_tokens",
                "cached_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
                "total_tokens",
                "usage_events",
            ],
            Format::Pi => vec![
                "input",
                "output",
                "cacheRead",
                "cacheWrite",
                "totalTokens",
                "cost_total",
                "messages",
            ],
            Format::Copilot => vec![
                "inputTokens",
                "outputTokens",
                "cacheReadTokens",
                "cacheWriteTokens",
                "reasoningTokens",
                "requests",
            ],
            Format::Gemini => vec![
                "input_and_tool",
                "cached",
                "output_and_thoughts",
                "thoughts",
                "total",
                "messages",
            ],
            Format::Qwen => vec![
                "promptTokenCount",
                "candidatesTokenCount",
                "thoughtsTokenCount",
                "cachedContentTokenCount",
                "totalTokenCount",
                "messages",
            ],
            Format::OpenCode => unreachable!("these fixtures are line transcripts"),
            Format::Kimi => vec![
                "inputOther",
                "output",
                "inputCacheRead",
                "inputCacheCreation",
                "usage_records",
            ],
        };
        let mut keys: Vec<&str> = v["lifetime"]["native"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut want = names.clone();
        want.sort_unstable();
        assert_eq!(keys, want, "{format}");
        let native = &v["lifetime"]["native"];
        // Kimi Code records no total of its own; Copilot's input includes the cache read.
        if format != Format::Kimi {
            let total = if format == Format::Copilot {
                ["inputTokens", "outputTokens", "cacheWriteTokens"]
                    .iter()
                    .map(|k| native[*k].as_u64().unwrap())
                    .sum::<u64>()
            } else {
                native[names[4]].as_u64().unwrap()
            };
            assert_eq!(total, summary.lifetime.usage.total());
        }
        assert_eq!(
            v["lifetime"]["total_tokens"],
            summary.lifetime.usage.total()
        );
        let again = json(&agentlog(
            &["transcript", s(&copy), "--json"],
            &[("AGENTLOG_CACHE_DIR", &cache)],
        ));
        assert_eq!(again["index_outcome"], "fresh");
        assert_eq!(again["lifetime"], v["lifetime"]);
    }
}

#[test]
fn the_cache_directory_follows_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    std::fs::write(&transcript, generate::transcript(Format::Pi, 1, 20)).unwrap();
    let index_of = |out: &Output| json(out)["index_path"].as_str().unwrap().to_owned();
    let own = dir.path().join("own");
    let out = agentlog(
        &["transcript", s(&transcript), "--json"],
        &[("AGENTLOG_CACHE_DIR", &own), ("HOME", dir.path())],
    );
    assert!(index_of(&out).starts_with(own.join("transcripts").to_str().unwrap()));
    let xdg = dir.path().join("xdg");
    let out = agentlog(
        &["transcript", s(&transcript), "--json"],
        &[("XDG_CACHE_HOME", &xdg), ("HOME", dir.path())],
    );
    assert!(index_of(&out).starts_with(xdg.join("agentlog/transcripts").to_str().unwrap()));
    let out = agentlog(
        &["transcript", s(&transcript), "--json"],
        &[("HOME", dir.path())],
    );
    assert!(
        index_of(&out).starts_with(
            dir.path()
                .join(".cache/agentlog/transcripts")
                .to_str()
                .unwrap()
        )
    );
    let flag = dir.path().join("flag");
    let out = agentlog(
        &[
            "transcript",
            s(&transcript),
            "--json",
            "--index-dir",
            s(&flag),
        ],
        &[("AGENTLOG_CACHE_DIR", &own)],
    );
    assert!(index_of(&out).starts_with(flag.to_str().unwrap()));
    for d in [
        own.clone(),
        own.join("transcripts"),
        xdg.join("agentlog"),
        dir.path().join(".cache"),
    ] {
        assert_eq!(
            std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700,
            "{d:?}"
        );
    }
}

#[test]
fn subagents_and_the_human_table() {
    let data = fixtures::data_dir().join("claude-code");
    let dir = tempfile::tempdir().unwrap();
    let session = "258c7280-ae70-4798-800f-63464d01a85d";
    let main = dir.path().join(format!("{session}.jsonl"));
    std::fs::copy(data.join(format!("{session}.jsonl")), &main).unwrap();
    let subs = dir.path().join(session).join("subagents");
    std::fs::create_dir_all(&subs).unwrap();
    for e in std::fs::read_dir(data.join(session).join("subagents")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, subs.join(p.file_name().unwrap())).unwrap();
    }
    let cache = dir.path().join("cache");
    let env = [("AGENTLOG_CACHE_DIR", cache.as_path())];
    let v = json(&agentlog(
        &["transcript", s(&main), "--json", "--subagents"],
        &env,
    ));
    assert_eq!(v["subagents"].as_array().unwrap().len(), 2);
    let with = v["lifetime_with_subagents"]["total_tokens"]
        .as_u64()
        .unwrap();
    assert!(with > v["lifetime"]["total_tokens"].as_u64().unwrap());
    let out = agentlog(&["transcript", s(&main), "--subagents"], &env);
    let table = String::from_utf8(out.stdout).unwrap();
    for want in [
        "compact_boundary",
        "lifetime",
        "+subagents",
        "cache_read_input_tokens",
        "since the latest compaction",
        "subagent ",
    ] {
        assert!(table.contains(want), "{want} missing from:\n{table}");
    }
    let codex = fixtures::data_dir().join("codex/agentlogs-crud.jsonl");
    let (_tmp, codex) = fixtures::copy_to_temp(&codex);
    let out = agentlog(&["transcript", s(&codex), "--json", "--subagents"], &env);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["error"], "bad_input");
}

#[test]
fn bad_paths_and_files_are_typed_errors_with_the_clis_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let env = [("AGENTLOG_CACHE_DIR", cache.as_path())];
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    let torn = dir.path().join("torn.jsonl");
    std::fs::write(&torn, br#"{"type":"session","version":3"#).unwrap();
    let foreign = dir.path().join("foreign.jsonl");
    std::fs::write(&foreign, b"{\"hello\":\"world\"}\n[1,2,3]\nnot json\n").unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let cases: [(&Path, &str, i32); 6] = [
        (dir.path(), "not_a_file", 1),
        (&dir.path().join("missing.jsonl"), "no_transcript", 4),
        (&file.join("below-a-file.jsonl"), "io_error", 1),
        (&empty, "empty_transcript", 2),
        (&torn, "empty_transcript", 2),
        (&foreign, "unknown_format", 2),
    ];
    for (path, code, exit) in cases {
        let out = agentlog(&["transcript", s(path), "--json"], &env);
        assert_eq!(out.status.code(), Some(exit), "{code}");
        let v = json(&out);
        assert_eq!(v["error"], code);
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));
        let human = agentlog(&["transcript", s(path)], &env);
        assert_eq!(human.status.code(), Some(exit));
        assert!(human.stdout.is_empty());
        assert!(String::from_utf8_lossy(&human.stderr).starts_with("agentlog: "));
    }
    // A format given on the command line reads a file detection would not.
    let out = agentlog(
        &["transcript", s(&foreign), "--json", "--format", "pi"],
        &env,
    );
    assert!(out.status.success());
    assert_eq!(json(&out)["lifetime"]["messages"], 0);
    assert!(!cache.join("transcripts").read_dir().unwrap().any(|e| {
        e.unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "unsynced")
    }));
}

#[test]
fn a_reader_that_goes_away_ends_transcript_json_quietly() {
    // `agentlog transcript --json ... | head`: the document goes through a buffered writer.
    let Some((path, _)) = fixtures::all().into_iter().next() else {
        eprintln!("skipped: no transcript fixtures");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_tmp, copy) = fixtures::copy_to_temp(&path);
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["transcript", s(&copy), "--json"])
        .env("AGENTLOG_CACHE_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("failed"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn a_rebuilt_index_is_reported_as_rebuilt_and_nothing_else() {
    // A rewritten transcript's index is rebuilt into a new file; the old handle is given up
    // without a close, which is no failure and must not be reported as one.
    let Some((path, _)) = fixtures::all().into_iter().next() else {
        eprintln!("skipped: no transcript fixtures");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (_tmp, copy) = fixtures::copy_to_temp(&path);
    let first = agentlog(&["transcript", s(&copy)], &[("AGENTLOG_CACHE_DIR", &cache)]);
    assert!(first.status.success());
    let mut bytes = std::fs::read(&copy).unwrap();
    let at = bytes.windows(6).position(|w| w == b"\"type\"").unwrap();
    bytes[at + 1] = b'T';
    std::fs::write(&copy, &bytes).unwrap();
    let out = agentlog(&["transcript", s(&copy)], &[("AGENTLOG_CACHE_DIR", &cache)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("rebuilt"), "{stderr}");
    assert!(
        !stderr.contains("failed") && !stderr.contains("panic"),
        "{stderr}"
    );
}
