//! A store's session logs as a source of the search index: its schema, where the logs are, and
//! what their new bytes give ([`super::reader`]); the catch-up is [`super::catch_up`]'s.
//!
//! A session directory is listed with one `stat` of its log, relative to the store's directory.
//! A session whose directory or log is a symbolic link is left out (agentlog does not follow
//! links out of a store). Reading on continues the session's stored surface fold (the `folds`
//! table); the seqs its new events shadowed are reclassified.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::query::{LOG_FILE_NAME, QueryError, SurfaceState, Vocabulary, validate_session_id};
use crate::search::catch_up::{Caught, Chunk, Listed, Read, Source, Step, Table, catch_up};
use crate::search::db::{Schema, index_schema};
use crate::search::documents::{DocTables, Document};
use crate::search::error::SearchError;
use crate::search::predicate::surface_name;
use crate::search::reader::{Delta, Doc, Read as LogRead, read_on, read_whole};
use crate::search::stamp::Stamp;

/// The schema of a store's index.
/// (Folds have a table of their own: inline, their blobs spread the session rows, which every
/// search reads, over a page each.)
pub const STORE_SCHEMA: Schema = Schema {
    version: 3,
    sql: index_schema!(
        files: "sessions",
        name: "id TEXT NOT NULL UNIQUE",
        own: "
  header TEXT,
  created_at INTEGER,
  cwd TEXT,
  parent TEXT,",
        position: "
    next_seq INTEGER NOT NULL",
        more: "
CREATE TABLE folds(
  key INTEGER PRIMARY KEY,
  fold BLOB NOT NULL
) STRICT;",
        docs: "
  session INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  time INTEGER NOT NULL,
  surface TEXT NOT NULL,
  length INTEGER NOT NULL",
    ),
    tables: &["docs", "folds", "sessions", "state"],
};

/// The columns of an event's document (the index's and the live sessions' alike).
pub(super) const EVENT_COLUMNS: &[&str] = &["seq", "type", "time", "surface", "length"];

/// Where the index keeps the sessions' documents.
const DOCS: DocTables = DocTables {
    docs: "docs",
    fts: "fts",
    file: "session",
    columns: EVENT_COLUMNS,
};

impl Document for Doc {
    fn number(&self) -> u64 {
        self.seq
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn values(&self) -> Vec<SqlValue> {
        vec![
            SqlValue::Integer(self.seq.cast_signed()),
            SqlValue::Text(self.event_type.clone()),
            SqlValue::Integer(self.time),
            SqlValue::Text(surface_name(self.surface).to_owned()),
            SqlValue::Integer(self.length.cast_signed()),
        ]
    }
}

/// Marks the documents of `seqs` of the session `key` shadowed.
pub(super) fn shadow(
    docs: &DocTables,
    conn: &Connection,
    key: i64,
    seqs: impl IntoIterator<Item = u64>,
) -> Result<(), SearchError> {
    docs.update(conn, key, seqs, "surface = 'shadowed'")
}

/// What a read of a log gives besides its documents.
pub(crate) struct Extra {
    /// The header, from a whole read.
    header: Option<crate::query::SessionHeader>,
    /// The surface fold after the events read.
    state: SurfaceState,
    /// Earlier seqs the new events shadowed.
    shadowed_earlier: Vec<u64>,
}

/// The session logs of the store at `root`.
struct SessionLogs<'a> {
    root: &'a Path,
    vocabulary: &'a Vocabulary,
}

impl Source for SessionLogs<'_> {
    type Name = String;
    type Error = QueryError;
    /// The seq the next event must have.
    type Position = u64;
    type Doc = Doc;
    type Extra = Extra;

    const TABLE: Table = Table {
        files: "sessions",
        name: "id",
        position: &["next_seq"],
        named: &["header", "created_at", "cwd", "parent"],
        docs: DOCS,
        states: false,
    };

    fn path(&self, name: &String) -> PathBuf {
        self.root.join(name).join(LOG_FILE_NAME)
    }

    fn code(error: &QueryError) -> &'static str {
        error.code()
    }

    fn io_error(path: &Path, error: io::Error) -> QueryError {
        io_failure(path, error)
    }

    fn read(
        &self,
        tx: &Transaction<'_>,
        chunk: Chunk<'_, Self>,
    ) -> Result<Step<Self>, SearchError> {
        let Chunk {
            name: id,
            bytes,
            start,
            resumed,
            ..
        } = chunk;
        let (header, read) = match resumed {
            Some((key, next_seq)) => {
                let state = load_fold(tx, key)?;
                let read = read_on(id, bytes, start, *next_seq, state, self.vocabulary);
                (None, read)
            }
            None => match read_whole(id, bytes, self.vocabulary) {
                (Some(header), read) => (Some(header), read),
                (None, LogRead::Unreadable(error)) => return Ok(Step::Unreadable(error)),
                // A header is always read before any event.
                (None, _) => return Ok(Step::Whole),
            },
        };
        Ok(match read {
            LogRead::Indexed(Delta {
                docs,
                shadowed_earlier,
                covered,
                next_seq,
                state,
            }) => Step::Read(Read {
                end: covered,
                docs,
                position: next_seq,
                extra: Extra {
                    header,
                    state,
                    shadowed_earlier,
                },
            }),
            LogRead::Unreadable(error) => Step::Unreadable(error),
            LogRead::NeedsWhole => Step::Whole,
        })
    }

    fn named(&self, _id: &String, read: &Read<Self>) -> Vec<SqlValue> {
        let Some(header) = &read.extra.header else {
            return vec![SqlValue::Null; Self::TABLE.named.len()];
        };
        vec![
            SqlValue::Text(serde_json::to_string(header).unwrap_or_default()),
            SqlValue::Integer(header.created_at.cast_signed()),
            header.cwd.clone().map_or(SqlValue::Null, SqlValue::Text),
            header
                .parent_session
                .clone()
                .map_or(SqlValue::Null, SqlValue::Text),
        ]
    }

    fn record(
        &self,
        tx: &Transaction<'_>,
        key: i64,
        read: &Read<Self>,
        resumed: Option<&u64>,
    ) -> Result<bool, SearchError> {
        let extra = &read.extra;
        shadow(&DOCS, tx, key, extra.shadowed_earlier.iter().copied())?;
        if resumed != Some(&read.position) {
            store_fold(tx, key, &extra.state)?;
        }
        Ok(!extra.shadowed_earlier.is_empty())
    }

    fn forget(&self, tx: &Transaction<'_>, key: i64) -> Result<(), SearchError> {
        tx.prepare_cached("DELETE FROM folds WHERE key = ?1")
            .and_then(|mut stmt| stmt.execute([key]))
            .map_err(|e| SearchError::index("dropping a session", e))?;
        Ok(())
    }
}

