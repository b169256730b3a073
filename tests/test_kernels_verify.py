"""neardup.kernels.verify_pairs and verify_rows: the Jaccard of sketches read where they lie
(two Arrow arrays, slices, memory-mapped files), against the sets' Jaccard by brute force."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from neardup import kernels


def _sets(seed: int, n: int) -> list[list[int]]:
    """Sorted distinct hashes, few enough that a sketch is the whole set (exact Jaccard)."""
    rng = random.Random(seed)
    return [sorted(rng.sample(range(1, 60), rng.randint(0, 25))) for _ in range(n)]


def _array(sets: list[list[int]]) -> pa.Array:
    return pa.array(sets, pa.large_list(pa.from_numpy_dtype(kernels.SKETCH_DTYPE)))


def _jaccard(x: list[int], y: list[int]) -> float:
    union = set(x) | set(y)
    return len(set(x) & set(y)) / len(union) if union else 0.0


def test_verify_rows_reads_two_arrays_in_place(tmp_path):
    left, right = _sets(1, 40), _sets(2, 50)
    # Sliced arrays (an offset into their values) and a memory-mapped Arrow file.
    a = _array([[1, 2]] * 3 + left).slice(3)
    path = tmp_path / "b.arrow"
    table = pa.table({"sketch": _array(right)})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
        out.write_table(table)
    b = pa.ipc.open_file(pa.memory_map(str(path))).read_all().column("sketch")
    rng = np.random.default_rng(3)
    rows_a = rng.integers(0, len(left), 200)
    rows_b = rng.integers(0, len(right), 200)
    got = kernels.verify_rows(a, rows_a, b, rows_b)
    want = [_jaccard(left[i], right[j]) for i, j in zip(rows_a.tolist(), rows_b.tolist())]
    np.testing.assert_allclose(got, want)
    assert 0 < (np.asarray(want) > 0).sum() < len(want)
    # verify_pairs on the same pairs, gathered, agrees.
    np.testing.assert_allclose(kernels.verify_pairs(a.take(rows_a), b.take(rows_b)), want)
    with pytest.raises(ValueError, match="out of range"):
        kernels.verify_rows(a, np.array([len(left)]), b, np.array([0]))
    with pytest.raises(ValueError, match="1 rows on one side but 2"):
        kernels.verify_rows(a, np.array([0]), b, np.array([0, 1]))
