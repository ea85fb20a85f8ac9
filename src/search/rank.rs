//! The ranking statements: candidates, match counts, the best event per session, paging.
//!
//! A candidate is a document matching the FTS5 expression, with its session's columns and its
//! text with every match wrapped in U+FDD0 ... U+FDD1 (`highlight`). Its match count is the
//! number of wrapped runs (FTS5 merges overlapping matches into one run); its length is the
//! text's length in code points. Both orders are the reference's: match count descending,
//! length ascending, time descending, then session id ascending (sessions) and seq descending.
//! Live sessions' documents come from connection-local tables and hide the persisted copy.

use rusqlite::Connection;
use rusqlite::types::Value as SqlValue;

use crate::search::error::SearchError;
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
}

const PERSISTED: &str = "
  SELECT s.id AS sid, s.cwd AS cwd, s.created_at AS created_at,
         s.parent AS parent, 0 AS live, 1 AS persisted, d.seq AS seq, d.type AS type,
         d.time AS time, d.surface AS surface, d.length AS length,
         highlight(fts, 0, char(64976), char(64977)) AS marked
  FROM fts JOIN docs d ON d.id = fts.rowid JOIN sessions s ON s.key = d.session
  WHERE fts MATCH ?1 AND s.error IS NULL";

const HIDE_LIVE: &str = " AND s.id NOT IN (SELECT id FROM temp.live_sessions)";

const LIVE: &str = "
  SELECT s.id AS sid, s.cwd AS cwd, s.created_at AS created_at,
         s.parent AS parent, 1 AS live, s.persisted AS persisted, d.seq AS seq, d.type AS type,
         d.time AS time, d.surface AS surface, d.length AS length,
         highlight(live_fts, 0, char(64976), char(64977)) AS marked
  FROM temp.live_fts JOIN temp.live_docs d ON d.id = live_fts.rowid
       JOIN temp.live_sessions s ON s.key = d.session
  WHERE live_fts MATCH ?1";

pub(crate) const MATCH_COUNT: &str =
    "(length(CAST(marked AS BLOB)) - length(CAST(replace(marked, char(64976), '') AS BLOB))) / 3";

fn candidates(live: bool, predicates: &Predicates, first_param: usize) -> String {
    let mut sql = String::from("SELECT * FROM (");
    sql.push_str(PERSISTED);
    if live {
        sql.push_str(HIDE_LIVE);
        sql.push_str(" UNION ALL");
        sql.push_str(LIVE);
    }
    sql.push_str(") WHERE ");
    sql.push_str(&predicates.sql(first_param));
    sql
}

/// The page of sessions: each matching session's best event, ranked. Fetches `limit + 1` rows
/// so the caller can tell whether a next page exists.
pub fn rank_sessions(
    conn: &Connection,
    live: bool,
    expression: &str,
    predicates: &Predicates,
    limit: u64,
    offset: u64,
) -> Result<Vec<RankedRow>, SearchError> {
    let sql = format!(
        "WITH cand AS ({}),
         counted AS (SELECT *, {MATCH_COUNT} AS mc FROM cand),
         ranked AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY sid
                    ORDER BY mc DESC, length ASC, time DESC, seq DESC) AS rn FROM counted)
         SELECT sid, live, persisted, seq, type, time, surface, marked FROM ranked
         WHERE rn = 1 ORDER BY mc DESC, length ASC, time DESC, sid ASC, seq DESC
         LIMIT ?2 OFFSET ?3",
        candidates(live, predicates, 4)
    );
    run(
        conn,
        &sql,
        expression,
        limit,
        offset,
        &[],
        &predicates.values,
    )
}

/// The page of one session's matching events, ranked.
#[allow(clippy::too_many_arguments)]
pub fn rank_events(
    conn: &Connection,
    live: bool,
    session_id: &str,
    expression: &str,
    predicates: &Predicates,
    limit: u64,
    offset: u64,
) -> Result<Vec<RankedRow>, SearchError> {
    let sql = format!(
        "WITH cand AS ({} AND sid = ?4),
         counted AS (SELECT *, {MATCH_COUNT} AS mc FROM cand)
         SELECT sid, live, persisted, seq, type, time, surface, marked FROM counted
         ORDER BY mc DESC, length ASC, time DESC, seq DESC
         LIMIT ?2 OFFSET ?3",
        candidates(live, predicates, 5)
    );
    let session = [SqlValue::Text(session_id.into())];
    run(
        conn,
        &sql,
        expression,
        limit,
        offset,
        &session,
        &predicates.values,
    )
}

fn run(
    conn: &Connection,
    sql: &str,
    expression: &str,
    limit: u64,
    offset: u64,
    extra: &[SqlValue],
    values: &[SqlValue],
) -> Result<Vec<RankedRow>, SearchError> {
    let failed = |e| SearchError::index("searching", e);
    let mut stmt = conn.prepare(sql).map_err(failed)?;
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
                marked: r.get(7)?,
            })
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(failed)?;
    // Headers are read for the page only: carried through the ranking, every candidate's
    // header was sorted along with it.
    // Each statement is prepared once per page, not once per hit.
    let mut rows = rows;
    let mut stored = None;
    let mut live = None;
    for row in &mut rows {
        let (slot, table) = if row.live {
            (&mut live, "temp.live_sessions")
        } else {
            (&mut stored, "sessions")
        };
        let stmt = match slot {
            Some(stmt) => stmt,
            None => slot.insert(
                conn.prepare(&format!("SELECT header FROM {table} WHERE id = ?1"))
                    .map_err(failed)?,
            ),
        };
        row.header = stmt
            .query_row([&row.session_id], |r| r.get::<_, Option<String>>(0))
            .map_err(failed)?
            .unwrap_or_default();
    }
    Ok(rows)
}
