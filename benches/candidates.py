"""The fingerprint as a candidate generator: recall of the true pairs against candidate pairs.

For each corpus of the suite (``benches/corpora.py``) and each fingerprint setting, the curve
over the candidate radius k of

- ``recall``: the share of the document pairs with word-3-shingle Jaccard >= 0.8 (the suite's
  exact truth) whose fingerprints are within k bits;
- ``candidates``: every document pair within k bits (exact copies included: a group of c equal
  fingerprints is c(c-1)/2 pairs), as a multiple of the true pairs;

and two figures of spread: the mean distance of unrelated pairs (random pairs outside the truth,
Jaccard < 0.5) and ``bits out``: bits set in fewer than 30% or more than 70% of the distinct texts.

    python benches/corpora.py build          # the suite, once (../benchdata/suite)
    python benches/candidates.py [--suite DIR] [--only short code ...] [--settings NAME ...] [--write]

A setting is ``FEATURES-WEIGHTING``: ``word1-tf`` (the default), ``word3-binary``, ``char4-tf``,
``word1-idf`` (fitted on the corpus itself)...; ``word1-tf+short`` is the default with the short
texts' candidates verified dedup adds (pairs of texts of at most 16 shingles sharing a prefix hash,
whatever their distance: every true pair of two short texts is found); ``word1-tf-plain`` is the default features with
plain FNV-1a feature hashes, no finalizer (the fingerprints before the finalizer was chosen),
computed in Python from the core's features. ``--write`` writes
``benches/results/candidates.md``.

Weighting rules the core does not offer (issue 13's study; none needs corpus statistics) are
computed here from the core's features and feature hashes (``feature_hash_many``), tallied with
numpy: a weighting of parts joined by ``.``, the first the term frequency's function, ``tf``
(raw), ``logtf`` (1 + ln tf), ``sqrttf`` or ``bin`` (1), each later one a factor: ``stopP`` (P% of
the weight for the built-in English stopwords, ``stop0`` drops them), ``lenL`` (min(characters,
L)), ``loglen`` (ln(1 + characters)), ``aboveN`` (the factors before it apply only to documents of
more than N tokens). ``word1-logtf.len8`` is unigrams weighing (1 + ln tf) min(len, 8). The rule
``tf`` alone reproduces the core's ``word1-tf``; every corpus checks that on a sample first.
The study of these rules is in ``benches/results/weighting.md`` (``--write`` leaves it alone).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402
import neardup  # noqa: E402
import synth  # noqa: E402
from neardup import _core  # noqa: E402
from neardup.stopwords import ENGLISH  # noqa: E402

RESULTS = HERE / "results" / "candidates.md"
KS = tuple(range(3, 11))
THRESHOLD = 0.8
SHORT = _core.SHORT_TEXT_SHINGLES
DEFAULT_SETTINGS = [
    "word1-tf",
    "word1-tf+short",
    "word1-tf-plain",
    "word1-binary",
    "word1-idf",
    "word2-tf",
    "word3-tf",
    "char3-tf",
    "char4-tf",
    "char5-tf",
]


CORE_WEIGHTINGS = ("tf", "binary", "idf")
TF_RULES = ("tf", "logtf", "sqrttf", "bin")


def rule_parts(weighting: str) -> list[tuple[str, float]]:
    """The parts of a weighting rule computed here (``logtf.len8.stop0``): ``(name, parameter)``."""
    first, *factors = weighting.split(".")
    if first not in TF_RULES or not factors and first == "tf":
        raise ValueError(weighting)
    parts = [(first, 0.0)]
    for part in factors:
        for prefix in ("stop", "len", "above"):
            if part.startswith(prefix) and part[len(prefix) :].isdigit():
                parts.append((prefix, float(part[len(prefix) :])))
                break
        else:
            if part != "loglen":
                raise ValueError(weighting)
            parts.append((part, 0.0))
    return parts


@dataclass
class FeatureTable:
    """The features of a corpus: one entry per (document, distinct feature) with its term
    frequency, the distinct features' hashes, lengths in characters and stopword flags."""

    docs: int
    doc: np.ndarray
    feature: np.ndarray
    tf: np.ndarray
    tokens: np.ndarray
    hashes: np.ndarray
    length: np.ndarray
    stop: np.ndarray

    cache: ClassVar[dict[tuple[int, str, int], FeatureTable]] = {}

    @classmethod
    def of(cls, texts: list[str], tokens: str, ngram: int) -> FeatureTable:
        key = (id(texts), tokens, ngram)
        if key not in cls.cache:
            cls.cache.clear()
            cls.cache[key] = cls.build(texts, tokens, ngram)
        return cls.cache[key]

    @classmethod
    def build(cls, texts: list[str], tokens: str, ngram: int) -> FeatureTable:
        hasher = neardup.Simhasher(tokens=tokens, ngram=ngram)
        vocab: dict[str, int] = {}
        rows, ids = [], []
        for features in map(hasher.features, texts):
            rows.append(len(features))
            ids.append(np.array([vocab.setdefault(f, len(vocab)) for f in features], np.int64))
        size = max(1, len(vocab))
        keys, tf = np.unique(
            np.repeat(np.arange(len(texts), dtype=np.int64), rows) * size
            + np.concatenate(ids or [np.zeros(0, np.int64)]),
            return_counts=True,
        )
        words = list(vocab)
        stop = {w for w in words if any(t in ENGLISH for t in w.split(" "))}
        table = cls(
            docs=len(texts),
            doc=keys // size,
            feature=keys % size,
            tf=tf,
            tokens=np.array(rows, np.int64),
            hashes=_core.feature_hash_many(words) if words else np.zeros(0, np.uint64),
            length=np.array([len(w) for w in words], np.float64),
            stop=np.array([w in stop for w in words], bool),
        )
        # The rule "tf" must reproduce the core's fingerprints before any other is trusted.
        sample = np.random.default_rng(1).choice(len(texts), min(len(texts), 3000), replace=False)
        mine = table.fingerprints(table.tf.astype(np.float64))[sample]
        core = hasher.fingerprint_many([texts[i] for i in sample])
        if not np.array_equal(mine, core):
            raise SystemExit(
                f"the tallies here differ from the core's on {(mine != core).sum()} texts"
            )
        return table

    def weights(self, weighting: str) -> np.ndarray:
        """The weight of each entry under a rule of :func:`rule_parts`."""
        parts = rule_parts(weighting)
        tf = self.tf.astype(np.float64)
        w = {"tf": tf, "logtf": 1 + np.log(tf), "sqrttf": np.sqrt(tf), "bin": np.ones_like(tf)}[
            parts[0][0]
        ]
        factor = np.ones_like(w)
        for name, value in parts[1:]:
            if name == "stop":
                factor *= np.where(self.stop[self.feature], value / 100, 1.0)
            elif name == "len":
                factor *= np.minimum(self.length[self.feature], value)
            elif name == "loglen":
                factor *= np.log1p(self.length[self.feature])
            else:  # above: the factors so far only for documents of more than N tokens
                factor = np.where(self.tokens[self.doc] > value, factor, 1.0)
        return w * factor

    def fingerprints(self, weights: np.ndarray) -> np.ndarray:
        """Simhash of each document from its entries' weights: bit i is 1 iff the sum of +w over
        the features whose hash has bit i and -w over the others is positive."""
        out = np.zeros(self.docs, dtype=np.uint64)
        for i in range(64):
            bit = (self.hashes >> np.uint64(i)) & np.uint64(1)
            sign = bit.astype(np.float64)[self.feature] * 2 - 1
            total = np.bincount(self.doc, weights=sign * weights, minlength=self.docs)
            out |= (total > 0).astype(np.uint64) << np.uint64(i)
        return out


