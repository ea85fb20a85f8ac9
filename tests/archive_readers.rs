//! Every reader sees the archive: a home with Claude Code (a session with subagents) and Codex
//! transcripts, archived, then some deleted and some shortened. `usage` and `transcript` answer
//! as they did on the originals (the oracle: their answers before the deletion), a message
//! held by both an original and the archive counts once, `--no-archive` reads the originals
//! alone, the warm run stays warm, and nothing is written beside the transcripts.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/transcripts");
const SESSION: &str = "258c7280-ae70-4798-800f-63464d01a85d";
const ROLLOUTS: [&str; 3] = [
    "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
    "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
    "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
];

struct Place {
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    codex: PathBuf,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn home() -> Place {
    let root = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(root.path()).unwrap().join("home");
    let project = home.join(".claude/projects/-work-proj");
    let codex = home.join(".codex/sessions/2026/02/23");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&codex).unwrap();
    let claude = Path::new(DATA).join("claude-code");
    std::fs::copy(
        claude.join(format!("{SESSION}.jsonl")),
        project.join(format!("{SESSION}.jsonl")),
    )
    .unwrap();
    copy_dir(&claude.join(SESSION), &project.join(SESSION));
    std::fs::copy(
        claude.join("agentlogs-crud.jsonl"),
        project.join("crud.jsonl"),
    )
    .unwrap();
    for r in ROLLOUTS {
        std::fs::copy(Path::new(DATA).join("codex").join(r), codex.join(r)).unwrap();
    }
    Place {
        _root: root,
        home,
        project,
        codex,
    }
}

impl Place {
    fn run_with(&self, data: &str, args: &[&str]) -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("TZ", "UTC")
            .env("AGENTLOG_DATA_DIR", self.home.join(data))
            .env("AGENTLOG_CACHE_DIR", self.home.join("cache"))
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        self.json_with("data", args)
    }

    fn json_with(&self, data: &str, args: &[&str]) -> Value {
        let out = self.run_with(data, args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Every file under the agents' folders: path, bytes, modification time.
    fn listing(&self) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
        let mut out = listing_of(&self.home.join(".claude"));
        out.extend(listing_of(&self.home.join(".codex")));
        out
    }
}

