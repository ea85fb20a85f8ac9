//! `agentlog.Writer`: the single writer of an agent's log, keeping its index current.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};

use agentlog::index::{IndexError, Writer as RustWriter, WriterOptions};
use agentlog::log::{Appended, LogPaths, SyncPolicy};

use crate::errors::{index_error, internal};
use crate::paths::{path_arg, type_name};

/// The single writer of `agent_dir/logs/events.jsonl` (created if missing) and its index.
///
/// `sync` chooses when an append is acknowledged: `"fsync"` (on disk before `append`
/// returns), `"interval"` (group commit: a background fsync every `interval_ms`; `append`
/// returns once the sync covering its event has run) or `"none"` (written to the operating
/// system: survives a crash of this process, not power loss). Use it as a context manager;
/// `close()` commits the index. A second writer of the same log raises `Locked`.
///
/// One `Writer` may be shared by several threads: appends are serialized, the GIL is released
/// while writing, and each append returns its own event's offset.
#[pyclass(module = "agentlog", frozen)]
pub struct Writer {
    inner: Mutex<Option<RustWriter>>,
    sync: SyncPolicy,
    log: PathBuf,
}

/// Python's `json.dumps`, kept once.
fn dumps(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    Ok(DUMPS
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("json")?.getattr("dumps")?.unbind())
        })?
        .bind(py))
}

/// One event as JSON bytes: a dict is serialized (as the kernel writes, non-ASCII kept raw),
/// a str is encoded as UTF-8, bytes are taken as they are. Validation happens in the writer.
fn event_bytes(event: &Bound<'_, PyAny>, index: usize) -> PyResult<Vec<u8>> {
    let py = event.py();
    if let Ok(bytes) = event.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if let Ok(text) = event.cast::<PyString>() {
        return utf8(text, index);
    }
    if event.is_instance_of::<PyDict>() {
        let kwargs = PyDict::new(py);
        kwargs.set_item("ensure_ascii", false)?;
        kwargs.set_item("allow_nan", false)?;
        let text = dumps(py)?.call((event,), Some(&kwargs)).map_err(|e| {
            invalid_event(
                py,
                index,
                format!("the event cannot be serialized as JSON: {e}"),
            )
        })?;
        return utf8(text.cast::<PyString>()?, index);
    }
    Err(PyTypeError::new_err(format!(
        "an event must be a dict, str or bytes, not {}",
        type_name(event)
    )))
}

/// A str as UTF-8; a lone surrogate cannot be written and makes the event invalid.
fn utf8(text: &Bound<'_, PyString>, index: usize) -> PyResult<Vec<u8>> {
    text.to_cow().map(|t| t.as_bytes().to_vec()).map_err(|_| {
        invalid_event(
            text.py(),
            index,
            "the event is not valid UTF-8 (a lone surrogate)".to_owned(),
        )
    })
}

fn invalid_event(py: Python<'_>, index: usize, reason: String) -> PyErr {
    crate::errors::log_error(
        py,
        agentlog::log::LogError::InvalidEvent {
            index,
            reason,
            source: None,
        },
    )
}

fn closed() -> PyErr {
    PyValueError::new_err("append to a closed Writer")
}

impl Writer {
    /// Runs `f` on the open writer, without the GIL.
    fn with_writer<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut RustWriter) -> Result<T, IndexError> + Send,
    ) -> PyResult<T> {
        // The lock is taken with the GIL released: a thread waiting for it never holds the GIL
        // another thread needs to finish.
        let result = py.detach(|| {
            let Ok(mut guard) = self.inner.lock() else {
                return Err(None);
            };
            match guard.as_mut() {
                Some(writer) => f(writer).map_err(Some),
                None => Err(None),
            }
        });
        match result {
            Ok(value) => Ok(value),
            Err(Some(e)) => Err(index_error(py, e)),
            Err(None) if self.inner.is_poisoned() => Err(internal(
                py,
                "the writer is unusable: an append panicked while holding it".to_owned(),
            )),
            Err(None) => Err(closed()),
        }
    }

    /// Acknowledges appended events under the policy; returns their start offsets.
    fn acknowledge(
        sync: SyncPolicy,
        writer: &RustWriter,
        appended: &[Appended],
    ) -> Result<Vec<u64>, IndexError> {
        if let (SyncPolicy::Interval(_), Some(last)) = (sync, appended.last()) {
            writer.wait_durable(last.end)?;
        }
        Ok(appended.iter().map(|a| a.start).collect())
    }
}

