"""One answer whatever runs it: each option of ``neardup.dedup`` given to every driver (the
library, the command, Dask's library on the synchronous scheduler) gives the single machine's
kept documents and evidence, and against an index the library, the command and Dask agree. The
oracle of the kept set is the brute-force star of verified pairs (``tests/brute.py``) where the
option keeps the default stars; every driver is compared with it or with the library."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import neardup
import neardup.dask
import reference
from brute import exact_jaccard, star_oracle
from command import run
from neardup import DedupIndex

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")


def corpus() -> list[dict]:
    """Families of 14-word texts with one or two words replaced (Jaccard 0.6 to 0.9 with their
    base), exact copies, and long texts with a sentence changed; ids are strings."""
    rng = random.Random(11)
    vocab = [
        "".join(rng.choice("abdegiklmnoprstu") for _ in range(rng.randint(3, 8)))
        for _ in range(500)
    ]
    texts = []
    for _ in range(18):
        base = [rng.choice(vocab) for _ in range(rng.randint(12, 16))]
        texts.append(" ".join(base))
        for _ in range(rng.randint(1, 4)):
            words = list(base)
            for _ in range(rng.choice([1, 1, 2])):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            texts.append(" ".join(words))
        if rng.random() < 0.3:
            texts.append(" ".join(base).upper())
    for _ in range(4):
        long = [rng.choice(vocab) for _ in range(300)]
        texts.append(" ".join(long))
        edited = list(long)
        edited[rng.randrange(300)] = rng.choice(vocab)
        texts.append(" ".join(edited))
    rng.shuffle(texts)
    return [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]


DOCS = corpus()

#: The options of the matrix, as keyword arguments of ``neardup.dedup`` (the command's flags and
#: Dask's arguments are derived from them).
OPTIONS = {
    "defaults": {},
    "threshold 0.7": {"threshold": 0.7},
    "shingle 2": {"shingle": 2},
    "fingerprint candidates": {"candidates": "fingerprint"},
    "fingerprint candidates k 4": {"candidates": "fingerprint", "k": 4},
    "keep longest": {"keep": "longest"},
    "no verification k 3": {"threshold": None, "k": 3},
    "no pair limit": {"max_pairs": None},
}


def flags(options: dict) -> list[str]:
    """The command's flags for library options."""
    out: list[str] = []
    for name, value in options.items():
        if name == "threshold" and value is None:
            out.append("--no-verify")
        elif name == "max_pairs":
            out += ["--max-pairs", "0" if value is None else str(value)]
        else:
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out


def library(options: dict) -> tuple[list[str], dict[str, str]]:
    """(kept ids, removed id -> the id kept in its place) of ``neardup.dedup``."""
    got = neardup.dedup(DOCS, id_field="id", **options)
    ids = got.ids
    kept = [i for i, k in zip(ids, got.keep) if k]
    removed = {ids[r]: ids[got.kept_row[r]] for r in np.flatnonzero(~got.keep).tolist()}
    return kept, removed


def from_table(rows: list[dict]) -> tuple[list[str], dict[str, str]]:
    kept = [r["id"] for r in rows if r["kept"]]
    return kept, {r["id"]: r["kept_id"] for r in rows if not r["kept"]}


def command(tmp_path, capsys, options: dict) -> tuple[list[str], dict[str, str]]:
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    table = tmp_path / "clusters.jsonl"
    code, _, err = run(
        capsys, "dedup", source, "-o", tmp_path / "kept.jsonl", "--clusters", table, *flags(options)
    )
    assert code == 0, err
    kept_lines = (tmp_path / "kept.jsonl").read_text().splitlines()
    # Kept lines are the input's lines, byte for byte.
    assert kept_lines == [
        json.dumps(d) for d in DOCS if d["id"] in {json.loads(x)["id"] for x in kept_lines}
    ]
    return from_table([json.loads(x) for x in table.read_text().splitlines()])


