"""The last tracebacks of issue 14: lone surrogate ids, mixed-type ids into Parquet, closed
standard streams, each a clear message with status 2 (bad input) or 1 (output failed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from command import run


def lone_surrogate(tmp_path: Path) -> Path:
    path = tmp_path / "x.jsonl"
    path.write_text(
        '{"id": "\\ud800", "text": "one document about cats"}\n{"id": "b", "text": "one document about cats"}\n'
    )
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "neardup-tmp" in p.name)


@pytest.mark.parametrize(
    "args",
    [["dedup", "SRC", "--dry-run", "--clusters", "OUT.csv"], ["pairs", "SRC", "-o", "OUT.csv"]],
)
def test_a_lone_surrogate_id_into_csv_is_an_error_naming_the_file(tmp_path, capsys, args):
    src = lone_surrogate(tmp_path)
    out = tmp_path / "out.csv"
    code, _, err = run(capsys, *[src if a == "SRC" else out if a == "OUT.csv" else a for a in args])
    assert (
        code == 2
        and f"{out}: the value" in err
        and "lone surrogate" in err
        and "Traceback" not in err
    )
    if args[0] == "dedup":  # and the input line of the id
        assert err.startswith(f"neardup: {src}:1: its id cannot be written to {out}: "), err
    assert not out.exists() and leftovers(tmp_path) == []


def test_a_lone_surrogate_id_into_jsonl_is_written_escaped_as_read(tmp_path, capsys):
    src = lone_surrogate(tmp_path)
    out = tmp_path / "c.jsonl"
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--clusters", out)
    assert code == 0, err
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["\ud800", "b"]


def test_a_lone_surrogate_printed_is_an_error(tmp_path, capsys):
    code, _, err = run(capsys, "pairs", lone_surrogate(tmp_path))
    assert code == 2 and "not valid Unicode" in err


def test_mixed_type_ids_into_parquet_are_an_error_naming_the_file(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    src = tmp_path / "x.jsonl"
    src.write_text(
        '{"id": 1, "text": "a document about cats"}\n{"id": "b", "text": "a document about cats"}\n'
    )
    out = tmp_path / "c.parquet"
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--clusters", out)
    assert code == 2 and f"{out}: column 'id' cannot be written as Parquet" in err
    assert not out.exists() and leftovers(tmp_path) == []


def test_unsigned_64_bit_ids_are_written_to_parquet(tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    src = tmp_path / "x.jsonl"
    top = (1 << 64) - 1  # a uint64 id, past int64
    src.write_text(
        f'{{"id": {top}, "text": "a document about cats"}}\n'
        '{"id": 5, "text": "a document about cats"}\n'
    )
    out = tmp_path / "c.parquet"
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--clusters", out)
    assert code == 0, err
    table = pq.read_table(out).to_pydict()
    assert table["id"] == [top, 5] and table["kept_id"] == [top, top]


def test_a_parquet_table_takes_uint64_ids_after_int64_ones(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from neardup.io.outputs import TableWriter

    path = tmp_path / "t.parquet"
    writer = TableWriter(str(path), str(path), ["id"])
    writer.write({"id": [-1, 2]})  # int64
    writer.write({"id": [3]})
    writer.close()
    assert pq.read_table(path).to_pydict() == {"id": [-1, 2, 3]}
    path = tmp_path / "u.parquet"
    writer = TableWriter(str(path), str(path), ["id"])
    writer.write({"id": [(1 << 64) - 1]})  # uint64
    writer.write({"id": [7]})  # int64, cast
    writer.close()
    assert pq.read_table(path).to_pydict() == {"id": [(1 << 64) - 1, 7]}


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"{sys.executable} -m neardup {command}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_closed_standard_streams(tmp_path):
    (tmp_path / "x.jsonl").write_text(
        '{"id": 1, "text": "a document about cats"}\n{"id": 2, "text": "a document about cats"}\n'
    )
    done = shell("dedup x.jsonl --dry-run --clusters - >&-", tmp_path)
    assert done.returncode == 1 and "<stdout>: standard output is closed" in done.stderr
    done = shell("pairs x.jsonl >&-", tmp_path)
    assert done.returncode == 1 and "standard output is closed" in done.stderr
    done = shell("dedup - --dry-run <&-", tmp_path)
    assert done.returncode == 2 and "<stdin>: standard input is closed" in done.stderr
    # Outputs to files need no stdout: written, the report goes to stderr.
    done = shell("dedup x.jsonl -o kept.jsonl >&- <&-", tmp_path)
    assert done.returncode == 0 and "wrote kept.jsonl" in done.stderr
    assert len((tmp_path / "kept.jsonl").read_text().splitlines()) == 1
    done = shell("dedup x.jsonl -o kept2.jsonl 2>&-", tmp_path)
    assert done.returncode == 0 and len((tmp_path / "kept2.jsonl").read_text().splitlines()) == 1
    assert leftovers(tmp_path) == []


def test_non_utf8_arguments(tmp_path):
    name = b"\xff.jsonl"
    (tmp_path / name.decode("utf-8", "surrogateescape")).write_text(
        '{"id": 1, "text": "a document about cats"}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", name, "-o", b"\xfe.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (
        tmp_path / b"\xfe.jsonl".decode("utf-8", "surrogateescape")
    ).read_bytes() == b'{"id": 1, "text": "a document about cats"}\n'
    done = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", b"\xfd.jsonl", "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert (
        done.returncode == 2 and b"no such file" in done.stderr and b"Traceback" not in done.stderr
    )


# Files read for an option: --stopwords, index query --file, explain --files.


def limited(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``neardup ARGS`` in a child under a 2 GB address-space limit."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "neardup", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["dedup", "x.jsonl", "--dry-run", "--stopwords", "/dev/zero"],
        ["explain", "--files", "/dev/zero", "x.jsonl"],
        ["index", "query", "x.idx", "--file", "/dev/zero"],
    ],
)
def test_a_file_read_for_an_option_is_bounded(tmp_path, capsys, args):
    # /dev/zero was read whole: the command grew until it ran out of memory.
    lone_surrogate(tmp_path)
    assert run(capsys, "index", "build", tmp_path / "x.jsonl", "-o", tmp_path / "x.idx")[0] == 0
    done = limited(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr
        == "neardup: /dev/zero: more than 67,108,864 bytes, the most read of one such file\n"
    )


def test_index_query_reads_at_most_the_record_size_of_file(tmp_path, capsys):
    src = lone_surrogate(tmp_path)
    assert run(capsys, "index", "build", src, "-o", tmp_path / "x.idx")[0] == 0
    query = tmp_path / "q.txt"
    query.write_text("word " * 300)
    args = ["index", "query", tmp_path / "x.idx", "--file", query]
    assert run(capsys, *args)[0] == 0
    code, _, err = run(capsys, *args, "--max-record-size", "1K")
    assert (
        code == 2
        and err == f"neardup: {query}: more than 1,024 bytes, the most read of one such file\n"
    )


def test_a_stopword_file_that_is_not_utf8_is_an_error_naming_it(tmp_path, capsys):
    src = lone_surrogate(tmp_path)
    words = tmp_path / "words.txt"
    words.write_bytes(b"the\n\xff\n")
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--stopwords", words)
    assert code == 2 and err == f"neardup: {words}: invalid UTF-8 at byte 4\n", err


@pytest.mark.parametrize(
    "args",
    [
        ["dedup", "x.jsonl", "-o", "W.jsonl"],
        ["dedup", "x.jsonl", "--dry-run", "--clusters", "W.jsonl"],
        ["dedup", "x.jsonl", "--dry-run", "--report", "W.jsonl"],
        ["pairs", "x.jsonl", "-o", "W.jsonl"],
        ["fingerprint", "x.jsonl", "-o", "W.jsonl"],
        ["index", "build", "x.jsonl", "-o", "W.jsonl"],
        ["index", "build", "x.jsonl", "-o", "W.ndx"],
        ["index", "add", "W.idx", "x.jsonl"],
        ["tune", "x.jsonl", "--candidates", "fingerprint", "--plot", "W.png"],
    ],
)
def test_an_output_naming_the_stopword_file_is_refused(tmp_path, capsys, args):
    # The stopword file is an input too: index build -o WORDS --stopwords WORDS replaced it.
    lone_surrogate(tmp_path)
    name = next(a for a in args if a.startswith("W."))
    words = tmp_path / name
    words.write_text("the\nabout\n")
    before = words.read_bytes()
    link = tmp_path / f"link-{name}"
    link.symlink_to(words)
    given = [tmp_path / a if a in ("x.jsonl", name) else a for a in args]
    code, _, err = run(capsys, *given, "--stopwords", link)
    assert code == 2 and f"is the input (--stopwords {link}); neardup never overwrites" in err, err
    assert words.read_bytes() == before and leftovers(tmp_path) == []


def test_running_out_of_memory_says_so(tmp_path, capsys, monkeypatch):
    # A MemoryError without a message printed "neardup: ; no output written".
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("neardup.cli.options.open_input", exhausted)
    code, _, err = run(capsys, "dedup", lone_surrogate(tmp_path), "--dry-run")
    assert code == 1 and err == "neardup: out of memory; no output written\n", err


@pytest.mark.parametrize(
    "args",
    [
        ["dedup", "-", "-o", "x.jsonl"],
        ["dedup", "-", "--dry-run", "--clusters", "x.jsonl"],
        ["pairs", "-", "-o", "x.jsonl"],
        ["fingerprint", "-", "-o", "x.jsonl"],
    ],
)
def test_an_output_that_is_the_file_standard_input_reads_is_refused(tmp_path, args):
    # `neardup dedup - -o x.jsonl < x.jsonl` replaced x.jsonl by its kept documents, exit 0.
    src = tmp_path / "x.jsonl"
    src.write_text('{"id": 1, "text": "a document about cats"}\n' * 2)
    before = src.read_bytes()
    with src.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "neardup", *args],
            cwd=tmp_path,
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2 and (
        "x.jsonl: " in done.stderr and "is the input (standard input is this file)" in done.stderr
    ), done.stderr
    assert src.read_bytes() == before and leftovers(tmp_path) == []
    with src.open("rb") as stdin:  # another file read from stdin is fine
        done = subprocess.run(
            [sys.executable, "-m", "neardup", *[a.replace("x.jsonl", "y.jsonl") for a in args]],
            cwd=tmp_path,
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0 and (tmp_path / "y.jsonl").exists(), done.stderr


# Issue 30: the tracebacks and unclear messages of the second campaign.


def two_docs(tmp_path: Path, name: str = "x.jsonl", ids=(1, 2)) -> Path:
    path = tmp_path / name
    path.write_text(
        "".join(json.dumps({"id": i, "text": "a document about cats and dogs"}) + "\n" for i in ids)
    )
    return path


def test_a_string_view_parquet_column_is_read_and_written(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    if not hasattr(pa, "string_view"):
        pytest.skip("pyarrow without view types")
    src = tmp_path / "v.parquet"
    texts = ["a b c d e", "a b c d e", "x y z w v"]
    pq.write_table(pa.table({"id": [1, 2, 3], "text": pa.array(texts).cast(pa.string_view())}), src)
    assert run(capsys, "dedup", src, "-o", tmp_path / "o.parquet")[0] == 0
    assert pq.read_table(tmp_path / "o.parquet").column("text").to_pylist() == [texts[0], texts[2]]
    assert run(capsys, "fingerprint", src, "-o", tmp_path / "f.parquet")[0] == 0
    assert pq.read_table(tmp_path / "f.parquet").num_rows == 3


@pytest.mark.parametrize(
    "args", [["dedup", "SRC", "--dry-run", "--clusters", "OUT"], ["pairs", "SRC", "-o", "OUT"]]
)
def test_an_id_past_64_bits_into_parquet_is_an_error_naming_the_file(tmp_path, capsys, args):
    pytest.importorskip("pyarrow")
    src = two_docs(tmp_path, ids=(2**64, 1))
    out = tmp_path / "o.parquet"
    code, _, err = run(capsys, *[src if a == "SRC" else out if a == "OUT" else a for a in args])
    assert (
        code == 2
        and err.startswith(f"neardup: {out}: column ")
        and "does not fit in 64 bits" in err
    )
    assert "C long" not in err and leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["e.jsonl.gz", "e.jsonl.zst", "e.csv.gz"])
def test_an_empty_compressed_input_is_an_error_naming_it(tmp_path, capsys, name):
    (tmp_path / name).write_bytes(b"")
    code, _, err = run(capsys, "dedup", tmp_path / name, "--dry-run")
    assert code == 2 and err.startswith(f"neardup: {tmp_path / name}: truncated "), err


def test_an_edited_dedup_index_with_a_valid_checksum_is_an_index_format_error(tmp_path):
    import numpy as np

    import neardup
    from neardup import _core
    from neardup.dedup_index import _settings_bytes

    good = json.loads(_settings_bytes(neardup.Simhasher()))
    bad_settings = [
        b"not json",
        json.dumps({"format": "neardup-dedup-index", "hasher": {**good["hasher"], "bogus": 1}}),
        json.dumps({"format": "neardup-dedup-index", "hasher": {"shingle": 3}}),
        json.dumps({"format": "something else", "hasher": good["hasher"]}),
        json.dumps([1, 2]),
    ]
    empty = np.zeros(0, np.uint64)
    for n, meta in enumerate(bad_settings):
        path = tmp_path / f"m{n}.ndx"
        meta = meta if isinstance(meta, bytes) else meta.encode()
        # Written by the core: the checksum is valid, the contents are not.
        _core.DedupIndex.empty(16, 1, 3, 8, 0.8, False, meta).save_appended(
            str(path),
            empty,
            empty,
            np.zeros(0, np.uint32),
            np.zeros(0, np.uint32),
            np.zeros(0, np.int64),
        )
        with pytest.raises(neardup.IndexFormatError):
            neardup.DedupIndex.open(path)
    # A string id that is not UTF-8.
    path = tmp_path / "ids.ndx"
    meta = _settings_bytes(neardup.Simhasher())
    one, key = np.ones(1, np.uint64), np.ones(2, np.uint64)  # a content key: two 64-bit words
    _core.DedupIndex.empty(16, 1, 3, 8, 0.8, True, meta).save_appended(
        str(path), one, key, np.zeros(1, np.uint32), np.zeros(16, np.uint32), [b"\xff\xfe"]
    )
    with pytest.raises(neardup.IndexFormatError, match="not UTF-8"):
        neardup.DedupIndex.open(path)
    # A lone surrogate, as Python's "surrogatepass" writes one, is an id like any other.
    lone = "a\udc80".encode("utf-8", "surrogatepass")
    _core.DedupIndex.empty(16, 1, 3, 8, 0.8, True, meta).save_appended(
        str(path), one, key, np.zeros(1, np.uint32), np.zeros(16, np.uint32), [lone]
    )
    assert neardup.DedupIndex.open(path).ids == ["a\udc80"]
    # A compact sketch whose kept hashes are out of order (two 64-bit hashes, the larger first).
    words = np.zeros(16, np.uint32)
    words[:4] = [0, 2, 0, 1]
    _core.DedupIndex.empty(16, 1, 3, 8, 0.8, False, meta).save_appended(
        str(path), one, key, np.full(1, 2, np.uint32), words, np.zeros(1, np.int64)
    )
    with pytest.raises(neardup.IndexFormatError, match="out of order"):
        neardup.DedupIndex.open(path)
    words[:4] = [0, 1, 0, 2]  # in order, it opens
    _core.DedupIndex.empty(16, 1, 3, 8, 0.8, False, meta).save_appended(
        str(path), one, key, np.full(1, 2, np.uint32), words, np.zeros(1, np.int64)
    )
    assert len(neardup.DedupIndex.open(path)) == 1


def test_a_jsonl_byte_order_mark_is_taken_as_csv_takes_one(tmp_path, capsys):
    src = tmp_path / "bom.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + two_docs(tmp_path).read_bytes())
    out = tmp_path / "o.jsonl"
    assert run(capsys, "dedup", src, "-o", out)[0] == 0
    assert out.read_bytes() == two_docs(tmp_path).read_bytes().splitlines(keepends=True)[0]


def test_messages_quote_no_python_internals(tmp_path, capsys):
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"id": 1, "text": "a", "n": ' + "9" * 5000 + "}\n")
    code, _, err = run(capsys, "dedup", huge, "--dry-run")
    assert (
        code == 2
        and err
        == f"neardup: {huge}:1: a number of more than 4,300 digits, more than neardup reads\n"
    )
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        '{"id": 1, "text": "a b c"}\n{"id": 2, "text": "a b e"}\n{"id": "x", "text": "a b d"}\n'
    )
    code, _, err = run(capsys, "index", "build", mixed, "-o", tmp_path / "m.ndx")
    assert code == 2 and err.startswith(f"neardup: {mixed}:3: ids in 'id' must be all strings"), err


@pytest.mark.parametrize(
    "args",
    [
        ["dedup", "SRC", "--dry-run", "--report", "DIR.html"],
        ["dedup", "SRC", "-o", "DIR.jsonl"],
        ["index", "build", "SRC", "-o", "DIR.ndx"],
        ["index", "build", "SRC", "-o", "DIR.idx"],
        ["index", "add", "DIR.idx", "SRC"],
    ],
)
def test_a_folder_named_as_an_output_is_named_in_the_refusal(tmp_path, capsys, args):
    src = two_docs(tmp_path)
    named = [a for a in args if a.startswith("DIR")][0]
    folder = tmp_path / named
    folder.mkdir()
    code, _, err = run(capsys, *[src if a == "SRC" else folder if a == named else a for a in args])
    assert code == 2 and f"{folder}: " in err and "is a folder" in err, err
    assert "neardup-tmp" not in err and "Bad file descriptor" not in err
    assert folder.is_dir() and leftovers(tmp_path) == []


def test_a_lone_surrogate_on_dask_names_what_it_is_and_where_it_can_go(tmp_path, capsys):
    # Issue 48: Dask keeps text as Arrow strings, whose conversion raised an encoding error
    # without a message: "neardup: x.jsonl: " and nothing more. One machine takes the file.
    pytest.importorskip("distributed")
    source = lone_surrogate(tmp_path)
    for clusters in ([], ["--clusters", tmp_path / "c.parquet"]):
        args = ["dedup", source, "-o", tmp_path / "kept.jsonl", "--workers", "1", *clusters]
        code, _, err = run(capsys, *args)
        assert code == 2, err
        assert err.splitlines()[-1] == (
            f"neardup: {source}: a value is not valid Unicode (a lone surrogate, which JSON's "
            "\\ud800 escape can hold), and Dask keeps text as Arrow strings, which cannot hold "
            "it; deduplicate it on one machine (without --workers or --scheduler), with .jsonl "
            "outputs"
        ), err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl"]
    code, _, err = run(capsys, "dedup", source, "-o", tmp_path / "kept.jsonl", "--quiet")
    assert code == 0, err
    assert (tmp_path / "kept.jsonl").read_text().splitlines() == source.read_text().splitlines()[:1]
