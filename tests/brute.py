"""Brute-force oracles for dedup tests: all pairwise distances with numpy's popcount, clusters by
plain union-find, and a small corpus of near-duplicate families."""

from __future__ import annotations

import math
import random

import numpy as np

import reference
from neardup.pipeline import SHORT
from neardup.verify import THRESHOLD_K


def distances(fps: np.ndarray) -> np.ndarray:
    """The full n x n matrix of Hamming distances."""
    return np.bitwise_count(fps[:, None] ^ fps[None, :]).astype(np.int64)


def pairs(fps: np.ndarray, k: int) -> set[tuple[int, int, int]]:
    d = distances(fps)
    i, j = np.nonzero(np.triu(d <= k, 1))
    return {(int(a), int(b), int(d[a, b])) for a, b in zip(i, j)}


def clusters(fps: np.ndarray, k: int) -> np.ndarray:
    """Labels: the smallest row of each connected component of the pairs within k."""
    n = len(fps)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b, _ in sorted(pairs(fps, k)):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(x) for x in range(n)], dtype=np.int64)


def keep_first(labels: np.ndarray) -> np.ndarray:
    return np.array([labels[r] == r for r in range(len(labels))])


def keep_by(labels: np.ndarray, key: list) -> np.ndarray:
    """The row with the highest key in each cluster (the first of equals)."""
    best: dict[int, int] = {}
    for r, label in enumerate(labels.tolist()):
        if label not in best or key[r] > key[best[label]]:
            best[label] = r
    mask = np.zeros(len(labels), dtype=bool)
    mask[list(best.values())] = True
    return mask


def family_corpus(families: int = 14, seed: int = 7) -> list[str]:
    """Families of texts that differ by a few words, with some exact copies, shuffled; a few
    texts are not ASCII."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(400)]
    vocab += ["café", "naïve", "中文", "données", "straße"]
    docs = []
    for _ in range(families):
        base = [rng.choice(vocab) for _ in range(rng.randint(30, 60))]
        for copy in range(rng.randint(1, 5)):
            words = list(base)
            for _ in range(copy % 3):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            if copy == 4:
                words.append("extra words at the end")
            docs.append(" ".join(words))
    rng.shuffle(docs)
    return docs


def star_oracle(order, near) -> tuple[list[int], list[float]]:
    """Greedy stars by brute force: in ``order``, each row not yet removed is kept and removes
    every later free row ``s`` for which ``near(c, s)`` gives a Jaccard (or NaN) rather than None."""
    n = len(order)
    kept, jac = [-1] * n, [1.0] * n
    for c in order:
        if kept[c] != -1:
            continue
        kept[c] = c
        for s in order:
            if kept[s] == -1:
                j = near(c, s)
                if j is not None:
                    kept[s], jac[s] = c, j
    return kept, jac


def same_floats(a, b) -> bool:
    """Equal lists of floats, NaN equal to NaN."""
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))


def shingle_set(text: str, n: int = 3) -> set[str]:
    """The set of word n-shingles of the normalized text, by the reference implementation."""
    return set(reference.features(reference.normalize(text), "word", n))


def exact_jaccard(a: str, b: str, n: int = 3) -> float:
    x, y = shingle_set(a, n), shingle_set(b, n)
    return len(x & y) / len(x | y) if x | y else 0.0


def fingerprint_near(docs, fps, k):
    """Near-duplicates on fingerprints alone: copies of a normalized text (Jaccard 1), or two
    texts with features whose fingerprints are within k (Jaccard unknown: NaN)."""
    norm = [reference.normalize(t) for t in docs]
    d = distances(fps)

    def near(c, s):
        if norm[c] == norm[s]:
            return 1.0
        return math.nan if fps[c] and fps[s] and d[c, s] <= k else None

    return near


def verified_near(docs, fps, k, threshold):
    """Verified near-duplicates: copies of a normalized text (Jaccard 1), or two texts with
    features whose word 3-shingle Jaccard is >= threshold and whose fingerprints are within k, or
    which are both short (at most SHORT shingles: compared whatever their fingerprints)."""
    norm = [reference.normalize(t) for t in docs]
    d = distances(fps)
    sizes = [len(shingle_set(t)) for t in docs]

    def near(c, s):
        if norm[c] == norm[s]:
            return 1.0
        short = sizes[c] <= SHORT and sizes[s] <= SHORT
        if not (fps[c] and fps[s] and (d[c, s] <= k or short)):
            return None
        j = float(np.float32(exact_jaccard(docs[c], docs[s])))
        return j if j >= np.float32(threshold) else None

    return near


def verified_stars(docs: list[str], k: int = THRESHOLD_K, threshold: float = 0.8) -> list[int]:
    """The row kept in each row's place by the default dedup (verified stars, keep first)."""
    fps = np.array([reference.fingerprint(reference.normalize(t)) for t in docs], dtype=np.uint64)
    return star_oracle(list(range(len(docs))), verified_near(docs, fps, k, threshold))[0]


def fmix64(k: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer (the published constants), on an array."""
    k = k.astype(np.uint64)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xFF51AFD7ED558CCD)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    return k ^ (k >> np.uint64(33))


def repeated_slots(sketches: list[np.ndarray], bits: int) -> np.ndarray:
    """The slots (the top ``bits`` bits of fmix64) that two or more of the sketches' shingle
    hashes (checks, with the top bit set, left out) fall on, counted with numpy: the marks of
    ``_core.Repeats``."""
    hashes = np.concatenate([np.zeros(0, np.uint64), *(np.asarray(s, np.uint64) for s in sketches)])
    hashes = hashes[hashes < np.uint64(1 << 63)]
    slots, counts = np.unique(fmix64(hashes) >> np.uint64(64 - bits), return_counts=True)
    return slots[counts >= 2]
