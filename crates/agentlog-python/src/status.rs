//! `agentlog.status()`, its result `Status`, and `agentlog.generations()`.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use agentlog::generation::{
    DEFAULT_REVERSE_SCAN_BYTES, ExpectedFrom, GenerationError, GenerationRequest, GenerationRow,
    StatusReport, Tier, current_generation_at, expected_generation, generations_at,
};
use agentlog::log::LogPaths;

use crate::convert::to_py;
use crate::errors::generation_error;
use crate::paths::{path_arg, type_name};

/// A non-negative int argument (bool refused: `True` is not a generation number).
pub fn count_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int, not {}",
            type_name(value)
        )));
    }
    value.extract::<u64>().map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be an int >= 0 and < 2**64, got {value}"
        ))
    })
}

/// A tier name argument.
pub fn tier_arg(name: Option<&str>) -> PyResult<Option<Tier>> {
    name.map(|n| {
        Tier::parse(n).ok_or_else(|| {
            PyValueError::new_err(format!(
                "tier must be 'index', 'reverse_scan' or 'full_scan', not {n:?}"
            ))
        })
    })
    .transpose()
}

/// A status question.
struct Ask {
    agent_dir: PathBuf,
    log: Option<PathBuf>,
    molt_count: Option<u64>,
    tier: Option<Tier>,
    reverse_scan_bytes: u64,
    trust_legacy_boundaries: bool,
    max_memory_tail: u64,
}

impl Ask {
    /// Answers, without the GIL.
    fn answer(&self) -> Result<StatusReport, GenerationError> {
        let expected = expected_generation(&self.agent_dir, self.molt_count)?;
        let mut request = GenerationRequest::latest();
        request.expected_molt_count = expected.map(|(n, _)| n);
        request.trust_unverifiable_boundaries = self.trust_legacy_boundaries;
        request.reverse_scan_bytes = self.reverse_scan_bytes;
        request.index.max_memory_tail = self.max_memory_tail;
        if let Some(tier) = self.tier {
            request.start_tier = tier;
        }
        let paths = match &self.log {
            Some(log) => LogPaths::for_log_file(log.clone()),
            None => LogPaths::for_agent_dir(&self.agent_dir),
        };
        let current = current_generation_at(&paths, &request)?;
        Ok(StatusReport::new(&self.agent_dir, &current, expected))
    }
}

/// The current generation's totals of the agent in `agent_dir`, as `agentlog status --json`
/// reports them.
///
/// `molt_count` is the generation to expect; without it, `agent_dir/.agent.json` names it; without
/// either, the latest generation is reported as found (`verified` is then False). `tier` is the
/// first tier to try (`"index"`, `"reverse_scan"`, `"full_scan"`); a tier that cannot answer
/// steps down to the next and says why in `stepped_aside`. `log` names the log file when it
/// is not `agent_dir/logs/events.jsonl` (its index is kept beside it).
///
/// Raises `MoltMismatch` when the log does not prove the expected generation, `NoLog` when
/// there is no log, `ManifestError` for an unusable `.agent.json`. The GIL is released while
/// the log and index are read.
// One argument per Python parameter: the keyword-only options mirror the CLI's flags.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (
    agent_dir,
    molt_count = None,
    tier = None,
    *,
    log = None,
    reverse_scan_bytes = DEFAULT_REVERSE_SCAN_BYTES,
    trust_legacy_boundaries = false,
    max_memory_tail = agentlog::index::DEFAULT_MAX_MEMORY_TAIL,
))]
pub fn status(
    py: Python<'_>,
    agent_dir: &Bound<'_, PyAny>,
    molt_count: Option<&Bound<'_, PyAny>>,
    tier: Option<&str>,
    log: Option<&Bound<'_, PyAny>>,
    reverse_scan_bytes: u64,
    trust_legacy_boundaries: bool,
    max_memory_tail: u64,
) -> PyResult<Status> {
    let ask = Ask {
        agent_dir: path_arg(agent_dir, "agent_dir")?,
        log: log.map(|l| path_arg(l, "log")).transpose()?,
        molt_count: molt_count.map(|m| count_arg(m, "molt_count")).transpose()?,
        tier: tier_arg(tier)?,
        reverse_scan_bytes,
        trust_legacy_boundaries,
        max_memory_tail,
    };
    match py.detach(|| ask.answer()) {
        Ok(report) => Ok(Status { report }),
        Err(e) => Err(generation_error(py, e)),
    }
}

