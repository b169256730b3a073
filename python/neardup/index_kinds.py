"""The two kinds of index file, told by their first bytes, so that each command handed the other
kind names the command that reads it: a simhash index (``neardup index build -o NAME.sidx``, read
by ``index query`` and ``index add``) and a dedup index (``-o NAME.ndx``, read by ``neardup dedup
--against``)."""

from __future__ import annotations

import os

from .errors import IndexFormatError, InputError

#: The magic bytes of each kind (src/store/index_file.rs, src/store/dedup_index.rs).
SIMHASH_MAGIC = b"\x93NDUPIDX"
DEDUP_MAGIC = b"\x93NDUPDDX"


def kind_of(path: str) -> str | None:
    """``"simhash"``, ``"dedup"``, or None for anything else (a FIFO or device, never opened
    here, or a file that cannot be read: opening it for real then says why)."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return None
    return {SIMHASH_MAGIC: "simhash", DEDUP_MAGIC: "dedup"}.get(head)


def expect_simhash_index(path: str, command: str) -> None:
    """InputError when ``path`` is a dedup index, naming what reads it."""
    if kind_of(path) == "dedup":
        raise InputError(
            path,
            f"a dedup index, for `neardup dedup NEW --against {path}` (--update appends to it); "
            f"`neardup index {command}` reads a simhash index (`neardup index build -o NAME.sidx`)",
        )


def expect_dedup_index(path: str) -> None:
    """InputError when ``path`` is a simhash index, naming what reads it."""
    if kind_of(path) == "simhash":
        raise InputError(
            path,
            "a simhash index, for `neardup index query` and `index add`; --against takes a "
            "dedup index: build one with `neardup index build CORPUS -o NAME.ndx`",
        )


def simhash_index_error(path: str, err: IndexFormatError) -> IndexFormatError:
    """The error of :meth:`neardup.SimhashIndex.load` on ``path``: ``err``, or for a dedup
    index one that names what opens it."""
    return _wrong_kind(path, err, "dedup", "neardup.DedupIndex.open", "simhash")


def dedup_index_error(path: str, err: IndexFormatError) -> IndexFormatError:
    """The error of :meth:`neardup.DedupIndex.open` on ``path``: ``err``, or for a simhash
    index one that names what opens it."""
    return _wrong_kind(path, err, "simhash", "neardup.SimhashIndex.load", "dedup")


def _wrong_kind(
    path: str, err: IndexFormatError, found: str, reader: str, wanted: str
) -> IndexFormatError:
    if kind_of(path) != found:
        return err
    return IndexFormatError(f"{path}: a {found} index ({reader} reads it), not a {wanted} index")
