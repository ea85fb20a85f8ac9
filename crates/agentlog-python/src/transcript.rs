//! `agentlog.transcript()`: a Claude Code, Codex or pi transcript's boundaries and token
//! tallies, read in place through its index in the per-user cache.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use agentlog::transcript::{Format, OpenOptions, TranscriptError, open, report, with_subagents};

use crate::convert::to_py;
use crate::errors::{transcript_error, transcript_subagents_refused};
use crate::paths::path_arg;

fn format_arg(name: &str) -> PyResult<Option<Format>> {
    match name {
        "auto" => Ok(None),
        "claude-code" => Ok(Some(Format::ClaudeCode)),
        "codex" => Ok(Some(Format::Codex)),
        "pi" => Ok(Some(Format::Pi)),
        other => Err(PyValueError::new_err(format!(
            "format must be 'auto', 'claude-code', 'codex' or 'pi', not {other:?}"
        ))),
    }
}

/// Why a call gives no document.
enum Refused {
    Read(TranscriptError),
    /// `subagents` asked of a transcript that is not Claude Code's: its format.
    Subagents(Format),
}

/// A transcript's compaction boundaries and token tallies, as `agentlog transcript --json`
/// prints them: a dict with `path`, `format`, `boundaries`, `generations` (each `{offset,
/// usage}`), `since_compaction`, `lifetime`, `index_outcome`, `index`, `index_path`,
/// `covered_bytes`, `lines`, `models` and `diagnostics`; with `subagents=True` (Claude Code
/// only) also `lifetime_with_subagents` and `subagents`. `format` is `"auto"` (detected from
/// the first lines), `"claude-code"`, `"codex"` or `"pi"`; `index_dir` replaces the cache
/// directory. The transcript is never written to, nor anything beside it. Raises
/// `NoTranscript`, `EmptyTranscript`, `UnknownFormat` or `TranscriptError`. The GIL is released
/// while the transcript and its index are read.
#[pyfunction]
#[pyo3(signature = (path, *, format = "auto", subagents = false, index_dir = None))]
pub fn transcript(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    format: &str,
    subagents: bool,
    index_dir: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let path = path_arg(path, "path")?;
    let options = OpenOptions {
        format: format_arg(format)?,
        index_dir: index_dir.map(|d| path_arg(d, "index_dir")).transpose()?,
        ..OpenOptions::default()
    };
    let answer = py.detach(|| {
        if subagents {
            let found = with_subagents(&path, &options).map_err(Refused::Read)?;
            if found.main.format != Format::ClaudeCode {
                return Err(Refused::Subagents(found.main.format));
            }
            Ok(report(&found.main, Some(&found)))
        } else {
            let transcript = open(&path, &options).map_err(Refused::Read)?;
            Ok(report(&transcript, None))
        }
    });
    match answer {
        Ok(document) => to_py(py, &document),
        Err(Refused::Read(e)) => Err(transcript_error(py, e)),
        Err(Refused::Subagents(found)) => Err(transcript_subagents_refused(py, &path, found)),
    }
}
