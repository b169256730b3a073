"""A newcomer's first day (issue 29): the tools agree with the default, the API and the command
name documents the same way, text files and header-only CSV read as the docs say, each index
command names the other kind, numbers print one way, and the errors say what to do."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import neardup
from command import run

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "python" / "neardup" / "data" / "debian-sample.jsonl.gz"


@pytest.fixture(scope="module")
def sample() -> list[dict]:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# -- explain decides as dedup does -------------------------------------------------------------


def test_explain_gives_dedups_verdict_and_jaccard_on_pairs_dedup_judged(sample, capsys):
    texts = [doc["text"] for doc in sample]
    result = neardup.dedup(texts)
    removed = np.flatnonzero(~result.keep)
    # The removals farther apart than the old "default k=3" of explain, and the nearest pairs
    # of documents that the dedup kept both of (so not near-duplicates of each other).
    far = [r for r in removed if result.distance[r] > 3][:4]
    assert len(far) == 4
    for row in far:
        kept = result.kept_row[row]
        code, out, _ = run(capsys, "explain", texts[kept], texts[row])
        assert code == 0
        # prefix candidates: the decision is the Jaccard's, not a distance within k
        assert "near-duplicates: dedup removes B (prefix candidates, threshold 0.8, " in out
        assert "k=" not in out
        assert f"Jaccard {result.jaccard[row]:.4f}" in out
    kept_rows = np.flatnonzero(result.keep)
    i, j, d = neardup.find_all(result.fingerprints[kept_rows], k=8)
    assert len(i) >= 3
    for a, b in list(zip(kept_rows[i], kept_rows[j]))[:3]:
        code, out, _ = run(capsys, "explain", texts[a], texts[b])
        expected = neardup.jaccard(texts[a], texts[b])
        assert expected < 0.8
        assert code == 0 and "not near-duplicates: dedup keeps both" in out
        assert f"Jaccard {expected:.4f}" in out


def test_explain_takes_dedups_settings(capsys):
    a = "the quick brown fox jumps over the lazy dog"
    b = "the quick brown fox jumped over the lazy dog"  # Jaccard 0.4, 5 bits apart
    code, out, _ = run(capsys, "explain", a, b, "--threshold", "0.4")
    assert code == 0 and "Jaccard 0.4000; near-duplicates: dedup removes B" in out
    code, out, _ = run(capsys, "explain", a, b, "--no-verify", "--k", "4")
    assert (
        code == 0
        and "not near-duplicates: dedup keeps both (fingerprints alone: distance 5 > k=4)" in out
    )
    code, out, _ = run(capsys, "explain", a, b, "--no-verify", "--k", "5")
    assert (
        code == 0
        and "near-duplicates: dedup removes B (fingerprints alone: distance 5 <= k=5)" in out
    )


# -- one id rule -------------------------------------------------------------------------------

TEXTS = ["the cat sat on the mat today", "dogs bark at night", "The cat sat on the mat today!"]


def test_the_api_takes_the_id_field_or_column_as_the_command_does(tmp_path, capsys):
    ids = ["x", "y", "z"]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, TEXTS)))
    code, _, _ = run(capsys, "dedup", path, "--dry-run", "--clusters", tmp_path / "c.csv")
    assert code == 0
    command = pd.read_csv(tmp_path / "c.csv")["kept_id"].tolist()
    assert command == ["x", "y", "x"]
    frame = pd.DataFrame({"id": ids, "text": TEXTS})
    inputs = {
        "dicts": [{"id": i, "text": t} for i, t in zip(ids, TEXTS)],
        "pandas": frame,
        "polars": pytest.importorskip("polars").from_pandas(frame),
        "pyarrow": pytest.importorskip("pyarrow").Table.from_pandas(frame),
        "datasets": pytest.importorskip("datasets").Dataset.from_pandas(frame),
    }
    for name, docs in inputs.items():
        assert neardup.dedup(docs).kept_id.tolist() == command, name
    # Without an id field: row numbers, on both sides (a pandas frame: its index).
    assert neardup.dedup([{"text": t} for t in TEXTS]).kept_id.tolist() == [0, 1, 0]
    assert neardup.dedup(frame[["text"]].set_axis([5, 6, 7])).kept_id.tolist() == [5, 6, 5]


def test_a_later_document_without_the_id_field_is_named():
    docs = [{"id": "a", "text": TEXTS[0]}, {"text": TEXTS[1]}]
    with pytest.raises(KeyError, match=r"docs\[1\] has no field 'id' \(the id; id_field="):
        neardup.dedup(docs)


def test_a_frame_with_an_id_column_joins_back_and_polars_filters_by_the_mask():
    df = pd.DataFrame({"id": [10, 11, 12], "text": TEXTS}, index=["p", "q", "r"])
    result = neardup.dedup(df)
    joined = df.join(result.to_pandas().drop(columns="id"))
    assert joined["kept_id"].tolist() == [10, 11, 10] and joined.index.tolist() == ["p", "q", "r"]
    pl = pytest.importorskip("polars")
    frame = pl.from_pandas(df)
    assert frame.filter(neardup.dedup(frame).keep)["id"].to_list() == [10, 11]
    with pytest.raises(TypeError, match=r"a polars LazyFrame: collect it first"):
        neardup.dedup(frame.lazy())


def test_a_missing_text_says_it_is_missing_and_how_to_skip_it():
    df = pd.DataFrame({"text": [TEXTS[0], np.nan]})
    with pytest.raises(TypeError, match=r"docs\[1\] is missing \(NaN\).*dropna"):
        neardup.dedup(df)
    with pytest.raises(TypeError, match=r"docs\[1\]\['text'\] is missing \(None\)"):
        neardup.dedup([{"text": TEXTS[0]}, {"text": None}])
    assert neardup.dedup(df.dropna(subset=["text"])).keep.tolist() == [True]


# -- text files --------------------------------------------------------------------------------


def test_a_txt_file_is_one_document_per_line_written_back_byte_for_byte(
    tmp_path, capsys, monkeypatch
):
    lines = [b"the cat sat on the mat\r\n", b"dogs bark\n", b"The cat sat on the mat!\n", b"x"]
    src = tmp_path / "lines.txt"
    src.write_bytes(b"".join(lines))
    out, table = tmp_path / "kept.txt", tmp_path / "c.csv"
    code, _, err = run(capsys, "dedup", src, "-o", out, "--clusters", table)
    assert code == 0, err
    assert out.read_bytes() == lines[0] + lines[1] + lines[3]
    clusters = pd.read_csv(table)
    assert clusters["id"].tolist() == [0, 1, 2, 3] and clusters["kept_id"].tolist() == [0, 1, 0, 3]
    # The same from stdin with --format lines, and the same as the API on the lines' texts.
    code, stdout, _ = run(
        capsys,
        *("dedup", "-", "--format", "lines", "-o", "-", "-q"),
        stdin=src.read_bytes(),
        monkeypatch=monkeypatch,
    )
    assert code == 0 and stdout.encode() == out.read_bytes()
    texts = [line.rstrip(b"\r\n").decode() for line in lines]
    assert neardup.dedup(texts).kept_row.tolist() == [0, 1, 0, 3]
    code, _, err = run(capsys, "dedup", src, "-o", tmp_path / "kept.jsonl")
    assert code == 2 and "name it .txt" in err


def test_format_txt_reads_one_file_as_one_document(tmp_path, capsys):
    src = tmp_path / "one.txt"
    src.write_text("the cat sat on the mat\nThe cat sat on the mat!\n")
    code, _, err = run(
        capsys, "dedup", src, "--format", "txt", "--dry-run", "--clusters", tmp_path / "c.csv"
    )
    assert code == 0, err
    table = pd.read_csv(tmp_path / "c.csv")
    assert table["id"].tolist() == ["one.txt"] and table["kept"].tolist() == [True]


def test_a_header_without_the_text_column_is_refused_with_rows_or_without(tmp_path, capsys):
    for body in ("id,body\n", "id,body\n1,some text\n"):
        src = tmp_path / "h.csv"
        src.write_text(body)
        code, out, err = run(capsys, "dedup", src, "--dry-run")
        assert code == 2 and out == ""
        assert f"{src}:1: no column 'text' (columns: id, body)" in err
    src.write_text("id,text\n")  # a header and no rows: an empty corpus
    code, _, _ = run(capsys, "dedup", src, "--dry-run", "-q")
    assert code == 0


# -- the two index kinds -----------------------------------------------------------------------


def test_each_index_command_names_the_other_kind(tmp_path, capsys):
    ndx, sidx = tmp_path / "c.ndx", tmp_path / "c.sidx"
    assert run(capsys, "index", "build", "--sample", "-o", ndx, "-q")[0] == 0
    assert run(capsys, "index", "build", "--sample", "-o", sidx, "-q")[0] == 0
    for command in (["query", ndx, "--text", "x"], ["add", ndx, "--sample"]):
        code, _, err = run(capsys, "index", *command)
        assert code == 2 and "a dedup index, for `neardup dedup NEW --against" in err
        assert f"`neardup index {command[0]}` reads a simhash index" in err
    code, _, err = run(capsys, "dedup", "--sample", "--against", sidx, "--dry-run")
    assert code == 2 and "a simhash index, for `neardup index query`" in err
    assert "build one with `neardup index build CORPUS -o NAME.ndx`" in err
    with pytest.raises(neardup.IndexFormatError, match=r"a dedup index \(neardup.DedupIndex.open"):
        neardup.SimhashIndex.load(ndx)
    assert len(neardup.SimhashIndex.load(sidx)) == 3000
    with pytest.raises(
        neardup.IndexFormatError, match=r"a simhash index \(neardup.SimhashIndex.load"
    ):
        neardup.DedupIndex.open(sidx)


def test_a_simhash_index_says_its_ids_are_document_numbers(tmp_path, capsys):
    # The sample's ids are package names: a simhash index keeps integer ids, and says so.
    code, out, _ = run(capsys, "index", "build", "--sample", "-o", tmp_path / "c.sidx")
    assert code == 0
    assert "indexed 3,000 documents (k=3)" in out
    assert "ids are document numbers 0 to 2,999 (--id-field names a field of integer ids)" in out


# -- messages ----------------------------------------------------------------------------------


def test_numbers_print_with_thousands_separators(tmp_path, capsys):
    code, out, _ = run(capsys, "dedup", "--sample", "-o", tmp_path / "kept.jsonl.gz")
    assert code == 0
    assert out.startswith("3,000 documents") and "kept 2,391, removed 609" in out
    assert "(2,391 documents)" in out


def test_update_and_against_usage_errors_say_one_thing_each(tmp_path, capsys):
    code, _, err = run(capsys, "dedup", "--sample", "--update", "--dry-run")
    assert code == 2 and "--update appends the kept documents to a dedup index" in err
    assert "--report" not in err
    index = tmp_path / "c.ndx"
    assert run(capsys, "index", "build", "--sample", "-o", index, "-q")[0] == 0
    code, _, err = run(
        capsys, "dedup", "--sample", "--against", index, "--dry-run", "--report", tmp_path / "r"
    )
    assert code == 2 and "--against does not take --report" in err and "--update" not in err
    code, _, err = run(capsys, "dedup", "--sample", "--against", index, "--update", "--dry-run")
    assert code == 2 and "--dry-run writes nothing: drop --update or --dry-run" in err


def test_the_main_jobs_outputs_are_ignored_by_git():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for name in ("kept.jsonl.gz", "report.html", "site/index.html"):
        done = subprocess.run(
            ["git", "check-ignore", "-q", name], cwd=ROOT, capture_output=True, check=False
        )
        assert done.returncode == 0, name


# -- Dask reads a folder of JSONL --------------------------------------------------------------


def test_dask_reads_a_folder_of_jsonl_as_one_machine_does(tmp_path):
    pytest.importorskip("distributed")
    folder = tmp_path / "corpus"
    folder.mkdir()
    with gzip.open(SAMPLE, "rb") as f:
        lines = f.read().splitlines(keepends=True)[:600]
    for part in range(3):
        (folder / f"part-{part}.jsonl").write_bytes(b"".join(lines[part * 200 : part * 200 + 200]))
    command = [sys.executable, "-m", "neardup", "dedup", str(folder), "--workers", "2"]
    done = subprocess.run(
        [*command, "--clusters", str(tmp_path / "c.csv"), "-o", str(tmp_path / "kept")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "c.csv")  # one file, as on one machine
    expected = neardup.dedup([json.loads(line) for line in lines])
    assert table["kept_id"].tolist() == expected.kept_id.tolist()
    # The kept lines, byte for byte, in the input's order.
    written = b"".join(p.read_bytes() for p in sorted((tmp_path / "kept").iterdir()))
    assert written == b"".join(line for line, k in zip(lines, expected.keep) if k)
