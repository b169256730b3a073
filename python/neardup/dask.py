"""The same dedup on Dask: ``pip install neardup[dask]``.

:func:`fingerprint` adds a ``fingerprint`` column to a dask DataFrame; :func:`dedup` finds the
near-duplicate clusters of a corpus spread over many machines and keeps one document of each,
with the same clusters and the same kept documents as :func:`neardup.dedup` on one machine, for
any number of partitions and workers.

How :func:`dedup` runs (each step one of the engine-agnostic functions of
:mod:`neardup.batches`, mapped over partitions):

1. fingerprint every partition (the Rust kernel inside each task) and keep only
   ``(fingerprint, length)`` per document on the cluster: 8 or 16 bytes a document;
2. number the rows globally (partition offsets), so a cluster's label is its smallest row as on
   one machine;
3. emit one key per table of the plan and row, shuffle the keys so rows sharing a key meet,
   and link the near-duplicates inside each group (exact copies to their first row, other
   pairs from the first table whose prefix they agree on); each partition's edges are reduced
   to a spanning forest (at most one edge a row) before they leave it;
4. connected components: when the edges fit (``max_edges``) they are collected and labelled
   on the client; otherwise labels propagate on the cluster (min label over neighbours, then
   pointer jumping) until nothing changes;
5. the keep rule, and per-partition tables of the rows in a cluster of two or more, aligned
   with the input's partitions, so the kept rows come out in input order without a shuffle.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

import dask
import dask.dataframe as dd

from neardup import _core
from neardup.batches import fingerprint_batch, group_edges, hamming, labels_from_edges, plan_from_spec, plan_spec, table_keys
from neardup.dedup import select
from neardup.hasher import Simhasher
from neardup.index import Plan, _int, _k

__all__ = ["dedup", "fingerprint", "local_cluster"]

#: Edges collected on the client when there are at most this many (24 bytes each); above it,
#: connected components are computed on the cluster by label propagation.
MAX_EDGES = 50_000_000

_INFO_META = pd.DataFrame(
    {
        "row": pd.Series([], dtype=np.int64),
        "cluster": pd.Series([], dtype=np.int64),
        "kept": pd.Series([], dtype=bool),
        "kept_fingerprint": pd.Series([], dtype=np.uint64),
    }
)


def local_cluster(workers: int = 2, **options: Any) -> Any:
    """A ``distributed.LocalCluster`` of ``workers`` processes, one thread each, every port on
    127.0.0.1 and chosen by the system, no dashboard (use it in a ``with`` block)."""
    import logging

    from distributed import LocalCluster

    settings: dict[str, Any] = dict(
        n_workers=_int(workers, "workers", minimum=1), threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
        scheduler_kwargs={"dashboard": False}, silence_logs=logging.ERROR,
    )
    settings.update(options)
    return LocalCluster(**settings)


def _hasher(hasher: Any) -> Simhasher:
    if hasher is None:
        return Simhasher()
    if not isinstance(hasher, Simhasher):
        raise TypeError(f"hasher must be a neardup.Simhasher, got {type(hasher).__name__}")
    return hasher


def _check_frame(ddf: Any, column: str, id_column: str | None = None) -> None:
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(ddf).__name__} (dask.dataframe.from_pandas makes one)")
    for name, what in ((column, "column"), (id_column, "id_column")):
        if name is not None and name not in ddf.columns:
            raise KeyError(f"{what} {name!r} is not a column of the DataFrame (columns: {list(ddf.columns)})")


def _number(partition_info: dict[str, Any] | None) -> int:
    return int(partition_info["number"]) if partition_info else 0


def _add_fingerprints(part: pd.DataFrame, column: str, hasher: Simhasher, partition_info: Any = None) -> pd.DataFrame:
    fps = fingerprint_batch(part[column], hasher, where=f"partition {_number(partition_info)}, column {column!r},")
    return part.assign(fingerprint=fps)


def fingerprint(ddf: Any, column: str = "text", hasher: Simhasher | None = None) -> Any:
    """The DataFrame with a ``fingerprint`` column (``uint64``) of the text in ``column``.

    Lazy: each partition is fingerprinted in its own task, by the Rust kernel. A missing or
    non-string text fails the task with a TypeError naming the partition and row.
    """
    hasher = _hasher(hasher)
    _check_frame(ddf, column)
    meta = ddf._meta.assign(fingerprint=pd.Series([], dtype=np.uint64))
    return ddf.map_partitions(_add_fingerprints, column, hasher, meta=meta)


# -- the steps of dedup, one partition each -------------------------------------------------------


def _fingerprint_part(part: pd.DataFrame, column: str, hasher: Simhasher, partition_info: Any = None) -> pd.DataFrame:
    texts = part[column]
    fps = fingerprint_batch(texts, hasher, where=f"partition {_number(partition_info)}, column {column!r},")
    lengths = texts.str.len().to_numpy(dtype=np.int64) if len(texts) else np.zeros(0, np.int64)
    return pd.DataFrame({"fingerprint": fps, "length": lengths})


def _keys_part(part: pd.DataFrame, offsets: np.ndarray, spec: Any, partition_info: Any = None) -> pd.DataFrame:
    start = int(offsets[_number(partition_info)])
    rows = np.arange(start, start + len(part), dtype=np.int64)
    keys = table_keys(rows, part["fingerprint"].to_numpy(np.uint64), plan_from_spec(spec))
    return pd.DataFrame(keys)


def _edges_part(part: pd.DataFrame, spec: Any, k: int) -> pd.DataFrame:
    """The partition's edges, reduced to a spanning forest: each row linked to the smallest row
    of its component within this partition (the same components, at most one edge a row)."""
    src, dst, _ = group_edges(
        part["table"].to_numpy(), part["prefix"].to_numpy(), part["row"].to_numpy(),
        part["fingerprint"].to_numpy(), plan_from_spec(spec), k,
    )
    vertices, labels = labels_from_edges(src, dst)
    linked = vertices != labels
    return pd.DataFrame({"src": vertices[linked], "dst": labels[linked]})


def _vertex_attributes(part: pd.DataFrame, vertices: pd.DataFrame, offsets: np.ndarray, partition_info: Any = None) -> pd.DataFrame:
    """Fingerprint and length of the partition's rows that are vertices (given in ``vertices``)."""
    start = int(offsets[_number(partition_info)])
    local = vertices["row"].to_numpy(np.int64) - start
    return vertices.assign(
        fingerprint=part["fingerprint"].to_numpy(np.uint64)[local],
        length=part["length"].to_numpy(np.int64)[local],
    )


