"""Fingerprints as users see them, against published vectors, the seeds' worked examples, the
pure-Python oracle in reference.py, and frozen golden vectors."""

from __future__ import annotations

import json
import pickle
import random
import string
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
import reference
import seeds
from neardup import Simhasher

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden.json").read_text(encoding="utf-8"))


# -- FNV-1a: published test vectors (Fowler/Noll/Vo reference suite) ---------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0xCBF29CE484222325),
        (b"a", 0xAF63DC4C8601EC8C),
        (b"b", 0xAF63DF4C8601F1A5),
        (b"foobar", 0x85944171F73967E8),
        (b"chongo was here!\n", 0x46810940EFF5F915),
    ],
)
def test_fnv1a_published_vectors(data, expected):
    assert neardup.fnv1a_64(data) == expected
    assert neardup.fnv1a_64(data.decode("ascii")) == expected
    assert neardup.fnv1a_64(bytearray(data)) == expected


def test_fnv1a_hashes_str_as_utf8():
    assert neardup.fnv1a_64("回家") == reference.fnv1a_64("回家".encode())


# -- the seeds' hand-worked examples -----------------------------------------------------------


def test_seed_two_features_with_weights_4_and_5():
    # Seeds 002/003: "美国" hashes to 100101 with weight 4, "51区" to 101011 with weight 5;
    # the sums read 9 -9 1 -1 1 9 (leftmost bit first) and the simhash is 101011.
    hashes, weights = [0b100101, 0b101011], [4, 5]
    tallies = neardup.simhash_tallies(hashes, weights, bits=6)
    assert list(tallies[::-1]) == [9, -9, 1, -1, 1, 9]
    assert neardup.simhash_hashes(hashes, weights, bits=6) == 0b101011


def test_seed_nine_bit_sums_without_token_similarity():
    hashes = [seeds.bits(seeds.TOKENS[t]) for t in ("hello", "there", "world")]
    assert list(neardup.simhash_tallies(hashes, bits=9)) == [-1, -1, -3, 3, -3, 1, -1, 1, -1]
    assert neardup.simhash_hashes(hashes, bits=9) == seeds.bits("0 0 0 1 0 1 0 1 0")


def test_seed_nine_bit_sums_with_token_similarity():
    hashes = [seeds.bits(r) for r in seeds.WITH_CHARACTERS]
    # The seed prints the sums as "+0 +2 -6 +8 -2 -8 -6 -12 +0", but the columns of its own
    # +1/-1 rows add up differently at positions 1 and 4: position 1 has eleven +1 and seven -1
    # (sum 4), position 4 has ten +1 and eight -1 (sum 2). We hold to the rows, summed by hand.
    assert list(neardup.simhash_tallies(hashes, bits=9)) == [0, 4, -6, 8, 2, -8, -6, -12, 0]
    # A plain simhash sets the bits whose sum is positive (a sum of 0 gives 0).
    assert neardup.simhash_hashes(hashes, bits=9) == seeds.bits("0 1 0 1 1 0 0 0 0")


def test_float_weights_sum_in_order():
    hashes = [0b01, 0b10, 0b11]
    assert list(neardup.simhash_tallies(hashes, [0.5, 0.25, 2.0], bits=2)) == [2.25, 1.75]
    assert neardup.simhash_hashes(hashes, np.array([0.5, 3.0, 0.25]), bits=2) == 0b10


def test_simhash_hashes_matches_definition_on_random_input():
    rng = np.random.default_rng(1)
    hashes = rng.integers(0, 2**64, size=300, dtype=np.uint64)
    weights = rng.integers(-5, 20, size=300)
    assert neardup.simhash_hashes(hashes, weights) == reference.simhash(
        [int(h) for h in hashes], weights.tolist()
    )
    assert neardup.simhash_hashes(hashes) == reference.simhash([int(h) for h in hashes])