/// Brings the index in `conn` up to the logs under `root`.
pub(super) fn reconcile(
    conn: &mut Connection,
    root: &Path,
    vocabulary: &Vocabulary,
    settled: Duration,
) -> Result<Caught, SearchError> {
    let listed = list_store(root)?;
    let source = SessionLogs { root, vocabulary };
    Ok(catch_up(conn, &source, &listed, settled)?.caught)
}

fn io_failure(path: &Path, error: io::Error) -> QueryError {
    QueryError::PersistenceFailed {
        operation: format!("reading {}", path.display()),
        cause: Box::new(error),
    }
}

fn load_fold(tx: &Transaction<'_>, key: i64) -> Result<SurfaceState, SearchError> {
    let blob: Option<Vec<u8>> = tx
        .prepare_cached("SELECT fold FROM folds WHERE key = ?1")
        .and_then(|mut stmt| stmt.query_row([key], |r| r.get(0)).optional())
        .map_err(|e| SearchError::index("reading a session's fold", e))?
        .flatten();
    blob.and_then(|b| postcard::from_bytes(&b).ok())
        .ok_or_else(|| SearchError::IndexFailed {
            operation: "reading a session's fold".into(),
            cause: "the stored fold does not decode".into(),
        })
}

fn store_fold(tx: &Transaction<'_>, key: i64, state: &SurfaceState) -> Result<(), SearchError> {
    let fold = postcard::to_allocvec(state).map_err(|e| SearchError::IndexFailed {
        operation: "encoding a session's fold".into(),
        cause: Box::new(e),
    })?;
    tx.prepare_cached("INSERT OR REPLACE INTO folds(key, fold) VALUES (?1, ?2)")
        .and_then(|mut stmt| stmt.execute(params![key, fold]))
        .map_err(|e| SearchError::index("recording a session's fold", e))?;
    Ok(())
}

/// The session directories of the store: names that are session ids, holding a log.
fn list_store<'a>(root: &Path) -> Result<Vec<Listed<SessionLogs<'a>>>, SearchError> {
    let entries = std::fs::read_dir(root)
        .map_err(|e| SearchError::index_io(format!("listing {}", root.display()), e))?;
    let root_fd = rustix::fs::open(
        root,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| SearchError::index_io(format!("opening {}", root.display()), e.into()))?;
    let mut found = Vec::new();
    // The log's path relative to the store's directory, rebuilt in place for each session.
    let mut relative = String::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| SearchError::index_io(format!("listing {}", root.display()), e))?;
        let name = entry.file_name();
        let Some(id) = name.to_str() else {
            continue;
        };
        if validate_session_id(id).is_err() {
            continue;
        }
        // Paths are made only for the messages of the rare refused sessions.
        let link = |path: &Path| QueryError::CorruptSession {
            session_id: id.to_string(),
            cause: format!(
                "{} is a symbolic link; agentlog does not follow links out of a session store",
                path.display()
            )
            .into(),
        };
        let listed = |stamp: Stamp, refused: Option<QueryError>| Listed {
            name: id.to_string(),
            stamp: Some(stamp),
            refused,
        };
        let file_type = entry.file_type().ok();
        if file_type.is_some_and(|t| t.is_symlink()) {
            let dir = entry.path();
            // The link's own stamp: it is checked again only when the link changes.
            let stamp = std::fs::symlink_metadata(&dir)
                .map(|m| Stamp::of(&m))
                .unwrap_or_default();
            found.push(listed(stamp, Some(link(&dir))));
            continue;
        }
        if !file_type.is_some_and(|t| t.is_dir()) {
            continue;
        }
        relative.clear();
        relative.push_str(id);
        relative.push('/');
        relative.push_str(LOG_FILE_NAME);
        // Relative to the store's directory: the path walk is two names, not the whole path.
        let stat = rustix::fs::statat(
            &root_fd,
            relative.as_str(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .map_err(io::Error::from);
        let log_path = || root.join(id).join(LOG_FILE_NAME);
        match stat {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
                found.push(listed(Stamp::of_stat(&st), Some(link(&log_path()))));
            }
            Ok(st) => found.push(listed(Stamp::of_stat(&st), None)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) => {}
            Err(e) => {
                found.push(listed(Stamp::default(), Some(io_failure(&log_path(), e))));
            }
        }
    }
    Ok(found)
}
