"""The index and batch mode against brute force: plans, find_all, cluster, SimhashIndex."""

from __future__ import annotations

import itertools
import math
import struct
import threading
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup
from neardup import IndexFormatError, Plan, SimhashIndex, cluster, find_all
from reference import checksum

# ---------------------------------------------------------------------------------------------
# Oracles, written without the code under test.


def popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x)


def brute_pairs(fps: np.ndarray, k: int) -> set[tuple[int, int, int]]:
    """All (i, j, d) with i < j and d = distance <= k, by comparing every pair."""
    fps = np.asarray(fps, dtype=np.uint64)
    d = popcount(fps[:, None] ^ fps[None, :])
    i, j = np.nonzero(np.triu(d <= k, 1))
    return set(zip(i.tolist(), j.tolist(), d[i, j].tolist()))


def brute_labels(n: int, pairs: set[tuple[int, int, int]]) -> list[int]:
    """Connected components by graph search; the label is the smallest row of a component."""
    adj = defaultdict(list)
    for i, j, _ in pairs:
        adj[i].append(j)
        adj[j].append(i)
    labels = [-1] * n
    for start in range(n):
        if labels[start] >= 0:
            continue
        stack, members = [start], []
        labels[start] = start
        while stack:
            v = stack.pop()
            members.append(v)
            for w in adj[v]:
                if labels[w] < 0:
                    labels[w] = start
                    stack.append(w)
    return labels


def brute_query(model: dict[int, int], q: int, k: int) -> list[tuple[int, int]]:
    out = [
        (id_, bin(fp ^ q).count("1")) for id_, fp in model.items() if bin(fp ^ q).count("1") <= k
    ]
    return sorted(out, key=lambda t: (t[1], t[0]))


def as_set(result: tuple[np.ndarray, np.ndarray, np.ndarray]) -> set[tuple[int, int, int]]:
    i, j, d = result
    return set(zip(i.tolist(), j.tolist(), d.tolist()))


def flip(rng: np.random.Generator, x: int, bits: int) -> int:
    for b in rng.choice(64, size=bits, replace=False):
        x ^= 1 << int(b)
    return x


def planted(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """Random fingerprints, each base followed by neighbours at every distance 0..k+1."""
    out: list[int] = []
    while len(out) < n:
        base = int(rng.integers(0, 2**64, dtype=np.uint64))
        out.append(base)
        out.extend(flip(rng, base, d) for d in range(k + 2))
    fps = np.array(out[:n], dtype=np.uint64)
    return fps[rng.permutation(n)]


def plans_for(k: int) -> list[Plan | None]:
    plans: list[Plan | None] = [None, Plan.blocks(k + 1, k=k), Plan.blocks(k + 2, k=k)]
    if k >= 1 and math.comb(k + 1, k) ** 2 <= 1024:
        plans.append(Plan.nested(k + 1, k + 1, k=k))
    if math.comb(k + 3, k) <= 1024:
        plans.append(Plan.blocks(k + 3, k=k))
    if k < 16:
        plans.append(Plan.blocks(k + 2, k=k + 1))  # a plan for a larger k also finds smaller ones
    return plans


# ---------------------------------------------------------------------------------------------
# Plans


def test_seed_layouts():
    six = Plan.blocks(6, k=3)
    assert six.block_sizes == [11, 11, 11, 11, 10, 10]
    assert len(six.tables) == 20 == math.comb(6, 3)
    assert sorted(set(six.prefix_bits)) == [31, 32, 33]
    assert six.prefix_bits.count(33) == 4 and six.prefix_bits.count(31) == 4
    assert Plan.blocks(4, k=3).prefix_bits == [16] * 4
    assert Plan.nested(4, 4, k=3).prefix_bits == [28] * 16
    assert len(Plan.blocks(8, k=6).tables) == 28
    assert Plan.blocks(4, k=3).levels == [4] and Plan.nested(4, 4, k=3).levels == [4, 4]
    # The pigeonhole index: b = k + 1 gives k + 1 tables.
    assert len(Plan.blocks(5, k=4).tables) == 5


def test_table_prefix_is_its_blocks_moved_to_the_high_end():
    six = Plan.blocks(6, k=3)
    # Block j of 6 covers these bits, counted from the high end.
    bounds, top = [], 64
    for size in six.block_sizes:
        bounds.append((top - size, size))
        top -= size

    def block_mask(low, width):
        return ((1 << width) - 1) << low

    chosen = [
        sum(block_mask(*bounds[j]) for j in combo) for combo in itertools.combinations(range(6), 3)
    ]
    assert [t.prefix_mask for t in six.tables] == chosen
    assert [t.blocks for t in six.tables] == list(itertools.combinations(range(6), 3))
    assert [t.blocks for t in Plan.nested(4, 4, k=3).tables] == [
        (b,) for b in range(4) for _ in range(4)
    ]
    assert [sum(w for _, w in t.prefix_ranges) for t in six.tables] == six.prefix_bits
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64, size=50, dtype=np.uint64)
    for t, table in enumerate(six.tables):
        permuted = six.permute(t, fps)
        # The top prefix_bits bits of the permuted value are the chosen blocks, in order.
        for x, y in zip(fps.tolist(), permuted.tolist()):
            expect = 0
            for low, width in table.prefix_ranges:
                expect = (expect << width) | ((x >> low) & ((1 << width) - 1))
            assert y >> (64 - table.prefix_bits) == expect
            assert bin(x).count("1") == bin(y).count("1")


