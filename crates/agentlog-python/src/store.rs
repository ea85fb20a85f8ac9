//! `agentlog.Store`: read queries over a directory of dsh-style session logs.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use agentlog::query::{
    EventFilter, LineageResolution, QueryConfig, QueryError, QueryService, SessionLineageNode,
    SessionLineageTrace, Store as RustStore, StoreConfig, SurfaceClass, WindowRequest,
    select_events, session_summary_json,
};
use agentlog::search::{
    EventSearchRequest, MatchMode, SearchConfig, SearchIndex, SessionSearchRequest,
};

use crate::convert::to_py;
use crate::errors::{no_store, query_error, search_error};
use crate::paths::path_arg;
use crate::status::count_arg;

/// A session store, `root/<session-id>/events.jsonl`, opened for reading.
///
/// Every method returns plain dicts and lists shaped exactly as the matching CLI command's
/// `--json` output (camelCase field names, as dsh writes them), reads each session through its
/// index, and releases the GIL while it does. A `Store` may be shared by threads. Raises
/// `NoStore` when `root` is not a directory.
#[pyclass(module = "agentlog", frozen)]
pub struct Store {
    inner: RustStore,
}

fn surface_name(name: &str) -> PyResult<SurfaceClass> {
    match name {
        "current" => Ok(SurfaceClass::Current),
        "shadowed" => Ok(SurfaceClass::Shadowed),
        "log-only" | "log_only" => Ok(SurfaceClass::LogOnly),
        other => Err(PyValueError::new_err(format!(
            "surface must be 'current', 'shadowed' or 'log-only', not {other:?}"
        ))),
    }
}

fn surface_arg(name: Option<&str>) -> PyResult<Option<SurfaceClass>> {
    name.map(surface_name).transpose()
}

fn match_arg(name: &str) -> PyResult<MatchMode> {
    match name {
        "phrase" => Ok(MatchMode::Phrase),
        "all" => Ok(MatchMode::All),
        other => Err(PyValueError::new_err(format!(
            "match must be 'phrase' or 'all', not {other:?}"
        ))),
    }
}

/// The `types` and `surfaces` of a search as the query layer's event filters (any of a list matches).
fn search_filters(
    types: Option<&Bound<'_, PyAny>>,
    surfaces: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<EventFilter>> {
    let mut filters = Vec::new();
    let types = types_arg(types)?;
    if !types.is_empty() {
        filters.push(EventFilter::Type { values: types });
    }
    let surfaces = types_arg(surfaces)?
        .iter()
        .map(|name| surface_name(name))
        .collect::<PyResult<Vec<SurfaceClass>>>()?;
    if !surfaces.is_empty() {
        filters.push(EventFilter::Surface { values: surfaces });
    }
    Ok(filters)
}

fn types_arg(types: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(types) = types else {
        return Ok(Vec::new());
    };
    if let Ok(one) = types.extract::<String>() {
        return Ok(vec![one]);
    }
    let mut out = Vec::new();
    for item in types.try_iter()? {
        out.push(item?.extract::<String>()?);
    }
    Ok(out)
}

/// How long a query waits for a session index that another opener is building.
///
/// The query layer does not wait itself yet: two first queries of a session on a cold store can
/// meet its index mid-build and fail with `persistence_failed`. This wait (and
/// `index_being_built`) can go once `IndexedSource` waits such a builder out on its own.
const BUILD_WAIT: Duration = Duration::from_secs(30);

/// Whether `error` comes from a session index another opener holds while building it: a
/// first query of one session from several threads at once meets this, and it passes.
fn index_being_built(error: &QueryError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(
            agentlog::index::IndexError::Unavailable { .. }
            | agentlog::index::IndexError::Busy { .. },
        ) = e.downcast_ref::<agentlog::index::IndexError>()
        {
            return true;
        }
        source = e.source();
    }
    false
}

