"""CSV and TSV with a header row (plain, .gz, .zst)."""

from __future__ import annotations

import codecs
import csv
import io
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import InputError
from ..lines import READ_SIZE, too_long_reason
from .base import Chunk, FingerprintWriter, Input, joined, replay_chunks, utf8_reason
from .compression import CompressedStreamError, compression_of
from .outputs import RawWriter, Unclosed, hex_fingerprints


class CsvInput(Input):
    """A header row, then one document per row (quoted fields may span lines)."""

    delimiter = ","
    _header: list[str] | None = None  # the header row of the last read

    def _rows(self, again: bool) -> Iterator[tuple[int, list[str], list[str]]]:
        """(first line, header, row) of every row. With on_error="skip", a line of invalid UTF-8
        is read with replacement characters and its row skipped (in both passes alike)."""
        raw, stream = self._stream(again)
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1, self.max_record_size))
        counter = [0]
        undecodable: dict[int, str] = {}

        def lines() -> Iterator[str]:
            limit = self.max_record_size
            while line := stream.readline(limit + 1):
                counter[0] += 1
                if len(line) > limit:  # never held whole: dropped to its end, read as blank
                    if not again:
                        self.bad(counter[0], too_long_reason(limit))
                    while line and not line.endswith(b"\n"):
                        line = stream.readline(READ_SIZE)
                    yield "\n"
                    continue
                if counter[0] == 1 and line.startswith(codecs.BOM_UTF8):
                    line = line[len(codecs.BOM_UTF8) :]  # Excel's mark: not part of the first name
                try:
                    yield line.decode("utf-8")
                except UnicodeDecodeError as err:
                    if self.on_error != "skip" or counter[0] == 1:
                        raise InputError(self.name, utf8_reason(line, err), counter[0]) from None
                    undecodable[counter[0]] = utf8_reason(line, err)
                    yield line.decode("utf-8", "replace")
                if counter[0] % 4096 == 0 and raw.seekable():
                    self.bytes_read = raw.tell()

        try:
            reader = csv.reader(lines(), delimiter=self.delimiter, strict=True)
            header: list[str] | None = None
            while True:
                start = counter[0] + 1
                try:
                    row = next(reader)
                except StopIteration:
                    break
                except csv.Error as err:
                    raise InputError(self.name, f"malformed CSV: {err}", start) from None
                except (OSError, EOFError, zlib.error, CompressedStreamError) as err:
                    raise self._read_error(err, stream is not raw) from None
                if header is None:
                    header = row
                    self._header = header
                    names = Counter(header)
                    repeated = [name for name in header if names[name] > 1]
                    if repeated:
                        raise InputError(
                            self.name,
                            f"the header names the column {repeated[0]!r} {names[repeated[0]]} times: "
                            "name each column once",
                            start,
                        )
                    continue
                if not row:
                    continue
                if undecodable:
                    bad = [n for n in range(start, counter[0] + 1) if n in undecodable]
                    if bad:
                        reason = undecodable[bad[0]]
                        for n in bad:
                            del undecodable[n]
                        if not again:
                            self.errors.append(InputError(self.name, reason, bad[0]))
                            self._skipped.add(start)
                            continue
                yield start, header, row
        finally:
            self._close_streams(raw, stream)

    def _check_header(self, header: list[str]) -> None:
        """The text column (and the id column, if any) must be in the header, rows or none."""
        self._resolve_auto_id(header)
        need = [self.text_field] if self.fields is None else []
        if self.id_field is not None:
            need.append(self.id_field)
        missing = [name for name in need if name not in header]
        if missing:
            raise InputError(
                self.name, f"no column {missing[0]!r} (columns: {', '.join(header)})", 1
            )

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        checked = False
        self._header = None
        for line, header, row in self._rows(again):
            if not checked:
                self._check_header(header)
                checked = True
            if len(row) != len(header):
                self.bad(line, f"{len(row)} fields where the header has {len(header)}")
                continue
            record = dict(zip(header, row))
            doc = self._document(line, record, "column")
            if doc is None:
                continue
            yield (
                line,
                doc,
                record.get(self.id_field) if self.id_field else None,
                (header, row) if raw else None,
            )
        if not checked and self._header is not None:  # a header and no rows
            self._check_header(self._header)
        if self._header is None and not again:  # not even a header: no columns to read
            self.bad(
                1,
                "no header row (the file is empty): a CSV or TSV file begins with a header "
                f"naming its columns, {self.text_field!r} among them",
            )

    def replay(self, keep=None, output=None, output_compression=None, ids=False, texts=frozenset()):  # type: ignore[no-untyped-def]
        raw_writer = RawWriter(output, output_compression) if output is not None else None
        text_out = (
            io.TextIOWrapper(Unclosed(raw_writer), encoding="utf-8", newline="")
            if raw_writer
            else None
        )  # type: ignore[type-var]
        writer = csv.writer(text_out, delimiter=self.delimiter) if text_out else None
        skipped = self._skipped

        def docs() -> Iterator[tuple[int, Any, str | None]]:
            number = 0
            wrote_header = False
            for line, header, row in self._rows(True):
                if writer is not None and not wrote_header:
                    writer.writerow(header)
                    wrote_header = True
                if line in skipped:
                    continue
                if writer is not None and keep is not None and keep[number]:
                    writer.writerow(row)
                record = dict(zip(header, row))
                text = joined(record, self.text_field, self.fields) if number in texts else None
                yield number, record.get(self.id_field) if self.id_field else None, text
                number += 1
            if writer is not None and not wrote_header and self._header is not None:
                writer.writerow(self._header)  # a header and no rows: the header, kept

        done = False
        try:
            yield from replay_chunks(docs(), texts)
            done = True
        finally:
            if text_out is not None:
                try:
                    text_out.flush()
                except OSError:
                    if done:
                        raise
                text_out.detach()
            if raw_writer is not None:
                # After a failure (or a job that stopped reading) the job's error is reported.
                raw_writer.close() if done else raw_writer.discard()

    def fingerprint_writer(self, tmp: str, output: str, column: str) -> FingerprintWriter:
        """(write one chunk with its fingerprints, close): each row with a hex column added."""
        raw = RawWriter(tmp, compression_of(output) if output != "-" else None)
        text = io.TextIOWrapper(Unclosed(raw), encoding="utf-8", newline="")  # type: ignore[type-var]
        writer = csv.writer(text, delimiter="," if self.format == "csv" else "\t")
        state_csv: dict[str, Any] = {"header": None}

        def write_csv(chunk: Chunk, fps: np.ndarray) -> None:
            for (header, row), value in zip(chunk.raw, hex_fingerprints(fps)):
                if state_csv["header"] is None:
                    names = header + ([column] if column not in header else [])
                    state_csv["header"] = names
                    writer.writerow(names)
                row = list(row)
                if column in header:
                    row[header.index(column)] = value
                else:
                    row.append(value)
                writer.writerow(row)

        def close_csv() -> None:
            text.flush()
            text.detach()
            raw.close()

        return write_csv, close_csv


class TsvInput(CsvInput):
    delimiter = "\t"