@pytest.mark.parametrize(
    "levels,k", [((6,), 3), ((4,), 3), ((4, 4), 3), ((8,), 6), ((9,), 8), ((5, 5), 4), ((17,), 16)]
)
def test_every_difference_within_k_misses_some_prefix(levels, k):
    p = Plan.nested(*levels, k=k)
    masks = [t.prefix_mask for t in p.tables]
    assert all(bin(m).count("1") == t.prefix_bits for m, t in zip(masks, p.tables))
    rng = np.random.default_rng(k)
    for _ in range(3000):
        diff = 0
        for b in rng.choice(64, size=k, replace=False):
            diff |= 1 << int(b)
        assert any(diff & m == 0 for m in masks)


def test_plan_reports_candidates_memory_and_explains_itself():
    six = Plan.blocks(6, k=3)
    n = 2**34
    assert six.expected_candidates(n) == pytest.approx(4 * 2**1 + 12 * 2**2 + 4 * 2**3)
    assert six.bytes_per_fingerprint == 8 * 20 + 16
    text = str(six)
    assert (
        "k=3" in text and "20 tables" in text and "11,11,11,11,10,10" in text and "33 bits" in text
    )
    chosen = neardup.plan(k=3, n=10_000_000)
    assert "expected candidates per query" in str(chosen)
    assert chosen.k == 3


def test_planner_follows_corpus_size_and_memory():
    small, large = neardup.plan(3, n=1_000), neardup.plan(3, n=2**34)
    assert len(small.tables) < len(large.tables)
    assert large.expected_candidates(2**34) < small.expected_candidates(2**34)
    budget = 70 * 1_000_000
    tight = neardup.plan(3, n=1_000_000, memory=budget)
    assert tight.bytes_per_fingerprint * 1_000_000 <= budget
    with pytest.raises(ValueError, match="too small"):
        neardup.plan(3, n=1_000_000, memory=1_000)
    for k in range(17):
        chosen = neardup.plan(k, n=10_000_000)
        assert chosen.k == k and chosen.bytes_per_fingerprint <= 1024


@pytest.mark.parametrize("k", [-1, 17, 100])
def test_k_out_of_range_says_the_range(k):
    for call in (
        lambda: neardup.plan(k),
        lambda: Plan.blocks(20, k=k),
        lambda: SimhashIndex(k=k),
        lambda: find_all(np.zeros(3, np.uint64), k=k),
        lambda: cluster(np.zeros(3, np.uint64), k=k),
    ):
        with pytest.raises(ValueError, match=r"0\.\.=16"):
            call()


