//! Bindings of the seeds' other encoders and of the `simhash`-package fingerprints.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use super::fingerprint::{field_slices_of, Data, PyHasher};
use crate::fingerprint::compat;
use crate::fingerprint::encoders::{self, Hyperplanes, Sparse};
use crate::runtime::parallel;
use crate::text::features::Field;

type F64Array<'py> = Bound<'py, PyArray1<f64>>;
type I64Array<'py> = Bound<'py, PyArray1<i64>>;
type U64Array<'py> = Bound<'py, PyArray1<u64>>;

/// The compiled half of `neardup.SparseEncoder`.
#[pyclass(frozen, name = "Sparse", module = "neardup._core")]
pub struct PySparse {
    inner: Sparse,
}

#[pymethods]
impl PySparse {
    #[new]
    #[pyo3(signature = (size, active, token_similarity, weights=None))]
    fn new(
        size: i64,
        active: i64,
        token_similarity: bool,
        weights: Option<Vec<(String, f64)>>,
    ) -> PyResult<Self> {
        Ok(PySparse {
            inner: Sparse::new(size, active, token_similarity, weights)?,
        })
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    #[getter]
    fn active(&self) -> usize {
        self.inner.active()
    }

    /// Column sums of one token list.
    fn sums<'py>(&self, py: Python<'py>, tokens: Vec<PyBackedStr>) -> F64Array<'py> {
        py.detach(|| self.inner.sums(&tokens)).into_pyarray(py)
    }

    /// The indices of the `active` largest sums, ascending; ties to the lower index.
    fn select<'py>(
        &self,
        py: Python<'py>,
        sums: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<I64Array<'py>> {
        let sums = sums.as_slice()?;
        Ok(py.detach(|| self.inner.select(sums))?.into_pyarray(py))
    }

    /// The active bits of one token list.
    fn encode<'py>(&self, py: Python<'py>, tokens: Vec<PyBackedStr>) -> I64Array<'py> {
        py.detach(|| self.inner.encode(&tokens)).into_pyarray(py)
    }

    /// The active bits of many token lists, flat: `active` per list.
    #[pyo3(signature = (docs, threads=None))]
    fn encode_many<'py>(
        &self,
        py: Python<'py>,
        docs: Vec<Vec<PyBackedStr>>,
        threads: Option<i64>,
    ) -> PyResult<I64Array<'py>> {
        let out =
            py.detach(|| parallel::with_threads(threads, || self.inner.encode_many(&docs)))?;
        Ok(out.into_pyarray(py))
    }

    /// Column sums of hash rows given as 64-bit words, row after row.
    #[pyo3(signature = (rows, weights=None))]
    fn sums_of_words<'py>(
        &self,
        py: Python<'py>,
        rows: PyReadonlyArray1<'py, u64>,
        weights: Option<PyReadonlyArray1<'py, f64>>,
    ) -> PyResult<F64Array<'py>> {
        let rows = rows.as_slice()?;
        let weights = weights.as_ref().map(|w| w.as_slice()).transpose()?;
        Ok(py
            .detach(|| self.inner.sums_of_words(rows, weights))?
            .into_pyarray(py))
    }
}

/// The first `words` words of the extendable hash (FNV-1a 64, then SplitMix64) of the data.
#[pyfunction]
fn extended_hash<'py>(py: Python<'py>, data: Data, words: i64) -> PyResult<U64Array<'py>> {
    let most = encoders::MAX_SIZE / 64;
    if !(0..=most).contains(&words) {
        return Err(
            crate::Error::invalid(format!("words must be in 0..={most}, got {words}")).into(),
        );
    }
    let mut out = Vec::with_capacity(words as usize);
    encoders::extended_hash(data.as_ref(), words as usize, &mut out);
    Ok(out.into_pyarray(py))
}

/// The compiled half of `neardup.VectorSimhash`.
#[pyclass(frozen, name = "Hyperplanes", module = "neardup._core")]
pub struct PyHyperplanes {
    inner: Hyperplanes,
}

#[pymethods]
impl PyHyperplanes {
    #[new]
    fn new(py: Python<'_>, dim: i64, bits: i64, seed: u64) -> PyResult<Self> {
        Ok(PyHyperplanes {
            inner: py.detach(|| Hyperplanes::new(dim, bits, seed))?,
        })
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    #[getter]
    fn bits(&self) -> usize {
        self.inner.bits()
    }

    /// The normals, row after row (`bits` rows of `dim`).
    fn normals<'py>(&self, py: Python<'py>) -> F64Array<'py> {
        self.inner.normals().into_pyarray(py)
    }

    /// Fingerprints of the rows of a C-contiguous float64 matrix.
    #[pyo3(signature = (matrix, threads=None))]
    fn fingerprint_many_f64<'py>(
        &self,
        py: Python<'py>,
        matrix: PyReadonlyArray2<'py, f64>,
        threads: Option<i64>,
    ) -> PyResult<U64Array<'py>> {
        self.rows(py, matrix.as_slice()?, threads)
    }

    /// Fingerprints of the rows of a C-contiguous float32 matrix.
    #[pyo3(signature = (matrix, threads=None))]
    fn fingerprint_many_f32<'py>(
        &self,
        py: Python<'py>,
        matrix: PyReadonlyArray2<'py, f32>,
        threads: Option<i64>,
    ) -> PyResult<U64Array<'py>> {
        self.rows(py, matrix.as_slice()?, threads)
    }
}

