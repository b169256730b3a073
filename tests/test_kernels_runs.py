"""The pairs of one task's prefix rows (neardup.kernels.pairs_in_runs), the Jaccard of sketches
lying in several buffers (the core's sketch_jaccard_parts) and the rows moved through the
scratch folder (neardup.dask.exchange), each against a brute-force computation."""

from __future__ import annotations

import itertools
import os
import random
from collections import Counter, defaultdict

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import _core, kernels
from neardup.dask.exchange import destinations, discard, exchange, word_bounds
from neardup.dask.spill import spill_file
from neardup.dask.verification import _pair_blocks, _routed_part


def _brute_pairs(hashes, nodes, cap):
    """Every pair of distinct nodes of each hash of at most ``cap`` nodes; the pair count with
    a pair once a hash; the pairs of the larger runs."""
    by_hash = defaultdict(set)
    for h, v in zip(hashes, nodes):
        by_hash[h].add(v)
    pairs, listed, over = set(), 0, 0
    for members in by_hash.values():
        m = len(members)
        if m > cap:
            over += m * (m - 1) // 2
            continue
        for x, y in itertools.combinations(sorted(members), 2):
            pairs.add((x, y))
            listed += 1
    return sorted(pairs), listed, over


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-(2**63), 2**63 - 1) | st.integers(0, 6), st.integers(-3, 40)),
        max_size=120,
    )
)
def test_pairs_in_runs_is_every_pair_sharing_a_hash_once(rows):
    hashes = np.array([h for h, _ in rows], np.int64)
    nodes = np.array([v for _, v in rows], np.int64)
    a, b, skipped = kernels.pairs_in_runs(hashes, nodes)
    want, listed, over = _brute_pairs(hashes.tolist(), nodes.tolist(), kernels.RUN_CAP)
    assert list(zip(a.tolist(), b.tolist())) == want
    assert skipped == over == 0
    _, _, _, got_listed = kernels._run_pairs(hashes, nodes)
    assert got_listed == listed


def test_runs_over_the_cap_go_to_split_or_are_counted():
    cap = kernels.RUN_CAP
    rng = np.random.default_rng(5)
    # Hash 1: cap + 3 nodes (over the cap); hash 2: three of them and a stranger.
    big = np.arange(100, 100 + cap + 3, dtype=np.int64)
    hashes = np.concatenate([np.full(len(big), 1), [2, 2, 2, 2]]).astype(np.int64)
    nodes = np.concatenate([big, [100, 101, 102, 7]])
    order = rng.permutation(len(nodes))
    hashes, nodes = hashes[order], nodes[order]
    a, b, skipped = kernels.pairs_in_runs(hashes, nodes)
    m = len(big)
    assert skipped == m * (m - 1) // 2
    assert list(zip(a.tolist(), b.tolist())) == sorted(
        itertools.combinations([7, 100, 101, 102], 2)
    )
    seen = {}

    def split(h, v):
        seen["rows"] = sorted(zip(h.tolist(), v.tolist()))
        # Says the run splits into pairs of consecutive nodes (one repeats hash 2's 100-101).
        return v[:-1], v[1:], 4

    a, b, skipped = kernels.pairs_in_runs(hashes, nodes, split)
    assert seen["rows"] == [(1, int(v)) for v in big]
    assert skipped == 4
    chain = [(int(x), int(x) + 1) for x in big[:-1]]
    assert list(zip(a.tolist(), b.tolist())) == sorted(
        set(chain) | set(itertools.combinations([7, 100, 101, 102], 2))
    )
    _, _, _, listed = kernels._run_pairs(hashes, nodes, split)
    assert listed == 6 + len(chain)


def test_local_pairs_names_each_pair_once_by_position():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 30, 500)
    b = rng.integers(0, 30, 500)
    nodes, at_a, at_b = _core.local_pairs(a, b)
    assert nodes.tolist() == sorted(set(a.tolist()) | set(b.tolist()))
    got = list(zip(nodes[at_a].tolist(), nodes[at_b].tolist()))
    want = sorted({(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist()) if x != y})
    assert got == want


def _ranges(sets):
    lengths = np.array([len(s) for s in sets], np.uint64)
    ends = np.cumsum(lengths, dtype=np.uint64)
    flat = np.array([h for s in sets for h in s], np.uint64)
    return ends - lengths, ends, flat


