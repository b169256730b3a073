"""What every format shares: the formats and chunk sizes, the input errors, :class:`Chunk` and
the :class:`Input` base class (opening, stdin spooling, records to chunks, replay)."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from ..digest import Digest
from ..errors import InputError, MissingExtraError
from ..lines import DEFAULT_MAX_RECORD_SIZE
from ..paths import special_kind
from .compression import _COMPRESSIONS, CompressedStreamError, decompressed, sniff

FORMATS = ("jsonl", "csv", "tsv", "parquet", "txt", "lines")


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
    ".txt": "lines",  # a text file: one document per line (a folder of .txt files: "txt")
}


def pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise MissingExtraError("Parquet needs pyarrow: pip install 'neardup[parquet]'") from None
    return pa


def format_of(path: str) -> str | None:
    """The format named by a path's extensions (a compression suffix is looked through)."""
    if path != "-" and os.path.isdir(path):
        return "txt"
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in _COMPRESSIONS:
        suffixes = suffixes[:-1]
    return _EXTENSIONS.get(suffixes[-1]) if suffixes else None


def utf8_reason(data: bytes, err: UnicodeDecodeError) -> str:
    return f"invalid UTF-8: byte 0x{data[err.start]:02x} at column {err.start + 1} cannot start or continue a character"


