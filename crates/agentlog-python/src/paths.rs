//! Path arguments: `str`, `bytes` or any `os.PathLike`, as `open()` takes them.
//!
//! `PyO3`'s own `PathBuf` conversion calls `os.fspath` but then accepts only `str`; a `bytes`
//! path (the only way to name a non-UTF-8 file name on Linux without surrogate escapes) would
//! be a confusing `TypeError`. Here both work: `bytes` are the file name's bytes, `str` is
//! encoded with the file-system encoding and its surrogate escapes, as Python itself does.

use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};

/// Extracts the path argument named `what`.
pub fn path_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<PathBuf> {
    let py = value.py();
    let fspath = if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
        value.clone()
    } else {
        static FSPATH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let fspath = FSPATH.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("os")?.getattr("fspath")?.unbind())
        })?;
        fspath.bind(py).call1((value,)).map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be a str, bytes or os.PathLike, not {}",
                type_name(value)
            ))
        })?
    };
    let path = if let Ok(bytes) = fspath.cast::<PyBytes>() {
        from_bytes(bytes.as_bytes(), what)?
    } else {
        PathBuf::from(fspath.extract::<std::ffi::OsString>()?)
    };
    if path.as_os_str().is_empty() {
        return Err(PyValueError::new_err(format!("{what} is an empty path")));
    }
    Ok(path)
}

#[cfg(unix)]
fn from_bytes(bytes: &[u8], what: &str) -> PyResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if bytes.contains(&0) {
        return Err(PyValueError::new_err(format!("{what} contains a NUL byte")));
    }
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
fn from_bytes(bytes: &[u8], what: &str) -> PyResult<PathBuf> {
    // Elsewhere a bytes path must be UTF-8 (as on Windows since Python 3.6).
    std::str::from_utf8(bytes).map(PathBuf::from).map_err(|_| {
        PyValueError::new_err(format!(
            "{what}: a bytes path must be UTF-8 on this platform"
        ))
    })
}

/// The type name of `value`, for messages.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| n.to_string())
}
