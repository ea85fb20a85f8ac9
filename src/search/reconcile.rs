//! Catching the index up with the logs, before every search.
//!
//! Each session directory costs one `stat` of its log when nothing changed (its stamp is the
//! one recorded and had settled). Otherwise: a log that is the same file, at least as long as
//! the covered bytes, whose windows still match, is read from the covered offset on (only the
//! new bytes); any other change (another file, shorter, different covered bytes) re-reads the
//! whole log; a log gone drops the session. Everything found is written in one transaction,
//! and the generation (what cursors are bound to) moves only when documents or unreadable
//! sessions changed.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use crate::log::{Coverage, CoverageBuilder};
use crate::query::{
    LOG_FILE_NAME, QueryError, SessionHeader, SurfaceState, Vocabulary, validate_session_id,
};
use crate::search::error::SearchError;
use crate::search::predicate::surface_name;
use crate::search::reader::{Delta, Read, read_on, read_whole};
use crate::search::stamp::{Stamp, stamp_and_coverage};

/// What the check of an unchanged session needs of its row (read for every session).
struct Seen {
    key: i64,
    stamp: Stamp,
    settled: bool,
}

/// A session row as a catch-up needs it (read only for sessions with work).
struct Row {
    key: i64,
    stamp: Stamp,
    coverage: Coverage,
    next_seq: u64,
    /// Why the session cannot be read, if it cannot.
    error: Option<String>,
}

/// A session directory found in the store.
struct Found {
    id: String,
    /// Why it cannot be read at all (a link), if so.
    refused: Option<QueryError>,
    stamp: Stamp,
}

/// What a catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caught {
    /// Sessions read (whole or from their covered offset).
    pub read: usize,
    /// Whether documents or unreadable sessions changed (the generation moved).
    pub changed: bool,
}

fn failed(what: &str, e: rusqlite::Error) -> SearchError {
    SearchError::index(what.to_string(), e)
}

/// Brings the index in `conn` up to the logs under `root`.
pub fn reconcile(
    conn: &mut Connection,
    root: &Path,
    vocabulary: &Vocabulary,
    settled: Duration,
) -> Result<Caught, SearchError> {
    let taken_at = SystemTime::now();
    let found = list_store(root)?;
    let rows = load_seen(conn, found.len())?;
    let mut work = Vec::new();
    let mut known = 0;
    for f in &found {
        match rows.get(&f.id) {
            Some(row) if row.stamp == f.stamp && row.settled => known += 1,
            Some(_) => {
                known += 1;
                work.push(f);
            }
            None => work.push(f),
        }
    }
    // Ids are unique on both sides: when every row was found, none is gone (the usual case,
    // which then needs no set of the found ids).
    let gone: Vec<i64> = if known == rows.len() {
        Vec::new()
    } else {
        let present: std::collections::HashSet<&str> =
            found.iter().map(|f| f.id.as_str()).collect();
        rows.iter()
            .filter(|(id, _)| !present.contains(id.as_str()))
            .map(|(_, row)| row.key)
            .collect()
    };
    if work.is_empty() && gone.is_empty() {
        return Ok(Caught::default());
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
        generation: generation + 1,
        changed: !gone.is_empty(),
    };
    for key in gone {
        writer.drop_session(key)?;
    }
    let mut read = 0;
    for f in work {
        read += 1;
        let row = match rows.get(&f.id) {
            Some(seen) => Some(load_row(&tx, seen.key)?),
            None => None,
        };
        writer.catch_up(root, f, row.as_ref(), taken_at, settled, vocabulary)?;
    }
    let changed = writer.changed;
    if changed {
        tx.execute(
            "UPDATE state SET generation = ?1 WHERE singleton = 1",
            [generation + 1],
        )
        .map_err(|e| failed("moving the generation", e))?;
    }
    tx.commit()
        .map_err(|e| failed("committing a catch-up", e))?;
    Ok(Caught { read, changed })
}

