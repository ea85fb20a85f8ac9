//! [`TranscriptSearch`]: the same search over the transcripts of every agent agentlog reads (docs/SEARCH.md, "Transcript search").
//!
//! A document is one line with message text ([`transcript_line_text`]), or one part of an
//! `OpenCode` message (`databases`); a hit names its file, the line's offset and number (an
//! `OpenCode` message's index in its session), and its generation (0-based, counted by the
//! transcript readers' own compaction boundaries). Queries, match modes, ranking, snippets and cursors are
//! the store search's own. The index is SQLite FTS5 in `<index dir>/search/`, beside the
//! transcripts' own indexes in the per-user cache directory (never beside a transcript), and
//! is caught up before every search exactly as a store's is.

mod databases;
mod files;
mod formats;
mod rank;
mod reconcile;
mod text;
mod window;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::search::catch_up::Caught;
use crate::search::cursor::Pages;
use crate::search::db::{Db, Handle};
use crate::search::error::SearchError;
use crate::search::index::SearchConfig;
use crate::search::request::{MatchMode, Query, transcript_fingerprint};
use crate::transcript::{
    Format, default_index_dir, discover, is_database, read_by_lines, roots_or_default,
};
use files::{Scope, Searched, TRANSCRIPT_SCHEMA, error_code};
use rank::rank;
use reconcile::reconcile;

pub use text::{TranscriptLineText, transcript_line_text, user_prompt};
pub use window::{
    DEFAULT_LINE_CHARS, DEFAULT_WINDOW_SIDE, LineAnchor, LineWindowError, LineWindowRequest,
    MAX_LINE_CHARS, MAX_SCAN_BYTES, MAX_WINDOW_SIDE, TranscriptWindow, WindowedLine,
    transcript_window,
};

/// The folder of the transcript search index inside the transcript index directory.
pub const TRANSCRIPT_SEARCH_DIR: &str = "search";

/// A search over transcripts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TranscriptSearchRequest {
    /// The text to find.
    pub query: String,
    /// Transcript files, or directories searched for `*.jsonl` and `OpenCode` databases
    /// (default: the places the agents keep theirs, as `usage` finds them).
    pub paths: Vec<PathBuf>,
    /// Page size (default [`DEFAULT_LIMIT`](crate::search::DEFAULT_LIMIT), at most
    /// [`MAX_LIMIT`](crate::search::MAX_LIMIT)).
    pub limit: Option<u64>,
    /// The `next_cursor` of the previous page of this very request.
    pub cursor: Option<String>,
    /// Phrase (default) or every term.
    pub mode: MatchMode,
}

/// One matching transcript line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptSearchHit {
    /// The transcript file (canonical path).
    #[serde(serialize_with = "lossy_path")]
    pub file: PathBuf,
    /// Its format.
    pub format: Format,
    /// The session it belongs to, as `usage` names it.
    pub session: String,
    /// The byte offset of the line (an `OpenCode` part: its message's 0-based index in its
    /// session, in time order).
    pub offset: u64,
    /// The 1-based line number (an `OpenCode` part: its message's index + 1).
    pub line: u64,
    /// The generation of the line: how many compaction boundaries precede it or are it.
    pub generation: u32,
    /// The line's type, as its format names it.
    #[serde(rename = "type")]
    pub kind: String,
    /// The message's role, when the line is a message.
    pub role: Option<String>,
    /// The line's time, epoch ms, when it has one.
    pub time: Option<i64>,
    /// An excerpt around its first match.
    pub snippet: String,
    /// The matches within `snippet`, as code point ranges `[start, end)`.
    #[serde(skip)]
    pub marks: Vec<(usize, usize)>,
    /// The archived version the line was read from, its file gone (`file` is then the
    /// original path); `null` for a line of a file that exists. Set by the caller that adds
    /// the archive's copies to the search.
    pub archived: Option<u32>,
}

/// A transcript left out of a search: it cannot be read, or is not a transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadableTranscript {
    /// The file or directory.
    #[serde(serialize_with = "lossy_path")]
    pub file: PathBuf,
    /// A stable code: `not_found`, `not_a_file`, `unknown_format`, `io_failed`.
    pub error: String,
    /// What is wrong.
    pub message: String,
}

/// A path as JSON text; bytes that are not UTF-8 become U+FFFD (serde refuses such a path).
fn lossy_path<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

/// A page of a transcript search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptSearchPage {
    /// The hits, best first.
    pub hits: Vec<TranscriptSearchHit>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Files and paths that could not be searched.
    pub unreadable: Vec<UnreadableTranscript>,
}

