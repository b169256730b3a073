"""Synthetic corpora for the benchmarks: n documents made from the Debian corpus by seeded random
edits, whose derivation is the ground truth, and the scorer used by every quality benchmark.

    python benches/synth.py N OUT_DIR [--seed S] [--jobs J] [--source FILE.jsonl.gz] [--stats]

writes ``OUT_DIR/corpus-N-sS.jsonl`` (one ``{"id", "text"}`` per line) and
``OUT_DIR/truth-N-sS.tsv.gz`` (every pair of documents whose word-3-shingle Jaccard is >= 0.5,
with that Jaccard, as in ``shared/data``), then a small ``.done`` marker; a second run with the
same arguments finds the marker and reuses the files.

How a corpus is made (``benches/results/synth.md`` has the figures):

- Documents come in families: a base document and members derived from it (or from an earlier
  member) by word substitutions, insertions and deletions, a paragraph shuffle, a dropped last
  paragraph or a line of boilerplate. About 70% of the documents are families of one. Each family
  is generated whole and its members' shingle sets compared pair by pair, exactly: that is the
  truth inside a family.
- A base is new text laid out like a random Debian description (same number of words per
  paragraph, a short description on the first line): runs of up to six consecutive words copied
  from random Debian documents, separated by made-up names that belong to the family alone
  (``name(family, slot)`` spells a number unique to the family in syllables; a name that happens
  to be a Debian word does not count as private). Edits only ever add Debian words and boilerplate.
- Why no pair across families reaches 0.5: call a shingle private when it contains one of its
  family's names; no other family's document has it. Every document is kept only if more than a
  third of its distinct shingles are private (a base or member that fails is drawn again, a
  member eight times at most before it becomes a plain copy of its parent; the check is exact,
  on the final text). Two documents A and B of different families then share at most
  c = min(common(A), common(B)) shingles, with 3 * common(X) < 2 * |X|, so
  3 * |A & B| <= 1.5 * (common(A) + common(B)) < |A| + |B|, which is exactly Jaccard < 1/2.
  Boilerplate is therefore accounted for, however common it is.
- Determinism: the corpus is cut into chunks of ``CHUNK`` documents, each drawn by its own
  ``random.Random("neardup-synth:{seed}:{chunk}")``; families never straddle a chunk and are
  shuffled inside it. The same n, seed and source give the same bytes for any ``--jobs``
  (gzip header without time or name).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import multiprocessing
import os
import random
import re
import sys
import time
from array import array
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

import neardup
from neardup.io import Outputs

__all__ = [
    "DATA",
    "DEBIAN_JSONL_GZ",
    "DEBIAN_SAMPLE",
    "DEBIAN_TRUTH",
    "SynthCorpus",
    "Truth",
    "debian_corpus",
    "debian_source",
    "exact_truth",
    "generate",
    "describe",
    "jaccard",
    "load_truth",
    "score",
    "shingles",
]

HERE = Path(__file__).resolve().parent
#: Where the benchmarks look for the Debian corpus and its truth unless told otherwise (--data).
DATA = HERE.parent.parent / "shared" / "data"
DEBIAN_JSONL_GZ = DATA / "debian-descriptions.jsonl.gz"
DEBIAN_TRUTH = DEBIAN_JSONL_GZ.with_name("debian-descriptions.truth-word3-j50.tsv.gz")
#: The 3,000 Debian descriptions that ship with neardup: the quality benchmarks' corpus in a fresh
#: clone, where ../shared/data is absent (its truth is then computed by exact_truth).
DEBIAN_SAMPLE = HERE.parent / "python" / "neardup" / "data" / "debian-sample.jsonl.gz"
#: Bumped whenever the same (n, seed, source) would give other bytes: older outputs are redone.
VERSION = 1
#: Documents per chunk: the unit of randomness, of parallel work and of the family numbering.
CHUNK = 10_000
#: Pairs at or above this Jaccard are in the truth file.
LOOSE = 0.5

WORD = re.compile(r"\w+")
#: The shingles of the corpus suite (benches/corpora.py): neardup's own, see neardup_shingles.
_WORD3 = neardup.Simhasher(ngram=3)


# --- Shingles, Jaccard and scoring -------------------------------------------------------------


def shingles(text: str) -> set[str]:
    """Word 3-shingles as ``shared/data/README.md`` defines them: the text lowercased, tokens are
    runs of ``\\w`` characters, a shingle is three consecutive tokens joined by a space; a text of
    fewer than three tokens is one shingle (all its tokens joined)."""
    tokens = WORD.findall(text.lower())
    if len(tokens) < 3:
        return {" ".join(tokens)}
    return {" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2)}


def jaccard(a: AbstractSet[Hashable], b: AbstractSet[Hashable]) -> float:
    """|a & b| / |a | b| (1.0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


@dataclass(frozen=True)
class Truth:
    """The similar pairs of a corpus of ``n`` documents, by row (position in the corpus).

    ``keys`` are sorted pair keys ``i * n + j`` (i < j), ``jaccard`` their similarities.
    """

    n: int
    keys: np.ndarray
    jaccard: np.ndarray

    @classmethod
    def from_pairs(cls, n: int, pairs: Iterable[tuple[int, int, float]]) -> Truth:
        """From ``(row_a, row_b, jaccard)`` triples, rows in either order."""
        rows = list(pairs)
        return cls.from_arrays(
            n,
            np.array([(a, b) for a, b, _ in rows], dtype=np.int64),
            np.array([j for _, _, j in rows]),
        )

    @classmethod
    def from_arrays(cls, n: int, rows: np.ndarray, jaccard: np.ndarray) -> Truth:
        """From an (m, 2) array of rows (in either order) and their m similarities."""
        keys = pair_keys(n, rows, unique=False)
        order = np.argsort(keys, kind="stable")
        return cls(n, keys[order], np.asarray(jaccard, dtype=np.float64)[order])


def pair_keys(
    n: int, pairs: np.ndarray | Iterable[tuple[int, int]], unique: bool = True
) -> np.ndarray:
    """Keys ``min * n + max`` of row pairs (an (m, 2) array or pairs of ints), sorted and
    deduplicated unless ``unique`` is false (then in the given order)."""
    arr = np.asarray(
        pairs if isinstance(pairs, np.ndarray) else list(pairs), dtype=np.int64
    ).reshape(-1, 2)
    if len(arr) and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"pair rows must be in [0, {n})")
    keys = arr.min(axis=1) * n + arr.max(axis=1)
    return np.unique(keys) if unique else keys


