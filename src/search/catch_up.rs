//! One catch-up of a full-text index with the files it is derived from, before every search:
//! a store's session logs ([`super::sessions`]) and agent transcripts alike.
//!
//! Each listed file costs one `stat` when nothing changed (its stamp is the one recorded and
//! had settled). Otherwise a file that is the same file, at least as long as its covered bytes,
//! whose windows still match, is read from the covered offset on (only the new bytes); any
//! other change (another file, shorter, different covered bytes) re-reads it whole; a file gone
//! is dropped. A file that cannot be read is recorded with why, and read again when its stamp
//! changes. Everything found is written in one transaction, and the generation (what cursors
//! are bound to) moves only when documents or unreadable files changed.
//!
//! A [`Source`] brings what differs: its table, where a file is, and its reader, which turns
//! bytes of one file into documents ([`Source::read`]). The stamps, the coverage, the checks,
//! the rows and the documents' tables are this file's.

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::fs::{File, Metadata};
use std::hash::Hash;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::types::{FromSql, ToSql, Value as SqlValue};
use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::log::{Coverage, CoverageBuilder};
use crate::search::documents::{DocTables, Document};
use crate::search::error::SearchError;
use crate::search::stamp::{FILE_COLUMNS, Stamp, file_values, stamp_and_coverage};

/// What a catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caught {
    /// Files read (whole or from their covered offset).
    pub read: usize,
    /// Whether documents or unreadable files changed (the generation moved).
    pub changed: bool,
}

/// A source's table of files: the columns every index has (its name, its generation, its error,
/// [`FILE_COLUMNS`]) and the source's own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Table {
    /// The table of files.
    pub files: &'static str,
    /// Its column naming a file, unique ([`Source::Name`]).
    pub name: &'static str,
    /// Its columns saying where a read of a file stands ([`Source::Position`]), in the order
    /// [`Source::position_values`] gives them.
    pub position: &'static [&'static str],
    /// Its columns set when a file is read whole ([`Source::named`]), NULL for a file that
    /// cannot be read.
    pub named: &'static [&'static str],
    /// Where the files' documents are.
    pub docs: DocTables,
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
    /// Where a read of a file stands (the next seq; the lines read and the format); the default
    /// is a file never read.
    type Position: Default + PartialEq;
    /// One document.
    type Doc: Document;
    /// What else a read gives, written by [`Source::record`].
    type Extra;

    /// Its table.
    const TABLE: Table;

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

    /// Why an opened file is not to be read, if it is not.
    fn refuse(&self, _path: &Path, _metadata: &Metadata) -> Option<Self::Error> {
        None
    }

    /// A position from its columns, read from column `first` on.
    fn position(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Self::Position>;

    /// The values of the position's columns.
    fn position_values(position: &Self::Position) -> Vec<SqlValue>;

    /// Reads `bytes`, the file's bytes from `start`: from 0, or on from where the file `key`
    /// stood (`resumed`).
    fn read(
        &self,
        tx: &Transaction<'_>,
        name: &Self::Name,
        path: &Path,
        bytes: &[u8],
        start: u64,
        resumed: Option<(i64, &Self::Position)>,
    ) -> Result<Step<Self>, SearchError>
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

/// A file's row once caught up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileState {
    /// Its key.
    pub key: i64,
    /// The generation that last changed it.
    pub generation: i64,
    /// Why it cannot be read (code and message), if it cannot.
    pub error: Option<(String, String)>,
}

/// What a catch-up did and what the index holds after it.
pub(crate) struct CaughtUp {
    /// What it did.
    pub caught: Caught,
    /// The row of each listed file, in the order listed; `None` for a file gone.
    pub files: Vec<Option<FileState>>,
    /// How many files the index holds.
    pub total: usize,
}

/// What the check of an unchanged file needs of its row (read for every file).
struct Seen {
    stamp: Stamp,
    settled: bool,
    state: FileState,
}

/// A file's row as a catch-up needs it (read only for files with work).
struct Row<P> {
    key: i64,
    generation: i64,
    error: Option<String>,
    stamp: Stamp,
    coverage: Coverage,
    position: P,
}

fn failed(what: &str, e: rusqlite::Error) -> SearchError {
    SearchError::index(what.to_string(), e)
}

