//! The texts of a page's hits with their matches marked, for the snippets.
//!
//! The marks are `highlight()`'s: each run of the query's instances (an instance starting at or
//! before the end of the run so far joins it) wrapped from its first token's first byte to its
//! last token's last. They are placed here, from the tokens of the indexes' own tokenizer
//! ([`Tokenizer`]): asking the index for one document at a time (`MATCH ... AND rowid = ?`)
//! runs the query's term lists from the start to that document, and copying the page into an
//! FTS5 table to ask it there tokenized every text twice.
//!
//! Only the snippet is shown, so a long text is first marked in a prefix cut at whitespace
//! (so its tokens are the text's first tokens). The prefix's marks are kept when more words
//! follow the snippet's window than any phrase of the query has tokens: every occurrence
//! starting in the window then ends inside the prefix, so the window's marks, and the first
//! match, are the whole text's. Otherwise the whole text is marked.

use rusqlite::Connection;

use crate::search::fts5::{Purpose, Tokenizer};
use crate::search::request::Query;
use crate::search::snippet::{MARK_CLOSE, MARK_OPEN, snippet_and_rest};

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

/// The texts of `docs` with the matches of `query` wrapped in U+FDD0 ... U+FDD1, in order.
/// With `snippet_chars`, a long text may be given as a marked prefix whose snippet of that
/// many code points is the whole text's.
pub fn marked_texts(
    conn: &Connection,
    query: &Query,
    docs: &[PageDoc],
    snippet_chars: Option<usize>,
) -> rusqlite::Result<Vec<String>> {
    if docs.is_empty() {
        return Ok(Vec::new());
    }
    let tokenizer = Tokenizer::new(conn)?;
    let phrases = Phrases::new(&tokenizer, &query.phrases)?;
    // More tokens than any phrase has: the expression's length bounds them.
    let need = query.expression.chars().count() + 1;
    let mut texts = Vec::with_capacity(docs.len());
    let mut tokens = Vec::new();
    for page_doc in docs {
        let text_sql = match page_doc.source {
            Source::Index => "SELECT text FROM fts WHERE rowid = ?1",
            Source::Live => "SELECT text FROM temp.live_fts WHERE rowid = ?1",
        };
        let text: String = conn
            .prepare_cached(text_sql)?
            .query_row([page_doc.doc], |r| r.get(0))?;
        let prefix = snippet_chars
            .and_then(|max| Some((max, text.get(..prefix_end(&text)?)?)))
            .and_then(|(max, prefix)| {
                let marked = phrases.mark(&tokenizer, prefix, &mut tokens);
                // A prefix whose marks cannot be vouched for is marked again whole.
                match marked {
                    Ok(Some(m)) if snippet_and_rest(&m, max, need).1 >= need => Some(Ok(m)),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                }
            });
        let marked = match prefix {
            Some(marked) => Some(marked?),
            None => phrases.mark(&tokenizer, &text, &mut tokens)?,
        };
        // Every page document matches the query; one whose tokens here would not is asked of
        // its own table, the slow way, rather than shown unmarked.
        texts.push(match marked {
            Some(marked) => marked,
            None => marked_in_place(conn, &query.expression, *page_doc)?,
        });
    }
    Ok(texts)
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

/// A token of a text: which of the query's distinct tokens it is ([`NOT_QUERIED`]: none), and
/// its bytes in the text.
type Placed = (usize, usize, usize);
const NOT_QUERIED: usize = usize::MAX;

/// The query's phrases as tokens: the distinct tokens, and each phrase as their indexes.
struct Phrases {
    distinct: Vec<Vec<u8>>,
    phrases: Vec<Vec<usize>>,
}

impl Phrases {
    fn new(tokenizer: &Tokenizer, phrases: &[String]) -> rusqlite::Result<Phrases> {
        let mut distinct: Vec<Vec<u8>> = Vec::new();
        let mut ids = Vec::with_capacity(phrases.len());
        for phrase in phrases {
            let mut phrase_ids = Vec::new();
            tokenizer.tokenize(phrase, Purpose::Query, |token| {
                let id = distinct
                    .iter()
                    .position(|d| d.as_slice() == token.text)
                    .unwrap_or_else(|| {
                        distinct.push(token.text.to_vec());
                        distinct.len() - 1
                    });
                phrase_ids.push(id);
                true
            })?;
            // A phrase without tokens has no instances and matches nothing (as FTS5's `""`).
            if !phrase_ids.is_empty() {
                ids.push(phrase_ids);
            }
        }
        Ok(Phrases {
            distinct,
            phrases: ids,
        })
    }

    /// `text` with each run of the phrases' instances marked as `highlight()` marks it;
    /// `None` when a phrase does not occur (the text does not match). `tokens` is scratch.
    fn mark(
        &self,
        tokenizer: &Tokenizer,
        text: &str,
        tokens: &mut Vec<Placed>,
    ) -> rusqlite::Result<Option<String>> {
        tokens.clear();
        tokenizer.tokenize(text, Purpose::Document, |token| {
            let id = self
                .distinct
                .iter()
                .position(|d| d.as_slice() == token.text)
                .unwrap_or(NOT_QUERIED);
            tokens.push((id, token.start, token.end));
            true
        })?;
        // Instances as (first token, last token), by first token as FTS5 orders them.
        let mut instances: Vec<(usize, usize)> = Vec::new();
        if self.phrases.is_empty() {
            return Ok(None);
        }
        for phrase in &self.phrases {
            let before = instances.len();
            let len = phrase.len();
            for (first, window) in tokens.windows(len).enumerate() {
                if window.iter().map(|t| t.0).eq(phrase.iter().copied()) {
                    instances.push((first, first + len - 1));
                }
            }
            if instances.len() == before {
                return Ok(None);
            }
        }
        instances.sort_unstable();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (first, last) in instances {
            match runs.last_mut() {
                Some(run) if first <= run.1 => run.1 = run.1.max(last),
                _ => runs.push((first, last)),
            }
        }
        let mut marked = String::with_capacity(text.len() + runs.len() * 6);
        let mut copied = 0;
        for (first, last) in runs {
            let (Some(&(_, start, _)), Some(&(_, _, end))) = (tokens.get(first), tokens.get(last))
            else {
                return Ok(None);
            };
            let (Some(before), Some(inside)) = (text.get(copied..start), text.get(start..end))
            else {
                return Ok(None);
            };
            marked.push_str(before);
            marked.push(MARK_OPEN);
            marked.push_str(inside);
            marked.push(MARK_CLOSE);
            copied = end;
        }
        marked.push_str(text.get(copied..).unwrap_or_default());
        Ok(Some(marked))
    }
}

/// `text` marked for `phrases` by the tokenizer alone (`None`: it does not match), for the
/// tests against `highlight()`.
#[cfg(test)]
pub(crate) fn mark_alone(
    conn: &Connection,
    phrases: &[String],
    text: &str,
) -> rusqlite::Result<Option<String>> {
    let tokenizer = Tokenizer::new(conn)?;
    Phrases::new(&tokenizer, phrases)?.mark(&tokenizer, text, &mut Vec::new())
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
    use crate::search::request::MatchMode;
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

        /// The oracles: `highlight()` of the whole text, and the snippet of the whole text.
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
            let whole = marked_texts(&conn, &q, &page, None).unwrap();
            let cut = marked_texts(&conn, &q, &page, Some(max)).unwrap();
            let highlighted: Vec<String> = page
                .iter()
                .map(|doc| marked_in_place(&conn, &q.expression, *doc).unwrap())
                .collect();
            prop_assert_eq!(&whole, &highlighted);
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
        let cut = marked_texts(&conn, &q, &page, Some(240)).unwrap();
        assert!(cut[0].len() <= PREFIX_BYTES + 6, "early match: the prefix");
        assert!(cut[1].len() > late.len(), "late match: the whole text");
        assert_eq!(make_snippet(&cut[1], 240).marks.len(), 1);
    }
}
