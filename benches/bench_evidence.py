"""Evidence you can trust at any scale (issue 28; docs/evidence.md): what the removals of a
default dedup rest on, and what it costs, for one or more installs of neardup in the same run.

    python benches/bench_evidence.py birthday [--n 2000000] --python NAME=PYTHON ...
    python benches/bench_evidence.py cost CORPUS.jsonl ... --python NAME=PYTHON ... [--repeat R]
    python benches/bench_evidence.py error CORPUS.jsonl ... --python NAME=PYTHON ...
    python benches/bench_evidence.py pairs CORPUS.jsonl ... --python NAME=PYTHON ...
    python benches/bench_evidence.py dask CORPUS.jsonl ... --python NAME=PYTHON ...

- ``birthday``: ``neardup.dedup`` of N distinct random one- and two-word texts (random 9-letter
  words, seeded): nothing should be removed; with 32-bit shingle hashes about N^2 / 2^33 were.
- ``cost``: wall time and peak memory (the child process's maximum resident set) of
  ``neardup.dedup(texts)`` with the defaults, the texts of a JSONL corpus (``"text"``) read into
  a list first (their memory counted in each install alike), each install in turn, R times
  (the best time and memory of the R are kept).
- ``error``: for each removal of the default ``neardup.dedup``, the reported Jaccard against the
  exact one (``neardup.jaccard`` of the two texts, which sketches whole sets): how many differ by
  more than 0.01, the largest difference, and how many removals are below the threshold.
- ``pairs``: ``neardup pairs CORPUS -o FILE`` (its wall time and peak memory), and for each
  listed pair the reported Jaccard against the exact one: how many differ by more than 0.01,
  the largest difference, how many listed pairs are below the threshold, and how many pairs
  decided exactly near the threshold the command says it read again.
- ``dask``: ``neardup.dask.dedup`` of the corpus in 8 partitions on a local cluster of 2
  workers (its wall time) against ``neardup.dedup``: the documents whose kept flag or kept row
  differ, the largest difference of their Jaccards, and the pairs it decided exactly.

Each ``--python NAME=PATH`` names an interpreter with a neardup installed (say the previous
release's and this one's); every measure runs in a fresh child process of each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

BIRTHDAY = r"""
import json, random, string, sys, time
import neardup
n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
letters = string.ascii_lowercase
words = set()
while len(words) < n + n // 2:
    words.add("".join(rng.choice(letters) for _ in range(9)))
words = sorted(words)
rng.shuffle(words)
# n distinct texts: half one word, half two words (every word used once).
texts = words[: n // 2] + [a + " " + b for a, b in zip(words[n // 2 :: 2], words[n // 2 + 1 :: 2])]
texts = texts[:n]
start = time.perf_counter()
result = neardup.dedup(texts)
print(json.dumps({"documents": len(texts), "distinct": len(set(texts)), "removed": int(result.n_removed),
                  "seconds": time.perf_counter() - start}))
"""

COST = r"""
import json, sys, time
import neardup
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
start = time.perf_counter()
result = neardup.dedup(texts)
evidence = {k: v for k, v in result.stats.items() if k.startswith(("band_", "short_pairs"))}
print(json.dumps({"documents": len(texts), "removed": int(result.n_removed),
                  "seconds": time.perf_counter() - start, "evidence": evidence}))
"""

ERROR = r"""
import json, sys
import numpy as np
import neardup
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
result = neardup.dedup(texts)
threshold = 0.8
removed = np.flatnonzero(~result.keep)
off, below, worst, exact_pairs = 0, 0, 0.0, 0
for r in removed.tolist():
    k = int(result.kept_row[r])
    reported = float(result.jaccard[r])
    exact = neardup.jaccard(texts[k], texts[r])
    worst = max(worst, abs(reported - exact))
    off += abs(reported - exact) > 0.01
    below += exact < threshold
print(json.dumps({"documents": len(texts), "removed": len(removed), "off_by_more_than_0.01": int(off),
                  "largest_error": worst, "removed_below_threshold": int(below)}))
"""

PAIRS = r"""
import csv, json, os, resource, subprocess, sys, tempfile, time
import neardup
corpus = sys.argv[1]
texts = {}
for line in open(corpus, encoding="utf-8"):
    d = json.loads(line)
    texts[d["id"]] = d["text"]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "pairs.csv")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "neardup", "pairs", corpus, "-o", out, "--limit", "0"],
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
said = [line for line in done.stdout.splitlines() if "near the threshold" in line]
exact_of = {}
off, below, worst = 0, 0, 0.0
for r in rows:
    a, b = texts[r["id_a"]], texts[r["id_b"]]
    if (a, b) not in exact_of:
        exact_of[(a, b)] = neardup.jaccard(a, b)
    exact = exact_of[(a, b)]
    reported = float(r["jaccard"])
    worst = max(worst, abs(reported - exact))
    off += abs(reported - exact) > 0.01
    below += exact < 0.8
