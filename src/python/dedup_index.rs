//! Bindings of the dedup index (`dedup_index::DedupIndex`) and of deduplicating a batch against it.

use std::path::{Path, PathBuf};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use super::errors::on_path;
use super::interrupt;
use crate::candidates::short_texts::Cut;
use crate::error::Error;
use crate::runtime::parallel;
use crate::search::plan::check_k;
use crate::sketch::compact_sketch::{encode_many, Compact, Sketches};
use crate::sketch::exact_sets::{cut_sets, near_rows, offsets_of, ExactSets};
use crate::sketch::verify::{self, Ranges};
use crate::store::dedup_index::{
    dedup_against, short_sets, Batch, Chunk, DedupIndex, NewIds, NewSets, PostingRun, Rows,
    Section, Settings,
};
use crate::store::index_prefixes::{Lists, PrefixSettings};

/// What `dedup` hands to Python: (kept new row or -1, index row or -1, Jaccard, batch pairs
/// not compared).
type AgainstArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
    u64,
);

/// Hashes and what they belong to, handed to Python: a rarity table (hashes, counts).
type HashesAndRows<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>);

/// Prefix postings handed to Python: (hashes, places, rows).
type PlacedPostings<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
);

/// A sorted run of prefix postings from Python: (hashes, places, rows, base).
type PostingsIn<'py> = (
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u32>,
    PyReadonlyArray1<'py, u32>,
    u64,
);

/// Prefix lists from Python: (lengths, hashes, sizes), one list a document.
type ListsIn<'py> = (
    PyReadonlyArray1<'py, u32>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u32>,
);

/// Lists borrowed from their three arrays.
fn lists_of<'a>(lists: &'a Option<ListsIn<'_>>) -> PyResult<Option<Lists<'a>>> {
    lists
        .as_ref()
        .map(|(l, h, n)| Ok(Lists::new(l.as_slice()?, h.as_slice()?, n.as_slice()?)?))
        .transpose()
}

/// Compact sketches handed to Python: (lengths, words).
type CompactArrays<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>);

/// Short texts' sets handed to Python: (lengths, the sets one after the other).
type ShortSets<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>);

/// Exact sets from Python: (lengths, the sets one after the other).
type SetsIn<'py> = (PyReadonlyArray1<'py, u32>, PyReadonlyArray1<'py, u32>);

/// Exact sets handed to Python: (lengths, the sets one after the other).
type SetsOut<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>);

/// The offsets of exact sets from Python and their values, checked for `n` documents.
fn sets_of<'a>(
    sets: &'a Option<SetsIn<'_>>,
    offsets: &'a mut Vec<u64>,
    n: usize,
) -> PyResult<Option<ExactSets<'a>>> {
    let Some((lens, values)) = sets else {
        return Ok(None);
    };
    *offsets = offsets_of(lens.as_slice()?);
    Ok(Some(ExactSets::new(n, offsets, values.as_slice()?)?))
}

/// Compact sketches borrowed from two arrays: lengths and words.
fn sketches_of<'a>(
    lens: &'a PyReadonlyArray1<'_, u32>,
    words: &'a PyReadonlyArray1<'_, u32>,
) -> PyResult<Sketches<'a>> {
    Ok(Sketches {
        lens: lens.as_slice()?,
        words: words.as_slice()?,
    })
}

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
    lens: PyReadonlyArray1<'_, u32>,
    words: PyReadonlyArray1<'_, u32>,
    ids: &Bound<'_, PyAny>,
    lists: Option<ListsIn<'_>>,
    sets: Option<SetsIn<'_>>,
    set_rows: Option<PyReadonlyArray1<'_, u32>>,
) -> PyResult<()> {
    let lists = lists_of(&lists)?;
    let ids = ids_in(ids, index.settings().string_ids)?;
    let (fps, keys) = (fps.as_slice()?, verify::keys_of_words(keys.as_slice()?)?);
    let mut offsets = Vec::new();
    let n_sets = sets.as_ref().map_or(0, |(l, _)| l.len().unwrap_or(0));
    let picked = set_rows.as_ref().map(|r| r.as_slice()).transpose()?;
    let sets = sets_of(&sets, &mut offsets, n_sets)?.map(|sets| NewSets { sets, rows: picked });
    let sketches = sketches_of(&lens, &words)?;
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
        sets,
    };
    interrupt::detach(py, || index.save(path, Some(&rows), lists.as_ref()))?
        .map_err(|e| on_path(e, path))
}

