"""The same dedup on Dask: ``pip install neardup[dask]``.

:func:`fingerprint` adds a ``fingerprint`` column to a dask DataFrame; :func:`dedup` finds the
near-duplicates of a corpus spread over many machines and keeps one document of each cluster,
with the same kept documents and the same evidence as :func:`neardup.dedup` on one machine, for
any number of partitions and workers. It runs the steps of :mod:`neardup.pipeline`:

1. the workers read, normalize, fingerprint and sketch every partition (the text-heavy work,
   in the Rust kernel inside each task); each partition's digests stay on its worker;
2. the client gathers the fingerprints, content keys and lengths (28 bytes a document) and
   finds which documents have candidates (Manku's batch mode over the distinct fingerprints);
3. the client gathers the sketches of those documents only, and takes the stars in keep order
   (:func:`neardup.pipeline.stars`, the function every path runs);
4. per-partition tables of the result, aligned with the input's partitions, so the kept rows
   come out in input order without a shuffle.
"""

from __future__ import annotations

import time
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from neardup.batches import check_texts, fingerprint_batch
from neardup.digest import Digest, keys_of_columns, no_keys
from neardup.hasher import Simhasher, digest_many
from neardup.pipeline import SHORT, VERIFY, candidates, check_settings, keep_order, stars
from neardup.verify import SKETCH_SIZE, Sketches

from .deprecation import renamed
from .validate import integer

__all__ = ["dedup", "fingerprint", "local_cluster"]

_DIGEST_META = pd.DataFrame(
    {
        "fingerprint": pd.Series([], dtype=np.uint64),
        "key": pd.Series([], dtype=np.uint64),
        "key_hi": pd.Series([], dtype=np.uint64),
        "length": pd.Series([], dtype=np.int64),
        "shingles": pd.Series([], dtype=np.int64),
        "sketch": pd.Series([], dtype=object),
    }
)


def local_cluster(workers: int = 2, **options: Any) -> Any:
    """A ``distributed.LocalCluster`` of ``workers`` processes, one thread each, every port on
    127.0.0.1 and chosen by the system, no dashboard (use it in a ``with`` block)."""
    import logging

    from distributed import LocalCluster

    settings: dict[str, Any] = dict(
        n_workers=integer(workers, "workers", minimum=1),
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
        scheduler_kwargs={"dashboard": False},
        silence_logs=logging.ERROR,
    )
    settings.update(options)
    return LocalCluster(**settings)


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


def _number(partition_info: dict[str, Any] | None) -> int:
    return int(partition_info["number"]) if partition_info else 0


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


def _digest_part(
    part: pd.DataFrame,
    text_field: str,
    hasher: Simhasher,
    sketch: tuple[int, int] | None,
    partition_info: Any = None,
) -> pd.DataFrame:
    """Fingerprint, content key, length and (verified) sketch bytes of each row."""
    texts = part[text_field]
    where = f"partition {_number(partition_info)}, column {text_field!r},"
    values = texts.tolist()
    check_texts(values, where)
    digest = (
        digest_many(hasher, values, threads=1, sketch=sketch, name=where)
        if values
        else Digest(np.zeros(0, np.uint64), no_keys())
    )
    sketches: Any = None
    shingles = np.zeros(len(values), np.int64)
    if digest.sketches is not None:
        starts, ends, hashes = digest.sketches
        sketches = [hashes[a:b].tobytes() for a, b in zip(starts.tolist(), ends.tolist())]
        shingles = (ends - starts).astype(np.int64)
    lengths = texts.str.len().to_numpy(dtype=np.int64) if len(texts) else np.zeros(0, np.int64)
    return pd.DataFrame(
        {
            "fingerprint": digest.fingerprints,
            "key": digest.keys["lo"],
            "key_hi": digest.keys["hi"],
            "length": lengths,
            "shingles": shingles,
            "sketch": sketches,
        },
        index=pd.RangeIndex(len(values)),
    )


def _select_rows(
    part: pd.DataFrame, rows: np.ndarray, offsets: np.ndarray, partition_info: Any = None
) -> pd.DataFrame:
    """The rows of a partition whose global numbers are in ``rows`` (sorted), with their number."""
    i = _number(partition_info)
    start, end = int(offsets[i]), int(offsets[i + 1])
    local = rows[(rows >= start) & (rows < end)] - start
    return part.iloc[local].assign(row=local + start).reset_index(drop=True)


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


def _table_part(
    part: pd.DataFrame, result: pd.DataFrame, id_field: str | None, partition_info: Any = None
) -> pd.DataFrame:
    table = result.copy()
    if id_field is not None:
        table["id"] = part[id_field].to_numpy()
    return table[["id", "cluster", "kept", "kept_id", "jaccard", "distance"]]


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


