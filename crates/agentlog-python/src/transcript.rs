//! `agentlog.transcript()`: a Claude Code, Codex, pi, Gemini CLI or Qwen Code transcript's
//! boundaries and token tallies, read in place through its index in the per-user cache.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use agentlog::transcript::{Format, OpenOptions, ReportError, ReportOptions};

use crate::convert::to_py;
use crate::errors::{internal, transcript_error, transcript_subagents_refused};
use crate::paths::path_arg;

fn format_arg(name: &str) -> PyResult<Option<Format>> {
    match name {
        "auto" => Ok(None),
        "claude-code" => Ok(Some(Format::ClaudeCode)),
        "codex" => Ok(Some(Format::Codex)),
        "pi" => Ok(Some(Format::Pi)),
        "copilot" => Ok(Some(Format::Copilot)),
        "gemini" => Ok(Some(Format::Gemini)),
        "qwen" => Ok(Some(Format::Qwen)),
        "kimi" => Ok(Some(Format::Kimi)),
        other => Err(PyValueError::new_err(format!(
            "format must be 'auto' or an agent's name ('claude-code', 'codex', 'pi', 'gemini', 'qwen', 'copilot', ...), not {other:?}"
        ))),
    }
}

/// A transcript's compaction boundaries and token tallies, as `agentlog transcript --json`
/// prints them: a dict with `path`, `format`, `boundaries`, `generations` (each `{offset,
/// usage}`), `since_compaction`, `lifetime`, `index_outcome`, `index`, `index_path`,
/// `covered_bytes`, `lines`, `models` and `diagnostics`; with `subagents=True` (Claude Code
/// only) also `lifetime_with_subagents` and `subagents`. `format` is `"auto"` (detected from
/// the first lines) or an agent's name as `--format` takes it; `index_dir` replaces the cache
/// directory. A transcript whose file is gone is read from the archive (`from_archive` is then
/// the version read; `None` otherwise) unless `archive=False`. The transcript is never written
/// to, nor anything beside it. Raises
/// `NoTranscript`, `EmptyTranscript`, `UnknownFormat` or `TranscriptError`. The GIL is released
/// while the transcript and its index are read.
#[pyfunction]
#[pyo3(signature = (path, *, format = "auto", subagents = false, index_dir = None, archive = true))]
pub fn transcript(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    format: &str,
    subagents: bool,
    index_dir: Option<&Bound<'_, PyAny>>,
    archive: bool,
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
    let archive_dir = archive
        .then(|| agentlog::archive::default_archive_dir().ok())
        .flatten();
    match py.detach(|| agentlog::archive::report(&path, &options, archive_dir.as_deref())) {
        Ok(document) => to_py(py, &document),
        Err(ReportError::Transcript(e)) => Err(transcript_error(py, e)),
        Err(ReportError::NoSubagents { path, format }) => {
            Err(transcript_subagents_refused(py, &path, format))
        }
        Err(e) => Err(internal(py, e.to_string())),
    }
}
