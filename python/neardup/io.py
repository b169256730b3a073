"""Corpora in and out: JSONL (plain, .gz, .zst), CSV/TSV, Parquet, folders of .txt files, stdin.

Inputs are read in chunks (at most ``CHUNK_DOCS`` documents or ``CHUNK_BYTES`` of text), so a job
holds one chunk of text at a time. A job that writes the kept documents reads its input a second
time (:meth:`Input.replay`); stdin is copied to a temporary file on the first pass for that.

Bad input stops the job with :class:`InputError`, whose message reads ``FILE:LINE: what is
wrong``; with ``on_error="skip"`` the bad records are skipped and listed in ``Input.errors``.

Outputs are written through :class:`Outputs`: each goes to a temporary file in its own directory
and is renamed into place only when the whole job has succeeded, so a failed or interrupted job
leaves no partial output behind.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from . import _core
from .digest import Digest

try:  # optional (pip install 'neardup[fast]'): parses JSONL two to three times faster
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None  # type: ignore[assignment]

__all__ = [
    "FORMATS",
    "InputError",
    "MissingExtraError",
    "Input",
    "Outputs",
    "TableWriter",
    "open_input",
]

FORMATS = ("jsonl", "csv", "tsv", "parquet", "txt")
#: Documents per chunk, and the most text per chunk (a chunk ends at whichever comes first).
CHUNK_DOCS = 16_384
CHUNK_BYTES = 32 << 20
#: The id field the command uses by default when the first document has it.
AUTO = "auto"

_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}


class InputError(Exception):
    """Bad input: ``FILE:LINE: reason`` (``FILE: row N: reason`` for Parquet)."""

    def __init__(self, path: str, reason: str, line: int | None = None, unit: str = "line") -> None:
        super().__init__(path, reason, line, unit)
        self.path, self.reason, self.line, self.unit = path, reason, line, unit

    @property
    def location(self) -> str:
        if self.line is None:
            return self.path
        return (
            f"{self.path}:{self.line}" if self.unit == "line" else f"{self.path}: row {self.line}"
        )

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.path, self.unit: self.line, "message": self.reason}


class MissingExtraError(ImportError):
    """A format needs an optional dependency that is not installed."""


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise MissingExtraError("Parquet needs pyarrow: pip install 'neardup[parquet]'") from None
    return pa


def _zstd_reader(raw: BinaryIO) -> BinaryIO:
    try:
        import zstandard
    except ImportError:
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14
        except ImportError:
            raise MissingExtraError(
                ".zst files need zstandard: pip install 'neardup[zstd]'"
            ) from None
        return zstd.ZstdFile(raw, "rb")  # type: ignore[no-any-return]
    return io.BufferedReader(_ZstdFrames(raw, zstandard), 1 << 20)  # type: ignore[arg-type]


class CompressedStreamError(ValueError):
    """A compressed input that is truncated or corrupt."""


class _ZstdFrames(io.RawIOBase):
    """Every frame of a zstd stream, decompressed; a stream that ends inside a frame, or is not
    zstd, raises :class:`CompressedStreamError`. (zstandard's stream reader takes the end of its
    input inside a frame for the end of the data: a truncated file read as complete.)"""

    #: Compressed bytes fed at a time, which bounds the output of one call.
    STEP = 1 << 16

    def __init__(self, raw: BinaryIO, zstandard: Any) -> None:
        self._raw, self._zstd = raw, zstandard
        self._dctx = zstandard.ZstdDecompressor()
        self._frame: Any = None  # the decompressor of the current frame
        self._input = b""
        self._output = memoryview(b"")
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not len(self._output):
            if self._done:
                return 0
            self._step()
        n = min(len(buffer), len(self._output))
        buffer[:n] = self._output[:n]
        self._output = self._output[n:]
        return n

    def _step(self) -> None:
        if not self._input:
            self._input = self._raw.read(self.STEP)
            if not self._input:
                self._done = True
                if self._frame is not None and not self._frame.eof:
                    raise CompressedStreamError(
                        "truncated or corrupt zstd stream: it ends inside a frame"
                    )
                return
        if self._frame is None or self._frame.eof:
            self._frame = self._dctx.decompressobj()
        data, self._input = self._input[: self.STEP], self._input[self.STEP :]
        try:
            out = self._frame.decompress(data)
        except self._zstd.ZstdError as err:
            raise CompressedStreamError(f"truncated or corrupt zstd stream ({err})") from None
        if self._frame.eof:
            self._input = self._frame.unused_data + self._input
        self._output = memoryview(out)


def _zstd_writer(raw: BinaryIO) -> BinaryIO:
    try:
        import zstandard
    except ImportError:
        try:
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError:
            raise MissingExtraError(
                ".zst files need zstandard: pip install 'neardup[zstd]'"
            ) from None
        return zstd.ZstdFile(raw, "wb")  # type: ignore[no-any-return]
    return zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False)  # type: ignore[return-value]


def compression_of(path: str) -> str | None:
    """ "gzip" or "zstd" by the name's last suffix, else None."""
    return _COMPRESSIONS.get(Path(path).suffix.lower())