def test_huge_integer_weights_do_not_overflow():
    big = 2**63 - 1
    tallies = neardup.simhash_tallies([2**64 - 1, 2**64 - 1, 0], [big, big, 1])
    assert tallies[0] == 2 * big - 1
    assert neardup.simhash_hashes([2**64 - 1, 2**64 - 1, 0], [big, big, 1]) == 2**64 - 1


# -- features ----------------------------------------------------------------------------------


def test_features_are_shingles_of_normalized_tokens():
    assert Simhasher(ngram=2).features("The  Cat, sat!") == ["the cat", "cat sat"]
    assert Simhasher(ngram=3).features("one two") == ["one two"]
    assert Simhasher().features("") == []
    assert Simhasher(tokens="char", ngram=3).features("Ab, cd") == ["ab ", "b c", " cd"]
    assert Simhasher(ngram=1).features("你妈妈喊你") == ["你", "妈", "妈", "喊", "你"]
    assert Simhasher(ngram=1).features("Ｆｕｌｌ ﬁne Straße") == ["full", "fine", "strasse"]
    assert Simhasher(ngram=1, weighting="binary").features("b a b c a") == ["b", "a", "c"]


def test_stopword_filter_keeps_shingles_with_a_stopword():
    hasher = Simhasher(ngram=2, stopwords="english")
    assert hasher.features("BUY cheap pills at the best prices") == [
        "pills at",
        "at the",
        "the best",
    ]
    assert Simhasher(ngram=2, stopwords=["Cheap"]).features("buy cheap pills") == [
        "buy cheap",
        "cheap pills",
    ]
    # No shingle holds a stopword: the document keeps all of them rather than becoming empty.
    assert hasher.features("cheap pills online") == ["cheap pills", "pills online"]


# Text from assigned characters only (the oracle and the core may know different Unicode
# versions for characters assigned since), never lone surrogates.
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cn", "Co")),
    max_size=200,
)
SETTINGS = st.fixed_dictionaries(
    {
        "tokens": st.sampled_from(["word", "char"]),
        "ngram": st.integers(1, 6),
        "weighting": st.sampled_from(["tf", "binary"]),
    }
)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, options=SETTINGS)
def test_features_and_fingerprint_match_the_oracle(text, options):
    hasher = Simhasher(**options)
    normalized = reference.normalize(text)
    want = reference.features(normalized, options["tokens"], options["ngram"])
    if options["weighting"] == "binary":
        want = list(dict.fromkeys(want))
    assert hasher.features(text) == want
    assert hasher.fingerprint(text) == reference.fingerprint(
        text, options["tokens"], options["ngram"], options["weighting"]
    )


@settings(max_examples=200, deadline=None)
@given(text=TEXT, options=SETTINGS)
def test_fingerprint_is_simhash_of_its_features(text, options):
    hasher = Simhasher(**options)
    assert hasher.fingerprint(text) == neardup.simhash_features(hasher.features(text))


def _fitted(corpus, **options):
    return Simhasher(weighting="idf", **options).fit(corpus)


@pytest.fixture(scope="module")
def idf_hasher(corpus):
    return _fitted(corpus[:2000], ngram=2)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_idf_fingerprint_is_simhash_of_weighted_features(idf_hasher, corpus, data):
    text = data.draw(st.one_of(TEXT, st.sampled_from(corpus[:500])))
    pairs = idf_hasher.feature_weights(text)
    assert idf_hasher.fingerprint(text) == neardup.simhash_features(
        [f for f, _ in pairs], [w for _, w in pairs]
    )


def test_idf_weights_follow_the_formula():
    corpus = ["a b", "a c", "a d", "e"]
    hasher = _fitted(corpus, ngram=1)
    weights = dict(hasher.feature_weights("a b zzz"))
    assert weights["a"] == reference.idf_weight(4, 3)
    assert weights["b"] == reference.idf_weight(4, 1)
    assert weights["zzz"] == reference.idf_weight(4, 0)
    idf = {"a": weights["a"], "b": weights["b"]}
    assert hasher.fingerprint("a b zzz a") == reference.fingerprint(
        "a b zzz a", weighting="idf", idf=idf, idf_unseen=reference.idf_weight(4, 0)
    )