@dataclass(frozen=True)
class Setting:
    name: str
    tokens: str
    ngram: int
    weighting: str
    plain: bool = False
    short: bool = False

    @classmethod
    def parse(cls, name: str) -> Setting:
        base, short = name.removesuffix("+short"), name.endswith("+short")
        features, weighting, *rest = base.split("-")
        tokens = "word" if features.startswith("word") else "char"
        if rest not in ([], ["plain"]) or tokens not in ("word", "char"):
            raise SystemExit(f"unknown setting {name!r}")
        if weighting not in CORE_WEIGHTINGS:
            try:
                rule_parts(weighting)
            except ValueError:
                raise SystemExit(f"unknown weighting {weighting!r} in {name!r}") from None
            if rest:
                raise SystemExit(f"{name!r}: -plain is for the core's weightings")
        return cls(name, tokens, int(features[len(tokens) :]), weighting, rest == ["plain"], short)

    def fingerprints(self, texts: list[str]) -> np.ndarray:
        if self.weighting not in CORE_WEIGHTINGS:
            table = FeatureTable.of(texts, self.tokens, self.ngram)
            return table.fingerprints(table.weights(self.weighting))
        hasher = neardup.Simhasher(tokens=self.tokens, ngram=self.ngram, weighting=self.weighting)
        if self.weighting == "idf":
            hasher.fit(texts)
        if not self.plain:
            return hasher.fingerprint_many(texts)
        # The same features and weights, each hashed with FNV-1a 64 alone.
        out = np.empty(len(texts), dtype=np.uint64)
        for row, text in enumerate(texts):
            pairs = hasher.feature_weights(text)
            weights = [w for _, w in pairs] if self.weighting != "tf" else None
            out[row] = (
                neardup.simhash_hashes(_core.fnv1a_64_many([f for f, _ in pairs]), weights)
                if pairs
                else 0
            )
        return out


