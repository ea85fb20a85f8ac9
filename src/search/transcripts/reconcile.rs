//! Catching the transcript search index up with the transcript files, before every search.
//!
//! The same protocol as a store's: one `stat` per unchanged file (its stamp is the one
//! recorded and had settled); a file that is the same file, at least as long as its covered
//! bytes, whose windows still match, is read from the covered offset on (only complete new
//! lines: a torn last line waits); any other change re-reads it whole; a file gone, or no
//! longer found under a searched directory, is dropped. Generations come from the transcript
//! readers' own boundaries ([`crate::transcript::open`]), never from a second detector.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use crate::log::{Coverage, DEFAULT_MAX_LINE};
use crate::search::error::SearchError;
use crate::search::reconcile::{Caught, covered, doc_id, read_range};
use crate::search::request::sanitize;
use crate::search::stamp::{Stamp, stamp_and_coverage};
use crate::search::transcripts::UnreadableTranscript;
use crate::search::transcripts::text::transcript_line_text;
use crate::transcript::{Format, OpenOptions, TranscriptError, session_of};

/// New transcript bytes up to this many are folded in memory by the transcript reader.
const MEMORY_TAIL: u64 = 256 << 10;

/// What the check of an unchanged file needs of its row (read for every file).
struct Seen {
    key: i64,
    stamp: Stamp,
    settled: bool,
    generation: i64,
    error: Option<(String, String)>,
}

/// A file row as a catch-up needs it (read only for files with work).
struct Row {
    key: i64,
    stamp: Stamp,
    coverage: Coverage,
    lines: u64,
    format: Option<Format>,
    error: Option<String>,
}

/// What was searched once the index is caught up.
#[derive(Debug, Default)]
pub(super) struct Searched {
    /// The files' keys, in the order searched.
    pub keys: Vec<i64>,
    /// Whether they are every file the index holds (then no restriction is needed).
    pub all: bool,
    /// The state of those files: what cursors are bound to.
    pub state: String,
    /// The files left out, and the paths that could not be listed.
    pub unreadable: Vec<UnreadableTranscript>,
}

/// What is searched: files, and the directories they were found under.
#[derive(Debug, Default)]
pub(super) struct Scope {
    /// The paths asked for (canonical where they exist): what a cursor is bound to.
    pub paths: Vec<PathBuf>,
    /// Canonical transcript files.
    pub files: Vec<PathBuf>,
    /// Canonical directories searched: a known file under one that was not found is gone.
    pub roots: Vec<PathBuf>,
    /// Paths that could not be listed or read at all.
    pub skipped: Vec<UnreadableTranscript>,
}

fn failed(what: &str, e: rusqlite::Error) -> SearchError {
    SearchError::index(what.to_string(), e)
}

