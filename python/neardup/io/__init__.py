"""Corpora in and out: JSONL (plain, .gz, .zst), CSV/TSV, Parquet, folders and globs, stdin.

Inputs are read in chunks (at most ``CHUNK_DOCS`` documents or ``CHUNK_BYTES`` of text), so a job
holds one chunk of text at a time. A job that writes the kept documents reads its input a second
time (:meth:`Input.replay`); stdin is copied to a temporary file on the first pass for that.

Bad input stops the job with :class:`InputError`, whose message reads ``FILE:LINE: what is
wrong``; with ``on_error="skip"`` the bad records are skipped and listed in ``Input.errors``.

Outputs are written through :class:`Outputs`: each goes to a temporary file in its own directory
and is renamed into place only when the whole job has succeeded, so a failed or interrupted job
leaves no partial output behind.

One module a format (:mod:`.jsonl`, :mod:`.csv`, :mod:`.parquet`, :mod:`.txt`), each reading its
records, rewriting the kept ones and adding a fingerprint column; :mod:`.files` reads a folder or
glob of them as one corpus (:mod:`.listing`: which files); :mod:`.base` holds what they
share, :mod:`.compression` the .gz and .zst streams and :mod:`.outputs` the writers.
"""

from __future__ import annotations

import io
import os
from typing import Any

from ..errors import InputError, MissingExtraError
from .base import (
    AUTO,
    CHUNK_BYTES,
    CHUNK_DOCS,
    FORMATS,
    Chunk,
    Input,
    format_of,
    pyarrow,
)
from .compression import CompressedStreamError, compression_of, zstd_reader
from .csv import CsvInput, TsvInput
from .files import FilesInput, open_files
from .jsonl import NESTING_TOO_DEEP, JsonlInput
from .listing import is_glob
from .outputs import Outputs, RawWriter, TableWriter, hex_fingerprints, umask
from .parquet import ParquetInput
from .text_lines import LinesInput
from .txt import TxtInput

__all__ = [
    "AUTO",
    "CHUNK_BYTES",
    "CHUNK_DOCS",
    "FORMATS",
    "NESTING_TOO_DEEP",
    "Chunk",
    "CompressedStreamError",
    "CsvInput",
    "FilesInput",
    "Input",
    "InputError",
    "JsonlInput",
    "LinesInput",
    "MissingExtraError",
    "Outputs",
    "ParquetInput",
    "RawWriter",
    "TableWriter",
    "TsvInput",
    "TxtInput",
    "compression_of",
    "format_of",
    "hex_fingerprints",
    "open_input",
    "umask",
]

_INPUTS: dict[str, type[Input]] = {
    "jsonl": JsonlInput,
    "csv": CsvInput,
    "tsv": TsvInput,
    "parquet": ParquetInput,
    "txt": TxtInput,
    "lines": LinesInput,
}


def open_input(path: str, format: str | None = None, **options: Any) -> Input:
    """The :class:`Input` for a path (``"-"`` for stdin), its format from the extension unless
    given; a folder or a glob reads each of its files by its name (:mod:`.files`), and only the
    files of ``format`` when given. Raises :class:`InputError` when the format cannot be told."""
    if path != "-" and (os.path.isdir(path) or is_glob(path)):
        return open_files(path, format, open_input, **options)
    if format is None:
        format = "jsonl" if path == "-" else format_of(path)
        if format is None:
            if not os.path.exists(path):
                raise InputError(path, "no such file")
            raise InputError(
                path, f"cannot tell the format from the name; pass --format ({', '.join(FORMATS)})"
            )
    if format not in _INPUTS:
        raise InputError(path, f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    if format == "txt" and path == "-":
        raise InputError("<stdin>", "a folder of .txt files cannot come from stdin")
    if format == "parquet":
        pyarrow()
    compression = compression_of(path) if path != "-" and format != "parquet" else None
    if compression == "zstd":
        zstd_reader(io.BytesIO(b""))  # a clear message now if zstandard is missing
    return _INPUTS[format](path, format=format, compression=compression, **options)
