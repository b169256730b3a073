"""Outputs: writers on a helper thread, atomic outputs renamed into place when a job succeeds,
and the tables of ids and values the commands write."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import math
import os
import queue
import re
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
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
        self.name = "<stdout>" if path == "-" else final_name(path)
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
        with self._named():
            if self._thread is None:
                self._stream.write(data)
                return
            self._buffer.append(data)
            self._size += len(data)
            if self._size >= 1 << 20:
                self._hand_over()

    @contextlib.contextmanager
    def _named(self) -> Iterator[None]:
        """An OSError writing (a full disk) names the output, not its hidden temporary file."""
        try:
            yield
        except OSError as err:
            if err.filename is not None and err.filename != self._raw_name():
                raise
            raise type(err)(err.errno, err.strerror or str(err), self.name) from None

    def _raw_name(self) -> Any:
        return getattr(self._raw, "name", None)

    def _hand_over(self) -> None:
        if self._error is not None:
            raise self._error
        if self._buffer:
            self._queue.put(b"".join(self._buffer))
            self._buffer, self._size = [], 0

    def close(self) -> None:
        with self._named():
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

    def discard(self) -> None:
        """Closes after a failure elsewhere, raising nothing: the job's own error is reported
        and the temporary file removed (a full disk would otherwise fail this close too)."""
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the job's error is the one to report
            pass


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


#: The end of every temporary name: ``.NAME.HOST-PID.RANDOM.neardup-tmp``, hidden, beside the
#: file it becomes (a symlink's target, for a symlink).
TMP_SUFFIX = ".neardup-tmp"


def _host() -> str:
    """This machine's name as a temporary name holds it (letters, digits, ``_``)."""
    name = "".join(c if c.isascii() and c.isalnum() else "_" for c in socket.gethostname())
    return name[:32] or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


#: Temporary files of earlier releases name no machine and no process (``.NAME.RANDOM.neardup-tmp``
#: from Python, ``NAME.tmp-PID-N`` from the core), so whether their run is still going cannot be
#: asked: they are removed once untouched for this long, which no run leaves a file it still
#: writes (a run writes each output from start to end, then renames them all within seconds).
OLD_STYLE_AGE = 24 * 3600

#: ``tempfile``'s random part: 8 characters of its alphabet.
_RANDOM = re.compile(r"[a-z0-9_]{8}")


def _old_style(name: str, base: str) -> int | None:
    """Whether ``name`` is a temporary file an earlier release left for the output ``base``:
    None if not, else the pid it names (0 for none)."""
    python = f".{base}."
    if name.startswith(python) and name.endswith(TMP_SUFFIX):
        middle = name[len(python) : -len(TMP_SUFFIX)]
        return 0 if _RANDOM.fullmatch(middle) else None
    core = f"{base}.tmp-"
    if name.startswith(core):
        pid, _, n = name[len(core) :].partition("-")
        return int(pid) if pid.isdigit() and n.isdigit() else None
    return None


def _untouched_for(path: str) -> float:
    """Seconds since ``path`` (or, for a folder, anything directly in it) last changed."""
    newest = os.lstat(path).st_mtime
    if os.path.isdir(path) and not os.path.islink(path):
        with os.scandir(path) as entries:
            for entry in entries:
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    return time.time() - newest


def remove_stale(target: str) -> list[str]:
    """Removes the temporary files (and folders) that killed runs writing ``target`` left beside
    it: those named for it whose process (on this machine) is gone, and those of earlier
    releases (which name no machine) untouched for :data:`OLD_STYLE_AGE` whose process, if they
    name one, is not running here. Returns their paths."""
    parent = os.path.dirname(target) or "."
    base = os.path.basename(target)
    prefix = f".{base}.{_host()}-"
    removed: list[str] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(parent, name)
        if name.startswith(prefix) and TMP_SUFFIX in name[len(prefix) :]:
            pid = name[len(prefix) :].split(".", 1)[0]
            if not pid.isdigit() or _alive(int(pid)):
                continue
        else:
            old = _old_style(name, base)
            try:
                if old is None or (old and _alive(old)) or _untouched_for(path) < OLD_STYLE_AGE:
                    continue
            except OSError:
                continue
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    return removed


def target_of(final: str) -> str:
    """The file an output replaces: ``final``, or the file a symlink ``final`` points to (written
    through, so that every other path to it sees the new contents)."""
    path = os.path.abspath(final)
    return os.path.realpath(path) if os.path.islink(path) else path