def test_bad_plan_arguments():
    with pytest.raises(ValueError, match="blocks"):
        Plan.blocks(3, k=3)
    with pytest.raises(ValueError, match="tables"):
        Plan.blocks(64, k=16)
    with pytest.raises(TypeError, match="blocks"):
        Plan.blocks(4.0, k=3)
    with pytest.raises(ValueError, match="k=2"):
        find_all(np.zeros(3, np.uint64), k=3, plan=Plan.blocks(3, k=2))
    with pytest.raises(ValueError, match="k=2"):
        SimhashIndex(k=3, plan=Plan.blocks(3, k=2))
    with pytest.raises(TypeError, match="plan"):
        find_all(np.zeros(3, np.uint64), k=3, plan="blocks")


# ---------------------------------------------------------------------------------------------
# Batch mode


@pytest.mark.parametrize("k", range(9))
def test_find_all_matches_brute_force(k):
    rng = np.random.default_rng(100 + k)
    fps = planted(rng, 700, k)
    want = brute_pairs(fps, k)
    assert {d for _, _, d in want} == set(range(k + 1))  # every distance 0..k is represented
    for p in plans_for(k):
        i, j, d = find_all(fps, k=k, plan=p)
        assert i.dtype == np.int64 and j.dtype == np.int64 and d.dtype == np.uint8
        got = list(zip(i.tolist(), j.tolist(), d.tolist()))
        assert len(got) == len(set(got)), "a pair reported twice"
        assert set(got) == want, f"k={k} plan={p!r}"
        assert got == sorted(got)
        labels = cluster(fps, k=k, plan=p)
        assert labels.dtype == np.int64
        assert labels.tolist() == brute_labels(len(fps), want)


@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_find_all_with_many_exact_copies(k):
    rng = np.random.default_rng(k)
    distinct = planted(rng, 60, k)
    fps = distinct[rng.integers(0, len(distinct), size=600)]
    assert as_set(find_all(fps, k=k)) == brute_pairs(fps, k)
    assert cluster(fps, k=k).tolist() == brute_labels(len(fps), brute_pairs(fps, k))


def test_find_all_single_fingerprint_repeated():
    fps = np.full(300, 0xDEADBEEF, dtype=np.uint64)
    i, j, d = find_all(fps, k=3)
    assert len(i) == 300 * 299 // 2
    assert (i < j).all() and (d == 0).all()
    assert as_set((i, j, d)) == brute_pairs(fps, 3)
    assert cluster(fps, k=3).tolist() == [0] * 300


@pytest.mark.parametrize("k", [2, 3, 5])
def test_find_all_when_all_fingerprints_share_their_high_bits(k):
    rng = np.random.default_rng(k)
    low = rng.integers(0, 1 << 14, size=800, dtype=np.uint64)
    fps = np.uint64(0xABCD_EF01_2345_0000 & ~((1 << 14) - 1)) | low
    want = brute_pairs(fps, k)
    for p in plans_for(k)[:3]:
        assert as_set(find_all(fps, k=k, plan=p)) == want


def test_find_all_edge_inputs():
    for fps in ([], [7], [0, 2**64 - 1]):
        i, j, d = find_all(np.array(fps, dtype=np.uint64), k=3)
        assert len(i) == len(j) == len(d) == 0
    assert cluster(np.array([], dtype=np.uint64)).tolist() == []
    # Lists of ints are accepted, floats refused with a message naming the argument.
    assert as_set(find_all([1, 3, 2**64 - 1], k=1)) == {(0, 1, 1)}
    with pytest.raises(TypeError, match="fingerprints"):
        find_all(np.zeros(3, dtype=np.float64))
    with pytest.raises(ValueError, match="negative"):
        find_all(np.array([-1, 2], dtype=np.int64))
    with pytest.raises(TypeError, match="k"):
        find_all([1, 2], k=2.5)


def neighbourhood_strategy(max_size: int = 40):
    """Fingerprints from a few random bases with up to 5 flipped bits, so pairs exist."""
    bases = st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4)
    flips = st.lists(st.integers(0, 63), max_size=5)
    return bases.flatmap(
        lambda bs: st.lists(
            st.tuples(st.sampled_from(bs), flips).map(
                lambda t: t[0] ^ sum(1 << b for b in set(t[1]))
            ),
            max_size=max_size,
        )
    )


