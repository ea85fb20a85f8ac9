//! `agentlog mcp` spoken to as a client would: JSON-RPC lines over the child's stdin and
//! stdout, on copies of the vendored real transcripts. Each tool's answer is checked against
//! the CLI's `--json` or a plain reading of the files; bad arguments are tool errors; the
//! sources are left as they were.

// Test data is small; a failing helper fails its test.
#![cfg(feature = "mcp")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::needless_pass_by_value
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_agentlog");

/// A running server and the next request id.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    fn start(args: &[&str], cache: &Path) -> Client {
        let mut child = Command::new(BIN)
            .arg("mcp")
            .args(args)
            .env("AGENTLOG_CACHE_DIR", cache)
            .env("AGENTLOG_DATA_DIR", data_dir(cache))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = Client {
            child,
            stdin,
            stdout,
            next: 1,
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "agentlog");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// A tool call: whether it is an error, and its `structuredContent`.
    fn call(&mut self, tool: &str, args: Value) -> (bool, Value) {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &reply["result"];
        assert!(result.is_object(), "{reply}");
        // The same JSON as text beside the structured content, for clients without it.
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, result["structuredContent"]);
        (
            result["isError"] == true,
            result["structuredContent"].clone(),
        )
    }

    fn stop(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success());
    }
}

/// The data directory (the archive's) beside a cache directory: never the real home's.
fn data_dir(cache: &Path) -> PathBuf {
    cache.parent().unwrap().join("data")
}

/// A copy of the vendored transcripts, and a cache directory beside it.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("transcripts");
    copy_tree(Path::new("tests/data/transcripts"), &root);
    let cache = dir.path().join("cache");
    (dir, root, cache)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `root` with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(path).unwrap());
            }
        }
    }
    files
}

fn cli_json(args: &[&str], cache: &Path) -> Value {
    let out = Command::new(BIN)
        .args(args)
        .env("AGENTLOG_CACHE_DIR", cache)
        .env("AGENTLOG_DATA_DIR", data_dir(cache))
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_tool_answers_as_the_cli_does_and_nothing_is_written() {
    let (_dir, root, cache) = setup();
    let before = snapshot(&root);
    let r = root.to_str().unwrap();
    let mut client = Client::start(&[r], &cache);

    let tools = client.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["search", "list_sessions", "read_session", "usage", "status"]
    );
    for tool in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
    }

    // Search: every page followed to the end equals the CLI's pages.
    let (mut mcp_hits, mut cli_hits) = (Vec::new(), Vec::new());
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"query": "the", "limit": 7});
        let mut cli = vec![
            "search",
            "--transcripts",
            "--json",
            "--limit",
            "7",
            "the",
            r,
        ];
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
            cli.extend(["--cursor", c.as_str()]);
        }
        let (error, page) = client.call("search", args);
        assert!(!error, "{page}");
        let expected = cli_json(&cli, &cache);
        assert_eq!(page["hits"], expected["hits"]);
        mcp_hits.extend(page["hits"].as_array().unwrap().clone());
        cli_hits.extend(expected["hits"].as_array().unwrap().clone());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert!(mcp_hits.len() > 7, "more than one page: {}", mcp_hits.len());
    assert_eq!(mcp_hits, cli_hits);

    // Usage: the CLI's report, rows paged.
    let (error, usage) = client.call("usage", json!({"by": "session", "limit": 500}));
    assert!(!error);
    let cli = cli_json(&["usage", "--by", "session", "--json", r], &cache);
    assert_eq!(usage["rows"], cli["rows"]);
    assert_eq!(usage["totals"], cli["totals"]);
    let mut paged = Vec::new();
    let mut args = json!({"by": "session", "limit": 2});
    loop {
        let (error, page) = client.call("usage", args.clone());
        assert!(!error, "{page}");
        paged.extend(page["rows"].as_array().unwrap().clone());
        match page["next_cursor"].as_str() {
            Some(next) => args["cursor"] = json!(next),
            None => break,
        }
    }
    assert_eq!(Value::Array(paged), cli["rows"]);

    // Sessions: one per usage session row, their tokens the same, paged to the end.
    let mut sessions = Vec::new();
    let mut args = json!({"limit": 3});
    loop {
        let (error, page) = client.call("list_sessions", args.clone());
        assert!(!error, "{page}");
        sessions.extend(page["sessions"].as_array().unwrap().clone());
        match page["next_cursor"].as_str() {
            Some(next) => args["cursor"] = json!(next),
            None => break,
        }
    }
    assert_rows_are_usage_rows(&sessions, &cli);
    assert_eq!(sessions.len(), cli["rows"].as_array().unwrap().len());
    let (_, codex) = client.call("list_sessions", json!({"agent": "codex", "limit": 100}));
    let codex = codex["sessions"].as_array().unwrap();
    assert_eq!(codex.len(), 4);
    assert!(codex.iter().all(|s| s["agent"] == "codex"));

    // Status: the CLI's transcript report.
    let file = root.join("claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl");
    let f = file.to_str().unwrap();
    let (error, status) = client.call("status", json!({"path": f}));
    assert!(!error, "{status}");
    let cli = cli_json(&["transcript", "--json", f], &cache);
    assert_eq!(status["generations"], cli["generations"]);
    assert_eq!(status["lifetime"], cli["lifetime"]);

    client.stop();
    assert_eq!(snapshot(&root), before, "the transcripts are unchanged");
}

