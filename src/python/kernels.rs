//! Bindings of the kernels a cluster runs apart (see `neardup.kernels`): the part keys of a
//! search and the pairs of a part, and the stars of verified pairs.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::index::PyPlan;
use super::interrupt;
use crate::candidates::rarity::Rarity;
use crate::candidates::repeats::{
    bits_for, repeated_words as repeated_words_of, slots_of, Repeated, Repeats,
};
use crate::candidates::run_pairs::{
    local_pairs as pairs_over_nodes, pair_blocks as pair_blocks_of, route_pairs,
    run_pairs as pairs_of_runs,
};
use crate::candidates::short_texts::{prefix_lists as prefix_lists_of, Cut, ShortTexts};
use crate::cluster::star::graph_stars;
use crate::error::Error;
use crate::search::bit_order::BitOrder;
use crate::search::cross_search::KeyParts;
use crate::search::limits::Bounded;
use crate::sketch::verify::Ranges;

/// A bit order from its 64 source bits (None: the identity).
fn order_of(order: Option<Vec<u8>>) -> PyResult<BitOrder> {
    match order {
        None => Ok(BitOrder::identity()),
        Some(bits) => {
            let bits: [u8; 64] = bits.try_into().map_err(|b: Vec<u8>| {
                Error::invalid(format!("a bit order names 64 bits, got {}", b.len()))
            })?;
            Ok(BitOrder::new(bits)?)
        }
    }
}

/// The bit order a search of these values uses with `plan` (its 64 source bits, highest first).
#[pyfunction]
fn search_bit_order(
    py: Python<'_>,
    values: PyReadonlyArray1<'_, u64>,
    plan: PyRef<'_, PyPlan>,
) -> PyResult<Vec<u8>> {
    let values = values.as_slice()?;
    let plan = &plan.inner;
    Ok(py.detach(|| BitOrder::choose(values, &[], plan).order().to_vec()))
}

/// The part keys of each value (`plan`'s lead groups each, value after value).
#[pyfunction]
#[pyo3(signature = (values, plan, order=None))]
fn part_keys<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u64>,
    plan: PyRef<'py, PyPlan>,
    order: Option<Vec<u8>>,
) -> PyResult<(Bound<'py, PyArray1<u32>>, usize)> {
    let values = values.as_slice()?;
    let parts = KeyParts::new(&plan.inner, order_of(order)?);
    let keys = py.detach(|| parts.keys(values));
    Ok((keys.into_pyarray(py), parts.groups()))
}

/// The pairs `(a, b, count)` within `k` that the parts of these rows report (values, a < b):
/// past `max_pairs`, no pairs and their exact count.
#[pyfunction]
#[pyo3(signature = (keys, values, k, plan, order=None, max_pairs=None))]
#[allow(clippy::type_complexity)]
fn part_pairs<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'py, u32>,
    values: PyReadonlyArray1<'py, u64>,
    k: i64,
    plan: PyRef<'py, PyPlan>,
    order: Option<Vec<u8>>,
    max_pairs: Option<u64>,
) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>, u64)> {
    let (keys, values) = (keys.as_slice()?, values.as_slice()?);
    let k = crate::search::plan::check_k(k)?;
    let parts = KeyParts::new(&plan.inner, order_of(order)?);
    let found = interrupt::detach(py, || parts.pairs(keys, values, k, max_pairs))??;
    let (a, b, count): (Vec<u64>, Vec<u64>, u64) = match found {
        Bounded::Within(pairs) => {
            let count = pairs.len() as u64;
            let (a, b) = pairs.into_iter().unzip();
            (a, b, count)
        }
        // Past the budget: the count, exact or a lower bound, is over it either way.
        Bounded::Over(count) | Bounded::AtLeast(count) => (Vec::new(), Vec::new(), count),
    };
    Ok((a.into_pyarray(py), b.into_pyarray(py), count))
}

/// The stars of a graph of verified pairs (see `star::graph_stars`): (the node kept in each
/// node's place, their Jaccard).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn graph_stars_of<'py>(
    py: Python<'py>,
    order: PyReadonlyArray1<'py, i64>,
    a: PyReadonlyArray1<'py, u32>,
    b: PyReadonlyArray1<'py, u32>,
    jaccard: PyReadonlyArray1<'py, f32>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f32>>)> {
    let (order, a, b, j) = (
        order.as_slice()?,
        a.as_slice()?,
        b.as_slice()?,
        jaccard.as_slice()?,
    );
    let found = interrupt::detach(py, || graph_stars(order, a, b, j))??;
    Ok((found.kept.into_pyarray(py), found.jaccard.into_pyarray(py)))
}

