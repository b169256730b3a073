//! Bindings of the dedup index (`dedup_index::DedupIndex`) and of deduplicating a batch against it.

use std::path::{Path, PathBuf};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use super::errors::on_path;
use super::interrupt;
use crate::dedup_index::{dedup_against, Batch, DedupIndex, NewIds, Rows, Settings};
use crate::parallel;
use crate::plan::check_k;
use crate::verify::Ranges;

/// What `dedup` hands to Python: (kept new row or -1, index row or -1, Jaccard).
type AgainstArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
);

/// Ids from Python: an int64 array, or a list of bytes.
enum IdsIn {
    Int(Vec<i64>),
    Str(Vec<PyBackedBytes>),
}

fn ids_in(ids: &Bound<'_, PyAny>, string_ids: bool) -> PyResult<IdsIn> {
    Ok(if string_ids {
        IdsIn::Str(ids.extract()?)
    } else {
        IdsIn::Int(
            ids.extract::<PyReadonlyArray1<'_, i64>>()?
                .as_slice()?
                .to_vec(),
        )
    })
}

/// A dedup index file (compiled half of `neardup.DedupIndex`).
#[pyclass(frozen, name = "DedupIndex", module = "neardup._core")]
pub struct PyDedupIndex {
    inner: DedupIndex,
}

#[allow(clippy::too_many_arguments)]
fn save_with(
    py: Python<'_>,
    index: &DedupIndex,
    path: &Path,
    fps: PyReadonlyArray1<'_, u64>,
    keys: PyReadonlyArray1<'_, u64>,
    starts: PyReadonlyArray1<'_, u64>,
    ends: PyReadonlyArray1<'_, u64>,
    hashes: PyReadonlyArray1<'_, u32>,
    ids: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let ids = ids_in(ids, index.settings().string_ids)?;
    let (fps, keys) = (fps.as_slice()?, keys.as_slice()?);
    let sketches = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    let views: Vec<&[u8]> = match &ids {
        IdsIn::Str(v) => v.iter().map(|b| &b[..]).collect(),
        IdsIn::Int(_) => Vec::new(),
    };
    let new_ids = match &ids {
        IdsIn::Int(v) => NewIds::Int(v),
        IdsIn::Str(_) => NewIds::Str(&views),
    };
    let rows = Rows {
        fps,
        keys,
        sketches,
        ids: new_ids,
    };
    interrupt::detach(py, || index.save(path, Some(&rows)))?.map_err(|e| on_path(e, path))
}

