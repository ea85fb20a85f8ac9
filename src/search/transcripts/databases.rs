//! `OpenCode` databases as a source of the transcript search index: one document per part
//! with text, each addressed by its message's index within its session (docs/SEARCH.md,
//! `OpenCode`); the catch-up is [`crate::search::catch_up`]'s, in the same tables as the
//! line transcripts.
//!
//! A database is not append-only: any change is read whole. Its cheap identity is the stat of
//! the database and of its `-wal` together ([`database_stamp`]), so a row that exists only in
//! the WAL is found and a change to the WAL alone is seen. The database is read through the
//! `OpenCode` reader's private copy: nothing is opened in place.

use std::cell::RefCell;
use std::ffi::OsStr;
use std::fs::Metadata;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Transaction};

use crate::search::catch_up::{CaughtUp, Chunk, Listed, Read, Source, Step, Table, catch_up};
use crate::search::documents::doc_id;
use crate::search::error::SearchError;
use crate::search::request::sanitize;
use crate::search::stamp::Stamp;
use crate::search::transcripts::files::{
    Doc, TABLE, TranscriptPosition, error_code, refuse, stored_path,
};
use crate::search::transcripts::formats::opencode_part;
use crate::transcript::{Format, TranscriptError, conversation_of_database, is_database};

/// The `OpenCode` databases of a search.
struct Databases<'a> {
    /// Where the private copies are made (the transcript index directory).
    index_dir: &'a Path,
    /// The directories searched.
    roots: &'a [PathBuf],
    /// The documents of the database last read to compare with the index, kept for the whole
    /// read that follows when they differ (so a database is read once per catch-up).
    last: RefCell<Option<(PathBuf, Documents)>>,
}

/// A database's documents and how many messages it holds.
type Documents = (Vec<Doc>, u64);

impl Databases<'_> {
    /// Reads the database at `path` into documents: every part with text of every message,
    /// numbered in the database's order (session, message index, part id).
    fn documents(&self, path: &Path) -> Result<Documents, TranscriptError> {
        let conversation = conversation_of_database(path, Some(self.index_dir))?;
        if conversation.skipped_parts > 0 || conversation.odd_messages > 0 {
            tracing::warn!(
                file = %path.display(),
                parts = conversation.skipped_parts,
                messages = conversation.odd_messages,
                "OpenCode rows that could not be read were left out of search"
            );
        }
        let mut docs = Vec::new();
        for message in &conversation.messages {
            for part in &message.parts {
                let mut parts = Vec::new();
                let Some(kind) = opencode_part(part, &mut parts) else {
                    continue;
                };
                let text = crate::query::join_parts(&parts);
                if text.is_empty() {
                    continue;
                }
                docs.push(Doc {
                    number: docs.len() as u64,
                    offset: message.index,
                    line: message.index + 1,
                    generation: 0,
                    kind,
                    role: message.role.clone(),
                    time: message.created_ms.and_then(|t| i64::try_from(t).ok()),
                    session: Some(message.session.clone()),
                    text: sanitize(&text),
                });
            }
        }
        Ok((docs, conversation.messages.len() as u64))
    }
}

/// A document as the index keeps it: offset, line, type, role, time, session, text.
type Kept = (
    i64,
    i64,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
    String,
);

fn kept(doc: &Doc) -> Kept {
    (
        doc.offset.cast_signed(),
        doc.line.cast_signed(),
        doc.kind.clone(),
        doc.role.clone(),
        doc.time,
        doc.session.clone(),
        doc.text.clone(),
    )
}

