//! The search index against the oracle: a plain scan of every session with the reference's
//! rules (`tests/search_common`). Random stores are appended to, torn, truncated, rewritten and
//! deleted between searches; every answer must be the scan's over the logs as they are now.
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

use std::path::Path;

use agentlog::query::{Store, StoreConfig};
use agentlog::search::{
    EventSearchRequest, MatchMode, SearchConfig, SearchError, SearchIndex, SessionSearchRequest,
};
use proptest::prelude::*;
use rusqlite::Connection;
use search_common as oracle;

/// Every page of a session search, followed through its cursors.
fn all_session_hits(
    index: &mut SearchIndex<'_>,
    query: &str,
    mode: MatchMode,
    limit: u64,
) -> Result<(Vec<oracle::Hit>, Vec<String>), SearchError> {
    let mut hits = Vec::new();
    let mut cursor = None;
    loop {
        let page = index.search_sessions(&SessionSearchRequest {
            query: query.into(),
            limit: Some(limit),
            cursor: cursor.take(),
            mode,
            ..SessionSearchRequest::default()
        })?;
        let unreadable: Vec<String> = page
            .unreadable
            .iter()
            .map(|u| u.session_id.clone())
            .collect();
        hits.extend(page.hits.into_iter().map(|h| oracle::Hit {
            session_id: h.best_match.session_id,
            seq: h.best_match.seq,
            event_type: h.best_match.event_type,
            time: h.best_match.time,
            surface: h.best_match.surface,
            snippet: h.best_match.snippet,
        }));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((hits, unreadable)),
        }
    }
}

fn all_event_hits(
    index: &mut SearchIndex<'_>,
    id: &str,
    query: &str,
    mode: MatchMode,
    limit: u64,
) -> Result<Vec<oracle::Hit>, SearchError> {
    let mut hits = Vec::new();
    let mut cursor = None;
    loop {
        let page = index.search_events(&EventSearchRequest {
            session_id: id.into(),
            query: query.into(),
            limit: Some(limit),
            cursor: cursor.take(),
            mode,
            ..EventSearchRequest::default()
        })?;
        hits.extend(page.hits.into_iter().map(|h| oracle::Hit {
            session_id: h.session_id,
            seq: h.seq,
            event_type: h.event_type,
            time: h.time,
            surface: h.surface,
            snippet: h.snippet,
        }));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(hits),
        }
    }
}

/// The tokens FTS5's unicode61 finds in `text`, in order.
fn fts_tokens(conn: &Connection, text: &str) -> Vec<String> {
    conn.execute("DELETE FROM t", []).unwrap();
    conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?1)", [text])
        .unwrap();
    let mut stmt = conn.prepare("SELECT term FROM v ORDER BY offset").unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Strings on which the oracle's tokenizer must agree with FTS5's.
const TRICKY: &[&str] = &[
    "An AI helper; BRAID",
    "Café CAFÉ cafe café",
    "naïve NAÏVE Ωmega ΣΊΣΥΦΟΣ ς σ",
    "foo_bar foo-bar 42x x42 3.14",
    "日本語のテキスト 中文",
    "emoji 😀 here ❤ and ™ ©",
    "e\u{301}le\u{301}ve \u{301}start",
    "straße STRASSE",
    "tab\there\nnew\u{a0}nbsp\u{2003}em",
    "x\u{E000}y",
    "Ünïcödé ÀÉÎÕÜ àéîõü ñ Ñ ç Ç",
    "quotes \"say\" 'it' «guillemets»",
    "Ａｂｃ fullwidth",
    "\u{FFFD}replacement\u{FFFD}",
    "İstanbul ǖ Ǖ 𝐀𝐁 𐐀",
];
// Known divergence, kept out of the random texts: the oracle takes Unicode's Alphabetic for
// letters, which includes some combining signs (Devanagari vowel signs) that unicode61 treats
// as separators ("हिन्दी" is one token here, three there).

#[test]
fn the_oracle_tokenizer_agrees_with_fts5_on_tricky_strings() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61');
         CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');",
    )
    .unwrap();
    for text in TRICKY {
        let ours: Vec<String> = oracle::tokens(text).into_iter().map(|t| t.text).collect();
        assert_eq!(ours, fts_tokens(&conn, text), "tokens of {text:?}");
    }
}

fn store_with(root: &Path, logs: &[(&str, Vec<String>)]) -> Store {
    for (id, lines) in logs {
        oracle::write_log(root, id, lines);
    }
    Store::open(root, StoreConfig::default()).unwrap()
}

fn check_against_oracle(index: &mut SearchIndex<'_>, root: &Path, query: &str, mode: MatchMode) {
    let all = mode == MatchMode::All;
    let (expected, expected_unreadable) = oracle::search_sessions(root, query, all);
    for limit in [1, 3, 100] {
        let (hits, unreadable) = all_session_hits(index, query, mode, limit).unwrap();
        assert_eq!(
            hits, expected,
            "sessions for {query:?} ({mode:?}, limit {limit})"
        );
        assert_eq!(unreadable, expected_unreadable, "unreadable for {query:?}");
    }
    for id in expected.iter().map(|h| h.session_id.clone()) {
        let want = oracle::search_events(root, &id, query, all).unwrap();
        let got = all_event_hits(index, &id, query, mode, 2).unwrap();
        assert_eq!(got, want, "events of {id} for {query:?} ({mode:?})");
    }
}