/// `status()`, with the very same parameters, that also returns the seconds spent in the Rust
/// call it wraps, measured inside the binding: the benchmark subtracts them from the whole
/// call to get the binding's own cost per call without comparing two separate, noisy runs.
// The same parameters as `status`, so that PyO3 parses the same argument list.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (
    agent_dir,
    molt_count = None,
    tier = None,
    *,
    log = None,
    reverse_scan_bytes = DEFAULT_REVERSE_SCAN_BYTES,
    trust_legacy_boundaries = false,
    max_memory_tail = agentlog::index::DEFAULT_MAX_MEMORY_TAIL,
))]
pub fn _status_timed(
    py: Python<'_>,
    agent_dir: &Bound<'_, PyAny>,
    molt_count: Option<&Bound<'_, PyAny>>,
    tier: Option<&str>,
    log: Option<&Bound<'_, PyAny>>,
    reverse_scan_bytes: u64,
    trust_legacy_boundaries: bool,
    max_memory_tail: u64,
) -> PyResult<(Status, f64)> {
    let ask = Ask {
        agent_dir: path_arg(agent_dir, "agent_dir")?,
        log: log.map(|l| path_arg(l, "log")).transpose()?,
        molt_count: molt_count.map(|m| count_arg(m, "molt_count")).transpose()?,
        tier: tier_arg(tier)?,
        reverse_scan_bytes,
        trust_legacy_boundaries,
        max_memory_tail,
    };
    let (answer, inner) = py.detach(|| {
        let started = std::time::Instant::now();
        let answer = ask.answer();
        (answer, started.elapsed().as_secs_f64())
    });
    match answer {
        Ok(report) => Ok((Status { report }, inner)),
        Err(e) => Err(generation_error(py, e)),
    }
}

/// The Rust call `status(agent_dir, molt_count)` makes, run `calls` times in a loop that never
/// returns to Python (the GIL released throughout): the seconds of each call, answer dropped
/// included. The benchmark compares them with `status()` timed from Python in the same
/// process, so both sides share the process's state and the log's cache.
#[pyfunction]
#[pyo3(signature = (agent_dir, molt_count = None, calls = 1))]
pub fn _status_loop(
    py: Python<'_>,
    agent_dir: &Bound<'_, PyAny>,
    molt_count: Option<&Bound<'_, PyAny>>,
    calls: usize,
) -> PyResult<Vec<f64>> {
    let ask = Ask {
        agent_dir: path_arg(agent_dir, "agent_dir")?,
        log: None,
        molt_count: molt_count.map(|m| count_arg(m, "molt_count")).transpose()?,
        tier: None,
        reverse_scan_bytes: DEFAULT_REVERSE_SCAN_BYTES,
        trust_legacy_boundaries: false,
        max_memory_tail: agentlog::index::DEFAULT_MAX_MEMORY_TAIL,
    };
    let timed = py.detach(|| {
        let mut seconds = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = std::time::Instant::now();
            let answer = std::hint::black_box(ask.answer())?;
            drop(answer);
            seconds.push(started.elapsed().as_secs_f64());
        }
        Ok(seconds)
    });
    timed.map_err(|e| generation_error(py, e))
}

/// The answer of `agentlog.status()`: immutable; its attributes are the fields of
/// `agentlog status --json`, and `to_dict()` returns that document.
#[pyclass(module = "agentlog", frozen)]
pub struct Status {
    pub report: StatusReport,
}