def load_truth(path: Path, ids: Sequence[str]) -> Truth:
    """Reads a truth TSV (``id_a, id_b, jaccard``, gzipped or not) for the corpus whose ids are
    ``ids`` in corpus order."""
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:  # the fast path (truth files of the corpus suite hold up to ~10M pairs)
        try:
            frame = pd.read_csv(
                path,
                sep="\t",
                dtype={"id_a": str, "id_b": str, "jaccard": np.float64},
                quoting=3,
                keep_default_na=False,
                na_filter=False,
                engine="c",
            )
        except (ValueError, pd.errors.ParserError):
            frame = None  # let the line-by-line reader say where
        if frame is not None and list(frame.columns) == ["id_a", "id_b", "jaccard"]:
            index = pd.Index(list(ids))
            ra, rb = index.get_indexer(frame["id_a"]), index.get_indexer(frame["id_b"])
            if index.is_unique and (ra >= 0).all() and (rb >= 0).all():
                rows = np.column_stack([ra.astype(np.int64), rb.astype(np.int64)])
                return Truth.from_arrays(len(ids), rows, frame["jaccard"].to_numpy(np.float64))
    row = {doc_id: i for i, doc_id in enumerate(ids)}
    opener = gzip.open if str(path).endswith(".gz") else open
    a, b, jac = (
        array("q"),
        array("q"),
        array("d"),
    )  # compact: truth files of 10M documents are large
    with opener(path, "rt", encoding="utf-8") as f:
        header = next(f, "").rstrip("\n").split("\t")
        if header != ["id_a", "id_b", "jaccard"]:
            raise ValueError(f"{path}: expected the header id_a, id_b, jaccard, found {header}")
        for lineno, line in enumerate(f, 2):
            try:
                x, y, j = line.rstrip("\n").split("\t")
                a.append(row[x])
                b.append(row[y])
                jac.append(float(j))
            except (ValueError, KeyError) as err:
                raise ValueError(
                    f"{path}:{lineno}: not a pair of known ids with a Jaccard ({err})"
                ) from None
    rows = np.column_stack([np.frombuffer(a, dtype=np.int64), np.frombuffer(b, dtype=np.int64)])
    return Truth.from_arrays(len(ids), rows, np.frombuffer(jac, dtype=np.float64))


