//! What a SOURCE argument names: an agent directory (one log), a session store (one log per
//! session), or a transcript. Anything else is an error, never an empty source.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ExportError;
use super::probe::{Probe, probe, transcript_id};
use crate::query::{JsonlSource, PersistedSource};
use crate::transcript::{discover, is_database, read_by_lines};

/// The kinds of log an export reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceKind {
    /// A lingtai agent directory's `logs/events.jsonl`.
    Agent,
    /// One session of a dsh-style session store.
    Session,
    /// A Claude Code, Codex, pi, Gemini CLI or Qwen Code transcript, or an `OpenCode`
    /// session (its log the database).
    Transcript,
}

impl SourceKind {
    /// The stable name, used as the `source_kind` partition value.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Agent => "agent",
            SourceKind::Session => "session",
            SourceKind::Transcript => "transcript",
        }
    }
}

/// One log to export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// Its kind.
    pub kind: SourceKind,
    /// The `source_id` column: the agent directory's name, the session id or transcript id.
    pub id: String,
    /// The log, with symbolic links resolved (so one file is one source however it is named).
    pub log: PathBuf,
}

impl Source {
    /// Whether it is an `OpenCode` database (or one session of one).
    pub fn is_opencode(&self) -> bool {
        self.kind == SourceKind::Transcript && is_database(&self.log)
    }

    /// Its key in state and part file names: a hash of its kind and log path; an `OpenCode`
    /// session's takes in its session id (one database holds many sessions).
    pub fn key(&self) -> String {
        if self.is_opencode() {
            let mut log = self.log.as_os_str().to_owned();
            log.push("\0");
            log.push(&self.id);
            source_key(self.kind, Path::new(&log))
        } else {
            source_key(self.kind, &self.log)
        }
    }
}

/// The logs a SOURCE argument names (an `OpenCode` database as one source whose sessions
/// the export lists).
///
/// # Errors
///
/// [`ExportError::NoSource`] if `path` does not exist, [`ExportError::NotASource`] if it is none
/// of the kinds (a `.jsonl` file whose first complete lines are no transcript's, a directory
/// with no log, session or transcript under it).
pub fn resolve(path: &Path) -> Result<Vec<Source>, ExportError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ExportError::NoSource {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(ExportError::io("inspect", path, e)),
    };
    let not_a_source = |reason: &str| ExportError::NotASource {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    if meta.is_file() {
        if is_database(path) {
            return Ok(vec![transcript_source(canonical(path)?)]);
        }
        if path.extension().is_none_or(|e| e != "jsonl") {
            return Err(not_a_source("a file that is not a .jsonl transcript"));
        }
        let log = canonical(path)?;
        if probe(&log)? == Probe::Other {
            return Err(not_a_source(
                "its first lines are not those of a Claude Code, Codex, pi, Gemini CLI or Qwen Code transcript",
            ));
        }
        return Ok(vec![transcript_source(log)]);
    }
    if !meta.is_dir() {
        return Err(not_a_source("neither a file nor a directory"));
    }
    let agent_log = path.join("logs").join("events.jsonl");
    if agent_log.is_file() {
        let dir = canonical(path)?;
        let id = dir
            .file_name()
            .map_or_else(|| "/".to_owned(), |n| n.to_string_lossy().into_owned());
        return Ok(vec![Source {
            kind: SourceKind::Agent,
            id,
            log: canonical(&agent_log)?,
        }]);
    }
    // Only a directory with session directories in it can be a store (listing one without
    // would warn about every file).
    let headers = if has_session_dirs(path)? {
        JsonlSource::new(path)
            .list_headers()
            .map_err(|source| ExportError::Store {
                path: path.to_path_buf(),
                source,
            })?
    } else {
        Vec::new()
    };
    if !headers.is_empty() {
        let mut sources = Vec::with_capacity(headers.len());
        for header in headers {
            let log = canonical(&path.join(&header.id).join("events.jsonl"))?;
            sources.push(Source {
                kind: SourceKind::Session,
                id: header.id,
                log,
            });
        }
        sources.sort_by(|a, b| a.id.cmp(&b.id));
        return Ok(sources);
    }
    if path.join("events.jsonl").is_file() {
        return Err(not_a_source(
            "it holds an events.jsonl of its own: pass the agent directory above its logs/, or \
             the session store above a session directory",
        ));
    }
    let transcripts = transcripts_under(path)?;
    if !transcripts.is_empty() {
        return Ok(transcripts);
    }
    Err(not_a_source(
        "no logs/events.jsonl, no sessions (<id>/events.jsonl with a session header), no \
         .jsonl transcripts",
    ))
}

fn canonical(path: &Path) -> Result<PathBuf, ExportError> {
    std::fs::canonicalize(path).map_err(|e| ExportError::io("resolve", path, e))
}

/// Whether `dir` holds a directory with an `events.jsonl`.
fn has_session_dirs(dir: &Path) -> Result<bool, ExportError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ExportError::io("list", dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| ExportError::io("list", dir, e))?.path();
        if path.join("events.jsonl").is_file() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn transcript_source(log: PathBuf) -> Source {
    Source {
        kind: SourceKind::Transcript,
        id: transcript_id(&log),
        log,
    }
}

/// Every transcript under `dir`, found as `agentlog usage` finds them (every `*.jsonl` and
/// `OpenCode` database, in path order); files whose first lines are no transcript's are left
/// out, with a warning.
fn transcripts_under(dir: &Path) -> Result<Vec<Source>, ExportError> {
    let (files, skipped) = discover(&[dir.to_path_buf()]);
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| is_database(f) || read_by_lines(f))
        .collect();
    if let Some(first) = skipped.into_iter().next() {
        // A directory we cannot list would silently drop its transcripts from the dataset.
        return Err(ExportError::Transcript {
            path: first.path,
            source: first.error,
        });
    }
    let mut sources = Vec::new();
    for log in files {
        if is_database(&log) {
            sources.push(transcript_source(log));
            continue;
        }
        if probe(&log)? == Probe::Other {
            tracing::warn!(file = %log.display(), "not a transcript; left out of the export");
            continue;
        }
        sources.push(transcript_source(log));
    }
    Ok(sources)
}

/// The key of a source: 16 hex digits of a 64-bit FNV-1a hash of its kind and log path, so
/// the same log always maps to the same state and file names, even after a state is lost.
pub(crate) fn source_key(kind: SourceKind, log: &Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = kind
        .as_str()
        .bytes()
        .chain([0])
        .chain(log.as_os_str().as_encoded_bytes().iter().copied());
    for b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
