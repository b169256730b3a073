"""Intermediate tables of a Dask dedup kept in the scratch folder instead of in workers' memory.

:func:`spill` computes a lazy dask DataFrame partition by partition, each task writing its
partition to one Arrow file of the scratch folder and returning its row count; the result is a
dask DataFrame that reads those files back, memory-mapped, one partition per task. A worker
then holds one partition at a time whatever the corpus size, where ``persist`` would hold every
partition of the table until it is let go of; a lost worker loses nothing (the files stay).
The client receives one count per partition.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

#: The prefix of every spilled file's name, for the cleanup of a scratch folder.
PREFIX = "spill."


@contextlib.contextmanager
def scratch_write(path: str) -> Iterator[str]:
    """Writes a file of the scratch folder atomically: yields the temporary path to write, renamed
    to ``path`` once written whole. A file that cannot be written whole (a full disk, say) is
    removed, and the error names it and what to do."""
    tmp = path + ".tmp"
    try:
        yield tmp
    except OSError as err:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise OSError(
            err.errno,
            f"{tmp}: cannot write the run's scratch file ({err.strerror or err}); give --scratch "
            "(scratch= in Python) a folder with more room",
        ) from err
    os.replace(tmp, path)


def write_table(path: str, table: Any) -> None:
    """Writes an Arrow table to the scratch file ``path`` (see :func:`scratch_write`)."""
    import pyarrow as pa

    with (
        scratch_write(path) as tmp,
        pa.OSFile(tmp, "wb") as sink,
        pa.ipc.new_file(sink, table.schema) as out,
    ):
        out.write_table(table)


def spill_file(folder: str, name: str, i: int) -> str:
    return os.path.join(folder, f"{PREFIX}{name}.{i:06d}.arrow")


def read_back(func: Any, *iterables: Any, meta: pd.DataFrame, **kwargs: Any) -> Any:
    """``dd.from_map(func, *iterables, ...)`` of a function that reads a table of the run back
    with ``meta``'s dtypes (:func:`conform`), taken as they are: dask converts no column to
    Arrow strings, a step that would be a task of its own for each partition wherever it is not
    fused with the next (a fifth of a run's tasks, measured)."""
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(func, *iterables, meta=meta, enforce_metadata=False, **kwargs)


def computed(frame: Any) -> Any:
    """``frame`` (a dask DataFrame or Series) computed, its graph optimized first: each row of
    maps over partitions fused into one task a partition. A plain ``compute`` on a distributed
    cluster runs each map as a task of its own, its result kept, counted and moved to the next
    one (at 1M documents, more than a third of the run's tasks and about a tenth of its CPU)."""
    return frame.optimize().compute()


def conform(frame: pd.DataFrame, kind: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the dtypes of ``kind`` where they differ."""
    return frame.astype({c: kind[c].dtype for c in kind.columns if frame[c].dtype != kind[c].dtype})


def _write_part(
    part: pd.DataFrame, folder: str, name: str, marks: int = 0, partition_info: Any = None
) -> pd.DataFrame:
    """Writes one partition (index dropped) to its Arrow file, atomically; returns its rows
    (and with ``marks``, for each m < marks the sum of ``b`` over the rows with ``a = -1 - m``;
    the rows with ``a < 0`` are not written)."""
    import pyarrow as pa

    i = int(partition_info["number"]) if partition_info else 0
    sums = {}
    if marks:
        a = part["a"].to_numpy(np.int64)
        b = part["b"].to_numpy(np.int64)
        sums = {f"tally{m}": [int(b[a == -1 - m].sum())] for m in range(marks)}
        part = part[a >= 0]
    table = pa.Table.from_pandas(part, preserve_index=False)
    write_table(spill_file(folder, name, i), table)
    return pd.DataFrame({"rows": [len(part)], **sums}, index=[i])


def read_spilled(path: str, kind: pd.DataFrame) -> pd.DataFrame:
    """One spilled partition, memory-mapped, with the dtypes of ``kind``."""
    import pyarrow as pa

    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    return conform(table.to_pandas(types_mapper=_arrow_lists), kind)


def _arrow_lists(t: Any) -> Any:
    import pyarrow as pa

    return pd.ArrowDtype(t) if pa.types.is_large_list(t) else None


def read_spilled_group(paths: list[str], kind: pd.DataFrame) -> pd.DataFrame:
    """Spilled partitions read back as one, one after the other (as ``repartition`` puts
    adjacent partitions together)."""
    from dask.dataframe.core import _concat

    return _concat([read_spilled(path, kind) for path in paths])


def spill(
    frame: Any, folder: str, name: str, into: Callable[[int], int] | None = None
) -> tuple[Any, np.ndarray]:
    """``frame`` computed now, one Arrow file a partition in ``folder`` (``name`` tells the
    table apart from the others of the run), and read back lazily: the spilled DataFrame and its
    row count per partition (the index is not kept: each partition's runs 0, 1, ...). With
    ``into``, the DataFrame is read back in ``into(rows)`` partitions or fewer (``rows``: the
    table's), each of adjacent files read in one task."""
    spilled, counts, _ = spill_counted(frame, folder, name, 0, into)
    return spilled, counts


def spill_counted(
    frame: Any, folder: str, name: str, marks: int, into: Callable[[int], int] | None = None
) -> tuple[Any, np.ndarray, list[int]]:
    """:func:`spill` of a table of pairs ``(a, b, ...)`` whose rows with ``a < 0`` each carry a
    count in ``b``: those rows are left out of the files, and the counts of the rows ``(-1 - m,
    count)`` of each m < ``marks`` summed apart, in the same pass. Returns the spilled
    DataFrame, its rows per partition (of the files, whatever ``into``) and the ``marks``
    sums."""
    kind = pd.DataFrame(
        {
            "rows": pd.Series([], dtype=np.int64),
            **{f"tally{m}": pd.Series([], dtype=np.int64) for m in range(marks)},
        }
    )
    got = computed(frame.map_partitions(_write_part, folder, name, marks, meta=kind))
    meta = frame._meta.reset_index(drop=True)
    counts = got["rows"].to_numpy(np.int64)
    partitions = len(counts) if into is None else into(int(counts.sum()))
    sums = [int(got[f"tally{m}"].sum()) for m in range(marks)]
    return spilled(folder, name, len(counts), meta, partitions), counts, sums


def spilled(folder: str, name: str, files: int, meta: pd.DataFrame, partitions: int = 0) -> Any:
    """The table ``name`` spilled to ``files`` files of ``folder`` (with ``meta``'s columns),
    read back lazily: a partition a file, or in ``partitions`` partitions when fewer, each of
    adjacent files read in one task."""
    paths = [spill_file(folder, name, i) for i in range(files)]
    if not 0 < partitions < len(paths):
        return read_back(read_spilled, paths, kind=meta, meta=meta)
    # The files in runs of adjacent ones, as repartition(npartitions=partitions) cuts them.
    bounds = [int(q * len(paths) / partitions) for q in range(partitions)] + [len(paths)]
    groups = [paths[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]
    return read_back(read_spilled_group, groups, kind=meta, meta=meta)


def remove_spilled(folder: str) -> None:
    """Removes every spilled file of ``folder`` (and any a failed write left)."""
    for entry in os.listdir(folder):
        if entry.startswith(PREFIX):
            os.remove(os.path.join(folder, entry))
