//! Transcript files as a source of the transcript search index: its schema, the files searched,
//! and what their new lines give; the catch-up is [`crate::search::catch_up`]'s.
//!
//! Only complete new lines are read (a torn last line waits). A known file no longer found
//! under a searched directory is dropped. Each line's format and generation come from the
//! transcript readers themselves ([`crate::transcript::Transcript::open`]: the format, and the compaction
//! boundaries), never from a second detector; its text from [`transcript_line_text`].

use std::ffi::OsStr;
use std::fs::Metadata;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Transaction};

use crate::log::DEFAULT_MAX_LINE;
use crate::search::catch_up::{
    CaughtUp, Chunk, Listed, Position, Read, Source, Step, Table, catch_up,
};
use crate::search::db::{Schema, index_schema};
use crate::search::documents::{DocTables, Document};
use crate::search::error::SearchError;
use crate::search::request::sanitize;
use crate::search::stamp::Stamp;
use crate::search::transcripts::UnreadableTranscript;
use crate::search::transcripts::text::transcript_line_text;
use crate::transcript::{Format, OpenOptions, TranscriptError, is_database, session_of};

/// The schema of the transcript search index.
pub(super) const TRANSCRIPT_SCHEMA: Schema = Schema {
    // 2: a document's own session (an `OpenCode` database holds many).
    version: 2,
    sql: index_schema!(
        files: "files",
        name: "path BLOB NOT NULL UNIQUE",
        own: "
  format TEXT,
  session TEXT,",
        position: "
    lines INTEGER NOT NULL",
        more: "",
        docs: "
  file INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  line INTEGER NOT NULL,
  generation INTEGER NOT NULL,
  type TEXT NOT NULL,
  role TEXT,
  time INTEGER,
  length INTEGER NOT NULL,
  session TEXT",
    ),
    tables: &["docs", "files", "state"],
};

/// New transcript bytes up to this many are folded in memory by the transcript reader.
const MEMORY_TAIL: u64 = 256 << 10;

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
    /// Canonical `OpenCode` databases.
    pub databases: Vec<PathBuf>,
    /// Canonical directories searched: a known file under one that was not found is gone.
    pub roots: Vec<PathBuf>,
    /// Paths that could not be listed or read at all.
    pub skipped: Vec<UnreadableTranscript>,
}

/// One document: a line with text, or an `OpenCode` part with text.
pub(crate) struct Doc {
    /// Its number in its file: the line number, or the part's ordinal in its database.
    pub(super) number: u64,
    pub(super) offset: u64,
    pub(super) line: u64,
    pub(super) generation: u32,
    pub(super) kind: String,
    pub(super) role: Option<String>,
    pub(super) time: Option<i64>,
    /// Its own session, when its file holds many (else the file's).
    pub(super) session: Option<String>,
    pub(super) text: String,
}

impl Document for Doc {
    fn number(&self) -> u64 {
        self.number
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn values(&self) -> Vec<SqlValue> {
        vec![
            SqlValue::Integer(self.offset.cast_signed()),
            SqlValue::Integer(self.line.cast_signed()),
            SqlValue::Integer(self.generation.into()),
            SqlValue::Text(self.kind.clone()),
            self.role.clone().into(),
            self.time.into(),
            SqlValue::Integer((self.text.chars().count() as u64).cast_signed()),
            self.session.clone().into(),
        ]
    }
}

/// Where a read of a transcript stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TranscriptPosition {
    /// Lines read (an `OpenCode` database: its messages).
    pub(super) lines: u64,
    /// The format it was read as (none for a file without a complete line).
    pub(super) format: Option<Format>,
}

impl Position for TranscriptPosition {
    fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<TranscriptPosition> {
        let format: Option<String> = row.get(first + 1)?;
        Ok(TranscriptPosition {
            lines: row.get::<_, i64>(first)?.cast_unsigned(),
            format: format.and_then(|f| f.parse().ok()),
        })
    }

    fn values(&self) -> Vec<SqlValue> {
        vec![
            SqlValue::Integer(self.lines.cast_signed()),
            self.format
                .map_or(SqlValue::Null, |f| SqlValue::Text(f.name().into())),
        ]
    }
}

/// The table of files and documents both sources of the transcript search index keep: a
/// database's documents carry their own session.
pub(super) const TABLE: Table = Table {
    files: "files",
    name: "path",
    position: &["lines", "format"],
    named: &["session"],
    docs: DocTables {
        docs: "docs",
        fts: "fts",
        file: "file",
        columns: &[
            "offset",
            "line",
            "generation",
            "type",
            "role",
            "time",
            "length",
            "session",
        ],
    },
    states: true,
};

