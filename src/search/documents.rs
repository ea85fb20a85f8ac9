//! A file's documents in an index: their ids, their rows, and their text in the FTS5 table,
//! written and deleted together (the index's tables and the live sessions' connection-local
//! ones alike).

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params_from_iter};

use crate::search::error::SearchError;

/// One document a source's reader made of a line.
pub(crate) trait Document {
    /// Its number in its file (a seq, a line number): with the file's key, its id ([`doc_id`]).
    fn number(&self) -> u64;
    /// Its text, sanitized.
    fn text(&self) -> &str;
    /// Its own columns' values ([`DocTables::columns`]), in order.
    fn values(&self) -> Vec<SqlValue>;
}

/// Where a source's documents are kept: a table of their columns and an FTS5 table of their
/// text, both keyed by the document's id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocTables {
    /// The table of the documents' columns.
    pub docs: &'static str,
    /// The FTS5 table of their text.
    pub fts: &'static str,
    /// The column of `docs` naming the file (its key).
    pub file: &'static str,
    /// The columns a [`Document`] binds after its id and its file's key.
    pub columns: &'static [&'static str],
}

impl DocTables {
    /// Adds the documents of the file `key`.
    pub fn insert<D: Document>(
        &self,
        conn: &Connection,
        key: i64,
        docs: &[D],
    ) -> Result<(), SearchError> {
        if docs.is_empty() {
            return Ok(());
        }
        let fail = |e| SearchError::index("adding documents", e);
        let marks: Vec<String> = (1..=self.columns.len() + 2)
            .map(|i| format!("?{i}"))
            .collect();
        let (columns, marks) = (self.columns.join(", "), marks.join(", "));
        let row_sql = format!(
            "INSERT INTO {}(id, {}, {columns}) VALUES ({marks})",
            self.docs, self.file
        );
        let text_sql = format!("INSERT INTO {}(rowid, text) VALUES (?1, ?2)", self.fts);
        let mut row = conn.prepare_cached(&row_sql).map_err(fail)?;
        let mut text = conn.prepare_cached(&text_sql).map_err(fail)?;
        for doc in docs {
            let id = doc_id(key, doc.number())?;
            let values = [SqlValue::Integer(id), SqlValue::Integer(key)];
            row.execute(params_from_iter(values.into_iter().chain(doc.values())))
                .map_err(fail)?;
            text.execute((id, doc.text())).map_err(fail)?;
        }
        Ok(())
    }

    /// Sets `set` (an SQL assignment) on the documents `numbers` of the file `key`.
    pub fn update(
        &self,
        conn: &Connection,
        key: i64,
        numbers: impl IntoIterator<Item = u64>,
        set: &str,
    ) -> Result<(), SearchError> {
        let fail = |e| SearchError::index("reclassifying documents", e);
        let sql = format!("UPDATE {} SET {set} WHERE id = ?1", self.docs);
        let mut update = conn.prepare_cached(&sql).map_err(fail)?;
        for number in numbers {
            update.execute([doc_id(key, number)?]).map_err(fail)?;
        }
        Ok(())
    }

    /// Deletes every document of the file `key`: one range of ids.
    pub fn delete(&self, conn: &Connection, key: i64) -> Result<(), SearchError> {
        let (lo, hi) = (doc_id(key, 0)?, doc_id(key, u64::from(u32::MAX))?);
        let delete = |table: &str, id: &str| {
            conn.prepare_cached(&format!("DELETE FROM {table} WHERE {id} BETWEEN ?1 AND ?2"))?
                .execute([lo, hi])
        };
        delete(self.fts, "rowid")
            .and_then(|_| delete(self.docs, "id"))
            .map_err(|e| SearchError::index("deleting a file's documents", e))?;
        Ok(())
    }
}

/// A document's id: its file's key and its number in one integer, so a file's documents are one
/// range of the table (no second index to keep up) and FTS5 rowids follow them.
pub(crate) fn doc_id(key: i64, number: u64) -> Result<i64, SearchError> {
    match (u32::try_from(number), key) {
        (Ok(number), 0..=0x7FFF_FFFF) => Ok((key << 32) | i64::from(number)),
        _ => Err(SearchError::IndexFailed {
            operation: "numbering documents".into(),
            cause: format!("file key {key} or number {number} is beyond the index's numbering")
                .into(),
        }),
    }
}
