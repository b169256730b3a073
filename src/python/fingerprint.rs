//! Bindings of hashing, tallies, fingerprints and distances.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};

use crate::error::Error;
use crate::fingerprint::hamming;
use crate::fingerprint::simhash::{Hasher, Idf, Weighting};
use crate::fingerprint::tally;
use crate::first_pass::digest::KeySet;
use crate::first_pass::{digest, jsonl, strings};
use crate::runtime::parallel;
use crate::sketch::verify;
use crate::text::features::{FeatureConfig, TokenKind};
use crate::text::hash;
use crate::text::normal::{Fold, Form, Normal};

use super::star::PyKeySet;
use super::verify::PyHashBuffer;

/// A numpy `uint64` array handed to Python.
type U64Array<'py> = Bound<'py, PyArray1<u64>>;

/// A str (hashed as UTF-8) or a bytes-like object.
#[derive(FromPyObject)]
pub enum Data {
    Str(PyBackedStr),
    Bytes(PyBackedBytes),
}

impl AsRef<[u8]> for Data {
    fn as_ref(&self) -> &[u8] {
        match self {
            Data::Str(s) => s.as_bytes(),
            Data::Bytes(b) => b.as_ref(),
        }
    }
}

/// The positions of the texts that must be normalized (`unicode_form`, `casefold`) in Python
/// before the core takes them: the others it normalizes itself when folding with
/// `fold_ascii=casefold`, `fold_wide` for the compatibility forms, `fold_map=True` and
/// `fold_form=unicode_form`.
#[pyfunction]
fn to_normalize(
    py: Python<'_>,
    texts: Vec<PyBackedStr>,
    unicode_form: Option<&str>,
    casefold: bool,
) -> PyResult<Vec<usize>> {
    let normal = Normal {
        form: Form::parse(unicode_form)?,
        casefold,
    };
    Ok(py.detach(|| {
        texts
            .iter()
            .enumerate()
            .filter(|(_, text)| !normal.settled(text))
            .map(|(i, _)| i)
            .collect()
    }))
}

/// The core's folding of one-field texts: ASCII capitals with `ascii`, wide characters with
/// `wide`, and with `map`, the characters of the map of `form` with `ascii` as case folding
/// ([`Fold::of`]).
fn folding(ascii: bool, wide: bool, map: bool, form: Option<&str>) -> PyResult<Fold> {
    if !map {
        return Ok(Fold {
            ascii,
            wide,
            map: &[],
        });
    }
    let normal = Normal {
        form: Form::parse(form)?,
        casefold: ascii,
    };
    Ok(Fold {
        wide,
        ..Fold::of(normal)
    })
}

#[pyfunction]
fn fnv1a_64(data: Data) -> u64 {
    hash::fnv1a_64(data.as_ref())
}

#[pyfunction]
fn fnv1a_64_many<'py>(py: Python<'py>, items: Vec<Data>) -> Bound<'py, PyArray1<u64>> {
    let hashes: Vec<u64> = py.detach(|| items.iter().map(|d| hash::fnv1a_64(d.as_ref())).collect());
    hashes.into_pyarray(py)
}

#[pyfunction]
fn fmix64(x: u64) -> u64 {
    hash::fmix64(x)
}

#[pyfunction]
fn feature_hash(data: Data) -> u64 {
    hash::feature_hash(data.as_ref())
}

#[pyfunction]
fn feature_hash_many<'py>(py: Python<'py>, items: Vec<Data>) -> Bound<'py, PyArray1<u64>> {
    let hashes: Vec<u64> = py.detach(|| {
        items
            .iter()
            .map(|d| hash::feature_hash(d.as_ref()))
            .collect()
    });
    hashes.into_pyarray(py)
}

#[pyfunction]
#[pyo3(signature = (hashes, weights=None))]
fn tallies_int(
    py: Python<'_>,
    hashes: PyReadonlyArray1<'_, u64>,
    weights: Option<PyReadonlyArray1<'_, i64>>,
) -> PyResult<Vec<i128>> {
    let hashes = hashes.as_slice()?;
    let weights = weights.as_ref().map(|w| w.as_slice()).transpose()?;
    let tallies = py.detach(|| tally::tallies_int(hashes, weights))?;
    Ok(tallies.to_vec())
}