def _kept_part(part: pd.DataFrame, info: pd.DataFrame, offsets: np.ndarray, partition_info: Any = None) -> pd.DataFrame:
    start = int(offsets[_number(partition_info)])
    if len(info) and (len(part) != int(offsets[_number(partition_info) + 1]) - start):
        raise RuntimeError(
            f"partition {_number(partition_info)} has {len(part)} rows now but had "
            f"{int(offsets[_number(partition_info) + 1]) - start} when fingerprinted: the input changed"
        )
    drop = info["row"].to_numpy(np.int64)[~info["kept"].to_numpy(bool)] - start
    mask = np.ones(len(part), dtype=bool)
    mask[drop] = False
    return part[mask]


def _table_part(
    part: pd.DataFrame, fps: pd.DataFrame, info: pd.DataFrame, offsets: np.ndarray, id_column: str | None,
    partition_info: Any = None,
) -> pd.DataFrame:
    start = int(offsets[_number(partition_info)])
    n = len(fps)
    rows = np.arange(start, start + n, dtype=np.int64)
    cluster = rows.copy()
    kept = np.ones(n, dtype=bool)
    fp = fps["fingerprint"].to_numpy(np.uint64)
    kept_fp = fp.copy()
    local = info["row"].to_numpy(np.int64) - start
    cluster[local] = info["cluster"].to_numpy(np.int64)
    kept[local] = info["kept"].to_numpy(bool)
    kept_fp[local] = info["kept_fingerprint"].to_numpy(np.uint64)
    ids = part[id_column].to_numpy() if id_column is not None else rows
    distance = hamming(fp, kept_fp).astype(np.int64) if n else np.zeros(0, np.int64)
    return pd.DataFrame({"id": ids, "cluster": cluster, "kept": kept, "distance": distance})


