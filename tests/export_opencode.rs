//! `OpenCode` sessions as export sources, read back with the `parquet` crate's reader: one
//! event row per message of each session (as a plain SQLite reading of a copy counts them),
//! one generation and one session row per session; an unchanged database exports nothing, a
//! changed one exports its changed sessions whole again; the agent's directory is left byte
//! for byte as it was, with or without a WAL.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation
)]

mod common;
mod export_support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use agentlog::export::{ExportOptions, ExportReport, export};
use export_support::{Row, read_table};
use serde_json::Value;

const REAL: &str = "tests/data/transcripts/opencode/JulesGuiCs-dda98e9";

fn copy_real(dir: &Path, with: &[&str]) {
    fs::create_dir_all(dir).unwrap();
    for name in with {
        let to = dir.join(name);
        fs::copy(Path::new(REAL).join(name), &to).unwrap();
        let mut perms = fs::metadata(&to).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        fs::set_permissions(&to, perms).unwrap();
    }
}

/// One session as a plain reading of the database says: its messages' ids in time order
/// (`time.created`, none last, then id), and its assistant messages' summed input and output
/// tokens.
#[derive(Debug, Default, PartialEq)]
struct Session {
    ids: Vec<String>,
    input: i64,
    output: i64,
    assistants: i64,
}

