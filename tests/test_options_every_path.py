"""Every option reaches every path, or is refused naming the path: ``max_pairs``/``--max-pairs``
(0 on the command line: no limit, on every command), ``shingle``/``--shingle``, ``progress``
and ``--candidates``, on one machine and against a dedup index, from the library and the
command; the Dask command's refusals (checked before any cluster starts)."""

from __future__ import annotations

import json
import random

import pytest

import neardup
from command import run
from neardup import DedupIndex, TooManyPairsError


def families(seed: int, n: int = 40) -> list[str]:
    """Texts of 14 words and variants of each with one word replaced: near-duplicate pairs (and
    candidate pairs within k) by construction."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("klmnoprstu") for _ in range(rng.randint(3, 7))) for _ in range(400)
    ]
    docs = []
    for _ in range(n):
        base = [rng.choice(vocab) for _ in range(14)]
        docs.append(" ".join(base))
        for _ in range(2):
            words = list(base)
            words[rng.randrange(14)] = rng.choice(vocab)
            docs.append(" ".join(words))
    return docs


@pytest.fixture
def split(tmp_path):
    """(an index of the first half of a corpus of families, the second half as dicts with ids,
    the index's path)."""
    docs = families(7)
    half = len(docs) // 2
    index = DedupIndex.build(docs[:half], tmp_path / "a.ndx")
    new = [{"id": f"n{i}", "text": t} for i, t in enumerate(docs[half:])]
    return index, new, tmp_path / "a.ndx"


def write_jsonl(path, docs) -> None:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))


# -- the library --------------------------------------------------------------------------------


def test_against_honours_max_pairs(split):
    index, new, _ = split
    free = neardup.dedup(new, against=index, max_pairs=None)
    assert free.n_removed > 0  # the corpus has pairs to find
    with pytest.raises(TooManyPairsError):
        neardup.dedup(new, against=index, max_pairs=0)
    # The default limit is far above this corpus: the same answer as no limit.
    assert neardup.dedup(new, against=index).keep.tolist() == free.keep.tolist()


def test_against_refuses_a_shingle_other_than_the_index_s_even_the_default(tmp_path):
    docs = families(3, n=6)
    index = DedupIndex.build(docs, tmp_path / "five.ndx", shingle=5)
    assert index.shingle == 5
    with pytest.raises(ValueError, match="5-word shingles"):
        neardup.dedup(docs, against=index, shingle=3)  # the default, given explicitly
    # Left out, the index's shingle is used.
    assert neardup.dedup(docs, against=index).n_kept == 0


def test_against_shows_progress_when_asked(split, capsys):
    index, new, _ = split
    neardup.dedup(new, against=index, progress=True)
    assert "neardup dedup against" in capsys.readouterr().err
    neardup.dedup(new, against=index)
    assert "neardup dedup against" not in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress"):
        neardup.dedup(new, against=index, progress="yes")


# -- the command --------------------------------------------------------------------------------


@pytest.mark.parametrize("against", [False, True], ids=["one machine", "against"])
def test_max_pairs_zero_means_no_limit_and_one_is_a_limit(split, tmp_path, capsys, against):
    _, new, path = split
    source = tmp_path / "new.jsonl"
    write_jsonl(source, new)
    extra = ["--against", path] if against else ["--candidates", "fingerprint"]
    code, _, err = run(capsys, "dedup", source, "--dry-run", "--max-pairs", "1", *extra)
    assert code == 2 and "pairs" in err, err
    code, _, err = run(capsys, "dedup", source, "--dry-run", "--json", "--max-pairs", "0", *extra)
    assert code == 0, err
    code, out_default, _ = run(capsys, "dedup", source, "--dry-run", "--json", *extra)
    code0, out_zero, _ = run(
        capsys, "dedup", source, "--dry-run", "--json", "--max-pairs", "0", *extra
    )
    assert code == code0 == 0
    kept = {
        key: json.loads(out)["kept"] for key, out in (("default", out_default), ("0", out_zero))
    }
    assert kept["default"] == kept["0"] < len(new)


