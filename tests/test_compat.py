"""neardup.compat against the real `simhash` package from PyPI: the same values and the same
near-duplicate sets, on the shared corpus and on the package's corner cases."""

from __future__ import annotations

import hashlib
import re

import pytest

from neardup import compat

simhash = pytest.importorskip("simhash")  # a test dependency (the `test` extra): always there in CI


@pytest.fixture(scope="module")
def docs(corpus) -> list[str]:
    # A run of neighbours (related packages, many near-duplicates) and a spread over the rest.
    return corpus[:1500] + corpus[1500::25]


@pytest.fixture(scope="module")
def theirs(docs) -> list:
    return [simhash.Simhash(d) for d in docs]


@pytest.fixture(scope="module")
def ours(docs) -> list:
    return [compat.Simhash(d) for d in docs]


def test_values_equal_the_package_on_the_corpus(docs, theirs, ours):
    want = [h.value for h in theirs]
    assert [h.value for h in ours] == want
    assert compat.simhash_many(docs).tolist() == want
    assert compat.simhash_many(docs, threads=1).tolist() == want


@pytest.mark.parametrize("f", [8, 32, 56])
def test_values_equal_the_package_for_shorter_fingerprints(docs, f):
    for d in docs[:200]:
        assert compat.Simhash(d, f=f).value == simhash.Simhash(d, f=f).value
    assert compat.simhash_many(docs[:200], f=f).tolist() == [
        simhash.Simhash(d, f=f).value for d in docs[:200]
    ]


