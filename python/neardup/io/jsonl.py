"""JSONL: one JSON object per line (plain, .gz, .zst), with the core's fast path for ASCII lines."""

from __future__ import annotations

import json
import queue
import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

import numpy as np

from ..digest import Digest
from ..errors import InputError
from ..lines import READ_SIZE, line_blocks, too_long_reason
from .base import (
    AUTO,
    CHUNK_BYTES,
    CHUNK_DOCS,
    Chunk,
    FingerprintWriter,
    Input,
    fast_chunk,
    joined,
    type_name,
    utf8_reason,
)
from .compression import compression_of
from .outputs import RawWriter, hex_fingerprints

try:  # optional (pip install 'neardup[fast]'): parses JSONL two to three times faster
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None  # type: ignore[assignment]


#: A JSON line nested deeper than Python's json module reads (about 1,000 levels).
NESTING_TOO_DEEP = (
    "nesting too deep: arrays and objects nested more deeply than Python's json module reads"
)


class _Prefetch:
    """Reads a stream ahead in a helper thread, two blocks at most."""

    def __init__(self, stream: BinaryIO, size: int = 1 << 22, depth: int = 2) -> None:
        self._size = size
        self._queue: queue.Queue[tuple[bool, Any]] = queue.Queue(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(stream,), name="neardup-read", daemon=True
        )
        self._thread.start()

    def _run(self, stream: BinaryIO) -> None:
        try:
            while not self._stop.is_set():
                data = stream.read(self._size)
                self._put((True, data))
                if not data:
                    return
        except BaseException as err:  # handed to the reading thread
            self._put((False, err))

    def _put(self, item: tuple[bool, Any]) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def read(self, size: int) -> bytes:
        ok, value = self._queue.get()
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def close(self) -> bool:
        """Stops the helper; whether it has ended (False: still blocked in a read)."""
        self._stop.set()
        self._thread.join(timeout=1.0)
        return not self._thread.is_alive()