/// The window an oracle reads: every complete line's start, and the text lines among them.
fn text_lines(file: &Path) -> Vec<(u64, u64)> {
    let bytes = std::fs::read(file).unwrap();
    let format = agentlog::transcript::Format::ClaudeCode;
    let mut out = Vec::new();
    let mut offset = 0u64;
    for (number, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let Some(body) = line.strip_suffix(b"\n") else {
            break;
        };
        if agentlog::search::transcript_line_text(format, body).is_some() {
            out.push((offset, number as u64 + 1));
        }
        offset += line.len() as u64;
    }
    out
}

#[test]
fn a_window_is_the_text_lines_around_its_anchor_and_pages_to_the_end() {
    let (_dir, root, cache) = setup();
    let mut client = Client::start(&[root.to_str().unwrap()], &cache);
    let session = "4d5611e5-241a-462a-8d15-5122611a9569";
    let file = std::fs::canonicalize(root.join(format!("claude-code/{session}.jsonl"))).unwrap();
    let oracle = text_lines(&file);
    for centre in [0, 1, 17, oracle.len() / 2, oracle.len() - 1] {
        let (offset, line) = oracle[centre];
        for (before, after) in [(0, 0), (3, 2), (50, 50)] {
            for anchor in [json!({"offset": offset}), json!({"seq": line})] {
                let mut args = json!({"session": session, "before": before, "after": after});
                args.as_object_mut()
                    .unwrap()
                    .extend(anchor.as_object().unwrap().clone());
                let (error, window) = client.call("read_session", args);
                assert!(!error, "{window}");
                let got: Vec<(u64, u64)> = window["lines"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| (l["offset"].as_u64().unwrap(), l["line"].as_u64().unwrap()))
                    .collect();
                let lo = centre.saturating_sub(before);
                let hi = (centre + after + 1).min(oracle.len());
                assert_eq!(got, oracle[lo..hi], "centre {centre} {before}/{after}");
                assert_eq!(window["anchor_offset"], offset);
                for l in window["lines"].as_array().unwrap() {
                    assert!(l["text"].as_str().unwrap().chars().count() <= 1000);
                }
            }
        }
    }
    // Followed by next_offset, the windows cover every text line once.
    let mut seen = Vec::new();
    let mut args = json!({"session": session, "before": 0, "after": 50, "max_chars": 5});
    loop {
        let (error, window) = client.call("read_session", args.clone());
        assert!(!error, "{window}");
        for l in window["lines"].as_array().unwrap() {
            seen.push((l["offset"].as_u64().unwrap(), l["line"].as_u64().unwrap()));
        }
        match window["next_offset"].as_u64() {
            Some(next) => args["offset"] = json!(next),
            None => break,
        }
    }
    assert_eq!(seen, oracle);
    client.stop();
}