def test_sketch_jaccard_parts_reads_each_part_where_it_lies():
    rng = random.Random(4)
    sets = [sorted(rng.sample(range(1, 50), rng.randint(1, 20))) for _ in range(60)]
    parts = [_ranges(sets[:25]), _ranges(sets[25:26]), _ranges(sets[26:])]
    i = np.array([rng.randrange(60) for _ in range(400)], np.int64)
    j = np.array([rng.randrange(60) for _ in range(400)], np.int64)
    got = _core.sketch_jaccard_parts(parts, i, j, 1024)
    exact = [
        len(set(sets[x]) & set(sets[y])) / len(set(sets[x]) | set(sets[y])) for x, y in zip(i, j)
    ]
    assert got.tolist() == pytest.approx(exact, abs=1e-12)
    # With a floor, the pairs below it get -1 and the others their Jaccard.
    floored = _core.sketch_jaccard_parts(parts, i, j, 1024, 0.3, 0.3)
    assert floored.tolist() == pytest.approx([e if e >= 0.3 else -1.0 for e in exact], abs=1e-12)
    with pytest.raises(ValueError, match="out of range"):
        _core.sketch_jaccard_parts(parts, np.array([60]), np.array([0]), 1024)
    # A range past its buffer is refused (the sketches' order is taken as written).
    flat = parts[0][2]
    past = (np.array([0], np.uint64), np.array([len(flat) + 1], np.uint64), flat)
    with pytest.raises(ValueError, match="out of"):
        _core.sketch_jaccard_parts([past], np.array([0]), np.array([0]), 1024)


def test_destinations_are_even_on_sketch_hashes():
    # The smallest hashes of texts' shingles (the prefix hashes) crowd the low end of the range.
    low = np.random.default_rng(9).integers(0, 2**40, 200_000)
    counts = np.bincount(destinations(low, 16), minlength=16)
    assert counts.min() > 0.9 * len(low) / 16
    assert destinations(np.array([2**63 - 1, -(2**63), 0]), 7).max() < 7


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("names", [False, True], ids=["numbers", "with-text"])
def test_exchange_moves_every_row_once_to_its_partition(tmp_path, direct, names):
    # A table of numbers alone moves as raw columns; one with a text column as Arrow tables.
    rng = np.random.default_rng(1)
    n, partitions = 5_000, 6
    key = rng.integers(0, partitions if direct else 300, n)
    frame = pd.DataFrame(
        {
            "key": key,
            "value": np.arange(n),
            "x": rng.random(n),
            "small": rng.integers(0, 100, n).astype(np.int32),
            "flag": rng.random(n) < 0.5,
        }
    )
    if names:
        frame["name"] = pd.Series([f"doc {v}" for v in range(n)], dtype="string[pyarrow]")
    ddf = dd.from_pandas(frame, npartitions=5)
    with dask.config.set(scheduler="synchronous"):
        moved = exchange(ddf, "key", partitions, str(tmp_path), "test", direct=direct)
        pieces = [moved.get_partition(q).compute() for q in range(partitions)]
    assert moved.npartitions == partitions
    together = pd.concat(pieces).sort_values("value").reset_index(drop=True)
    pd.testing.assert_frame_equal(together, frame)
    # Each key's rows in one partition: its destination (or the key itself, direct).
    for q, piece in enumerate(pieces):
        want = (
            piece["key"].to_numpy() if direct else destinations(piece["key"].to_numpy(), partitions)
        )
        assert (want == q).all()
    assert Counter(len(p) > 0 for p in pieces)[True] >= (partitions if direct else 4)


@pytest.mark.parametrize("bits", [16, 32])
def test_a_ranged_exchange_moves_each_slot_to_the_partition_of_its_words(tmp_path, bits):
    # Sorted slots of 32-bit dtype, up to the last slot below 2**bits: partition q receives the
    # slots of its run of 64-slot words (word_bounds), every slot once.
    rng = np.random.default_rng(2)
    top = (1 << bits) - 1
    parts = [
        np.sort(np.append(rng.integers(0, 1 << bits, 2_000, dtype=np.uint64), [0, top]))
        for _ in range(4)
    ]
    frame = pd.concat([pd.DataFrame({"slot": p.astype(np.uint32)}) for p in parts])
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    partitions = 5
    with dask.config.set(scheduler="synchronous"):
        moved = exchange(ddf, "slot", partitions, str(tmp_path), "ranged", ranged=bits)
        pieces = [moved.get_partition(q).compute()["slot"].to_numpy() for q in range(partitions)]
    words = 1 << (bits - 6)
    for q, piece in enumerate(pieces):
        first, end = word_bounds(q, words, partitions)
        assert ((piece >= first * 64) & (piece < end * 64)).all()
    assert sorted(np.concatenate(pieces).tolist()) == sorted(frame["slot"].tolist())


