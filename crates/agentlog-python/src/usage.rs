//! `agentlog.usage()` and `agentlog.statusline()`: the library's usage report and status line,
//! with every argument parsed by the library's own parsers. The typed objects are built from
//! these documents by `python/agentlog/_reports.py`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use agentlog::transcript::{
    OpenOptions, PriceTable, StatusOptions, UsageOptions, parse_agent, parse_cost_mode, parse_day,
    parse_group_by, parse_status_input, parse_timezone, statusline as status_line,
};

use crate::convert::to_py;
use crate::errors::{invalid_argument, pricing_error, transcript_error};
use crate::paths::{path_arg, type_name};

/// `paths`: None (the agents' default places), one path, or a list or tuple of paths.
fn paths_arg(paths: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<PathBuf>> {
    let Some(paths) = paths else {
        return Ok(Vec::new());
    };
    if paths.is_instance_of::<PyList>() || paths.is_instance_of::<PyTuple>() {
        paths.try_iter()?.map(|p| path_arg(&p?, "paths")).collect()
    } else {
        Ok(vec![path_arg(paths, "paths")?])
    }
}

/// The price file `pricing` names, or the embedded table.
fn prices(py: Python<'_>, pricing: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<PriceTable>> {
    match pricing {
        None => Ok(PriceTable::embedded()),
        Some(p) => {
            let path = path_arg(p, "pricing")?;
            PriceTable::load(&path)
                .map(Arc::new)
                .map_err(|e| pricing_error(py, &path, &e))
        }
    }
}

/// The usage report, as `agentlog usage --json` prints it (a dict).
#[pyfunction]
#[pyo3(signature = (paths = None, *, by = "day", since = None, until = None, timezone = None,
    cost = "auto", pricing = None, index_dir = None, snapshot = true, agent = None,
    archive = true))]
#[allow(clippy::too_many_arguments)]
pub fn _usage(
    py: Python<'_>,
    paths: Option<&Bound<'_, PyAny>>,
    by: &str,
    since: Option<&str>,
    until: Option<&str>,
    timezone: Option<&str>,
    cost: &str,
    pricing: Option<&Bound<'_, PyAny>>,
    index_dir: Option<&Bound<'_, PyAny>>,
    snapshot: bool,
    agent: Option<Vec<String>>,
    archive: bool,
) -> PyResult<Py<PyAny>> {
    let day = |name: &str, text: Option<&str>| {
        text.map(|t| parse_day(t).map_err(|e| invalid_argument(py, name, &e)))
            .transpose()
    };
    let options = UsageOptions {
        open: OpenOptions {
            index_dir: index_dir.map(|d| path_arg(d, "index_dir")).transpose()?,
            ..OpenOptions::default()
        },
        by: parse_group_by(by).map_err(|e| invalid_argument(py, "by", &e))?,
        since: day("since", since)?,
        until: day("until", until)?,
        timezone: parse_timezone(timezone).map_err(|e| invalid_argument(py, "timezone", &e))?,
        cost: parse_cost_mode(cost).map_err(|e| invalid_argument(py, "cost", &e))?,
        prices: prices(py, pricing)?,
        snapshot,
        agents: agent
            .unwrap_or_default()
            .iter()
            .map(|name| parse_agent(name).map_err(|e| invalid_argument(py, "agent", &e)))
            .collect::<PyResult<_>>()?,
        ..UsageOptions::default()
    };
    let paths = paths_arg(paths)?;
    // As the CLI: the archive in the data directory too, unless `archive=False`.
    let archive_dir = archive
        .then(|| agentlog::archive::default_archive_dir().ok())
        .flatten();
    let answer = py
        .detach(|| agentlog::archive::usage(&paths, &options, archive_dir.as_deref(), &|_, _| {}));
    to_py(py, &answer)
}

/// The status line of the JSON Claude Code passes (`str` or `bytes`): `(figures, line)`, the
/// figures as `agentlog statusline --json` prints them and the line as it prints it, plus a
/// formatter (`StatusFormatter`) for `--format` templates.
#[pyfunction]
#[pyo3(signature = (input_json, *, index_dir = None, pricing = None, timezone = None))]
pub fn _statusline(
    py: Python<'_>,
    input_json: &Bound<'_, PyAny>,
    index_dir: Option<&Bound<'_, PyAny>>,
    pricing: Option<&Bound<'_, PyAny>>,
    timezone: Option<&str>,
) -> PyResult<(Py<PyAny>, String, StatusFormatter)> {
    let bytes: Vec<u8> = if let Ok(s) = input_json.cast::<PyString>() {
        s.extract::<String>()?.into_bytes()
    } else if let Ok(b) = input_json.cast::<PyBytes>() {
        b.as_bytes().to_vec()
    } else {
        return Err(PyTypeError::new_err(format!(
            "input_json must be a str or bytes, not {}",
            type_name(input_json)
        )));
    };
    let input = parse_status_input(&bytes).map_err(|e| invalid_argument(py, "input_json", &e))?;
    let options = StatusOptions {
        index_dir: index_dir.map(|d| path_arg(d, "index_dir")).transpose()?,
        now: None,
        timezone: Some(parse_timezone(timezone).map_err(|e| invalid_argument(py, "timezone", &e))?),
        prices: pricing.map(|p| prices(py, Some(p))).transpose()?,
    };
    let line = py
        .detach(|| status_line(&input, &options))
        .map_err(|e| transcript_error(py, e))?;
    Ok((to_py(py, &line)?, line.line(), StatusFormatter(line)))
}

/// A status line kept on the Rust side, so `StatusLine.format(template)` is the library's own
/// `--format`.
#[pyclass(frozen, module = "agentlog._agentlog")]
pub struct StatusFormatter(agentlog::transcript::StatusLine);

#[pymethods]
impl StatusFormatter {
    /// `template` with each `{name}` replaced by the figure of that name, as
    /// `agentlog statusline --format TEMPLATE` prints it.
    fn format(&self, template: &str) -> String {
        self.0.format(template)
    }
}