/// How many of the sketches `hashes[starts[d]..ends[d]]` hold each shingle hash, counted
/// sketch after sketch until `budget` hashes: (hashes, counts), by hash.
#[pyfunction]
#[pyo3(signature = (starts, ends, hashes, budget=crate::candidates::rarity::SAMPLE_HASHES))]
#[allow(clippy::type_complexity)]
fn rarity_counts<'py>(
    py: Python<'py>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u64>,
    budget: usize,
) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>)> {
    let sketches = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    let (h, c) =
        py.detach(|| Rarity::sorted_counts((0..sketches.len()).map(|d| sketches.get(d)), budget));
    Ok((h.into_pyarray(py), c.into_pyarray(py)))
}

/// The values of `hashes` in `[low, high)`, in their order (see
/// [`crate::candidates::rarity::hashes_between`]).
#[pyfunction]
fn hashes_between<'py>(
    py: Python<'py>,
    hashes: PyReadonlyArray1<'py, u64>,
    low: u64,
    high: u64,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let hashes = hashes.as_slice()?;
    let found = py.detach(|| crate::candidates::rarity::hashes_between(hashes, low, high));
    Ok(found.into_pyarray(py))
}

/// The values a sorted array holds at least twice, and how many times each (see
/// [`crate::candidates::rarity::frequent_runs`]).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn frequent_runs<'py>(
    py: Python<'py>,
    sorted: PyReadonlyArray1<'py, u64>,
) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>)> {
    let sorted = sorted.as_slice()?;
    let (h, c) = py.detach(|| crate::candidates::rarity::frequent_runs(sorted))?;
    Ok((h.into_pyarray(py), c.into_pyarray(py)))
}

/// Two tables of counts by hash, `(hashes_a, counts_a)` and `(hashes_b, counts_b)`, added up
/// into one by hash (see [`crate::candidates::rarity::merged_counts`]).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn merged_counts<'py>(
    py: Python<'py>,
    hashes_a: PyReadonlyArray1<'py, u64>,
    counts_a: PyReadonlyArray1<'py, u32>,
    hashes_b: PyReadonlyArray1<'py, u64>,
    counts_b: PyReadonlyArray1<'py, u32>,
) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>)> {
    let a = (hashes_a.as_slice()?, counts_a.as_slice()?);
    let b = (hashes_b.as_slice()?, counts_b.as_slice()?);
    let (h, c) = py.detach(|| crate::candidates::rarity::merged_counts(a, b))?;
    Ok((h.into_pyarray(py), c.into_pyarray(py)))
}

/// The rarity order of a table of frequent hashes `(hashes, counts)`, built once for the
/// [`prefix_lists`] of many chunks (its hash map is built from the table on each call given the
/// table itself: a cost of the table's size per chunk).
#[pyclass(name = "RarityOrder", module = "neardup._core", frozen)]
pub struct PyRarityOrder {
    inner: Rarity,
}