def test_discard_removes_only_that_exchange(tmp_path):
    frame = dd.from_pandas(pd.DataFrame({"key": np.arange(50), "v": np.arange(50)}), npartitions=2)
    with dask.config.set(scheduler="synchronous"):
        exchange(frame, "key", 3, str(tmp_path), "one").compute()
        exchange(frame, "key", 3, str(tmp_path), "one_more").compute()
    discard(str(tmp_path), "one")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left and all(name.startswith("spill.one_more.") for name in left)


def test_exchange_direct_refuses_a_partition_out_of_range(tmp_path):
    frame = dd.from_pandas(pd.DataFrame({"part": [0, 1, 3], "v": [1, 2, 3]}), npartitions=1)
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match="0 to 2"):
        exchange(frame, "part", 3, str(tmp_path), "bad", direct=True)


@pytest.mark.parametrize("names", [False, True])
def test_an_exchange_on_a_full_disk_names_its_scratch_file(tmp_path, names):
    # The file the exchange writes is /dev/full: every write fails as on a full disk. The
    # error names the file and what to do, and no part of the file is left.
    frame = pd.DataFrame({"key": np.arange(20_000), "v": np.arange(20_000)})
    if names:  # Arrow, not raw columns
        frame["name"] = pd.Series([f"doc {v}" for v in range(len(frame))], dtype="string[pyarrow]")
    tmp = spill_file(str(tmp_path), "full", 0) + ".tmp"
    os.symlink("/dev/full", tmp)
    ddf = dd.from_pandas(frame, npartitions=1)
    with dask.config.set(scheduler="synchronous"), pytest.raises(OSError) as caught:
        exchange(ddf, "key", 3, str(tmp_path), "full")
    assert f"{tmp}: cannot write the run's scratch file" in str(caught.value)
    assert "No space left on device" in str(caught.value) and "--scratch" in str(caught.value)
    assert not os.path.lexists(tmp)


def test_routed_pairs_meet_once_in_a_partition_of_one_of_their_texts():
    rng = np.random.default_rng(3)
    starts = np.array([0, 1_000, 2_500, 4_000], np.int64)
    a = rng.integers(0, 6_000, 20_000)
    b = rng.integers(0, 6_000, 20_000)
    a, b = np.minimum(a, b), np.maximum(a, b)
    # One block of two columns, as a table read back can be: each column a strided view.
    found = pd.DataFrame(
        np.column_stack([np.append(a, [-1, -2]), np.append(b, [7, 9])]),
        columns=["a", "b"],
        copy=False,
    )
    assert not found["a"].to_numpy().flags["C_CONTIGUOUS"]
    # The starts as a task receives them may lie at any byte offset.
    moved = np.zeros(starts.nbytes + 1, np.uint8)[1:].view(np.int64)
    moved[:] = starts
    assert not moved.flags["ALIGNED"]
    routed = _routed_part(found, moved)
    part_of = lambda v: int(np.searchsorted(starts, v, side="right") - 1)  # noqa: E731
    chosen = {}
    for x, y, q in routed.itertuples(index=False):
        if x < 0:
            assert q == 0  # the count rows go to the first partition
            continue
        assert q in (part_of(x), part_of(y))
        # Every copy of a pair goes to the same partition.
        assert chosen.setdefault((x, y), q) == q
    # Of the pairs across two partitions, about half go by their second text: early
    # partitions, where first texts crowd, get no more than their share.
    pairs = routed[routed["a"] >= 0]
    of_a = np.searchsorted(starts, pairs["a"], side="right") - 1
    of_b = np.searchsorted(starts, pairs["b"], side="right") - 1
    across = of_a != of_b
    assert 0.45 < (pairs["part"].to_numpy()[across] == of_b[across]).mean() < 0.55