# -- connected components ---------------------------------------------------------------------


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


def _split(frame: pd.DataFrame, offsets: np.ndarray) -> list[pd.DataFrame]:
    rows = frame["row"].to_numpy(np.int64)
    cuts = np.searchsorted(rows, offsets)
    return [frame.iloc[cuts[i] : cuts[i + 1]].reset_index(drop=True) for i in range(len(offsets) - 1)]


def _info_collected(edges: pd.DataFrame, fps: Any, offsets: np.ndarray, keep: str) -> Any:
    vertices, labels = labels_from_edges(edges["src"].to_numpy(), edges["dst"].to_numpy())
    frame = pd.DataFrame({"row": vertices})
    vertex_pieces = _aligned(_split(frame, offsets), frame.iloc[:0])
    attrs = dd.map_partitions(
        _vertex_attributes, fps, vertex_pieces, offsets,
        meta=frame.iloc[:0].assign(fingerprint=pd.Series([], dtype=np.uint64), length=pd.Series([], dtype=np.int64)),
        align_dataframes=False,
    ).compute()
    compact = np.searchsorted(vertices, labels)
    mask = select(compact, keep, attrs["length"].to_numpy(np.int64))
    kept_row = np.zeros(len(vertices), dtype=np.int64)
    kept_row[compact[mask]] = np.flatnonzero(mask)
    info = pd.DataFrame(
        {
            "row": vertices,
            "cluster": labels,
            "kept": mask,
            "kept_fingerprint": attrs["fingerprint"].to_numpy(np.uint64)[kept_row[compact]],
        }
    )
    return _aligned(_split(info, offsets), _INFO_META)