def format_of(path: str) -> str | None:
    """The format named by a path's extensions (a compression suffix is looked through)."""
    if path != "-" and os.path.isdir(path):
        return "txt"
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in _COMPRESSIONS:
        suffixes = suffixes[:-1]
    return _EXTENSIONS.get(suffixes[-1]) if suffixes else None


def _decompressed(raw: BinaryIO, compression: str | None) -> BinaryIO:
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "zstd":
        return _zstd_reader(raw)
    return raw


def _compressed(raw: BinaryIO, compression: str | None) -> BinaryIO:
    if compression == "gzip":
        # Level 1: four times faster than the default 6 for a fifth more bytes; a job's output is
        # usually an intermediate file (use .zst for smaller and faster still).
        return gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0)  # type: ignore[return-value]
    if compression == "zstd":
        return _zstd_writer(raw)
    return raw


def _sniff(raw: BinaryIO) -> str | None:
    """Compression of a stream by its magic number (stdin has no name to go by)."""
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head == b"\x28\xb5\x2f\xfd":
        return "zstd"
    return None


#: A JSON line nested deeper than Python's json module reads (about 1,000 levels).
NESTING_TOO_DEEP = (
    "nesting too deep: arrays and objects nested more deeply than Python's json module reads"
)


def _utf8_reason(data: bytes, err: UnicodeDecodeError) -> str:
    return f"invalid UTF-8: byte 0x{data[err.start]:02x} at column {err.start + 1} cannot start or continue a character"


