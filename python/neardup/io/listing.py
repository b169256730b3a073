"""Which files a folder or a glob holds, and the format each is read in.

A folder is walked (its subfolders too), a glob (``"parts/*.jsonl.gz"``, ``**`` for any depth)
expanded; names beginning with ``.`` or ``_`` are passed over, as pyarrow and Dask do
(``.DS_Store``, ``_SUCCESS``, ``_metadata``). The files come in the order of their paths, one
folder level at a time.
"""

from __future__ import annotations

import glob
import os

from ..errors import InputError
from ..paths import special_kind
from .base import format_of
from .compression import compression_of

__all__ = ["READ_NAMES", "is_glob", "listing", "read_as"]

#: What a name must end with to be read, for messages.
READ_NAMES = ".jsonl, .ndjson, .csv, .tsv (each optionally .gz or .zst), .parquet, .pq, .txt"


def is_glob(path: str) -> bool:
    """Whether ``path`` is a pattern (``*``, ``?``, ``[``) rather than a file that exists."""
    return path != "-" and glob.has_magic(path) and not os.path.exists(path)


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _key(relpath: str) -> list[str]:
    return relpath.split(os.sep)


def _walk(folder: str, root: str, found: list[str]) -> None:
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        for name in names:
            if _hidden(name):
                continue
            full = os.path.join(here, name)
            kind = special_kind(full)
            if kind is not None:  # reading it would wait for a writer, or never end
                raise InputError(full, f"is {kind}, not a file: a folder of documents holds files")
            found.append(os.path.relpath(full, root))


def listing(path: str) -> tuple[str, list[str]]:
    """(the folder the files' paths are relative to, the files of a folder or glob in order)."""
    found: list[str] = []
    if os.path.isdir(path):
        _walk(path, path, found)
        return path, sorted(found, key=_key)
    parts = os.path.normpath(path).split(os.sep)
    fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    root = os.sep.join(parts[:fixed]) or (os.sep if path.startswith(os.sep) else ".")
    if path.startswith(os.sep) and not root.startswith(os.sep):
        root = os.sep + root
    for match in glob.glob(path, recursive=True):
        if _hidden(os.path.basename(match.rstrip(os.sep))):
            continue
        if os.path.isdir(match):
            _walk(match, root, found)
            continue
        kind = special_kind(match)
        if kind is not None:
            raise InputError(match, f"is {kind}, not a file: a glob of documents names files")
        found.append(os.path.relpath(match, root))
    return root, sorted(set(found), key=_key)


def read_as(relpath: str, wanted: str | None) -> tuple[str | None, str]:
    """(the format a file of a folder is read in, or None and why it is not read), ``wanted``
    being ``--format``: a .txt file is one document (``txt``), or one a line with ``lines``."""
    named = format_of(relpath)
    if named == "lines":
        if wanted == "lines":
            return "lines", ""
        if compression_of(relpath) is not None:
            return None, (
                "not read: a compressed .txt file (a folder's .txt files are one document each, "
                "read as they are; --format lines reads each line of .txt files as a document)"
            )
        named = "txt"
    if named is None:
        return None, "not read: its name says no format neardup reads"
    if wanted is not None and named != wanted:
        return None, f"not read: a {named} file, and --format {wanted} reads only {wanted} files"
    return named, ""
