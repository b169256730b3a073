"""Frame helpers of a Dask dedup: empty frames of given dtypes, the count rows of the pair
tables, shuffles and joins by key or by row, partition counts sized by ``PAIR_ROWS``, and the
partition of a global row."""

from __future__ import annotations

from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd


def _number(partition_info: dict[str, Any] | None) -> int:
    return int(partition_info["number"]) if partition_info else 0


def _arrow_types(t: Any) -> Any:
    """Sketches stay Arrow lists in pandas (no Python object per row)."""
    import pyarrow as pa

    return pd.ArrowDtype(t) if pa.types.is_large_list(t) else None


def _partition_of(starts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The partition each global row lies in (``starts``: each partition's first row)."""
    return np.searchsorted(starts, rows, side="right").astype(np.int64) - 1


def _divisions(starts: np.ndarray, ends: np.ndarray) -> list[int]:
    """Divisions of row numbers: one partition per (start, end) range, none empty."""
    return [int(s) for s in starts] + [int(ends[-1]) - 1]


def _frame(**dtypes: Any) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=t) for name, t in dtypes.items()})


_EDGE_META = _frame(a=np.int64, b=np.int64, jaccard=np.float32)
_CHECKED_META = _frame(a=np.int64, b=np.int64, jaccard=np.float32, band=bool)

#: The count rows of the tables of candidate and verified pairs, ``(mark, count)``: pairs not
#: compared (a prefix hash's run too large to split), pairs listed by the prefixes, pairs of
#: distinct fingerprints within k, and verified pairs left in the estimate's band. Summed
#: apart when the table is spilled (:func:`neardup.dask.spill.spill_counted`: mark ``-1 - m``
#: is its m-th sum).
_SKIPPED, _LISTED, _WITHIN_K, _IN_BAND, _COMPARED = -1, -2, -3, -4, -5
_MARKS = 5


def _merge_part(left: pd.DataFrame, right: pd.DataFrame, how: str) -> pd.DataFrame:
    return left.merge(right, on="_key", how=how).drop(columns=["_key"])


def _keyed(part: pd.DataFrame, on: str) -> pd.DataFrame:
    return part.assign(_key=part[on].to_numpy(np.int64)).reset_index(drop=True)


def _renumbered(frame: Any) -> Any:
    """``frame`` with each partition's index 0, 1, ... (a concatenation's repeats them)."""
    return frame.map_partitions(lambda p: p.reset_index(drop=True), meta=frame._meta)


def _by_key(frame: Any, on: str, partitions: int) -> Any:
    """``frame`` with its int64 column ``on`` copied to ``_key``, shuffled on it into
    ``partitions`` (the same hash sends equal keys of any table to the same partition)."""
    keyed = frame.map_partitions(_keyed, on, meta=frame._meta.assign(_key=np.int64(0)))
    return _shuffled(keyed, "_key", partitions)


def _shuffled(frame: Any, on: str, partitions: int) -> Any:
    """``frame`` shuffled on column ``on`` into ``partitions``; into one, its partitions put
    together instead (every row goes there): a shuffle's fixed cost is most of the work of a
    small table's."""
    if partitions == 1:
        return frame.repartition(npartitions=1)
    return frame.shuffle(on=on, npartitions=partitions)


def _by_row(frame: Any, divisions: list[int], small: bool) -> Any:
    """``frame`` indexed by its column ``row``, in order: by a shuffle into the partitions of
    ``divisions``, or when it is ``small`` (one partition of ``PAIR_ROWS`` rows holds it) put
    together in one partition, without a shuffle's fixed cost or a task for each piece of it
    (each task of the input takes its rows there: :func:`_rows_of`)."""
    if not small:
        return frame.set_index("row", divisions=divisions)
    return frame.repartition(npartitions=1).map_partitions(
        _sorted_by_row, meta=frame._meta.set_index("row")
    )


def _sorted_by_row(part: pd.DataFrame) -> pd.DataFrame:
    return part.set_index("row").sort_index()


def _cut(frame: Any, divisions: list[int]) -> Any:
    """A frame of one partition indexed by row, in order (:func:`_by_row`), cut into the
    partitions of ``divisions`` in one task."""
    whole = frame.to_delayed()[0]
    cut = dask.delayed(_cut_by_row, nout=len(divisions) - 1)(whole, divisions)
    pieces = [cut[q] for q in range(len(divisions) - 1)]
    return dd.from_delayed(pieces, meta=frame._meta, divisions=tuple(divisions), verify_meta=False)


def _cut_by_row(part: pd.DataFrame, divisions: list[int]) -> list[pd.DataFrame]:
    """``part`` (indexed by row, in order) cut into the ranges of ``divisions`` (each from one
    division to the next, the last one's end included)."""
    bounds = np.searchsorted(part.index.to_numpy(np.int64), [*divisions[:-1], divisions[-1] + 1])
    return [part.iloc[lo:hi] for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def _rows_of(found: pd.DataFrame, start: int, end: int) -> pd.DataFrame:
    """The rows of ``found`` (indexed by global row, in order) from ``start`` to ``end``
    (excluded)."""
    bounds = np.searchsorted(found.index.to_numpy(np.int64), [start, end])
    return found.iloc[int(bounds[0]) : int(bounds[1])]


def _join(left: Any, right: Any, left_on: str, right_on: str, how: str, partitions: int) -> Any:
    """``left`` joined with ``right`` where ``left[left_on] == right[right_on]`` (int64 columns):
    both shuffled on the key into ``partitions``, then joined partition by partition."""
    sides = [_by_key(left, left_on, partitions), _by_key(right, right_on, partitions)]
    meta = _merge_part(sides[0]._meta, sides[1]._meta, how)
    if how == "left":
        meta = meta.astype({c: sides[1]._meta[c].dtype for c in right.columns if c in meta})
    return dd.map_partitions(
        _merge_part, sides[0], sides[1], how, meta=meta, align_dataframes=False
    )


#: The rows of one partition of the tables that grow with the pairs found, not the corpus (the
#: verified pairs, their labels, the stars, the rows with copies): their shuffles make as many
#: partitions as it takes to hold about this many rows each, so a worker holds one such
#: partition whatever the corpus, and a small table is not cut into many tiny ones.
PAIR_ROWS = 1 << 20


def _partitions_for(rows: int) -> int:
    return max(1, -(-int(rows) // PAIR_ROWS))