print(json.dumps({"listed": len(rows), "off_by_more_than_0.01": off, "largest_error": round(worst, 4),
                  "listed_below_threshold": below, "read_again": said[0].split(" pair")[0] if said else "0",
                  "seconds": round(seconds, 2), "peak_mb": round(peak)}))
"""

DASK = r"""
import json, sys, time
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client
import neardup
import neardup.dask as ndd
if __name__ == "__main__":
    texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
    want = neardup.dedup(texts)
    with ndd.local_cluster(2, memory_limit="2GiB") as cluster, Client(cluster):
        stats = {}
        start = time.perf_counter()
        _, table = ndd.dedup(dd.from_pandas(pd.DataFrame({"text": texts}), npartitions=8),
                             clusters=True, stats=stats)
        got = table.compute()
        seconds = time.perf_counter() - start
    differ = (got["kept"].to_numpy() != want.keep) | (got["kept_id"].to_numpy() != want.kept_row)
    jaccard = np.abs(got["jaccard"].to_numpy(np.float64) - want.jaccard.astype(np.float64))
    print(json.dumps({"documents": len(texts), "removed": int(want.n_removed),
                      "rows_differing": int(differ.sum()), "largest_jaccard_difference": float(jaccard.max()),
                      "band_pairs_exact": stats.get("band_pairs_exact"), "seconds_dask": round(seconds, 2),
                      "seconds_verify": round(stats["seconds_verify"], 2)}))
"""


def peak_of(python: str, code: str, *args: str) -> tuple[dict, float]:
    """(the JSON the child printed, its peak resident memory in MB, as it reports it)."""
    wrapped = (
        "import resource, sys\n"
        "code = sys.argv[1]\n"
        "sys.argv = ['-c'] + sys.argv[2:]\n"
        "exec(compile(code, '<bench>', 'exec'), {'__name__': '__main__'})\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(
        [python, "-c", wrapped, code, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{python}: {done.stderr.strip()}")
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-2]), int(lines[-1]) / 1024


def pythons(values: list[str]) -> list[tuple[str, str]]:
    out = []
    for v in values:
        name, _, path = v.partition("=")
        if not path:
            raise SystemExit(f"--python takes NAME=PATH, got {v!r}")
        out.append((name, path))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("what", choices=["birthday", "cost", "error", "pairs", "dask"])
    ap.add_argument("corpora", nargs="*")
    ap.add_argument("--python", action="append", default=[], help="NAME=PATH of an interpreter")
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    installs = pythons(args.python) or [("this", sys.executable)]
    if args.what == "birthday":
        for name, python in installs:
            got, peak = peak_of(python, BIRTHDAY, str(args.n), str(args.seed))
            print(f"{name}: {json.dumps(got)}, peak {peak:.0f} MB", flush=True)
        return
    for corpus in args.corpora:
        if args.what in ("error", "pairs", "dask"):
            code = {"error": ERROR, "pairs": PAIRS, "dask": DASK}[args.what]
            for name, python in installs:
                got, _ = peak_of(python, code, corpus)
                print(f"{corpus} {name}: {json.dumps(got)}", flush=True)
            continue
        best: dict[str, tuple[float, float, int, dict]] = {}
        for _ in range(args.repeat):
            for name, python in installs:  # interleaved, so that load falls on both alike
                got, peak = peak_of(python, COST, corpus)
                seconds, mb = got["seconds"], peak
                old = best.get(name)
                best[name] = (
                    min(seconds, old[0]) if old else seconds,
                    min(mb, old[1]) if old else mb,
                    got["removed"],
                    got.get("evidence", {}),
                )
        base = best[installs[0][0]]
        for name, _ in installs:
            s, mb, removed, evidence = best[name]
            print(
                f"{corpus} {name}: dedup {s:.2f} s ({s / base[0]:.2f}x), peak {mb:.0f} MB "
                f"({mb / base[1]:.2f}x), removed {removed} {json.dumps(evidence)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
