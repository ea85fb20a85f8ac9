//! `OpenCode` databases in the transcript search: rows that live only in the WAL are found,
//! hit counts equal a plain count over the parts, a write to the database is found by the next
//! search, and the agent's directory is left byte for byte as it was.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentlog::search::{MatchMode, SearchConfig, TranscriptSearch, TranscriptSearchRequest};
use agentlog::transcript::Format;
use serde_json::Value;

const REAL: &str = "tests/data/transcripts/opencode/JulesGuiCs-dda98e9";

/// One part as the oracle reads it.
#[derive(Debug, Clone)]
struct Part {
    id: String,
    session: String,
    /// Its message's index within its session, in time order.
    index: u64,
    role: Option<String>,
    time: Option<i64>,
    kind: String,
    /// Its searchable text (text parts: `text`; tool parts: tool, input, output).
    text: String,
}

/// Copies the real database's files (`with`) into `dir`.
fn copy_real(dir: &Path, with: &[&str]) {
    fs::create_dir_all(dir).unwrap();
    for name in with {
        fs::copy(Path::new(REAL).join(name), dir.join(name)).unwrap();
        let mut perms = fs::metadata(dir.join(name)).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        fs::set_permissions(dir.join(name), perms).unwrap();
    }
}

/// The plain reading of the rule, with SQLite on a private copy of `db` (and its WAL, if
/// `wal`): a session's messages ordered by `time.created` (none last), then id; text and tool
/// parts' text, trimmed pieces joined by newlines.
fn oracle(db: &Path, wal: bool) -> Vec<Part> {
    let copy = tempfile::tempdir().unwrap();
    let target = copy.path().join("opencode.db");
    fs::copy(db, &target).unwrap();
    let wal_file = PathBuf::from(format!("{}-wal", db.display()));
    if wal && wal_file.exists() {
        fs::copy(&wal_file, copy.path().join("opencode.db-wal")).unwrap();
    }
    let conn = rusqlite::Connection::open(&target).unwrap();
    let rows = |sql: &str| -> Vec<(String, String, String)> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let json = |s: &str| serde_json::from_str::<Value>(s).unwrap();
    let mut messages = rows("SELECT id, session_id, data FROM message");
    messages.sort_by_key(|(id, session, data)| {
        let t = json(data)["time"]["created"].as_i64();
        (session.clone(), t.is_none(), t, id.clone())
    });
    let mut parts = rows("SELECT id, message_id, data FROM part");
    parts.sort();
    let mut out = Vec::new();
    let (mut index, mut last) = (0, None);
    for (id, session, data) in &messages {
        if last.as_ref() != Some(session) {
            (index, last) = (0, Some(session.clone()));
        }
        let m = json(data);
        for (part_id, _, part) in parts.iter().filter(|(_, msg, _)| msg == id) {
            let p = json(part);
            let text = |v: &Value| match v {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let pieces = match p["type"].as_str() {
                Some("text") => vec![text(&p["text"])],
                Some("tool") => vec![
                    text(&p["tool"]),
                    text(&p["state"]["input"]),
                    text(&p["state"]["output"]),
                ],
                _ => continue,
            };
            let pieces: Vec<&str> = pieces
                .iter()
                .map(|s| s.trim())
                .filter(|s| !s.is_empty())
                .collect();
            if pieces.is_empty() {
                continue;
            }
            out.push(Part {
                id: part_id.clone(),
                session: session.clone(),
                index,
                role: m["role"].as_str().map(str::to_owned),
                time: m["time"]["created"].as_i64(),
                kind: p["type"].as_str().unwrap().to_owned(),
                text: pieces.join("\n"),
            });
        }
        index += 1;
    }
    out
}

/// Whether `text` holds `word` as a whole word (letters and digits; case folded).
fn has_word(text: &str, word: &str) -> bool {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w == word)
}

