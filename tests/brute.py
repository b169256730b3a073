"""Brute-force oracles for dedup tests: all pairwise distances with numpy's popcount, clusters by
plain union-find, and a small corpus of near-duplicate families."""

from __future__ import annotations

import random

import numpy as np


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
