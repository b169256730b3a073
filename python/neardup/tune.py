"""Which k? An estimate, on the user's own corpus, of the candidate radius ``k`` to dedup with.

:func:`tune` answers the question users ask most: which ``k`` suits my corpus? It measures,
instead of guessing. By default it tunes the **verified** dedup (``neardup dedup``'s default: the
fingerprints within ``k`` propose pairs, the word-shingle Jaccard decides), where ``k`` buys
recall with candidate checks; ``verify=False`` (``neardup tune --no-verify``) tunes the
fingerprint-only dedup, where ``k`` trades recall for precision.

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
5. **Exact Jaccard** of each sampled pair: the sets of word shingles (``ngram`` consecutive
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

The same sampled pairs are also measured with every shingle size of ``ngrams`` (one tokenization
per document, a few set operations per pair), so one can see how the answer depends on what one
calls a duplicate: single words forgive reordering, 3-word shingles do not.

Each share at a distance comes from up to ``sample`` pairs: at 200 pairs and a share of 0.9 its
standard error is about 0.02; raise ``sample`` for finer answers (the cost grows with the
sample, not the corpus).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dedup import _documents, check_corpus_arguments
from .deprecation import renamed
from .hasher import CHUNK_SIZE, Simhasher, _chunks
from .io import MissingExtraError
from .pipeline import FirstPass, copy_groups
from .report import nearest_distances
from .validate import check_k, integer

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

#: What the plot extra is called, for messages.
PLOT_EXTRA = "pip install 'neardup[plot]'"
#: The defaults of the two recommendation rules.
TARGET_RECALL = 0.99
TARGET_PRECISION = 0.9


@dataclass
class SampledPairs:
    """Pairs by Hamming distance: how many there are, and a seeded uniform sample.

    Attributes:
        max_k: the largest distance counted.
        pairs: ``int64`` array, ``pairs[d]`` = pairs at distance exactly d.
        distance, a, b: the sampled pairs (rows ``a < b``), by distance, then ``a``, then ``b``.
        jaccard: filled by :func:`measure`: shingle size -> Jaccard of each sampled pair.
        texts: of :func:`sample_text_pairs` (else None): the distinct texts with features,
            between which the pairs are counted (each stands for its first row).
        copies, featureless: rows collapsed into an earlier copy of their text, and rows without
            features (fingerprint 0), both left out of the pairs.
        texts_at, texts_within: ``texts_at[d]`` = texts with a pair at distance exactly d,
            ``texts_within[k]`` = texts with a pair at distance <= k.
        degree_a, degree_b: ``degree_a[s, d]`` = the pairs at distance d of sampled pair s's text
            ``a`` (its candidates at d); the same for ``b``.
    """

    max_k: int
    pairs: np.ndarray
    distance: np.ndarray
    a: np.ndarray
    b: np.ndarray
    jaccard: dict[int, np.ndarray] = field(default_factory=dict)
    texts: int | None = None
    copies: int = 0
    featureless: int = 0
    texts_at: np.ndarray | None = None
    texts_within: np.ndarray | None = None
    degree_a: np.ndarray | None = None
    degree_b: np.ndarray | None = None

    @property
    def rows(self) -> set[int]:
        """The documents whose texts the sample needs."""
        return set(self.a.tolist()) | set(self.b.tolist())

    def to_pandas(self) -> Any:
        """One row per sampled pair: ``distance``, ``a``, ``b`` and ``jaccard_<n>`` per shingle size."""
        import pandas as pd

        columns: dict[str, Any] = {
            "distance": self.distance.astype(np.int64),
            "a": self.a,
            "b": self.b,
        }
        columns.update({f"jaccard_{n}": values for n, values in sorted(self.jaccard.items())})
        return pd.DataFrame(columns)


def sample_pairs(
    fingerprints: np.ndarray,
    max_k: int = 8,
    sample: int = 200,
    seed: int = 0,
    threads: int | None = None,
) -> SampledPairs:
    """Counts the document pairs at each distance 0..``max_k`` and samples up to ``sample`` of
    them at each distance, uniformly without replacement (seeded by ``seed``): the population of
    the fingerprint-only mode.

    Identical fingerprints are collapsed before the search, and a pair of distinct fingerprints
    held by ``c_a`` and ``c_b`` documents stands for ``c_a * c_b`` document pairs, each as likely
    to be drawn as any other; so are the ``c (c - 1) / 2`` pairs among ``c`` copies at distance 0.
    """
    max_k = _max_k(max_k)
    sample = integer(sample, "sample", minimum=1)
    seed = integer(seed, "seed", minimum=0)
    return _draw(np.ascontiguousarray(fingerprints, dtype=np.uint64), max_k, sample, seed, threads)[
        0
    ]


def sample_text_pairs(
    fingerprints: np.ndarray,
    keys: np.ndarray,
    max_k: int = 8,
    sample: int = 200,
    seed: int = 0,
    threads: int | None = None,
) -> SampledPairs:
    """The population of the verified mode: like :func:`sample_pairs`, between the distinct texts
    with features. Rows of one text (equal content key ``keys`` and fingerprint) count once, as
    their first row; rows with fingerprint 0 (no features) are left out. Also counts the texts
    with a pair at each distance and, for each sampled pair, the candidates of its two texts at
    each distance (for the precision weighted by documents)."""
    max_k = _max_k(max_k)
    sample = integer(sample, "sample", minimum=1)
    seed = integer(seed, "seed", minimum=0)
    fps = np.ascontiguousarray(fingerprints, dtype=np.uint64)
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    if len(keys) != len(fps):
        raise ValueError(f"{len(fps)} fingerprints but {len(keys)} content keys")
    _, firsts = np.unique(copy_groups(fps, keys), return_index=True)
    firsts = np.sort(firsts).astype(np.int64)
    featureless = int(np.count_nonzero(fps == 0))
    texts = firsts[fps[firsts] != 0]
    sampled, (unique, counts, ui, uj, ud, inverse) = _draw(fps[texts], max_k, sample, seed, threads)
    width = max_k + 1
    # Texts with a pair at each distance: the (fingerprint, distance) pairs that occur, each
    # fingerprint standing for its texts.
    seen = [np.flatnonzero(counts >= 2) * width]
    seen += [ui * width + ud, uj * width + ud]
    codes = np.unique(np.concatenate(seen).astype(np.int64))
    texts_at = np.bincount(codes % width, weights=counts[codes // width], minlength=width).astype(
        np.int64
    )
    nearest = np.full(len(unique), width, np.int64)
    np.minimum.at(nearest, codes // width, codes % width)
    texts_within = np.cumsum(
        np.bincount(nearest, weights=counts, minlength=width + 1)[:width]
    ).astype(np.int64)
    # Candidates at each distance of the sampled texts' fingerprints.
    ua, ub = inverse[sampled.a], inverse[sampled.b]
    needed = np.unique(np.concatenate([ua, ub]))
    at = np.full(len(unique), -1, np.int64)
    at[needed] = np.arange(len(needed))
    degree = np.zeros((len(needed), width), np.int64)
    degree[:, 0] = counts[needed] - 1
    for x, y in ((ui, uj), (uj, ui)):
        hit = at[x] >= 0
        np.add.at(degree, (at[x[hit]], ud[hit]), counts[y[hit]])
    sampled.degree_a, sampled.degree_b = degree[at[ua]], degree[at[ub]]
    sampled.a, sampled.b = texts[sampled.a], texts[sampled.b]  # increasing: a < b still holds
    sampled.texts = len(texts)
    sampled.featureless = featureless
    sampled.copies = len(fps) - featureless - len(texts)
    sampled.texts_at, sampled.texts_within = texts_at, texts_within
    return sampled


def _draw(
    fps: np.ndarray, max_k: int, sample: int, seed: int, threads: int | None
) -> tuple[SampledPairs, tuple[np.ndarray, ...]]:
    """The counts and sample of :func:`sample_pairs`, and the distinct fingerprints' pairs:
    ``(unique, counts, ui, uj, ud, inverse)`` (``int64``; row r has fingerprint ``unique[inverse[r]]``)."""
    empty = np.zeros(0, np.int64)
    if len(fps) < 2:
        unique, inverse, counts = np.unique(fps, return_inverse=True, return_counts=True)
        return (
            SampledPairs(
                max_k, np.zeros(max_k + 1, np.int64), empty.astype(np.uint8), empty, empty
            ),
            (
                unique,
                counts.astype(np.int64),
                empty,
                empty,
                empty,
                inverse.reshape(-1).astype(np.int64),
            ),
        )
    _, pairs, (unique, _first, counts, ui, uj, ud) = nearest_distances(fps, max_k, threads)
    ui, uj, ud = ui.astype(np.int64), uj.astype(np.int64), ud.astype(np.int64)
    inverse = np.searchsorted(unique, fps).astype(np.int64)
    structure = (unique, counts.astype(np.int64), ui, uj, ud, inverse)
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
                hi = (
                    1 + math.isqrt(1 + 8 * offset)
                ) // 2  # the offset-th pair (lo < hi) of the group
                lo = offset - hi * (hi - 1) // 2
                x, y = order[start[u] + lo], order[start[u] + hi]
            else:
                u, v = int(ui[at[block]]), int(uj[at[block]])
                x, y = order[start[u] + offset // counts[v]], order[start[v] + offset % counts[v]]
            a.append(min(x, y))
            b.append(max(x, y))
        parts.append((d, np.asarray(a, np.int64), np.asarray(b, np.int64)))
    if not parts:
        return SampledPairs(
            max_k, pairs.astype(np.int64), empty.astype(np.uint8), empty, empty
        ), structure
    distance = np.concatenate([np.full(len(a), d, np.uint8) for d, a, _ in parts])
    a_all = np.concatenate([a for _, a, _ in parts])
    b_all = np.concatenate([b for _, _, b in parts])
    sort = np.lexsort((b_all, a_all, distance))
    return SampledPairs(
        max_k, pairs.astype(np.int64), distance[sort], a_all[sort], b_all[sort]
    ), structure


def shingles(tokens: Sequence[str], ngram: int) -> set[str]:
    """The set of word shingles: ``ngram`` consecutive tokens joined by one space; a text of
    fewer tokens is one shingle of them all, and a text without tokens has none.

    >>> sorted(shingles(["a", "rose", "is", "a", "rose"], 2))
    ['a rose', 'is a', 'rose is']
    """
    if len(tokens) <= ngram:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i : i + ngram]) for i in range(len(tokens) - ngram + 1)}


#: :func:`shingles` under a name that :func:`measure`'s argument ``shingles`` does not hide.
_shingle_set = shingles


def _jaccard(x: set[str], y: set[str]) -> float:
    """|x & y| / |x | y|; two texts without words are alike (1.0)."""
    union = len(x | y)
    return len(x & y) / union if union else 1.0


def precision_within(
    pairs: Sequence[int] | np.ndarray, precision: Sequence[float] | np.ndarray
) -> np.ndarray:
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
        return np.where(
            within > 0, np.cumsum(counts * at) / np.where(within > 0, within, 1), np.nan
        )


def recommend(
    pairs: Sequence[int] | np.ndarray, precision: Sequence[float] | np.ndarray, target: float
) -> int | None:
    """The largest k whose precision within k (:func:`precision_within`) is >= ``target``, or
    None when no k has pairs and reaches it.

    >>> recommend([10, 0, 30, 60], [1.0, float("nan"), 0.9, 0.5], 0.9)
    2
    """
    within = precision_within(pairs, precision)
    good = np.flatnonzero(np.nan_to_num(within, nan=-1.0) >= target)
    return int(good[-1]) if len(good) else None


def recall_within(
    pairs: Sequence[int] | np.ndarray, precision: Sequence[float] | np.ndarray
) -> np.ndarray:
    """The share of the near-duplicate pairs within the largest k that lie within k, for each k:
    ``pairs[d] * precision[d]`` near-duplicates at each distance d (none where there are no
    pairs). NaN when there are none at all.

    >>> recall_within([10, 0, 30, 60], [1.0, float("nan"), 0.5, 0.0]).tolist()
    [0.4, 0.4, 1.0, 1.0]
    """
    found = np.cumsum(_duplicates(pairs, precision))
    if not len(found) or found[-1] <= 0:
        return np.full(len(found), np.nan)
    return found / found[-1]


def recommend_recall(
    pairs: Sequence[int] | np.ndarray, precision: Sequence[float] | np.ndarray, target: float
) -> int | None:
    """The smallest k whose recall within k (:func:`recall_within`) is >= ``target``, or None
    when there is no near-duplicate pair at all.

    >>> recommend_recall([10, 0, 30, 60], [1.0, float("nan"), 0.5, 0.01], 0.99)
    3
    >>> recommend_recall([10, 0, 30, 60], [1.0, float("nan"), 0.5, 0.001], 0.99)
    2
    """
    recall = recall_within(pairs, precision)
    good = np.flatnonzero(np.nan_to_num(recall, nan=-1.0) >= target - 1e-12)
    return int(good[0]) if len(good) else None


def _duplicates(
    pairs: Sequence[int] | np.ndarray, precision: Sequence[float] | np.ndarray
) -> np.ndarray:
    counts = np.asarray(pairs, dtype=np.float64)
    return np.where(
        counts > 0, counts * np.nan_to_num(np.asarray(precision, dtype=np.float64), nan=0.0), 0.0
    )


def _recall_se(pairs: np.ndarray, hits: np.ndarray, sampled: np.ndarray) -> np.ndarray:
    """The standard error of the recall within each k (see the module's "Uncertainty")."""
    counts = np.asarray(pairs, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        found = np.where(sampled > 0, counts * hits / np.maximum(sampled, 1), 0.0)
        p = (hits + 1) / (sampled + 2)
        correction = np.where(counts > 1, (counts - sampled) / np.maximum(counts - 1, 1), 0.0)
        var = np.where(
            sampled > 0, counts**2 * p * (1 - p) / np.maximum(sampled, 1) * correction, 0.0
        )
    inside, var_inside = np.cumsum(found), np.cumsum(var)
    total = inside[-1] if len(inside) else 0.0
    if total <= 0:
        return np.full(len(counts), np.nan)
    outside, var_outside = total - inside, var_inside[-1] - var_inside
    return np.sqrt(outside**2 * var_inside + inside**2 * var_outside) / total**2


def _document_precision(sampled: SampledPairs, true: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(precision at each distance, precision within each k), each the mean over the texts with a
    candidate there of the share of their candidates that are near-duplicates (see the module)."""
    assert sampled.degree_a is not None and sampled.degree_b is not None
    width = sampled.max_k + 1
    d = sampled.distance.astype(np.int64)
    rows = np.arange(len(d))
    taken = np.bincount(d, minlength=width)
    weight = np.where(taken > 0, sampled.pairs / np.maximum(taken, 1), 0.0)[
        d
    ]  # pairs each sampled pair stands for
    true = true.astype(np.float64)

    def ratio(num: np.ndarray, den: np.ndarray) -> float:
        return float(num.sum() / den.sum()) if den.sum() > 0 else math.nan

    at = np.full(width, math.nan)
    share = (
        1.0 / sampled.degree_a[rows, d] + 1.0 / sampled.degree_b[rows, d] if len(d) else np.zeros(0)
    )
    for k in range(width):
        m = d == k
        at[k] = ratio(true[m] * share[m], share[m])
    within = np.full(width, math.nan)
    reach_a, reach_b = np.cumsum(sampled.degree_a, axis=1), np.cumsum(sampled.degree_b, axis=1)
    for k in range(width):
        m = d <= k
        share_k = weight[m] * (1.0 / reach_a[m, k] + 1.0 / reach_b[m, k])
        within[k] = ratio(true[m] * share_k, share_k)
    return at, within


@dataclass
class TuneRow:
    """One distance of the curve (figures for the result's ``ngram``; NaN without pairs).

    Attributes:
        k: the Hamming distance.
        pairs: pairs at distance exactly ``k`` (verified mode: of distinct texts with features;
            fingerprint-only mode: of documents).
        sampled: how many of them were measured.
        mean_jaccard, median_jaccard: of the sampled pairs.
        precision: verified mode: weighted by documents, the mean over the texts with a pair at
            ``k`` of the share of their pairs at ``k`` that are near-duplicates; fingerprint-only
            mode: the share of the sampled pairs that are near-duplicates (Jaccard >= threshold).
        pairs_within: pairs at distance <= ``k`` (the candidates ``k`` proposes).
        precision_within: the same as ``precision``, within ``k`` (fingerprint-only mode: the
            precision of reporting every pair within ``k``).
        duplicates_within: estimated near-duplicate pairs within ``k``.
        pair_precision: the share of the sampled pairs at ``k`` that are near-duplicates.
        duplicates: estimated near-duplicate pairs at ``k``: ``pairs * pair_precision``.
        candidates_per_duplicate: ``pairs_within / duplicates_within``, the cost of ``k``.
        texts, texts_within: verified mode: distinct texts with a pair at ``k``, within ``k``.
        recall_within, recall_se: verified mode: the estimated share of the near-duplicate pairs
            within ``max_k`` that lie within ``k``, and its standard error.
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
    pair_precision: float = math.nan
    duplicates: float = math.nan
    candidates_per_duplicate: float = math.nan
    texts: int | None = None
    texts_within: int | None = None
    recall_within: float = math.nan
    recall_se: float = math.nan

    def as_dict(self) -> dict[str, Any]:
        """The row with NaN as None (for JSON)."""
        return {
            name: (None if isinstance(v, float) and math.isnan(v) else v)
            for name, v in self.__dict__.items()
        }


@dataclass
class TuneResult:
    """What :func:`tune` measured: the curve, the recommended k, and k by shingle size.

    Attributes:
        rows: one :class:`TuneRow` per distance 0..max_k.
        recommended_k: verified mode: the smallest k whose recall within k reaches
            ``target_recall``; fingerprint-only mode: the largest k whose precision within k
            reaches ``target_precision`` (word ``ngram``-shingle Jaccard >= ``threshold``); None
            when none does.
        recommended_by_ngram: the same rule for each shingle size measured.
        precision_within_by_ngram: shingle size -> precision within k, for k = 0..max_k.
        sampled: the sampled pairs with their Jaccards (:class:`SampledPairs`).
        documents: documents fingerprinted.
        verify: True for the verified mode, False for the fingerprint-only one.
        target_precision, target_recall: the target of the mode's rule (the other is None).
        texts, copies, featureless: verified mode: the distinct texts with features between
            which pairs are counted, and the rows left out as copies and as featureless.
        recall_within_by_ngram: verified mode: shingle size -> recall within k.
    """

    rows: list[TuneRow]
    recommended_k: int | None
    recommended_by_ngram: dict[int, int | None]
    precision_within_by_ngram: dict[int, list[float]]
    sampled: SampledPairs
    documents: int
    ngram: int
    threshold: float
    target_precision: float | None
    sample: int
    seed: int
    verify: bool = True
    target_recall: float | None = None
    texts: int | None = None
    copies: int = 0
    featureless: int = 0
    recall_within_by_ngram: dict[int, list[float]] = field(default_factory=dict)

    @property
    def max_k(self) -> int:
        return len(self.rows) - 1

    def to_pandas(self) -> Any:
        """The curve as a DataFrame, one row per k, with ``precision_within_<n>`` (and in
        verified mode ``recall_within_<n>``) per shingle size."""
        import pandas as pd

        frame = pd.DataFrame([row.__dict__ for row in self.rows])
        for n, values in sorted(self.precision_within_by_ngram.items()):
            frame[f"precision_within_{n}"] = values
        for n, values in sorted(self.recall_within_by_ngram.items()):
            frame[f"recall_within_{n}"] = values
        return frame

    def as_dict(self) -> dict[str, Any]:
        """Everything but the sampled pairs, JSON-ready (NaN as None)."""

        def clean(values: list[float]) -> list[float | None]:
            return [None if math.isnan(v) else v for v in values]

        return {
            "verify": self.verify,
            "documents": self.documents,
            "texts": self.texts,
            "copies": self.copies,
            "featureless": self.featureless,
            "ngram": self.ngram,
            "threshold": self.threshold,
            "target_recall": self.target_recall,
            "target_precision": self.target_precision,
            "sample": self.sample,
            "seed": self.seed,
            "max_k": self.max_k,
            "recommended_k": self.recommended_k,
            "recommended_by_ngram": {
                str(n): k for n, k in sorted(self.recommended_by_ngram.items())
            },
            "rows": [row.as_dict() for row in self.rows],
            "precision_within_by_ngram": {
                str(n): clean(values)
                for n, values in sorted(self.precision_within_by_ngram.items())
            },
            "recall_within_by_ngram": {
                str(n): clean(values) for n, values in sorted(self.recall_within_by_ngram.items())
            },
        }

    def _truth(self) -> str:
        return f"word {self.ngram}-shingle Jaccard >= {self.threshold:g}"

    def verdict(self) -> str:
        """The recommendation in one sentence."""
        if not self.verify:
            return self._verdict_fingerprints()
        last = self.rows[-1]
        if not last.pairs_within:
            return f"no recommendation: no two distinct texts with words within k = {self.max_k}"
        if self.recommended_k is None:
            return (
                f"no recommendation: none of the {len(self.sampled.a):,} pairs sampled within k = {self.max_k} is a "
                f"near-duplicate ({self._truth()}): lower --threshold, or raise --max-k"
            )
        row = self.rows[self.recommended_k]
        assert self.target_recall is not None
        text = (
            f"recommended k = {row.k}: the smallest k that keeps >= {self.target_recall:g} of the near-duplicate pairs "
            f"({self._truth()}) found within k = {self.max_k} (recall {row.recall_within:.3f} +- {row.recall_se:.3f}); "
            f"it proposes {row.pairs_within:,} candidate pair{'s' if row.pairs_within != 1 else ''}, "
            f"{row.candidates_per_duplicate:.2f} per near-duplicate; precision within k "
            f"{row.precision_within:.3f} (by documents)"
        )
        if row.recall_se > 1 - self.target_recall:
            text += f"; uncertain (standard error {row.recall_se:.3f}): raise --sample"
        if last.duplicates > (1 - self.target_recall) * last.duplicates_within:
            text += (
                f"; near-duplicates still appear at k = {self.max_k} ({last.duplicates:,.0f} pairs): "
                f"raise --max-k to count those farther apart"
            )
        return text

    def _verdict_fingerprints(self) -> str:
        rule = f"precision within k >= {self.target_precision:g} ({self._truth()})"
        if self.recommended_k is not None:
            row = self.rows[self.recommended_k]
            return (
                f"recommended k = {row.k}: the largest k with {rule}; it reports "
                f"{row.pairs_within:,} pair{'s' if row.pairs_within != 1 else ''}, "
                f"precision {row.precision_within:.3f}"
            )
        if not any(row.pairs for row in self.rows):
            return f"no recommendation: no pair of documents within k = {self.max_k}"
        best = max(
            (r for r in self.rows if not math.isnan(r.precision_within)),
            key=lambda r: (r.precision_within, r.k),
        )
        return (
            f"no k in 0..{self.max_k} reaches {rule}; the most precise is k = {best.k} "
            f"({best.precision_within:.3f}): lower --target-precision or --threshold, or try other fingerprint settings"
        )

    def __str__(self) -> str:
        def num(v: float, digits: int = 3) -> str:
            return "-" if math.isnan(v) else f"{v:.{digits}f}"

        def whole(v: float) -> str:
            return "-" if math.isnan(v) else f"{v:,.0f}"

        if self.verify:
            header: tuple[str, ...] = (
                "k",
                "pairs at k",
                "sampled",
                "mean J",
                "precision at k",
                "duplicates at k",
                "pairs within k",
                "texts within k",
                "precision within k",
                "recall within k",
                "+-",
                "candidates per duplicate",
            )
            body: list[tuple[str, ...]] = [
                (
                    str(r.k),
                    f"{r.pairs:,}",
                    f"{r.sampled:,}",
                    num(r.mean_jaccard),
                    num(r.precision),
                    whole(r.duplicates),
                    f"{r.pairs_within:,}",
                    f"{r.texts_within or 0:,}",
                    num(r.precision_within),
                    num(r.recall_within),
                    num(r.recall_se),
                    num(r.candidates_per_duplicate, 2),
                )
                for r in self.rows
            ]
            intro = (
                f"{self.documents:,} documents: {self.texts or 0:,} distinct texts with words, {self.copies:,} exact "
                f"cop{'y' if self.copies == 1 else 'ies'} and {self.featureless:,} without "
                "words left out; pairs of distinct "
                f"texts, up to {self.sample:,} sampled at each distance (seed {self.seed}); a "
                "pair is a near-duplicate when "
                f"its {self._truth()}; precision is weighted by documents"
            )
        else:
            header = (
                "k",
                "pairs at k",
                "sampled",
                "mean J",
                "median J",
                "precision at k",
                "pairs within k",
                "precision within k",
                "duplicates within k",
            )
            body = [
                (
                    str(r.k),
                    f"{r.pairs:,}",
                    f"{r.sampled:,}",
                    num(r.mean_jaccard),
                    num(r.median_jaccard),
                    num(r.precision),
                    f"{r.pairs_within:,}",
                    num(r.precision_within),
                    whole(r.duplicates_within),
                )
                for r in self.rows
            ]
            intro = (
                f"{self.documents:,} documents; up to {self.sample:,} pairs sampled at each "
                f"distance (seed {self.seed}); "
                f"a pair is a near-duplicate when its word {self.ngram}-shingle Jaccard J >= {self.threshold:g}"
            )
        widths = [max(len(h), *(len(line[c]) for line in body)) for c, h in enumerate(header)]
        lines = [intro, "  ".join(h.rjust(w) for h, w in zip(header, widths))]
        lines += ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in body]
        lines.append(self.verdict())
        if len(self.recommended_by_ngram) > 1:
            lines.append(
                "recommended k by shingle size: "
                + ", ".join(
                    f"{n} word{'s' if n > 1 else ''}: {'none' if k is None else k}"
                    for n, k in sorted(self.recommended_by_ngram.items())
                )
            )
        return "\n".join(lines)

    def plot(self) -> Any:
        """A matplotlib ``Figure``: above, recall within k (verified mode) or precision within k
        (fingerprint-only mode) for each shingle size, the precision at k, the target and the
        recommended k; below, the pair counts at k and within k (log scale). Needs matplotlib
        (``pip install 'neardup[plot]'``); save it with ``fig.savefig(path)``."""
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise MissingExtraError(f"plotting needs matplotlib: {PLOT_EXTRA}") from None
        ks = [r.k for r in self.rows]
        fig = Figure(figsize=(8, 6.5), layout="constrained")
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        weighting = " (by documents)" if self.verify else ""
        top.plot(
            ks,
            [r.precision for r in self.rows],
            "o:",
            color="tab:gray",
            label=f"precision at k{weighting}",
        )
        others = iter(["tab:purple", "tab:olive", "tab:cyan", "tab:pink", "tab:brown"] * 4)
        curves, what = (
            (self.recall_within_by_ngram, "recall")
            if self.verify
            else (self.precision_within_by_ngram, "precision")
        )
        if self.verify:
            top.plot(
                ks,
                [r.precision_within for r in self.rows],
                "s--",
                color="tab:gray",
                label="precision within k (by documents)",
            )
        for n, values in sorted(curves.items()):
            style = (
                {"linewidth": 2.5, "color": "tab:blue"}
                if n == self.ngram
                else {"linewidth": 1, "color": next(others)}
            )
            top.plot(ks, values, "o-", label=f"{what} within k ({n}-word shingles)", **style)
        target = self.target_recall if self.verify else self.target_precision
        top.axhline(
            target, color="tab:red", linestyle="--", linewidth=1, label=f"target {what} {target:g}"
        )
        if self.recommended_k is not None:
            top.axvline(
                self.recommended_k,
                color="tab:green",
                linewidth=1.5,
                label=f"recommended k = {self.recommended_k}",
            )
        top.set_ylim(-0.02, 1.02)
        top.set_ylabel(f"near-duplicates: Jaccard >= {self.threshold:g}")
        top.set_title(
            f"neardup tune: {self.documents:,} documents, up to {self.sample:,} pairs sampled per distance"
        )
        top.grid(alpha=0.3)
        top.legend(loc="lower left", fontsize="small")
        unit = "text pairs" if self.verify else "document pairs"
        bottom.bar(
            ks, [max(r.pairs, 0) for r in self.rows], color="tab:orange", label=f"{unit} at k"
        )
        bottom.plot(
            ks,
            [r.pairs_within for r in self.rows],
            "s-",
            color="tab:brown",
            label=f"{unit} within k",
        )
        bottom.plot(
            ks,
            [r.duplicates_within for r in self.rows],
            "^-",
            color="tab:green",
            label="near-duplicates within k (est.)",
        )
        if any(r.pairs for r in self.rows):
            bottom.set_yscale("log")
        bottom.set_xlabel("k (Hamming distance)")
        bottom.set_ylabel(unit)
        bottom.set_xticks(ks)
        bottom.grid(alpha=0.3)
        bottom.legend(loc="upper left", fontsize="small")
        return fig


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
        by_ngram = {n: recommend_recall(pairs, precision[n], target) for n in sizes}
        se = _recall_se(pairs, hits[shingle], taken)
    else:
        within = {n: precision_within(pairs, precision[n]) for n in sizes}
        at = precision[shingle]
        by_ngram = {n: recommend(pairs, precision[n], target) for n in sizes}
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
        recommended_k=by_ngram[shingle],
        recommended_by_ngram=by_ngram,
        precision_within_by_ngram={
            n: np.asarray(within[n], dtype=np.float64).tolist() for n in sizes
        },
        sampled=sampled,
        documents=documents,
        ngram=shingle,
        threshold=threshold,
        target_precision=None if verify else target,
        sample=sample,
        seed=seed,
        verify=verify,
        target_recall=target if verify else None,
        texts=sampled.texts,
        copies=sampled.copies,
        featureless=sampled.featureless,
        recall_within_by_ngram=recall,
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
) -> TuneResult:
    """Measures, on a corpus, how many pairs at each Hamming distance are near-duplicates, and
    recommends a ``k``.

    By default for the verified dedup (``neardup.dedup``'s default): the smallest candidate
    radius ``k`` that keeps ``target_recall`` (0.99) of the near-duplicate pairs (word-shingle
    Jaccard >= ``threshold``) found within ``max_k``, with the cost of each k (candidate pairs
    per near-duplicate) and the precision of its candidates weighted by documents. Exact copies
    count once and texts without words are left out. With ``verify=False``, for the
    fingerprint-only dedup (``threshold=None`` there): the largest ``k`` whose precision within
    k (over document pairs) reaches ``target_precision`` (0.9). Pairs at each distance
    0..``max_k`` are counted exactly, up to ``sample`` of them per distance are drawn (seeded) and
    their Jaccard is measured; see the module's documentation for the method and its error.

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
    first = FirstPass(hasher, None, threads)
    for at, chunk in _chunks(texts, CHUNK_SIZE, "docs"):
        first.digest(chunk, at)
    fps = first.fingerprints
    if verify:
        sampled = sample_text_pairs(fps, first.keys, max_k, sample, seed, threads)
    else:
        sampled = sample_pairs(fps, max_k, sample, seed, threads)
    name = text_field or "text"
    return measure(
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


# -- helpers -------------------------------------------------------------------------------------


def _max_k(max_k: Any) -> int:
    return check_k(max_k, "max_k")


def _check(
    ngram: Any, ngrams: Any, threshold: Any, target_precision: Any, target_recall: Any, verify: bool
) -> tuple[int, list[int], float, float]:
    """Validated (ngram, sorted shingle sizes with ngram among them, threshold, the mode's target):
    ``target_recall`` for the verified mode, ``target_precision`` for the fingerprint-only one."""
    ngram = integer(ngram, "shingle", minimum=1)
    if isinstance(ngrams, (str, bytes)) or not isinstance(ngrams, Iterable):
        raise TypeError(f"shingles must be an iterable of ints, got {type(ngrams).__name__}")
    sizes = sorted({ngram} | {integer(n, "shingles[]", minimum=1) for n in ngrams})
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
    return ngram, sizes, values[0], values[1]


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
