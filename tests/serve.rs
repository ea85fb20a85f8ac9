//! `agentlog serve` over HTTP, as a browser's scripts or another site would speak to it: the
//! guard (401 without the token, 403 for a foreign `Host`, 405 for other methods, the cookie
//! and the security headers), the API against naive oracles (sessions, line windows forward
//! and backward, follow by server-sent events), hostile transcripts sent as JSON text only,
//! a damaged transcript failing alone, and nothing written beside the transcripts.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::header::{CONTENT_SECURITY_POLICY, HOST, LOCATION, SET_COOKIE};
use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// A running viewer over a copy of the test transcripts; killed on drop.
struct Viewer {
    child: Child,
    base: String,
    port: u16,
    token: String,
    root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn start(prepare: impl FnOnce(&Path)) -> Viewer {
    start_with(prepare, &[])
}

/// The agentlog binary with the cache and data (archive) directories beside `root`: never the
/// real home's.
fn agentlog(root: &Path) -> Command {
    let dir = root.parent().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentlog"));
    command
        .env("AGENTLOG_CACHE_DIR", dir.join("cache"))
        .env("AGENTLOG_DATA_DIR", dir.join("data"));
    command
}

/// [`start`] with more arguments to `serve`.
fn start_with(prepare: impl FnOnce(&Path), args: &[&str]) -> Viewer {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    copy_dir(&Path::new(DATA).join("transcripts"), &root);
    copy_dir(
        &Path::new(DATA).join("serve/hostile"),
        &root.join("hostile"),
    );
    prepare(&root);
    let mut child = agentlog(&root)
        .args(["serve", "--port", "0", "--json"])
        .args(args)
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let address: Value = serde_json::from_str(&first).unwrap();
    let port = u16::try_from(address["port"].as_u64().unwrap()).unwrap();
    let token = address["token"].as_str().unwrap().to_owned();
    assert_eq!(
        address["url"].as_str().unwrap(),
        format!("http://127.0.0.1:{port}/?token={token}")
    );
    Viewer {
        child,
        base: format!("http://127.0.0.1:{port}"),
        port,
        token,
        root,
        _dir: dir,
    }
}

fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_mins(1))
        .build()
        .unwrap()
}

impl Viewer {
    fn get(&self, path: &str) -> reqwest::blocking::Response {
        client()
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .unwrap()
    }

    fn json(&self, path: &str) -> Value {
        let response = self.get(path);
        assert_eq!(response.status(), 200, "{path}");
        response.json().unwrap()
    }
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(tree(&path));
        } else {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    out
}

#[test]
fn the_guard_refuses_what_it_must() {
    let v = start(|_| {});
    let c = client();
    let url = |p: &str| format!("{}{p}", v.base);
    // No token: 401, pages and API alike; a wrong token too.
    for path in ["/", "/api/sessions", "/assets/common.js", "/sessions/x"] {
        assert_eq!(c.get(url(path)).send().unwrap().status(), 401, "{path}");
    }
    assert_eq!(c.get(url("/?token=wrong")).send().unwrap().status(), 401);
    // A foreign Host (DNS rebinding): 403 even with the token.
    let foreign = c
        .get(url(&format!("/api/sessions?token={}", v.token)))
        .header(HOST, format!("evil.example:{}", v.port))
        .send()
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let localhost = c
        .get(url(&format!("/api/sessions?token={}", v.token)))
        .header(HOST, format!("localhost:{}", v.port))
        .send()
        .unwrap();
    assert_eq!(localhost.status(), 200);
    // Only GET and HEAD.
    for method in [
        reqwest::Method::POST,
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
    ] {
        let r = c
            .request(
                method.clone(),
                url(&format!("/api/sessions?token={}", v.token)),
            )
            .send()
            .unwrap();
        assert_eq!(r.status(), 405, "{method}");
    }
    let head = c
        .head(url("/api/sessions"))
        .bearer_auth(&v.token)
        .send()
        .unwrap();
    assert_eq!(head.status(), 200);
    // The token in a page's address: a strict, HttpOnly cookie and a redirect without it.
    let r = c
        .get(url(&format!("/search?q=a&token={}", v.token)))
        .send()
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()[LOCATION], "/search?q=a");
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let page = c
        .get(url("/search?q=a"))
        .header(reqwest::header::COOKIE, &pair)
        .send()
        .unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_owned();
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(rule), "{csp}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("http"),
        "{csp}"
    );
    // The pages carry no inline script and load nothing from elsewhere.
    for path in ["/", "/sessions/x", "/search", "/usage"] {
        let html = v.get(path).text().unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("http"),
            "{path}: {html}"
        );
        assert!(!html.contains(" on"), "{path} has an inline handler");
    }
}