def _min_label(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["label"] = np.minimum(frame["label"].to_numpy(), frame["other"].fillna(frame["label"]).to_numpy(np.int64))
    return frame.drop(columns="other")


def _propagate(edges: Any, record: dict[str, Any]) -> Any:
    """(vertex, label) on the cluster: label = smallest row of the vertex's component."""
    both = dd.concat([edges[["src", "dst"]], edges[["dst", "src"]].rename(columns={"dst": "src", "src": "dst"})])
    both = both.persist()
    labels = both[["src"]].drop_duplicates().rename(columns={"src": "vertex"})
    labels = labels.assign(label=labels["vertex"]).persist()
    record["iterations"] = 0
    while True:
        record["iterations"] += 1
        old = labels.rename(columns={"label": "old"})
        # The smallest label among each vertex's neighbours.
        reach = both.merge(labels, left_on="dst", right_on="vertex")[["src", "label"]]
        low = reach.groupby("src")["label"].min().to_frame("other").reset_index().rename(columns={"src": "vertex"})
        step = old.merge(low, on="vertex", how="left").rename(columns={"old": "label"})
        step = step.map_partitions(_min_label, meta=pd.DataFrame({"vertex": pd.Series([], dtype=np.int64), "label": pd.Series([], dtype=np.int64)}))
        # Pointer jumping: a vertex takes its label's label.
        jump = step.rename(columns={"vertex": "label", "label": "other"})
        step = step.merge(jump, on="label", how="left")
        step = step.map_partitions(_min_label, meta=pd.DataFrame({"vertex": pd.Series([], dtype=np.int64), "label": pd.Series([], dtype=np.int64)}))
        labels = step.persist()
        compare = labels.merge(old, on="vertex")
        changed = int((compare["label"] != compare["old"]).sum().compute())
        if changed == 0:
            return labels


def _by_partition(frame: Any, offsets: np.ndarray, meta: pd.DataFrame) -> Any:
    """``frame`` (a ``row`` column) range-partitioned like the input: partition i holds the
    rows of input partition i, in order; empty input partitions get empty partitions."""
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    out = [dask.delayed(meta.copy)() for _ in range(len(offsets) - 1)]
    if len(nonempty):
        divisions = tuple(int(offsets[i]) for i in nonempty) + (int(offsets[-1]) - 1,)
        ranged = frame.set_index("row", divisions=divisions).reset_index()[list(meta.columns)]
        for part, i in zip(ranged.to_delayed(), nonempty):
            out[i] = part
    return dd.from_delayed(out, meta=meta, verify_meta=False)


def _info_propagated(edges: Any, fps: Any, offsets: np.ndarray, keep: str, record: dict[str, Any]) -> Any:
    labels = _propagate(edges, record)
    by_row = _by_partition(
        labels.rename(columns={"vertex": "row"}), offsets,
        pd.DataFrame({"row": pd.Series([], dtype=np.int64), "label": pd.Series([], dtype=np.int64)}),
    )
    attrs = dd.map_partitions(
        _vertex_attributes, fps, by_row, offsets,
        meta=pd.DataFrame({"row": pd.Series([], dtype=np.int64), "label": pd.Series([], dtype=np.int64),
                           "fingerprint": pd.Series([], dtype=np.uint64), "length": pd.Series([], dtype=np.int64)}),
        align_dataframes=False,
    ).persist()
    if keep == "first":
        best = attrs[["label"]].drop_duplicates().assign(kept_row=lambda f: f["label"])
    else:
        longest = attrs.groupby("label")["length"].max().to_frame("longest").reset_index()
        top = attrs.merge(longest, on="label")
        top = top[top["length"] == top["longest"]]
        best = top.groupby("label")["row"].min().to_frame("kept_row").reset_index()
    kept_fp = attrs[["row", "fingerprint"]].rename(columns={"row": "kept_row", "fingerprint": "kept_fingerprint"})
    best = best.merge(kept_fp, on="kept_row")
    info = attrs.merge(best, on="label")
    info = info.assign(kept=info["row"] == info["kept_row"]).rename(columns={"label": "cluster"})
    return _by_partition(info[["row", "cluster", "kept", "kept_fingerprint"]], offsets, _INFO_META)


def dedup(
    ddf: Any,
    column: str = "text",
    k: int = 3,
    id_column: str | None = None,
    keep: str = "first",
    *,
    hasher: Simhasher | None = None,
    clusters: bool = False,
    max_edges: int = MAX_EDGES,
    plan: Plan | None = None,
    stats: dict[str, Any] | None = None,
) -> Any:
    """Keeps one document of each near-duplicate cluster of a dask DataFrame.

    The same clusters and kept documents as :func:`neardup.dedup` on the concatenated
    partitions, for any number of partitions and workers. The matching runs when this is
    called (the documents are read once to fingerprint them; ``(fingerprint, length)`` of each
    document stays on the cluster); the kept rows are a lazy DataFrame that reads the input again.

    Args:
        ddf: a dask DataFrame with the text in ``column``.
        column: the column holding each document's text (str; a missing text is an error).
        k: the largest distance of a near-duplicate pair, 0 to 16.
        id_column: the column of ids for the clusters table (default: global row numbers).
        keep: ``"first"`` or ``"longest"`` (ties to the first), as in :func:`neardup.dedup`.
        hasher: the fingerprint settings (default: ``Simhasher()``).
        clusters: also return the clusters table.
        max_edges: collect the near-duplicate edges on the client when there are at most this
            many; otherwise compute connected components on the cluster.
        plan: the table layout (default: the batch plan for the corpus size).
        stats: a dict to fill with what the matching did: ``documents``, ``tables``,
            ``keys`` (rows shuffled), ``key_bytes`` (their in-memory size), ``edges`` (after
            each partition's reduction to a spanning forest),
            ``components`` ("collected" or "propagated", with its ``iterations``) and the seconds of each stage
            (``seconds_fingerprint``, ``seconds_match``, ``seconds_components``).

    Returns:
        the kept rows, a lazy dask DataFrame in input order; with ``clusters=True``,
        ``(kept, table)`` where ``table`` is a lazy dask DataFrame with one row per document:
        ``id``, ``cluster`` (its cluster's smallest global row), ``kept`` and ``distance`` (to the
        kept document), as :meth:`neardup.DedupResult.to_pandas`.
    """
    k = _k(k)
    if callable(keep):
        raise ValueError("keep must be \"first\" or \"longest\" on Dask; a keep function needs every document on one machine")
    if keep not in ("first", "longest"):
        raise ValueError(f"keep must be \"first\" or \"longest\", got {keep!r}")
    hasher = _hasher(hasher)
    if hasher.fields is not None:
        raise ValueError("neardup.dask.dedup fingerprints one text column; hasher.fields is not supported")
    max_edges = _int(max_edges, "max_edges", minimum=0)
    _check_frame(ddf, column, id_column)
    ddf = ddf.clear_divisions()
    clock = time.perf_counter()
    record: dict[str, Any] = stats if stats is not None else {}

    fps = ddf.map_partitions(
        _fingerprint_part, column, hasher,
        meta=pd.DataFrame({"fingerprint": pd.Series([], dtype=np.uint64), "length": pd.Series([], dtype=np.int64)}),
    ).persist()
    counts = np.asarray(fps.map_partitions(len).compute(), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = int(offsets[-1])
    record["documents"] = n
    record["seconds_fingerprint"] = time.perf_counter() - clock
    clock = time.perf_counter()
    if plan is None:
        plan = Plan(_core.Plan.choose(k, n, None, True))
    elif not isinstance(plan, Plan) or plan.k < k:
        raise ValueError(f"plan must be a neardup.Plan built for k >= {k}")
    spec = plan_spec(plan)

    keys = fps.map_partitions(
        _keys_part, offsets, spec,
        meta=pd.DataFrame({"key": pd.Series([], dtype=np.uint64), "table": pd.Series([], dtype=np.int16),
                           "prefix": pd.Series([], dtype=np.uint64), "row": pd.Series([], dtype=np.int64),
                           "fingerprint": pd.Series([], dtype=np.uint64)}),
    )
    groups = keys.shuffle(on="key", npartitions=fps.npartitions)
    edges = groups.map_partitions(
        _edges_part, spec, k,
        meta=pd.DataFrame({"src": pd.Series([], dtype=np.int64), "dst": pd.Series([], dtype=np.int64)}),
    ).persist()
    n_edges = int(edges.map_partitions(len).compute().sum())
    record.update(tables=len(plan.tables), keys=n * len(plan.tables), edges=n_edges,
                  key_bytes=n * len(plan.tables) * sum(dtype.itemsize for dtype in keys._meta.dtypes))
    record["seconds_match"] = time.perf_counter() - clock
    clock = time.perf_counter()
    if n_edges <= max_edges:
        info = _info_collected(edges.compute(), fps, offsets, keep)
        record["components"] = "collected"
    else:
        info = _info_propagated(edges, fps, offsets, keep, record).persist()
        record["components"] = "propagated"
    if _client() is not None:
        from distributed import wait

        wait(info)
    record["seconds_components"] = time.perf_counter() - clock

    kept = dd.map_partitions(_kept_part, ddf, info, offsets, meta=ddf._meta, align_dataframes=False)
    if not clusters:
        return kept
    ids = ddf[[id_column]] if id_column is not None else fps
    table_meta = pd.DataFrame(
        {
            "id": ddf._meta[id_column] if id_column is not None else pd.Series([], dtype=np.int64),
            "cluster": pd.Series([], dtype=np.int64),
            "kept": pd.Series([], dtype=bool),
            "distance": pd.Series([], dtype=np.int64),
        }
    )
    table = dd.map_partitions(_table_part, ids, fps, info, offsets, id_column, meta=table_meta, align_dataframes=False)
    return kept, table
