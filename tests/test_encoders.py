"""The seeds' other encoders as users see them: the sparse encoder (seed 001), simhash of dense
vectors (seed 003), minhash cluster keys (seed 004) and pre-split tokens for unsegmented text
(seed 002), against the seeds' hand-worked examples, brute force and statistics with fixed seeds.
"""

from __future__ import annotations

import math
import pickle
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
import reference
import seeds
from neardup.verify import THRESHOLD_K

MASK = (1 << 64) - 1


def splitmix64_output(seed: int, j: int) -> int:
    """Output j of SplitMix64 seeded with `seed` (Steele, Lea and Flood), written from the paper."""
    z = (seed + 0x9E3779B97F4A7C15 * (j + 1)) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def token_bits(token: str, size: int) -> list[int]:
    """The documented extendable hash: FNV-1a 64 seeds SplitMix64; bit i is bit i % 64 of word i // 64."""
    seed = reference.fnv1a_64(token.encode("utf-8"))
    words = [splitmix64_output(seed, j) for j in range(-(-size // 64))]
    return [(words[i // 64] >> (i % 64)) & 1 for i in range(size)]


def brute_sums(
    tokens: list[str], size: int, token_similarity: bool = False, weights: dict | None = None
) -> list[float]:
    sums = [0.0] * size
    for token in tokens:
        w = (weights or {}).get(token, 1.0)
        items = [token] + (list(token) if token_similarity else [])
        for item in items:
            for i, bit in enumerate(token_bits(item, size)):
                sums[i] += w if bit else -w
    return sums


def brute_top(sums: list[float], active: int) -> list[int]:
    return sorted(sorted(range(len(sums)), key=lambda i: (-sums[i], i))[:active])


# -- sparse encoder: seed 001 ---------------------------------------------------------------------


def rows(*bits: str) -> np.ndarray:
    return np.array([[int(b) for b in r.split()] for r in bits], dtype=np.uint8)


HELLO, THERE, WORLD = seeds.TOKENS["hello"], seeds.TOKENS["there"], seeds.TOKENS["world"]


def test_seed_nine_bit_example_without_token_similarity():
    enc = neardup.SparseEncoder(size=9, active=3)
    sums = enc.sums_of_hashes(rows(HELLO, THERE, WORLD))
    assert sums.tolist() == [-1, -1, -3, 3, -3, 1, -1, 1, -1]
    # "sim => [ 0 0 0 1 0 1 0 1 0 ]": the three largest sums.
    assert enc.select(sums).tolist() == [3, 5, 7]


def test_seed_nine_bit_example_with_token_similarity():
    table = rows(*seeds.WITH_CHARACTERS)
    enc = neardup.SparseEncoder(size=9, active=4)
    sums = enc.sums_of_hashes(table)
    # The seed prints "+0 +2 -6 +8 -2 -8 -6 -12 +0"; its own rows add up to 4 at position 1 and
    # 2 at position 4 (see tests/test_fingerprint.py): the column sums of the rows, by hand.
    assert sums.tolist() == [0, 4, -6, 8, 2, -8, -6, -12, 0]
    # From the seed's printed sums the four largest are its "sim => [ 1 1 0 1 0 0 0 0 1 ]"
    # (8, 2 and the two zeros) ...
    assert enc.select([0, 2, -6, 8, -2, -8, -6, -12, 0]).tolist() == [0, 1, 3, 8]
    # ... and from the rows' sums 8, 4, 2 and then the tie 0 = 0 goes to the lower index.
    assert enc.select(sums).tolist() == [0, 1, 3, 4]


def test_weights_multiply_rows():
    enc = neardup.SparseEncoder(size=9, active=2)
    assert enc.sums_of_hashes(rows(HELLO, THERE), weights=[4, 5]).tolist() == [
        -9,
        -1,
        -9,
        9,
        -9,
        -1,
        1,
        -1,
        -1,
    ]


def test_token_hash_is_the_documented_extendable_hash():
    for size in (1, 9, 64, 100, 2048):
        enc = neardup.SparseEncoder(size=size, active=1)
        for token in ("hello", "回家", "", "naïve"):
            assert enc.token_hash(token).astype(int).tolist() == token_bits(token, size)


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.lists(st.text(st.characters(codec="utf-8"), max_size=6), max_size=12),
    size=st.integers(1, 200),
    data=st.data(),
    token_similarity=st.booleans(),
)
def test_encode_matches_brute_force(tokens, size, data, token_similarity):
    active = data.draw(st.integers(1, size))
    weights = data.draw(
        st.none() | st.dictionaries(st.sampled_from(tokens or ["x"]), st.integers(-3, 5))
    )
    enc = neardup.SparseEncoder(
        size=size, active=active, token_similarity=token_similarity, weights=weights
    )
    want_sums = brute_sums(tokens, size, token_similarity, weights)
    assert enc.sums(tokens).tolist() == want_sums
    out = enc.encode(tokens)
    assert out.dtype == np.int64 and len(out) == active
    assert out.tolist() == brute_top(want_sums, active)
    dense = enc.encode_dense(tokens)
    assert (
        dense.dtype == bool
        and dense.sum() == active
        and np.flatnonzero(dense).tolist() == out.tolist()
    )


def test_output_always_has_exactly_active_bits():
    enc = neardup.SparseEncoder(size=2048, active=40)
    for tokens in ([], [""], ["a"], ["a"] * 1000, [str(i) for i in range(500)]):
        assert len(enc.encode(tokens)) == 40
    assert enc.encode([]).tolist() == list(range(40))  # all sums 0: ties to the lowest indices


def test_similar_token_lists_overlap_more_than_unrelated(corpus):
    enc = neardup.SparseEncoder()
    rng = random.Random(5)
    docs = [d.split() for d in corpus[:400] if len(d.split()) >= 40][:150]
    similar, unrelated = [], []
    for i, words in enumerate(docs):
        edited = list(words)
        for _ in range(3):
            edited[rng.randrange(len(edited))] = rng.choice(["foo", "bar", "baz"])
        a, b, c = (
            enc.encode(words),
            enc.encode(edited),
            enc.encode(docs[(i + len(docs) // 2) % len(docs)]),
        )
        similar.append(len(np.intersect1d(a, b)))
        unrelated.append(len(np.intersect1d(a, c)))
    # 40 of 2048 bits: two unrelated codes share about 0.8 by chance, a few more for the common
    # words of the corpus (a mean of 2.4 on the shared corpus, 5.5 on the shipped sample).
    assert np.mean(similar) > 25 and np.mean(unrelated) < 10
    assert all(s > u for s, u in zip(similar, unrelated))


def test_token_similarity_makes_alike_spellings_overlap():
    plain = neardup.SparseEncoder(size=1024, active=40)
    spelled = neardup.SparseEncoder(size=1024, active=40, token_similarity=True)
    a, b = ["encoding", "encoders"], ["encoded", "encoder"]
    overlap = lambda enc: len(np.intersect1d(enc.encode(a), enc.encode(b)))  # noqa: E731
    assert overlap(spelled) > overlap(plain) + 10


def test_a_heavy_token_picks_among_its_own_one_bits():
    enc = neardup.SparseEncoder(size=256, active=20, weights={"x": 1000})
    bits = enc.token_hash("x")
    assert bits[enc.encode(["x", "a", "b", "c"])].all()
    # A weight of 3 is three occurrences.
    three = neardup.SparseEncoder(size=256, active=20, weights={"a": 3})
    assert (
        three.sums(["a", "b"]).tolist()
        == neardup.SparseEncoder(size=256, active=20).sums(["a", "a", "a", "b"]).tolist()
    )


def test_encode_many_equals_one_by_one(corpus):
    enc = neardup.SparseEncoder(size=512, active=16, token_similarity=True)
    docs = [d.split()[:30] for d in corpus[:300]]
    many = enc.encode_many(docs)
    assert many.shape == (300, 16)
    assert all(many[i].tolist() == enc.encode(d).tolist() for i, d in enumerate(docs))
    assert np.array_equal(enc.encode_many(docs, threads=1), many)
    assert enc.encode_many([]).shape == (0, 16)


def test_sparse_encoder_pickles_and_shows_its_settings():
    enc = neardup.SparseEncoder(size=100, active=7, token_similarity=True, weights={"a": 2})
    again = pickle.loads(pickle.dumps(enc))
    assert again.encode(["a", "b"]).tolist() == enc.encode(["a", "b"]).tolist()
    assert (
        repr(enc) == "SparseEncoder(size=100, active=7, token_similarity=True, weights=<1 tokens>)"
    )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: neardup.SparseEncoder(size=0), ValueError, "size"),
        (lambda: neardup.SparseEncoder(size=2**20 + 1, active=1), ValueError, "size"),
        (lambda: neardup.SparseEncoder(size=10, active=11), ValueError, "active"),
        (lambda: neardup.SparseEncoder(active=0), ValueError, "active"),
        (lambda: neardup.SparseEncoder(size=2.5), TypeError, "size"),
        (lambda: neardup.SparseEncoder(weights={"a": float("nan")}), ValueError, "weight"),
        (lambda: neardup.SparseEncoder(weights={"a": "heavy"}), TypeError, "weight"),
        (lambda: neardup.SparseEncoder(weights=["a"]), TypeError, "weights"),
        (lambda: neardup.SparseEncoder().encode("some text"), TypeError, "split"),
        (lambda: neardup.SparseEncoder().encode(["a", 1]), TypeError, r"tokens\[1\]"),
        (lambda: neardup.SparseEncoder().encode(["\ud800"]), ValueError, "surrogate"),
        (lambda: neardup.SparseEncoder().encode_many([["a"], "b c"]), TypeError, r"docs\[1\]"),
        (lambda: neardup.SparseEncoder().select([1.0, 2.0]), ValueError, "size"),
        (
            lambda: neardup.SparseEncoder(size=9, active=2).select([float("nan")] * 9),
            ValueError,
            "NaN",
        ),
        (
            lambda: neardup.SparseEncoder(size=9, active=2).sums_of_hashes(np.ones((2, 8))),
            ValueError,
            "shape",
        ),
        (
            lambda: neardup.SparseEncoder(size=2, active=1).sums_of_hashes([[0, 2]]),
            ValueError,
            "0 and 1",
        ),
    ],
)
def test_sparse_encoder_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- simhash of dense vectors: seed 003 -----------------------------------------------------------


def test_vector_fingerprint_is_the_sign_of_each_dot_product():
    vs = neardup.VectorSimhash(dim=24, seed=11)
    planes = vs.hyperplanes
    assert planes.shape == (64, 24)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(200, 24))
    want = [sum(1 << i for i in range(64) if float(np.dot(planes[i], v)) > 0) for v in vectors]
    assert vs.fingerprint_many(vectors).tolist() == want
    assert [vs.fingerprint(v) for v in vectors[:5]] == want[:5]
    # float32 rows are read as they are: the same as the float64 of the same values.
    v32 = vectors.astype(np.float32)
    assert np.array_equal(vs.fingerprint_many(v32), vs.fingerprint_many(v32.astype(np.float64)))
    assert vs.fingerprint(np.zeros(24)) == 0


def test_hyperplanes_are_gaussian_and_reproducible():
    a = neardup.VectorSimhash(dim=500, seed=3)
    assert np.array_equal(a.hyperplanes, neardup.VectorSimhash(dim=500, seed=3).hyperplanes)
    assert not np.array_equal(a.hyperplanes, neardup.VectorSimhash(dim=500, seed=4).hyperplanes)
    # Fewer bits: the same first hyperplanes, so the fingerprint is the low bits.
    b = neardup.VectorSimhash(dim=500, bits=16, seed=3)
    assert np.array_equal(b.hyperplanes, a.hyperplanes[:16])
    v = np.linspace(-1, 1, 500)
    assert b.fingerprint(v) == a.fingerprint(v) & 0xFFFF
    x = a.hyperplanes.ravel()  # 32,000 draws
    assert abs(x.mean()) < 0.03 and abs(x.std() - 1) < 0.03
    assert abs(np.mean(x**4) - 3) < 0.15  # Gaussian kurtosis
    # Frozen: the generator is part of the contract (same normals on every platform).
    assert a.hyperplanes[0, :3].round(12).tolist() == pytest.approx(FROZEN_NORMALS, abs=1e-12)


FROZEN_NORMALS = [1.391321928847, 1.025992376451, -1.494397787268]


@pytest.mark.parametrize("angle", [0.05, 0.3, 0.8, math.pi / 2, 2.5, 3.0])
def test_differing_bits_estimate_angle_over_pi(angle):
    # Charikar: each bit differs with probability angle / pi. 400 random pairs x 64 bits; the
    # standard error is at most 0.003, the tolerance 0.02.
    dim = 32
    vs = neardup.VectorSimhash(dim=dim, seed=7)
    rng = np.random.default_rng(int(angle * 1000))
    u = rng.normal(size=(400, dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    w = rng.normal(size=(400, dim))
    w -= (w * u).sum(axis=1, keepdims=True) * u
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    v = np.cos(angle) * u + np.sin(angle) * w
    d = neardup.hamming_many(vs.fingerprint_many(u), vs.fingerprint_many(v)).astype(float)
    assert abs(d.mean() / 64 - angle / math.pi) < 0.02


def test_vector_fingerprints_work_with_the_index():
    rng = np.random.default_rng(42)
    dim = 64
    base = rng.normal(size=(40, dim))
    copies = base[np.repeat(np.arange(40), 3)] + rng.normal(scale=0.003, size=(120, dim))
    vectors = np.vstack([base, copies]).astype(np.float32)
    fps = neardup.VectorSimhash(dim=dim).fingerprint_many(vectors)
    labels = neardup.cluster(fps, k=6)
    want = np.concatenate([np.arange(40), np.repeat(np.arange(40), 3)])
    assert labels.tolist() == want.tolist()
    index = neardup.SimhashIndex(k=6)
    index.add(fps[:40])
    assert [index.query(int(fp))[0][0] for fp in fps[40:]] == np.repeat(np.arange(40), 3).tolist()


def test_shared_encoders_from_many_threads_give_the_one_thread_results(corpus):
    # The compiled encoders are immutable: threads share them, each call releases the GIL.
    from concurrent.futures import ThreadPoolExecutor

    enc = neardup.SparseEncoder(size=512, active=16, token_similarity=True)
    vs = neardup.VectorSimhash(dim=48, seed=5)
    docs = [d.split()[:40] for d in corpus[:200]]
    texts = corpus[:200]
    vectors = np.random.default_rng(8).normal(size=(300, 48))
    want = (
        enc.encode_many(docs, threads=1),
        vs.fingerprint_many(vectors, threads=1),
        neardup.minhash_key_many(texts, threads=1),
    )

    def work(i: int):
        return (
            enc.encode_many(docs),
            vs.fingerprint_many(vectors),
            neardup.minhash_key_many(texts),
        )

    with ThreadPoolExecutor(8) as pool:
        for got in pool.map(work, range(16)):
            assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_vector_simhash_pickles_and_compares():
    vs = neardup.VectorSimhash(dim=5, bits=32, seed=9)
    again = pickle.loads(pickle.dumps(vs))
    assert (
        again == vs
        and hash(again) == hash(vs)
        and repr(vs) == "VectorSimhash(dim=5, bits=32, seed=9)"
    )
    assert again.fingerprint([1, 2, 3, 4, 5]) == vs.fingerprint([1, 2, 3, 4, 5]) < 1 << 32


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: neardup.VectorSimhash(0), ValueError, "dim"),
        (lambda: neardup.VectorSimhash(2**20 + 1), ValueError, "dim"),
        (lambda: neardup.VectorSimhash(3, bits=65), ValueError, "bits"),
        (lambda: neardup.VectorSimhash(3, bits=0), ValueError, "bits"),
        (lambda: neardup.VectorSimhash(3, seed=-1), ValueError, "seed"),
        (lambda: neardup.VectorSimhash(3.0), TypeError, "dim"),
        (lambda: neardup.VectorSimhash(3).fingerprint([1, 2]), ValueError, "dim=3"),
        (lambda: neardup.VectorSimhash(3).fingerprint([[1, 2, 3]]), ValueError, "one-dimensional"),
        (lambda: neardup.VectorSimhash(3).fingerprint(["a", "b", "c"]), TypeError, "real numbers"),
        (
            lambda: neardup.VectorSimhash(3).fingerprint_many(np.ones(3)),
            ValueError,
            r"\(n, dim=3\)",
        ),
        (
            lambda: neardup.VectorSimhash(3).fingerprint_many(np.ones((2, 4))),
            ValueError,
            r"\(n, dim=3\)",
        ),
        (
            lambda: neardup.VectorSimhash(3).fingerprint_many([[1, 2, 3], [1, np.nan, 3]]),
            ValueError,
            "row 1, component 1",
        ),
        (lambda: neardup.VectorSimhash(3).fingerprint([1, np.inf, 0]), ValueError, "finite"),
        (
            lambda: neardup.VectorSimhash(3).fingerprint_many(np.ones((2, 3)), threads=0),
            ValueError,
            "threads",
        ),
    ],
)
def test_vector_simhash_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- minhash cluster keys: seed 004 ---------------------------------------------------------------


def brute_key(features: list[str], r: int) -> int:
    hashes = sorted({reference.fnv1a_64(f.encode("utf-8")) for f in features})
    key = 0
    for h in hashes[:r]:
        key ^= h
    return key


@settings(max_examples=60, deadline=None)
@given(
    features=st.lists(st.text(st.characters(codec="utf-8"), max_size=5), max_size=30),
    r=st.integers(1, 8),
)
def test_key_is_the_xor_of_the_smallest_distinct_hashes(features, r):
    assert neardup.minhash_key(features, restrictiveness=r) == brute_key(features, r)


def test_key_of_a_text_uses_the_hashers_features(corpus):
    default = neardup.Simhasher(ngram=4)
    chars = neardup.Simhasher(tokens="char", ngram=5)
    for text in corpus[:50]:
        oracle = reference.word_features(reference.normalize(text), 4)
        assert (
            neardup.minhash_key(text)
            == brute_key(oracle, 3)
            == brute_key(default.features(text), 3)
        )
        assert neardup.minhash_key(text, 2, hasher=chars) == brute_key(chars.features(text), 2)
    assert neardup.minhash_key("") == 0 and neardup.minhash_key([]) == 0
    assert neardup.minhash_key(["only"], restrictiveness=5) == reference.fnv1a_64(b"only")


def test_key_many_equals_one_by_one(corpus):
    docs = corpus[:500]
    keys = neardup.minhash_key_many(docs, restrictiveness=2)
    assert keys.dtype == np.uint64
    assert keys.tolist() == [neardup.minhash_key(d, 2) for d in docs]
    assert np.array_equal(neardup.minhash_key_many(iter(docs), 2, threads=1), keys)
    fields = neardup.Simhasher(ngram=2, fields={"title": 1, "body": 1})
    doc = {"title": "a title here", "body": "and the body text"}
    assert neardup.minhash_key(doc, 4, hasher=fields) == brute_key(
        ["a title", "title here", "and the", "the body", "body text"], 4
    )


def match_rate(shared: int, only: int, r: int, trials: int, rng: random.Random) -> float:
    """How often two sets with `shared` common members and `only` members of their own each get
    the same key."""
    matches = 0
    for t in range(trials):
        common = [f"c{t}-{rng.getrandbits(40)}" for _ in range(shared)]
        a = common + [f"a{t}-{rng.getrandbits(40)}" for _ in range(only)]
        b = common + [f"b{t}-{rng.getrandbits(40)}" for _ in range(only)]
        matches += neardup.minhash_key(a, r) == neardup.minhash_key(b, r)
    return matches / trials


@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("shared, only", [(30, 5), (20, 10), (12, 14)])
def test_match_rate_follows_the_seeds_formula(r, shared, only):
    # Seed 004: the keys match iff the r smallest hashes of the union all lie in the
    # intersection: probability C(|A∩B|, r) / C(|A∪B|, r), about J**r when the sets are much
    # larger than r. 2,000 pairs: the standard error is at most 0.011, the tolerance 0.05.
    union = shared + 2 * only
    expected = math.comb(shared, r) / math.comb(union, r)
    rate = match_rate(shared, only, r, 2000, random.Random(r * 100 + shared))
    assert abs(rate - expected) < 0.05
    # The seed's large-set form: J**r, which the exact form approaches from below.
    assert expected <= (shared / union) ** r


def test_match_rate_of_large_sets_is_j_to_the_r():
    rate = match_rate(300, 50, 3, 600, random.Random(1))
    j = 300 / 400
    assert abs(rate - j**3) < 0.07  # standard error 0.02


def test_group_by_key_labels_by_first_row():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 20, size=1000).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    first: dict[int, int] = {}
    want = [first.setdefault(int(k), i) for i, k in enumerate(keys)]
    assert neardup.group_by_key(keys).tolist() == want
    assert neardup.group_by_key([]).tolist() == []
    assert neardup.group_by_key([5, 5, 2**64 - 1]).tolist() == [0, 0, 2]


def test_near_duplicates_share_keys_more_than_unrelated(corpus):
    docs = [d for d in corpus[:300] if len(d.split()) > 60][:100]
    edited = [d.replace(" the ", " a ", 1) for d in docs]
    a = neardup.minhash_key_many(docs, 3)
    b = neardup.minhash_key_many(edited, 3)
    assert (a == b).mean() > 0.7
    labels = neardup.group_by_key(np.concatenate([a, b]))
    assert len(set(labels.tolist())) < 2 * len(docs)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: neardup.minhash_key("text", restrictiveness=0), ValueError, "restrictiveness"),
        (lambda: neardup.minhash_key("text", restrictiveness=1.5), TypeError, "restrictiveness"),
        (lambda: neardup.minhash_key("text", hasher="word"), TypeError, "hasher"),
        (lambda: neardup.minhash_key(12), TypeError, "text_or_features"),
        (lambda: neardup.minhash_key(["a", 3]), TypeError, r"text_or_features\[1\]"),
        (lambda: neardup.minhash_key_many("one text"), TypeError, "docs"),
        (lambda: neardup.minhash_key_many(["a", None]), TypeError, r"docs\[1\]"),
        (lambda: neardup.group_by_key([-1]), ValueError, "keys"),
    ],
)
def test_minhash_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- unsegmented text: seed 002 -------------------------------------------------------------------

