"""The steps of a dedup, shared by :func:`neardup.dedup`, the ``neardup`` command and
:mod:`neardup.dask`.

1. **First pass.** Each document gives a :class:`~neardup.digest.Digest`: its fingerprint, the
   content key of its normalized text and, when pairs are verified, its word-shingle sketch.
   :class:`FirstPass` gathers them chunk by chunk; sketches are kept in memory up to a budget,
   past which they go to a temporary file, and those of the documents that need one are read
   back (:func:`sketches_of`); where the disk has no room, those documents are read again.
2. **Keep order.** :func:`keep_order` ranks the rows by which should be kept: ``"first"``,
   ``"longest"``, or a key function.
3. **Stars.** :func:`stars` takes the rows in keep order; the first row not yet removed is kept
   and removes every later near-duplicate *of itself*: copies (equal content key and
   fingerprint), and rows whose fingerprints are within ``k`` and, when verified, whose sketches
   have Jaccard similarity >= ``threshold``. Each removed row carries the kept row and their
   Jaccard: the evidence. Clusters are stars, never chains.

When pairs are verified, short texts (at most ``SHORT`` word shingles) are candidates of each
other whatever their fingerprints (exactly: by prefix filtering on their shingle sets, which the
first pass keeps for them whatever the sketch budget). A small edit moves a short text's
fingerprint far: such pairs lie 9 to 14 bits apart, beyond any k that keeps the search cheap.
With prefix candidates, every text's candidates are the texts sharing a hash of its prefix
list (:mod:`neardup.prefix_lists`, which the first pass fills).
"""

from __future__ import annotations

import errno
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _core
from .digest import KEY_DTYPE, Digest, key_words, no_keys
from .hasher import Simhasher, digest_many
from .index import DEFAULT_MAX_PAIRS
from .prefix_lists import PrefixLists
from .validate import check_k, integer
from .verify import THRESHOLD_K, Sketches, check_threshold, estimate_band, in_band

__all__ = [
    "THRESHOLD",
    "THRESHOLD_K",
    "UNVERIFIED_K",
    "SKETCH_BUDGET",
    "SHORT",
    "FirstPass",
    "CANDIDATES",
    "candidates",
    "keep_order",
    "stars",
    "exact_in_band",
    "sketches_of",
    "labels_of",
]

Keep = str | Callable[[Any], Any]

#: The default Jaccard threshold of a verified near-duplicate pair (word 3-shingles).
THRESHOLD = 0.8
#: Words per shingle of the verification's Jaccard, by default.
SHINGLE = 3
#: The default k without verification (with it: ``THRESHOLD_K``).
UNVERIFIED_K = 3
#: The most memory for the first pass's shingle sketches (about 0.6 KB for a short document, only
#: the first copy of a text is sketched); past it, they go to a temporary file and only those of
#: the candidates are read back (see :mod:`neardup.sketch_spill`). On 1M synthetic documents
#: (230 MB of sketches in all, 46% of the documents candidates) that holds the peak near 400 MB
#: instead of 640 MB with every sketch in memory.
SKETCH_BUDGET = 128 << 20
#: Sketch bytes per byte of input, at most, as measured on short texts (0.64 on the 1M synthetic
#: corpus with 4-byte hashes, so about 1.3 with today's 8-byte ones; long documents have far
#: less, their sketches being capped at 1,024 hashes): an input whose size times this passes the
#: budget is not sketched in the first pass at all.
SKETCH_BYTES_PER_INPUT_BYTE = 1.4


#: The most word shingles of a *short* text: short texts are verified against each other whatever
#: their fingerprints (the core's ``short_texts``).
SHORT: int = _core.SHORT_TEXT_SHINGLES

#: How verified dedup finds its candidates: ``"prefix"``, texts sharing a prefix hash of their
#: sketches (every pair at the threshold, as many candidates per document at any corpus size), or
#: ``"fingerprint"``, fingerprints within ``k`` (the only way without verification, and the way an
#: index is searched). The default is ``"prefix"`` (benches/results/prefix-candidates.md,
#: "Decision").
CANDIDATES = ("prefix", "fingerprint")
DEFAULT_CANDIDATES = "prefix"


def check_candidates(candidates: Any) -> str:
    """``candidates=`` checked (None: the default)."""
    if candidates is None:
        return DEFAULT_CANDIDATES
    if candidates not in CANDIDATES:
        raise ValueError(f'candidates must be "prefix" or "fingerprint", got {candidates!r}')
    return str(candidates)


