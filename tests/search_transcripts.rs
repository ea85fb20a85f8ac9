//! Transcript search against a plain scan of the transcript files: the vendored real
//! transcripts, generated ones, and (by proptest) files that grow, tear, shrink and are
//! rewritten between searches.

// Test data is small; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::indexing_slicing
)]

mod search_common;

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentlog::search::{
    MatchMode, SearchConfig, SearchError, TranscriptSearch, TranscriptSearchRequest,
    transcript_line_text,
};
use agentlog::transcript::{Format, detect_format, discover, fold_bytes, session_of};
use proptest::prelude::*;
use serde_json::json;

use search_common::{matches, phrases, sanitize, snippet, tokens};

/// One hit, as compared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    file: PathBuf,
    session: String,
    offset: u64,
    line: u64,
    generation: u32,
    kind: String,
    role: Option<String>,
    time: Option<i64>,
    snippet: String,
}

/// The oracle: every complete line of every file under `root`, its text by the same
/// extraction, matched by the unicode61 phrase rules, ranked by the same keys.
fn scan(root: &Path, query: &str, mode: MatchMode) -> Vec<Hit> {
    let wanted = phrases(query, mode == MatchMode::All);
    let (files, _) = discover(&[root.to_path_buf()]);
    let mut found: Vec<(usize, usize, u64, Hit)> = Vec::new();
    for file in files {
        if file.extension().is_some_and(|e| e == "db") {
            found.extend(opencode_hits(&file, &wanted));
            continue;
        }
        let bytes = fs::read(&file).unwrap();
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let bytes = &bytes[..complete];
        let Some(format) = detect_format(bytes.split(|b| *b == b'\n')) else {
            continue;
        };
        let fold = fold_bytes(format, bytes);
        let boundaries: Vec<u64> = fold.summary().boundaries.iter().map(|b| b.offset).collect();
        let session = session_of(&file, format).0;
        let mut offset = 0u64;
        // `bytes` ends with a newline, so every piece is a complete line.
        for (i, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
            let line = &line[..line.len() - 1];
            let at = offset;
            offset += line.len() as u64 + 1;
            let Some(doc) = transcript_line_text(format, line) else {
                continue;
            };
            let text = sanitize(&doc.text);
            let toks = tokens(&text);
            let Some(ranges) = matches(&toks, &wanted) else {
                continue;
            };
            found.push((
                ranges.len(),
                text.chars().count(),
                0,
                Hit {
                    file: file.clone(),
                    session: session.clone(),
                    offset: at,
                    line: i as u64 + 1,
                    generation: boundaries.partition_point(|b| *b <= at) as u32,
                    kind: doc.kind,
                    role: doc.role,
                    time: doc.time,
                    snippet: snippet(&text, &toks, &ranges, 240),
                },
            ));
        }
    }
    found.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(b.3.time.cmp(&a.3.time))
            .then(
                a.3.file
                    .as_os_str()
                    .as_bytes()
                    .cmp(b.3.file.as_os_str().as_bytes()),
            )
            .then(b.3.offset.cmp(&a.3.offset))
            .then(a.2.cmp(&b.2))
    });
    found.into_iter().map(|(_, _, _, hit)| hit).collect()
}

