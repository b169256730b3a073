//! Bindings of the switch that holds the core's vector kernels on their portable paths.

use pyo3::prelude::*;

use crate::runtime::simd;

#[pyfunction]
fn force_scalar(on: bool) {
    simd::force_scalar(on);
}

#[pyfunction]
fn scalar_forced() -> bool {
    simd::scalar_forced()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(force_scalar, m)?)?;
    m.add_function(wrap_pyfunction!(scalar_forced, m)?)?;
    Ok(())
}
