"""Checking near-duplicate candidates by the Jaccard similarity of their word shingles.

A 64-bit simhash estimates how alike two documents are with some noise: at a distance small
enough to be precise (k = 3) it misses many pairs that share most of their text, and on code or
long documents many unrelated ones lie within a few bits. So :func:`neardup.dedup` and ``neardup
dedup`` let the fingerprints propose candidates at a larger distance (k = 8 by default,
``THRESHOLD_K``) and keep the pairs whose sets of word n-gram shingles (3-grams by default, on
the normalized text) have Jaccard similarity of at least the threshold (0.8 by default).

A sketch holds the distinct 63-bit shingle hashes of a document (each chains SplitMix64's
output function over two 64-bit hashes of each of its words), cut to the ``SKETCH_SIZE``
smallest, and for a set of one or two shingles a second hash of each (its *checks*): the Jaccard
of two sketches is exact for documents of fewer shingles and the bottom-k estimate (standard
error sqrt(J(1 - J) / 1024), 0.0125 at J = 0.8) for longer ones. docs/evidence.md gives the
chance that hashes ever decide a removal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core, sketch_spill
from .hasher import Simhasher
from .validate import integer

if TYPE_CHECKING:
    from .sketch_spill import SketchSpill

__all__ = [
    "SKETCH_DTYPE",
    "SKETCH_SIZE",
    "WHOLE",
    "estimate_band",
    "in_band",
    "THRESHOLD_K",
    "Sketches",
    "jaccard",
    "check_threshold",
]

#: Hashes kept per sketch. Chosen on the corpus suite (benches/results/verified.md): with 256,
#: removal precision on long documents was 0.961 (manual pages) and 0.966 (edited documents of up
#: to 100 KB), the bottom-k estimate's error (0.025 at Jaccard 0.8) letting pairs just below the
#: threshold through; with 1,024 (error 0.0125) it is 0.9999 and 0.991, at 10% more time there and
#: no change on short texts, which have fewer shingles than that.
SKETCH_SIZE = 1024
#: The type of a sketch's hashes.
SKETCH_DTYPE = np.dtype(np.uint64)
#: A sketch size that holds a document's whole shingle set (the core's largest): the Jaccard of
#: two such sketches is exact.
WHOLE = 1 << 20


def estimate_band(threshold: float, size: int = SKETCH_SIZE) -> float:
    """How far from ``threshold`` a bottom-``size`` estimate must lie to decide a pair on its
    own: 5 standard errors of the estimate at the threshold, ``5 sqrt(t (1 - t) / size)``
    (0.0625 at t = 0.8 and 1,024 hashes), and at least ``2 / size``. The estimate errs by more
    with probability below 3 x 10^-7 (normal tail); a pair whose estimate lies nearer is decided
    on its exact shingle sets (docs/evidence.md)."""
    return max(5.0 * math.sqrt(threshold * (1.0 - threshold) / size), 2.0 / size)


def in_band(
    estimates: np.ndarray, cut: np.ndarray, threshold: float, size: int = SKETCH_SIZE
) -> np.ndarray:
    """Which pairs their estimates cannot decide, as the stars' rule: those where a sketch is
    cut (holds ``size`` hashes: the Jaccard is then a bottom-``size`` estimate) and the estimate
    lies within :func:`estimate_band` of ``threshold`` (at least ``threshold - band``, below
    ``threshold + band``). Such a pair is decided on its exact shingle sets."""
    band = estimate_band(threshold, size)
    estimates = np.asarray(estimates, np.float64)
    return (
        np.asarray(cut, bool)
        & (estimates >= max(threshold - band, 0.0))
        & (estimates < threshold + band)
    )


#: The default k with a threshold: the smallest k at which verified removal recall reaches
#: datasketch's LSH with components on every corpus of the suite where drift-free stars can
#: (README "Choosing the defaults"; benches/candidates.py, benches/bench_verified.py).
THRESHOLD_K = 8


def check_threshold(threshold: Any) -> float:
    """The threshold as a float in (0, 1], or a ValueError saying so."""
    if isinstance(threshold, bool) or not isinstance(
        threshold, (int, float, np.floating, np.integer)
    ):
        raise TypeError(f"threshold must be a number in (0, 1], got {type(threshold).__name__}")
    value = float(threshold)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    return value


def _text_of(hasher: Simhasher, doc: Any) -> str:
    """The normalized text of a document: a str, or a dict of fields read in ``hasher.fields`` order."""
    if isinstance(doc, Mapping):
        names = list(hasher.fields or doc)
        doc = "\n".join(v for v in (doc.get(name) for name in names) if isinstance(v, str))
    if isinstance(doc, (bytes, bytearray, memoryview)):
        doc = bytes(doc).decode("utf-8")
    if not isinstance(doc, str):
        raise TypeError(f"a document must be a str or a dict of fields, got {type(doc).__name__}")
    return hasher.normalize(doc)


class Sketches:
    """Shingle sketches of some rows of a corpus, added chunk by chunk in any order.

    Args:
        hasher: normalizes the texts (default: ``Simhasher()``).
        ngram: words per shingle.
        size: hashes kept per document.
        threads: worker threads (default: every core).
        budget: the most bytes to hold in memory. Past it, with ``spill``, the sketches go on
            to a temporary file (``spilled`` is set; :meth:`read_back` gives those of some rows);
            without, or when the disk has no room, every sketch is dropped (``dropped`` is set)
            and later ones are not kept, so that a caller can fall back to sketching fewer rows.
        spill: whether sketches past the budget may go to a temporary file.
    """

    def __init__(
        self,
        hasher: Simhasher | None = None,
        ngram: int = 3,
        size: int = SKETCH_SIZE,
        threads: int | None = None,
        budget: int | None = None,
        spill: bool = False,
    ) -> None:
        self.hasher = hasher if hasher is not None else Simhasher()
        self.ngram = integer(ngram, "ngram", minimum=1)
        self.size = integer(size, "size", minimum=1)
        self.threads = threads
        self.budget = budget
        self.dropped = False
        self.may_spill = spill
        self._spill: SketchSpill | None = None
        self.nbytes = 0
        self._rows: list[np.ndarray] = []
        self._starts: list[np.ndarray] = []
        self._ends: list[np.ndarray] = []
        # Every sketch's hashes, one after the other: those given out, and those added since.
        self._taken = np.zeros(0, SKETCH_DTYPE)
        self._buffer = _core.HashBuffer()
        self._total = 0
        self._count = 0  # rows sketched

    def add(self, rows: Sequence[int] | np.ndarray, docs: Sequence[Any]) -> None:
        """Sketches the documents ``docs`` of rows ``rows``."""
        if len(rows) != len(docs):
            raise ValueError(f"{len(rows)} rows but {len(docs)} documents")
        if self.dropped or not len(rows):
            return
        offsets, hashes, _ = _core.shingle_sketches(
            [_text_of(self.hasher, d) for d in docs], self.ngram, self.size, self.threads
        )
        self.add_sketches(rows, offsets[:-1], offsets[1:], hashes)

    def add_sketches(
        self,
        rows: Sequence[int] | np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        hashes: np.ndarray,
    ) -> None:
        """Adds sketches made elsewhere: row ``rows[d]``'s is ``hashes[starts[d]:ends[d]]``. Only
        those hashes are copied, so ``hashes`` may hold sketches of other rows too."""
        if self.dropped:
            return
        rows = np.asarray(rows, dtype=np.int64)
        starts = np.ascontiguousarray(starts, dtype=np.uint64)
        ends = np.ascontiguousarray(ends, dtype=np.uint64)
        lengths = (ends - starts).astype(np.int64)
        m = int(lengths.sum())
        firsts = np.cumsum(lengths) - lengths
        hashes = np.ascontiguousarray(hashes, dtype=SKETCH_DTYPE)
        packed = m == len(hashes) and bool((starts == firsts).all())
        if self._spill is not None:
            if not packed:
                gathered = _core.HashBuffer()
                gathered.extend_ranges(hashes, starts, ends)
                hashes = gathered.take()
            self._spill_write(rows, hashes, lengths)
            return
        if packed:
            self._buffer.extend(hashes)
        elif m:
            self._buffer.extend_ranges(hashes, starts, ends)
        self._note(rows, lengths, firsts, m)

    def appending(self) -> _core.HashBuffer | None:
        """Where the core may append sketches itself (``Hasher.digest_many(into=...)``), then
        noted with :meth:`appended`: the buffer that holds them, or None when they go to disk or
        were dropped."""
        return None if self.dropped or self._spill is not None else self._buffer

    def appended(self, rows: np.ndarray, lengths: np.ndarray) -> None:
        """Notes the sketches of ``rows``, ``lengths[d]`` hashes for ``rows[d]``, that the core
        appended to :meth:`appending`'s buffer, one after the other, since the last note."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        firsts = np.cumsum(lengths) - lengths
        self._note(rows, lengths, firsts, int(lengths.sum()))

    def _note(self, rows: np.ndarray, lengths: np.ndarray, firsts: np.ndarray, m: int) -> None:
        """Notes the ranges of ``rows`` added to the buffer (``m`` hashes), and keeps to the
        budget."""
        new_starts = (self._total + firsts).astype(np.uint64)
        self._rows.append(rows)
        self._starts.append(new_starts)
        self._ends.append(new_starts + lengths.astype(np.uint64))
        self._total += m
        self._count += len(rows)
        self.nbytes = SKETCH_DTYPE.itemsize * self._total + 24 * self._count
        if self.budget is not None and self.nbytes > self.budget:
            if self.may_spill:
                self.spill()
            else:
                self._drop()

    def hold(
        self, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, hashes: np.ndarray
    ) -> None:
        """Takes sketches that already lie in one array (a memory-mapped spill file) as they
        are, without copying them: row ``rows[d]``'s is ``hashes[starts[d]:ends[d]]``. Only into
        sketches that hold none yet."""
        if self._count or self._total or self._spill is not None or self.dropped:
            raise RuntimeError("hold() takes sketches into empty Sketches only")
        self._taken = hashes
        self._rows = [np.asarray(rows, dtype=np.int64)]
        self._starts = [np.ascontiguousarray(starts, dtype=np.uint64)]
        self._ends = [np.ascontiguousarray(ends, dtype=np.uint64)]
        self._total = len(hashes)
        self._count = len(rows)
        # What memory holds: the ranges (the hashes are the file's pages).
        self.nbytes = 24 * self._count

    @property
    def spilled(self) -> bool:
        """Whether the sketches are on disk (see :meth:`read_back`)."""
        return self._spill is not None

    def spill(self, expected: int | None = None) -> None:
        """Moves the sketches held so far to a temporary file, where later ones go too; given
        the ``expected`` bytes of them all, only when the disk has room (else they are dropped)."""
        if self.dropped or self._spill is not None:
            return
        held = max(self.nbytes, expected or 0)
        try:
            if not sketch_spill.room_for(held):
                raise OSError("no room for the sketches")
            spill = sketch_spill.SketchSpill()
        except OSError:
            self._drop()
            return
        # Held in add order, one after the other: written as they are.
        rows, starts, ends, hashes = self.parts()
        self._spill = spill
        self._clear()
        self._spill_write(rows, hashes, ends - starts)

    def _spill_write(self, rows: np.ndarray, hashes: np.ndarray, lengths: np.ndarray) -> None:
        assert self._spill is not None
        try:
            self._spill.write(rows, hashes, lengths)
        except OSError:
            # The disk filled up: the caller reads the candidates again instead.
            self._drop()

    def _drop(self) -> None:
        self.dropped = True
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        self._clear()

    def _clear(self) -> None:
        """Lets go of the sketches held in memory."""
        self._rows, self._starts, self._ends = [], [], []
        self._taken, self._buffer = np.zeros(0, SKETCH_DTYPE), _core.HashBuffer()
        self._total = self._count = self.nbytes = 0

    def scan(self) -> Any:
        """Every sketch, in blocks of ``(rows, starts, ends, hashes)``: those held in memory,
        or read from the temporary file block by block when they were spilled (which stays open
        for :meth:`read_back`). Nothing when they were dropped."""
        if self._spill is not None:
            yield from self._spill.scan()
        elif not self.dropped:
            yield self.parts()

    def read_back(self, rows: np.ndarray) -> Sketches:
        """The sketches of ``rows``, in memory: from the temporary file when they were spilled
        (which is then closed), else these sketches themselves."""
        if self._spill is None:
            return self
        into = Sketches(self.hasher, self.ngram, self.size, threads=self.threads)
        try:
            return self._spill.read(np.asarray(rows, dtype=np.int64), into)  # type: ignore[no-any-return]
        finally:
            self._spill.close()
            self._spill = None
            self.dropped = True

    def _hashes(self) -> np.ndarray:
        """Every hash, in one array."""
        if len(self._buffer):
            added = self._buffer.take()
            self._taken = np.concatenate([self._taken, added]) if len(self._taken) else added
        return self._taken

    def ranges(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(starts, ends, hashes)`` of rows 0..n-1: row d's sketch is ``hashes[starts[d]:ends[d]]``
        (empty for a row not sketched)."""
        self._check_held()
        starts, ends = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
        for rows, s, e in zip(self._rows, self._starts, self._ends):
            starts[rows], ends[rows] = s, e
        return starts, ends, self._hashes()

    def parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, starts, ends, hashes)``: row ``rows[i]``'s sketch is
        ``hashes[starts[i]:ends[i]]``, rows in the order they were added."""
        self._check_held()
        rows = np.concatenate(self._rows) if self._rows else np.zeros(0, np.int64)
        starts = np.concatenate(self._starts) if self._starts else np.zeros(0, np.uint64)
        ends = np.concatenate(self._ends) if self._ends else np.zeros(0, np.uint64)
        return rows, starts, ends, self._hashes()

    def _check_held(self) -> None:
        if self.dropped:
            raise RuntimeError("the sketches were dropped past their memory budget")
        if self._spill is not None:
            raise RuntimeError("the sketches were spilled to disk: read_back(rows) gives them")

    def _sorted(
        self, *asked: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
        """``(starts, ends, hashes, at)``: the ranges in row order, and where each of the
        ``asked`` rows lies in them (a KeyError names a row not sketched)."""
        rows, starts, ends, hashes = self.parts()
        order = np.argsort(rows, kind="stable")
        rows, starts, ends = rows[order], starts[order], ends[order]
        n = len(rows)
        # Every row 0..n-1 once (the first pass sketched them all): a row is its own index.
        identity = (
            bool(n) and rows[0] == 0 and rows[-1] == n - 1 and bool((np.diff(rows) == 1).all())
        )
        at = []
        for row in asked:
            row = np.ascontiguousarray(row, dtype=np.int64)
            if identity:
                found = (row >= 0) & (row < n)
                place = row
            else:
                place = np.searchsorted(rows, row)
                found = rows[np.minimum(place, n - 1)] == row if n else np.zeros(len(row), bool)
            if not found.all():
                raise KeyError(f"row {int(row[~found][0])} was not sketched")
            at.append(place)
        return starts, ends, hashes, at

    def jaccard(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The Jaccard similarity (``float64``) of the sketches of rows ``i[p]`` and ``j[p]``."""
        starts, ends, hashes, (a, b) = self._sorted(i, j)
        return _core.sketch_jaccard(
            starts, ends, hashes.astype(SKETCH_DTYPE, copy=False), a, b, self.size, self.threads
        )

    def cut(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Whether the sketch of row ``i[p]`` or of ``j[p]`` is cut (holds ``size`` hashes), so
        that their :meth:`jaccard` is a bottom-``size`` estimate (else it is exact)."""
        starts, ends, _, (a, b) = self._sorted(i, j)
        lengths = (ends - starts).astype(np.int64)
        return (lengths[a] >= self.size) | (lengths[b] >= self.size)


def jaccard(a: Any, b: Any, *, ngram: int = 3, hasher: Simhasher | None = None) -> float:
    """The exact Jaccard similarity of the word ``ngram``-shingle sets of two documents.

    Texts are normalized by ``hasher`` (default ``Simhasher()``) and cut into words as the
    fingerprints' features are; a text of fewer than ``ngram`` words is one shingle. Two texts
    whose normalized forms are equal are alike (1.0) even without words; a text without words
    shares nothing with any other (0.0).

    >>> jaccard("the quick brown fox jumps over the lazy dog", "The quick brown fox jumped over the lazy dog!")
    0.4
    """
    sketches = Sketches(hasher, ngram, size=WHOLE, threads=1)
    if _text_of(sketches.hasher, a) == _text_of(sketches.hasher, b):
        return 1.0
    sketches.add([0, 1], [a, b])
    return float(sketches.jaccard(np.array([0]), np.array([1]))[0])
