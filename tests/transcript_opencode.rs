//! `OpenCode`: the real database's totals per session and per model against an oracle reading
//! the rows straight from a copy with SQLite (WAL-only rows included); the directory left
//! byte-identical by `transcript` and `usage`, with and without `-wal`/`-shm`; a damaged
//! database skipped with its reason; the older JSON storage against the same oracle.
#![cfg(all(feature = "opencode", feature = "cli"))]
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentlog::transcript::{OpenCodeReport, Usage, read_opencode};
use serde_json::Value;

const REAL: &str = "tests/data/transcripts/opencode/JulesGuiCs-dda98e9";

/// The oracle's figures: input, output (reasoning included), reasoning, cache read, cache
/// write, cost in dollars, messages.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Sum {
    input: u64,
    output: u64,
    reasoning: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
    messages: u64,
}

impl Sum {
    fn of(u: &Usage, cost: f64, messages: u64) -> Sum {
        Sum {
            input: u.input,
            output: u.output,
            reasoning: u.reasoning,
            cache_read: u.cache_read,
            cache_write: u.cache_creation,
            cost,
            messages,
        }
    }
}

/// Copies the real database's files into a fresh directory (`with`: which of the three).
fn real_copy(with: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in with {
        std::fs::copy(Path::new(REAL).join(name), dir.path().join(name)).unwrap();
    }
    dir
}

/// A plain reading of the rule: every `message` row whose data says `role: assistant`, each id
/// once, its tokens summed (output + reasoning as output), per session and per model. Read
/// with SQLite on a copy (which may write beside the copy: it is ours).
fn oracle(files: &[&str]) -> (BTreeMap<String, Sum>, BTreeMap<String, Sum>) {
    let dir = real_copy(files);
    let conn = rusqlite::Connection::open(dir.path().join("opencode.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, session_id, data FROM message")
        .unwrap();
    let rows: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    oracle_of(
        rows.iter()
            .map(|(i, s, d)| (i.as_str(), s.as_str(), d.as_str())),
    )
}

fn oracle_of<'a>(
    rows: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
) -> (BTreeMap<String, Sum>, BTreeMap<String, Sum>) {
    let mut seen = std::collections::HashSet::new();
    let (mut sessions, mut models) = (BTreeMap::new(), BTreeMap::new());
    for (id, session, data) in rows {
        let v: Value = serde_json::from_str(data).unwrap();
        if v["role"] != "assistant" || !seen.insert(id.to_owned()) {
            continue;
        }
        let t = &v["tokens"];
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        let add = |s: &mut Sum| {
            s.input += n(&t["input"]);
            s.output += n(&t["output"]) + n(&t["reasoning"]);
            s.reasoning += n(&t["reasoning"]);
            s.cache_read += n(&t["cache"]["read"]);
            s.cache_write += n(&t["cache"]["write"]);
            s.cost += v["cost"].as_f64().unwrap_or(0.0);
            s.messages += 1;
        };
        add(sessions.entry(session.to_owned()).or_default());
        let model = v["modelID"].as_str().unwrap_or("unknown").to_owned();
        add(models.entry(model).or_default());
    }
    (sessions, models)
}

fn answer_sums(r: &OpenCodeReport) -> (BTreeMap<String, Sum>, BTreeMap<String, Sum>) {
    let sum = |f: &agentlog::transcript::UsageFigures| {
        Sum::of(&f.tally.usage, f.tally.cost.dollars(), f.tally.messages)
    };
    (
        r.sessions
            .iter()
            .map(|s| (s.session.clone(), sum(&s.usage)))
            .collect(),
        r.models.iter().map(|(m, f)| (m.clone(), sum(f))).collect(),
    )
}

#[test]
fn the_real_database_adds_up_as_the_oracle_says_wal_rows_included() {
    let files = ["opencode.db", "opencode.db-wal", "opencode.db-shm"];
    let (sessions, models) = oracle(&files);
    let (base_sessions, _) = oracle(&["opencode.db"]);
    let count = |m: &BTreeMap<String, Sum>| m.values().map(|s| s.messages).sum::<u64>();
    assert_eq!(count(&sessions), 37);
    assert!(
        count(&base_sessions) < count(&sessions),
        "the WAL holds rows the database file alone does not"
    );
    let dir = real_copy(&files);
    let cache = tempfile::tempdir().unwrap();
    let r = read_opencode(&dir.path().join("opencode.db"), Some(cache.path())).unwrap();
    assert!(r.wal);
    let (got_sessions, got_models) = answer_sums(&r);
    assert_eq!(got_sessions, sessions);
    assert_eq!(got_models, models);
    assert_eq!(r.sessions.len(), 2);
    let child = r.sessions.iter().find(|s| s.parent.is_some()).unwrap();
    assert!(
        r.sessions
            .iter()
            .any(|s| Some(&s.session) == child.parent.as_ref())
    );
    // total = input + output + cache read + cache write on every figure, and equals OpenCode's
    // own `tokens.total` summed (the diagnostics count no mismatch).
    assert_eq!(r.diagnostics.total_mismatches, 0);
    let t = &r.total.tally.usage;
    assert_eq!(
        t.total(),
        t.input + t.output + t.cache_read + t.cache_creation
    );
    // The private copy is gone.
    let leftovers: Vec<_> = walk(cache.path())
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Every path under `dir`, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        out.push(p.clone());
        if p.is_dir() {
            out.extend(walk(&p));
        }
    }
    out.sort();
    out
}