class JsonlInput(Input):
    """One JSON object per line; blank lines are ignored."""

    def _blocks(self, again: bool) -> Iterator[tuple[int, list[bytes]]]:
        """(number of the first line, lines without their ends) for blocks of about 4 MB."""
        for first, data, _ in self._raw_blocks(again):
            yield first, data.split(b"\n")

    def _raw_blocks(self, again: bool) -> Iterator[tuple[int, bytes, int]]:
        """(number of the first line, whole lines joined by their ends without the last one,
        number of lines) for blocks of about 4 MB. A compressed input is decompressed by a
        helper thread (zlib and zstd release the GIL) while this one parses."""
        raw, stream = self._stream(again)
        reader: Any = (
            _Prefetch(stream, min(READ_SIZE, self.max_record_size + 1))
            if stream is not raw
            else stream
        )

        def read(size: int) -> bytes:
            try:
                return reader.read(size)  # type: ignore[no-any-return]
            except (OSError, EOFError, ValueError, zlib.error) as err:
                raise self._read_error(err, stream is not raw) from None

        def too_long(line: int) -> None:
            if not again:  # noted by the first pass
                self.bad(line, too_long_reason(self.max_record_size))

        try:
            for block in line_blocks(read, self.max_record_size, too_long):
                if block[0] == 1 and block[1].startswith(b"\xef\xbb\xbf"):
                    # A byte order mark opening the file, as CSV takes one: not part of line 1.
                    block = (1, block[1][3:], block[2])
                yield block
                if raw.seekable():
                    self.bytes_read = raw.tell()
        finally:
            # A helper thread still blocked in a read (a pipe that went quiet, then Ctrl-C) holds
            # the stream's lock: leave the stream to the end of the process rather than wait.
            if reader is stream or reader.close():
                self._close_streams(raw, stream)
            else:
                self.bytes_read = self.size or self.bytes_read

    def _fingerprint_chunks(
        self,
        hasher: Any,
        threads: int | None,
        slow_path: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch_now: Callable[[], tuple[int, int] | None],
        seen: Any,
    ) -> Iterator[tuple[Chunk, Digest]]:
        for first, data, count in self._raw_blocks(False):
            sketch = sketch_now()
            if self.id_field == AUTO:
                self._peek_auto_id(data)
            lines: list[bytes] | None = None
            if self.id_field == AUTO:  # not settled by the first line: all of the block to Python
                lines = data.split(b"\n")
                kinds = np.full(count, 2, np.uint8)
                lengths = np.zeros(count, np.uint32)
                starts = None
                digest = Digest.of(
                    np.zeros(count, np.uint64),
                    np.zeros(2 * count, np.uint64),
                    (np.zeros(count + 1, np.uint64), np.zeros(0, np.uint64))
                    if sketch is not None
                    else None,
                )
            else:
                try:
                    kinds, fps, lengths, starts, keys, sketches = hasher.jsonl_block(
                        data, self.text_field, self.id_field, sketch, threads, seen=seen
                    )
                except MemoryError as err:
                    raise self.memory_error(err, first.__add__) from None
                digest = Digest.of(fps, keys, sketches)
            slow = np.flatnonzero(kinds == 2)
            rows = np.flatnonzero(kinds == 1)
            positions = rows + first
            nbytes = int(lengths[rows].sum(dtype=np.int64))
            lengths = lengths[rows]
            digest = digest.take(rows)
            chunk = Chunk()
            for index in slow.tolist():
                if lines is None:
                    assert starts is not None
                    line = data[int(starts[index]) : int(starts[index + 1]) - 1]
                else:
                    line = lines[index]
                try:
                    got = self._record(first + index, line)
                    if got is not None:
                        text = got[0]
                        chunk.docs.append(text)
                        chunk.positions.append(first + index)
                        chunk.lengths.append(len(text))
                        chunk.nbytes += len(text.encode("utf-8", "surrogatepass"))
                except MemoryError as err:
                    raise self.memory_error_at(err, first + index) from None
            block = fast_chunk(positions, lengths, nbytes, digest, chunk, slow_path)
            if block is not None:
                yield block

    def sketch_lines(
        self,
        hasher: Any,
        lines: np.ndarray,
        rows: np.ndarray,
        sketches: Any,
        threads: int | None,
        on_block: Callable[[], None] = lambda: None,
    ) -> bool:
        """Sketches, on a second read, the documents at ``lines`` (line numbers, ascending) as
        rows ``rows`` into ``sketches``: the core reads only the lines asked for, and those it
        leaves to Python are read as in the first pass. False (nothing done) when this input or
        hasher needs the Python path."""
        if (
            self.fields is not None
            or hasher.fields is not None
            or hasher.tokenizer is not None
            or self.id_field == AUTO
        ):
            return False
        spec = (sketches.ngram, sketches.size)

        def blocks() -> Iterator[tuple[int, bytes, np.ndarray, np.ndarray, np.ndarray]]:
            at = 0
            for first, data, count in self._raw_blocks(True):
                on_block()
                end = int(np.searchsorted(lines, first + count, side="left"))
                if end == at:
                    continue
                index = lines[at:end] - first
                wanted = np.zeros(count, bool)
                wanted[index] = True
                yield first, data, index, rows[at:end], wanted
                at = end

        def store(
            first: int, data: bytes, index: np.ndarray, here: np.ndarray, future: Any
        ) -> None:
            try:
                got = future.result()
            except MemoryError as err:
                raise self.memory_error(err, first.__add__) from None
            kinds, _, _, starts, _, (offsets, hashes) = got
            done = kinds[index] == 1
            sketches.add_sketches(
                here[done], offsets[index[done]], offsets[index[done] + 1], hashes
            )
            if not done.all():
                texts = []
                for i in index[~done].tolist():
                    got = self._record(first + i, data[int(starts[i]) : int(starts[i + 1]) - 1])
                    texts.append(got[0] if got is not None else "")
                sketches.add(here[~done], texts)

        # The core sketches a block on every core while this thread reads the next one and
        # stores the one before (the lines left to Python included).
        with ThreadPoolExecutor(1, thread_name_prefix="neardup") as pool:
            pending = None
            try:
                for first, data, index, here, wanted in blocks():
                    future = pool.submit(
                        hasher.jsonl_block,
                        data,
                        self.text_field,
                        self.id_field,
                        spec,
                        threads,
                        wanted,
                    )
                    if pending is not None:
                        store(*pending[0], pending[1])
                    pending = ((first, data, index, here), future)
                if pending is not None:
                    store(*pending[0], pending[1])
                    pending = None
            except BaseException:
                if pending is not None:
                    pending[1].cancel()
                raise
        return True

    def _peek_auto_id(self, data: bytes) -> None:
        """Resolves ``--id-field auto`` from the first line that is a JSON object, as the Python
        path does (a block whose first non-blank line is not one is left to that path)."""
        for line in data.split(b"\n", 64):
            if line and not line.isspace():
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    return
                if isinstance(record, dict):
                    self._resolve_auto_id(list(record))
                return

    def _parse(self, lineno: int, line: bytes) -> Any:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            self.bad(lineno, utf8_reason(line, err))
            return None
        try:
            record = json.loads(text)
        except ValueError as err:
            if not hasattr(err, "msg") and "digits" in str(err):  # Python's int size limit
                self.bad(lineno, "a number of more than 4,300 digits, more than neardup reads")
                return None
            msg = getattr(err, "msg", str(err))
            self.bad(lineno, f"malformed JSON: {msg} (column {getattr(err, 'colno', '?')})")
            return None
        except RecursionError:
            self.bad(lineno, NESTING_TOO_DEEP)
            return None
        if not isinstance(record, dict):
            self.bad(lineno, f"expected a JSON object, got {type_name(record)}")
            return None
        return record

    def _record(self, lineno: int, line: bytes) -> tuple[Any, Any, Any] | None:
        """(document, id, record) of one line, or None for a blank or bad (skipped) one."""
        if not line or line.isspace():
            return None
        record = self._parse(lineno, line)
        if record is None:
            return None
        self._resolve_auto_id(list(record))
        doc = self._document(lineno, record, "field")
        if doc is None:
            return None
        ok, doc_id = self._id(lineno, record, "field")
        return (doc, doc_id, record) if ok else None

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        for first, block in self._blocks(again):
            for lineno, line in enumerate(block, first):
                got = self._record(lineno, line)
                if got is not None:
                    yield lineno, got[0], got[1], (line, got[2]) if raw else None

    def chunks(self, raw: bool = False) -> Iterator[Chunk]:
        if raw or self.fields is not None:
            yield from super().chunks(raw)
            return
        # The hot loop, inlined: a line that does not parse the easy way is diagnosed by _record.
        loads, fast, field = json.loads, _fast_loads, self.text_field
        docs: list[str] = []
        positions: list[int] = []
        lengths: list[int] = []
        size = extra = 0  # characters, and the UTF-8 bytes beyond one per character
        for first, block in self._blocks(False):
            id_field = self.id_field
            for lineno, line in enumerate(block, first):
                try:
                    record = fast(line) if fast is not None else loads(line.decode())
                    text = record[field]
                    if text.__class__ is not str:
                        raise TypeError
                    if id_field is not None:
                        if id_field == AUTO:
                            self._resolve_auto_id(list(record))
                            id_field = self.id_field
                        if id_field is not None:
                            record[id_field]
                except Exception:
                    got = self._record(lineno, line)
                    id_field = self.id_field
                    if got is None:
                        continue
                    text = got[0]
                n = len(text)
                docs.append(text)
                positions.append(lineno)
                lengths.append(n)
                size += n
                if not text.isascii():
                    extra += len(text.encode("utf-8", "surrogatepass")) - n
                if size >= CHUNK_BYTES or len(docs) >= CHUNK_DOCS:
                    yield Chunk(
                        docs=docs, positions=positions, lengths=lengths, nbytes=size + extra
                    )
                    docs, positions, lengths = [], [], []
                    size = extra = 0
        if docs:
            yield Chunk(docs=docs, positions=positions, lengths=lengths, nbytes=size + extra)

    def replay(self, keep=None, output=None, output_compression=None, ids=False, texts=frozenset()):  # type: ignore[no-untyped-def]
        writer = RawWriter(output, output_compression) if output is not None else None
        skipped = self._skipped
        keep_bytes = (
            keep.astype(bool).tobytes() if keep is not None and writer is not None else None
        )
        parse_all = ids and self.id_field is not None
        number = 0
        done = False
        try:
            for first, block in self._blocks(True):
                start = number
                chunk_ids: list[Any] = []
                chunk_texts: dict[int, str] = {}
                out = []
                for lineno, line in enumerate(block, first):
                    if not line or line.isspace() or (skipped and lineno in skipped):
                        continue
                    if keep_bytes is not None and keep_bytes[number]:
                        out.append(line)
                    if parse_all or number in texts:
                        try:
                            record = json.loads(line)
                        except RecursionError:  # read in the first pass, a few frames less deep
                            raise InputError(self.name, NESTING_TOO_DEEP, lineno) from None
                        chunk_ids.append(
                            record.get(self.id_field) if self.id_field is not None else None
                        )
                        if number in texts:
                            chunk_texts[number] = joined(record, self.text_field, self.fields)
                    else:
                        chunk_ids.append(None)
                    number += 1
                if writer is not None and out:
                    out.append(b"")
                    writer.write(b"\n".join(out))
                if chunk_ids:
                    yield start, chunk_ids, chunk_texts
            done = True
        finally:
            if writer is not None:
                # After a failure (or a job that stopped reading) the job's error is reported.
                writer.close() if done else writer.discard()

    def fingerprint_writer(self, tmp: str, output: str, column: str) -> FingerprintWriter:
        """(write one chunk with its fingerprints, close): each line with a hex field added."""
        raw = RawWriter(tmp, compression_of(output) if output != "-" else None)
        key = json.dumps(column).encode()

        def write_jsonl(chunk: Chunk, fps: np.ndarray) -> None:
            out = []
            for (line, record), value in zip(chunk.raw, hex_fingerprints(fps)):
                if column in record:
                    record[column] = value
                    out.append(json.dumps(record, ensure_ascii=False).encode() + b"\n")
                    continue
                body = line.rstrip()
                sep = b"" if record == {} else b", "
                out.append(body[:-1] + sep + key + b': "' + value.encode() + b'"}\n')
            raw.write(b"".join(out))

        return write_jsonl, raw.close