def on_dask(options: dict) -> tuple[list[str], dict[str, str]]:
    frame = dd.from_pandas(pd.DataFrame(DOCS), npartitions=3)
    kept, table = neardup.dask.dedup(frame, id_field="id", clusters=True, **options)
    rows = table.compute().to_dict("records")
    assert kept.compute()["id"].tolist() == [r["id"] for r in rows if r["kept"]]
    return from_table(rows)


def oracle(options: dict) -> tuple[list[str], dict[str, str]] | None:
    """The brute-force answer of the verified options that keep the default stars (every pair
    at the threshold, in row order or by length): exact Jaccards of every pair."""
    if options.get("threshold", 0.8) is None or options.get("candidates") == "fingerprint":
        return None
    threshold = np.float32(options.get("threshold", 0.8))
    shingle = options.get("shingle", 3)
    texts = [d["text"] for d in DOCS]
    norm = [reference.normalize(t) for t in texts]
    n = len(texts)

    def near(c: int, s: int) -> float | None:
        if norm[c] == norm[s]:
            return 1.0
        j = np.float32(exact_jaccard(texts[c], texts[s], shingle))
        return float(j) if j >= threshold else None

    order = list(range(n))
    if options.get("keep") == "longest":
        order.sort(key=lambda r: -len(DOCS[r]["text"]))
    kept_row, _ = star_oracle(order, near)
    ids = [d["id"] for d in DOCS]
    kept = [ids[r] for r in range(n) if kept_row[r] == r]
    return kept, {ids[r]: ids[kept_row[r]] for r in range(n) if kept_row[r] != r}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_every_driver_gives_the_library_s_answer(tmp_path, capsys, name):
    options = OPTIONS[name]
    want = library(options)
    assert want[1], "the corpus has near-duplicates under every option"
    truth = oracle(options)
    if truth is not None:
        assert want == truth
    assert command(tmp_path, capsys, options) == want
    assert on_dask(options) == want


AGAINST_OPTIONS = {
    "defaults": {},
    "threshold 0.9": {"threshold": 0.9},
    "threshold 0.7 (below the postings': fingerprints)": {"threshold": 0.7},
    "k 4": {"k": 4},
    "no pair limit": {"max_pairs": None},
    "prefix candidates": {"candidates": "prefix"},
    "fingerprint candidates": {"candidates": "fingerprint"},
    "fingerprint candidates k 4": {"candidates": "fingerprint", "k": 4},
}


@pytest.mark.parametrize("name", list(AGAINST_OPTIONS))
def test_every_driver_agrees_against_an_index(tmp_path, capsys, name):
    options = AGAINST_OPTIONS[name]
    half = len(DOCS) // 2
    path = tmp_path / "a.ndx"
    DedupIndex.build([d["text"] for d in DOCS[:half]], path, ids=[d["id"] for d in DOCS[:half]])
    new = DOCS[half:]
    got = neardup.dedup(new, against=DedupIndex.open(path), id_field="id", **options)
    want = (
        [i for i, k in zip(got.ids, got.keep) if k],
        {i: d for i, k, d in zip(got.ids, got.keep, got.duplicate_of) if not k},
    )
    assert want[1] and any(got.in_index) and not all(got.in_index[~got.keep])

    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in new))
    table = tmp_path / "clusters.jsonl"
    code, _, err = run(
        capsys,
        "dedup",
        source,
        "--against",
        path,
        "--dry-run",
        "--clusters",
        table,
        *flags(options),
    )
    assert code == 0, err
    assert from_table([json.loads(x) for x in table.read_text().splitlines()]) == want

    from neardup.dask.against import dedup_against

    frame = dd.from_pandas(pd.DataFrame(new), npartitions=3)
    kept, rows = dedup_against(frame, str(path), id_field="id", clusters=True, **options)
    assert from_table(rows.compute().to_dict("records")) == want
    assert kept.compute()["id"].tolist() == want[0]
