"""Which threshold? What dedup's default (prefix candidates, decided by the shingles' Jaccard)
removes at each of several thresholds, on the user's own corpus, with the pairs just above and
just below each.

The corpus is read once: its sketches and the rarity order of their shingle hashes do not depend
on the threshold. At each threshold the prefix lists are cut from them for that threshold
(:meth:`neardup.prefix_lists.PrefixLists.at`), and the candidates and stars are those of
:func:`neardup.pipeline.candidates` and :func:`neardup.pipeline.stars` (same keep order, same
estimates, the same exact Jaccards near the threshold): the documents a row says a threshold
removes are those ``neardup dedup --threshold T`` removes from the same input with the same
options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .chunks import CHUNK_SIZE, in_chunks
from .dedup import _whole_sketches
from .hasher import Simhasher
from .index import DEFAULT_MAX_PAIRS
from .pipeline import SHINGLE, THRESHOLD, FirstPass, keep_order, stars
from .pipeline import candidates as find_candidates
from .sources import _documents, check_corpus_arguments
from .validate import integer
from .verify import Sketches, check_threshold

__all__ = [
    "THRESHOLDS",
    "SAMPLES",
    "Removal",
    "ThresholdRow",
    "threshold_table",
    "threshold_rows",
    "removals_at",
    "spared",
]

#: The thresholds of the table by default (the one in use is always added).
THRESHOLDS = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
#: Sample pairs shown on each side of a threshold.
SAMPLES = 2
#: How far below its threshold the dedup report looks for the pairs it kept just below it.
BELOW = 0.05


@dataclass
class Removal:
    """A removed document (``row``) beside the one kept in its place, and their Jaccard."""

    row: int
    kept_row: int
    jaccard: float


@dataclass
class ThresholdRow:
    """What dedup does at ``threshold``: the documents it ``removed`` and the ``clusters`` they
    form; ``above``: its removals of the lowest Jaccards (just above the threshold); ``below``:
    the removals of the next lower threshold of the table whose document this one keeps, of the
    highest Jaccards (just below it; empty for the lowest); ``short_pairs_skipped``: its
    candidate pairs of short texts not compared, as dedup's ``stats`` counts them."""

    threshold: float
    removed: int
    clusters: int
    above: list[Removal] = field(default_factory=list)
    below: list[Removal] = field(default_factory=list)
    short_pairs_skipped: int = 0


def threshold_table(
    docs: Any,
    thresholds: Iterable[float] = THRESHOLDS,
    *,
    threshold: float = THRESHOLD,
    shingle: int = SHINGLE,
    hasher: Simhasher | None = None,
    text_field: str | None = None,
    threads: int | None = None,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    samples: int = SAMPLES,
) -> list[ThresholdRow]:
    """What :func:`neardup.dedup` removes from ``docs`` at each threshold (dedup's default,
    prefix candidates, keeping the first of each cluster): one :class:`ThresholdRow` per
    threshold of ``thresholds`` and ``threshold`` (the one in use), ascending, with the
    documents removed, the clusters, and sample pairs just above and just below it (rows of
    ``docs``). ``dedup(docs, threshold=row.threshold)`` removes ``row.removed`` documents.

    Args:
        docs: what :func:`neardup.dedup` takes.
        thresholds: the thresholds of the table, each in (0, 1].
        threshold: the threshold in use, always a row.
        shingle: words per shingle of the Jaccard.
        hasher: the fingerprint settings (their normalization makes the shingles).
        text_field: the field or column of the text, as for :func:`neardup.dedup`.
        threads: worker threads (default: every core).
        max_pairs: the most pairs compared at a threshold (None: no limit).
        samples: sample pairs on each side of each threshold.

    Example:
        >>> docs = ["a b c d e f g h i j", "a b c d e f g h i k", "a b c d e f g x y z"]
        >>> [(row.threshold, row.removed) for row in threshold_table(docs, [0.4, 0.7])]
        [(0.4, 2), (0.7, 1), (0.8, 0)]
    """
    ordered = sorted({check_threshold(t) for t in (*thresholds, threshold)})
    shingle = integer(shingle, "shingle", minimum=1)
    hasher, threads = check_corpus_arguments(docs, hasher, threads)
    texts, _, doc_at = _documents(docs, text_field, None, hasher, "first")
    first = FirstPass(hasher, shingle, threads, budget=None, prefixes=ordered[0])
    for at, chunk in in_chunks(texts, CHUNK_SIZE, "docs"):
        first.digest(chunk, at)
    first.finish()
    whole = (
        _whole_sketches(doc_at, text_field, hasher, shingle, threads)
        if doc_at is not None
        else None
    )
    return threshold_rows(first, ordered, threads, None, whole, max_pairs, samples)


