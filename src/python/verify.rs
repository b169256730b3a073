//! Bindings of shingle sketches and the Jaccard check of candidate pairs.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::parallel;
use crate::verify::{self, Ranges};

/// Sketches handed to Python: (offsets, hashes, content keys).
type SketchArrays<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u64>>,
);

/// The bottom-`size` word-`ngram` shingle sketches of normalized texts: (offsets, hashes, keys).
#[pyfunction]
#[pyo3(signature = (texts, ngram, size, threads=None))]
fn shingle_sketches<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
    ngram: i64,
    size: i64,
    threads: Option<i64>,
) -> PyResult<SketchArrays<'py>> {
    let config = verify::shingle_config(ngram, size)?;
    let s = py.detach(|| parallel::with_threads(threads, || verify::sketches(config, &texts)))?;
    Ok((
        s.offsets.into_pyarray(py),
        s.hashes.into_pyarray(py),
        s.keys.into_pyarray(py),
    ))
}

/// The Jaccard similarity of the sketches of each pair of rows `(i[p], j[p])`; row d's sketch
/// is `hashes[starts[d]..ends[d]]`.
#[pyfunction]
#[pyo3(signature = (starts, ends, hashes, i, j, size, threads=None))]
#[allow(clippy::too_many_arguments)]
fn sketch_jaccard<'py>(
    py: Python<'py>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u32>,
    i: PyReadonlyArray1<'py, i64>,
    j: PyReadonlyArray1<'py, i64>,
    size: i64,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let size = verify::shingle_config(1, size)?.size;
    let ranges = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    let (i, j) = (i.as_slice()?, j.as_slice()?);
    let out = py.detach(|| {
        parallel::with_threads(threads, || verify::jaccard_pairs(&ranges, size, i, j))
    })??;
    Ok(out.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(shingle_sketches, m)?)?;
    m.add_function(wrap_pyfunction!(sketch_jaccard, m)?)?;
    Ok(())
}
