//! Search requests against a small fixed store: query strings and cursors, from raw bytes.
//!
//! The store is built once per process: three readable sessions with accents, quotes,
//! operators and long texts, and one corrupt session. Input: a tag byte, a limit byte, then
//! text (lossy UTF-8): tag 0 a session-search query, 1 an event-search query, 2 a cursor as
//! given, 3 a cursor made by base64url-encoding the text (so the cursor's JSON is what is
//! fuzzed), 4 marked text for the snippet.
//!
//! Oracle: never a panic; a query is refused only as `invalid_query` (exactly when its
//! normalization refuses it) and a normalized query has no edge or double spaces and no
//! reserved characters; a page holds at most `limit` hits with snippets of at most 240 code
//! points and no line breaks; its `nextCursor` is accepted by the next call (nothing changed);
//! a cursor the index did not make is `invalid_cursor` or `stale_cursor`, never accepted
//! unless it decodes to this very request; the corrupt session is always named unreadable; a
//! snippet never exceeds its budget.
#![no_main]

use std::sync::{Mutex, OnceLock};

use agentlog::query::{Store, StoreConfig};
use agentlog::search::{
    EventSearchRequest, SearchConfig, SearchIndex, SessionSearchRequest, base64url_encode,
    make_snippet, normalize_query,
};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    index: Mutex<SearchIndex<'static>>,
}

fn user(seq: u64, text: &str) -> String {
    json!({"type": "user/message", "seq": seq, "time": seq,
           "data": {"id": format!("m{seq}"), "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": text}]},
           "surfaceOp": "append"})
    .to_string()
}

fn write(root: &std::path::Path, id: &str, lines: &[String]) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let header = json!({"type": "session", "version": 0, "id": id, "createdAt": 1});
    let mut text = format!("{header}\n");
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let long = "alpha beta ".repeat(40);
        write(
            root,
            "a",
            &[
                user(0, "Café au lait, NAÏVE \"quotes\" OR *"),
                user(1, &long),
            ],
        );
        write(
            root,
            "b",
            &[user(0, "alpha alpha beta"), user(1, "日本語 x_y a-b")],
        );
        write(root, "c", &[user(0, "needle\tin\n\na haystack")]);
        write(
            root,
            "bad",
            &[
                user(0, "x"),
                "garbage".into(),
                json!({"type": "turn/end", "seq": 9, "time": 1, "data": {}}).to_string(),
            ],
        );
        let store: &'static Store =
            Box::leak(Box::new(Store::open(root, StoreConfig::default()).unwrap()));
        Fixture {
            _dir: dir,
            index: Mutex::new(SearchIndex::new(store, SearchConfig::default())),
        }
    })
}

fn check_hits<'a>(snippets: impl Iterator<Item = &'a str>, count: usize, limit: u64) {
    assert!(count as u64 <= limit);
    for s in snippets {
        assert!(s.chars().count() <= 240, "snippet too long: {s:?}");
        assert!(!s.contains('\n'), "snippet with a line break: {s:?}");
    }
}

fn search_sessions(
    index: &mut SearchIndex<'static>,
    query: &str,
    limit: u64,
    cursor: Option<&str>,
) {
    let request = SessionSearchRequest {
        query: query.into(),
        limit: Some(limit),
        cursor: cursor.map(str::to_owned),
        ..SessionSearchRequest::default()
    };
    match index.search_sessions(&request) {
        Ok(page) => {
            check_hits(
                page.hits.iter().map(|h| h.best_match.snippet.as_str()),
                page.hits.len(),
                limit,
            );
            assert!(page.unreadable.iter().any(|u| u.session_id == "bad"));
            if let Some(next) = page.next_cursor {
                let again = index.search_sessions(&SessionSearchRequest {
                    cursor: Some(next),
                    ..request
                });
                assert!(again.is_ok(), "a fresh cursor was refused: {again:?}");
            }
        }
        Err(e) => {
            let allowed: &[&str] = if cursor.is_some() {
                &[
                    "invalid_cursor",
                    "stale_cursor",
                    "invalid_query",
                    "invalid_limit",
                ]
            } else {
                &["invalid_query", "invalid_limit"]
            };
            assert!(allowed.contains(&e.code()), "unexpected {e:?}");
            if e.code() == "invalid_query" {
                assert!(normalize_query(query).is_err());
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [tag, limit_byte, rest @ ..] = data else {
        return;
    };
    let text = String::from_utf8_lossy(rest).into_owned();
    let limit = u64::from(*limit_byte % 102);
    let mut index = fixture()
        .index
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match tag % 5 {
        0 => {
            if let Ok(q) = normalize_query(&text) {
                assert!(!q.starts_with(' ') && !q.ends_with(' ') && !q.contains("  "));
                assert!(!q.contains(['\0', '\u{FDD0}', '\u{FDD1}']));
            }
            search_sessions(&mut index, &text, limit, None);
        }
        1 => {
            let id = ["a", "b", "c", "bad", "none"][text.len() % 5];
            let request = EventSearchRequest {
                session_id: id.into(),
                query: text.clone(),
                limit: Some(limit),
                ..EventSearchRequest::default()
            };
            match index.search_events(&request) {
                Ok(page) => check_hits(
                    page.hits.iter().map(|h| h.snippet.as_str()),
                    page.hits.len(),
                    limit,
                ),
                Err(e) => assert!(
                    [
                        "invalid_query",
                        "invalid_limit",
                        "corrupt_session",
                        "session_not_found"
                    ]
                    .contains(&e.code()),
                    "unexpected {e:?}"
                ),
            }
        }
        2 => search_sessions(&mut index, "alpha", limit.max(1), Some(&text)),
        3 => search_sessions(
            &mut index,
            "alpha",
            limit.max(1),
            Some(&base64url_encode(rest)),
        ),
        _ => {
            let budget = usize::from(*limit_byte);
            let snippet = make_snippet(&text, budget);
            assert!(snippet.text.chars().count() <= budget);
            for (start, end) in snippet.marks {
                assert!(start < end && end <= snippet.text.chars().count());
            }
        }
    }
});
