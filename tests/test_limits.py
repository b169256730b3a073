"""Issue 14, item 2: bounded memory. Every call that returns pairs counts them before it
allocates them and refuses more than its limit with TooManyPairsError naming the count and the
option that bounds it; clustering stores no pair at all. Before this, find_all of 1M identical
fingerprints aborted the process ("memory allocation of N bytes failed", SIGABRT)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import brute
import neardup
from neardup.cli import main
from neardup.index import DEFAULT_MAX_PAIRS


def shared_high_bits(n: int, low_bits: int, seed: int = 0) -> np.ndarray:
    """n fingerprints equal in all but their ``low_bits`` low bits (many copies of each value)."""
    rng = np.random.default_rng(seed)
    low = rng.integers(0, 1 << low_bits, size=n, dtype=np.uint64)
    return np.uint64(0xDEAD_BEEF_CAFE_0000) | low


def exact_count(fps: np.ndarray, k: int) -> int:
    """Pairs of rows within k, from the values' multiplicities (numpy, no pair listed)."""
    values, counts = np.unique(fps, return_counts=True)
    counts = counts.astype(object)  # Python ints: no overflow
    total = sum(c * (c - 1) // 2 for c in counts)
    x = values[:, None] ^ values[None, :]
    bits = np.unpackbits(x.view(np.uint8).reshape(len(values), len(values), 8), axis=2).sum(axis=2)
    a, b = np.nonzero(np.triu(bits <= k, 1))
    return int(total + sum(counts[p] * counts[q] for p, q in zip(a.tolist(), b.tolist())))


def test_the_error_is_a_neardup_error_with_the_count_and_limit():
    assert issubclass(neardup.TooManyPairsError, neardup.NeardupError)
    assert "TooManyPairsError" in neardup.__all__
    assert DEFAULT_MAX_PAIRS == 100_000_000


def test_find_all_of_identical_fingerprints_is_refused_naming_the_exact_count():
    n = 200_000
    fps = np.full(n, 42, dtype=np.uint64)
    with pytest.raises(neardup.TooManyPairsError) as info:
        neardup.find_all(fps, k=3, max_pairs=1_000)
    count = n * (n - 1) // 2
    assert (info.value.count, info.value.limit) == (count, 1_000)
    message = str(info.value)
    assert (
        f"{count:,} pairs within k=3" in message and "1,000" in message and "max_pairs" in message
    )
    # The default limit refuses it too.
    with pytest.raises(neardup.TooManyPairsError):
        neardup.find_all(fps, k=0)


def test_find_all_within_the_limit_returns_every_pair_of_copies():
    n = 3_000
    fps = np.full(n, 42, dtype=np.uint64)
    count = n * (n - 1) // 2
    i, j, d = neardup.find_all(fps, k=3, max_pairs=count)
    assert len(i) == count
    want_i, want_j = np.triu_indices(n, 1)
    assert np.array_equal(i, want_i) and np.array_equal(j, want_j) and not d.any()
    with pytest.raises(neardup.TooManyPairsError) as info:
        neardup.find_all(fps, k=3, max_pairs=count - 1)
    assert info.value.count == count
    assert len(neardup.find_all(fps, k=3, max_pairs=None)[0]) == count


def test_fingerprints_sharing_their_high_bits_are_counted_exactly():
    fps = shared_high_bits(200_000, 8)
    count = exact_count(fps, 3)
    with pytest.raises(neardup.TooManyPairsError) as info:
        neardup.find_all(fps, k=3, max_pairs=10_000)
    assert info.value.count == count
    assert f"{count:,} pairs" in str(info.value)

    small = shared_high_bits(3_000, 8, seed=1)
    count = exact_count(small, 3)
    i, j, d = neardup.find_all(small, k=3, max_pairs=count)
    assert len(i) == count
    assert (i < j).all() and np.all(np.lexsort((j, i)) == np.arange(count))
    assert np.array_equal(d, _distances(small, i, j))
    with pytest.raises(neardup.TooManyPairsError) as info:
        neardup.find_all(small, k=3, max_pairs=count - 1)
    assert info.value.count == count


def _distances(fps: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    x = (fps[i] ^ fps[j]).view(np.uint8).reshape(-1, 8)
    return np.unpackbits(x, axis=1).sum(axis=1).astype(np.uint8)


def test_max_pairs_is_checked():
    fps = np.zeros(3, dtype=np.uint64)
    with pytest.raises(ValueError, match="max_pairs must be >= 0"):
        neardup.find_all(fps, max_pairs=-1)
    with pytest.raises(TypeError, match="max_pairs must be an int"):
        neardup.find_all(fps, max_pairs=1.5)
    assert len(neardup.find_all(fps, max_pairs=3)[0]) == 3


def test_cluster_of_dense_fingerprints_stores_no_pair():
    # 200k copies and 4,096 distinct values all within k=16 of each other: 2e10 pairs as a list.
    fps = np.concatenate(
        [
            np.full(200_000, 0xDEAD_BEEF_CAFE_0007, dtype=np.uint64),
            shared_high_bits(4_096, 12, seed=2),
        ]
    )
    labels = neardup.cluster(fps, k=16)
    assert (labels == 0).all()
    labels = neardup.cluster(np.array([5, 1 << 40, 4, 0xFFFF, 5], dtype=np.uint64), k=1)
    assert labels.tolist() == [0, 1, 0, 3, 0]


def test_query_many_refuses_more_matches_than_max_pairs():
    index = neardup.SimhashIndex(k=3)
    index.add(np.full(2_000, 9, dtype=np.uint64))
    queries = np.full(1_500, 9 ^ 0b1, dtype=np.uint64)
    with pytest.raises(neardup.TooManyPairsError) as info:
        index.query_many(queries, max_pairs=1_000)
    # Copies of one query against copies of one entry: one pair of values, counted exactly.
    err = info.value
    assert (err.limit, err.count, err.at_least) == (1_000, 3_000_000, False)
    assert "max_pairs" in str(err) and str(err).startswith("3,000,000 matches within k=3")
    # Many distinct values within k of each other: the search stops past the limit, and the
    # count is a lower bound, named as one.
    dense = neardup.SimhashIndex(k=3)
    values = np.uint64(0xDEAD_BEEF_CAFE_0000) | np.arange(1 << 12, dtype=np.uint64)
    dense.add(values)
    want = sum(int((np.bitwise_count(values ^ v) <= 3).sum()) for v in values)
    with pytest.raises(neardup.TooManyPairsError) as info:
        dense.query_many(values, max_pairs=1_000)
    err = info.value
    assert err.limit == 1_000 and 1_000 < err.count < want and err.at_least
    assert str(err).startswith(f"at least {err.count:,} ")
    # Every query answered before the limit was passed: the exact count.
    with pytest.raises(neardup.TooManyPairsError) as info:
        index.query_many(queries[:1], max_pairs=1_000)
    assert (info.value.count, info.value.at_least) == (2_000, False)
    rows, ids, dists = index.query_many(queries, max_pairs=3_000_000)
    assert len(rows) == 3_000_000 and (dists == 1).all()


# -- the command ------------------------------------------------------------------------------


def test_pairs_command_refuses_more_than_max_pairs_with_status_2(tmp_path, capsys):
    src = tmp_path / "same.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": i, "text": "the very same text every time"}) + "\n"
            for i in range(5_000)
        )
    )
    out_path = tmp_path / "pairs.csv"
    code = main(["pairs", str(src), "--max-pairs", "1000", "-o", str(out_path), "-q"])
    out, err = capsys.readouterr()
    count = 5_000 * 4_999 // 2
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"neardup: {count:,} pairs within k=")
    assert "more than --max-pairs 1,000" in err
    assert out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.jsonl"]  # no output, no temp file