#[pymethods]
impl PyDedupIndex {
    /// An empty index in memory with these settings (save documents to a file with
    /// `save_appended`). With `prefixes = (threshold, band, size, table hashes, table counts)`,
    /// the index keeps prefix postings, its documents listed at that cut in the order of that
    /// rarity table (see `index_prefixes`).
    #[staticmethod]
    #[pyo3(signature = (sketch_words, sketch_bits, shingle, k, threshold, string_ids, meta, prefixes=None, exact=false))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn empty(
        sketch_words: i64,
        sketch_bits: i64,
        shingle: u32,
        k: i64,
        threshold: f64,
        string_ids: bool,
        meta: Vec<u8>,
        prefixes: Option<(
            f64,
            f64,
            u32,
            PyReadonlyArray1<'_, u64>,
            PyReadonlyArray1<'_, u32>,
        )>,
        exact: bool,
    ) -> PyResult<Self> {
        let mut inner = DedupIndex::new(Settings {
            sketch: Compact::new(sketch_words, sketch_bits)?,
            shingle,
            k: check_k(k)?,
            threshold,
            string_ids,
            exact,
            meta,
        })?;
        if let Some((threshold, band, size, hashes, counts)) = prefixes {
            inner.set_prefixes(
                PrefixSettings {
                    threshold,
                    band,
                    size,
                },
                hashes.as_slice()?.to_vec(),
                counts.as_slice()?.to_vec(),
            )?;
        }
        Ok(PyDedupIndex { inner })
    }

    /// `(threshold, band, size)` of the index's prefix postings, or None.
    #[getter]
    fn prefix_settings(&self) -> Option<(f64, f64, u32)> {
        self.inner
            .prefixes()
            .settings
            .as_ref()
            .map(|p| (p.threshold, p.band, p.size))
    }

    /// The frozen rarity table of the prefix postings: (hashes, counts), copies.
    fn prefix_table<'py>(&self, py: Python<'py>) -> PyResult<HashesAndRows<'py>> {
        let (h, c) = self.inner.guarded(|ix| {
            let p = ix.prefixes();
            (p.table_hashes.to_vec(), p.table_counts.to_vec())
        })?;
        Ok((h.into_pyarray(py), c.into_pyarray(py)))
    }

    /// How many prefix postings the index holds.
    #[getter]
    fn postings(&self) -> usize {
        self.inner.prefixes().hashes.len()
    }

    /// The prefix postings of new documents (content keys as 64-bit words, lists) at this
    /// index's cut: (hashes, places, rows), sorted, the rows numbered from 0 (a run of
    /// `save_streamed`, whose base places them).
    fn new_postings<'py>(
        &self,
        py: Python<'py>,
        keys: PyReadonlyArray1<'py, u64>,
        lists: ListsIn<'py>,
    ) -> PyResult<PlacedPostings<'py>> {
        let keys = verify::keys_of_words(keys.as_slice()?)?;
        let lists = Some(lists);
        let lists = lists_of(&lists)?;
        let got = py.detach(|| self.inner.new_postings(lists.as_ref(), keys))?;
        let h: Vec<u64> = got.iter().map(|p| p.0).collect();
        let at: Vec<u32> = got.iter().map(|p| p.1).collect();
        let r: Vec<u32> = got.iter().map(|p| p.2).collect();
        Ok((h.into_pyarray(py), at.into_pyarray(py), r.into_pyarray(py)))
    }

    /// Writes this index followed by new documents (fingerprints, content keys, compact sketches
    /// as lengths and words, ids, and for an index with prefixes their prefix lists as
    /// (lengths, hashes, sizes), and for an index with exact sets theirs as (lengths, values),
    /// or the sets of more rows and `set_rows`, the new documents' rows among them) to `path`
    /// (atomically: a temporary file renamed over it).
    #[pyo3(signature = (path, fps, keys, lens, words, ids, lists=None, sets=None, set_rows=None))]
    #[allow(clippy::too_many_arguments)]
    fn save_appended(
        &self,
        py: Python<'_>,
        path: PathBuf,
        fps: PyReadonlyArray1<'_, u64>,
        keys: PyReadonlyArray1<'_, u64>,
        lens: PyReadonlyArray1<'_, u32>,
        words: PyReadonlyArray1<'_, u32>,
        ids: &Bound<'_, PyAny>,
        lists: Option<ListsIn<'_>>,
        sets: Option<SetsIn<'_>>,
        set_rows: Option<PyReadonlyArray1<'_, u32>>,
    ) -> PyResult<()> {
        save_with(
            py,
            &self.inner,
            &path,
            fps,
            keys,
            lens,
            words,
            ids,
            lists,
            sets,
            set_rows,
        )
    }

    /// Writes this index followed by `n_new` documents to `path` (atomically: a temporary file
    /// renamed over it), holding one array of them at a time: `fill(section)` returns an
    /// iterable of arrays of each section, in file order: "fps" (uint64), "keys" (uint64, two
    /// words a key), "lens" (uint32), "words" (uint32), "ids" (int64 ids, or the uint64 lengths
    /// of string ids) and "id_bytes" (uint8: the string ids' `new_id_bytes` bytes). An index with
    /// prefixes takes the new documents' `postings` too, in sorted runs `(hashes, places, rows,
    /// base)`
    /// (see `new_postings`; a run's rows are counted on from its base), merged as they are
    /// written (the runs may be memory-mapped: none is copied). An index with exact sets takes
    /// "set_lens" (uint32, a length a document) and "set_values" (uint32: their
    /// `new_set_values` values) too.
    #[pyo3(signature = (path, n_new, new_id_bytes, fill, postings=None, new_set_values=0))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn save_streamed(
        &self,
        py: Python<'_>,
        path: PathBuf,
        n_new: usize,
        new_id_bytes: u64,
        fill: Py<PyAny>,
        postings: Option<Vec<PostingsIn<'_>>>,
        new_set_values: u64,
    ) -> PyResult<()> {
        let held = postings.unwrap_or_default();
        let new_postings = held
            .iter()
            .map(|(h, at, r, base)| {
                Ok(PostingRun {
                    hashes: h.as_slice()?,
                    places: at.as_slice()?,
                    rows: r.as_slice()?,
                    base: *base,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut raised: Option<PyErr> = None;
        let got = py.detach(|| {
            self.inner.save_streamed(
                &path,
                n_new,
                new_id_bytes,
                new_set_values,
                &new_postings,
                |section, sink: &mut crate::store::dedup_index::Sink<'_>| {
                    Python::attach(|py| {
                        let mut pass = || -> PyResult<crate::error::Result<()>> {
                            for item in fill.bind(py).call1((section_name(section),))?.try_iter()? {
                                let item = item?;
                                let done = match section {
                                    Section::Fps | Section::Keys => {
                                        let a = item.extract::<PyReadonlyArray1<'_, u64>>()?;
                                        let v = a.as_slice()?;
                                        py.detach(|| sink(Chunk::U64(v)))
                                    }
                                    Section::Lens
                                    | Section::Words
                                    | Section::SetLens
                                    | Section::SetValues => {
                                        let a = item.extract::<PyReadonlyArray1<'_, u32>>()?;
                                        let v = a.as_slice()?;
                                        py.detach(|| sink(Chunk::U32(v)))
                                    }
                                    Section::Ids if self.inner.settings().string_ids => {
                                        let a = item.extract::<PyReadonlyArray1<'_, u64>>()?;
                                        let v = a.as_slice()?;
                                        py.detach(|| sink(Chunk::U64(v)))
                                    }
                                    Section::Ids => {
                                        let a = item.extract::<PyReadonlyArray1<'_, i64>>()?;
                                        let v = a.as_slice()?;
                                        py.detach(|| sink(Chunk::I64(v)))
                                    }
                                    Section::IdBytes => {
                                        let a = item.extract::<PyReadonlyArray1<'_, u8>>()?;
                                        let v = a.as_slice()?;
                                        py.detach(|| sink(Chunk::Bytes(v)))
                                    }
                                };
                                if done.is_err() {
                                    return Ok(done);
                                }
                            }
                            Ok(Ok(()))
                        };
                        pass().unwrap_or_else(|err| {
                            raised = Some(err);
                            Err(Error::invalid("stopped by an error in Python"))
                        })
                    })
                },
            )
        });
        if let Some(err) = raised {
            return Err(err);
        }
        got.map_err(|e| on_path(e, &path))
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
    fn sketch_words(&self) -> usize {
        self.inner.settings().sketch.words()
    }

    #[getter]
    fn sketch_bits(&self) -> u32 {
        self.inner.settings().sketch.bits()
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

    /// Whether the index keeps each document's exact set.
    #[getter]
    fn exact(&self) -> bool {
        self.inner.settings().exact
    }

    /// Document `row`'s exact set (a copy), or None when the index keeps none.
    fn exact_set<'py>(
        &self,
        py: Python<'py>,
        row: usize,
    ) -> PyResult<Option<Bound<'py, PyArray1<u32>>>> {
        self.row_ok(row)?;
        let got = self
            .inner
            .guarded(|ix| ix.exact_set(row).map(<[u32]>::to_vec))?;
        Ok(got.map(|v| v.into_pyarray(py)))
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

    /// The content keys, in index order, as 64-bit words (two a key; a copy).
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        Ok(self
            .inner
            .guarded(|ix| ix.key_words().to_vec())?
            .into_pyarray(py))
    }

    /// Document `row`'s stored compact sketch: (its shingles or 2^32 - 1, its words).
    fn sketch<'py>(
        &self,
        py: Python<'py>,
        row: usize,
    ) -> PyResult<(u32, Bound<'py, PyArray1<u32>>)> {
        self.row_ok(row)?;
        let (len, words) = self
            .inner
            .guarded(|ix| (ix.sketch(row).0, ix.sketch(row).1.to_vec()))?;
        Ok((len, words.into_pyarray(py)))
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

    /// Deduplicates a batch (fingerprints, content keys, compact sketches as lengths and words)
    /// against the index and itself: (new row kept in each row's place or -1, index row it
    /// duplicates or -1, Jaccard). With `max_pairs`, TooManyPairsError for a search estimated
    /// past the work limit or finding more than `max_pairs` candidate pairs. Given the batch's
    /// prefix `lists` (lengths, hashes, sizes; see `prefix_lists`), the candidates are those of
    /// prefix filtering at `threshold` and `band` below it (for the index's sketch size), and the
    /// last value returned counts the batch's candidate pairs not compared. An index with exact
    /// sets takes the batch's (`sets`: lengths, values).
    #[pyo3(signature = (fps, keys, lens, words, k, threshold, threads=None, max_pairs=None, lists=None, band=0.0, sets=None))]
    #[allow(clippy::too_many_arguments)]
    fn dedup<'py>(
        &self,
        py: Python<'py>,
        fps: PyReadonlyArray1<'py, u64>,
        keys: PyReadonlyArray1<'py, u64>,
        lens: PyReadonlyArray1<'py, u32>,
        words: PyReadonlyArray1<'py, u32>,
        k: i64,
        threshold: f64,
        threads: Option<i64>,
        max_pairs: Option<u64>,
        lists: Option<ListsIn<'py>>,
        band: f64,
        sets: Option<SetsIn<'py>>,
    ) -> PyResult<AgainstArrays<'py>> {
        let k_u = check_k(k)?;
        if !(0.0..=1.0).contains(&band) {
            return Err(Error::invalid(format!("band must be in [0, 1], got {band}")).into());
        }
        let lists = lists_of(&lists)?;
        let size = self
            .inner
            .prefixes()
            .settings
            .as_ref()
            .map_or(1, |p| p.size as usize);
        let prefixes = lists
            .as_ref()
            .map(|l| (l, Cut::new(threshold, Some((size, band)))));
        let (fps, keys) = (fps.as_slice()?, verify::keys_of_words(keys.as_slice()?)?);
        let sketches = sketches_of(&lens, &words)?;
        let mut offsets = Vec::new();
        let sets = sets_of(&sets, &mut offsets, fps.len())?;
        let batch = Batch {
            fps,
            keys,
            sketches,
            sets,
        };
        let index = &self.inner;
        let got = interrupt::detach(py, || {
            parallel::with_threads(threads, || {
                index.guarded(|ix| dedup_against(ix, &batch, k_u, threshold, max_pairs, prefixes))
            })
        })???;
        let got = got?;
        Ok((
            got.kept.into_pyarray(py),
            got.index_row.into_pyarray(py),
            got.jaccard.into_pyarray(py),
            got.skipped_pairs,
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

/// The compact sketches (`sketch_words` words of `sketch_bits`-bit bins) of documents given by
/// their whole shingle sets, document d's `hashes[starts[d]..ends[d]]`: (lengths, words).
#[pyfunction]
#[pyo3(signature = (starts, ends, hashes, sketch_words, sketch_bits, threads=None))]
pub fn compact_sketches<'py>(
    py: Python<'py>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u64>,
    sketch_words: i64,
    sketch_bits: i64,
    threads: Option<i64>,
) -> PyResult<CompactArrays<'py>> {
    let shape = Compact::new(sketch_words, sketch_bits)?;
    let ranges = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    let (lens, words) =
        py.detach(|| parallel::with_threads(threads, || encode_many(shape, &ranges)))?;
    Ok((lens.into_pyarray(py), words.into_pyarray(py)))
}

/// The exact sets ([`crate::sketch::exact_sets`]) of documents given by their whole shingle
/// sets, document d's `hashes[starts[d]..ends[d]]`: (lengths, values).
#[pyfunction]
pub fn exact_sets<'py>(
    py: Python<'py>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u64>,
) -> PyResult<SetsOut<'py>> {
    let ranges = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    let (lens, values) = py.detach(|| cut_sets(&ranges));
    Ok((lens.into_pyarray(py), values.into_pyarray(py)))
}