#[test]
fn bad_arguments_are_tool_errors_and_paths_stay_inside_the_sources() {
    let (dir, root, cache) = setup();
    let outside = dir.path().join("outside.jsonl");
    std::fs::copy(root.join("pi/agentlogs-crud.jsonl"), &outside).unwrap();
    let mut client = Client::start(&[root.join("claude-code").to_str().unwrap()], &cache);
    let o = outside.to_str().unwrap();
    let escape = format!(
        "{}/../pi/agentlogs-crud.jsonl",
        root.join("claude-code").display()
    );
    let cases = [
        ("search", json!({}), "invalid_arguments"),
        (
            "search",
            json!({"query": "x", "bogus": 1}),
            "invalid_arguments",
        ),
        (
            "search",
            json!({"query": "x", "limit": -1}),
            "invalid_arguments",
        ),
        (
            "search",
            json!({"query": "x", "limit": 1000}),
            "invalid_limit",
        ),
        (
            "search",
            json!({"query": "x", "cursor": "nope"}),
            "invalid_cursor",
        ),
        (
            "search",
            json!({"query": "x", "match": "some"}),
            "invalid_arguments",
        ),
        (
            "search",
            json!({"query": "x", "store": "/"}),
            "outside_sources",
        ),
        ("list_sessions", json!({"limit": 0}), "invalid_arguments"),
        (
            "list_sessions",
            json!({"since": "yesterday"}),
            "invalid_arguments",
        ),
        (
            "list_sessions",
            json!({"cursor": "3.0"}),
            "invalid_arguments",
        ),
        (
            "read_session",
            json!({"session": "no-such"}),
            "session_not_found",
        ),
        ("read_session", json!({"session": o}), "outside_sources"),
        (
            "read_session",
            json!({"session": escape}),
            "outside_sources",
        ),
        (
            "read_session",
            json!({"session": "/etc/passwd"}),
            "outside_sources",
        ),
        (
            "read_session",
            json!({"session": "agentlogs-crud", "before": 51}),
            "invalid_arguments",
        ),
        (
            "read_session",
            json!({"session": "agentlogs-crud", "seq": 1_000_000}),
            "invalid_arguments",
        ),
        (
            "read_session",
            json!({"session": "agentlogs-crud", "offset": 1, "seq": 1}),
            "invalid_arguments",
        ),
        ("usage", json!({"by": "fortnight"}), "invalid_arguments"),
        (
            "usage",
            json!({"timezone": "Nowhere/Atlantis"}),
            "invalid_arguments",
        ),
        ("usage", json!({"cursor": "1.x"}), "invalid_cursor"),
        ("status", json!({"path": o}), "outside_sources"),
        ("status", json!({"path": "/"}), "outside_sources"),
        ("status", json!({"path": "/no/such/file"}), "not_found"),
    ];
    for (tool, args, code) in cases {
        let (error, answer) = client.call(tool, args.clone());
        assert!(error, "{tool} {args}: {answer}");
        assert_eq!(answer["error"], code, "{tool} {args}: {answer}");
        assert!(!answer["message"].as_str().unwrap().is_empty());
    }
    // An unknown tool is a protocol error; the server goes on answering.
    let reply = client.request("tools/call", json!({"name": "rm", "arguments": {}}));
    assert_eq!(reply["error"]["code"], -32602);
    let (error, _) = client.call("usage", json!({}));
    assert!(!error);
    client.stop();
}

