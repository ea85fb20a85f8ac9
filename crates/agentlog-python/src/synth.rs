//! `agentlog.write_synthetic_log()`: realistic lingtai-shaped logs for tests, benchmarks and
//! notebooks, written by the Rust generator (fast, deterministic, with its own answer key).

use std::io::{BufWriter, Write};

use pyo3::exceptions::{PyFileExistsError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use agentlog::log::LogPaths;
use agentlog::synth::{SynthOptions, responses_for_bytes, write_lingtai_log};

use crate::paths::path_arg;

/// Writes a synthetic agent directory: `agent_dir/logs/events.jsonl` with `responses`
/// `llm_response` events (or about `target_bytes` bytes) in several generations, and
/// `agent_dir/.agent.json` naming the last one. Returns the answer key: lines, bytes,
/// `molt_count`, `api_calls_since_molt`, `input_tokens_since_molt`. The output is a pure function of
/// the arguments. Refuses (`FileExistsError`) to replace an existing log.
#[pyfunction]
#[pyo3(signature = (agent_dir, *, responses = None, target_bytes = None, seed = 42))]
pub fn write_synthetic_log(
    py: Python<'_>,
    agent_dir: &Bound<'_, PyAny>,
    responses: Option<u64>,
    target_bytes: Option<u64>,
    seed: u64,
) -> PyResult<Py<PyAny>> {
    let dir = path_arg(agent_dir, "agent_dir")?;
    let responses = match (responses, target_bytes) {
        (Some(n), None) => n,
        (None, Some(bytes)) => responses_for_bytes(bytes),
        (None, None) => SynthOptions::default().responses,
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "give responses or target_bytes, not both",
            ));
        }
    };
    let options = SynthOptions {
        seed,
        responses,
        ..SynthOptions::default()
    };
    let paths = LogPaths::for_agent_dir(&dir);
    if paths.log.exists() {
        return Err(PyFileExistsError::new_err(format!(
            "{} exists; write_synthetic_log only creates new logs",
            paths.log.display()
        )));
    }
    let written = py.detach(|| -> std::io::Result<_> {
        if let Some(parent) = paths.log.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&paths.log)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let summary = write_lingtai_log(&mut out, &options)?;
        out.flush()?;
        std::fs::write(
            dir.join(".agent.json"),
            format!("{{\"molt_count\": {}}}\n", summary.molt_count),
        )?;
        Ok(summary)
    });
    let summary = written.map_err(|e| PyOSError::new_err(format!("cannot write the log: {e}")))?;
    let dict = PyDict::new(py);
    dict.set_item("lines", summary.lines)?;
    dict.set_item("bytes", summary.bytes)?;
    dict.set_item("molt_count", summary.molt_count)?;
    dict.set_item("api_calls_since_molt", summary.api_calls_since_molt)?;
    dict.set_item("input_tokens_since_molt", summary.input_tokens_since_molt)?;
    Ok(dict.into_any().unbind())
}
