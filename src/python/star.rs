//! Bindings of star clustering.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use std::sync::Mutex;

use crate::digest::KeySet;
use crate::plan::{Plan, Workload};
use crate::star::{self, Verification};
use crate::verify::{self, Ranges};
use crate::{parallel, plan};

use super::index::PyPlan;

/// Star clusters: (the row kept in each row's place, their Jaccard similarity). Rows are taken
/// as centers in `order`; with `threshold`, candidates within `k` are checked by the sketches
/// (row d's is `hashes[starts[d]..ends[d]]`, bottom-`size`).
#[pyfunction]
#[pyo3(signature = (fingerprints, keys, order, k, threshold=None, starts=None, ends=None, hashes=None, size=256, plan=None, threads=None))]
#[allow(clippy::too_many_arguments)]
fn star_clusters<'py>(
    py: Python<'py>,
    fingerprints: PyReadonlyArray1<'py, u64>,
    keys: PyReadonlyArray1<'py, u64>,
    order: PyReadonlyArray1<'py, i64>,
    k: i64,
    threshold: Option<f64>,
    starts: Option<PyReadonlyArray1<'py, u64>>,
    ends: Option<PyReadonlyArray1<'py, u64>>,
    hashes: Option<PyReadonlyArray1<'py, u32>>,
    size: i64,
    plan: Option<PyRef<'py, PyPlan>>,
    threads: Option<i64>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f32>>)> {
    let fps = fingerprints.as_slice()?;
    let k_u = plan::check_k(k)?;
    let plan = match plan {
        Some(p) => p.inner.clone(),
        None => Plan::choose(k, fps.len() as u64, None, Workload::Batch)?,
    };
    let verification = match (threshold, &starts, &ends, &hashes) {
        (None, None, None, None) => None,
        (Some(threshold), Some(s), Some(e), Some(h)) => Some(Verification {
            sketches: Ranges::new(s.as_slice()?, e.as_slice()?, h.as_slice()?)?,
            size: verify::shingle_config(1, size)?.size,
            threshold,
        }),
        _ => {
            return Err(crate::error::Error::invalid("threshold needs starts, ends and hashes, and they need a threshold").into())
        }
    };
    let (keys, order) = (keys.as_slice()?, order.as_slice()?);
    let found = py.detach(|| parallel::with_threads(threads, || star::stars(fps, keys, order, k_u, &plan, verification)))??;
    Ok((found.kept.into_pyarray(py), found.jaccard.into_pyarray(py)))
}

/// The rows whose sketches `star_clusters` may read (see `star::candidate_rows`).
#[pyfunction]
#[pyo3(signature = (fingerprints, keys, k, threads=None))]
fn star_candidates<'py>(
    py: Python<'py>,
    fingerprints: PyReadonlyArray1<'py, u64>,
    keys: PyReadonlyArray1<'py, u64>,
    k: i64,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let (fps, keys) = (fingerprints.as_slice()?, keys.as_slice()?);
    let k_u = plan::check_k(k)?;
    let plan = Plan::choose(k, fps.len() as u64, None, Workload::Batch)?;
    let rows = py.detach(|| parallel::with_threads(threads, || star::candidate_rows(fps, keys, k_u, &plan)))??;
    Ok(rows.into_pyarray(py))
}

/// The content keys seen so far in a first pass (see `digest::KeySet`).
#[pyclass(frozen, name = "KeySet", module = "neardup._core")]
pub struct PyKeySet {
    inner: Mutex<KeySet>,
}

#[pymethods]
impl PyKeySet {
    #[new]
    fn new() -> Self {
        PyKeySet { inner: Mutex::new(KeySet::default()) }
    }

    /// For each key, whether it is seen for the first time (then recorded).
    fn first_seen<'py>(&self, py: Python<'py>, keys: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let keys = keys.as_slice()?;
        let mask = py.detach(|| self.inner.lock().map(|mut set| set.first_seen(keys)).ok());
        let mask = mask.ok_or_else(|| crate::error::Error::invalid("the key set was poisoned by an earlier panic"))?;
        Ok(mask.into_pyarray(py))
    }

    fn __len__(&self) -> usize {
        self.inner.lock().map(|set| set.len()).unwrap_or(0)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyKeySet>()?;
    m.add_function(wrap_pyfunction!(star_clusters, m)?)?;
    m.add_function(wrap_pyfunction!(star_candidates, m)?)?;
    Ok(())
}