plan_choices = st.sampled_from([None, (1,), (2,), (3,), (0, 0), (4,)])


def plan_from(choice, k):
    if choice is None:
        return None
    if len(choice) == 2:
        return Plan.nested(k + 1, k + 1, k=k) if k >= 1 else None
    return Plan.blocks(k + choice[0], k=k) if math.comb(k + choice[0], k) <= 1024 else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fps=neighbourhood_strategy(), k=st.integers(0, 6), choice=plan_choices)
def test_find_all_and_cluster_property(fps, k, choice):
    arr = np.array(fps, dtype=np.uint64)
    p = plan_from(choice, k)
    want = brute_pairs(arr, k) if len(fps) else set()
    i, j, d = find_all(arr, k=k, plan=p)
    assert list(zip(i.tolist(), j.tolist(), d.tolist())) == sorted(want)
    assert cluster(arr, k=k, plan=p).tolist() == brute_labels(len(fps), want)


# ---------------------------------------------------------------------------------------------
# The index


@pytest.mark.parametrize("k", [0, 1, 3, 5, 8])
def test_query_matches_brute_force(k):
    rng = np.random.default_rng(k + 7)
    fps = planted(rng, 900, k)
    for p in plans_for(k)[:4]:
        index = SimhashIndex(k=k, plan=p)
        index.add(fps[:500])
        index.add(fps[500:])  # a second batch lands in the buffer or merges
        model = dict(enumerate(fps.tolist()))
        queries = np.concatenate([fps[::9], rng.integers(0, 2**64, size=20, dtype=np.uint64)])
        for q in queries.tolist():
            assert index.query(q) == brute_query(model, q, k)
        rows, ids, dist = index.query_many(queries)
        assert rows.dtype == np.int64 and ids.dtype == np.int64 and dist.dtype == np.uint8
        expect = [
            (r, i, d) for r, q in enumerate(queries.tolist()) for i, d in brute_query(model, q, k)
        ]
        assert list(zip(rows.tolist(), ids.tolist(), dist.tolist())) == expect


def test_query_many_in_parallel_matches_queries_one_by_one():
    rng = np.random.default_rng(3)
    fps = planted(rng, 20_000, 3)
    index = SimhashIndex(k=3, expected_size=len(fps))
    index.add(fps, ids=np.arange(len(fps)) * 10)
    queries = fps[:5000]
    rows, ids, dist = index.query_many(queries)
    expect = [(r, i, d) for r, q in enumerate(queries.tolist()[:300]) for i, d in index.query(q)]
    got = list(zip(rows.tolist(), ids.tolist(), dist.tolist()))
    assert got[: len(expect)] == expect
    one_thread = index.query_many(queries, threads=1)
    assert all((a == b).all() for a, b in zip((rows, ids, dist), one_thread))


def test_ids_add_remove_contains_and_len():
    index = SimhashIndex(k=2, plan=Plan.blocks(3, k=2))
    index.add([0b0, 0b1, 0b11])  # default ids 0, 1, 2
    index.add([0b111], ids=[10])
    index.add([0b1111])  # continues after the largest id: 11
    assert len(index) == 5
    assert [i for i in (0, 1, 2, 10, 11) if i in index] == [0, 1, 2, 10, 11]
    assert 3 not in index and "0" not in index and 2**70 not in index
    assert index.query(0) == [(0, 0), (1, 1), (2, 2)]
    index.remove([1, 10])
    assert len(index) == 3 and 1 not in index
    assert index.query(0b1) == [(0, 1), (2, 1)]
    with pytest.raises(KeyError, match="5"):
        index.remove([0, 5])
    assert 0 in index  # nothing removed by the failed call
    with pytest.raises(ValueError, match="already in the index"):
        index.add([9], ids=[2])
    with pytest.raises(ValueError, match="more than once"):
        index.add([9, 8], ids=[20, 20])
    assert len(index) == 3  # nothing added by the failed calls
    with pytest.raises(ValueError, match="one id per fingerprint"):
        index.add([1, 2], ids=[30])
    with pytest.raises(TypeError, match="ids"):
        index.add([1], ids=[1.5])
    with pytest.raises(TypeError, match="fingerprints"):
        index.add(np.array([1.0]))
    with pytest.raises(TypeError, match="fingerprint"):
        index.query("abc")
    with pytest.raises(ValueError, match="fingerprint"):
        index.query(-1)
    # A removed id can be added again, with a new fingerprint.
    index.add([0b1], ids=[1])
    assert index.query(0b1)[0] == (1, 0)


