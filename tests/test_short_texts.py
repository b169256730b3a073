"""Short texts (at most neardup.pipeline.SHORT word 3-shingles) are verified against each other
whatever their fingerprints: one word added to a sentence moves its fingerprint 9 to 14 bits,
beyond the candidate radius, and the pair is still found; the API, the command (with and without
the sketch budget) and Dask agree."""

from __future__ import annotations

import csv
import json
import random

import numpy as np
import pytest

import neardup
from brute import exact_jaccard, shingle_set, star_oracle, verified_near
from command import run
from neardup.pipeline import SHORT
from neardup.verify import THRESHOLD_K

BASE = "the package provides a command line tool to convert images between formats"
EDIT = BASE + " today"


def distance(a: str, b: str) -> int:
    h = neardup.Simhasher()
    return bin(h.fingerprint(a) ^ h.fingerprint(b)).count("1")


def test_one_word_added_to_a_sentence_is_found_however_far_its_fingerprint_moves():
    # 10 and 11 shingles, 10 shared: Jaccard 10/11; the fingerprints lie 14 bits apart.
    assert len(shingle_set(BASE)) == 10 and len(shingle_set(EDIT)) == 11 <= SHORT
    assert distance(BASE, EDIT) > THRESHOLD_K
    result = neardup.dedup([BASE, EDIT])
    assert result.keep.tolist() == [True, False]
    assert result.kept_row.tolist() == [0, 0]
    assert result.jaccard[1] == np.float32(exact_jaccard(BASE, EDIT)) == np.float32(10 / 11)
    # Fingerprints alone know nothing of it.
    assert neardup.dedup([BASE, EDIT], threshold=None, k=THRESHOLD_K).keep.tolist() == [True, True]
    # Nor does a pair of longer texts with the same edit, when its fingerprints are as far.
    long = " ".join([BASE] * 2 + ["and more words to pass sixteen shingles"])
    assert len(shingle_set(long)) > SHORT
    if distance(long, long + " today") > THRESHOLD_K:
        assert neardup.dedup([long, long + " today"]).keep.tolist() == [True, True]


def sentences(seed: int) -> list[str]:
    """Families of 4 to 14 word sentences and edits of them (a word added, dropped or changed),
    shuffled."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 5))) for _ in range(400)]
    docs = []
    for _ in range(60):
        base = [rng.choice(vocab) for _ in range(rng.randint(4, 14))]
        docs.append(" ".join(base))
        for _ in range(rng.randint(0, 3)):
            words = list(base)
            op = rng.randrange(3)
            if op == 0:
                words.insert(rng.choice([0, len(words)]), rng.choice(vocab))
            elif op == 1 and len(words) > 4:
                words.pop(rng.choice([0, len(words) - 1]))
            else:
                words[rng.randrange(len(words))] = rng.choice(vocab)
            docs.append(" ".join(words))
    rng.shuffle(docs)
    return docs


@pytest.mark.parametrize("seed", [1, 2])
def test_api_command_and_dask_give_the_brute_force_stars(tmp_path, capsys, monkeypatch, seed):
    from neardup import pipeline

    docs = sentences(seed)
    fps = neardup.Simhasher().fingerprint_many(docs)
    kept, jac = star_oracle(list(range(len(docs))), verified_near(docs, fps, THRESHOLD_K, 0.8))
    beyond = [r for r, c in enumerate(kept) if c != r and distance(docs[r], docs[c]) > THRESHOLD_K]
    assert len(beyond) >= 5, "the corpus has short pairs beyond k"
    api = neardup.dedup(docs)
    assert api.kept_row.tolist() == kept
    assert api.jaccard.tolist() == jac
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"d{r}", "text": t}) + "\n" for r, t in enumerate(docs))
    )
    # The command, with its sketches kept and past their budget (then cut to SHORT + 1 hashes).
    for budget in (pipeline.SKETCH_BUDGET, 1):
        monkeypatch.setattr(pipeline, "SKETCH_BUDGET", budget)
        out = tmp_path / f"c{budget}.csv"
        code, _, err = run(capsys, "dedup", path, "--dry-run", "--clusters", out)
        assert code == 0, err
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        assert [int(r["kept_id"][1:]) for r in rows] == kept
        assert [float(r["jaccard"]) for r in rows] == [round(j, 4) for j in jac]  # 4 places
    dd = pytest.importorskip("dask.dataframe")
    import dask
    import pandas as pd

    import neardup.dask as ndd

    with dask.config.set(scheduler="synchronous"):
        frame = dd.from_pandas(pd.DataFrame({"text": docs}), npartitions=3)
        _, table = ndd.dedup(frame, clusters=True)
        table = table.compute()
    assert table["kept_id"].tolist() == kept
    assert table["jaccard"].astype(np.float32).tolist() == np.float32(jac).tolist()


def test_a_dedup_index_finds_short_texts_beyond_k_too(tmp_path):
    index = neardup.DedupIndex.build([BASE, "something else entirely"], tmp_path / "a.ndx")
    got = neardup.dedup([EDIT, "a third text"], against=index)
    assert got.keep.tolist() == [False, True]
    assert got.in_index.tolist() == [True, False] and got.duplicate_of[0] == 0
    assert got.jaccard[0] == np.float32(10 / 11)


def test_pairs_lists_short_pairs_beyond_k_with_every_copy(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    docs = [BASE, EDIT, EDIT, "an unrelated line of text here"]
    path.write_text(
        "".join(json.dumps({"id": f"d{r}", "text": t}) + "\n" for r, t in enumerate(docs))
    )
    code, out, err = run(capsys, "pairs", path, "--json")
    assert code == 0, err
    got = sorted(
        (r["id_a"], r["id_b"], r["distance"], r["jaccard"])
        for r in map(json.loads, out.splitlines())
    )
    far = distance(BASE, EDIT)
    assert got == [
        ("d0", "d1", far, round(10 / 11, 4)),
        ("d0", "d2", far, round(10 / 11, 4)),
        ("d1", "d2", 0, 1.0),
    ]
