"""The Hamming-distance index and batch mode: plans, SimhashIndex, find_all and cluster.

Fingerprints within Hamming distance k of each other differ in at most k of any b blocks of
their 64 bits, so at least b - k blocks agree exactly. A plan keeps one sorted table per choice
of b - k blocks, with those blocks permuted to the high end (the table's *prefix*); a lookup
searches each table for the entries sharing the query's prefix and checks their full distance
(Manku, Jain and Das Sarma, WWW 2007).
"""

from __future__ import annotations

import numbers
import os
import time
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from . import _core
from .errors import IndexFormatError
from .fingerprints import Fingerprints, _as_fingerprint, _is_scalar, as_fingerprints
from .index_kinds import simhash_index_error
from .progress import log
from .validate import DEFAULT_EXPECTED_SIZE, check_k, check_threads, integer, integers

__all__ = ["Plan", "PlanTable", "SimhashIndex", "cluster", "find_all", "plan"]

#: Pairs :func:`find_all` and :meth:`SimhashIndex.query_many` return at most unless told
#: otherwise: 100 million pairs take 1.7 GB as arrays.
DEFAULT_MAX_PAIRS = 100_000_000

PathLike = Union[str, "os.PathLike[str]"]


def _ids(ids: Any, name: str = "ids") -> np.ndarray:
    """A contiguous int64 array of ids, refusing floats, bools and out-of-range values."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"{name} must be an array of int64 ids, got {type(ids).__name__}")
    if isinstance(ids, (numbers.Integral, np.integer)) and not isinstance(ids, bool):
        ids = [ids]
    if not isinstance(ids, np.ndarray):
        items = integers(ids, name, -(1 << 63), (1 << 63) - 1, "must fit in int64")
        return np.array(items, dtype=np.int64)
    if ids.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {ids.shape}")
    if ids.dtype == np.int64:
        return np.ascontiguousarray(ids)
    if ids.dtype.kind == "i" or (ids.dtype.kind == "u" and ids.dtype.itemsize < 8):
        return ids.astype(np.int64)
    if ids.dtype.kind == "u":
        if len(ids) and ids.max() >= (1 << 63):
            raise ValueError(f"{name} holds {int(ids.max())}, which does not fit in int64")
        return ids.astype(np.int64)
    if ids.dtype.kind == "O":
        return _ids(ids.tolist(), name)
    raise TypeError(f"{name} must be an array of integer ids, got dtype {ids.dtype}")


@dataclass(frozen=True)
class PlanTable:
    """One table of a plan.

    Attributes:
        prefix_bits: how many high bits of the permuted fingerprint a lookup matches exactly.
        prefix_mask: those bits as a mask over the original (unpermuted) fingerprint.
        order: the source bit of each bit of the permuted fingerprint, from bit 63 down to 0.
        blocks: the top-level blocks (numbered from the high end) moved whole into the prefix;
            a nested plan adds parts of the others.
    """

    prefix_bits: int
    prefix_mask: int
    order: tuple[int, ...]
    blocks: tuple[int, ...] = ()

    @property
    def prefix_ranges(self) -> list[tuple[int, int]]:
        """The original bit ranges ``(low bit, width)`` moved to the high end, highest first."""
        out: list[tuple[int, int]] = []
        bits = self.order[: self.prefix_bits]
        i = 0
        while i < len(bits):
            j = i + 1
            while j < len(bits) and bits[j] + 1 == bits[j - 1]:
                j += 1
            out.append((bits[j - 1], j - i))
            i = j
        return out


class Plan:
    """A layout of permuted tables that finds every pair within Hamming distance ``k``.

    Build one with :func:`plan` (chosen for a corpus size and memory budget), :meth:`blocks` or
    :meth:`nested`. Blocks are numbered from the high end and as even as 64 bits allow, wider
    blocks first: 6 blocks are 11, 11, 11, 11, 10 and 10 bits wide.

    Example:
        >>> p = Plan.blocks(6, k=3)
        >>> len(p.tables), min(p.prefix_bits), max(p.prefix_bits)
        (20, 31, 33)
        >>> Plan.nested(4, 4, k=3).prefix_bits == [28] * 16
        True
    """

    __slots__ = ("_inner", "_n")

    def __init__(self, inner: Any, n: int | None = None) -> None:
        if not isinstance(inner, _core.Plan):
            raise TypeError("build a Plan with neardup.plan(), Plan.blocks() or Plan.nested()")
        self._inner = inner
        self._n = n

    @classmethod
    def blocks(cls, blocks: int, k: int = 3) -> Plan:
        """``blocks`` blocks, one table for each choice of ``blocks - k`` of them: C(blocks, k)
        tables. ``blocks = k + 1`` is the pigeonhole index (k + 1 tables)."""
        return cls(_core.Plan.blocks(integer(blocks, "blocks"), check_k(k)))

    @classmethod
    def nested(cls, *levels: int, k: int = 3) -> Plan:
        """Blocks in levels: ``nested(4, 4, k=3)`` splits 64 bits into 4 blocks, then the 48 low
        bits each table leaves into 4 more, for 4 x 4 = 16 tables of 28-bit prefixes."""
        if not levels:
            raise ValueError("nested needs the number of blocks of at least one level")
        return cls(_core.Plan.nested([integer(b, "levels") for b in levels], check_k(k)))

    @property
    def core(self) -> Any:
        """The compiled plan (``neardup._core.Plan``) this one wraps: what the core's functions
        take."""
        return self._inner

    @property
    def k(self) -> int:
        """The largest distance the plan finds."""
        return int(self._inner.k)

    @property
    def levels(self) -> list[int]:
        """Blocks per level: ``[6]`` for 6 blocks, ``[4, 4]`` for the nested 4 x 4 layout."""
        return list(self._inner.levels)

    @property
    def block_sizes(self) -> list[int]:
        """Widths of the top-level blocks from the high end."""
        b = self.levels[0]
        return [64 // b + (i < 64 % b) for i in range(b)]

    @property
    def tables(self) -> list[PlanTable]:
        """The tables, each with its permutation, prefix and the blocks moved to the high end."""
        block_masks, top = [], 64
        for size in self.block_sizes:
            top -= size
            block_masks.append(((1 << size) - 1) << top)
        return [
            PlanTable(
                bits,
                mask,
                tuple(order),
                tuple(b for b, m in enumerate(block_masks) if mask & m == m),
            )
            for bits, mask, order in self._inner.tables
        ]

    @property
    def prefix_bits(self) -> list[int]:
        """The prefix width of each table."""
        return [bits for bits, _, _ in self._inner.tables]

    def expected_candidates(self, n: int) -> float:
        """Expected candidates per query over all tables among ``n`` random fingerprints."""
        return float(self._inner.expected_candidates(float(integer(n, "n", minimum=0))))

    @property
    def bytes_per_fingerprint(self) -> int:
        """Index memory per fingerprint: 8 bytes per table plus 16 for the fingerprint and its id;
        4 more once the index looks entries up by id (explicit ids, ``remove``, ``in``)."""
        return int(self._inner.bytes_per_fingerprint)

    def permute(self, table: int, fingerprints: Any) -> np.ndarray:
        """The fingerprints as table ``table`` stores them (its prefix in the high bits)."""
        return self._inner.permute(integer(table, "table"), as_fingerprints(fingerprints))

    def __str__(self) -> str:
        text = str(self._inner)
        if self._n is not None:
            text += (
                f"\nexpected candidates per query at n={self._n:,}: "
                f"{self.expected_candidates(self._n):.3g}"
            )
        return text

    def __repr__(self) -> str:
        levels = ", ".join(map(str, self.levels))
        ctor = (
            f"Plan.blocks({levels}, k={self.k})"
            if len(self.levels) == 1
            else f"Plan.nested({levels}, k={self.k})"
        )
        return f"<{ctor}: {len(self.prefix_bits)} tables>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Plan, (self._inner, self._n))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plan) and self._inner == other._inner

    def __hash__(self) -> int:
        return hash(self._inner)


def plan(k: int = 3, n: int | None = None, memory: int | None = None) -> Plan:
    """The plan that minimises expected work per query for ``n`` fingerprints.

    Args:
        k: the largest Hamming distance to find, 0 to 16.
        n: the expected number of fingerprints (default 1,000,000).
        memory: a budget in bytes for the whole index of ``n`` fingerprints; the plan's
            ``bytes_per_fingerprint * n`` stays within it. ValueError if no plan fits. Without
            a budget the plan spends at most 1 KiB per fingerprint (126 tables).

    Example:
        >>> p = plan(k=3, n=10_000_000)
        >>> p.k, p.bytes_per_fingerprint == 8 * len(p.tables) + 16
        (3, True)
    """
    n = DEFAULT_EXPECTED_SIZE if n is None else integer(n, "n", minimum=0)
    mem = None if memory is None else integer(memory, "memory", minimum=0)
    return Plan(_core.Plan.choose(check_k(k), n, mem, False), n)


def _max_pairs(value: Any) -> int | None:
    return None if value is None else integer(value, "max_pairs", minimum=0)


def _plan_arg(p: Any, k: int) -> Any:
    if p is None:
        return None
    if not isinstance(p, Plan):
        raise TypeError(f"plan must be a neardup.Plan, got {type(p).__name__}")
    if p.k < k:
        raise ValueError(f"plan is built for k={p.k} and cannot find distances up to k={k}")
    return p.core


class SimhashIndex:
    """Fingerprints with ids, searchable for everything within Hamming distance ``k``.

    Args:
        k: the largest distance queries return, 0 to 16.
        plan: the table layout; by default :func:`plan` for ``expected_size`` entries.
        expected_size: how many fingerprints the index will hold (default 1,000,000); only
            used to choose the plan.

    New entries are visible to queries at once. Queries from several threads run in parallel
    with the GIL released; ``add`` and ``remove`` wait for running queries and block new ones.

    Example:
        >>> index = SimhashIndex(k=3)
        >>> index.add(np.array([0b1011, 0xFFFF, 0b1000], dtype=np.uint64), ids=[10, 11, 12])
        >>> index.query(0b1010)
        [(10, 1), (12, 1)]
        >>> len(index), 11 in index
        (3, True)
    """

    __slots__ = ("_inner",)

    def __init__(
        self, k: int = 3, plan: Plan | None = None, expected_size: int | None = None
    ) -> None:
        k = check_k(k)
        size = None if expected_size is None else integer(expected_size, "expected_size", minimum=0)
        self._inner = _core.Index(k, _plan_arg(plan, k), size)

    @property
    def k(self) -> int:
        return int(self._inner.k)

    @property
    def plan(self) -> Plan:
        return Plan(self._inner.plan)

    @property
    def nbytes(self) -> int:
        """Bytes held by the index's arrays."""
        return int(self._inner.nbytes)

    def add(self, fingerprints: int | np.integer | Fingerprints, ids: Any = None) -> None:
        """Adds fingerprints (a ``uint64`` array or ints, or a single one) with ``int64`` ids.

        Without ``ids``, entries are numbered on from one past the largest id ever added
        (0, 1, 2, ... for an index filled only this way). A repeated id, or one already in the
        index, is a ValueError and nothing is added.
        """
        if _is_scalar(fingerprints):
            fps = np.array([_as_fingerprint(fingerprints, "fingerprint")], dtype=np.uint64)
        else:
            fps = as_fingerprints(fingerprints)
        if ids is None:
            self._inner.add(fps, None)
            return
        id_array = _ids(ids)
        if len(id_array) != len(fps):
            raise ValueError(
                f"ids must have one id per fingerprint: {len(fps)} fingerprints, {len(id_array)} ids"
            )
        self._inner.add(fps, id_array)

    def remove(self, ids: Any) -> None:
        """Removes entries by id (one id or many). KeyError, and nothing removed, if an id is
        not in the index."""
        self._inner.remove(_ids(ids))

    def __len__(self) -> int:
        return len(self._inner)

    def __contains__(self, id: object) -> bool:
        if isinstance(id, bool) or not isinstance(id, (numbers.Integral, np.integer)):
            return False
        value = int(id)
        if not -(1 << 63) <= value < (1 << 63):
            return False
        return bool(self._inner.contains(value))

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """``(id, distance)`` of every entry within ``k`` of ``fingerprint``, sorted by distance
        then id."""
        return self._inner.query(_as_fingerprint(fingerprint, "fingerprint"))

    def query_many(
        self,
        fingerprints: Any,
        threads: int | None = None,
        max_pairs: int | None = DEFAULT_MAX_PAIRS,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every match of many queries at once, in parallel: ``(query_row, id, distance)``
        arrays (``int64``, ``int64``, ``uint8``), by query row, then distance, then id.

        More than ``max_pairs`` matches (None: no limit) raise :class:`neardup.TooManyPairsError`
        naming their count; past the limit they are only counted, never stored."""
        return self._inner.query_many(as_fingerprints(fingerprints), threads, _max_pairs(max_pairs))

    def compact(self) -> None:
        """Merges pending inserts and removals into the main tables now (normally automatic)."""
        self._inner.compact()

    def save(self, path: PathLike) -> None:
        """Writes the index to one file, atomically (a temporary file renamed into place).

        The file holds a magic number, a format version, the plan, the counts, the data
        (little-endian) and a checksum. A symlink is written through (its target replaced,
        keeping its mode and owner); a path naming a device, FIFO or socket is refused
        (ValueError), and a folder is IsADirectoryError. A temporary file that a killed save
        left beside the file is removed by the next save of the same file.
        """
        from .io.outputs import write_atomically

        write_atomically(os.fspath(path), self._inner.save)

    @classmethod
    def load(cls, path: PathLike, mmap: bool = True) -> SimhashIndex:
        """Opens a saved index. With ``mmap`` the file is mapped rather than read into memory.

        The whole file is checked first: a truncated, corrupted, foreign or newer-version file
        raises :class:`neardup.IndexFormatError`.

        A mapped index shares the file's pages with every process that maps it, and reads what
        the file holds *now*. Replacing the file by renaming a new one over it, as :meth:`save`
        does, is safe: the index keeps the file it opened. A file changed in place (truncated,
        rewritten, ``cp other.sidx index.sidx``) is detected by its size, identity and
        modification time, checked before and after every call: the call raises
        :class:`neardup.IndexChangedError` instead of answering from other data, and so does
        every later call until the file is loaded again. A change within the same clock tick as
        the original write, or a truncation *during* a call (the system then stops the process
        with SIGBUS), cannot be seen: never write into a mapped index file, or load it with
        ``mmap=False`` (a private copy in memory).
        """
        self = cls.__new__(cls)
        try:
            self._inner = _core.Index.load(os.fspath(path), bool(mmap))
        except IndexFormatError as err:
            raise simhash_index_error(os.fspath(path), err) from None
        return self

    @property
    def mapped(self) -> bool:
        """Whether the index reads a memory-mapped file (see :meth:`load`); False once changes
        have been merged into new tables in memory."""
        return bool(self._inner.mapped)

    def check_file(self) -> None:
        """Raises :class:`neardup.IndexChangedError` if the mapped file was changed in place
        since :meth:`load` (every call checks this too); does nothing for an index in memory."""
        self._inner.check_file()

    def __repr__(self) -> str:
        return (
            f"<SimhashIndex k={self.k}, {len(self)} fingerprints, {len(self.plan.tables)} tables>"
        )


def find_all(
    fingerprints: Any,
    k: int = 3,
    plan: Plan | None = None,
    threads: int | None = None,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of rows within Hamming distance ``k``, each pair once.

    Returns ``(i, j, distance)`` arrays (``int64``, ``int64``, ``uint8``) with ``i < j``,
    sorted by ``i`` then ``j``. Identical fingerprints are collapsed first, so a corpus full of
    copies stays fast, and every copy is reported (at distance 0).

    Args:
        fingerprints: ``uint64`` array (or ints).
        k: the largest distance, 0 to 16.
        plan: the table layout; by default chosen for the input size.
        threads: worker threads (default: all cores).
        max_pairs: the most pairs to return (default 100,000,000, 1.7 GB of arrays; None for no
            limit). The pairs are counted before they are allocated (copies of one value make
            c(c-1)/2 of them): more raise :class:`neardup.TooManyPairsError` naming the count.

    Example:
        >>> i, j, d = find_all(np.array([0b0, 0b111, 0b0, 0xFF << 40], dtype=np.uint64), k=3)
        >>> list(zip(i.tolist(), j.tolist(), d.tolist()))
        [(0, 1, 3), (0, 2, 0), (1, 2, 3)]
    """
    k = check_k(k)
    fps = as_fingerprints(fingerprints)
    threads = check_threads(threads)
    start = time.perf_counter()
    found = _core.find_all(fps, k, _plan_arg(plan, k), threads, _max_pairs(max_pairs))
    seconds = time.perf_counter() - start
    log.info(
        "find_all: %d fingerprints, %d pairs within k=%d in %.3f s",
        len(fps),
        len(found[0]),
        k,
        seconds,
        extra={"fingerprints": len(fps), "pairs": len(found[0]), "k": k, "seconds": seconds},
    )
    return found


def cluster(
    fingerprints: Any, k: int = 3, plan: Plan | None = None, threads: int | None = None
) -> np.ndarray:
    """Cluster labels (``int64``): rows linked by chains of pairs within ``k`` share a label,
    the smallest row of their cluster. No pair is stored, so memory stays linear in the rows
    however many pairs there are.

    Example:
        >>> cluster(np.array([5, 1 << 40, 4, 0xFFFF], dtype=np.uint64), k=1).tolist()
        [0, 1, 0, 3]
    """
    k = check_k(k)
    fps = as_fingerprints(fingerprints)
    threads = check_threads(threads)
    start = time.perf_counter()
    labels = _core.cluster(fps, k, _plan_arg(plan, k), threads)
    seconds = time.perf_counter() - start
    clusters = int(np.count_nonzero(labels == np.arange(len(labels))))
    log.info(
        "cluster: %d fingerprints, %d clusters within k=%d in %.3f s",
        len(fps),
        clusters,
        k,
        seconds,
        extra={"fingerprints": len(fps), "clusters": clusters, "k": k, "seconds": seconds},
    )
    return labels
