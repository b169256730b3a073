"""What a dedup index is built and searched with: each document's compact sketch and, for prefix
candidates, its prefix list.

A document's prefix list is made as :func:`neardup.dedup` makes it
(:mod:`neardup.prefix_lists`): its bottom-:data:`LIST_SIZE` shingle hashes, rarest
first, as many as prefix filtering at the threshold reads (with the band below it where a cut
sketch's estimate does not decide). Building an index counts the order on the corpus (one text in
16, or every text of a small corpus of long texts) and stores it with the index, frozen; searching
it lists the new documents in that stored order, at the index's cut, so that a document added
later is listed as the index's own documents are (``src/store/index_prefixes.rs``).
"""

from __future__ import annotations

import mmap
import tempfile
from typing import Any, NamedTuple

import numpy as np

from . import _core
from .prefix_lists import PrefixLists
from .sketch_spill import room_for
from .verify import Sketches, estimate_band

__all__ = ["IndexSketches", "Lists"]

#: The hashes of a document's sketch its prefix list is made from: its bottom-128. On the
#: manual pages (index one half, deduplicate the other against it; benches/results/against.md)
#: bottom-1,024 lists, as :func:`neardup.dedup` makes, take 1,529 bytes a document, 256 take
#: 1,130, 128 take 664, 64 take 462, all leaving the same 268 pages kept; below 128 the wider
#: band (five standard errors of a smaller sample) proposes more pairs to compare.
LIST_SIZE = 128

#: A document's whole shingle set is hashed before its compact sketch is made; past this many
#: distinct shingles only the smallest hashes are kept (a bottom-k sample of the set).
WHOLE_SET = 1 << 20
#: Bytes of sketches a build keeps in memory before the rest go to a temporary file.
BUILD_BUDGET = 256 << 20
#: Bytes of exact sets kept in memory before they all go to a temporary file.
SETS_BUDGET = 256 << 20


class Lists(NamedTuple):
    """Prefix lists, one a row: row d's is the next ``lengths[d]`` of ``hashes``, made from a
    sketch of ``sizes[d]`` shingles (0 for a row without shingles, or a copy, whose list is its
    first occurrence's)."""

    lengths: np.ndarray
    hashes: np.ndarray
    sizes: np.ndarray

    @staticmethod
    def empty(n: int) -> Lists:
        return Lists(np.zeros(n, np.uint32), np.zeros(0, np.uint64), np.zeros(n, np.uint32))

    @staticmethod
    def of_parts(n: int, parts: list[tuple[np.ndarray, Any, Any, np.ndarray, np.ndarray]]) -> Lists:
        """Rows ``0..n-1`` from parts ``(rows, starts, ends, hashes, sizes)``: row ``rows[i]``'s
        list is ``hashes[starts[i]:ends[i]]``."""
        lengths = np.zeros(n, np.uint32)
        sizes = np.zeros(n, np.uint32)
        for rows, starts, ends, _, part_sizes in parts:
            lengths[rows] = np.asarray(ends, np.int64) - np.asarray(starts, np.int64)
            sizes[rows] = part_sizes
        at = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=at[1:])
        hashes = np.zeros(int(at[-1]), np.uint64)
        for rows, starts, ends, part_hashes, _ in parts:
            _gather(hashes, at[np.asarray(rows, np.int64)], part_hashes, starts, ends)
        return Lists(lengths, hashes, sizes)

    def take(self, rows: np.ndarray) -> Lists:
        """The lists of ``rows``, in that order (their values of the same type)."""
        at = np.zeros(len(self.lengths) + 1, np.int64)
        np.cumsum(self.lengths, out=at[1:])
        rows = np.asarray(rows, np.int64)
        lengths = self.lengths[rows]
        out = np.zeros(int(lengths.sum(dtype=np.int64)), self.hashes.dtype)
        to = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lengths, out=to[1:])
        _gather(out, to[:-1], self.hashes, at[rows], at[rows + 1])
        return Lists(np.ascontiguousarray(lengths), out, np.ascontiguousarray(self.sizes[rows]))

    def for_core(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            np.ascontiguousarray(self.lengths, np.uint32),
            np.ascontiguousarray(self.hashes, np.uint64),
            np.ascontiguousarray(self.sizes, np.uint32),
        )