/// Why a listed file is not read: it is not a regular file.
pub(super) fn refuse(path: &Path, metadata: &Metadata) -> Option<TranscriptError> {
    (!metadata.is_file()).then(|| TranscriptError::NotAFile {
        path: path.to_path_buf(),
        kind: "directory or special file",
    })
}

/// The transcripts of a search.
struct Transcripts<'a> {
    /// Where the transcript readers keep their indexes.
    index_dir: &'a Path,
    /// The directories searched.
    roots: &'a [PathBuf],
}

impl Source for Transcripts<'_> {
    /// The path's bytes.
    type Name = Vec<u8>;
    type Error = TranscriptError;
    type Position = TranscriptPosition;
    type Doc = Doc;
    type Extra = ();

    const TABLE: Table = TABLE;

    fn path(&self, name: &Vec<u8>) -> PathBuf {
        stored_path(name.clone())
    }

    /// A file under a searched directory, but not a database (the databases' source owns
    /// those: both keep their rows in one table).
    fn owns(&self, name: &Vec<u8>) -> bool {
        let path = Path::new(OsStr::from_bytes(name));
        !is_database(path) && self.roots.iter().any(|root| path.starts_with(root))
    }

    fn code(error: &TranscriptError) -> &'static str {
        error_code(error)
    }

    fn io_error(path: &Path, error: io::Error) -> TranscriptError {
        TranscriptError::io("read", path, error)
    }

    fn refuse(&self, path: &Path, metadata: &Metadata) -> Option<TranscriptError> {
        refuse(path, metadata)
    }

    /// Takes the complete lines of `bytes`, each with its generation from the transcript's
    /// boundaries; a transcript that is another format now is read whole.
    fn read(&self, _: &Transaction<'_>, chunk: Chunk<'_, Self>) -> Result<Step<Self>, SearchError> {
        let Chunk {
            path,
            bytes,
            start,
            resumed,
            ..
        } = chunk;
        let mut complete = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
        let mut format = resumed.and_then(|(_, p)| p.format);
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
                    if resumed.is_some() && format != Some(transcript.format) {
                        return Ok(Step::Whole);
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
                Err(e) => return Ok(Step::Unreadable(e)),
            }
        }
        let mut docs = Vec::new();
        let mut line = resumed.map_or(0, |(_, p)| p.lines);
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
                number: line,
                offset,
                line,
                generation: u32::try_from(generation).unwrap_or(u32::MAX),
                kind: found.kind,
                role: found.role,
                time: found.time,
                session: None,
                text: sanitize(&found.text),
            });
        }
        Ok(Step::Read(Read {
            end: start + complete as u64,
            docs,
            position: TranscriptPosition {
                lines: line,
                format,
            },
            extra: (),
        }))
    }

    fn named(&self, name: &Vec<u8>, read: &Read<Self>) -> Vec<SqlValue> {
        let path = Path::new(OsStr::from_bytes(name));
        let session = read.position.format.map(|f| session_of(path, f).0);
        vec![session.map_or(SqlValue::Null, SqlValue::Text)]
    }
}

/// Brings the index in `conn` up to the line transcripts of `scope`; the transcripts' own
/// indexes are kept in `index_dir`.
pub(super) fn catch_up_lines(
    conn: &mut Connection,
    scope: &Scope,
    index_dir: &Path,
    settled: Duration,
) -> Result<CaughtUp, SearchError> {
    let listed: Vec<Listed<Transcripts<'_>>> = scope
        .files
        .iter()
        .map(|path| Listed {
            name: path.as_os_str().as_bytes().to_vec(),
            // Gone since it was listed, or not to be read: the catch-up finds out.
            stamp: rustix::fs::stat(path.as_path())
                .ok()
                .map(|st| Stamp::of_stat(&st)),
            refused: None,
        })
        .collect();
    let source = Transcripts {
        index_dir,
        roots: &scope.roots,
    };
    catch_up(conn, &source, &listed, settled)
}

/// The stable code of a transcript that cannot be read, or of a path `discover` could not
/// list or read.
pub(super) fn error_code(error: &TranscriptError) -> &'static str {
    match error {
        TranscriptError::NotFound { .. } => "not_found",
        TranscriptError::NotAFile { .. } => "not_a_file",
        TranscriptError::Empty { .. } => "empty",
        TranscriptError::UnknownFormat { .. } => "unknown_format",
        TranscriptError::NotADocument { .. } => "not_a_document",
        TranscriptError::Unreadable { .. } => "unreadable",
        TranscriptError::Io { .. } => "io_failed",
    }
}

/// A stored path (its bytes) as a `PathBuf`.
pub(super) fn stored_path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}
