"""Candidates from prefix filtering (``candidates="prefix"``): every text is a candidate of those
sharing one of the rarest hashes of their sketches, so verified stars see every pair at the
threshold whatever their fingerprints: the stars are those of all pairs, by brute force."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
import reference
from brute import fmix64, star_oracle, verified_near
from neardup import _core
from neardup.prefix_lists import RARITY_SAMPLE, frequent


def corpus(seed: int, families: int, longest: int) -> list[str]:
    """Families of texts of 1 to ``longest`` words from a small vocabulary (so that unrelated
    texts share shingles too), members edited by a few words, some copied."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(60)]
    docs = []
    for _ in range(families):
        base = [rng.choice(vocab) for _ in range(rng.randint(1, longest))]
        for _ in range(rng.randint(1, 4)):
            words = list(base)
            for _ in range(rng.randint(0, 1 + len(words) // 12)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            if rng.random() < 0.3:
                words.append(rng.choice(vocab))
            docs.append(" ".join(words))
    docs.append("")
    docs.append("!!")
    rng.shuffle(docs)
    return docs


def all_pairs_stars(docs: list[str], threshold: float) -> tuple[list[int], list[float]]:
    fps = np.array([reference.fingerprint(reference.normalize(t)) for t in docs], dtype=np.uint64)
    return star_oracle(list(range(len(docs))), verified_near(docs, fps, 64, threshold))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    families=st.integers(1, 40),
    longest=st.sampled_from([6, 30, 120]),
    threshold=st.sampled_from([0.5, 0.8, 0.9]),
)
def test_prefix_candidates_give_the_stars_of_every_pair(seed, families, longest, threshold):
    docs = corpus(seed, families, longest)
    result = neardup.dedup(docs, threshold=threshold, candidates="prefix")
    kept, jaccard = all_pairs_stars(docs, threshold)
    assert result.kept_row.tolist() == kept
    assert result.jaccard.tolist() == pytest.approx(jaccard, abs=1e-6)
    # The pairs compared (what max_pairs bounds), not pairs of fingerprints.
    assert result.stats["candidate_pairs"] == result.stats["pairs_compared"]
    assert result.stats["short_pairs_skipped"] == 0


def test_pairs_beyond_any_k_are_found_and_fewer_pairs_compared():
    # Long families whose members' fingerprints lie far apart: the default k misses some, the
    # prefixes find them all.
    docs = corpus(5, 60, 300)
    by_prefix = neardup.dedup(docs, candidates="prefix")
    kept, _ = all_pairs_stars(docs, 0.8)
    assert by_prefix.kept_row.tolist() == kept
    by_fingerprint = neardup.dedup(docs, candidates="fingerprint")
    assert by_fingerprint.n_removed <= by_prefix.n_removed
    assert by_prefix.stats["prefix_pairs"] > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_order_counted_on_a_sample_gives_the_same_stars(monkeypatch, seed):
    # Past EXACT_HASHES (or below EXACT_MEAN) the order is the one counted on one text in 16
    # during the first pass: other candidates, the same stars.
    from neardup import prefix_lists

    docs = corpus(seed, 40, 120)
    kept, jaccard = all_pairs_stars(docs, 0.8)
    monkeypatch.setattr(
        prefix_lists, "EXACT_MEAN", 0
    )  # counted on every text, whatever their length
    exact = neardup.dedup(docs, candidates="prefix")
    monkeypatch.setattr(prefix_lists, "EXACT_HASHES", 0)
    sampled = neardup.dedup(docs, candidates="prefix")
    for result in (exact, sampled):
        assert result.kept_row.tolist() == kept
        assert result.jaccard.tolist() == pytest.approx(jaccard, abs=1e-6)
    assert exact.stats["pairs_compared"] <= sampled.stats["pairs_compared"]


@pytest.mark.parametrize("piece", [1 << 20, 7])
def test_the_order_counted_on_every_text_counts_every_text(monkeypatch, piece):
    # Brute force: how many sketches hold each shingle hash (checks left out), those held twice
    # or more; in one piece, or in many ranges of values.
    from collections import Counter

    from neardup import prefix_lists
    from neardup.hasher import Simhasher
    from neardup.verify import Sketches

    monkeypatch.setattr(prefix_lists, "COUNT_PIECE", piece)
    sketches = Sketches(Simhasher(), 3)
    docs = corpus(4, 30, 60)
    sketches.add(np.arange(len(docs)), docs)
    lists = prefix_lists.PrefixLists(0.8, sketches)
    _, starts, ends, hashes = sketches.parts()
    lists.hashes = int(hashes.size)
    held = Counter(
        int(h) for a, b in zip(starts, ends) for h in hashes[int(a) : int(b)] if int(h) < 1 << 63
    )
    want = sorted((h, c) for h, c in held.items() if c >= 2)
    got = lists._counted_on_every_text()
    assert list(zip(got[0].tolist(), got[1].tolist())) == want
    assert want and max(c for _, c in want) > 2


def test_sampled_counts_gathered_piece_by_piece_add_up_by_hash():
    # Brute force: the counts of many pieces (as the first pass gathers them, chunk by chunk)
    # added up by hash, whatever order the pieces merge in; a count is held at 2**32 - 1.
    from collections import Counter

    from neardup.prefix_lists import _merged

    rng = np.random.default_rng(5)
    pieces = []
    for size in rng.integers(0, 300, 12):
        hashes = np.unique(rng.integers(0, 500, size).astype(np.uint64))
        pieces.append((hashes, rng.integers(1, 9, len(hashes)).astype(np.uint32)))
    pieces.append((np.array([7], np.uint64), np.array([2**32 - 2], np.uint32)))
    want: Counter[int] = Counter()
    for hashes, counts in pieces:
        want.update(dict(zip(hashes.tolist(), counts.tolist())))
    got = _merged(pieces)
    assert got[0].tolist() == sorted(want)
    assert got[1].tolist() == [min(want[h], 2**32 - 1) for h in sorted(want)]
    assert got[1][got[0].tolist().index(7)] == 2**32 - 1
    assert [a.tolist() for a in _merged([])] == [[], []]
    with pytest.raises(ValueError, match="increase"):
        _core.merged_counts(*pieces[0], np.array([3, 3], np.uint64), np.array([1, 1], np.uint32))


def test_the_order_puts_frequent_hashes_last():
    # Hashes 5 and 9 are in two and three sketches; the others once: counted 0, by value.
    hashes = np.array([1, 5, 9, 2, 5, 9, 9, 30], np.uint64)
    starts = np.array([0, 3, 6], np.uint64)
    ends = np.array([3, 6, 8], np.uint64)
    table = frequent(*_core.rarity_counts(starts, ends, hashes, RARITY_SAMPLE))
    assert table[0].tolist() == [5, 9] and table[1].tolist() == [2, 3]
    # At t = 0.5 a set of 3 lists 2 hashes: its prefix (3 - 2 + 1), all it has past it.
    lengths, listed, sizes, alone = _core.prefix_lists(starts, ends, hashes, table, 0.5)
    assert lengths.tolist() == [3, 3, 2] and sizes.tolist() == [3, 3, 2]
    assert listed.tolist() == [1, 5, 9, 2, 5, 9, 30, 9]
    # A table that may be a sample's tells no hash held by one text alone.
    assert alone.tolist() == [0, 0, 0]
    # The order built once gives the same lists.
    order = _core.RarityOrder(*table)
    assert len(order) == 2
    again = _core.prefix_lists(starts, ends, hashes, order, 0.5)
    want = [lengths.tolist(), listed.tolist(), sizes.tolist(), alone.tolist()]
    assert [a.tolist() for a in again] == want
    # Counted on every text: 1, 2 and 30 are held by one text each, the first of their lists.
    every = _core.prefix_lists(
        starts, ends, hashes, _core.RarityOrder(*table, every_text=True), 0.5
    )
    assert [a.tolist() for a in every] == [*want[:3], [1, 1, 1]]
    with pytest.raises(ValueError, match="threshold"):
        _core.prefix_lists(starts, ends, hashes, table, 1.5)


def test_bad_candidates_are_refused():
    with pytest.raises(ValueError, match='"prefix" or "fingerprint"'):
        neardup.dedup(["a b c"], candidates="lsh")
    # Without verification the fingerprints propose, whatever was asked.
    docs = corpus(3, 30, 30)
    unverified = neardup.dedup(docs, threshold=None, k=8, candidates="prefix")
    assert (
        unverified.kept_row.tolist() == neardup.dedup(docs, threshold=None, k=8).kept_row.tolist()
    )
    assert unverified.n_removed > 0


@pytest.mark.parametrize("budget", ["kept", "spilled"])
def test_the_command_gives_the_stars_of_every_pair(tmp_path, capsys, monkeypatch, budget):
    import csv
    import json

    from command import run
    from neardup import pipeline

    docs = corpus(11, 50, 150)
    kept, jac = all_pairs_stars(docs, 0.8)
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"d{r}", "text": t}) + "\n" for r, t in enumerate(docs))
    )
    if budget == "spilled":
        monkeypatch.setattr(pipeline, "SKETCH_BUDGET", 1)
    out = tmp_path / "c.csv"
    code, report, err = run(
        capsys, "dedup", path, "--dry-run", "--clusters", out, "--candidates", "prefix", "--json"
    )
    assert code == 0, err
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["kept_id"][1:]) for r in rows] == kept
    assert [float(r["jaccard"]) for r in rows] == [round(j, 4) for j in jac]
    assert json.loads(report)["evidence"]["prefix_pairs"] > 0


