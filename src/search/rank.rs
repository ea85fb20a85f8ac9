//! The ranking statements: candidates, match counts, the best event per session, paging.
//!
//! A candidate is a document matching the FTS5 expression, with its session's columns. Its match
//! count is the number of runs `highlight()` would mark (FTS5 merges overlapping matches into
//! one run), counted from the row's instances by an auxiliary function (`fts5`). Its length is
//! the text's length in code points. Both orders are the reference's: match count descending,
//! length ascending, time descending, then session id ascending (sessions) and seq descending.
//! Only the rows of the page get their text with every match wrapped in U+FDD0 ... U+FDD1, as
//! `highlight()` marks it (`marked`), for the snippet. Live sessions' documents come from
//! connection-local tables and hide the persisted copy.

use rusqlite::types::Value as SqlValue;

use crate::search::db::Db;
use crate::search::error::SearchError;
use crate::search::fts5::runs_sql;
use crate::search::marked::{PageDoc, Source, marked_texts};
use crate::search::predicate::Predicates;
use crate::search::request::Query;

/// One ranked row.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedRow {
    /// The session id.
    pub session_id: String,
    /// The session header, as stored JSON.
    pub header: String,
    /// Whether the session is live.
    pub live: bool,
    /// Whether the session is stored.
    pub persisted: bool,
    /// The event's seq.
    pub seq: u64,
    /// The event's type.
    pub event_type: String,
    /// The event's time.
    pub time: i64,
    /// The event's surface class, as stored.
    pub surface: String,
    /// The text with its matches marked.
    pub marked: String,
    /// The document's rowid in its FTS5 table (the live one when `live`).
    pub doc: i64,
}

const HIDE_LIVE: &str = " AND s.id NOT IN (SELECT id FROM temp.live_sessions)";

fn candidates(live: bool, predicates: &Predicates, first_param: usize) -> String {
    let mut sql = format!(
        "SELECT * FROM (
  SELECT s.id AS sid, s.cwd AS cwd, s.created_at AS created_at,
         s.parent AS parent, 0 AS live, 1 AS persisted, d.seq AS seq, d.type AS type,
         d.time AS time, d.surface AS surface, d.length AS length, fts.rowid AS doc,
         {} AS mc
  FROM fts JOIN docs d ON d.id = fts.rowid JOIN sessions s ON s.key = d.session
  WHERE fts MATCH ?1 AND s.error IS NULL",
        runs_sql("fts")
    );
    if live {
        sql.push_str(HIDE_LIVE);
        let live_candidates = format!(
            " UNION ALL
  SELECT s.id AS sid, s.cwd AS cwd, s.created_at AS created_at,
         s.parent AS parent, 1 AS live, s.persisted AS persisted, d.seq AS seq, d.type AS type,
         d.time AS time, d.surface AS surface, d.length AS length, live_fts.rowid AS doc,
         {} AS mc
  FROM temp.live_fts JOIN temp.live_docs d ON d.id = live_fts.rowid
       JOIN temp.live_sessions s ON s.key = d.session
  WHERE live_fts MATCH ?1",
            runs_sql("live_fts")
        );
        sql.push_str(&live_candidates);
    }
    sql.push_str(") WHERE ");
    sql.push_str(&predicates.sql(first_param));
    sql
}

/// The page of sessions: each matching session's best event, ranked. Fetches `limit + 1` rows
/// so the caller can tell whether a next page exists.
pub fn rank_sessions(
    db: &Db,
    live: bool,
    query: &Query,
    predicates: &Predicates,
    offset: u64,
) -> Result<Vec<RankedRow>, SearchError> {
    let sql = format!(
        "WITH cand AS ({}),
         ranked AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY sid
                    ORDER BY mc DESC, length ASC, time DESC, seq DESC) AS rn FROM cand)
         SELECT sid, live, persisted, seq, type, time, surface, doc FROM ranked
         WHERE rn = 1 ORDER BY mc DESC, length ASC, time DESC, sid ASC, seq DESC
         LIMIT ?2 OFFSET ?3",
        candidates(live, predicates, 4)
    );
    run(db, &sql, query, offset, &[], &predicates.values)
}