SEED_A = "你妈妈喊你回家吃饭哦，回家罗回家罗"
SEED_B = "你妈妈叫你回家吃饭啦，回家罗回家罗"
UNRELATED = "今天天气很好，我们去公园散步吧"


@pytest.mark.parametrize("tokenizer", [None, "jieba"])
def test_seed_pair_is_closer_than_an_unrelated_sentence(tokenizer):
    hasher = neardup.Simhasher(tokenizer=tokenizer)
    a, b, c = (hasher.fingerprint(t) for t in (SEED_A, SEED_B, UNRELATED))
    close = neardup.hamming(a, b)
    # Two of the 16 character features differ (喊/叫, 哦/啦): a cosine of 14/16, an expected
    # 64·arccos(0.875)/π ≈ 10 bits with a spread of about 4. The pair must fall within the default
    # candidate radius of verified dedup, and an unrelated sentence near 32 bits away.
    assert close <= THRESHOLD_K < 20 < min(neardup.hamming(a, c), neardup.hamming(b, c))


def import_jieba():
    """jieba, imported as neardup imports it (quiet about its own use of deprecated modules)."""
    neardup.tokenizers._jieba()
    import jieba

    return jieba


def word_tokens(tokens: list[str]) -> list[str]:
    return [t for t in tokens if any(reference.char_class(c) != "sep" for c in t)]