#: The default of ``threshold=``: verify at ``THRESHOLD`` (``None`` means fingerprints alone).
VERIFY: Any = object()


def default_k(k: int | None, threshold: float | None) -> int:
    """The candidate radius: ``k``, or the default of the mode."""
    return k if k is not None else THRESHOLD_K if threshold is not None else UNVERIFIED_K


def check_settings(k: Any, threshold: Any, shingle: Any) -> tuple[int, float | None, int]:
    """``(k, threshold, shingle)`` checked, ``VERIFY`` and ``k=None`` given their defaults."""
    if threshold is VERIFY:
        threshold = THRESHOLD
    if threshold is not None:
        threshold = check_threshold(threshold)
        shingle = integer(shingle, "shingle", minimum=1)
    return check_k(default_k(k, threshold)), threshold, shingle


class FirstPass:
    """Gathers the digests of a corpus, chunk by chunk, in row order.

    Args:
        hasher: the fingerprint settings (its normalization also makes the sketches' text).
        shingle: words per shingle of the sketches; None when pairs are not verified.
        threads: worker threads for the core.
        budget: the most bytes of sketches to keep (None: no limit; the command uses ``SKETCH_BUDGET``).
        prefixes: the threshold of verified stars when their candidates come from prefix
            filtering (see :class:`PrefixLists`): each text's prefix list is kept, whatever the
            budget.
    """

    def __init__(
        self,
        hasher: Simhasher,
        shingle: int | None,
        threads: int | None = None,
        budget: int | None = None,
        prefixes: float | None = None,
    ) -> None:
        self.hasher = hasher
        self.threads = threads
        self.sketches = (
            Sketches(hasher, shingle, threads=threads, budget=budget, spill=budget is not None)
            if shingle is not None
            else None
        )
        # The shingle sets of short texts, kept whatever the budget (at most SHORT hashes each).
        self.short = (
            Sketches(hasher, shingle, threads=threads)
            if shingle is not None and prefixes is None
            else None
        )
        self.prefixes = (
            PrefixLists(prefixes, self.sketches, threads)
            if prefixes is not None and self.sketches is not None
            else None
        )
        self._seen = _core.KeySet() if shingle is not None else None
        self._fps: list[np.ndarray] = []
        self._keys: list[np.ndarray] = []
        self._positions: list[np.ndarray] = []
        self.rows = 0

    def expect(self, input_bytes: int | None) -> None:
        """Given the input's size, sends the sketches to disk from the start when they would
        pass their budget anyway, or, when the disk has no room for them, skips sketching in
        the first pass (the candidates are then read again)."""
        budget = self.sketches.budget if self.sketches is not None else None
        if (
            budget is not None
            and input_bytes
            and input_bytes * SKETCH_BYTES_PER_INPUT_BYTE > budget
        ):
            self.sketches.spill(int(input_bytes * SKETCH_BYTES_PER_INPUT_BYTE))  # type: ignore[union-attr]

    def sketch_spec(self) -> tuple[int, int] | None:
        """``(ngram, size)`` of the sketches to make now, or None (not verified). Past the budget,
        ``(ngram, -SHORT)``: the core then keeps the short texts' whole sets only (an empty sketch
        for the others, left after SHORT + 1 distinct shingles)."""
        if self.sketches is None:
            return None
        if self.sketches.dropped and self.prefixes is None:
            return self.sketches.ngram, -SHORT
        return self.sketches.ngram, self.sketches.size

    def add(self, digest: Digest, positions: Any = None) -> None:
        """Adds the digests of the next rows; ``positions``, where the input holds them (line
        numbers), lets a second read find them."""
        rows, lengths = self._note(digest, positions)
        if self.sketches is not None and digest.sketches is not None:
            starts, ends, hashes = digest.sketches
            self.sketches.add_sketches(rows + self.rows, starts[rows], ends[rows], hashes)
        self._fps.append(digest.fingerprints)
        self._keys.append(digest.keys)
        self.rows += len(digest.fingerprints)

    def _note(self, digest: Digest, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        """What the next rows give beside the kept sketches: their positions, the short texts'
        sets and the prefix lists' counts; returns the rows (of the chunk) that keep a sketch,
        their texts' first occurrences, and their sketches' lengths."""
        if self._seen is None and self.sketches is not None:
            raise RuntimeError("rows added after FirstPass.finish()")
        if positions is not None:
            self._positions.append(np.asarray(positions, dtype=np.int64))
        if self.sketches is None or digest.sketches is None:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        assert self._seen is not None
        # Only a text's first occurrence keeps its sketch: its copies are found by their key.
        first = self._seen.first_seen(
            key_words(digest.keys),
            np.ascontiguousarray(digest.fingerprints, dtype=np.uint64),
        )
        starts, ends, hashes = digest.sketches
        rows = np.flatnonzero(first)
        lengths = (ends[rows] - starts[rows]).astype(np.int64)
        short = rows[(lengths > 0) & (lengths <= SHORT)]
        if self.short is not None:
            self.short.add_sketches(short + self.rows, starts[short], ends[short], hashes)
        if self.prefixes is not None:
            low = np.asarray(digest.keys, dtype=KEY_DTYPE)["lo"]
            self.prefixes.count(starts[rows], ends[rows], hashes, low[rows])
        return rows, lengths

    @property
    def seen(self) -> _core.KeySet | None:
        """The content keys of the rows added so far, with their fingerprints (None when pairs
        are not verified, or after :meth:`finish`). Given to the core with the next rows, it
        spares their copies of earlier texts the fingerprint and sketch: a copy takes its
        text's fingerprint, and only a text's first occurrence keeps a sketch."""
        return self._seen

    def finish(self) -> None:
        """After the last rows: lets go of the set of content keys seen (18 MB for 1M texts),
        which only adding rows needs."""
        self._seen = None

    def digest(self, docs: list[Any], start: int = 0, name: str = "docs") -> Digest:
        """Digests a chunk of documents and adds it; returns their fingerprints and keys (and
        their sketches, unless the core wrote them where they are kept)."""
        spec = self.sketch_spec()
        into = self._appending(spec)
        got = digest_many(
            self.hasher,
            docs,
            threads=self.threads,
            sketch=spec,
            start=start,
            name=name,
            seen=self.seen,
            into=into,
        )
        if into is None:
            self.add(got)
            return got
        # The core appended each text's sketch at its first occurrence to the sketches kept,
        # with no copy of its own: they are noted once the view of them is let go.
        assert self.sketches is not None
        rows, lengths = self._note(got, None)
        fps, keys = got.fingerprints, got.keys
        del got
        self.sketches.appended(rows + self.rows, lengths)
        self._fps.append(fps)
        self._keys.append(keys)
        self.rows += len(fps)
        return Digest(fps, keys)

    def _appending(self, spec: tuple[int, int] | None) -> _core.HashBuffer | None:
        """Where the core may append the next chunk's sketches itself: the buffer of sketches
        kept in memory, when they are made and every row is still to come."""
        usable = isinstance(self.sketches, Sketches) and self._seen is not None
        if not usable or spec is None or spec[1] <= 0 or self.hasher.tokenizer is not None:
            return None
        return self.sketches.appending()  # type: ignore[union-attr]

    @property
    def fingerprints(self) -> np.ndarray:
        self._fps = [np.concatenate(self._fps)] if len(self._fps) > 1 else self._fps
        return self._fps[0] if self._fps else np.zeros(0, np.uint64)

    @property
    def positions(self) -> np.ndarray | None:
        """Where the input holds each row (line numbers), when every chunk said so."""
        if sum(len(p) for p in self._positions) != self.rows:
            return None
        self._positions = (
            [np.concatenate(self._positions)] if len(self._positions) > 1 else self._positions
        )
        return self._positions[0] if self._positions else np.zeros(0, np.int64)

    @property
    def keys(self) -> np.ndarray:
        self._keys = [np.concatenate(self._keys)] if len(self._keys) > 1 else self._keys
        return self._keys[0] if self._keys else no_keys()


def first_rows(keys: np.ndarray) -> np.ndarray:
    """For each row, the first row with the same content key: the one whose sketch is kept."""
    if not len(keys):
        return np.zeros(0, np.int64)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)].astype(np.int64)


