"""One output file from the files of a folder or glob, when all are of one format: each file's
kept records are written to a temporary file of its own (by its format's reader, as for any
file, in a folder beside the output's temporary file), then appended to the output: JSONL and
text lines byte for byte, compressed as the output's name says; CSV and TSV with the first
file's header once (every file's header must be the same); Parquet batch by batch (every
file's schema must be the same)."""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
from typing import Any

from ..errors import InputError
from .base import pyarrow
from .outputs import RawWriter

__all__ = ["JOINABLE", "Joined"]

#: The formats whose files one output file can hold.
JOINABLE = ("jsonl", "lines", "csv", "tsv", "parquet")


class Joined:
    """The output ``path`` (a temporary file of ``name``, or ``-``), fed one part at a time:
    :meth:`part` names the temporary file a part writes, :meth:`append` adds it."""

    def __init__(self, path: str, name: str, fmt: str, compression: str | None) -> None:
        self.fmt, self.name = fmt, name
        # Beside the output's temporary file, named after it: a run killed with -9 leaves it to
        # the next run writing the same output, which removes it with that file.
        if path == "-":
            self._folder = tempfile.mkdtemp(prefix="neardup-parts-")
        else:
            self._folder = f"{path}.parts"
            os.mkdir(self._folder)
        self._raw = RawWriter(path, compression) if fmt != "parquet" else None
        self._path = path
        self._parquet: Any = None
        self._header: tuple[list[str], str] | None = None  # (names, the file that set them)

    @property
    def folder(self) -> str:
        """The folder of the parts (removed by :meth:`close`)."""
        return self._folder

    def part(self, number: int) -> str:
        return os.path.join(self._folder, f"{number}")

    def append(self, part: str, source: str) -> None:
        """Adds the part written at ``part`` (read from the input file ``source``)."""
        try:
            if self.fmt == "parquet":
                self._append_parquet(part, source)
            else:
                with open(part, "rb") as f:
                    if self.fmt in ("csv", "tsv"):
                        self._skip_header(f, source)
                    assert self._raw is not None
                    while data := f.read(1 << 20):
                        self._raw.write(data)
        finally:
            os.remove(part)

    def _skip_header(self, f: Any, source: str) -> None:
        """Reads the header a part begins with; the first part keeps it, the others drop it."""
        text = io.TextIOWrapper(f, encoding="utf-8", newline="")
        delimiter = "," if self.fmt == "csv" else "\t"
        header = next(csv.reader(text, delimiter=delimiter), None)
        text.detach()
        if header is None:
            f.seek(0)
            return
        line = io.StringIO()
        csv.writer(line, delimiter=delimiter).writerow(header)
        f.seek(len(line.getvalue().encode("utf-8")))
        if self._header is None:
            self._header = (header, source)
            f.seek(0)
        elif header != self._header[0]:
            raise InputError(
                source,
                f"its header ({', '.join(header)}) is not that of {self._header[1]} "
                f"({', '.join(self._header[0])}): one {self.fmt.upper()} file cannot hold both; "
                "name a folder as OUTPUT, which mirrors the input",
                1,
            )

    def _append_parquet(self, part: str, source: str) -> None:
        pa = pyarrow()
        pf = pa.parquet.ParquetFile(part)
        if self._parquet is None:
            self._parquet = pa.parquet.ParquetWriter(
                self._path, pf.schema_arrow, compression="zstd"
            )
            self._first = source
        elif not pf.schema_arrow.equals(self._parquet.schema, check_metadata=False):
            raise InputError(
                source,
                f"its columns ({pf.schema_arrow}) are not those of {self._first}: one Parquet "
                "file cannot hold both; name a folder as OUTPUT, which mirrors the input",
            )
        for batch in pf.iter_batches():
            self._parquet.write_batch(batch)
        pf.close()

    def close(self, done: bool) -> None:
        """Finishes the output (``done``), or lets it go after a failure (the job's own
        error is reported); the parts' folder is removed either way."""
        try:
            if self._raw is not None:
                self._raw.close() if done else self._raw.discard()
            elif self._parquet is not None:
                self._parquet.close()
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)
