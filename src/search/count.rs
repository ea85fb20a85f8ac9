//! Match counts without `highlight()`: the number of runs `highlight()` would mark in each
//! candidate, computed from the index's term positions.
//!
//! A document's match count is the number of runs `highlight()` marks (docs/SEARCH.md,
//! "Ranking"). Running `highlight()` over every candidate re-reads and re-tokenizes its text,
//! which dominated a warm search and a search for a common word. Here the query's phrases are
//! tokenized by an FTS5 table of the same tokenizer (so the tokens are FTS5's own), the
//! positions of those tokens are read from an `fts5vocab` table of type `instance` over the
//! index, and each document's phrase occurrences are merged as `highlight()` merges them: an
//! occurrence starting at or before the end of the run so far joins it (overlapping, as the
//! phrase "a a" in "a a a"); an adjacent one starts a new run.
//!
//! The counts reach the ranking statement through [`COUNT_FN`], which answers NULL for a
//! document it has no count for; the statement then counts `highlight()`'s marks
//! ([`MARKS_FN`]) instead. So a count is never wrong, only slower, when counting is given up:
//! when the tokens' positions far outnumber the documents matching (a phrase with a common
//! word: `highlight()` over the few candidates is cheaper), or when the positions do not come
//! in document order. The connection-local tables of live sessions always count with
//! `highlight()` (they are small), and so do searches whose candidates may be few while the
//! positions are the whole index's: with filters, within one session, over some of the
//! indexed transcripts (the callers pass no phrases).

use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::functions::FunctionFlags;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, Rows};

/// The SQL function giving a document's match count (its `rowid` in the index's FTS5 table),
/// or NULL when no counts are active or the document has none. The ranking statements
/// (`rank`, the transcript search) use it through [`counted_sql`].
pub(crate) const COUNT_FN: &str = "agentlog_match_count";
/// The SQL function counting the runs of a `highlight()` text: its U+FDD0 marks.
pub(crate) const MARKS_FN: &str = "agentlog_marks";

/// A candidate's match count in a ranking statement over the index's FTS5 table `fts`: the
/// count from the positions, or `highlight()`'s runs when there is none.
pub(crate) fn counted_sql() -> String {
    format!("coalesce({COUNT_FN}(fts.rowid), {})", marks_sql("fts"))
}

/// A candidate's match count by `highlight()` alone, over the FTS5 table `table` (the live
/// sessions' tables, which are never counted from positions).
pub(crate) fn marks_sql(table: &str) -> String {
    format!("{MARKS_FN}(highlight({table}, 0, char(64976), char(64977)))")
}

/// The opening mark `highlight()` is given (U+FDD0), as UTF-8, and its first byte.
const OPEN_MARK: &[u8] = "\u{FDD0}".as_bytes();
const OPEN_MARK_LEAD: u8 = 0xEF;

/// The connection-local tables, made on first use: a contentless FTS5 table that tokenizes
/// the query, its positions, and the index's positions.
const TABLES: [&str; 3] = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_query
       USING fts5(text, content = '', tokenize = 'unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_query_terms
       USING fts5vocab(temp, agentlog_query, instance)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.agentlog_terms USING fts5vocab(main, fts, instance)",
];

/// Positions read per document matching beyond which counting is given up for `highlight()`:
/// at 100k events reading a position cost ~0.2 µs, counting a candidate with `highlight()`
/// 2-4 µs.
const POSITIONS_PER_MATCH: u64 = 12;
/// Positions read before the ratio above is judged, and between judgements (~0.15 ms).
const JUDGED_AFTER: u64 = 1_024;

/// Match counts by document, sorted by document (the order positions are read in).
type Counts = Vec<(i64, u32)>;
type Active = Arc<Mutex<Option<Counts>>>;

/// The counts of the search under way, shared with the SQL functions of one connection.
#[derive(Debug)]
pub struct MatchCounter {
    active: Active,
}

/// Keeps counts active for the statements of one search; they are dropped with it.
#[derive(Debug)]
pub struct ActiveCounts<'a> {
    counter: &'a MatchCounter,
}

impl Drop for ActiveCounts<'_> {
    fn drop(&mut self) {
        *lock(&self.counter.active) = None;
    }
}

