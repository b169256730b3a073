"""Benchmarks of the index and batch mode, each against a baseline timed in the same run.

Run on a release build (not an editable debug build):

    python -m pip install .            # release wheel
    python -m pytest benches/bench_index.py -p no:cacheprovider --benchmark-disable-gc -s

The last test prints a table of the figures and their ratios to the baselines and writes it to
``benches/results/index.md``. ``NEARDUP_BENCH_LARGE=0`` skips the 10M-fingerprint cases.

Baselines: numpy brute force (all pairs by XOR and popcount in blocks), simhash-pybind's
``find_all`` (C++ permuted tables) and the pure-Python ``simhash`` package's ``SimhashIndex``
(run in a subprocess from ``NEARDUP_SIMHASH_PURE``, a ``pip install --target`` folder, because
simhash-pybind installs a module of the same name).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import neardup

LARGE = os.environ.get("NEARDUP_BENCH_LARGE", "1") != "0"
PURE_SIMHASH = os.environ.get("NEARDUP_SIMHASH_PURE", "/tmp/neardup-peers/simhash-pure")
RESULTS: dict[str, float] = {}
NOTES: dict[str, str] = {}


def planted(n: int, seed: int = 1) -> np.ndarray:
    """n random fingerprints of which 1% are copies of others with 1 to 3 bits flipped."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    m = n // 100
    near = x[:m].copy()
    flips = rng.integers(1, 4, size=m)
    for step in range(3):
        bit = np.uint64(1) << rng.integers(0, 64, size=m).astype(np.uint64)
        near[flips > step] ^= bit[flips > step]
    x[n - m :] = near
    return x


def brute_force_pairs(fps: np.ndarray, k: int, block: int = 256) -> int:
    """Pairs within k by comparing every pair with numpy, a block of rows at a time."""
    found = 0
    for start in range(0, len(fps), block):
        rows = fps[start : start + block]
        rest = fps[start:]
        d = np.bitwise_count(rows[:, None] ^ rest[None, :])
        hits = d <= k
        # Keep j > i only: row r of the block is column r of `rest`.
        found += int(np.triu(hits, 1).sum())
    return found


def timed(benchmark, key: str, fn, *args, rounds: int = 1, **kwargs):
    result = benchmark.pedantic(
        fn, args=args, kwargs=kwargs, rounds=rounds, iterations=1, warmup_rounds=0
    )
    RESULTS[key] = benchmark.stats.stats.min
    return result


@pytest.fixture(scope="module")
def data():
    out = {"100k": planted(100_000), "1M": planted(1_000_000)}
    if LARGE:
        out["10M"] = planted(10_000_000)
    return out


def test_numpy_brute_force_100k(benchmark, data):
    pairs = timed(benchmark, "numpy brute force find_all 100k", brute_force_pairs, data["100k"], 3)
    NOTES["numpy brute force find_all 100k"] = f"{pairs} pairs"


def test_find_all_100k(benchmark, data):
    i, _, _ = timed(benchmark, "neardup find_all 100k", neardup.find_all, data["100k"], 3, rounds=5)
    NOTES["neardup find_all 100k"] = f"{len(i)} pairs"


def test_find_all_1m(benchmark, data):
    i, _, _ = timed(benchmark, "neardup find_all 1M", neardup.find_all, data["1M"], 3, rounds=3)
    NOTES["neardup find_all 1M"] = f"{len(i)} pairs, plan {neardup.plan(3, n=1_000_000)!r}"


def test_find_all_1m_one_thread(benchmark, data):
    timed(
        benchmark,
        "neardup find_all 1M, 1 thread",
        neardup.find_all,
        data["1M"],
        3,
        threads=1,
        rounds=3,
    )
    cpu = time.process_time()
    neardup.find_all(data["1M"], 3, threads=1)
    RESULTS["neardup find_all 1M, 1 thread, CPU seconds"] = time.process_time() - cpu


@pytest.mark.skipif(not LARGE, reason="NEARDUP_BENCH_LARGE=0")
def test_find_all_10m(benchmark, data):
    cpu = time.process_time()
    i, _, _ = timed(benchmark, "neardup find_all 10M", neardup.find_all, data["10M"], 3)
    RESULTS["neardup find_all 10M, CPU seconds (all threads)"] = time.process_time() - cpu
    NOTES["neardup find_all 10M"] = f"{len(i)} pairs"


