"""Long synthetic documents at any scale, made from this machine's manuals and source code, with
the truth of their families: what ``benches/synth.py`` is for short texts.

    python benches/synth_long.py N OUT_DIR [--suite DIR] [--seed S]

reads the suite's ``long.jsonl`` and ``code.jsonl`` (``python benches/corpora.py build``) and
writes ``OUT_DIR/long-N-sS.jsonl`` (``{"id", "text"}``) and ``OUT_DIR/long-N-sS.truth.tsv.gz``
(the pairs inside each family at word-3-shingle Jaccard >= 0.5, exactly, by neardup's shingles).

How a document is made:

- A *base* takes a window of up to ``MAX_WORDS`` consecutive words of one real document (its
  topic: a manual page, a README, a Python module), at least ``MIN_WORDS``, and replaces each
  word with probability ``MIX`` by a word drawn from a second random real document, then lays
  the words out in paragraphs of 60. Bases drawn from one source keep its vocabulary and word
  frequencies (their fingerprints are close, as real documents on one topic are) but share few
  3-shingles: a shingle survives in a base with probability (1 - MIX)^3 = 1/8, in two bases
  1/64, so two bases of one source sit near Jaccard 0.01-0.05, far below 0.5.
- Families as in synth.py (about 30% of the documents in families of 2 to 50): members are
  copies of the base or of an earlier member edited by ``corpora.edit_text`` at a rate drawn
  from ``corpora.RATES`` (0.5% to 35% of the words substituted, inserted or deleted, and a
  paragraph moved 30% of the time). Every pair inside a family is compared exactly.
- Pairs across families are not listed: they would need two windows of one source overlapping
  over most of their length *and* the same words kept, which the mixing makes negligible;
  ``--check`` verifies it by the exact truth of the whole corpus (prefix filtering,
  ``synth.exact_truth``) on corpora up to a few 10^4 documents.

Deterministic for a given (N, seed, suite).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from itertools import combinations
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402
import synth  # noqa: E402

MIN_WORDS = 150
MAX_WORDS = 3_000
MIX = 0.5
PARAGRAPH = 60


def load_sources(suite: Path) -> list[str]:
    """The texts of the suite's long and code corpora with at least MIN_WORDS words."""
    texts = []
    for name in ("long", "code"):
        _, docs = synth.read_corpus(suite / f"{name}.jsonl")
        texts += [t for t in docs if len(t.split(None, MIN_WORDS)) > MIN_WORDS]
    if not texts:
        raise SystemExit(f"{suite}: no long or code document of {MIN_WORDS} words")
    return texts


def _base(rng: random.Random, sources: list[str]) -> str:
    words = sources[rng.randrange(len(sources))].split()
    other = sources[rng.randrange(len(sources))].split()
    size = min(len(words), MAX_WORDS)
    size = rng.randint(min(MIN_WORDS, size), size)
    start = rng.randrange(len(words) - size + 1)
    out = [
        other[rng.randrange(len(other))] if rng.random() < MIX else w
        for w in words[start : start + size]
    ]
    return "\n\n".join(" ".join(out[i : i + PARAGRAPH]) for i in range(0, len(out), PARAGRAPH))


def generate(
    n: int, sources: list[str], seed: int = 0
) -> tuple[list[str], list[tuple[int, int, float]]]:
    """n texts (shuffled) and their family pairs at Jaccard >= 0.5 (rows a < b, Jaccard)."""
    rng = random.Random(f"neardup-synth-long:{seed}")
    vocabulary = [w for t in sources[:: max(1, len(sources) // 2000)] for w in t.split()[:50]]
    texts: list[str] = []
    families: list[list[int]] = []
    while len(texts) < n:
        size = min(synth._family_size(rng), n - len(texts))
        members = [len(texts)]
        texts.append(_base(rng, sources))
        for _ in range(size - 1):
            parent = members[0] if rng.random() < 0.7 else rng.choice(members)
            rate = rng.choice(corpora.RATES)
            members.append(len(texts))
            texts.append(corpora.edit_text(rng, texts[parent], rate, vocabulary))
        families.append(members)
    order = list(range(n))
    rng.shuffle(order)
    row = [0] * n
    for position, i in enumerate(order):
        row[i] = position
    pairs = []
    for members in families:
        if len(members) < 2:
            continue
        sets = {i: synth.neardup_shingles(texts[i]) for i in members}
        for i, j in combinations(members, 2):
            jac = synth.jaccard(sets[i], sets[j])
            if jac >= synth.LOOSE:
                a, b = sorted((row[i], row[j]))
                pairs.append((a, b, jac))
    pairs.sort()
    return [texts[i] for i in order], pairs


def write(out_dir: Path, stem: str, texts: list[str], pairs: list[tuple[int, int, float]]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl, truth = out_dir / f"{stem}.jsonl", out_dir / f"{stem}.truth.tsv.gz"
    with open(jsonl.with_suffix(".tmp"), "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n")
    with gzip.open(truth.with_suffix(".tmp"), "wt", encoding="utf-8") as f:
        f.write("id_a\tid_b\tjaccard\n")
        f.writelines(f"d{a}\td{b}\t{j:.6f}\n" for a, b, j in pairs)
    jsonl.with_suffix(".tmp").replace(jsonl)
    truth.with_suffix(".tmp").replace(truth)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("n", type=int)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--suite", type=Path, default=corpora.DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--check", action="store_true", help="compare with the exact truth of the whole corpus"
    )
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error("N must be positive")
    texts, pairs = generate(args.n, load_sources(args.suite), args.seed)
    write(args.out_dir, f"long-{args.n}-s{args.seed}", texts, pairs)
    strong = sum(1 for *_, j in pairs if j >= 0.8)
    print(f"{args.n:,} documents, {len(pairs):,} family pairs >= 0.5 ({strong:,} >= 0.8)")
    if args.check:
        exact = synth.exact_truth(texts, synth.LOOSE, synth.neardup_shingles)
        mine = synth.Truth.from_pairs(args.n, pairs)
        extra = set(exact.keys.tolist()) - set(mine.keys.tolist())
        print(f"exact truth: {len(exact.keys):,} pairs >= 0.5, {len(extra):,} outside families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