/// The listing of a directory with each file's bytes and modification time.
fn state(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    walk(dir)
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).unwrap();
            let bytes = if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            (p, bytes, meta.modified().unwrap())
        })
        .collect()
}

fn agentlog(args: &[&str], cache: &Path) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(args)
        .env("AGENTLOG_CACHE_DIR", cache)
        .env("HOME", cache)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn the_directory_is_byte_identical_after_every_command() {
    let cases: [&[&str]; 3] = [
        &["opencode.db", "opencode.db-wal", "opencode.db-shm"],
        &["opencode.db", "opencode.db-wal"],
        &["opencode.db"],
    ];
    for files in cases {
        let dir = real_copy(files);
        let cache = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        let before = state(dir.path());
        let (code, v) = agentlog(
            &["transcript", db.to_str().unwrap(), "--json"],
            cache.path(),
        );
        assert_eq!(code, 0, "{files:?}");
        assert_eq!(v["format"], "opencode");
        assert_eq!(v["wal"], files.contains(&"opencode.db-wal"));
        assert_eq!(state(dir.path()), before, "transcript changed {files:?}");
        for by in ["day", "session", "model"] {
            let args = ["usage", dir.path().to_str().unwrap(), "--by", by, "--json"];
            let (code, v) = agentlog(&args, cache.path());
            assert_eq!(code, 0);
            assert_eq!(v["files"]["opencode"], 1);
            assert!(v["totals"]["messages"].as_u64().unwrap() > 0);
            assert_eq!(
                state(dir.path()),
                before,
                "usage --by {by} changed {files:?}"
            );
        }
    }
}

#[test]
fn usage_rows_equal_the_oracle_per_model_and_one_session_row() {
    let files = ["opencode.db", "opencode.db-wal", "opencode.db-shm"];
    let (sessions, models) = oracle(&files);
    let dir = real_copy(&files);
    let cache = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, v) = agentlog(&["usage", root, "--by", "model", "--json"], cache.path());
    for (model, want) in &models {
        let row = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == model.as_str())
            .unwrap();
        assert_eq!(row["input_tokens"], want.input);
        assert_eq!(row["output_tokens"], want.output);
        assert_eq!(row["cache_read_tokens"], want.cache_read);
        assert_eq!(row["cache_creation_tokens"], want.cache_write);
        assert_eq!(row["messages"], want.messages);
    }
    // A subagent's session is part of the session that started it: one row.
    let (_, v) = agentlog(&["usage", root, "--by", "session", "--json"], cache.path());
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let all: u64 = sessions.values().map(|s| s.messages).sum();
    assert_eq!(rows[0]["messages"], all);
}

/// The agent surface: `--by agent` gives one `opencode` row with the oracle's totals,
/// `--agent opencode` keeps them and `--agent codex` leaves nothing.
#[test]
fn the_agent_row_and_filter_hold_the_databases_usage() {
    let files = ["opencode.db", "opencode.db-wal", "opencode.db-shm"];
    let (sessions, _) = oracle(&files);
    let want = sessions.values().fold(Sum::default(), |mut a, s| {
        a.input += s.input;
        a.output += s.output;
        a.messages += s.messages;
        a
    });
    let dir = real_copy(&files);
    let cache = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, v) = agentlog(&["usage", root, "--by", "agent", "--json"], cache.path());
    assert_eq!(code, 0, "{v}");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["agent"], "opencode");
    assert_eq!(rows[0]["input_tokens"], want.input);
    assert_eq!(rows[0]["output_tokens"], want.output);
    assert_eq!(rows[0]["messages"], want.messages);
    let only = ["usage", root, "--agent", "opencode", "--json"];
    let (_, v) = agentlog(&only, cache.path());
    assert_eq!(v["totals"]["messages"], want.messages);
    let other = ["usage", root, "--agent", "codex", "--json"];
    let (_, v) = agentlog(&other, cache.path());
    assert_eq!(v["totals"]["messages"], 0);
}