def check_replaceable(final: str, directory: bool = False) -> None:
    """Refuses (ValueError) an output that would replace a device, FIFO or socket, and
    (IsADirectoryError) a file output naming a folder: renaming over them would replace or fail."""
    try:
        st = os.stat(final)
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(st.st_mode):
        if not directory:
            raise IsADirectoryError(errno.EISDIR, "is a folder; name a file", final)
        return
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(
            f"{final}: names a device, FIFO or socket, which an output would replace; give a file"
        )


#: Set by :meth:`Outputs.commit` as it starts renaming (every check passed); the command clears
#: it as it starts, and its SIGINT and SIGTERM handlers end a run only while it is clear
#: (:mod:`neardup.cli.app`): a run renaming its outputs has succeeded, whatever comes after.
renaming = threading.Event()


class Outputs:
    """Outputs written as temporary files beside their final names and renamed into place
    together by :meth:`commit`; anything not committed is removed (on error or Ctrl-C).

    A temporary file is named ``.NAME.HOST-PID.RANDOM.neardup-tmp``; reserving a name first
    removes those a killed run (its process gone) left for the same output. An output that is a
    symlink is written through: its target is replaced, in the target's folder. A replaced file
    keeps its mode and, where the system allows, its owner and group."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, str, bool, str]] = []

    def reserve(self, final: str, directory: bool = False) -> str:
        """A temporary path in the folder of ``final`` (or of its target, for a symlink), to
        write ``final`` into."""
        if final == "-":
            return "-"
        target = target_of(final)
        parent = os.path.dirname(target)
        base = os.path.basename(target)
        if directory and os.path.exists(final) and (not os.path.isdir(final) or os.listdir(final)):
            raise FileExistsError(
                f"{final}: exists and is not an empty folder; remove it or name another"
            )
        check_replaceable(target, directory)
        remove_stale(target)
        prefix = f".{base}.{_host()}-{os.getpid()}."
        try:
            if directory:
                tmp = tempfile.mkdtemp(prefix=prefix, suffix=TMP_SUFFIX, dir=parent)
            else:
                fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TMP_SUFFIX, dir=parent)
                os.close(fd)
        except OSError as err:  # named by the path the user gave, not the hidden temporary one
            raise OSError(err.errno, err.strerror, final) from None
        self._pending.append((tmp, final, directory, target))
        return tmp

    def commit(self) -> None:
        """Renames every output into place, in the order they were reserved, with Ctrl-C held
        off until all are there (and, for the command, ignored from then on: see
        :data:`renaming`). Every output is checked first (still replaceable), so a failure
        replaces none of them."""
        mask = umask()
        for _tmp, final, directory, target in self._pending:
            check_replaceable(target, directory)
            if directory and os.path.isdir(target) and os.listdir(target):
                raise FileExistsError(
                    f"{final}: exists and is not an empty folder; remove it or name another"
                )
        for tmp, _final, directory, target in self._pending:
            _take_mode(tmp, target, (0o777 if directory else 0o666) & ~mask)
        # Before the mask: a signal's handler run from here on (one another thread received
        # included) finds the run renaming and ends nothing.
        renaming.set()
        blocked = {signal.SIGINT, signal.SIGTERM}
        old = (
            signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
            if hasattr(signal, "pthread_sigmask")
            else None
        )
        try:
            for tmp, _final, directory, target in self._pending:
                if directory and os.path.isdir(target):
                    os.rmdir(target)
                os.replace(tmp, target)
            self._pending = []
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def abort(self) -> None:
        for tmp, _final, directory, _target in self._pending:
            try:
                shutil.rmtree(tmp) if directory else os.unlink(tmp)
            except OSError:
                pass
        self._pending = []

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.abort()


def final_name(path: str) -> str:
    """The output a temporary file of :class:`Outputs` is written for (``path`` itself if it is
    not one): errors name what the user named."""
    match = re.fullmatch(
        r"\.(.+)\.[A-Za-z0-9_]+-\d+\.[^.]+" + re.escape(TMP_SUFFIX) + r"(\.tmp-\d+-\d+)?",
        os.path.basename(path),
    )
    return os.path.join(os.path.dirname(path), match.group(1)) if match else path


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """Calls ``write(tmp)`` to write a file, then renames it to ``path`` (through a symlink,
    keeping the mode and owner of the file replaced; see :class:`Outputs`). A device, FIFO or
    socket at ``path`` is refused (ValueError), a folder is IsADirectoryError; errors name
    ``path``, not the temporary file."""
    with Outputs() as outputs:
        tmp = outputs.reserve(path)
        try:
            write(tmp)
        except OSError as err:
            raise type(err)(err.errno, err.strerror, path) from None
        outputs.commit()


def _take_mode(tmp: str, target: str, default: int) -> None:
    """Gives ``tmp`` the mode (and owner and group, where allowed) of the file it replaces, or
    ``default`` for a new one."""
    try:
        old = os.stat(target)
    except OSError:
        os.chmod(tmp, default)
        return
    if hasattr(os, "chown") and (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.chown(tmp, old.st_uid, old.st_gid)
        except OSError:
            try:  # not root: the group at least, if we are in it
                os.chown(tmp, -1, old.st_gid)
            except OSError:
                pass
    os.chmod(tmp, stat.S_IMODE(old.st_mode))


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
                values = _plain(data[c])
                wide = _past_64_bits(values)
                if wide is not None:
                    self._release()
                    raise InputError(
                        self._name,
                        f"column {c!r} cannot be written as Parquet: {wide} does not fit in 64 "
                        "bits; write a .csv or .jsonl table",
                    )
                try:
                    columns[c] = self._pa.array(values)
                except OverflowError:
                    # Integers in 0 .. 2**64 - 1 past int64's range: unsigned 64-bit ids.
                    columns[c] = self._pa.array(values, self._pa.uint64())
                except (
                    self._pa.ArrowInvalid,
                    self._pa.ArrowTypeError,
                    UnicodeEncodeError,
                ) as err:
                    self._release()
                    bad_row = next((r for r, v in enumerate(values) if not _encodable([v])), None)
                    if bad_row is not None:
                        failed = InputError(
                            self._name,
                            f"column {c!r} holds {values[bad_row]!r}, which is not valid Unicode "
                            "(a lone surrogate, which JSON's \\ud800 escape can hold): Parquet "
                            "and CSV cannot hold it; write a .jsonl table, which escapes it",
                        )
                        # The row of the batch, for a caller that can name its input line.
                        failed.row = bad_row  # type: ignore[attr-defined]
                        raise failed from None
                    raise InputError(
                        self._name,
                        f"column {c!r} cannot be written as Parquet ({err}): its values mix "
                        "types; write a .csv or .jsonl table",
                    ) from None
            table = self._pa.table(columns)
            if self._parquet is None:
                self._parquet = self._pa.parquet.ParquetWriter(
                    self._path, table.schema, compression="zstd"
                )
            elif not table.schema.equals(self._parquet.schema):
                cast = _cast(table, self._parquet.schema, self._pa)
                if cast is None:
                    self._release()
                    raise InputError(
                        self._name,
                        f"a column's type changed between rows ({self._parquet.schema.types} "
                        f"then {table.schema.types}): ids of mixed types cannot be written as "
                        "Parquet; write a .csv or .jsonl table",
                    )
                table = cast
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
                failed = InputError(
                    self._name,
                    f"the value {shown!r} is not valid Unicode (a lone surrogate, which JSON's "
                    "\\ud800 escape can hold): CSV cannot hold it; write a .jsonl table, which "
                    "escapes it",
                )
                # The row of the batch that holds it, for a caller that can name its input line.
                failed.row = next(  # type: ignore[attr-defined]
                    (r for r, row in enumerate(zip(*cols)) if not _encodable(row)), None
                )
                raise failed from None

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


def _encodable(row: Sequence[Any]) -> bool:
    try:
        for value in row:
            if isinstance(value, str):
                value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _plain(values: Any) -> list[Any]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def _past_64_bits(values: list[Any]) -> int | None:
    """The first integer of ``values`` that neither int64 nor uint64 holds, if any."""
    return next(
        (v for v in values if type(v) is int and not -(1 << 63) <= v < 1 << 64),
        None,
    )


def _cast(table: Any, schema: Any, pa: Any) -> Any:
    """``table`` as ``schema`` (a batch of int64 ids after uint64 ones, or the other way), or
    None where a value does not fit."""
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        return None


def hex_fingerprints(fps: np.ndarray) -> list[str]:
    """Fingerprints as 16 lowercase hex digits (exact in any JSON or CSV reader)."""
    return [f"{v:016x}" for v in fps.tolist()]
