"""Near-duplicate quality of fingerprint settings on the Debian corpus: the table behind the defaults.

Truth: the pairs of documents whose word-3-shingle sets have Jaccard >= 0.8 (shared/data/README.md).
A setting reports every pair of documents whose fingerprints are within Hamming distance k; we
score precision, recall and F1 against the truth for k = 1..6, plus the share of reported pairs
that are at least loosely similar (Jaccard >= 0.5), and the fingerprinting time per document.

The truth is read and the pairs scored by benches/synth.py's `load_truth` and `score`, the scorer
of every quality benchmark. Pairs are found exactly with a pigeonhole block scheme in numpy (k + 1 blocks: two fingerprints
within k share at least one whole block), independent of neardup's own index.

    python benches/quality.py [--data ../shared/data] [--configs default|all] [--out FILE.md]

Without the Debian corpus in --data (a fresh clone), it runs on the 3,000-document sample that
ships with neardup, its truth computed exactly in the run (synth.exact_truth), and says so.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

import neardup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402  (the truth loader and the scorer)

DATA = HERE.parent.parent / "shared" / "data"


def load(corpus: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            ids.append(d["id"])
            texts.append(d["text"])
    return ids, texts


def popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x).astype(np.uint8)


def pairs_within(fps: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """All pairs of rows (i < j) whose fingerprints are within k, exactly: (pair keys, distances)."""
    n = len(fps)
    unique, inverse = np.unique(fps, return_inverse=True)
    m = len(unique)
    # Pigeonhole over the distinct fingerprints: k + 1 blocks, candidates share one block.
    widths = [64 // (k + 1) + (1 if b < 64 % (k + 1) else 0) for b in range(k + 1)]
    cand = []
    shift = 0
    for w in widths:
        key = (unique >> np.uint64(shift)) & np.uint64((1 << w) - 1)
        shift += w
        order = np.argsort(key, kind="stable")
        sk = key[order]
        starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
        sizes = np.diff(np.r_[starts, m])
        for size in np.unique(sizes):
            if size < 2:
                continue
            group_starts = starts[sizes == size]
            a, b = np.triu_indices(size, 1)
            left = order[(group_starts[:, None] + a[None, :]).ravel()]
            right = order[(group_starts[:, None] + b[None, :]).ravel()]
            d = popcount(unique[left] ^ unique[right])
            keep = d <= k
            lo, hi = np.minimum(left[keep], right[keep]), np.maximum(left[keep], right[keep])
            cand.append(lo.astype(np.int64) * m + hi)
    upairs = np.unique(np.concatenate(cand)) if cand else np.zeros(0, np.int64)
    ua, ub = upairs // m, upairs % m
    # Expand distinct fingerprints back to rows.
    rows_by = np.argsort(inverse, kind="stable")
    counts = np.bincount(inverse, minlength=m)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    out_keys, out_d = [], []
    for u_list, v_list, dist in (
        (ua, ub, popcount(unique[ua] ^ unique[ub])),
        (np.arange(m)[counts > 1], None, None),
    ):
        if v_list is None:
            for u in u_list:
                rows = np.sort(rows_by[first[u] : first[u] + counts[u]])
                a, b = np.triu_indices(len(rows), 1)
                out_keys.append(rows[a].astype(np.int64) * n + rows[b])
                out_d.append(np.zeros(len(a), np.uint8))
            continue
        for u, v, d in zip(u_list, v_list, dist):
            ru = rows_by[first[u] : first[u] + counts[u]]
            rv = rows_by[first[v] : first[v] + counts[v]]
            lo = np.minimum.outer(ru, rv).ravel().astype(np.int64)
            hi = np.maximum.outer(ru, rv).ravel().astype(np.int64)
            out_keys.append(lo * n + hi)
            out_d.append(np.full(len(lo), d, np.uint8))
    if not out_keys:
        return np.zeros(0, np.int64), np.zeros(0, np.uint8)
    keys = np.concatenate(out_keys)
    dists = np.concatenate(out_d)
    order = np.argsort(keys)
    return keys[order], dists[order]


CONFIGS = {
    "default": [dict()],
    "all": [
        dict(tokens="word", ngram=1),
        dict(tokens="word", ngram=2),
        dict(tokens="word", ngram=3),
        dict(tokens="word", ngram=4),
        dict(tokens="word", ngram=5),
        dict(tokens="char", ngram=4),
        dict(tokens="char", ngram=5),
        dict(tokens="char", ngram=7),
        dict(tokens="word", ngram=3, weighting="binary"),
        dict(tokens="word", ngram=3, weighting="idf"),
        dict(tokens="word", ngram=2, weighting="binary"),
        dict(tokens="word", ngram=2, weighting="idf"),
        dict(tokens="word", ngram=3, unicode_form=None, casefold=False),
        dict(tokens="word", ngram=3, stopwords="english"),
        dict(tokens="word", ngram=1, weighting="binary"),
        dict(tokens="word", ngram=1, weighting="idf"),
        dict(tokens="word", ngram=1, unicode_form=None, casefold=False),
        dict(tokens="char", ngram=5, weighting="binary"),
        dict(tokens="char", ngram=5, weighting="idf"),
    ],
}
CONFIGS["extra"] = CONFIGS["all"][-5:]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--configs", choices=sorted(CONFIGS), default="all")
    ap.add_argument("--kmax", type=int, default=6)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    corpus, truth_file = synth.debian_corpus(args.data)
    ids, texts = load(corpus)
    truth = (
        synth.load_truth(truth_file, ids) if truth_file is not None else synth.exact_truth(texts)
    )
    lines = [
        f"{'Debian corpus' if truth_file is not None else 'Debian sample (' + corpus.name + ')'}: {len(texts)} documents, {int((truth.jaccard >= 0.8).sum())} truth pairs (Jaccard >= 0.8)",
        "",
        "| setting | k | reported | precision | recall | F1 | Jaccard>=0.5 | us/doc |",
        "|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    best = []
    for options in CONFIGS[args.configs]:
        hasher = neardup.Simhasher(**options)
        if hasher.weighting == "idf":
            hasher.fit(texts)
        t = time.perf_counter()
        fps = hasher.fingerprint_many(texts)
        us = (time.perf_counter() - t) / len(texts) * 1e6
        keys, dists = pairs_within(fps, args.kmax)
        name = ", ".join(f"{k}={v!r}" for k, v in options.items()) or "defaults"
        for k in range(1, args.kmax + 1):
            s = synth.score(np.column_stack(np.divmod(keys[dists <= k], len(texts))), truth)
            best.append((s["f1"], name, k))
            row = (
                f"| {name} | {k} | {s['reported']} | {s['precision']:.3f} | {s['recall']:.3f} | "
                f"{s['f1']:.3f} | {s['loose']:.3f} | {us:.2f} |"
            )
            lines.append(row)
            print(row, flush=True)
    best.sort(reverse=True)
    lines += ["", "Best by F1: " + "; ".join(f"{n} at k={k}: {f:.3f}" for f, n, k in best[:5])]
    print(lines[-1])
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
