"""Prefix candidates against fingerprint candidates and datasketch on the corpus suite (issue
27, item 2): for each corpus, ``neardup dedup --candidates prefix`` and ``--candidates
fingerprint`` (verified, Jaccard >= 0.8, k = 8), alternating, and datasketch
``MinHashLSH(threshold=0.8, num_perm=128)`` + connected components (``bench_verified.py``'s).

    python benches/prefix_candidates.py [--suite DIR] [--only NAME ...] [--repeat N]

Per run: documents removed, **kept documents that still have a kept partner at word-3-shingle
Jaccard >= 0.8** (from the corpus's truth file: what the completeness bar counts), CPU seconds
(user + system of the process) and peak MB (``wait4``), and the evidence's candidate counts
(``prefix_pairs``, ``pairs_compared``).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402


def kept_with_partner(ids: list[str], kept_id: list[str], truth: Path) -> int:
    """Kept documents with a kept partner at >= 0.8 in the truth."""
    row = {d: i for i, d in enumerate(ids)}
    kept = np.array([k == d for d, k in zip(ids, kept_id)])
    found = set()
    with gzip.open(truth, "rt", encoding="utf-8") as f:
        next(f)
        for line in f:
            a, b, j = line.rstrip("\n").split("\t")
            if float(j) >= 0.8:
                x, y = row[a], row[b]
                if kept[x] and kept[y]:
                    found.update((x, y))
    return len(found)


def timed(argv: list[str]) -> tuple[float, float, str]:
    """(CPU seconds, peak MB, stdout) of a command, measured by ``/usr/bin/time``."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", t.name, *argv],
            capture_output=True,
            text=True,
            check=True,
        )
        user, system, peak = t.read().split()[-3:]
    return float(user) + float(system), int(peak) / 1024, done.stdout


def read_kept(path: Path) -> tuple[list[str], list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [r["id"] for r in rows], [r["kept_id"] for r in rows]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--suite", type=Path, default=corpora.DEFAULT_OUT)
    ap.add_argument("--only", action="append", choices=corpora.CORPORA)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-datasketch", action="store_true")
    args = ap.parse_args(argv)
    neardup = [sys.executable, "-m", "neardup"]
    print(
        "| corpus | method | removed | kept with a kept partner >= 0.8 | CPU s | peak MB | prefix pairs | pairs compared |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.only or corpora.CORPORA:
        jsonl, truth = args.suite / f"{name}.jsonl", args.suite / f"{name}.truth.tsv.gz"
        with tempfile.TemporaryDirectory() as tmp:
            for _attempt in range(args.repeat):
                for mode in ("fingerprint", "prefix"):
                    out = Path(tmp) / f"{mode}.csv"
                    cpu, peak, report = timed(
                        [
                            *neardup,
                            "dedup",
                            str(jsonl),
                            "--dry-run",
                            "--clusters",
                            str(out),
                            "--candidates",
                            mode,
                            "--json",
                        ]
                    )
                    evidence = json.loads(report).get("evidence", {})
                    ids, kept_id = read_kept(out)
                    removed = sum(a != b for a, b in zip(ids, kept_id))
                    left = kept_with_partner(ids, kept_id, truth)
                    print(
                        f"| {name} | neardup --candidates {mode} | {removed:,} | {left:,} | "
                        f"{cpu:.2f} | {peak:.0f} | {evidence.get('prefix_pairs', 0):,} | "
                        f"{evidence.get('pairs_compared', 0):,} |",
                        flush=True,
                    )
            if not args.no_datasketch:
                out = Path(tmp) / "datasketch.csv"
                code = (
                    "import sys; sys.path.insert(0, sys.argv[1]); import bench_verified as b; "
                    "from pathlib import Path; b._datasketch_main(Path(sys.argv[2]), Path(sys.argv[3]))"
                )
                cpu, peak, _ = timed([sys.executable, "-c", code, str(HERE), str(jsonl), str(out)])
                ids, kept_id = read_kept(out)
                removed = sum(a != b for a, b in zip(ids, kept_id))
                left = kept_with_partner(ids, kept_id, truth)
                print(
                    f"| {name} | datasketch MinHashLSH(0.8, 128) + components | {removed:,} | "
                    f"{left:,} | {cpu:.2f} | {peak:.0f} | | |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