/// Brings the index in `conn` up to the files `listed` of `source`.
pub(crate) fn catch_up<S: Source>(
    conn: &mut Connection,
    source: &S,
    listed: &[Listed<S>],
    settled: Duration,
) -> Result<CaughtUp, SearchError> {
    let taken_at = SystemTime::now();
    let rows = load_seen::<S>(conn, listed.len())?;
    let mut work = Vec::new();
    let mut files = Vec::with_capacity(listed.len());
    let mut known = 0;
    for (i, file) in listed.iter().enumerate() {
        let row = rows.get(&file.name);
        known += usize::from(row.is_some());
        match row {
            Some(seen) if file.stamp == Some(seen.stamp) && seen.settled => {
                files.push(Some(seen.state.clone()));
            }
            _ => {
                files.push(None);
                work.push(i);
            }
        }
    }
    // Names are unique on both sides: when every row was listed, none is gone (the usual
    // case, which then needs no set of the names listed).
    let gone: Vec<i64> = if known == rows.len() {
        Vec::new()
    } else {
        let names: HashSet<&S::Name> = listed.iter().map(|f| &f.name).collect();
        rows.iter()
            .filter(|(name, _)| !names.contains(name) && source.owns(name))
            .map(|(_, seen)| seen.state.key)
            .collect()
    };
    let mut caught = Caught::default();
    if work.is_empty() && gone.is_empty() {
        return Ok(CaughtUp {
            caught,
            files,
            total: rows.len(),
        });
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| failed("starting a catch-up", e))?;
    let generation: i64 = tx
        .query_row(
            "SELECT generation FROM state WHERE singleton = 1",
            [],
            |r| r.get(0),
        )
        .map_err(|e| failed("reading the generation", e))?;
    let mut writer = Writer {
        tx: &tx,
        source,
        generation: generation + 1,
        changed: false,
        total: rows.len(),
        taken_at,
        settled,
    };
    for key in gone {
        writer.drop_file(key)?;
    }
    for i in work {
        let (Some(file), Some(slot)) = (listed.get(i), files.get_mut(i)) else {
            continue;
        };
        caught.read += 1;
        let row = match rows.get(&file.name) {
            Some(seen) => Some(load_row::<S>(&tx, seen.state.key)?),
            None => None,
        };
        *slot = writer.file(file, row.as_ref())?;
    }
    caught.changed = writer.changed;
    let total = writer.total;
    if caught.changed {
        tx.execute(
            "UPDATE state SET generation = ?1 WHERE singleton = 1",
            [generation + 1],
        )
        .map_err(|e| failed("moving the generation", e))?;
    }
    tx.commit()
        .map_err(|e| failed("committing a catch-up", e))?;
    Ok(CaughtUp {
        caught,
        files,
        total,
    })
}

/// Every file's check and state by name; `expected` (the files listed) sizes the map.
fn load_seen<S: Source>(
    conn: &Connection,
    expected: usize,
) -> Result<HashMap<S::Name, Seen>, SearchError> {
    let table = &S::TABLE;
    let fail = |e| failed(&format!("reading the {}", table.files), e);
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {}, key, generation, error_code, error, dev, ino, size, mtime, ctime, settled
             FROM {}",
            table.name, table.files
        ))
        .map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    // Sized once: growing the map as rows arrive rehashed every name several times.
    let mut seen = HashMap::with_capacity(expected);
    while let Some(r) = rows.next().map_err(fail)? {
        let decode = || -> rusqlite::Result<(S::Name, Seen)> {
            let code: Option<String> = r.get(3)?;
            let state = FileState {
                key: r.get(1)?,
                generation: r.get(2)?,
                error: match code {
                    Some(code) => Some((code, r.get::<_, Option<String>>(4)?.unwrap_or_default())),
                    None => None,
                },
            };
            let seen = Seen {
                stamp: Stamp::from_row(r, 5)?,
                settled: r.get(10)?,
                state,
            };
            Ok((r.get(0)?, seen))
        };
        let (name, row) = decode().map_err(fail)?;
        seen.insert(name, row);
    }
    Ok(seen)
}

