"""Which k? An estimate, on the user's own corpus, of how precise each Hamming distance is.

:func:`tune` answers the question users ask most: which ``k`` suits my corpus? It measures,
instead of guessing:

1. **Fingerprints**: every document is fingerprinted with the hasher (8 bytes a document).
2. **Pairs at each distance**: identical fingerprints are collapsed and the index's batch mode
   (:func:`neardup.find_all`, exact) lists every pair of distinct fingerprints within ``max_k``;
   the number of document pairs at each distance d = 0..max_k follows from the copies' counts
   (the same step as the dedup report's histogram), so a corpus full of copies costs nothing more.
3. **A seeded sample per distance**: up to ``sample`` document pairs at each distance, drawn
   uniformly without replacement from all the document pairs at that distance (the same seed
   and numpy version draw the same pairs) (a pair of distinct
   fingerprints standing for c_a x c_b document pairs weighs that much). Only the sampled
   documents' texts are needed: the command reads its input a second time for them (stdin is
   copied to a temporary file on the first pass) and never holds the corpus in memory.
4. **Exact Jaccard** of each sampled pair: the sets of word shingles (``ngram`` consecutive
   tokens joined by one space; a text of fewer tokens is one shingle of them all) of the texts as
   the hasher normalizes them (its ``unicode_form`` and ``casefold``, its ``tokenizer`` if it has
   one, else neardup's word tokens), whatever the hasher's own features are, so that hashers of
   different settings are judged by one yardstick. A pair is a true near-duplicate when its
   Jaccard is >= ``threshold``: with ``ngram=3`` and ``threshold=0.8`` this is the definition of
   the ground truth of the Debian corpus in ``../shared/data``, so the estimates can be checked
   against ``benches/results/quality.md``.
5. **Precision**: at each distance, the share of sampled pairs that are true near-duplicates;
   *within* k, the precision of reporting every pair at distance <= k, which weighs the precision
   at each distance by the true number of pairs there (not by the sample). The recommended k is
   the largest whose precision within k reaches ``target_precision``.

The same sampled pairs are also measured with every shingle size of ``ngrams`` (one tokenization
per document, a few set operations per pair), so one can see how the answer depends on what one
calls a duplicate: single words forgive reordering, 3-word shingles do not.

Each precision at a distance comes from up to ``sample`` pairs: at 200 pairs and a precision of
0.9 its standard error is about 0.02, so a k whose precision within k is 0.89 or 0.91 is a coin
toss; raise ``sample`` for finer answers (the cost grows with the sample, not the corpus).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dedup import _documents, check_corpus_arguments
from .hasher import Simhasher
from .index import _int
from .io import MissingExtraError
from .report import nearest_distances

__all__ = ["SampledPairs", "TuneResult", "TuneRow", "measure", "precision_within", "recommend", "sample_pairs", "shingles", "tune"]

#: What the plot extra is called, for messages.
PLOT_EXTRA = "pip install 'neardup[plot]'"


@dataclass
class SampledPairs:
    """Document pairs by Hamming distance: how many there are, and a seeded uniform sample.

    Attributes:
        max_k: the largest distance counted.
        pairs: ``int64`` array, ``pairs[d]`` = document pairs at distance exactly d.
        distance, a, b: the sampled pairs (rows ``a < b``), by distance, then ``a``, then ``b``.
        jaccard: filled by :func:`measure`: shingle size -> Jaccard of each sampled pair.
    """

    max_k: int
    pairs: np.ndarray
    distance: np.ndarray
    a: np.ndarray
    b: np.ndarray
    jaccard: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def rows(self) -> set[int]:
        """The documents whose texts the sample needs."""
        return set(self.a.tolist()) | set(self.b.tolist())

    def to_pandas(self) -> Any:
        """One row per sampled pair: ``distance``, ``a``, ``b`` and ``jaccard_<n>`` per shingle size."""
        import pandas as pd

        columns: dict[str, Any] = {"distance": self.distance.astype(np.int64), "a": self.a, "b": self.b}
        columns.update({f"jaccard_{n}": values for n, values in sorted(self.jaccard.items())})
        return pd.DataFrame(columns)


def sample_pairs(fingerprints: np.ndarray, max_k: int = 8, sample: int = 200, seed: int = 0, threads: int | None = None) -> SampledPairs:
    """Counts the document pairs at each distance 0..``max_k`` and samples up to ``sample`` of
    them at each distance, uniformly without replacement (seeded by ``seed``).

    Identical fingerprints are collapsed before the search, and a pair of distinct fingerprints
    held by ``c_a`` and ``c_b`` documents stands for ``c_a * c_b`` document pairs, each as likely
    to be drawn as any other; so are the ``c (c - 1) / 2`` pairs among ``c`` copies at distance 0.
    """
    max_k = _max_k(max_k)
    sample = _int(sample, "sample", minimum=1)
    seed = _int(seed, "seed", minimum=0)
    fps = np.ascontiguousarray(fingerprints, dtype=np.uint64)
    empty = np.zeros(0, np.int64)
    if len(fps) < 2:
        return SampledPairs(max_k, np.zeros(max_k + 1, np.int64), empty.astype(np.uint8), empty, empty)
    _, pairs, (unique, _first, counts, ui, uj, ud) = nearest_distances(fps, max_k, threads)
    # The documents of each distinct fingerprint, in row order: members[start[u]:start[u] + counts[u]].
    order = np.argsort(fps, kind="stable")
    start = np.searchsorted(fps[order], unique)
    counts = counts.astype(np.int64)
    rng = np.random.default_rng(seed)
    parts: list[tuple[int, np.ndarray, np.ndarray]] = []
    for d in range(max_k + 1):
        total = int(pairs[d])
        if total == 0:
            continue
        if d == 0:  # blocks: groups of copies, C(c, 2) pairs each
            groups = np.flatnonzero(counts >= 2)
            weights = counts[groups] * (counts[groups] - 1) // 2
        else:  # blocks: pairs of distinct fingerprints, c_a * c_b pairs each
            at = np.flatnonzero(ud == d)
            weights = counts[ui[at]] * counts[uj[at]]
        ends = np.cumsum(weights)
        picks = np.sort(rng.choice(total, size=min(sample, total), replace=False))
        blocks = np.searchsorted(ends, picks, side="right")
        offsets = picks - (ends[blocks] - weights[blocks])
        a, b = [], []
        for block, offset in zip(blocks.tolist(), offsets.tolist()):
            if d == 0:
                u = int(groups[block])
                hi = (1 + math.isqrt(1 + 8 * offset)) // 2  # the offset-th pair (lo < hi) of the group
                lo = offset - hi * (hi - 1) // 2
                x, y = order[start[u] + lo], order[start[u] + hi]
            else:
                u, v = int(ui[at[block]]), int(uj[at[block]])
                x, y = order[start[u] + offset // counts[v]], order[start[v] + offset % counts[v]]
            a.append(min(x, y))
            b.append(max(x, y))
        parts.append((d, np.asarray(a, np.int64), np.asarray(b, np.int64)))
    if not parts:
        return SampledPairs(max_k, pairs.astype(np.int64), empty.astype(np.uint8), empty, empty)
    distance = np.concatenate([np.full(len(a), d, np.uint8) for d, a, _ in parts])
    a_all = np.concatenate([a for _, a, _ in parts])
    b_all = np.concatenate([b for _, _, b in parts])
    sort = np.lexsort((b_all, a_all, distance))
    return SampledPairs(max_k, pairs.astype(np.int64), distance[sort], a_all[sort], b_all[sort])


def shingles(tokens: Sequence[str], ngram: int) -> set[str]:
    """The set of word shingles: ``ngram`` consecutive tokens joined by one space; a text of
    fewer tokens is one shingle of them all, and a text without tokens has none.

    >>> sorted(shingles(["a", "rose", "is", "a", "rose"], 2))
    ['a rose', 'is a', 'rose is']
    """
    if len(tokens) <= ngram:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i:i + ngram]) for i in range(len(tokens) - ngram + 1)}


def _jaccard(x: set[str], y: set[str]) -> float:
    """|x & y| / |x | y|; two texts without words are alike (1.0)."""
    union = len(x | y)
    return len(x & y) / union if union else 1.0


def precision_within(pairs: Sequence[int] | np.ndarray, precision: Sequence[float] | np.ndarray) -> np.ndarray:
    """The precision of reporting every pair within k, for each k: the precision at each distance
    weighed by the number of pairs there. NaN while no pair lies within k; a distance without
    pairs leaves it as it was.

    >>> precision_within([10, 0, 30], [1.0, float("nan"), 0.5]).tolist()
    [1.0, 1.0, 0.625]
    """
    counts = np.asarray(pairs, dtype=np.float64)
    at = np.where(counts > 0, np.asarray(precision, dtype=np.float64), 0.0)
    within = np.cumsum(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(within > 0, np.cumsum(counts * at) / np.where(within > 0, within, 1), np.nan)


def recommend(pairs: Sequence[int] | np.ndarray, precision: Sequence[float] | np.ndarray, target: float) -> int | None:
    """The largest k whose precision within k (:func:`precision_within`) is >= ``target``, or
    None when no k has pairs and reaches it.

    >>> recommend([10, 0, 30, 60], [1.0, float("nan"), 0.9, 0.5], 0.9)
    2
    """
    within = precision_within(pairs, precision)
    good = np.flatnonzero(np.nan_to_num(within, nan=-1.0) >= target)
    return int(good[-1]) if len(good) else None


@dataclass
class TuneRow:
    """One distance of the curve (precision figures for the result's ``ngram``; NaN without pairs).

    Attributes:
        k: the Hamming distance.
        pairs: document pairs at distance exactly ``k``.
        sampled: how many of them were measured.
        mean_jaccard, median_jaccard: of the sampled pairs.
        precision: share of the sampled pairs with Jaccard >= threshold.
        pairs_within: document pairs at distance <= ``k`` (what ``k`` reports).
        precision_within: estimated precision of reporting every pair within ``k``.
        duplicates_within: estimated true near-duplicate pairs among them.
    """

    k: int
    pairs: int
    sampled: int
    mean_jaccard: float
    median_jaccard: float
    precision: float
    pairs_within: int
    precision_within: float
    duplicates_within: float

    def as_dict(self) -> dict[str, Any]:
        """The row with NaN as None (for JSON)."""
        return {name: (None if isinstance(v, float) and math.isnan(v) else v) for name, v in self.__dict__.items()}


@dataclass
class TuneResult:
    """What :func:`tune` measured: the curve, the recommended k, and k by shingle size.

    Attributes:
        rows: one :class:`TuneRow` per distance 0..max_k.
        recommended_k: the largest k whose precision within k reaches ``target_precision``
            (word ``ngram``-shingle Jaccard >= ``threshold``), or None when none does.
        recommended_by_ngram: the same rule for each shingle size measured.
        precision_within_by_ngram: shingle size -> precision within k, for k = 0..max_k.
        sampled: the sampled pairs with their Jaccards (:class:`SampledPairs`).
        documents: documents fingerprinted.
    """

    rows: list[TuneRow]
    recommended_k: int | None
    recommended_by_ngram: dict[int, int | None]
    precision_within_by_ngram: dict[int, list[float]]
    sampled: SampledPairs
    documents: int
    ngram: int
    threshold: float
    target_precision: float
    sample: int
    seed: int

    @property
    def max_k(self) -> int:
        return len(self.rows) - 1

    def to_pandas(self) -> Any:
        """The curve as a DataFrame, one row per k, with ``precision_within_<n>`` per shingle size."""
        import pandas as pd

        frame = pd.DataFrame([row.__dict__ for row in self.rows])
        for n, values in sorted(self.precision_within_by_ngram.items()):
            frame[f"precision_within_{n}"] = values
        return frame

    def as_dict(self) -> dict[str, Any]:
        """Everything but the sampled pairs, JSON-ready (NaN as None)."""
        return {
            "documents": self.documents,
            "ngram": self.ngram,
            "threshold": self.threshold,
            "target_precision": self.target_precision,
            "sample": self.sample,
            "seed": self.seed,
            "max_k": self.max_k,
            "recommended_k": self.recommended_k,
            "recommended_by_ngram": {str(n): k for n, k in sorted(self.recommended_by_ngram.items())},
            "rows": [row.as_dict() for row in self.rows],
            "precision_within_by_ngram": {
                str(n): [None if math.isnan(v) else v for v in values] for n, values in sorted(self.precision_within_by_ngram.items())
            },
        }

    def verdict(self) -> str:
        """The recommendation in one sentence."""
        rule = f"precision within k >= {self.target_precision:g} (word {self.ngram}-shingle Jaccard >= {self.threshold:g})"
        if self.recommended_k is not None:
            row = self.rows[self.recommended_k]
            return (f"recommended k = {row.k}: the largest k with {rule}; it reports {row.pairs_within:,} pair{'s' if row.pairs_within != 1 else ''}, "
                    f"precision {row.precision_within:.3f}")
        if not any(row.pairs for row in self.rows):
            return f"no recommendation: no pair of documents within k = {self.max_k}"
        best = max((r for r in self.rows if not math.isnan(r.precision_within)), key=lambda r: (r.precision_within, r.k))
        return (f"no k in 0..{self.max_k} reaches {rule}; the most precise is k = {best.k} "
                f"({best.precision_within:.3f}): lower --target-precision or --threshold, or try other fingerprint settings")

    def __str__(self) -> str:
        def num(v: float, digits: int = 3) -> str:
            return "-" if math.isnan(v) else f"{v:.{digits}f}"

        header = ("k", "pairs at k", "sampled", "mean J", "median J", "precision at k", "pairs within k", "precision within k", "duplicates within k")
        body = [
            (str(r.k), f"{r.pairs:,}", f"{r.sampled:,}", num(r.mean_jaccard), num(r.median_jaccard), num(r.precision),
             f"{r.pairs_within:,}", num(r.precision_within), "-" if math.isnan(r.duplicates_within) else f"{r.duplicates_within:,.0f}")
            for r in self.rows
        ]
        widths = [max(len(h), *(len(line[c]) for line in body)) for c, h in enumerate(header)]
        lines = [
            f"{self.documents:,} documents; up to {self.sample:,} pairs sampled at each distance (seed {self.seed}); "
            f"a pair is a near-duplicate when its word {self.ngram}-shingle Jaccard J >= {self.threshold:g}",
            "  ".join(h.rjust(w) for h, w in zip(header, widths)),
        ]
        lines += ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in body]
        lines.append(self.verdict())
        if len(self.recommended_by_ngram) > 1:
            lines.append("recommended k by shingle size: " + ", ".join(
                f"{n} word{'s' if n > 1 else ''}: {'none' if k is None else k}" for n, k in sorted(self.recommended_by_ngram.items())))
        return "\n".join(lines)

    def plot(self) -> Any:
        """A matplotlib ``Figure``: precision at k and within k (each shingle size), with the
        target and the recommended k, above the pair counts at k and within k (log scale).
        Needs matplotlib (``pip install 'neardup[plot]'``); save it with ``fig.savefig(path)``."""
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise MissingExtraError(f"plotting needs matplotlib: {PLOT_EXTRA}") from None
        ks = [r.k for r in self.rows]
        fig = Figure(figsize=(8, 6.5), layout="constrained")
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        top.plot(ks, [r.precision for r in self.rows], "o:", color="tab:gray", label=f"precision at k ({self.ngram}-word shingles)")
        others = iter(["tab:purple", "tab:olive", "tab:cyan", "tab:pink", "tab:brown"] * 4)
        for n, values in sorted(self.precision_within_by_ngram.items()):
            style = {"linewidth": 2.5, "color": "tab:blue"} if n == self.ngram else {"linewidth": 1, "color": next(others)}
            top.plot(ks, values, "o-", label=f"precision within k ({n}-word shingles)", **style)
        top.axhline(self.target_precision, color="tab:red", linestyle="--", linewidth=1, label=f"target {self.target_precision:g}")
        if self.recommended_k is not None:
            top.axvline(self.recommended_k, color="tab:green", linewidth=1.5, label=f"recommended k = {self.recommended_k}")
        top.set_ylim(-0.02, 1.02)
        top.set_ylabel(f"precision (Jaccard >= {self.threshold:g})")
        top.set_title(f"neardup tune: {self.documents:,} documents, up to {self.sample:,} pairs sampled per distance")
        top.grid(alpha=0.3)
        top.legend(loc="lower left", fontsize="small")
        bottom.bar(ks, [max(r.pairs, 0) for r in self.rows], color="tab:orange", label="pairs at k")
        bottom.plot(ks, [r.pairs_within for r in self.rows], "s-", color="tab:brown", label="pairs within k")
        if any(r.pairs for r in self.rows):
            bottom.set_yscale("log")
        bottom.set_xlabel("k (Hamming distance)")
        bottom.set_ylabel("document pairs")
        bottom.set_xticks(ks)
        bottom.grid(alpha=0.3)
        bottom.legend(loc="upper left", fontsize="small")
        return fig


def measure(
    sampled: SampledPairs,
    text_of: Callable[[int], str] | Mapping[int, str],
    *,
    hasher: Simhasher | None = None,
    ngram: int = 3,
    ngrams: Iterable[int] = (1, 2, 3),
    threshold: float = 0.8,
    target_precision: float = 0.9,
    documents: int = 0,
    sample: int = 0,
    seed: int = 0,
) -> TuneResult:
    """The Jaccard of every sampled pair, and the curve and recommendation from them.

    Args:
        sampled: from :func:`sample_pairs` (its ``jaccard`` is filled in).
        text_of: the text of a document row (a function or a mapping).
        hasher: whose normalization and tokenizer cut the texts into words (default: neardup's).
        ngram, ngrams, threshold, target_precision: as for :func:`tune`.
        documents, sample, seed: recorded in the result.
    """
    ngram, sizes, threshold, target_precision = _check(ngram, ngrams, threshold, target_precision)
    words = _word_hasher(hasher)
    get = text_of.__getitem__ if isinstance(text_of, Mapping) else text_of
    tokens = {row: words.features(get(row)) for row in sorted(sampled.rows)}
    a, b = sampled.a.tolist(), sampled.b.tolist()
    for n in sizes:
        sets = {row: shingles(t, n) for row, t in tokens.items()}
        sampled.jaccard[n] = np.array([_jaccard(sets[x], sets[y]) for x, y in zip(a, b)], dtype=np.float64)
    pairs = sampled.pairs
    precision: dict[int, np.ndarray] = {}
    for n in sizes:
        precision[n] = np.array([
            float(np.mean(sampled.jaccard[n][sampled.distance == d] >= threshold)) if pairs[d] else math.nan
            for d in range(sampled.max_k + 1)
        ])
    within = {n: precision_within(pairs, precision[n]) for n in sizes}
    by_ngram = {n: recommend(pairs, precision[n], target_precision) for n in sizes}
    counts_within = np.cumsum(pairs)
    rows = []
    for d in range(sampled.max_k + 1):
        values = sampled.jaccard[ngram][sampled.distance == d].tolist()
        rows.append(TuneRow(
            k=d,
            pairs=int(pairs[d]),
            sampled=len(values),
            mean_jaccard=statistics.fmean(values) if values else math.nan,
            median_jaccard=statistics.median(values) if values else math.nan,
            precision=float(precision[ngram][d]),
            pairs_within=int(counts_within[d]),
            precision_within=float(within[ngram][d]),
            duplicates_within=float(within[ngram][d] * counts_within[d]) if counts_within[d] else math.nan,
        ))
    return TuneResult(
        rows=rows,
        recommended_k=by_ngram[ngram],
        recommended_by_ngram=by_ngram,
        precision_within_by_ngram={n: within[n].tolist() for n in sizes},
        sampled=sampled,
        documents=documents,
        ngram=ngram,
        threshold=threshold,
        target_precision=target_precision,
        sample=sample,
        seed=seed,
    )


def tune(
    docs: Any,
    *,
    hasher: Simhasher | None = None,
    max_k: int = 8,
    sample: int = 200,
    ngram: int = 3,
    ngrams: Iterable[int] = (1, 2, 3),
    target_precision: float = 0.9,
    threshold: float = 0.8,
    seed: int = 0,
    text_field: str | None = None,
    column: str | None = None,
    threads: int | None = None,
) -> TuneResult:
    """Measures how precise each Hamming distance is on a corpus, and recommends a ``k``.

    Pairs at each distance 0..``max_k`` are counted exactly, up to ``sample`` of them per distance
    are drawn (seeded), and the word-shingle Jaccard of their texts says which are true
    near-duplicates; see the module's documentation for the method.

    Args:
        docs: what :func:`neardup.dedup` takes: a list or iterable of strings or dicts (the text in
            ``text_field``), a pandas Series or DataFrame, a polars DataFrame or a pyarrow Table
            (the text in ``column``). A one-shot iterator is held in a list.
        hasher: the fingerprint settings to tune ``k`` for (default: ``Simhasher()``; an idf
            hasher must be fitted first).
        max_k: the largest distance measured, 0 to 16.
        sample: pairs measured per distance, at least 1.
        ngram: words per shingle of the Jaccard that defines a near-duplicate (3: the definition
            of the Debian ground truth).
        ngrams: shingle sizes to recommend a k for as well (``ngram`` is always among them).
        target_precision: the share of reported pairs that must be true near-duplicates, in (0, 1].
        threshold: the Jaccard at and above which a pair is a near-duplicate, in (0, 1].
        seed: seeds the sample.
        text_field, column: for dicts and tables, where the text is (default ``"text"``).
        threads: worker threads (default: every core).

    Returns:
        a :class:`TuneResult`; ``print(result)`` shows the curve and the recommendation.

    Example:
        >>> docs = ["the cat sat on the mat today", "the cat sat on the mat today!", "dogs bark at night"]
        >>> result = tune(docs, max_k=3)
        >>> result.rows[0].pairs, result.rows[0].precision, result.recommended_k
        (1, 1.0, 3)
    """
    max_k = _max_k(max_k)
    sample = _int(sample, "sample", minimum=1)
    seed = _int(seed, "seed", minimum=0)
    _check(ngram, ngrams, threshold, target_precision)
    hasher, threads = check_corpus_arguments(docs, hasher, threads)
    if not hasattr(docs, "__getitem__"):
        docs = list(docs)  # the sampled texts are fetched by row afterwards
    texts, _, doc_at = _documents(docs, text_field, None, column, hasher, "first")
    assert doc_at is not None
    fps = hasher.fingerprint_many(texts, threads=threads)
    sampled = sample_pairs(fps, max_k, sample, seed, threads)
    name = text_field or column or "text"
    return measure(
        sampled, lambda row: _text(doc_at(row), name, hasher), hasher=hasher, ngram=ngram, ngrams=ngrams,
        threshold=threshold, target_precision=target_precision, documents=len(fps), sample=sample, seed=seed,
    )


# -- helpers -------------------------------------------------------------------------------------


def _max_k(max_k: Any) -> int:
    value = _int(max_k, "max_k")
    if not 0 <= value <= 16:
        raise ValueError(f"max_k must be in 0..=16, got {value}")
    return value


def _check(ngram: Any, ngrams: Any, threshold: Any, target_precision: Any) -> tuple[int, list[int], float, float]:
    """Validated (ngram, sorted shingle sizes with ngram among them, threshold, target)."""
    ngram = _int(ngram, "ngram", minimum=1)
    if isinstance(ngrams, (str, bytes)) or not isinstance(ngrams, Iterable):
        raise TypeError(f"ngrams must be an iterable of ints, got {type(ngrams).__name__}")
    sizes = sorted({ngram} | {_int(n, "ngrams[]", minimum=1) for n in ngrams})
    values = []
    for name, value in (("threshold", threshold), ("target_precision", target_precision)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if not 0 < float(value) <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {value}")
        values.append(float(value))
    return ngram, sizes, values[0], values[1]


def _word_hasher(hasher: Simhasher | None) -> Simhasher:
    """A hasher whose features are the word tokens of a text, normalized as ``hasher`` does."""
    if hasher is None:
        return Simhasher()
    tokenizer = hasher.tokenizer if hasher.tokens == "word" else None
    return Simhasher(unicode_form=hasher.unicode_form, casefold=hasher.casefold, tokenizer=tokenizer)


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
