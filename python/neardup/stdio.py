"""The command's standard streams when the shell closed them (``neardup ... >&-``, ``<&-``):
Python then sets ``sys.stdout`` (or stdin, stderr) to None and ``print`` writes nowhere."""

from __future__ import annotations

import errno
import io
import os
import sys

__all__ = ["guard_closed", "is_closed"]


class _Closed(io.RawIOBase):
    """Standard output when it is closed: every write fails with EBADF naming it, so the command
    ends with status 1 instead of losing its output."""

    name = "<stdout>"

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        raise OSError(errno.EBADF, "standard output is closed", "<stdout>")

    @property
    def buffer(self) -> _Closed:
        return self

    def flush(self) -> None:
        pass


def is_closed(stream: object) -> bool:
    """Whether ``stream`` stands in for a closed standard output."""
    return isinstance(stream, _Closed)


def _reserve(fd: int, flags: int) -> bool:
    """Opens the null device on descriptor ``fd`` if it is closed (so that no file the command
    opens takes its number and receives what is meant for it); whether it was closed."""
    try:
        os.fstat(fd)
        return False
    except OSError:
        pass
    null = os.open(os.devnull, flags)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)
    return True


def guard_closed() -> None:
    """Stands in for closed standard streams: stdout that fails on write, stderr that discards
    (diagnostics have nowhere to go, and must not fail the job). A closed stdin is reported by
    the input that reads it. The closed descriptors are held by the null device."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        if _reserve(fd, flags) and fd == 0:
            sys.stdin = None  # type: ignore[assignment]
    if sys.stdout is None:
        sys.stdout = _Closed()  # type: ignore[assignment]
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False)  # the null device: see _reserve