def threshold_rows(
    first: FirstPass,
    thresholds: Sequence[float],
    threads: int | None,
    resketch: Callable[[np.ndarray], Sketches] | None,
    whole: Callable[[np.ndarray], Sketches] | None,
    max_pairs: int | None,
    samples: int = SAMPLES,
) -> list[ThresholdRow]:
    """One :class:`ThresholdRow` per threshold of ``thresholds``, ascending. ``first`` is the
    first pass of the corpus, made with prefixes; ``resketch`` and ``whole`` make the sketches
    of rows read again, as for :func:`neardup.pipeline.stars`."""
    order = keep_order("first", len(first.fingerprints))
    rows: list[ThresholdRow] = []
    lower: list[Removal] = []
    for t in sorted(set(thresholds)):
        kept, removals, skipped = removals_at(first, t, order, threads, resketch, whole, max_pairs)
        above = sorted(removals, key=lambda p: (p.jaccard, p.row))[:samples]
        clusters = len({p.kept_row for p in removals})
        below = spared(lower, kept, t, samples)
        rows.append(ThresholdRow(t, len(removals), clusters, above, below, skipped))
        lower = removals
    return rows


def removals_at(
    first: FirstPass,
    threshold: float,
    order: np.ndarray,
    threads: int | None,
    resketch: Callable[[np.ndarray], Sketches] | None,
    whole: Callable[[np.ndarray], Sketches] | None,
    max_pairs: int | None,
) -> tuple[np.ndarray, list[Removal], int]:
    """(the row kept in each row's place, the removals, the candidate pairs of short texts not
    compared) of dedup at ``threshold`` in ``order``:
    the prefix lists of ``first`` cut for it (the same rarity order), its candidates and stars.
    The order must be there: before the candidates of ``first``'s own lists, or after them with
    ``first.prefixes.keep_order`` set."""
    assert first.prefixes is not None
    fps, keys = first.fingerprints, first.keys
    lists = first.prefixes.at(threshold)
    found = find_candidates(fps, keys, 0, threads, first.short, threshold, max_pairs, lists)
    kept, jaccard = stars(found, order, threshold, first.sketches, resketch, whole, {})
    gone = np.flatnonzero(kept != np.arange(len(fps)))
    removals = [Removal(int(r), int(kept[r]), float(jaccard[r])) for r in gone]
    return kept, removals, int(found.skipped_pairs)


def spared(
    lower: Sequence[Removal], kept: np.ndarray, threshold: float, samples: int = SAMPLES
) -> list[Removal]:
    """The removals of a lower threshold (``lower``) that dedup at ``threshold`` keeps (``kept``
    is its row kept in each row's place), of the highest Jaccards: the pairs just below it."""
    below = [
        p for p in lower if kept[p.row] == p.row and np.float32(p.jaccard) < np.float32(threshold)
    ]
    return sorted(below, key=lambda p: (-p.jaccard, p.row))[:samples]


def sample_rows(rows: Sequence[ThresholdRow]) -> frozenset[int]:
    """The rows whose texts and ids the samples show."""
    return frozenset(
        r for row in rows for p in (*row.above, *row.below) for r in (p.row, p.kept_row)
    )


def as_dict(row: ThresholdRow, ids: dict[int, Any], texts: dict[int, str]) -> dict[str, Any]:
    """A row, JSON-ready, its samples with their ids and texts."""

    def pair(p: Removal) -> dict[str, Any]:
        return {
            "jaccard": round(p.jaccard, 4),
            "id": ids.get(p.row, p.row),
            "kept_id": ids.get(p.kept_row, p.kept_row),
            "text": texts.get(p.row, ""),
            "kept_text": texts.get(p.kept_row, ""),
        }

    return {
        "threshold": row.threshold,
        "removed": row.removed,
        "clusters": row.clusters,
        "above": [pair(p) for p in row.above],
        "below": [pair(p) for p in row.below],
        "short_pairs_skipped": row.short_pairs_skipped,
    }