def test_idf_needs_a_fit():
    with pytest.raises(ValueError, match="fit"):
        Simhasher(weighting="idf").fingerprint("text")
    with pytest.raises(ValueError, match='weighting="idf"'):
        Simhasher().fit(["text"])


# -- fields ------------------------------------------------------------------------------------


def test_field_weights_multiply_each_fields_features():
    hasher = Simhasher(fields={"title": 3, "body": 1})
    doc = {"title": "Cheap Flights", "body": "flights to paris and rome"}
    hashes, weights = [], []
    for field, w in (("title", 3), ("body", 1)):
        for f in reference.features(reference.normalize(doc[field])):
            hashes.append(reference.feature_hash(f.encode()))
            weights.append(w)
    assert hasher.fingerprint(doc) == reference.simhash(hashes, weights)
    pairs = hasher.feature_weights(doc)
    assert [w for _, w in pairs] == weights
    # A missing field or None is empty.
    assert hasher.fingerprint({"body": "x y"}) == hasher.fingerprint({"title": None, "body": "x y"})
    assert hasher.fingerprint({"body": "x y"}) == Simhasher().fingerprint("x y")


def test_float_field_weights_sum_in_feature_order():
    hasher = Simhasher(fields={"title": 1.5, "body": 1})
    doc = {"title": "a b", "body": "b c d"}
    hashes = [reference.feature_hash(t.encode()) for t in ["a", "b", "b", "c", "d"]]
    assert hasher.fingerprint(doc) == reference.simhash(hashes, [1.5, 1.5, 1.0, 1.0, 1.0])


# -- batches -----------------------------------------------------------------------------------


def test_batch_equals_one_by_one_on_real_text(corpus):
    docs = corpus[:3000]
    for hasher in (
        Simhasher(),
        Simhasher(ngram=3, weighting="binary"),
        Simhasher(tokens="char", ngram=5),
    ):
        many = hasher.fingerprint_many(docs)
        assert many.dtype == np.uint64 and many.shape == (len(docs),)
        assert many.tolist() == [hasher.fingerprint(d) for d in docs]


def test_result_is_independent_of_thread_count(corpus):
    docs = corpus[:20000]
    hasher = Simhasher()
    one = hasher.fingerprint_many(docs, threads=1)
    assert np.array_equal(one, hasher.fingerprint_many(docs, threads=2))
    assert np.array_equal(one, hasher.fingerprint_many(docs, threads=7))
    assert np.array_equal(one, hasher.fingerprint_many(docs))
    assert np.array_equal(one, hasher.fingerprint_many(docs, chunk_size=333))


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(TEXT, max_size=150), threads=st.integers(1, 4))
def test_batch_equals_one_by_one(texts, threads):
    hasher = Simhasher(ngram=2)
    assert hasher.fingerprint_many(texts, threads=threads).tolist() == [
        hasher.fingerprint(t) for t in texts
    ]


def test_every_container_of_texts_gives_the_same_fingerprints(corpus):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    docs = corpus[:500]
    hasher = Simhasher()
    want = hasher.fingerprint_many(docs)
    assert np.array_equal(hasher.fingerprint_many(iter(docs)), want)
    assert np.array_equal(hasher.fingerprint_many(tuple(docs)), want)
    assert np.array_equal(hasher.fingerprint_many(d for d in docs), want)
    assert np.array_equal(hasher.fingerprint_many(np.array(docs)), want)
    assert np.array_equal(hasher.fingerprint_many(np.array(docs, dtype=object)), want)
    assert np.array_equal(hasher.fingerprint_many(pd.Series(docs)), want)
    assert np.array_equal(hasher.fingerprint_many(pa.array(docs)), want)
    assert np.array_equal(hasher.fingerprint_many(pa.chunked_array([docs[:100], docs[100:]])), want)
    assert np.array_equal(hasher.fingerprint_many([d.encode() for d in docs]), want)
    assert hasher.fingerprint_many([]).dtype == np.uint64
    assert len(hasher.fingerprint_many(iter([]))) == 0


