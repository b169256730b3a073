"""Step 7 of a Dask dedup: the per-row results (kept row, cluster, Jaccard, distance, ids),
partitioned like the input and joined with it lazily, as the kept rows or the clusters table."""

from __future__ import annotations

from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup import _core

from .frames import _number, _rows_of
from .spill import read_back


def _result_columns(
    part: pd.DataFrame, found: pd.DataFrame, start: int, id_field: str | None
) -> pd.DataFrame:
    """The clusters table of one input partition: the rows ``found`` names (indexed by global
    row) take its values, the others are kept alone."""
    n = len(part)
    rows = np.arange(start, start + n, dtype=np.int64)
    kept_row = rows.copy()
    jaccard = np.ones(n, np.float32)
    cluster = rows.copy()
    distance = np.zeros(n, np.int64)
    at = found.index.to_numpy(np.int64) - start
    if len(at) and (at.min() < 0 or at.max() >= n):
        raise RuntimeError(
            f"the input changed: a partition has {n} rows now, fewer than when it was digested"
        )
    kept_row[at] = found["kept_row"].to_numpy(np.int64)
    jaccard[at] = found["jaccard"].to_numpy(np.float32)
    cluster[at] = found["cluster"].to_numpy(np.int64)
    if len(at):
        distance[at] = _core.hamming_pairwise(
            np.array(found["fingerprint"], np.uint64),
            np.array(found["kept_fingerprint"], np.uint64),
        ).astype(np.int64)
    if id_field is not None:
        ids = part[id_field].to_numpy()
        kept_id = ids.copy()
        if len(at):
            kept_id[at] = found["kept_id"].to_numpy()
    else:
        ids, kept_id = rows, kept_row
    return pd.DataFrame(
        {
            "id": ids,
            "cluster": cluster,
            "kept": kept_row == rows,
            "kept_id": kept_id,
            "jaccard": jaccard,
            "distance": distance,
        }
    )


def _output_part(
    part: pd.DataFrame,
    found: pd.DataFrame,
    starts: np.ndarray,
    counts: np.ndarray,
    id_field: str | None,
    table: bool,
    partition_info: Any = None,
) -> pd.DataFrame:
    i = _number(partition_info)
    if len(part) != int(counts[i]):
        raise RuntimeError(
            f"partition {i} has {len(part)} rows now but had {int(counts[i])} when digested: the input changed"
        )
    start = int(starts[i])
    got = _result_columns(part, _rows_of(found, start, start + len(part)), start, id_field)
    if table:
        return got
    return part[got["kept"].to_numpy(bool)]


def _whole(found: Any) -> Any:
    """``found`` as :func:`_output_part` takes it: a frame of one partition as a delayed value,
    which every task of the input reads whole (each takes its rows: no task a partition to cut
    it), else the frame, a partition per input partition."""
    return found.to_delayed()[0] if found.npartitions == 1 else found


def _found_columns(with_ids: bool) -> list[str]:
    return ["row", "kept_row", "jaccard", "cluster", "fingerprint", "kept_fingerprint", "leads"] + (
        ["kept_id"] if with_ids else []
    )


def _empty_found(ddf: Any, id_field: str | None, partitions: int) -> Any:
    meta = _found_meta(ddf, id_field)
    return read_back(lambda i: meta, range(partitions), meta=meta)


def _found_meta(ddf: Any, id_field: str | None) -> pd.DataFrame:
    meta = pd.DataFrame(
        {
            "kept_row": pd.Series([], dtype=np.int64),
            "jaccard": pd.Series([], dtype=np.float32),
            "cluster": pd.Series([], dtype=np.int64),
            "fingerprint": pd.Series([], dtype=np.uint64),
            "kept_fingerprint": pd.Series([], dtype=np.uint64),
            "leads": pd.Series([], dtype=bool),
        },
        index=pd.Index([], dtype=np.int64, name="row"),
    )
    if id_field is not None:
        meta["kept_id"] = ddf._meta[id_field]
    return meta


def _spread(found: Any, parts: list[int], partitions: int) -> Any:
    """``found`` (one partition per input partition with rows) with an empty partition for each
    empty input partition, so that partition i goes with input partition i."""
    if len(parts) == partitions:
        return found
    meta = found._meta
    pieces = found.to_delayed()
    by_part = dict(zip(parts, pieces))
    empty = dask.delayed(lambda: meta)()
    return dd.from_delayed(
        [by_part.get(i, empty) for i in range(partitions)], meta=meta, verify_meta=False
    )
