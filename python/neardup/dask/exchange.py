"""Rows of a Dask dedup moved to the task of their key through the scratch folder.

:func:`exchange` partitions a table by a column of keys (say hashes), as ``DataFrame.shuffle``
does, without the shuffle's transfers: each task of the table writes its rows, ordered by the
partition they go to, to one file of the scratch folder (a table of numbers alone as its raw
columns, one after another; any other as an Arrow table), with the offsets where each
partition's rows begin beside it, and each task of the result copies its slice of every file,
one file at a time. The rows are written once and read once; nothing is serialized, sent or
buffered on the way, and the client gets one count per task. Every worker must see the scratch
folder, as it must for the digests.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import pandas as pd

from neardup.dask.spill import (
    PREFIX,
    computed,
    conform,
    read_back,
    scratch_write,
    spill_file,
    write_table,
)


def _bounds_file(folder: str, name: str, i: int) -> str:
    return os.path.join(folder, f"{PREFIX}{name}.{i:06d}.bounds")


#: An odd 64-bit multiplier (2^64 over the golden ratio) that spreads any values over the
#: high bits: sketch hashes are the smallest of their texts', so their own high bits are not
#: uniform.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)


def destinations(values: np.ndarray, partitions: int) -> np.ndarray:
    """The partition of each value (64-bit integers): the high 32 bits of the value times an
    odd constant (modulo 2^64), scaled to ``partitions``."""
    values = np.asarray(values)
    bits = values.view(np.uint64) if values.dtype.itemsize == 8 else values.astype(np.uint64)
    with np.errstate(over="ignore"):
        high = (bits * _SPREAD) >> np.uint64(32)
    return ((high * np.uint64(partitions)) >> np.uint64(32)).astype(np.int64)


def word_bounds(q: int, words: int, partitions: int) -> tuple[int, int]:
    """The words (of 64 slots) that partition q of ``partitions`` takes of a table of ``words``
    words in an exchange by range: the q-th of equal runs of them."""
    return (q * words + partitions - 1) // partitions, (
        (q + 1) * words + partitions - 1
    ) // partitions


def _range_bounds(values: np.ndarray, bits: int, partitions: int) -> np.ndarray:
    """Where each partition's slots begin among sorted slots below ``2**bits`` in an exchange by
    range (:func:`word_bounds`), and the end."""
    words = 1 << (bits - 6)
    firsts = [word_bounds(q, words, partitions)[0] * 64 for q in range(partitions)]
    # In the slots' own dtype (each first is a slot, below 2**bits): a wider one would copy
    # every slot to compare them. Every slot is below the end.
    at = np.searchsorted(values, np.array(firsts, values.dtype))
    return np.append(at, len(values)).astype(np.int64)


def _is_raw(kind: pd.DataFrame) -> bool:
    """Whether every column of ``kind`` is a plain numpy number or bool (written as raw bytes,
    not as an Arrow table)."""
    return all(isinstance(t, np.dtype) and t.kind in "biuf" for t in kind.dtypes)


def _send_part(
    part: pd.DataFrame,
    on: str,
    partitions: int,
    folder: str,
    name: str,
    direct: bool,
    raw: pd.DataFrame | None,
    ranged: int | None = None,
    partition_info: Any = None,
) -> pd.DataFrame:
    """Writes the partition's rows, ordered by destination, and the offset of each destination's
    first row (and the end), each file atomically; returns the row count. Given ``raw`` (the
    table's meta, numbers alone), each column of it is written as its bytes in its dtype, one
    after another, to be read back by offset without Arrow."""
    import pyarrow as pa

    i = int(partition_info["number"]) if partition_info else 0
    values = part[on].to_numpy()
    order: Any = slice(None)
    if ranged is not None:
        # Sorted slots are in the order of their ranges already.
        bounds = _range_bounds(values, ranged, partitions)
    else:
        to = values.astype(np.int64) if direct else destinations(values, partitions)
        if direct and len(to) and (to.min() < 0 or to.max() >= partitions):
            raise ValueError(f"column {on!r} names a partition outside 0 to {partitions - 1}")
        # A stable sort of small keys is a radix sort.
        order = np.argsort(to.astype(np.uint16) if partitions <= 1 << 16 else to, kind="stable")
        bounds = np.searchsorted(to[order], np.arange(partitions + 1)).astype(np.int64)
    path = spill_file(folder, name, i)
    if raw is not None:
        with scratch_write(path) as tmp, open(tmp, "wb") as sink:
            for column, dtype in raw.dtypes.items():
                sink.write(np.ascontiguousarray(part[column].to_numpy(dtype)[order]).data)
    else:
        write_table(path, pa.Table.from_pandas(part.iloc[order], preserve_index=False))
    with scratch_write(_bounds_file(folder, name, i)) as tmp, open(tmp, "wb") as sink:
        sink.write(bounds.data)
    return pd.DataFrame({"rows": [len(part)]}, index=[i])


def _receive_part(
    q: int,
    sources: list[int],
    partitions: int,
    folder: str,
    name: str,
    kind: pd.DataFrame,
    raw: bool,
) -> Any:
    """The rows every source sent to partition q of ``partitions`` (with the dtypes of
    ``kind``), copied out of each file in turn: a task holding the maps of every file it reads
    was measured holding hundreds of MB of their pages."""
    import pyarrow as pa

    # Each source's rows for q, and how many rows its file holds.
    spans = []
    for i in sources:
        bounds = np.fromfile(_bounds_file(folder, name, i), np.int64)
        lo, hi = int(bounds[q]), int(bounds[q + 1])
        if hi > lo:
            spans.append((i, lo, hi, int(bounds[partitions])))
    if raw:
        # Read into the columns in place (no piece copied again): column c of a file starts
        # after the rows of the columns before it.
        total = sum(hi - lo for _, lo, hi, _ in spans)
        columns = {c: np.empty(total, t) for c, t in kind.dtypes.items()}
        at = 0
        for i, lo, hi, rows in spans:
            with open(spill_file(folder, name, i), "rb") as source:
                start = 0
                for column in columns.values():
                    width = column.dtype.itemsize
                    source.seek(start + lo * width)
                    into = column[at : at + hi - lo].data.cast("B")
                    got = source.readinto(into)
                    if got != len(into):
                        raise OSError(
                            f"{source.name}: cut short ({got // width} of {hi - lo} rows)"
                        )
                    start += rows * width
            at += hi - lo
        # Each column its own block: pandas would copy them into one.
        return pd.DataFrame(columns, copy=False)
    pieces: list[Any] = []
    for i, lo, hi, _ in spans:
        table = pa.ipc.open_file(pa.memory_map(spill_file(folder, name, i))).read_all()
        pieces.append(table.take(pa.array(np.arange(lo, hi, dtype=np.int64))))
        del table
    if not pieces:
        return kind.iloc[:0].copy()
    return conform(pa.concat_tables(pieces).to_pandas(), kind)


@dataclasses.dataclass(frozen=True)
class Sent:
    """The files of an exchange, written: :meth:`rows` reads one destination's rows (in a task
    that does more with them), :meth:`frame` every destination's, lazily."""

    sources: list[int]
    partitions: int
    folder: str
    name: str
    kind: pd.DataFrame
    raw: bool

    def rows(self, q: int) -> pd.DataFrame:
        """The rows sent to partition q."""
        return _receive_part(
            q, self.sources, self.partitions, self.folder, self.name, self.kind, self.raw
        )

    def frame(self) -> Any:
        """Every partition's rows, read back lazily, a task each."""
        return read_back(
            _receive_part,
            range(self.partitions),
            sources=self.sources,
            partitions=self.partitions,
            folder=self.folder,
            name=self.name,
            kind=self.kind,
            raw=self.raw,
            meta=self.kind,
        )


