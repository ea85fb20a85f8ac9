//! The native half of the `agentlog` Python package (`agentlog._agentlog`): a thin layer over
//! the Rust crate. Every Rust error becomes a typed exception (`errors`), every result the same
//! document the CLI prints with `--json` (`convert`), and file work runs with the GIL released.
//! The pure-Python half (`python/agentlog/`) re-exports this module and adds the lingtai
//! drop-in. See docs/PYTHON.md.

// Every Rust error reaches Python as a typed exception: the workspace's lint table denies
// unwrap, expect and panic; indexing is denied here too, as in the query layer.
#![deny(clippy::indexing_slicing)]

mod convert;
mod errors;
mod paths;
mod status;
mod store;
mod synth;
mod transcript;
mod usage;
mod writer;

use pyo3::prelude::*;

#[pymodule]
fn _agentlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(status::status, m)?)?;
    m.add_function(wrap_pyfunction!(status::generations, m)?)?;
    m.add_function(wrap_pyfunction!(status::_status_timed, m)?)?;
    m.add_function(wrap_pyfunction!(status::_status_loop, m)?)?;
    m.add_function(wrap_pyfunction!(synth::write_synthetic_log, m)?)?;
    m.add_function(wrap_pyfunction!(transcript::transcript, m)?)?;
    m.add_function(wrap_pyfunction!(usage::_usage, m)?)?;
    m.add_function(wrap_pyfunction!(usage::_statusline, m)?)?;
    m.add_class::<usage::StatusFormatter>()?;
    m.add_class::<status::Status>()?;
    m.add_class::<writer::Writer>()?;
    m.add_class::<store::Store>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