/// Full-text search over transcript files, from a derived index in the cache directory.
///
/// Searches of one index are serialized, across processes too. The transcripts' own indexes
/// (which give each line's generation) are kept in the same directory.
#[derive(Debug)]
pub struct TranscriptSearch {
    index_dir: PathBuf,
    config: SearchConfig,
    index: Handle,
}

impl TranscriptSearch {
    /// A search keeping its index under `index_dir` (default: the transcript index directory
    /// of the per-user cache). Nothing is read or written before the first search.
    pub fn new(index_dir: Option<PathBuf>, config: SearchConfig) -> Result<Self, SearchError> {
        let index_dir =
            index_dir
                .or_else(default_index_dir)
                .ok_or_else(|| SearchError::IndexFailed {
                    operation: "finding the cache directory".into(),
                    cause:
                        "set AGENTLOG_CACHE_DIR, XDG_CACHE_HOME or HOME, or pass an index directory"
                            .into(),
                })?;
        Ok(Self {
            index: Handle::new(index_dir.join(TRANSCRIPT_SEARCH_DIR), &TRANSCRIPT_SCHEMA),
            index_dir,
            config,
        })
    }

    /// The directory holding the search index files.
    pub fn dir(&self) -> &Path {
        self.index.dir()
    }

    /// Catches the index up with the transcripts under `paths` without searching.
    pub fn catch_up(&mut self, paths: &[PathBuf]) -> Result<Caught, SearchError> {
        let scope = scope(paths);
        let (caught, ()) = self.with_ready(&scope, |_, _| Ok(()))?;
        Ok(caught)
    }

    /// Searches every transcript line under the request's paths.
    pub fn search(
        &mut self,
        request: &TranscriptSearchRequest,
    ) -> Result<TranscriptSearchPage, SearchError> {
        let query = Query::new(&request.query, request.mode, request.limit)?;
        let scope = scope(&request.paths);
        let fingerprint =
            transcript_fingerprint(&query.text, request.mode, &scope.paths, query.limit);
        let snippet_chars = self.config.snippet_chars;
        let (_, page) = self.with_ready(&scope, |db, searched| {
            let pages = Pages {
                instance: &db.instance,
                scope: "transcripts",
                fingerprint: &fingerprint,
                generation: &searched.state,
                limit: query.limit,
            };
            let offset = pages.offset(request.cursor.as_deref())?;
            let hits = rank(db, searched, &query, offset, snippet_chars)?;
            let (hits, next_cursor) = pages.page(hits, offset);
            Ok(TranscriptSearchPage {
                hits,
                next_cursor,
                unreadable: searched.unreadable.clone(),
            })
        })?;
        Ok(page)
    }

    /// Takes the lock, opens and catches up the index, and runs `f` (again, if the index
    /// had to be rebuilt on the way).
    fn with_ready<T>(
        &mut self,
        scope: &Scope,
        f: impl Fn(&Db, &Searched) -> Result<T, SearchError>,
    ) -> Result<(Caught, T), SearchError> {
        crate::transcript::ensure_private_dir(&self.index_dir).map_err(|e| {
            SearchError::index_io(format!("creating {}", self.index_dir.display()), e)
        })?;
        let (index_dir, settled) = (&self.index_dir, self.config.settled);
        self.index.with_lock(|db, _| {
            let (caught, searched) = reconcile(&mut db.conn, scope, index_dir, settled)?;
            Ok((caught, f(db, &searched)?))
        })
    }
}

/// The files under `paths` (or the agents' default places), and the directories searched.
fn scope(paths: &[PathBuf]) -> Scope {
    let paths = roots_or_default(paths);
    // Line transcripts and `OpenCode` databases (each to its source); the older `OpenCode`
    // storage files and Gemini CLI session documents are not searched.
    let (found, skipped) = discover(&paths);
    let (databases, lines): (Vec<PathBuf>, Vec<PathBuf>) = found
        .into_iter()
        .filter(|f| is_database(f) || read_by_lines(f))
        .partition(|f| is_database(f));
    let canonical: Vec<PathBuf> = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let roots = canonical.iter().filter(|p| p.is_dir()).cloned().collect();
    Scope {
        paths: canonical,
        files: lines,
        databases,
        roots,
        skipped: skipped
            .into_iter()
            .map(|s| UnreadableTranscript {
                error: error_code(&s.error).into(),
                message: s.error.to_string(),
                file: s.path,
            })
            .collect(),
    }
}