def test_pairs_command_within_max_pairs_reports_them(tmp_path, capsys):
    src = tmp_path / "same.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": i, "text": "the very same text every time"}) + "\n" for i in range(50)
        )
    )
    code = main(["pairs", str(src), "--max-pairs", str(50 * 49 // 2), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(out.splitlines()) == 50 * 49 // 2


# -- under a memory limit -----------------------------------------------------------------------

PRLIMIT = shutil.which("prlimit")

UNDER_LIMIT = """
import numpy as np, neardup
cases = {
    "identical": np.full(1_000_000, 42, dtype=np.uint64),
    "high bits": np.uint64(0xDEADBEEFCAFE0000) | (np.arange(1_000_000, dtype=np.uint64) & np.uint64(0xFFFF)),
}
for name, fps in cases.items():
    try:
        neardup.find_all(fps, k=3)
    except neardup.TooManyPairsError as err:
        print(name, err.count, flush=True)
dense = np.uint64(0xDEADBEEFCAFE0000) | np.arange(10_000, dtype=np.uint64)
print("cluster", len(set(neardup.cluster(dense, k=16).tolist())), flush=True)
"""


def low_bits_count(n: int, bits: int, k: int) -> int:
    """Pairs within k among the rows r & (2^bits - 1), r < n, from the values' multiplicities."""
    c = np.bincount(np.arange(n) & ((1 << bits) - 1), minlength=1 << bits).astype(np.int64)
    values = np.arange(1 << bits)
    total = int((c * (c - 1) // 2).sum())
    for mask in range(1, 1 << bits):
        if bin(mask).count("1") <= k:
            total += int((c * c[values ^ mask]).sum()) // 2
    return total


@pytest.mark.skipif(PRLIMIT is None, reason="prlimit (util-linux) is not installed")
def test_a_million_identical_fingerprints_end_in_the_error_under_2gb(tmp_path):
    """The reported abort: under a 2 GB address space, find_all of 1M identical fingerprints (and
    of 1M sharing their high 48 bits) ended in SIGABRT; now each is a TooManyPairsError, and
    cluster(k=16) of dense fingerprints finishes."""
    assert PRLIMIT is not None
    done = subprocess.run(
        [PRLIMIT, "--as=2000000000", sys.executable, "-c", UNDER_LIMIT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "memory allocation" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"identical {1_000_000 * 999_999 // 2}"
    assert lines[1] == f"high bits {low_bits_count(1_000_000, 16, 3)}"
    assert lines[2] == "cluster 1"
    assert not list(Path(tmp_path).iterdir())


# The work of the search (issue 14, item 2): clustered fingerprints at a large k compare
# quadratically many candidates per table; the search estimates them first and refuses.


def clustered(n: int, seed: int = 3) -> np.ndarray:
    """n distinct-ish fingerprints sharing their high 40 bits: every table's prefix runs are long."""
    return shared_high_bits(n, 24, seed)


def test_clustered_fingerprints_at_a_large_k_are_refused_at_once_naming_the_estimate_and_k():
    fps = clustered(200_000)
    # Refused from the estimate (the message names it), before any table is searched.
    with pytest.raises(neardup.TooManyPairsError) as info:
        neardup.find_all(fps, 16)
    text = str(info.value)
    assert "candidate comparisons" in text and "k=16" in text and "lower k" in text, text
    assert info.value.limit == 30_000_000_000 < info.value.count
    assert f"{info.value.count:,}" in text
    with pytest.raises(neardup.TooManyPairsError, match="candidate comparisons.*k=16"):
        neardup.cluster(fps, 16)


def test_random_fingerprints_at_the_same_k_are_searched_and_match_brute_force():
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**64, size=1500, dtype=np.uint64)
    fps[1::3] = fps[::3][: len(fps[1::3])] ^ np.uint64(0xFFFF)  # some pairs at distance 16
    i, j, d = neardup.find_all(fps, 16)
    assert set(zip(i.tolist(), j.tolist(), d.tolist())) == brute.pairs(fps, 16)
    assert len(i) > 0


def test_no_pair_limit_is_no_work_limit():
    fps = clustered(3000)
    i, _, _ = neardup.find_all(fps, 16, max_pairs=None)
    assert len(i) == exact_count(fps, 16)


def test_dedup_refuses_a_dense_corpus_at_k16_with_status_2(tmp_path, capsys):
    import random

    r = random.Random(0)
    words = [f"w{x}" for x in range(20)]
    path = tmp_path / "dense.jsonl"
    with path.open("w") as f:
        for _ in range(100_000):
            f.write(json.dumps({"text": " ".join(r.choice(words) for _ in range(8))}) + "\n")
    code = main(["dedup", str(path), "--dry-run", "--k", "16", "--no-verify", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("neardup: ") and "candidate comparisons" in err and "k=16" in err, err
    assert "lower k" in err and err.count("\n") == 1


# The report looks beyond k (issue 14): on densely packed fingerprints its search further out is
# cut where it would cost more than the job's own search, instead of running for minutes or
# failing after the job.


def comparisons(fps: np.ndarray, plan: neardup.Plan) -> int:
    """Pairs of distinct values sharing a table's prefix, summed over the plan's tables."""
    values = np.unique(fps)
    total = 0
    for table in plan.tables:
        _, counts = np.unique(values & np.uint64(table.prefix_mask), return_counts=True)
        total += int((counts * (counts - 1) // 2).sum())
    return total


def test_search_cost_counts_the_comparisons_of_each_table():
    from neardup import _core

    for fps in (clustered(3000), np.random.default_rng(1).integers(0, 2**64, 5000, np.uint64)):
        for k in (3, 8, 12):
            plan = neardup.Plan.blocks(k + 3, k)
            assert _core.search_cost(fps, k, plan._inner) == comparisons(fps, plan)


def dense_corpus(path: Path, n: int, seed: int = 0) -> Path:
    import random

    r = random.Random(seed)
    words = [f"w{x}" for x in range(20)]
    with path.open("w") as f:
        for _ in range(n):
            f.write(json.dumps({"text": " ".join(r.choice(words) for _ in range(8))}) + "\n")
    return path


def report_distances(page: str) -> list[int]:
    """The distances of the report's table of nearest-neighbour distances."""
    table = page.split("<table id='distances'>")[1].split("</table>")[0]
    cells = [row.split("<td>")[1].split("</td>")[0] for row in table.split("<tr")[2:]]
    return [int(c) for c in cells if not c.startswith("&gt;")]


def test_the_report_stops_where_the_search_would_cost_many_times_the_jobs(tmp_path, monkeypatch):
    from neardup import _core, report

    path = dense_corpus(tmp_path / "dense.jsonl", 3000)
    fps = neardup.Simhasher().fingerprint_many(
        [json.loads(line)["text"] for line in path.read_text().splitlines()]
    )
    k = 6
    cost = [_core.search_cost(np.unique(fps), d) for d in range(k, k + 4)]
    monkeypatch.setattr(report, "REACH_FLOOR", 0)
    monkeypatch.setattr(report, "REACH_COST", cost[1] / cost[0])  # the search at k + 1, no further
    assert cost[2] > cost[1]  # costs grow with the distance on such data
    page = tmp_path / "r.html"

    def report_page() -> str:
        argv = ["dedup", str(path), "--dry-run", "--k", str(k), "--report", str(page), "-q"]
        assert main([*argv, "--candidates", "fingerprint"]) == 0
        return page.read_text()

    text = report_page()
    assert report_distances(text) == list(range(k + 2)) and "id='reach'" in text
    monkeypatch.setattr(report, "REACH_COST", cost[3] / cost[0])
    text = report_page()
    assert report_distances(text) == list(range(k + 4)) and "id='reach'" not in text


def test_the_reports_neighbourhood_lists_no_pair_and_matches_brute_force():
    from neardup import report

    rng = np.random.default_rng(4)
    base = clustered(400, seed=9)
    fps = np.concatenate([base, base[:50], rng.integers(0, 2**64, 100, np.uint64)])
    nearest, pairs, samples = report.neighbourhood(fps, 12)
    d = brute.distances(fps)
    np.fill_diagonal(d, 99)
    want = d.min(axis=1)
    assert nearest.tolist() == np.where(want <= 12, want, report.NONE).tolist()
    within = brute.pairs(fps, 12)
    assert pairs.tolist() == [sum(1 for p in within if p[2] == e) for e in range(13)]
    for e, some in samples.items():
        assert 0 < e <= 12 and len(some) <= report.SAMPLES_PER_DISTANCE
        assert all(int(d[a, b]) == e and a < b for a, b in some)


def test_the_reports_search_costs_no_more_than_the_jobs_on_a_dense_corpus(tmp_path):
    # 100k 8-word texts from 20 words at k = 13: the report searched to 14 at 1.7 times the job's
    # comparisons (24 billion against 14), and tripled the job's 213 s.
    from neardup import _core, report

    path = dense_corpus(tmp_path / "dense.jsonl", 100_000)
    fps = neardup.Simhasher().fingerprint_many(
        [json.loads(line)["text"] for line in path.read_text().splitlines()]
    )
    values = np.unique(fps)
    job = _core.search_cost(values, 13)
    assert job > report.REACH_FLOOR  # the floor does not decide here
    reach = report.affordable_reach(fps, 13)
    assert reach == 13 and _core.search_cost(values, reach + 1) > job