fn search(cache: &Path, root: &Path, query: &str) -> Vec<agentlog::search::TranscriptSearchHit> {
    let mut s = TranscriptSearch::new(Some(cache.to_path_buf()), SearchConfig::default()).unwrap();
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = s
            .search(&TranscriptSearchRequest {
                query: query.into(),
                paths: vec![root.to_path_buf()],
                limit: Some(50),
                cursor: cursor.take(),
                mode: MatchMode::Phrase,
            })
            .unwrap();
        assert!(page.unreadable.is_empty(), "{:?}", page.unreadable);
        out.extend(page.hits);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

#[test]
fn a_phrase_only_in_the_wal_is_found_where_the_wal_puts_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("opencode");
    copy_real(
        &root,
        &["opencode.db", "opencode.db-wal", "opencode.db-shm"],
    );
    let db = fs::canonicalize(root.join("opencode.db")).unwrap();
    let with = oracle(&db, true);
    let without = oracle(&db, false);
    let before: BTreeSet<&str> = without.iter().map(|p| p.id.as_str()).collect();
    // A phrase of a text part only the WAL holds, found in no part the database holds.
    let (part, phrase) = with
        .iter()
        .filter(|p| p.kind == "text" && !before.contains(p.id.as_str()))
        .find_map(|p| {
            let words: Vec<&str> = p
                .text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .take(5)
                .collect();
            let phrase = words.join(" ").to_lowercase();
            let elsewhere = with.iter().filter(|o| o.id != p.id).any(|o| {
                let flat: Vec<String> = o
                    .text
                    .to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned)
                    .collect();
                flat.join(" ").contains(&phrase)
            });
            (words.len() == 5 && !elsewhere).then_some((p.clone(), phrase))
        })
        .expect("the WAL holds a text part of its own");
    let hits = search(&dir.path().join("cache"), &root, &phrase);
    assert_eq!(hits.len(), 1, "{phrase:?}: {hits:?}");
    let hit = &hits[0];
    assert_eq!(hit.file, db);
    assert_eq!(hit.format, Format::OpenCode);
    assert_eq!(hit.session, part.session);
    assert_eq!((hit.offset, hit.line), (part.index, part.index + 1));
    assert_eq!(hit.role, part.role);
    assert_eq!(hit.time, part.time);
    assert_eq!(hit.kind, "text");
    assert_eq!(hit.generation, 0);
    // Without its WAL the database does not hold it.
    let bare = dir.path().join("bare");
    copy_real(&bare, &["opencode.db"]);
    assert!(search(&dir.path().join("cache2"), &bare, &phrase).is_empty());
}

#[test]
fn hit_counts_equal_a_plain_count_over_the_parts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("opencode");
    copy_real(&root, &["opencode.db", "opencode.db-wal"]);
    let db = fs::canonicalize(root.join("opencode.db")).unwrap();
    let parts = oracle(&db, true);
    let cache = dir.path().join("cache");
    let mut nonzero = 0;
    for word in ["diff", "the", "viewer", "build", "error", "file", "zzyzx"] {
        let want: Vec<(String, u64)> = parts
            .iter()
            .filter(|p| has_word(&p.text, word))
            .map(|p| (p.session.clone(), p.index))
            .collect();
        let hits = search(&cache, &root, word);
        assert_eq!(hits.len(), want.len(), "{word}");
        let mut got: Vec<(String, u64)> =
            hits.iter().map(|h| (h.session.clone(), h.offset)).collect();
        let mut want = want;
        got.sort();
        want.sort();
        assert_eq!(
            got, want,
            "{word}: the hits name the parts' sessions and messages"
        );
        nonzero += usize::from(!want.is_empty());
    }
    assert!(nonzero >= 5, "the words are found");
}

/// Writes a message and its text part into the database at `db`; the connection is returned
/// open (its writes stay in the WAL until it closes).
fn write_part(db: &Path, session: &str, n: u32, text: &str) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    let (msg, part) = (format!("msg_zz{n}"), format!("prt_zz{n}"));
    let created = 1_900_000_000_000_i64 + i64::from(n);
    let data = serde_json::json!({"role": "user", "time": {"created": created}}).to_string();
    conn.execute(
        "INSERT INTO message(id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
        rusqlite::params![msg, session, created, data],
    )
    .unwrap();
    let data = serde_json::json!({"type": "text", "text": text}).to_string();
    conn.execute(
        "INSERT INTO part(id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
        rusqlite::params![part, msg, session, created, data],
    )
    .unwrap();
    conn
}