def test_jieba_tokens_are_the_features():
    jieba = import_jieba()

    hasher = neardup.Simhasher(tokenizer="jieba", ngram=2)
    want_tokens = word_tokens(jieba.lcut(reference.normalize(SEED_A)))
    assert want_tokens == [
        "你",
        "妈妈",
        "喊",
        "你",
        "回家",
        "吃饭",
        "哦",
        "回家",
        "罗",
        "回家",
        "罗",
    ]
    want = [" ".join(want_tokens[i : i + 2]) for i in range(len(want_tokens) - 1)]
    assert hasher.features(SEED_A) == want
    assert hasher.fingerprint(SEED_A) == reference.simhash(
        [reference.feature_hash(f.encode()) for f in want]
    )


def test_jieba_with_idf_weights_fitted_on_a_corpus():
    jieba = import_jieba()

    corpus = [
        SEED_A,
        SEED_B,
        UNRELATED,
        "我喜欢看电视，不喜欢看电影。",
        "我不喜欢看电视，也不喜欢看电影。",
    ]
    hasher = neardup.Simhasher(weighting="idf", tokenizer="jieba").fit(corpus)
    sets = [set(word_tokens(jieba.lcut(reference.normalize(t)))) for t in corpus]
    weights = dict(hasher.feature_weights(SEED_A))
    for token, w in weights.items():
        df = sum(token in s for s in sets)
        assert w == reference.idf_weight(len(corpus), df), token
    a, b, c = (hasher.fingerprint(t) for t in (SEED_A, SEED_B, UNRELATED))
    assert neardup.hamming(a, b) < min(neardup.hamming(a, c), neardup.hamming(b, c))