/// The whole row of the file `key`.
fn load_row<S: Source>(conn: &Connection, key: i64) -> Result<Row<S::Position>, SearchError> {
    let table = &S::TABLE;
    let sql = format!(
        "SELECT key, generation, error, {}, {} FROM {} WHERE key = ?1",
        FILE_COLUMNS.join(", "),
        table.position.join(", "),
        table.files
    );
    conn.prepare_cached(&sql)
        .and_then(|mut stmt| {
            stmt.query_row([key], |r| {
                let (stamp, coverage) = stamp_and_coverage(r, 3)?;
                Ok(Row {
                    key: r.get(0)?,
                    generation: r.get(1)?,
                    error: r.get(2)?,
                    stamp,
                    coverage,
                    position: S::position(r, 3 + FILE_COLUMNS.len())?,
                })
            })
        })
        .map_err(|e| failed(&format!("reading a row of {}", table.files), e))
}

/// One file as the catch-up met it: its listing, its path, and its stamp now.
struct At<'a, S: Source> {
    listed: &'a Listed<S>,
    path: &'a Path,
    stamp: Stamp,
    settled: bool,
}

/// What the engine made of a source's read: with the coverage of the bytes it took.
enum Outcome<S: Source> {
    Read(Read<S>, Coverage),
    Unreadable(S::Error),
    Whole,
}

struct Writer<'t, S: Source> {
    tx: &'t Transaction<'t>,
    source: &'t S,
    generation: i64,
    changed: bool,
    /// How many files the index holds.
    total: usize,
    taken_at: SystemTime,
    settled: Duration,
}