# -- similarity behaviour -----------------------------------------------------------------------


def random_words(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct words of 3 to 9 lowercase letters."""
    words: dict[str, None] = {}
    while len(words) < n:
        words["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9)))] = None
    return list(words)


# The texts drawn from a seed (hypothesis picks the seed and the lengths): lists of 200 to 400
# words drawn by hypothesis itself took 17 s for the 100 examples.
@settings(max_examples=100, deadline=None)
@given(
    n_words=st.integers(200, 400),
    n_others=st.integers(200, 400),
    seed=st.integers(0, 2**32),
)
def test_a_few_edited_words_move_fewer_bits_than_an_unrelated_text(n_words, n_others, seed):
    rng = random.Random(seed)
    words = random_words(rng, n_words)
    others = [w + "q" for w in random_words(rng, n_others) if w + "q" not in words]  # disjoint
    edited = list(words)
    for _ in range(3):
        edited[rng.randrange(len(edited))] = (
            "".join(rng.choice(string.ascii_lowercase) for _ in range(6)) + "x"
        )
    hasher = Simhasher()
    original = hasher.fingerprint(" ".join(words))
    assert neardup.hamming(original, hasher.fingerprint(" ".join(edited))) < neardup.hamming(
        original, hasher.fingerprint(" ".join(others))
    )


def test_edits_move_fewer_bits_than_unrelated_documents_on_real_text(corpus):
    rng = random.Random(7)
    long_docs = [d for d in corpus if len(d.split()) >= 150]
    hasher = Simhasher()
    edit_d, other_d = [], []
    for _ in range(300):
        doc = rng.choice(long_docs)
        words = doc.split()
        for _ in range(3):
            words[rng.randrange(len(words))] = "edited"
        fp = hasher.fingerprint(doc)
        edit_d.append(neardup.hamming(fp, hasher.fingerprint(" ".join(words))))
        other_d.append(neardup.hamming(fp, hasher.fingerprint(rng.choice(long_docs))))
    assert np.mean(edit_d) * 3 < np.mean(other_d)


# -- golden vectors: these fingerprints must never change --------------------------------------


@pytest.mark.parametrize("config", sorted(GOLDEN["configs"]))
def test_golden_fingerprints_never_change(config):
    hasher = Simhasher(**GOLDEN["configs"][config])
    texts = [case["text"] for case in GOLDEN["cases"]]
    want = [int(case["fingerprints"][config], 16) for case in GOLDEN["cases"]]
    assert [hasher.fingerprint(t) for t in texts] == want
    assert hasher.fingerprint_many(texts).tolist() == want


@pytest.fixture
def scalar_path():
    """The core's vector kernels held on their portable paths for one test."""
    neardup._core.force_scalar(True)
    try:
        yield
    finally:
        neardup._core.force_scalar(False)


@pytest.mark.parametrize("config", sorted(GOLDEN["configs"]))
def test_golden_fingerprints_hold_on_the_scalar_path(config, scalar_path):
    assert neardup._core.scalar_forced()
    hasher = Simhasher(**GOLDEN["configs"][config])
    texts = [case["text"] for case in GOLDEN["cases"]]
    want = [int(case["fingerprints"][config], 16) for case in GOLDEN["cases"]]
    assert hasher.fingerprint_many(texts).tolist() == want


def test_vector_fingerprints_are_the_same_on_the_scalar_path():
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((200, 77))
    encoder = neardup.VectorSimhash(77)
    fast = encoder.fingerprint_many(matrix)
    neardup._core.force_scalar(True)
    try:
        scalar = encoder.fingerprint_many(matrix)
    finally:
        neardup._core.force_scalar(False)
    # Against the definition too: the sign of each dot product, in float64.
    want = [sum(1 << i for i, d in enumerate(encoder.hyperplanes @ row) if d > 0) for row in matrix]
    assert fast.tolist() == scalar.tolist() == want


def test_golden_file_covers_what_it_must():
    texts = [case["text"] for case in GOLDEN["cases"]]
    assert len(texts) >= 50
    assert "" in texts and any(t and not t.strip() for t in texts)
    assert "你妈妈喊你回家吃饭哦，回家罗回家罗" in texts
    assert any(len(t) > 50_000 for t in texts)
    assert any(unicodedata.category(c) == "So" for t in texts for c in t)  # emoji


def test_golden_default_fingerprints_agree_with_the_oracle():
    for case in GOLDEN["cases"]:
        assert int(case["fingerprints"]["default"], 16) == reference.fingerprint(case["text"])


def test_empty_documents_have_fingerprint_zero():
    assert neardup.simhash("") == 0
    assert neardup.simhash(" \n\t ") == 0
    assert neardup.simhash("!?, …") == 0


# -- the configuration object -------------------------------------------------------------------


def test_simhasher_pickles_compares_and_shows_its_settings(corpus):
    hasher = Simhasher(tokens="char", ngram=4, stopwords=None, fields={"title": 2, "body": 1})
    clone = pickle.loads(pickle.dumps(hasher))
    assert clone == hasher
    assert clone != Simhasher(tokens="char", ngram=5, fields={"title": 2, "body": 1})
    doc = {"title": "A title", "body": "and a body"}
    assert clone.fingerprint(doc) == hasher.fingerprint(doc)
    assert repr(hasher) == (
        "Simhasher(tokens='char', ngram=4, weighting='tf', unicode_form='NFKC', casefold=True, "
        "stopwords=None, fields={'title': 2.0, 'body': 1.0})"
    )
    assert "stopwords='english'" in repr(Simhasher(ngram=3, stopwords="english"))
    fitted = _fitted(corpus[:300])
    clone = pickle.loads(pickle.dumps(fitted))
    assert clone == fitted and clone != _fitted(corpus[:200])
    assert clone.fingerprint(corpus[5]) == fitted.fingerprint(corpus[5])
    assert "fitted_on=300 documents" in repr(fitted)
    custom = Simhasher(ngram=2, stopwords=["The", "of"])
    assert pickle.loads(pickle.dumps(custom)) == custom


def test_simhash_one_call_uses_the_defaults():
    text = "Near duplicates differ in a word or two."
    assert neardup.simhash(text) == Simhasher().fingerprint(text)
    assert neardup.simhash(text, ngram=3) == Simhasher(ngram=3).fingerprint(text)


# -- Hamming distances ----------------------------------------------------------------------------


def test_hamming_one_and_many():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2**64, size=1000, dtype=np.uint64)
    b = rng.integers(0, 2**64, size=1000, dtype=np.uint64)
    want = [bin(int(x) ^ int(y)).count("1") for x, y in zip(a, b)]
    assert neardup.hamming_many(a, b).tolist() == want
    assert [neardup.hamming(int(x), int(y)) for x, y in zip(a, b)] == want
    one = neardup.hamming_many(int(a[0]), b)
    assert one.dtype == np.uint8
    assert one.tolist() == [bin(int(a[0]) ^ int(y)).count("1") for y in b]
    assert neardup.hamming_many(b, a[0]).tolist() == one.tolist()
    assert neardup.hamming(0, 2**64 - 1) == 64
    assert neardup.hamming(np.uint64(5), 6) == 2
    assert neardup.hamming_many([1, 2, 3], [1, 1, 1]).tolist() == [0, 2, 1]


