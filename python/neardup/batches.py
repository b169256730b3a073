"""Engine-agnostic batch functions: the steps of a distributed dedup over numpy/Arrow batches.

A distributed engine (Dask here; Ray Data or Spark's ``mapInArrow`` later) runs the same five
steps, each a pure function of one batch:

1. :func:`fingerprint_batch`: texts -> ``uint64`` fingerprints (the Rust kernel, all cores).
2. :func:`table_keys`: (global rows, fingerprints) -> one key per table and row: the table number
   and the table's prefix of the permuted fingerprint. The engine shuffles the keys so that rows
   sharing a key meet in one batch.
3. :func:`group_edges`: the keys of a batch (whole groups) -> edges ``(src, dst, distance)``
   linking the near-duplicates inside each group, each linked pair once overall.
4. :func:`labels_from_edges`: edges -> cluster labels (label = smallest global row, as
   :func:`neardup.cluster`).
5. :func:`keep_mask`: labels -> which row of each cluster is kept (the rule of
   :func:`neardup.dedup`).

A plan travels to the workers as :func:`plan_spec` (plain ints, picklable) and is rebuilt there
with :func:`plan_from_spec`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dedup import Keep, select
from .hasher import Simhasher
from .index import Plan, _k

__all__ = [
    "fingerprint_batch",
    "group_edges",
    "hamming",
    "keep_mask",
    "labels_from_edges",
    "plan_from_spec",
    "plan_spec",
    "table_keys",
]

_MIX = np.uint64(0x9E3779B97F4A7C15)


def _array(x: Any, dtype: Any) -> np.ndarray:
    """A contiguous, aligned array (buffers deserialized from a shuffle can be misaligned,
    which the core refuses)."""
    a = np.asarray(x, dtype=dtype)
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = np.array(a, dtype=dtype, copy=True, order="C")
    return a


def hamming(a: Any, b: Any) -> np.ndarray:
    """Element-wise distances of two ``uint64`` arrays, as ``uint8``."""
    return _popcount(_array(a, np.uint64) ^ _array(b, np.uint64))


def plan_spec(plan: Plan) -> tuple[int, tuple[int, ...]]:
    """``(k, levels)``: what :func:`plan_from_spec` needs to rebuild ``plan`` on a worker."""
    return plan.k, tuple(plan.levels)


def plan_from_spec(spec: tuple[int, tuple[int, ...]]) -> Plan:
    k, levels = spec
    return Plan.blocks(levels[0], k=k) if len(levels) == 1 else Plan.nested(*levels, k=k)


def fingerprint_batch(texts: Any, hasher: Simhasher | None = None, *, where: str = "texts") -> np.ndarray:
    """Fingerprints of a batch of texts (a list, numpy array, pandas Series or Arrow array).

    A missing (None/NaN) or non-string text is a TypeError naming ``where`` and the row, so a
    worker's error tells which batch and which document went wrong.
    """
    hasher = Simhasher() if hasher is None else hasher
    module = type(texts).__module__ or ""
    if module.startswith("pandas"):
        values = texts.tolist()
    elif module.startswith("pyarrow"):
        values = texts.to_pylist()
    else:
        values = list(texts)
    if hasher.fields is None:
        for row, text in enumerate(values):
            if not isinstance(text, str):
                missing = text is None or type(text).__name__ in ("NAType", "NaTType") or (isinstance(text, float) and text != text)
                found = "missing (None/NaN)" if missing else f"{type(text).__name__} {text!r:.40}"
                raise TypeError(f"{where} row {row}: the text is {found}; expected str")
    return hasher.fingerprint_many(values, threads=1)


def table_keys(rows: np.ndarray, fingerprints: np.ndarray, plan: Plan) -> dict[str, np.ndarray]:
    """One key per table and row of the batch.

    Returns columns ``key`` (``uint64``: table and prefix mixed, to hash-partition on; rows with
    equal ``(table, prefix)`` have equal keys), ``table`` (``int16``), ``prefix`` (``uint64``, the
    table's prefix bits of the permuted fingerprint), ``row`` (``int64``) and ``fingerprint``
    (``uint64``), each ``len(rows) * len(plan.tables)`` long, table by table.
    """
    rows = _array(rows, np.int64)
    fps = _array(fingerprints, np.uint64)
    if len(rows) != len(fps):
        raise ValueError(f"rows and fingerprints differ in length: {len(rows)} and {len(fps)}")
    tables, prefixes = [], []
    for t, bits in enumerate(plan.prefix_bits):
        permuted = plan.permute(t, fps)
        prefixes.append(permuted >> np.uint64(64 - bits) if bits else np.zeros(len(fps), np.uint64))
        tables.append(np.full(len(fps), t, dtype=np.int16))
    n_tables = len(plan.prefix_bits)
    table = np.concatenate(tables) if tables else np.zeros(0, np.int16)
    prefix = np.concatenate(prefixes) if prefixes else np.zeros(0, np.uint64)
    with np.errstate(over="ignore"):
        key = (prefix * _MIX) ^ (table.astype(np.uint64) + np.uint64(1)) * np.uint64(0xBF58476D1CE4E5B9)
    return {
        "key": key,
        "table": table,
        "prefix": prefix,
        "row": np.tile(rows, n_tables),
        "fingerprint": np.tile(fps, n_tables),
    }


def _popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.uint8)
    x = x.astype(np.uint64)
    counts = np.zeros(len(x), dtype=np.uint8)
    for shift in range(0, 64, 8):
        counts += _BYTE_BITS[((x >> np.uint64(shift)) & np.uint64(0xFF)).astype(np.intp)]
    return counts


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def group_edges(
    table: np.ndarray, prefix: np.ndarray, rows: np.ndarray, fingerprints: np.ndarray, plan: Plan, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges linking the near-duplicates within the groups of a batch of table keys.

    The batch must hold whole groups (every key row of a ``(table, prefix)`` present in it);
    any number of groups, in any order. Returns ``(src, dst, distance)`` (``int64``, ``int64``,
    ``uint8``) with ``src > dst``:

    - each copy of a fingerprint is linked to the smallest row holding that fingerprint (from
      table 0 only; copies share every table's key), so n copies give n - 1 edges, not n(n-1)/2;
    - each pair of distinct fingerprints within ``k`` is linked between their smallest rows, by
      the first table whose prefix they agree on only, as :func:`neardup.find_all` reports a pair.

    Over the groups of every table these edges connect exactly the rows that the pairs of
    :func:`neardup.find_all` connect, each edge once.
    """
    k = _k(k)
    table = _array(table, np.int16)
    prefix = _array(prefix, np.uint64)
    rows = _array(rows, np.int64)
    fps = _array(fingerprints, np.uint64)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
    if len(rows) == 0:
        return empty
    order = np.lexsort((rows, fps, prefix, table))
    table, prefix, rows, fps = table[order], prefix[order], rows[order], fps[order]
    new_value = np.ones(len(rows), dtype=bool)
    new_value[1:] = (table[1:] != table[:-1]) | (prefix[1:] != prefix[:-1]) | (fps[1:] != fps[:-1])
    # Copies: each later row of a run of one fingerprint -> the run's first (smallest) row.
    first_of_run = np.maximum.accumulate(np.where(new_value, np.arange(len(rows)), 0))
    copies = (~new_value) & (table == 0)
    src_parts, dst_parts, dist_parts = [rows[copies]], [rows[first_of_run[copies]]], [np.zeros(int(copies.sum()), np.uint8)]
    # Distinct values: one entry (value, smallest row) per run, then pairs inside each group.
    t, p, r, f = table[new_value], prefix[new_value], rows[new_value], fps[new_value]
    new_group = np.ones(len(r), dtype=bool)
    new_group[1:] = (t[1:] != t[:-1]) | (p[1:] != p[:-1])
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(len(r)), 0))
    group_end = np.empty(len(r), dtype=np.int64)
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], len(r))
    group_end[:] = np.repeat(ends, ends - starts)
    del group_start
    masks = np.array([tb.prefix_mask for tb in plan.tables], dtype=np.uint64)
    active = np.flatnonzero(group_end - np.arange(len(r)) > 1)
    offset = 1
    while len(active):
        a, b = active, active + offset
        diff = f[a] ^ f[b]
        d = _popcount(diff)
        hit = d <= k
        if hit.any():
            a, b, diff, d = a[hit], b[hit], diff[hit], d[hit]
            # Report a pair only from the first table whose prefix it agrees on.
            first = np.full(len(a), len(masks), dtype=np.int64)
            for tt in range(len(masks) - 1, -1, -1):
                first[(diff & masks[tt]) == 0] = tt
            mine = first == t[a]
            a, b, d = a[mine], b[mine], d[mine]
            src_parts.append(np.maximum(r[a], r[b]))
            dst_parts.append(np.minimum(r[a], r[b]))
            dist_parts.append(d)
        offset += 1
        active = active[group_end[active] - active > offset]
    return np.concatenate(src_parts), np.concatenate(dst_parts), np.concatenate(dist_parts)