def _type_name(value: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _text_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass
class Chunk:
    """Documents read together: ``docs`` (str, or dicts of field texts), their ``positions`` in the
    input (lines, rows or file numbers, for messages), their ``ids`` and, when asked, ``raw``
    records for writing them back."""

    docs: list[Any] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    ids: list[Any] | None = None
    raw: list[Any] = field(default_factory=list)
    nbytes: int = 0
    lengths: list[int] = field(default_factory=list)


class Input:
    """One input: a file, a folder of .txt files, or stdin (``"-"``).

    Args:
        path: the file, folder or ``"-"``.
        format: one of :data:`FORMATS`; by default from the extension (stdin: JSONL).
        text_field: the field (JSONL), column (CSV, Parquet) holding each document's text.
        id_field: the field holding each document's id; ``None`` numbers documents from 0;
            ``"auto"`` uses ``id`` when the first document has it.
        fields: instead of one text field, several fields (a document is a dict of them).
        on_error: ``"stop"`` raises :class:`InputError` at the first bad record; ``"skip"``
            skips bad records and lists them in :attr:`errors`.
        replayable: keep what is needed to read the input again (stdin is spooled).
    """

    unit = "line"

    def __init__(
        self,
        path: str,
        *,
        format: str,
        text_field: str = "text",
        id_field: str | None = AUTO,
        fields: Sequence[str] | None = None,
        on_error: str = "stop",
        replayable: bool = True,
        compression: str | None = None,
    ) -> None:
        self.path = path
        self.name = "<stdin>" if path == "-" else path
        self.format = format
        self.text_field = text_field
        self.id_field = id_field
        self.fields = list(fields) if fields else None
        self.on_error = on_error
        self.replayable = replayable
        self.compression = compression
        self.errors: list[InputError] = []
        self._skipped: set[int] = set()
        self._spool: IO[bytes] | None = None
        self._stamp: tuple[int, int] | None = None
        self.bytes_read = 0  # progress: bytes of the (compressed) input consumed so far

    # -- the file -----------------------------------------------------------------------------

    @property
    def size(self) -> int | None:
        """Bytes to read (for progress), if known."""
        if self.path == "-":
            return None
        try:
            return os.path.getsize(self.path)
        except OSError:
            return None

    def _open_raw(self, again: bool) -> BinaryIO:
        if self.path == "-":
            if again:
                if self._spool is None:
                    raise RuntimeError("stdin was not kept for a second pass")
                self._spool.seek(0)
                return self._spool  # type: ignore[return-value]
            stdin = sys.stdin.buffer
            if self.replayable:
                self._spool = tempfile.TemporaryFile(prefix="neardup-stdin-")
                return _Tee(stdin, self._spool)  # type: ignore[return-value]
            return stdin  # type: ignore[return-value]
        try:
            st = os.stat(self.path)
            if again and self._stamp != (st.st_size, st.st_mtime_ns):
                raise InputError(
                    self.name,
                    "changed while the job ran (size or modification time); nothing written",
                )
            self._stamp = (st.st_size, st.st_mtime_ns)
            return open(self.path, "rb", buffering=1 << 20)
        except FileNotFoundError:
            raise InputError(self.name, "no such file") from None
        except IsADirectoryError:
            raise InputError(
                self.name, "is a folder: a folder is read as .txt files with --format txt"
            ) from None
        except PermissionError:
            raise InputError(self.name, "cannot read: permission denied") from None
        except OSError as err:
            raise InputError(self.name, f"cannot read: {err.strerror or err}") from None

    def _stream(self, again: bool) -> tuple[BinaryIO, BinaryIO]:
        """(raw file for progress, decompressed stream)."""
        raw = self._open_raw(again)
        compression = self.compression
        if self.path == "-" and compression is None:
            raw = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type,type-var]
            compression = _sniff(raw)
        try:
            return raw, _decompressed(raw, compression)
        except BaseException:
            raw.close()
            raise

    # -- errors -------------------------------------------------------------------------------

    def _read_error(self, err: BaseException, compressed: bool) -> InputError:
        """The error of a failed read: a truncated or corrupt compressed stream, or the system's."""
        if isinstance(err, CompressedStreamError):
            return InputError(self.name, str(err))
        if compressed:
            what = {"gzip": "gzip", "zstd": "zstd"}.get(self.compression or "", "compressed")
            return InputError(self.name, f"truncated or corrupt {what} stream ({err})")
        return InputError(self.name, f"cannot read: {getattr(err, 'strerror', None) or err}")

    def bad(self, position: int | None, reason: str) -> None:
        """A bad record: raise, or note it and go on (``on_error="skip"``)."""
        err = InputError(self.name, reason, position, self.unit)
        if self.on_error != "skip" or position is None:
            raise err
        self.errors.append(err)
        if position is not None:
            self._skipped.add(position)

    # -- reading ------------------------------------------------------------------------------

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        """(position, document, id, raw record) of every good record."""
        raise NotImplementedError

    def _document(self, position: int, record: dict[str, Any], what: str) -> Any:
        """The document of a record (a dict of fields or a row dict): its text, or its fields."""
        if self.fields is None:
            if self.text_field not in record:
                self.bad(
                    position,
                    f"no {what} {self.text_field!r} (has: {', '.join(map(str, record)) or 'none'})",
                )
                return None
            text = record[self.text_field]
            if not isinstance(text, str):
                self.bad(
                    position, f"{what} {self.text_field!r} is {_type_name(text)}, expected a string"
                )
                return None
            return text
        doc = {}
        for name in self.fields:
            value = record.get(name)
            if value is not None and not isinstance(value, str):
                self.bad(
                    position, f"{what} {name!r} is {_type_name(value)}, expected a string or null"
                )
                return None
            doc[name] = value
        return doc

    def _id(self, position: int, record: dict[str, Any], what: str) -> tuple[bool, Any]:
        if self.id_field is None:
            return True, None
        if self.id_field not in record:
            self.bad(position, f"no {what} {self.id_field!r} (the id; --id-field names another)")
            return False, None
        return True, record[self.id_field]

    def _resolve_auto_id(self, names: Sequence[str]) -> None:
        if self.id_field == AUTO:
            self.id_field = "id" if "id" in names else None

    def chunks(self, raw: bool = False) -> Iterator[Chunk]:
        """The documents of the first pass, chunk by chunk. Ids are not kept (memory): only
        their presence is checked; :meth:`replay` reads them."""
        chunk = Chunk()
        size = 0
        for position, doc, _id, record in self._records(False, raw):
            text_len = len(doc) if isinstance(doc, str) else sum(len(v) for v in doc.values() if v)
            chunk.docs.append(doc)
            chunk.positions.append(position)
            chunk.lengths.append(text_len)
            if raw:
                chunk.raw.append(record)
            chunk.nbytes += (
                _text_bytes(doc)
                if isinstance(doc, str)
                else sum(_text_bytes(v) for v in doc.values() if v)
            )
            size += text_len
            if len(chunk.docs) >= CHUNK_DOCS or size >= CHUNK_BYTES:
                yield chunk
                chunk, size = Chunk(), 0
        if chunk.docs:
            yield chunk

    def skip(self, position: int, reason: str) -> None:
        """Marks a document already read as bad (found by the hasher): raise, or skip it."""
        self.bad(position, reason)

    def replay(
        self,
        keep: np.ndarray | None = None,
        output: str | None = None,
        output_compression: str | None = None,
        ids: bool = False,
        texts: set[int] | frozenset[int] = frozenset(),
    ) -> Iterator[tuple[int, list[Any], dict[int, str]]]:
        """The second pass: ``(first document number, ids, {document: text})`` per chunk (ids are
        None without an id field),
        writing the documents where ``keep`` is True to ``output`` in the input's format."""
        raise NotImplementedError

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def __enter__(self) -> Input:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Prefetch:
    """Reads a stream ahead in a helper thread, two blocks at most."""

    def __init__(self, stream: BinaryIO, depth: int = 2) -> None:
        self._queue: queue.Queue[tuple[bool, Any]] = queue.Queue(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(stream,), name="neardup-read", daemon=True
        )
        self._thread.start()

    def _run(self, stream: BinaryIO) -> None:
        try:
            while not self._stop.is_set():
                data = stream.read(1 << 22)
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


