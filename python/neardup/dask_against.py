"""A dask DataFrame deduplicated against a dedup index (:class:`neardup.DedupIndex`):
``pip install neardup[dask]``.

The workers read, normalize, fingerprint and sketch every partition with the index's settings
(the text-heavy work); the client gathers the digests (the fingerprint, content key and
bottom-S sketch: 16 + 4 S bytes a document), deduplicates them against the index in one batch
(the call :func:`neardup.against.dedup_against` makes, so the answer is the single machine's for
any partitioning) and, with ``update``, appends the kept documents to the index file. The kept
rows come out per partition, in input order, without a shuffle.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from neardup.against import DedupIndex
from neardup.dask import _DIGEST_META, _aligned, _check_frame, _digest_part, _kept_part
from neardup.digest import Digest
from neardup.validate import check_k
from neardup.verify import check_threshold

__all__ = ["dedup_against"]


def _table_part(
    part: pd.DataFrame, result: pd.DataFrame, partition_info: Any = None
) -> pd.DataFrame:
    return result[["id", "kept", "kept_id", "in_index", "jaccard"]]


def dedup_against(
    ddf: Any,
    index: DedupIndex,
    text_field: str = "text",
    id_field: str | None = None,
    *,
    k: int | None = None,
    threshold: float | None = None,
    update: bool = False,
    clusters: bool = False,
) -> Any:
    """The rows of ``ddf`` that are not near-duplicates of a document of ``index`` or of an
    earlier row (in partition order), as :func:`neardup.dedup` with ``against=index`` on the
    concatenated partitions.

    Args:
        ddf: a dask DataFrame with the text in column ``text_field``.
        index: the dedup index (or its path).
        id_field: the column of ids of the rows (default: global row numbers); with ``update`` they are
            stored in the index, so they must be of its kind (strings or integers).
        k, threshold: default to the index's.
        update: append the kept rows to the index file (atomically).
        clusters: also return a table with one row per document: ``id``, ``kept``, ``kept_id``
            (the document it duplicates, itself when kept), ``in_index`` and ``jaccard``.

    Returns:
        the kept rows, a lazy dask DataFrame in input order; with ``clusters=True``, ``(kept, table)``.
    """
    if not isinstance(index, DedupIndex):
        index = DedupIndex.open(index)
    if index.hasher.fields is not None:
        raise ValueError(
            "neardup.dask fingerprints one text column; an index of several fields is not supported"
        )
    k = index.k if k is None else check_k(k)
    threshold = index.threshold if threshold is None else check_threshold(threshold)
    _check_frame(ddf, text_field, id_field)
    ddf = ddf.clear_divisions()
    spec = (index.shingle, index.sketch_size)
    digests = ddf.map_partitions(
        _digest_part, text_field, index.hasher, spec, meta=_DIGEST_META
    ).persist()
    counts = np.asarray(digests.map_partitions(len).compute(), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    got = digests[["fingerprint", "key", "sketch"]].compute()
    fps = got["fingerprint"].to_numpy(np.uint64)
    keys = got["key"].to_numpy(np.uint64)
    blobs = [np.frombuffer(b, dtype=np.uint32) for b in got["sketch"].tolist()]
    del got
    lengths = np.asarray([len(b) for b in blobs], dtype=np.uint64)
    ends = np.cumsum(lengths, dtype=np.uint64)
    hashes = np.concatenate(blobs) if blobs else np.zeros(0, np.uint32)
    del blobs
    n = len(fps)
    ids: list[Any] = ddf[id_field].compute().tolist() if id_field is not None else list(range(n))
    kept, index_row, jaccard = index._inner.dedup(
        fps, keys, ends - lengths, ends, hashes, k, threshold, None
    )
    keep = kept == np.arange(n)
    in_index = index_row >= 0
    rows = np.unique(index_row[in_index])
    named = dict(zip(rows.tolist(), index.ids_of(rows.tolist())))
    kept_id = [named[int(index_row[r])] if in_index[r] else ids[int(kept[r])] for r in range(n)]
    if update:
        index._append(Digest(fps, keys, (ends - lengths, ends, hashes)), ids, np.flatnonzero(keep))
    frame = pd.DataFrame(
        {
            "id": pd.Series(ids, dtype=object),
            "kept": keep,
            "kept_id": pd.Series(kept_id, dtype=object),
            "in_index": in_index,
            "jaccard": jaccard,
        }
    )
    pieces = [
        frame.iloc[offsets[i] : offsets[i + 1]].reset_index(drop=True)
        for i in range(len(offsets) - 1)
    ]
    aligned = _aligned(pieces, frame.iloc[:0])
    import dask.dataframe as dd

    kept_rows = dd.map_partitions(
        _kept_part, ddf, aligned, offsets, meta=ddf._meta, align_dataframes=False
    )
    if not clusters:
        return kept_rows
    table = dd.map_partitions(
        _table_part, ddf, aligned, meta=frame.iloc[:0], align_dataframes=False
    )
    return kept_rows, table