/// The parts of an `OpenCode` database (with its WAL) as the search reads them, by a plain
/// reading of the rule: SQLite on a copy; a session's messages in the order of their
/// `time.created` (none last), then id; a `text` part's text, a `tool` part's tool, input and
/// output (strings as they are, anything else as JSON), trimmed, empty ones dropped, joined by
/// newlines. Each with its ordinal in the database (session, message, part id).
fn opencode_parts(db: &Path) -> Vec<(u64, Hit, String)> {
    let copy = tempfile::tempdir().unwrap();
    let target = copy.path().join("opencode.db");
    fs::copy(db, &target).unwrap();
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    if Path::new(&wal).exists() {
        fs::copy(&wal, copy.path().join("opencode.db-wal")).unwrap();
    }
    let conn = rusqlite::Connection::open(&target).unwrap();
    let rows = |sql: &str| -> Vec<(String, String, String)> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let mut messages = rows("SELECT id, session_id, data FROM message");
    let time = |data: &str| {
        serde_json::from_str::<serde_json::Value>(data).unwrap()["time"]["created"].as_i64()
    };
    messages.sort_by_key(|(id, session, data)| {
        let t = time(data);
        (session.clone(), t.is_none(), t, id.clone())
    });
    let mut parts = rows("SELECT id, message_id, data FROM part");
    parts.sort();
    let mut out = Vec::new();
    let mut index = 0u64;
    let mut last_session = None;
    for (id, session, data) in &messages {
        if last_session.as_ref() != Some(session) {
            index = 0;
            last_session = Some(session.clone());
        }
        let m: serde_json::Value = serde_json::from_str(data).unwrap();
        for (_, _, part) in parts.iter().filter(|(_, msg, _)| msg == id) {
            let p: serde_json::Value = serde_json::from_str(part).unwrap();
            let as_text = |v: &serde_json::Value| match v {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let pieces = match p["type"].as_str() {
                Some("text") => vec![as_text(&p["text"])],
                Some("tool") => vec![
                    as_text(&p["tool"]),
                    as_text(&p["state"]["input"]),
                    as_text(&p["state"]["output"]),
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
            let hit = Hit {
                file: db.to_path_buf(),
                session: session.clone(),
                offset: index,
                line: index + 1,
                generation: 0,
                kind: p["type"].as_str().unwrap().to_owned(),
                role: m["role"].as_str().map(str::to_owned),
                time: time(data),
                snippet: String::new(),
            };
            out.push((out.len() as u64, hit, pieces.join("\n")));
        }
        index += 1;
    }
    out
}

/// The hits of an `OpenCode` database: its parts' texts matched as a line's.
fn opencode_hits(db: &Path, wanted: &[Vec<String>]) -> Vec<(usize, usize, u64, Hit)> {
    let mut found = Vec::new();
    for (ordinal, mut hit, text) in opencode_parts(db) {
        let text = sanitize(&text);
        let toks = tokens(&text);
        let Some(ranges) = matches(&toks, wanted) else {
            continue;
        };
        hit.snippet = snippet(&text, &toks, &ranges, 240);
        found.push((ranges.len(), text.chars().count(), ordinal, hit));
    }
    found
}

/// Every hit of the index, page by page.
fn search_all(
    search: &mut TranscriptSearch,
    root: &Path,
    query: &str,
    mode: MatchMode,
    limit: u64,
) -> Result<Vec<Hit>, SearchError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = search.search(&TranscriptSearchRequest {
            query: query.into(),
            paths: vec![root.to_path_buf()],
            limit: Some(limit),
            cursor: cursor.take(),
            mode,
        })?;
        out.extend(page.hits.into_iter().map(|h| Hit {
            file: h.file,
            session: h.session,
            offset: h.offset,
            line: h.line,
            generation: h.generation,
            kind: h.kind,
            role: h.role,
            time: h.time,
            snippet: h.snippet,
        }));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn vendored() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transcripts")
}

const REAL_QUERIES: [&str; 10] = [
    "haiku",
    "the",
    "compact",
    "file",
    "joke",
    "cargo test",
    "write a",
    "Café",
    "read the file",
    "summary",
];

#[test]
fn the_real_transcripts_answer_as_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    copy_tree(&vendored(), &root);
    let mut search =
        TranscriptSearch::new(Some(dir.path().join("cache")), SearchConfig::default()).unwrap();
    let mut total = 0;
    let mut later_generation = false;
    for query in REAL_QUERIES {
        for mode in [MatchMode::Phrase, MatchMode::All] {
            let want = scan(&root, query, mode);
            let got = search_all(&mut search, &root, query, mode, 37).unwrap();
            assert_eq!(got, want, "{query:?} {mode:?}");
            total += got.len();
            later_generation |= got.iter().any(|h| h.generation > 0);
        }
    }
    assert!(total > 100, "the queries find something ({total})");
    assert!(later_generation, "some hit lies after a compaction");
}

#[test]
fn the_index_folders_are_private_and_nothing_is_written_beside_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    copy_tree(&vendored(), &root);
    let listing = |p: &Path| {
        let mut names: Vec<PathBuf> = walk(p);
        names.sort();
        names
    };
    let before = listing(&root);
    let cache = dir.path().join("cache");
    let mut search = TranscriptSearch::new(Some(cache.clone()), SearchConfig::default()).unwrap();
    search_all(&mut search, &root, "file", MatchMode::Phrase, 100).unwrap();
    assert_eq!(listing(&root), before);
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cache), 0o700);
    assert_eq!(mode(search.dir()), 0o700);
    for file in fs::read_dir(search.dir()).unwrap() {
        assert_eq!(mode(&file.unwrap().path()), 0o600);
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_deleted_or_damaged_index_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    copy_tree(&vendored(), &root);
    let cache = dir.path().join("cache");
    let want = scan(&root, "file", MatchMode::Phrase);
    let mut search = TranscriptSearch::new(Some(cache.clone()), SearchConfig::default()).unwrap();
    assert_eq!(
        search_all(&mut search, &root, "file", MatchMode::Phrase, 100).unwrap(),
        want
    );
    let index = search.dir().join("index.sqlite");
    fs::write(&index, b"not a database, someone else's bytes").unwrap();
    let mut again = TranscriptSearch::new(Some(cache.clone()), SearchConfig::default()).unwrap();
    assert_eq!(
        search_all(&mut again, &root, "file", MatchMode::Phrase, 100).unwrap(),
        want
    );
    fs::remove_dir_all(&cache).unwrap();
    assert_eq!(
        search_all(&mut again, &root, "file", MatchMode::Phrase, 100).unwrap(),
        want
    );
}