def exact_truth(
    texts: Sequence[str],
    threshold: float = LOOSE,
    shingler: Callable[[str], AbstractSet[Hashable]] | None = None,
) -> Truth:
    """Every pair of texts whose word-3-shingle Jaccard is at least ``threshold``, exactly: what
    a truth file lists, computed for a corpus that has none. ``shingler`` gives a text's shingle
    set (default :func:`shingles`, the shared README's; the corpus suite uses
    :func:`neardup_shingles`).

    1. Each shingle set becomes a sorted array of 64-bit hashes of its shingles; texts with the
       same set form one class, compared once (a class of c copies gives its c * (c - 1) / 2
       pairs at Jaccard 1 without any comparison).
    2. Prefix filtering over the classes: with every set sorted in one global order (rarest
       shingle first), two sets with Jaccard >= t share a shingle among the first
       ``|s| - ceil(t * |s|) + 1`` of each, so only pairs of classes sharing a prefix shingle
       whose sizes allow t (``t * |x| <= |y| <= |x| / t``) and that pass the positional filter
       (see ``_prefix_candidates``) are candidates.
    3. Each candidate is verified exactly: its intersection counted, its Jaccard computed.

    Exact up to a collision of two distinct shingles' 64-bit hashes (probability about
    shingles^2 / 2^65: below 1e-5 for 10 million distinct shingles), which would move one
    Jaccard by one shingle in its union.
    """
    t = float(threshold)
    if not 0.0 < t <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    shingler = shingles if shingler is None else shingler
    n = len(texts)
    # 1. Hashed sets, classes of identical sets.
    cls_of = np.empty(n, dtype=np.int64)
    classes: dict[bytes, int] = {}
    class_sets: list[np.ndarray] = []
    for i, text in enumerate(texts):
        sset = shingler(text)
        arr = np.unique(np.fromiter((hash(g) for g in sset), dtype=np.int64, count=len(sset)))
        key = (
            len(arr).to_bytes(8, "little") + hashlib.blake2b(arr.tobytes(), digest_size=16).digest()
        )
        c = classes.setdefault(key, len(class_sets))
        if c == len(class_sets):
            class_sets.append(arr)
        cls_of[i] = c
    m = len(class_sets)
    sizes = np.array([len(a) for a in class_sets], dtype=np.int64)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    flat = np.concatenate(class_sets) if m else np.zeros(0, np.int64)
    del class_sets
    # 2. Global order: tokens by (number of classes holding them, hash); each row sorted by rank.
    tokens, inverse, freq = np.unique(flat, return_inverse=True, return_counts=True)
    rank_of = np.empty(len(tokens), dtype=np.int64)
    rank_of[np.lexsort((tokens, freq))] = np.arange(len(tokens))
    ranks = rank_of[inverse.reshape(-1)]
    del flat, inverse, tokens
    row_of = np.repeat(np.arange(m, dtype=np.int64), sizes)
    order = np.lexsort((ranks, row_of))
    ranks = ranks[order]
    del order
    prefix = sizes - np.ceil(t * sizes - 1e-9).astype(np.int64) + 1
    prefix = np.minimum(np.maximum(prefix, 1), sizes)
    pos = np.arange(len(ranks), dtype=np.int64) - indptr[row_of]
    in_prefix = pos < prefix[row_of]
    p_rank, p_row, p_pos = ranks[in_prefix], row_of[in_prefix], pos[in_prefix]
    del pos, in_prefix, row_of
    ca, cb = _prefix_candidates(p_rank, p_row, p_pos, sizes, t)
    # 3. Verification, in batches of about 2^22 shingles.
    keep_a, keep_b, keep_j = [], [], []
    budget = 1 << 22
    start = 0
    cost = np.cumsum(sizes[ca] + sizes[cb]) if len(ca) else np.zeros(0, np.int64)
    while start < len(ca):
        stop = max(
            int(np.searchsorted(cost, (cost[start - 1] if start else 0) + budget, side="right")),
            start + 1,
        )
        a, b = ca[start:stop], cb[start:stop]
        inter = _intersections(ranks, indptr, sizes, a, b)
        jac = inter / (sizes[a] + sizes[b] - inter)
        ok = jac >= t - 1e-12
        keep_a.append(a[ok])
        keep_b.append(b[ok])
        keep_j.append(jac[ok])
        start = stop
    ca = np.concatenate(keep_a) if keep_a else np.zeros(0, np.int64)
    cb = np.concatenate(keep_b) if keep_b else np.zeros(0, np.int64)
    cj = np.concatenate(keep_j) if keep_j else np.zeros(0, np.float64)
    # Classes back to rows.
    members = np.argsort(cls_of, kind="stable")
    counts = np.bincount(cls_of, minlength=m)
    first = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    rows_a, rows_b, jacs = [], [], []
    single = (counts[ca] == 1) & (counts[cb] == 1)
    rows_a.append(members[first[ca[single]]])
    rows_b.append(members[first[cb[single]]])
    jacs.append(cj[single])
    for a, b, j in zip(ca[~single], cb[~single], cj[~single]):
        ra, rb = members[first[a] : first[a + 1]], members[first[b] : first[b + 1]]
        rows_a.append(np.repeat(ra, len(rb)))
        rows_b.append(np.tile(rb, len(ra)))
        jacs.append(np.full(len(ra) * len(rb), j))
    for c in np.flatnonzero(counts > 1):
        rc = members[first[c] : first[c + 1]]
        x, y = np.triu_indices(len(rc), 1)
        rows_a.append(rc[x])
        rows_b.append(rc[y])
        jacs.append(np.ones(len(x)))
    rows = np.column_stack([np.concatenate(rows_a), np.concatenate(rows_b)]).astype(np.int64)
    return Truth.from_arrays(n, rows, np.concatenate(jacs))