/// Every session's key and stamp by id; `expected` (the sessions found) sizes the map.
fn load_seen(conn: &Connection, expected: usize) -> Result<HashMap<String, Seen>, SearchError> {
    let mut stmt = conn
        .prepare("SELECT id, key, dev, ino, size, mtime, ctime, settled FROM sessions")
        .map_err(|e| failed("reading the sessions", e))?;
    let mut rows = stmt
        .query([])
        .map_err(|e| failed("reading the sessions", e))?;
    // Sized once: growing the map as rows arrive rehashed every id several times.
    let mut seen = HashMap::with_capacity(expected);
    while let Some(r) = rows.next().map_err(|e| failed("reading the sessions", e))? {
        let decode = || -> rusqlite::Result<(String, Seen)> {
            let u = |i: usize| r.get::<_, i64>(i).map(i64::cast_unsigned);
            Ok((
                r.get(0)?,
                Seen {
                    key: r.get(1)?,
                    stamp: Stamp {
                        dev: u(2)?,
                        ino: u(3)?,
                        size: u(4)?,
                        mtime: r.get(5)?,
                        ctime: r.get(6)?,
                    },
                    settled: r.get(7)?,
                },
            ))
        };
        let (id, row) = decode().map_err(|e| failed("reading the sessions", e))?;
        seen.insert(id, row);
    }
    Ok(seen)
}

/// The whole row of the session `key`.
fn load_row(conn: &Connection, key: i64) -> Result<Row, SearchError> {
    conn.query_row(
        "SELECT key, dev, ino, size, mtime, ctime, covered, head_len, head_crc,
                tail_start, tail_len, tail_crc, crc, next_seq, error FROM sessions WHERE key = ?1",
        [key],
        |r| {
            let u = |i: usize| r.get::<_, i64>(i).map(i64::cast_unsigned);
            let (stamp, coverage) = stamp_and_coverage(r, 1)?;
            Ok(Row {
                key: r.get(0)?,
                stamp,
                coverage,
                next_seq: u(13)?,
                error: r.get(14)?,
            })
        },
    )
    .map_err(|e| failed("reading a session", e))
}

/// The session directories of the store: names that are session ids, holding a log.
fn list_store(root: &Path) -> Result<Vec<Found>, SearchError> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) => {
            return Err(SearchError::index_io(
                format!("listing {}", root.display()),
                e,
            ));
        }
    };
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
        let log_path = || root.join(id).join(LOG_FILE_NAME);
        let file_type = entry.file_type().ok();
        if file_type.is_some_and(|t| t.is_symlink()) {
            let dir = entry.path();
            // The link's own stamp: it is checked again only when the link changes.
            let stamp = std::fs::symlink_metadata(&dir)
                .map(|m| Stamp::of(&m))
                .unwrap_or_default();
            found.push(Found {
                refused: Some(link(&dir)),
                id: id.to_string(),
                stamp,
            });
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
        match stat {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
                found.push(Found {
                    refused: Some(link(&log_path())),
                    id: id.to_string(),
                    stamp: Stamp::of_stat(&st),
                });
            }
            Ok(st) => found.push(Found {
                refused: None,
                stamp: Stamp::of_stat(&st),
                id: id.to_string(),
            }),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) => {}
            Err(e) => found.push(Found {
                refused: Some(QueryError::PersistenceFailed {
                    operation: format!("reading {}", log_path().display()),
                    cause: Box::new(e),
                }),
                id: id.to_string(),
                stamp: Stamp::default(),
            }),
        }
    }
    Ok(found)
}

/// Reads `[from, to)` of `file`; fewer bytes if it is shorter now.
/// The coverage of `[0, end)` from the bytes read: `bytes` hold the log from `previous`'s end
/// (or from 0), so the coverage describes what was indexed, not the file a moment later.
/// `None` if the file no longer holds `previous`'s last bytes (rewritten meanwhile).
pub(crate) fn covered(
    file: &File,
    previous: Option<&Coverage>,
    bytes: &[u8],
    end: u64,
) -> Result<Option<Coverage>, SearchError> {
    let mut builder = match previous {
        Some(c) => match CoverageBuilder::resume(c, file)
            .map_err(|e| SearchError::index_io("checksumming a log", e))?
        {
            Some(builder) => builder,
            None => return Ok(None),
        },
        None => CoverageBuilder::new(),
    };
    // The reader ends `end` just after a newline inside `bytes`; anything else is a bug.
    let new = end
        .checked_sub(builder.end())
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| bytes.get(..n));
    match new.map(|new| builder.push(new)) {
        Some(Ok(())) => Ok(Some(builder.coverage())),
        _ => Err(SearchError::IndexFailed {
            operation: "checksumming a log".into(),
            cause: "the covered end is not a line end of the bytes read".into(),
        }),
    }
}