@pytest.mark.parametrize(
    "options", [{}, {"ngram": 3}, {"weighting": "binary"}, {"stopwords": ["the", "on"], "ngram": 2}]
)
def test_a_callable_tokenizer_feeds_the_same_core_path(corpus, options):
    # On texts whose tokens are the words between spaces, str.split is the built-in tokenizer.
    texts = [" ".join(reference.tokens(reference.normalize(t))) for t in corpus[:200]]
    split = neardup.Simhasher(tokenizer=str.split, **options)
    builtin = neardup.Simhasher(**options)
    assert np.array_equal(split.fingerprint_many(texts), builtin.fingerprint_many(texts))
    assert split.features(texts[0]) == builtin.features(texts[0])
    options = {**options, "weighting": "idf"}
    idf_split = neardup.Simhasher(tokenizer=str.split, **options).fit(texts)
    idf_builtin = neardup.Simhasher(**options).fit(texts)
    assert np.array_equal(idf_split.fingerprint_many(texts), idf_builtin.fingerprint_many(texts))
    assert (
        neardup.minhash_key_many(texts, hasher=split).tolist()
        == neardup.minhash_key_many(texts, hasher=builtin).tolist()
    )


@settings(max_examples=80, deadline=None)
@given(
    # Characters unassigned in this Python's Unicode data are left out: the core's pinned, newer
    # Unicode data knows some of them as letters (docs/fingerprint.md).
    text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cn")), max_size=60),
    ngram=st.integers(1, 4),
    weighting=st.sampled_from(["tf", "binary"]),
)
def test_the_oracle_tokenizer_gives_the_builtin_fingerprints(text, ngram, weighting):
    # tests/reference.py tokenizes as the built-in tokenizer is specified (CJK characters alone,
    # marks inside words): passed as tokenizer=, every fingerprint must stay the same.
    outside = neardup.Simhasher(tokenizer=reference.tokens, ngram=ngram, weighting=weighting)
    builtin = neardup.Simhasher(ngram=ngram, weighting=weighting)
    assert outside.features(text) == builtin.features(text)
    assert outside.fingerprint(text) == builtin.fingerprint(text)