def test_max_pairs_zero_means_no_limit_in_pairs_too(tmp_path, capsys):
    source = tmp_path / "all.jsonl"
    write_jsonl(source, [{"text": t} for t in families(5)])
    code, _, err = run(capsys, "pairs", source, "--max-pairs", "0", "--k", "16")
    assert code == 0, err
    code, _, err = run(capsys, "pairs", source, "--max-pairs", "1", "--k", "16")
    assert code == 2 and "--max-pairs" in err


def test_against_refuses_another_shingle_on_the_command_line(split, tmp_path, capsys):
    _, new, path = split
    source = tmp_path / "new.jsonl"
    write_jsonl(source, new)
    code, _, err = run(capsys, "dedup", source, "--against", path, "--dry-run", "--shingle", "5")
    assert code == 2 and "3-word shingles" in err and "--shingle" in err, err
    code, _, err = run(capsys, "dedup", source, "--against", path, "--dry-run", "--shingle", "3")
    assert code == 0, err


@pytest.mark.parametrize("dask", [False, True], ids=["one machine", "dask"])
def test_an_index_without_postings_refuses_prefix_candidates_on_every_driver(
    split, tmp_path, capsys, dask
):
    _, new, _ = split
    plain = tmp_path / "plain.ndx"
    DedupIndex.build([d["text"] for d in new], plain, candidates="fingerprint")
    source = tmp_path / "new.jsonl"
    write_jsonl(source, new)
    on = ["--workers", "2", "-o", tmp_path / "kept"] if dask else ["--dry-run"]
    code, _, err = run(capsys, "dedup", source, "--against", plain, "--candidates", "prefix", *on)
    assert code == 2 and "no prefix postings" in err and "plain.ndx" in err, err
    assert not (tmp_path / "kept").exists()
    # Left out, the index's own candidates: fingerprints.
    code, _, err = run(capsys, "dedup", source, "--against", plain, *on)
    assert code == 0, err


def test_a_file_stays_a_file_on_dask_compressed_as_named_and_byte_for_byte(tmp_path, capsys):
    import gzip

    source = tmp_path / "in.jsonl"
    # Records written with their own spacing and an extra field: kept lines are copied as read.
    source.write_text(
        "".join(
            f'{{"text": {json.dumps(t)},   "id": {i}, "extra": [1, 2]}}\n'
            for i, t in enumerate(families(2, n=30))
        ),
        encoding="utf-8",
    )
    got = {}
    for name, engine in (("one", []), ("dask", ["--workers", "2"])):
        kept, clusters = tmp_path / f"{name}.jsonl.gz", tmp_path / f"{name}.csv.gz"
        code, out, err = run(capsys, "dedup", source, *engine, "-o", kept, "--clusters", clusters)
        assert code == 0, err
        assert kept.is_file() and clusters.is_file()  # files, not folders
        got[name] = (gzip.decompress(kept.read_bytes()), gzip.decompress(clusters.read_bytes()))
        assert f"wrote {kept}" in out or str(kept) in out
    assert got["dask"] == got["one"]
    lines = source.read_bytes().splitlines(keepends=True)
    assert set(got["one"][0].splitlines(keepends=True)) <= set(lines)
    # A folder is written when one is named; a file of another format than the rows is refused.
    assert run(capsys, "dedup", source, "--workers", "2", "-o", f"{tmp_path / 'parts'}/")[0] == 0
    parts = sorted((tmp_path / "parts").iterdir())
    assert b"".join(p.read_bytes() for p in parts) == got["one"][0]
    code, _, err = run(capsys, "dedup", source, "--workers", "2", "-o", tmp_path / "k.parquet")
    assert code == 2 and "k.parquet" in err and "jsonl" in err, err
