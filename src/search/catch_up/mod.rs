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
//! the rows and the documents' tables are this module's.

mod source;
mod writer;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, TransactionBehavior};

use crate::log::Coverage;
use crate::search::error::SearchError;
use crate::search::stamp::{FILE_COLUMNS, Stamp, stamp_and_coverage};
use writer::Writer;

pub(crate) use source::{Chunk, Listed, Position, Read, Source, Step, Table};

/// What a catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caught {
    /// Files read (whole or from their covered offset).
    pub read: usize,
    /// Whether documents or unreadable files changed (the generation moved).
    pub changed: bool,
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
    /// The row of each listed file, in the order listed (`None` for a file gone), when the
    /// source asks for them ([`Table::states`]); empty otherwise.
    pub files: Vec<Option<FileState>>,
    /// How many files the index holds.
    pub total: usize,
}

/// What the check of an unchanged file needs of its row (read for every file).
struct Seen {
    key: i64,
    stamp: Stamp,
    settled: bool,
    /// Its state, when the source asks for it ([`Table::states`]).
    state: Option<FileState>,
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
    let states = S::TABLE.states;
    let mut files = Vec::with_capacity(if states { listed.len() } else { 0 });
    let mut known = 0;
    for (i, file) in listed.iter().enumerate() {
        let row = rows.get(&file.name);
        known += usize::from(row.is_some());
        match row {
            Some(seen) if file.stamp == Some(seen.stamp) && seen.settled => {
                if states {
                    files.push(seen.state.clone());
                }
            }
            _ => {
                if states {
                    files.push(None);
                }
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
            .map(|(_, seen)| seen.key)
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
        let Some(file) = listed.get(i) else {
            continue;
        };
        caught.read += 1;
        let row = match rows.get(&file.name) {
            Some(seen) => Some(load_row::<S>(&tx, seen.key)?),
            None => None,
        };
        let state = writer.file(file, row.as_ref())?;
        if let Some(slot) = files.get_mut(i) {
            *slot = state;
        }
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
    // A store's warm search reads every session's row: only what the check needs.
    let state = if table.states {
        ", generation, error_code, error"
    } else {
        ""
    };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {}, key, dev, ino, size, mtime, ctime, settled{state} FROM {}",
            table.name, table.files
        ))
        .map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    // Sized once: growing the map as rows arrive rehashed every name several times.
    let mut seen = HashMap::with_capacity(expected);
    while let Some(r) = rows.next().map_err(fail)? {
        let decode = || -> rusqlite::Result<(S::Name, Seen)> {
            let key = r.get(1)?;
            let state = if table.states {
                let code: Option<String> = r.get(9)?;
                let error = match code {
                    Some(code) => Some((code, r.get::<_, Option<String>>(10)?.unwrap_or_default())),
                    None => None,
                };
                Some(FileState {
                    key,
                    generation: r.get(8)?,
                    error,
                })
            } else {
                None
            };
            let seen = Seen {
                key,
                stamp: Stamp::from_row(r, 2)?,
                settled: r.get(7)?,
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
                    position: S::Position::from_row(r, 3 + FILE_COLUMNS.len())?,
                })
            })
        })
        .map_err(|e| failed(&format!("reading a row of {}", table.files), e))
}

#[cfg(test)]
mod tests;