#[pymethods]
impl PyRarityOrder {
    /// The order of the table `(hashes, counts)`, with the marks of `repeats` (or the words of
    /// their table, in pieces: `repeated`). With `every_text`, the table (or the marks) was made
    /// on every text whose lists the order cuts: a hash that counts 0 is held by one text
    /// alone, and `prefix_lists` counts those a list begins with.
    #[new]
    #[pyo3(signature = (hashes, counts, repeats=None, repeated=None, every_text=false))]
    fn new(
        py: Python<'_>,
        hashes: PyReadonlyArray1<'_, u64>,
        counts: PyReadonlyArray1<'_, u32>,
        repeats: Option<PyRef<'_, PyRepeats>>,
        repeated: Option<Vec<PyReadonlyArray1<'_, u64>>>,
        every_text: bool,
    ) -> PyResult<Self> {
        let (hashes, counts) = (hashes.as_slice()?, counts.as_slice()?);
        let repeats = repeats.as_deref();
        let pieces = repeated
            .as_ref()
            .map(|pieces| {
                pieces
                    .iter()
                    .map(|w| w.as_slice())
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        if repeats.is_some() && pieces.is_some() {
            return Err(Error::invalid("give repeats or repeated, not both").into());
        }
        let inner = py.detach(|| -> crate::Result<Rarity> {
            let order = Rarity::new(hashes, counts)?;
            let order = if every_text {
                order.on_every_text()
            } else {
                order
            };
            Ok(match (repeats, pieces) {
                (Some(r), _) => order.with_repeated(r.repeats().repeated()),
                (None, Some(pieces)) => order.with_repeated(Repeated::from_words(pieces.concat())?),
                (None, None) => order,
            })
        })?;
        Ok(PyRarityOrder { inner })
    }

    /// The hashes of the table.
    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// Which shingle hashes more than one text may hold (see `repeats::Repeats`), marked on every
/// text's sketch, for a [`PyRarityOrder`]: two bit tables sized for sketches holding `hashes`
/// hashes in all.
#[pyclass(name = "Repeats", module = "neardup._core", frozen)]
pub struct PyRepeats {
    inner: std::sync::Mutex<Repeats>,
}

impl PyRepeats {
    /// The tables (a call at a time: one holding them runs without the GIL, to its end).
    fn repeats(&self) -> std::sync::MutexGuard<'_, Repeats> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PyRepeats {
    #[new]
    fn new(py: Python<'_>, hashes: u64) -> PyResult<Self> {
        let inner = py.detach(|| Repeats::new(bits_for(hashes)))?;
        Ok(PyRepeats {
            inner: std::sync::Mutex::new(inner),
        })
    }

    /// Marks the shingle hashes of the sketches `hashes[starts[i]:ends[i]]`, each one text's.
    fn add(
        &self,
        py: Python<'_>,
        starts: PyReadonlyArray1<'_, u64>,
        ends: PyReadonlyArray1<'_, u64>,
        hashes: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<()> {
        let sketches = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
        py.detach(|| self.repeats().add_sketches(&sketches));
        Ok(())
    }

    /// The bits of a slot number (each table holds 2**bits slots).
    #[getter]
    fn bits(&self) -> u32 {
        self.repeats().bits()
    }

    /// The share of slots marked repeated.
    fn share(&self) -> f64 {
        self.repeats().share()
    }
}

/// The bits of a slot number of the [`PyRepeats`] tables for sketches holding `hashes` hashes in
/// all.
#[pyfunction]
fn repeat_bits(hashes: u64) -> u32 {
    bits_for(hashes)
}

/// The slots (of `bits` bits) of the shingle hashes of the sketches `hashes[starts[i]:ends[i]]`,
/// sorted, each at most twice: a share of the texts' part of the marks of [`PyRepeats`].
#[pyfunction]
fn repeat_slots<'py>(
    py: Python<'py>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u64>,
    bits: u32,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let sketches = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    let slots = py.detach(|| slots_of(&sketches, bits))?;
    Ok(slots.into_pyarray(py))
}

/// The `words` words from word `first_word` on of the table of repeated slots that `slots`
/// mark (every share's [`repeat_slots`] in that range): a slot given twice is repeated.
#[pyfunction]
fn repeated_words<'py>(
    py: Python<'py>,
    slots: PyReadonlyArray1<'py, u32>,
    first_word: u64,
    words: usize,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let slots = slots.as_slice()?;
    let table = py.detach(|| repeated_words_of(slots, first_word, words))?;
    Ok(table.into_pyarray(py))
}

/// Each sketch's prefix list (see `short_texts::prefix_lists`) in the order of the frequent
/// hashes `table` (a `RarityOrder`, or `(hashes, counts)`), cut for `threshold` and, for
/// sketches cut at `size`, the `band` below it: (lengths, hashes, sizes, alone), `alone[d]`
/// the first hashes of list d that no other text holds (0 unless the order was made with
/// `every_text`).
#[pyfunction]
#[pyo3(signature = (starts, ends, hashes, table, threshold, size=1024, band=0.0))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn prefix_lists<'py>(
    py: Python<'py>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u64>,
    table: &Bound<'py, PyAny>,
    threshold: f64,
    size: i64,
    band: f64,
) -> PyResult<(
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
)> {
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(Error::invalid(format!("threshold must be in (0, 1], got {threshold}")).into());
    }
    if !(0.0..=1.0).contains(&band) {
        return Err(Error::invalid(format!("band must be in [0, 1], got {band}")).into());
    }
    let size = crate::sketch::verify::shingle_config(1, size)?.size;
    let sketches = Ranges::new(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    let (built, made);
    let rarity = if let Ok(order) = table.cast::<PyRarityOrder>() {
        built = order.borrow();
        &built.inner
    } else {
        let (h, c): (PyReadonlyArray1<'py, u64>, PyReadonlyArray1<'py, u32>) = table.extract()?;
        made = Rarity::new(h.as_slice()?, c.as_slice()?)?;
        &made
    };
    let cut = Cut::new(threshold, Some((size, band)));
    let lists = py.detach(|| prefix_lists_of(&sketches, rarity, cut));
    Ok((
        lists.lengths.into_pyarray(py),
        lists.hashes.into_pyarray(py),
        lists.sizes.into_pyarray(py),
        lists.alone.into_pyarray(py),
    ))
}

/// The candidate pairs of prefix runs over the cap, split (see `ShortTexts::from_runs`): text
/// `texts[i]` holds prefix hash `keys[i]`; text t's list is `hashes[starts[t]..ends[t]]`, of a
/// set of `sizes[t]` shingles. Returns (a, b, skipped): the pairs (a < b, each once) of the runs
/// the split gives, and the pairs of groups it could not split, which are left out.
#[pyfunction]
#[pyo3(signature = (keys, texts, starts, ends, hashes, sizes, threshold, size=1024, band=0.0))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn split_run_pairs<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'py, u64>,
    texts: PyReadonlyArray1<'py, u32>,
    starts: PyReadonlyArray1<'py, u64>,
    ends: PyReadonlyArray1<'py, u64>,
    hashes: PyReadonlyArray1<'py, u64>,
    sizes: PyReadonlyArray1<'py, u32>,
    threshold: f64,
    size: i64,
    band: f64,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, u64)> {
    let (keys, texts, sizes) = (keys.as_slice()?, texts.as_slice()?, sizes.as_slice()?);
    if keys.len() != texts.len() {
        return Err(
            Error::invalid(format!("{} keys but {} texts", keys.len(), texts.len())).into(),
        );
    }
    let lists = Ranges::unordered(starts.as_slice()?, ends.as_slice()?, hashes.as_slice()?)?;
    if lists.len() != sizes.len() {
        return Err(
            Error::invalid(format!("{} lists but {} sizes", lists.len(), sizes.len())).into(),
        );
    }
    let size = crate::sketch::verify::shingle_config(1, size)?.size;
    let cut = Cut::new(threshold, Some((size, band)));
    let pairs: Vec<(u32, u32)> = Vec::new();
    let found = interrupt::detach(py, || -> Result<_, Error> {
        let given: Vec<(u64, u32)> = keys.iter().copied().zip(texts.iter().copied()).collect();
        let runs = ShortTexts::from_runs(
            lists.len(),
            (0..lists.len()).map(|t| (t as u32, lists.get(t), sizes[t] as usize)),
            cut,
            &given,
        )?;
        let mut pairs = pairs;
        for r in 0..runs.run_count() {
            let (a, b) = runs.run_bounds(r);
            let run = &runs.members()[a..b];
            for (i, &x) in run.iter().enumerate() {
                pairs.extend(run[i + 1..].iter().map(|&y| (x.min(y), x.max(y))));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        Ok((pairs, runs.skipped_pairs()))
    })??;
    let (pairs, skipped) = found;
    let (a, b): (Vec<i64>, Vec<i64>) = pairs
        .into_iter()
        .map(|(x, y)| (i64::from(x), i64::from(y)))
        .unzip();
    Ok((a.into_pyarray(py), b.into_pyarray(py), skipped))
}

/// Pairs handed to Python: (a, b, pairs listed, hashes over the cap, their nodes).
type RunPairArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    u64,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i64>>,
);

/// The candidate pairs of one task's prefix rows (row i: node `nodes[i]` holds `hashes[i]`; see
/// `run_pairs`): (a, b, listed, over_hashes, over_nodes): the pairs a < b, sorted, each once;
/// the pairs of the runs of at most `cap` nodes, a pair once a hash; the rows of larger runs.
#[pyfunction]
fn run_pairs<'py>(
    py: Python<'py>,
    hashes: PyReadonlyArray1<'py, u64>,
    nodes: PyReadonlyArray1<'py, i64>,
    cap: usize,
) -> PyResult<RunPairArrays<'py>> {
    let (hashes, nodes) = (hashes.as_slice()?, nodes.as_slice()?);
    if hashes.len() != nodes.len() {
        return Err(
            Error::invalid(format!("{} hashes but {} nodes", hashes.len(), nodes.len())).into(),
        );
    }
    let found = interrupt::detach(py, || {
        let mut rows: Vec<(u64, i64)> = hashes.iter().copied().zip(nodes.iter().copied()).collect();
        pairs_of_runs(&mut rows, cap)
    })?;
    let (a, b): (Vec<i64>, Vec<i64>) = found.pairs.into_iter().unzip();
    let (over_hashes, over_nodes): (Vec<u64>, Vec<i64>) = found.over_cap.into_iter().unzip();
    Ok((
        a.into_pyarray(py),
        b.into_pyarray(py),
        found.listed,
        over_hashes.into_pyarray(py),
        over_nodes.into_pyarray(py),
    ))
}