def send(
    frame: Any,
    on: str,
    partitions: int,
    folder: str,
    name: str,
    direct: bool = False,
    ranged: int | None = None,
) -> Sent:
    """The rows of ``frame`` (computed now) written for :func:`exchange`, by destination."""
    kind = pd.DataFrame({"rows": pd.Series([], dtype=np.int64)})
    meta = frame._meta.reset_index(drop=True)
    raw = _is_raw(meta)
    sent = computed(
        frame.map_partitions(
            _send_part,
            on,
            partitions,
            folder,
            name,
            direct,
            meta if raw else None,
            ranged,
            meta=kind,
        )
    )
    sources = [int(i) for i, rows in zip(sent.index, sent["rows"]) if rows > 0]
    return Sent(sources, partitions, folder, name, meta, raw)


def exchange(
    frame: Any,
    on: str,
    partitions: int,
    folder: str,
    name: str,
    direct: bool = False,
    ranged: int | None = None,
) -> Any:
    """``frame`` (computed now) in ``partitions`` partitions by the value in column ``on``: the
    rows of each value together (:func:`destinations`; with ``direct``, the values are the
    partitions, 0 to ``partitions - 1``; with ``ranged``, they are slots below ``2**ranged``,
    sorted in each partition of ``frame``, and each partition takes a range of their words,
    :func:`word_bounds`), read back lazily from the
    scratch folder (``name`` tells the files apart from the run's others). The index is not
    kept. A table of numbers alone moves as raw bytes."""
    return send(frame, on, partitions, folder, name, direct, ranged).frame()


def discard(folder: str, name: str) -> None:
    """Removes the files of the exchange ``name`` once its rows are read for good (the scratch
    folder then holds one exchange's rows at a time, not every one's until the run ends)."""
    head = f"{PREFIX}{name}."
    for entry in os.listdir(folder):
        if entry.startswith(head):
            os.remove(os.path.join(folder, entry))