def test_simhash_pybind_find_all(benchmark, data):
    simhash = pytest.importorskip("simhash")
    if not hasattr(simhash, "find_all"):
        pytest.skip("the installed `simhash` module is not simhash-pybind")
    for size in ("100k", "1M"):
        hashes = data[size].tolist()
        start = time.perf_counter()
        pairs = simhash.find_all(hashes, 6, 3)
        RESULTS[f"simhash-pybind find_all {size}"] = time.perf_counter() - start
        NOTES[f"simhash-pybind find_all {size}"] = f"{len(pairs)} distinct value pairs, 6 blocks"
    benchmark.pedantic(lambda: None, rounds=1)


PURE_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from simhash import Simhash, SimhashIndex
    n = int(sys.argv[1])
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    x[n - n // 100:] = x[: n // 100] ^ np.uint64(0b101)
    values = x.tolist()
    start = time.perf_counter()
    index = SimhashIndex([(str(i), Simhash(v)) for i, v in enumerate(values)], k=3)
    built = time.perf_counter() - start
    start = time.perf_counter()
    found = sum(len(index.get_near_dups(Simhash(v))) for v in values[:2000])
    queried = time.perf_counter() - start
    print(json.dumps({"build": built, "queries_per_s": 2000 / queried, "found": found}))
    """
)


def test_pure_simhash_index(benchmark, data):
    if not Path(PURE_SIMHASH, "simhash").is_dir():
        pytest.skip(f"pure-Python simhash not installed in {PURE_SIMHASH}")
    n = 20_000
    env = dict(os.environ, PYTHONPATH=PURE_SIMHASH)
    out = subprocess.run(
        [sys.executable, "-c", PURE_SCRIPT, str(n)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    peer = json.loads(out.stdout)
    RESULTS["simhash SimhashIndex build 20k"] = peer["build"]
    RESULTS["simhash SimhashIndex queries/s (20k)"] = peer["queries_per_s"]
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    x[n - n // 100 :] = x[: n // 100] ^ np.uint64(0b101)
    start = time.perf_counter()
    index = neardup.SimhashIndex(k=3, expected_size=n)
    index.add(x)
    RESULTS["neardup SimhashIndex build 20k"] = time.perf_counter() - start
    start = time.perf_counter()
    for v in x[:2000].tolist():
        index.query(v)
    RESULTS["neardup SimhashIndex queries/s (20k, one by one)"] = 2000 / (
        time.perf_counter() - start
    )
    benchmark.pedantic(lambda: None, rounds=1)


@pytest.fixture(scope="module")
def big_index(data):
    fps = data["10M"] if LARGE else data["1M"]
    start = time.perf_counter()
    index = neardup.SimhashIndex(k=3, expected_size=len(fps))
    index.add(fps)
    RESULTS[f"neardup SimhashIndex build {len(fps) // 1_000_000}M"] = time.perf_counter() - start
    return index, fps


def test_query_throughput(benchmark, big_index):
    index, fps = big_index
    size = f"{len(fps) // 1_000_000}M"
    rng = np.random.default_rng(7)
    queries = np.concatenate(
        [fps[rng.integers(0, len(fps), 100_000)], rng.integers(0, 2**64, 100_000, dtype=np.uint64)]
    )
    timed(benchmark, "query_many 200k, 1 thread", index.query_many, queries, threads=1)
    RESULTS[f"neardup queries/s per core ({size}, query_many)"] = len(queries) / RESULTS.pop(
        "query_many 200k, 1 thread"
    )
    # On a shared machine wall time counts other processes' turns too: CPU time does not.
    cpu = time.process_time()
    index.query_many(queries, threads=1)
    RESULTS[f"neardup queries per CPU-second ({size}, query_many)"] = len(queries) / (
        time.process_time() - cpu
    )
    start = time.perf_counter()
    index.query_many(queries)
    RESULTS[f"neardup queries/s all cores ({size}, query_many)"] = len(queries) / (
        time.perf_counter() - start
    )
    start = time.perf_counter()
    for q in queries[:20_000].tolist():
        index.query(q)
    RESULTS[f"neardup queries/s ({size}, query one by one)"] = 20_000 / (
        time.perf_counter() - start
    )
    start = time.perf_counter()
    for q in queries[:10].tolist():
        d = neardup.hamming_many(q, fps)
        np.flatnonzero(d <= 3)
    RESULTS[f"numpy brute force queries/s ({size})"] = 10 / (time.perf_counter() - start)
    NOTES[f"neardup queries/s per core ({size}, query_many)"] = (
        f"plan {index.plan!r}, half members, half random"
    )


MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import neardup

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1]) * 1024

    n = int(sys.argv[1])
    x = np.random.default_rng(1).integers(0, 2**64, size=n, dtype=np.uint64)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets the peak (VmHWM) to the current resident size
    before = status("VmRSS:")
    index = neardup.SimhashIndex(k=3, expected_size=n)
    index.add(x)
    peak = status("VmHWM:") - before
    held = status("VmRSS:") - before
    print(json.dumps({"nbytes": index.nbytes / n, "peak": peak / n, "held": held / n, "tables": len(index.plan.tables)}))
    """
)


