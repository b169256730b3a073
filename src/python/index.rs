//! Bindings of plans, the index and batch mode.

use std::path::PathBuf;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::errors::on_path;
use super::interrupt;
use crate::runtime::parallel;
use crate::search::limits;
use crate::search::neighbourhood as around;
use crate::search::pairs;
use crate::search::plan::{check_k, Plan, Workload};
use crate::store::index::{Batch, Index};

/// Parallel numpy arrays handed to Python: (rows or i, ids or j, distances).
type PairArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u8>>,
);

/// What `Plan.nested` takes to build a plan again: (blocks per level, k).
type PlanArgs = (Vec<u32>, u32);

/// A layout of permuted tables (compiled half of `neardup.Plan`).
#[pyclass(frozen, name = "Plan", module = "neardup._core")]
pub struct PyPlan {
    pub inner: Plan,
}

#[pymethods]
impl PyPlan {
    /// `blocks` even blocks, C(blocks, k) tables.
    #[staticmethod]
    fn blocks(blocks: i64, k: i64) -> PyResult<Self> {
        Ok(PyPlan {
            inner: Plan::blocks(blocks, k)?,
        })
    }

    /// Blocks per level, each level splitting the low bits the level above leaves.
    #[staticmethod]
    fn nested(levels: Vec<i64>, k: i64) -> PyResult<Self> {
        Ok(PyPlan {
            inner: Plan::nested(&levels, k)?,
        })
    }

    /// The plan of least expected work for `n` fingerprints within `memory` bytes.
    #[staticmethod]
    #[pyo3(signature = (k, n, memory=None, batch=false))]
    fn choose(k: i64, n: i64, memory: Option<i64>, batch: bool) -> PyResult<Self> {
        let n = non_negative("n", n)?;
        let memory = memory
            .map(|m| non_negative("memory (bytes)", m))
            .transpose()?;
        let workload = if batch {
            Workload::Batch
        } else {
            Workload::Query
        };
        Ok(PyPlan {
            inner: Plan::choose(k, n, memory, workload)?,
        })
    }

    #[getter]
    fn k(&self) -> u32 {
        self.inner.k()
    }

    /// Pickles as `Plan.nested(levels, k)`, which builds the same plan again.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, PlanArgs)> {
        let plan = &slf.get().inner;
        Ok((
            slf.get_type().getattr("nested")?,
            (plan.levels().to_vec(), plan.k()),
        ))
    }

    #[getter]
    fn levels(&self) -> Vec<u32> {
        self.inner.levels().to_vec()
    }

    /// (prefix bits, prefix mask, source bit of each output bit from bit 63 down) per table.
    #[getter]
    fn tables(&self) -> Vec<(u32, u64, Vec<u8>)> {
        self.inner
            .tables()
            .iter()
            .map(|t| (t.prefix_bits, t.prefix_mask, t.permutation.order().to_vec()))
            .collect()
    }

    fn expected_candidates(&self, n: f64) -> f64 {
        self.inner
            .tables()
            .iter()
            .map(|t| n / 2f64.powi(t.prefix_bits as i32))
            .sum()
    }

    #[getter]
    fn bytes_per_fingerprint(&self) -> u64 {
        self.inner.bytes_per_fingerprint()
    }

    /// Permutes fingerprints for table `table` (for inspection and tests).
    fn permute<'py>(
        &self,
        py: Python<'py>,
        table: usize,
        fingerprints: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let layout = self.inner.tables().get(table).ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "table must be in 0..{}, got {table}",
                self.inner.tables().len()
            ))
        })?;
        let fps = fingerprints.as_slice()?;
        let out: Vec<u64> =
            py.detach(|| fps.iter().map(|&x| layout.permutation.apply(x)).collect());
        Ok(out.into_pyarray(py))
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyPlan>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __hash__(&self) -> u64 {
        let mut h = u64::from(self.inner.k());
        for &b in self.inner.levels() {
            h = h.wrapping_mul(131).wrapping_add(u64::from(b));
        }
        h
    }
}

/// The compiled half of `neardup.SimhashIndex`: an index behind a read-write lock.
#[pyclass(frozen, name = "Index", module = "neardup._core")]
pub struct PyIndex {
    inner: RwLock<Index>,
}