@pytest.mark.parametrize("candidates", ["fingerprint", "prefix"])
def test_dask_splits_a_prefix_shared_by_thousands(candidates):
    # 5,000 npm-like summaries share their first words: a run of thousands of texts, split on
    # the workers by the next hashes of their lists, loses none of the 40 planted pairs.
    dd = pytest.importorskip("dask.dataframe")
    import dask
    import pandas as pd

    import neardup.dask as ndd
    from test_evidence import npm_like

    texts, planted = npm_like(5000, seed=7)
    want = neardup.dedup(texts, k=0, candidates=candidates)
    assert int((~want.keep).sum()) >= len(planted)
    stats: dict = {}
    with dask.config.set(scheduler="synchronous"):
        frame = dd.from_pandas(pd.DataFrame({"text": texts}), npartitions=4)
        _, table = ndd.dedup(frame, k=0, clusters=True, candidates=candidates, stats=stats)
        table = table.compute()
    assert table["kept_id"].tolist() == want.kept_row.tolist()
    assert stats["short_pairs_skipped"] == 0


def test_max_pairs_bounds_the_pairs_compared():
    docs = corpus(5, 60, 40)
    free = neardup.dedup(docs, candidates="prefix", max_pairs=None)
    compared = free.stats["candidate_pairs"]
    # The pairs compared: at least one per near-duplicate removed (copies are found by their
    # key, not compared), at most the pairs the prefix runs hold.
    copies = len(docs) - len({reference.normalize(t) for t in docs})
    assert free.n_removed - copies <= compared <= free.stats["prefix_pairs"]
    assert compared == free.stats["pairs_compared"] > 10
    bounded = neardup.dedup(docs, candidates="prefix", max_pairs=compared)
    assert bounded.kept_row.tolist() == free.kept_row.tolist()
    with pytest.raises(neardup.TooManyPairsError, match="candidate pairs compared"):
        neardup.dedup(docs, candidates="prefix", max_pairs=compared - 1)


