"""The prefix lists of verified stars with prefix candidates: each text's shingle hashes, rarest
first, as many as prefix filtering at the threshold reads.

The rarity order is counted on one text in :data:`RARITY_FRACTION` during the first pass, or on
every text of a small corpus of long texts (:func:`counted_on_every_text`), and the hashes more
than one text may hold are marked on every text when the tables can tell them (:func:`marks_fit`).
These rules are the single machine's (:class:`PrefixLists`, for :mod:`neardup.pipeline`) and
:func:`neardup.dask.dedup`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from .verify import Sketches, estimate_band

__all__ = [
    "PrefixLists",
    "RARITY_FRACTION",
    "EXACT_HASHES",
    "EXACT_MEAN",
    "COUNT_PIECE",
    "RARITY_SAMPLE",
    "counted_on_every_text",
    "frequent",
    "marks_fit",
]


class PrefixLists:
    """Each text's prefix list: its shingle hashes rarest first, as many as prefix filtering at
    ``threshold`` reads (the core's ``short_texts::prefix_lists``), for the candidates of
    verified stars.

    The order is counted during the first pass on one text in :data:`RARITY_FRACTION` (chosen by
    content key, wherever it lies in the corpus), so that a hash held by a given share of the
    texts is placed alike at any corpus size. A corpus whose sketches hold at most
    :data:`EXACT_HASHES` hashes in all, and at least :data:`EXACT_MEAN` a text on average (known
    once the first pass is over, before any list is cut), has its order counted on every text
    instead, from the sketches: on a few thousand long texts
    one in 16 is too coarse (a hash held by a dozen texts is seen once or not at all, so it ranks
    with the hashes no other text holds). The lists are cut after that, from the sketches in
    memory or read back from their temporary file. Any order finds every pair at the threshold;
    the order only decides how many candidates there are. In the sampled order, the hashes
    that more than one text may hold (marked on every text by :meth:`_repeats`) come after the
    unique ones and before the sample's frequent ones.

    Args:
        threshold: the threshold of the stars.
        sketches: the first pass's sketches (every text's).
        threads: worker threads for the core.
        marks: whether the hashes more than one text may hold are marked (see :meth:`_repeats`);
            a dedup index, whose order is stored as its table alone, makes none.
    """

    def __init__(
        self,
        threshold: float,
        sketches: Sketches,
        threads: int | None = None,
        marks: bool = True,
    ) -> None:
        self.threshold = threshold
        self.marks = marks
        self.sketches = sketches
        self.size = sketches.size
        self.band = estimate_band(threshold, sketches.size)
        self.threads = threads
        #: Whether :meth:`release` keeps the rarity order, for lists cut later at another
        #: threshold (:meth:`at`).
        self.keep_order = False
        self.table: tuple[np.ndarray, np.ndarray] | None = None
        self._order: Any = None
        self.lists = Sketches(threads=threads)
        self._sizes: list[np.ndarray] = []
        self._alone: list[np.ndarray] = []
        self._counts: list[tuple[np.ndarray, np.ndarray]] = []
        #: Hashes the sketches hold in all (checks included) and the texts sketched, which decide
        #: how the order is counted.
        self.hashes = 0
        self.texts = 0

    def count(self, starts: np.ndarray, ends: np.ndarray, hashes: Any, keys: np.ndarray) -> None:
        """Counts the hashes of the sampled texts among the sketches ``hashes[starts[i]:ends[i]]``
        (content keys ``keys``, low words)."""
        self.hashes += int(np.sum(np.asarray(ends, np.int64) - np.asarray(starts, np.int64)))
        self.texts += len(starts)
        sampled = (np.asarray(keys, np.uint64) % np.uint64(RARITY_FRACTION)) == 0
        if not sampled.any():
            return
        self._counts.append(
            _core.rarity_counts(
                np.ascontiguousarray(starts[sampled], np.uint64),
                np.ascontiguousarray(ends[sampled], np.uint64),
                np.ascontiguousarray(hashes, np.uint64),
                1 << 62,
            )
        )
        # Merged as a log-structured list: a piece joins the one before it once it is as large
        # (every count is merged O(log n) times).
        while len(self._counts) >= 2 and len(self._counts[-1][0]) * 2 >= len(self._counts[-2][0]):
            self._counts[-2:] = [_merged(self._counts[-2:])]

    def _finish(self) -> bool:
        """Cuts every text's list (once); False when the sketches were dropped."""
        if self.table is not None:
            return True
        if self.sketches.dropped:
            return False
        repeats = None
        if counted_on_every_text(self.hashes, self.texts):
            self._counts = []
            self.table = self._counted_on_every_text()
        else:
            self.table = frequent(*_merged(self._counts))
            self._counts = []
            repeats = self._repeats() if self.marks else None
        # Its hash map built once for every chunk (not once a chunk: a cost of the table's
        # size, which grows with the corpus, for each of a number of chunks that grows too).
        # Counted on every text, or marked on every text: a hash that counts 0 is held by one
        # text alone, and the lists tell how many they begin with (:meth:`alone`).
        every_text = repeats is not None or counted_on_every_text(self.hashes, self.texts)
        self._order = _core.RarityOrder(*self.table, repeats, every_text=every_text)
        del repeats
        self._cut(self._order)
        return True

    def at(self, threshold: float) -> PrefixLists:
        """The lists of the same texts in the same rarity order, cut for another ``threshold``:
        those a dedup of the same corpus at that threshold cuts (the order is counted alike
        whatever the threshold). The sketches must still be there."""
        if not self._finish():
            raise RuntimeError("the sketches were dropped: the prefix lists cannot be cut")
        if self._order is None:
            raise RuntimeError("the prefix lists were released without keep_order")
        other = PrefixLists(threshold, self.sketches, self.threads, self.marks)
        other.hashes, other.texts, other.table = self.hashes, self.texts, self.table
        other._order = self._order
        other._cut(self._order)
        return other

    def _cut(self, order: Any) -> None:
        """Cuts every text's list in ``order`` (a ``RarityOrder``) at this threshold."""
        for rows, starts, ends, hashes in self.sketches.scan():
            lengths, listed, sizes, alone = _core.prefix_lists(
                np.ascontiguousarray(starts, np.uint64),
                np.ascontiguousarray(ends, np.uint64),
                np.ascontiguousarray(hashes, np.uint64),
                order,
                self.threshold,
                self.size,
                self.band,
            )
            ends_at = np.cumsum(lengths, dtype=np.uint64)
            self.lists.add_sketches(rows, ends_at - lengths, ends_at, listed)
            self._sizes.append(sizes)
            self._alone.append(alone)

    def _repeats(self) -> _core.Repeats | None:
        """Which hashes more than one text may hold, marked on every text's sketch (a scan of
        the sketches): in the order they count 1, after the hashes no other text holds and before
        the sample's frequent ones, where the sample alone would rank them with the unique ones
        (``repeats.rs`` in the core; two bit tables of a quarter of a byte a hash each). None
        where the largest tables would tell little (:func:`marks_fit`)."""
        if not marks_fit(self.hashes, _core.REPEATS_MOST_BITS):
            return None
        repeats = _core.Repeats(self.hashes)
        for _rows, starts, ends, hashes in self.sketches.scan():
            repeats.add(
                np.ascontiguousarray(starts, np.uint64),
                np.ascontiguousarray(ends, np.uint64),
                np.ascontiguousarray(hashes, np.uint64),
            )
        return repeats

    def _counted_on_every_text(self) -> tuple[np.ndarray, np.ndarray]:
        """The table of the order counted on every text's sketch: the hashes held by two texts or
        more, and their counts. The hashes are sorted :data:`COUNT_PIECE` or so at a time, one
        range of values after the other (a scan of the sketches for each)."""
        pieces = 1 << max(0, int(np.ceil(np.log2(max(self.hashes, 1) / COUNT_PIECE))))
        width = (1 << 63) // pieces  # checks have the top bit set: they are left out
        found: list[tuple[np.ndarray, np.ndarray]] = []
        for piece in range(pieces):
            low = piece * width
            high = (piece + 1) * width if piece + 1 < pieces else 1 << 63
            held = [
                _core.hashes_between(np.ascontiguousarray(b[3], np.uint64), low, high)
                for b in self.sketches.scan()
            ]
            # One block (the sketches in memory): its range is a new array already, sorted
            # where it lies rather than copied first.
            hashes = held[0] if len(held) == 1 else np.concatenate(held or [np.zeros(0, np.uint64)])
            del held
            hashes.sort()
            found.append(_core.frequent_runs(hashes))
        return (
            np.ascontiguousarray(np.concatenate([f[0] for f in found]), np.uint64),
            np.ascontiguousarray(np.concatenate([f[1] for f in found]), np.uint32),
        )

    def release(self) -> None:
        """Lets go of the lists once the core holds its copy (a few hundred MB at 4M texts), and
        of their rarity order unless ``keep_order``."""
        self.lists = None  # type: ignore[assignment]
        self._sizes = []
        self._alone = []
        if not self.keep_order:
            self._order = None

    @property
    def ready(self) -> bool:
        """Whether the lists can be cut (the sketches were kept, in memory or on disk)."""
        return self._finish()

    def parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, starts, ends, hashes, sizes)`` of every list, as the core takes them."""
        self._check_cut()
        rows, starts, ends, hashes = self.lists.parts()
        sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, np.uint32)
        return rows, starts, ends, hashes, np.ascontiguousarray(sizes, np.uint32)

    def alone(self) -> np.ndarray:
        """How many of the first hashes of each list of :meth:`parts` no other text holds
        (uint32): a corpus whose order was counted or marked on every text tells them, and
        prefix candidates leave them out (a hash of one text is shared by no pair); else 0.
        Only for these texts: lists matched later against other texts (a dedup index) count
        none."""
        self._check_cut()
        alone = np.concatenate(self._alone) if self._alone else np.zeros(0, np.uint32)
        return np.ascontiguousarray(alone, np.uint32)

    def _check_cut(self) -> None:
        """Cuts the lists if they are not yet; a RuntimeError when they cannot be had."""
        if not self._finish():
            raise RuntimeError("the sketches were dropped: the prefix lists cannot be cut")
        if self.lists is None:
            raise RuntimeError("the prefix lists were released")


def _merged(counts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Counts of hashes from several samples (each by hash), added up by hash: merged in the
    core, the smallest tables first, each merge linear in its two tables (not a sort)."""
    if not counts:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint32)
    pieces = [
        (np.ascontiguousarray(h, np.uint64), np.ascontiguousarray(c, np.uint32)) for h, c in counts
    ]
    merged = pieces.pop()
    while pieces:
        merged = _core.merged_counts(*pieces.pop(), *merged)
    return merged


