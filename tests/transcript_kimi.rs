//! Kimi Code CLI wire logs: the vendored real files against a plain reading of the rule
//! (every `usage.record` summed, the session-scope compaction call included and marking a
//! boundary, `step.end` echoes not counted), in pieces with torn tails, and found where Kimi
//! keeps them (its context files and state left alone, nothing written beside them).
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentlog::transcript::{Format, OpenOptions, Transcript, detect_format, fold_bytes};
use proptest::prelude::*;
use serde_json::Value;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures::data_dir().join("kimi").join(name)).unwrap()
}

/// The plain reading: (records, [inputOther, output, inputCacheRead, inputCacheCreation]) of
/// every `usage.record` line, and the same of the `step.end` echoes.
fn plain(bytes: &[u8]) -> ((u64, [u64; 4]), [u64; 4]) {
    let keys = [
        "inputOther",
        "output",
        "inputCacheRead",
        "inputCacheCreation",
    ];
    let (mut records, mut sum, mut echoes) = (0, [0u64; 4], [0u64; 4]);
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).unwrap();
        let add = |to: &mut [u64; 4], usage: &Value| {
            for (t, k) in to.iter_mut().zip(keys) {
                *t += usage[k].as_u64().unwrap();
            }
        };
        if v["type"] == "usage.record" {
            records += 1;
            add(&mut sum, &v["usage"]);
        } else if v["event"]["type"] == "step.end" {
            add(&mut echoes, &v["event"]["usage"]);
        }
    }
    ((records, sum), echoes)
}

#[test]
fn the_real_wire_logs_count_every_usage_record_and_the_compaction_call() {
    // What a reading of the files by hand gives (python over the same lines agrees).
    for (name, records, want, compaction) in [
        (
            "assistant_tools.jsonl",
            23,
            [30_174, 5_515, 661_504, 0],
            Some(197),
        ),
        ("subagent_agent-0.jsonl", 3, [12_905, 330, 28_416, 0], None),
    ] {
        let bytes = fixture(name);
        assert_eq!(
            detect_format(bytes.split(|&b| b == b'\n')),
            Some(Format::Kimi)
        );
        let ((n, sum), echoes) = plain(&bytes);
        assert_eq!((n, sum), (records, want), "{name}: the plain reading");
        let fold = fold_bytes(Format::Kimi, &bytes);
        let s = fold.summary();
        let u = &s.lifetime.usage;
        assert_eq!(
            [u.input, u.output, u.cache_read, u.cache_creation],
            want,
            "{name}"
        );
        assert_eq!(s.lifetime.messages, records, "{name}");
        assert_eq!(u.total(), want.iter().sum::<u64>(), "{name}: it adds up");
        assert_eq!(
            oracle::observed(s, fold.buckets().map(|(k, t)| (k, *t))),
            oracle::expected(Format::Kimi, &bytes),
            "{name}: the oracle"
        );
        assert!(s.models.iter().all(|m| m == "moonshot-ai/kimi-k2.7-code"));
        assert_eq!(
            s.diagnostics.invalid_timestamps, 0,
            "{name}: epoch-ms times"
        );
        if let Some(line) = compaction {
            // The compaction call is the one record step.end does not echo: a reader of
            // the echoes, or of turn-scope records only, misses it.
            let missed: Vec<u64> = want.iter().zip(echoes).map(|(a, b)| a - b).collect();
            assert_eq!(missed, [1_411, 937, 40_960, 0], "{name}");
            assert_eq!(s.boundaries.len(), 1);
            let b = &s.boundaries[0];
            assert_eq!((b.line, b.kind.name()), (line, "session_usage_record"));
            // It is the last record: it ends the first generation, nothing since.
            assert_eq!(s.generations[0].usage.total(), u.total());
            assert!(s.since_compaction().is_empty());
            assert_eq!(s.context, Some(0));
        } else {
            assert_eq!(echoes, want, "{name}: every record echoed");
            assert!(s.boundaries.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The real wire log appended in random pieces (torn lines included) answers, after each
    /// catch-up, what the oracle says of its complete lines.
    #[test]
    fn the_real_log_appended_in_pieces_agrees_with_the_oracle(
        cuts in prop::collection::vec(0u16..1000, 1..8),
    ) {
        let whole = fixture("assistant_tools.jsonl");
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| whole.len() * usize::from(c) / 1000).collect();
        cuts.push(whole.len());
        cuts.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wire.jsonl");
        let mut file = std::fs::File::create(&path).unwrap();
        let options = OpenOptions {
            index_dir: Some(dir.path().join("cache")),
            format: Some(Format::Kimi),
            load_dedup: true,
            ..OpenOptions::default()
        };
        let mut written = 0;
        for cut in cuts {
            file.write_all(&whole[written..cut]).unwrap();
            written = cut;
            let Ok(t) = Transcript::open(&path, &options) else {
                prop_assert!(!whole[..cut].contains(&b'\n'));
                continue;
            };
            let complete = whole[..cut].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let observed = oracle::observed(&t.summary, t.buckets().unwrap_or_default());
            prop_assert_eq!(observed, oracle::expected(Format::Kimi, &whole[..complete]));
        }
    }
}

/// Every file under `dir`: its bytes and modification time.
fn listing(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
                out.insert(path.clone(), (std::fs::read(&path).unwrap(), modified));
            }
        }
    }
    out
}

