"""Verified dedup against fingerprint-only dedup and datasketch on every corpus of the suite
(issue 12's "Done means"): removal precision and recall by the one scorer (synth.score), time
and peak memory of each run in a process of its own.

    python benches/corpora.py build                       # the suite, once (../benchdata/suite)
    python benches/bench_verified.py [--suite DIR] [--only NAME ...] [--synth FILE.jsonl ...]
        [--repeat N] [--write]

For each corpus:

- ``neardup dedup CORPUS --dry-run --clusters C.csv``: verified, the default (k = 8, Jaccard >= 0.8), and at k = 6, 9 and 10;
- the same with ``--no-verify`` (fingerprints only) at the same k, and at k = 3;
- datasketch ``MinHashLSH(threshold=0.8, num_perm=128)`` over the same word 3-shingles
  (neardup's, :func:`synth.neardup_shingles`), then connected components, the first document of
  each kept (:func:`datasketch_dedup`).

Each run's kept document for every document is read back from its clusters file and scored
against the corpus's truth: removal precision (removed documents whose exact Jaccard with their
kept document is >= 0.8, computed from the texts) and removal recall (documents with an earlier
document at >= 0.8 that are removed). Seconds are wall time of the whole process (Python start,
reading, writing the clusters file), peak MB its maximum resident set (``wait4``); with
``--repeat N`` every command, datasketch's included, runs N times and the fastest run counts.

The Debian corpus (``../shared/data``) joins when present and ``short`` was not made from it, and
synthetic corpora (``benches/synth.py``) with ``--synth``. ``--write`` writes
``benches/results/verified.md``.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402
import synth  # noqa: E402
from neardup.verify import THRESHOLD_K  # noqa: E402

RESULTS = HERE / "results" / "verified.md"


@dataclass(frozen=True)
class Corpus:
    name: str
    jsonl: Path
    truth: Path


def datasketch_dedup(texts: list[str], threshold: float = 0.8, num_perm: int = 128) -> np.ndarray:
    """datasketch's MinHashLSH over word 3-shingles, then connected components of the pairs it
    returns; the first document of each component is kept. Returns the kept row of every row."""
    from datasketch import MinHash, MinHashLSH

    def sketch(text: str) -> Any:
        m = MinHash(num_perm=num_perm)
        m.update_batch([s.encode("utf-8") for s in synth.neardup_shingles(text)])
        return m

    return _lsh_components(texts, sketch, MinHashLSH(threshold=threshold, num_perm=num_perm))


def rensa_dedup(
    texts: list[str], threshold: float = 0.8, num_perm: int = 128, num_bands: int = 16
) -> np.ndarray:
    """rensa's RMinHashLSH over the same word 3-shingles as :func:`datasketch_dedup`, then
    connected components of the pairs its bands return, the first document of each kept."""
    from rensa import RMinHash, RMinHashLSH

    def sketch(text: str) -> Any:
        m = RMinHash(num_perm=num_perm, seed=42)
        m.update(list(synth.neardup_shingles(text)))
        return m

    lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=num_bands)
    return _lsh_components(texts, sketch, lsh)


def _lsh_components(texts: list[str], sketch: Any, lsh: Any) -> np.ndarray:
    """Each text's sketch queried against an LSH index of those before it, then inserted; the
    kept row (the first of its connected component of matches) of every row."""
    parent = list(range(len(texts)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, text in enumerate(texts):
        m = sketch(text)
        for j in lsh.query(m):
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)  # the root of a component is its first row
        lsh.insert(i, m)
    return np.array([find(i) for i in range(len(texts))], dtype=np.int64)


def _datasketch_main(corpus: Path, out: Path) -> None:
    ids, texts = synth.read_corpus(corpus)
    kept = datasketch_dedup(texts)
    with open(out, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "kept_id"])
        w.writerows((doc_id, ids[k]) for doc_id, k in zip(ids, kept.tolist()))


#: Runs a command and prints its wall seconds and peak RSS in KB. A small process of its own starts
#: it: a child's ru_maxrss counts the memory of the process that forked it, so forking from this
#: one (which holds the corpus and its truth) would inflate every figure.
_LAUNCHER = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(os.waitstatus_to_exitcode(status), time.perf_counter() - t, usage.ru_maxrss)
"""


