//! The live overlay: documents of the sessions a [`Store`] is writing, kept in tables local to
//! this connection, which hide the stored copy of the same session (live data wins, as in every
//! other query).
//!
//! A live session only grows (appends are all or nothing and never rewritten), so a session
//! seen before is caught up by its new events alone: their documents are added, and the seqs
//! their replacements shadowed are reclassified. Its generation is this process's own (an
//! epoch drawn when the overlay is made, then a counter), so a cursor over live data never
//! passes in another process.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, params};

use crate::query::Store;
use crate::search::documents::DocTables;
use crate::search::error::SearchError;
use crate::search::reader::documents;
use crate::search::sessions::{EVENT_COLUMNS, shadow};

const TABLES: &str = "
CREATE TEMP TABLE IF NOT EXISTS live_sessions(
  key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, header TEXT NOT NULL, cwd TEXT,
  created_at INTEGER, parent TEXT, persisted INTEGER NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS live_docs(
  id INTEGER PRIMARY KEY, session INTEGER NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
  time INTEGER NOT NULL, surface TEXT NOT NULL, length INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.live_fts USING fts5(text, tokenize = 'unicode61', columnsize = 0);
";

/// Where the live sessions' documents are: ids as the index's (session key and seq).
const DOCS: DocTables = DocTables {
    docs: "temp.live_docs",
    fts: "temp.live_fts",
    file: "session",
    columns: EVENT_COLUMNS,
};

#[derive(Debug, Clone)]
struct Entry {
    key: i64,
    header: String,
    count: usize,
    persisted: bool,
    generation: u64,
}

/// The live sessions this connection holds.
#[derive(Debug)]
pub struct LiveOverlay {
    epoch: String,
    generation: u64,
    tables: bool,
    sessions: HashMap<String, Entry>,
}

fn failed(e: rusqlite::Error) -> SearchError {
    SearchError::index("indexing live sessions", e)
}

impl LiveOverlay {
    /// An empty overlay with a fresh epoch.
    pub fn new(epoch: String) -> Self {
        Self {
            epoch,
            generation: 0,
            tables: false,
            sessions: HashMap::new(),
        }
    }

    /// Whether the live tables exist (the ranking statements then read them).
    pub fn has_tables(&self) -> bool {
        self.tables
    }

    /// The part of a session search's generation the overlay adds; empty while this process
    /// never held a live session, so cursors then stay valid across processes.
    pub fn generation_suffix(&self) -> String {
        if self.generation == 0 {
            String::new()
        } else {
            format!(":{}:{}", self.epoch, self.generation)
        }
    }

    /// The generation of one live session, if it is live.
    pub fn session_generation(&self, session_id: &str) -> Option<String> {
        self.sessions
            .get(session_id)
            .map(|e| format!("live:{}:{}", self.epoch, e.generation))
    }

    /// Forgets the tables (the connection was replaced); the next sync adds the live sessions
    /// again, which moves the generation if there are any.
    pub fn reset(&mut self) {
        self.tables = false;
        self.sessions.clear();
    }

    /// Brings the tables up to the store's live sessions; `persisted` says which ids are stored.
    pub fn sync(
        &mut self,
        conn: &Connection,
        store: &Store,
        persisted: &dyn Fn(&str) -> bool,
    ) -> Result<(), SearchError> {
        let headers = store.live_headers();
        if headers.is_empty() && self.sessions.is_empty() {
            return Ok(());
        }
        if !self.tables {
            conn.execute_batch(TABLES).map_err(failed)?;
            self.tables = true;
        }
        let live: HashSet<String> = headers.iter().map(|h| h.id.clone()).collect();
        let gone: Vec<String> = self
            .sessions
            .keys()
            .filter(|id| !live.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            if let Some(entry) = self.sessions.remove(&id) {
                delete(conn, entry.key)?;
                self.generation += 1;
            }
        }
        for header in headers {
            let id = header.id.clone();
            let header_json = serde_json::to_string(&header).unwrap_or_default();
            let is_persisted = persisted(&id);
            let known = self.sessions.get(&id).cloned();
            let from = match &known {
                Some(e) if e.header == header_json && e.persisted == is_persisted => e.count,
                _ => 0,
            };
            let Some((count, docs, shadowed)) = store.with_live(&id, |view| {
                let events = view.events;
                let new = events.get(from..).unwrap_or_default();
                let shadowed: HashSet<u64> = view
                    .surface
                    .replacements()
                    .iter()
                    .filter(|r| r.seq >= from as u64)
                    .flat_map(|r| r.shadowed_seqs.iter().copied())
                    .collect();
                (events.len(), documents(new, &shadowed), shadowed)
            }) else {
                continue;
            };
            if known
                .as_ref()
                .is_some_and(|e| e.count == count && from == count)
            {
                continue;
            }
            let key = if let Some(entry) = known.filter(|_| from > 0) {
                entry.key
            } else {
                if let Some(old) = self.sessions.remove(&id) {
                    delete(conn, old.key)?;
                }
                conn.execute(
                    "INSERT INTO temp.live_sessions(id, header, cwd, created_at, parent, persisted)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        id,
                        header_json,
                        header.cwd,
                        header.created_at.cast_signed(),
                        header.parent_session,
                        is_persisted
                    ],
                )
                .map_err(failed)?;
                conn.last_insert_rowid()
            };
            DOCS.insert(conn, key, &docs)?;
            let earlier = shadowed.iter().copied().filter(|s| *s < from as u64);
            shadow(&DOCS, conn, key, earlier)?;
            self.generation += 1;
            self.sessions.insert(
                id,
                Entry {
                    key,
                    header: header_json,
                    count,
                    persisted: is_persisted,
                    generation: self.generation,
                },
            );
        }
        Ok(())
    }
}

fn delete(conn: &Connection, key: i64) -> Result<(), SearchError> {
    DOCS.delete(conn, key)?;
    conn.execute("DELETE FROM temp.live_sessions WHERE key = ?1", [key])
        .map_err(failed)?;
    Ok(())
}