def _prefix_candidates(
    p_rank: np.ndarray,
    p_row: np.ndarray,
    p_pos: np.ndarray,
    sizes: np.ndarray,
    t: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of rows (a < b) that share a prefix token, whose sizes allow Jaccard t, and that pass
    the positional filter, once each.

    Positional filter: let w be the last prefix token two sets x and y share, at positions i in x
    and j in y (0-based, in the global order), and c the number of prefix tokens they share. Every
    common token ranked before w lies before i in x and before j in y, so inside both prefixes,
    and is counted in c; the common tokens after w are at most min(|x| - i - 1, |y| - j - 1). A
    pair whose c + min(...) is below the overlap Jaccard t needs, t / (1 + t) * (|x| + |y|), is
    not a candidate."""
    order = np.lexsort((p_row, p_rank))
    sr, srow, spos = p_rank[order], p_row[order], p_pos[order]
    starts = np.flatnonzero(np.r_[True, sr[1:] != sr[:-1]]) if len(sr) else np.zeros(0, np.int64)
    group = np.diff(np.r_[starts, len(sr)])
    m = len(sizes)
    partial: list[tuple[np.ndarray, ...]] = []
    pending = merged = 0  # pairs held in partial, and in its first (merged) entry

    def aggregate(
        keys: np.ndarray, count: np.ndarray, pl: np.ndarray, ph: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        o = np.argsort(keys, kind="stable")
        k = keys[o]
        first = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if len(k) else np.zeros(0, np.int64)
        return (
            k[first],
            np.add.reduceat(count[o], first) if len(k) else count,
            np.maximum.reduceat(pl[o], first) if len(k) else pl,
            np.maximum.reduceat(ph[o], first) if len(k) else ph,
        )

    for g in np.unique(group):
        if g < 2:
            continue
        gs = starts[group == g]
        x, y = np.triu_indices(int(g), 1)
        # Bounded memory: groups of one size at a time, in slices.
        step = max(1, (1 << 22) // len(x))
        for s in range(0, len(gs), step):
            base = gs[s : s + step, None]
            ia, ib = (base + x).ravel(), (base + y).ravel()
            a, b = srow[ia], srow[ib]
            swap = a > b
            lo, hi = np.where(swap, b, a), np.where(swap, a, b)
            plo, phi = np.where(swap, spos[ib], spos[ia]), np.where(swap, spos[ia], spos[ib])
            sa, sb = sizes[lo], sizes[hi]
            ok = (np.minimum(sa, sb) >= t * np.maximum(sa, sb) - 1e-9) & (lo != hi)
            partial.append(
                aggregate(
                    lo[ok] * m + hi[ok],
                    np.ones(int(ok.sum()), np.int32),
                    plo[ok].astype(np.int32),
                    phi[ok].astype(np.int32),
                )
            )
            pending += len(partial[-1][0])
            if pending > 2 * merged + (
                1 << 24
            ):  # bounded memory: merged into one set of distinct pairs
                partial = [
                    aggregate(*(np.concatenate([part[f] for part in partial]) for f in range(4)))
                ]
                merged = pending = len(partial[0][0])
    if not partial:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys, count, pl, ph = aggregate(
        *(np.concatenate([part[f] for part in partial]) for f in range(4))
    )
    del partial
    a, b = keys // m, keys % m
    bound = count + np.minimum(sizes[a] - pl - 1, sizes[b] - ph - 1)
    ok = bound >= t / (1 + t) * (sizes[a] + sizes[b]) - 1e-9
    return a[ok], b[ok]


def _intersections(
    ranks: np.ndarray, indptr: np.ndarray, sizes: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """|set a & set b| for each pair: the tokens of both, tagged by pair, counted when they repeat."""
    both = np.r_[a, b]
    lens = sizes[both]
    pair = np.r_[np.arange(len(a)), np.arange(len(b))]
    owner = np.repeat(pair, lens)
    offset = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    tok = ranks[np.repeat(indptr[both], lens) + offset]
    width = int(ranks.max(initial=0)) + 1
    key = owner * width + tok
    key.sort()
    dup = key[1:] == key[:-1]
    return np.bincount(key[1:][dup] // width, minlength=len(a)).astype(np.float64)


def neardup_shingles(text: str) -> frozenset[str]:
    """Word 3-shingles as neardup defines them: the text normalized by ``neardup.Simhasher()``
    (NFKC, case folding), neardup's word tokens, three in a row; a text of fewer than three words
    is one shingle. A text without words has one shingle of its own: its normalized text behind a
    NUL, so that it is a copy of the texts normalized like it (Jaccard 1) and like no other."""
    features = _WORD3.features(text)
    if features:
        return frozenset(features)
    return frozenset(["\0" + _WORD3.normalize(text)])


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    """Ids and texts of a JSONL corpus ({"id", "text"} per line; .gz read as gzip)."""
    ids, texts = [], []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            ids.append(str(record["id"]))
            texts.append(record["text"])
    return ids, texts


def debian_corpus(data: Path, hint: str = "--data DIR") -> tuple[Path, Path | None]:
    """``(corpus, truth file)`` of the Debian corpus in ``data`` (``../shared/data``). Where it is
    absent, as in a fresh clone, the sample that ships with neardup and ``None`` (compute its
    truth with :func:`exact_truth`), said in one line on stderr; ``hint`` is how to point the
    benchmark at the full corpus."""
    corpus, truth = data / DEBIAN_JSONL_GZ.name, data / DEBIAN_TRUTH.name
    if corpus.exists() and truth.exists():
        return corpus, truth
    print(
        f"no Debian corpus in {data}: using the {DEBIAN_SAMPLE.name} that ships with neardup (3,000 documents), "
        f"its truth computed exactly now; {hint} for the full corpus",
        file=sys.stderr,
        flush=True,
    )
    return DEBIAN_SAMPLE, None


def debian_source(data: Path, hint: str = "--data DIR") -> Path:
    """The Debian corpus in ``data`` for a benchmark that needs its texts alone (no truth); where it
    is absent, the sample that ships with neardup, said in one line on stderr."""
    corpus = data / DEBIAN_JSONL_GZ.name
    if corpus.exists():
        return corpus
    print(
        f"no Debian corpus in {data}: using the {DEBIAN_SAMPLE.name} that ships with neardup (3,000 documents); "
        f"{hint} for the full corpus",
        file=sys.stderr,
        flush=True,
    )
    return DEBIAN_SAMPLE


def score(
    reported_pairs: np.ndarray | Iterable[tuple[int, int]] | None,
    truth: Truth,
    threshold: float = 0.8,
    *,
    kept_row: np.ndarray | Sequence[int] | None = None,
    texts: Sequence[str] | None = None,
    shingler: Callable[[str], AbstractSet[Hashable]] | None = None,
) -> dict[str, float]:
    """The scorer of every benchmark.

    Pairs: precision, recall and F1 of reported pairs of rows against the truth pairs with Jaccard
    >= ``threshold``, and ``loose``: the share of reported pairs with Jaccard >= 0.5 (pairs in
    the truth file at all); ``reported`` and ``truth`` count them (for curves of recall against
    candidates). A pair is counted once whatever its order or repeats. With nothing reported
    precision and loose are 1.0; with nothing to find recall is 1.0.

    A dedup result: ``kept_row[i]`` is the row of the document kept in row i's place (i itself
    for a kept document). Its removals ``(kept_row[i], i)`` are the reported pairs unless
    ``reported_pairs`` is given, and three more figures come out:

    - ``removal_precision``: the share of removed documents whose Jaccard with their kept document
      is >= ``threshold``, computed exactly from ``texts`` with ``shingler`` (default
      :func:`shingles`) when ``texts`` is given, else read from the truth (exact too);
    - ``removal_recall``: the share of the documents that have an earlier document at Jaccard >=
      ``threshold`` (``to_remove`` of them) that are removed;
    - ``removed``: how many documents are removed.
    """
    pairs_out: np.ndarray | Iterable[tuple[int, int]]
    removed_rows = kept_of = None
    if kept_row is not None:
        kept = np.asarray(kept_row, dtype=np.int64)
        if kept.shape != (truth.n,) or (len(kept) and (kept.min() < 0 or kept.max() >= truth.n)):
            raise ValueError(f"kept_row must hold {truth.n} rows in [0, {truth.n})")
        removed_rows = np.flatnonzero(kept != np.arange(truth.n))
        kept_of = kept[removed_rows]
        if len(removed_rows) and not np.all(kept[kept_of] == kept_of):
            raise ValueError("a kept_row points to a removed document")
    if reported_pairs is None:
        if removed_rows is None or kept_of is None:
            raise ValueError("give reported pairs, a kept_row, or both")
        pairs_out = np.column_stack([kept_of, removed_rows])
    else:
        pairs_out = reported_pairs
    reported = pair_keys(truth.n, pairs_out)
    strong = truth.keys[truth.jaccard >= threshold - 1e-9]  # float noise of values read from text
    tp = int(np.isin(reported, strong, assume_unique=True).sum())
    similar = int(np.isin(reported, truth.keys[truth.jaccard >= LOOSE - 1e-9]).sum())
    precision = tp / len(reported) if len(reported) else 1.0
    recall = tp / len(strong) if len(strong) else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    out: dict[str, float] = {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "loose": similar / len(reported) if len(reported) else 1.0,
        "reported": len(reported),
        "truth": len(strong),
    }
    if removed_rows is not None and kept_of is not None:
        if texts is not None:
            if len(texts) != truth.n:
                raise ValueError(f"texts must hold the {truth.n} documents of the truth")
            shingle = shingles if shingler is None else shingler
            good = sum(
                jaccard(shingle(texts[a]), shingle(texts[b])) >= threshold - 1e-12
                for a, b in zip(kept_of, removed_rows)
            )
        else:
            good = int(
                np.isin(
                    pair_keys(truth.n, np.column_stack([kept_of, removed_rows]), unique=False),
                    strong,
                ).sum()
            )
        later = np.unique(strong % truth.n)  # the later row of each strong pair has an earlier one
        out["removed"] = len(removed_rows)
        out["removal_precision"] = good / len(removed_rows) if len(removed_rows) else 1.0
        out["to_remove"] = len(later)
        out["removal_recall"] = (
            float(np.isin(later, removed_rows).sum() / len(later)) if len(later) else 1.0
        )
    return out


# --- The generator -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SynthCorpus:
    """A generated corpus: its documents, its truth and its size."""

    jsonl: Path  # one {"id": str, "text": str} per line, UTF-8, plain (not gzipped)
    truth: Path  # gzipped TSV, header "id_a\tid_b\tjaccard", same format as the shared truth
    n: int


_CONSONANTS = "bcdfghjklmnprstvwxyz"
_SYLLABLES = [c + v for c in _CONSONANTS for v in "aeiou"]
#: Made-up names per family; documents cycle through them.
_NAMES = 8
_SCRAMBLE = 0x9E3779B1
#: Boilerplate an edit may add: short lines of the kind packaging adds to many descriptions.
BOILERPLATE = [
    "This package is part of the default installation.",
    "This is a transitional package; it can safely be removed.",
    "This package contains the documentation.",
    "Homepage and upstream bug tracker are listed in the copyright file.",
    "The package is maintained by a team; contributions are welcome.",
    "Built with hardening flags and link time optimization.",
    "This package ships the debugging symbols.",
    "See the changelog for the differences with the previous release.",
    "Only the command line tools are included here.",
    "Please report problems to the distribution bug tracker.",
    "This build has no graphical user interface.",
    "The examples are installed in the documentation folder.",
]
# Family sizes: P(size = s) for s >= 2 falls as s ** -1.5 up to 50; singletons take the rest so that
# about 30% of the documents belong to families of two or more.
_SIZES = list(range(2, 51))
_SIZE_WEIGHTS = [s**-1.5 for s in _SIZES]
_MEAN_SIZE = sum(s * w for s, w in zip(_SIZES, _SIZE_WEIGHTS)) / sum(_SIZE_WEIGHTS)
_IN_FAMILIES = 0.3
_P_FAMILY = _IN_FAMILIES / (_IN_FAMILIES + (1 - _IN_FAMILIES) * _MEAN_SIZE)
_CUM_SIZE_WEIGHTS = list(np.cumsum(_SIZE_WEIGHTS))


@dataclass
class _Source:
    """The source corpus as word lists (whitespace-split, strings shared), its layouts and its
    vocabulary (every token that text not made up can contain)."""

    words: list[list[str]]  # words of each document, in order
    layouts: list[list[int]]  # words per paragraph of each document, the short description first
    vocabulary: frozenset[str]


_SOURCE: _Source | None = None
_SOURCE_KEY: tuple[str, int, int] | None = None


def _load_source(path: Path) -> _Source:
    """Reads the source corpus, once per process."""
    global _SOURCE, _SOURCE_KEY
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if _SOURCE is not None and key == _SOURCE_KEY:
        return _SOURCE
    shared: dict[str, str] = {}
    words, layouts = [], []
    vocabulary: set[str] = set()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            try:
                text = json.loads(line)["text"]
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(
                    f"{path}:{lineno}: expected a JSON object with a text field ({err})"
                ) from None
            if not isinstance(text, str):
                raise ValueError(f"{path}:{lineno}: the text field is not a string")
            head, _, body = text.partition("\n")
            paragraphs = [head] + [p for p in re.split(r"\n\s*\n", body) if p.strip()]
            layout = [len(p.split()) for p in paragraphs]
            doc = [shared.setdefault(w, w) for w in text.split()]
            if len(doc) < 3:
                continue
            vocabulary.update(WORD.findall(text.lower()))
            words.append(doc)
            layouts.append([c for c in layout if c])
    for line in BOILERPLATE:
        vocabulary.update(WORD.findall(line.lower()))
    if not words:
        raise ValueError(f"{path}: no document of three words or more")
    _SOURCE, _SOURCE_KEY = _Source(words, layouts, frozenset(vocabulary)), key
    return _SOURCE


def _name(code: int, width: int) -> str:
    """The made-up word spelling ``code`` in ``width`` syllables (one word per code below
    100 ** width: the code is first scrambled by a bijection, so that neighbours look unalike)."""
    size = len(_SYLLABLES) ** width
    code = (code * _SCRAMBLE + size // 3) % size  # _SCRAMBLE is odd and not a multiple of 5
    out = []
    for _ in range(width):
        code, digit = divmod(code, len(_SYLLABLES))
        out.append(_SYLLABLES[digit])
    return "".join(out)


def _name_width(n: int) -> int:
    """Syllables per name so that every family of an n-document corpus has its own names."""
    codes = ((n + CHUNK - 1) // CHUNK) * CHUNK * _NAMES
    width = 1
    while len(_SYLLABLES) ** width < codes:
        width += 1
    return max(width, 4)


Doc = list[list[str]]  # paragraphs of words; the first is the short description


def _render(doc: Doc) -> str:
    """Debian layout: the short description, then the long one wrapped at 72 columns with blank
    lines between paragraphs."""
    out = [" ".join(doc[0])]
    for i, para in enumerate(doc[1:]):
        if i:
            out.append("")
        line: list[str] = []
        width = 0
        for w in para:
            if line and width + 1 + len(w) > 72:
                out.append(" ".join(line))
                line, width = [], 0
            width += len(w) + (1 if line else 0)
            line.append(w)
        if line:
            out.append(" ".join(line))
    return "\n".join(out)


def _shingle_set(text: str) -> set[tuple[str, ...]]:
    """The shingles of :func:`shingles` as tuples of tokens (the same set, cheaper to build)."""
    tokens = WORD.findall(text.lower())
    if len(tokens) < 3:
        return {tuple(tokens)}
    return set(zip(tokens, tokens[1:], tokens[2:]))


def _mostly_private(sh: set[tuple[str, ...]], private: frozenset[str]) -> bool:
    """More than a third of the shingles contain one of the family's own names."""
    own = sum(1 for s in sh if not private.isdisjoint(s))
    return 3 * own > len(sh)


