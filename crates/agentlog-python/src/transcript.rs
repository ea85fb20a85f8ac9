//! `agentlog.transcript()`: a Claude Code, Codex or pi transcript's boundaries and token
//! tallies, read in place through its index in the per-user cache.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use agentlog::transcript::{Format, OpenOptions, ReportError, ReportOptions, read_report};

use crate::convert::to_py;
use crate::errors::{internal, transcript_error, transcript_subagents_refused};
use crate::paths::path_arg;

fn format_arg(name: &str) -> PyResult<Option<Format>> {
    match name {
        "auto" => Ok(None),
        "claude-code" => Ok(Some(Format::ClaudeCode)),
        "codex" => Ok(Some(Format::Codex)),
        "pi" => Ok(Some(Format::Pi)),
        "kimi" => Ok(Some(Format::Kimi)),
        other => Err(PyValueError::new_err(format!(
            "format must be 'auto', 'claude-code', 'codex', 'pi' or 'kimi', not {other:?}"
        ))),
    }
}

/// A transcript's compaction boundaries and token tallies, as `agentlog transcript --json`
/// prints them: a dict with `path`, `format`, `boundaries`, `generations` (each `{offset,
/// usage}`), `since_compaction`, `lifetime`, `index_outcome`, `index`, `index_path`,
/// `covered_bytes`, `lines`, `models` and `diagnostics`; with `subagents=True` (Claude Code
/// only) also `lifetime_with_subagents` and `subagents`. `format` is `"auto"` (detected from
/// the first lines), `"claude-code"`, `"codex"`, `"pi"` or `"kimi"`; `index_dir` replaces the cache
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
    let options = ReportOptions {
        open: options,
        subagents,
    };
    match py.detach(|| read_report(&path, &options)) {
        Ok(document) => to_py(py, &document),
        Err(ReportError::Transcript(e)) => Err(transcript_error(py, e)),
        Err(ReportError::NoSubagents { path, format }) => {
            Err(transcript_subagents_refused(py, &path, format))
        }
        Err(e) => Err(internal(py, e.to_string())),
    }
}
