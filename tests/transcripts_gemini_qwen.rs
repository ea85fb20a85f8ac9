//! Gemini CLI and Qwen Code, beyond what every format is tested for (tests/transcripts.rs):
//! the older single-JSON Gemini sessions read as documents against the oracle, a resumed
//! `.json`/`.jsonl` pair and a subagent file counted in one session, each id once, a damaged
//! document skipped, and the agents' directories left as they were.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agentlog::transcript::{
    Format, GroupBy, OpenOptions, Transcript, TranscriptError, UsageOptions, UsageReport, usage,
};
use serde_json::Value;

fn open_options(cache: &Path) -> OpenOptions {
    OpenOptions {
        index_dir: Some(cache.to_path_buf()),
        load_dedup: true,
        ..OpenOptions::default()
    }
}

fn read_usage(paths: &[PathBuf], cache: &Path, by: GroupBy) -> UsageReport {
    let options = UsageOptions {
        open: OpenOptions {
            index_dir: Some(cache.to_path_buf()),
            ..OpenOptions::default()
        },
        by,
        snapshot: false,
        ..UsageOptions::default()
    };
    usage(paths, &options, &|_, _| {})
}

/// A document's messages as the lines of a JSONL transcript (the oracle reads those).
fn document_as_lines(doc: &[u8]) -> Vec<u8> {
    let v: Value = serde_json::from_slice(doc).expect("a document");
    let mut out = Vec::new();
    for m in v["messages"].as_array().expect("messages") {
        out.extend(serde_json::to_vec(m).unwrap());
        out.push(b'\n');
    }
    out
}

/// A plain reading of a document: every `gemini` message with tokens, its `total` by model.
fn totals_by_model(doc: &[u8]) -> BTreeMap<String, u64> {
    let v: Value = serde_json::from_slice(doc).expect("a document");
    let mut out = BTreeMap::new();
    for m in v["messages"].as_array().expect("messages") {
        if m["type"] == "gemini" && m["tokens"].is_object() {
            let model = m["model"].as_str().unwrap_or("").to_owned();
            *out.entry(model).or_default() += m["tokens"]["total"].as_u64().unwrap();
        }
    }
    out
}

#[test]
fn documents_count_as_the_oracle_says_per_file_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for path in fixtures::gemini_documents() {
        let (_tmp, copy) = fixtures::copy_to_temp(&path);
        let bytes = std::fs::read(&copy).unwrap();
        let t = Transcript::open(&copy, &open_options(&cache)).unwrap();
        assert_eq!(t.format, Format::Gemini);
        assert!(t.index.is_none(), "a document has no index");
        let observed = oracle::observed(&t.summary, t.buckets().expect("buckets"));
        assert_eq!(
            observed,
            oracle::gemini(&document_as_lines(&bytes)),
            "{}",
            path.display()
        );
        let mut by_model: BTreeMap<String, u64> = BTreeMap::new();
        for ((_, model), sum) in &observed.buckets {
            *by_model
                .entry(model.clone().unwrap_or_default())
                .or_default() += sum.total;
        }
        assert_eq!(by_model, totals_by_model(&bytes), "{}", path.display());
        assert!(t.lifetime().messages > 0);
    }
}

#[test]
fn a_rewritten_document_is_read_anew() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let path = fixtures::gemini_documents().remove(0);
    let (_tmp, copy) = fixtures::copy_to_temp(&path);
    let before = Transcript::open(&copy, &open_options(&cache)).unwrap();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&copy).unwrap()).unwrap();
    doc["messages"].as_array_mut().unwrap().push(serde_json::json!({
        "id": "added", "timestamp": "2025-10-11T13:05:00Z", "type": "gemini", "model": "gemini-2.5-pro",
        "tokens": {"input": 100, "output": 10, "cached": 40, "thoughts": 5, "tool": 2, "total": 117}
    }));
    std::fs::write(&copy, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let after = Transcript::open(&copy, &open_options(&cache)).unwrap();
    let (b, a) = (before.lifetime(), after.lifetime());
    assert_eq!(a.messages, b.messages + 1);
    assert_eq!(a.usage.total(), b.usage.total() + 117);
    assert_eq!(a.usage.input, b.usage.input + 100 - 40 + 2);
    assert_eq!(a.usage.cache_read, b.usage.cache_read + 40);
    assert_eq!(a.usage.output, b.usage.output + 15);
    assert_eq!(a.usage.reasoning, b.usage.reasoning + 5);
}

#[test]
fn a_damaged_document_is_refused_and_usage_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("g/tmp/proj/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let doc = std::fs::read(&fixtures::gemini_documents()[0]).unwrap();
    let torn = chats.join("session-2025-10-11T13-00-2d9ea14f.json");
    std::fs::write(&torn, &doc[..doc.len() / 2]).unwrap();
    let jsonl = fixtures::data_dir().join("qwen/qwen_code.jsonl");
    std::fs::copy(&jsonl, chats.join("other.jsonl")).unwrap();
    let cache = dir.path().join("cache");
    let err = Transcript::open(&torn, &open_options(&cache)).unwrap_err();
    assert!(matches!(err, TranscriptError::NotADocument { .. }), "{err}");
    let report = read_usage(&[dir.path().join("g")], &cache, GroupBy::Session);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert_eq!(report.skipped[0].path, torn.canonicalize().unwrap());
    assert_eq!(report.totals.usage.total(), 1125, "the rest still answers");
}