def test_memory_per_fingerprint(benchmark):
    n = 10_000_000 if LARGE else 1_000_000
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(n)], capture_output=True, text=True, check=True
    )
    mem = json.loads(out.stdout)
    size = f"{n // 1_000_000}M"
    RESULTS[f"index bytes per fingerprint ({size})"] = mem["nbytes"]
    RESULTS[f"resident bytes per fingerprint after build ({size})"] = mem["held"]
    RESULTS[f"peak build memory bytes per fingerprint ({size})"] = mem["peak"]
    RESULTS["target bytes per fingerprint (8 T + 16)"] = 8 * mem["tables"] + 16
    benchmark.pedantic(lambda: None, rounds=1)


def ratio(a: str, b: str, invert: bool = False) -> str:
    if a not in RESULTS or b not in RESULTS:
        return ""
    x = RESULTS[b] / RESULTS[a] if not invert else RESULTS[a] / RESULTS[b]
    return f"{x:,.0f}x" if x >= 10 else f"{x:,.1f}x"


def test_zz_report():
    rows = []
    for key, value in RESULTS.items():
        unit = "" if ("/s" in key or "bytes" in key or "per CPU-second" in key) else " s"
        rows.append(
            f"| {key} | {value:,.3f}{unit} | {NOTES.get(key, '')} |"
            if value < 100
            else f"| {key} | {value:,.0f}{unit} | {NOTES.get(key, '')} |"
        )
    comparisons = [
        (
            "find_all 100k vs numpy brute force 100k",
            ratio("neardup find_all 100k", "numpy brute force find_all 100k"),
        ),
        (
            "find_all 1M vs numpy brute force 100k (100x fewer fingerprints)",
            ratio("neardup find_all 1M", "numpy brute force find_all 100k"),
        ),
        (
            "find_all 10M vs numpy brute force 100k (100x fewer fingerprints)",
            ratio("neardup find_all 10M", "numpy brute force find_all 100k"),
        ),
        (
            "find_all 100k vs simhash-pybind find_all 100k",
            ratio("neardup find_all 100k", "simhash-pybind find_all 100k"),
        ),
        (
            "find_all 1M vs simhash-pybind find_all 1M",
            ratio("neardup find_all 1M", "simhash-pybind find_all 1M"),
        ),
        (
            "SimhashIndex build 20k vs pure simhash SimhashIndex",
            ratio("neardup SimhashIndex build 20k", "simhash SimhashIndex build 20k"),
        ),
        (
            "queries one by one (20k) vs pure simhash SimhashIndex",
            ratio(
                "neardup SimhashIndex queries/s (20k, one by one)",
                "simhash SimhashIndex queries/s (20k)",
                invert=True,
            ),
        ),
    ]
    for size in ("10M", "1M"):
        key = f"neardup queries/s per core ({size}, query_many)"
        if key in RESULTS:
            comparisons.append(
                (
                    f"query_many per core vs numpy brute force per query ({size})",
                    ratio(key, f"numpy brute force queries/s ({size})", invert=True),
                )
            )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}, neardup {neardup.__version__}, "
        f"load average at the end {load:.1f}",
        "",
        "| measurement | value | note |",
        "|---|---|---|",
        *rows,
        "",
        "| speed-up | ratio |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in comparisons if value),
    ]
    text = "\n".join(lines)
    print("\n" + text)
    (Path(__file__).parent / "results" / "index.md").write_text(text + "\n")
