"""Folders and globs of files: every file read by the format its name says, none left out
without a word, and written back as a folder that mirrors them."""

from __future__ import annotations

import csv
import gzip
import io
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from command import run

WORDS = [f"w{i}" for i in range(400)]


def texts(n: int, seed: int = 7) -> list[str]:
    """``n`` texts of 40 random words; every fifth one a copy of the one before with one word
    changed (word 3-shingle Jaccard 35/41, about 0.85: a near-duplicate at 0.8)."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        if i % 5 == 4:
            words = out[-1].split()
            words[20] = f"x{i}"
            out.append(" ".join(words))
        else:
            out.append(" ".join(rng.choice(WORDS) for _ in range(40)))
    return out


def jsonl_lines(ids: list[str], docs: list[str]) -> list[bytes]:
    return [json.dumps({"id": i, "text": t}).encode() + b"\n" for i, t in zip(ids, docs)]


def mixed_folder(tmp_path):
    """A folder holding JSONL (plain and gzip), .txt, Parquet (in a subfolder) and a CSV with a
    header and no rows; returns (folder, the texts in the order the folder is read, lines)."""
    docs = texts(60)
    folder = tmp_path / "mixed"
    (folder / "sub").mkdir(parents=True)
    a = jsonl_lines([f"a{i}" for i in range(20)], docs[:20])
    (folder / "a.jsonl").write_bytes(b"".join(a))
    (folder / "b.txt").write_text(docs[20])
    (folder / "c.txt").write_text(docs[21])
    (folder / "e.csv").write_text("id,text\n")
    f = jsonl_lines([f"f{i}" for i in range(10)], docs[22:32])
    (folder / "f.jsonl.gz").write_bytes(gzip.compress(b"".join(f)))
    pq.write_table(pa.table({"text": docs[32:60]}), folder / "sub" / "d.parquet")
    return folder, docs, {"a.jsonl": a, "f.jsonl.gz": f}


def test_a_folder_is_read_by_every_format_it_holds(tmp_path, capsys):
    folder, docs, lines = mixed_folder(tmp_path)
    want = neardup.dedup(docs).keep.tolist()  # the corpus as one list, in the folder's order
    assert 0 < sum(want) < len(docs)
    out = tmp_path / "kept"
    code, stdout, err = run(
        capsys, "dedup", folder, "-o", out, "--clusters", tmp_path / "c.jsonl", "--json"
    )
    assert code == 0, err
    summary = json.loads(stdout)
    assert (summary["documents"], summary["kept"]) == (60, sum(want))
    assert (summary["skipped"], summary["errors"]) == (0, [])
    # Each file kept in its own format: JSONL lines byte for byte, gzip where the name says so.
    assert (out / "a.jsonl").read_bytes() == b"".join(
        line for line, k in zip(lines["a.jsonl"], want[:20]) if k
    )
    assert [(out / name).exists() for name in ("b.txt", "c.txt")] == want[20:22]
    assert gzip.decompress((out / "f.jsonl.gz").read_bytes()) == b"".join(
        line for line, k in zip(lines["f.jsonl.gz"], want[22:32]) if k
    )
    assert pq.read_table(out / "sub" / "d.parquet").column("text").to_pylist() == [
        t for t, k in zip(docs[32:60], want[32:60]) if k
    ]
    assert (out / "e.csv").read_bytes() == b"id,text\r\n"
    # Ids: a file's id field, a .txt file's path, else the document's number in the corpus.
    ids = [json.loads(line)["id"] for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert ids == [f"a{i}" for i in range(20)] + ["b.txt", "c.txt"] + [
        f"f{i}" for i in range(10)
    ] + list(range(32, 60))


def test_files_of_no_format_are_refused_or_counted_never_left_out_quietly(tmp_path, capsys):
    folder, docs, _ = mixed_folder(tmp_path)
    (folder / "notes.md").write_text("a note")
    (folder / ".hidden").write_text("passed over, as pyarrow and Dask do")
    code, out, err = run(capsys, "dedup", folder, "-o", tmp_path / "kept")
    assert (code, out) == (2, "")
    assert err == (
        f"neardup: {folder}: would leave out 1 file in no format neardup reads: "
        f"{folder / 'notes.md'} (neardup reads .jsonl, .ndjson, .csv, .tsv (each optionally .gz "
        "or .zst), .parquet, .pq, .txt); --format FORMAT reads only the files of one format, "
        "--on-error skip reads the others and lists these as skipped\n"
    )
    assert not (tmp_path / "kept").exists()

    code, out, _ = run(capsys, "dedup", folder, "--dry-run", "--json", "--on-error", "skip")
    summary = json.loads(out)
    assert code == 0 and (summary["documents"], summary["skipped"]) == (60, 1)
    assert summary["errors"] == [
        f"{folder / 'notes.md'}: not read: its name says no format neardup reads"
    ]
    code, out, _ = run(capsys, "dedup", folder, "--dry-run")
    assert code == 2

    # --format selects one format: the rest is counted, and named, as skipped.
    code, out, _ = run(capsys, "dedup", folder, "--format", "jsonl", "--dry-run", "--json")
    summary = json.loads(out)
    assert code == 0 and (summary["documents"], summary["skipped"]) == (30, 5)
    assert [e.split(": ")[0] for e in summary["errors"]] == [
        str(folder / name) for name in ("b.txt", "c.txt", "e.csv", "notes.md", "sub/d.parquet")
    ]
    code, out, _ = run(capsys, "dedup", folder, "--format", "jsonl", "--dry-run")
    assert code == 0 and "skipped 5 files:" in out and f"{folder / 'notes.md'}: not read" in out


def test_bad_records_of_a_folder_are_named_by_their_file_and_line(tmp_path, capsys):
    folder, _, _ = mixed_folder(tmp_path)
    with open(folder / "a.jsonl", "ab") as f:
        f.write(b'{"id": "bad", "text": 3}\n')
    code, _, err = run(capsys, "dedup", folder, "--dry-run")
    assert code == 2 and err.startswith(f"neardup: {folder / 'a.jsonl'}:21: field 'text' is")
    code, out, _ = run(capsys, "dedup", folder, "--dry-run", "--json", "--on-error", "skip")
    summary = json.loads(out)
    assert (summary["documents"], summary["skipped"]) == (60, 1)
    assert summary["errors"][0].startswith(f"{folder / 'a.jsonl'}:21: ")


def test_a_glob_is_read_as_its_files_and_written_as_a_folder_mirroring_them(tmp_path, capsys):
    folder, docs, lines = mixed_folder(tmp_path)
    jsonl = docs[:20] + docs[22:32]
    want = neardup.dedup(jsonl).keep.tolist()
    out = tmp_path / "kept"
    code, stdout, err = run(capsys, "dedup", folder / "*.jsonl*", "-o", out, "--json")
    assert code == 0, err
    assert json.loads(stdout)["documents"] == 30
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "f.jsonl.gz"]
    assert (out / "a.jsonl").read_bytes() == b"".join(
        line for line, k in zip(lines["a.jsonl"], want[:20]) if k
    )
    code, _, err = run(capsys, "dedup", folder / "**" / "*.parquet", "-o", tmp_path / "k2")
    assert code == 0 and (tmp_path / "k2" / "sub" / "d.parquet").exists(), err
    code, _, err = run(capsys, "dedup", folder / "*.xml", "--dry-run")
    assert (code, err) == (2, f"neardup: {folder / '*.xml'}: no file or folder matches this glob\n")


def test_the_output_of_a_folder_is_a_folder_outside_it(tmp_path, capsys):
    folder, _, _ = mixed_folder(tmp_path)
    code, _, err = run(capsys, "dedup", folder, "-o", tmp_path / "kept.jsonl")
    assert code == 2 and "OUTPUT of a folder or glob is a folder that mirrors it" in err
    code, _, err = run(capsys, "dedup", folder, "-o", folder / "kept")
    assert code == 2 and "lies inside the input folder" in err
    assert not (folder / "kept").exists()
    # A glob: an output file it matches (which a later run would read, or replace) is refused.
    code, _, err = run(capsys, "dedup", folder / "*.jsonl*", "-o", folder / "kept.jsonl")
    assert code == 2 and f"OUTPUT matches the input glob {folder / '*.jsonl*'}" in err
    code, _, err = run(capsys, "dedup", folder / "*.jsonl*", "-o", folder / "a.jsonl")
    assert code == 2 and not (folder / "a.jsonl.gz").exists()
    assert run(capsys, "dedup", folder / "*.jsonl*", "-o", folder / "kept", "-q")[0] == 0


def test_fingerprint_of_a_folder_is_a_table_naming_each_file_and_line(tmp_path, capsys):
    folder, docs, _ = mixed_folder(tmp_path)
    code, _, err = run(capsys, "fingerprint", folder, "-o", tmp_path / "f.csv", "-q")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "f.csv").read_text())))
    assert [(r["file"], r["position"]) for r in rows[:3]] == [
        ("a.jsonl", "1"),
        ("a.jsonl", "2"),
        ("a.jsonl", "3"),
    ]
    assert [r["file"] for r in rows[20:22]] == ["b.txt", "c.txt"]
    assert rows[-1]["file"].endswith("d.parquet") and rows[-1]["position"] == "28"
    hasher = neardup.Simhasher()
    assert [int(r["fingerprint"], 16) for r in rows] == [hasher.fingerprint(t) for t in docs]


def test_a_folder_of_parquet_files_on_one_machine_keeps_what_dask_keeps(tmp_path, capsys):
    docs = texts(90, seed=3)
    folder = tmp_path / "parts"
    folder.mkdir()
    for p in range(3):
        rows = range(30 * p, 30 * p + 30)
        pq.write_table(
            pa.table({"id": [f"d{r}" for r in rows], "text": [docs[r] for r in rows]}),
            folder / f"part.{p}.parquet",
        )
    code, _, err = run(capsys, "dedup", folder, "-o", tmp_path / "one", "-q")
    assert code == 0, err
    one = [
        i
        for p in range(3)
        for i in pq.read_table(tmp_path / "one" / f"part.{p}.parquet").column("id").to_pylist()
    ]
    code, _, err = run(capsys, "dedup", folder, "--workers", 2, "-o", tmp_path / "dask", "-q")
    assert code == 0, err
    on_dask = pq.read_table(tmp_path / "dask").column("id").to_pylist()
    want = neardup.dedup(docs).keep
    assert one == on_dask == [f"d{r}" for r in range(90) if want[r]]


def test_an_empty_csv_file_is_refused_as_it_has_no_text_column(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    code, out, err = run(capsys, "dedup", empty, "-o", tmp_path / "k.csv")
    assert (code, out) == (2, "")
    assert err == (
        f"neardup: {empty}:1: no header row (the file is empty): a CSV or TSV file begins with "
        "a header naming its columns, 'text' among them\n"
    )
    assert not (tmp_path / "k.csv").exists()
    # In a folder: the job stops at it, or, with --on-error skip, it is counted and named.
    folder, _, _ = mixed_folder(tmp_path)
    (folder / "e.csv").write_bytes(b"")
    code, _, err = run(capsys, "dedup", folder, "--dry-run")
    assert code == 2 and err.startswith(f"neardup: {folder / 'e.csv'}:1: no header row")
    code, out, _ = run(capsys, "dedup", folder, "--dry-run", "--json", "--on-error", "skip")
    summary = json.loads(out)
    assert (summary["documents"], summary["skipped"], summary["skipped_files"]) == (60, 1, 0)
    assert summary["errors"][0].startswith(f"{folder / 'e.csv'}:1: no header row")


def test_the_output_of_a_header_only_csv_keeps_its_header(tmp_path, capsys):
    src = tmp_path / "h.csv"
    src.write_text("id,text,source\n")
    code, _, err = run(capsys, "dedup", src, "-o", tmp_path / "k.csv", "-q")
    assert code == 0, err
    assert (tmp_path / "k.csv").read_bytes() == b"id,text,source\r\n"


def test_an_id_parquet_cannot_hold_suggests_the_one_format_that_can(tmp_path, capsys):
    src = tmp_path / "x.jsonl"
    src.write_text(
        '{"id": "a\\ud800", "text": "the cat sat on the mat today"}\n'
        '{"id": "b", "text": "the cat sat on the mat today!"}\n'
    )
    for name in ("c.parquet", "c.csv"):
        code, _, err = run(capsys, "dedup", src, "--dry-run", "--clusters", tmp_path / name)
        assert code == 2 and err.startswith(f"neardup: {src}:1: its id cannot be written to "), err
        assert "write a .jsonl table" in err and ".csv" not in err.replace(name, ""), err
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--clusters", tmp_path / "c.jsonl")
    assert code == 0, err
    assert json.loads((tmp_path / "c.jsonl").read_text().splitlines()[0])["id"] == "a\ud800"


@pytest.mark.parametrize("fmt", ["txt", "lines"])
def test_format_txt_and_lines_read_the_txt_files_of_a_folder(tmp_path, capsys, fmt):
    folder, _, _ = mixed_folder(tmp_path)
    (folder / "b.txt").write_text("one line\nanother line\nand a third\n")
    code, out, _ = run(capsys, "dedup", folder, "--format", fmt, "--dry-run", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["documents"] == (2 if fmt == "txt" else 4)
    assert summary["skipped"] == 4  # a.jsonl, e.csv, f.jsonl.gz and sub/d.parquet, each named


def test_on_dask_a_folder_whose_files_would_be_left_out_is_refused_naming_them(tmp_path, capsys):
    folder, _, _ = mixed_folder(tmp_path)
    code, _, err = run(capsys, "dedup", folder, "--workers", 1, "--dry-run")
    assert code == 2 and "this one holds csv, jsonl, parquet, txt" in err
    code, _, err = run(capsys, "dedup", folder, "--format", "jsonl", "--workers", 1, "--dry-run")
    assert code == 2 and "the jsonl files are read and 4 other files would be left out: " in err
    assert f"{folder / 'sub' / 'd.parquet'}" in err.replace("\n", "")


@pytest.mark.parametrize(
    "options",
    [["--keep", "longest"], ["--weighting", "idf"], ["--field", "text=1"], ["--no-verify"]],
)
def test_a_folder_gives_what_its_documents_in_one_file_give(tmp_path, capsys, options):
    folder, docs, _ = mixed_folder(tmp_path)
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps({"text": t}) + "\n" for t in docs))
    tables = []
    for src, name in ((folder, "folder.csv"), (one, "one.csv")):
        code, _, err = run(
            capsys, "dedup", src, *options, "--dry-run", "--clusters", tmp_path / name, "-q"
        )
        assert code == 0, err
        rows = list(csv.DictReader(io.StringIO((tmp_path / name).read_text())))
        tables.append([(r["cluster"], r["kept"], r["jaccard"], r["distance"]) for r in rows])
    assert tables[0] == tables[1] and len(tables[0]) == 60


def split_corpus(tmp_path, fmt: str, n: int = 45):
    """The texts of ``texts(n)`` in three files of ``fmt`` in a folder, and in one JSONL file."""
    docs = texts(n, seed=11)
    folder = tmp_path / "parts"
    folder.mkdir()
    third = n // 3
    for p in range(3):
        ids = [f"d{r}" for r in range(p * third, p * third + third)]
        got = [docs[r] for r in range(p * third, p * third + third)]
        if fmt == "jsonl":
            data = b"".join(jsonl_lines(ids, got))
            (folder / f"p{p}.jsonl.gz").write_bytes(gzip.compress(data) if p else data)
            if not p:
                (folder / "p0.jsonl.gz").rename(folder / "p0.jsonl")
        elif fmt == "csv":
            with open(folder / f"p{p}.csv", "w", newline="") as f:
                csv.writer(f).writerows([["id", "text"], *zip(ids, got)])
        else:
            pq.write_table(pa.table({"id": ids, "text": got}), folder / f"p{p}.parquet")
    one = tmp_path / "one.jsonl"
    one.write_bytes(b"".join(jsonl_lines([f"d{r}" for r in range(n)], docs)))
    return folder, docs, one


def test_a_folder_of_one_format_can_be_written_as_one_file_of_it(tmp_path, capsys):
    folder, docs, one = split_corpus(tmp_path, "jsonl")
    assert run(capsys, "dedup", one, "-o", tmp_path / "one_kept.jsonl", "-q")[0] == 0
    want = (tmp_path / "one_kept.jsonl").read_bytes()
    assert 0 < want.count(b"\n") < len(docs)
    code, _, err = run(capsys, "dedup", folder, "-o", tmp_path / "kept.jsonl.gz", "-q")
    assert code == 0, err
    assert gzip.decompress((tmp_path / "kept.jsonl.gz").read_bytes()) == want
    code, out, err = run(capsys, "dedup", folder / "*.jsonl*", "-o", "-", "-q")
    assert (code, out) == (0, want.decode()), err
    # A folder of several formats has no one file to go to.
    mixed, _, _ = mixed_folder(tmp_path)
    code, _, err = run(capsys, "dedup", mixed, "-o", tmp_path / "k.jsonl")
    assert code == 2 and "its files are of several formats, or .txt documents; name a folder" in err
    assert not (tmp_path / "k.jsonl").exists()


def test_csv_and_parquet_folders_written_as_one_file_keep_one_header(tmp_path, capsys):
    want = None
    for fmt in ("csv", "parquet"):
        root = tmp_path / fmt
        root.mkdir()
        folder, docs, one = split_corpus(root, fmt)
        if want is None:
            want = neardup.dedup(docs).keep.tolist()
        out = root / f"kept.{fmt}"
        code, _, err = run(capsys, "dedup", folder, "-o", out, "-q")
        assert code == 0, err
        if fmt == "csv":
            rows = list(csv.reader(io.StringIO(out.read_text())))
            assert rows[0] == ["id", "text"] and rows.count(["id", "text"]) == 1
            got = [r[0] for r in rows[1:]]
        else:
            got = pq.read_table(out).column("id").to_pylist()
        assert got == [f"d{r}" for r in range(len(docs)) if want[r]]
    # Files whose headers differ cannot share one: refused, naming the file, nothing written.
    other = tmp_path / "csv" / "parts" / "p2.csv"
    other.write_text(other.read_text().replace("id,text", "key,text", 1))
    code, _, err = run(capsys, "dedup", tmp_path / "csv" / "parts", "-o", tmp_path / "k2.csv")
    assert code == 2 and err.startswith(f"neardup: {other}:1: its header (key, text) is not that")
    assert not (tmp_path / "k2.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["csv", "parquet"]