class _Tee(io.RawIOBase):
    """Reads from one stream while copying what it reads to another (stdin to its spool)."""

    def __init__(self, source: BinaryIO, copy: IO[bytes]) -> None:
        self._source, self._copy = source, copy

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = (
            self._source.read1(len(buffer))
            if hasattr(self._source, "read1")
            else self._source.read(len(buffer))
        )
        n = len(data)
        buffer[:n] = data
        self._copy.write(data)
        return n


def _replay_chunks(
    docs: Iterator[tuple[int, Any, str | None]], want_texts: set[int] | frozenset[int]
) -> Iterator[tuple[int, list[Any], dict[int, str]]]:
    """Groups (document number, id, text-or-None) into chunks for :meth:`Input.replay`."""
    start, ids, texts = 0, [], {}
    n = 0
    for number, doc_id, text in docs:
        ids.append(doc_id)
        if text is not None and number in want_texts:
            texts[number] = text
        n = number + 1
        if len(ids) >= CHUNK_DOCS:
            yield start, ids, texts
            start, ids, texts = n, [], {}
    if ids:
        yield start, ids, texts


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
        reader: Any = _Prefetch(stream) if stream is not raw else stream
        lineno = 0
        pending = b""
        try:
            while True:
                try:
                    data = reader.read(1 << 22)
                except (OSError, EOFError, ValueError, zlib.error) as err:
                    raise self._read_error(err, stream is not raw) from None
                if not data:
                    if pending:
                        yield lineno + 1, pending, 1
                    break
                if pending:
                    data = pending + data
                cut = data.rfind(b"\n") + 1
                pending = data[cut:]
                if not cut:
                    continue
                block = data[: cut - 1]
                count = block.count(b"\n") + 1
                yield lineno + 1, block, count
                lineno += count
                if raw.seekable():
                    self.bytes_read = raw.tell()
        finally:
            # A helper thread still blocked in a read (a pipe that went quiet, then Ctrl-C) holds
            # the stream's lock: leave the stream to the end of the process rather than wait.
            if reader is stream or reader.close():
                if stream is not raw:
                    stream.close()
                if raw is not self._spool:
                    raw.close()
            self.bytes_read = self.size or self.bytes_read

    def fingerprint_chunks(
        self,
        hasher: Any,
        threads: int | None,
        slow: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch: Callable[[], tuple[int, int] | None] = lambda: None,
    ) -> Iterator[tuple[Chunk, Digest]] | None:
        """The first pass with the digests made in the core: (chunk without its documents,
        digests) per block, or None when this input or hasher needs the Python path (several
        fields, a Python tokenizer). Lines the core leaves to Python (not ASCII, or anything it
        does not read the plain way) are read and checked as on that path, and ``slow(chunk)``
        digests them: (the chunk of those it keeps, their digests). While ``sketch()`` gives
        ``(ngram, size)``, the digests hold each document's shingle sketch too."""
        if self.fields is not None or hasher.fields is not None or hasher.tokenizer is not None:
            return None
        return self._fingerprint_chunks(hasher, threads, slow, sketch)

    def _fingerprint_chunks(
        self,
        hasher: Any,
        threads: int | None,
        slow_path: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch_now: Callable[[], tuple[int, int] | None],
    ) -> Iterator[tuple[Chunk, Digest]]:
        core = hasher._inner
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
                    np.zeros(count, np.uint64),
                    (np.zeros(count + 1, np.uint64), np.zeros(0, np.uint32))
                    if sketch is not None
                    else None,
                )
            else:
                kinds, fps, lengths, starts, keys, sketches = _core.jsonl_fingerprints(
                    core, data, self.text_field, self.id_field, hasher.casefold, sketch, threads
                )
                digest = Digest.of(fps, keys, sketches)
            slow = np.flatnonzero(kinds == 2)
            rows = np.flatnonzero(kinds == 1)
            positions = rows + first
            nbytes = int(lengths[rows].sum(dtype=np.int64))
            lengths = lengths[rows]
            digest = digest.take(rows)
            if len(slow):
                chunk = Chunk()
                for index in slow.tolist():
                    if lines is None:
                        assert starts is not None
                        line = data[int(starts[index]) : int(starts[index + 1]) - 1]
                    else:
                        line = lines[index]
                    got = self._record(first + index, line)
                    if got is not None:
                        text = got[0]
                        chunk.docs.append(text)
                        chunk.positions.append(first + index)
                        chunk.lengths.append(len(text))
                        chunk.nbytes += len(text.encode("utf-8", "surrogatepass"))
                if chunk.docs:
                    chunk, more = slow_path(chunk)
                    order = np.argsort(np.concatenate([positions, chunk.positions]), kind="stable")
                    positions = np.concatenate([positions, chunk.positions])[order]
                    lengths = np.concatenate([lengths, np.asarray(chunk.lengths, np.uint32)])[order]
                    nbytes += chunk.nbytes
                    digest = Digest.concat([digest, more]).take(order)
            if len(positions):
                yield (
                    Chunk(positions=positions.tolist(), lengths=lengths.tolist(), nbytes=nbytes),
                    digest,
                )

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
        at = 0
        for first, data, count in self._raw_blocks(True):
            on_block()
            end = int(np.searchsorted(lines, first + count, side="left"))
            if end == at:
                continue
            index = lines[at:end] - first
            here = rows[at:end]
            at = end
            wanted = np.zeros(count, bool)
            wanted[index] = True
            kinds, _, _, starts, _, made = _core.jsonl_fingerprints(
                hasher._inner,
                data,
                self.text_field,
                self.id_field,
                hasher.casefold,
                spec,
                threads,
                wanted,
            )
            assert made is not None
            offsets, hashes = made
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
            self.bad(lineno, _utf8_reason(line, err))
            return None
        try:
            record = json.loads(text)
        except ValueError as err:
            msg = getattr(err, "msg", str(err))
            self.bad(lineno, f"malformed JSON: {msg} (column {getattr(err, 'colno', '?')})")
            return None
        except RecursionError:
            self.bad(lineno, NESTING_TOO_DEEP)
            return None
        if not isinstance(record, dict):
            self.bad(lineno, f"expected a JSON object, got {_type_name(record)}")
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
        writer = _RawWriter(output, output_compression) if output is not None else None
        skipped = self._skipped
        keep_bytes = (
            keep.astype(bool).tobytes() if keep is not None and writer is not None else None
        )
        parse_all = ids and self.id_field is not None
        number = 0
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
                            chunk_texts[number] = _joined(record, self.text_field, self.fields)
                    else:
                        chunk_ids.append(None)
                    number += 1
                if writer is not None and out:
                    out.append(b"")
                    writer.write(b"\n".join(out))
                if chunk_ids:
                    yield start, chunk_ids, chunk_texts
        finally:
            if writer is not None:
                writer.close()


