"""Throughput of the seeds' other encoders and of neardup.compat, each beside a baseline measured
in the same run (a pure-Python or numpy implementation of the same algorithm, or the `simhash`
package itself). Writes a Markdown report.

    python benches/bench_encoders.py [--data ../shared/data] [--seed-zh FILE] [--out benches/results/encoders.md]

Run it on a release build (`pip install .`), on a quiet machine; figures are best of --repeat runs.
Every baseline is checked to compute the same output as neardup before it is timed.

Without the Debian corpus in --data (a fresh clone) it times the 3,000-document sample that ships
with neardup, and without ../shared/seeds the Chinese lines of benches/data/zh-simhash.txt; each
fallback is said in one line on stderr.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

import neardup
from neardup import compat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402  (the Debian corpus or the shipped sample)
from harness import best_of, publish  # noqa: E402

ROOT = HERE.parent
DATA = synth.DATA
SEED_ZH = ROOT.parent / "shared" / "seeds" / "002_4129d4cc20981ced.txt"
#: The Chinese text timed in a fresh clone, where ../shared/seeds is absent: a few sentences about
#: SimHash written for these benchmarks (committed here; jieba ships a dictionary, not sentences).
ZH_FALLBACK = HERE / "data" / "zh-simhash.txt"

MASK = (1 << 64) - 1
OFFSET, PRIME = 0xCBF29CE484222325, 0x100000001B3


def fnv1a_64(data: bytes) -> int:
    h = OFFSET
    for byte in data:
        h = ((h ^ byte) * PRIME) & MASK
    return h


def splitmix(seed: int, j: int) -> int:
    z = (seed + 0x9E3779B97F4A7C15 * (j + 1)) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def sparse_python(tokens: list[str], size: int, active: int) -> list[int]:
    """The sparse encoder in plain Python: extendable hashes, +1/-1 sums, top `active`."""
    sums = [0] * size
    words = -(-size // 64)
    for token in tokens:
        seed = fnv1a_64(token.encode("utf-8"))
        for j in range(words):
            w = splitmix(seed, j)
            for b in range(min(64, size - 64 * j)):
                sums[64 * j + b] += 1 if (w >> b) & 1 else -1
    return sorted(sorted(range(size), key=lambda i: (-sums[i], i))[:active])


def minhash_python(text: str, r: int = 3, n: int = 4) -> int:
    """The minhash key of word n-shingles in plain Python (same tokens as pure_python.py)."""
    import unicodedata

    words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold())
    shingles = (
        {" ".join(words[i : i + n]) for i in range(max(len(words) - n + 1, 1))} if words else set()
    )
    key = 0
    for h in sorted(fnv1a_64(s.encode("utf-8")) for s in shingles)[:r]:
        key ^= h
    return key


def debian_docs(data: Path, n: int) -> list[str]:
    """The first ``n`` texts of the Debian corpus in ``data``, or of the sample that ships with
    neardup where it is absent (one line on stderr)."""
    with gzip.open(synth.debian_source(data), "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f][:n]


def chinese_lines(seed: Path = SEED_ZH) -> tuple[str, list[str]]:
    """(name, lines) of the Chinese text timed: the lines of ``seed`` with ten Chinese characters
    in a row, or those of benches/data/zh-simhash.txt where ``seed`` is absent (one line on stderr)."""
    if not seed.is_file():
        print(
            f"no {seed}: timing the Chinese lines of {ZH_FALLBACK.relative_to(ROOT)} instead",
            file=sys.stderr,
            flush=True,
        )
        seed = ZH_FALLBACK
    text = seed.read_text(encoding="utf-8")
    name = "seed 002" if seed.name == SEED_ZH.name else str(seed.name)
    return name, [
        line.strip() for line in text.splitlines() if re.search("[\u4e00-\u9fff]{10}", line)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument(
        "--seed-zh",
        type=Path,
        default=SEED_ZH,
        help="Chinese text for the tokenizer rows (default: seed 002)",
    )
    ap.add_argument("--docs", type=int, default=20000, help="documents for the fast contenders")
    ap.add_argument("--sample", type=int, default=1000, help="documents for the slow baselines")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    docs = debian_docs(args.data, args.docs)
    sample = docs[: args.sample]
    rows: list[tuple[str, str, int, float, str]] = []  # (group, what, items, seconds, unit)

    def measure(
        group: str, what: str, fn, items: int, repeat: int = args.repeat, unit: str = "items"
    ) -> None:
        seconds = best_of(repeat, fn)
        rows.append((group, what, items, seconds, unit))
        print(f"{group} | {what}: {items / seconds:,.0f} {unit}/s", flush=True)

    # -- sparse encoder --------------------------------------------------------------------------
    token_lists = [d.split() for d in docs]
    tokens_sample = token_lists[: args.sample // 10]
    enc = neardup.SparseEncoder(size=2048, active=40)
    assert [sparse_python(t, 2048, 40) for t in tokens_sample[:5]] == enc.encode_many(
        tokens_sample[:5]
    ).tolist()
    g = "SparseEncoder(2048, 40), token lists"
    measure(
        g,
        "pure Python, same algorithm",
        lambda: [sparse_python(t, 2048, 40) for t in tokens_sample],
        len(tokens_sample),
        1,
    )
    measure(
        g,
        "neardup encode, one list a call",
        lambda: [enc.encode(t) for t in token_lists[:2000]],
        2000,
    )
    measure(
        g,
        "neardup encode_many, one core",
        lambda: enc.encode_many(token_lists, threads=1),
        len(token_lists),
    )
    measure(
        g,
        f"neardup encode_many, all cores ({os.cpu_count()})",
        lambda: enc.encode_many(token_lists),
        len(token_lists),
    )
    sim = neardup.SparseEncoder(size=2048, active=40, token_similarity=True)
    measure(
        g,
        "neardup encode_many, token_similarity=True, all cores",
        lambda: sim.encode_many(token_lists),
        len(token_lists),
    )

    # -- vector simhash --------------------------------------------------------------------------
    dim, n = 384, 50_000
    matrix = np.random.default_rng(0).normal(size=(n, dim)).astype(np.float32)
    vs = neardup.VectorSimhash(dim=dim)
    planes = vs.hyperplanes

    def numpy_simhash(m: np.ndarray, p: np.ndarray) -> np.ndarray:
        bits = m @ p.T > 0
        return np.packbits(bits, axis=1, bitorder="little").view("<u8").ravel()

    assert np.array_equal(
        numpy_simhash(matrix[:2000].astype(np.float64), planes), vs.fingerprint_many(matrix[:2000])
    )
    g = f"VectorSimhash(dim={dim}), float32 vectors"
    measure(
        g,
        "numpy float64 matmul (BLAS), same fingerprints",
        lambda: numpy_simhash(matrix.astype(np.float64), planes),
        n,
    )
    measure(
        g,
        "numpy float32 matmul (BLAS), rounding differs",
        lambda: numpy_simhash(matrix, planes.astype(np.float32)),
        n,
    )
    measure(
        g, "neardup fingerprint_many, one core", lambda: vs.fingerprint_many(matrix, threads=1), n
    )
    measure(
        g,
        f"neardup fingerprint_many, all cores ({os.cpu_count()})",
        lambda: vs.fingerprint_many(matrix),
        n,
    )

    # -- minhash keys ----------------------------------------------------------------------------
    assert [minhash_python(d) for d in sample[:200]] == neardup.minhash_key_many(
        sample[:200]
    ).tolist()
    g = "minhash_key, restrictiveness 3, word 4-shingles"
    measure(
        g,
        "pure Python, same algorithm",
        lambda: [minhash_python(d) for d in sample],
        len(sample),
        1,
    )
    measure(
        g,
        "neardup minhash_key, one text a call",
        lambda: [neardup.minhash_key(d) for d in docs[:5000]],
        5000,
    )
    measure(
        g, "neardup minhash_key_many, all cores", lambda: neardup.minhash_key_many(docs), len(docs)
    )
    measure(
        g,
        "neardup group_by_key of those keys",
        lambda: neardup.group_by_key(neardup.minhash_key_many(docs)),
        len(docs),
    )

    # -- tokenizers ------------------------------------------------------------------------------
    g = "Simhasher tokenizers, Debian texts"
    builtin = neardup.Simhasher()
    split = neardup.Simhasher(tokenizer=str.split)
    measure(
        g, "built-in tokenizer (Debian texts)", lambda: builtin.fingerprint_many(docs), len(docs)
    )
    measure(
        g, "tokenizer=str.split (Debian texts)", lambda: split.fingerprint_many(docs), len(docs)
    )
    zh_name, chinese = chinese_lines(args.seed_zh)
    try:
        jieba_hasher = neardup.Simhasher(tokenizer="jieba")
        jieba_hasher.fingerprint(chinese[0])  # load the dictionary before timing
        g = f"Simhasher tokenizers, Chinese lines of {zh_name}"
        measure(
            g,
            f"built-in tokenizer ({len(chinese)} lines)",
            lambda: builtin.fingerprint_many(chinese),
            len(chinese),
        )
        measure(
            g,
            'tokenizer="jieba" (same lines)',
            lambda: jieba_hasher.fingerprint_many(chinese),
            len(chinese),
        )
    except ImportError:
        print("jieba not installed: pip install 'neardup[zh]'")

    # -- compat ----------------------------------------------------------------------------------
    try:
        import simhash
    except ImportError:
        simhash = None
        print("simhash not installed: pip install simhash")
    if simhash is not None:
        g = "compat vs the simhash package (its defaults)"
        theirs = [simhash.Simhash(d).value for d in sample]
        assert compat.simhash_many(sample).tolist() == theirs
        measure(
            g, "simhash.Simhash(text)", lambda: [simhash.Simhash(d) for d in sample], len(sample), 1
        )
        measure(g, "compat.Simhash(text)", lambda: [compat.Simhash(d) for d in sample], len(sample))
        measure(g, "compat.simhash_many(texts)", lambda: compat.simhash_many(docs), len(docs))
        their_objs = [(str(i), simhash.Simhash(d)) for i, d in enumerate(sample)]
        our_objs = [(str(i), compat.Simhash(d)) for i, d in enumerate(sample)]

        def query_all(module, objs):
            index = module.SimhashIndex(objs, k=3)
            return [index.get_near_dups(h) for _, h in objs]

        assert [sorted(x) for x in query_all(simhash, their_objs)] == [
            sorted(x) for x in query_all(compat, our_objs)
        ]
        g = "compat vs the simhash package: index"
        measure(
            g,
            "simhash.SimhashIndex: build + query every entry, k=3",
            lambda: query_all(simhash, their_objs),
            len(sample),
            1,
            "queries",
        )
        measure(
            g,
            "compat.SimhashIndex: build + query every entry, k=3",
            lambda: query_all(compat, our_objs),
            len(sample),
            unit="queries",
        )

    lines = [
        "# Encoders and compat: throughput",
        "",
        f"Corpus: the first {len(docs)} Debian package descriptions (slow baselines on the first "
        f"{len(sample)} or fewer); random float32 vectors for VectorSimhash.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"neardup {neardup.__version__}. Best of {args.repeat} runs (1 for the slow baselines).",
        f"Command: `python benches/bench_encoders.py` ({time.strftime('%Y-%m-%d')})",
        "",
        "| group | what | items/s | vs first row of group |",
        "|---|---|---|---|",
    ]
    base: dict[str, float] = {}
    for group, what, items, seconds, unit in rows:
        rate = items / seconds
        base.setdefault(group, rate)
        lines.append(f"| {group} | {what} | {rate:,.0f} {unit}/s | {rate / base[group]:,.1f}x |")
    publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