def copy_groups(fingerprints: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """A label per row, equal for rows of one text (equal content key and fingerprint)."""
    if not len(keys):
        return np.zeros(0, np.int64)
    keys = np.asarray(keys, dtype=KEY_DTYPE)
    pairs = np.empty(len(keys), dtype=[("lo", np.uint64), ("hi", np.uint64), ("f", np.uint64)])
    pairs["lo"], pairs["hi"], pairs["f"] = keys["lo"], keys["hi"], fingerprints
    _, inverse = np.unique(pairs, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64, copy=False)


def keep_order(
    keep: Keep,
    n: int,
    lengths: np.ndarray | None = None,
    doc: Callable[[int], Any] | None = None,
    related: Callable[[], np.ndarray] | None = None,
) -> np.ndarray:
    """The rows in the order they should be kept: ``"first"`` (row order), ``"longest"`` (longest
    text first, ties to the first), or by a key function called on ``doc(row)``, highest first,
    ties to the first; it is called only on the ``related()`` rows (those that have a copy or a
    candidate), the others keeping row order after them."""
    rows = np.arange(n, dtype=np.int64)
    if keep == "first":
        return rows
    if keep == "longest":
        if lengths is None:
            raise ValueError('keep="longest" needs the documents\' lengths')
        return np.lexsort((rows, -np.asarray(lengths, dtype=np.int64))).astype(np.int64)
    if callable(keep):
        if doc is None:
            raise ValueError("a keep function needs the documents: pass a list, DataFrame or Table")
        chosen = related() if related is not None else rows
        keys = {int(r): keep(doc(int(r))) for r in chosen}
        ranked = sorted(keys, key=keys.__getitem__, reverse=True)  # stable: ties stay in row order
        rest = np.setdiff1d(rows, chosen, assume_unique=True)
        return np.concatenate([np.asarray(ranked, dtype=np.int64), rest])
    raise ValueError(f'keep must be "first", "longest" or a function, got {keep!r}')


def related_rows(fingerprints: np.ndarray, keys: np.ndarray, candidates: Any) -> np.ndarray:
    """The rows a keep function must rank: those with a copy, or whose text has a candidate."""
    groups = copy_groups(fingerprints, keys)
    sizes = np.bincount(groups) if len(groups) else np.zeros(0, np.int64)
    mark = np.zeros(len(sizes), bool)
    mark[groups[candidates.rows()]] = True
    return np.flatnonzero((sizes[groups] > 1) | mark[groups]).astype(np.int64)


def candidates(
    fingerprints: np.ndarray,
    keys: np.ndarray,
    k: int,
    threads: int | None = None,
    short: Sketches | None = None,
    threshold: float | None = None,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
    prefixes: PrefixLists | None = None,
) -> Any:
    """The candidate structure of a corpus (texts, fingerprint groups, groups within ``k``, and,
    given the ``short`` texts' shingle sets and the ``threshold`` of verified stars, the short
    texts' prefix hashes), computed once for :func:`related_rows`, the rows to sketch again, and
    :func:`stars`. More than ``max_pairs`` pairs of distinct fingerprints within ``k`` (None: no
    limit) raise :class:`neardup.TooManyPairsError`; ``.pair_count`` is their number.

    Given the ``prefixes`` of every text instead, every text is a candidate of those that share
    a prefix hash, and fingerprints propose nothing (``.prefix_pairs`` counts the candidates)."""
    fps = np.ascontiguousarray(fingerprints, dtype=np.uint64)
    if prefixes is not None:
        if not prefixes.ready:
            raise OSError(
                errno.ENOSPC,
                'candidates="prefix" keeps every document\'s sketch, in memory or in a temporary '
                f"file, and {tempfile.gettempdir()} had no room for them: free some room there "
                '(or set TMPDIR), or use candidates="fingerprint" (--candidates fingerprint)',
            )
        found = _core.StarCandidates(
            fps,
            key_words(keys),
            k,
            threads=threads,
            max_pairs=max_pairs,
            threshold=prefixes.threshold,
            prefixes=(*prefixes.parts(), prefixes.alone()),
            band=prefixes.band,
            size=prefixes.size,
        )
        prefixes.release()
        return found
    sets = short.parts() if short is not None and threshold is not None else None
    return _core.StarCandidates(
        fps,
        key_words(keys),
        k,
        threads=threads,
        max_pairs=max_pairs,
        short=sets,
        threshold=threshold if sets is not None else None,
    )


def stars(
    found: Any,
    order: np.ndarray,
    threshold: float | None,
    sketches: Sketches | None = None,
    resketch: Callable[[np.ndarray], Sketches] | None = None,
    whole: Callable[[np.ndarray], Sketches] | None = None,
    evidence: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(the row kept in each row's place, their Jaccard) over the :func:`candidates` ``found``:
    see the module's step 3. Without a threshold, candidates within ``k`` are near-duplicates on
    their fingerprints alone (Jaccard NaN). With one, ``sketches`` holds every text's (from the
    first pass), or ``resketch(rows)`` makes those of the rows that need one.

    A pair whose bottom-k estimate (a sketch cut at its size) lies within
    :func:`~neardup.verify.estimate_band` of the threshold is decided on its exact shingle sets,
    which ``whole(rows)`` makes (sketches of size ``WHOLE``); when one decides its pair otherwise
    than the estimate did, the stars are taken again with them, until no such pair is left
    undecided. Without ``whole``, those pairs are decided on their
    estimates. ``evidence``, when given, receives what the stars rest on: ``band_pairs_exact``
    (pairs in the band decided exactly), ``band_pairs_estimated`` (decided on an estimate, for
    want of ``whole``) and ``short_pairs_skipped`` (candidate pairs of short texts not compared:
    see the core's short_texts)."""
    order = np.ascontiguousarray(order, dtype=np.int64)
    if evidence is not None:
        evidence["short_pairs_skipped"] = int(found.skipped_pairs)
        evidence["prefix_pairs"] = int(found.prefix_pairs)
    if threshold is None:
        kept, jaccard, _, _ = found.stars(order)
        return kept, jaccard
    sketches = sketches_of(found.rows, sketches, resketch)
    starts, ends, hashes = sketches.ranges(len(order))
    band = estimate_band(threshold, sketches.size)
    rows_a, rows_b, exact = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    while True:
        kept, jaccard, undecided, checks = found.stars(
            order, threshold, starts, ends, hashes, sketches.size, band, (rows_a, rows_b, exact)
        )
        pairs = undecided.reshape(-1, 3)
        if whole is None or not len(pairs):
            break
        found_exact = whole(np.unique(pairs[:, :2])).jaccard(pairs[:, 0], pairs[:, 1])
        rows_a = np.concatenate([rows_a, pairs[:, 0]])
        rows_b = np.concatenate([rows_b, pairs[:, 1]])
        exact = np.concatenate([exact, found_exact])
        if ((found_exact >= threshold) == pairs[:, 2].astype(bool)).all():
            # Every exact Jaccard decides its pair as the estimate did: the stars stand, and
            # the removals of those pairs report the exact Jaccard.
            jaccard = found.patch_jaccards(kept, jaccard, (rows_a, rows_b, exact))
            pairs = pairs[:0]
            break
    if evidence is not None:
        evidence["pairs_compared"] = int(checks)
        evidence["pairs_listed"] = int(found.pairs_listed)
        evidence["band_pairs_exact"] = len(exact)
        evidence["band_pairs_estimated"] = len(pairs)
    return kept, jaccard


def exact_in_band(
    sketches: Sketches,
    i: np.ndarray,
    j: np.ndarray,
    estimates: np.ndarray,
    threshold: float,
    whole: Callable[[np.ndarray], Sketches],
) -> tuple[np.ndarray, np.ndarray]:
    """``(jaccards, band)`` of the pairs of rows ``(i[p], j[p])`` given their Jaccards from
    ``sketches`` (``estimates``): a pair whose estimate the stars would not decide on
    (:func:`~neardup.verify.in_band`) takes the exact Jaccard of its whole shingle sets, which
    ``whole(rows)`` makes as for :func:`stars` (the documents read again); ``band`` marks them."""
    i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
    jaccards = np.array(estimates, dtype=np.float64)
    band = in_band(jaccards, sketches.cut(i, j), threshold, sketches.size)
    if band.any():
        a, b = i[band], j[band]
        jaccards[band] = whole(np.unique(np.concatenate([a, b]))).jaccard(a, b)
    return jaccards, band


def sketches_of(
    rows: Callable[[], np.ndarray],
    sketches: Sketches | None,
    resketch: Callable[[np.ndarray], Sketches] | None,
) -> Sketches:
    """Sketches in memory that hold at least those of ``rows()``: the first pass's, read back
    from disk when they were spilled, or made again by ``resketch`` when they were dropped."""
    if sketches is not None and sketches.spilled:
        return sketches.read_back(rows())
    if sketches is None or sketches.dropped:
        if resketch is None:
            raise ValueError("verified stars need the sketches, or a way to make them")
        return resketch(rows())
    return sketches


def labels_of(kept: np.ndarray) -> np.ndarray:
    """Cluster labels from stars: the smallest row of each star."""
    n = len(kept)
    smallest = np.arange(n, dtype=np.int64)
    np.minimum.at(smallest, kept, np.arange(n, dtype=np.int64))
    return smallest[kept]