def labels_from_edges(src: np.ndarray, dst: np.ndarray, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of an edge list of global rows.

    Returns ``(vertices, labels)``: the sorted distinct rows met in an edge and the label of
    each, the smallest row of its component (as :func:`neardup.cluster`). With ``n`` given,
    returns ``(arange(n), labels)`` for all ``n`` rows instead (a row in no edge is its own
    label).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    vertices, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    inverse = inverse.reshape(-1)
    a, b = inverse[: len(src)], inverse[len(src) :]
    parent = np.arange(len(vertices), dtype=np.int64)
    # Hook and compress: every vertex points at the smallest label seen across its edges, then
    # jumps pointers, until nothing changes; labels only decrease, so this terminates.
    while True:
        low = np.minimum(parent[a], parent[b])
        new = parent.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        # Hook roots too, so components merge across label trees.
        np.minimum.at(new, parent[a], low)
        np.minimum.at(new, parent[b], low)
        while True:
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, parent):
            break
        parent = new
    labels = vertices[parent]
    if n is None:
        return vertices, labels
    full = np.arange(n, dtype=np.int64)
    full[vertices] = labels
    return full, full


def keep_mask(labels: np.ndarray, keep: Keep = "first", lengths: np.ndarray | None = None) -> np.ndarray:
    """The rows kept, one per cluster, by the rule of :func:`neardup.dedup` (``"first"`` or
    ``"longest"``, ties to the first).

    ``labels`` are cluster labels over rows ``0..n`` (label = smallest row of the cluster), or
    over any sorted subset of rows given as positions into it (see :func:`labels_from_edges`:
    pass ``np.searchsorted(vertices, labels)``).
    """
    if callable(keep):
        raise ValueError("keep_mask takes \"first\" or \"longest\"; a keep function needs the documents")
    if keep == "longest" and lengths is None:
        raise ValueError("keep=\"longest\" needs the documents' lengths")
    labels = np.asarray(labels, dtype=np.int64)
    return select(labels, keep, lengths)
