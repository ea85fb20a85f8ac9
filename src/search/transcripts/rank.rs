//! The ranking statement of a transcript search: match count descending, length ascending,
//! time descending (unknown last), then file ascending, offset descending and document
//! ascending (an `OpenCode` message's parts share its offset: in part order); match counts and
//! marked texts as a store search's ([`crate::search::rank`]).

use crate::search::db::Db;
use crate::search::error::SearchError;
use crate::search::fts5::runs_sql;
use crate::search::marked::{PageDoc, Source};
use crate::search::rank::ranked;
use crate::search::request::Query;
use crate::search::snippet::make_snippet;
use crate::search::transcripts::TranscriptSearchHit;
use crate::search::transcripts::files::{Searched, stored_path};
use crate::transcript::Format;

/// The hits from `offset` on, `limit + 1` of them (so the caller can tell whether a next page
/// exists), of the files `searched`.
pub(super) fn rank(
    db: &Db,
    searched: &Searched,
    query: &Query,
    offset: u64,
    snippet_chars: usize,
) -> Result<Vec<TranscriptSearchHit>, SearchError> {
    let restrict = if searched.all {
        ""
    } else {
        restrict_to(db, &searched.keys).map_err(|e| SearchError::index("searching", e))?;
        " AND d.file IN (SELECT key FROM temp.searched)"
    };
    let counted = runs_sql("fts");
    let sql = format!(
        "WITH cand AS (
           SELECT d.file AS file, d.offset AS offset, d.line AS line, d.generation AS gen,
                  d.type AS type, d.role AS role, d.time AS time, d.length AS length,
                  d.session AS session,
                  fts.rowid AS doc, {counted} AS mc
           FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ?1{restrict})
         SELECT f.path, f.format, COALESCE(c.session, f.session), c.offset, c.line, c.gen, c.type, c.role, c.time,
                c.doc
         FROM cand c JOIN files f ON f.key = c.file
         ORDER BY c.mc DESC, c.length ASC, c.time DESC, f.path ASC, c.offset DESC, c.doc ASC
         LIMIT ?2 OFFSET ?3"
    );
    let rows = ranked(db, &sql, query, Some(snippet_chars), offset, &[], |r| {
        let format: Option<String> = r.get(1)?;
        // Only files read as a format have documents.
        let format = format
            .and_then(|f| f.parse::<Format>().ok())
            .ok_or_else(|| {
                rusqlite::Error::FromSqlConversionFailure(
                    1,
                    rusqlite::types::Type::Text,
                    "a file with documents but no format".into(),
                )
            })?;
        let hit = TranscriptSearchHit {
            file: stored_path(r.get(0)?),
            format,
            session: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            offset: r.get::<_, i64>(3)?.cast_unsigned(),
            line: r.get::<_, i64>(4)?.cast_unsigned(),
            generation: r.get(5)?,
            kind: r.get(6)?,
            role: r.get(7)?,
            time: r.get(8)?,
            snippet: String::new(),
            marks: Vec::new(),
            archived: None,
        };
        let doc = PageDoc {
            source: Source::Index,
            doc: r.get(9)?,
        };
        Ok((hit, doc))
    })?;
    Ok(rows
        .into_iter()
        .map(|(mut hit, marked)| {
            let snippet = make_snippet(&marked, snippet_chars);
            hit.snippet = snippet.text;
            hit.marks = snippet.marks;
            hit
        })
        .collect())
}

/// Fills the connection-local table of the keys searched.
fn restrict_to(db: &Db, keys: &[i64]) -> rusqlite::Result<()> {
    db.conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS searched(key INTEGER PRIMARY KEY);
         DELETE FROM temp.searched;",
    )?;
    let mut insert = db
        .conn
        .prepare_cached("INSERT OR IGNORE INTO temp.searched(key) VALUES (?1)")?;
    for key in keys {
        insert.execute([key])?;
    }
    Ok(())
}