#[test]
fn cursors_go_stale_when_a_searched_file_changes_and_unreadable_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    copy_tree(&vendored().join("pi"), &root);
    let mut search =
        TranscriptSearch::new(Some(dir.path().join("cache")), SearchConfig::default()).unwrap();
    let request = TranscriptSearchRequest {
        query: "haiku".into(),
        paths: vec![root.clone()],
        limit: Some(1),
        ..TranscriptSearchRequest::default()
    };
    let first = search.search(&request).unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    let second = search
        .search(&TranscriptSearchRequest {
            cursor: Some(cursor.clone()),
            ..request.clone()
        })
        .unwrap();
    assert_ne!(first.hits, second.hits);
    let other = TranscriptSearchRequest {
        query: "other".into(),
        cursor: Some(cursor.clone()),
        ..request.clone()
    };
    assert_eq!(search.search(&other).unwrap_err().code(), "invalid_cursor");
    fs::write(root.join("notes.jsonl"), b"{\"hello\":1}\n").unwrap();
    let page = search.search(&request).unwrap();
    assert_eq!(page.unreadable.len(), 1);
    assert_eq!(page.unreadable[0].error, "unknown_format");
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(root.join("agentlogs-crud.jsonl"))
        .unwrap();
    f.write_all(b"{\"type\":\"message\",\"id\":\"zz\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"one more haiku\"}}\n")
        .unwrap();
    let stale = search.search(&TranscriptSearchRequest {
        cursor: Some(page.next_cursor.unwrap()),
        ..request.clone()
    });
    assert_eq!(stale.unwrap_err().code(), "stale_cursor");
}

// ---- generated transcripts ----

const WORDS: [&str; 12] = [
    "alpha", "beta", "gamma", "Café", "cafe", "delta", "needle", "hay", "stack", "ÉTÉ", "x1", "42",
];