@renamed(column="text_field", id_column="id_field")
def dedup(
    ddf: Any,
    text_field: str = "text",
    k: int | None = None,
    id_field: str | None = None,
    keep: str = "first",
    *,
    threshold: float | None | object = VERIFY,
    shingle: int = 3,
    hasher: Simhasher | None = None,
    clusters: bool = False,
    stats: dict[str, Any] | None = None,
) -> Any:
    """Keeps one document of each near-duplicate cluster of a dask DataFrame.

    The same kept documents and evidence as :func:`neardup.dedup` on the concatenated
    partitions, for any number of partitions and workers. The matching runs when this is called
    (the documents are read once to digest them; each partition's digests stay on its worker);
    the kept rows are a lazy DataFrame that reads the input again.

    Args:
        ddf: a dask DataFrame with the text in column ``text_field``.
        text_field: the column holding each document's text (str; a missing text is an error);
            ``column=`` is its old name, deprecated.
        k: the candidate radius, 0 to 16 (default 8; 3 with ``threshold=None``).
        id_field: the column of ids for the clusters table (default: global row numbers);
            ``id_column=`` is its old name, deprecated.
        keep: ``"first"`` or ``"longest"`` (ties to the first), as in :func:`neardup.dedup`.
        threshold: the least word-shingle Jaccard of a near-duplicate pair (default 0.8); None
            takes pairs on their fingerprints alone.
        shingle: words per shingle for ``threshold``.
        hasher: the fingerprint settings (default: ``Simhasher()``).
        clusters: also return the clusters table.
        stats: a dict to fill with ``documents``, ``candidates`` (documents whose sketches the
            client gathered) and the seconds of each stage (``seconds_digest``,
            ``seconds_stars``).

    Returns:
        the kept rows, a lazy dask DataFrame in input order; with ``clusters=True``,
        ``(kept, table)`` where ``table`` is a lazy dask DataFrame with one row per document:
        ``id``, ``cluster``, ``kept``, ``kept_id``, ``jaccard`` and ``distance``, as
        :meth:`neardup.DedupResult.to_pandas`.
    """
    k, threshold, shingle = check_settings(k, threshold, shingle)
    if callable(keep):
        raise ValueError(
            'keep must be "first" or "longest" on Dask; a keep function needs every document on one machine'
        )
    if keep not in ("first", "longest"):
        raise ValueError(f'keep must be "first" or "longest", got {keep!r}')
    hasher = _hasher(hasher)
    if hasher.fields is not None:
        raise ValueError(
            "neardup.dask.dedup fingerprints one text column; hasher.fields is not supported"
        )
    _check_frame(ddf, text_field, id_field)
    ddf = ddf.clear_divisions()
    clock = time.perf_counter()
    record: dict[str, Any] = stats if stats is not None else {}

    spec = (shingle, SKETCH_SIZE) if threshold is not None else None
    digests = ddf.map_partitions(
        _digest_part, text_field, hasher, spec, meta=_DIGEST_META
    ).persist()
    small = digests[["fingerprint", "key", "key_hi", "length", "shingles"]].compute()
    counts = np.asarray(digests.map_partitions(len).compute(), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    fps = small["fingerprint"].to_numpy(np.uint64)
    keys = keys_of_columns(small["key"].to_numpy(np.uint64), small["key_hi"].to_numpy(np.uint64))
    n = len(fps)
    record["documents"] = n
    record["seconds_digest"] = time.perf_counter() - clock
    clock = time.perf_counter()

    def gather(rows: np.ndarray) -> Sketches:
        """The sketches of ``rows`` (sorted), from the workers."""
        sketches = Sketches(hasher, shingle, threads=1)
        got = digests.map_partitions(
            _select_rows,
            rows,
            offsets,
            meta=_DIGEST_META.assign(row=pd.Series([], dtype=np.int64)),
            align_dataframes=False,
        ).compute()
        blobs = [np.frombuffer(b, dtype=np.uint64) for b in got["sketch"].tolist()]
        lengths = np.asarray([len(b) for b in blobs], dtype=np.uint64)
        ends = np.cumsum(lengths, dtype=np.uint64)
        hashes = np.concatenate(blobs) if blobs else np.zeros(0, np.uint64)
        sketches.add_sketches(got["row"].to_numpy(np.int64), ends - lengths, ends, hashes)
        return sketches

    def resketch(rows: np.ndarray) -> Sketches:
        record["candidates"] = len(rows)
        return gather(rows)

    # The short texts' whole shingle sets, for their candidates beyond k (pipeline.SHORT).
    shingles = small["shingles"].to_numpy(np.int64)
    short = (
        gather(np.flatnonzero((shingles > 0) & (shingles <= SHORT)).astype(np.int64))
        if threshold is not None and n
        else None
    )
    order = keep_order(keep, n, small["length"].to_numpy(np.int64))
    kept, jaccard = (
        stars(candidates(fps, keys, k, None, short, threshold), order, threshold, None, resketch)
        if n
        else (np.zeros(0, np.int64), np.zeros(0, np.float32))
    )
    record["seconds_stars"] = time.perf_counter() - clock
    result = neardup_result(fps, kept, jaccard, k, threshold)
    ids = np.arange(n, dtype=np.int64)
    kept_ids: Any = kept
    if id_field is not None and n:
        centers = np.unique(kept)
        got = (
            ddf[[id_field]]
            .map_partitions(
                _select_rows,
                centers,
                offsets,
                align_dataframes=False,
                meta=ddf._meta[[id_field]].assign(row=pd.Series([], dtype=np.int64)),
            )
            .compute()
        )
        by_row = pd.Series(got[id_field].to_numpy(), index=got["row"].to_numpy())
        kept_ids = by_row.loc[kept].to_numpy()
    frame = pd.DataFrame(
        {
            "id": ids,
            "cluster": result.cluster,
            "kept": result.keep,
            "kept_id": kept_ids,
            "jaccard": jaccard,
            "distance": result.distance.astype(np.int64),
        }
    )
    aligned, kept_rows = _split_by_partition(ddf, frame, offsets)
    if not clusters:
        return kept_rows
    meta = frame.iloc[:0].copy()
    if id_field is not None:
        meta["id"] = ddf._meta[id_field]
        meta["kept_id"] = ddf._meta[id_field]
    table = dd.map_partitions(
        _table_part, ddf, aligned, id_field, meta=meta, align_dataframes=False
    )
    return kept_rows, table


def neardup_result(
    fps: np.ndarray, kept: np.ndarray, jaccard: np.ndarray, k: int, threshold: float | None
) -> Any:
    from neardup.dedup_result import DedupResult

    return DedupResult(fps, kept, jaccard, k, {}, None, threshold)