impl<S: Source> Writer<'_, S> {
    /// Catches one listed file up; its row after, `None` when it is gone.
    fn file(
        &mut self,
        listed: &Listed<S>,
        row: Option<&Row<S::Position>>,
    ) -> Result<Option<FileState>, SearchError> {
        let path = self.source.path(&listed.name);
        let stamp = listed.stamp.unwrap_or_default();
        let mut at = At {
            listed,
            path: &path,
            stamp,
            settled: false,
        };
        if let Some(refused) = &listed.refused {
            at.settled = stamp.settled_at(self.taken_at, self.settled);
            return self.unreadable(&at, row, refused);
        }
        let opened = File::open(&path).and_then(|file| {
            let metadata = file.metadata()?;
            Ok((file, metadata))
        });
        let (file, metadata) = match opened {
            Ok(opened) => opened,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(row) = row {
                    self.drop_file(row.key)?;
                }
                return Ok(None);
            }
            Err(e) => return self.unreadable(&at, row, &S::io_error(&path, e)),
        };
        at.stamp = Stamp::of(&metadata);
        at.settled = at.stamp.settled_at(self.taken_at, self.settled);
        if let Some(refused) = self.source.refuse(&path, &metadata) {
            return self.unreadable(&at, row, &refused);
        }
        let resumable = row.filter(|r| {
            r.error.is_none() && r.stamp.same_file(&at.stamp) && at.stamp.size >= r.coverage.end
        });
        if let Some(row) = resumable {
            match row.coverage.check(&file) {
                Ok(check) if check.is_intact() => match self.read(&at, &file, Some(row))? {
                    Outcome::Read(read, coverage) => {
                        return self.extend(&at, row, &read, &coverage);
                    }
                    Outcome::Unreadable(error) => return self.unreadable(&at, Some(row), &error),
                    // Reading on needs more, or the file changed under the read: whole below.
                    Outcome::Whole => {}
                },
                Ok(_) => {}
                Err(e) => return self.unreadable(&at, Some(row), &S::io_error(&path, e)),
            }
        }
        match self.read(&at, &file, None)? {
            Outcome::Read(read, coverage) => self.replace(&at, row, &read, &coverage),
            Outcome::Unreadable(error) => self.unreadable(&at, row, &error),
            // From offset 0 there is nothing before to need and no coverage to resume.
            Outcome::Whole => Ok(None),
        }
    }

    /// The source's read of the file's bytes after `row`'s coverage (or all of them), with
    /// the coverage of the lines it took.
    fn read(
        &self,
        at: &At<'_, S>,
        file: &File,
        row: Option<&Row<S::Position>>,
    ) -> Result<Outcome<S>, SearchError> {
        let start = row.map_or(0, |r| r.coverage.end);
        let bytes = match read_range(file, start, at.stamp.size) {
            Ok(bytes) => bytes,
            Err(e) => return Ok(Outcome::Unreadable(S::io_error(at.path, e))),
        };
        let resumed = row.map(|r| (r.key, &r.position));
        let read =
            match self
                .source
                .read(self.tx, &at.listed.name, at.path, &bytes, start, resumed)?
            {
                Step::Read(read) => read,
                Step::Unreadable(error) => return Ok(Outcome::Unreadable(error)),
                Step::Whole => return Ok(Outcome::Whole),
            };
        // `None`: the file no longer holds the covered bytes' last bytes (rewritten meanwhile).
        Ok(
            match covered(file, row.map(|r| &r.coverage), &bytes, read.end)? {
                Some(coverage) => Outcome::Read(read, coverage),
                None => Outcome::Whole,
            },
        )
    }

    /// Adds what a file's new bytes hold.
    fn extend(
        &mut self,
        at: &At<'_, S>,
        row: &Row<S::Position>,
        read: &Read<S>,
        coverage: &Coverage,
    ) -> Result<Option<FileState>, SearchError> {
        S::TABLE.docs.insert(self.tx, row.key, &read.docs)?;
        let reclassified = self
            .source
            .record(self.tx, row.key, read, Some(&row.position))?;
        let touched = !read.docs.is_empty() || reclassified;
        let generation = if touched {
            self.generation
        } else {
            row.generation
        };
        self.update(row.key, at, coverage, &read.position, generation)?;
        self.changed |= touched;
        Ok(Some(FileState {
            key: row.key,
            generation,
            error: None,
        }))
    }

    /// Replaces a file's documents with a whole read.
    fn replace(
        &mut self,
        at: &At<'_, S>,
        row: Option<&Row<S::Position>>,
        read: &Read<S>,
        coverage: &Coverage,
    ) -> Result<Option<FileState>, SearchError> {
        if let Some(row) = row {
            self.drop_file(row.key)?;
        }
        let named = self.source.named(&at.listed.name, read);
        let key = self.insert(at, None, coverage, &read.position, named)?;
        self.source.record(self.tx, key, read, None)?;
        S::TABLE.docs.insert(self.tx, key, &read.docs)?;
        Ok(Some(FileState {
            key,
            generation: self.generation,
            error: None,
        }))
    }

    /// Records a file that cannot be read; it is read again when its stamp changes.
    fn unreadable(
        &mut self,
        at: &At<'_, S>,
        row: Option<&Row<S::Position>>,
        error: &S::Error,
    ) -> Result<Option<FileState>, SearchError> {
        let code = S::code(error);
        let message = error.to_string();
        let none = S::Position::default();
        if let Some(row) = row {
            if row.error.as_deref() == Some(message.as_str()) {
                // Still unreadable for the same reason: the answer does not change.
                self.update(row.key, at, &Coverage::default(), &none, row.generation)?;
                return Ok(Some(FileState {
                    key: row.key,
                    generation: row.generation,
                    error: Some((code.into(), message)),
                }));
            }
            self.drop_file(row.key)?;
        }
        tracing::warn!(file = %at.path.display(), %error, "left out of search");
        let named = vec![SqlValue::Null; S::TABLE.named.len()];
        let key = self.insert(
            at,
            Some((code, &message)),
            &Coverage::default(),
            &none,
            named,
        )?;
        Ok(Some(FileState {
            key,
            generation: self.generation,
            error: Some((code.into(), message)),
        }))
    }

    /// Adds a file's row; its key.
    fn insert(
        &mut self,
        at: &At<'_, S>,
        error: Option<(&str, &str)>,
        coverage: &Coverage,
        position: &S::Position,
        named: Vec<SqlValue>,
    ) -> Result<i64, SearchError> {
        let table = &S::TABLE;
        let columns: Vec<&str> = FILE_COLUMNS
            .iter()
            .chain(table.position)
            .chain(table.named)
            .copied()
            .collect();
        let marks: Vec<String> = (5..5 + columns.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {}({}, generation, error_code, error, {}) VALUES (?1, ?2, ?3, ?4, {})",
            table.files,
            table.name,
            columns.join(", "),
            marks.join(", ")
        );
        let (code, message) = error.unzip();
        let fixed: [&dyn ToSql; 4] = [&at.listed.name, &self.generation, &code, &message];
        let values = file_values(&at.stamp, at.settled, coverage);
        let own: Vec<SqlValue> = S::position_values(position)
            .into_iter()
            .chain(named)
            .collect();
        let params = fixed
            .into_iter()
            .chain(values.iter().map(|v| v as &dyn ToSql))
            .chain(own.iter().map(|v| v as &dyn ToSql));
        self.tx
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.execute(rusqlite::params_from_iter(params)))
            .map_err(|e| failed(&format!("recording a row of {}", table.files), e))?;
        self.changed = true;
        self.total += 1;
        Ok(self.tx.last_insert_rowid())
    }

    /// Sets a file's stamp, coverage, position and generation.
    fn update(
        &self,
        key: i64,
        at: &At<'_, S>,
        coverage: &Coverage,
        position: &S::Position,
        generation: i64,
    ) -> Result<(), SearchError> {
        let table = &S::TABLE;
        let sets: Vec<String> = FILE_COLUMNS
            .iter()
            .chain(table.position)
            .zip(3..)
            .map(|(column, i)| format!("{column} = ?{i}"))
            .collect();
        let sql = format!(
            "UPDATE {} SET generation = ?2, {} WHERE key = ?1",
            table.files,
            sets.join(", ")
        );
        let values = file_values(&at.stamp, at.settled, coverage);
        let position = S::position_values(position);
        let fixed: [&dyn ToSql; 2] = [&key, &generation];
        let params = fixed
            .into_iter()
            .chain(values.iter().map(|v| v as &dyn ToSql))
            .chain(position.iter().map(|v| v as &dyn ToSql));
        self.tx
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.execute(rusqlite::params_from_iter(params)))
            .map_err(|e| failed(&format!("recording a row of {}", table.files), e))?;
        Ok(())
    }

    /// Deletes a file's row, its documents and what the source keeps beside them.
    fn drop_file(&mut self, key: i64) -> Result<(), SearchError> {
        let table = &S::TABLE;
        table.docs.delete(self.tx, key)?;
        self.tx
            .prepare_cached(&format!("DELETE FROM {} WHERE key = ?1", table.files))
            .and_then(|mut stmt| stmt.execute([key]))
            .map_err(|e| failed(&format!("dropping a row of {}", table.files), e))?;
        self.source.forget(self.tx, key)?;
        self.changed = true;
        self.total = self.total.saturating_sub(1);
        Ok(())
    }
}