/// SQLite on a private copy of `db` and its WAL.
fn oracle(db: &Path) -> BTreeMap<String, Session> {
    let copy = tempfile::tempdir().unwrap();
    fs::copy(db, copy.path().join("opencode.db")).unwrap();
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    if wal.exists() {
        fs::copy(&wal, copy.path().join("opencode.db-wal")).unwrap();
    }
    let conn = rusqlite::Connection::open(copy.path().join("opencode.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, session_id, data FROM message")
        .unwrap();
    let mut rows: Vec<(String, String, Value)> = stmt
        .query_map([], |r| {
            let data: String = r.get(2)?;
            Ok((r.get(0)?, r.get(1)?, serde_json::from_str(&data).unwrap()))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort_by_key(|(id, session, data)| {
        let t = data["time"]["created"].as_i64();
        (session.clone(), t.is_none(), t, id.clone())
    });
    let mut out: BTreeMap<String, Session> = BTreeMap::new();
    for (id, session, data) in rows {
        let s = out.entry(session).or_default();
        s.ids.push(id);
        if data["role"] == "assistant" && data["tokens"].is_object() {
            s.assistants += 1;
            s.input += data["tokens"]["input"].as_i64().unwrap_or(0);
            s.output += data["tokens"]["output"].as_i64().unwrap_or(0);
        }
    }
    out
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(with: &[&str]) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        copy_real(&dir.path().join("agent/opencode"), with);
        Setup { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("agent")
    }

    fn db(&self) -> PathBuf {
        fs::canonicalize(self.root().join("opencode/opencode.db")).unwrap()
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    fn export(&self) -> ExportReport {
        let mut options = ExportOptions::new(self.out());
        options.host = "test-host".into();
        options.transcript_index_dir = Some(self.dir.path().join("cache"));
        export(&[self.root()], &options, &mut |_| {}).unwrap()
    }
}

fn by_source(rows: Vec<Row>) -> BTreeMap<String, Vec<Row>> {
    let mut out: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in rows {
        out.entry(row.text("source_id").unwrap())
            .or_default()
            .push(row);
    }
    out
}

/// The dataset holds, per session, what the oracle says.
fn assert_matches(out: &Path, db: &Path, want: &BTreeMap<String, Session>) {
    let events = by_source(read_table(out, "events"));
    let sessions = by_source(read_table(out, "sessions"));
    let generations = by_source(read_table(out, "generations"));
    assert_eq!(
        events.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (id, session) in want {
        let mut rows = events[id].clone();
        rows.sort_by_key(|r| r.int("offset"));
        let ids: Vec<String> = rows.iter().map(|r| r.text("message_id").unwrap()).collect();
        assert_eq!(ids, session.ids, "{id}: one row per message, in time order");
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.int("offset"), Some(i as i64));
            assert_eq!(row.int("line"), Some(i as i64 + 1));
            assert_eq!(row.int("generation"), Some(0));
            let json: Value = serde_json::from_str(&row.text("json").unwrap()).unwrap();
            assert!(json["info"].is_object(), "{id}: the message's data");
            assert!(json["parts"].is_array(), "{id}: its parts");
        }
        let sum = |col: &str| rows.iter().filter_map(|r| r.int(col)).sum::<i64>();
        assert_eq!(sum("input_tokens"), session.input, "{id}: input");
        assert_eq!(sum("output_tokens"), session.output, "{id}: output");
        let s = &sessions[id];
        assert_eq!(s.len(), 1, "{id}: one session row");
        assert_eq!(s[0].text("format").as_deref(), Some("opencode"));
        assert_eq!(s[0].text("path").as_deref(), Some(db.to_str().unwrap()));
        let g = &generations[id];
        assert_eq!(g.len(), 1, "{id}: one generation");
        assert_eq!(g[0].int("events"), Some(session.ids.len() as i64));
        assert_eq!(g[0].int("api_calls"), Some(session.assistants));
        assert_eq!(g[0].int("input_tokens"), Some(session.input));
    }
}

#[test]
fn each_session_exports_its_messages_as_the_oracle_counts_them() {
    let setup = Setup::new(&["opencode.db", "opencode.db-wal"]);
    let want = oracle(&setup.db());
    assert!(want.len() >= 2, "the real database holds sessions");
    let first = setup.export();
    assert_eq!(first.sources.len(), want.len());
    assert!(first.sources.iter().all(|s| s.action == "first"));
    assert_eq!(
        first.rows,
        want.values().map(|s| s.ids.len() as u64).sum::<u64>()
    );
    assert_matches(&setup.out(), &setup.db(), &want);
    let again = setup.export();
    assert!(
        again.sources.iter().all(|s| s.action == "unchanged"),
        "{:?}",
        again
            .sources
            .iter()
            .map(|s| (s.action, s.reason.clone()))
            .collect::<Vec<_>>()
    );
    assert_eq!(again.rows, 0);
    assert_matches(&setup.out(), &setup.db(), &want);
}

#[test]
fn a_changed_session_is_exported_whole_again_and_the_others_are_left() {
    let setup = Setup::new(&["opencode.db", "opencode.db-wal"]);
    let db = setup.db();
    setup.export();
    let before = oracle(&db);
    let changed = before.keys().next().unwrap().clone();
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let data =
            serde_json::json!({"role": "assistant", "time": {"created": 1_900_000_000_000_i64},
            "tokens": {"input": 5, "output": 7, "reasoning": 0, "cache": {"read": 0, "write": 0}}})
            .to_string();
        conn.execute(
            "INSERT INTO message(id, session_id, time_created, time_updated, data) VALUES ('msg_zz', ?1, 0, 0, ?2)",
            rusqlite::params![changed, data],
        )
        .unwrap();
    }
    let after = oracle(&db);
    assert_eq!(after[&changed].ids.len(), before[&changed].ids.len() + 1);
    let report = setup.export();
    for source in &report.sources {
        let want = if source.source_id == changed {
            "reexported"
        } else {
            "unchanged"
        };
        assert_eq!(source.action, want, "{}", source.source_id);
    }
    assert_matches(&setup.out(), &db, &after);
}

/// Every path under `dir` with its bytes and modification time, sorted.
fn state(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let meta = fs::metadata(&p).unwrap();
        if meta.is_dir() {
            out.extend(state(&p));
        }
        let bytes = if meta.is_file() {
            fs::read(&p).unwrap()
        } else {
            Vec::new()
        };
        out.push((p, bytes, meta.modified().unwrap()));
    }
    out.sort();
    out
}

#[test]
fn export_leaves_the_directory_byte_identical_with_and_without_a_wal() {
    let cases: [&[&str]; 3] = [
        &["opencode.db", "opencode.db-wal", "opencode.db-shm"],
        &["opencode.db", "opencode.db-wal"],
        &["opencode.db"],
    ];
    for files in cases {
        let setup = Setup::new(files);
        let before = state(&setup.root());
        assert!(setup.export().rows > 0);
        let out = setup.dir.path().join("cli-out");
        let output = common::agentlog(&[
            "export",
            setup.root().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-archive",
            "--index-dir",
            setup.dir.path().join("cli-cache").to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{output:?}");
        assert!(!read_table(&out, "events").is_empty());
        assert_eq!(state(&setup.root()), before, "{files:?}");
    }
}