impl PyIndex {
    fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.inner
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Index> {
        self.inner
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[pymethods]
impl PyIndex {
    #[new]
    #[pyo3(signature = (k, plan=None, expected_size=None))]
    fn new(k: i64, plan: Option<PyRef<'_, PyPlan>>, expected_size: Option<i64>) -> PyResult<Self> {
        let expected = expected_size
            .map(|n| non_negative("expected_size", n))
            .transpose()?;
        let index = Index::new(k, plan.map(|p| p.inner.clone()), expected)?;
        Ok(PyIndex {
            inner: RwLock::new(index),
        })
    }

    #[getter]
    fn k(&self, py: Python<'_>) -> u32 {
        py.detach(|| self.read().k())
    }

    #[getter]
    fn plan(&self, py: Python<'_>) -> PyPlan {
        PyPlan {
            inner: py.detach(|| self.read().plan().clone()),
        }
    }

    #[getter]
    fn nbytes(&self, py: Python<'_>) -> usize {
        py.detach(|| self.read().nbytes())
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        py.detach(|| self.read().len())
    }

    /// Whether the index views a memory-mapped file (checked on every use).
    #[getter]
    fn mapped(&self, py: Python<'_>) -> bool {
        py.detach(|| self.read().is_mapped())
    }

    /// Raises IndexChangedError if the mapped file changed in place since it was loaded.
    fn check_file(&self, py: Python<'_>) -> PyResult<()> {
        Ok(py.detach(|| self.read().check_file())?)
    }

    fn contains(&self, py: Python<'_>, id: i64) -> PyResult<bool> {
        Ok(py.detach(|| self.read().guarded(|ix| ix.contains(id)))?)
    }

    #[pyo3(signature = (fingerprints, ids=None))]
    fn add(
        &self,
        py: Python<'_>,
        fingerprints: PyReadonlyArray1<'_, u64>,
        ids: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<()> {
        let fps = fingerprints.as_slice()?;
        let ids = ids.as_ref().map(|i| i.as_slice()).transpose()?;
        py.detach(|| {
            // Sort and lay out the batch before taking the write lock, so queries keep running
            // meanwhile; the plan of an index never changes.
            let plan = self.read().plan().clone();
            let batch = Batch::new(&plan, fps, ids)?;
            self.write().guarded_mut(|ix| ix.add_batch(batch))?
        })?;
        Ok(())
    }

    fn remove(&self, py: Python<'_>, ids: PyReadonlyArray1<'_, i64>) -> PyResult<()> {
        let ids = ids.as_slice()?;
        Ok(py.detach(|| self.write().guarded_mut(|ix| ix.remove(ids)))??)
    }

    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        Ok(py.detach(|| self.write().guarded_mut(Index::compact))?)
    }

    /// Test hook: buffer and tombstone limits, or None for the defaults.
    fn _set_limits(&self, py: Python<'_>, limits: Option<(usize, usize)>) {
        py.detach(|| self.write().set_limits(limits))
    }

    /// (id, distance) pairs within k, by distance then id.
    fn query(&self, py: Python<'_>, fingerprint: u64) -> PyResult<Vec<(i64, u8)>> {
        let found = py.detach(|| self.read().guarded(|ix| ix.query(fingerprint)))?;
        Ok(found.into_iter().map(|(d, id)| (id, d)).collect())
    }

    #[pyo3(signature = (fingerprints, threads=None, max_pairs=Some(limits::DEFAULT_MAX_PAIRS)),
        text_signature = "($self, fingerprints, threads=None, max_pairs=100000000)"
    )]
    fn query_many<'py>(
        &self,
        py: Python<'py>,
        fingerprints: PyReadonlyArray1<'py, u64>,
        threads: Option<i64>,
        max_pairs: Option<u64>,
    ) -> PyResult<PairArrays<'py>> {
        let fps = fingerprints.as_slice()?;
        let (rows, ids, ds) = interrupt::detach(py, || {
            parallel::with_threads(threads, || {
                self.read().guarded(|ix| ix.query_many(fps, max_pairs))
            })
        })????;
        Ok((
            rows.into_pyarray(py),
            ids.into_pyarray(py),
            ds.into_pyarray(py),
        ))
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| {
            self.read()
                .guarded(|ix| ix.save(&path))
                .and_then(|saved| saved)
        })
        .map_err(|e| on_path(e, &path))
    }

    #[staticmethod]
    #[pyo3(signature = (path, mmap=true))]
    fn load(py: Python<'_>, path: PathBuf, mmap: bool) -> PyResult<Self> {
        let index = py
            .detach(|| Index::load(&path, mmap))
            .map_err(|e| on_path(e, &path))?;
        Ok(PyIndex {
            inner: RwLock::new(index),
        })
    }
}

/// A count from Python: accepted as i64 so that -1 is a clear ValueError, not an OverflowError.
fn non_negative(name: &str, value: i64) -> PyResult<u64> {
    u64::try_from(value).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!("{name} must be >= 0, got {value}"))
    })
}

fn batch_plan(k: i64, n: usize, plan: Option<PyRef<'_, PyPlan>>) -> PyResult<(u32, Plan)> {
    let k_u = check_k(k)?;
    let plan = match plan {
        Some(p) => p.inner.clone(),
        None => Plan::choose(k, n as u64, None, Workload::Batch)?,
    };
    Ok((k_u, plan))
}