def test_removed_entries_disappear_from_merged_tables_and_buffer():
    for limits in [(0, 1000), (0, 0), (1000, 1000), None]:
        index = SimhashIndex(k=3, plan=Plan.blocks(4, k=3))
        index._inner._set_limits(limits)  # (0, ...): every add merges into the main tables
        index.add([0b1, 0b11, 0b111, 0b1111, 0b1111])
        index.remove([1, 3])
        assert index.query(0) == [(0, 1), (2, 3)]
        rows, ids, _ = index.query_many([0, 0b1111])
        assert list(zip(rows.tolist(), ids.tolist())) == [(0, 0), (0, 2), (1, 4), (1, 2), (1, 0)]
        index.add([0b11], ids=[1])  # the removed id comes back with a new entry
        assert index.query(0) == [(0, 1), (1, 2), (2, 3)]
        index.compact()
        assert index.query(0) == [(0, 1), (1, 2), (2, 3)] and len(index) == 4


ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), neighbourhood_strategy(12), st.booleans()),
        # Positions among the live ids (so most removals succeed), and whether to add an absent id.
        st.tuples(st.just("remove"), st.lists(st.integers(0, 10**6), max_size=6), st.booleans()),
        st.tuples(st.just("compact")),
    ),
    max_size=25,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    operations=ops,
    k=st.integers(0, 5),
    limits=st.sampled_from([None, (2, 1), (8, 3), (0, 1000)]),
    queries=neighbourhood_strategy(6),
)
def test_add_remove_interleavings_match_a_model(operations, k, limits, queries):
    index = SimhashIndex(k=k, plan=Plan.blocks(k + 2, k=k))
    index._inner._set_limits(limits)
    model: dict[int, int] = {}
    ever_added: list[int] = []
    next_id = 0
    for op in operations:
        if op[0] == "add":
            fps, explicit = op[1], op[2]
            ever_added.extend(fps)
            if explicit:
                ids = [1000 + len(model) * 7 + n for n in range(len(fps))]
                ids = [i for i in ids if i not in model][: len(fps)]
                fps = fps[: len(ids)]
                index.add(np.array(fps, dtype=np.uint64), ids=ids)
            else:
                ids = list(range(next_id, next_id + len(fps)))
                index.add(np.array(fps, dtype=np.uint64))
            model.update(zip(ids, fps))
            if ids:
                next_id = max(next_id, max(ids) + 1)
        elif op[0] == "remove":
            live = sorted(model)
            present = [live[p % len(live)] for p in op[1]] if live else []
            if op[2]:
                with pytest.raises(KeyError):
                    index.remove(present + [-(10**9)])
            else:
                index.remove(present)
                for i in set(present):
                    del model[i]
        else:
            index.compact()
        assert len(index) == len(model)
    for i in list(model)[:10] + [next_id, -1]:
        assert (i in index) == (i in model)
    # Probe near what was removed as well as what is left, and elsewhere.
    probe = queries + ever_added[-30:]
    for q in probe:
        assert index.query(q) == brute_query(model, q, k)
    rows, ids, dist = index.query_many(np.array(probe, dtype=np.uint64))
    expect = [(r, i, d) for r, q in enumerate(probe) for i, d in brute_query(model, q, k)]
    assert list(zip(rows.tolist(), ids.tolist(), dist.tolist())) == expect