pub(crate) fn read_range(file: &File, from: u64, to: u64) -> io::Result<Vec<u8>> {
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

struct Writer<'t> {
    tx: &'t Transaction<'t>,
    generation: i64,
    changed: bool,
}

impl Writer<'_> {
    fn drop_session(&mut self, key: i64) -> Result<(), SearchError> {
        self.delete_docs(key)?;
        self.tx
            .execute("DELETE FROM sessions WHERE key = ?1", [key])
            .and_then(|_| self.tx.execute("DELETE FROM folds WHERE key = ?1", [key]))
            .map_err(|e| failed("dropping a session", e))?;
        self.changed = true;
        Ok(())
    }

    fn delete_docs(&self, key: i64) -> Result<(), SearchError> {
        let (lo, hi) = (doc_id(key, 0)?, doc_id(key, u64::from(u32::MAX))?);
        self.tx
            .execute("DELETE FROM fts WHERE rowid BETWEEN ?1 AND ?2", [lo, hi])
            .and_then(|_| {
                self.tx
                    .execute("DELETE FROM docs WHERE id BETWEEN ?1 AND ?2", [lo, hi])
            })
            .map_err(|e| failed("deleting a session's documents", e))?;
        Ok(())
    }

    fn catch_up(
        &mut self,
        root: &Path,
        found: &Found,
        row: Option<&Row>,
        taken_at: SystemTime,
        settled: Duration,
        vocabulary: &Vocabulary,
    ) -> Result<(), SearchError> {
        let id = found.id.as_str();
        if let Some(refused) = &found.refused {
            let is_settled = found.stamp.settled_at(taken_at, settled);
            return self.unreadable(id, row, found.stamp, is_settled, refused);
        }
        let path = root.join(id).join(LOG_FILE_NAME);
        let opened = File::open(&path).and_then(|file| {
            let metadata = file.metadata()?;
            Ok((file, metadata))
        });
        let (file, metadata) = match opened {
            Ok(opened) => opened,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return match row {
                    Some(row) => self.drop_session(row.key),
                    None => Ok(()),
                };
            }
            Err(e) => {
                let err = io_failure(&path, e);
                return self.unreadable(id, row, found.stamp, false, &err);
            }
        };
        let stamp = Stamp::of(&metadata);
        let is_settled = stamp.settled_at(taken_at, settled);
        let io_err = |e: io::Error| io_failure(&path, e);
        if let Some(row) = row.filter(|r| {
            r.error.is_none() && r.stamp.same_file(&stamp) && stamp.size >= r.coverage.end
        }) {
            let intact = row.coverage.check(&file).map(|c| c.is_intact());
            match intact {
                Ok(true) => {
                    let state = self.load_fold(row.key)?;
                    let bytes = match read_range(&file, row.coverage.end, stamp.size) {
                        Ok(bytes) => bytes,
                        Err(e) => {
                            return self.unreadable(id, Some(row), stamp, is_settled, &io_err(e));
                        }
                    };
                    let read = read_on(
                        id,
                        &bytes,
                        row.coverage.end,
                        row.next_seq,
                        state,
                        vocabulary,
                    );
                    match read {
                        Read::Indexed(delta) => {
                            // Rewritten since the check: read whole below.
                            if let Some(coverage) =
                                covered(&file, Some(&row.coverage), &bytes, delta.covered)?
                            {
                                return self.extend(row, &coverage, stamp, is_settled, &delta);
                            }
                        }
                        Read::Unreadable(err) => {
                            return self.unreadable(id, Some(row), stamp, is_settled, &err);
                        }
                        Read::NeedsWhole => {}
                    }
                }
                Ok(false) => {}
                Err(e) => return self.unreadable(id, Some(row), stamp, is_settled, &io_err(e)),
            }
        }
        let bytes = match read_range(&file, 0, stamp.size) {
            Ok(bytes) => bytes,
            Err(e) => return self.unreadable(id, row, stamp, is_settled, &io_err(e)),
        };
        let (header, read) = read_whole(id, &bytes, vocabulary);
        match (header, read) {
            (Some(header), Read::Indexed(delta)) => {
                // From offset 0 there is no earlier coverage to resume, so there is always one.
                match covered(&file, None, &bytes, delta.covered)? {
                    Some(coverage) => {
                        self.replace(id, row, &header, &coverage, stamp, is_settled, &delta)
                    }
                    None => Ok(()),
                }
            }
            (_, Read::Unreadable(err)) => self.unreadable(id, row, stamp, is_settled, &err),
            // A whole read never asks for more; a header is always read before any event.
            (_, _) => Ok(()),
        }
    }

    fn load_fold(&self, key: i64) -> Result<SurfaceState, SearchError> {
        let blob: Option<Vec<u8>> = self
            .tx
            .query_row("SELECT fold FROM folds WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| failed("reading a session's fold", e))?
            .flatten();
        blob.and_then(|b| postcard::from_bytes(&b).ok())
            .ok_or_else(|| SearchError::IndexFailed {
                operation: "reading a session's fold".into(),
                cause: "the stored fold does not decode".into(),
            })
    }

    fn insert_docs(
        &self,
        key: i64,
        docs: &[crate::search::reader::Doc],
    ) -> Result<(), SearchError> {
        let mut doc_stmt = self
            .tx
            .prepare(
                "INSERT INTO docs(id, session, seq, type, time, surface, length) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(|e| failed("adding documents", e))?;
        let mut fts_stmt = self
            .tx
            .prepare("INSERT INTO fts(rowid, text) VALUES (?1, ?2)")
            .map_err(|e| failed("adding documents", e))?;
        for doc in docs {
            let id = doc_id(key, doc.seq)?;
            doc_stmt
                .execute(params![
                    id,
                    key,
                    doc.seq.cast_signed(),
                    doc.event_type,
                    doc.time,
                    surface_name(doc.surface),
                    doc.length.cast_signed()
                ])
                .map_err(|e| failed("adding documents", e))?;
            fts_stmt
                .execute(params![id, doc.text])
                .map_err(|e| failed("adding documents", e))?;
        }
        Ok(())
    }

    /// Adds what a session's new bytes hold.
    fn extend(
        &mut self,
        row: &Row,
        coverage: &Coverage,
        stamp: Stamp,
        is_settled: bool,
        delta: &Delta,
    ) -> Result<(), SearchError> {
        let touched = !delta.docs.is_empty() || !delta.shadowed_earlier.is_empty();
        self.insert_docs(row.key, &delta.docs)?;
        for seq in &delta.shadowed_earlier {
            self.tx
                .execute(
                    "UPDATE docs SET surface = 'shadowed' WHERE id = ?1",
                    [doc_id(row.key, *seq)?],
                )
                .map_err(|e| failed("reclassifying documents", e))?;
        }
        self.tx
            .execute(
                "UPDATE sessions SET dev = ?2, ino = ?3, size = ?4, mtime = ?5, ctime = ?6, settled = ?7,
                   covered = ?8, head_len = ?9, head_crc = ?10, tail_start = ?11, tail_len = ?12,
                   tail_crc = ?13, crc = ?14, next_seq = ?15,
                   generation = CASE WHEN ?16 THEN ?17 ELSE generation END
                 WHERE key = ?1",
                params![
                    row.key,
                    stamp.dev.cast_signed(),
                    stamp.ino.cast_signed(),
                    stamp.size.cast_signed(),
                    stamp.mtime,
                    stamp.ctime,
                    is_settled,
                    coverage.end.cast_signed(),
                    coverage.head.len.cast_signed(),
                    coverage.head.crc,
                    coverage.tail.start.cast_signed(),
                    coverage.tail.len.cast_signed(),
                    coverage.tail.crc,
                    coverage.crc,
                    delta.next_seq.cast_signed(),
                    touched,
                    self.generation,
                ],
            )
            .map_err(|e| failed("recording a session's coverage", e))?;
        if delta.next_seq != row.next_seq {
            self.store_fold(row.key, &delta.state)?;
        }
        self.changed |= touched;
        Ok(())
    }

    fn store_fold(&self, key: i64, state: &SurfaceState) -> Result<(), SearchError> {
        let fold = postcard::to_allocvec(state).map_err(|e| SearchError::IndexFailed {
            operation: "encoding a session's fold".into(),
            cause: Box::new(e),
        })?;
        self.tx
            .execute(
                "INSERT OR REPLACE INTO folds(key, fold) VALUES (?1, ?2)",
                params![key, fold],
            )
            .map_err(|e| failed("recording a session's fold", e))?;
        Ok(())
    }

    /// Replaces a session's documents with a whole read.
    #[allow(clippy::too_many_arguments)]
    fn replace(
        &mut self,
        id: &str,
        row: Option<&Row>,
        header: &SessionHeader,
        coverage: &Coverage,
        stamp: Stamp,
        is_settled: bool,
        delta: &Delta,
    ) -> Result<(), SearchError> {
        if let Some(row) = row {
            self.drop_session(row.key)?;
        }
        let header_json = serde_json::to_string(header).unwrap_or_default();
        self.tx
            .execute(
                "INSERT INTO sessions(id, header, created_at, cwd, parent, generation, error_code, error,
                   dev, ino, size, mtime, ctime, settled, covered, head_len, head_crc, tail_start,
                   tail_len, tail_crc, crc, next_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, NULL, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                   ?16, ?17, ?18, ?19, ?20)",
                params![
                    id,
                    header_json,
                    header.created_at.cast_signed(),
                    header.cwd,
                    header.parent_session,
                    self.generation,
                    stamp.dev.cast_signed(),
                    stamp.ino.cast_signed(),
                    stamp.size.cast_signed(),
                    stamp.mtime,
                    stamp.ctime,
                    is_settled,
                    coverage.end.cast_signed(),
                    coverage.head.len.cast_signed(),
                    coverage.head.crc,
                    coverage.tail.start.cast_signed(),
                    coverage.tail.len.cast_signed(),
                    coverage.tail.crc,
                    coverage.crc,
                    delta.next_seq.cast_signed(),
                ],
            )
            .map_err(|e| failed("recording a session", e))?;
        let key = self.tx.last_insert_rowid();
        self.store_fold(key, &delta.state)?;
        self.insert_docs(key, &delta.docs)?;
        self.changed = true;
        Ok(())
    }

    /// Records a session that cannot be read; it is retried when its log changes.
    fn unreadable(
        &mut self,
        id: &str,
        row: Option<&Row>,
        stamp: Stamp,
        is_settled: bool,
        error: &QueryError,
    ) -> Result<(), SearchError> {
        let message = error.to_string();
        if let Some(row) = row {
            if row.error.as_deref() == Some(message.as_str()) {
                // Still unreadable for the same reason: the answer does not change.
                self.tx
                    .execute(
                        "UPDATE sessions SET dev = ?2, ino = ?3, size = ?4, mtime = ?5, ctime = ?6,
                           settled = ?7 WHERE key = ?1",
                        params![
                            row.key,
                            stamp.dev.cast_signed(),
                            stamp.ino.cast_signed(),
                            stamp.size.cast_signed(),
                            stamp.mtime,
                            stamp.ctime,
                            is_settled
                        ],
                    )
                    .map_err(|e| failed("recording an unreadable session", e))?;
                return Ok(());
            }
            self.drop_session(row.key)?;
        }
        tracing::warn!(session = %id, %error, "session left out of search");
        self.tx
            .execute(
                "INSERT INTO sessions(id, generation, error_code, error, dev, ino, size, mtime, ctime,
                   settled, covered, head_len, head_crc, tail_start, tail_len, tail_crc, crc, next_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, 0, 0, 0, 0, 0, 0, 0)",
                params![
                    id,
                    self.generation,
                    error.code(),
                    message,
                    stamp.dev.cast_signed(),
                    stamp.ino.cast_signed(),
                    stamp.size.cast_signed(),
                    stamp.mtime,
                    stamp.ctime,
                    is_settled,
                ],
            )
            .map_err(|e| failed("recording an unreadable session", e))?;
        self.changed = true;
        Ok(())
    }
}

/// A document's id: its session's key and its seq in one integer, so a session's documents are
/// one range of the table (no second index to keep up) and FTS5 rowids follow them.
pub(crate) fn doc_id(key: i64, seq: u64) -> Result<i64, SearchError> {
    match (u32::try_from(seq), key) {
        (Ok(seq), 0..=0x7FFF_FFFF) => Ok((key << 32) | i64::from(seq)),
        _ => Err(SearchError::IndexFailed {
            operation: "numbering documents".into(),
            cause: format!("session key {key} or seq {seq} is beyond the index's numbering").into(),
        }),
    }
}

fn io_failure(path: &Path, e: io::Error) -> QueryError {
    QueryError::PersistenceFailed {
        operation: format!("reading {}", path.display()),
        cause: Box::new(e),
    }
}