impl Store {
    /// Runs `f` on a query service, without the GIL; waits out a session index being built.
    fn query<T: Send>(
        &self,
        py: Python<'_>,
        f: impl Fn(&QueryService<'_>) -> Result<T, QueryError> + Send + Sync,
    ) -> PyResult<T> {
        py.detach(|| {
            let started = Instant::now();
            loop {
                let service = QueryService::new(&self.inner, QueryConfig::default())?;
                match f(&service) {
                    Err(e) if index_being_built(&e) && started.elapsed() < BUILD_WAIT => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    result => return result,
                }
            }
        })
        .map_err(|e| query_error(py, e))
    }
}

#[pymethods]
impl Store {
    #[new]
    fn new(py: Python<'_>, root: &Bound<'_, PyAny>) -> PyResult<Store> {
        let root = path_arg(root, "root")?;
        if !py.detach(|| root.is_dir()) {
            return Err(no_store(py, &root));
        }
        let opened = py.detach(|| RustStore::open(&root, StoreConfig::default()));
        match opened {
            Ok(inner) => Ok(Store { inner }),
            Err(e) => Err(query_error(py, e)),
        }
    }

    /// The sessions, newest first: dicts with id, createdAt, parentSession, cwd, live,
    /// persisted (`agentlog sessions --json`).
    fn sessions(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        #[expect(
            clippy::redundant_closure_for_method_calls,
            reason = "the method's path fixes one lifetime of the service; `query` needs any"
        )]
        let records = self.query(py, |s| s.list_sessions())?;
        let rows: Vec<_> = records.iter().map(session_summary_json).collect();
        to_py(py, &rows)
    }

    /// A session's events: dicts with seq, type, time, surface (`agentlog events --json`).
    /// `types` (a str or an iterable of str) keeps those types and reads only them through the
    /// index; `surface` ("current", "shadowed", "log-only") and `text` (contained, ignoring
    /// case and whitespace width) filter further.
    #[pyo3(signature = (session, *, types = None, surface = None, text = None))]
    fn events(
        &self,
        py: Python<'_>,
        session: &str,
        types: Option<&Bound<'_, PyAny>>,
        surface: Option<&str>,
        text: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let types = types_arg(types)?;
        let surface = surface_arg(surface)?;
        let text = text.map(str::to_owned);
        let rows = self.query(py, |s| {
            select_events(s, session, &types, surface, text.as_deref())
        })?;
        to_py(py, &rows)
    }

    /// One event with up to `before` and `after` neighbours (at most 50 each):
    /// {session, target, events, startSeq, endSeq} (`agentlog read --json`).
    #[pyo3(signature = (session, seq, *, before = None, after = None))]
    fn read(
        &self,
        py: Python<'_>,
        session: &str,
        seq: &Bound<'_, PyAny>,
        before: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let before = before.map(|b| count_arg(b, "before")).transpose()?;
        let after = after.map(|a| count_arg(a, "after")).transpose()?;
        let request = WindowRequest::new(session, count_arg(seq, "seq")?)
            .with_neighbours(before.unwrap_or(0), after.unwrap_or(0));
        let window = self.query(py, |s| s.read_event(&request))?;
        to_py(py, &window)
    }

    /// A session's lineage as a tree (`agentlog trace-session --json`): {target, ancestors,
    /// descendants, complete, root} or {target, ancestors, descendants, complete: False,
    /// unresolvedParentId}; `ancestors` run from the immediate parent up, each descendant is
    /// {session, descendants: [...]}, and every session a {header, live, persisted} record.
    fn trace_session(&self, py: Python<'_>, session: &str) -> PyResult<Py<PyAny>> {
        let trace = self.query(py, |s| s.trace_session(session))?;
        lineage_to_py(py, &trace)
    }

    /// How one event relates to others: {target, replacedBy?, replacementChain,
    /// replacedEventSeqs, sourceEventSeqs, derivedEventSeqs} (`agentlog trace-event --json`).
    fn trace_event(
        &self,
        py: Python<'_>,
        session: &str,
        seq: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let seq = count_arg(seq, "seq")?;
        let trace = self.query(py, |s| s.trace_event(session, seq))?;
        to_py(py, &trace)
    }

    /// Full-text search (`agentlog search --json`); docs/SEARCH.md has the rules.
    ///
    /// Without `session`, each matching session once with its best event: {hits: [{header,
    /// live, persisted, bestMatch}], nextCursor?, unreadable: [{sessionId, error, message}]};
    /// with `session`, that session's matching events: {session, hits, nextCursor?}. A hit is
    /// {sessionId, seq, type, time, surface, snippet}. `query` is one phrase (case and accents
    /// ignored), or with `match="all"` every word in any order; `types` and `surfaces` (a str
    /// or an iterable of str) keep those events; `limit` is 1 to 100 (default 20); `cursor` is
    /// the previous page's `nextCursor` for this very request. Each call catches the index in
    /// `root/.agentlog-search/` up with the logs first, as one CLI run does. A bad request
    /// raises `InvalidQuery` (`InvalidCursor`, `StaleCursor`) or `SessionNotFound`.
    #[pyo3(signature = (
        query, *, session = None, types = None, surfaces = None, limit = None, cursor = None,
        r#match = "phrase"
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "one Python keyword argument each, as the CLI has one flag each"
    )]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        session: Option<String>,
        types: Option<&Bound<'_, PyAny>>,
        surfaces: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
        cursor: Option<String>,
        r#match: &str,
    ) -> PyResult<Py<PyAny>> {
        let filters = search_filters(types, surfaces)?;
        let limit = limit.map(|l| count_arg(l, "limit")).transpose()?;
        let mode = match_arg(r#match)?;
        let store = &self.inner;
        if let Some(session_id) = session {
            let request = EventSearchRequest {
                session_id,
                query,
                filters,
                limit,
                cursor,
                mode,
            };
            let page = py.detach(|| {
                SearchIndex::new(store, SearchConfig::default()).search_events(&request)
            });
            page.map_err(|e| search_error(py, e))
                .and_then(|page| to_py(py, &page))
        } else {
            let request = SessionSearchRequest {
                query,
                session_filters: Vec::new(),
                event_filters: filters,
                limit,
                cursor,
                mode,
            };
            let page = py.detach(|| {
                SearchIndex::new(store, SearchConfig::default()).search_sessions(&request)
            });
            page.map_err(|e| search_error(py, e))
                .and_then(|page| to_py(py, &page))
        }
    }

    /// The store directory.
    #[getter]
    fn root(&self) -> std::path::PathBuf {
        self.inner.root().to_path_buf()
    }

    fn __repr__(&self) -> String {
        format!("Store({:?})", self.inner.root().display().to_string())
    }
}

