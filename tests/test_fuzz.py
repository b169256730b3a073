"""Fuzzing (issue 14): malformed JSONL, CSV and compressed inputs through the command, and
byte-mutated index files through load and query. Each ends in a result or a clear error
(status 2 / IndexFormatError), never a traceback, and leaves no temporary file.

Bounded for CI by NEARDUP_FUZZ_EXAMPLES (default 40 per test); ``python fuzz/run.py --minutes
10`` runs them longer, under a 4 GB address-space limit."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup
from neardup.cli import main

EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

WORDS = [
    "cats",
    "dogs",
    "the",
    "a",
    "café",
    "日本",
    "\ud800",
    "\\u0000",
    "",
    " ",
    "\t",
    "{",
    "}",
    '"',
    ",",
]

json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def jsonl_bytes(draw) -> bytes:
    lines = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            record = {
                "id": draw(json_value),
                "text": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=8))),
            }
            lines.append(
                json.dumps(record, ensure_ascii=draw(st.booleans())).encode(
                    "utf-8", "surrogatepass"
                )
            )
        elif kind == 1:
            lines.append(json.dumps({"text": draw(json_value), "id": i}).encode())
        elif kind == 2:
            lines.append(draw(st.binary(max_size=60)).replace(b"\n", b""))
        elif kind == 3:
            depth = draw(st.integers(1, 3000))
            lines.append(b'{"text": "x", "deep": ' + b"[" * depth + b"]" * depth + b"}")
        elif kind == 4:
            good = json.dumps({"id": i, "text": "a cat and a dog"}).encode()
            at = draw(st.integers(0, len(good) - 1))
            lines.append(
                good[:at] + draw(st.binary(max_size=3)).replace(b"\n", b"") + good[at + 1 :]
            )
        else:
            lines.append(b"")
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


@st.composite
def csv_bytes(draw) -> bytes:
    header = draw(
        st.sampled_from([b"id,text", b"\xef\xbb\xbfid,text", b"text", b"id,text,text", b"text,id"])
    )
    rows = [
        draw(st.binary(max_size=40)).replace(b"\n", b"")
        if draw(st.booleans())
        else b'%d,"%s"'
        % (
            i,
            " ".join(
                draw(st.lists(st.sampled_from(["cat", "dog", '""', ","]), max_size=6))
            ).encode(),
        )
        for i in range(draw(st.integers(0, 10)))
    ]
    return b"\n".join([header, *rows]) + b"\n"


def compress(data: bytes, how: str, cut: int | None) -> bytes:
    if how == "gz":
        data = gzip.compress(data)
    elif how == "zst":
        zstandard = pytest.importorskip("zstandard")
        data = zstandard.ZstdCompressor().compress(data)
    return data if cut is None else data[: cut % (len(data) + 1)]


def check_run(folder: Path, *args: str) -> None:
    code = main([*args])
    assert code in (0, 2), (code, args)
    assert not [p for p in os.listdir(folder) if "neardup-tmp" in p or ".tmp-" in p]


@SETTINGS
@given(
    data=jsonl_bytes(),
    how=st.sampled_from(["plain", "gz", "zst"]),
    cut=st.none() | st.integers(0, 10_000),
    on_error=st.sampled_from(["stop", "skip"]),
    limit=st.sampled_from(["64M", "40"]),
    verify=st.booleans(),
)
def test_jsonl_inputs_end_in_a_result_or_status_2(capsys, data, how, cut, on_error, limit, verify):
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        src = folder / ("x.jsonl" + {"plain": "", "gz": ".gz", "zst": ".zst"}[how])
        src.write_bytes(compress(data, how, cut))
        check_run(
            folder,
            "dedup",
            str(src),
            "-o",
            str(folder / "kept.jsonl"),
            "--clusters",
            str(folder / "c.jsonl"),
            "--on-error",
            on_error,
            "--max-record-size",
            limit,
            *([] if verify else ["--no-verify"]),
        )
        check_run(folder, "pairs", str(src), "-o", str(folder / "p.csv"), "--on-error", on_error)
        _, err = capsys.readouterr()
        assert "Traceback" not in err


@SETTINGS
@given(data=csv_bytes(), on_error=st.sampled_from(["stop", "skip"]))
def test_csv_inputs_end_in_a_result_or_status_2(capsys, data, on_error):
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        src = folder / "x.csv"
        src.write_bytes(data)
        check_run(folder, "dedup", str(src), "-o", str(folder / "kept.csv"), "--on-error", on_error)
        check_run(
            folder, "index", "build", str(src), "-o", str(folder / "i.ndx"), "--on-error", on_error
        )
        capsys.readouterr()


@pytest.fixture(scope="module")
def index_bytes(tmp_path_factory) -> bytes:
    fps = np.random.default_rng(5).integers(0, 2**63, 300, dtype=np.int64).astype(np.uint64)
    index = neardup.SimhashIndex(k=3, expected_size=300)
    index.add(fps, ids=np.arange(300) * 7)
    path = tmp_path_factory.mktemp("fuzz") / "i.ndx"
    index.save(path)
    return path.read_bytes()


@SETTINGS
@given(
    edits=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.none() | st.integers(0, 10**9),
    mmap=st.booleans(),
)
def test_mutated_index_files_load_or_raise_index_format_error(index_bytes, edits, cut, mmap):
    data = bytearray(index_bytes)
    for at, value in edits:
        data[at % len(data)] = value
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "i.ndx"
        path.write_bytes(bytes(data))
        try:
            index = neardup.SimhashIndex.load(path, mmap=mmap)
        except neardup.IndexFormatError:
            return
        # Loaded: the checksum and structure held, so it answers like any index.
        assert len(index) == 300
        index.query(12345)
        index.query_many(np.arange(10, dtype=np.uint64))
        assert 7 in index
        index.remove([7])
        index.add([1, 2], ids=[1, 2])
        index.save(Path(d) / "j.ndx")
