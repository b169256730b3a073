"""A dask DataFrame deduplicated against a dedup index (:class:`neardup.DedupIndex`):
``pip install neardup[dask]``.

The index file lies on storage every worker can read. Each partition's task opens it itself,
memory-mapped (once per worker process while the file is unchanged; the client sends its path,
never the index), digests the partition with the index's settings and searches it against the
index: a document's first near-duplicate in the index depends on no other new document, so this
part of the answer is final on the worker. The client then gathers the digests of the documents
left (fingerprint, content key and compact sketch: 92 bytes a document by default) and
deduplicates them among themselves in one batch, in partition order, as
:func:`neardup.against.dedup_against` does after its search of the index; the answer is the single
machine's for any partitioning. With ``update``, the client appends the kept documents to the
index file. The kept rows come out per partition, in input order, without a shuffle.
"""

from __future__ import annotations

import os
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup.against import Batch, DedupIndex, Matches, _digest_docs
from neardup.batches import check_texts
from neardup.dask import _check_frame, _number
from neardup.digest import keys_of_columns
from neardup.index import DEFAULT_MAX_PAIRS
from neardup.validate import check_k
from neardup.verify import check_threshold

__all__ = ["dedup_against"]

#: The index each worker process has open: (path, device, inode, size, mtime) -> index.
_OPENED: dict[tuple[Any, ...], DedupIndex] = {}

_SEARCH_META = pd.DataFrame(
    {
        "fingerprint": pd.Series(dtype=np.uint64),
        "key": pd.Series(dtype=np.uint64),
        "key_hi": pd.Series(dtype=np.uint64),
        "len": pd.Series(dtype=np.uint32),
        "words": pd.Series(dtype=object),
        "index_row": pd.Series(dtype=np.int64),
        "jaccard": pd.Series(dtype=np.float32),
    }
)


def _opened(path: str) -> DedupIndex:
    """The index at ``path``, opened once per worker process while the file is the same."""
    st = os.stat(path)
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    index = _OPENED.get(key)
    if index is None:
        _OPENED.clear()
        index = _OPENED[key] = DedupIndex.open(path)
    return index


def _search_part(
    part: pd.DataFrame,
    text_field: str,
    path: str,
    k: int,
    threshold: float,
    limit: bool,
    partition_info: Any = None,
) -> pd.DataFrame:
    """A partition's digests and, per row, the index document it duplicates (-1: none) and
    their Jaccard, from the index the worker opens."""
    index = _opened(path)
    values = part[text_field].tolist()
    check_texts(values, f"partition {_number(partition_info)}, column {text_field!r},")
    batch, _ = _digest_docs(
        values,
        index.hasher,
        index.shingle,
        index.sketch_bytes,
        index.sketch_bits,
        None,
        None,
        1,
    )
    found = index.search(
        batch, k=k, threshold=threshold, threads=1, max_pairs=DEFAULT_MAX_PAIRS if limit else None
    )
    w = index.sketch_bytes // 4
    words = batch.words.reshape(-1, w) if len(values) else np.zeros((0, w), np.uint32)
    return pd.DataFrame(
        {
            "fingerprint": batch.fingerprints,
            "key": batch.keys["lo"],
            "key_hi": batch.keys["hi"],
            "len": batch.lens,
            "words": [row.tobytes() for row in words],
            "index_row": found.index_row,
            "jaccard": np.where(found.in_index, found.jaccard, np.float32(1)),
        },
        index=pd.RangeIndex(len(values)),
    )


def _table_part(
    part: pd.DataFrame, result: pd.DataFrame, partition_info: Any = None
) -> pd.DataFrame:
    return result[["id", "kept", "kept_id", "in_index", "jaccard"]]


