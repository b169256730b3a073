//! The `neardup._core` extension module: registration only.

use pyo3::prelude::*;

mod dedup_index;
mod encoders;
mod errors;
mod fingerprint;
mod index;
mod interrupt;
mod kernels;
mod lines;
mod simd;
mod star;
mod verify;

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The limits the Python side checks before calling in (neardup.validate).
    m.add("MAX_K", crate::search::plan::MAX_K)?;
    m.add("MAX_THREADS", crate::runtime::parallel::MAX_THREADS)?;
    m.add(
        "DEFAULT_EXPECTED_SIZE",
        crate::store::index::DEFAULT_EXPECTED_SIZE,
    )?;
    errors::register(m)?;
    fingerprint::register(m)?;
    index::register(m)?;
    encoders::register(m)?;
    verify::register(m)?;
    star::register(m)?;
    dedup_index::register(m)?;
    simd::register(m)?;
    kernels::register(m)?;
    lines::register(m)?;
    Ok(())
}
