//! Rust values to Python objects: the JSON documents the CLI prints become plain dicts, lists,
//! str, int, float, bool and None, built directly from the serde representation (no JSON text
//! in between), with the keys in the CLI's order.

use pyo3::prelude::*;
use serde::Serialize;

use crate::errors::internal;

/// Serializes `value` as the CLI would print it, as Python objects.
pub fn to_py<T: Serialize + ?Sized>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    pythonize::pythonize(py, value)
        .map(Bound::unbind)
        .map_err(|e| internal(py, format!("cannot represent the result: {e}")))
}