def _joined(record: dict[str, Any], text_field: str, fields: list[str] | None) -> str:
    if fields is None:
        return str(record.get(text_field, ""))
    return "\n".join(str(record[f]) for f in fields if record.get(f))


class _RawWriter:
    """Bytes to a file, through gzip or zstd if asked. Compression runs in a helper thread (zlib
    and zstd release the GIL), fed 1 MB at a time, while the job goes on reading."""

    def __init__(self, path: str, compression: str | None) -> None:
        self._raw = open(path, "wb", buffering=1 << 20) if path != "-" else sys.stdout.buffer
        self._stream = _compressed(self._raw, compression)  # type: ignore[arg-type]
        self._buffer: list[bytes] = []
        self._size = 0
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if self._stream is not self._raw:
            self._queue: queue.Queue[bytes | None] = queue.Queue(2)
            self._thread = threading.Thread(target=self._run, name="neardup-write", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            if self._error is None:
                try:
                    self._stream.write(data)
                except BaseException as err:  # raised again in the writing thread
                    self._error = err

    def write(self, data: bytes) -> None:
        if self._thread is None:
            self._stream.write(data)
            return
        self._buffer.append(data)
        self._size += len(data)
        if self._size >= 1 << 20:
            self._hand_over()

    def _hand_over(self) -> None:
        if self._error is not None:
            raise self._error
        if self._buffer:
            self._queue.put(b"".join(self._buffer))
            self._buffer, self._size = [], 0

    def close(self) -> None:
        try:
            if self._thread is not None:
                try:
                    self._hand_over()
                finally:
                    self._queue.put(None)
                    self._thread.join()
                if self._error is not None:
                    raise self._error
            if self._stream is not self._raw:
                self._stream.close()
        finally:
            if self._raw is sys.stdout.buffer:
                self._raw.flush()
            else:
                self._raw.close()


class CsvInput(Input):
    """A header row, then one document per row (quoted fields may span lines)."""

    delimiter = ","

    def _rows(self, again: bool) -> Iterator[tuple[int, list[str], list[str]]]:
        """(first line, header, row) of every row. With on_error="skip", a line of invalid UTF-8
        is read with replacement characters and its row skipped (in both passes alike)."""
        raw, stream = self._stream(again)
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        counter = [0]
        undecodable: dict[int, str] = {}

        def lines() -> Iterator[str]:
            for line in stream:
                counter[0] += 1
                if counter[0] == 1 and line.startswith(codecs.BOM_UTF8):
                    line = line[len(codecs.BOM_UTF8) :]  # Excel's mark: not part of the first name
                try:
                    yield line.decode("utf-8")
                except UnicodeDecodeError as err:
                    if self.on_error != "skip" or counter[0] == 1:
                        raise InputError(self.name, _utf8_reason(line, err), counter[0]) from None
                    undecodable[counter[0]] = _utf8_reason(line, err)
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
            if stream is not raw:
                stream.close()
            if raw is not self._spool:
                raw.close()
            self.bytes_read = self.size or self.bytes_read

    def _records(self, again: bool, raw: bool) -> Iterator[tuple[int, Any, Any, Any]]:
        checked = False
        for line, header, row in self._rows(again):
            if not checked:
                self._resolve_auto_id(header)
                need = [self.text_field] if self.fields is None else []
                if self.id_field is not None:
                    need.append(self.id_field)
                missing = [name for name in need if name not in header]
                if missing:
                    raise InputError(
                        self.name, f"no column {missing[0]!r} (columns: {', '.join(header)})", 1
                    )
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

    def replay(self, keep=None, output=None, output_compression=None, ids=False, texts=frozenset()):  # type: ignore[no-untyped-def]
        raw_writer = _RawWriter(output, output_compression) if output is not None else None
        text_out = (
            io.TextIOWrapper(_Unclosed(raw_writer), encoding="utf-8", newline="")
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
                text = _joined(record, self.text_field, self.fields) if number in texts else None
                yield number, record.get(self.id_field) if self.id_field else None, text
                number += 1

        try:
            yield from _replay_chunks(docs(), texts)
        finally:
            if text_out is not None:
                text_out.flush()
                text_out.detach()
            if raw_writer is not None:
                raw_writer.close()


class _Unclosed(io.RawIOBase):
    """A writable wrapper that a TextIOWrapper can own without closing the writer beneath."""

    def __init__(self, writer: _RawWriter | None) -> None:
        self._writer = writer

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        assert self._writer is not None
        self._writer.write(bytes(data))
        return len(data)


class TsvInput(CsvInput):
    delimiter = "\t"


class ParquetInput(Input):
    """A Parquet file, read batch by batch; positions are rows, from 1."""

    unit = "row"

    def _file(self, again: bool) -> Any:
        pa = _pyarrow()
        if self.path == "-":
            if self._spool is None:  # Parquet needs to seek: spool stdin first
                self._spool = tempfile.TemporaryFile(prefix="neardup-stdin-")
                shutil.copyfileobj(sys.stdin.buffer, self._spool, 1 << 20)
            self._spool.seek(0)
            source: Any = self._spool
        else:
            self._open_raw(again).close()
            source = self.path
        try:
            return pa.parquet.ParquetFile(source)
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
            for batch in pf.iter_batches(batch_size=CHUNK_DOCS, columns=columns):
                yield row, batch
                row += batch.num_rows
                if self.size:
                    self.bytes_read = int(self.size * row / total)
        except OSError as err:
            raise InputError(
                self.name, f"cannot read Parquet data ({err})", row + 1, "row"
            ) from None

    def _values(self, first: int, name: str, column: Any, bad: set[int]) -> list[Any]:
        """A column's values; a value of invalid UTF-8 is a bad row (its position added to ``bad``)."""
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
                    first + offset + 1,
                    f"column {name!r} holds invalid UTF-8: byte 0x{data[err.start]:02x} at byte "
                    f"{err.start + 1} cannot start or continue a character",
                )
                bad.add(first + offset + 1)
                values.append(None)
        return values

    def _batch_docs(self, first: int, batch: Any) -> Iterator[tuple[int, Any, Any]]:
        bad: set[int] = set()
        cols = {
            name: self._values(first, name, batch.column(name), bad) for name in batch.schema.names
        }
        for offset in range(batch.num_rows):
            position = first + offset + 1
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
        pa = _pyarrow()
        pf = self._file(True)
        skipped = np.fromiter(sorted(self._skipped), np.int64, len(self._skipped))
        writer = None
        number = 0
        try:
            if output is not None and keep is not None:
                writer = pa.parquet.ParquetWriter(output, pf.schema_arrow, compression="zstd")
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
                    batch_texts[want] = _joined(record, self.text_field, self.fields)
                yield number, batch_ids, batch_texts
                number += n
        finally:
            if writer is not None:
                writer.close()


class TxtInput(Input):
    """A folder of .txt files, one document per file, in order of their relative paths; ids are
    the relative paths. Positions are file numbers (from 1); messages name the file and line."""

    unit = "file"

    def __init__(self, path: str, **options: Any) -> None:
        super().__init__(path, **options)
        self.id_field = "path"
        self._files: list[str] | None = None

    @property
    def size(self) -> int | None:
        try:
            return sum(os.path.getsize(os.path.join(self.path, f)) for f in self.files())
        except OSError:  # a file gone or unreadable: the read says which, at its turn
            return None

    def files(self) -> list[str]:
        if self._files is None:
            if not os.path.isdir(self.path):
                raise InputError(self.name, "no such folder")
            found = []
            for root, dirs, names in os.walk(self.path, onerror=None):
                dirs.sort()
                for name in names:
                    if name.endswith(".txt") and not name.startswith("."):
                        found.append(os.path.relpath(os.path.join(root, name), self.path))
            self._files = sorted(found, key=lambda p: p.split(os.sep))
        return self._files

    def bad(
        self, position: int | None, reason: str, line: int | None = None, relpath: str | None = None
    ) -> None:
        name = os.path.join(self.name, relpath) if relpath else self.name
        err = InputError(name, reason, line, "line")
        if self.on_error != "skip" or position is None:
            raise err
        self.errors.append(err)
        self._skipped.add(position)

    def skip(self, position: int, reason: str) -> None:
        self.bad(position, reason, None, self.files()[position - 1])

    def _read(self, number: int, relpath: str) -> str | None:
        full = os.path.join(self.path, relpath)
        try:
            with open(full, "rb") as f:
                data = f.read()
        except OSError as err:
            self.bad(number, f"cannot read: {(err.strerror or str(err)).lower()}", None, relpath)
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
                    shutil.copyfile(os.path.join(self.path, relpath), target)
                text = None
                if number in texts:
                    with open(os.path.join(self.path, relpath), "rb") as f:
                        text = f.read().decode("utf-8")
                yield number, relpath, text
                number += 1

        yield from _replay_chunks(docs(), texts)


_INPUTS: dict[str, type[Input]] = {
    "jsonl": JsonlInput,
    "csv": CsvInput,
    "tsv": TsvInput,
    "parquet": ParquetInput,
    "txt": TxtInput,
}


def open_input(path: str, format: str | None = None, **options: Any) -> Input:
    """The :class:`Input` for a path (``"-"`` for stdin), its format from the extension unless
    given. Raises :class:`InputError` when the format cannot be told."""
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
        _pyarrow()
    compression = compression_of(path) if path != "-" and format != "parquet" else None
    if compression == "zstd":
        _zstd_reader(io.BytesIO(b""))  # a clear message now if zstandard is missing
    return _INPUTS[format](path, format=format, compression=compression, **options)


class Outputs:
    """Outputs written as temporary files beside their final names and renamed into place
    together by :meth:`commit`; anything not committed is removed (on error or Ctrl-C)."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, str, bool]] = []

    def reserve(self, final: str, directory: bool = False) -> str:
        """A temporary path in ``final``'s folder, to write ``final`` into."""
        if final == "-":
            return "-"
        parent = os.path.dirname(os.path.abspath(final))
        base = os.path.basename(final)
        if directory and os.path.exists(final) and (not os.path.isdir(final) or os.listdir(final)):
            raise FileExistsError(
                f"{final}: exists and is not an empty folder; remove it or name another"
            )
        try:
            if directory:
                tmp = tempfile.mkdtemp(prefix=f".{base}.", suffix=".neardup-tmp", dir=parent)
            else:
                fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".neardup-tmp", dir=parent)
                os.close(fd)
        except OSError as err:  # named by the path the user gave, not the hidden temporary one
            raise OSError(err.errno, err.strerror, final) from None
        self._pending.append((tmp, final, directory))
        return tmp

    def commit(self) -> None:
        """Renames every output into place, with Ctrl-C held off until all are there."""
        mask = umask()
        blocked = {signal.SIGINT, signal.SIGTERM}
        old = (
            signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
            if hasattr(signal, "pthread_sigmask")
            else None
        )
        try:
            for tmp, final, directory in self._pending:
                os.chmod(tmp, (0o777 if directory else 0o666) & ~mask)
                if directory and os.path.isdir(final):
                    os.rmdir(final)
                os.replace(tmp, final)
            self._pending = []
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def abort(self) -> None:
        for tmp, _final, directory in self._pending:
            try:
                shutil.rmtree(tmp) if directory else os.unlink(tmp)
            except OSError:
                pass
        self._pending = []

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.abort()


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class TableWriter:
    """Rows of named columns to CSV/TSV, JSONL (.gz/.zst) or Parquet, by the file's extension."""

    def __init__(self, path: str, final_name: str, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.format = self.check_name(final_name)
        self._parquet: Any = None
        self._path = path
        if self.format == "parquet":
            self._pa = _pyarrow()
            return
        self._raw = _RawWriter(path, compression_of(final_name) if final_name != "-" else None)
        if self.format in ("csv", "tsv"):
            self._text = io.TextIOWrapper(_Unclosed(self._raw), encoding="utf-8", newline="")  # type: ignore[type-var]
            self._csv = csv.writer(self._text, delimiter="," if self.format == "csv" else "\t")
            self._csv.writerow(self.columns)

    @staticmethod
    def check_name(name: str) -> str:
        """The table format a file name asks for; ValueError if it names none."""
        fmt = format_of(name) if name != "-" else "csv"
        if fmt not in ("csv", "tsv", "jsonl", "parquet"):
            raise ValueError(
                f"{name}: name it .csv, .tsv, .jsonl or .parquet (optionally .gz or .zst)"
            )
        if fmt == "parquet":
            _pyarrow()
        return fmt

    def write(self, data: dict[str, Any]) -> None:
        """One batch: a list or array per column, all of one length."""
        if self.format == "parquet":
            table = self._pa.table({c: self._pa.array(_plain(data[c])) for c in self.columns})
            if self._parquet is None:
                self._parquet = self._pa.parquet.ParquetWriter(
                    self._path, table.schema, compression="zstd"
                )
            self._parquet.write_table(table)
            return
        cols = [_plain(data[c]) for c in self.columns]
        if self.format == "jsonl":
            dumps = json.dumps
            self._raw.write(
                "".join(
                    dumps(dict(zip(self.columns, row)), ensure_ascii=False) + "\n"
                    for row in zip(*cols)
                ).encode()
            )
        else:
            self._csv.writerows(zip(*cols))

    def close(self) -> None:
        if self.format == "parquet":
            if self._parquet is None:
                self._parquet = self._pa.parquet.ParquetWriter(
                    self._path, self._pa.schema([(c, self._pa.string()) for c in self.columns])
                )
            self._parquet.close()
            return
        if self.format in ("csv", "tsv"):
            self._text.flush()
            self._text.detach()
        self._raw.close()


def _plain(values: Any) -> list[Any]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def hex_fingerprints(fps: np.ndarray) -> list[str]:
    """Fingerprints as 16 lowercase hex digits (exact in any JSON or CSV reader)."""
    return [f"{v:016x}" for v in fps.tolist()]


Progress = Callable[[int], None]
