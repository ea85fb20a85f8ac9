//! `OpenCode` databases as a source of the transcript search index: one document per part
//! with text, each addressed by its message's index within its session (docs/SEARCH.md,
//! "OpenCode"); the catch-up is [`crate::search::catch_up`]'s, in the same tables as the
//! line transcripts.
//!
//! A database is not append-only: any change is read whole. Its cheap identity is the stat of
//! the database and of its `-wal` together ([`database_stamp`]), so a row that exists only in
//! the WAL is found and a change to the WAL alone is seen. The database is read through the
//! `OpenCode` reader's private copy: nothing is opened in place.

use std::ffi::OsStr;
use std::fs::Metadata;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Transaction};

use crate::search::catch_up::{CaughtUp, Chunk, Listed, Read, Source, Step, Table, catch_up};
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

    /// Reads the database whole: every part with text of every message, numbered in the
    /// database's order (session, message index, part id).
    fn read(&self, _: &Transaction<'_>, chunk: Chunk<'_, Self>) -> Result<Step<Self>, SearchError> {
        if chunk.resumed.is_some() {
            return Ok(Step::Whole);
        }
        let conversation = match conversation_of_database(chunk.path, Some(self.index_dir)) {
            Ok(c) => c,
            Err(e) => return Ok(Step::Unreadable(e)),
        };
        if conversation.skipped_parts > 0 || conversation.odd_messages > 0 {
            tracing::warn!(
                file = %chunk.path.display(),
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
        Ok(Step::Read(Read {
            end: 0,
            docs,
            position: TranscriptPosition {
                lines: conversation.messages.len() as u64,
                format: Some(Format::OpenCode),
            },
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
    let source = Databases { index_dir, roots };
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
