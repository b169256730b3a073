"""Step 4 of a Dask dedup, verification: each candidate pair routed to the task of one of its
texts' partitions, checked there once on the sketches read where they lie in the digest files,
and the pairs whose estimate lies near the threshold decided on their exact shingle sets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from neardup import _core, kernels
from neardup.verify import SKETCH_SIZE, estimate_band, in_band

from .digest import _sketch_column, _whole_sets
from .frames import _CHECKED_META, _COMPARED, _EDGE_META, _IN_BAND, _partition_of


def _pair_blocks(
    a: np.ndarray, b: np.ndarray, starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int, int]]]:
    """Pairs (a[p], b[p]) of global rows (either way round, repeats possible), each once as
    ``a < b`` (a text paired with itself left out), ordered by the partitions of their two texts
    (the core's one sort): ``(a, b, blocks)``, each block ``(lo, hi, i, j)`` the pairs ``lo:hi``
    of a text of partition i and one of partition j, in ascending order of (i, j)."""
    a, b, blocks = _core.pair_blocks(
        kernels._array(a, np.int64), kernels._array(b, np.int64), kernels._array(starts, np.int64)
    )
    return a, b, [(lo, hi, i, j) for lo, hi, i, j in blocks.reshape(-1, 4).tolist()]


def _pair_nodes(
    pairs: pd.DataFrame, starts: np.ndarray, take: Callable[[int, np.ndarray], Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[Any]]:
    """A task's candidate pairs (columns ``a`` and ``b``, global rows of any partitions; they
    may repeat), each once: ``(a, b, at_a, at_b, pieces)``, where the texts of the pairs are
    gathered from the partitions they lie in, each partition's file opened once: ``pieces`` are
    ``take(j, rows)`` of the rows of each j-th partition with rows (in ascending order of the
    texts), and pair i's texts are the ``at_a[i]``-th and ``at_b[i]``-th of them."""
    nodes, at_a, at_b = _core.local_pairs(
        kernels._array(pairs["a"], np.int64), kernels._array(pairs["b"], np.int64)
    )
    at_a, at_b = at_a.astype(np.int64), at_b.astype(np.int64)
    of = _partition_of(starts, nodes)
    bounds = [*np.flatnonzero(np.diff(of) != 0) + 1]
    pieces = [
        take(int(of[lo]), nodes[lo:hi] - starts[of[lo]])
        for lo, hi in zip([0, *bounds], [*bounds, len(nodes)])
        if lo < hi
    ]
    return nodes[at_a], nodes[at_b], at_a, at_b, pieces


def _verify_part(
    pairs: pd.DataFrame, parts: list[int], starts: np.ndarray, folder: str, threshold: float
) -> tuple[pd.DataFrame, int]:
    """A task's candidate pairs (``a``, ``b``: global rows, any partitions; they may repeat),
    each once, verified: (a, b, jaccard, band) of those at Jaccard >= ``threshold`` and of those
    whose estimate lies too near it to decide them (``band``: see
    :func:`neardup.kernels.pairs_in_band`), and the number of pairs compared. The sketches
    are read where they lie, in the memory-mapped digest files, nothing copied: the pairs go by
    the partitions of their two texts, two files mapped at a time (a task of pairs routed by
    :func:`_routed_part` keeps its own partition's mapped while it reads the others one by
    one)."""
    a, b, blocks = _pair_blocks(pairs["a"], pairs["b"], starts)
    got = np.zeros(len(a), np.float64)
    cut = np.zeros(len(a), bool)
    # Pairs below the threshold (below its band when a sketch is cut) are refused early, most
    # after a few hashes, those whose sizes alone rule them out before the first: -1.
    floor = max(threshold - estimate_band(threshold, SKETCH_SIZE), 0.0)
    files: dict[int, Any] = {}
    for lo, hi, i, j in blocks:
        # The block's two files; those of the block before are let go unless still needed.
        files = {f: files[f] if f in files else _sketch_column(f, parts, folder) for f in (i, j)}
        mine = kernels._row_ranges(files[i], a[lo:hi] - starts[i])
        theirs = kernels._row_ranges(files[j], b[lo:hi] - starts[j])
        n = hi - lo
        at = np.arange(n, dtype=np.int64)
        got[lo:hi] = _core.sketch_jaccard_parts(
            [mine, theirs], at, at + n, SKETCH_SIZE, threshold, floor, 1
        )
        cut[lo:hi] = (mine[1] - mine[0] >= SKETCH_SIZE) | (theirs[1] - theirs[0] >= SKETCH_SIZE)
        del mine, theirs
    del files
    band = in_band(got, cut, threshold, SKETCH_SIZE)
    near = (got >= threshold) | band
    kept = pd.DataFrame(
        {"a": a[near], "b": b[near], "jaccard": got[near].astype(np.float32), "band": band[near]}
    )
    return kept, len(a)


def _routed_part(found: pd.DataFrame, starts: np.ndarray) -> pd.DataFrame:
    """A task's candidate pairs (``a < b``, and count rows ``a < 0``), each with the partition
    that takes it in step 4 (``part``): that of ``a`` or of ``b``, as a bit of the pair's hash
    says, so that every copy of a pair meets in one task and the tasks get even shares (a
    pair's first text lies more often in an early partition). Count rows go to partition 0."""
    a = kernels._array(found["a"], np.int64)
    b = kernels._array(found["b"], np.int64)
    part = _core.routed_pairs(a, b, kernels._array(starts, np.int64))
    return pd.DataFrame({"a": a, "b": b, "part": part}, copy=False)


