"""The steps of a dedup as kernels any engine can run on its own partitions.

:mod:`neardup.dask` drives them on Dask; a Ray Data or Spark job is another driver of the same
functions (docs/cluster.md shows one). Each kernel takes and gives plain columns (numpy arrays,
or an Arrow table for the first pass) of one partition, runs in the Rust core with the GIL
released, and never needs a row of another partition beyond those a shuffle brought it:

- :func:`digest_batch`: each document's fingerprint, content key and shingle sketch;
- :func:`search_plan`, :func:`bit_order` and :func:`table_keys`: the rows a document sends to
  the candidate search (one per lead group of the plan's tables, keyed by the group and the
  leading bits of its fingerprint);
- :func:`pairs_in_groups`: the pairs of fingerprints within ``k`` among the rows of some keys,
  each pair reported by one key only (the first table whose prefix it shares), so that the union
  over all keys is every pair within ``k``, once;
- :func:`short_text_keys` and :func:`pairs_in_runs`: the candidates of short texts, whatever
  their fingerprints (texts sharing a prefix hash of their shingle sets);
- :func:`rarity_counts`, :func:`prefix_keys`, :func:`pairs_in_runs` and :func:`split_runs`:
  the candidates of every text by prefix filtering (texts sharing one of the rarest hashes of
  their sketches, in an order counted on a sample), runs over the cap split further;
- :func:`verify_pairs`: the Jaccard of each candidate pair from the two sides' sketches;
- :func:`pairs_in_band` and :func:`shingle_sets`: the pairs whose estimate lies too near the
  threshold to decide them, and the whole shingle sets of their texts (read again), whose
  :func:`verify_pairs` at ``size=WHOLE`` is their exact Jaccard;
- :func:`graph_stars`: the stars of verified pairs, component by component in keep order.

Greedy stars depend only on the verified pairs inside a connected component, so a driver that
cuts the verified pairs into components (label propagation by joins, say) and takes each
component's stars apart finds the kept documents and the evidence of :func:`neardup.dedup`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core, first_pass
from .chunks import refuse_mapping
from .first_pass import _gathered, digest_batch
from .hasher import Simhasher
from .verify import SKETCH_SIZE, WHOLE, Sketches, in_band

__all__ = [
    "SKETCH_DTYPE",
    "KEY_COLUMNS",
    "KEY_DTYPE",
    "SHORT",
    "RUN_CAP",
    "digest_batch",
    "search_plan",
    "bit_order",
    "table_keys",
    "key_groups",
    "pairs_in_groups",
    "short_text_keys",
    "pairs_in_runs",
    "rarity_counts",
    "frequent_hashes",
    "prefix_keys",
    "split_runs",
    "verify_pairs",
    "verify_rows",
    "pairs_in_band",
    "shingle_sets",
    "WHOLE",
    "sketch_bytes",
    "take_sketches",
    "graph_stars",
]

#: The dtype of a sketch's hashes (the core's): the one place the drivers take it from.
SKETCH_DTYPE = first_pass.SKETCH_DTYPE
#: A content key (the XXH3-128 of a normalized text) is two columns of a table: its low and its
#: high 64 bits.
KEY_COLUMNS = ("key", "key_hi")
#: The dtype of each of a content key's two columns.
KEY_DTYPE = np.dtype(np.uint64)
#: The most word shingles of a short text (see :mod:`neardup.pipeline`).
SHORT: int = _core.SHORT_TEXT_SHINGLES
#: A prefix hash that begins more short texts than this proposes none of them.
RUN_CAP: int = _core.SHORT_TEXT_RUN_CAP


def _array(values: Any, dtype: Any) -> np.ndarray:
    """``values`` as a C-contiguous, aligned array of ``dtype`` (what the core reads): columns
    that come out of a shuffle may be views of Arrow buffers at any offset."""
    return np.require(np.asarray(values, dtype), dtype, ["C_CONTIGUOUS", "ALIGNED"])


def _arrow() -> Any:
    import pyarrow as pa

    return pa


def search_plan(k: int, n: int) -> Any:
    """The plan of tables of a candidate search at radius ``k`` over ``n`` fingerprints: that
    of :func:`neardup.dedup` on one machine (every machine of a cluster must use the same)."""
    return _core.Plan.choose(k, max(int(n), 1), batch=True)


def bit_order(sample: np.ndarray, plan: Any) -> list[int] | None:
    """The order of the fingerprints' bits the search runs in, chosen from a ``sample`` of the
    distinct fingerprints (every machine must use the same; None, the identity, finds the same
    pairs with more work)."""
    values = np.unique(np.asarray(sample, np.uint64))
    order = list(_core.search_bit_order(values, plan))
    return None if order == list(range(63, -1, -1)) else order


def table_keys(
    fingerprints: np.ndarray, plan: Any, order: list[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(index, key)``: the rows a fingerprint sends to the search, one per lead group of
    ``plan`` (``index`` is the position of its fingerprint in ``fingerprints``). Rows of one key
    meet in one partition for :func:`pairs_in_groups`. A fingerprint of 0 (a text without
    features) proposes nothing: leave it out."""
    fps = _array(fingerprints, np.uint64)
    keys, groups = _core.part_keys(fps, plan, order)
    index = np.repeat(np.arange(len(fps), dtype=np.int64), groups)
    return index, keys


