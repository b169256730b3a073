"""Outputs: writers on a helper thread, atomic outputs renamed into place when a job succeeds,
and the tables of ids and values the commands write."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from .base import format_of, pyarrow
from .compression import compressed, compression_of

try:  # the `fast` extra: JSONL tables written 7x faster, the same bytes
    import orjson as _orjson
except ImportError:  # pragma: no cover - the standard library's json writes them
    _orjson = None  # type: ignore[assignment]


class RawWriter:
    """Bytes to a file, through gzip or zstd if asked. Compression runs in a helper thread (zlib
    and zstd release the GIL), fed 1 MB at a time, while the job goes on reading."""

    def __init__(self, path: str, compression: str | None) -> None:
        self._raw = open(path, "wb", buffering=1 << 20) if path != "-" else sys.stdout.buffer
        self._stream = compressed(self._raw, compression)  # type: ignore[arg-type]
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


class Unclosed(io.RawIOBase):
    """A writable wrapper that a TextIOWrapper can own without closing the writer beneath."""

    def __init__(self, writer: RawWriter | None) -> None:
        self._writer = writer

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        assert self._writer is not None
        self._writer.write(bytes(data))
        return len(data)


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
        self._name = "<stdout>" if final_name == "-" else final_name
        if self.format == "parquet":
            self._pa = pyarrow()
            return
        self._raw = RawWriter(path, compression_of(final_name) if final_name != "-" else None)
        if self.format in ("csv", "tsv"):
            self._text = io.TextIOWrapper(Unclosed(self._raw), encoding="utf-8", newline="")  # type: ignore[type-var]
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
            pyarrow()
        return fmt

    def write(self, data: dict[str, Any]) -> None:
        """One batch: a list or array per column, all of one length."""
        if self.format == "parquet":
            columns = {}
            for c in self.columns:
                try:
                    columns[c] = self._pa.array(_plain(data[c]))
                except (self._pa.ArrowInvalid, self._pa.ArrowTypeError, UnicodeEncodeError) as err:
                    self._release()
                    raise InputError(
                        self._name,
                        f"column {c!r} cannot be written as Parquet ({err}): its values mix "
                        "types or are not valid Unicode; write a .csv or .jsonl table",
                    ) from None
            table = self._pa.table(columns)
            if self._parquet is None:
                self._parquet = self._pa.parquet.ParquetWriter(
                    self._path, table.schema, compression="zstd"
                )
            elif not table.schema.equals(self._parquet.schema):
                self._release()
                raise InputError(
                    self._name,
                    f"a column's type changed between rows ({self._parquet.schema.types} then "
                    f"{table.schema.types}): ids of mixed types cannot be written as Parquet; "
                    "write a .csv or .jsonl table",
                )
            self._parquet.write_table(table)
            return
        cols = [_plain(data[c]) for c in self.columns]
        if self.format == "jsonl":
            self._raw.write(jsonl_rows(self.columns, cols))
        else:
            try:
                self._csv.writerows(zip(*cols))
            except UnicodeEncodeError as err:
                self._release()
                shown = err.object[max(0, err.start - 20) : err.end + 20]
                raise InputError(
                    self._name,
                    f"the value {shown!r} is not valid Unicode (a lone surrogate, which JSON's "
                    "\\ud800 escape can hold): CSV cannot hold it; write a .jsonl table, which "
                    "escapes it",
                ) from None

    def _release(self) -> None:
        """Closes the file after a failed write (the job's Outputs remove it)."""
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the write's own error is the one to report
            pass

    def close(self) -> None:
        if getattr(self, "_closed", False):
            return
        self._closed = True
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


def jsonl_rows(names: Sequence[str], cols: list[list[Any]]) -> bytes:
    """Rows as JSON lines, compact (``{"id":1,"kept":true}``), UTF-8, a NaN or infinity as
    null (JSON has neither). orjson writes them where it is installed (the ``fast`` extra; 7x
    faster on a million rows) and can: the same bytes as the standard library's json, which
    writes the rest (a lone surrogate, escaped as \\ud800; an int past 64 bits; a float that
    orjson would spell without json's exponent)."""
    if _orjson is not None and cols and len(cols[0]) and _orjson_spells_as_json(cols):
        try:
            array = _orjson.dumps([dict(zip(names, row)) for row in zip(*cols)])
        except (TypeError, _orjson.JSONEncodeError):
            pass
        else:
            # One call for the batch, then a line per object: `},{"` only joins two objects,
            # since a quote inside a JSON string is always escaped (`\"`).
            return array[1:-1].replace(b'},{"', b'}\n{"') + b"\n"
    cols = [[None if type(v) is float and not math.isfinite(v) else v for v in c] for c in cols]
    lines = (dict(zip(names, row)) for row in zip(*cols))
    try:
        return "".join(
            json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in lines
        ).encode()
    except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800" escape): escaped, as read
        return "".join(
            json.dumps(dict(zip(names, row)), separators=(",", ":")) + "\n" for row in zip(*cols)
        ).encode()


def _orjson_spells_as_json(cols: list[list[Any]]) -> bool:
    """Whether every float is one orjson writes as json does: json's repr turns to an exponent
    below 1e-4 (``1e-05``), where orjson writes ``0.00001``."""
    for col in cols:
        for v in col:
            if type(v) is float and v != 0.0 and v == v and not 1e-4 <= abs(v) < 1e16:
                return False
    return True


def _plain(values: Any) -> list[Any]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def hex_fingerprints(fps: np.ndarray) -> list[str]:
    """Fingerprints as 16 lowercase hex digits (exact in any JSON or CSV reader)."""
    return [f"{v:016x}" for v in fps.tolist()]