# -- bad input: clear exceptions naming what is wrong ---------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: Simhasher().fingerprint_many("a text"), TypeError, "not a single str"),
        (
            lambda: Simhasher().fingerprint_many(["ok", None]),
            TypeError,
            r"docs\[1\] is missing \(None\)",
        ),
        (lambda: Simhasher().fingerprint_many(["ok", "ok", 3]), TypeError, r"docs\[2\] is int"),
        (
            lambda: Simhasher().fingerprint_many([b"ok", b"\xff\xfe"]),
            ValueError,
            r"docs\[1\] is not valid UTF-8",
        ),
        (
            lambda: Simhasher().fingerprint_many(["ok", "bad \ud800"]),
            ValueError,
            r"docs\[1\] holds a lone surrogate",
        ),
        (lambda: Simhasher().fingerprint_many([{"text": "x"}]), TypeError, "fields="),
        (lambda: Simhasher().fingerprint_many(np.arange(3)), TypeError, "array of str"),
        (lambda: Simhasher().fingerprint(None), TypeError, "None"),
        (lambda: Simhasher().fingerprint(b"\xc3"), ValueError, "not valid UTF-8"),
        (lambda: Simhasher(fields={"t": 1}).fingerprint({"t": 5}), TypeError, r"\['t'\] is int"),
        (lambda: Simhasher(fields={"t": 1}).fingerprint("text"), TypeError, "is a dict with keys"),
        (lambda: Simhasher(ngram=0), ValueError, r"ngram must be in 1..=64, got 0"),
        (lambda: Simhasher(ngram=-1), ValueError, "got -1"),
        (lambda: Simhasher(ngram=2.5), TypeError, "ngram must be an int"),
        (lambda: Simhasher(tokens="line"), ValueError, "tokens must be"),
        (lambda: Simhasher(weighting="bm25"), ValueError, "weighting must be"),
        (lambda: Simhasher(unicode_form="NFX"), ValueError, "unicode_form"),
        (lambda: Simhasher(tokens="char", stopwords="english"), ValueError, 'tokens="word"'),
        (lambda: Simhasher(stopwords="french"), ValueError, "stopwords"),
        (lambda: Simhasher(fields={"t": 0}), ValueError, "positive"),
        (lambda: Simhasher(fields={"t": "2"}), TypeError, "must be a number"),
        (lambda: Simhasher().fingerprint_many(["x"], threads=0), ValueError, "threads must be in"),
        (lambda: neardup.fnv1a_64(5), TypeError, "str or bytes"),
        (lambda: neardup.simhash_features("abc"), TypeError, "not a single one"),
        (lambda: neardup.simhash_features(["a", 3]), TypeError, r"features\[1\] is int"),
        (
            lambda: neardup.simhash_hashes([1, -2]),
            ValueError,
            r"hashes\[1\] must be in 0..2\*\*64-1",
        ),
        (lambda: neardup.simhash_hashes([1, 2**64]), ValueError, r"hashes\[1\]"),
        (lambda: neardup.simhash_hashes(np.array([1.0, 2.0])), TypeError, "dtype float64"),
        (lambda: neardup.simhash_hashes(np.array([-1, 2])), ValueError, "negative"),
        (lambda: neardup.simhash_hashes([1, 2], weights=[1]), ValueError, "one number per hash"),
        (lambda: neardup.simhash_hashes([1], weights=[float("nan")]), ValueError, "finite"),
        (lambda: neardup.simhash_hashes([1], weights=["a"]), TypeError, "weights must be numbers"),
        (lambda: neardup.simhash_hashes([1], bits=0), ValueError, r"bits must be in 1..=64"),
        (lambda: neardup.simhash_hashes([1], bits=65), ValueError, "got 65"),
        (lambda: neardup.hamming(1, -1), ValueError, "b must be in"),
        (lambda: neardup.hamming(1.0, 1), TypeError, "a must be a 64-bit fingerprint"),
        (
            lambda: neardup.hamming_many(np.zeros(3, np.float32), np.zeros(3, np.uint64)),
            TypeError,
            "dtype float32",
        ),
        (
            lambda: neardup.hamming_many(np.zeros(3, np.uint64), np.zeros(4, np.uint64)),
            ValueError,
            "one length",
        ),
        (
            lambda: neardup.hamming_many(np.zeros((2, 2), np.uint64), 1),
            ValueError,
            "one-dimensional",
        ),
        (lambda: neardup.hamming_many(1, 2), TypeError, "at least one array"),
    ],
)
def test_bad_input_gives_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"casefold": False},
        {"unicode_form": None},
        {"unicode_form": "NFD", "casefold": False},
        {"tokens": "char", "ngram": 3},
        {"ngram": 2, "stopwords": "english"},
    ],
)
def test_mixed_ascii_and_unicode_batches_match_the_reference(settings):
    """fingerprint_many over a batch mixing ASCII texts with capitals and texts that NFKC and
    case folding change, in one chunk or many, against the reference's Python normalization."""
    rng = random.Random(11)
    words = [
        "The",
        "QUICK",
        "brown",
        "Fox",
        "of",
        "AND",
        "straße",
        "Ｆｕｌｌ",
        "ﬁne",
        "Ǆemal",
        "İstanbul",
        "x_Y",
        "A1b2",
    ]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9))) for _ in range(300)]
    assert sum(t.isascii() for t in texts) > 20 and sum(not t.isascii() for t in texts) > 20
    hasher = neardup.Simhasher(**settings)
    stop = set(hasher.stopwords) if hasher.stopwords else None
    want = [
        reference.fingerprint(
            t,
            settings.get("tokens", "word"),
            settings.get("ngram", 1),
            stopwords=stop,
            unicode_form=settings.get("unicode_form", "NFKC"),
            casefold=settings.get("casefold", True),
        )
        for t in texts
    ]
    assert hasher.fingerprint_many(texts).tolist() == want
    assert hasher.fingerprint_many(texts, chunk_size=7, threads=1).tolist() == want