#[pymethods]
impl PyDedupIndex {
    /// Writes a new index file of these documents (atomically) and returns nothing; open it with `load`.
    #[staticmethod]
    #[pyo3(signature = (path, sketch_size, shingle, k, threshold, string_ids, meta, fps, keys, starts, ends, hashes, ids))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        sketch_size: usize,
        shingle: u32,
        k: i64,
        threshold: f64,
        string_ids: bool,
        meta: Vec<u8>,
        fps: PyReadonlyArray1<'_, u64>,
        keys: PyReadonlyArray1<'_, u64>,
        starts: PyReadonlyArray1<'_, u64>,
        ends: PyReadonlyArray1<'_, u64>,
        hashes: PyReadonlyArray1<'_, u32>,
        ids: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let k = check_k(k)?;
        let index = DedupIndex::new(Settings {
            sketch_size,
            shingle,
            k,
            threshold,
            string_ids,
            meta,
        })?;
        save_with(py, &index, &path, fps, keys, starts, ends, hashes, ids)
    }

    /// Writes this index followed by new documents to `path` (atomically: a temporary file
    /// renamed over it).
    #[pyo3(signature = (path, fps, keys, starts, ends, hashes, ids))]
    #[allow(clippy::too_many_arguments)]
    fn save_appended(
        &self,
        py: Python<'_>,
        path: PathBuf,
        fps: PyReadonlyArray1<'_, u64>,
        keys: PyReadonlyArray1<'_, u64>,
        starts: PyReadonlyArray1<'_, u64>,
        ends: PyReadonlyArray1<'_, u64>,
        hashes: PyReadonlyArray1<'_, u32>,
        ids: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        save_with(py, &self.inner, &path, fps, keys, starts, ends, hashes, ids)
    }

    #[staticmethod]
    #[pyo3(signature = (path, mmap=true))]
    fn load(py: Python<'_>, path: PathBuf, mmap: bool) -> PyResult<Self> {
        let inner = py
            .detach(|| DedupIndex::load(&path, mmap))
            .map_err(|e| on_path(e, &path))?;
        Ok(PyDedupIndex { inner })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    #[getter]
    fn sketch_size(&self) -> usize {
        self.inner.settings().sketch_size
    }

    #[getter]
    fn shingle(&self) -> u32 {
        self.inner.settings().shingle
    }

    #[getter]
    fn k(&self) -> u32 {
        self.inner.settings().k
    }

    #[getter]
    fn threshold(&self) -> f64 {
        self.inner.settings().threshold
    }

    #[getter]
    fn string_ids(&self) -> bool {
        self.inner.settings().string_ids
    }

    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.settings().meta)
    }

    #[getter]
    fn mapped(&self) -> bool {
        self.inner.is_mapped()
    }

    /// IndexChangedError if the mapped file was changed in place since it was opened.
    fn check_file(&self) -> PyResult<()> {
        Ok(self.inner.check_file()?)
    }

    /// The fingerprints, in index order (a copy).
    fn fingerprints<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        Ok(self
            .inner
            .guarded(|ix| ix.fingerprints().to_vec())?
            .into_pyarray(py))
    }

    /// The content keys, in index order (a copy).
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        Ok(self
            .inner
            .guarded(|ix| ix.keys().to_vec())?
            .into_pyarray(py))
    }

    /// Document `row`'s stored sketch.
    fn sketch<'py>(&self, py: Python<'py>, row: usize) -> PyResult<Bound<'py, PyArray1<u32>>> {
        self.row_ok(row)?;
        Ok(self
            .inner
            .guarded(|ix| ix.sketch(row).to_vec())?
            .into_pyarray(py))
    }

    /// The ids of some rows: ints, or bytes for string ids.
    fn ids_of(&self, py: Python<'_>, rows: Vec<usize>) -> PyResult<Vec<Py<PyAny>>> {
        for &r in &rows {
            self.row_ok(r)?;
        }
        let got = self.inner.guarded(|ix| {
            rows.iter()
                .map(|&r| match ix.int_id(r) {
                    Some(v) => Ok(v.into_pyobject(py)?.into_any().unbind()),
                    None => Ok(PyBytes::new(py, ix.str_id(r).unwrap_or(b""))
                        .into_any()
                        .unbind()),
                })
                .collect::<PyResult<Vec<_>>>()
        })?;
        got
    }

    /// Deduplicates a batch (fingerprints, content keys, sketches in ranges) against the index
    /// and itself: (new row kept in each row's place or -1, index row it duplicates or -1,
    /// Jaccard).
    #[pyo3(signature = (fps, keys, starts, ends, hashes, k, threshold, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn dedup<'py>(
        &self,
        py: Python<'py>,
        fps: PyReadonlyArray1<'py, u64>,
        keys: PyReadonlyArray1<'py, u64>,
        starts: PyReadonlyArray1<'py, u64>,
        ends: PyReadonlyArray1<'py, u64>,
        hashes: PyReadonlyArray1<'py, u32>,
        k: i64,
        threshold: f64,
        threads: Option<i64>,
    ) -> PyResult<AgainstArrays<'py>> {
        let k_u = check_k(k)?;
        let (fps, keys) = (fps.as_slice()?, keys.as_slice()?);
        let sketches = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
        let batch = Batch {
            fps,
            keys,
            sketches,
        };
        let index = &self.inner;
        let got = interrupt::detach(py, || {
            parallel::with_threads(threads, || {
                index.guarded(|ix| dedup_against(ix, &batch, k_u, threshold))
            })
        })???;
        let got = got?;
        Ok((
            got.kept.into_pyarray(py),
            got.index_row.into_pyarray(py),
            got.jaccard.into_pyarray(py),
        ))
    }
}

impl PyDedupIndex {
    fn row_ok(&self, row: usize) -> PyResult<()> {
        if row >= self.inner.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "row {row} out of range for {} documents",
                self.inner.len()
            )));
        }
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDedupIndex>()
}
