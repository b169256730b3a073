"""Long lines are read in linear time and bounded memory, and a record over --max-record-size
(a huge line, a gzip or zstd bomb, a huge .txt file) is an error at its line or skipped
(issue 14)."""

from __future__ import annotations

import gzip
import io
import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from command import run
from neardup import _core
from neardup.io import InputError, open_input
from neardup.lines import DEFAULT_MAX_RECORD_SIZE, line_blocks, parse_size


def lines_of(data: bytes, read_sizes: list[int], limit: int) -> tuple[list[bytes], list[int]]:
    """The lines line_blocks gives for `data` handed over in pieces, and the long lines."""
    stream = io.BytesIO(data)
    sizes = iter(read_sizes * (len(data) + 1))
    long: list[int] = []
    out: list[bytes] = []
    for first, block, count in line_blocks(
        lambda size: stream.read(min(size, next(sizes))), limit, long.append
    ):
        got = block.split(b"\n")
        assert len(got) == count and first == len(out) + 1
        out.extend(got)
    return out, long


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    trailing=st.booleans(),
    read_sizes=st.lists(st.integers(1, 50), min_size=1, max_size=5),
    limit=st.integers(1, 60),
)
def test_lines_are_those_of_a_split_with_long_ones_blank(lines, trailing, read_sizes, limit):
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    got, long = lines_of(data, read_sizes, limit)
    expected = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        expected = expected[:-1]  # the last end closes the last line; nothing is no line
    assert len(got) == len(expected)
    assert long == [n for n, line in enumerate(expected, 1) if len(line) > limit]
    assert got == [b"" if len(line) > limit else line for line in expected]


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.sampled_from([b"\n", b"a", b"\n\r", b"xy\n"]), st.integers(0, 600)),
        max_size=8,
    ),
    big=st.booleans(),
)
def test_newlines_count_as_bytes_count(pieces, big):
    # Runs of newlines longer than the core's byte-wide sums (255), and, with big, past the
    # length it counts without the GIL.
    data = b"".join(piece * n for piece, n in pieces) * (200 if big else 1)
    assert _core.newlines(data) == data.count(b"\n")


def test_parse_size():
    assert [parse_size(t) for t in ["1", "64M", "64MiB", "1g", "2 KB"]] == [
        1,
        64 << 20,
        64 << 20,
        1 << 30,
        2048,
    ]
    for bad in ["", "0", "-1", "1.5G", "lots"]:
        with pytest.raises(ValueError):
            parse_size(bad)
    assert DEFAULT_MAX_RECORD_SIZE == 64 << 20


def long_corpus(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.write(b'{"id": "a", "text": "the first short document"}\n')
        f.write(b'{"id": "b", "text": "' + b"word " * (size // 5) + b'"}\n')
        f.write(b'{"id": "c", "text": "the last short document"}\n')
    return path


def test_a_line_over_the_limit_stops_the_job_at_its_line(tmp_path, capsys):
    src = long_corpus(tmp_path / "x.jsonl", 3 << 20)
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--max-record-size", "1M")
    assert code == 2
    assert (
        f"{src}:2: record of more than 1,048,576 bytes, over the record size limit (--max-record-size)"
        in err
    )


def test_a_line_over_the_limit_is_skipped_on_both_passes(tmp_path, capsys):
    src = long_corpus(tmp_path / "x.jsonl", 3 << 20)
    out = tmp_path / "kept.jsonl"
    code, report, err = run(
        capsys,
        "dedup",
        src,
        "-o",
        out,
        "--max-record-size",
        "1M",
        "--on-error",
        "skip",
        "--clusters",
        tmp_path / "c.csv",
        "--json",
    )
    assert code == 0, err
    assert json.loads(report)["skipped"] == 1 and json.loads(report)["documents"] == 2
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["a", "c"]
    assert (tmp_path / "c.csv").read_text().splitlines()[1:] and "b," not in (
        tmp_path / "c.csv"
    ).read_text()


def test_a_line_within_the_limit_is_read_whole(tmp_path, capsys):
    src = long_corpus(tmp_path / "x.jsonl", 3 << 20)
    out = tmp_path / "kept.jsonl"
    code, _, err = run(capsys, "dedup", src, "-o", out, "--max-record-size", "4M", "--no-verify")
    assert code == 0, err
    assert out.read_bytes() == src.read_bytes()


def test_the_api_takes_the_limit(tmp_path):
    src = long_corpus(tmp_path / "x.jsonl", 3 << 20)
    with (
        open_input(str(src), max_record_size=1 << 20) as inp,
        pytest.raises(InputError, match=r"x\.jsonl:2: record of more"),
    ):
        list(inp.chunks())
    with open_input(str(src), max_record_size=1 << 20, on_error="skip") as inp:
        assert sum(len(c.docs) for c in inp.chunks()) == 2 and [e.line for e in inp.errors] == [2]
    with pytest.raises(ValueError, match="max_record_size"):
        open_input(str(src), max_record_size=0)


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_a_compression_bomb_ends_fast_in_an_error(tmp_path, capsys, suffix):
    """One line of 512 MB of zeros in a file of a few hundred KB: refused once the limit is
    passed, without inflating it all."""
    zeros = b"\0" * (1 << 20)
    src = tmp_path / f"bomb{suffix}"
    if suffix == ".jsonl.gz":
        with gzip.open(src, "wb", compresslevel=9) as f:
            for _ in range(512):
                f.write(zeros)
    else:
        zstandard = pytest.importorskip("zstandard")
        with open(src, "wb") as raw, zstandard.ZstdCompressor(level=19).stream_writer(raw) as f:
            for _ in range(512):
                f.write(zeros)
    assert src.stat().st_size < 1 << 20
    start = time.monotonic()
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--max-record-size", "8M")
    assert code == 2
    assert f"{src}:1: record of more than 8,388,608 bytes" in err
    assert time.monotonic() - start < 20  # the whole bomb takes far longer to inflate and parse


def test_a_csv_line_or_field_over_the_limit(tmp_path, capsys):
    src = tmp_path / "x.csv"
    src.write_text(
        "id,text\n1,first short document\n2," + "word " * 500_000 + "\n3,last short document\n"
    )
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--max-record-size", "1M")
    assert code == 2 and f"{src}:3: record of more than 1,048,576 bytes" in err
    code, _, err = run(
        capsys,
        "dedup",
        src,
        "-o",
        tmp_path / "kept.csv",
        "--max-record-size",
        "1M",
        "--on-error",
        "skip",
    )
    assert code == 0, err
    assert (tmp_path / "kept.csv").read_text().splitlines() == [
        "id,text",
        "1,first short document",
        "3,last short document",
    ]


def test_a_txt_file_over_the_limit(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("a short document")
    (folder / "b.txt").write_text("word " * 500_000)
    code, _, err = run(
        capsys, "fingerprint", folder, "-o", tmp_path / "f.csv", "--max-record-size", "1M"
    )
    assert code == 2 and "b.txt" in err and "record of more than 1,048,576 bytes" in err


def test_a_bad_size_is_a_usage_error(tmp_path, capsys):
    src = long_corpus(tmp_path / "x.jsonl", 100)
    code, _, err = run(capsys, "dedup", src, "--dry-run", "--max-record-size", "lots")
    assert code == 2 and "not a size" in err
