//! The lingtai kernel's SQLite sidecar (`logs/log.sqlite`), rebuilt in Rust as faithfully as
//! the kernel's source describes it: the schema-v3 script, the writer pragmas, `event_row` normalisation (with Python's `", "` /
//! `": "` separators and key order), the runtime per-event import (a new connection, the whole
//! schema script and a commit per event, then close), the offline batched rebuild (one
//! transaction, integrity check, checkpoint, atomic replace), and the tier-1 query pair.
//!
//! Everything here runs in compiled Rust through rusqlite, so it is a *lower bound* on what the
//! Python kernel pays for the same work (no interpreter, no `json.loads` of the dict).

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, params};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// `SQLiteEventIndex._ensure_schema`, schema version 3.
pub const SCHEMA: &str = r"
CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS import_cursors (
  source_file TEXT PRIMARY KEY,
  byte_offset INTEGER NOT NULL DEFAULT 0,
  line_no INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts REAL NOT NULL,
  type TEXT NOT NULL,
  agent_address TEXT,
  agent_name_snapshot TEXT,
  fields_json TEXT NOT NULL,
  source_file TEXT,
  source_offset INTEGER,
  source_line INTEGER,
  source_kind TEXT,
  scope TEXT,
  run_id TEXT,
  inserted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
CREATE TABLE IF NOT EXISTS chat_entries (
  id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL DEFAULT 0, ts_text TEXT,
  role TEXT, kind TEXT, turn INTEGER, content_text TEXT, entry_json TEXT NOT NULL,
  source_file TEXT NOT NULL, source_offset INTEGER NOT NULL, source_line INTEGER,
  source_kind TEXT, scope TEXT, run_id TEXT,
  inserted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
CREATE TABLE IF NOT EXISTS token_entries (
  id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL DEFAULT 0, ts_text TEXT,
  input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
  thinking_tokens INTEGER NOT NULL DEFAULT 0, cached_tokens INTEGER NOT NULL DEFAULT 0,
  model TEXT, endpoint TEXT, source TEXT, em_id TEXT, run_id TEXT, api_call_id TEXT,
  entry_json TEXT NOT NULL, source_file TEXT NOT NULL, source_offset INTEGER NOT NULL,
  source_line INTEGER, source_kind TEXT, scope TEXT,
  inserted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
CREATE INDEX IF NOT EXISTS idx_events_type_ts        ON events(type, ts DESC);
CREATE INDEX IF NOT EXISTS idx_events_ts             ON events(ts DESC);
CREATE INDEX IF NOT EXISTS idx_events_source_kind_ts ON events(source_kind, ts DESC);
CREATE INDEX IF NOT EXISTS idx_events_run_id_ts      ON events(run_id, ts DESC);
CREATE UNIQUE INDEX IF NOT EXISTS idx_events_source_offset ON events(source_file, source_offset)
  WHERE source_file IS NOT NULL AND source_offset IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_chat_entries_role_ts ON chat_entries(role, ts DESC);
CREATE INDEX IF NOT EXISTS idx_chat_entries_source_kind_ts ON chat_entries(source_kind, ts DESC);
CREATE INDEX IF NOT EXISTS idx_chat_entries_run_id_turn ON chat_entries(run_id, turn);
CREATE UNIQUE INDEX IF NOT EXISTS idx_chat_entries_source_offset ON chat_entries(source_file, source_offset);
CREATE INDEX IF NOT EXISTS idx_token_entries_ts ON token_entries(ts DESC);
CREATE INDEX IF NOT EXISTS idx_token_entries_source_ts ON token_entries(source, ts DESC);
CREATE INDEX IF NOT EXISTS idx_token_entries_api_call_id ON token_entries(api_call_id);
CREATE INDEX IF NOT EXISTS idx_token_entries_run_id_ts ON token_entries(run_id, ts DESC);
CREATE INDEX IF NOT EXISTS idx_token_entries_source_kind_ts ON token_entries(source_kind, ts DESC);
CREATE UNIQUE INDEX IF NOT EXISTS idx_token_entries_source_offset ON token_entries(source_file, source_offset);
";

const INSERT_EVENT: &str = "INSERT OR IGNORE INTO events(ts, type, agent_address, \
    agent_name_snapshot, fields_json, source_file, source_offset, source_line, source_kind, \
    scope, run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'agent_events', 'agent', NULL)";

/// A JSON object with its keys in file order (Python dicts keep insertion order; `serde_json`'s
/// `Map` here sorts them, which would change `json_extract`'s work).
#[derive(Clone, Debug, Default)]
pub struct Ordered(pub Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    // Python: duplicate keys, the last one wins (in the first one's place).
                    if let Some(slot) = out
                        .iter_mut()
                        .find(|(key, _): &&mut (String, Value)| *key == k)
                    {
                        slot.1 = v;
                    } else {
                        out.push((k, v));
                    }
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl Ordered {
    fn pop(&mut self, key: &str) -> Option<Value> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }
}

/// `json.dumps` default separators: `", "` and `": "`.
struct PyFormatter;

impl serde_json::ser::Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

/// `json.dumps(value, ensure_ascii=False)`.
pub fn py_dumps(value: &impl Serialize) -> String {
    let mut out = Vec::with_capacity(512);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyFormatter);
    value.serialize(&mut ser).expect("serializable");
    String::from_utf8(out).expect("utf-8")
}

/// One `events` row, as `event_row` normalises an event dict.
#[derive(Clone, Debug)]
pub struct EventRow {
    pub ts: f64,
    pub kind: String,
    pub address: Option<String>,
    pub agent_name: Option<String>,
    pub fields_json: String,
}

fn as_text(v: Option<Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    }
}

/// `_coerce_ts`: numbers and numeric strings as floats; ISO strings parsed; anything else 0.0
/// with the raw value kept as `ts_raw`.
fn coerce_ts(raw: Option<Value>, fields: &mut Ordered) -> f64 {
    match raw {
        None => 0.0,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(Value::String(s)) => {
            if let Ok(f) = s.trim().parse::<f64>() {
                return f;
            }
            let iso = s.replace('Z', "+00:00");
            if let Ok(t) = iso.parse::<jiff::Timestamp>() {
                #[allow(
                    clippy::cast_precision_loss,
                    reason = "milliseconds in jiff's range are below 2^53, exact"
                )]
                let millis = t.as_millisecond() as f64;
                millis / 1000.0
            } else {
                fields.0.push(("ts_raw".to_owned(), Value::String(s)));
                0.0
            }
        }
        Some(other) => {
            fields.0.push(("ts_raw".to_owned(), other));
            0.0
        }
    }
}