#[pyfunction]
fn tallies_float(
    py: Python<'_>,
    hashes: PyReadonlyArray1<'_, u64>,
    weights: PyReadonlyArray1<'_, f64>,
) -> PyResult<Vec<f64>> {
    let (hashes, weights) = (hashes.as_slice()?, weights.as_slice()?);
    let tallies = py.detach(|| tally::tallies_float(hashes, weights))?;
    Ok(tallies.to_vec())
}

#[pyfunction]
fn hamming_one_to_many<'py>(
    py: Python<'py>,
    query: u64,
    fingerprints: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let fingerprints = fingerprints.as_slice()?;
    let out = py.detach(|| hamming::one_to_many(query, fingerprints));
    Ok(out.into_pyarray(py))
}

#[pyfunction]
fn hamming_pairwise<'py>(
    py: Python<'py>,
    a: PyReadonlyArray1<'py, u64>,
    b: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let (a, b) = (a.as_slice()?, b.as_slice()?);
    let out = py.detach(|| hamming::pairwise(a, b))?;
    Ok(out.into_pyarray(py))
}

/// The compiled half of `neardup.Simhasher`: features, weights and tallies of normalized text.
#[pyclass(frozen, name = "Hasher", module = "neardup._core")]
pub struct PyHasher {
    inner: Hasher,
}

impl PyHasher {
    /// The core hasher.
    pub(crate) fn inner(&self) -> &Hasher {
        &self.inner
    }
}

/// Borrows `fields[f][d]` as one slice per field.
fn field_slices(fields: &[Vec<PyBackedStr>]) -> Vec<&[PyBackedStr]> {
    field_slices_of(fields)
}

/// Borrows `fields[f][d]` as one slice per field, whatever a document is.
pub(crate) fn field_slices_of<T>(fields: &[Vec<T>]) -> Vec<&[T]> {
    fields.iter().map(|f| f.as_slice()).collect()
}

#[pymethods]
impl PyHasher {
    #[new]
    #[pyo3(signature = (*, tokens, ngram, weighting, stopwords, field_weights, idf=None))]
    fn new(
        tokens: &str,
        ngram: i64,
        weighting: &str,
        stopwords: Option<Vec<String>>,
        field_weights: Vec<f64>,
        idf: Option<(u64, PyReadonlyArray1<'_, u64>, PyReadonlyArray1<'_, u64>)>,
    ) -> PyResult<Self> {
        let features = FeatureConfig::new(TokenKind::parse(tokens)?, ngram, stopwords)?;
        let idf = match idf {
            Some((documents, keys, dfs)) => Some(Idf::from_frequencies(
                documents,
                keys.as_slice()?,
                dfs.as_slice()?,
            )?),
            None => None,
        };
        let inner = Hasher::new(features, Weighting::parse(weighting)?, idf, field_weights)?;
        Ok(PyHasher { inner })
    }

    /// The features of one normalized text, exactly as hashed.
    fn features(&self, py: Python<'_>, text: PyBackedStr) -> Vec<String> {
        py.detach(|| self.inner.features().features(&text))
    }

    /// The features of one field of a document with the weight each adds, in summation order.
    fn weighted_features(
        &self,
        py: Python<'_>,
        text: PyBackedStr,
        field: usize,
    ) -> Vec<(String, f64)> {
        py.detach(|| self.inner.weighted_features(field, &text))
    }

    /// The features of one field of a document given as pre-split tokens, with their weights.
    fn weighted_features_tokens(
        &self,
        py: Python<'_>,
        tokens: Vec<PyBackedStr>,
        field: usize,
    ) -> Vec<(String, f64)> {
        py.detach(|| self.inner.weighted_features_of(field, &tokens[..]))
    }