#[pymethods]
impl Writer {
    #[new]
    #[pyo3(signature = (agent_dir, sync = "fsync", *, interval_ms = 50))]
    fn new(
        py: Python<'_>,
        agent_dir: &Bound<'_, PyAny>,
        sync: &str,
        interval_ms: u64,
    ) -> PyResult<Writer> {
        let dir = path_arg(agent_dir, "agent_dir")?;
        let sync = match sync {
            "fsync" => SyncPolicy::Fsync,
            "interval" => SyncPolicy::Interval(Duration::from_millis(interval_ms.max(1))),
            "none" => SyncPolicy::None,
            other => {
                return Err(PyValueError::new_err(format!(
                    "sync must be 'fsync', 'interval' or 'none', not {other:?}"
                )));
            }
        };
        let paths = LogPaths::for_agent_dir(&dir);
        let log = paths.log.clone();
        let opened = py.detach(|| {
            if let Some(parent) = paths.log.parent() {
                std::fs::create_dir_all(parent).map_err(|source| {
                    IndexError::Log(agentlog::log::LogError::Io {
                        op: "create the directory of",
                        path: paths.log.clone(),
                        source,
                    })
                })?;
            }
            RustWriter::open(
                &paths,
                WriterOptions {
                    sync,
                    ..WriterOptions::default()
                },
            )
        });
        match opened {
            Ok(writer) => Ok(Writer {
                inner: Mutex::new(Some(writer)),
                sync,
                log,
            }),
            Err(e) => Err(index_error(py, e)),
        }
    }

    /// Appends one event (a dict, a JSON str or JSON bytes holding one object) and returns
    /// its byte offset in the log once acknowledged. An invalid event raises `InvalidEvent`
    /// and writes nothing.
    fn append(&self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<u64> {
        let bytes = event_bytes(event, 0)?;
        let sync = self.sync;
        self.with_writer(py, move |writer| {
            let appended = writer.append_json(&bytes)?;
            Writer::acknowledge(sync, writer, &[appended]).map(|_| appended.start)
        })
    }

    /// Appends every event of `events` in one write and returns their offsets. If any event is
    /// invalid, `InvalidEvent` is raised (its `index` says which) and nothing is written.
    fn append_many(&self, py: Python<'_>, events: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let mut batch = Vec::new();
        for (index, event) in events.try_iter()?.enumerate() {
            batch.push(event_bytes(&event?, index)?);
        }
        let sync = self.sync;
        self.with_writer(py, move |writer| {
            let appended = writer.append_batch_json(&batch)?;
            Writer::acknowledge(sync, writer, &appended)
        })
    }

    /// Forces the log to disk now (under any policy).
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        self.with_writer(py, |writer| writer.sync())
    }

    /// Commits the index and closes the log. Closing twice is harmless.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = py.detach(|| match self.inner.lock() {
            Ok(mut guard) => Ok(guard.take()),
            Err(_) => Err(()),
        });
        match taken {
            Ok(Some(writer)) => py.detach(|| writer.close()).map_err(|e| index_error(py, e)),
            Ok(None) => Ok(()),
            Err(()) => Err(internal(
                py,
                "the writer is unusable: an append panicked while holding it".to_owned(),
            )),
        }
    }

    /// Whether `close()` has run.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.inner.lock().map_or(true, |guard| guard.is_none()))
    }

    /// The log's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.log.clone()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Writer({:?})", self.log.display().to_string())
    }
}
