"""Which k? An estimate, on the user's own corpus, of the candidate radius ``k`` to dedup with
fingerprint candidates or without verification.

``k`` plays no part in ``neardup dedup``'s default, prefix candidates (documents sharing a rare
shingle, decided by their shingles' Jaccard): for it, ``neardup tune`` shows what each threshold
removes (:mod:`neardup.threshold_table`). :func:`tune` measures which ``k`` suits a corpus for
the modes that use one, instead of guessing. By default it tunes the **verified** dedup with
fingerprint candidates (``candidates="fingerprint"``: the fingerprints within ``k`` propose
pairs, the word-shingle Jaccard decides), where ``k`` buys recall with candidate checks;
``verify=False`` (``neardup tune --no-verify``) tunes the fingerprint-only dedup, where ``k``
trades recall for precision.

1. **Digests**: every document is fingerprinted with the hasher (8 bytes a document), with the
   content key of its normalized text (verified mode).
2. **The population of pairs.** Verified mode: exact copies (equal content key and fingerprint)
   are collapsed into one *text*, since dedup finds them by their content key at any ``k``, and
   texts without features (fingerprint 0: no word) are left out, since they are duplicates of
   their copies only; the pairs are the pairs of distinct texts with features. Fingerprint-only
   mode: every pair of documents, copies included (each copy is a pair that mode removes).
3. **Pairs at each distance**: identical fingerprints are collapsed and the index's batch mode
   (:func:`neardup.find_all`, exact) lists every pair of distinct fingerprints within ``max_k``;
   the number of pairs at each distance d = 0..max_k follows from the counts of each fingerprint
   (the same step as the dedup report's histogram), so a corpus full of copies costs nothing more.
4. **A seeded sample per distance**: up to ``sample`` pairs at each distance, drawn uniformly
   without replacement from all the pairs at that distance (the same seed and numpy version draw
   the same pairs; a pair of distinct fingerprints standing for c_a x c_b pairs weighs that
   much). Only the sampled documents' texts are needed: the command reads its input a second time
   for them (stdin is copied to a temporary file on the first pass) and never holds the corpus.
5. **Exact Jaccard** of each sampled pair: the sets of word shingles (``shingle`` consecutive
   tokens joined by one space; a text of fewer tokens is one shingle of them all) of the texts as
   the hasher normalizes them (its ``unicode_form`` and ``casefold``, its ``tokenizer`` if it has
   one, else neardup's word tokens), whatever the hasher's own features are, so that hashers of
   different settings are judged by one yardstick. A pair is a true near-duplicate when its
   Jaccard is >= ``threshold`` (3 words and 0.8: dedup's defaults, and the definition of the
   ground truth of the Debian corpus in ``../shared/data``).

**Verified mode: recall and cost.** With p(d) the share of sampled pairs at distance d that are
near-duplicates and pairs(d) the number of pairs there, the near-duplicate pairs at d are
estimated as pairs(d) x p(d); the *recall within k* is the share of those within ``max_k`` that
lie within k, and the recommended k is the **smallest** whose recall within k reaches
``target_recall`` (0.99): the least candidates for that recall. Each row also gives the cost, the
candidate pairs within k per near-duplicate pair (how many pairs dedup may have to verify for
each one it finds), and the *precision*, weighted by documents: a document's precision within k
is the share of its candidates (distinct texts within k) that are near-duplicates of it, and the
reported figure is its mean over the texts that have a candidate within k (likewise at each
distance d). So each text weighs 1, however many candidates it has: a few hundred short,
similar files that are all within k of each other (n^2 / 2 pairs) weigh as much as a few hundred
documents, not as tens of thousands of pairs. It is estimated from the sample by weighting each
sampled pair (x, y) by 1/c(x) + 1/c(y), c the number of candidates of each text (exact: counted
from the pair list), times pairs(d)/sampled(d) for its distance (a ratio estimator; exact when
every pair is sampled).

**Uncertainty.** The recall within k is a ratio of sums of pairs(d) x p(d); its standard error
(``recall_se``) comes from the binomial error of each p(d) (with the finite-population correction:
0 when every pair at d is sampled) by the delta method, with p(1 - p) taken at (hits + 1) /
(sampled + 2), so that a distance where no sampled pair is a near-duplicate still counts as
uncertain: with 200 pairs, up to 1.5% of its pairs may be near-duplicates (95%, the rule of
three), which at a distance of millions of pairs can be many. The recall is relative to the
near-duplicates found within ``max_k``; those beyond it are not seen: when near-duplicates still
appear at ``max_k``, the verdict says to raise it.

**Fingerprint-only mode** (``verify=False``): the precision at each distance is the share of
sampled pairs that are near-duplicates; *within* k, the precision of reporting every pair at
distance <= k, which weighs the precision at each distance by the number of pairs there. The
recommended k is the largest whose precision within k reaches ``target_precision`` (0.9).

The same sampled pairs are also measured with every shingle size of ``shingles`` (one tokenization
per document, a few set operations per pair), so one can see how the answer depends on what one
calls a duplicate: single words forgive reordering, 3-word shingles do not.

Each share at a distance comes from up to ``sample`` pairs: at 200 pairs and a share of 0.9 its
standard error is about 0.02; raise ``sample`` for finer answers (the cost grows with the
sample, not the corpus).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .chunks import CHUNK_SIZE, count_docs, in_chunks
from .deprecation import renamed
from .hasher import Simhasher
from .pair_sample import (
    SampledPairs,
    _document_precision,
    _duplicates,
    _jaccard,
    _max_k,
    _recall_se,
    _shingle_set,
    precision_within,
    recall_within,
    recommend,
    recommend_recall,
    sample_mode_pairs,
    sample_pairs,
    sample_text_pairs,
    shingles,
)
from .pipeline import FirstPass
from .progress import log, progress_bar
from .sources import _documents, check_corpus_arguments
from .tune_result import TARGET_PRECISION, TARGET_RECALL, TuneResult, TuneRow
from .validate import integer

__all__ = [
    "SampledPairs",
    "TuneResult",
    "TuneRow",
    "measure",
    "precision_within",
    "recall_within",
    "recommend",
    "recommend_recall",
    "sample_pairs",
    "sample_text_pairs",
    "shingles",
    "tune",
]


@renamed(ngram="shingle", ngrams="shingles")
def measure(
    sampled: SampledPairs,
    text_of: Callable[[int], str] | Mapping[int, str],
    *,
    hasher: Simhasher | None = None,
    shingle: int = 3,
    shingles: Iterable[int] = (1, 2, 3),
    threshold: float = 0.8,
    target_precision: float | None = None,
    target_recall: float | None = None,
    documents: int = 0,
    sample: int = 0,
    seed: int = 0,
) -> TuneResult:
    """The Jaccard of every sampled pair, and the curve and recommendation from them: of the
    verified mode when ``sampled`` comes from :func:`sample_text_pairs`, else of the
    fingerprint-only mode.

    Args:
        sampled: from :func:`sample_text_pairs` or :func:`sample_pairs` (its ``jaccard`` is filled in).
        text_of: the text of a document row (a function or a mapping).
        hasher: whose normalization and tokenizer cut the texts into words (default: neardup's).
        shingle, shingles, threshold, target_precision, target_recall: as for :func:`tune`.
        documents, sample, seed: recorded in the result.
    """
    verify = sampled.texts is not None
    shingle, sizes, threshold, target = _check(
        shingle, shingles, threshold, target_precision, target_recall, verify
    )
    words = _word_hasher(hasher)
    get = text_of.__getitem__ if isinstance(text_of, Mapping) else text_of
    tokens = {row: words.features(get(row)) for row in sorted(sampled.rows)}
    a, b = sampled.a.tolist(), sampled.b.tolist()
    for n in sizes:
        sets = {row: _shingle_set(t, n) for row, t in tokens.items()}
        sampled.jaccard[n] = np.array(
            [_jaccard(sets[x], sets[y]) for x, y in zip(a, b)], dtype=np.float64
        )
    pairs = sampled.pairs
    width = sampled.max_k + 1
    distance = sampled.distance.astype(np.int64)
    taken = np.bincount(distance, minlength=width)
    precision: dict[int, np.ndarray] = {}
    hits: dict[int, np.ndarray] = {}
    for n in sizes:
        hits[n] = np.bincount(
            distance, weights=(sampled.jaccard[n] >= threshold).astype(np.float64), minlength=width
        )
        precision[n] = np.where((pairs > 0) & (taken > 0), hits[n] / np.maximum(taken, 1), math.nan)
    duplicates = _duplicates(pairs, precision[shingle])
    found = np.cumsum(duplicates)
    counts_within = np.cumsum(pairs)
    recall: dict[int, list[float]] = {}
    if verify:
        within = {
            n: _document_precision(sampled, sampled.jaccard[n] >= threshold)[1] for n in sizes
        }
        at = _document_precision(sampled, sampled.jaccard[shingle] >= threshold)[0]
        recall = {n: recall_within(pairs, precision[n]).tolist() for n in sizes}
        by_shingle = {n: recommend_recall(pairs, precision[n], target) for n in sizes}
        se = _recall_se(pairs, hits[shingle], taken)
    else:
        within = {n: precision_within(pairs, precision[n]) for n in sizes}
        at = precision[shingle]
        by_shingle = {n: recommend(pairs, precision[n], target) for n in sizes}
    rows = []
    for d in range(width):
        values = sampled.jaccard[shingle][distance == d].tolist()
        rows.append(
            TuneRow(
                k=d,
                pairs=int(pairs[d]),
                sampled=len(values),
                mean_jaccard=statistics.fmean(values) if values else math.nan,
                median_jaccard=statistics.median(values) if values else math.nan,
                precision=float(at[d]),
                pairs_within=int(counts_within[d]),
                precision_within=float(within[shingle][d]),
                duplicates_within=float(found[d]) if counts_within[d] else math.nan,
                pair_precision=float(precision[shingle][d]),
                duplicates=float(duplicates[d]) if pairs[d] else math.nan,
                candidates_per_duplicate=float(counts_within[d] / found[d])
                if found[d] > 0
                else math.nan,
                texts=int(sampled.texts_at[d]) if sampled.texts_at is not None else None,
                texts_within=int(sampled.texts_within[d])
                if sampled.texts_within is not None
                else None,
                recall_within=recall[shingle][d] if verify else math.nan,
                recall_se=float(se[d]) if verify else math.nan,
            )
        )
    return TuneResult(
        rows=rows,
        recommended_k=by_shingle[shingle],
        recommended_by_shingle=by_shingle,
        precision_within_by_shingle={
            n: np.asarray(within[n], dtype=np.float64).tolist() for n in sizes
        },
        sampled=sampled,
        documents=documents,
        shingle=shingle,
        threshold=threshold,
        target_precision=None if verify else target,
        sample=sample,
        seed=seed,
        verify=verify,
        target_recall=target if verify else None,
        texts=sampled.texts,
        copies=sampled.copies,
        featureless=sampled.featureless,
        recall_within_by_shingle=recall,
    )


@renamed(column="text_field", ngram="shingle", ngrams="shingles")
def tune(
    docs: Any,
    *,
    hasher: Simhasher | None = None,
    verify: bool = True,
    max_k: int = 8,
    sample: int = 200,
    shingle: int = 3,
    shingles: Iterable[int] = (1, 2, 3),
    target_recall: float | None = None,
    target_precision: float | None = None,
    threshold: float = 0.8,
    seed: int = 0,
    text_field: str | None = None,
    threads: int | None = None,
    progress: bool = False,
) -> TuneResult:
    """Measures, on a corpus, how many pairs at each Hamming distance are near-duplicates, and
    recommends a ``k``.

    ``k`` is the radius of fingerprint candidates (``dedup(candidates="fingerprint")``) and of the
    fingerprint-only dedup; ``neardup.dedup``'s default, prefix candidates, finds every pair at the
    threshold whatever ``k`` (``neardup tune`` without ``--candidates fingerprint`` shows what each
    threshold removes instead). By default for the verified dedup with fingerprint candidates: the
    smallest candidate radius ``k`` that keeps ``target_recall`` (0.99) of the near-duplicate pairs
    (word-shingle Jaccard >= ``threshold``) found within ``max_k``, with the cost of each k
    (candidate pairs per near-duplicate) and the precision of its candidates weighted by documents.
    Exact copies count once and texts without words are left out. With ``verify=False``, for the
    fingerprint-only dedup (``threshold=None`` there): the largest ``k`` whose precision within k
    (over document pairs) reaches ``target_precision`` (0.9). Pairs at each distance 0..``max_k``
    are counted exactly, up to ``sample`` of them per distance are drawn (seeded) and their Jaccard
    is measured; see the module's documentation for the method and its error.

    Args:
        docs: what :func:`neardup.dedup` takes: a list or iterable of strings or dicts (the text in
            ``text_field``), a pandas Series or DataFrame, a polars DataFrame or a pyarrow Table
            (the text in column ``text_field``). A one-shot iterator is held in a list.
        hasher: the fingerprint settings to tune ``k`` for (default: ``Simhasher()``; an idf
            hasher must be fitted first).
        verify: True (default) to tune the verified dedup, False the fingerprint-only one.
        max_k: the largest distance measured, 0 to 16.
        sample: pairs measured per distance, at least 1.
        shingle: words per shingle of the Jaccard that defines a near-duplicate (3: dedup's).
        shingles: shingle sizes to recommend a k for as well (``shingle`` is always among them).
            ``ngram=`` and ``ngrams=`` are the old names of these two, deprecated.
        target_recall: verified mode: the share of the near-duplicate pairs within ``max_k``
            that k must keep, in (0, 1] (default 0.99).
        target_precision: fingerprint-only mode: the share of reported pairs that must be
            near-duplicates, in (0, 1] (default 0.9).
        threshold: the Jaccard at and above which a pair is a near-duplicate, in (0, 1].
        seed: seeds the sample.
        text_field: the field (of dicts) or column (of tables) holding the text (default
            ``"text"``); ``column=`` is its old name, deprecated.
        threads: worker threads (default: every core).
        progress: show a progress bar of the documents read, as :func:`neardup.dedup` does.
            Each call logs its figures at INFO to the ``"neardup"`` logger.

    Returns:
        a :class:`TuneResult`; ``print(result)`` shows the curve and the recommendation.

    Example:
        >>> docs = ["the cat sat on the mat today", "the cat sat on the mat today!", "dogs bark at night", ""]
        >>> result = tune(docs, max_k=3)
        >>> result.texts, result.featureless, result.rows[0].pairs, result.rows[0].precision, result.recommended_k
        (3, 1, 1, 1.0, 0)
        >>> tune(docs, max_k=3, verify=False).recommended_k
        3
    """
    if not isinstance(verify, bool):
        raise TypeError(f"verify must be True or False, got {type(verify).__name__}")
    max_k = _max_k(max_k)
    sample = integer(sample, "sample", minimum=1)
    seed = integer(seed, "seed", minimum=0)
    _check(shingle, shingles, threshold, target_precision, target_recall, verify)
    hasher, threads = check_corpus_arguments(docs, hasher, threads)
    if not hasattr(docs, "__getitem__"):
        docs = list(docs)  # the sampled texts are fetched by row afterwards
    texts, _, doc_at = _documents(docs, text_field, None, hasher, "first")
    assert doc_at is not None
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {type(progress).__name__}")
    start = time.perf_counter()
    first = FirstPass(hasher, None, threads)
    bar = progress_bar(count_docs(docs), "neardup tune") if progress else None
    try:
        for at, chunk in in_chunks(texts, CHUNK_SIZE, "docs"):
            first.digest(chunk, at)
            if bar is not None:
                bar.update(len(chunk))
        if bar is not None:
            bar.set_postfix_str("measuring pairs", refresh=True)
        fps = first.fingerprints
        sampled = sample_mode_pairs(fps, first.keys, max_k, sample, seed, threads, verify=verify)
    finally:
        if bar is not None:
            bar.close()
    name = text_field or "text"
    result = measure(
        sampled,
        lambda row: _text(doc_at(row), name, hasher),
        hasher=hasher,
        shingle=shingle,
        shingles=shingles,
        threshold=threshold,
        target_precision=target_precision,
        target_recall=target_recall,
        documents=len(fps),
        sample=sample,
        seed=seed,
    )
    seconds = time.perf_counter() - start
    log.info(
        "tune: %d documents, recommended k=%s (max_k=%d, %d pairs sampled) in %.3f s",
        len(fps),
        result.recommended_k,
        max_k,
        len(sampled.a),
        seconds,
        extra={
            "documents": len(fps),
            "recommended_k": result.recommended_k,
            "max_k": max_k,
            "seconds": seconds,
        },
    )
    return result


# -- helpers -------------------------------------------------------------------------------------


def _check(
    shingle: Any,
    shingles: Any,
    threshold: Any,
    target_precision: Any,
    target_recall: Any,
    verify: bool,
) -> tuple[int, list[int], float, float]:
    """Validated (shingle, sorted shingle sizes with shingle among them, threshold, the mode's target):
    ``target_recall`` for the verified mode, ``target_precision`` for the fingerprint-only one."""
    shingle = integer(shingle, "shingle", minimum=1)
    if isinstance(shingles, (str, bytes)) or not isinstance(shingles, Iterable):
        raise TypeError(f"shingles must be an iterable of ints, got {type(shingles).__name__}")
    sizes = sorted({shingle} | {integer(n, "shingles[]", minimum=1) for n in shingles})
    wrong, target, default = (
        ("target_precision", "target_recall", TARGET_RECALL)
        if verify
        else ("target_recall", "target_precision", TARGET_PRECISION)
    )
    given = {"target_precision": target_precision, "target_recall": target_recall}
    if given[wrong] is not None:
        mode = (
            "the verified mode recommends k by recall: give target_recall"
            if verify
            else "the fingerprint-only mode (verify=False) recommends k by precision: give target_precision"
        )
        raise ValueError(f"{wrong} does not apply here: {mode}")
    values = []
    for name, value in (
        ("threshold", threshold),
        (target, default if given[target] is None else given[target]),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if not 0 < float(value) <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {value}")
        values.append(float(value))
    return shingle, sizes, values[0], values[1]


def _word_hasher(hasher: Simhasher | None) -> Simhasher:
    """A hasher whose features are the word tokens of a text, normalized as ``hasher`` does."""
    if hasher is None:
        return Simhasher()
    tokenizer = hasher.tokenizer if hasher.tokens == "word" else None
    return Simhasher(
        unicode_form=hasher.unicode_form, casefold=hasher.casefold, tokenizer=tokenizer
    )


def _text(doc: Any, name: str, hasher: Simhasher) -> str:
    """The text of one document as given to :func:`tune` (fields joined by a newline)."""
    if hasattr(doc, "as_py"):  # a pyarrow scalar
        doc = doc.as_py()
    if isinstance(doc, (bytes, bytearray, memoryview)):
        return bytes(doc).decode("utf-8")
    if isinstance(doc, Mapping):
        if hasher.fields is not None:
            return "\n".join(doc[f] for f in hasher.fields if isinstance(doc.get(f), str))
        return str(doc[name])
    return str(doc)