/// Pairs `(a[p], b[p])` of global rows over partitions that start at `starts`: as many a as b,
/// and starts that do not decrease.
fn check_pairs(a: &[i64], b: &[i64], starts: &[i64]) -> PyResult<()> {
    if a.len() != b.len() {
        return Err(Error::invalid(format!("{} rows a but {} rows b", a.len(), b.len())).into());
    }
    if starts.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::invalid("the partitions' starts must not decrease").into());
    }
    Ok(())
}

/// The partition that checks each pair `(a[p], b[p])` of global rows (`starts`: each
/// partition's first row): see [`crate::candidates::run_pairs::route_pairs`].
#[pyfunction]
fn routed_pairs<'py>(
    py: Python<'py>,
    a: PyReadonlyArray1<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
    starts: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let (a, b, starts) = (a.as_slice()?, b.as_slice()?, starts.as_slice()?);
    check_pairs(a, b, starts)?;
    let parts = py
        .detach(|| route_pairs(a, b, starts))
        .ok_or_else(|| Error::invalid("a row lies before the first partition"))?;
    Ok(parts.into_pyarray(py))
}

/// A task's pairs `(a[p], b[p])` of global rows, each once, by the partitions of their rows
/// (see [`crate::candidates::run_pairs::pair_blocks`]): `(a, b, blocks)`, blocks `(lo, hi, i, j)`
/// one after the other in one array.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn pair_blocks<'py>(
    py: Python<'py>,
    a: PyReadonlyArray1<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
    starts: PyReadonlyArray1<'py, i64>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let (a, b, starts) = (a.as_slice()?, b.as_slice()?, starts.as_slice()?);
    check_pairs(a, b, starts)?;
    let found = py
        .detach(|| pair_blocks_of(a, b, starts))
        .ok_or_else(|| Error::invalid("a row lies before the first partition"))?;
    let blocks: Vec<i64> = found.blocks.iter().flatten().map(|&v| v as i64).collect();
    Ok((
        found.a.into_pyarray(py),
        found.b.into_pyarray(py),
        blocks.into_pyarray(py),
    ))
}