def _gather(out: np.ndarray, to: np.ndarray, source: np.ndarray, starts: Any, ends: Any) -> None:
    """Copies ``source[starts[i]:ends[i]]`` to ``out[to[i]:]`` for every i."""
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(ends, np.int64) - starts
    total = int(lengths.sum())
    if total == 0:
        return
    # Each value's place in its range: its position in the whole less its range's start.
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out[np.repeat(to, lengths) + offsets] = np.asarray(source)[np.repeat(starts, lengths) + offsets]


class _ExactSets:
    """The exact sets of a corpus's rows, added in ascending row order: in memory up to
    :data:`SETS_BUDGET` bytes, then all of them in an unnamed temporary file, read back
    memory-mapped (the rows' order is the file's: nothing is gathered)."""

    def __init__(self) -> None:
        self._rows: list[np.ndarray] = []
        self._lens: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self._file: Any = None
        self._bytes = 0

    def add(self, rows: np.ndarray, lens: np.ndarray, values: np.ndarray) -> None:
        self._rows.append(np.asarray(rows, np.int64))
        self._lens.append(lens)
        total = self._bytes + values.nbytes
        if self._file is None and total > SETS_BUDGET and room_for(total):
            self._file = tempfile.TemporaryFile(prefix="neardup-sets-")
            for earlier in self._values:
                self._file.write(earlier.data.cast("B"))
            self._values = []
        if self._file is not None:
            self._file.write(np.ascontiguousarray(values, np.uint32).data.cast("B"))
        else:
            self._values.append(values)
        self._bytes += values.nbytes

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, values) of rows 0..n-1 (a row not added: an empty set)."""
        lens = np.zeros(n, np.uint32)
        rows = np.concatenate(self._rows) if self._rows else np.zeros(0, np.int64)
        added = np.concatenate(self._lens) if self._lens else np.zeros(0, np.uint32)
        lens[rows] = added
        if len(rows) > 1 and not bool((np.diff(rows) > 0).all()):
            raise RuntimeError("exact sets were added out of row order")
        if self._file is None:
            if len(self._values) > 1:
                self._values = [np.concatenate(self._values)]
            values = self._values[0] if self._values else np.zeros(0, np.uint32)
            return lens, values
        self._file.flush()
        if self._bytes == 0:
            return lens, np.zeros(0, np.uint32)
        mapped = mmap.mmap(self._file.fileno(), self._bytes, access=mmap.ACCESS_READ)
        # The map holds the file's pages; the unnamed file goes once the arrays are let go.
        self._file.close()
        self._file = None
        self._values = [np.frombuffer(mapped, np.uint32)]
        return lens, self._values[0]


class IndexSketches:
    """The compact sketches of a corpus's rows, with ``threshold`` their prefix lists, and with
    ``exact`` their exact sets (``src/sketch/exact_sets.rs``). It
    fills the place of :class:`neardup.verify.Sketches` in a
    :class:`neardup.pipeline.FirstPass`: each chunk's whole shingle sets are added once.

    Given the index's rarity ``order`` (a search, or an append), each row's list is made as its
    chunk comes; without one (a build), the rows' bottom-k sketches are kept (in memory up to
    :data:`BUILD_BUDGET`, then in a temporary file) and the order counted on them, as
    :class:`neardup.prefix_lists.PrefixLists` counts it, without the marks a stored order cannot
    hold; the lists are cut once every row is in.
    """

    dropped = False
    budget = None

    def __init__(
        self,
        shingle: int,
        sketch_bytes: int,
        sketch_bits: int,
        threads: int | None,
        threshold: float | None = None,
        band: float | None = None,
        order: Any = None,
        size: int = LIST_SIZE,
        bottoms: bool = False,
        made_with: Any = None,
        exact: bool = False,
    ) -> None:
        self.ngram, self.size = shingle, WHOLE_SET
        self.words, self.bits, self.threads = sketch_bytes // 4, sketch_bits, threads
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # The rows' exact sets, for an exact index.
        self._sets: _ExactSets | None = _ExactSets() if exact else None
        self.threshold = threshold
        self.list_size = size
        #: The rarity table ``order`` was made from (hashes, counts), when it is an index's.
        self.table_made_with = made_with
        # The bottom-k sketches themselves, kept when asked (a Dask partition writes them).
        self._bottoms: list[tuple[np.ndarray, Any, Any, np.ndarray, np.ndarray]] | None = (
            [] if bottoms else None
        )
        self.band = estimate_band(threshold, size) if band is None and threshold else band
        self.order = order
        self._lists: list[tuple[np.ndarray, Any, Any, np.ndarray, np.ndarray]] = []
        self.prefixes: PrefixLists | None = None
        if threshold is not None and order is None:
            bottom = Sketches(size=size, threads=threads, budget=BUILD_BUDGET, spill=True)
            self.prefixes = PrefixLists(threshold, bottom, threads, marks=False)

    @property
    def listed(self) -> bool:
        """Whether the rows get prefix lists."""
        return self.threshold is not None

    def add_sketches(
        self, rows: Any, starts: np.ndarray, ends: np.ndarray, hashes: np.ndarray
    ) -> None:
        """Adds rows ``rows``, row ``rows[d]``'s shingle set being ``hashes[starts[d]:ends[d]]``."""
        starts = np.ascontiguousarray(starts, dtype=np.uint64)
        ends = np.ascontiguousarray(ends, dtype=np.uint64)
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        rows = np.asarray(rows, dtype=np.int64)
        lens, words = _core.compact_sketches(
            starts, ends, hashes, self.words, self.bits, self.threads
        )
        self._parts.append((rows, lens, words))
        if self._sets is not None:
            self._sets.add(rows, *_core.exact_sets(starts, ends, hashes))
        if not self.listed:
            return
        # The bottom-k of a set is its first k hashes (sets are sorted; only sets far smaller
        # than k carry checks, after their hashes).
        cut = np.minimum(ends, starts + np.uint64(self.list_size))
        if self._bottoms is not None:
            self._bottoms.append((rows, starts, cut, hashes, (cut - starts).astype(np.uint32)))
        if self.prefixes is not None:
            self.prefixes.sketches.add_sketches(rows, starts, cut, hashes)
            return
        assert self.threshold is not None and self.band is not None
        lengths, listed, sizes, _ = _core.prefix_lists(
            starts, cut, hashes, self.order, self.threshold, self.list_size, self.band
        )
        ends_at = np.cumsum(lengths, dtype=np.uint64)
        self._lists.append((rows, ends_at - lengths, ends_at, listed, sizes))

    def count(self, starts: np.ndarray, ends: np.ndarray, hashes: Any, keys: np.ndarray) -> None:
        """Counts the order of a build on the sampled rows (what ``FirstPass.add`` calls)."""
        if self.prefixes is not None:
            starts = np.asarray(starts, np.uint64)
            cut = np.minimum(np.asarray(ends, np.uint64), starts + np.uint64(self.list_size))
            self.prefixes.count(starts, cut, hashes, keys)

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, words) of rows 0..n-1 (a row not added: no shingles)."""
        lens = np.zeros(n, np.uint32)
        words = np.zeros((n, self.words), np.uint32)
        for rows, part_lens, part_words in self._parts:
            lens[rows] = part_lens
            words[rows] = part_words.reshape(-1, self.words)
        return lens, words.reshape(-1)

    def sets(self, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact sets ``(lengths, values)`` of rows 0..n-1 (a row not added: empty), or None
        when they are not kept."""
        return None if self._sets is None else self._sets.arrays(n)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """The order a build counted: the rarity table (hashes, counts)."""
        assert self.prefixes is not None and self.prefixes.ready
        assert self.prefixes.table is not None
        return self.prefixes.table

    def bottoms(self, n: int) -> Lists:
        """The bottom-k sketches of rows 0..n-1 (kept when ``bottoms`` was given), as lists."""
        assert self._bottoms is not None
        return Lists.of_parts(n, self._bottoms)

    def lists(self, n: int) -> Lists | None:
        """The prefix lists of rows 0..n-1, or None when the rows are not listed."""
        if not self.listed:
            return None
        if self.prefixes is not None:
            if n == 0:
                return Lists.empty(0)
            if not self.prefixes.ready:
                raise RuntimeError("the sketches of the prefix lists were dropped")
            return Lists.of_parts(n, [self.prefixes.parts()])
        return Lists.of_parts(n, self._lists)