/// A Gemini CLI home: a legacy document, its resumed `.jsonl` (a copy of every message, same
/// ids, then one call of its own), another session with a subagent file, and a Qwen Code
/// project. Returns (the data dirs, the resumed session's expected total).
fn home(root: &Path) -> (PathBuf, PathBuf, u64) {
    let chats = root.join("gemini/tmp/proj/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let doc_path = &fixtures::gemini_documents()[0];
    let doc = std::fs::read(doc_path).unwrap();
    let name = "session-2025-10-11T13-00-2d9ea14f";
    std::fs::write(chats.join(format!("{name}.json")), &doc).unwrap();
    let mut resumed =
        br#"{"sessionId":"2d9ea14f-1e4e","projectHash":"ab14","startTime":"2025-10-11T13:00:34Z","lastUpdated":"2025-10-11T13:00:34Z","kind":"main"}"#.to_vec();
    resumed.push(b'\n');
    resumed.extend(document_as_lines(&doc));
    resumed.extend(br#"{"id":"own","timestamp":"2025-10-12T09:00:00Z","type":"gemini","model":"gemini-2.5-pro","tokens":{"input":1000,"output":20,"cached":600,"thoughts":30,"tool":0,"total":1050}}"#);
    resumed.push(b'\n');
    std::fs::write(chats.join(format!("{name}.jsonl")), &resumed).unwrap();
    let doc_total: u64 = totals_by_model(&doc).values().sum();
    let main = fixtures::data_dir().join("gemini/gemini.jsonl");
    std::fs::copy(&main, chats.join("session-2026-04-23T12-52-0ab84937.jsonl")).unwrap();
    let sub = chats.join("0ab84937-9fe7-4284-986a-33c832af0b6a");
    std::fs::create_dir_all(&sub).unwrap();
    let one = fixtures::data_dir().join("gemini/session-2026-04-28T15-09-887ba529.jsonl");
    std::fs::copy(&one, sub.join("887ba529-0020.jsonl")).unwrap();
    std::fs::write(root.join("gemini/tmp/proj/logs.json"), b"[]").unwrap();
    let qwen = root.join("qwen/projects/p/chats");
    std::fs::create_dir_all(&qwen).unwrap();
    std::fs::copy(
        fixtures::data_dir().join("qwen/qwen_code.jsonl"),
        qwen.join("69f0814a.jsonl"),
    )
    .unwrap();
    (root.join("gemini"), root.join("qwen"), doc_total + 1050)
}

#[test]
fn a_resumed_pair_and_a_subagent_file_each_count_in_one_session_each_id_once() {
    let dir = tempfile::tempdir().unwrap();
    let (gemini, qwen, resumed_total) = home(&dir.path().join("home"));
    let cache = dir.path().join("cache");
    let report = read_usage(&[gemini, qwen], &cache, GroupBy::Session);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.files.get("gemini"), Some(&4));
    assert_eq!(report.files.get("qwen"), Some(&1));
    let rows: BTreeMap<&str, u64> = report
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.tally.usage.total()))
        .collect();
    let main =
        oracle::gemini(&std::fs::read(fixtures::data_dir().join("gemini/gemini.jsonl")).unwrap());
    let sub = oracle::gemini(
        &std::fs::read(fixtures::data_dir().join("gemini/session-2026-04-28T15-09-887ba529.jsonl"))
            .unwrap(),
    );
    let want = BTreeMap::from([
        ("2d9ea14f", resumed_total),
        ("0ab84937", main.lifetime.total + sub.lifetime.total),
        ("69f0814a", 1125),
    ]);
    assert_eq!(rows, want);
    assert!(
        report.cross_file_duplicates > 0,
        "the pair's shared ids were merged"
    );
    for r in &report.rows {
        let u = &r.tally.usage;
        assert_eq!(
            u.input + u.output + u.cache_creation + u.cache_read,
            u.total()
        );
    }
}

/// Every file under `root`: its bytes and modification time.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
            }
            let bytes = if meta.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            out.insert(path, (bytes, meta.modified().unwrap()));
        }
    }
    out
}

#[test]
fn reading_leaves_the_agents_directories_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("home");
    let (gemini, qwen, _) = home(&root);
    let before = snapshot(&root);
    let cache = dir.path().join("cache");
    for by in [GroupBy::Session, GroupBy::Model] {
        let report = read_usage(&[gemini.clone(), qwen.clone()], &cache, by);
        assert!(report.totals.messages > 0);
    }
    for path in before.keys() {
        if path.is_file() {
            // Every file, document or not, read directly too.
            let _ = Transcript::open(path, &open_options(&cache));
        }
    }
    assert_eq!(snapshot(&root), before);
}
