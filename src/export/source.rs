//! What a SOURCE argument names: an agent directory (one log), a session store (one log per
//! session), or a transcript. Anything else is an error, never an empty source.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ExportError;
use crate::query::{JsonlSource, PersistedSource};

/// The kinds of log an export reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceKind {
    /// A lingtai agent directory's `logs/events.jsonl`.
    Agent,
    /// One session of a dsh-style session store.
    Session,
    /// A Claude Code, Codex or pi transcript.
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

/// The logs a SOURCE argument names.
///
/// # Errors
///
/// [`ExportError::NoSource`] if `path` does not exist, [`ExportError::NotASource`] if it is none
/// of the kinds, [`ExportError::Unsupported`] for a transcript (not readable by this build yet).
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
        return if path.extension().is_some_and(|e| e == "jsonl") {
            Err(ExportError::Unsupported {
                path: path.to_path_buf(),
                what: "a transcript file".to_owned(),
            })
        } else {
            Err(not_a_source("a file that is not a .jsonl transcript"))
        };
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
    let headers = JsonlSource::new(path)
        .list_headers()
        .map_err(|source| ExportError::Store {
            path: path.to_path_buf(),
            source,
        })?;
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
    if has_jsonl(path)? {
        return Err(ExportError::Unsupported {
            path: path.to_path_buf(),
            what: "a transcript directory".to_owned(),
        });
    }
    Err(not_a_source(
        "no logs/events.jsonl, no sessions (<id>/events.jsonl with a session header), no \
         .jsonl transcripts",
    ))
}

fn canonical(path: &Path) -> Result<PathBuf, ExportError> {
    std::fs::canonicalize(path).map_err(|e| ExportError::io("resolve", path, e))
}

/// Whether `dir` holds a `.jsonl` file, directly or one level down (transcript layouts).
fn has_jsonl(dir: &Path) -> Result<bool, ExportError> {
    let is_jsonl = |p: &Path| p.extension().is_some_and(|e| e == "jsonl") && p.is_file();
    let entries = std::fs::read_dir(dir).map_err(|e| ExportError::io("list", dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| ExportError::io("list", dir, e))?.path();
        if is_jsonl(&path) {
            return Ok(true);
        }
        if path.is_dir()
            && let Ok(inner) = std::fs::read_dir(&path)
            && inner.flatten().any(|e| is_jsonl(&e.path()))
        {
            return Ok(true);
        }
    }
    Ok(false)
}