class _Family:
    """Draws one family: its base, then its members."""

    def __init__(self, rng: random.Random, src: _Source, code: int, width: int) -> None:
        self.rng, self.src = rng, src
        names = [_name(code * _NAMES + j, width) for j in range(_NAMES)]
        self.names = [w.capitalize() if rng.random() < 0.5 else w for w in names]
        self.private = frozenset(w for w in names if w not in src.vocabulary)

    def base(self) -> tuple[Doc, str, set[tuple[str, ...]]]:
        """New text laid out like a random Debian description: runs of copied words between the
        family's names."""
        rng, src = self.rng, self.src
        while True:
            layout = src.layouts[rng.randrange(len(src.layouts))]
            slot = rng.randrange(_NAMES)
            doc: Doc = []
            for count in layout:
                para: list[str] = []
                gap = rng.randint(0, 3)  # the first name comes early
                while len(para) < count:
                    if gap == 0:
                        para.append(self.names[slot % _NAMES])
                        slot += 1
                        gap = rng.randint(2, 6)
                        continue
                    words = src.words[rng.randrange(len(src.words))]
                    start = rng.randrange(len(words))
                    run = words[start : start + min(gap, count - len(para))]
                    para.extend(run)
                    gap = 0
                doc.append(para)
            text = _render(doc)
            sh = _shingle_set(text)
            if _mostly_private(sh, self.private):
                return doc, text, sh

    def _word(self) -> str:
        words = self.src.words[self.rng.randrange(len(self.src.words))]
        return words[self.rng.randrange(len(words))]

    def member(self, parent: Doc) -> Doc:
        """A copy of ``parent`` with random edits: most light, some heavy, a few none."""
        rng = self.rng
        doc = [list(p) for p in parent]
        kind = rng.random()
        rate = (
            0.0 if kind < 0.1 else rng.uniform(0.0, 0.04) if kind < 0.5 else rng.uniform(0.04, 0.2)
        )
        total = sum(len(p) for p in doc)
        for _ in range(
            int(rate * total + rng.random())
        ):  # rounded at random, so light edits stay light
            at = rng.randrange(max(total, 1))
            p = 0
            while p < len(doc) - 1 and at >= len(doc[p]):
                at -= len(doc[p])
                p += 1
            para = doc[p]
            op = rng.random()
            if op < 0.5 and at < len(para):
                para[at] = self._word()
            elif op < 0.75 and at < len(para) and total > 3:
                del para[at]
                total -= 1
            else:
                para.insert(at, self._word())
                total += 1
        body = doc[1:]
        if len(body) >= 2 and rng.random() < 0.15:
            rng.shuffle(body)
        if len(body) >= 2 and rng.random() < 0.05:
            body.pop()
        if rng.random() < 0.15:
            line = BOILERPLATE[rng.randrange(len(BOILERPLATE))].split()
            body.insert(len(body) if rng.random() < 0.7 else 0, line)
        return [doc[0]] + [p for p in body if p]