#[test]
fn usage_counts_an_archived_transcript_whose_original_is_gone() {
    let (_dir, root, cache) = setup();
    let r = root.to_str().unwrap();
    let usage = |args: &[&str]| {
        let mut client = Client::start(args, &cache);
        let (error, answer) = client.call("usage", json!({"by": "session", "limit": 500}));
        assert!(!error, "{answer}");
        client.stop();
        answer
    };
    // No archive yet: the data directory is absent and nothing is skipped because of it.
    let before = usage(&[r]);
    assert!(!data_dir(&cache).exists());
    assert_eq!(before["archive_only_sessions"], 0);
    let skipped = before["skipped"].as_array().map_or(0, Vec::len);
    assert_eq!(
        before["totals"],
        cli_json(&["usage", "--by", "session", "--json", r], &cache)["totals"]
    );

    let status = |args: &[&str], path: &Path| {
        let mut client = Client::start(args, &cache);
        let answer = client.call("status", json!({"path": path}));
        client.stop();
        answer
    };
    let gone =
        root.join("codex/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl");
    let (error, status_before) = status(&[r], &gone);
    assert!(!error, "{status_before}");
    assert!(status_before["from_archive"].is_null());

    let archived = cli_json(&["archive", "--json", r], &cache);
    assert!(archived["new_sources"].as_u64().unwrap() > 0, "{archived}");
    std::fs::remove_file(&gone).unwrap();

    // The archive answers for the deleted rollout: the totals before the deletion.
    let after = usage(&[r]);
    assert_eq!(after["totals"], before["totals"]);
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(after["archive_only_sessions"], 1);
    assert_eq!(after["skipped"].as_array().map_or(0, Vec::len), skipped);

    // The status of the deleted rollout: its report from the archive, the same counts.
    let (error, status_after) = status(&[r], &gone);
    assert!(!error, "{status_after}");
    assert_eq!(status_after["from_archive"], 1);
    assert_eq!(status_after["path"], status_before["path"]);
    for field in ["lifetime", "generations", "boundaries", "lines", "models"] {
        assert_eq!(status_after[field], status_before[field], "{field}");
    }
    let (error, refused) = status(&[r, "--no-archive"], &gone);
    assert!(error);
    assert_eq!(refused["error"], "not_found", "{refused}");
    // A gone path outside the sources stays refused.
    let (error, outside) = status(&[r], &root.parent().unwrap().join("gone.jsonl"));
    assert!(error);
    assert_eq!(outside["error"], "outside_sources", "{outside}");

    // --no-archive: the originals alone, as the CLI reads them.
    let originals = usage(&[r, "--no-archive"]);
    let cli = cli_json(
        &["usage", "--by", "session", "--json", "--no-archive", r],
        &cache,
    );
    assert_eq!(originals["totals"], cli["totals"]);
    assert_eq!(originals["rows"], cli["rows"]);
    assert_ne!(originals["totals"], before["totals"]);
    assert_eq!(originals["archive_only_sessions"], 0);
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

/// Every `list_sessions` page of `args` followed to the end.
fn all_sessions(client: &mut Client, mut args: Value) -> Vec<Value> {
    let mut sessions = Vec::new();
    loop {
        let (error, page) = client.call("list_sessions", args.clone());
        assert!(!error, "{page}");
        let rows = page["sessions"].as_array().unwrap();
        assert!(rows.len() as u64 <= args["limit"].as_u64().unwrap_or(20));
        sessions.extend(rows.clone());
        match page["next_cursor"].as_str() {
            Some(next) => args["cursor"] = json!(next),
            None => break,
        }
    }
    sessions
}

/// Every file under `root` with its bytes and mtime.
fn stat_snapshot(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    snapshot(root)
        .into_iter()
        .map(|(p, bytes)| {
            let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, (bytes, mtime))
        })
        .collect()
}

