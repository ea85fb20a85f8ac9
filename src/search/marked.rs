//! The texts of a page's hits with their matches marked, for the snippets.
//!
//! `highlight()` marks what the query matched in the row its statement is on. Asking the index
//! for one document at a time (`MATCH ... AND rowid = ?`) runs the query's term lists from the
//! start to that document, which costs a phrase with a common word ~0.1 ms per hit at 100k
//! events, more as the index grows. So the page's texts are copied into a small FTS5 table of
//! the same tokenizer, local to the connection, and the query is run there once: the same text
//! and tokenizer give the same matches, so the same marks.
//!
//! Only the snippet is shown, so a long text is first marked in a prefix cut at whitespace
//! (so its tokens are the text's first tokens). The prefix's marks are kept when more words
//! follow the snippet's window than any phrase of the query has tokens: every occurrence
//! starting in the window then ends inside the prefix, so the window's marks, and the first
//! match, are the whole text's. Otherwise the whole text is marked.

use rusqlite::Connection;

use crate::search::snippet::snippet_and_rest;

/// A text longer than this many bytes is first marked in a prefix of at most this many.
const PREFIX_BYTES: usize = 8 << 10;

/// Where a document's text is: the index's FTS5 table, or the live sessions' one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `fts`, the index's table.
    Index,
    /// `temp.live_fts`, the live sessions' table.
    Live,
}

/// One document of a page: its table and its rowid there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageDoc {
    /// Its table.
    pub source: Source,
    /// Its rowid there.
    pub doc: i64,
}

const TABLES: [&str; 2] = [
    "CREATE TEMP TABLE IF NOT EXISTS agentlog_page_text(rowid INTEGER PRIMARY KEY, text TEXT)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_page
       USING fts5(text, content = 'agentlog_page_text', tokenize = 'unicode61')",
];

/// The texts of `docs` with the matches of `expression` wrapped in U+FDD0 ... U+FDD1, in order.
/// With `snippet_chars`, a long text may be given as a marked prefix whose snippet of that
/// many code points is the whole text's.
pub fn marked_texts(
    conn: &Connection,
    expression: &str,
    docs: &[PageDoc],
    snippet_chars: Option<usize>,
) -> rusqlite::Result<Vec<String>> {
    if docs.is_empty() {
        return Ok(Vec::new());
    }
    for sql in TABLES {
        conn.prepare_cached(sql)?.execute([])?;
    }
    let mut texts = Vec::with_capacity(docs.len());
    for page_doc in docs {
        let text_sql = match page_doc.source {
            Source::Index => "SELECT text FROM fts WHERE rowid = ?1",
            Source::Live => "SELECT text FROM temp.live_fts WHERE rowid = ?1",
        };
        let text: String = conn
            .prepare_cached(text_sql)?
            .query_row([page_doc.doc], |r| r.get(0))?;
        texts.push(text);
    }
    let cuts: Vec<Option<usize>> = texts
        .iter()
        .map(|t| snippet_chars.and_then(|_| prefix_end(t)))
        .collect();
    let pieces: Vec<&str> = texts
        .iter()
        .zip(&cuts)
        .map(|(t, cut)| cut.and_then(|c| t.get(..c)).unwrap_or(t))
        .collect();
    let mut marked = mark(conn, expression, &pieces)?;
    if let Some(max) = snippet_chars {
        // More tokens than any phrase has: the expression's length bounds them.
        let need = expression.chars().count() + 1;
        // A prefix whose marks cannot be vouched for: marked again whole.
        let redo: Vec<(usize, &str)> = marked
            .iter()
            .zip(&cuts)
            .zip(&texts)
            .enumerate()
            .filter(|(_, ((m, cut), _))| {
                cut.is_some()
                    && m.as_deref()
                        .is_none_or(|m| snippet_and_rest(m, max, need).1 < need)
            })
            .map(|(i, (_, text))| (i, text.as_str()))
            .collect();
        if !redo.is_empty() {
            let whole: Vec<&str> = redo.iter().map(|(_, text)| *text).collect();
            for ((i, _), again) in redo.iter().zip(mark(conn, expression, &whole)?) {
                if let Some(slot) = marked.get_mut(*i) {
                    *slot = again;
                }
            }
        }
    }
    // Every page document matches the query; one that would not here is asked of its own
    // table, the slow way, rather than shown unmarked.
    marked
        .into_iter()
        .zip(docs)
        .map(|(text, page_doc)| match text {
            Some(text) => Ok(text),
            None => marked_in_place(conn, expression, *page_doc),
        })
        .collect()
}

/// Where a long text's prefix ends: at its last ASCII whitespace within [`PREFIX_BYTES`]
/// (`None`: the text is short, or has no such place to cut).
fn prefix_end(text: &str) -> Option<usize> {
    if text.len() <= PREFIX_BYTES {
        return None;
    }
    text.as_bytes()
        .get(..PREFIX_BYTES)?
        .iter()
        .rposition(u8::is_ascii_whitespace)
        .filter(|&at| at > 0)
}