/// `event_row(event)`: pops `type` (else `event`), `ts`, `address`, `agent_name`; the rest is
/// `fields_json`.
pub fn event_row(mut fields: Ordered) -> EventRow {
    let kind = match fields.pop("type") {
        Some(Value::String(s)) if !s.is_empty() => s,
        other => match fields.pop("event") {
            Some(Value::String(s)) => s,
            Some(v) => v.to_string(),
            None => other.map(|v| v.to_string()).unwrap_or_default(),
        },
    };
    let raw_ts = fields.pop("ts");
    let ts = coerce_ts(raw_ts, &mut fields);
    let address = as_text(fields.pop("address"));
    let agent_name = as_text(fields.pop("agent_name"));
    EventRow {
        ts,
        kind,
        address,
        agent_name,
        fields_json: py_dumps(&fields),
    }
}

/// Parses one log line the way `json.loads` + "is it a dict" does; `None` for lines the
/// reference skips.
pub fn parse_line(line: &[u8]) -> Option<Ordered> {
    let text = std::str::from_utf8(line).ok()?;
    if text.trim().is_empty() {
        return None;
    }
    serde_json::from_str::<Ordered>(text).ok()
}

fn now_iso() -> String {
    jiff::Timestamp::now().to_string()
}

/// `_configure`: the writer pragmas.
pub fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
    conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
}

/// `_ensure_schema`: the whole script, the v1 column check, three migration rows, a commit.
pub fn ensure_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    let mut stmt = conn.prepare("PRAGMA table_info(events)")?;
    let columns: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<Result<_, _>>()?;
    drop(stmt);
    for (column, kind) in [
        ("source_line", "INTEGER"),
        ("source_kind", "TEXT"),
        ("scope", "TEXT"),
        ("run_id", "TEXT"),
    ] {
        if !columns.iter().any(|c| c == column) {
            conn.execute_batch(&format!("ALTER TABLE events ADD COLUMN {column} {kind}"))?;
        }
    }
    let now = now_iso();
    conn.execute_batch("BEGIN")?;
    for (version, name) in [
        (1, "initial_events_index"),
        (2, "trace_chat_and_daemon_index"),
        (3, "token_ledger_index"),
    ] {
        conn.execute(
            "INSERT OR IGNORE INTO schema_migrations(version, name, applied_at) VALUES (?1, ?2, ?3)",
            params![version, name, now],
        )?;
    }
    conn.execute_batch("COMMIT")
}

