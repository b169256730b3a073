"""The neardup command run in-process, as the command's tests run it."""

from __future__ import annotations

import io
import sys

from neardup.cli import main


def run(capsys, *args, stdin: bytes | None = None, monkeypatch=None) -> tuple[int, str, str]:
    """(status, stdout, stderr) of ``neardup ARGS``; ``stdin`` (with ``monkeypatch``) is what it reads."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err
