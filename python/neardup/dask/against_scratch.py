"""The scratch files of :func:`neardup.dask.against.dedup_against` and its update: the index
each worker process opens, the files' columns, and, with ``update``, each partition's kept
rows' digests and prefix postings, which the client appends to the index file (the digests a
section at a time, the postings merged from sorted runs, every one memory-mapped)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from neardup.dask.digest import _digest_file, _read_columns
from neardup.dask.frames import _number
from neardup.dask.spill import write_table
from neardup.dedup_index import DedupIndex
from neardup.index_settings import _id_values

#: The rows are told apart by ``partition << PART_SHIFT | row in partition`` while they are
#: matched when the frame names no id column.
PART_SHIFT = 40

#: The index each worker process has open: (path, device, inode, size, mtime) -> index.
_OPENED: dict[tuple[Any, ...], DedupIndex] = {}


def _opened(path: str) -> DedupIndex:
    """The index at ``path``, opened once per worker process while the file is the same."""
    st = os.stat(path)
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    index = _OPENED.get(key)
    if index is None:
        _OPENED.clear()
        index = _OPENED[key] = DedupIndex.open(path)
    return index


class _IndexOrder:
    """The rarity order of a dedup index's prefix lists, which each task loads from the index
    file it opens (once a worker process): the order of a run's prefix steps."""

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> Any:
        return _opened(self.path)._rarity_order()


def _scratch_file(folder: str, name: str, i: int) -> str:
    return os.path.join(folder, f"{name}.{i:06d}.arrow")


def _numpy(column: Any) -> np.ndarray:
    """An Arrow column of numbers as a numpy array (no copy when it is one chunk)."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if len(chunks) == 1:
        return np.asarray(chunks[0].to_numpy(zero_copy_only=False))
    return np.concatenate([c.to_numpy(zero_copy_only=False) for c in chunks])


def _flat(column: Any) -> np.ndarray:
    """The values of an Arrow column of fixed-size lists, one after the other."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return (
        np.concatenate([c.flatten().to_numpy() for c in chunks])
        if len(chunks) != 1
        else chunks[0].flatten().to_numpy()
    )


def _global_rows(codes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Global row numbers of ``partition << PART_SHIFT | row`` codes."""
    codes = np.asarray(codes, np.int64)
    return offsets[codes >> PART_SHIFT] + (codes & ((1 << PART_SHIFT) - 1))


def _kept_left(found: pd.DataFrame, start: int, count: int) -> np.ndarray:
    """Whether each row left of a partition (rows ``start .. start + count`` of those left) is
    kept: it is unless its star or a copy before it removes it."""
    kept = np.ones(count, bool)
    at = found.index.to_numpy(np.int64) - start
    kept[at] = found["kept_row"].to_numpy(np.int64) == found.index.to_numpy(np.int64)
    return kept


def _write_kept_part(
    found: pd.DataFrame,
    folder: str,
    starts: np.ndarray,
    counts: np.ndarray,
    offsets: np.ndarray,
    with_ids: bool,
    string_ids: bool,
    path: str,
    partition_info: Any = None,
) -> pd.DataFrame:
    """Writes the digests of input partition i's kept rows (as the index file stores them) to
    its ``kept`` file, and, for an index with prefix postings, their postings (sorted, rows
    from 0) to its ``postings`` file; returns their number and their ids' bytes."""
    import pyarrow as pa

    i = _number(partition_info)
    count = int(counts[i])
    index = _opened(path)
    listed = index.candidates == "prefix"
    if count:
        got = _read_columns(
            _digest_file(folder, i),
            ["fingerprint", "key", "key_hi", "lens", "words", "id"]
            + (["list", "list_size"] if listed else [])
            + (["exact"] if index.exact else []),
        )
        keep = np.flatnonzero(_kept_left(found, int(starts[i]), count))
        got = got.take(pa.array(keep))
        ids: Any = got.column("id").to_pylist()
        if not with_ids:
            ids = _global_rows(np.asarray(ids, np.int64), offsets)
    else:
        got, ids = None, []
    kind, values = _id_values(ids, len(ids))
    if len(ids) and kind != string_ids:
        want = "strings" if string_ids else "integers"
        raise TypeError(
            f"this index holds ids that are {want}: the new documents' ids must be {want} too"
        )
    n = len(ids)
    if string_ids:
        id_column = pa.array(values, type=pa.large_binary())
        id_bytes = sum(len(v) for v in values)
    else:
        id_column, id_bytes = pa.array(np.asarray(values, np.int64)), 0
    set_values = 0
    if got is None:
        keys = np.zeros(0, np.uint64)
        columns: dict[str, Any] = {
            "fingerprint": pa.array(np.zeros(0, np.uint64)),
            "lens": pa.array(np.zeros(0, np.uint32)),
            "words": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(0, np.uint32)), 1),
        }
    else:
        keys = np.stack([_numpy(got.column("key")), _numpy(got.column("key_hi"))], axis=1).reshape(
            -1
        )
        names = ("fingerprint", "lens", "words") + (("exact",) if index.exact else ())
        columns = {name: got.column(name) for name in names}
        if index.exact:
            exact = got.column("exact").combine_chunks()
            set_values = int(exact.offsets[-1].as_py() - exact.offsets[0].as_py())
    table = pa.table(
        {
            **columns,
            "keys": pa.FixedSizeListArray.from_arrays(pa.array(keys.astype(np.uint64)), 2),
            "id": id_column,
        }
    )
    write_table(_scratch_file(folder, "kept", i), table)
    if listed:
        hashes, places, rows = (
            np.zeros(0, np.uint64),
            np.zeros(0, np.uint32),
            np.zeros(0, np.uint32),
        )
        if got is not None and n:
            column = got.column("list").combine_chunks()
            hashes, places, rows = index._inner.new_postings(
                np.ascontiguousarray(keys, np.uint64),
                (
                    np.diff(column.offsets.to_numpy()).astype(np.uint32),
                    np.ascontiguousarray(column.flatten().to_numpy(), np.uint64),
                    np.ascontiguousarray(_numpy(got.column("list_size")), np.uint32),
                ),
            )
        write_table(
            _scratch_file(folder, "postings", i),
            pa.table({"hash": pa.array(hashes), "place": pa.array(places), "row": pa.array(rows)}),
        )
    return pd.DataFrame({"rows": [n], "id_bytes": [id_bytes], "set_values": [set_values]})