#[test]
fn list_sessions_lists_every_session_usage_counts_the_archive_opencode_and_stores() {
    use agentlog::query::{SessionEvent, SessionHeader, Store, StoreConfig};
    let (dir, root, cache) = setup();
    let r = root.to_str().unwrap();
    // A store with two sessions.
    let store_root = dir.path().join("store");
    {
        let store = Store::open(&store_root, StoreConfig::default()).unwrap();
        for (id, created) in [
            ("first", 1_786_000_000_000_u64),
            ("second", 1_786_000_100_000),
        ] {
            let mut header = SessionHeader::new(id, created);
            header.cwd = Some("/work/stored".to_owned());
            store.create_session(header).unwrap();
            store
                .append(
                    id,
                    vec![SessionEvent::new("turn/start", 0, 0, json!({"turn": 1}))],
                )
                .unwrap();
            store.checkpoint(id).unwrap();
        }
    }
    // One transcript archived, then deleted.
    let gone = root.join("claude-code/agentlogs-crud.jsonl");
    let archived = cli_json(&["archive", "--json", r], &cache);
    assert!(archived["new_sources"].as_u64().unwrap() > 0, "{archived}");
    std::fs::remove_file(&gone).unwrap();
    let opencode_before = stat_snapshot(&root.join("opencode"));

    let s = store_root.to_str().unwrap();
    let mut client = Client::start(&[r, "--store", s], &cache);
    let usage = cli_json(&["usage", "--by", "session", "--json", r], &cache);
    assert_eq!(usage["archive_only_sessions"], 1);
    let all = all_sessions(&mut client, json!({"limit": 4}));
    let (stored, transcripts): (Vec<Value>, Vec<Value>) =
        all.into_iter().partition(|s| s["agent"] == "store");
    // The transcripts' sessions: usage's rows, one for one, the tokens adding up.
    assert_rows_are_usage_rows(&transcripts, &usage);
    assert_eq!(transcripts.len(), usage["rows"].as_array().unwrap().len());
    let sum: u64 = transcripts
        .iter()
        .map(|s| s["total_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, usage["totals"]["total_tokens"].as_u64().unwrap());
    // The store's: each session once, under its working directory, no tokens.
    let mut ids: Vec<&str> = stored
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["first", "second"]);
    assert!(
        stored
            .iter()
            .all(|s| s["project"] == "/work/stored" && s["total_tokens"] == 0)
    );
    // The deleted transcript comes from the archive; OpenCode's session from its database.
    let from_archive: Vec<&Value> = transcripts
        .iter()
        .filter(|s| s["from_archive"] == true)
        .collect();
    assert_eq!(from_archive.len(), 1);
    assert_eq!(from_archive[0]["files"][0]["path"], gone.to_str().unwrap());
    let opencode: Vec<&Value> = transcripts
        .iter()
        .filter(|s| s["agent"] == "opencode")
        .collect();
    assert_eq!(opencode.len(), 1);
    assert!(opencode[0]["title"].is_string());
    assert!(
        opencode[0]["files"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("opencode.db")
    );

    // Each agent filter: that agent's rows.
    for agent in [
        "claude-code",
        "codex",
        "pi",
        "gemini",
        "copilot",
        "opencode",
        "qwen",
        "kimi",
        "store",
    ] {
        let got = all_sessions(&mut client, json!({"agent": agent, "limit": 100}));
        let want = transcripts
            .iter()
            .chain(&stored)
            .filter(|s| s["agent"].as_str().unwrap().split(',').any(|a| a == agent))
            .count();
        assert!(want > 0, "{agent}");
        assert_eq!(got.len(), want, "{agent}");
    }
    let (error, answer) = client.call("list_sessions", json!({"agent": "nobody"}));
    assert!(error);
    assert_eq!(answer["error"], "invalid_arguments");
    client.stop();
    assert_eq!(stat_snapshot(&root.join("opencode")), opencode_before);
}
