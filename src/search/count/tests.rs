//! The match counts against `highlight()`'s runs: merging rules by hand, then random texts
//! and queries through SQLite (repeated tokens, overlapping and adjacent occurrences, case and
//! diacritics, punctuation), and the fall-back to `highlight()` for a phrase with a common
//! word.

use proptest::prelude::*;
use rusqlite::Connection;

use super::*;

fn ids(phrases: &[&[u16]]) -> Vec<Vec<u16>> {
    phrases.iter().map(|p| p.to_vec()).collect()
}

fn at(tokens: &[u16]) -> Vec<(i64, u16)> {
    tokens
        .iter()
        .copied()
        .zip(0i64..)
        .map(|(t, o)| (o, t))
        .collect()
}

#[test]
fn marks_are_counted_by_their_lead_byte() {
    assert_eq!(OPEN_MARK.first(), Some(&OPEN_MARK_LEAD));
    let marked = "\u{FDD0}a\u{FDD1} \u{FFFD} \u{FDD0}b c\u{FDD1}";
    assert_eq!(marks(marked.as_bytes()), 2);
}

#[test]
fn overlapping_occurrences_merge_and_adjacent_ones_do_not() {
    let mut scratch = Vec::new();
    // "a a" in "a a a": occurrences at 0 and 1 overlap.
    assert_eq!(
        runs(&mut at(&[0, 0, 0]), &ids(&[&[0, 0]]), &mut scratch),
        Some(1)
    );
    // "a a" in "a a a a": 0, 1, 2 chain into one run.
    assert_eq!(
        runs(&mut at(&[0, 0, 0, 0]), &ids(&[&[0, 0]]), &mut scratch),
        Some(1)
    );
    // "a" in "a a": adjacent, two runs.
    assert_eq!(runs(&mut at(&[0, 0]), &ids(&[&[0]]), &mut scratch), Some(2));
    // "a b" in "a b a b": adjacent occurrences, two runs.
    assert_eq!(
        runs(&mut at(&[0, 1, 0, 1]), &ids(&[&[0, 1]]), &mut scratch),
        Some(2)
    );
    // All terms: "a" AND "b" in "a b": two runs (one per token).
    assert_eq!(
        runs(&mut at(&[0, 1]), &ids(&[&[0], &[1]]), &mut scratch),
        Some(2)
    );
    // "a b" AND "b c" in "a b c": overlapping across phrases, one run.
    assert_eq!(
        runs(&mut at(&[0, 1, 2]), &ids(&[&[0, 1], &[1, 2]]), &mut scratch),
        Some(1)
    );
    // A phrase missing: no count.
    assert_eq!(
        runs(&mut at(&[0, 0]), &ids(&[&[0], &[1]]), &mut scratch),
        None
    );
}

/// An index of `docs` (rowids from 1) with the functions installed, as a store's index is.
fn index(docs: &[String]) -> (Connection, MatchCounter) {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = 'unicode61', columnsize = 0)",
    )
    .unwrap();
    let counter = MatchCounter::install(&conn).unwrap();
    for (rowid, doc) in (1i64..).zip(docs) {
        conn.execute(
            "INSERT INTO fts(rowid, text) VALUES (?1, ?2)",
            (rowid, crate::search::request::sanitize(doc)),
        )
        .unwrap();
    }
    (conn, counter)
}

/// Match counts by rowid.
type ByDoc = Vec<(i64, i64)>;

/// Every matching document's count: by `highlight()`'s marks, and through the ranking's
/// expression (which uses the active counts when there are some).
fn counted(conn: &Connection, expression: &str) -> (ByDoc, ByDoc) {
    let select = |count: &str| -> ByDoc {
        conn.prepare(&format!(
            "SELECT rowid, {count} FROM fts WHERE fts MATCH ?1 ORDER BY rowid"
        ))
        .unwrap()
        .query_map([expression], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let highlighted = select("agentlog_marks(highlight(fts, 0, char(64976), char(64977)))");
    let ranked = select(
        "coalesce(agentlog_match_count(rowid),
                  agentlog_marks(highlight(fts, 0, char(64976), char(64977))))",
    );
    (highlighted, ranked)
}

/// Checks the counts of `query` over `docs` against `highlight()`; returns whether they were
/// counted (not given up).
fn check(docs: &[String], query: &str, mode: MatchMode) -> bool {
    let Ok(normalized) = normalize_query(query) else {
        return false;
    };
    let (conn, counter) = index(docs);
    let expression = fts_expression(&normalized, mode);
    let active = counter
        .activate(&conn, &phrases(&normalized, mode))
        .unwrap();
    let counts = lock(&counter.active).clone();
    let (highlighted, ranked) = counted(&conn, &expression);
    assert_eq!(
        ranked, highlighted,
        "ranking's counts, query {query:?} over {docs:?}"
    );
    let given_up = counts.is_none();
    if let Some(counts) = counts {
        let counts: Vec<(i64, i64)> = counts.iter().map(|&(d, n)| (d, i64::from(n))).collect();
        assert_eq!(
            counts, highlighted,
            "query {query:?} ({mode:?}) over {docs:?}"
        );
    }
    drop(active);
    assert!(
        lock(&counter.active).is_none(),
        "counts end with the search"
    );
    !given_up
}

use crate::search::request::{MatchMode, fts_expression, normalize_query, phrases};

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
    ]
    .map(String::from)
    .to_vec();
    for (query, mode) in [
        ("a a", MatchMode::Phrase),
        ("a", MatchMode::Phrase),
        ("a b", MatchMode::Phrase),
        ("a a", MatchMode::All),
        ("a b", MatchMode::All),
        ("cafe", MatchMode::Phrase),
        ("CAFÉ café", MatchMode::Phrase),
        ("straße", MatchMode::Phrase),
        ("the failing", MatchMode::Phrase),
        ("failing the", MatchMode::All),
        ("e", MatchMode::Phrase),
    ] {
        assert!(check(&docs, query, mode), "{query:?} was counted");
    }
    // A query of punctuation alone has no tokens: nothing to count, nothing matches.
    assert!(!check(&docs, "-- !", MatchMode::Phrase));
}

#[test]
fn a_phrase_with_a_common_word_is_given_up_for_highlight() {
    let mut docs: Vec<String> = (0..1_500).map(|i| format!("the x{i} the")).collect();
    docs.push("the failing test".into());
    let (conn, counter) = index(&docs);
    let expression = fts_expression("the failing", MatchMode::Phrase);
    let active = counter
        .activate(&conn, &phrases("the failing", MatchMode::Phrase))
        .unwrap();
    assert!(
        lock(&counter.active).is_none(),
        "3,001 positions, one match"
    );
    let (highlighted, ranked) = counted(&conn, &expression);
    assert_eq!(ranked, highlighted);
    assert_eq!(highlighted, vec![(1_501, 1)]);
    drop(active);
    // The common word alone: one document matching per two positions, counted.
    assert!(check(&docs, "the", MatchMode::Phrase));
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

    #[test]
    fn counts_are_highlights_runs(
        docs in prop::collection::vec(text(0..24), 1..16),
        query in text(1..5),
        all in any::<bool>(),
    ) {
        let mode = if all { MatchMode::All } else { MatchMode::Phrase };
        check(&docs, &query, mode);
    }
}
