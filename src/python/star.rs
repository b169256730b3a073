//! Bindings of star clustering: the candidate structure of a corpus, its stars, and the set of
//! content keys a first pass has seen.

use std::collections::HashMap;
use std::sync::RwLock;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::candidates::short_texts::{Cut, ShortTexts};
use crate::cluster::star::{Candidates, Verification};
use crate::error::Error;
use crate::first_pass::digest::KeySet;
use crate::runtime::parallel;
use crate::search::plan;
use crate::search::plan::{Plan, Workload};
use crate::sketch::verify::{self, Ranges};
use crate::text::hash::FoldState;

use super::index::PyPlan;
use super::interrupt;

/// The shingle sets of some rows: (rows, starts, ends, hashes).
type ShortSets<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
);

/// The prefix lists of some rows: (rows, starts, ends, hashes, sizes, alone).
type PrefixSets<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u32>,
    PyReadonlyArray1<'py, u32>,
);

/// Stars handed to Python: (the row kept in each row's place, their Jaccard, the pairs decided
/// on an estimate in the band as (row a, row b, 1 if taken else 0), flattened).
type StarArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<i64>>,
    u64,
);

/// Exact Jaccards of pairs of rows: (rows a, rows b, Jaccards).
type ExactPairs<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, f64>,
);

/// The candidate structure of a corpus (see `star::Candidates`), computed once and used to list
/// the rows whose sketches are needed and to take the stars.
#[pyclass(frozen, name = "StarCandidates", module = "neardup._core")]
pub struct PyStarCandidates {
    inner: Candidates,
    /// The pairs the prefix runs put before the centers of the last `stars` call.
    listed: std::sync::atomic::AtomicU64,
}

