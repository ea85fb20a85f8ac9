//! The agent surface of `usage`: `--by agent` rows, the `--agent` filter and every row's
//! `agent`, over a directory holding every format at once, against the naive oracle (each
//! agent's files read by its own rule, then added up by agent).
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentlog::transcript::{Format, GroupBy, OpenOptions, UsageOptions, usage};
use oracle::Sum;
use serde_json::Value;

/// A mixed tree: every vendored fixture, and generated files of every format.
fn tree(root: &Path) -> Vec<(PathBuf, Format)> {
    let mut out = Vec::new();
    for (i, (path, format)) in fixtures::all().into_iter().enumerate() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let to = root.join(format!("fixtures/{i:02}/{name}"));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&path, &to).unwrap();
        out.push((to, format));
    }
    // OpenCode keeps a database, not lines: its agent row is tested in transcript_opencode.rs.
    for format in Format::ALL.into_iter().filter(|f| f.is_lines()) {
        // The generator's Gemini ids repeat from seed to seed, and Gemini ids shared across
        // files merge (docs/TRANSCRIPTS.md): one generated Gemini file keeps files apart here.
        let seeds = if format == Format::Gemini { 0..1 } else { 0..2 };
        for seed in seeds {
            let to = root.join(format!("gen/{format}/{seed}/s.jsonl"));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(&to, generate::transcript(format, 50 + seed, 80)).unwrap();
            out.push((to, format));
        }
    }
    out
}

/// The oracle's totals by agent: Claude Code files as one stream in path order (a message
/// counted once across them), pi files one after the other, Codex and Kimi files one by one.
fn by_agent(files: &[(PathBuf, Format)]) -> BTreeMap<&'static str, Sum> {
    let mut sorted: Vec<(PathBuf, Format)> = files
        .iter()
        .map(|(p, f)| (std::fs::canonicalize(p).unwrap(), *f))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let (mut claude, mut pi) = (Vec::new(), Vec::new());
    let mut out: BTreeMap<&'static str, Sum> = BTreeMap::new();
    for (path, format) in &sorted {
        let bytes = std::fs::read(path).unwrap();
        match format {
            Format::ClaudeCode => claude.extend_from_slice(&bytes),
            Format::Pi => pi.push(bytes),
            other => out
                .entry(other.name())
                .or_default()
                .add(&oracle::expected(*other, &bytes).lifetime),
        }
    }
    out.entry("claude-code")
        .or_default()
        .add(&oracle::expected(Format::ClaudeCode, &claude).lifetime);
    let pi: Vec<&[u8]> = pi.iter().map(Vec::as_slice).collect();
    out.entry("pi")
        .or_default()
        .add(&oracle::pi_files(&pi).lifetime);
    out.retain(|_, t| !t.is_zero());
    out
}

fn options(cache: &Path, by: GroupBy, agents: Vec<Format>) -> UsageOptions {
    UsageOptions {
        open: OpenOptions {
            index_dir: Some(cache.to_path_buf()),
            ..OpenOptions::default()
        },
        by,
        agents,
        snapshot: false,
        ..UsageOptions::default()
    }
}