#: One text in this many (by content key) counts for the order of :class:`PrefixLists`.
RARITY_FRACTION = 16

#: Sketches holding at most this many hashes in all (16.8M: a corpus of a few tens of thousands
#: of long documents) have the order of :class:`PrefixLists` counted on every text.
EXACT_HASHES = 1 << 24
#: ... and whose sketches hold this many hashes a text on average, or more (the suite: long texts,
#: code and edits 389 to 548; short texts, copies and Chinese 10 to 62): long documents,
#: whose comparisons (of up to 1,024 hashes) the finer order spares; short texts' comparisons are
#: cheap, and there the count on every text cost more time and memory than it saved (the suite's
#: short texts: 1.1 against 0.85 CPU s, 157 against 133 MB).
EXACT_MEAN = 128


def marks_fit(hashes: int, most_bits: int) -> bool:
    """Whether the marks of the hashes more than one text may hold are worth making for sketches
    holding ``hashes`` hashes in all, in tables of at most ``2**most_bits`` slots: up to one hash
    a slot. Past that, a hash no other text holds shares its slot with another more often than
    not (about 1 - exp(-hashes / slots): 63% at one hash a slot, 86% at two), so the marks would
    tell little for the scan they cost, and the order is the sample's alone. The one rule of
    :func:`neardup.dedup` and :func:`neardup.dask.dedup`."""
    return hashes <= 1 << most_bits


