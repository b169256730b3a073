"""The pairs tune measures: sampled at each Hamming distance, and the curve statistics of their
Jaccard (precision and recall within k, the recommended k)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .pipeline import copy_groups
from .report import nearest_distances
from .validate import check_k, integer


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


def sample_mode_pairs(
    fingerprints: np.ndarray,
    keys: np.ndarray,
    max_k: int,
    sample: int,
    seed: int,
    threads: int | None,
    *,
    verify: bool,
) -> SampledPairs:
    """The population of the verified mode (:func:`sample_text_pairs`) or, without ``verify``, of
    the fingerprint-only mode (:func:`sample_pairs`, which needs no content keys)."""
    if verify:
        return sample_text_pairs(fingerprints, keys, max_k, sample, seed, threads)
    return sample_pairs(fingerprints, max_k, sample, seed, threads)


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


def _max_k(max_k: Any) -> int:
    return check_k(max_k, "max_k")