impl PyHyperplanes {
    /// Fingerprints of the rows of a row-major matrix of f32 or f64, the GIL released.
    fn rows<'py, T: Copy + Into<f64> + Sync>(
        &self,
        py: Python<'py>,
        matrix: &[T],
        threads: Option<i64>,
    ) -> PyResult<U64Array<'py>> {
        Ok(py
            .detach(|| parallel::with_threads(threads, || self.inner.fingerprint_many(matrix)))??
            .into_pyarray(py))
    }
}

/// The XOR of the `restrictiveness` smallest distinct hashes.
#[pyfunction]
fn minhash_key(
    py: Python<'_>,
    hashes: PyReadonlyArray1<'_, u64>,
    restrictiveness: i64,
) -> PyResult<u64> {
    let r = encoders::restrictiveness(restrictiveness)?;
    let hashes = hashes.as_slice()?;
    Ok(py.detach(|| encoders::minhash_key(hashes, r)))
}

/// Minhash keys of documents given field by field (`fields[f][d]`), features by `hasher`.
#[pyfunction]
#[pyo3(signature = (hasher, fields, restrictiveness, threads=None))]
fn minhash_keys<'py>(
    py: Python<'py>,
    hasher: PyRef<'py, PyHasher>,
    fields: Vec<Vec<PyBackedStr>>,
    restrictiveness: i64,
    threads: Option<i64>,
) -> PyResult<U64Array<'py>> {
    keys_of::<str, _>(py, &hasher, &fields, restrictiveness, threads)
}

/// Minhash keys of documents given field by field as pre-split tokens.
#[pyfunction]
#[pyo3(signature = (hasher, fields, restrictiveness, threads=None))]
fn minhash_keys_tokens<'py>(
    py: Python<'py>,
    hasher: PyRef<'py, PyHasher>,
    fields: Vec<Vec<Vec<PyBackedStr>>>,
    restrictiveness: i64,
    threads: Option<i64>,
) -> PyResult<U64Array<'py>> {
    keys_of::<[PyBackedStr], _>(py, &hasher, &fields, restrictiveness, threads)
}

/// Minhash keys of documents given field by field, whether texts or token lists, the GIL
/// released.
fn keys_of<'py, F, S>(
    py: Python<'py>,
    hasher: &PyHasher,
    fields: &[Vec<S>],
    restrictiveness: i64,
    threads: Option<i64>,
) -> PyResult<U64Array<'py>>
where
    F: Field + Sync + ?Sized,
    S: AsRef<F> + Sync,
{
    let r = encoders::restrictiveness(restrictiveness)?;
    let config = hasher.inner().features();
    let slices = field_slices_of(fields);
    let keys = py.detach(|| {
        parallel::with_threads(threads, || {
            encoders::minhash_keys_many::<F, _>(config, &slices, r)
        })
    })??;
    Ok(keys.into_pyarray(py))
}

/// Labels of equal keys: the smallest row holding each key.
#[pyfunction]
fn group_by_key<'py>(py: Python<'py>, keys: PyReadonlyArray1<'py, u64>) -> PyResult<I64Array<'py>> {
    let keys = keys.as_slice()?;
    Ok(py.detach(|| encoders::group_by_key(keys)).into_pyarray(py))
}

/// The `simhash` package's feature hash (last 8 bytes of MD5, big-endian) of each item.
#[pyfunction]
fn md5_64_many<'py>(py: Python<'py>, items: Vec<Data>) -> U64Array<'py> {
    py.detach(|| compat::md5_64_many(&items)).into_pyarray(py)
}

/// The `simhash` package's default fingerprints of cleaned (lowercased, filtered) texts.
#[pyfunction]
#[pyo3(signature = (texts, threads=None))]
fn compat_windows_many<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
    threads: Option<i64>,
) -> PyResult<U64Array<'py>> {
    let fps =
        py.detach(|| parallel::with_threads(threads, || compat::fingerprint_windows_many(&texts)))?;
    Ok(fps.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySparse>()?;
    m.add_class::<PyHyperplanes>()?;
    m.add_function(wrap_pyfunction!(extended_hash, m)?)?;
    m.add_function(wrap_pyfunction!(minhash_key, m)?)?;
    m.add_function(wrap_pyfunction!(minhash_keys, m)?)?;
    m.add_function(wrap_pyfunction!(minhash_keys_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(group_by_key, m)?)?;
    m.add_function(wrap_pyfunction!(md5_64_many, m)?)?;
    m.add_function(wrap_pyfunction!(compat_windows_many, m)?)?;
    Ok(())
}