#[test]
fn the_references_ranking_cases() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let long = format!("alpha beta {}", "filler ".repeat(20));
    let store = store_with(
        root,
        &[
            ("a", vec![oracle::header("a", 1), oracle::user(0, 5, &long)]),
            (
                "b",
                vec![oracle::header("b", 1), oracle::user(0, 5, "alpha beta")],
            ),
            (
                "c",
                vec![
                    oracle::header("c", 1),
                    oracle::user(0, 5, "alpha middle beta"),
                ],
            ),
            (
                "d",
                vec![
                    oracle::header("d", 1),
                    oracle::user(0, 5, "beta alpha beta"),
                ],
            ),
            (
                "e",
                vec![
                    oracle::header("e", 1),
                    oracle::user(0, 5, "needle needle"),
                    oracle::user(1, 6, "say \"needle\" OR absent *"),
                    oracle::todo(2, 7, "An AI helper"),
                    oracle::replacing_user(3, 8, "CAFÉ au lait", 0),
                ],
            ),
        ],
    );
    let mut index = SearchIndex::new(&store, SearchConfig::default());
    let ids = |page: agentlog::search::SessionSearchPage| -> Vec<String> {
        page.hits.into_iter().map(|h| h.header.id).collect()
    };
    let ask = |index: &mut SearchIndex<'_>, q: &str| {
        index
            .search_sessions(&SessionSearchRequest {
                query: q.into(),
                ..SessionSearchRequest::default()
            })
            .unwrap()
    };
    // Equal counts, the shorter text first, then the session id; c's words are not adjacent.
    assert_eq!(ids(ask(&mut index, "alpha beta")), ["b", "d", "a"]);
    assert!(ids(ask(&mut index, "*")).is_empty());
    assert_eq!(ids(ask(&mut index, "ai")), ["e"]);
    assert!(ids(ask(&mut index, "AI helper BRAID")).is_empty());
    let needle = ask(&mut index, "needle OR absent");
    assert_eq!(
        needle.hits[0].best_match.seq, 1,
        "OR is a word of the phrase"
    );
    let cafe = ask(&mut index, "cafe");
    assert_eq!(cafe.hits[0].best_match.snippet, "CAFÉ au lait");
    // The replaced message is still searchable, classified shadowed.
    let shadowed = index
        .search_events(&EventSearchRequest {
            session_id: "e".into(),
            query: "needle".into(),
            ..EventSearchRequest::default()
        })
        .unwrap();
    let classes: Vec<_> = shadowed.hits.iter().map(|h| (h.seq, h.surface)).collect();
    assert_eq!(
        classes,
        [
            (0, agentlog::query::SurfaceClass::Shadowed),
            (1, agentlog::query::SurfaceClass::Current)
        ]
    );
    for q in [
        "alpha beta",
        "needle",
        "cafe au",
        "say needle",
        "beta alpha",
    ] {
        for mode in [MatchMode::Phrase, MatchMode::All] {
            check_against_oracle(&mut index, root, q, mode);
        }
    }
}

const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "Café",
    "cafe",
    "CAFÉ",
    "needle",
    "NEEDLE",
    "x",
    "naïve",
    "Ωmega",
    "日本",
    "foo-bar",
    "a",
    "42",
    "*",
    "OR",
    "\"q\"",
    "ß",
    "İstanbul",
    "ǖ",
];

fn words(n: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(WORDS),
            prop::sample::select(&[" ", "  ", "\n", " \t "][..]),
        ),
        n,
    )
    .prop_map(|parts| parts.into_iter().flat_map(|(w, s)| [w, s]).collect())
}

/// Mostly short texts; some longer than a snippet, so excerpts are cut.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![6 => words(1..7), 1 => words(40..90)]
}

#[derive(Debug, Clone)]
enum Op {
    /// Appends events: (kind, text), kind 0 = user, 1 = todo, 2 = replace a current node.
    Append(usize, Vec<(u8, String)>),
    /// Cuts the log after this many of its lines (at least the header).
    Truncate(usize, usize),
    /// Appends half a line.
    Tear(usize),
    /// Appends a line that does not parse, then a turn/end: the log is corrupt.
    Corrupt(usize),
    /// Writes the log anew with other events.
    Rewrite(usize, Vec<String>),
    /// Deletes the session.
    Delete(usize),
    /// Searches from a new process's point of view (a new index handle).
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let session = 0..4usize;
    prop_oneof![
        4 => (session.clone(), prop::collection::vec((0..3u8, text()), 1..4)).prop_map(|(s, e)| Op::Append(s, e)),
        1 => (session.clone(), 1..6usize).prop_map(|(s, n)| Op::Truncate(s, n)),
        1 => session.clone().prop_map(Op::Tear),
        1 => session.clone().prop_map(Op::Corrupt),
        1 => (session.clone(), prop::collection::vec(text(), 0..4)).prop_map(|(s, t)| Op::Rewrite(s, t)),
        1 => session.prop_map(Op::Delete),
        1 => Just(Op::Reopen),
    ]
}

