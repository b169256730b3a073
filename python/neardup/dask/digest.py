"""Steps 1 and 2 of a Dask dedup: each partition's digests (fingerprint, content key, length,
sketch, the whole shingle set of a text whose sketch is cut), written to one Arrow file a
partition of the scratch folder and read back where they lie; the copies (each row's text and
its keep-order rank); and :func:`fingerprint`, the fingerprint column alone."""

from __future__ import annotations

import os
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import kernels
from neardup.batches import check_texts, fingerprint_batch
from neardup.hasher import Simhasher
from neardup.verify import SKETCH_SIZE

from ..deprecation import renamed
from .exchange import Sent, _send_part
from .frames import _arrow_types, _frame, _number, _partition_of
from .spill import _write_part, conform, write_table


def _hasher(hasher: Any) -> Simhasher:
    if hasher is None:
        return Simhasher()
    if not isinstance(hasher, Simhasher):
        raise TypeError(f"hasher must be a neardup.Simhasher, got {type(hasher).__name__}")
    return hasher


def _check_frame(ddf: Any, text_field: str, id_field: str | None = None) -> None:
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(
            f"expected a dask DataFrame, got {type(ddf).__name__} (dask.dataframe.from_pandas makes one)"
        )
    for name, what in ((text_field, "text_field"), (id_field, "id_field")):
        if name is not None and name not in ddf.columns:
            raise KeyError(
                f"{what} {name!r} is not a column of the DataFrame (columns: {list(ddf.columns)})"
            )


def _add_fingerprints(
    part: pd.DataFrame, text_field: str, hasher: Simhasher, partition_info: Any = None
) -> pd.DataFrame:
    fps = fingerprint_batch(
        part[text_field],
        hasher,
        where=f"partition {_number(partition_info)}, column {text_field!r},",
    )
    return part.assign(fingerprint=fps)


@renamed(column="text_field")
def fingerprint(ddf: Any, text_field: str = "text", hasher: Simhasher | None = None) -> Any:
    """The DataFrame with a ``fingerprint`` column (``uint64``) of the text in column
    ``text_field`` (``column=`` is its old name, deprecated).

    Lazy: each partition is fingerprinted in its own task, by the Rust kernel. A missing or
    non-string text fails the task with a TypeError naming the partition and row.
    """
    hasher = _hasher(hasher)
    _check_frame(ddf, text_field)
    meta = ddf._meta.assign(fingerprint=pd.Series([], dtype=np.uint64))
    return ddf.map_partitions(_add_fingerprints, text_field, hasher, meta=meta)


# -- the steps of dedup, one partition each -------------------------------------------------------
#
# Every step below runs on the workers, one partition at a time; the client only sees a count
# per partition and a few counts in all. The digests are written once to the scratch folder (one
# Parquet file per input partition) and read back by the steps that need them, column by column.


def _digest_file(folder: str, i: int) -> str:
    return os.path.join(folder, f"digest.{i:06d}.arrow")


def _read_columns(path: str, names: list[str]) -> Any:
    """Columns of an Arrow file of digests, memory-mapped (read where they are used)."""
    import pyarrow as pa

    # The map stays open while the columns read from it live.
    return pa.ipc.open_file(pa.memory_map(path)).read_all().select(names)


def _digest_part(
    part: pd.DataFrame,
    text_field: str,
    id_field: str | None,
    hasher: Simhasher,
    shingle: int | None,
    folder: str,
    partition_info: Any = None,
) -> pd.DataFrame:
    """Writes the partition's digests (fingerprint, content key, length, sketch, the whole
    shingle set of a text whose sketch is cut, id) to its file; returns its row count."""
    import pyarrow as pa

    i = _number(partition_info)
    where = f"partition {i}, column {text_field!r},"
    texts = _arrow_strings(part[text_field])
    if texts is None:
        texts = part[text_field].tolist()
        check_texts(texts, where)
    table = kernels.digest_batch(
        texts, hasher, shingle=shingle, size=SKETCH_SIZE, name=where, whole=shingle is not None
    )
    if id_field is not None:
        table = table.append_column("id", pa.array(part[id_field], from_pandas=True))
    write_table(_digest_file(folder, i), table)
    return pd.DataFrame({"rows": [len(part)]}, index=[i])


def _arrow_strings(column: pd.Series) -> Any:
    """The column's Arrow array when it holds strings in Arrow's buffers without a null (what
    :func:`dask.dataframe.read_parquet` and ``read_json`` make): the core reads its texts there,
    with no Python string made. None otherwise: its values are read and checked in Python."""
    import pyarrow as pa

    if not isinstance(column.dtype, pd.StringDtype | pd.ArrowDtype) or column.hasnans:
        return None
    try:
        texts = pa.array(column.array)
    except (TypeError, ValueError, pa.ArrowException):
        return None
    return texts if pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type) else None


