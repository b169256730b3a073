"""Text files of one document per line (``--format lines``; a ``.txt`` file), as ``sort -u`` and
``uniq`` read them: a document is a line without its line end, its id its row number, and the kept
lines are written back byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..lines import READ_SIZE, too_long_reason
from .base import Chunk, FingerprintWriter, Input, replay_chunks, utf8_reason
from .outputs import RawWriter, TableWriter, hex_fingerprints


class LinesInput(Input):
    """One document per line (plain, .gz, .zst, or stdin). Positions are line numbers (from 1);
    the documents have no id field, so the outputs name them by row number (from 0)."""

    def __init__(self, path: str, **options: Any) -> None:
        super().__init__(path, **options)
        self.id_field = None

    def _lines(self, again: bool) -> Iterator[tuple[int, bytes]]:
        """(line number, the line with its end) of every line; a line over the record size limit
        is reported (first pass) and read as empty, never held whole."""
        raw, stream = self._stream(again)
        limit = self.max_record_size
        number = 0
        try:
            while True:
                try:
                    line = stream.readline(limit + 1)
                except Exception as err:  # a truncated or corrupt compressed stream
                    raise self._read_error(err, stream is not raw) from None
                if not line:
                    break
                number += 1
                if len(line) > limit and not line.endswith(b"\n"):
                    if not again:
                        self.bad(number, too_long_reason(limit))
                    while line and not line.endswith(b"\n"):
                        line = stream.readline(READ_SIZE)
                    line = b"\n"
                if number % 4096 == 0 and raw.seekable():
                    self.bytes_read = raw.tell()
                yield number, line
        finally:
            self._close_streams(raw, stream)

    def _text(self, number: int, line: bytes, report: bool) -> str | None:
        try:
            return line.rstrip(b"\r\n").decode("utf-8")
        except UnicodeDecodeError as err:
            if report:
                self.bad(number, utf8_reason(line, err))
            return None

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        for number, line in self._lines(again):
            if again and number in self._skipped:
                continue
            text = self._text(number, line, not again)
            if text is None or number in self._skipped:
                continue
            doc: Any = text if self.fields is None else {self.fields[0]: text}
            yield number, doc, None, line if raw else None

    def replay(self, keep=None, output=None, output_compression=None, ids=False, texts=frozenset()):  # type: ignore[no-untyped-def]
        writer = RawWriter(output, output_compression) if output is not None else None

        def docs() -> Iterator[tuple[int, Any, str | None]]:
            number = 0
            for position, line in self._lines(True):
                if position in self._skipped:
                    continue
                if writer is not None and keep is not None and keep[number]:
                    writer.write(line)
                text = self._text(position, line, False) if number in texts else None
                yield number, None, text
                number += 1

        try:
            yield from replay_chunks(docs(), texts)
        finally:
            if writer is not None:
                writer.close()

    def fingerprint_writer(self, tmp: str, output: str, column: str) -> FingerprintWriter:
        """(write one chunk with its fingerprints, close): a table of row numbers and
        fingerprints."""
        table = TableWriter(tmp, output, ["id", column])
        written = [0]

        def write_table(chunk: Chunk, fps: np.ndarray) -> None:
            start = written[0]
            written[0] += len(fps)
            table.write(
                {
                    "id": list(range(start, written[0])),
                    column: fps if table.format == "parquet" else hex_fingerprints(fps),
                }
            )

        return write_table, table.close
