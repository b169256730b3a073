"""A dedup index built with exact sets: every pair is decided on its exact Jaccard (brute force
over word 3-shingles), with either candidates, through updates, from the command and on Dask."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import neardup
from neardup import DedupIndex
from neardup.cli import main
from test_against import oracle


def spread(seed: int, families: int = 14) -> list[str]:
    """Families of texts of 30 to 150 words whose variants differ in 0 to 8 words: Jaccards of
    word 3-shingles spread across 0.8 (texts past 8 shingles, so exact sets decide), and short
    texts of 5 to 9 words that the compact sketch keeps whole."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 8)))
        for _ in range(4000)
    ]
    docs = []
    for f in range(families):
        length = rng.randint(5, 9) if f % 5 == 0 else rng.randint(30, 150)
        base = [rng.choice(vocab) for _ in range(length)]
        docs.append(" ".join(base))
        for _ in range(rng.randint(1, 5)):
            words = list(base)
            for _ in range(rng.randint(0, 8 if length > 20 else 1)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            docs.append(" ".join(words))
    rng.shuffle(docs)
    return docs


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_an_exact_index_removes_what_brute_force_removes_with_its_jaccards(tmp_path, seed):
    docs = spread(seed)
    split = len(docs) // 2
    index = DedupIndex.build(docs[:split], tmp_path / "a.ndx", exact=True)
    assert index.exact and "exact sets" in repr(index)
    again = DedupIndex.open(tmp_path / "a.ndx")
    assert again.exact
    for candidates in ("prefix", "fingerprint"):
        kept, jaccard = oracle(docs, candidates=candidates)
        got = neardup.dedup(docs[split:], against=again, candidates=candidates)
        want = [kept[g] == g for g in range(split, len(docs))]
        assert got.keep.tolist() == want, candidates
        removed = np.flatnonzero(~got.keep)
        assert np.allclose(
            got.jaccard[removed], [jaccard[split + r] for r in removed], atol=1e-6
        ), candidates


def test_a_compact_index_estimates_where_the_exact_one_decides(tmp_path):
    # Over these seeds the compact sketches' estimates decide some pair near the threshold the
    # other way; the exact sets (the default) never do.
    wrong = 0
    for seed in range(5, 11):
        docs = spread(seed, families=20)
        split = len(docs) // 2
        kept, _ = oracle(docs, candidates="prefix")
        want = [kept[g] == g for g in range(split, len(docs))]
        plain = DedupIndex.build(docs[:split], tmp_path / f"p{seed}.ndx", exact=False)
        assert not plain.exact
        wrong += neardup.dedup(docs[split:], against=plain).keep.tolist() != want
        exact = DedupIndex.build(docs[:split], tmp_path / f"e{seed}.ndx")
        assert exact.exact
        assert neardup.dedup(docs[split:], against=exact).keep.tolist() == want
    assert wrong > 0


def test_updates_keep_the_sets_of_the_documents_they_add(tmp_path):
    docs = spread(12, families=24)
    a, b, c = docs[:25], docs[25:50], docs[50:]
    path = tmp_path / "a.ndx"
    DedupIndex.build(a, path, exact=True, ids=[f"a{i}" for i in range(len(a))])
    records = [{"id": f"b{i}", "text": t} for i, t in enumerate(b)]
    neardup.dedup(records, against=DedupIndex.open(path), update=True, id_field="id")
    kept, _ = oracle(docs, candidates="prefix")
    got = neardup.dedup(c, against=DedupIndex.open(path))
    assert got.keep.tolist() == [kept[g] == g for g in range(50, len(docs))]
    grown = DedupIndex.open(path)
    assert grown.exact
    # Each stored set is the document's own: a kept B document is a copy of itself in the index.
    found = neardup.dedup(b, against=grown)
    kept_b = np.array([kept[g] == g for g in range(25, 50)])
    assert (~found.keep[kept_b]).all() and (found.jaccard[kept_b] == 1).all()


def test_the_command_builds_an_exact_index_and_dedups_against_it(tmp_path, capsys):
    docs = spread(13, families=20)
    half = len(docs) // 2
    src, new = tmp_path / "a.txt", tmp_path / "b.txt"
    src.write_text("\n".join(docs[:half]) + "\n")
    new.write_text("\n".join(docs[half:]) + "\n")
    ndx = tmp_path / "a.ndx"
    assert main(["index", "build", str(src), "-o", str(ndx), "--exact", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] is True
    out = tmp_path / "kept.txt"
    assert main(["dedup", str(new), "--against", str(ndx), "-o", str(out), "-q"]) == 0
    kept, _ = oracle(docs, candidates="prefix")
    assert out.read_text().splitlines() == [docs[g] for g in range(half, len(docs)) if kept[g] == g]
    # A simhash index keeps no sets: the flag is refused, naming the kind that takes it.
    assert main(["index", "build", str(src), "-o", str(tmp_path / "a.sidx"), "--exact"]) == 2
    assert "dedup index" in capsys.readouterr().err
    assert main(["index", "build", str(src), "-o", str(tmp_path / "b.sidx")]) == 0


@pytest.mark.parametrize("npartitions", [1, 4])
def test_dask_gives_one_machines_answer_and_update(tmp_path, npartitions):
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    from neardup.dask.against import dedup_against

    docs = spread(16, families=24)
    split = len(docs) // 2
    for name in ("a.ndx", "b.ndx"):
        DedupIndex.build(docs[:split], tmp_path / name, exact=True)
    new = pd.DataFrame({"text": docs[split:]})
    single = neardup.dedup(docs[split:], against=DedupIndex.open(tmp_path / "b.ndx"), update=True)
    kept, _ = oracle(docs, candidates="prefix")
    assert single.keep.tolist() == [kept[g] == g for g in range(split, len(docs))]
    got, table = dedup_against(
        dd.from_pandas(new, npartitions=npartitions),
        str(tmp_path / "a.ndx"),
        update=True,
        clusters=True,
    )
    t = table.compute()
    assert t["kept"].tolist() == single.keep.tolist()
    assert t["jaccard"].tolist() == single.jaccard.tolist()
    assert got.compute()["text"].tolist() == [d for d, k in zip(docs[split:], single.keep) if k]
    # The update wrote what one machine's wrote, exact sets included.
    assert (tmp_path / "a.ndx").read_bytes() == (tmp_path / "b.ndx").read_bytes()


def test_sets_past_the_memory_budget_go_to_a_file_and_give_the_same_index(tmp_path, monkeypatch):
    from neardup import index_lists

    docs = spread(17, families=30)
    DedupIndex.build(docs, tmp_path / "memory.ndx")
    monkeypatch.setattr(index_lists, "SETS_BUDGET", 1000)  # a few sets: the rest spill
    spilled = []
    original = index_lists._ExactSets.arrays

    def arrays(self, n):
        spilled.append(self._file is not None)  # before arrays() maps and closes it
        return original(self, n)

    monkeypatch.setattr(index_lists._ExactSets, "arrays", arrays)
    DedupIndex.build(docs, tmp_path / "spilled.ndx")
    assert spilled == [True]
    assert (tmp_path / "spilled.ndx").read_bytes() == (tmp_path / "memory.ndx").read_bytes()