    /// Fingerprints of documents given field by field as pre-split tokens: `fields[f][d]` is a
    /// list of tokens.
    #[pyo3(signature = (fields, threads=None))]
    fn fingerprint_tokens_many<'py>(
        &self,
        py: Python<'py>,
        fields: Vec<Vec<Vec<PyBackedStr>>>,
        threads: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let slices = field_slices_of(&fields);
        let fps = py.detach(|| {
            parallel::with_threads(threads, || self.inner.fingerprint_tokens_many(&slices))
        })??;
        Ok(fps.into_pyarray(py))
    }

    /// Document frequencies of feature hashes of documents given as pre-split tokens.
    #[pyo3(signature = (fields, threads=None))]
    fn document_frequencies_tokens<'py>(
        &self,
        py: Python<'py>,
        fields: Vec<Vec<Vec<PyBackedStr>>>,
        threads: Option<i64>,
    ) -> PyResult<(U64Array<'py>, U64Array<'py>)> {
        let slices = field_slices_of(&fields);
        let (keys, dfs) = py.detach(|| {
            parallel::with_threads(threads, || self.inner.document_frequencies_tokens(&slices))
        })??;
        Ok((keys.into_pyarray(py), dfs.into_pyarray(py)))
    }

    /// Fingerprints of documents given field by field: `fields[f][d]`. With `fold_ascii`, the
    /// ASCII capitals of one-field documents are folded to lower case here first, and with
    /// `fold_wide` their wide characters to ASCII (what NFKC makes of them), and with `fold_map`
    /// the characters of the map of `fold_form` (a Unicode form or None) with `fold_ascii` as
    /// case folding (what `to_normalize` lets past Python).
    #[pyo3(signature = (fields, threads=None, fold_ascii=false, fold_wide=false, fold_map=false, fold_form=None))]
    #[allow(clippy::too_many_arguments)]
    fn fingerprint_many<'py>(
        &self,
        py: Python<'py>,
        fields: Vec<Vec<PyBackedStr>>,
        threads: Option<i64>,
        fold_ascii: bool,
        fold_wide: bool,
        fold_map: bool,
        fold_form: Option<&str>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let slices = field_slices(&fields);
        let fold = folding(fold_ascii, fold_wide, fold_map, fold_form)?;
        let fps = py.detach(|| {
            parallel::with_threads(threads, || match (fold != Fold::default(), &slices[..]) {
                (false, _) => self.inner.fingerprint_many(&slices),
                (true, [texts]) => self.inner.fingerprint_many_folded(texts, fold),
                (true, _) => Err(Error::invalid("folding takes documents of one field")),
            })
        })??;
        Ok(fps.into_pyarray(py))
    }

    /// Fingerprints, content keys and, with `sketch=(ngram, size)`, shingle sketches (a negative
    /// size: the whole sets of documents of at most -size shingles, empty for the others) of
    /// documents given field by field: (fingerprints, keys, (offsets, hashes) or None). With
    /// `seen`, a text of one field whose key it holds takes the fingerprint recorded there and
    /// no sketch. `fold_ascii`, `fold_wide`, `fold_map` and `fold_form` fold one-field texts as
    /// in `fingerprint_many`. With `into` (a `HashBuffer`, and `sketch`), the sketches are
    /// appended there instead, each text's at its first occurrence only (a copy of a text of
    /// `seen` or of one earlier in `fields` has an empty one): the offsets are from where `into`
    /// ended, and the hashes an empty array.
    #[pyo3(signature = (fields, threads=None, fold_ascii=false, sketch=None, seen=None, fold_wide=false, fold_map=false, fold_form=None, into=None))]
    #[allow(clippy::too_many_arguments)]
    fn digest_many<'py>(
        &self,
        py: Python<'py>,
        fields: Vec<Vec<PyBackedStr>>,
        threads: Option<i64>,
        fold_ascii: bool,
        sketch: Option<(i64, i64)>,
        seen: Option<PyRef<'py, PyKeySet>>,
        fold_wide: bool,
        fold_map: bool,
        fold_form: Option<&str>,
        into: Option<PyRef<'py, PyHashBuffer>>,
    ) -> PyResult<DigestArrays<'py>> {
        let fold = folding(fold_ascii, fold_wide, fold_map, fold_form)?;
        let config = sketch
            .map(|(ngram, size)| verify::digest_config(ngram, size))
            .transpose()?;
        if into.is_some() && config.is_none() {
            return Err(Error::invalid("into needs a sketch").into());
        }
        let slices = field_slices(&fields);
        let seen = seen.as_deref();
        let mut buffer = into
            .as_deref()
            .map(PyHashBuffer::lock_to_grow)
            .transpose()?;
        let into: Option<&mut Vec<verify::SketchHash>> = buffer.as_deref_mut();
        let d = py.detach(|| {
            with_keys(seen, |keys| {
                parallel::with_threads(threads, || match (into, config) {
                    (Some(buffer), Some(config)) => {
                        digest::digest_into(&self.inner, &slices, fold, config, keys, buffer)
                    }
                    _ => digest::digest_many(&self.inner, &slices, fold, config, keys),
                })
            })
        })???;
        drop(buffer);
        let sketches = config.map(|_| {
            (
                d.sketches.offsets.into_pyarray(py),
                d.sketches.hashes.into_pyarray(py),
            )
        });
        Ok((
            d.fingerprints.into_pyarray(py),
            verify::words_of_keys(&d.sketches.keys).into_pyarray(py),
            sketches,
        ))
    }

    /// Document frequencies of feature hashes: (sorted keys, counts).
    #[pyo3(signature = (fields, threads=None))]
    fn document_frequencies<'py>(
        &self,
        py: Python<'py>,
        fields: Vec<Vec<PyBackedStr>>,
        threads: Option<i64>,
    ) -> PyResult<(U64Array<'py>, U64Array<'py>)> {
        let slices = field_slices(&fields);
        let (keys, dfs) = py.detach(|| {
            parallel::with_threads(threads, || self.inner.document_frequencies(&slices))
        })??;
        Ok((keys.into_pyarray(py), dfs.into_pyarray(py)))
    }
}