def test_an_index_takes_either_candidates_and_one_without_postings_refuses_prefix(tmp_path, capsys):
    from command import run

    index = neardup.DedupIndex.build(["a b c d e f"], tmp_path / "i.ndx")
    for candidates in ("prefix", "fingerprint"):
        got = neardup.dedup(["a b c d e f"], against=index, candidates=candidates)
        assert got.keep.tolist() == [False]
    plain = neardup.DedupIndex.build(["a b c d e f"], tmp_path / "p.ndx", candidates="fingerprint")
    with pytest.raises(ValueError, match="no prefix postings"):
        neardup.dedup(["a b c d e f"], against=plain, candidates="prefix")
    path = tmp_path / "in.txt"
    path.write_text("a b c d e f\n")
    code, _, err = run(
        capsys, "dedup", path, "--format", "lines", "--dry-run", "--against",
        tmp_path / "p.ndx", "--candidates", "prefix",
    )  # fmt: skip
    assert code == 2 and "no prefix postings" in err


def test_prefix_candidates_without_room_for_the_sketches_are_refused(tmp_path, capsys, monkeypatch):
    import json

    from command import run
    from neardup import pipeline, sketch_spill

    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in corpus(2, 30, 30)))
    monkeypatch.setattr(pipeline, "SKETCH_BUDGET", 1)
    monkeypatch.setattr(sketch_spill, "room_for", lambda nbytes: False)
    code, out, err = run(capsys, "dedup", path, "--dry-run", "--candidates", "prefix")
    assert code == 1 and out == ""
    assert "had no room for them" in err and "--candidates fingerprint" in err
    # Fingerprint candidates read the candidates again instead.
    code, _, err = run(capsys, "dedup", path, "--dry-run", "--candidates", "fingerprint")
    assert code == 0, err