/// The page of one session's matching events, ranked.
pub fn rank_events(
    db: &Db,
    live: bool,
    session_id: &str,
    query: &Query,
    predicates: &Predicates,
    offset: u64,
) -> Result<Vec<RankedRow>, SearchError> {
    let sql = format!(
        "WITH cand AS ({} AND sid = ?4)
         SELECT sid, live, persisted, seq, type, time, surface, doc FROM cand
         ORDER BY mc DESC, length ASC, time DESC, seq DESC
         LIMIT ?2 OFFSET ?3",
        candidates(live, predicates, 5)
    );
    let session = [SqlValue::Text(session_id.into())];
    run(db, &sql, query, offset, &session, &predicates.values)
}

fn run(
    db: &Db,
    sql: &str,
    query: &Query,
    offset: u64,
    session: &[SqlValue],
    values: &[SqlValue],
) -> Result<Vec<RankedRow>, SearchError> {
    let params: Vec<SqlValue> = session.iter().chain(values).cloned().collect();
    let rows = ranked(db, sql, query, None, offset, &params, |r| {
        let live: bool = r.get(1)?;
        let doc = r.get(7)?;
        let row = RankedRow {
            session_id: r.get(0)?,
            header: String::new(),
            live,
            persisted: r.get(2)?,
            seq: r.get::<_, i64>(3)?.cast_unsigned(),
            event_type: r.get(4)?,
            time: r.get(5)?,
            surface: r.get(6)?,
            marked: String::new(),
            doc,
        };
        let source = if live { Source::Live } else { Source::Index };
        Ok((row, PageDoc { source, doc }))
    })?;
    // Headers are read for the page only: carried through the ranking, every candidate's
    // would be sorted along with it.
    rows.into_iter()
        .map(|(mut row, marked)| {
            let header = if row.live {
                "SELECT header FROM temp.live_sessions WHERE id = ?1"
            } else {
                "SELECT header FROM sessions WHERE id = ?1"
            };
            row.header = db
                .conn
                .prepare_cached(header)
                .and_then(|mut s| s.query_row([&row.session_id], |r| r.get::<_, Option<String>>(0)))
                .map_err(|e| SearchError::index("searching", e))?
                .unwrap_or_default();
            row.marked = marked;
            Ok(row)
        })
        .collect()
}

/// Runs the ranking statement `sql` (`?1` the query's expression, `?2` the page size + 1, `?3`
/// the offset, then `params`), and gives each row, made by `row` with its document, and the
/// document's text with its matches marked (for the page only: marked in the ranking, every
/// candidate's text would be highlighted; with `snippet_chars`, a long text may be marked in a
/// prefix that gives the same snippet of that many code points: [`marked_texts`]).
pub(crate) fn ranked<T>(
    db: &Db,
    sql: &str,
    query: &Query,
    snippet_chars: Option<usize>,
    offset: u64,
    params: &[SqlValue],
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<(T, PageDoc)>,
) -> Result<Vec<(T, String)>, SearchError> {
    let failed = |e| SearchError::index("searching", e);
    let conn = &db.conn;
    let mut stmt = conn.prepare_cached(sql).map_err(failed)?;
    let fixed = [
        SqlValue::Text(query.expression.clone()),
        SqlValue::Integer(i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX)),
        SqlValue::Integer(i64::try_from(offset).unwrap_or(i64::MAX)),
    ];
    let rows: Vec<(T, PageDoc)> = stmt
        .query_map(rusqlite::params_from_iter(fixed.iter().chain(params)), row)
        .and_then(Iterator::collect)
        .map_err(failed)?;
    let (rows, docs): (Vec<T>, Vec<PageDoc>) = rows.into_iter().unzip();
    let marked = marked_texts(conn, query, &docs, snippet_chars).map_err(failed)?;
    Ok(rows.into_iter().zip(marked).collect())
}