/// What `digest_many` hands to Python: fingerprints, content keys, and the sketches' offsets
/// and hashes when asked for.
type DigestArrays<'py> = (
    U64Array<'py>,
    U64Array<'py>,
    Option<(U64Array<'py>, Bound<'py, PyArray1<u64>>)>,
);

/// What the JSONL fast path hands to Python: kinds, fingerprints, lengths, line starts, content
/// keys, and the sketches' offsets and hashes when asked for.
/// `f` of the keys of `seen` (read while `f` runs), or of none.
fn with_keys<R>(seen: Option<&PyKeySet>, f: impl FnOnce(Option<&KeySet>) -> R) -> Result<R, Error> {
    match seen {
        Some(set) => set.read(|keys| f(Some(keys))),
        None => Ok(f(None)),
    }
}

type JsonlArrays<'py> = (
    Bound<'py, PyArray1<u8>>,
    U64Array<'py>,
    Bound<'py, PyArray1<u32>>,
    U64Array<'py>,
    U64Array<'py>,
    Option<(U64Array<'py>, Bound<'py, PyArray1<u64>>)>,
);

/// The JSONL fast path over one block of whole lines: (kind, fingerprint, length) per line,
/// kind 0 blank, 1 fingerprinted, 2 for Python to read; the start of each line; and with
/// `sketch=(ngram, size)` the shingle sketch of each line fingerprinted here. With `seen`, a
/// line whose text's key it holds takes the fingerprint recorded there and no sketch.
#[pyfunction]
#[pyo3(signature = (hasher, block, text_field, id_field, casefold, sketch=None, threads=None, wanted=None, seen=None))]
#[allow(clippy::too_many_arguments)]
fn jsonl_fingerprints<'py>(
    py: Python<'py>,
    hasher: PyRef<'py, PyHasher>,
    block: PyBackedBytes,
    text_field: String,
    id_field: Option<String>,
    casefold: bool,
    sketch: Option<(i64, i64)>,
    threads: Option<i64>,
    wanted: Option<PyReadonlyArray1<'py, bool>>,
    seen: Option<PyRef<'py, PyKeySet>>,
) -> PyResult<JsonlArrays<'py>> {
    let wanted = wanted.as_ref().map(|w| w.as_slice()).transpose()?;
    let inner = hasher.inner();
    let sketch = sketch
        .map(|(ngram, size)| verify::digest_config(ngram, size))
        .transpose()?;
    let seen = seen.as_deref();
    let lines = py.detach(|| {
        with_keys(seen, |keys| {
            parallel::with_threads(threads, || {
                jsonl::fingerprint_lines(
                    inner,
                    &block,
                    &text_field,
                    id_field.as_deref(),
                    casefold,
                    sketch,
                    wanted,
                    keys,
                )
            })
        })
    })???;
    let sketches = lines
        .sketches
        .map(|s| (s.offsets.into_pyarray(py), s.hashes.into_pyarray(py)));
    Ok((
        lines.kinds.into_pyarray(py),
        lines.fingerprints.into_pyarray(py),
        lines.lengths.into_pyarray(py),
        lines.starts.into_pyarray(py),
        verify::words_of_keys(&lines.keys).into_pyarray(py),
        sketches,
    ))
}