@pytest.mark.parametrize(
    "settings", [{}, {"casefold": False}, {"unicode_form": None, "casefold": False}]
)
def test_bytes_and_str_documents_mix_in_one_batch(settings):
    """UTF-8 bytes beside str (ASCII or not) give the fingerprints of the decoded texts under
    every normalization setting, none included; None is refused by position."""
    texts = ["Hello World", "Ｆｕｌｌ Width straße", "plain words here", "ÉTÉ Café"]
    docs = [texts[0], texts[1].encode(), bytearray(texts[2].encode()), texts[3], texts[0].encode()]
    hasher = neardup.Simhasher(**settings)
    want = [
        reference.fingerprint(
            t,
            "word",
            1,
            unicode_form=settings.get("unicode_form", "NFKC"),
            casefold=settings.get("casefold", True),
        )
        for t in texts + texts[:1]
    ]
    assert hasher.fingerprint_many(docs).tolist() == want
    assert [hasher.fingerprint(d) for d in docs] == want
    with pytest.raises(TypeError, match=r"docs\[1\] is missing \(None\)"):
        hasher.fingerprint_many(["a", None])


def test_a_hasher_is_frozen_and_replace_makes_a_variant():
    # Once a setting could be changed after construction, fingerprint_many (the core, built at
    # construction) and fingerprint (the normalizer) disagreed: settings are frozen now.
    h = Simhasher()
    with pytest.raises(AttributeError, match="frozen"):
        h.casefold = False
    cased = h.replace(casefold=False)
    assert h.casefold and not cased.casefold
    assert cased.fingerprint("Hello World") == int(cased.fingerprint_many(["Hello World"])[0])
    assert cased.fingerprint("Hello World") != h.fingerprint("Hello World")
    assert cased == Simhasher(casefold=False)
    assert h.replace(stopwords="english").replace(ngram=2) == Simhasher(
        ngram=2, stopwords="english"
    )
    with pytest.raises(TypeError, match="unknown settings: colour"):
        h.replace(colour="red")
    fitted = Simhasher(weighting="idf").fit(["a b c", "a b d"])
    assert fitted.replace(weighting="idf") == fitted