fn put(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn usage_json(home: &Path, kimi_data_dir: Option<&Path>, args: &[&str]) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentlog"));
    cmd.arg("usage")
        .args(args)
        .arg("--json")
        .env("HOME", home)
        .env("TZ", "UTC")
        .env("AGENTLOG_CACHE_DIR", home.join("cache"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("KIMI_DATA_DIR")
        .env_remove("XDG_CACHE_HOME");
    if let Some(dir) = kimi_data_dir {
        cmd.env("KIMI_DATA_DIR", format!(" ,{}", dir.display()));
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Session rows as (project, session) -> total tokens.
fn sessions(v: &Value) -> BTreeMap<(String, String), u64> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = (
                r["project"].as_str().unwrap().to_owned(),
                r["session"].as_str().unwrap().to_owned(),
            );
            (key, r["total_tokens"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn usage_finds_both_layouts_leaves_context_and_state_files_alone_and_writes_nothing_there() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let main = fixture("assistant_tools.jsonl");
    let sub = fixture("subagent_agent-0.jsonl");
    let state = fixture("assistant_tools.state.json");
    let total = |b: &[u8]| plain(b).0.1.iter().sum::<u64>();
    // Kimi CLI: <group>/<session>/wire.jsonl, with the model's context beside it.
    let old = h.join(".kimi/sessions/3f2a/7c1d");
    put(&old.join("wire.jsonl"), &sub);
    put(
        &old.join("context.jsonl"),
        b"{\"role\":\"_checkpoint\",\"id\":0}\n{\"role\":\"_usage\",\"token_count\":9}\n",
    );
    put(
        &old.join("context_1.jsonl"),
        b"{\"role\":\"user\",\"content\":\"hi\"}\n",
    );
    // Kimi Code: the main agent's and a subagent's wire logs belong to one session.
    let code = h.join(".kimi-code/sessions/wd_project_ac3b/session_1bcb");
    put(&code.join("agents/main/wire.jsonl"), &main);
    put(&code.join("agents/agent-0/wire.jsonl"), &sub);
    put(&code.join("state.json"), &state);
    let kimi_dirs = [h.join(".kimi"), h.join(".kimi-code")];
    let before: Vec<_> = kimi_dirs.iter().map(|d| listing(d)).collect();

    let v = usage_json(h, None, &["--by", "session"]);
    assert_eq!(
        v["skipped"],
        serde_json::json!([]),
        "context files are not transcripts"
    );
    assert_eq!(v["files"]["kimi"], 3);
    let want = BTreeMap::from([
        (("3f2a".to_owned(), "7c1d".to_owned()), total(&sub)),
        (
            ("project_ac3b".to_owned(), "1bcb".to_owned()),
            total(&main) + total(&sub),
        ),
    ]);
    assert_eq!(sessions(&v), want);
    assert_eq!(v["totals"]["total_tokens"], total(&main) + 2 * total(&sub));
    // By day: the epoch-ms times put every record on a day (2026-08-01 UTC).
    let days = usage_json(h, None, &[]);
    let rows = days["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["day"], "2026-08-01");

    // KIMI_DATA_DIR (a comma-separated list) replaces ~/.kimi; Kimi Code's directory stays.
    let moved = tempfile::tempdir().unwrap();
    put(&moved.path().join("sessions/g/s9/wire.jsonl"), &main);
    let v = usage_json(h, Some(moved.path()), &["--by", "session"]);
    let got = sessions(&v);
    assert_eq!(
        got.get(&("g".to_owned(), "s9".to_owned())),
        Some(&total(&main))
    );
    assert!(!got.contains_key(&("3f2a".to_owned(), "7c1d".to_owned())));
    assert_eq!(got.len(), 2);

    let after: Vec<_> = kimi_dirs.iter().map(|d| listing(d)).collect();
    assert_eq!(
        before, after,
        "nothing created, changed or deleted beside the logs"
    );
}