def candidate_counts(fps: np.ndarray, max_k: int) -> np.ndarray:
    """Document pairs at each distance 0..max_k, by one batch search over the distinct values
    (-1 where they overflow the search's pair limit)."""
    distinct, counts = np.unique(fps, return_counts=True)
    counts = counts.astype(np.int64)
    hist = np.zeros(max_k + 1, dtype=np.int64)
    hist[0] = int((counts * (counts - 1) // 2).sum())
    for k in range(max_k, 0, -1):
        try:
            i, j, d = _core.find_all(distinct, k, max_pairs=300_000_000)
        except neardup.TooManyPairsError:
            hist[k] = -1
            continue
        hist[1 : k + 1] = np.bincount(d, weights=counts[i] * counts[j], minlength=k + 1)[
            1 : k + 1
        ].astype(np.int64)
        break
    return hist


def short_candidates(texts: list[str], fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs of short texts that verified dedup adds (``neardup.pipeline.SHORT``:
    texts of at most 16 word 3-shingles sharing one of the first ``n - ceil(0.8 n) + 1`` of their
    sorted shingle hashes; a hash of more than 1,024 such texts proposes nothing), between
    distinct texts with features: their distances, and their weights (copies of a text pair
    with each copy of the other). Also the number of shingles of each row."""
    norm = [neardup.Simhasher().normalize(t) for t in texts]
    _, first, inverse, counts = np.unique(
        np.array(norm, dtype=object), return_index=True, return_inverse=True, return_counts=True
    )
    offsets, hashes, _ = _core.shingle_sketches([norm[r] for r in first], 3, SHORT + 1, None)
    sizes = np.diff(offsets).astype(np.int64)
    heads, owners = [], []
    for t, r in enumerate(first.tolist()):
        m = int(sizes[t])
        if 0 < m <= SHORT and fps[r]:
            p = m - math.ceil(THRESHOLD * m - 1e-9) + 1
            heads.append(hashes[offsets[t] : offsets[t] + p])
            owners.append(np.full(p, t, np.int64))
    if not heads:
        return np.zeros(0, np.uint8), np.zeros(0, np.int64)
    h, o = np.concatenate(heads), np.concatenate(owners)
    order = np.lexsort((o, h))
    h, o = h[order], o[order]
    bounds = np.flatnonzero(np.diff(h)) + 1
    keys = []
    for run in np.split(o, bounds):
        if 2 <= len(run) <= 1024:
            a, b = np.triu_indices(len(run), 1)
            keys.append(run[a] * len(first) + run[b])
    if not keys:
        return np.zeros(0, np.uint8), np.zeros(0, np.int64)
    pairs = np.unique(np.concatenate(keys))
    a, b = pairs // len(first), pairs % len(first)
    d = np.bitwise_count(fps[first[a]] ^ fps[first[b]])
    return d, counts[a] * counts[b]


def measure(
    texts: list[str], truth: synth.Truth, setting: Setting, rng: np.random.Generator
) -> dict[str, object]:
    start = time.perf_counter()
    fps = setting.fingerprints(texts)
    seconds = time.perf_counter() - start
    n = truth.n
    true = truth.keys[truth.jaccard >= THRESHOLD]
    dist = np.bitwise_count(fps[true // n] ^ fps[true % n])
    found = {k: dist <= k for k in KS}
    hist = candidate_counts(fps, max(KS))
    cumulative = np.cumsum(hist)
    overflow = np.cumsum(hist < 0) > 0
    candidates = {k: -1 if overflow[k] else int(cumulative[k]) for k in KS}
    if setting.short:
        # Pairs of two short texts are candidates whatever their distance: every true one.
        shingles = np.array([len(synth.neardup_shingles(t)) for t in texts])
        both = (shingles[true // n] <= SHORT) & (shingles[true % n] <= SHORT)
        both &= (fps[true // n] != 0) & (fps[true % n] != 0)
        d, weight = short_candidates(texts, fps)
        for k in KS:
            found[k] = found[k] | both
            if candidates[k] >= 0:
                candidates[k] += int(weight[d > k].sum())
    recall = {k: float(found[k].mean()) if len(dist) else 1.0 for k in KS}
    x, y = rng.integers(0, n, 400_000), rng.integers(0, n, 400_000)
    keys = np.minimum(x, y) * n + np.maximum(x, y)
    unrelated = (x != y) & ~np.isin(keys, truth.keys)
    mean_random = float(np.bitwise_count(fps[x[unrelated]] ^ fps[y[unrelated]]).mean())
    _, first = np.unique(np.array(texts, dtype=object), return_index=True)
    distinct = fps[np.sort(first)]
    ones = ((distinct[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).mean(axis=0)
    return {
        "setting": setting.name,
        "true_pairs": int(len(true)),
        "recall": recall,
        "candidates": candidates,
        "mean_random": mean_random,
        "bits_out": int(((ones < 0.3) | (ones > 0.7)).sum()),
        "seconds": seconds,
    }


def cell(result: dict, k: int) -> str:
    c = result["candidates"][k]
    ratio = ">300M pairs" if c < 0 else f"{c / max(1, result['true_pairs']):.2g}x"
    return f"{result['recall'][k]:.3f} / {ratio}"


def table(name: str, docs: int, results: list[dict]) -> str:
    true = results[0]["true_pairs"]
    lines = [
        f"### {name}: {docs:,} documents, {true:,} pairs at Jaccard >= {THRESHOLD}",
        "",
        "recall / candidates (as a multiple of the true pairs) within k",
        "",
        "| setting | random pair distance | bits out | "
        + " | ".join(f"k = {k}" for k in KS)
        + " |",
        "|---|---|---|" + "---|" * len(KS),
    ]
    for r in results:
        lines.append(
            f"| {r['setting']} | {r['mean_random']:.1f} | {r['bits_out']} | "
            + " | ".join(cell(r, k) for k in KS)
            + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=corpora.DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", default=list(corpora.CORPORA))
    parser.add_argument("--settings", nargs="*", default=DEFAULT_SETTINGS)
    parser.add_argument(
        "--write", action="store_true", help=f"write {RESULTS.relative_to(HERE.parent)}"
    )
    args = parser.parse_args(argv)
    settings = [Setting.parse(s) for s in args.settings]
    rng = np.random.default_rng(0)
    sections = []
    for name in args.only:
        path = args.suite / f"{name}.jsonl"
        if not path.exists():
            print(
                f"{path}: missing; build the suite with python benches/corpora.py build",
                file=sys.stderr,
            )
            return 2
        ids, texts = synth.read_corpus(path)
        truth = synth.load_truth(args.suite / f"{name}.truth.tsv.gz", ids)
        results = []
        for s in settings:
            results.append(measure(texts, truth, s, rng))
            r = results[-1]
            print(
                f"{name:8s} {s.name:16s} random {r['mean_random']:4.1f} out {r['bits_out']:2d} | "
                + " ".join(f"k{k} {cell(r, k)}" for k in KS),
                flush=True,
            )
        sections.append(table(name, len(texts), results))
    if args.write:
        head = (
            "# The fingerprint as a candidate generator\n\n"
            "`python benches/candidates.py --write` (corpora: `python benches/corpora.py build`). For each corpus "
            "and fingerprint setting: the share of the document pairs with word-3-shingle Jaccard >= 0.8 whose "
            "fingerprints are within k bits (recall), and the document pairs within k bits as a multiple of those "
            "true pairs (candidates). Random pair distance: mean over random unrelated pairs (32 for independent "
            "values); bits out: bits set in fewer than 30% or more than 70% of the distinct texts. `word1-tf` is the "
            "default; `-plain` hashes features with FNV-1a alone (no finalizer).\n\n"
        )
        RESULTS.write_text(head + "\n".join(sections), encoding="utf-8")
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