/// The Jaccard estimates of pairs of compact sketches: rows `i[p]` of (`lens_a`, `words_a`) and
/// `j[p]` of (`lens_b`, `words_b`).
#[pyfunction]
#[pyo3(signature = (lens_a, words_a, lens_b, words_b, sketch_words, sketch_bits))]
pub fn compact_jaccard<'py>(
    py: Python<'py>,
    lens_a: PyReadonlyArray1<'py, u32>,
    words_a: PyReadonlyArray1<'py, u32>,
    lens_b: PyReadonlyArray1<'py, u32>,
    words_b: PyReadonlyArray1<'py, u32>,
    sketch_words: i64,
    sketch_bits: i64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    // Every estimate is at least 0: at threshold 0 the index's rule gives them all.
    near_jaccard(
        py,
        lens_a,
        words_a,
        lens_b,
        words_b,
        sketch_words,
        sketch_bits,
        0.0,
        None,
        None,
    )
}

/// The Jaccard of pairs as a dedup index decides them (`exact_sets::near`): rows `p` of (`lens_a`,
/// `words_a`) and of (`lens_b`, `words_b`), with their exact sets (`sets_a`, `sets_b`: lengths,
/// values) in an exact index; 0 for a pair below `threshold`.
#[pyfunction]
#[pyo3(signature = (lens_a, words_a, lens_b, words_b, sketch_words, sketch_bits, threshold, sets_a=None, sets_b=None))]
#[allow(clippy::too_many_arguments)]
pub fn near_jaccard<'py>(
    py: Python<'py>,
    lens_a: PyReadonlyArray1<'py, u32>,
    words_a: PyReadonlyArray1<'py, u32>,
    lens_b: PyReadonlyArray1<'py, u32>,
    words_b: PyReadonlyArray1<'py, u32>,
    sketch_words: i64,
    sketch_bits: i64,
    threshold: f64,
    sets_a: Option<SetsIn<'py>>,
    sets_b: Option<SetsIn<'py>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let shape = Compact::new(sketch_words, sketch_bits)?;
    let (a, b) = (
        sketches_of(&lens_a, &words_a)?,
        sketches_of(&lens_b, &words_b)?,
    );
    let n = a.lens.len();
    a.check(n, shape)?;
    b.check(n, shape)?;
    if sets_a.is_some() != sets_b.is_some() {
        return Err(Error::invalid("exact sets on one side of the pairs only").into());
    }
    let (mut offsets_a, mut offsets_b) = (Vec::new(), Vec::new());
    let sa = sets_of(&sets_a, &mut offsets_a, n)?;
    let sb = sets_of(&sets_b, &mut offsets_b, n)?;
    let sets = sa.zip(sb);
    let got = py.detach(|| near_rows(shape, &a, &b, sets, threshold));
    Ok(got.into_pyarray(py))
}