def dedup_against(
    ddf: Any,
    index: DedupIndex | str | os.PathLike[str],
    text_field: str = "text",
    id_field: str | None = None,
    *,
    k: int | None = None,
    threshold: float | None = None,
    update: bool = False,
    clusters: bool = False,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
) -> Any:
    """The rows of ``ddf`` that are not near-duplicates of a document of ``index`` or of an
    earlier row (in partition order), as :func:`neardup.dedup` with ``against=index`` on the
    concatenated partitions.

    Args:
        ddf: a dask DataFrame with the text in column ``text_field``.
        index: the dedup index or its path, a file every worker can read at that path.
        id_field: the column of ids of the rows (default: global row numbers); with ``update`` they are
            stored in the index, so they must be of its kind (strings or integers).
        k, threshold: default to the index's.
        update: append the kept rows to the index file (atomically).
        clusters: also return a table with one row per document: ``id``, ``kept``, ``kept_id``
            (the document it duplicates, itself when kept), ``in_index`` and ``jaccard``.
        max_pairs: None lifts the bound on each search's work (see :meth:`DedupIndex.search`).

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
    path = os.path.abspath(index.path)
    parts = ddf.map_partitions(
        _search_part, text_field, path, k, threshold, max_pairs is not None, meta=_SEARCH_META
    ).persist()
    counts = np.asarray(parts.map_partitions(len).compute(), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    got = parts.compute()
    n = len(got)
    batch = Batch(
        got["fingerprint"].to_numpy(np.uint64),
        keys_of_columns(got["key"].to_numpy(np.uint64), got["key_hi"].to_numpy(np.uint64)),
        got["len"].to_numpy(np.uint32),
        np.frombuffer(b"".join(got["words"].tolist()), dtype=np.uint32).copy()
        if n
        else np.zeros(0, np.uint32),
    )
    index_row = got["index_row"].to_numpy(np.int64)
    jaccard = got["jaccard"].to_numpy(np.float32).copy()
    del got
    # The documents left, among themselves, in row order: what the single machine's search does
    # after the index.
    left = np.flatnonzero(index_row < 0)
    alone = DedupIndex._empty(
        index.hasher, k, threshold, index.shingle, index.sketch_bytes, index.sketch_bits, False
    )
    among = alone.search(batch.take(left), max_pairs=max_pairs)
    kept = np.full(n, -1, np.int64)
    kept[left] = left[among.kept]
    jaccard[left] = among.jaccard
    found = Matches(kept, index_row, jaccard)
    ids: list[Any] = ddf[id_field].compute().tolist() if id_field is not None else list(range(n))
    keep = found.keep
    if update:
        index._append(batch, ids, np.flatnonzero(keep))
    # The ids keep the column's type (a Parquet table needs one); row numbers are integers.
    id_type: Any = ddf._meta[id_field].dtype if id_field is not None else np.int64
    kept_type = id_type if id_field is not None or not index.string_ids else object
    frame = pd.DataFrame(
        {
            "id": pd.Series(ids, dtype=id_type),
            "kept": keep,
            "kept_id": pd.Series(found.kept_ids(index, ids), dtype=kept_type),
            "in_index": found.in_index,
            "jaccard": found.jaccard,
        }
    )
    aligned, kept_rows = _split_by_partition(ddf, frame, offsets)
    if not clusters:
        return kept_rows
    table = dd.map_partitions(
        _table_part, ddf, aligned, meta=frame.iloc[:0], align_dataframes=False
    )
    return kept_rows, table


# The answer, computed on the client, cut along the input's partitions.


def _kept_part(
    part: pd.DataFrame, result: pd.DataFrame, offsets: np.ndarray, partition_info: Any = None
) -> pd.DataFrame:
    i = _number(partition_info)
    if len(part) != int(offsets[i + 1]) - int(offsets[i]):
        raise RuntimeError(
            f"partition {i} has {len(part)} rows now but had {int(offsets[i + 1]) - int(offsets[i])} "
            "when fingerprinted: the input changed"
        )
    return part[result["kept"].to_numpy(bool)]


def _client() -> Any:
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _aligned(pieces: list[pd.DataFrame], meta: pd.DataFrame) -> Any:
    """A dask DataFrame whose partition i is ``pieces[i]`` (scattered when a cluster runs)."""
    client = _client()
    parts = client.scatter(pieces) if client is not None else [dask.delayed(p) for p in pieces]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def _split_by_partition(ddf: Any, frame: pd.DataFrame, offsets: Any) -> tuple[Any, Any]:
    """``frame`` (one row a document, in order) cut along ``ddf``'s partitions (its rows
    ``offsets[i]:offsets[i + 1]``) as a dask DataFrame, and the kept rows of each partition."""
    pieces = [
        frame.iloc[offsets[i] : offsets[i + 1]].reset_index(drop=True)
        for i in range(len(offsets) - 1)
    ]
    aligned = _aligned(pieces, frame.iloc[:0])
    kept_rows = dd.map_partitions(
        _kept_part, ddf, aligned, offsets, meta=ddf._meta, align_dataframes=False
    )
    return aligned, kept_rows