def test_tokenizer_with_fields_and_separator_tokens():
    fields = {"title": 2, "body": 1}
    split = neardup.Simhasher(tokenizer=lambda t: t.split(" "), fields=fields)
    builtin = neardup.Simhasher(fields=fields)
    doc = {"title": "a  b ! c", "body": "x , y"}
    # Empty and punctuation-only tokens are dropped, as the built-in tokenizer drops separators.
    assert split.features(doc) == builtin.features(doc) == ["a", "b", "c", "x", "y"]
    assert split.fingerprint(doc) == builtin.fingerprint(doc)


def test_tokenizer_pickles_and_shows_in_repr():
    hasher = neardup.Simhasher(tokenizer="jieba")
    again = pickle.loads(pickle.dumps(hasher))
    assert again == hasher and again.fingerprint(SEED_A) == hasher.fingerprint(SEED_A)
    assert "tokenizer='jieba'" in repr(hasher)
    assert "tokenizer=<str.split>" in repr(neardup.Simhasher(tokenizer=str.split))
    assert neardup.Simhasher(tokenizer=str.split) != neardup.Simhasher()


def test_missing_jieba_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)
    with pytest.raises(ImportError, match=r"neardup\[zh\]"):
        neardup.Simhasher(tokenizer="jieba")


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: neardup.Simhasher(tokenizer="spacy"), ValueError, "tokenizer"),
        (lambda: neardup.Simhasher(tokenizer=3), TypeError, "tokenizer"),
        (
            lambda: neardup.Simhasher(tokens="char", tokenizer=str.split),
            ValueError,
            'tokens="word"',
        ),
        (
            lambda: neardup.Simhasher(tokenizer=lambda t: t).fingerprint("abc"),
            TypeError,
            "list of str",
        ),
        (
            lambda: neardup.Simhasher(tokenizer=lambda t: [1]).fingerprint_many(["abc"]),
            TypeError,
            r"docs\[0\]",
        ),
        (lambda: neardup.Simhasher(tokenizer=list).fingerprint("a\ud800"), ValueError, "surrogate"),
    ],
)
def test_tokenizer_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