fn lock(active: &Active) -> std::sync::MutexGuard<'_, Option<Counts>> {
    // A panic while the lock is held leaves counts that are only ever read or replaced whole.
    active.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MatchCounter {
    /// Registers [`COUNT_FN`] and [`MARKS_FN`] on `conn`.
    pub fn install(conn: &Connection) -> rusqlite::Result<MatchCounter> {
        let active: Active = Arc::default();
        let shared = Arc::clone(&active);
        // Not deterministic: the answer depends on the counts active, not only the argument.
        conn.create_scalar_function(COUNT_FN, 1, FunctionFlags::SQLITE_UTF8, move |ctx| {
            let doc: i64 = ctx.get(0)?;
            Ok(lock(&shared).as_ref().and_then(|counts| {
                counts
                    .binary_search_by_key(&doc, |&(d, _)| d)
                    .ok()
                    .and_then(|i| counts.get(i))
                    .map(|&(_, n)| n)
            }))
        })?;
        conn.create_scalar_function(
            MARKS_FN,
            1,
            FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
            |ctx| {
                let marked = ctx.get_raw(0).as_bytes().unwrap_or_default();
                Ok(marks(marked))
            },
        )?;
        Ok(MatchCounter { active })
    }

    /// Counts the matches of `phrases` (the query's phrases, as FTS5 parses them: every one
    /// must occur) in the index's documents, and makes the counts active until the returned
    /// guard drops. When counting is given up, no counts are active and the statements count
    /// with `highlight()`.
    pub fn activate(
        &self,
        conn: &Connection,
        phrases: &[String],
    ) -> rusqlite::Result<ActiveCounts<'_>> {
        for sql in TABLES {
            conn.prepare_cached(sql)?.execute([])?;
        }
        let tokens = tokenize(conn, phrases)?;
        let counts = match tokens {
            Some(tokens) => count(conn, &tokens)?,
            None => None,
        };
        *lock(&self.active) = counts;
        Ok(ActiveCounts { counter: self })
    }
}

/// The tokens of each phrase, as the index's tokenizer makes them; `None` when a phrase has
/// none (it matches nothing) or there is no phrase.
fn tokenize(conn: &Connection, phrases: &[String]) -> rusqlite::Result<Option<Vec<Vec<Vec<u8>>>>> {
    if phrases.is_empty() {
        return Ok(None);
    }
    let clear = "INSERT INTO temp.agentlog_query(agentlog_query) VALUES ('delete-all')";
    conn.execute(clear, [])?;
    {
        let mut insert =
            conn.prepare_cached("INSERT INTO temp.agentlog_query(rowid, text) VALUES (?1, ?2)")?;
        for (i, phrase) in phrases.iter().enumerate() {
            insert.execute((i64::try_from(i).unwrap_or(i64::MAX), phrase))?;
        }
    }
    let mut tokens: Vec<Vec<(i64, Vec<u8>)>> = vec![Vec::new(); phrases.len()];
    {
        let mut select =
            conn.prepare_cached("SELECT doc, offset, term FROM temp.agentlog_query_terms")?;
        let mut rows = select.query([])?;
        while let Some(row) = rows.next()? {
            let doc: i64 = row.get(0)?;
            let offset: i64 = row.get(1)?;
            let term = row.get_ref(2)?.as_bytes().unwrap_or_default().to_vec();
            if let Some(phrase) = usize::try_from(doc).ok().and_then(|d| tokens.get_mut(d)) {
                phrase.push((offset, term));
            }
        }
    }
    conn.execute(clear, [])?;
    let mut phrases_tokens = Vec::with_capacity(tokens.len());
    for mut phrase in tokens {
        if phrase.is_empty() {
            return Ok(None);
        }
        phrase.sort_unstable();
        phrases_tokens.push(phrase.into_iter().map(|(_, term)| term).collect());
    }
    Ok(Some(phrases_tokens))
}

/// One token's positions in the index, in document order.
struct Stream<'s> {
    rows: Rows<'s>,
    token: u16,
    head: Option<(i64, i64)>,
}

impl Stream<'_> {
    fn advance(&mut self) -> rusqlite::Result<()> {
        self.head = match self.rows.next()? {
            Some(row) => Some((row.get_ref(0)?.as_i64()?, row.get_ref(1)?.as_i64()?)),
            None => None,
        };
        Ok(())
    }
}