/// A task's pairs `(a[p], b[p])` over the nodes they name (see `local_pairs`): (nodes, at_a,
/// at_b), each distinct pair once.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn local_pairs<'py>(
    py: Python<'py>,
    a: PyReadonlyArray1<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
)> {
    let (a, b) = (a.as_slice()?, b.as_slice()?);
    if a.len() != b.len() || a.len() >= u32::MAX as usize / 2 {
        return Err(Error::invalid(format!("{} nodes a but {} nodes b", a.len(), b.len())).into());
    }
    let (nodes, at_a, at_b) = interrupt::detach(py, || pairs_over_nodes(a, b))?;
    Ok((
        nodes.into_pyarray(py),
        at_a.into_pyarray(py),
        at_b.into_pyarray(py),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SKETCH_HASH_BITS", crate::sketch::verify::SketchHash::BITS)?;
    m.add("SKETCH_CHECK_BIT", crate::sketch::verify::CHECK_BIT)?;
    m.add(
        "SHORT_TEXT_RUN_CAP",
        crate::candidates::short_texts::RUN_CAP,
    )?;
    m.add(
        "PART_KEY_LEAD_BITS",
        crate::search::cross_search::MAX_LEAD_BITS,
    )?;
    m.add_function(wrap_pyfunction!(search_bit_order, m)?)?;
    m.add_function(wrap_pyfunction!(rarity_counts, m)?)?;
    m.add_function(wrap_pyfunction!(merged_counts, m)?)?;
    m.add_function(wrap_pyfunction!(hashes_between, m)?)?;
    m.add_function(wrap_pyfunction!(frequent_runs, m)?)?;
    m.add_class::<PyRarityOrder>()?;
    m.add_class::<PyRepeats>()?;
    m.add("REPEATS_MOST_BITS", crate::candidates::repeats::MOST_BITS)?;
    m.add_function(wrap_pyfunction!(repeat_bits, m)?)?;
    m.add_function(wrap_pyfunction!(repeat_slots, m)?)?;
    m.add_function(wrap_pyfunction!(repeated_words, m)?)?;
    m.add_function(wrap_pyfunction!(prefix_lists, m)?)?;
    m.add_function(wrap_pyfunction!(split_run_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(run_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(local_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(routed_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(pair_blocks, m)?)?;
    m.add("PREFIX_EXTRA", crate::candidates::short_texts::EXTRA)?;
    m.add_function(wrap_pyfunction!(part_keys, m)?)?;
    m.add_function(wrap_pyfunction!(part_pairs, m)?)?;
    m.add("graph_stars", wrap_pyfunction!(graph_stars_of, m)?)?;
    Ok(())
}