#[pymethods]
impl PyStarCandidates {
    /// With `short = (rows, starts, ends, hashes)`, the shingle sets of some rows (row
    /// `rows[i]`'s is `hashes[starts[i]..ends[i]]`) and the `threshold` of the stars, short
    /// texts are also candidates of each other (see `short_texts`).
    ///
    /// With `prefixes = (rows, starts, ends, hashes, sizes, alone)`, the prefix lists of some
    /// rows (`prefix_lists`; row `rows[i]`'s is `hashes[starts[i]..ends[i]]`, of a set of
    /// `sizes[i]` shingles, its first `alone[i]` held by no other text), every text is a candidate of those sharing a prefix hash, and no pairs of
    /// fingerprints within `k` are searched: the prefixes were cut for `threshold` and, for
    /// sketches cut at `size`, the `band` below it.
    #[new]
    #[pyo3(signature = (fingerprints, keys, k, plan=None, threads=None, max_pairs=Some(crate::search::limits::DEFAULT_MAX_PAIRS), short=None, threshold=None, prefixes=None, band=0.0, size=1024),
        text_signature = "(fingerprints, keys, k, plan=None, threads=None, max_pairs=100000000, short=None, threshold=None, prefixes=None, band=0.0, size=1024)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        fingerprints: PyReadonlyArray1<'_, u64>,
        keys: PyReadonlyArray1<'_, u64>,
        k: i64,
        plan: Option<PyRef<'_, PyPlan>>,
        threads: Option<i64>,
        max_pairs: Option<u64>,
        short: Option<ShortSets<'_>>,
        threshold: Option<f64>,
        prefixes: Option<PrefixSets<'_>>,
        band: f64,
        size: i64,
    ) -> PyResult<Self> {
        let (fps, keys) = (
            fingerprints.as_slice()?,
            verify::keys_of_words(keys.as_slice()?)?,
        );
        let k_u = plan::check_k(k)?;
        let plan = match plan {
            Some(p) => p.inner.clone(),
            None => Plan::choose(k, fps.len() as u64, None, Workload::Batch)?,
        };
        if let Some((rows, starts, ends, hashes, sizes, alone)) = &prefixes {
            let Some(threshold) = threshold else {
                return Err(Error::invalid("prefixes need a threshold").into());
            };
            if short.is_some() {
                return Err(Error::invalid("give prefixes or short, not both").into());
            }
            let lists =
                Ranges::unordered(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
            let (rows, sizes, alone) = (rows.as_slice()?, sizes.as_slice()?, alone.as_slice()?);
            let size = verify::shingle_config(1, size)?.size;
            let cut = Cut::new(threshold, Some((size, band)));
            let inner = interrupt::detach(py, || {
                parallel::with_threads(threads, || {
                    Candidates::searched(fps, keys, None, max_pairs)?
                        .with_prefixes(rows, &lists, sizes, alone, cut)
                })
            })???;
            return Ok(PyStarCandidates {
                inner,
                listed: Default::default(),
            });
        }
        let short = match (&short, threshold) {
            (None, None) => None,
            (Some((rows, starts, ends, hashes)), Some(threshold)) => Some((
                rows.as_slice()?,
                Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?,
                threshold,
            )),
            _ => {
                return Err(
                    Error::invalid("short needs a threshold, and a threshold needs short").into(),
                )
            }
        };
        let inner = interrupt::detach(py, || {
            parallel::with_threads(threads, || {
                let found = Candidates::new(fps, keys, k_u, &plan, max_pairs)?;
                match short {
                    Some((rows, sets, threshold)) => found.with_short_texts(rows, &sets, threshold),
                    None => Ok(found),
                }
            })
        })???;
        Ok(PyStarCandidates {
            inner,
            listed: Default::default(),
        })
    }

    /// Candidate pairs of short texts not compared: those of a group sharing a prefix that could
    /// not be split further, was over the cap and was not one shingle set.
    #[getter]
    fn skipped_pairs(&self) -> u64 {
        self.inner.skipped_pairs()
    }

    /// The candidate pairs of the prefix runs (a pair in several runs counts in each).
    #[getter]
    fn prefix_pairs(&self) -> u64 {
        self.inner.prefix_pairs()
    }

    /// The pairs the prefix runs put before a center in the last `stars` call, each once (a
    /// center and a text not yet taken that share a prefix hash); those that the length and
    /// positional filters let through are compared.
    #[getter]
    fn pairs_listed(&self) -> u64 {
        self.listed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The pairs of distinct fingerprints within k (what `max_pairs` bounds).
    #[getter]
    fn pair_count(&self) -> usize {
        self.inner.pair_count()
    }

    /// The rows whose sketches `stars` may read.
    fn rows<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        py.detach(|| self.inner.rows()).into_pyarray(py)
    }

    /// Star clusters: (the row kept in each row's place, their Jaccard, the pairs of rows
    /// decided on an estimate in the band, flattened, the candidate pairs compared). Rows are taken as centers in `order`;
    /// with `threshold`, candidates are checked by the sketches (row d's is
    /// `hashes[starts[d]..ends[d]]`, bottom-`size`); a pair whose estimate (a sketch being cut)
    /// lies within `band` of the threshold is decided by its Jaccard in `exact = (rows a, rows
    /// b, Jaccards)` (a < b, the first rows of their texts) when given, else on the estimate,
    /// and listed.
    #[pyo3(signature = (order, threshold=None, starts=None, ends=None, hashes=None, size=1024, band=0.0, exact=None))]
    #[allow(clippy::too_many_arguments)]
    fn stars<'py>(
        &self,
        py: Python<'py>,
        order: PyReadonlyArray1<'py, i64>,
        threshold: Option<f64>,
        starts: Option<PyReadonlyArray1<'py, u64>>,
        ends: Option<PyReadonlyArray1<'py, u64>>,
        hashes: Option<PyReadonlyArray1<'py, u64>>,
        size: i64,
        band: f64,
        exact: Option<ExactPairs<'py>>,
    ) -> PyResult<StarArrays<'py>> {
        if !(0.0..=1.0).contains(&band) {
            return Err(Error::invalid(format!("band must be in [0, 1], got {band}")).into());
        }
        let known = match &exact {
            Some(pairs) => exact_map(pairs)?,
            None => HashMap::default(),
        };
        let verification = match (threshold, &starts, &ends, &hashes) {
            (None, None, None, None) => None,
            (Some(threshold), Some(s), Some(e), Some(h)) => Some(Verification {
                sketches: Ranges::new(s.as_slice()?, e.as_slice()?, h.as_slice()?)?,
                size: verify::shingle_config(1, size)?.size,
                threshold,
                band,
                exact: Some(&known),
            }),
            _ => {
                return Err(Error::invalid(
                    "threshold needs starts, ends and hashes, and they need a threshold",
                )
                .into())
            }
        };
        let order = order.as_slice()?;
        let found = interrupt::detach(py, || self.inner.stars(order, verification))??;
        self.listed
            .store(found.listed, std::sync::atomic::Ordering::Relaxed);
        let undecided: Vec<i64> = found
            .undecided
            .iter()
            .flat_map(|&(a, b, taken)| [a, b, i64::from(taken)])
            .collect();
        Ok((
            found.kept.into_pyarray(py),
            found.jaccard.into_pyarray(py),
            undecided.into_pyarray(py),
            found.checks,
        ))
    }

    /// The Jaccards of stars whose pairs in the band were decided on estimates, with the exact
    /// Jaccards `exact = (rows a, rows b, Jaccards)` of those pairs (which decided them alike):
    /// a copy of `jaccard` where each removed row of such a pair has the exact one.
    fn patch_jaccards<'py>(
        &self,
        py: Python<'py>,
        kept: PyReadonlyArray1<'py, i64>,
        jaccard: PyReadonlyArray1<'py, f32>,
        exact: ExactPairs<'py>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let known = exact_map(&exact)?;
        let kept = kept.as_slice()?;
        let mut out = jaccard.as_slice()?.to_vec();
        self.inner.patch_jaccards(kept, &mut out, &known)?;
        Ok(out.into_pyarray(py))
    }
}