def _read_digest(
    i: int,
    start: int,
    j: int,
    folder: str,
    names: list[str],
    kind: pd.DataFrame,
    copies: Sent | None = None,
) -> pd.DataFrame:
    """Partition i's digests (the j-th partition with rows), with their global row numbers (and
    the dtypes of ``kind``); with ``copies`` (the copies stage's rows that are not their text's
    first, sent to their partitions), a column ``is_text`` too: which rows are texts. Read in
    the task that uses them, the digests are not sent from one worker to another."""
    sizes = "hashes" in names
    stored = [name for name in names if name != "hashes"]
    table = _read_columns(_digest_file(folder, i), stored + (["sketch"] if sizes else []))
    if sizes:
        starts, ends, _ = kernels._ranges(table.column("sketch"))
        table = table.select(stored)
    frame = table.to_pandas(types_mapper=_arrow_types)
    if sizes:
        frame["hashes"] = (ends - starts).astype(np.int64)
        frame = frame[names]
    rows = np.arange(start, start + len(frame), dtype=np.int64)
    frame.insert(0, "row", rows)
    if copies is not None:
        frame["is_text"] = ~np.isin(rows, copies.rows(j)["row"].to_numpy(np.int64))
    return conform(frame, kind)


def _digest_meta(
    ddf: Any, id_field: str | None, names: list[str], texts: bool = False
) -> pd.DataFrame:
    import pyarrow as pa

    sketch = pa.large_list(pa.from_numpy_dtype(kernels.SKETCH_DTYPE))
    columns = {
        "row": pd.Series([], dtype=np.int64),
        "fingerprint": pd.Series([], dtype=np.uint64),
        "key": pd.Series([], dtype=kernels.KEY_DTYPE),
        "key_hi": pd.Series([], dtype=kernels.KEY_DTYPE),
        "length": pd.Series([], dtype=np.int64),
        "hashes": pd.Series([], dtype=np.int64),
        "sketch": pd.Series([], dtype=pd.ArrowDtype(sketch)),
        "id": ddf._meta[id_field] if id_field is not None else None,
        "is_text": pd.Series([], dtype=bool),
    }
    return pd.DataFrame(
        {name: columns[name] for name in ["row", *names, *(["is_text"] if texts else [])]}
    )


def _texts_part(part: pd.DataFrame, keep: str, with_ids: bool) -> pd.DataFrame:
    """Rows shuffled by content key: each row's text (the first row of its key and
    fingerprint), the text's row that stands for it in keep order and its rank there."""
    n = len(part)
    rows = part["row"].to_numpy(np.int64)
    keys = part["key"].to_numpy(kernels.KEY_DTYPE)
    highs = part["key_hi"].to_numpy(kernels.KEY_DTYPE)
    fps = part["fingerprint"].to_numpy(np.uint64)
    lengths = part["length"].to_numpy(np.int64)
    # Sorted by text, then by keep order inside it: the first of each text stands for it.
    by = (rows, -lengths) if keep == "longest" else (rows,)
    order = np.lexsort((*by, fps, highs, keys))
    k, h, f = keys[order], highs[order], fps[order]
    new = np.ones(n, bool)
    new[1:] = (k[1:] != k[:-1]) | (h[1:] != h[:-1]) | (f[1:] != f[:-1])
    group = np.cumsum(new) - 1
    heads = np.flatnonzero(new)
    sizes = np.diff(np.append(heads, n))
    first = np.minimum.reduceat(rows[order], heads) if n else np.zeros(0, np.int64)
    standin = rows[order][heads]
    out = pd.DataFrame(
        {
            "row": rows[order],
            "text": first[group],
            "fingerprint": f,
            "copies": sizes[group].astype(np.int64),
            "rank": (-lengths[order][heads] if keep == "longest" else standin)[group],
            "standin": standin[group],
        }
    )
    if with_ids:
        out["standin_id"] = part["id"].to_numpy()[order][heads][group]
    return out


#: The rows a partition sends to the others by the copies stage of a Dask dedup with prefix
#: candidates (:func:`_texts_written_part`): those that are not their text's first.
COPY_ROWS = _frame(row=np.int64, part=np.int64)