fn sentence(picks: &[usize]) -> String {
    picks
        .iter()
        .map(|i| WORDS[i % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line of `format`: a message with `text` (kind 0-2), a boundary (3) or noise (4).
fn line(format: Format, kind: usize, text: &str, n: usize) -> String {
    let ts = format!("2026-01-01T00:{:02}:{:02}Z", (n / 60) % 60, n % 60);
    let v = match (format, kind) {
        (Format::ClaudeCode, 0) => {
            json!({"type":"user","uuid":format!("u{n}"),"sessionId":"s","timestamp":ts,"message":{"role":"user","content":text}})
        }
        (Format::ClaudeCode, 1) => {
            json!({"type":"assistant","uuid":format!("a{n}"),"sessionId":"s","timestamp":ts,"message":{"id":format!("m{n}"),"role":"assistant","content":[{"type":"text","text":text},{"type":"tool_use","name":"Bash","input":{"command":text}}],"usage":{"input_tokens":1,"output_tokens":1}}})
        }
        (Format::ClaudeCode, 2) => {
            json!({"type":"user","uuid":format!("r{n}"),"sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":text}]}]}})
        }
        (Format::ClaudeCode, 3) => {
            json!({"type":"system","subtype":"compact_boundary","uuid":format!("b{n}"),"sessionId":"s","compactMetadata":{"trigger":"auto","preTokens":10}})
        }
        (Format::Codex, 0 | 1) => {
            let (role, block) = if kind == 0 {
                ("user", "input_text")
            } else {
                ("assistant", "output_text")
            };
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"message","role":role,"content":[{"type":block,"text":text}]}})
        }
        (Format::Codex, 2) => {
            json!({"timestamp":ts,"type":"response_item","payload":{"type":"function_call","name":"exec","arguments":text}})
        }
        (Format::Codex, 3) => {
            json!({"timestamp":ts,"type":"compacted","payload":{"message":text}})
        }
        (Format::Pi, 0..=2) => {
            let role = ["user", "assistant", "toolResult"][kind];
            json!({"type":"message","id":format!("e{n}"),"parentId":null,"timestamp":ts,"message":{"role":role,"content":[{"type":"text","text":text}]}})
        }
        (Format::Pi, 3) => {
            json!({"type":"compaction","id":format!("c{n}"),"parentId":null,"summary":text,"tokensBefore":5})
        }
        (Format::Copilot, 0..=2) => {
            let kind = [
                "user.message",
                "assistant.message",
                "tool.execution_complete",
            ][kind];
            json!({"type":kind,"id":format!("e{n}"),"timestamp":ts,"data":{"content":text,"result":{"content":text},"outputTokens":1}})
        }
        (Format::Copilot, 3) => {
            json!({"type":"session.compaction_complete","id":format!("c{n}"),"timestamp":ts,"data":{"summaryContent":text}})
        }
        (Format::Gemini, 0 | 1) => {
            let kind = ["user", "gemini"][kind];
            json!({"id":format!("g{n}"),"timestamp":ts,"type":kind,"content":[{"text":text}],"tokens":{"input":2,"output":1}})
        }
        (Format::Gemini, 2) => {
            json!({"id":format!("g{n}"),"timestamp":ts,"type":"gemini","content":"","toolCalls":[{"name":"run","args":{"cmd":text}}]})
        }
        (Format::Gemini, 3) => json!({"$set":{"messages":[]}}),
        (Format::Qwen, 0..=2) => {
            let (kind, role) = [
                ("user", "user"),
                ("assistant", "model"),
                ("tool_result", "user"),
            ][kind];
            json!({"uuid":format!("q{n}"),"sessionId":"s","timestamp":ts,"type":kind,"message":{"role":role,"parts":[{"text":text}]},"usageMetadata":{"promptTokenCount":3}})
        }
        (Format::Qwen, 3) => {
            json!({"uuid":format!("c{n}"),"sessionId":"s","timestamp":ts,"type":"system","subtype":"chat_compression"})
        }
        (Format::Kimi, 0) => {
            json!({"type":"context.append_message","time":n,"message":{"role":"user","content":[{"type":"text","text":text}]}})
        }
        (Format::Kimi, 1) => {
            json!({"type":"context.append_loop_event","time":n,"event":{"type":"content.part","part":{"type":"text","text":text}}})
        }
        (Format::Kimi, 2) => {
            json!({"type":"context.append_loop_event","time":n,"event":{"type":"tool.result","result":{"output":text}}})
        }
        (Format::Kimi, 3) => {
            json!({"type":"context.apply_compaction","time":n,"summary":text})
        }
        (_, _) => json!({"type":"noise","n":n}),
    };
    format!("{v}\n")
}