/// The name of a section of `save_streamed`, as Python's `fill` is given it.
fn section_name(section: Section) -> &'static str {
    match section {
        Section::Fps => "fps",
        Section::Keys => "keys",
        Section::Lens => "lens",
        Section::Words => "words",
        Section::Ids => "ids",
        Section::IdBytes => "id_bytes",
        Section::SetLens => "set_lens",
        Section::SetValues => "set_values",
    }
}

/// The short texts among compact sketches, as deduplicating a batch against a dedup index
/// takes them: per document the length of its set (0: not a short text) and the sets one after
/// the other (shingle hashes cut to 32 bits, ascending).
#[pyfunction]
#[pyo3(signature = (fps, lens, words, sketch_words, sketch_bits))]
pub fn compact_short_sets<'py>(
    py: Python<'py>,
    fps: PyReadonlyArray1<'py, u64>,
    lens: PyReadonlyArray1<'py, u32>,
    words: PyReadonlyArray1<'py, u32>,
    sketch_words: i64,
    sketch_bits: i64,
) -> PyResult<ShortSets<'py>> {
    let shape = Compact::new(sketch_words, sketch_bits)?;
    let sketches = sketches_of(&lens, &words)?;
    let fps = fps.as_slice()?;
    let (lengths, values) = py.detach(|| short_sets(shape, fps, &sketches))?;
    Ok((lengths.into_pyarray(py), values.into_pyarray(py)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDedupIndex>()?;
    m.add_function(wrap_pyfunction!(compact_short_sets, m)?)?;
    m.add_function(wrap_pyfunction!(compact_sketches, m)?)?;
    m.add_function(wrap_pyfunction!(exact_sets, m)?)?;
    m.add_function(wrap_pyfunction!(near_jaccard, m)?)?;
    m.add_function(wrap_pyfunction!(compact_jaccard, m)?)
}