#: The environment of the measured commands: Python may cache compiled modules, as it does for
#: an installed package (pip compiles them at install time), even where the calling shell sets
#: PYTHONDONTWRITEBYTECODE; otherwise every run would compile neardup's modules again (about
#: 0.1 s, a tenth of a small corpus's run).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(cmd: list[str], repeat: int = 1) -> tuple[float, float]:
    """Runs cmd ``repeat`` times; (seconds, peak MB) of its fastest run (on a shared machine the
    other jobs only ever slow a run down)."""
    return min(_measure_once(cmd) for _ in range(repeat))


def _measure_once(cmd: list[str]) -> tuple[float, float]:
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *cmd],
        capture_output=True,
        text=True,
        check=False,
        env=_ENV,
    )
    try:
        code, seconds, kb = done.stdout.split()
    except ValueError:
        code, seconds, kb = "1", "0", "0"
    if done.returncode != 0 or code != "0":
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}): {done.stderr[-2000:]}")
    return float(seconds), int(kb) / 1024


def kept_rows(clusters: Path, row: dict[str, int]) -> np.ndarray:
    kept = np.empty(len(row), dtype=np.int64)
    with open(clusters, encoding="utf-8", newline="") as f:
        for rec in csv.DictReader(f):
            kept[row[rec["id"]]] = row[rec["kept_id"]]
    return kept


K = THRESHOLD_K  # the default candidate radius of verified dedup
VERIFIED, NO_VERIFY, DATASKETCH = (
    f"neardup verified (default, k = {K})",
    f"neardup --no-verify (k = {K})",
    "datasketch MinHashLSH(0.8, 128) + components",
)
METHODS = [
    (VERIFIED, []),
    ("neardup verified, k = 6", ["--k", "6"]),
    ("neardup verified, k = 9", ["--k", "9"]),
    ("neardup verified, k = 10", ["--k", "10"]),
    (NO_VERIFY, ["--no-verify", "--k", str(K)]),
    ("neardup --no-verify (k = 3)", ["--no-verify", "--k", "3"]),
    (DATASKETCH, None),
]


def oracle_stars(truth: synth.Truth) -> np.ndarray:
    """Stars in row order with every pair at Jaccard >= 0.8 known (perfect candidates, exact
    Jaccard): the most any star clustering can remove without drift."""
    n = truth.n
    near = truth.jaccard >= 0.8 - 1e-9
    lo, hi = truth.keys[near] // n, truth.keys[near] % n
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    starts = np.searchsorted(lo, np.arange(n + 1))
    kept = np.full(n, -1, dtype=np.int64)
    for c in range(n):
        if kept[c] == -1:
            kept[c] = c
            later = hi[starts[c] : starts[c + 1]]
            kept[later[kept[later] == -1]] = c
    return kept