def _family_size(rng: random.Random) -> int:
    if rng.random() >= _P_FAMILY:
        return 1
    x = rng.random() * _CUM_SIZE_WEIGHTS[-1]
    lo = 0
    while _CUM_SIZE_WEIGHTS[lo] < x:
        lo += 1
    return _SIZES[lo]


@dataclass(frozen=True)
class _Task:
    source: Path
    seed: int
    chunk: int
    docs: int
    first_row: int  # its first document's row in the corpus
    first_family: int  # the number of its first family (names are drawn from family numbers)
    width: int


def _chunk(task: _Task) -> tuple[bytes, bytes, dict[str, int]]:
    """One chunk: its JSONL lines and its truth lines (sorted), and counts for the marker."""
    src = _load_source(task.source)
    rng = random.Random(f"neardup-synth:{task.seed}:{task.chunk}")
    texts: list[str] = []
    families: list[list[int]] = []  # indices into texts
    shingle_sets: list[set[tuple[str, ...]]] = []
    while len(texts) < task.docs:
        size = min(_family_size(rng), task.docs - len(texts))
        fam = _Family(rng, src, task.first_family + len(families), task.width)
        doc, text, sh = fam.base()
        docs = [doc]
        members = [len(texts)]
        texts.append(text)
        shingle_sets.append(sh)
        for _ in range(size - 1):
            parent = docs[0] if rng.random() < 0.7 else docs[rng.randrange(len(docs))]
            for _attempt in range(8):
                child = fam.member(parent)
                text = _render(child)
                sh = _shingle_set(text)
                if _mostly_private(sh, fam.private):
                    break
            else:  # an unedited copy of a valid parent is valid
                child = parent
                text = _render(child)
                sh = _shingle_set(text)
            docs.append(child)
            members.append(len(texts))
            texts.append(text)
            shingle_sets.append(sh)
        families.append(members)
    order = list(range(len(texts)))
    rng.shuffle(order)
    row = [0] * len(texts)
    for position, i in enumerate(order):
        row[i] = task.first_row + position
    pairs = []
    strong = 0
    for members in families:
        for i, j in combinations(members, 2):
            a, b = shingle_sets[i], shingle_sets[j]
            inter = len(a & b)
            union = len(a) + len(b) - inter
            if 2 * inter >= union:
                strong += 5 * inter >= 4 * union
                ra, rb = sorted((row[i], row[j]))
                pairs.append((ra, rb, inter / union))
    pairs.sort()
    jsonl = "".join(
        json.dumps({"id": f"d{task.first_row + p}", "text": texts[i]}, ensure_ascii=False) + "\n"
        for p, i in enumerate(order)
    )
    truth = "".join(f"d{a}\td{b}\t{j:.6f}\n" for a, b, j in pairs)
    stats = {
        "documents": len(texts),
        "families": len(families),
        "families_2plus": sum(1 for m in families if len(m) > 1),
        "documents_in_families": sum(len(m) for m in families if len(m) > 1),
        "pairs_50": len(pairs),
        "pairs_80": int(strong),
        "identical": sum(1 for _, _, j in pairs if j == 1.0),
    }
    return jsonl.encode("utf-8"), truth.encode("utf-8"), stats