/// `texts` marked by the page table (`None` for one the query does not match there).
fn mark(
    conn: &Connection,
    expression: &str,
    texts: &[&str],
) -> rusqlite::Result<Vec<Option<String>>> {
    // One transaction: the copies, the query, and the clearing commit once (or roll back).
    let tx = conn.unchecked_transaction()?;
    clear(&tx)?;
    for (i, text) in (0i64..).zip(texts) {
        tx.prepare_cached("INSERT INTO temp.agentlog_page_text(rowid, text) VALUES (?1, ?2)")?
            .execute((i, text))?;
        tx.prepare_cached("INSERT INTO temp.agentlog_page(rowid, text) VALUES (?1, ?2)")?
            .execute((i, text))?;
    }
    let mut marked: Vec<Option<String>> = vec![None; texts.len()];
    {
        let mut select = tx.prepare_cached(
            "SELECT rowid, highlight(agentlog_page, 0, char(64976), char(64977))
             FROM temp.agentlog_page WHERE agentlog_page MATCH ?1",
        )?;
        let mut rows = select.query([expression])?;
        while let Some(row) = rows.next()? {
            let i: i64 = row.get(0)?;
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| marked.get_mut(i)) {
                *slot = Some(row.get(1)?);
            }
        }
    }
    clear(&tx)?;
    tx.commit()?;
    Ok(marked)
}

fn clear(conn: &Connection) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO temp.agentlog_page(agentlog_page) VALUES ('delete-all')")?
        .execute([])?;
    conn.prepare_cached("DELETE FROM temp.agentlog_page_text")?
        .execute([])?;
    Ok(())
}

/// One document's marked text, from its own table.
fn marked_in_place(
    conn: &Connection,
    expression: &str,
    page_doc: PageDoc,
) -> rusqlite::Result<String> {
    let sql = match page_doc.source {
        Source::Index => {
            "SELECT highlight(fts, 0, char(64976), char(64977)) FROM fts
             WHERE fts MATCH ?1 AND rowid = ?2"
        }
        Source::Live => {
            "SELECT highlight(live_fts, 0, char(64976), char(64977)) FROM temp.live_fts
             WHERE live_fts MATCH ?1 AND rowid = ?2"
        }
    };
    conn.prepare_cached(sql)?
        .query_row((expression, page_doc.doc), |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::request::{MatchMode, Query};
    use crate::search::snippet::make_snippet;
    use proptest::prelude::*;

    const WORDS: [&str; 10] = [
        "alpha", "beta", "the", "file", "x-y", "é", "1", "--", "Gamma", "beta's",
    ];
    const GAPS: [&str; 4] = [" ", "\n", "  ", "\t"];

    /// A text of `words` (indexes into WORDS) joined by `gaps`, with `phrase` put in before
    /// word `at` (modulo their count + 1: at the end too), so the query matches it.
    fn text(words: &[usize], gaps: &[usize], phrase: &str, at: usize) -> String {
        let at = at % (words.len() + 1);
        let mut out = String::new();
        for (i, (w, g)) in words.iter().zip(gaps.iter().cycle()).enumerate() {
            if i == at {
                out.push_str(phrase);
                out.push(' ');
            }
            out.push_str(WORDS[*w]);
            out.push_str(GAPS[*g]);
        }
        if at == words.len() {
            out.push_str(phrase);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// The oracle: the snippet of the whole text, marked by the page table.
        #[test]
        fn a_prefix_gives_the_whole_texts_snippet(
            docs in proptest::collection::vec(
                (proptest::collection::vec(0..WORDS.len(), 200..3_000),
                 proptest::collection::vec(0..GAPS.len(), 1..7),
                 0usize..3_000),
                1..5),
            query in proptest::collection::vec(0..WORDS.len(), 1..4),
            all in any::<bool>(),
            max in prop_oneof![Just(240usize), 1usize..400],
        ) {
            let conn = Connection::open_in_memory().unwrap();
            conn.execute_batch(
                "CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = 'unicode61', columnsize = 0)",
            )
            .unwrap();
            let phrase: Vec<&str> = query.iter().map(|w| WORDS[*w]).collect();
            let phrase = phrase.join(" ");
            let mode = if all { MatchMode::All } else { MatchMode::Phrase };
            let Ok(q) = Query::new(&phrase, mode, None) else {
                return Ok(());
            };
            // A page holds only documents the query matches; a query of punctuation alone
            // (`--`: no token) matches none, so it has no page to mark.
            prop_assume!(query.iter().any(|w| WORDS[*w] != "--"));
            let mut page = Vec::new();
            for (i, (words, gaps, at)) in (1i64..).zip(&docs) {
                let t = text(words, gaps, &phrase, *at);
                conn.execute("INSERT INTO fts(rowid, text) VALUES (?1, ?2)", (i, &t)).unwrap();
                page.push(PageDoc { source: Source::Index, doc: i });
            }
            let whole = marked_texts(&conn, &q.expression, &page, None).unwrap();
            let cut = marked_texts(&conn, &q.expression, &page, Some(max)).unwrap();
            for (w, c) in whole.iter().zip(&cut) {
                prop_assert_eq!(make_snippet(w, max), make_snippet(c, max));
                prop_assert!(c.len() <= w.len());
            }
        }
    }

    #[test]
    fn a_long_text_is_marked_in_a_prefix_when_it_can_be() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = 'unicode61', columnsize = 0)",
        )
        .unwrap();
        let early = format!("needle {}", "hay ".repeat(10_000));
        let late = format!("{}needle", "hay ".repeat(10_000));
        for (i, t) in [(1, &early), (2, &late)] {
            conn.execute("INSERT INTO fts(rowid, text) VALUES (?1, ?2)", (i, t))
                .unwrap();
        }
        let page = [1, 2].map(|doc| PageDoc {
            source: Source::Index,
            doc,
        });
        let q = Query::new("needle", MatchMode::Phrase, None).unwrap();
        let cut = marked_texts(&conn, &q.expression, &page, Some(240)).unwrap();
        assert!(cut[0].len() <= PREFIX_BYTES + 6, "early match: the prefix");
        assert!(cut[1].len() > late.len(), "late match: the whole text");
        assert_eq!(make_snippet(&cut[1], 240).marks.len(), 1);
    }
}
