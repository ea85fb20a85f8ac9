//! The match counts against `highlight()`'s runs: merging rules, then random texts and
//! queries through SQLite (repeated tokens, overlapping and adjacent occurrences, case and
//! diacritics, punctuation), and a phrase with a common word.

use proptest::prelude::*;
use rusqlite::Connection;

use super::*;

/// The runs of a `highlight()` text: its opening marks (U+FDD0; documents never hold one, it
/// is replaced when they are read).
fn marks(marked: &str) -> i64 {
    i64::try_from(marked.matches('\u{FDD0}').count()).unwrap()
}

/// An index of `docs` (rowids from 1) with the functions installed, as a store's index is.
fn index(docs: &[String]) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = 'unicode61', columnsize = 0)",
    )
    .unwrap();
    install(&conn).unwrap();
    for (rowid, doc) in (1i64..).zip(docs) {
        conn.execute(
            "INSERT INTO fts(rowid, text) VALUES (?1, ?2)",
            (rowid, crate::search::request::sanitize(doc)),
        )
        .unwrap();
    }
    conn
}

/// Match counts by rowid.
type ByDoc = Vec<(i64, i64)>;

/// Every matching document's count: by `highlight()`'s marks, and by the ranking's function.
fn counted(conn: &Connection, expression: &str) -> (ByDoc, ByDoc) {
    let rows: Vec<(i64, String, i64)> = conn
        .prepare(
            "SELECT rowid, highlight(fts, 0, char(64976), char(64977)), agentlog_runs(fts)
             FROM fts WHERE fts MATCH ?1 ORDER BY rowid",
        )
        .unwrap()
        .query_map([expression], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let highlighted = rows.iter().map(|(d, m, _)| (*d, marks(m))).collect();
    let ranked = rows.iter().map(|(d, _, n)| (*d, *n)).collect();
    (highlighted, ranked)
}

/// Checks the counts of `query` over `docs` against `highlight()`; returns how many documents
/// matched.
fn check(docs: &[String], query: &str, mode: MatchMode) -> usize {
    let Ok(normalized) = normalize_query(query) else {
        return 0;
    };
    let conn = index(docs);
    let expression = fts_expression(&normalized, mode);
    let (highlighted, ranked) = counted(&conn, &expression);
    assert_eq!(
        ranked, highlighted,
        "query {query:?} ({mode:?}) over {docs:?}"
    );
    highlighted.len()
}

use crate::search::request::{MatchMode, fts_expression, normalize_query};

#[test]
fn repeated_and_folded_tokens_count_as_highlight_marks_them() {
    let docs: Vec<String> = [
        "a a a",
        "a a a a",
        "a b a b",
        "a-a a.a",
        "Café CAFE cafe\u{301} café",
        "Straße strasse STRASSE",
        "x the failing, the failing the",
        "e\u{301}e e\u{301}",
        "a b c",
    ]
    .map(String::from)
    .to_vec();
    for (query, mode, matching) in [
        ("a a", MatchMode::Phrase, 3),
        ("a", MatchMode::Phrase, 5),
        ("a b", MatchMode::Phrase, 2),
        ("a a", MatchMode::All, 5),
        ("a b", MatchMode::All, 2),
        ("cafe", MatchMode::Phrase, 1),
        ("CAFÉ café", MatchMode::Phrase, 1),
        ("straße", MatchMode::Phrase, 1),
        ("the failing", MatchMode::Phrase, 1),
        ("failing the", MatchMode::All, 1),
        ("e", MatchMode::Phrase, 1),
    ] {
        assert_eq!(check(&docs, query, mode), matching, "{query:?}");
    }
    // A query of punctuation alone has no tokens: nothing to count, nothing matches.
    assert_eq!(check(&docs, "-- !", MatchMode::Phrase), 0);
}

#[test]
fn overlapping_occurrences_merge_and_adjacent_ones_do_not() {
    let docs: Vec<String> = ["a a a", "a a a a", "a a", "a b a b", "a b", "a b c"]
        .map(String::from)
        .to_vec();
    let conn = index(&docs);
    let runs = |expression: &str| counted(&conn, expression).1;
    // "a a" in "a a a" and in "a a a a": overlapping occurrences chain into one run.
    assert_eq!(runs("\"a a\""), vec![(1, 1), (2, 1), (3, 1)]);
    // "a" alone: every adjacent token is a run of its own.
    assert_eq!(runs("\"a\"")[..3], [(1, 3), (2, 4), (3, 2)]);
    // "a b" in "a b a b": adjacent occurrences, two runs.
    assert_eq!(runs("\"a b\"")[..1], [(4, 2)]);
    // "a" AND "b" in "a b": one run per token.
    assert_eq!(runs("\"a\" AND \"b\"")[1..], [(5, 2), (6, 2)]);
    // "a b" AND "b c" in "a b c": overlapping across phrases, one run.
    assert_eq!(runs("\"a b\" AND \"b c\""), vec![(6, 1)]);
}

#[test]
fn a_phrase_with_a_common_word_counts_as_highlight_marks_it() {
    let mut docs: Vec<String> = (0..1_500).map(|i| format!("the x{i} the")).collect();
    docs.push("the failing test, the failing one".into());
    assert_eq!(check(&docs, "the failing", MatchMode::Phrase), 1);
    let conn = index(&docs);
    let expression = fts_expression("the failing", MatchMode::Phrase);
    assert_eq!(counted(&conn, &expression).1, vec![(1_501, 2)]);
    assert_eq!(check(&docs, "the", MatchMode::Phrase), 1_501);
}

/// Words with repeats, case and diacritics variants (precomposed and combining), a ligature,
/// digits and a private-use character; separators include punctuation, quotes, a lone
/// combining accent and the reserved highlight mark (sanitized).
const WORDS: &[&str] = &[
    "a", "a", "b", "A", "B", "ab", "é", "e", "E\u{301}", "É", "café", "CAFE", "straße", "ﬁ", "x1",
    "1", "\u{E000}", "İ", "ǅ",
];
const SEPARATORS: &[&str] = &[
    " ", " ", " ", "  ", "-", ".", ", ", "'", "_", "\t", "\"", "*", "\u{301}", "/", "\u{FDD0}",
];

fn text(items: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(WORDS),
            prop::sample::select(SEPARATORS),
        ),
        items,
    )
    .prop_map(|items| items.into_iter().flat_map(|(w, s)| [w, s]).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The match counts are `highlight()`'s runs, and the page's marks, placed from the
    /// tokenizer's tokens, are `highlight()`'s marks.
    #[test]
    fn counts_and_marks_are_highlights(
        docs in prop::collection::vec(text(0..24), 1..16),
        query in text(1..5),
        all in any::<bool>(),
    ) {
        let mode = if all { MatchMode::All } else { MatchMode::Phrase };
        check(&docs, &query, mode);
        let Ok(q) = crate::search::request::Query::new(&query, mode, None) else {
            return Ok(());
        };
        let conn = index(&docs);
        let rows: Vec<(i64, String, String)> = conn
            .prepare(
                "SELECT rowid, text, highlight(fts, 0, char(64976), char(64977))
                 FROM fts WHERE fts MATCH ?1 ORDER BY rowid",
            )
            .unwrap()
            .query_map([&q.expression], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let matching: Vec<i64> = rows.iter().map(|r| r.0).collect();
        for (doc, text) in (1i64..).zip(&docs) {
            let text = crate::search::request::sanitize(text);
            let marked = mark_alone(&conn, &q.phrases, &text).unwrap();
            let highlighted = rows.iter().find(|r| r.0 == doc).map(|r| r.2.clone());
            prop_assert_eq!(
                marked, highlighted, "doc {} {:?}, query {:?} ({:?}), matching {:?}",
                doc, text, query, mode, matching
            );
        }
    }
}

use crate::search::marked::mark_alone;
