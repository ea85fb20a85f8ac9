//! Catching one file up, and what that writes: its row and its documents, read on from its
//! coverage or read whole, or the row of a file that cannot be read.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::Transaction;
use rusqlite::types::{ToSql, Value as SqlValue};

use crate::log::{Coverage, CoverageBuilder};
use crate::search::catch_up::{
    Chunk, FileState, Listed, Position, Read, Row, Source, Step, failed,
};
use crate::search::error::SearchError;
use crate::search::stamp::{FILE_COLUMNS, Stamp, file_values};

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

/// Writes the catch-up of the files with work, in one transaction.
pub(super) struct Writer<'t, S: Source> {
    /// The catch-up's transaction.
    pub tx: &'t Transaction<'t>,
    /// The source of the files.
    pub source: &'t S,
    /// The generation the catch-up moves to.
    pub generation: i64,
    /// Whether documents or unreadable files changed.
    pub changed: bool,
    /// How many files the index holds.
    pub total: usize,
    /// When the listing's stamps were taken.
    pub taken_at: SystemTime,
    /// How long a file must be left alone before its stamp alone is trusted.
    pub settled: Duration,
}

impl<S: Source> Writer<'_, S> {
    /// Catches one listed file up; its row after, `None` when it is gone.
    pub fn file(
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
        at.stamp = self.source.stamp(&path, &metadata);
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
        let bytes = if S::BYTES {
            read_range(file, start, at.stamp.size)
        } else {
            Ok(Vec::new())
        };
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(e) => return Ok(Outcome::Unreadable(S::io_error(at.path, e))),
        };
        let chunk = Chunk {
            name: &at.listed.name,
            path: at.path,
            bytes: &bytes,
            start,
            resumed: row.map(|r| (r.key, &r.position)),
        };
        let read = match self.source.read(self.tx, chunk)? {
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
        let own: Vec<SqlValue> = position.values().into_iter().chain(named).collect();
        let fixed: [&dyn ToSql; 4] = [&at.listed.name, &self.generation, &code, &message];
        self.write_row(&sql, &fixed, at, coverage, &own)?;
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
        let position = position.values();
        self.write_row(&sql, &[&key, &generation], at, coverage, &position)
    }

    /// Runs `sql`, binding `fixed`, then [`FILE_COLUMNS`] (the file's stamp, whether it
    /// settled, `coverage`), then `own`.
    fn write_row(
        &self,
        sql: &str,
        fixed: &[&dyn ToSql],
        at: &At<'_, S>,
        coverage: &Coverage,
        own: &[SqlValue],
    ) -> Result<(), SearchError> {
        let values = file_values(&at.stamp, at.settled, coverage);
        let params = fixed
            .iter()
            .copied()
            .chain(values.iter().map(|v| v as &dyn ToSql))
            .chain(own.iter().map(|v| v as &dyn ToSql));
        self.tx
            .prepare_cached(sql)
            .and_then(|mut stmt| stmt.execute(rusqlite::params_from_iter(params)))
            .map_err(|e| failed(&format!("recording a row of {}", S::TABLE.files), e))?;
        Ok(())
    }

    /// Deletes a file's row, its documents and what the source keeps beside them.
    pub fn drop_file(&mut self, key: i64) -> Result<(), SearchError> {
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