def _paths(n: int, out_dir: Path, seed: int) -> tuple[Path, Path, Path]:
    stem = f"{n}-s{seed}"
    return (
        out_dir / f"corpus-{stem}.jsonl",
        out_dir / f"truth-{stem}.tsv.gz",
        out_dir / f"corpus-{stem}.done",
    )


def _marker_matches(marker: Path, expected: dict[str, object], jsonl: Path, truth: Path) -> bool:
    try:
        done = json.loads(marker.read_text(encoding="utf-8"))
        return (
            all(done.get(k) == v for k, v in expected.items())
            and jsonl.stat().st_size == done["jsonl_bytes"]
            and truth.stat().st_size == done["truth_bytes"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def generate(
    n: int, out_dir: Path, *, seed: int = 0, source: Path = DEBIAN_JSONL_GZ, jobs: int = 1
) -> SynthCorpus:
    """Write corpus-{n}-s{seed}.jsonl and truth-{n}-s{seed}.tsv.gz in out_dir (reusing them if
    they already exist and are complete, e.g. a small .done marker or a check) and return them.

    ``jobs`` processes draw the chunks (the output does not depend on it). The files are renamed
    into place together, then ``corpus-{n}-s{seed}.done`` records the arguments, sizes and
    counts (documents, families, truth pairs) of the run.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive number of documents, not {n!r}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs!r}")
    source = Path(source)
    out_dir = Path(out_dir)
    jsonl, truth, marker = _paths(n, out_dir, seed)
    st = source.stat()
    expected: dict[str, object] = {
        "version": VERSION,
        "n": n,
        "seed": seed,
        "source": source.name,
        "source_bytes": st.st_size,
    }
    if _marker_matches(marker, expected, jsonl, truth):
        return SynthCorpus(jsonl, truth, n)
    _load_source(source)  # a bad source fails here, before any output
    out_dir.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    width = _name_width(n)
    # A chunk has at most CHUNK families: c * CHUNK numbers the first family of chunk c.
    tasks = [
        _Task(source, seed, c, min(CHUNK, n - c * CHUNK), c * CHUNK, c * CHUNK, width)
        for c in range((n + CHUNK - 1) // CHUNK)
    ]
    totals: dict[str, int] = {}
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    with Outputs() as outputs:
        jsonl_tmp, truth_tmp = outputs.reserve(str(jsonl)), outputs.reserve(str(truth))
        with (
            open(jsonl_tmp, "wb") as fj,
            open(truth_tmp, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as ft,
        ):
            ft.write(b"id_a\tid_b\tjaccard\n")
            for data, pairs, stats in _map(tasks, jobs):
                fj.write(data)
                ft.write(pairs)
                for k, v in stats.items():
                    totals[k] = totals.get(k, 0) + v
        outputs.commit()
    done = dict(
        expected,
        jsonl_bytes=jsonl.stat().st_size,
        truth_bytes=truth.stat().st_size,
        seconds=round(time.perf_counter() - started, 1),
        cpu_seconds=round(_cpu_seconds() - cpu_started, 1),
        jobs=jobs,
        **totals,
    )
    with Outputs() as outputs:
        tmp = outputs.reserve(str(marker))
        Path(tmp).write_text(json.dumps(done, indent=1) + "\n", encoding="utf-8")
        outputs.commit()
    return SynthCorpus(jsonl, truth, n)


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the workers of ``jobs``)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _map(tasks: list[_Task], jobs: int) -> Iterator[tuple[bytes, bytes, dict[str, int]]]:
    """The chunks in order, drawn by ``jobs`` processes. They are spawned, not forked (forking a
    process that runs threads is unsafe), so each reads the source once itself."""
    if jobs == 1 or len(tasks) == 1:
        yield from map(_chunk, tasks)
        return
    with multiprocessing.get_context("spawn").Pool(min(jobs, len(tasks))) as pool:
        yield from pool.imap(_chunk, tasks)


def describe(corpus: SynthCorpus) -> str:
    """A Markdown table of a generated corpus: size, families, text lengths and truth pairs by
    Jaccard band, read from its files and its marker."""
    done = json.loads(corpus.jsonl.with_suffix(".done").read_text(encoding="utf-8"))
    with open(corpus.jsonl, encoding="utf-8") as f:
        lengths = np.array([len(json.loads(line)["text"]) for line in f])
    with gzip.open(corpus.truth, "rt", encoding="utf-8") as f:
        next(f)
        jac = np.array([float(line.rsplit("\t", 1)[1]) for line in f])
    bands = [(0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.0)]
    rows = [
        ("documents", f"{done['documents']:,}"),
        (
            "JSONL size",
            f"{done['jsonl_bytes'] / 1e6:,.1f} MB (truth {done['truth_bytes'] / 1e6:,.1f} MB gzipped)",
        ),
        (
            "families (of them 2 to 50 documents)",
            f"{done['families']:,} ({done['families_2plus']:,})",
        ),
        (
            "documents in families of 2 or more",
            f"{done['documents_in_families']:,} ({done['documents_in_families'] / done['documents']:.1%})",
        ),
        (
            "text length, characters: median / p90 / p99 / max",
            " / ".join(f"{v:,.0f}" for v in np.percentile(lengths, [50, 90, 99, 100])),
        ),
        ("truth pairs, Jaccard >= 0.5", f"{done['pairs_50']:,}"),
        ("truth pairs, Jaccard >= 0.8", f"{done['pairs_80']:,}"),
    ]
    rows += [
        (f"truth pairs, Jaccard in [{lo}, {hi})", f"{int(((jac >= lo) & (jac < hi)).sum()):,}")
        for lo, hi in bands
    ]
    rows.append(("truth pairs, Jaccard 1 (same shingles)", f"{done['identical']:,}"))
    cpu = f", {done['cpu_seconds']:,.1f} s of CPU" if "cpu_seconds" in done else ""
    rows.append(
        (
            f"generation, {done['jobs']} process(es), as the marker records it",
            f"{done['seconds']:,.1f} s{cpu}",
        )
    )
    return "\n".join(
        [f"| corpus-{corpus.n}-s{done['seed']} | |", "|---|---|"]
        + [f"| {k} | {v} |" for k, v in rows]
    )


def main(argv: list[str] | None = None) -> int:
    """``python benches/synth.py N OUT_DIR [--seed S] [--jobs J] [--source FILE]``."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("n", type=int, help="number of documents")
    ap.add_argument(
        "out_dir", type=Path, help="folder for the corpus, its truth and the .done marker"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="processes drawing chunks (default 1; same output for any)",
    )
    ap.add_argument(
        "--source",
        type=Path,
        default=DEBIAN_JSONL_GZ,
        help='JSONL(.gz) of {"text"} documents to draw from',
    )
    ap.add_argument(
        "--stats", action="store_true", help="then print a Markdown table of the corpus"
    )
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error(f"N must be a positive number of documents, not {args.n}")
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    if not args.source.is_file():
        ap.error(f"--source {args.source}: no such file")
    if args.out_dir.exists() and not args.out_dir.is_dir():
        ap.error(f"{args.out_dir}: exists and is not a folder")
    started = time.perf_counter()
    try:
        corpus = generate(args.n, args.out_dir, seed=args.seed, source=args.source, jobs=args.jobs)
    except ValueError as err:
        ap.error(str(err))
    except OSError as err:
        print(f"synth.py: {err.filename or ''}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(f"{corpus.jsonl}\n{corpus.truth}\n({time.perf_counter() - started:.1f} s)")
    if args.stats:
        print(describe(corpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())