def test_memory_per_fingerprint_is_8_per_table_plus_16():
    rng = np.random.default_rng(1)
    n = 50_000
    index = SimhashIndex(k=3, plan=Plan.blocks(6, k=3))
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    index.add(fps[: n // 2])
    index.add(fps[n // 2 :])  # default ids need no id lookup
    index.compact()
    assert index.nbytes == n * index.plan.bytes_per_fingerprint == n * (8 * 20 + 16)
    # The first lookup by id builds the id order: 4 bytes more per entry, kept through merges.
    assert 7 in index
    assert index.nbytes == n * (8 * 20 + 20)
    index.add([1, 2], ids=[-1, -2])
    index.remove([-1])
    index.compact()
    assert index.nbytes == (n + 1) * (8 * 20 + 20)
    assert -2 in index and -1 not in index and 7 in index


def test_saving_does_not_grow_the_index(tmp_path):
    index = SimhashIndex(k=3, plan=Plan.blocks(4, k=3))
    index.add(np.arange(5000, dtype=np.uint64) * 7919)
    index.compact()
    before = index.nbytes
    index.save(tmp_path / "a.ndx")
    assert index.nbytes == before == 5000 * (8 * 4 + 16)
    assert 4999 in SimhashIndex.load(tmp_path / "a.ndx") and 5000 not in SimhashIndex.load(
        tmp_path / "a.ndx"
    )


# ---------------------------------------------------------------------------------------------
# Files


def filled_index(k=3, n=3000, seed=5):
    rng = np.random.default_rng(seed)
    fps = planted(rng, n, k)
    index = SimhashIndex(k=k, expected_size=n)
    index.add(fps[: n // 2], ids=np.arange(n // 2) * 3 - 100)
    index.add(fps[n // 2 :])
    index.remove([-100, -97])
    return index, fps


@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip(tmp_path, mmap):
    index, fps = filled_index()
    path = tmp_path / "corpus.ndx"
    index.save(path)
    loaded = SimhashIndex.load(path, mmap=mmap)
    assert len(loaded) == len(index) and loaded.k == index.k and loaded.plan == index.plan
    queries = fps[::7]
    for a, b in zip(index.query_many(queries), loaded.query_many(queries)):
        assert (a == b).all()
    assert loaded.query(int(fps[0])) == index.query(int(fps[0]))
    # A loaded index takes inserts and removals, and default ids carry on.
    loaded.add(fps[:3])
    assert len(loaded) == len(index) + 3
    assert -100 not in loaded and -94 in loaded
    loaded.remove([-94])
    loaded.save(path)  # over a file that is still mapped
    again = SimhashIndex.load(path, mmap=mmap)
    assert len(again) == len(loaded)
    assert again.query(int(fps[1])) == loaded.query(int(fps[1]))
    # Only the final file is left behind.
    assert [p.name for p in tmp_path.iterdir()] == ["corpus.ndx"]


def test_save_load_empty_index(tmp_path):
    index = SimhashIndex(k=0)
    index.save(tmp_path / "empty.ndx")
    loaded = SimhashIndex.load(tmp_path / "empty.ndx")
    assert len(loaded) == 0 and loaded.query(5) == [] and loaded.k == 0


def rewrite(data: bytes, word: int, value: int) -> bytes:
    """Sets a header word and recomputes the checksum, as a foreign or newer writer would."""
    words = list(struct.unpack(f"<{len(data) // 8}Q", data))
    words[word] = value
    words[-1] = checksum(words[:-1])
    return struct.pack(f"<{len(words)}Q", *words)


def test_checksum_oracle_matches_the_file(tmp_path):
    index, _ = filled_index(n=200)
    index.save(tmp_path / "a.ndx")
    data = (tmp_path / "a.ndx").read_bytes()
    words = struct.unpack(f"<{len(data) // 8}Q", data)
    assert words[-1] == checksum(list(words[:-1]))
    assert data[:8] == b"\x93NDUPIDX" and words[1] == 1 and words[2] == len(data)


@pytest.mark.parametrize("mmap", [True, False])
def test_bad_files_raise_index_format_error(tmp_path, mmap):
    index, _ = filled_index(n=400)
    good_path = tmp_path / "good.ndx"
    index.save(good_path)
    good = good_path.read_bytes()
    cases: dict[str, tuple[bytes, str]] = {
        "truncated by one byte": (good[:-1], "truncated|whole number"),
        "truncated by half": (good[: len(good) // 2], "truncated"),
        "truncated to the magic": (good[:8], "truncated"),
        "tiny": (good[:3], "not a neardup index"),
        "empty": (b"", "empty"),
        "zip file": (b"PK\x03\x04" + bytes(200), "not a neardup index"),
        "text": (b"hello, world\n" * 20, "not a neardup index"),
        "trailing data": (good + bytes(8), "header says"),
        "newer version": (rewrite(good, 1, 2), "newer"),
        "bad plan": (rewrite(good, 6, 2), "plan"),
        "bad counts": (rewrite(good, 10, 5), "counts|length"),
        "bad k": (rewrite(good, 3, 40), "k="),
    }
    for pos in (9, 17, 30, 90, 200, len(good) // 2, len(good) - 20, len(good) - 2):
        flipped = bytearray(good)
        flipped[pos] ^= 0x04
        cases[f"bit flipped at {pos}"] = (bytes(flipped), "checksum|newer|header|invalid|truncated")
    for _name, (data, message) in cases.items():
        path = tmp_path / "bad.ndx"
        path.write_bytes(data)
        with pytest.raises(IndexFormatError, match=message):
            SimhashIndex.load(path, mmap=mmap)
    assert issubclass(IndexFormatError, neardup.NeardupError)


def test_a_structurally_wrong_file_with_a_valid_checksum_is_refused(tmp_path):
    index, _ = filled_index(n=400)
    index.save(tmp_path / "good.ndx")
    good = (tmp_path / "good.ndx").read_bytes()
    words = list(struct.unpack(f"<{len(good) // 8}Q", good))
    n = words[10]
    # Swap two fingerprints so the entries are out of order, then fix the checksum.
    words[14], words[15] = words[15], words[14]
    words[-1] = checksum(words[:-1])
    (tmp_path / "bad.ndx").write_bytes(struct.pack(f"<{len(words)}Q", *words))
    with pytest.raises(IndexFormatError, match="inconsistent"):
        SimhashIndex.load(tmp_path / "bad.ndx")
    # A table holding a fingerprint the entries do not.
    words = list(struct.unpack(f"<{len(good) // 8}Q", good))
    last_table_end = len(words) - 1
    words[last_table_end - 1] ^= 1
    words[-1] = checksum(words[:-1])
    (tmp_path / "bad.ndx").write_bytes(struct.pack(f"<{len(words)}Q", *words))
    with pytest.raises(IndexFormatError, match="inconsistent"):
        SimhashIndex.load(tmp_path / "bad.ndx")
    assert n > 0


@pytest.fixture(scope="module")
def small_index_file(tmp_path_factory):
    index, fps = filled_index(n=120)
    path = tmp_path_factory.mktemp("fuzz") / "small.ndx"
    index.save(path)
    return path.read_bytes(), fps


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(0, 2**64 - 1), st.booleans()),
        min_size=1,
        max_size=3,
    ),
    fix_checksum=st.booleans(),
    mmap=st.booleans(),
)
def test_fuzzed_files_fail_cleanly(tmp_path_factory, small_index_file, edits, fix_checksum, mmap):
    """Words overwritten or xored anywhere, with the checksum fixed up (so the structural checks
    are reached) or not: loading raises IndexFormatError or gives an index that answers queries;
    nothing else (no panic, no other exception)."""
    good, fps = small_index_file
    words = list(struct.unpack(f"<{len(good) // 8}Q", good))
    for at, value, xor in edits:
        at %= len(words) - 1
        words[at] = words[at] ^ value if xor else value
    if fix_checksum:
        words[-1] = checksum(words[:-1])
    path = tmp_path_factory.mktemp("fuzzed") / "f.ndx"
    path.write_bytes(struct.pack(f"<{len(words)}Q", *words))
    try:
        index = SimhashIndex.load(path, mmap=mmap)
    except IndexFormatError:
        return
    len(index)
    for q in fps[:5].tolist():
        index.query(q)
    index.query_many(fps[:20])
    index.add(fps[:3], ids=[-(2**62), -(2**62) + 1, -(2**62) + 2])
    index.save(path)


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        SimhashIndex.load(tmp_path / "nope.ndx")


# ---------------------------------------------------------------------------------------------
# Docs


def test_docs_examples_run_and_print_what_they_say(tmp_path, monkeypatch, capsys):
    """Runs the Python blocks of docs/simhash-index.md (the index and its plans) and checks
    each print against its comment."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parent.parent / "docs" / "simhash-index.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(blocks[0], str(doc), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    expected = [m.group(1) for m in re.finditer(r"print\(.*\)\s+# (\[.*?\])", blocks[0])]
    assert printed[: len(expected)] == expected
    exec(compile(blocks[1], str(doc), "exec"), namespace)
    plan_text = [line[2:] for line in blocks[1].splitlines() if line.startswith("# ")]
    assert capsys.readouterr().out.splitlines() == plan_text


# ---------------------------------------------------------------------------------------------
# Threads


def test_concurrent_queries_during_inserts_see_whole_batches():
    """Readers query one fingerprint while a writer adds copies of it in batches: every answer
    is a whole number of batches (no torn read), answers never shrink, and none is lost."""
    target = 0x0123_4567_89AB_CDEF
    batch, batches = 50, 120
    index = SimhashIndex(k=3, plan=Plan.blocks(6, k=3))
    rng = np.random.default_rng(9)
    index.add(rng.integers(0, 2**64, size=20_000, dtype=np.uint64), ids=np.arange(20_000) + 10**9)
    errors: list[str] = []
    done = threading.Event()

    def reader():
        seen = 0
        while not done.is_set():
            found = [i for i, d in index.query(target) if d == 0]
            if len(found) % batch or found != list(range(len(found))):
                errors.append(f"torn read: {len(found)} ids")
                return
            if len(found) < seen:
                errors.append("an answer shrank")
                return
            seen = len(found)
            rows, ids, _ = index.query_many(np.array([target, target], dtype=np.uint64))
            if len(ids) % (2 * batch):
                errors.append("torn read in query_many")
                return

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for b in range(batches):
        fps = np.full(batch, target, dtype=np.uint64)
        index.add(fps, ids=np.arange(b * batch, (b + 1) * batch))
    done.set()
    for t in threads:
        t.join()
    assert errors == []
    assert len(index) == 20_000 + batch * batches
    assert [i for i, d in index.query(target) if d == 0] == list(range(batch * batches))


def test_concurrent_adders_with_default_ids_get_distinct_ids():
    index = SimhashIndex(k=2, plan=Plan.blocks(4, k=2))
    rng = np.random.default_rng(4)
    batches = [rng.integers(0, 2**64, size=100, dtype=np.uint64) for _ in range(40)]

    def adder(mine):
        for fps in mine:
            index.add(fps)

    threads = [threading.Thread(target=adder, args=(batches[t::4],)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(index) == 4000
    assert all(i in index for i in range(4000)) and 4000 not in index
    # Each batch got a contiguous run of ids: query each fingerprint and check its id's batch.
    rows, ids, dist = index.query_many(np.concatenate(batches))
    exact = ids[dist == 0]
    assert sorted(exact.tolist()) == list(range(4000))
    starts = {}
    for b, fps in enumerate(batches):
        own = [i for i, d in index.query(int(fps[0])) if d == 0]
        starts[b] = own[0]
        assert [x for x, d in index.query(int(fps[-1])) if d == 0] == [own[0] + 99]
    assert sorted(starts.values()) == list(range(0, 4000, 100))


def test_plans_pickle_as_the_same_plan():
    import pickle

    for p in (
        neardup.plan(k=3, n=10_000_000),
        neardup.Plan.nested(4, 4, k=3),
        neardup.Plan.blocks(6),
    ):
        again = pickle.loads(pickle.dumps(p))
        assert again == p and str(again) == str(p) and again.prefix_bits == p.prefix_bits