/// The formats written as lines (an `OpenCode` database is not one).
const LINE_FORMATS: [Format; 3] = [Format::ClaudeCode, Format::Codex, Format::Pi];

/// The first line, which tells the format.
fn header(format: Format) -> String {
    let v = match format {
        Format::ClaudeCode => {
            json!({"type":"user","uuid":"h","sessionId":"s","message":{"role":"user","content":"start"}})
        }
        Format::Codex => json!({"type":"session_meta","payload":{"id":"x"}}),
        Format::Pi => json!({"type":"session","version":3,"id":"x","cwd":"/"}),
        Format::Copilot => json!({"type":"session.start","id":"x","data":{"context":{"cwd":"/"}}}),
        Format::Gemini => json!({"sessionId":"s","projectHash":"h","startTime":"t","kind":"main"}),
        Format::Qwen => {
            json!({"uuid":"h","sessionId":"s","type":"user","message":{"role":"user","parts":[{"text":"start"}]}})
        }
        Format::OpenCode => unreachable!("not a line format"),
        Format::Kimi => json!({"type":"metadata","protocol_version":"1.4"}),
    };
    format!("{v}\n")
}

fn file_name(format: Format) -> &'static str {
    match format {
        Format::ClaudeCode => "claude/p/session.jsonl",
        Format::Codex => "codex/rollout-1.jsonl",
        Format::Pi => "pi/p/s.jsonl",
        Format::Copilot => "copilot/s/events.jsonl",
        Format::Gemini => "gemini/p/chats/session-2026-01-01T00-00-abcd1234.jsonl",
        Format::Qwen => "qwen/p/chats/s.jsonl",
        Format::OpenCode => unreachable!("not a line format"),
        Format::Kimi => "kimi/g/s/wire.jsonl",
    }
}

#[test]
fn generated_transcripts_answer_as_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    for (f, format) in LINE_FORMATS.into_iter().enumerate() {
        let path = root.join(file_name(format));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = header(format);
        for n in 0..200 {
            let picks = [n * 7 + f, n * 3 + 1, n + 2, n * 5];
            text.push_str(&line(format, (n * 13 + f) % 5, &sentence(&picks), n));
        }
        fs::write(&path, text).unwrap();
    }
    let mut search =
        TranscriptSearch::new(Some(dir.path().join("cache")), SearchConfig::default()).unwrap();
    for query in [
        "needle",
        "cafe",
        "ete x1",
        "alpha beta",
        "42 hay",
        "stack needle",
    ] {
        for mode in [MatchMode::Phrase, MatchMode::All] {
            let want = scan(&root, query, mode);
            assert!(!want.is_empty(), "{query}");
            assert_eq!(
                search_all(&mut search, &root, query, mode, 100).unwrap(),
                want,
                "{query:?} {mode:?}"
            );
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Complete lines (kinds and word picks).
    Append(usize, Vec<(usize, Vec<usize>)>),
    /// Part of a line, without its newline.
    Tear(usize, usize),
    /// The rest of the torn line, with its newline.
    Complete(usize),
    /// Cut the file to a fraction of its length (per mille).
    Truncate(usize, u16),
    /// New content from scratch.
    Rewrite(usize, Vec<(usize, Vec<usize>)>),
    Delete(usize),
    Search(Vec<usize>, bool),
}

fn lines() -> impl Strategy<Value = Vec<(usize, Vec<usize>)>> {
    prop::collection::vec((0..5usize, prop::collection::vec(0..12usize, 1..5)), 1..6)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, lines()).prop_map(|(f, l)| Op::Append(f, l)),
        2 => (0..3usize, 1..40usize).prop_map(|(f, n)| Op::Tear(f, n)),
        2 => (0..3usize).prop_map(Op::Complete),
        1 => (0..3usize, 0..1000u16).prop_map(|(f, p)| Op::Truncate(f, p)),
        1 => (0..3usize, lines()).prop_map(|(f, l)| Op::Rewrite(f, l)),
        1 => (0..3usize).prop_map(Op::Delete),
        3 => (prop::collection::vec(0..12usize, 1..3), any::<bool>()).prop_map(|(w, a)| Op::Search(w, a)),
    ]
}