/// The document `SessionLineageTrace::write_json` writes, as Python objects, keys in its order.
///
/// Built here rather than by parsing that JSON: Python's `json` module recurses in C and
/// refuses a lineage a few hundred sessions deep, and serde values recurse as well. Sessions
/// go through the same `Serialize` as in the JSON; the tests compare the two documents.
fn lineage_to_py(py: Python<'_>, trace: &SessionLineageTrace) -> PyResult<Py<PyAny>> {
    let out = PyDict::new(py);
    out.set_item("target", to_py(py, &trace.target)?)?;
    out.set_item("ancestors", to_py(py, &trace.ancestors)?)?;
    out.set_item("descendants", lineage_nodes_to_py(py, &trace.descendants)?)?;
    match &trace.resolution {
        LineageResolution::Complete { root } => {
            out.set_item("complete", true)?;
            out.set_item("root", to_py(py, root)?)?;
        }
        LineageResolution::Unresolved {
            unresolved_parent_id,
        } => {
            out.set_item("complete", false)?;
            out.set_item("unresolvedParentId", unresolved_parent_id)?;
        }
    }
    Ok(out.into_any().unbind())
}

/// `nodes` as a list of {session, descendants}, depth first with a stack of sibling iterators
/// (one per open level, not one call frame), so any depth builds in constant stack space.
fn lineage_nodes_to_py<'py>(
    py: Python<'py>,
    nodes: &[SessionLineageNode],
) -> PyResult<Bound<'py, PyList>> {
    let top = PyList::empty(py);
    let mut open = vec![(nodes.iter(), top.clone())];
    loop {
        let Some((level, list)) = open.last_mut() else {
            return Ok(top);
        };
        let Some(node) = level.next() else {
            open.pop();
            continue;
        };
        let siblings = list.clone();
        let entry = PyDict::new(py);
        entry.set_item("session", to_py(py, &node.session)?)?;
        let children = PyList::empty(py);
        entry.set_item("descendants", &children)?;
        siblings.append(entry)?;
        open.push((node.descendants.iter(), children));
    }
}
