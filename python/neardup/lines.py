"""Whole lines out of a byte stream, in blocks, in time linear in the input, with a bound on
the size of one line (one record).

A line longer than the bound is never held whole: once it passes the bound, the reader calls
``too_long`` (which raises to stop the job, or notes the line to skip it) and drops its bytes up
to its end, standing a blank line in its place so that later lines keep their numbers. This
also bounds a compressed input that inflates to one endless line (a gzip or zstd bomb).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from . import _core

__all__ = ["DEFAULT_MAX_RECORD_SIZE", "READ_SIZE", "line_blocks", "parse_size", "too_long_reason"]

#: The largest record (JSONL or CSV line, .txt file) read by default: 64 MiB, ten times a long
#: book, and what a job can afford to hold twice.
DEFAULT_MAX_RECORD_SIZE = 64 << 20
#: Bytes asked of the stream per read.
READ_SIZE = 1 << 22

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """A size in bytes from ``1048576``, ``64K``, ``256M``, ``1G`` or ``1GiB`` (binary units);
    ValueError for anything else or a size below 1."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"not a size: {text!r} (examples: 1048576, 64M, 1G)")
    size = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if size < 1:
        raise ValueError(f"a size must be at least 1 byte, got {text!r}")
    return size


def too_long_reason(limit: int) -> str:
    """What a record over ``limit`` bytes is told."""
    return f"record of more than {limit:,} bytes, over the record size limit (--max-record-size)"


def line_blocks(
    read: Callable[[int], bytes], max_record: int, too_long: Callable[[int], None]
) -> Iterator[tuple[int, bytes, int]]:
    """``(number of the first line, the lines joined by their ends without the last one,
    number of lines)`` for blocks of whole lines as ``read(size)`` returns them.

    Each byte is searched and copied a bounded number of times, however long its line, and at
    most about twice ``max_record`` bytes of one line are held. ``too_long(line number)`` is
    called for a line over ``max_record`` bytes, which is then read as blank.
    """
    # A line that a single read holds whole is at most size - 1 bytes, within the bound: only
    # lines spanning reads are measured.
    size = max(1, min(READ_SIZE, max_record + 1))
    lineno = 0
    parts: list[bytes] = []  # the start of the line in progress, one piece per read
    held = 0
    skipping = False  # dropping the rest of a line over the bound
    while True:
        data = read(size)
        if not data:
            if skipping or held:
                yield lineno + 1, b"" if skipping else b"".join(parts), 1
            return
        if skipping:
            end = data.find(b"\n")
            if end < 0:
                continue
            skipping = False
            data = data[end:]  # the dropped line's end stays, making it a blank line
        first_end = data.find(b"\n")
        if first_end < 0:
            parts.append(data)
            held += len(data)
            if held > max_record:
                too_long(lineno + 1)
                parts, held, skipping = [], 0, True
            continue
        cut = data.rfind(b"\n") + 1
        if parts:
            if held + first_end > max_record:
                too_long(lineno + 1)
                block = data[first_end : cut - 1]  # the long line, blank
            else:
                parts.append(data[: cut - 1])
                block = b"".join(parts)
            parts, held = [], 0
        else:
            block = data[: cut - 1]
        if cut < len(data):
            parts.append(data[cut:])
            held = len(data) - cut
        count = _core.newlines(block) + 1
        yield lineno + 1, block, count
        lineno += count
