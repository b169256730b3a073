"""pytest-benchmark suite for fingerprinting: `pytest benches/bench_fingerprint.py` on a release build.

Each group times neardup beside the pure-Python implementation of the same algorithm and the
`simhash` package, on the same documents in the same session; compare the rows of a group (the
`ops` column is documents/s when divided by the documents in extra_info). `benches/compare.py`
turns the same measurements into a report with ratios.
"""

import sys
from pathlib import Path

import pytest

import neardup

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pure_python  # noqa: E402

SAMPLE = 2000


@pytest.fixture(scope="module")
def sample(corpus):
    return corpus[:SAMPLE]


def _info(benchmark, docs):
    benchmark.extra_info["documents"] = len(docs)
    benchmark.extra_info["bytes"] = sum(len(d.encode()) for d in docs)


@pytest.mark.benchmark(group="fingerprint 2000 documents")
def test_pure_python(benchmark, sample):
    _info(benchmark, sample)
    benchmark.pedantic(lambda: [pure_python.fingerprint(d) for d in sample], rounds=3)


@pytest.mark.benchmark(group="fingerprint 2000 documents")
def test_simhash_package(benchmark, sample):
    simhash = pytest.importorskip("simhash")
    _info(benchmark, sample)
    benchmark.pedantic(lambda: [simhash.Simhash(d).value for d in sample], rounds=3)


@pytest.mark.benchmark(group="fingerprint 2000 documents")
@pytest.mark.parametrize("threads", [1, None], ids=["1 thread", "all threads"])
def test_neardup(benchmark, sample, threads):
    _info(benchmark, sample)
    hasher = neardup.Simhasher()
    benchmark(hasher.fingerprint_many, sample, threads=threads)


@pytest.mark.benchmark(group="fingerprint the whole corpus")
@pytest.mark.parametrize("threads", [1, None], ids=["1 thread", "all threads"])
@pytest.mark.parametrize(
    "options", [{}, {"ngram": 3}, {"tokens": "char", "ngram": 5}], ids=["default", "word3", "char5"]
)
def test_neardup_corpus(benchmark, corpus, threads, options):
    _info(benchmark, corpus)
    hasher = neardup.Simhasher(**options)
    benchmark(hasher.fingerprint_many, corpus, threads=threads)


@pytest.mark.benchmark(group="hamming one to many, 1M fingerprints")
def test_hamming_many(benchmark):
    import numpy as np

    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    benchmark(neardup.hamming_many, int(fps[0]), fps)


@pytest.mark.benchmark(group="hamming one to many, 1M fingerprints")
def test_hamming_numpy_baseline(benchmark):
    import numpy as np

    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    benchmark(lambda: np.bitwise_count(fps ^ fps[0]))
