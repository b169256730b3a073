"""Parquet files, read and written with pyarrow (the ``parquet`` extra)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..digest import Digest
from ..errors import InputError
from ..hasher import string_buffers
from ..lines import READ_SIZE
from .base import (
    CHUNK_DOCS,
    Chunk,
    FingerprintWriter,
    Input,
    fast_chunk,
    joined,
    pyarrow,
    spool_all,
    text_bytes,
)


def _plain_schema(schema: Any) -> Any:
    """``schema`` with its view types as the large types Arrow's kernels take."""
    pa = pyarrow()
    views = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}
    if not any(f.type in views for f in schema):
        return schema
    return pa.schema(
        [f.with_type(views[f.type]) if f.type in views else f for f in schema], schema.metadata
    )


#: The read buffer of a column chunk (pyarrow's ``buffer_size``).
PAGE_BUFFER = 1 << 20


#: The most bytes of text a batch read holds, and a block of the fast path hands to the core:
#: a batch of 16,384 long documents (4 KB each: 64 MB of text, and up to 8 KB of sketch a
#: document) is read in batches of about 2,000 rows instead (short texts: about 16,000, as
#: before).
BLOCK_BYTES = 2 * READ_SIZE


def _batch_rows(pf: Any, columns: list[str]) -> int:
    """Rows per batch read: about ``BLOCK_BYTES`` of the columns read (their uncompressed size
    in the file's metadata), at most ``CHUNK_DOCS``. The reader holds a few batches while it
    decodes one: batches of 16,384 long documents (4 KB each) held 300 MB to read a file of
    146 MB, batches of 4,096 180 MB."""
    meta = pf.metadata
    names = set(columns)
    size = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if chunk.path_in_schema in names:
                size += max(chunk.total_uncompressed_size, 0)
    if not meta.num_rows or not size:
        return CHUNK_DOCS
    return int(min(CHUNK_DOCS, max(64, BLOCK_BYTES * meta.num_rows // size)))


def _blocks(column: Any) -> list[tuple[int, int]]:
    """``(lo, hi)``: the rows of a string column cut into runs of at most ``BLOCK_BYTES`` of
    text (a longer text alone); one run for a column of another type."""
    pa = pyarrow()
    n = len(column)
    if not n or not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return [(0, n)] if n else []
    offsets, _ = string_buffers(column)
    blocks, lo = [], 0
    while lo < n:
        hi = int(np.searchsorted(offsets, offsets[lo] + BLOCK_BYTES, side="right")) - 1
        hi = min(max(hi, lo + 1), n)
        blocks.append((lo, hi))
        lo = hi
    return blocks


class ParquetInput(Input):
    """A Parquet file, read batch by batch; positions are rows, from 1."""

    unit = "row"

    def _file(self, again: bool) -> Any:
        pa = pyarrow()
        if self.path == "-":
            if self._spool is None:  # Parquet needs to seek: spool stdin first
                self._spool = spool_all(self.name, sys.stdin.buffer, b"PAR1")  # type: ignore[assignment]
            source: Any = getattr(self._spool, "_file", self._spool)
            source.seek(0)
        else:
            self._open_raw(again).close()
            source = self.path
        try:
            # Column chunks are read through a buffer, a page at a time, not whole: a file of
            # one row group (what pyarrow writes for up to a million rows) would otherwise be
            # held whole while it is read (1M short texts: 489 MB read whole, 211 MB buffered).
            return pa.parquet.ParquetFile(source, buffer_size=PAGE_BUFFER, pre_buffer=False)
        except (pa.ArrowInvalid, OSError) as err:
            raise InputError(self.name, f"not a valid Parquet file ({err})") from None

    def _columns(self, pf: Any) -> list[str]:
        """The columns a pass needs, checked against the file's schema."""
        names = pf.schema_arrow.names
        self._resolve_auto_id(names)
        need = [self.text_field] if self.fields is None else [f for f in self.fields if f in names]
        for name in need:
            if name not in names:
                raise InputError(self.name, f"no column {name!r} (columns: {', '.join(names)})")
            kind = str(pf.schema_arrow.field(name).type)
            if kind not in ("string", "large_string", "string_view", "null"):
                raise InputError(self.name, f"column {name!r} is {kind}, expected strings")
        if self.id_field is not None and self.id_field not in names:
            raise InputError(
                self.name, f"no column {self.id_field!r} (the id; columns: {', '.join(names)})"
            )
        return [n for n in names if n in need or n == self.id_field]

    def _batches(self, pf: Any, columns: list[str]) -> Iterator[tuple[int, Any]]:
        total = pf.metadata.num_rows or 1
        row = 0
        try:
            for batch in pf.iter_batches(batch_size=_batch_rows(pf, columns), columns=columns):
                # View types (string_view, binary_view) have no take or filter kernel in Arrow:
                # read them as large strings and bytes, and written so.
                yield row, batch.cast(_plain_schema(batch.schema))
                row += batch.num_rows
                if self.size:
                    self.bytes_read = int(self.size * row / total)
        except OSError as err:
            raise InputError(
                self.name, f"cannot read Parquet data ({err})", row + 1, "row"
            ) from None

    def _values(self, positions: Sequence[int], name: str, column: Any, bad: set[int]) -> list[Any]:
        """A column's values (at ``positions``); a value of invalid UTF-8 is a bad row (its
        position added to ``bad``)."""
        try:
            return column.to_pylist()  # type: ignore[no-any-return]
        except UnicodeDecodeError:
            pass
        values = []
        for offset in range(len(column)):
            try:
                values.append(column[offset].as_py())
            except UnicodeDecodeError as err:
                data = err.object
                self.bad(
                    positions[offset],
                    f"column {name!r} holds invalid UTF-8: byte 0x{data[err.start]:02x} at byte "
                    f"{err.start + 1} cannot start or continue a character",
                )
                bad.add(positions[offset])
                values.append(None)
        return values

    def _batch_docs(
        self, first: int, batch: Any, positions: Sequence[int] | None = None
    ) -> Iterator[tuple[int, Any, Any]]:
        """The documents of a batch read from row ``first`` on, or of the rows at ``positions``."""
        if positions is None:
            positions = range(first + 1, first + batch.num_rows + 1)
        bad: set[int] = set()
        cols = {
            name: self._values(positions, name, batch.column(name), bad)
            for name in batch.schema.names
        }
        for offset in range(batch.num_rows):
            position = positions[offset]
            if position in bad:
                continue
            record = {name: values[offset] for name, values in cols.items()}
            if self.fields is None and record.get(self.text_field) is None:
                self.bad(position, f"column {self.text_field!r} is null")
                continue
            doc = self._document(position, record, "column")
            if doc is None:
                continue
            yield position, doc, record.get(self.id_field) if self.id_field else None

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        pf = self._file(again)
        for first, batch in self._batches(pf, self._columns(pf)):
            for position, doc, doc_id in self._batch_docs(first, batch):
                yield position, doc, doc_id, None

    def _fingerprint_chunks(
        self,
        hasher: Any,
        threads: int | None,
        slow_path: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch_now: Callable[[], tuple[int, int] | None],
        seen: Any,
    ) -> Iterator[tuple[Chunk, Digest]]:
        pf = self._file(False)
        self._columns(pf)  # checks the schema; the ids are read by replay
        for first, batch in self._batches(pf, [self.text_field]):
            for lo, hi in _blocks(batch.column(0)):
                block = self._fast_block(
                    first + lo,
                    batch.slice(lo, hi - lo),
                    hasher,
                    threads,
                    slow_path,
                    sketch_now(),
                    seen,
                )
                if block is not None:
                    yield block

    def _fast_block(
        self,
        first: int,
        batch: Any,
        hasher: Any,
        threads: int | None,
        slow_path: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch: tuple[int, int] | None,
        seen: Any,
    ) -> tuple[Chunk, Digest] | None:
        """The digests of the rows of ``batch`` (the text column alone), read from row ``first``
        on: see :meth:`fingerprint_chunks`."""
        pa = pyarrow()
        n = batch.num_rows
        column = batch.column(0)
        if pa.types.is_large_string(column.type) or pa.types.is_string(column.type):
            try:
                kinds, fps, lengths, keys, sketches = hasher.string_block(
                    column, sketch, threads, seen
                )
            except MemoryError as err:
                raise self.memory_error(err, lambda i: first + 1 + i) from None
            if column.null_count:
                kinds[column.is_null().to_numpy(zero_copy_only=False)] = 2
        else:  # a column of nulls only
            kinds, fps, lengths = np.full(n, 2, np.uint8), np.zeros(n, np.uint64), None
            keys = np.zeros(2 * n, np.uint64)
            sketches = (np.zeros(n + 1, np.uint64), np.zeros(0, np.uint64)) if sketch else None
        done = np.flatnonzero(kinds == 1)
        positions = done + (first + 1)
        lengths = lengths[done] if lengths is not None else np.zeros(0, np.uint32)
        nbytes = int(lengths.sum(dtype=np.int64))
        digest = Digest.of(fps, keys, sketches).take(done)
        slow = np.flatnonzero(kinds == 2)
        chunk = Chunk()
        if len(slow):
            rows = (slow + (first + 1)).tolist()
            for position, text, _ in self._batch_docs(first, batch.take(slow), rows):
                chunk.docs.append(text)
                chunk.positions.append(position)
                chunk.lengths.append(len(text))
                chunk.nbytes += text_bytes(text)
        return fast_chunk(positions, lengths, nbytes, digest, chunk, slow_path)

    def chunks(self, raw: bool = False) -> Iterator[Chunk]:
        if not raw:
            yield from super().chunks()
            return
        # Raw chunks are whole record batches (every column), to write back with a new column.
        pf = self._file(False)
        self._columns(pf)
        for first, batch in self._batches(pf, pf.schema_arrow.names):
            chunk = Chunk(raw=[batch])
            for position, doc, _ in self._batch_docs(first, batch):
                chunk.docs.append(doc)
                chunk.positions.append(position)
            yield chunk

    def replay(self, keep=None, output=None, output_compression=None, ids=False, texts=frozenset()):  # type: ignore[no-untyped-def]
        pa = pyarrow()
        pf = self._file(True)
        skipped = np.fromiter(sorted(self._skipped), np.int64, len(self._skipped))
        writer = None
        number = 0
        done = False
        try:
            if output is not None and keep is not None:
                writer = pa.parquet.ParquetWriter(
                    output, _plain_schema(pf.schema_arrow), compression="zstd"
                )
            for first, batch in self._batches(pf, pf.schema_arrow.names):
                if len(skipped):
                    rows = np.arange(first + 1, first + batch.num_rows + 1)
                    batch = batch.filter(pa.array(~np.isin(rows, skipped)))
                n = batch.num_rows
                if writer is not None:
                    writer.write_batch(batch.filter(pa.array(keep[number : number + n])))
                batch_ids = (
                    batch.column(self.id_field).to_pylist() if ids and self.id_field else [None] * n
                )
                batch_texts: dict[int, str] = {}
                for want in sorted(t for t in texts if number <= t < number + n):
                    names = [self.text_field] if self.fields is None else self.fields
                    record = {
                        name: batch.column(name)[want - number].as_py()
                        for name in names
                        if name in batch.schema.names
                    }
                    batch_texts[want] = joined(record, self.text_field, self.fields)
                yield number, batch_ids, batch_texts
                number += n
            done = True
        finally:
            if writer is not None:
                try:
                    writer.close()
                except OSError:
                    if done:  # after a failure, the job's own error is the one to report
                        raise

    def fingerprint_writer(self, tmp: str, output: str, column: str) -> FingerprintWriter:
        """(write one chunk with its fingerprints, close): the kept rows with a uint64 column."""
        pa = pyarrow()
        state: dict[str, Any] = {"writer": None, "row": 0}

        def write_parquet(chunk: Chunk, fps: np.ndarray) -> None:
            (batch,) = chunk.raw
            take = np.asarray(chunk.positions, dtype=np.int64) - 1 - state["row"]
            state["row"] += batch.num_rows
            table = pa.Table.from_batches([batch]).take(pa.array(take))
            values = pa.array(fps, pa.uint64())
            if column in table.column_names:
                table = table.set_column(table.column_names.index(column), column, values)
            else:
                table = table.append_column(column, values)
            if state["writer"] is None:
                state["writer"] = pa.parquet.ParquetWriter(tmp, table.schema, compression="zstd")
            state["writer"].write_table(table)

        def close_parquet() -> None:
            if state["writer"] is not None:
                state["writer"].close()

        return write_parquet, close_parquet