def _posting_runs(folder: str, partitions: int, counts: np.ndarray, base: int) -> list[Any]:
    """The kept rows' postings, a sorted run a partition (memory-mapped from its file), each
    with the index row of its partition's first kept row."""
    import pyarrow as pa

    runs = []
    for i in range(partitions):
        if counts[i]:
            table = pa.ipc.open_file(pa.memory_map(_scratch_file(folder, "postings", i))).read_all()
            runs.append(
                (
                    _numpy(table.column("hash")),
                    _numpy(table.column("place")),
                    _numpy(table.column("row")),
                    base,
                )
            )
        base += int(counts[i])
    return runs


def _kept_sections(folder: str, partitions: int, string_ids: bool) -> Any:
    """``fill`` of ``DedupIndex._write_streamed``: each section's arrays, a partition's kept
    file at a time (memory-mapped)."""
    import pyarrow as pa

    def fill(section: str) -> Iterator[np.ndarray]:
        for i in range(partitions):
            table = pa.ipc.open_file(pa.memory_map(_scratch_file(folder, "kept", i))).read_all()
            if not table.num_rows:
                continue
            if section == "fps":
                yield _numpy(table.column("fingerprint"))
            elif section == "keys":
                yield _flat(table.column("keys"))
            elif section == "lens":
                yield _numpy(table.column("lens"))
            elif section == "words":
                yield _flat(table.column("words"))
            elif section in ("set_lens", "set_values"):
                if "exact" not in table.column_names:
                    continue  # an index without exact sets takes none
                exact = table.column("exact").combine_chunks()
                at = exact.offsets.to_numpy()
                if section == "set_lens":
                    yield np.diff(at).astype(np.uint32)
                else:
                    yield np.ascontiguousarray(exact.values.to_numpy(), np.uint32)[at[0] : at[-1]]
            elif section == "ids" and not string_ids:
                yield _numpy(table.column("id"))
            elif string_ids:
                ids = table.column("id").combine_chunks()
                ends = np.frombuffer(ids.buffers()[1], np.int64)[
                    ids.offset : ids.offset + len(ids) + 1
                ]
                if section == "ids":
                    yield np.diff(ends).astype(np.uint64)
                else:
                    data = np.frombuffer(ids.buffers()[2], np.uint8)
                    yield data[int(ends[0]) : int(ends[-1])]

    return fill