#[test]
fn sessions_lines_and_follow_match_the_files() {
    let v = start(|_| {});
    let before = tree(&v.root);
    let page = v.json("/api/sessions?limit=500");
    // Every session usage counts, one for one.
    let cli = cli_json(&v.root, &["usage", "--by", "session"]);
    assert_rows_are_usage_rows(page["sessions"].as_array().unwrap(), &cli);
    assert_eq!(
        page["total"].as_u64().unwrap() as usize,
        cli["rows"].as_array().unwrap().len()
    );
    let mut paged = Vec::new();
    let mut cursor = String::new();
    loop {
        let p = v.json(&format!("/api/sessions?limit=3&cursor={cursor}"));
        paged.extend(
            p["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].clone()),
        );
        match p["next_cursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => break,
        }
    }
    let all: Vec<Value> = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    assert_eq!(paged, all, "pages of 3 add up to the whole list");
    // Filters: by agent, the oracle being the unfiltered list.
    let codex = v.json("/api/sessions?agent=codex");
    let want = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["agent"] == "codex")
        .count();
    assert_eq!(codex["total"].as_u64().unwrap() as usize, want);
    assert!(want >= 4);
    // The usage row is usage --by session's: the totals add up to usage's.
    let usage = v.json("/api/usage?by=session");
    let sum: u64 = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["total_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, usage["totals"]["total_tokens"].as_u64().unwrap());

    // Windows through a session, forward then backward, against the file's own lines.
    let id = "agentlogs-compact";
    let row = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap();
    let path = PathBuf::from(row["path"].as_str().unwrap());
    assert_eq!(row["files"][0]["path"], row["path"]);
    assert_eq!(row["from_archive"], false);
    let bytes = std::fs::read(&path).unwrap();
    let mut oracle = Vec::new();
    let mut at = 0u64;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        oracle.push(at);
        at += line.len() as u64;
    }
    let mut offsets = Vec::new();
    let mut next = 0;
    loop {
        let w = v.json(&format!("/api/sessions/{id}/lines?offset={next}&limit=4"));
        offsets.extend(
            w["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["offset"].as_u64().unwrap()),
        );
        next = w["next_offset"].as_u64().unwrap();
        if next >= w["end"].as_u64().unwrap() {
            break;
        }
    }
    assert_eq!(offsets, oracle);
    let tail = v.json(&format!("/api/sessions/{id}/lines?before=end&limit=3"));
    let tail: Vec<u64> = tail["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(tail, oracle[oracle.len() - 3..]);
    assert_eq!(
        v.get(&format!("/api/sessions/{id}/lines?offset=1"))
            .status(),
        400
    );
    let meta = v.json(&format!("/api/sessions/{id}"));
    assert_eq!(meta["report"]["boundaries"].as_array().unwrap().len(), 1);

    // Following: a line appended arrives as an event, from the offset given.
    let mut stream = client()
        .get(format!(
            "{}/api/sessions/{id}/follow?offset={}",
            v.base,
            bytes.len()
        ))
        .bearer_auth(&v.token)
        .send()
        .unwrap();
    assert_eq!(stream.status(), 200);
    let appended = br#"{"type":"user","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"appended while followed"}}"#;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(appended).unwrap();
    file.write_all(b"\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("appended while followed") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("event: lines"), "{text}");
    assert!(
        text.contains(&format!("\"offset\":{}", bytes.len())),
        "{text}"
    );
    drop(stream);

    // Nothing was written beside the transcripts (the appended line aside).
    let mut after = tree(&v.root);
    let mut expected = before;
    expected
        .get_mut(&path)
        .unwrap()
        .extend_from_slice(&[appended.as_slice(), b"\n"].concat());
    after.retain(|p, _| p.starts_with(&v.root));
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    assert!(after == expected);
}

#[test]
fn hostile_text_is_sent_as_json_text_and_a_damaged_transcript_fails_alone() {
    let v = start(|root| {
        std::fs::create_dir_all(root.join("damaged")).unwrap();
        // Valid at its head (so it is a Claude Code transcript), then bytes that are not JSON.
        let mut bytes =
            std::fs::read(Path::new(DATA).join("serve/hostile/hostile-session.jsonl")).unwrap();
        bytes.extend_from_slice(b"\x00\xff{{{ not json\n");
        std::fs::write(root.join("damaged/damaged-session.jsonl"), bytes).unwrap();
    });
    let page = v.json("/api/sessions?q=hostile");
    let rows = page["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "the hostile session and its damaged copy");
    let row = rows.iter().find(|r| r["project"] == "hostile").unwrap();
    assert_eq!(row["id"], "hostile-session");
    assert!(row["title"].as_str().unwrap().starts_with("<script>"));
    let response = v.get("/api/sessions/hostile-session/lines?limit=50");
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    let w: Value = response.json().unwrap();
    let lines = w["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 4);
    assert!(
        lines[0]["json"]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("<script>")
    );
    // The damaged session answers with its own lines, the bad one as text; others still serve.
    let damaged = v.json("/api/sessions/damaged-session/lines?limit=50");
    let last = damaged["lines"].as_array().unwrap().last().unwrap().clone();
    assert!(last["json"].is_null() && last["text"].as_str().unwrap().contains("not json"));
    assert_eq!(
        v.json("/api/sessions/damaged-session")["id"],
        "damaged-session"
    );
    assert_eq!(v.get("/api/sessions/no-such-session").status(), 404);
    assert_eq!(
        v.json("/api/sessions")["total"].as_u64().unwrap() as usize,
        page_total(&v)
    );
    // Search finds hostile text and names its session.
    let hits = v.json("/api/search?q=hostile%20prompt");
    let hits = hits["hits"].as_array().unwrap();
    let mut ids: Vec<&str> = hits.iter().map(|h| h["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["damaged-session", "hostile-session"]);
    assert!(
        hits.iter()
            .all(|h| !h["marks"].as_array().unwrap().is_empty())
    );
}

fn page_total(v: &Viewer) -> usize {
    v.json("/api/sessions?limit=500")["sessions"]
        .as_array()
        .unwrap()
        .len()
}

/// `agentlog ARGS... ROOT --json` beside `root`, its JSON.
fn cli_json(root: &Path, args: &[&str]) -> Value {
    let out = agentlog(root)
        .args(args)
        .arg(root)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn usage_counts_an_archived_transcript_whose_original_is_gone() {
    const GONE: &str =
        "codex/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl";
    // No archive: the data directory is absent and the answer is the CLI's.
    let v = start(|_| {});
    let before = v.json("/api/usage?by=session&limit=10000");
    assert!(!v.root.parent().unwrap().join("data").exists());
    assert_eq!(before["archive_only_sessions"], 0, "{before}");
    let cli = cli_json(&v.root, &["usage", "--by", "session"]);
    assert_eq!(before["totals"], cli["totals"]);
    let skipped = before["skipped"].as_array().map_or(0, Vec::len);
    drop(v);

    // Archived, then deleted: the totals before the deletion.
    let archive_then_delete = |root: &Path| {
        let archived = cli_json(root, &["archive"]);
        assert!(archived["new_sources"].as_u64().unwrap() > 0, "{archived}");
        std::fs::remove_file(root.join(GONE)).unwrap();
    };
    let v = start(archive_then_delete);
    let after = v.json("/api/usage?by=session&limit=10000");
    assert_eq!(after["totals"], before["totals"]);
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["archive_only_sessions"], 1);
    assert_eq!(after["skipped"].as_array().map_or(0, Vec::len), skipped);
    drop(v);

    // --no-archive: the originals alone, as the CLI reads them.
    let v = start_with(archive_then_delete, &["--no-archive"]);
    let originals = v.json("/api/usage?by=session&limit=10000");
    let cli = cli_json(&v.root, &["usage", "--by", "session", "--no-archive"]);
    assert_eq!(originals["totals"], cli["totals"]);
    assert_ne!(originals["totals"], before["totals"]);
    assert_eq!(originals["archive_only_sessions"], 0);
}

/// The rows of a JSON report's `key` (a day, a project, ...) as a map.
fn rows_by(report: &Value, key: &str) -> BTreeMap<String, Value> {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r[key].as_str().unwrap().to_owned(), r.clone()))
        .collect()
}

#[test]
fn usage_split_by_model_and_blocks_are_the_library_answers() {
    let v = start(|_| {});
    // Blocks: the rows of `usage --by block --json`.
    let blocks = v.json("/api/usage?by=block&limit=10000");
    let cli = cli_json(&v.root, &["usage", "--by", "block"]);
    assert!(!cli["rows"].as_array().unwrap().is_empty());
    assert_eq!(blocks["rows"], cli["rows"]);
    assert_eq!(blocks["totals"], cli["totals"]);
    assert!(blocks.get("by_model").is_none(), "no split asked for");

    // Days split by model. The oracle for each day: the by-model report of that day alone.
    let split = v.json("/api/usage?by=day&split=model&limit=10000");
    let days = rows_by(&split, "day");
    let by_model = split["by_model"].as_object().unwrap();
    assert_eq!(
        by_model.keys().collect::<Vec<_>>(),
        days.keys().collect::<Vec<_>>()
    );
    let mut models_seen = 0;
    for (day, row) in &days {
        let parts = by_model[day].as_array().unwrap();
        let sum: u64 = parts
            .iter()
            .map(|p| p["total_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, row["total_tokens"].as_u64().unwrap(), "{day}");
        let names: Vec<&Value> = parts.iter().map(|p| &p["model"]).collect();
        assert_eq!(
            names,
            row["models"].as_array().unwrap().iter().collect::<Vec<_>>()
        );
        models_seen += parts.len();
        if day != "unknown" {
            let alone = v.json(&format!("/api/usage?by=model&since={day}&until={day}"));
            assert_eq!(&alone["rows"], &by_model[day], "{day}");
        }
    }
    assert!(models_seen > days.len(), "some day has more than one model");
    // The split leaves the rows as they were.
    assert_eq!(
        split["rows"],
        v.json("/api/usage?by=day&limit=10000")["rows"]
    );

    // Projects split by model add up to their rows.
    let split = v.json("/api/usage?by=project&split=model&limit=10000");
    for (project, row) in rows_by(&split, "project") {
        let parts = split["by_model"][&project].as_array().unwrap();
        let sum: u64 = parts.iter().map(|p| p["messages"].as_u64().unwrap()).sum();
        assert_eq!(sum, row["messages"].as_u64().unwrap(), "{project}");
    }

    // A cut keeps the split of the rows kept; bad arguments are refused.
    let cut = v.json("/api/usage?by=day&split=model&limit=1");
    assert_eq!(cut["by_model"].as_object().unwrap().len(), 1);
    for bad in [
        "by=year",
        "split=agent",
        "timezone=Mars/Olympus",
        "since=someday",
    ] {
        assert_eq!(v.get(&format!("/api/usage?{bad}")).status(), 400, "{bad}");
    }
}

/// The listing's rows against `usage --by session --json`'s, one for one: each usage row is
/// listed once with its figures; a listed session without a usage row has none.
fn assert_rows_are_usage_rows(listed: &[Value], usage: &Value) {
    let rows = usage["rows"].as_array().unwrap();
    let same = |a: &Value, b: &Value| a["session"] == b["session"] && a["project"] == b["project"];
    for row in rows {
        let found: Vec<&Value> = listed.iter().filter(|s| same(s, row)).collect();
        assert_eq!(found.len(), 1, "{row}");
        for field in [
            "agent",
            "input_tokens",
            "output_tokens",
            "cache_creation_tokens",
            "cache_read_tokens",
            "reasoning_output_tokens",
            "total_tokens",
            "messages",
            "cost_usd",
            "models",
            "last_activity",
        ] {
            assert_eq!(found[0][field], row[field], "{field} of {row}");
        }
    }
    for s in listed.iter().filter(|s| !rows.iter().any(|r| same(s, r))) {
        assert_eq!(s["total_tokens"], 0, "{s}");
        assert_eq!(s["messages"], 0, "{s}");
    }
}

/// Every file under `dir` with its bytes and mtime.
fn stat_tree(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    tree(dir)
        .into_iter()
        .map(|(p, bytes)| {
            let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, (bytes, mtime))
        })
        .collect()
}

/// The messages of an `OpenCode` root session and its subagents' sessions, read from a copy of
/// the database with SQLite itself.
fn opencode_messages(db: &Path, root: &str) -> usize {
    let dir = tempfile::tempdir().unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", db.display()));
        if from.exists() {
            std::fs::copy(&from, dir.path().join(format!("opencode.db{suffix}"))).unwrap();
        }
    }
    let conn = rusqlite::Connection::open(dir.path().join("opencode.db")).unwrap();
    let parents: Vec<(String, Option<String>)> = conn
        .prepare("SELECT id, parent_id FROM session")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let root_of = |mut id: String| {
        while let Some((_, Some(parent))) = parents.iter().find(|(i, _)| *i == id) {
            id.clone_from(parent);
        }
        id
    };
    let sessions: Vec<String> = conn
        .prepare("SELECT session_id FROM message")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    sessions
        .into_iter()
        .filter(|s| root_of(s.clone()) == root)
        .count()
}

#[test]
fn the_sessions_page_lists_every_session_usage_counts_and_opens_each() {
    const GONE: &str = "claude-code/agentlogs-crud.jsonl";
    let mut opencode_before = BTreeMap::new();
    let mut gone_bytes = Vec::new();
    let v = start(|root| {
        let archived = cli_json(root, &["archive"]);
        assert!(archived["new_sources"].as_u64().unwrap() > 0, "{archived}");
        gone_bytes = std::fs::read(root.join(GONE)).unwrap();
        std::fs::remove_file(root.join(GONE)).unwrap();
        opencode_before = stat_tree(&root.join("opencode"));
    });
    let page = v.json("/api/sessions?limit=500");
    let listed = page["sessions"].as_array().unwrap();
    let usage = cli_json(&v.root, &["usage", "--by", "session"]);
    assert_eq!(usage["archive_only_sessions"], 1);
    assert_eq!(page["archive_only_sessions"], 1);
    assert_rows_are_usage_rows(listed, &usage);
    let sum: u64 = listed
        .iter()
        .map(|s| s["total_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, usage["totals"]["total_tokens"].as_u64().unwrap());
    assert_eq!(page["next_cursor"], Value::Null);

    // Newest first: by end, then start.
    let ends: Vec<&str> = listed.iter().filter_map(|s| s["end"].as_str()).collect();
    let mut sorted = ends.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ends, sorted);

    // Every agent name filters to the rows of that agent.
    for agent in [
        "claude-code",
        "codex",
        "pi",
        "gemini",
        "copilot",
        "opencode",
        "qwen",
        "kimi",
    ] {
        let want: Vec<&Value> = listed
            .iter()
            .filter(|s| s["agent"].as_str().unwrap().split(',').any(|a| a == agent))
            .map(|s| &s["id"])
            .collect();
        assert!(!want.is_empty(), "{agent} has sessions in the test data");
        let got = v.json(&format!("/api/sessions?agent={agent}&limit=500"));
        let got: Vec<&Value> = got["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["id"])
            .collect();
        assert_eq!(got, want, "{agent}");
    }
    assert_eq!(v.get("/api/sessions?agent=nobody").status(), 400);

    // The archived-then-deleted transcript: listed from the archive, its lines the archived
    // bytes' lines.
    let gone_path = v.root.join(GONE);
    let gone = listed
        .iter()
        .find(|s| s["path"].as_str() == Some(gone_path.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{GONE} is listed"));
    assert_eq!(gone["from_archive"], true);
    assert!(gone["files"][0]["copy"].is_string(), "{gone}");
    assert!(gone["total_tokens"].as_u64().unwrap() > 0);
    let id = gone["id"].as_str().unwrap();
    let w = v.json(&format!("/api/sessions/{id}/lines?limit=500"));
    let mut oracle = Vec::new();
    let mut at = 0u64;
    for line in gone_bytes.split_inclusive(|&b| b == b'\n') {
        oracle.push(at);
        at += line.len() as u64;
    }
    let offsets: Vec<u64> = w["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(offsets, oracle);
    assert_eq!(w["end"].as_u64().unwrap(), gone_bytes.len() as u64);
    let meta = v.json(&format!("/api/sessions/{id}"));
    assert!(meta["report"].is_object(), "{meta}");
    assert!(meta["error"].is_null());

    // The OpenCode session: its messages, a page at a time, by place; nothing to follow.
    let db = v.root.join("opencode/JulesGuiCs-dda98e9/opencode.db");
    let oc = listed.iter().find(|s| s["agent"] == "opencode").unwrap();
    assert_eq!(oc["path"].as_str().unwrap(), db.to_str().unwrap());
    assert!(oc["title"].is_string() && oc["start"].is_string() && oc["end"].is_string());
    let id = oc["id"].as_str().unwrap();
    let meta = v.json(&format!("/api/sessions/{id}"));
    assert_eq!(meta["format"], "opencode");
    let want = opencode_messages(&db, oc["session"].as_str().unwrap());
    assert!(want > 5);
    let (mut seen, mut next) = (Vec::new(), 0);
    loop {
        let w = v.json(&format!("/api/sessions/{id}/lines?offset={next}&limit=4"));
        assert_eq!(w["end"].as_u64().unwrap() as usize, want);
        let lines = w["lines"].as_array().unwrap();
        for l in lines {
            assert_eq!(l["type"], "message");
            assert!(l["json"]["role"].is_string(), "{l}");
            seen.push(l["offset"].as_u64().unwrap());
        }
        next = w["next_offset"].as_u64().unwrap();
        if next >= want as u64 {
            break;
        }
    }
    assert_eq!(seen, (0..want as u64).collect::<Vec<_>>());
    let tail = v.json(&format!("/api/sessions/{id}/lines?before=end&limit=3"));
    let tail: Vec<u64> = tail["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(tail, [want as u64 - 3, want as u64 - 2, want as u64 - 1]);
    let earlier = v.json(&format!("/api/sessions/{id}/lines?before=5&limit=3"));
    let earlier: Vec<u64> = earlier["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(earlier, [2, 3, 4]);
    let follow = v.get(&format!("/api/sessions/{id}/follow"));
    assert_eq!(follow.status(), 409);
    let body: Value = follow.json().unwrap();
    assert_eq!(body["error"], "not_line_addressable");

    // The OpenCode directory is as it was: listing, bytes and mtimes.
    assert_eq!(stat_tree(&v.root.join("opencode")), opencode_before);
}