def _checked_part(
    found: pd.DataFrame,
    verify_part: Callable[..., tuple[pd.DataFrame, int]],
    parts: list[int],
    starts: np.ndarray,
    folder: str,
    threshold: float,
) -> pd.DataFrame:
    """The candidate pairs routed here (:func:`_routed_part`, with count rows ``(a < 0,
    count)``), each once, verified by ``verify_part``: the pairs it keeps (a, b, jaccard, band),
    the count rows as they came, a row ``(_IN_BAND, count)`` of the kept pairs in the band, and
    a row ``(_COMPARED, count)`` of the pairs compared (every copy of a pair comes here)."""
    marks = found["a"].to_numpy(np.int64) < 0
    checked, compared = verify_part(found[~marks][["a", "b"]], parts, starts, folder, threshold)
    counts = pd.concat(
        [
            found[marks][["a", "b"]],
            pd.DataFrame(
                {
                    "a": [_IN_BAND, _COMPARED],
                    "b": [int(checked["band"].to_numpy(bool).sum()), compared],
                }
            ),
        ],
        ignore_index=True,
    )
    tail = counts.assign(jaccard=np.float32(np.nan), band=False)
    return pd.concat([checked[list(_CHECKED_META.columns)], tail], ignore_index=True).astype(
        _CHECKED_META.dtypes.to_dict()
    )


def _unique_pairs_part(found: pd.DataFrame) -> pd.DataFrame:
    """The candidate pairs routed here (:func:`_routed_part`), each once, with no Jaccard
    (near-duplicates on their fingerprints alone), and the count rows as they came."""
    marks = found["a"].to_numpy(np.int64) < 0
    once = found[~marks].drop_duplicates(["a", "b"])
    return pd.concat([once, found[marks]], ignore_index=True)[["a", "b"]].assign(
        jaccard=np.float32(np.nan)
    )


def _exact_part(
    pairs: pd.DataFrame,
    parts: list[int],
    starts: np.ndarray,
    folder: str,
    threshold: float,
) -> pd.DataFrame:
    """The pairs (a, b) here decided on their exact Jaccards: (a, b, jaccard) of those at
    ``threshold`` or more. Each text's whole shingle set is read where it lies, from the
    memory-mapped digest files (the ``shingles`` of a text whose sketch is cut, else its
    sketch, which is then whole), one pair of files at a time: nothing moves but the pairs."""
    a, b, blocks = _pair_blocks(
        pairs["a"].to_numpy(np.int64), pairs["b"].to_numpy(np.int64), starts
    )
    got = np.zeros(len(a), np.float64)
    mine: tuple[int, Any] = (-1, None)
    for lo, hi, i, j in blocks:
        if mine[0] != i:
            mine = (i, _whole_sets(i, parts, folder))
        theirs = mine[1] if j == i else _whole_sets(j, parts, folder)
        got[lo:hi] = _exact_rows(
            mine[1], a[lo:hi] - int(starts[i]), theirs, b[lo:hi] - int(starts[j])
        )
        del theirs
    near = got >= threshold
    return pd.DataFrame({"a": a[near], "b": b[near], "jaccard": got[near].astype(np.float32)})


def _exact_rows(
    mine: tuple[Any, Any], rows_a: np.ndarray, theirs: tuple[Any, Any], rows_b: np.ndarray
) -> np.ndarray:
    """The exact Jaccards of the whole sets of ``rows_a`` (in ``mine``: sketch and shingles
    columns) and ``rows_b`` (in ``theirs``): each side's ``shingles`` when its sketch is cut,
    else its sketch (whole); read where they lie."""
    cut_a = _cut(mine[0], rows_a)
    cut_b = _cut(theirs[0], rows_b)
    got = np.zeros(len(rows_a), np.float64)
    for side_a in (False, True):
        for side_b in (False, True):
            at = (cut_a == side_a) & (cut_b == side_b)
            if at.any():
                got[at] = kernels.verify_rows(
                    mine[int(side_a)], rows_a[at], theirs[int(side_b)], rows_b[at], kernels.WHOLE
                )
    return got


def _cut(sketches: Any, rows: np.ndarray) -> np.ndarray:
    """Whether the sketches of ``rows`` are cut (hold ``SKETCH_SIZE`` hashes)."""
    import pyarrow.compute as pc

    lengths = pc.list_value_length(sketches.take(rows)).to_numpy(zero_copy_only=False)
    return np.asarray(lengths, np.int64) >= SKETCH_SIZE


def _exact_in_band(
    band: Any, threshold: float, parts: list[int], starts: np.ndarray, folder: str
) -> Any:
    """The pairs ``band`` (a, b) decided on their exact Jaccards, as :func:`neardup.dedup`
    decides a pair whose estimate lies near the threshold: (a, b, jaccard) of those at
    ``threshold`` or more. The whole shingle sets were written beside the sketches at digest
    time; each partition of ``band`` reads those of its pairs where they lie, no shuffle.
    ``starts``: the first row of each partition with rows. Nothing goes to the client."""
    return band.map_partitions(_exact_part, parts, starts, folder, threshold, meta=_EDGE_META)
