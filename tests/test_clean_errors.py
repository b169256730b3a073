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
