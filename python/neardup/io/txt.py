"""Folders of .txt files, one document a file, named by their paths (``--format txt``; one
file given with it is one document)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import InputError
from ..lines import too_long_reason
from .base import Chunk, FingerprintWriter, Input, replay_chunks
from .listing import listing, read_as
from .outputs import TableWriter, hex_fingerprints


class TxtInput(Input):
    """A folder of .txt files, one document per file, in order of their relative paths; ids are
    the relative paths. Positions are file numbers (from 1); messages name the file and line."""

    unit = "file"

    def __init__(
        self,
        path: str,
        *,
        root: str | None = None,
        files: list[str] | None = None,
        **options: Any,
    ) -> None:
        options.setdefault("format", "txt")
        super().__init__(path, **options)
        self.id_field = "path"
        # The files, relative to ``root``, when a folder's or a glob's listing gave them.
        self._files: list[str] | None = files
        # A single file (--format txt) is a folder of one: its own folder, and its name as id.
        if root is None:
            root = path if not os.path.isfile(path) else (os.path.dirname(path) or ".")
        self.root = root

    @property
    def size(self) -> int | None:
        try:
            return sum(os.path.getsize(os.path.join(self.root, f)) for f in self.files())
        except OSError:  # a file gone or unreadable: the read says which, at its turn
            return None

    def files(self) -> list[str]:
        if self._files is None and os.path.isfile(self.path):
            self._files = [os.path.basename(self.path)]
        if self._files is None:
            if not os.path.isdir(self.path):
                raise InputError(self.name, "no such file or folder")
            _, found = listing(self.path)
            self._files = [f for f in found if read_as(f, "txt")[0] == "txt"]
        return self._files

    def error_at(self, position: int, reason: str) -> InputError:
        return InputError(os.path.join(self.root, self.files()[position - 1]), reason)

    def bad(
        self, position: int | None, reason: str, line: int | None = None, relpath: str | None = None
    ) -> None:
        name = os.path.join(self.root, relpath) if relpath else self.name
        err = InputError(name, reason, line, "line")
        if self.on_error != "skip" or position is None:
            raise err
        self.errors.append(err)
        self._skipped.add(position)

    def skip(self, position: int, reason: str) -> None:
        self.bad(position, reason, None, self.files()[position - 1])

    def _read(self, number: int, relpath: str) -> str | None:
        full = os.path.join(self.root, relpath)
        try:
            with open(full, "rb") as f:
                data = f.read(self.max_record_size + 1)
        except OSError as err:
            self.bad(number, f"cannot read: {(err.strerror or str(err)).lower()}", None, relpath)
            return None
        if len(data) > self.max_record_size:
            self.bad(number, too_long_reason(self.max_record_size), None, relpath)
            return None
        self.bytes_read += len(data)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            line = data.count(b"\n", 0, err.start) + 1
            col = err.start - (data.rfind(b"\n", 0, err.start) + 1)
            self.bad(
                number,
                f"invalid UTF-8: byte 0x{data[err.start]:02x} at column {col + 1} cannot start or continue a character",
                line,
                relpath,
            )
            return None

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        self.bytes_read = 0
        for number, relpath in enumerate(self.files(), 1):
            if again and number in self._skipped:
                continue
            text = self._read(number, relpath)
            if text is None:
                continue
            doc: Any = text if self.fields is None else {self.fields[0]: text}
            yield number, doc, relpath, relpath if raw else None

    def replay(self, keep=None, output=None, output_compression=None, ids=False, texts=frozenset()):  # type: ignore[no-untyped-def]
        def docs() -> Iterator[tuple[int, Any, str | None]]:
            number = 0
            for position, relpath in enumerate(self.files(), 1):
                if position in self._skipped:
                    continue
                if output is not None and keep is not None and keep[number]:
                    target = os.path.join(output, relpath)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    shutil.copyfile(os.path.join(self.root, relpath), target)
                text = None
                if number in texts:
                    with open(os.path.join(self.root, relpath), "rb") as f:
                        text = f.read().decode("utf-8")
                yield number, relpath, text
                number += 1

        yield from replay_chunks(docs(), texts)

    def fingerprint_writer(self, tmp: str, output: str, column: str) -> FingerprintWriter:
        """(write one chunk with its fingerprints, close): a table of ids and fingerprints."""
        table = TableWriter(tmp, output, ["id", column])

        def write_table(chunk: Chunk, fps: np.ndarray) -> None:
            table.write(
                {
                    "id": chunk.raw,
                    column: fps if table.format == "parquet" else hex_fingerprints(fps),
                }
            )

        return write_table, table.close