/// Whether the index holds exactly `docs` for the file `key`.
fn holds(tx: &Transaction<'_>, key: i64, docs: &[Doc]) -> Result<bool, SearchError> {
    let (lo, hi) = (doc_id(key, 0)?, doc_id(key, u64::from(u32::MAX))?);
    let fail = |e| SearchError::index("comparing a database's documents", e);
    let mut stmt = tx
        .prepare_cached(
            "SELECT d.offset, d.line, d.type, d.role, d.time, d.session, f.text
             FROM docs d JOIN fts f ON f.rowid = d.id WHERE d.id BETWEEN ?1 AND ?2 ORDER BY d.id",
        )
        .map_err(fail)?;
    let stored = stmt
        .query_map([lo, hi], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .map_err(fail)?;
    let mut now = docs.iter();
    for row in stored {
        let row: Kept = row.map_err(fail)?;
        if now.next().map(kept) != Some(row) {
            return Ok(false);
        }
    }
    Ok(now.next().is_none())
}

/// `<db>-wal`.
fn wal_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// A database's stamp with its WAL's folded in: the database's device and inode, the sum of
/// both lengths, the later of both mtimes and of both ctimes. Any write to either file moves
/// its mtime (and a checkpoint writes the database), so a change to either shows; a stamp
/// recorded before both settled is not trusted alone, as for any file.
fn with_wal(db: Stamp, wal: Option<Stamp>) -> Stamp {
    let Some(wal) = wal else { return db };
    Stamp {
        size: db.size.saturating_add(wal.size),
        mtime: db.mtime.max(wal.mtime),
        ctime: db.ctime.max(wal.ctime),
        ..db
    }
}

/// The stamp of the database at `db` and its WAL now; `None` if the database cannot be
/// stat'ed.
pub(super) fn database_stamp(db: &Path) -> Option<Stamp> {
    let stat = |p: &Path| rustix::fs::stat(p).ok().map(|st| Stamp::of_stat(&st));
    Some(with_wal(stat(db)?, stat(&wal_of(db))))
}

impl Source for Databases<'_> {
    /// The path's bytes.
    type Name = Vec<u8>;
    type Error = TranscriptError;
    type Position = TranscriptPosition;
    type Doc = Doc;
    type Extra = ();

    const TABLE: Table = TABLE;
    const BYTES: bool = false;

    fn path(&self, name: &Vec<u8>) -> PathBuf {
        stored_path(name.clone())
    }

    /// A database under a searched directory (the line transcripts' source owns the rest).
    fn owns(&self, name: &Vec<u8>) -> bool {
        let path = Path::new(OsStr::from_bytes(name));
        is_database(path) && self.roots.iter().any(|root| path.starts_with(root))
    }

    fn code(error: &TranscriptError) -> &'static str {
        error_code(error)
    }

    fn io_error(path: &Path, error: io::Error) -> TranscriptError {
        TranscriptError::io("read", path, error)
    }

    fn stamp(&self, path: &Path, metadata: &Metadata) -> Stamp {
        let wal = std::fs::metadata(wal_of(path)).ok();
        with_wal(Stamp::of(metadata), wal.as_ref().map(Stamp::of))
    }

    fn refuse(&self, path: &Path, metadata: &Metadata) -> Option<TranscriptError> {
        refuse(path, metadata)
    }

    /// Reads the database whole. A database the index holds (its stamp changed, or had not
    /// settled) whose documents are the ones indexed keeps its generation (cursors stay
    /// valid); any difference replaces them all.
    fn read(
        &self,
        tx: &Transaction<'_>,
        chunk: Chunk<'_, Self>,
    ) -> Result<Step<Self>, SearchError> {
        let stashed = self
            .last
            .borrow_mut()
            .take()
            .filter(|(path, _)| path == chunk.path);
        let read = match stashed {
            Some((_, read)) => read,
            None => match self.documents(chunk.path) {
                Ok(read) => read,
                Err(e) => return Ok(Step::Unreadable(e)),
            },
        };
        let (docs, messages) = read;
        let position = TranscriptPosition {
            lines: messages,
            format: Some(Format::OpenCode),
        };
        if let Some((key, _)) = chunk.resumed {
            if holds(tx, key, &docs)? {
                return Ok(Step::Read(Read {
                    end: 0,
                    docs: Vec::new(),
                    position,
                    extra: (),
                }));
            }
            *self.last.borrow_mut() = Some((chunk.path.to_path_buf(), (docs, messages)));
            return Ok(Step::Whole);
        }
        Ok(Step::Read(Read {
            end: 0,
            docs,
            position,
            extra: (),
        }))
    }

    /// A database holds many sessions: each document names its own.
    fn named(&self, _: &Vec<u8>, _: &Read<Self>) -> Vec<SqlValue> {
        vec![SqlValue::Null]
    }
}

/// Brings the index in `conn` up to the databases `dbs` (found under `roots`); private
/// copies are made under `index_dir`.
pub(super) fn catch_up_databases(
    conn: &mut Connection,
    dbs: &[PathBuf],
    roots: &[PathBuf],
    index_dir: &Path,
    settled: Duration,
) -> Result<CaughtUp, SearchError> {
    let listed: Vec<Listed<Databases<'_>>> = dbs
        .iter()
        .map(|path| Listed {
            name: path.as_os_str().as_bytes().to_vec(),
            stamp: database_stamp(path),
            refused: None,
        })
        .collect();
    let source = Databases {
        index_dir,
        roots,
        last: RefCell::new(None),
    };
    catch_up(conn, &source, &listed, settled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_to_either_file_changes_the_stamp() {
        let db = Stamp {
            dev: 1,
            ino: 2,
            size: 100,
            mtime: 10,
            ctime: 10,
        };
        let wal = Stamp {
            dev: 1,
            ino: 3,
            size: 50,
            mtime: 20,
            ctime: 20,
        };
        assert_eq!(with_wal(db, None), db);
        let both = with_wal(db, Some(wal));
        assert_eq!((both.dev, both.ino, both.size, both.mtime), (1, 2, 150, 20));
        let grown = with_wal(db, Some(Stamp { size: 60, ..wal }));
        assert_ne!(grown, both, "the WAL grew");
        let rewritten = with_wal(db, Some(Stamp { mtime: 30, ..wal }));
        assert_ne!(rewritten, both, "the WAL was rewritten in place");
        let checkpointed = with_wal(Stamp { mtime: 40, ..db }, Some(Stamp { size: 0, ..wal }));
        assert_ne!(checkpointed, both, "checkpointed into the database");
        assert_ne!(with_wal(db, None), both, "the WAL is gone");
    }
}
