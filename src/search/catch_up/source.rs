//! What a source brings to the catch-up: its table, its files, and its reader.

use std::fmt::Display;
use std::fs::Metadata;
use std::hash::Hash;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::Transaction;
use rusqlite::types::{FromSql, ToSql, Value as SqlValue};

use crate::search::documents::{DocTables, Document};
use crate::search::error::SearchError;
use crate::search::stamp::Stamp;

/// A source's table of files: the columns every index has (its name, its generation, its error,
/// [`FILE_COLUMNS`]) and the source's own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Table {
    /// The table of files.
    pub files: &'static str,
    /// Its column naming a file, unique ([`Source::Name`]).
    pub name: &'static str,
    /// Its columns saying where a read of a file stands ([`Source::Position`]), in the order
    /// [`Position::values`] gives them.
    pub position: &'static [&'static str],
    /// Its columns set when a file is read whole ([`Source::named`]), NULL for a file that
    /// cannot be read.
    pub named: &'static [&'static str],
    /// Where the files' documents are.
    pub docs: DocTables,
    /// Whether a catch-up gives each listed file's state ([`super::FileState`]): a transcript
    /// search's cursors are bound to them, a store search's to the index's generation alone.
    pub states: bool,
}

/// What a source's reader found in bytes of one file.
pub(crate) struct Read<S: Source> {
    /// Where the lines it took end: a line end within the bytes read, or their start.
    pub end: u64,
    /// The documents of those lines.
    pub docs: Vec<S::Doc>,
    /// Where the read stands after them.
    pub position: S::Position,
    /// What else the source keeps of them.
    pub extra: S::Extra,
}

/// Bytes of one file for a source to read: from offset 0, or on from where the file stood.
pub(crate) struct Chunk<'a, S: Source> {
    /// The file's name.
    pub name: &'a S::Name,
    /// Its path.
    pub path: &'a Path,
    /// Its bytes from `start` to its length.
    pub bytes: &'a [u8],
    /// Where they start: 0, or the end of the bytes covered.
    pub start: u64,
    /// When read on: the file's key, and where its read stood.
    pub resumed: Option<(i64, &'a S::Position)>,
}

/// The outcome of a source's read.
pub(crate) enum Step<S: Source> {
    /// The bytes as documents.
    Read(Read<S>),
    /// The file breaks a rule of its source: it is left out until it changes.
    Unreadable(S::Error),
    /// Read the whole file instead (reading on needs what came before, or the file is not
    /// what it was).
    Whole,
}

/// A kind of file the index is kept up with.
pub(crate) trait Source {
    /// What names a file in its row (a session id, a transcript's path).
    type Name: ToSql + FromSql + Eq + Hash;
    /// Why a file cannot be read.
    type Error: Display;
    /// Where a read of a file stands (the next seq; the lines read and the format).
    type Position: Position;
    /// One document.
    type Doc: Document;
    /// What else a read gives, written by [`Source::record`].
    type Extra;

    /// Its table.
    const TABLE: Table;

    /// Whether its reader reads a file's bytes (an SQLite database is read through SQLite:
    /// the catch-up hands its reader no bytes, and covers none).
    const BYTES: bool = true;

    /// The file named `name`.
    fn path(&self, name: &Self::Name) -> PathBuf;

    /// Whether a known file that was not listed is gone (default: every known file was listed
    /// if it still exists).
    fn owns(&self, _name: &Self::Name) -> bool {
        true
    }

    /// The stable code of an error.
    fn code(error: &Self::Error) -> &'static str;

    /// A failure reading the file at `path`.
    fn io_error(path: &Path, error: io::Error) -> Self::Error;

    /// The stamp of an opened file, compared with the one recorded (default: the file's own;
    /// a database's takes in its WAL's).
    fn stamp(&self, _path: &Path, metadata: &Metadata) -> Stamp {
        Stamp::of(metadata)
    }

    /// Why an opened file is not to be read, if it is not.
    fn refuse(&self, _path: &Path, _metadata: &Metadata) -> Option<Self::Error> {
        None
    }

    /// Reads `chunk`, bytes of one file.
    fn read(&self, tx: &Transaction<'_>, chunk: Chunk<'_, Self>) -> Result<Step<Self>, SearchError>
    where
        Self: Sized;

    /// The values of [`Table::named`] for a file read whole.
    fn named(&self, name: &Self::Name, read: &Read<Self>) -> Vec<SqlValue>
    where
        Self: Sized;

    /// Writes what the source keeps beside the row of the file `key` after `read`, read on
    /// from `resumed` or whole; returns whether it changed earlier documents.
    fn record(
        &self,
        _tx: &Transaction<'_>,
        _key: i64,
        _read: &Read<Self>,
        _resumed: Option<&Self::Position>,
    ) -> Result<bool, SearchError>
    where
        Self: Sized,
    {
        Ok(false)
    }

    /// Deletes what the source keeps beside the row of the file `key`.
    fn forget(&self, _tx: &Transaction<'_>, _key: i64) -> Result<(), SearchError> {
        Ok(())
    }
}

/// Where a read of a file stands, kept in its row's [`Table::position`] columns; the default is
/// a file never read.
pub(crate) trait Position: Default + PartialEq {
    /// A position from its columns, read from column `first` on.
    fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Self>;

    /// The values of its columns.
    fn values(&self) -> Vec<SqlValue>;
}

/// A count in one column: the next seq, the lines read.
impl Position for u64 {
    fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<u64> {
        row.get::<_, i64>(first).map(i64::cast_unsigned)
    }

    fn values(&self) -> Vec<SqlValue> {
        vec![SqlValue::Integer(self.cast_signed())]
    }
}

/// A file a source lists.
pub(crate) struct Listed<S: Source> {
    /// Its name.
    pub name: S::Name,
    /// What `stat` said of it when listed; `None` when that failed (gone since, or not to be
    /// read: the catch-up finds out).
    pub stamp: Option<Stamp>,
    /// Why it is not to be read at all, if so.
    pub refused: Option<S::Error>,
}