def test_pair_blocks_give_each_pair_once_by_its_partitions():
    rng = np.random.default_rng(5)
    starts = np.array([0, 0, 300, 900, 1_000], np.int64)  # an empty partition too
    a = rng.integers(0, 1_500, 5_000)
    b = rng.integers(0, 1_500, 5_000)
    # Either way round, repeats, and texts paired with themselves, in strided columns.
    pairs = pd.DataFrame(np.column_stack([a, b]), columns=["a", "b"], copy=False)
    assert not pairs["a"].to_numpy().flags["C_CONTIGUOUS"]
    got_a, got_b, blocks = _pair_blocks(pairs["a"], pairs["b"], starts)
    part_of = lambda v: int(np.searchsorted(starts, v, side="right") - 1)  # noqa: E731
    want = sorted(
        {
            (part_of(min(x, y)), part_of(max(x, y)), min(x, y), max(x, y))
            for x, y in zip(a, b)
            if x != y
        }
    )
    listed = [
        (i, j, int(got_a[p]), int(got_b[p])) for lo, hi, i, j in blocks for p in range(lo, hi)
    ]
    assert listed == want
    assert len({(i, j) for _, _, i, j in blocks}) == len(blocks)
    with pytest.raises(ValueError, match="before the first partition"):
        _core.pair_blocks(np.array([5]), np.array([50]), np.array([10, 20]))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.frozensets(st.integers(1, 40), max_size=30), st.integers(0, 3)),
        min_size=2,
        max_size=40,
    ),
    st.sampled_from([0.5, 0.7, 0.8, 0.9]),
)
def test_prefix_keys_find_every_pair_at_the_threshold_and_skip_rows_without_fingerprint(
    texts, threshold
):
    import pyarrow as pa

    sets = [sorted(s) for s, _ in texts]
    # A fingerprint of 0 marks a row to leave out (no features, or a copy of another row).
    fps = np.array([fp for _, fp in texts], np.uint64)
    sketches = pa.array(sets, pa.large_list(pa.uint64()))
    counts = Counter(h for s in sets for h in s)
    held = sorted(h for h, c in counts.items() if c >= 2)
    table = kernels.frequent_hashes(
        np.array(held, np.uint64), np.array([counts[h] for h in held], np.uint32)
    )
    index, hashes = kernels.prefix_keys(sketches, table, threshold, fps)
    keys = defaultdict(set)
    for i, h in zip(index.tolist(), hashes.tolist()):
        keys[i].add(h)
    for i, s in enumerate(sets):
        if fps[i] == 0 or not s:
            assert i not in keys
            continue
        assert keys[i] <= set(s)
    # Every pair of kept rows at Jaccard >= threshold shares a prefix hash (brute force).
    for i, j in itertools.combinations(range(len(sets)), 2):
        a, b = set(sets[i]), set(sets[j])
        if fps[i] and fps[j] and a and len(a & b) >= threshold * len(a | b):
            assert keys[i] & keys[j], (sets[i], sets[j])
    # The rows kept have the lists they have with no row left out.
    all_index, all_hashes = kernels.prefix_keys(sketches, table, threshold)
    kept = fps[all_index] != 0
    assert all_index[kept].tolist() == index.tolist()
    assert all_hashes[kept].tolist() == hashes.tolist()
    # Told that the table counts every text, the keys leave out the hashes of one text alone
    # (which no pair can share): the same keys, less those.
    every = _core.RarityOrder(*table, every_text=True)
    alone_index, alone_hashes = kernels.prefix_keys(sketches, every, threshold, fps)
    shared = np.array([counts[h] >= 2 for h in hashes.tolist()], bool)
    assert alone_index.tolist() == index[shared].tolist()
    assert alone_hashes.tolist() == hashes[shared].tolist()


def test_runs_all_over_the_cap_whose_split_finds_no_pair_list_none():
    # One hash held by more texts than the cap, and nothing else: the split is handed every
    # row, finds no pair (near-identical texts no two of which are near) and counts some as
    # skipped; no pair is listed (a Dask task of 100,000 such texts used to fail here).
    n = kernels.RUN_CAP + 5
    hashes = np.full(n, 77, np.uint64)
    nodes = np.arange(n, dtype=np.int64)
    seen = []

    def split(h, v):
        seen.append(len(v))
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 11

    a, b, skipped = kernels.pairs_in_runs(hashes, nodes, split)
    assert seen == [n] and len(a) == len(b) == 0 and skipped == 11