/// Every file under `dir`: path, bytes, modification time, sorted.
fn listing_of(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>, std::time::SystemTime)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                walk(&e.path(), out);
            } else {
                out.push((
                    e.path(),
                    std::fs::read(e.path()).unwrap(),
                    meta.modified().unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// What two usage answers must agree on: the rows and the totals.
fn answer(usage: &Value) -> (Value, Value) {
    (usage["rows"].clone(), usage["totals"].clone())
}

/// Cuts a file to the first half of its lines.
fn shorten(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let cut = ends[ends.len() / 2];
    std::fs::write(path, &bytes[..cut]).unwrap();
}

#[test]
fn readers_answer_from_the_archive_as_they_did_from_the_originals() {
    let h = home();
    let by = ["day", "session", "model"];
    let oracle: Vec<Value> = by
        .iter()
        .map(|b| h.json(&["usage", "--json", "--no-archive", "--by", b]))
        .collect();
    // A session folder beside its file (`a/b/...` and `a/b.jsonl`): the second run is warm.
    let warm = h.json(&["usage", "--json", "--no-archive", "--by", "day"]);
    assert_eq!(
        warm["snapshot"]["outcome"], "current",
        "{}",
        warm["snapshot"]
    );
    let main = h.project.join(format!("{SESSION}.jsonl"));
    let transcript_oracle = h.json(&[
        "transcript",
        main.to_str().unwrap(),
        "--json",
        "--subagents",
    ]);
    let search = |h: &Place, extra: &[&str]| {
        let mut args = vec![
            "search",
            "--transcripts",
            "--json",
            "--limit",
            "50",
            "latest migration",
        ];
        args.extend_from_slice(extra);
        h.json(&args)
    };
    let search_oracle = search(&h, &[]);
    assert!(!search_oracle["hits"].as_array().unwrap().is_empty());
    let gone_rollout = h.codex.join(ROLLOUTS[0]);
    let export = |h: &Place, out: &str, extra: &[&str]| {
        let out = h.home.join(out);
        let mut args = vec![
            "export",
            gone_rollout.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
        ];
        args.extend_from_slice(extra);
        h.run_with("data", &args)
    };
    let export_oracle: Value =
        serde_json::from_slice(&export(&h, "out-before", &[]).stdout).unwrap();
    let archived = h.json(&["archive", "--json"]);
    assert_eq!(archived["new_sources"], 7, "{archived}");

    // Gone: the Claude Code session with its subagents, and a Codex rollout; shortened: a
    // Claude Code transcript and a Codex rollout.
    std::fs::remove_file(&main).unwrap();
    std::fs::remove_dir_all(h.project.join(SESSION)).unwrap();
    std::fs::remove_file(h.codex.join(ROLLOUTS[0])).unwrap();
    shorten(&h.project.join("crud.jsonl"));
    shorten(&h.codex.join(ROLLOUTS[1]));
    let before = h.listing();

    for (b, expected) in by.iter().zip(&oracle) {
        let got = h.json(&["usage", "--json", "--by", b]);
        assert_eq!(answer(&got), answer(expected), "--by {b}");
        assert_eq!(got["archive_only_sessions"], 2, "--by {b}");
        // The shortened Claude Code transcript's messages are in both: each counted once.
        assert!(got["cross_file_duplicates"].as_u64().unwrap() > 0, "{got}");
    }
    // Warm: the second run answers from the snapshot, the copies untouched.
    let copies = h.home.join("cache/transcripts/archived");
    let copies_before = listing_of(&copies);
    assert_eq!(copies_before.len(), 6, "{copies_before:?}");
    let again = h.json(&["usage", "--json", "--by", "session"]);
    assert_eq!(
        again["snapshot"]["outcome"], "current",
        "{}",
        again["snapshot"]
    );
    assert_eq!(answer(&again), answer(&oracle[1]));
    assert_eq!(listing_of(&copies), copies_before);

    // --no-archive: the originals alone, as with an empty archive.
    let originals = h.json(&["usage", "--json", "--no-archive", "--by", "session"]);
    let empty = h.json_with("no-data", &["usage", "--json", "--by", "session"]);
    assert_eq!(answer(&originals), answer(&empty));
    assert_ne!(answer(&originals), answer(&oracle[1]));
    assert_eq!(originals["archive_only_sessions"], 0);
    // Toggling does not make either rebuild its snapshot.
    let again = h.json(&["usage", "--json", "--by", "session"]);
    assert_eq!(
        again["snapshot"]["outcome"], "current",
        "{}",
        again["snapshot"]
    );
    let originals = h.json(&["usage", "--json", "--no-archive", "--by", "session"]);
    assert_eq!(originals["snapshot"]["outcome"], "current");

    // transcript PATH of the gone file answers from the archive, subagents too.
    let report = h.json(&[
        "transcript",
        main.to_str().unwrap(),
        "--json",
        "--subagents",
    ]);
    assert_eq!(report["from_archive"], 1);
    assert_eq!(report["path"], transcript_oracle["path"]);
    for field in [
        "lifetime",
        "lifetime_with_subagents",
        "since_compaction",
        "lines",
        "models",
        "covered_bytes",
    ] {
        assert_eq!(report[field], transcript_oracle[field], "{field}");
    }
    assert_eq!(transcript_oracle["from_archive"], Value::Null);
    let refused = h.run_with(
        "data",
        &[
            "transcript",
            main.to_str().unwrap(),
            "--json",
            "--no-archive",
        ],
    );
    assert!(!refused.status.success());

    // search --transcripts finds the gone session's lines, named by their original path.
    let found = search(&h, &[]);
    let hits = found["hits"].as_array().unwrap();
    let expected = search_oracle["hits"].as_array().unwrap();
    assert_eq!(hits.len(), expected.len(), "{found}");
    for (got, want) in hits.iter().zip(expected) {
        for field in ["file", "line", "offset", "session", "snippet", "generation"] {
            assert_eq!(got[field], want[field], "{field}");
        }
        let gone = !Path::new(want["file"].as_str().unwrap()).exists();
        assert_eq!(got["archived"] == 1, gone, "{got}");
    }
    let without = search(&h, &["--no-archive"]);
    let gone_hits = expected
        .iter()
        .filter(|w| !Path::new(w["file"].as_str().unwrap()).exists())
        .count();
    assert!(gone_hits > 0);
    assert_eq!(
        without["hits"].as_array().unwrap().len(),
        expected.len() - gone_hits
    );

    // export takes the gone rollout from the archive: the same rows, its log the copy.
    let exported = export(&h, "out-after", &[]);
    assert!(exported.status.success(), "{exported:?}");
    let exported: Value = serde_json::from_slice(&exported.stdout).unwrap();
    let (got, want) = (&exported["sources"][0], &export_oracle["sources"][0]);
    assert_eq!(got["source_id"], want["source_id"]);
    assert_eq!(got["rows"], want["rows"]);
    assert!(want["rows"].as_u64().unwrap() > 0);
    assert!(
        got["log"].as_str().unwrap().contains("/archived/v1/"),
        "{got}"
    );
    assert!(!export(&h, "out-none", &["--no-archive"]).status.success());

    // Nothing was written beside the transcripts.
    assert_eq!(h.listing(), before);
}

/// `transcript PATH` of a file now shorter than its archived version (cut to half its lines)
/// answers the archived version, whose lines the file no longer holds (as `usage` reads them):
/// its figures equal the report of the whole file before the cut; `--no-archive` answers the
/// short file alone, and a file as long as its archived version is answered as it is.
#[test]
fn transcript_of_a_shorter_file_answers_the_archived_lines() {
    let h = home();
    let main = h.project.join(format!("{SESSION}.jsonl"));
    let path = main.to_str().unwrap();
    let whole = h.json(&["transcript", path, "--json", "--no-archive"]);
    let archived = h.run_with("data", &["archive", path]);
    assert!(archived.status.success(), "{archived:?}");
    let same = h.json(&["transcript", path, "--json"]);
    assert_eq!(same["from_archive"], Value::Null);
    assert_eq!(same["lifetime"], whole["lifetime"]);
    shorten(&main);
    let short = h.json(&["transcript", path, "--json", "--no-archive"]);
    assert_eq!(short["from_archive"], Value::Null);
    assert!(short["lines"].as_u64() < whole["lines"].as_u64());
    let report = h.json(&["transcript", path, "--json"]);
    assert_eq!(report["from_archive"], 1);
    assert_eq!(report["path"], whole["path"]);
    for field in [
        "lifetime",
        "since_compaction",
        "lines",
        "models",
        "covered_bytes",
    ] {
        assert_eq!(report[field], whole[field], "{field}");
    }
    let text = h.run_with("data", &["transcript", path]);
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("(the file is shorter now)"), "{text}");
}
