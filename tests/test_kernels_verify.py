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


def test_digest_batch_keeps_the_whole_sets_of_the_cut_sketches():
    """With ``whole=True`` the sketches are those of ``whole=False``, and each text whose
    sketch is cut also gets its whole shingle set (as ``shingle_sets`` makes it from the text),
    the others none (their sketch is their whole set)."""
    rng = random.Random(5)
    words = [f"w{i}" for i in range(5000)]
    # Short, long, a copy of a long one, empty, and one of exactly as many shingles as a sketch
    # holds (3-shingles of distinct words: one per word but the first two).
    texts = [" ".join(rng.choices(words, k=rng.choice([5, 200, 1500, 3000]))) for _ in range(12)]
    texts += [texts[2], "", " ".join(words[:1026])]
    plain = kernels.digest_batch(texts)
    table = kernels.digest_batch(texts, whole=True)
    assert table.column("sketch").to_pylist() == plain.column("sketch").to_pylist()
    assert table.column("fingerprint").equals(plain.column("fingerprint"))
    sketches = table.column("sketch").to_pylist()
    shingles = table.column("shingles").to_pylist()
    sets = kernels.shingle_sets(texts)
    for i in range(len(texts)):
        whole = np.frombuffer(sets[i].as_py(), kernels.SKETCH_DTYPE).tolist()
        if whole and not sketches[i]:  # a copy: its first occurrence holds both
            assert shingles[i] == []
        elif len(whole) >= 1024:
            assert shingles[i] == whole and sketches[i] == whole[:1024]
        else:
            assert shingles[i] == [] and sketches[i] == whole
    cut = [len(s) for s in shingles if s]
    assert len(cut) >= 3 and min(cut) == 1024 and max(cut) > 2 * 1024


def test_digest_batch_reads_an_arrow_column_where_it_lies(monkeypatch):
    """An Arrow column of strings gives the table its Python strings give, its ASCII texts
    digested by the core in Arrow's buffers: only the others (here the accented and the CJK
    texts) are read into Python and digested there, in their rows."""
    from neardup import hasher as hasher_module

    texts = ["The quick brown fox jumps", "caf\u00e9 au lait, tr\u00e8s chaud", "", "a b"]
    texts += [
        "The QUICK brown fox jumps",
        "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
        "x " * 700,
    ]
    want = kernels.digest_batch(texts, whole=True)
    read: list[str] = []
    real = hasher_module.digest_many

    def spy(hasher, docs, **options):
        read.extend(docs)
        return real(hasher, docs, **options)

    monkeypatch.setattr("neardup.first_pass.digest_many", spy)
    # Offsets of a sliced column, and a column in two chunks, are read as they lie too.
    for column in (
        pa.array(["pad", *texts]).slice(1),
        pa.chunked_array([texts[:3], texts[3:]], pa.large_string()),
    ):
        read.clear()
        got = kernels.digest_batch(column, whole=True)
        assert got.equals(want)
        assert read == [texts[1], texts[5]]
    # A null is no text: the column goes the Python way, which names it.
    with pytest.raises(TypeError):
        kernels.digest_batch(pa.array(["a b c", None]))


@pytest.mark.parametrize("order", ["made", "shuffled"])
def test_sketches_taken_are_the_lists_asked_for(order):
    """take_sketches gathers rows' lists end to end, whether they follow each other where they
    lie (a batch as the core made it, copied a run at a time) or come in any order (hash by
    hash): against each list read on its own."""
    # Long lists are copied a run at a time, short ones in any order hash by hash.
    sets = [s * (40 if order == "made" else 1) for s in _sets(7, 300)]
    array = _array(sets)
    rows = np.arange(len(sets))
    if order == "shuffled":
        rows = np.random.default_rng(8).permutation(rows)
    else:  # as made, with a few rows left out and one taken twice (breaks in the runs)
        rows = np.r_[rows[:100], rows[103:250], 249, rows[250:]]
    got = kernels.take_sketches(array, rows)
    want = [np.asarray(sets[r], kernels.SKETCH_DTYPE).tobytes() for r in rows.tolist()]
    assert got.to_pylist() == want
