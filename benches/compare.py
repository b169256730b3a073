"""Fingerprinting speed: neardup against a pure-Python implementation of the same algorithm and the
`simhash` package from PyPI, all measured in one run on the Debian corpus. Writes a Markdown report.

    python benches/compare.py [--data ../shared/data] [--out benches/results/fingerprint.md]

Run it on a release build (`pip install .`), on a quiet machine; figures are best of --repeat runs.
The slow baselines run on a sample of --sample documents; rates (documents/s, MB/s) compare.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

# A child process pins itself to one core before neardup starts any thread.
if "--child" in sys.argv:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import neardup  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pure_python  # noqa: E402

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def single_core(args: argparse.Namespace, kernel: bool) -> float:
    """Seconds for the whole corpus in a child process pinned to one core."""
    import subprocess

    cmd = [sys.executable, __file__, "--data", str(args.data), "--repeat", str(args.repeat), "--child", "kernel" if kernel else "e2e"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def child(args: argparse.Namespace) -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with gzip.open(args.data / "debian-descriptions.jsonl.gz", "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    hasher = neardup.Simhasher()
    if args.child == "kernel":
        docs = [hasher.normalize(d) for d in docs]
        hasher = neardup.Simhasher(unicode_form=None, casefold=False)
    print(best_of(args.repeat, lambda: hasher.fingerprint_many(docs, threads=1)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", choices=["e2e", "kernel"], help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sample", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.child:
        return child(args)
    with gzip.open(args.data / "debian-descriptions.jsonl.gz", "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    sample = docs[: args.sample]
    size = sum(len(d.encode()) for d in docs)
    sample_size = sum(len(d.encode()) for d in sample)

    hasher = neardup.Simhasher()
    raw = neardup.Simhasher(unicode_form=None, casefold=False)
    normalized = [hasher.normalize(d) for d in docs]
    assert np.array_equal(hasher.fingerprint_many(docs), raw.fingerprint_many(normalized))
    # The baseline computes the same fingerprints (on this corpus's text).
    assert [pure_python.fingerprint(d) for d in sample[:500]] == hasher.fingerprint_many(sample[:500]).tolist()

    rows = []  # (name, documents, bytes, seconds)

    def measure(name, fn, n_docs, n_bytes, repeat=args.repeat):
        seconds = best_of(repeat, fn)
        rows.append((name, n_docs, n_bytes, seconds))
        print(f"{name}: {n_bytes / seconds / 1e6:.1f} MB/s", flush=True)

    measure("pure Python, same algorithm", lambda: [pure_python.fingerprint(d) for d in sample], len(sample), sample_size, 1)
    try:
        from simhash import Simhash

        measure("simhash (PyPI), its defaults", lambda: [Simhash(d).value for d in sample], len(sample), sample_size, 1)
    except ImportError:
        print("simhash not installed: pip install simhash", file=sys.stderr)
    for pinned, label in ((True, "one core"), (False, f"all cores ({os.cpu_count()})")):
        for kernel in (False, True):
            what = "kernel only (normalized text)" if kernel else "fingerprint_many (normalization included)"
            if pinned:
                # The whole process on one core, so no thread of ours (Python's, the core's) can
                # run beside another: a child process, pinned before it imports neardup.
                seconds = single_core(args, kernel)
                rows.append((f"neardup {what}, {label}", len(docs), size, seconds))
                print(f"{rows[-1][0]}: {size / seconds / 1e6:.1f} MB/s", flush=True)
            elif kernel:
                measure(f"neardup {what}, {label}", lambda: raw.fingerprint_many(normalized), len(docs), size)
            else:
                measure(f"neardup {what}, {label}", lambda: hasher.fingerprint_many(docs), len(docs), size)
    base = rows[0]
    base_rate = base[1] / base[3]
    lines = [
        "# Fingerprinting speed",
        "",
        f"Corpus: Debian package descriptions, {len(docs)} documents, {size / 1e6:.1f} MB "
        f"(slow baselines on the first {len(sample)}). Settings: `Simhasher()` defaults.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"neardup {neardup.__version__}. Best of {args.repeat} runs.",
        f"Command: `python benches/compare.py` ({time.strftime('%Y-%m-%d')})",
        "",
        "| what | documents/s | MB/s | vs pure Python |",
        "|---|---|---|---|",
    ]
    for name, n_docs, n_bytes, seconds in rows:
        lines.append(f"| {name} | {n_docs / seconds:,.0f} | {n_bytes / seconds / 1e6:.1f} | {n_docs / seconds / base_rate:,.0f}x |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