TEXTS = [
    "",
    "a",
    "abc",
    "abcd",
    "How are you? I Am fine. blar blar blar blar blar Thanks.",
    "你妈妈喊你回家吃饭哦，回家罗回家罗",
    "ÄÖÜ straße İstanbul ΣΟΦΟΣ ǅ",
    "emoji 😀😀 and_underscores __x__",
    "数字123 mixed 日本語のテキスト 한국어",
    "\u4e00\u9fcc\u9fcd\u9fff",
    "   !!! ???   ",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("reg", [compat.DEFAULT_REG, re.compile(r"\w", re.UNICODE), r"[a-z]+"])
def test_texts_and_regexes_equal_the_package(text, reg):
    assert compat.Simhash(text, reg=reg).value == simhash.Simhash(text, reg=reg).value


FEATURES = [
    ["aaa", "bbb", "ccc", "aaa"],
    [("aaa", 1), ("bbb", 3), ("ccc", 2)],
    {"aaa": 10, "bbb": 60, "ccc": 55, "ddd": 1},  # weights above 50 take the package's other path
    [("aaa", 1.5), ("bbb", 0.25), ("ccc", 2)],
    [("aaa", 3), ("bbb", -2), ("ccc", 1), ("ddd", 0)],  # int weights <= 0 only count in the total
    [("aaa", -1.5), ("bbb", 1.0), ("ccc", 0.75)],
    [("aaa", 4), "bbb", "ccc"],  # a bare str after a pair weighs what the pair did
    [("aaa", True), ("bbb", 2)],
    ["回家", "吃饭", "回家"],
    [str(i) for i in range(500)],
    [],
    {},
]


@pytest.mark.parametrize("features", FEATURES)
@pytest.mark.parametrize("f", [64, 16])
def test_features_and_weights_equal_the_package(features, f):
    assert compat.Simhash(features, f=f).value == simhash.Simhash(features, f=f).value


def sha1_int(data: bytes) -> int:
    return int.from_bytes(hashlib.sha1(data).digest(), "big")


def sha256_bytes(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


@pytest.mark.parametrize("hashfunc", [sha1_int, sha256_bytes])
def test_custom_hash_functions_equal_the_package(docs, hashfunc):
    for d in docs[:30]:
        assert (
            compat.Simhash(d, hashfunc=hashfunc).value
            == simhash.Simhash(d, hashfunc=hashfunc).value
        )
    for features in FEATURES[:4]:
        for f in (64, 32):
            assert (
                compat.Simhash(features, f=f, hashfunc=hashfunc).value
                == simhash.Simhash(features, f=f, hashfunc=hashfunc).value
            )


def test_values_distances_and_equality(docs):
    a, b = compat.Simhash(docs[0]), compat.Simhash(docs[1])
    pa, pb = simhash.Simhash(docs[0]), simhash.Simhash(docs[1])
    assert a.distance(b) == pa.distance(pb)
    assert compat.Simhash(a).value == a.value and compat.Simhash(12345).value == 12345
    assert a == compat.Simhash(docs[0]) and a != b
    for i in range(0, 200, 2):
        x, y = compat.Simhash(docs[i], f=32), compat.Simhash(docs[i + 1], f=32)
        assert x.distance(y) == simhash.Simhash(docs[i], f=32).distance(
            simhash.Simhash(docs[i + 1], f=32)
        )


def near_dup_sets(index, query_cls, docs, f=64):
    return [sorted(index.get_near_dups(query_cls(d, f=f))) for d in docs]


@pytest.mark.parametrize("k", [0, 3, 6])
def test_near_duplicate_sets_equal_the_package(theirs, ours, k):
    their_index = simhash.SimhashIndex([(str(i), h) for i, h in enumerate(theirs)], k=k)
    our_index = compat.SimhashIndex([(str(i), h) for i, h in enumerate(ours)], k=k)
    want = [sorted(their_index.get_near_dups(h)) for h in theirs]
    assert [sorted(our_index.get_near_dups(h)) for h in ours] == want
    if k == 3:
        assert sum(len(s) > 1 for s in want) > 100  # the corpus has near-duplicates to find


def test_add_and_delete_follow_the_package(docs):
    sample = docs[:600]
    theirs = simhash.SimhashIndex([], k=3)
    ours = compat.SimhashIndex([], k=3)
    for i, d in enumerate(sample):
        theirs.add(i, simhash.Simhash(d))  # int ids come back as str
        ours.add(i, compat.Simhash(d))
    for i, d in enumerate(sample[::3]):
        theirs.delete(3 * i, simhash.Simhash(d))
        ours.delete(3 * i, compat.Simhash(d))
    for i, d in enumerate(sample[:50]):
        theirs.add(f"again-{i}", simhash.Simhash(d))
        ours.add(f"again-{i}", compat.Simhash(d))
        theirs.add(f"again-{i}", simhash.Simhash(d))  # a repeated entry is one entry
        ours.add(f"again-{i}", compat.Simhash(d))
    theirs.delete("absent", simhash.Simhash("nothing"))
    ours.delete("absent", compat.Simhash("nothing"))
    assert near_dup_sets(ours, compat.Simhash, sample) == near_dup_sets(
        theirs, simhash.Simhash, sample
    )
    assert ours.offsets == theirs.offsets
    assert list(ours.get_keys(compat.Simhash(sample[0]))) == list(
        theirs.get_keys(simhash.Simhash(sample[0]))
    )


def test_shorter_fingerprints_in_the_index(docs):
    sample = docs[:400]
    theirs = simhash.SimhashIndex(
        [(i, simhash.Simhash(d, f=32)) for i, d in enumerate(sample)], f=32, k=2
    )
    ours = compat.SimhashIndex(
        [(i, compat.Simhash(d, f=32)) for i, d in enumerate(sample)], f=32, k=2
    )
    assert near_dup_sets(ours, compat.Simhash, sample, f=32) == near_dup_sets(
        theirs, simhash.Simhash, sample, f=32
    )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: compat.Simhash("text", f=12), ValueError, "multiple of 8"),
        (lambda: compat.Simhash("text", f=128), ValueError, "64"),
        (lambda: compat.Simhash(1.5), TypeError, "Bad parameter"),
        (lambda: compat.Simhash([("a", "heavy")]), TypeError, "weight"),
        (lambda: compat.Simhash([3]), TypeError, "str"),
        (lambda: compat.Simhash("a").distance(compat.Simhash("a", f=32)), ValueError, "bits"),
        (lambda: compat.SimhashIndex([], k=17), ValueError, "k"),
        (lambda: compat.SimhashIndex([], f=32).add("x", compat.Simhash("a")), ValueError, "32"),
        (lambda: compat.SimhashIndex([]).get_near_dups("text"), TypeError, "Simhash"),
        (lambda: compat.simhash_many("one text"), TypeError, "list"),
    ],
)
def test_compat_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_packages_batching_attributes_are_there_and_change_no_fingerprint(monkeypatch):
    """`batch_size` and `large_weight_cutoff` tune how the package sums its numpy arrays; code
    (the package's own tests among it) sets them. They are there with the package's values, and
    whatever they are set to, each fingerprint is the package's."""
    for name in ("batch_size", "large_weight_cutoff"):
        assert getattr(compat.Simhash, name) == getattr(simhash.Simhash, name)
    # (The package sums in uint8 arrays: a weight above 255 overflows there.)
    features = [(f"feature {i}", i % 97 + 1) for i in range(500)] + [("heavy", 250)]
    for batch_size, cutoff in ((1, 0), (3, 10), (200, 50), (10_000, 255)):
        for cls in (compat.Simhash, simhash.Simhash):
            monkeypatch.setattr(cls, "batch_size", batch_size)
            monkeypatch.setattr(cls, "large_weight_cutoff", cutoff)
        assert compat.Simhash(features).value == simhash.Simhash(features).value