#[test]
fn rows_by_agent_and_the_agent_filter_agree_with_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let files = tree(&root);
    let want = by_agent(&files);
    let line_formats = Format::ALL.into_iter().filter(|f| f.is_lines()).count();
    assert_eq!(want.len(), line_formats, "every agent has usage");
    let cache = dir.path().join("cache");

    let report = usage(
        std::slice::from_ref(&root),
        &options(&cache, GroupBy::Agent, Vec::new()),
        &|_, _| {},
    );
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let got: BTreeMap<&str, Sum> = report
        .rows
        .iter()
        .map(|r| {
            assert_eq!(r.agents.len(), 1);
            assert_eq!(r.agents[0].name(), r.key);
            (r.agents[0].name(), Sum::of(&r.tally))
        })
        .collect();
    assert_eq!(got, want);

    // Each agent alone, and two together, grouped by day: the totals are the oracle's.
    let mut total = Sum::default();
    for format in Format::ALL.into_iter().filter(|f| f.is_lines()) {
        let report = usage(
            std::slice::from_ref(&root),
            &options(&cache, GroupBy::Day, vec![format]),
            &|_, _| {},
        );
        assert_eq!(Sum::of(&report.totals), want[format.name()], "{format}");
        assert!(report.rows.iter().all(|r| r.agents == [format]), "{format}");
        total.add(&Sum::of(&report.totals));
    }
    let all = usage(
        std::slice::from_ref(&root),
        &options(&cache, GroupBy::Day, Vec::new()),
        &|_, _| {},
    );
    assert_eq!(Sum::of(&all.totals), total, "the agents' parts add up");
    let pair = usage(
        std::slice::from_ref(&root),
        &options(&cache, GroupBy::Model, vec![Format::Kimi, Format::Codex]),
        &|_, _| {},
    );
    let mut both = want["kimi"];
    both.add(&want["codex"]);
    assert_eq!(Sum::of(&pair.totals), both);
}

fn agentlog(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(args)
        .env("HOME", home)
        .env("TZ", "UTC")
        .env("AGENTLOG_CACHE_DIR", home.join("cache"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("KIMI_DATA_DIR")
        .env_remove("XDG_CACHE_HOME")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_groups_filters_and_names_the_agent_of_every_row() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("t");
    let files = tree(&root);
    let want = by_agent(&files);
    let r = root.to_str().unwrap();

    let (code, out, err) = agentlog(home.path(), &["usage", r, "--by", "agent", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let got: BTreeMap<String, u64> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            assert!(row.get("agents").is_none() && row["agent"].is_string());
            (
                row["agent"].as_str().unwrap().to_owned(),
                row["total_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    let totals: BTreeMap<String, u64> = want
        .iter()
        .map(|(k, s)| ((*k).to_owned(), s.total))
        .collect();
    assert_eq!(got, totals);

    // Every row of another grouping names its agents.
    let (code, out, _) = agentlog(
        home.path(),
        &[
            "usage", r, "--by", "session", "--agent", "kimi", "--agent", "pi", "--json",
        ],
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        // The generated files of every format share session names: such a row is both.
        let mut names = row["agent"].as_str().unwrap().split(',');
        assert!(names.all(|n| n == "kimi" || n == "pi"), "{row}");
    }
    assert_eq!(
        v["totals"]["total_tokens"].as_u64().unwrap(),
        want["kimi"].total + want["pi"].total
    );
    let (code, out, _) = agentlog(home.path(), &["usage", r, "--by", "month", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    for row in v["rows"].as_array().unwrap() {
        let names: Vec<&str> = row["agent"].as_str().unwrap().split(',').collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "{row}");
        assert!(names.iter().all(|n| n.parse::<Format>().is_ok()), "{row}");
    }

    // The human table shows an agent column when rows hold several agents, not for one.
    let (code, out, _) = agentlog(home.path(), &["usage", r, "--by", "month"]);
    assert_eq!(code, 0);
    assert!(out.lines().next().unwrap().contains("agent"), "{out}");
    let (code, out, _) = agentlog(home.path(), &["usage", r, "--agent", "kimi"]);
    assert_eq!(code, 0);
    assert!(!out.lines().next().unwrap().contains("agent"), "{out}");

    // An agent that does not exist is bad input, as other bad arguments.
    let (code, out, err) = agentlog(home.path(), &["usage", r, "--agent", "kimmi", "--json"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("kimmi"), "{err}");

    // transcript --json names its agent.
    let kimi = files.iter().find(|(_, f)| *f == Format::Kimi).unwrap();
    let (code, out, err) = agentlog(
        home.path(),
        &["transcript", kimi.0.to_str().unwrap(), "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["agent"], "kimi");
}