def key_groups(keys: np.ndarray) -> np.ndarray:
    """The lead group of each key from :func:`table_keys` (0 to the plan's lead groups - 1)."""
    return np.asarray(keys, np.uint32) >> np.uint32(_core.PART_KEY_LEAD_BITS)


def pairs_in_groups(
    keys: np.ndarray,
    fingerprints: np.ndarray,
    k: int,
    plan: Any,
    order: list[int] | None = None,
    max_pairs: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(a, b, count)``: the pairs of distinct fingerprints ``a < b`` within ``k`` that the
    given rows' keys report (rows from :func:`table_keys`; every row of a key must be there).
    Over all keys, every pair within ``k`` once. Past ``max_pairs`` pairs, none are returned,
    only their exact ``count``."""
    a, b, count = _core.part_pairs(
        _array(keys, np.uint32),
        _array(fingerprints, np.uint64),
        k,
        plan,
        order,
        max_pairs,
    )
    return a, b, int(count)


def _ranges(sketches: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, hashes) of sketches as an Arrow list array, or as a binary array of the
    hashes' bytes (:func:`sketch_bytes`)."""
    pa = _arrow()
    if isinstance(sketches, pa.ChunkedArray):
        if sketches.num_chunks == 1:
            sketches = sketches.chunk(0)
        elif sketches.num_chunks:
            sketches = pa.concat_arrays(sketches.chunks)
        else:
            sketches = pa.array([], pa.large_list(pa.from_numpy_dtype(SKETCH_DTYPE)))
    if pa.types.is_binary(sketches.type) or pa.types.is_large_binary(sketches.type):
        wide = pa.types.is_large_binary(sketches.type)
        buffers = sketches.buffers()
        offsets = np.frombuffer(buffers[1], np.int64 if wide else np.int32)
        offsets = offsets[sketches.offset : sketches.offset + len(sketches) + 1].astype(np.int64)
        data = (
            np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
        )
        width = SKETCH_DTYPE.itemsize
        hashes = _array(data[: len(data) // width * width].view(SKETCH_DTYPE), SKETCH_DTYPE)
        return (
            (offsets[:-1] // width).astype(np.uint64),
            (offsets[1:] // width).astype(np.uint64),
            hashes,
        )
    offsets = np.asarray(sketches.offsets, np.int64)
    hashes = _array(sketches.values, SKETCH_DTYPE)
    return offsets[:-1].astype(np.uint64), offsets[1:].astype(np.uint64), hashes


def take_sketches(sketches: Any, rows: np.ndarray) -> Any:
    """The sketches of ``rows`` (positions in ``sketches``, an Arrow list or binary array), in
    that order, as an Arrow binary array of their hashes' bytes (:func:`sketch_bytes`)."""
    starts, ends, hashes = _ranges(sketches)
    rows = np.asarray(rows, np.int64)
    first, last = starts[rows].astype(np.int64), ends[rows].astype(np.int64)
    return _binary(first, last, hashes)


def _binary(first: np.ndarray, last: np.ndarray, hashes: np.ndarray) -> Any:
    """Sketch i = ``hashes[first[i]:last[i]]``, gathered into an Arrow binary array."""
    pa = _arrow()
    offsets, flat = _gathered(first, last, hashes)
    return pa.Array.from_buffers(
        pa.large_binary(),
        len(first),
        [None, pa.py_buffer(offsets * SKETCH_DTYPE.itemsize), pa.py_buffer(flat.view(np.uint8))],
    )


def sketch_bytes(sketches: Any) -> Any:
    """Sketches (an Arrow list array) as an Arrow binary array of their hashes' bytes, which
    every engine's shuffle carries (the kernels take either)."""
    starts, ends, hashes = _ranges(sketches)
    return _binary(starts.astype(np.int64), ends.astype(np.int64), hashes)


def short_text_keys(
    sketches: Any, threshold: float, fingerprints: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(index, hash)``: the prefix hashes of the short texts among ``sketches`` (an Arrow list
    array; texts of at most ``SHORT`` shingles), enough that two texts at Jaccard >=
    ``threshold`` share one. Texts whose fingerprint is 0 (no features) are left out."""
    starts, ends, hashes = _ranges(sketches)
    # A set of one or two shingles ends with a check of each (the top bit set): not shingles.
    checks = np.concatenate([[0], np.cumsum(hashes >= np.uint64(_core.SKETCH_CHECK_BIT))])
    lengths = (ends - starts).astype(np.int64) - (checks[ends] - checks[starts])
    short = (lengths > 0) & (lengths <= SHORT)
    if fingerprints is not None:
        short &= np.asarray(fingerprints, np.uint64) != 0
    rows = np.flatnonzero(short)
    n = lengths[rows]
    # n - ceil(t n) + 1 hashes, the ceiling taken a hair low (as the core cuts them).
    overlap = np.maximum(np.ceil(threshold * n.astype(np.float64) - 1e-9), 1.0).astype(np.int64)
    take = np.clip(n + 1 - overlap, 1, np.maximum(n, 1))
    index = np.repeat(rows, take)
    first = np.repeat(np.cumsum(take) - take, take)
    at = starts[index].astype(np.int64) + (np.arange(len(index)) - first)
    return index.astype(np.int64), hashes[at]


def pairs_in_runs(
    hashes: np.ndarray, nodes: np.ndarray, split: Any = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(a, b, skipped)``: the pairs a < b of distinct ``nodes`` that share a hash (rows from
    :func:`short_text_keys` or :func:`prefix_keys`; every row of a hash must be there), sorted,
    each once however many hashes it shares. A hash of more than ``RUN_CAP`` nodes is handed to
    ``split(hashes, nodes)`` (one row per node and such hash; :func:`split_runs` with the
    nodes' sketches), which returns ``(a, b, skipped)`` the same way; without ``split``, its
    pairs are not listed but counted in ``skipped``."""
    a, b, skipped, _ = _run_pairs(hashes, nodes, split)
    return a, b, skipped


def _run_pairs(
    hashes: np.ndarray, nodes: np.ndarray, split: Any = None
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """:func:`pairs_in_runs`, and how many pairs the runs list, a pair counted once for each
    hash it shares (those of the split runs once each): the candidate pairs a driver reports."""
    hashes = np.asarray(hashes)
    if hashes.dtype != np.uint64:
        hashes = hashes.astype(np.int64).view(np.uint64)
    a, b, listed, over_hashes, over_nodes = _core.run_pairs(
        _array(hashes, np.uint64), _array(nodes, np.int64), RUN_CAP
    )
    skipped = 0
    if len(over_nodes):
        if split is None:
            starts = np.flatnonzero(np.concatenate([[True], over_hashes[1:] != over_hashes[:-1]]))
            m = np.diff(np.append(starts, len(over_hashes))).astype(np.int64)
            skipped = int((m * (m - 1) // 2).sum())
        else:
            sa, sb, skipped = split(over_hashes, over_nodes)
            sa, sb = np.asarray(sa, np.int64), np.asarray(sb, np.int64)
            listed += len(sa)
            x, y = np.concatenate([a, sa]), np.concatenate([b, sb])
            order = np.lexsort((y, x))
            x, y = x[order], y[order]
            # (No pair at all when the split runs hold none and no run was under the cap.)
            once = np.ones(len(x), bool)
            once[1:] = (x[1:] != x[:-1]) | (y[1:] != y[:-1])
            a, b = x[once], y[once]
    return a, b, int(skipped), int(listed)


def _offsets(sizes: np.ndarray) -> np.ndarray:
    """0, 1, ..., m - 1 for each run of size m, one after the other."""
    total = int(sizes.sum())
    firsts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.arange(total, dtype=np.int64) - firsts


def rarity_counts(sketches: Any, budget: int = 1 << 21) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, counts)``: how many of ``sketches`` (an Arrow list or binary array) hold each
    shingle hash, sketch after sketch until ``budget`` hashes are counted. Summed over the
    partitions of a corpus and cut by :func:`frequent_hashes`, the table of the rarity order
    every machine uses (any order finds every pair; a sample's makes fewer candidates)."""
    starts, ends, hashes = _ranges(sketches)
    return _core.rarity_counts(starts, ends, _array(hashes, np.uint64), int(budget))


def frequent_hashes(hashes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hashes counted twice or more, and their counts: the table :func:`prefix_keys` takes."""
    held = np.asarray(counts) >= 2
    return (
        _array(np.asarray(hashes)[held], np.uint64),
        _array(np.asarray(counts)[held], np.uint32),
    )


def _lists(
    sketches: Any,
    table: Any,
    threshold: float,
    size: int,
    band: float,
    skip: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, hashes, sizes, alone) of the sketches' prefix lists (the core's
    prefix_lists): ``table`` is ``(hashes, counts)`` or a ``_core.RarityOrder`` built from them
    once. Rows where ``skip`` is true get an empty list (of size 0), at no cost."""
    starts, ends, hashes = _ranges(sketches)
    if skip is not None:
        # An empty range is a sketch of no shingles, whose list the core skips.
        ends = np.where(skip, starts, ends)
    order = (
        table
        if isinstance(table, _core.RarityOrder)
        else (_array(table[0], np.uint64), _array(table[1], np.uint32))
    )
    lengths, listed, sizes, alone = _core.prefix_lists(
        starts,
        ends,
        _array(hashes, np.uint64),
        order,
        threshold,
        size,
        band,
    )
    ends_at = np.cumsum(lengths, dtype=np.uint64)
    return ends_at - lengths.astype(np.uint64), ends_at, listed, sizes, alone


def prefix_keys(
    sketches: Any,
    table: tuple[np.ndarray, np.ndarray] | _core.RarityOrder,
    threshold: float,
    fingerprints: np.ndarray | None = None,
    size: int = SKETCH_SIZE,
    band: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(index, hash)``: the prefix hashes of every text among ``sketches`` (an Arrow list
    array), rarest first in the order of ``table`` (:func:`frequent_hashes`): enough that two
    texts whose estimate is at least ``threshold`` (or ``threshold - band`` when a sketch is cut
    at ``size``) share one. Texts whose fingerprint is 0 (no features) are left out, and so are
    the hashes no other text holds, when ``table`` is a ``_core.RarityOrder`` made with
    ``every_text`` (a hash of one text is shared by no pair)."""
    skip = None if fingerprints is None else np.asarray(fingerprints, np.uint64) == 0
    starts, ends, listed, sizes, alone = _lists(sketches, table, threshold, size, band, skip)
    n = sizes.astype(np.int64)
    # n - need + 1 hashes, need = min(ceil(t n), ceil((t - band) size)) taken a hair low.
    need = np.ceil(threshold * n.astype(np.float64) - 1e-9)
    if band > 0:
        need = np.minimum(need, max(np.ceil((threshold - band) * size - 1e-9), 0.0))
    take = np.clip(n + 1 - np.maximum(need, 1.0).astype(np.int64), 1, np.maximum(n, 1))
    take[n == 0] = 0
    # Each list's first `alone` hashes are held by no other text: not posted.
    first = np.minimum(alone.astype(np.int64), take)
    take = take - first
    index = np.repeat(np.arange(len(n), dtype=np.int64), take)
    at = (starts + first.astype(np.uint64))[index].astype(np.int64) + _offsets(take)
    return index, listed[at]


def split_runs(
    hashes: np.ndarray,
    nodes: np.ndarray,
    sketches: Any,
    table: tuple[np.ndarray, np.ndarray],
    threshold: float,
    size: int = SKETCH_SIZE,
    band: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(a, b, skipped)``: the candidate pairs of runs over the cap (rows ``(hashes[i],
    nodes[i])``, every node of each hash), each split by the next hashes of its nodes' lists
    until no part is over the cap (as :func:`neardup.dedup` splits them); ``sketches`` holds
    the sketch of each distinct node in ascending order (``numpy.unique(nodes)``). Pairs of
    groups that cannot be split are counted in ``skipped``."""
    nodes = np.asarray(nodes, np.int64)
    distinct, local = np.unique(nodes, return_inverse=True)
    starts, ends, listed, sizes, _ = _lists(sketches, table, threshold, size, band)
    if len(starts) != len(distinct):
        raise ValueError(f"{len(distinct)} nodes but {len(starts)} sketches")
    a, b, skipped = _core.split_run_pairs(
        _array(hashes, np.uint64),
        _array(local, np.uint32),
        starts,
        ends,
        listed,
        sizes,
        threshold,
        size,
        band,
    )
    return distinct[a], distinct[b], int(skipped)


def verify_pairs(sketches_a: Any, sketches_b: Any, size: int = SKETCH_SIZE) -> np.ndarray:
    """The Jaccard similarity (float64) of each pair's two sketches (Arrow list or binary arrays
    of equal length: pair p's are ``sketches_a[p]`` and ``sketches_b[p]``), as :func:`neardup.dedup`
    computes it; a pair is a near-duplicate when it is at least the threshold."""
    sa, ea, ha = _ranges(sketches_a)
    sb, eb, hb = _ranges(sketches_b)
    if len(sa) != len(sb):
        raise ValueError(f"{len(sa)} sketches on one side but {len(sb)} on the other")
    return _core.sketch_jaccard_zip(sa, ea, ha, sb, eb, hb, size, 1)


def verify_rows(
    sketches_a: Any,
    rows_a: np.ndarray,
    sketches_b: Any,
    rows_b: np.ndarray,
    size: int = SKETCH_SIZE,
) -> np.ndarray:
    """The Jaccard similarity (float64) of ``sketches_a[rows_a[p]]`` and ``sketches_b[rows_b[p]]``
    for each pair p: :func:`verify_pairs` of the sketches where they lie (say two memory-mapped
    digest files), none copied; only the pages of those rows are read."""
    rows_a, rows_b = np.asarray(rows_a, np.int64), np.asarray(rows_b, np.int64)
    if len(rows_a) != len(rows_b):
        raise ValueError(f"{len(rows_a)} rows on one side but {len(rows_b)} on the other")
    sa, ea, ha = _row_ranges(sketches_a, rows_a)
    sb, eb, hb = _row_ranges(sketches_b, rows_b)
    return _core.sketch_jaccard_zip(sa, ea, ha, sb, eb, hb, size, 1)


def _row_ranges(sketches: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, hashes) of the sketches of ``rows`` (an Arrow list array of one chunk,
    else as :func:`_ranges`): the hashes are the array's own buffer, not a copy, and only the
    offsets of ``rows`` are read."""
    pa = _arrow()
    if isinstance(sketches, pa.ChunkedArray) and sketches.num_chunks == 1:
        sketches = sketches.chunk(0)
    n = len(sketches)
    if len(rows) and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"a row is out of range for {n} sketches")
    if isinstance(sketches, pa.Array) and (
        pa.types.is_large_list(sketches.type) or pa.types.is_list(sketches.type)
    ):
        wide = pa.types.is_large_list(sketches.type)
        offsets = np.frombuffer(sketches.buffers()[1], np.int64 if wide else np.int32)
        offsets = offsets[sketches.offset : sketches.offset + n + 1]
        data = sketches.buffers()[3]
        hashes = (
            np.frombuffer(data, SKETCH_DTYPE) if data is not None else np.zeros(0, SKETCH_DTYPE)
        )
        # The offsets count from the values' own start, which a slice may have moved.
        base = np.uint64(sketches.values.offset)
        starts = offsets[rows].astype(np.uint64) + base
        ends = offsets[rows + 1].astype(np.uint64) + base
        return starts, ends, _array(hashes, SKETCH_DTYPE)
    starts, ends, hashes = _ranges(sketches)
    return starts[rows], ends[rows], hashes


def pairs_in_band(
    sketches_a: Any,
    sketches_b: Any,
    jaccard: np.ndarray,
    threshold: float,
    size: int = SKETCH_SIZE,
    *,
    rows_a: np.ndarray | None = None,
    rows_b: np.ndarray | None = None,
) -> np.ndarray:
    """Which pairs :func:`verify_pairs` (``jaccard``) cannot decide, as :func:`neardup.dedup`
    would not: a sketch of the pair is cut (holds ``size`` hashes, so the Jaccard is an
    estimate) and the estimate lies within :func:`~neardup.verify.estimate_band` of
    ``threshold``. Decide them on :func:`shingle_sets` (docs/evidence.md). With ``rows_a`` and
    ``rows_b``, the pairs are those of :func:`verify_rows`."""
    if rows_a is None or rows_b is None:
        sa, ea, _ = _ranges(sketches_a)
        sb, eb, _ = _ranges(sketches_b)
    else:
        sa, ea, _ = _row_ranges(sketches_a, np.asarray(rows_a, np.int64))
        sb, eb, _ = _row_ranges(sketches_b, np.asarray(rows_b, np.int64))
    cut = ((ea - sa).astype(np.int64) >= size) | ((eb - sb).astype(np.int64) >= size)
    return in_band(jaccard, cut, threshold, size)


def shingle_sets(texts: Any, hasher: Simhasher | None = None, *, shingle: int = 3) -> Any:
    """The whole word-``shingle`` sets of ``texts`` (any sequence of str, or an Arrow string
    array), as an Arrow binary array of their hashes' bytes: :func:`verify_pairs` of two of them
    at ``size=WHOLE`` is their exact Jaccard, as :func:`neardup.dedup` computes it for a pair
    whose estimate lies near the threshold."""
    pa = _arrow()
    refuse_mapping(texts, "texts")
    if isinstance(texts, pa.ChunkedArray | pa.Array):
        texts = texts.to_pylist()
    values = list(texts)
    sets = Sketches(hasher, shingle, size=WHOLE, threads=1)
    sets.add(np.arange(len(values), dtype=np.int64), values)
    _, starts, ends, hashes = sets.parts()
    return _binary(starts.astype(np.int64), ends.astype(np.int64), hashes)


def graph_stars(
    nodes: np.ndarray,
    rank: tuple[np.ndarray, ...],
    a: np.ndarray,
    b: np.ndarray,
    jaccard: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(kept, jaccard)`` per node: the stars of the verified pairs ``(a[e], b[e])`` (with
    Jaccard ``jaccard[e]``; NaN for pairs taken on their fingerprints alone) among ``nodes``
    (distinct), taken in keep order: by ``rank`` (columns, the first deciding, as
    ``numpy.lexsort`` reads them last first: give ``(secondary, primary)``), smallest first.
    The first node not yet taken is kept and takes every node not yet taken that shares a pair
    with it. Give whole connected components of the pairs (any number of them): their stars are
    those of the whole corpus."""
    nodes = np.asarray(nodes, np.int64)
    order = np.lexsort(rank).astype(np.int64) if len(nodes) else np.zeros(0, np.int64)
    sort = np.argsort(nodes, kind="stable")
    sorted_nodes = nodes[sort]

    def local(v: np.ndarray) -> np.ndarray:
        at = np.searchsorted(sorted_nodes, np.asarray(v, np.int64))
        if len(v) and (at.max() >= len(nodes) or (sorted_nodes[at] != v).any()):
            raise ValueError("a pair names a node that is not given")
        return sort[at].astype(np.uint32)

    kept, jac = _core.graph_stars(order, local(a), local(b), _array(jaccard, np.float32))
    return nodes[kept], jac