#[test]
fn a_write_to_the_database_is_found_by_the_next_search() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("opencode");
    copy_real(&root, &["opencode.db", "opencode.db-wal"]);
    let db = fs::canonicalize(root.join("opencode.db")).unwrap();
    let cache = dir.path().join("cache");
    assert!(search(&cache, &root, "zebraquux").is_empty());
    let session = oracle(&db, true)[0].session.clone();
    let messages = |db: &Path| {
        let parts = oracle(db, true);
        parts
            .iter()
            .filter(|p| p.session == session)
            .map(|p| p.index)
            .max()
            .unwrap()
    };
    let last = messages(&db);
    // Written into the WAL only (the connection stays open): the next search finds it.
    let conn = write_part(&db, &session, 1, "a zebraquux appears");
    let hits = search(&cache, &root, "zebraquux");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session, session);
    assert!(hits[0].offset > last, "the newest message comes last");
    assert_eq!(hits[0].role.as_deref(), Some("user"));
    // A second write in the WAL alone is seen too.
    drop(write_part(&db, &session, 2, "another zebraquux"));
    drop(conn);
    let hits = search(&cache, &root, "zebraquux");
    assert_eq!(hits.len(), 2, "{hits:?}");
    let mut offsets: Vec<u64> = hits.iter().map(|h| h.offset).collect();
    offsets.sort_unstable();
    assert_eq!(offsets[1], offsets[0] + 1);
    // Checkpointed into the database, the WAL gone: still found, nothing stale.
    assert!(!PathBuf::from(format!("{}-wal", db.display())).exists());
    assert_eq!(search(&cache, &root, "zebraquux").len(), 2);
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
fn search_leaves_the_directory_byte_identical_with_and_without_a_wal() {
    let cases: [&[&str]; 3] = [
        &["opencode.db", "opencode.db-wal", "opencode.db-shm"],
        &["opencode.db", "opencode.db-wal"],
        &["opencode.db"],
    ];
    for files in cases {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("opencode");
        copy_real(&root, files);
        let before = state(&root);
        assert!(!search(&dir.path().join("cache"), &root, "diff").is_empty());
        let cache = dir.path().join("cli-cache");
        let out = Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(["search", "--transcripts", "--index-dir"])
            .arg(&cache)
            .args(["diff", "--json"])
            .arg(&root)
            .env("AGENTLOG_LOG", "error")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["hits"][0]["format"], "opencode", "{json}");
        assert_eq!(state(&root), before, "{files:?}");
    }
}

#[test]
fn cursors_survive_an_unchanged_database_and_go_stale_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("opencode");
    copy_real(&root, &["opencode.db", "opencode.db-wal"]);
    let db = fs::canonicalize(root.join("opencode.db")).unwrap();
    let mut s =
        TranscriptSearch::new(Some(dir.path().join("cache")), SearchConfig::default()).unwrap();
    let request = |cursor: Option<String>| TranscriptSearchRequest {
        query: "diff".into(),
        paths: vec![root.clone()],
        limit: Some(1),
        cursor,
        mode: MatchMode::Phrase,
    };
    let first = s.search(&request(None)).unwrap();
    let cursor = first.next_cursor.clone().expect("more than one hit");
    // Re-read (the copy had not settled) but the same documents: the cursor holds.
    let second = s.search(&request(Some(cursor.clone()))).unwrap();
    assert_eq!(second.hits.len(), 1);
    let session = oracle(&db, true)[0].session.clone();
    let conn = write_part(&db, &session, 9, "a diff written later");
    let stale = s.search(&request(Some(cursor)));
    assert!(
        matches!(stale, Err(agentlog::search::SearchError::StaleCursor)),
        "{stale:?}"
    );
    drop(conn);
}
