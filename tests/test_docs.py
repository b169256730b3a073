"""The shell blocks of README.md and docs/ run as written, each in a fresh folder.

The Python blocks are tests of their own (pytest-markdown-docs). A shell block runs in an empty
folder holding `corpus.jsonl.gz`, a copy of the Debian sample that ships with neardup (what
docs/index.md tells the reader to make), with this interpreter's `neardup` and `python3` first on
the PATH, under `bash -euo pipefail`. A block that must not run (an install, the whole test run, a
cluster) has a `<!-- notest: why -->` line just above it.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "python" / "neardup" / "data" / "debian-sample.jsonl.gz"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?P<before>[^\n]*)\n```(?P<info>[^\n]*)\n(?P<body>.*?)\n```\n", re.S)


def blocks(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, info string, body, the line above) of every fenced block of a page."""
    text = "\n" + path.read_text(encoding="utf-8")
    found, start = [], 0
    while (match := FENCE.search(text, start)) is not None:
        line = text.count("\n", 0, match.start("info")) - 1
        found.append((line, match["info"].strip(), match["body"], match["before"]))
        start = match.end() - 1
    return found


SHELL = [
    pytest.param(body, id=f"{path.name}:{line}")
    for path in PAGES
    for line, info, body, before in blocks(path)
    if info == "bash" and not before.startswith("<!-- notest")
]


def test_the_pages_have_shell_blocks_and_every_skipped_one_says_why():
    assert len(SHELL) >= 10
    for path in PAGES:
        for line, info, _, before in blocks(path):
            assert info in ("bash", "python", "text", "{.python notest}"), (path.name, line, info)
            if before.startswith("<!-- notest"):
                assert re.fullmatch(r"<!-- notest: \S.* -->", before), (path.name, line)


@pytest.mark.parametrize("body", SHELL)
def test_shell_block_runs(body, tmp_path):
    shutil.copy(SAMPLE, tmp_path / "corpus.jsonl.gz")
    shim = tmp_path / ".bin"  # `python3` in a block is this interpreter, `neardup` its command
    shim.mkdir()
    (shim / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (shim / "python3").chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(shim), str(Path(sys.executable).parent), env["PATH"]])
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", body],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"{body}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    )
