"""Near-duplicate quality of minhash cluster keys on the Debian corpus: the table behind the default
features of `neardup.minhash_key` (word 4-shingles).

Truth as in benches/quality.py: the pairs whose word-3-shingle sets have Jaccard >= 0.8. A key
setting reports every pair of documents with equal keys (one group per key); we score precision,
recall and F1, and the share of reported pairs that are at least loosely similar (Jaccard >= 0.5).

    python benches/minhash_quality.py [--data ../shared/data] [--out FILE.md]

Without the Debian corpus in --data (a fresh clone), it runs on the 3,000-document sample that
ships with neardup and computes that sample's exact truth (synth.debian_corpus, one line on stderr).
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
import synth  # noqa: E402  (the Debian corpus or the shipped sample, the truth)
from harness import publish  # noqa: E402

DATA = synth.DATA


def load(data: Path) -> tuple[list[str], list[tuple[int, int]], list[tuple[int, int]], str]:
    """(texts, strict pairs at Jaccard >= 0.8, loose pairs at >= 0.5, a note on the corpus) of the Debian
    corpus in ``data``, or of the shipped sample with its exact truth where it is absent."""
    corpus, truth_file = synth.debian_corpus(data)
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    texts = [d["text"] for d in docs]
    if truth_file is None:
        truth = synth.exact_truth(texts)
        rows = np.column_stack([truth.keys // truth.n, truth.keys % truth.n]).tolist()
        loose = [(a, b) for a, b in rows]
        strict = [(a, b) for (a, b), j in zip(rows, truth.jaccard.tolist()) if j >= 0.8 - 1e-9]
        return (
            texts,
            strict,
            loose,
            f" (the {corpus.name} that ships with neardup, truth computed exactly)",
        )
    row = {d["id"]: i for i, d in enumerate(docs)}
    strict, loose = [], []
    with gzip.open(truth_file, "rt", encoding="utf-8") as f:
        next(f)
        for line in f:
            a, b, j = line.rstrip("\n").split("\t")
            pair = (row[a], row[b])
            loose.append(pair)
            if float(j) >= 0.8:
                strict.append(pair)
    return texts, strict, loose, ""


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    texts, strict, loose, label = load(args.data)
    strict_a, loose_a = np.array(strict), np.array(loose)
    lines = [
        "# Minhash cluster keys: near-duplicate quality",
        "",
        f"Corpus: {len(texts)} Debian package descriptions{label}; truth: {len(strict)} pairs with word-3-shingle "
        f"Jaccard >= 0.8. A pair is reported when both documents get the same key.",
        f"Command: `python benches/minhash_quality.py` ({time.strftime('%Y-%m-%d')})",
        "",
        "| features | restrictiveness | reported pairs | precision | share J >= 0.5 | recall | F1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for ngram in (1, 2, 3, 4, 5):
        hasher = neardup.Simhasher(ngram=ngram)
        for r in (1, 2, 3, 4, 6):
            labels = neardup.group_by_key(neardup.minhash_key_many(texts, r, hasher=hasher))
            _, counts = np.unique(labels, return_counts=True)
            reported = int((counts * (counts - 1) // 2).sum())
            tp = int((labels[strict_a[:, 0]] == labels[strict_a[:, 1]]).sum())
            lp = int((labels[loose_a[:, 0]] == labels[loose_a[:, 1]]).sum())
            p = tp / reported if reported else 0.0
            rc = tp / len(strict)
            f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
            loose_share = lp / reported if reported else 0.0
            lines.append(
                f"| word {ngram}-shingles | {r} | {reported:,} | {p:.3f} | {loose_share:.3f} | {rc:.3f} | {f1:.3f} |"
            )
            print(lines[-1], flush=True)
    publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