/// The coverage of `[0, end)` from the bytes read: `bytes` hold the file from `previous`'s end
/// (or from 0), so the coverage describes what was indexed, not the file a moment later.
/// `None` if the file no longer holds `previous`'s last bytes (rewritten meanwhile).
fn covered(
    file: &File,
    previous: Option<&Coverage>,
    bytes: &[u8],
    end: u64,
) -> Result<Option<Coverage>, SearchError> {
    let mut builder = match previous {
        Some(c) => match CoverageBuilder::resume(c, file)
            .map_err(|e| SearchError::index_io("checksumming a file", e))?
        {
            Some(builder) => builder,
            None => return Ok(None),
        },
        None => CoverageBuilder::new(),
    };
    // A source's read ends `end` just after a newline inside `bytes`; anything else is a bug.
    let new = end
        .checked_sub(builder.end())
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| bytes.get(..n));
    match new.map(|new| builder.push(new)) {
        Some(Ok(())) => Ok(Some(builder.coverage())),
        _ => Err(SearchError::IndexFailed {
            operation: "checksumming a file".into(),
            cause: "the covered end is not a line end of the bytes read".into(),
        }),
    }
}

/// Reads `[from, to)` of `file`; fewer bytes if it is shorter now.
fn read_range(file: &File, from: u64, to: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; usize::try_from(to.saturating_sub(from)).unwrap_or(0)];
    let mut filled = 0;
    while filled < buf.len() {
        let slot = buf.get_mut(filled..).unwrap_or_default();
        match file.read_at(slot, from + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}
