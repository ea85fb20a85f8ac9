//! The ranking statements: candidates, match counts, the best event per session, paging.
//!
//! A candidate is a document matching the FTS5 expression, with its session's columns. Its match
//! count is the number of runs `highlight()` would mark (FTS5 merges overlapping matches into
//! one run): counted from the index's positions (`count`), or by `highlight()` itself when
//! counting was given up, for live documents, and in searches with filters or within one
//! session. Its length is the text's length in code
//! points. Both orders are the reference's: match count descending, length ascending, time
//! descending, then session id ascending (sessions) and seq descending. Only the rows of the
//! page get their text with every match wrapped in U+FDD0 ... U+FDD1 (`highlight()`), for the
//! snippet. Live sessions' documents come from connection-local tables and hide the persisted
//! copy.

use rusqlite::types::Value as SqlValue;

use crate::search::count::{counted_sql, marks_sql};
use crate::search::db::Db;
use crate::search::error::SearchError;
use crate::search::marked::{PageDoc, Source, marked_texts};
use crate::search::predicate::Predicates;

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
        counted_sql()
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
            marks_sql("live_fts")
        );
        sql.push_str(&live_candidates);
    }
    sql.push_str(") WHERE ");
    sql.push_str(&predicates.sql(first_param));
    sql
}

/// The page of sessions: each matching session's best event, ranked. Fetches `limit + 1` rows
/// so the caller can tell whether a next page exists. `phrases` are the query's, for the
/// match counts (`count`).
pub fn rank_sessions(
    db: &Db,
    live: bool,
    expression: &str,
    phrases: &[String],
    predicates: &Predicates,
    limit: u64,
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
    // A filtered search counts with highlight(): its candidates may be few, while the
    // positions read would be the whole index's.
    let phrases = if predicates.is_empty() { phrases } else { &[] };
    run(
        db,
        &sql,
        expression,
        phrases,
        limit,
        offset,
        &[],
        &predicates.values,
    )
}

/// The page of one session's matching events, ranked.
pub fn rank_events(
    db: &Db,
    live: bool,
    session_id: &str,
    expression: &str,
    predicates: &Predicates,
    limit: u64,
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
    // One session's candidates are counted with highlight(): the positions read would be the
    // whole index's.
    run(
        db,
        &sql,
        expression,
        &[],
        limit,
        offset,
        &session,
        &predicates.values,
    )
}

#[allow(clippy::too_many_arguments)]
fn run(
    db: &Db,
    sql: &str,
    expression: &str,
    phrases: &[String],
    limit: u64,
    offset: u64,
    extra: &[SqlValue],
    values: &[SqlValue],
) -> Result<Vec<RankedRow>, SearchError> {
    let failed = |e| SearchError::index("searching", e);
    let conn = &db.conn;
    let _counts = db.counter.activate(conn, phrases).map_err(failed)?;
    let mut stmt = conn.prepare_cached(sql).map_err(failed)?;
    let mut params: Vec<SqlValue> = vec![
        SqlValue::Text(expression.into()),
        SqlValue::Integer(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX)),
        SqlValue::Integer(i64::try_from(offset).unwrap_or(i64::MAX)),
    ];
    params.extend_from_slice(extra);
    params.extend_from_slice(values);
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |r| {
            Ok(RankedRow {
                session_id: r.get(0)?,
                header: String::new(),
                live: r.get(1)?,
                persisted: r.get(2)?,
                seq: r.get::<_, i64>(3)?.cast_unsigned(),
                event_type: r.get(4)?,
                time: r.get(5)?,
                surface: r.get(6)?,
                marked: String::new(),
                doc: r.get(7)?,
            })
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(failed)?;
    // Headers and marked texts are read for the page only: carried through the ranking, every
    // candidate's would be sorted (and highlighted) along with it.
    let mut rows = rows;
    for row in &mut rows {
        let header = if row.live {
            "SELECT header FROM temp.live_sessions WHERE id = ?1"
        } else {
            "SELECT header FROM sessions WHERE id = ?1"
        };
        row.header = conn
            .prepare_cached(header)
            .and_then(|mut s| s.query_row([&row.session_id], |r| r.get::<_, Option<String>>(0)))
            .map_err(failed)?
            .unwrap_or_default();
    }
    let docs: Vec<PageDoc> = rows
        .iter()
        .map(|row| PageDoc {
            source: if row.live {
                Source::Live
            } else {
                Source::Index
            },
            doc: row.doc,
        })
        .collect();
    let marked = marked_texts(conn, expression, &docs).map_err(failed)?;
    for (row, marked) in rows.iter_mut().zip(marked) {
        row.marked = marked;
    }
    Ok(rows)
}