def _texts_written_part(
    part: pd.DataFrame,
    keep: str,
    with_ids: bool,
    folder: str,
    starts: np.ndarray,
    partitions: int,
    partition_info: Any = None,
) -> pd.DataFrame:
    """The copies stage's task of a Dask dedup with prefix candidates, over the rows shuffled
    here by content key: their texts (:func:`_texts_part`) written to the spilled table
    ``rows``, and the rows that are not their text's first sent to their partitions (the
    exchange ``copies``, :data:`COPY_ROWS`; ``starts``: each partition's first row), in one
    pass. Returns the rows written and sent, the texts (each row that is its text's first) and
    the hashes their sketches hold (the rows' column ``hashes``): the sizes of
    :func:`neardup.dask.rarity._rarity_tables`."""
    texts = _texts_part(part, keep, with_ids)
    written = _write_part(texts, folder, "rows", 0, partition_info)
    rows = texts["row"].to_numpy(np.int64)
    copies = rows[rows != texts["text"].to_numpy(np.int64)]
    sent = _send_part(
        pd.DataFrame({"row": copies, "part": _partition_of(starts, copies)}, copy=False),
        "part",
        partitions,
        folder,
        "copies",
        True,
        COPY_ROWS,
        None,
        partition_info,
    )
    own = ~np.isin(part["row"].to_numpy(np.int64), copies)
    return written.assign(
        sent=sent["rows"].to_numpy(np.int64),
        texts=int(own.sum()),
        hashes=int(part["hashes"].to_numpy(np.int64)[own].sum()),
    )


def _is_text(part: pd.DataFrame) -> np.ndarray:
    """Which of the partition's rows are texts (the first row of their key and fingerprint):
    its column ``is_text`` (:func:`_read_digest` with the copies stage's other rows). A mask, so
    that a task copies the sketches it reads only (taking the rows out of the frame copied
    every column, 0.8 of a task's 3.5 CPU s at 1M)."""
    return part["is_text"].to_numpy(bool)


def _text_sketches(part: pd.DataFrame, chosen: np.ndarray) -> Any:
    """The sketches of the partition's rows where ``chosen`` is set, as an Arrow list array."""
    import pyarrow as pa

    sketches = _sketch_array(part["sketch"])
    return sketches if chosen.all() else sketches.take(pa.array(np.flatnonzero(chosen)))


def _sketch_array(column: pd.Series) -> Any:
    import pyarrow as pa

    array = pa.array(column)
    return pa.concat_arrays(array.chunks) if isinstance(array, pa.ChunkedArray) else array


def _sketch_column(j: int, parts: list[int], folder: str) -> Any:
    """The sketch column of the j-th partition with rows, memory-mapped from its digest file."""
    return _read_columns(_digest_file(folder, parts[j]), ["sketch"]).column(0)


def _sketches_of(
    rows: np.ndarray, j: int, parts: list[int], starts: np.ndarray, folder: str
) -> Any:
    """The sketches of ``rows`` (all in the j-th partition with rows), read from its file, as
    an Arrow binary array."""
    return kernels.take_sketches(_sketch_column(j, parts, folder), rows - int(starts[j]))


def _whole_sets(j: int, parts: list[int], folder: str) -> tuple[Any, Any]:
    """The sketch and ``shingles`` columns of the j-th partition with rows, memory-mapped."""
    table = _read_columns(_digest_file(folder, parts[j]), ["sketch", "shingles"])
    return table.column(0), table.column(1)


def _digest_values(
    rows: np.ndarray, names: list[str], parts: list[int], starts: np.ndarray, folder: str
) -> dict[str, np.ndarray]:
    """Columns ``names`` of the digests of ``rows`` (global rows, any order), read from the
    memory-mapped digest files where they lie, one file at a time."""
    import pyarrow as pa

    of = _partition_of(starts, rows)
    order = np.argsort(of, kind="stable")
    pieces: dict[str, list[Any]] = {name: [] for name in names}
    bounds = np.flatnonzero(np.diff(of[order])) + 1
    for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(rows)]):
        if lo == hi:
            continue
        j = int(of[order[lo]])
        table = _read_columns(_digest_file(folder, parts[j]), names)
        at = pa.array(rows[order[lo:hi]] - int(starts[j]))
        for name in names:
            pieces[name].append(table.column(name).take(at).to_numpy(zero_copy_only=False))
        del table
    back = np.empty(len(rows), np.int64)
    back[order] = np.arange(len(rows), dtype=np.int64)
    return {
        name: (np.concatenate(got) if got else np.zeros(0, np.int64))[back]
        for name, got in pieces.items()
    }


def _texts_meta(ddf: Any, id_field: str | None) -> pd.DataFrame:
    meta = _frame(
        row=np.int64,
        text=np.int64,
        fingerprint=np.uint64,
        copies=np.int64,
        rank=np.int64,
        standin=np.int64,
    )
    if id_field is not None:
        meta["standin_id"] = ddf._meta[id_field]
    return meta