/// Brings the index in `conn` up to the files of `scope`; transcript indexes are kept in
/// `index_dir`.
pub(super) fn reconcile(
    conn: &mut Connection,
    scope: &Scope,
    index_dir: &Path,
    settled: Duration,
) -> Result<(Caught, Searched), SearchError> {
    let taken_at = SystemTime::now();
    let rows = load_seen(conn)?;
    let mut work: Vec<(usize, Option<Stamp>)> = Vec::new();
    let mut states: Vec<State> = Vec::with_capacity(scope.files.len());
    for (i, path) in scope.files.iter().enumerate() {
        let stat = rustix::fs::stat(path.as_path()).map(|st| Stamp::of_stat(&st));
        let row = rows.get(path.as_os_str().as_bytes());
        match (stat, row) {
            (Ok(stamp), Some(row)) if row.stamp == stamp && row.settled => {
                states.push(Some((row.key, row.generation, row.error.clone())));
            }
            (Ok(stamp), _) => {
                states.push(None);
                work.push((i, Some(stamp)));
            }
            // Gone since it was listed, or not to be read: the catch-up decides.
            (Err(_), _) => {
                states.push(None);
                work.push((i, None));
            }
        }
    }
    let listed: HashSet<&[u8]> = scope
        .files
        .iter()
        .map(|p| p.as_os_str().as_bytes())
        .collect();
    let gone: Vec<i64> = rows
        .iter()
        .filter(|(path, _)| !listed.contains(path.as_slice()))
        .filter(|(path, _)| {
            let path = Path::new(std::ffi::OsStr::from_bytes(path));
            scope.roots.iter().any(|root| path.starts_with(root))
        })
        .map(|(_, row)| row.key)
        .collect();
    let mut caught = Caught::default();
    let mut total = rows.len();
    if !work.is_empty() || !gone.is_empty() {
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
            index_dir,
        };
        for key in &gone {
            writer.drop_file(*key)?;
        }
        for (i, _) in &work {
            let Some(path) = scope.files.get(*i) else {
                continue;
            };
            caught.read += 1;
            let row = match rows.get(path.as_os_str().as_bytes()) {
                Some(seen) => Some(load_row(&tx, seen.key)?),
                None => None,
            };
            let state = writer.catch_up(path, row.as_ref(), taken_at, settled)?;
            if let Some(slot) = states.get_mut(*i) {
                *slot = state;
            }
        }
        caught.changed = writer.changed;
        if caught.changed {
            tx.execute(
                "UPDATE state SET generation = ?1 WHERE singleton = 1",
                [generation + 1],
            )
            .map_err(|e| failed("moving the generation", e))?;
        }
        total = tx
            .query_row("SELECT count(*) FROM files", [], |r| r.get::<_, i64>(0))
            .map_err(|e| failed("counting files", e))
            .map(|n| usize::try_from(n).unwrap_or(0))?;
        tx.commit()
            .map_err(|e| failed("committing a catch-up", e))?;
    }
    let mut searched = Searched::default();
    // FNV-1a over (key, generation) of every file searched, in order.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, state) in scope.files.iter().zip(states) {
        let Some((key, generation, error)) = state else {
            continue;
        };
        for b in key.to_le_bytes().iter().chain(&generation.to_le_bytes()) {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        searched.keys.push(key);
        if let Some((code, message)) = error {
            searched.unreadable.push(UnreadableTranscript {
                file: path.clone(),
                error: code,
                message,
            });
        }
    }
    searched.all = searched.keys.len() == total;
    searched.state = format!("{}-{hash:016x}", searched.keys.len());
    searched.unreadable.extend(scope.skipped.iter().cloned());
    Ok((caught, searched))
}

/// Every file's key and stamp by path.
fn load_seen(conn: &Connection) -> Result<HashMap<Vec<u8>, Seen>, SearchError> {
    let fail = |e| failed("reading the files", e);
    let mut stmt = conn
        .prepare(
            "SELECT path, key, dev, ino, size, mtime, ctime, settled, generation, error_code, error
             FROM files",
        )
        .map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let mut seen = HashMap::new();
    while let Some(r) = rows.next().map_err(fail)? {
        let decode = || -> rusqlite::Result<(Vec<u8>, Seen)> {
            let u = |i: usize| r.get::<_, i64>(i).map(i64::cast_unsigned);
            let code: Option<String> = r.get(9)?;
            let message: Option<String> = r.get(10)?;
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
                    generation: r.get(8)?,
                    error: code.map(|c| (c, message.unwrap_or_default())),
                },
            ))
        };
        let (path, row) = decode().map_err(fail)?;
        seen.insert(path, row);
    }
    Ok(seen)
}

fn load_row(conn: &Connection, key: i64) -> Result<Row, SearchError> {
    conn.query_row(
        "SELECT key, dev, ino, size, mtime, ctime, covered, head_len, head_crc,
                tail_start, tail_len, tail_crc, crc, lines, format, error FROM files WHERE key = ?1",
        [key],
        |r| {
            let u = |i: usize| r.get::<_, i64>(i).map(i64::cast_unsigned);
            let format: Option<String> = r.get(14)?;
            let (stamp, coverage) = stamp_and_coverage(r, 1)?;
            Ok(Row {
                key: r.get(0)?,
                stamp,
                coverage,
                lines: u(13)?,
                format: format.and_then(|f| f.parse().ok()),
                error: r.get(15)?,
            })
        },
    )
    .map_err(|e| failed("reading a file's row", e))
}

/// One document of a line.
struct Doc {
    offset: u64,
    line: u64,
    generation: u32,
    kind: String,
    role: Option<String>,
    time: Option<i64>,
    text: String,
}

/// What a read of a file found.
struct Found {
    format: Option<Format>,
    coverage: Coverage,
    lines: u64,
    docs: Vec<Doc>,
}