/// What the generator knows of a log: its lines, and for each event line its seq and what it
/// did to the surface, so replaces can target current nodes.
#[derive(Debug, Clone, Default)]
struct Model {
    lines: Vec<String>,
    /// Per line after the header: (seq, appended, replaced target).
    events: Vec<(u64, bool, Option<u64>)>,
    broken: bool,
}

impl Model {
    fn current_nodes(&self) -> Vec<u64> {
        let mut nodes = Vec::new();
        for (seq, appended, replaced) in &self.events {
            if let Some(target) = replaced {
                if let Some(at) = nodes.iter().position(|n| n == target) {
                    nodes[at] = *seq;
                }
            } else if *appended {
                nodes.push(*seq);
            }
        }
        nodes
    }
}

fn apply(root: &Path, models: &mut [Model], op: &Op, pick: u64) {
    let id = |s: usize| format!("s{s}");
    match op {
        Op::Append(s, events) => {
            let m = &mut models[*s];
            if m.lines.is_empty() {
                m.lines.push(oracle::header(&id(*s), *s as u64));
                oracle::write_log(root, &id(*s), &m.lines);
            }
            let mut new = Vec::new();
            for (kind, text) in events {
                let seq = m.events.len() as u64;
                let time = (seq * 7 % 5) as i64;
                let nodes = m.current_nodes();
                let line = match (kind, nodes.is_empty()) {
                    (2, false) => {
                        let target = nodes[(pick as usize + seq as usize) % nodes.len()];
                        m.events.push((seq, false, Some(target)));
                        oracle::replacing_user(seq, time, text, target)
                    }
                    (1, _) => {
                        m.events.push((seq, false, None));
                        oracle::todo(seq, time, text)
                    }
                    _ => {
                        m.events.push((seq, true, None));
                        oracle::user(seq, time, text)
                    }
                };
                new.push(line);
            }
            m.lines.extend(new.iter().cloned());
            oracle::append_lines(root, &id(*s), &new);
        }
        Op::Truncate(s, n) => {
            let m = &mut models[*s];
            if m.lines.len() > *n && !m.broken {
                m.lines.truncate(*n);
                m.events.truncate(n - 1);
                oracle::write_log(root, &id(*s), &m.lines);
            }
        }
        Op::Tear(s) => {
            let path = root.join(id(*s)).join("events.jsonl");
            if path.exists() {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
                f.write_all(b"{\"type\":\"user/mess").unwrap();
                models[*s].broken = true;
            }
        }
        Op::Corrupt(s) => {
            if !models[*s].lines.is_empty() {
                oracle::append_lines(
                    root,
                    &id(*s),
                    &[
                        "garbage".into(),
                        "{\"type\":\"turn/end\",\"seq\":99,\"time\":1,\"data\":{}}".into(),
                    ],
                );
                models[*s].broken = true;
            }
        }
        Op::Rewrite(s, texts) => {
            let mut m = Model::default();
            m.lines.push(oracle::header(&id(*s), 100 + *s as u64));
            for (i, t) in texts.iter().enumerate() {
                m.lines.push(oracle::user(i as u64, 3, t));
                m.events.push((i as u64, true, None));
            }
            oracle::write_log(root, &id(*s), &m.lines);
            models[*s] = m;
        }
        Op::Delete(s) => {
            let _ = std::fs::remove_dir_all(root.join(id(*s)));
            models[*s] = Model::default();
        }
        Op::Reopen => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn the_index_answers_as_a_scan_of_the_logs_as_they_are_now(
        ops in prop::collection::vec(op(), 1..8),
        queries in prop::collection::vec((text(), any::<bool>()), 8),
        pick in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let store = Store::open(root, StoreConfig::default()).unwrap();
        let mut models = vec![Model::default(); 4];
        let mut index = SearchIndex::new(&store, SearchConfig::default());
        for (i, op) in ops.iter().enumerate() {
            apply(root, &mut models, op, pick);
            if matches!(op, Op::Reopen) {
                index = SearchIndex::new(&store, SearchConfig::default());
            }
            let (query, all) = &queries[i % queries.len()];
            let query = query.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            let mode = if *all { MatchMode::All } else { MatchMode::Phrase };
            let (expected, expected_unreadable) = oracle::search_sessions(root, &query, *all);
            let (hits, unreadable) = all_session_hits(&mut index, &query, mode, 2).unwrap();
            prop_assert_eq!(&hits, &expected, "after {:?}, query {:?}", op, query);
            prop_assert_eq!(unreadable, expected_unreadable);
            for hit in expected.iter().take(2) {
                let want = oracle::search_events(root, &hit.session_id, &query, *all).unwrap();
                let got = all_event_hits(&mut index, &hit.session_id, &query, mode, 3).unwrap();
                prop_assert_eq!(got, want);
            }
        }
    }
}