def test_repeated_hashes_are_listed_after_unique_ones():
    """With ``Repeats`` marked on every text, a text's list starts with the hashes no other text
    holds, by value (worked out here by counting holders), before any hash another text
    holds; without it, the table of an empty sample orders them all by value alone."""
    rng = np.random.default_rng(5)
    total = 300 * 70
    repeats = _core.Repeats(total)
    # Values whose slots (the top bits of their fmix64) no other value shares, so that the
    # marks are exact: a value is marked when two texts hold it, and only then.
    pool = rng.integers(0, 1 << 62, size=3 * total, dtype=np.uint64)
    slots = fmix64(pool) >> np.uint64(64 - repeats.bits)
    alone = np.unique(slots, return_counts=True)
    pool = rng.permutation(pool[np.isin(slots, alone[0][alone[1] == 1])])
    shared, pool = pool[:40], pool[40:]
    texts = []
    for _ in range(300):
        n = int(rng.integers(20, 60))
        own, pool = pool[:n], pool[n:]
        texts.append(np.unique(np.concatenate([own, rng.choice(shared, 6, replace=False)])))
    ends = np.cumsum([len(t) for t in texts]).astype(np.uint64)
    starts = ends - np.array([len(t) for t in texts], np.uint64)
    hashes = np.concatenate(texts).astype(np.uint64)
    holders = dict(zip(*np.unique(hashes, return_counts=True)))
    repeats.add(starts, ends, hashes)
    empty = (np.zeros(0, np.uint64), np.zeros(0, np.uint32))
    lengths, listed, _, alone = _core.prefix_lists(
        starts, ends, hashes, _core.RarityOrder(*empty, repeats, every_text=True), 0.8
    )
    plain, by_value, _, none = _core.prefix_lists(starts, ends, hashes, empty, 0.8)
    assert lengths.tolist() == plain.tolist()
    assert not none.any()
    at = np.r_[0, np.cumsum(lengths)]
    for t, text in enumerate(texts):
        got = listed[at[t] : at[t + 1]].tolist()
        unique = sorted(int(h) for h in text if holders[h] == 1)
        assert got == unique[: len(got)]
        # The marks made on every text tell the hashes of one text alone: all it lists.
        assert alone[t] == len(got)
        assert by_value[at[t] : at[t + 1]].tolist() == sorted(text.tolist())[: len(got)]
    # Every shared hash is marked: a list of all of a text's hashes ends with them.
    one = np.array([0], np.uint64), np.array([len(texts[0])], np.uint64)
    lengths, listed, _, alone = _core.prefix_lists(
        *one,
        texts[0].astype(np.uint64),
        _core.RarityOrder(*empty, repeats, every_text=True),
        0.0001,
    )
    assert sorted(int(h) for h in listed[-6:]) == sorted(int(h) for h in texts[0] if holders[h] > 1)
    assert alone.tolist() == [len(texts[0]) - 6]


def test_repeats_cut_the_candidates_of_hashes_the_sample_misses(monkeypatch):
    """Phrases each shared by a few texts are seldom seen twice by the one-in-16 sample, so
    without the marks they rank with the unique hashes and make unrelated texts candidates;
    with them, only the texts that share their unique words (the near-duplicates) are. The
    kept rows and evidence are the same either way."""
    rng = random.Random(3)
    phrases = [" ".join(f"p{i}x{j}" for j in range(6)) for i in range(300)]
    docs = []
    for d in range(1500):
        words = [f"u{d}x{j}" for j in range(30)]
        for _ in range(3):
            words.insert(rng.randrange(len(words)), rng.choice(phrases))
        docs.append(" ".join(words))
        if d % 10 == 0:
            near = docs[-1].split()
            near[3] = "edited"
            docs.append(" ".join(near))
    marked = neardup.dedup(docs, candidates="prefix")
    monkeypatch.setattr(neardup.prefix_lists.PrefixLists, "_repeats", lambda self: None)
    sampled = neardup.dedup(docs, candidates="prefix")
    assert marked.kept_row.tolist() == sampled.kept_row.tolist()
    assert marked.jaccard.tolist() == sampled.jaccard.tolist()
    assert int((marked.kept_row != np.arange(len(docs))).sum()) == 150
    assert marked.stats["candidate_pairs"] * 4 < sampled.stats["candidate_pairs"]
