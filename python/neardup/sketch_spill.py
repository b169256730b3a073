"""Shingle sketches kept on disk: where a first pass puts them once they pass their memory budget.

A corpus whose sketches do not fit the budget used to be read a second time, to sketch again the
documents that turned out to have candidates. Sketching in the first pass costs little beside
the fingerprint (the words are already hashed: on 1M short documents, 0.5 s more on two cores),
while reading, parsing and normalizing again cost 2 to 2.6 s. So past the budget the sketches
go on to an unnamed temporary file (``TMPDIR``; the system removes it when it is closed, or when
the process ends however it ends), and :meth:`SketchSpill.read` reads back those of the
candidates, in file order.

A spill is only started when the temporary directory has room for it with a margin (twice the
expected size); a write that fails all the same (the disk filled up) gives the spill up, and
the caller goes back to reading the candidates again.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
from typing import Any

import numpy as np

__all__ = ["SketchSpill", "room_for"]


def room_for(nbytes: int) -> bool:
    """Whether the temporary directory has room for ``nbytes`` of sketches, twice over."""
    try:
        free = shutil.disk_usage(tempfile.gettempdir()).free
    except OSError:
        return False
    return 2 * nbytes <= free


class SketchSpill:
    """Sketches written to a temporary file one after the other as they are added; memory holds
    12 bytes a sketch (its row and length)."""

    def __init__(self) -> None:
        self._file: Any = tempfile.TemporaryFile(prefix="neardup-sketches-")
        self._rows: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []

    def write(self, rows: np.ndarray, hashes: np.ndarray, lengths: np.ndarray) -> None:
        """Appends the sketches of ``rows``, one after the other in ``hashes`` (``lengths[d]``
        hashes for ``rows[d]``). An OSError (no space left) is the caller's to handle."""
        data = np.ascontiguousarray(hashes, dtype=np.uint64)
        self._file.write(data.data.cast("B"))
        self._rows.append(np.asarray(rows, dtype=np.int64))
        self._lengths.append(np.asarray(lengths, dtype=np.uint32))

    def read(self, rows: np.ndarray, into: Any) -> Any:
        """Gives the sketches ``into`` (an empty :class:`~neardup.verify.Sketches`) those of
        ``rows`` that were written here, in file order, as they lie in the memory-mapped file
        (:meth:`~neardup.verify.Sketches.hold`), and returns it. Once only: what says where each
        sketch lies is let go of as it is read."""
        self._file.flush()
        written = np.concatenate(self._rows) if self._rows else np.zeros(0, np.int64)
        self._rows = []
        order = None if bool((np.diff(written) > 0).all()) else np.argsort(written, kind="stable")
        ranked = written if order is None else written[order]
        wanted = np.asarray(rows, dtype=np.int64)
        at = np.minimum(np.searchsorted(ranked, wanted), max(len(ranked) - 1, 0))
        found = ranked[at] == wanted if len(ranked) else np.zeros(len(wanted), bool)
        wanted, at = wanted[found], at[found]
        del ranked, found, written
        if order is not None:
            at = order[at]
            del order
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.uint32)
        self._lengths = []
        ends = np.cumsum(lengths, dtype=np.uint64)
        lengths = lengths[at]
        starts = ends[at] - lengths
        del ends
        if not bool((starts[1:] >= starts[:-1]).all()):
            by_place = np.argsort(starts, kind="stable")
            wanted, starts, lengths = wanted[by_place], starts[by_place], lengths[by_place]
        ends = starts + lengths
        del at, lengths
        fd = self._file.fileno()
        size = os.fstat(fd).st_size
        if len(ends) and int(ends.max()) * 8 > size:
            raise OSError(f"the sketch spill file ended early ({size} bytes)")
        if not len(wanted) or not size:
            return into
        # The file is mapped, not read: the sketches are used where they lie in the page cache
        # (written moments ago), with no copy into fresh memory, which this machine's kernel
        # must clear page by page; and the system may let go of pages it needs back.
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        into.hold(wanted, starts, ends, np.frombuffer(mapped, dtype=np.uint64))
        return into

    def scan(self) -> Any:
        """Every sketch written so far, block by block in file order, as ``(rows, starts, ends,
        hashes)`` (row ``rows[i]``'s sketch is ``hashes[starts[i]:ends[i]]``); :meth:`read`
        still works after."""
        self._file.flush()
        fd = self._file.fileno()
        at = 0
        for rows, lengths in zip(self._rows, self._lengths):
            ends = np.cumsum(lengths, dtype=np.uint64)
            total = int(ends[-1]) if len(ends) else 0
            data = os.pread(fd, 8 * total, 8 * at)
            if len(data) != 8 * total:
                raise OSError(f"the sketch spill file ended early ({len(data)} bytes)")
            yield rows, ends - lengths, ends, np.frombuffer(data, dtype=np.uint64)
            at += total

    def close(self) -> None:
        self._file.close()