def run_corpus(corpus: Corpus, work: Path, repeat: int = 1) -> list[str]:
    ids, texts = synth.read_corpus(corpus.jsonl)
    truth = synth.load_truth(corpus.truth, ids)
    row = {doc_id: i for i, doc_id in enumerate(ids)}
    nbytes = corpus.jsonl.stat().st_size
    lines = [
        f"### {corpus.name}: {len(ids):,} documents, {nbytes / 1e6:,.1f} MB, "
        f"{int((truth.jaccard >= 0.8 - 1e-9).sum()):,} pairs at Jaccard >= 0.8",
        "",
        "| method | removed | removal precision | removal recall | seconds | peak MB |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    times: dict[str, tuple[float, float]] = {}
    for name, flags in METHODS:
        clusters = work / f"{corpus.name}-{len(times)}.csv"
        if flags is None:
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "_datasketch",
                str(corpus.jsonl),
                str(clusters),
            ]
        else:
            cmd = [
                sys.executable,
                "-m",
                "neardup",
                "dedup",
                str(corpus.jsonl),
                "--dry-run",
                "--quiet",
                "--clusters",
                str(clusters),
                *flags,
            ]
        seconds, mb = measure(cmd, repeat)
        times[name] = (seconds, mb)
        s = synth.score(
            None,
            truth,
            kept_row=kept_rows(clusters, row),
            texts=texts,
            shingler=synth.neardup_shingles,
        )
        line = (
            f"| {name} | {s['removed']:,} | {s['removal_precision']:.4f} | {s['removal_recall']:.4f} "
            f"(of {s['to_remove']:,}) | {seconds:.2f} | {mb:,.0f} |"
        )
        lines.append(line)
        print(line, flush=True)
        clusters.unlink()
    s = synth.score(None, truth, kept_row=oracle_stars(truth))
    line = f"| stars with every pair >= 0.8 known (the ceiling of any drift-free clustering) | {s['removed']:,} | 1 | {s['removal_recall']:.4f} | | |"
    lines.append(line)
    print(line, flush=True)
    (vt, vm), (nt, nm), (dt, _) = times[VERIFIED], times[NO_VERIFY], times[DATASKETCH]
    lines += [
        "",
        f"verified / no-verify at k = {K}: {vt / nt:.2f}x the time, {vm / nm:.2f}x the peak memory; "
        f"neardup verified is {dt / vt:.1f}x datasketch's speed",
        "",
    ]
    print("\n".join(lines[-2:]), flush=True)
    return lines


def suite_corpora(suite: Path, only: list[str] | None) -> list[Corpus]:
    found = []
    for name in only or corpora.CORPORA:
        jsonl, truth = suite / f"{name}.jsonl", suite / f"{name}.truth.tsv.gz"
        if (suite / f"{name}.done").exists():
            found.append(Corpus(name, jsonl, truth))
        else:
            print(
                f"{name}: not built in {suite} (python benches/corpora.py build --only {name})",
                file=sys.stderr,
            )
    return found


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "_datasketch":
        _datasketch_main(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--suite", type=Path, default=corpora.DEFAULT_OUT)
    ap.add_argument("--only", action="append", choices=corpora.CORPORA + ["debian"])
    ap.add_argument(
        "--synth",
        action="append",
        type=Path,
        default=[],
        help="a corpus-N-sS.jsonl of benches/synth.py",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each command, every method alike; the fastest is reported",
    )
    ap.add_argument(
        "--write", action="store_true", help=f"write {RESULTS.relative_to(HERE.parent)}"
    )
    args = ap.parse_args(argv)
    todo = suite_corpora(
        args.suite, [n for n in args.only or [] if n != "debian"] or (None if not args.only else [])
    )
    short = args.suite / "short.jsonl"
    from_debian = short.exists() and '"source": "debian:' in short.open(encoding="utf-8").readline()
    if (
        synth.DEBIAN_JSONL_GZ.exists()
        and not from_debian
        and (not args.only or "debian" in args.only)
    ):
        plain = args.suite / "debian.jsonl"  # neardup reads .gz too; plain keeps every run alike
        if not plain.exists():
            import gzip

            plain.write_bytes(gzip.decompress(synth.DEBIAN_JSONL_GZ.read_bytes()))
        todo.append(Corpus("debian", plain, synth.DEBIAN_TRUTH))
    for path in args.synth:
        todo.append(
            Corpus(
                path.stem,
                path,
                path.with_name(path.name.replace("corpus-", "truth-").replace(".jsonl", ".tsv.gz")),
            )
        )
    measure([sys.executable, "-c", "import neardup.cli"])  # compiles the modules once, uncounted
    out = [
        "# Verified dedup on the corpus suite",
        "",
        "`python benches/bench_verified.py --write` (corpora: `python benches/corpora.py build`), "
        f"{os.cpu_count()} cores, the fastest of {args.repeat} run(s) of each command. Removal precision: removed documents whose exact word-3-shingle Jaccard with "
        "their kept document is >= 0.8; removal recall: documents with an earlier document at >= 0.8 that are "
        "removed (`synth.score`). Seconds and peak MB: the whole process.",
        "",
    ]
    with tempfile.TemporaryDirectory() as work:
        for corpus in todo:
            out += run_corpus(corpus, Path(work), args.repeat)
    if args.write:
        RESULTS.write_text("\n".join(out) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