/// Exact Jaccards of pairs of rows, by (smaller row, larger row).
fn exact_map(exact: &ExactPairs<'_>) -> PyResult<HashMap<(i64, i64), f64, FoldState>> {
    let (a, b, j) = (
        exact.0.as_slice()?,
        exact.1.as_slice()?,
        exact.2.as_slice()?,
    );
    if a.len() != b.len() || a.len() != j.len() {
        return Err(Error::invalid("exact needs as many rows a, rows b and Jaccards").into());
    }
    Ok(a.iter()
        .zip(b)
        .zip(j)
        .map(|((&x, &y), &v)| ((x.min(y), x.max(y)), v))
        .collect())
}

/// The content keys seen so far in a first pass, with their texts' fingerprints (see
/// `digest::KeySet`).
#[pyclass(frozen, name = "KeySet", module = "neardup._core")]
pub struct PyKeySet {
    inner: RwLock<KeySet>,
}

impl PyKeySet {
    /// `f` of the keys, read while no `first_seen` writes them (call it with the GIL released).
    pub fn read<R>(&self, f: impl FnOnce(&KeySet) -> R) -> Result<R, Error> {
        let keys = self.inner.read().map_err(|_| poisoned())?;
        Ok(f(&keys))
    }
}

fn poisoned() -> Error {
    Error::invalid("the key set was poisoned by an earlier panic")
}

#[pymethods]
impl PyKeySet {
    #[new]
    fn new() -> Self {
        PyKeySet {
            inner: RwLock::new(KeySet::default()),
        }
    }

    /// For each key, whether it is seen for the first time (then recorded with its row's
    /// fingerprint).
    fn first_seen<'py>(
        &self,
        py: Python<'py>,
        keys: PyReadonlyArray1<'py, u64>,
        fingerprints: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let (keys, fingerprints) = (
            verify::keys_of_words(keys.as_slice()?)?,
            fingerprints.as_slice()?,
        );
        let mask = py.detach(|| {
            let mut set = self.inner.write().map_err(|_| poisoned())?;
            set.first_seen(keys, fingerprints)
        })?;
        Ok(mask.into_pyarray(py))
    }

    fn __len__(&self) -> usize {
        self.inner.read().map(|set| set.len()).unwrap_or(0)
    }
}

/// Verified pairs handed to Python: (row a, row b, their Jaccard), a < b.
type PairArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
);

/// Every pair of short texts (see `short_texts`) at Jaccard >= `threshold`, whatever their
/// fingerprints: row `rows[i]`'s shingle set is `hashes[starts[i]..ends[i]]` (one row per text;
/// sets of more than `SHORT_TEXT_SHINGLES` hashes take no part). More than `max_pairs` candidate
/// pairs is refused.
#[pyfunction]
#[pyo3(signature = (rows, starts, ends, hashes, threshold, size=1024, max_pairs=None))]
#[allow(clippy::too_many_arguments)]
fn short_text_pairs<'py>(
    py: Python<'py>,
    rows: PyReadonlyArray1<'py, i64>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u64>,
    threshold: f64,
    size: i64,
    max_pairs: Option<u64>,
) -> PyResult<PairArrays<'py>> {
    let rows = rows.as_slice()?;
    let sets = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    if rows.len() != sets.len() || rows.len() >= u32::MAX as usize {
        return Err(Error::invalid(format!(
            "{} rows but {} shingle sets",
            rows.len(),
            sets.len()
        ))
        .into());
    }
    let size = verify::shingle_config(1, size)?.size;
    let pairs = interrupt::detach(py, || {
        let short = ShortTexts::new(
            rows.len(),
            (0..rows.len()).map(|i| (i as u32, sets.get(i))),
            threshold,
        )?;
        short.verified_pairs(size, max_pairs)
    })??;
    let (mut a, mut b, mut j) = (
        Vec::with_capacity(pairs.len()),
        Vec::with_capacity(pairs.len()),
        Vec::with_capacity(pairs.len()),
    );
    for (x, y, s) in pairs {
        let (x, y) = (rows[x as usize], rows[y as usize]);
        a.push(x.min(y));
        b.push(x.max(y));
        j.push(s);
    }
    Ok((a.into_pyarray(py), b.into_pyarray(py), j.into_pyarray(py)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(short_text_pairs, m)?)?;
    m.add_class::<PyKeySet>()?;
    m.add("SHORT_TEXT_SHINGLES", crate::candidates::short_texts::SHORT)?;
    m.add_class::<PyStarCandidates>()?;
    Ok(())
}