/// The stable code of a transcript that cannot be read.
fn error_code(error: &TranscriptError) -> &'static str {
    match error {
        TranscriptError::NotFound { .. } => "not_found",
        TranscriptError::NotAFile { .. } => "not_a_file",
        TranscriptError::Empty { .. } => "empty",
        TranscriptError::UnknownFormat { .. } => "unknown_format",
        TranscriptError::Io { .. } => "io_failed",
    }
}

/// The code of a path `discover` could not list or read.
pub(super) fn skipped_code(error: &TranscriptError) -> &'static str {
    error_code(error)
}

/// The current file state: key, generation, error (code and message).
type State = Option<(i64, i64, Option<(String, String)>)>;

struct Writer<'t> {
    tx: &'t Transaction<'t>,
    generation: i64,
    changed: bool,
    index_dir: &'t Path,
}

impl Writer<'_> {
    fn drop_file(&mut self, key: i64) -> Result<(), SearchError> {
        let (lo, hi) = (doc_id(key, 0)?, doc_id(key, u64::from(u32::MAX))?);
        self.tx
            .execute("DELETE FROM fts WHERE rowid BETWEEN ?1 AND ?2", [lo, hi])
            .and_then(|_| {
                self.tx
                    .execute("DELETE FROM docs WHERE id BETWEEN ?1 AND ?2", [lo, hi])
            })
            .and_then(|_| self.tx.execute("DELETE FROM files WHERE key = ?1", [key]))
            .map_err(|e| failed("dropping a file", e))?;
        self.changed = true;
        Ok(())
    }

    fn catch_up(
        &mut self,
        path: &Path,
        row: Option<&Row>,
        taken_at: SystemTime,
        settled: Duration,
    ) -> Result<State, SearchError> {
        let opened = File::open(path).and_then(|file| {
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
            Err(e) => {
                let error = TranscriptError::io("read", path, e);
                return self.unreadable(path, row, Stamp::default(), false, &error);
            }
        };
        let stamp = Stamp::of(&metadata);
        let is_settled = stamp.settled_at(taken_at, settled);
        if !metadata.is_file() {
            let error = TranscriptError::NotAFile {
                path: path.to_path_buf(),
                kind: "directory or special file",
            };
            return self.unreadable(path, row, stamp, is_settled, &error);
        }
        let resumable = row.filter(|r| {
            r.error.is_none() && r.stamp.same_file(&stamp) && stamp.size >= r.coverage.end
        });
        if let Some(row) = resumable {
            let intact = row
                .coverage
                .check(&file)
                .map_err(|e| TranscriptError::io("read", path, e));
            match intact {
                Ok(check) if check.is_intact() => {
                    match self.read(path, &file, stamp, Some(row))? {
                        Ok(Some(found)) => {
                            return self.extend(row, &found, stamp, is_settled);
                        }
                        // Rewritten meanwhile, or another format now: read whole below.
                        Ok(None) => {}
                        Err(error) => {
                            return self.unreadable(path, Some(row), stamp, is_settled, &error);
                        }
                    }
                }
                Ok(_) => {}
                Err(error) => return self.unreadable(path, Some(row), stamp, is_settled, &error),
            }
        }
        match self.read(path, &file, stamp, None)? {
            Ok(Some(found)) => self.replace(path, row, &found, stamp, is_settled),
            Ok(None) => Ok(None),
            Err(error) => self.unreadable(path, row, stamp, is_settled, &error),
        }
    }

    /// Reads the complete lines after `row`'s coverage (or all of them), with the generation
    /// of each from the transcript's boundaries. `None` if the file changed under the read;
    /// the inner error is the transcript's, the outer one the index's.
    fn read(
        &self,
        path: &Path,
        file: &File,
        stamp: Stamp,
        row: Option<&Row>,
    ) -> Result<Result<Option<Found>, TranscriptError>, SearchError> {
        let start = row.map_or(0, |r| r.coverage.end);
        let bytes = match read_range(file, start, stamp.size) {
            Ok(bytes) => bytes,
            Err(e) => return Ok(Err(TranscriptError::io("read", path, e))),
        };
        let mut complete = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
        let mut format = row.and_then(|r| r.format);
        let mut boundaries = Vec::new();
        if complete > 0 {
            // The transcript's own reader: its format and boundaries (through its index).
            // A small new tail is folded in memory rather than committed: a search after a
            // turn then costs no index commit (the transcript index catches up once it is big).
            let options = OpenOptions {
                index_dir: Some(self.index_dir.to_path_buf()),
                max_memory_tail: MEMORY_TAIL,
                ..OpenOptions::default()
            };
            match crate::transcript::open(path, &options) {
                Ok(transcript) => {
                    if row.is_some() && format != Some(transcript.format) {
                        return Ok(Ok(None));
                    }
                    format = Some(transcript.format);
                    boundaries = transcript
                        .summary
                        .boundaries
                        .iter()
                        .map(|b| b.offset)
                        .collect();
                    // Lines the reader did not see yet (the file grew meanwhile) wait.
                    let seen = transcript.coverage.end.saturating_sub(start);
                    if seen < complete as u64 {
                        let seen = usize::try_from(seen).unwrap_or(0);
                        complete = bytes
                            .get(..seen)
                            .and_then(|b| memchr::memrchr(b'\n', b))
                            .map_or(0, |i| i + 1);
                    }
                }
                Err(TranscriptError::Empty { .. }) => complete = 0,
                Err(e) => return Ok(Err(e)),
            }
        }
        let end = start + complete as u64;
        let Some(coverage) = covered(file, row.map(|r| &r.coverage), &bytes, end)? else {
            return Ok(Ok(None));
        };
        let mut docs = Vec::new();
        let mut line = row.map_or(0, |r| r.lines);
        let mut at = 0;
        let body = bytes.get(..complete).unwrap_or_default();
        while let Some(i) = body.get(at..).and_then(|rest| memchr::memchr(b'\n', rest)) {
            let text = body.get(at..at + i).unwrap_or_default();
            let offset = start + at as u64;
            line += 1;
            at += i + 1;
            let Some(format) = format else { continue };
            if text.len() > DEFAULT_MAX_LINE {
                continue;
            }
            let Some(found) = transcript_line_text(format, text) else {
                continue;
            };
            let generation = boundaries.partition_point(|b| *b <= offset);
            docs.push(Doc {
                offset,
                line,
                generation: u32::try_from(generation).unwrap_or(u32::MAX),
                kind: found.kind,
                role: found.role,
                time: found.time,
                text: sanitize(&found.text),
            });
        }
        Ok(Ok(Some(Found {
            format,
            coverage,
            lines: line,
            docs,
        })))
    }

    fn insert_docs(&self, key: i64, docs: &[Doc]) -> Result<(), SearchError> {
        let fail = |e| failed("adding documents", e);
        let mut doc_stmt = self
            .tx
            .prepare(
                "INSERT INTO docs(id, file, offset, line, generation, type, role, time, length)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .map_err(fail)?;
        let mut fts_stmt = self
            .tx
            .prepare("INSERT INTO fts(rowid, text) VALUES (?1, ?2)")
            .map_err(fail)?;
        for doc in docs {
            let id = doc_id(key, doc.line)?;
            doc_stmt
                .execute(params![
                    id,
                    key,
                    doc.offset.cast_signed(),
                    doc.line.cast_signed(),
                    doc.generation,
                    doc.kind,
                    doc.role,
                    doc.time,
                    (doc.text.chars().count() as u64).cast_signed(),
                ])
                .map_err(fail)?;
            fts_stmt.execute(params![id, doc.text]).map_err(fail)?;
        }
        Ok(())
    }

    /// Adds what a file's new lines hold.
    fn extend(
        &mut self,
        row: &Row,
        found: &Found,
        stamp: Stamp,
        is_settled: bool,
    ) -> Result<State, SearchError> {
        let touched = !found.docs.is_empty();
        self.insert_docs(row.key, &found.docs)?;
        let c = &found.coverage;
        self.tx
            .execute(
                "UPDATE files SET dev = ?2, ino = ?3, size = ?4, mtime = ?5, ctime = ?6, settled = ?7,
                   covered = ?8, head_len = ?9, head_crc = ?10, tail_start = ?11, tail_len = ?12,
                   tail_crc = ?13, crc = ?14, lines = ?15, format = ?16,
                   generation = CASE WHEN ?17 THEN ?18 ELSE generation END
                 WHERE key = ?1",
                params![
                    row.key,
                    stamp.dev.cast_signed(),
                    stamp.ino.cast_signed(),
                    stamp.size.cast_signed(),
                    stamp.mtime,
                    stamp.ctime,
                    is_settled,
                    c.end.cast_signed(),
                    c.head.len.cast_signed(),
                    c.head.crc,
                    c.tail.start.cast_signed(),
                    c.tail.len.cast_signed(),
                    c.tail.crc,
                    c.crc,
                    found.lines.cast_signed(),
                    found.format.map(Format::name),
                    touched,
                    self.generation,
                ],
            )
            .map_err(|e| failed("recording a file's coverage", e))?;
        self.changed |= touched;
        let generation: i64 = self
            .tx
            .query_row(
                "SELECT generation FROM files WHERE key = ?1",
                [row.key],
                |r| r.get(0),
            )
            .map_err(|e| failed("reading a file's generation", e))?;
        Ok(Some((row.key, generation, None)))
    }

    /// Replaces a file's documents with a whole read.
    fn replace(
        &mut self,
        path: &Path,
        row: Option<&Row>,
        found: &Found,
        stamp: Stamp,
        is_settled: bool,
    ) -> Result<State, SearchError> {
        if let Some(row) = row {
            self.drop_file(row.key)?;
        }
        let session = found.format.map(|f| session_of(path, f).0);
        let c = &found.coverage;
        self.tx
            .execute(
                "INSERT INTO files(path, format, session, generation, error_code, error, dev, ino,
                   size, mtime, ctime, settled, covered, head_len, head_crc, tail_start, tail_len,
                   tail_crc, crc, lines)
                 VALUES (?1, ?2, ?3, ?4, NULL, NULL, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
                   ?15, ?16, ?17, ?18)",
                params![
                    path.as_os_str().as_bytes(),
                    found.format.map(Format::name),
                    session,
                    self.generation,
                    stamp.dev.cast_signed(),
                    stamp.ino.cast_signed(),
                    stamp.size.cast_signed(),
                    stamp.mtime,
                    stamp.ctime,
                    is_settled,
                    c.end.cast_signed(),
                    c.head.len.cast_signed(),
                    c.head.crc,
                    c.tail.start.cast_signed(),
                    c.tail.len.cast_signed(),
                    c.tail.crc,
                    c.crc,
                    found.lines.cast_signed(),
                ],
            )
            .map_err(|e| failed("recording a file", e))?;
        let key = self.tx.last_insert_rowid();
        self.insert_docs(key, &found.docs)?;
        self.changed = true;
        Ok(Some((key, self.generation, None)))
    }

    /// Records a file that cannot be read; it is retried when its stamp changes.
    fn unreadable(
        &mut self,
        path: &Path,
        row: Option<&Row>,
        stamp: Stamp,
        is_settled: bool,
        error: &TranscriptError,
    ) -> Result<State, SearchError> {
        let code = error_code(error);
        let message = error.to_string();
        if let Some(row) = row {
            if row.error.as_deref() == Some(message.as_str()) {
                // Still unreadable for the same reason: the answer does not change.
                self.tx
                    .execute(
                        "UPDATE files SET dev = ?2, ino = ?3, size = ?4, mtime = ?5, ctime = ?6,
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
                    .map_err(|e| failed("recording an unreadable file", e))?;
                let generation: i64 = self
                    .tx
                    .query_row(
                        "SELECT generation FROM files WHERE key = ?1",
                        [row.key],
                        |r| r.get(0),
                    )
                    .map_err(|e| failed("reading a file's generation", e))?;
                return Ok(Some((row.key, generation, Some((code.into(), message)))));
            }
            self.drop_file(row.key)?;
        }
        tracing::warn!(file = %path.display(), %error, "transcript left out of search");
        self.tx
            .execute(
                "INSERT INTO files(path, generation, error_code, error, dev, ino, size, mtime, ctime,
                   settled, covered, head_len, head_crc, tail_start, tail_len, tail_crc, crc, lines)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, 0, 0, 0, 0, 0, 0, 0)",
                params![
                    path.as_os_str().as_bytes(),
                    self.generation,
                    code,
                    message,
                    stamp.dev.cast_signed(),
                    stamp.ino.cast_signed(),
                    stamp.size.cast_signed(),
                    stamp.mtime,
                    stamp.ctime,
                    is_settled,
                ],
            )
            .map_err(|e| failed("recording an unreadable file", e))?;
        self.changed = true;
        let key = self.tx.last_insert_rowid();
        Ok(Some((key, self.generation, Some((code.into(), message)))))
    }
}

/// A stored path (its bytes) as a `PathBuf`.
pub(super) fn stored_path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}