#[test]
fn a_damaged_database_is_skipped_with_its_reason_and_usage_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut junk = b"SQLite format 3\0".to_vec();
    junk.extend(std::iter::repeat_n(0xA5u8, 4096));
    std::fs::write(dir.path().join("opencode.db"), &junk).unwrap();
    let good = real_copy(&["opencode.db", "opencode.db-wal"]);
    std::fs::create_dir(dir.path().join("other")).unwrap();
    for name in ["opencode.db", "opencode.db-wal"] {
        std::fs::copy(good.path().join(name), dir.path().join("other").join(name)).unwrap();
    }
    let before = state(dir.path());
    let cache = tempfile::tempdir().unwrap();
    let (code, v) = agentlog(
        &["usage", dir.path().to_str().unwrap(), "--json"],
        cache.path(),
    );
    assert_eq!(code, 0);
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("/opencode.db")
    );
    assert!(
        skipped[0]["error"]
            .as_str()
            .unwrap()
            .contains("not a readable OpenCode database")
    );
    assert_eq!(v["totals"]["messages"], 37);
    let db = dir.path().join("opencode.db");
    let (code, _) = agentlog(&["transcript", db.to_str().unwrap()], cache.path());
    assert_ne!(code, 0);
    assert_eq!(state(dir.path()), before);
}

/// Writes the real database's rows as the older storage: `storage/message/<session>/<id>.json`
/// (with `id` and `sessionID` in the data, as those files carry) and
/// `storage/session/<project>/<session>.json`.
fn storage_from_real(root: &Path) -> Vec<(String, String, String)> {
    let dir = real_copy(&["opencode.db", "opencode.db-wal"]);
    let conn = rusqlite::Connection::open(dir.path().join("opencode.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, session_id, data FROM message")
        .unwrap();
    let rows: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (id, session, data) in &rows {
        let mut v: Value = serde_json::from_str(data).unwrap();
        v["id"] = Value::from(id.as_str());
        v["sessionID"] = Value::from(session.as_str());
        let d = root.join("storage/message").join(session);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(format!("{id}.json")),
            serde_json::to_vec_pretty(&v).unwrap(),
        )
        .unwrap();
    }
    let mut stmt = conn
        .prepare("SELECT id, parent_id, title, directory FROM session")
        .unwrap();
    let sessions: Vec<(String, Option<String>, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (id, parent, title, directory) in sessions {
        let d = root.join("storage/session/proj");
        std::fs::create_dir_all(&d).unwrap();
        let v = serde_json::json!({"id": id, "parentID": parent, "title": title, "directory": directory});
        std::fs::write(d.join(format!("{id}.json")), v.to_string()).unwrap();
    }
    rows
}

#[test]
fn the_older_json_storage_adds_up_as_the_oracle_says() {
    let root = tempfile::tempdir().unwrap();
    let rows = storage_from_real(root.path());
    let (sessions, models) = oracle_of(
        rows.iter()
            .map(|(i, s, d)| (i.as_str(), s.as_str(), d.as_str())),
    );
    let cache = tempfile::tempdir().unwrap();
    let before = state(root.path());
    let r = read_opencode(&root.path().join("storage"), Some(cache.path())).unwrap();
    let (got_sessions, got_models) = answer_sums(&r);
    assert_eq!(got_sessions, sessions);
    assert_eq!(got_models, models);
    assert!(
        r.sessions
            .iter()
            .any(|s| s.title.is_some() && s.parent.is_some())
    );
    // A truncated message file is listed and left out; the rest still count.
    let (id, session, _) = rows
        .iter()
        .find(|(_, _, d)| d.contains("\"assistant\""))
        .unwrap();
    let file = root
        .path()
        .join("storage/message")
        .join(session)
        .join(format!("{id}.json"));
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let r2 = read_opencode(root.path(), Some(cache.path())).unwrap();
    assert_eq!(r2.skipped.len(), 1);
    assert_eq!(r2.total.tally.messages, r.total.tally.messages - 1);
    drop(before);
    // With a database holding the same messages, usage counts each id once.
    for name in ["opencode.db", "opencode.db-wal"] {
        std::fs::copy(Path::new(REAL).join(name), root.path().join(name)).unwrap();
    }
    let before = state(root.path());
    let (code, v) = agentlog(
        &["usage", root.path().to_str().unwrap(), "--json"],
        cache.path(),
    );
    assert_eq!(code, 0);
    assert_eq!(v["totals"]["messages"], 37);
    assert_eq!(v["files"]["opencode"], 2);
    assert_eq!(
        v["skipped"].as_array().unwrap().len(),
        1,
        "the truncated file"
    );
    assert_eq!(state(root.path()), before);
}