/// The match count of every document in which every phrase occurs; `None` when counting is
/// given up (too many positions per match, or positions out of document order).
fn count(conn: &Connection, phrases: &[Vec<Vec<u8>>]) -> rusqlite::Result<Option<Counts>> {
    let mut distinct: Vec<&[u8]> = Vec::new();
    let mut ids: Vec<Vec<u16>> = Vec::with_capacity(phrases.len());
    for phrase in phrases {
        let mut phrase_ids = Vec::with_capacity(phrase.len());
        for token in phrase {
            let id = if let Some(id) = distinct.iter().position(|t| *t == token.as_slice()) {
                id
            } else {
                distinct.push(token);
                distinct.len() - 1
            };
            let Ok(id) = u16::try_from(id) else {
                return Ok(None);
            };
            phrase_ids.push(id);
        }
        ids.push(phrase_ids);
    }
    let sql = "SELECT doc, offset FROM temp.agentlog_terms WHERE term = ?1";
    let mut statements = Vec::with_capacity(distinct.len());
    for _ in &distinct {
        statements.push(conn.prepare_cached(sql)?);
    }
    let mut streams = Vec::with_capacity(distinct.len());
    for ((statement, token), id) in statements.iter_mut().zip(&distinct).zip(0u16..) {
        let rows = statement.query([ToSqlOutput::Borrowed(ValueRef::Text(token))])?;
        let mut stream = Stream {
            rows,
            token: id,
            head: None,
        };
        stream.advance()?;
        streams.push(stream);
    }
    let mut counts = Counts::new();
    // A phrase of one token alone: every position is a run of its own.
    let single = matches!(ids.as_slice(), [phrase] if phrase.len() == 1);
    let mut positions: Vec<(i64, u16)> = Vec::new();
    let mut runs_scratch: Vec<(i64, i64)> = Vec::new();
    let mut read = 0u64;
    let mut judge_at = JUDGED_AFTER;
    while let Some(doc) = streams.iter().filter_map(|s| s.head.map(|h| h.0)).min() {
        positions.clear();
        for stream in &mut streams {
            while let Some((d, offset)) = stream.head {
                if d != doc {
                    if d < doc {
                        // Not in document order: a document's positions may be split.
                        return Ok(None);
                    }
                    break;
                }
                positions.push((offset, stream.token));
                stream.advance()?;
                read += 1;
            }
        }
        let n = if single {
            u32::try_from(positions.len()).ok()
        } else {
            runs(&mut positions, &ids, &mut runs_scratch)
        };
        if let Some(n) = n {
            counts.push((doc, n));
        }
        if read >= judge_at {
            if read > POSITIONS_PER_MATCH.saturating_mul(counts.len() as u64 + 1) {
                return Ok(None);
            }
            judge_at = read.saturating_add(JUDGED_AFTER);
        }
    }
    Ok(Some(counts))
}

/// The opening marks in a `highlight()` text. (Documents never hold U+FDD0: it is replaced
/// when they are read.)
fn marks(marked: &[u8]) -> i64 {
    let mut n = 0;
    for at in memchr::memchr_iter(OPEN_MARK_LEAD, marked) {
        if marked.get(at..at + OPEN_MARK.len()) == Some(OPEN_MARK) {
            n += 1;
        }
    }
    n
}

/// The runs `highlight()` marks in one document, given its positions of the query's tokens
/// (offset, token id) and each phrase as token ids; `None` when a phrase does not occur.
fn runs(
    positions: &mut [(i64, u16)],
    phrases: &[Vec<u16>],
    runs: &mut Vec<(i64, i64)>,
) -> Option<u32> {
    positions.sort_unstable();
    runs.clear();
    for phrase in phrases {
        let (first, rest) = phrase.split_first()?;
        let before = runs.len();
        for &(start, token) in positions.iter() {
            if token != *first {
                continue;
            }
            let whole = rest.iter().zip(1i64..).all(|(next, step)| {
                positions
                    .binary_search(&(start.saturating_add(step), *next))
                    .is_ok()
            });
            if whole {
                let last = i64::try_from(rest.len()).unwrap_or(i64::MAX);
                runs.push((start, start.saturating_add(last)));
            }
        }
        if runs.len() == before {
            return None;
        }
    }
    // FTS5's instance iterator: occurrences by start; one starting at or before the end of
    // the run so far extends it, any other opens a new run.
    runs.sort_unstable();
    let mut count = 0u32;
    let mut end = i64::MIN;
    for &(start, last) in runs.iter() {
        if count > 0 && start <= end {
            end = end.max(last);
        } else {
            count += 1;
            end = last;
        }
    }
    Some(count)
}

#[cfg(test)]
mod tests;