def type_name(value: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def fast_chunk(
    positions: np.ndarray,
    lengths: np.ndarray,
    nbytes: int,
    digest: Digest,
    slow: Chunk,
    slow_path: Callable[[Chunk], tuple[Chunk, Digest]],
) -> tuple[Chunk, Digest] | None:
    """A block of a fast path (the core's documents at ``positions``, their ``lengths``,
    ``nbytes`` and ``digest``), with the documents left to Python (``slow``, digested by
    ``slow_path``) put back in their places: (chunk without its documents, digests), or None
    when the block holds no document."""
    if slow.docs:
        slow, more = slow_path(slow)
        order = np.argsort(np.concatenate([positions, slow.positions]), kind="stable")
        positions = np.concatenate([positions, slow.positions])[order]
        lengths = np.concatenate([lengths, np.asarray(slow.lengths, np.uint32)])[order]
        nbytes += slow.nbytes
        digest = Digest.concat([digest, more]).take(order)
    if not len(positions):
        return None
    return Chunk(positions=positions.tolist(), lengths=lengths.tolist(), nbytes=nbytes), digest


def text_bytes(text: str) -> int:
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


#: (write one chunk with its fingerprints, close): what ``Input.fingerprint_writer`` returns.
FingerprintWriter = tuple[Callable[[Chunk, np.ndarray], None], Callable[[], None]]


class Input:
    """One input: a file, a folder or glob of files (:mod:`.files`), or stdin (``"-"``).

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
        max_record_size: the most bytes of one record (a JSONL or CSV line, a .txt file); a
            larger one is bad input (``FILE:LINE: record of more than N bytes``), found without
            holding it whole. Default 64 MiB.
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
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    ) -> None:
        if (
            isinstance(max_record_size, bool)
            or not isinstance(max_record_size, int)
            or max_record_size < 1
        ):
            raise ValueError(
                f"max_record_size must be a positive number of bytes, got {max_record_size!r}"
            )
        self.max_record_size = max_record_size
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
        # Files of a folder or glob that are not read (listed in ``errors`` too, and kept there).
        self.left_out: list[InputError] = []
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
            if sys.stdin is None:
                raise InputError(self.name, "standard input is closed")
            stdin = sys.stdin.buffer
            if self.replayable:
                self._spool = Spool(self.name)  # type: ignore[assignment]
                return _Tee(stdin, self._spool)  # type: ignore[return-value,arg-type]
            return stdin  # type: ignore[return-value]
        kind = special_kind(self.path)
        if kind is not None:  # a FIFO without a writer would wait forever; and INPUT is read twice
            raise InputError(
                self.name,
                f"is {kind}, not a file: give a file, or pipe the data to standard input (-)",
            )
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
                self.name, "is a folder, not a file: name the folder as INPUT to read its files"
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
            compression = sniff(raw)
        if compression is not None and hasattr(raw, "peek") and not raw.peek(1):
            raw.close()  # gzip and zstd read an empty file as no data: it is a truncated one
            raise InputError(
                self.name,
                f"truncated {compression} stream: the file is empty (even an empty text "
                f"compresses to a header)",
            )
        try:
            return raw, decompressed(raw, compression)
        except BaseException:
            raw.close()
            raise

    def _close_streams(self, raw: BinaryIO, stream: BinaryIO) -> None:
        """Closes what :meth:`_stream` opened (the stdin spool stays, for a second read) and
        counts the input as read."""
        if stream is not raw:
            stream.close()
        if raw is not self._spool:
            raw.close()
        self.bytes_read = self.size or self.bytes_read

    # -- errors -------------------------------------------------------------------------------

    def _read_error(self, err: BaseException, compressed: bool) -> InputError:
        """The error of a failed read: a truncated or corrupt compressed stream, or the system's."""
        if isinstance(err, CompressedStreamError):
            return InputError(self.name, str(err))
        if compressed:
            what = {"gzip": "gzip", "zstd": "zstd"}.get(self.compression or "", "compressed")
            return InputError(self.name, f"truncated or corrupt {what} stream ({err})")
        return InputError(self.name, f"cannot read: {getattr(err, 'strerror', None) or err}")

    def error_at(self, position: int, reason: str) -> InputError:
        """The error of the record at ``position`` (for a bad id found after reading)."""
        return InputError(self.name, reason, position, self.unit)

    def memory_error(self, err: MemoryError, positions: Callable[[int], int]) -> MemoryError:
        """The core's MemoryError naming the record it was reading (``FILE:LINE: out of memory:
        ...``): its ``item`` is an index of the call, which ``positions`` maps to a record's
        position; ``err`` itself when it names none."""
        item = getattr(err, "item", None)
        if item is None:
            return err
        return self.memory_error_at(err, positions(item))

    def memory_error_at(self, err: MemoryError, position: int) -> MemoryError:
        """A MemoryError met reading the record at ``position``, naming it."""
        return MemoryError(str(self.error_at(position, str(err) or "out of memory")))

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
                    position, f"{what} {self.text_field!r} is {type_name(text)}, expected a string"
                )
                return None
            return text
        doc = {}
        for name in self.fields:
            value = record.get(name)
            if value is not None and not isinstance(value, str):
                self.bad(
                    position, f"{what} {name!r} is {type_name(value)}, expected a string or null"
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
                text_bytes(doc)
                if isinstance(doc, str)
                else sum(text_bytes(v) for v in doc.values() if v)
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

    def skipped(self, position: int) -> bool:
        """Whether the record at ``position`` was skipped as bad."""
        return position in self._skipped

    def records(self, again: bool = True) -> Iterator[tuple[int, Any, Any, Any]]:
        """(position, document, id, raw record) of every record in order, read again unless
        ``again`` is false."""
        return self._records(again, False)

    def forget_errors(self) -> None:
        """Forgets the errors and skipped records of a read, before the input is read anew (the
        files left out stay listed)."""
        self.errors[:] = self.left_out
        self._skipped.clear()

    def named_ids(self, first_row: int, chunk_ids: list[Any]) -> list[Any]:
        """The ids by which the outputs name a chunk of :meth:`replay`'s documents: with an id
        field, its values as given (a null id stays null: a row number in its place could be
        another document's id); without one, the row numbers."""
        if self.id_field is not None:
            return list(chunk_ids)
        return list(range(first_row, first_row + len(chunk_ids)))

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

    def fingerprint_chunks(
        self,
        hasher: Any,
        threads: int | None,
        slow: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch: Callable[[], tuple[int, int] | None] = lambda: None,
        seen: Any = None,
    ) -> Iterator[tuple[Chunk, Digest]] | None:
        """The first pass with the digests made in the core (JSONL lines, Parquet's text column
        as it lies in Arrow's buffers): (chunk without its documents, digests) per block, or None
        when this format, input or hasher needs the Python path (several fields, a Python
        tokenizer). What the core leaves to Python (not ASCII, nulls, anything it does not read
        the plain way) is read and checked as on that path, and ``slow(chunk)`` digests it:
        (the chunk of those it keeps, their digests). While ``sketch()`` gives ``(ngram,
        size)``, the digests hold each document's shingle sketch too; ``seen`` (a
        ``_core.KeySet``, see :attr:`neardup.pipeline.FirstPass.seen`) spares the copies of
        texts it holds their fingerprint and sketch."""
        if self.fields is not None or hasher.fields is not None or hasher.tokenizer is not None:
            return None
        return self._fingerprint_chunks(hasher, threads, slow, sketch, seen)

    def _fingerprint_chunks(
        self,
        hasher: Any,
        threads: int | None,
        slow_path: Callable[[Chunk], tuple[Chunk, Digest]],
        sketch_now: Callable[[], tuple[int, int] | None],
        seen: Any,
    ) -> Iterator[tuple[Chunk, Digest]] | None:
        """The core's first pass of a format that has one; None here."""
        return None

    def fingerprint_writer(self, tmp: str, output: str, column: str) -> FingerprintWriter:
        """(write one chunk with its fingerprints, close) for the fingerprint command: each
        format writes to ``tmp`` (the temporary file of ``output``) the records of the chunks
        with a ``column`` of fingerprints added."""
        raise NotImplementedError


#: Free space a spool of standard input leaves on its disk at least: 2 GiB, or 5% of the disk
#: if that is more. Past it the job stops with an error rather than fill the disk.
SPOOL_KEEP_FREE = 2 << 30
SPOOL_KEEP_FREE_SHARE = 0.05


class Spool:
    """A temporary file (in the system's temporary folder, ``TMPDIR``) holding standard input
    for a second pass, removed when closed. It never fills its disk: every 64 MB written it
    checks the disk's free space, and stops with an :class:`InputError` where less than
    :data:`SPOOL_KEEP_FREE` (or :data:`SPOOL_KEEP_FREE_SHARE` of the disk) would be left."""

    CHECK_EVERY = 64 << 20

    def __init__(self, name: str) -> None:
        self.name = name
        self._file = tempfile.TemporaryFile(prefix="neardup-stdin-")
        self._written = 0
        self._unchecked = 0

    def write(self, data: bytes) -> int:
        self._unchecked += len(data)
        if self._unchecked >= self.CHECK_EVERY or self._written == 0:
            self._check(self._unchecked)
            self._unchecked = 0
        n = self._file.write(data)
        self._written += len(data)
        return n

    def _check(self, coming: int) -> None:
        try:
            st = os.fstatvfs(self._file.fileno())
        except (OSError, AttributeError):  # pragma: no cover - no statvfs (Windows)
            return
        free = st.f_bavail * st.f_frsize
        keep = max(SPOOL_KEEP_FREE, int(SPOOL_KEEP_FREE_SHARE * st.f_blocks * st.f_frsize))
        if free - coming < keep:
            self.close()
            raise InputError(
                self.name,
                f"standard input is kept in a temporary file for a second pass, and after "
                f"{self._written + coming:,} bytes the disk of the temporary folder "
                f"({tempfile.gettempdir()}) would have less than {keep >> 20:,} MB free; "
                "give the input as a file, or set TMPDIR to a folder on a larger disk",
            )

    def read(self, n: int = -1) -> bytes:
        return self._file.read(n)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)

    def close(self) -> None:
        self._file.close()


def spool_all(name: str, source: BinaryIO, magic: bytes = b"") -> Spool:
    """All of ``source`` copied to a :class:`Spool` (Parquet needs to seek); a stream that does
    not begin with ``magic`` is refused before anything is kept."""
    spool = Spool(name)
    try:
        first = True
        while True:
            data = source.read(1 << 20)
            if first and magic and not data.startswith(magic):
                raise InputError(
                    name, f"not a valid Parquet file: it does not begin with {magic.decode()}"
                )
            first = False
            if not data:
                return spool
            spool.write(data)
    except BaseException:
        spool.close()
        raise


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


def replay_chunks(
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


def joined(record: dict[str, Any], text_field: str, fields: list[str] | None) -> str:
    if fields is None:
        return str(record.get(text_field, ""))
    return "\n".join(str(record[f]) for f in fields if record.get(f))


Progress = Callable[[int], None]
