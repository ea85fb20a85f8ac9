//! `agentlog search` as a user runs it: pages across processes, stale and invalid cursors,
//! error codes and exit statuses, the index's permissions, and index files that are damaged
//! or not ours.
// Test figures (offsets, row counts, nanosecond stamps) are far below 2^53, and Parquet and
// SQLite keep integers as i64, so the numeric casts are deliberate; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

mod search_common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use search_common as oracle;
use serde_json::Value;

fn agentlog(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(args)
        .env("AGENTLOG_LOG", "error")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, stdout)
}

fn search(root: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["search", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("--json");
    let (code, json, _) = agentlog(&args);
    (code, json)
}

/// Five sessions each saying "needle" a different number of times, so the order is known.
fn store(root: &Path) {
    for n in 1..=5u64 {
        let id = format!("s{n}");
        let text = vec!["needle"; n as usize].join(" ");
        oracle::write_log(
            root,
            &id,
            &[
                oracle::header(&id, n),
                oracle::user(0, 1, &text),
                oracle::user(1, 2, "needle in a haystack, once"),
            ],
        );
    }
}

fn ids(page: &Value) -> Vec<String> {
    page["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["header"]["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_cursor_pages_across_processes_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let (code, first) = search(dir.path(), &["needle", "--limit", "2"]);
    assert_eq!(code, 0);
    assert_eq!(ids(&first), ["s5", "s4"]);
    let mut seen = ids(&first);
    let mut cursor = first["nextCursor"].as_str().unwrap().to_string();
    loop {
        let (code, page) = search(dir.path(), &["needle", "--limit", "2", "--cursor", &cursor]);
        assert_eq!(code, 0, "{page}");
        seen.extend(ids(&page));
        match page["nextCursor"].as_str() {
            Some(next) => cursor = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen, ["s5", "s4", "s3", "s2", "s1"]);
    // Event search pages too, and the last page has no nextCursor key at all.
    let (_, events) = search(dir.path(), &["needle", "--session", "s3", "--limit", "1"]);
    assert_eq!(events["hits"][0]["seq"], 0);
    assert_eq!(events["session"]["id"], "s3");
    let next = events["nextCursor"].as_str().unwrap();
    let (_, last) = search(
        dir.path(),
        &[
            "needle",
            "--session",
            "s3",
            "--limit",
            "1",
            "--cursor",
            next,
        ],
    );
    assert_eq!(last["hits"][0]["seq"], 1);
    assert!(last.get("nextCursor").is_none());
}

#[test]
fn cursors_go_stale_when_what_they_searched_changes() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let (_, sessions) = search(dir.path(), &["needle", "--limit", "1"]);
    let session_cursor = sessions["nextCursor"].as_str().unwrap().to_string();
    let (_, events) = search(dir.path(), &["needle", "--session", "s2", "--limit", "1"]);
    let event_cursor = events["nextCursor"].as_str().unwrap().to_string();
    // A change elsewhere: session cursors are stale, s2's event cursor still pages.
    oracle::append_lines(dir.path(), "s5", &[oracle::user(2, 3, "more needle")]);
    let (code, err) = search(
        dir.path(),
        &["needle", "--limit", "1", "--cursor", &session_cursor],
    );
    assert_eq!((code, err["error"].as_str()), (2, Some("stale_cursor")));
    let args = [
        "needle",
        "--session",
        "s2",
        "--limit",
        "1",
        "--cursor",
        &event_cursor,
    ];
    let (code, page) = search(dir.path(), &args);
    assert_eq!(code, 0, "{page}");
    // A change to s2 itself makes its cursor stale.
    oracle::append_lines(dir.path(), "s2", &[oracle::user(2, 3, "needle again")]);
    let (code, err) = search(dir.path(), &args);
    assert_eq!((code, err["error"].as_str()), (2, Some("stale_cursor")));
}

#[test]
fn foreign_cursors_and_bad_requests_exit_2_with_the_references_codes() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let (_, page) = search(dir.path(), &["needle", "--limit", "1"]);
    let cursor = page["nextCursor"].as_str().unwrap().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["haystack", "--limit", "1", "--cursor", &cursor],
            "invalid_cursor",
        ),
        (
            vec!["needle", "--limit", "2", "--cursor", &cursor],
            "invalid_cursor",
        ),
        (
            vec![
                "needle",
                "--session",
                "s1",
                "--limit",
                "1",
                "--cursor",
                &cursor,
            ],
            "invalid_cursor",
        ),
        (vec!["needle", "--cursor", "not a cursor"], "invalid_cursor"),
        (vec!["   "], "invalid_query"),
        (vec!["needle", "--limit", "0"], "invalid_limit"),
        (vec!["needle", "--limit", "101"], "invalid_limit"),
        (vec!["needle", "--session", "nobody"], "session_not_found"),
        (vec!["needle", "--session", "../x"], "invalid_session_id"),
    ];
    for (args, code) in cases {
        let (exit, err) = search(dir.path(), &args);
        assert_eq!(
            (exit, err["error"].as_str()),
            (2, Some(code)),
            "{args:?}: {err}"
        );
    }
    let (exit, err) = search(&dir.path().join("missing"), &["needle"]);
    assert_eq!((exit, err["error"].as_str()), (4, Some("no_store")));
}

#[test]
fn an_unreadable_session_is_named_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    oracle::append_lines(
        dir.path(),
        "s3",
        &[
            "garbage".into(),
            "{\"type\":\"turn/end\",\"seq\":9,\"time\":1,\"data\":{}}".into(),
        ],
    );
    let (code, page) = search(dir.path(), &["needle"]);
    assert_eq!(code, 0);
    assert_eq!(ids(&page), ["s5", "s4", "s2", "s1"]);
    assert_eq!(page["unreadable"][0]["sessionId"], "s3");
    assert_eq!(page["unreadable"][0]["error"], "corrupt_session");
    let (code, err) = search(dir.path(), &["needle", "--session", "s3"]);
    assert_eq!((code, err["error"].as_str()), (1, Some("corrupt_session")));
}

