//! Bindings of shingle sketches and the Jaccard check of candidate pairs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::error::Error;
use crate::runtime::parallel;
use crate::sketch::verify::{self, Ranges};

/// Sketches handed to Python: (offsets, hashes, content keys).
type SketchArrays<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
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
    let s =
        py.detach(|| parallel::with_threads(threads, || verify::try_sketches(config, &texts)))??;
    Ok((
        s.offsets.into_pyarray(py),
        s.hashes.into_pyarray(py),
        verify::words_of_keys(&s.keys).into_pyarray(py),
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
    hashes: PyReadonlyArray1<'py, u64>,
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

/// The Jaccard similarity of each pair p's sketches: `hashes_a[starts_a[p]..ends_a[p]]` and
/// `hashes_b[starts_b[p]..ends_b[p]]` (two buffers, read where they lie: nothing is gathered).
#[pyfunction]
#[pyo3(signature = (starts_a, ends_a, hashes_a, starts_b, ends_b, hashes_b, size, threads=None))]
#[allow(clippy::too_many_arguments)]
fn sketch_jaccard_zip<'py>(
    py: Python<'py>,
    starts_a: PyReadonlyArray1<'py, u64>,
    ends_a: PyReadonlyArray1<'py, u64>,
    hashes_a: PyReadonlyArray1<'py, u64>,
    starts_b: PyReadonlyArray1<'py, u64>,
    ends_b: PyReadonlyArray1<'py, u64>,
    hashes_b: PyReadonlyArray1<'py, u64>,
    size: i64,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let size = verify::shingle_config(1, size)?.size;
    let a = Ranges::new(
        starts_a.as_slice()?,
        ends_a.as_slice()?,
        hashes_a.as_slice()?,
    )?;
    let b = Ranges::new(
        starts_b.as_slice()?,
        ends_b.as_slice()?,
        hashes_b.as_slice()?,
    )?;
    let out =
        py.detach(|| parallel::with_threads(threads, || verify::jaccard_zip(&a, &b, size)))??;
    Ok(out.into_pyarray(py))
}

/// A part's sketches: row d's is `hashes[starts[d]..ends[d]]`.
type PartArrays<'py> = (
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
);

/// The Jaccard similarity of the sketches of each pair of rows `(i[p], j[p])`, the rows those
/// of `parts` (starts, ends, hashes) one after another: sketches read where they lie, in
/// several buffers. A pair below `at_least` (`cut_at_least` when a sketch is cut) gets -1.
/// The sketches are those of digest files (sorted, distinct): only their ranges are checked
/// (see [`Ranges::unordered`]).
#[pyfunction]
#[pyo3(signature = (parts, i, j, size, at_least=0.0, cut_at_least=0.0, threads=None))]
#[allow(clippy::too_many_arguments)]
fn sketch_jaccard_parts<'py>(
    py: Python<'py>,
    parts: Vec<PartArrays<'py>>,
    i: PyReadonlyArray1<'py, i64>,
    j: PyReadonlyArray1<'py, i64>,
    size: i64,
    at_least: f64,
    cut_at_least: f64,
    threads: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let size = verify::shingle_config(1, size)?.size;
    let ranges = parts
        .iter()
        .map(|(s, e, h)| -> PyResult<Ranges<'_>> {
            Ok(Ranges::unordered(
                s.as_slice()?,
                e.as_slice()?,
                h.as_slice()?,
            )?)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let (i, j) = (i.as_slice()?, j.as_slice()?);
    let out = py.detach(|| {
        parallel::with_threads(threads, || {
            verify::jaccard_parts(&ranges, size, i, j, (at_least, cut_at_least))
        })
    })??;
    Ok(out.into_pyarray(py))
}

/// Sketch hashes gathered chunk by chunk, then handed to numpy whole. The buffer grows where
/// it lies when the system can (a large one is remapped, not copied), and the numpy array takes
/// it over without a copy: gathering N hashes holds about N, where a numpy buffer copied as it
/// grew held up to twice them while copying. A first pass writes its sketches here directly
/// (`Hasher.digest_many(into=...)`), and reads the last ones where they lie ([`Self::view`]).
#[pyclass(frozen, name = "HashBuffer", module = "neardup._core")]
pub struct PyHashBuffer {
    inner: Mutex<Vec<verify::SketchHash>>,
    /// The views of the buffer alive (see [`Self::view`]): while there are any, it neither
    /// grows nor is taken, so that their memory stays where it is.
    lent: AtomicUsize,
}

/// What keeps a view of a [`PyHashBuffer`] valid: the buffer itself, lent out until this goes.
#[pyclass(frozen, module = "neardup._core")]
struct HashLease {
    buffer: Py<PyHashBuffer>,
}