/// The runtime path, `SQLiteEventIndex.log_event` with `keep_open=False`: open a new
/// connection, run the pragmas and the whole schema script, insert, commit, close. When no other
/// connection is open, closing checkpoints and removes the WAL, as in the kernel.
pub fn runtime_log_event(
    db: &Path,
    row: &EventRow,
    source_file: &str,
    offset: u64,
) -> rusqlite::Result<()> {
    let conn = Connection::open(db)?;
    configure(&conn)?;
    ensure_schema(&conn)?;
    insert(&conn, row, source_file, offset, None)?;
    conn.close().map_err(|(_, e)| e)
}

/// A generous variant the kernel does not use: one kept-open connection, insert + commit per
/// event.
pub fn open_kept(db: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(db)?;
    configure(&conn)?;
    ensure_schema(&conn)?;
    Ok(conn)
}

/// One `INSERT OR IGNORE` (autocommit: its own transaction, like `execute` + `commit()`).
pub fn insert(
    conn: &Connection,
    row: &EventRow,
    source_file: &str,
    offset: u64,
    line: Option<u64>,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(INSERT_EVENT)?;
    stmt.execute(params![
        row.ts,
        row.kind,
        row.address,
        row.agent_name,
        row.fields_json,
        source_file,
        i64::try_from(offset).expect("a log offset fits SQLite's INTEGER"),
        line.map(|l| i64::try_from(l).expect("a line number fits SQLite's INTEGER")),
    ])?;
    Ok(())
}

/// Timings of one offline rebuild.
#[derive(Clone, Copy, Debug, Default)]
pub struct RebuildStats {
    pub rows: u64,
    /// Parsing, normalising, inserting and the commit.
    pub import: Duration,
    /// `PRAGMA integrity_check`, `wal_checkpoint(TRUNCATE)` and the atomic replace.
    pub finish: Duration,
}

/// `rebuild_sqlite_event_index` for one source, `logs/events.jsonl`: build in a temp
/// dir in one transaction, integrity check, checkpoint, replace `target` atomically.
pub fn offline_rebuild(log: &Path, target: &Path) -> rusqlite::Result<RebuildStats> {
    let started = Instant::now();
    let dir = target.parent().expect("target has a parent");
    let tmp_dir = dir.join(format!("log-sqlite-rebuild-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp_dir);
    std::fs::create_dir_all(&tmp_dir).expect("create rebuild dir");
    let tmp_db = tmp_dir.join("log.sqlite");
    let source_file = log.display().to_string();
    let conn = Connection::open(&tmp_db)?;
    configure(&conn)?;
    ensure_schema(&conn)?;
    conn.execute_batch("BEGIN")?;
    let mut rows = 0;
    let mut reader = BufReader::with_capacity(64 << 10, File::open(log).expect("open log"));
    let mut line = Vec::with_capacity(8192);
    let (mut offset, mut line_no, mut cursor, mut cursor_line) = (0u64, 0u64, 0u64, 0u64);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).expect("read log");
        if n == 0 {
            break;
        }
        line_no += 1;
        let next = offset + n as u64;
        if let Some(fields) = parse_line(&line) {
            insert(
                &conn,
                &event_row(fields),
                &source_file,
                offset,
                Some(line_no),
            )?;
            rows += 1;
            (cursor, cursor_line) = (next, line_no);
        }
        offset = next;
    }
    conn.execute(
        "INSERT OR REPLACE INTO import_cursors(source_file, byte_offset, line_no, updated_at) VALUES (?1, ?2, ?3, ?4)",
        params![
            source_file,
            i64::try_from(cursor).expect("a log offset fits SQLite's INTEGER"),
            i64::try_from(cursor_line).expect("a line number fits SQLite's INTEGER"),
            now_iso()
        ],
    )?;
    conn.execute_batch("COMMIT")?;
    let import = started.elapsed();
    let finishing = Instant::now();
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok", "sidecar integrity check");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    conn.close().map_err(|(_, e)| e)?;
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(sibling(target, suffix));
    }
    std::fs::rename(&tmp_db, target).expect("replace sidecar");
    let _ = std::fs::remove_dir_all(&tmp_dir);
    Ok(RebuildStats {
        rows,
        import,
        finish: finishing.elapsed(),
    })
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// What the tier-1 pair found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairAnswer {
    pub api_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cached_tokens: i64,
    pub thinking_tokens: i64,
}