/// What the strings fast path hands to Python: kinds, fingerprints, lengths, content keys, and
/// the sketches' offsets and hashes when asked for.
type StringArrays<'py> = (
    Bound<'py, PyArray1<u8>>,
    U64Array<'py>,
    Bound<'py, PyArray1<u32>>,
    U64Array<'py>,
    Option<(U64Array<'py>, Bound<'py, PyArray1<u64>>)>,
);

/// The fast path over a column of strings in Arrow's layout (text i is
/// `data[offsets[i]..offsets[i + 1]]`): (kind, fingerprint, length, key) per text, kind 1
/// digested here, 2 for Python (not ASCII, or not UTF-8); with `sketch=(ngram, size)` the
/// shingle sketch of each text done here. With `seen`, a text whose key it holds takes the
/// fingerprint recorded there and no sketch.
#[pyfunction]
#[pyo3(signature = (hasher, offsets, data, casefold, sketch=None, threads=None, seen=None))]
#[allow(clippy::too_many_arguments)]
fn string_fingerprints<'py>(
    py: Python<'py>,
    hasher: PyRef<'py, PyHasher>,
    offsets: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, u8>,
    casefold: bool,
    sketch: Option<(i64, i64)>,
    threads: Option<i64>,
    seen: Option<PyRef<'py, PyKeySet>>,
) -> PyResult<StringArrays<'py>> {
    let (offsets, data) = (offsets.as_slice()?, data.as_slice()?);
    let inner = hasher.inner();
    let sketch = sketch
        .map(|(ngram, size)| verify::digest_config(ngram, size))
        .transpose()?;
    let seen = seen.as_deref();
    let texts = py.detach(|| {
        with_keys(seen, |keys| {
            parallel::with_threads(threads, || {
                strings::fingerprint_strings(inner, offsets, data, casefold, sketch, keys)
            })
        })
    })???;
    let sketches = texts
        .sketches
        .map(|s| (s.offsets.into_pyarray(py), s.hashes.into_pyarray(py)));
    Ok((
        texts.kinds.into_pyarray(py),
        texts.fingerprints.into_pyarray(py),
        texts.lengths.into_pyarray(py),
        verify::words_of_keys(&texts.keys).into_pyarray(py),
        sketches,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(jsonl_fingerprints, m)?)?;
    m.add_function(wrap_pyfunction!(string_fingerprints, m)?)?;
    m.add_function(wrap_pyfunction!(to_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(fnv1a_64, m)?)?;
    m.add_function(wrap_pyfunction!(fnv1a_64_many, m)?)?;
    m.add_function(wrap_pyfunction!(fmix64, m)?)?;
    m.add_function(wrap_pyfunction!(feature_hash, m)?)?;
    m.add_function(wrap_pyfunction!(feature_hash_many, m)?)?;
    m.add_function(wrap_pyfunction!(tallies_int, m)?)?;
    m.add_function(wrap_pyfunction!(tallies_float, m)?)?;
    m.add_function(wrap_pyfunction!(hamming_one_to_many, m)?)?;
    m.add_function(wrap_pyfunction!(hamming_pairwise, m)?)?;
    m.add_class::<PyHasher>()?;
    Ok(())
}