#[pyfunction]
#[pyo3(signature = (fingerprints, k, plan=None, threads=None, max_pairs=Some(limits::DEFAULT_MAX_PAIRS)),
    text_signature = "(fingerprints, k, plan=None, threads=None, max_pairs=100000000)"
)]
fn find_all<'py>(
    py: Python<'py>,
    fingerprints: PyReadonlyArray1<'py, u64>,
    k: i64,
    plan: Option<PyRef<'py, PyPlan>>,
    threads: Option<i64>,
    max_pairs: Option<u64>,
) -> PyResult<PairArrays<'py>> {
    let fps = fingerprints.as_slice()?;
    let (k, plan) = batch_plan(k, fps.len(), plan)?;
    let found = interrupt::detach(py, || {
        parallel::with_threads(threads, || pairs::find_all(fps, k, &plan, max_pairs))
    })???;
    Ok((
        found.i.into_pyarray(py),
        found.j.into_pyarray(py),
        found.distance.into_pyarray(py),
    ))
}

/// The candidate comparisons `find_all` would make for these fingerprints at `k` with `plan`
/// (estimated from the data as its work limit is; copies collapsed first).
#[pyfunction]
#[pyo3(signature = (fingerprints, k, plan=None))]
fn search_cost(
    py: Python<'_>,
    fingerprints: PyReadonlyArray1<'_, u64>,
    k: i64,
    plan: Option<PyRef<'_, PyPlan>>,
) -> PyResult<u64> {
    let mut distinct = fingerprints.as_slice()?.to_vec();
    let (_, plan) = batch_plan(k, distinct.len(), plan)?;
    Ok(py.detach(|| {
        distinct.sort_unstable();
        distinct.dedup();
        limits::estimate_comparisons(&distinct, &plan)
    }))
}

/// Nearest distances, pairs per distance and sample pairs (see [`neighbourhood`]).
type NeighbourhoodArrays<'py> = (
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u64>>,
    PairArrays<'py>,
);

/// The neighbourhood of ascending distinct values within `k`: per value the distance of its
/// nearest other (255 beyond k); pairs of rows at each distance, values weighing `weights`;
/// `per_distance` sample pairs at each distance (rows a < b of `distinct`, and d).
#[pyfunction]
#[pyo3(signature = (distinct, weights, k, per_distance=3, threads=None))]
fn neighbourhood<'py>(
    py: Python<'py>,
    distinct: PyReadonlyArray1<'py, u64>,
    weights: PyReadonlyArray1<'py, u64>,
    k: i64,
    per_distance: usize,
    threads: Option<i64>,
) -> PyResult<NeighbourhoodArrays<'py>> {
    let (values, weights) = (distinct.as_slice()?, weights.as_slice()?);
    if values.len() != weights.len() || values.windows(2).any(|w| w[0] >= w[1]) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "distinct must be ascending distinct values, with a weight for each",
        ));
    }
    let (k, plan) = batch_plan(k, values.len(), None)?;
    let found = interrupt::detach(py, || {
        parallel::with_threads(threads, || {
            around::neighbourhood(values, weights, k, &plan, per_distance)
        })
    })???;
    let (mut a, mut b, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for (at, pairs) in found.samples.iter().enumerate() {
        for &(x, y) in pairs {
            a.push(i64::from(x));
            b.push(i64::from(y));
            d.push(at as u8);
        }
    }
    Ok((
        found.nearest.into_pyarray(py),
        found.pairs.into_pyarray(py),
        (a.into_pyarray(py), b.into_pyarray(py), d.into_pyarray(py)),
    ))
}

#[pyfunction]
#[pyo3(signature = (fingerprints, k, plan=None, threads=None))]
fn cluster<'py>(
    py: Python<'py>,
    fingerprints: PyReadonlyArray1<'py, u64>,
    k: i64,
    plan: Option<PyRef<'py, PyPlan>>,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let fps = fingerprints.as_slice()?;
    let (k, plan) = batch_plan(k, fps.len(), plan)?;
    let labels = interrupt::detach(py, || {
        parallel::with_threads(threads, || pairs::cluster(fps, k, &plan))
    })???;
    Ok(labels.into_pyarray(py))
}

/// Cluster labels of `n` rows linked by the pairs `(i[p], j[p])`: the smallest row of each
/// connected component.
#[pyfunction]
fn cluster_pairs<'py>(
    py: Python<'py>,
    n: i64,
    i: PyReadonlyArray1<'py, i64>,
    j: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let n = non_negative("n", n)? as usize;
    let (i, j) = (i.as_slice()?, j.as_slice()?);
    let labels = py.detach(|| pairs::components(n, i, j))?;
    Ok(labels.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPlan>()?;
    m.add_function(wrap_pyfunction!(cluster_pairs, m)?)?;
    m.add_class::<PyIndex>()?;
    m.add_function(wrap_pyfunction!(find_all, m)?)?;
    m.add_function(wrap_pyfunction!(search_cost, m)?)?;
    m.add_function(wrap_pyfunction!(neighbourhood, m)?)?;
    m.add_function(wrap_pyfunction!(cluster, m)?)?;
    Ok(())
}