impl Drop for HashLease {
    fn drop(&mut self) {
        self.buffer.get().lent.fetch_sub(1, Ordering::SeqCst);
    }
}

#[pymethods]
impl PyHashBuffer {
    #[new]
    fn new() -> Self {
        PyHashBuffer {
            inner: Mutex::new(Vec::new()),
            lent: AtomicUsize::new(0),
        }
    }

    /// Appends `hashes`.
    fn extend(&self, hashes: PyReadonlyArray1<'_, verify::SketchHash>) -> PyResult<()> {
        let hashes = hashes.as_slice()?;
        let mut buffer = self.lock_to_grow()?;
        buffer.try_reserve(hashes.len()).map_err(|_| {
            Error::OutOfMemory(format!("{} sketch hashes", buffer.len() + hashes.len()))
        })?;
        buffer.extend_from_slice(hashes);
        Ok(())
    }

    /// Appends `hashes[starts[d]..ends[d]]` for each d, in order.
    fn extend_ranges(
        &self,
        hashes: PyReadonlyArray1<'_, verify::SketchHash>,
        starts: PyReadonlyArray1<'_, u64>,
        ends: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<()> {
        let (hashes, starts, ends) = (hashes.as_slice()?, starts.as_slice()?, ends.as_slice()?);
        let ranges = verify::Ranges::new(starts, ends, hashes)?;
        let total: usize = (0..ranges.len()).map(|d| ranges.get(d).len()).sum();
        let mut buffer = self.lock_to_grow()?;
        buffer
            .try_reserve(total)
            .map_err(|_| Error::OutOfMemory(format!("{} sketch hashes", buffer.len() + total)))?;
        for d in 0..ranges.len() {
            buffer.extend_from_slice(ranges.get(d));
        }
        Ok(())
    }

    /// Every hash appended since the last take, as a numpy array; the buffer is left empty.
    fn take<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<verify::SketchHash>>> {
        let taken = std::mem::take(&mut *self.lock_to_grow()?);
        Ok(taken.into_pyarray(py))
    }

    /// The hashes `start..end` as a read-only numpy array over the buffer itself, not a copy:
    /// until it (and every array made from it) is gone, the buffer refuses to grow or be taken.
    fn view<'py>(
        slf: &Bound<'py, Self>,
        start: usize,
        end: usize,
    ) -> PyResult<Bound<'py, PyArray1<verify::SketchHash>>> {
        let this = slf.get();
        let buffer = this.lock()?;
        if start > end || end > buffer.len() {
            return Err(Error::invalid(format!(
                "a view of hashes {start}..{end} of {}",
                buffer.len()
            ))
            .into());
        }
        this.lent.fetch_add(1, Ordering::SeqCst);
        let lease = Bound::new(
            slf.py(),
            HashLease {
                buffer: slf.clone().unbind(),
            },
        );
        let lease = match lease {
            Ok(lease) => lease,
            Err(e) => {
                this.lent.fetch_sub(1, Ordering::SeqCst);
                return Err(e);
            }
        };
        let hashes = numpy::ndarray::ArrayView1::from(&buffer[start..end]);
        // SAFETY: the lease is the array's base: while it lives, `lent` is above zero and the
        // buffer neither grows, shrinks nor is taken (`lock_to_grow`), so the memory viewed stays
        // where it is; the lease holds the buffer itself alive.
        let array = unsafe { PyArray1::borrow_from_array(&hashes, lease.into_any()) };
        let readonly = array.readwrite().make_nonwriteable();
        Ok((*readonly).clone())
    }

    fn __len__(&self) -> usize {
        self.inner.lock().map(|b| b.len()).unwrap_or(0)
    }
}

impl PyHashBuffer {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Vec<verify::SketchHash>>> {
        self.inner
            .lock()
            .map_err(|_| Error::invalid("the hash buffer was poisoned by an earlier panic").into())
    }

    /// The buffer, to change: refused while a view of it is alive.
    pub fn lock_to_grow(&self) -> PyResult<std::sync::MutexGuard<'_, Vec<verify::SketchHash>>> {
        let buffer = self.lock()?;
        if self.lent.load(Ordering::SeqCst) > 0 {
            return Err(Error::invalid(
                "the hash buffer is read through a view still alive: it cannot change",
            )
            .into());
        }
        Ok(buffer)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyHashBuffer>()?;
    m.add_function(wrap_pyfunction!(shingle_sketches, m)?)?;
    m.add_function(wrap_pyfunction!(sketch_jaccard, m)?)?;
    m.add_function(wrap_pyfunction!(sketch_jaccard_zip, m)?)?;
    m.add_function(wrap_pyfunction!(sketch_jaccard_parts, m)?)?;
    Ok(())
}