def counted_on_every_text(hashes: int, texts: int) -> bool:
    """Whether the rarity order of a corpus whose texts (each once) number ``texts`` and whose
    sketches hold ``hashes`` hashes in all is counted on every text rather than on one in
    :data:`RARITY_FRACTION`: a corpus of at most :data:`EXACT_HASHES` hashes and at least
    :data:`EXACT_MEAN` a text. The one rule of :func:`neardup.dedup` and
    :func:`neardup.dask.dedup`."""
    return EXACT_MEAN * texts <= hashes <= EXACT_HASHES


#: Hashes sorted at once when the order is counted on every text (16 MB; each piece is a scan of
#: the sketches, so fewer pieces scan less: against 8 MB pieces, 0.19 against 0.27 CPU s on the
#: suite's code, 0.13 against 0.17 on the manual pages, the same peak memory; 32 MB pieces took
#: 0.16 and 0.11 but 39 MB more at the peak on the manual pages).
COUNT_PIECE = 1 << 21

#: The most shingle hashes counted for the order of :class:`PrefixLists` (about 40 MB of counts
#: at most, a few per cent of which are kept).
RARITY_SAMPLE = 1 << 21


def frequent(hashes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hashes counted at least twice, and their counts: the table of the rarity order."""
    held = np.asarray(counts) >= 2
    return (
        np.ascontiguousarray(np.asarray(hashes)[held], np.uint64),
        np.ascontiguousarray(np.asarray(counts)[held], np.uint32),
    )