#[pymethods]
impl Status {
    /// The agent directory as given.
    #[getter]
    fn agent_dir(&self) -> &str {
        &self.report.agent_dir
    }
    /// The tier that answered: `"index"`, `"reverse_scan"` or `"full_scan"`.
    #[getter]
    fn tier(&self) -> &'static str {
        self.report.tier
    }
    /// The generation of these totals (None if the latest boundary carries no valid `molt_count`
    /// and none was expected).
    #[getter]
    fn molt_count(&self) -> Option<u64> {
        self.report.molt_count
    }
    /// Whether the log proves the label.
    #[getter]
    fn verified(&self) -> bool {
        self.report.verified
    }
    /// The generation asked for (argument or manifest), if any.
    #[getter]
    fn expected_molt_count(&self) -> Option<u64> {
        self.report.expected_molt_count
    }
    /// "flag" (the argument), "manifest" (.agent.json) or None.
    #[getter]
    fn expected_from(&self) -> Option<&'static str> {
        self.report.expected_from.map(|f| match f {
            ExpectedFrom::Flag => "flag",
            ExpectedFrom::Manifest => "manifest",
        })
    }
    /// Sum of `input_tokens` since the boundary (cached tokens included).
    #[getter]
    fn input_tokens(&self) -> u128 {
        self.report.input_tokens
    }
    /// Sum of `output_tokens` since the boundary.
    #[getter]
    fn output_tokens(&self) -> u128 {
        self.report.output_tokens
    }
    /// Sum of `cached_tokens` since the boundary.
    #[getter]
    fn cached_tokens(&self) -> u128 {
        self.report.cached_tokens
    }
    /// Sum of `thinking_tokens` since the boundary.
    #[getter]
    fn thinking_tokens(&self) -> u128 {
        self.report.thinking_tokens
    }
    /// Token events (`llm_response`) since the boundary.
    #[getter]
    fn api_calls(&self) -> u64 {
        self.report.api_calls
    }
    /// Byte offset of the boundary line (None: the agent never molted).
    #[getter]
    fn boundary_offset(&self) -> Option<u64> {
        self.report.boundary_offset
    }
    /// "agent", "system", ... or "boot" without a boundary.
    #[getter]
    fn boundary_initiator(&self) -> &str {
        &self.report.boundary_initiator
    }
    /// The boundary's timestamp in seconds since the epoch, if readable.
    #[getter]
    fn boundary_ts(&self) -> Option<f64> {
        self.report.boundary_ts
    }
    /// The boundary's own valid `molt_count`, if it has one.
    #[getter]
    fn boundary_molt_count(&self) -> Option<u64> {
        self.report.boundary_molt_count
    }
    /// What opening the index did (`"fresh"`, `"caught_up"`, `"rebuilt"`, ...), when it was tried.
    #[getter]
    fn index_outcome(&self) -> Option<&'static str> {
        self.report.index_outcome
    }
    /// The index outcome with its details (a dict), when the index was tried.
    #[getter]
    fn index(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.report.index)
    }
    /// Tiers that could not answer first, and why: a list of {"tier", "reason"} dicts.
    #[getter]
    fn stepped_aside(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.report.stepped_aside)
    }
    /// Bytes of the log the answering tier read.
    #[getter]
    fn bytes_read(&self) -> u64 {
        self.report.bytes_read
    }
    /// Odd lines and values met (a dict of counters and the first invalid offsets).
    #[getter]
    fn diagnostics(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.report.diagnostics)
    }
    /// The `agentlog status --json` document as a dict (a new dict each call).
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.report)
    }
    fn __repr__(&self) -> String {
        let r = &self.report;
        format!(
            "Status(tier={:?}, molt_count={}, verified={}, api_calls={}, input_tokens={}, \
             output_tokens={}, cached_tokens={}, thinking_tokens={})",
            r.tier,
            r.molt_count.map_or("None".to_owned(), |n| n.to_string()),
            if r.verified { "True" } else { "False" },
            r.api_calls,
            r.input_tokens,
            r.output_tokens,
            r.cached_tokens,
            r.thinking_tokens
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Status>()
            .is_ok_and(|o| o.get().report == self.report)
    }
    fn __hash__(&self) -> u64 {
        // Equal reports have equal totals; the fields below are enough to spread them.
        let r = &self.report;
        let mut h = DefaultHasher::new();
        (r.api_calls, r.bytes_read, r.input_tokens, r.boundary_offset).hash(&mut h);
        h.finish()
    }
}

/// Every generation of the agent's log, oldest first, as `agentlog generations --json`
/// lists them: a list of dicts (`generation`, `molt_count`, `boundary_offset`,
/// `boundary_initiator`, `boundary_ts` and the token totals). Raises `NoLog` when there is no log. The GIL is
/// released while the log and index are read.
#[pyfunction]
pub fn generations(py: Python<'_>, agent_dir: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let dir = path_arg(agent_dir, "agent_dir")?;
    let found = py.detach(|| {
        generations_at(&LogPaths::for_agent_dir(&dir), &GenerationRequest::latest()).map(|g| {
            g.generations
                .iter()
                .map(GenerationRow::from)
                .collect::<Vec<_>>()
        })
    });
    match found {
        Ok(rows) => to_py(py, &rows),
        Err(e) => Err(generation_error(py, e)),
    }
}
