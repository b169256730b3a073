"""Pairs of long documents whose bottom-1024 estimate lies near the threshold of 0.8, built by
hand for the tests of exact decisions (docs/evidence.md): random words, so that the exact
Jaccard is known from the construction and checked by ``neardup.jaccard``."""

from __future__ import annotations

import random
import string

import numpy as np

import neardup
from neardup.verify import Sketches, estimate_band


def random_words(n: int, seed: int, length: int = 9) -> list[str]:
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(string.ascii_lowercase) for _ in range(length)))
    return sorted(words)


def long_pair(
    exact_above: bool, seed: int, flip: bool = True, ngram: int = 1
) -> tuple[str, str, float]:
    """Two documents of about 3,000 distinct words whose bottom-1024 estimate of their word
    ``ngram``-shingle Jaccard and the exact one lie on opposite sides of 0.8 (with ``flip``;
    else on the same side, the estimate within the band and off the exact one), found by
    drawing pairs near it. With ``ngram`` = 1 the words are shuffled; else the shared words come
    first, in one order, so that each document's shingles are its shared run's and its own."""
    vocab = random_words(8000, seed=seed, length=7)
    rng = random.Random(seed)
    for _ in range(400):
        words = rng.sample(vocab, 3400)
        shared, only = words[:2660], words[2660:]
        # J = shared / (shared + 2 x only_each) around 0.8: 2,660 / (2,660 + 2 x 335) = 0.7988.
        extra = rng.randrange(-8, 9)
        a = shared + only[: 335 + extra]
        b = shared + only[370 : 370 + 335 + extra]
        if ngram == 1:
            a, b = rng.sample(a, len(a)), rng.sample(b, len(b))
        a_text, b_text = " ".join(a), " ".join(b)
        exact = neardup.jaccard(a_text, b_text, ngram=ngram)
        sketches = Sketches(ngram=ngram)
        sketches.add([0, 1], [a_text, b_text])
        estimate = float(sketches.jaccard(np.array([0]), np.array([1]))[0])
        sides = (exact >= 0.8) == exact_above and ((estimate >= 0.8) != exact_above) == flip
        if sides and abs(estimate - 0.8) < estimate_band(0.8) and abs(estimate - exact) > 1e-3:
            return a_text, b_text, exact
    raise AssertionError("no such pair drawn")


#: (exact_above, flip, seed) of pairs of word 3-shingles whose fingerprints lie within k = 8:
#: each way of the estimate and the exact Jaccard around 0.8, two of the flipped ones twice.
WITHIN_K8 = [
    (True, True, 2),
    (True, False, 6),
    (False, True, 1),
    (False, False, 0),
    (True, True, 19),
    (False, True, 12),
]


def pairs_within_k8() -> list[tuple[str, str, float]]:
    """The pairs of ``WITHIN_K8``: (a, b, exact Jaccard of their word 3-shingles)."""
    return [long_pair(above, seed, flip, ngram=3) for above, flip, seed in WITHIN_K8]


def band_corpus() -> tuple[list[str], dict[int, tuple[int, float]]]:
    """The pairs near the threshold, one after the other, and the removals their exact
    Jaccards make: {row b: (row a, exact)}."""
    texts: list[str] = []
    removals = {}
    for a, b, exact in pairs_within_k8():
        if exact >= 0.8:
            removals[len(texts) + 1] = (len(texts), exact)
        texts += [a, b]
    return texts, removals
