"""`python -m neardup`: fingerprint the Debian sample that ships with neardup and show its
near-duplicates, as a first look at what the library does."""

from __future__ import annotations

import argparse
import gzip
import json
import time
from importlib import resources

import numpy as np

import neardup


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m neardup", description=__doc__)
    ap.add_argument("--k", type=int, default=3, help="largest Hamming distance of a near-duplicate (default 3)")
    ap.add_argument("--examples", type=int, default=5, help="pairs to show (default 5)")
    args = ap.parse_args(argv)
    sample = resources.files("neardup") / "data" / "debian-sample.jsonl.gz"
    with sample.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    texts = [d["text"] for d in docs]
    size = sum(len(t.encode()) for t in texts)

    start = time.perf_counter()
    fps = neardup.Simhasher().fingerprint_many(texts)
    seconds = time.perf_counter() - start
    print(f"{len(texts)} documents, {size / 1e6:.1f} MB: fingerprinted in {seconds * 1e3:.0f} ms ({size / seconds / 1e6:.0f} MB/s)")

    # Every pair within k, by comparing each fingerprint with those after it.
    rows, cols, dists = [], [], []
    for i in range(len(fps) - 1):
        d = neardup.hamming_many(fps[i], fps[i + 1 :])
        near = np.flatnonzero(d <= args.k)
        rows.append(np.full(len(near), i))
        cols.append(near + i + 1)
        dists.append(d[near])
    i_all, j_all, d_all = np.concatenate(rows), np.concatenate(cols), np.concatenate(dists)
    print(f"{len(i_all)} near-duplicate pairs within k={args.k} ({int((d_all == 0).sum())} with equal fingerprints)")
    order = np.lexsort((j_all, i_all, -d_all.astype(np.int64)))
    for n in order[: args.examples]:
        a, b = docs[i_all[n]], docs[j_all[n]]
        print(f"\n  distance {d_all[n]}: {a['id']}  ~  {b['id']}")
        print(f"    {a['text'].splitlines()[0][:90]}")
        print(f"    {b['text'].splitlines()[0][:90]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