/// `query_sqlite_event_index`: a new read-only connection per statement, `query_only`
/// on, run, reset, close.
pub fn query_fresh<T>(
    db: &Path,
    sql: &str,
    f: impl FnOnce(&Connection, &str) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let uri = format!("file:{}?mode=ro", db.display());
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch("PRAGMA query_only=ON")?;
    let out = f(&conn, sql);
    conn.execute_batch("PRAGMA query_only=OFF")?;
    conn.close().map_err(|(_, e)| e)?;
    out
}

const Q1: &str = "SELECT ts, source_offset, fields_json FROM events \
    WHERE type = 'psyche_molt' ORDER BY ts DESC LIMIT 1";

fn q2(boundary_ts: f64) -> String {
    // Python interpolates `repr(float)`; `{:?}` prints the same shortest round-trip form.
    format!(
        "SELECT COUNT(*) AS n, \
         COALESCE(SUM(CAST(json_extract(fields_json,'$.input_tokens') AS INTEGER)),0) AS input_tokens, \
         COALESCE(SUM(CAST(json_extract(fields_json,'$.output_tokens') AS INTEGER)),0) AS output_tokens, \
         COALESCE(SUM(CAST(json_extract(fields_json,'$.cached_tokens') AS INTEGER)),0) AS cached_tokens, \
         COALESCE(SUM(CAST(json_extract(fields_json,'$.thinking_tokens') AS INTEGER)),0) AS thinking_tokens \
         FROM events WHERE type = 'llm_response' AND ts >= {boundary_ts:?}"
    )
}

type Q1Row = Option<(Option<f64>, Option<i64>, String)>;

fn run_q1(conn: &Connection, sql: &str) -> rusqlite::Result<Q1Row> {
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    match rows.next()? {
        None => Ok(None),
        Some(r) => Ok(Some((r.get(0)?, r.get(1)?, r.get(2)?))),
    }
}

fn run_q2(conn: &Connection, sql: &str) -> rusqlite::Result<PairAnswer> {
    conn.query_row(sql, [], |r| {
        Ok(PairAnswer {
            api_calls: r.get(0)?,
            input_tokens: r.get(1)?,
            output_tokens: r.get(2)?,
            cached_tokens: r.get(3)?,
            thinking_tokens: r.get(4)?,
        })
    })
}

/// `_rebuild_via_sqlite(query, molt_count)` at HEAD, given a way to run one statement.
fn tier1(
    molt_count: u64,
    mut q1: impl FnMut(&str) -> rusqlite::Result<Q1Row>,
    mut q2f: impl FnMut(&str) -> rusqlite::Result<PairAnswer>,
) -> Option<PairAnswer> {
    let boundary_ts = match q1(Q1).ok()? {
        Some((ts, _offset, fields_json)) => {
            let fields: Value = serde_json::from_str(&fields_json).ok()?;
            match fields.get("molt_count") {
                Some(Value::Number(n)) if n.as_u64() == Some(molt_count) => {}
                _ => return None,
            }
            let _initiator = fields
                .get("initiator")
                .and_then(Value::as_str)
                .unwrap_or("agent");
            ts.unwrap_or(0.0)
        }
        None if molt_count != 0 => return None,
        None => 0.0,
    };
    q2f(&q2(boundary_ts)).ok()
}

/// The pair as the runtime runs it: each statement on a new read-only connection.
pub fn pair_fresh_connections(db: &Path, molt_count: u64) -> Option<PairAnswer> {
    tier1(
        molt_count,
        |sql| query_fresh(db, sql, run_q1),
        |sql| query_fresh(db, sql, run_q2),
    )
}

/// The pair on an already-open connection (a best case the kernel does not have).
pub fn pair_open_connection(conn: &Connection, molt_count: u64) -> Option<PairAnswer> {
    tier1(molt_count, |sql| run_q1(conn, sql), |sql| run_q2(conn, sql))
}

/// A read-only connection kept open.
pub fn open_read_only(db: &Path) -> rusqlite::Result<Connection> {
    let uri = format!("file:{}?mode=ro", db.display());
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}