/// The rest of each file's torn line, if its last write tore one.
type Pending = [Option<Vec<u8>>; 3];

fn apply(root: &Path, op: &Op, counter: &mut usize, pending: &mut Pending) {
    let path_of = |f: usize| root.join(file_name(LINE_FORMATS[f]));
    let body = |f: usize, lines: &[(usize, Vec<usize>)], counter: &mut usize| {
        let mut text = String::new();
        for (kind, picks) in lines {
            *counter += 1;
            text.push_str(&line(LINE_FORMATS[f], *kind, &sentence(picks), *counter));
        }
        text
    };
    match op {
        Op::Append(f, _) | Op::Truncate(f, _) | Op::Rewrite(f, _) | Op::Delete(f) => {
            pending[*f] = None;
        }
        _ => {}
    }
    match op {
        Op::Append(f, lines) => {
            let path = path_of(*f);
            let mut text = if path.exists() {
                String::new()
            } else {
                header(LINE_FORMATS[*f])
            };
            text.push_str(&body(*f, lines, counter));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut file = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            file.write_all(text.as_bytes()).unwrap();
        }
        Op::Tear(f, n) => {
            let path = path_of(*f);
            if path.exists() {
                *counter += 1;
                let whole = line(LINE_FORMATS[*f], 0, "needle torn", *counter);
                let cut = (*n).min(whole.len() - 1);
                let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
                file.write_all(&whole.as_bytes()[..cut]).unwrap();
                pending[*f] = Some(whole.as_bytes()[cut..].to_vec());
            }
        }
        Op::Complete(f) => {
            if let Some(rest) = pending[*f].take() {
                let mut file = fs::OpenOptions::new()
                    .append(true)
                    .open(path_of(*f))
                    .unwrap();
                file.write_all(&rest).unwrap();
            }
        }
        Op::Truncate(f, per_mille) => {
            let path = path_of(*f);
            if path.exists() {
                let len = fs::metadata(&path).unwrap().len();
                let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
                file.set_len(len * u64::from(*per_mille) / 1000).unwrap();
            }
        }
        Op::Rewrite(f, lines) => {
            let path = path_of(*f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut text = header(LINE_FORMATS[*f]);
            text.push_str(&body(*f, lines, counter));
            fs::write(&path, text).unwrap();
        }
        Op::Delete(f) => {
            let _ = fs::remove_file(path_of(*f));
        }
        Op::Search(..) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn the_index_answers_as_a_scan_of_the_files_as_they_are_now(
        ops in prop::collection::vec(op(), 1..25),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        fs::create_dir_all(&root).unwrap();
        let mut search =
            TranscriptSearch::new(Some(dir.path().join("cache")), SearchConfig::default()).unwrap();
        let mut counter = 0;
        let mut pending: Pending = [None, None, None];
        for op in &ops {
            apply(&root, op, &mut counter, &mut pending);
            let (query, all) = match op {
                Op::Search(words, all) => (sentence(words), *all),
                _ => ("needle".to_owned(), false),
            };
            let mode = if all { MatchMode::All } else { MatchMode::Phrase };
            let want = scan(&root, &query, mode);
            let got = search_all(&mut search, &root, &query, mode, 7).unwrap();
            prop_assert_eq!(got, want, "{:?} {:?}", query, mode);
        }
    }
}