#[test]
fn the_table_brackets_matches_when_piped() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let (code, _, out) = agentlog(&[
        "search",
        dir.path().to_str().unwrap(),
        "In A",
        "--limit",
        "1",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("needle [in a] haystack, once"), "{out}");
    assert!(out.contains("next page: --cursor "), "{out}");
    assert!(!out.contains('\x1b'));
}

fn index_files(root: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(root.join(".agentlog-search"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[test]
fn the_index_is_private_and_sessions_never_see_it() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    search(dir.path(), &["needle"]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join(".agentlog-search")), 0o700);
    let files = index_files(dir.path());
    assert!(files.len() >= 2, "{files:?}");
    for file in files {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    // A folder opened up by someone is closed again.
    let folder = dir.path().join(".agentlog-search");
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    search(dir.path(), &["needle"]);
    assert_eq!(mode(&folder), 0o700);
    let (_, json, _) = agentlog(&["sessions", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(
        json.as_array().unwrap().len(),
        5,
        "the index folder is not a session"
    );
}

/// Replaces the index file with `bytes`-producing damage; the next search must rebuild it and
/// answer as before, and cursors of the old index must be refused.
fn damage_is_rebuilt(damage: impl Fn(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let (_, before) = search(dir.path(), &["needle", "--limit", "2"]);
    let cursor = before["nextCursor"].as_str().unwrap().to_string();
    damage(&dir.path().join(".agentlog-search").join("index.sqlite"));
    let (code, after) = search(dir.path(), &["needle", "--limit", "2"]);
    assert_eq!(code, 0, "{after}");
    assert_eq!(ids(&after), ids(&before));
    let (code, err) = search(dir.path(), &["needle", "--limit", "2", "--cursor", &cursor]);
    assert_eq!((code, err["error"].as_str()), (2, Some("invalid_cursor")));
}

#[test]
fn random_bytes_are_rebuilt() {
    damage_is_rebuilt(|path| {
        let bytes: Vec<u8> = (0..40_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        std::fs::write(path, bytes).unwrap();
    });
}

#[test]
fn a_truncated_index_is_rebuilt() {
    damage_is_rebuilt(|path| {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len / 2).unwrap();
    });
}

#[test]
fn another_sqlite_database_is_rebuilt() {
    damage_is_rebuilt(|path| {
        std::fs::remove_file(path).unwrap();
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch("CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    });
}

#[test]
fn another_schema_version_is_rebuilt() {
    damage_is_rebuilt(|path| {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch("PRAGMA user_version = 99;").unwrap();
    });
}

#[test]
fn deleting_the_index_loses_nothing() {
    damage_is_rebuilt(|path| {
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    });
}

#[test]
fn a_linked_log_is_named_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    std::fs::create_dir(dir.path().join("s6")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("s1").join("events.jsonl"),
        dir.path().join("s6").join("events.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("s2"), dir.path().join("s7")).unwrap();
    let (code, page) = search(dir.path(), &["needle"]);
    assert_eq!(code, 0);
    assert_eq!(ids(&page), ["s5", "s4", "s3", "s2", "s1"]);
    let named: Vec<&str> = page["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["s6", "s7"]);
}

/// `search --transcripts` on a copy of the vendored pi transcripts, with its own index folder.
#[test]
fn transcript_search_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pi");
    std::fs::create_dir_all(&root).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transcripts/pi");
    for name in ["agentlogs-branched.jsonl", "agentlogs-crud.jsonl"] {
        std::fs::copy(data.join(name), root.join(name)).unwrap();
    }
    let cache = dir.path().join("cache");
    let (root_s, cache_s) = (root.to_str().unwrap(), cache.to_str().unwrap());
    let base = ["search", "--transcripts", "--index-dir", cache_s];
    let mut args = base.to_vec();
    args.extend(["haiku", root_s, "--json", "--limit", "2"]);
    let (code, json, _) = agentlog(&args);
    assert_eq!(code, 0, "{json}");
    let hits = json["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    for field in [
        "file",
        "format",
        "session",
        "offset",
        "line",
        "generation",
        "type",
        "role",
        "time",
        "snippet",
    ] {
        assert!(hits[0].get(field).is_some(), "{field} in {}", hits[0]);
    }
    assert_eq!(hits[0]["format"], "pi");
    let cursor = json["nextCursor"].as_str().unwrap().to_owned();
    let mut next = args.clone();
    next.extend(["--cursor", &cursor]);
    let (code, page2, _) = agentlog(&next);
    assert_eq!(code, 0);
    assert_ne!(
        page2["hits"][0], hits[0],
        "the next page, in another process"
    );

    let mut table = base.to_vec();
    table.extend(["HAIKU about", root_s]);
    let (code, _, stdout) = agentlog(&table);
    assert_eq!(code, 0);
    assert!(stdout.contains("[haiku about]"), "{stdout}");
    let header = stdout.lines().next().unwrap();
    assert!(
        header.contains("session") && header.contains("gen"),
        "{header}"
    );

    let mut refused = base.to_vec();
    refused.extend(["haiku", root_s, "--session", "x"]);
    assert_eq!(agentlog(&refused).0, 2, "store-only flags are refused");
    let (code, json, _) = agentlog(&["search", root_s, "--json"]);
    assert_eq!(
        (code, json["error"].as_str()),
        (2, Some("invalid_arguments"))
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cache.join("search")), 0o700);
    assert_eq!(mode(&cache.join("search/index.sqlite")), 0o600);
}
