"""Prefix candidates against a dedup index: every pair at the threshold whatever k (brute force
over every pair), kept through updates on one machine and on Dask, refused where they cannot
hold, and the index's candidates are the default."""

from __future__ import annotations

import random

import numpy as np
import pytest

import neardup
from brute import exact_jaccard, family_corpus
from neardup import DedupIndex
from neardup.cli import main
from test_against import oracle


def edited(seed: int, families: int = 12, length: tuple[int, int] = (40, 80)) -> list[str]:
    """Families of texts of ``length`` words (40 to 80), each variant a few words away from its base: pairs at
    Jaccard 0.8 and more whose fingerprints lie far apart as well as near."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 8)))
        for _ in range(3000)
    ]
    docs = []
    for _ in range(families):
        base = [rng.choice(vocab) for _ in range(rng.randint(*length))]
        docs.append(" ".join(base))
        for _ in range(rng.randint(1, 4)):
            words = list(base)
            for _ in range(rng.randint(0, 2)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            docs.append(" ".join(words))
    rng.shuffle(docs)
    return docs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_prefix_candidates_find_every_pair_whatever_k(tmp_path, seed):
    docs = edited(seed)
    split = len(docs) // 2
    # 1,024 bytes keep these texts' shingle hashes whole: their Jaccards are exact, so the
    # answer is brute force's over every pair.
    index = DedupIndex.build(docs[:split], tmp_path / "a.ndx", sketch_bytes=1024, k=0)
    assert index.candidates == "prefix"
    kept, _ = oracle(docs, candidates="prefix")
    got = neardup.dedup(docs[split:], against=index)
    assert got.keep.tolist() == [kept[g] == g for g in range(split, len(docs))]
    # With k = 0, fingerprints propose only equal fingerprints: the same index searched that
    # way leaves near-duplicates the prefixes find.
    by_fp = neardup.dedup(docs[split:], against=index, candidates="fingerprint")
    assert by_fp.n_removed < got.n_removed
    assert (by_fp.keep | ~got.keep).all()  # what fingerprints remove, prefixes remove too


def test_an_update_keeps_the_new_documents_findable(tmp_path):
    docs = edited(4, families=20)
    a, b, c = docs[:20], docs[20:45], docs[45:]
    path = tmp_path / "a.ndx"
    DedupIndex.build(a, path, sketch_bytes=1024)
    index = DedupIndex.open(path)
    neardup.dedup(b, against=index, update=True)
    kept, _ = oracle(docs, candidates="prefix")
    got = neardup.dedup(c, against=DedupIndex.open(path))
    assert got.keep.tolist() == [kept[g] == g for g in range(45, len(docs))]
    # The postings of the appended documents were merged in order: a second copy of the file,
    # updated the same way, is the same bytes, and a fresh search of B finds B whole.
    again = DedupIndex.open(path)
    assert again._inner.postings > 0
    found = neardup.dedup(b, against=again)
    kept_b = [kept[g] == g for g in range(20, 45)]
    assert (~found.keep[np.array(kept_b)]).all()  # each kept B document is in the index now


def test_a_lower_threshold_falls_back_to_fingerprints_and_an_explicit_prefix_is_refused(tmp_path):
    docs = family_corpus(10, seed=3)
    index = DedupIndex.build(docs[:20], tmp_path / "a.ndx")
    assert index._candidates(None, 0.6) == "fingerprint"
    assert index._candidates(None, 0.9) == "prefix"
    got = neardup.dedup(docs[20:], against=index, threshold=0.6)  # fingerprints, no error
    assert len(got) == len(docs) - 20
    with pytest.raises(ValueError, match="cut at Jaccard 0.8"):
        neardup.dedup(docs[20:], against=index, threshold=0.6, candidates="prefix")
    plain = DedupIndex.build(docs[:20], tmp_path / "b.ndx", candidates="fingerprint")
    assert plain.candidates == "fingerprint" and plain._inner.postings == 0
    with pytest.raises(ValueError, match="no prefix postings"):
        neardup.dedup(docs[20:], against=plain, candidates="prefix")
    # The file without postings is the smaller one.
    assert (tmp_path / "b.ndx").stat().st_size < (tmp_path / "a.ndx").stat().st_size


def test_near_identical_texts_build_an_index_and_are_searched_or_refused(tmp_path):
    # One inner word of a 20-word sentence replaced by a token of its own: no two are near
    # (J <= 15/21), but each shares most of its shingles with thousands of others.
    sentence = (
        "every morning a slow green train leaves the old harbour town and climbs past quiet farms "
        "toward the distant hills"
    )
    words = sentence.split()

    def texts(mark: str, n: int) -> list[str]:
        out = []
        for i in range(n):
            w = list(words)
            w[2 + i % 16] = f"tok{i:06d}{mark}"
            out.append(" ".join(w))
        return out

    index = DedupIndex.build(texts("x", 20_000), tmp_path / "a.ndx")
    assert len(index) == 20_000  # none removed
    # Each new text shares a common prefix hash with thousands of index texts, but at the same
    # place in lists of the same size, where the positional filter shows that the pair cannot
    # reach the threshold: none is listed, and the search finishes within a small max_pairs.
    got = neardup.dedup(texts("y", 2_000), against=index, max_pairs=1_000)
    assert got.n_removed == 0
    # Copies of the index's texts are listed with their originals (in each of the prefix
    # hashes they may meet in): past max_pairs that is refused before any pair is compared.
    with pytest.raises(neardup.TooManyPairsError, match="candidate pairs with the index"):
        neardup.dedup(texts("x", 2_000), against=index, max_pairs=1_000)
    got = neardup.dedup(texts("x", 2_000), against=index, max_pairs=None)
    assert got.n_removed == 2_000


def at_the_threshold(seed: int, families: int = 40) -> list[str]:
    """Families of texts of distinct words whose word 3-shingle Jaccards lie exactly at 0.8 and
    just below, between texts of equal and of different sizes: a text of n shingles and one
    with its last word replaced ((n - 1) / (n + 1), 0.8 at n = 9), or with n / 4 words added
    at either end (n / (n + n / 4) = 0.8), or a word more (just below), or an inner word
    replaced (3 shingles)."""
    rng = random.Random(seed)
    fresh = iter(f"w{seed}x{i}" for i in range(10**6))
    docs = []
    for _ in range(families):
        n = rng.choice([4, 8, 9, 12, 16, 20, 24, 40, 9, 8])
        base = [next(fresh) for _ in range(n + 2)]
        variants = [base]
        for _ in range(rng.randint(1, 4)):
            kind = rng.randrange(5)
            words = list(base)
            if kind == 0:
                words[-1] = next(fresh)
            elif kind == 1:
                words += [next(fresh) for _ in range(max(1, n // 4))]
            elif kind == 2:
                words = [next(fresh) for _ in range(max(1, n // 4))] + words
            elif kind == 3:
                words += [next(fresh) for _ in range(max(1, n // 4) + 1)]
            else:
                words[rng.randrange(2, len(words) - 2)] = next(fresh)
            variants.append(words)
        docs.extend(" ".join(w) for w in variants)
    rng.shuffle(docs)
    return docs


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_filters_keep_every_pair_at_the_threshold(tmp_path, seed):
    docs = at_the_threshold(seed)
    # The corpus holds pairs exactly at 0.8 across the split, of equal and of different sizes.
    at = [
        (a, b)
        for a in range(len(docs))
        for b in range(a + 1, len(docs))
        if exact_jaccard(docs[a], docs[b]) == 0.8
    ]
    split = len(docs) // 2
    assert sum(a < split <= b for a, b in at) >= 5
    assert any(len(docs[a].split()) != len(docs[b].split()) for a, b in at)
    index = DedupIndex.build(docs[:split], tmp_path / "a.ndx", sketch_bytes=1024)
    kept, _ = oracle(docs, candidates="prefix")
    got = neardup.dedup(docs[split:], against=index)
    want = [kept[g] == g for g in range(split, len(docs))]
    assert got.keep.tolist() == want
    # What one machine's dedup of the whole corpus keeps of the second half.
    whole = neardup.dedup(docs)
    assert whole.keep[split:].tolist() == want


def test_the_command_builds_either_kind_and_says_which(tmp_path, capsys):
    docs = family_corpus(24, seed=5)
    half = len(docs) // 2
    src = tmp_path / "a.txt"
    src.write_text("\n".join(docs[:half]) + "\n")
    new = tmp_path / "b.txt"
    new.write_text("\n".join(docs[half:]) + "\n")
    for kind in ("prefix", "fingerprint"):
        ndx = tmp_path / f"{kind}.ndx"
        assert main(["index", "build", str(src), "-o", str(ndx), "--candidates", kind]) == 0
        assert f"{kind} candidates" in capsys.readouterr().out
        assert DedupIndex.open(ndx).candidates == kind
    out = tmp_path / "kept.txt"
    args = ["dedup", str(new), "--against", str(tmp_path / "fingerprint.ndx"), "-o", str(out)]
    assert main([*args, "--candidates", "prefix"]) == 2
    assert "no prefix postings" in capsys.readouterr().err
    assert main(["dedup", str(new), "--against", str(tmp_path / "prefix.ndx"), "-o", str(out)]) == 0
    single = neardup.dedup(docs[half:], against=DedupIndex.open(tmp_path / "prefix.ndx"))
    assert single.n_removed > 0
    assert out.read_text().splitlines() == [t for t, k in zip(docs[half:], single.keep) if k]


def test_an_index_started_empty_takes_the_order_of_its_first_documents(tmp_path):
    # Long texts: the order is counted on every text of the first batch, as in memory.
    docs = edited(8, families=24, length=(150, 200))
    path = tmp_path / "stream.ndx"
    DedupIndex.build([], path, sketch_bytes=1024)
    index = DedupIndex.open(path)
    assert len(index._inner.prefix_table()[0]) == 0
    parts = [docs[:25], docs[25:50], docs[50:]]
    results = [neardup.dedup(p, against=index, update=True) for p in parts]
    # The first batch counted the order (its hashes held by two texts or more), which the
    # file keeps; the next batches were listed in it.
    table = DedupIndex.open(path)._inner.prefix_table()
    assert len(table[0]) > 0 and (table[1] >= 2).all()
    # The stream removes what a dedup of everything at once removes (exact Jaccards here).
    kept, _ = oracle(docs, candidates="prefix")
    got = np.concatenate([r.keep for r in results])
    assert got.tolist() == [kept[g] == g for g in range(len(docs))]
    # An empty index is not given its first documents on Dask.
    pytest.importorskip("dask.dataframe")
    import dask.dataframe as dd
    import pandas as pd

    from neardup.dask.against import dedup_against

    DedupIndex.build([], tmp_path / "empty.ndx")
    frame = dd.from_pandas(pd.DataFrame({"text": docs}), npartitions=2)
    with pytest.raises(ValueError, match="holds no documents yet"):
        dedup_against(frame, str(tmp_path / "empty.ndx"), update=True)
