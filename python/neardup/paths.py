"""Files a command must not lose: outputs that overwrite neither the inputs nor each other, and
an index file updated by one writer at a time.

Every command that writes files calls :func:`check_outputs` once, before it reads anything,
with all its inputs and all its outputs; a file an option reads (``--stopwords``) is noted as an
input by :func:`note_input` when it is read, and checked too. Two paths are the same file when the system says so
(``os.path.samefile``: symlinks and hard links included) or, for paths that do not exist yet,
when their normalized real paths are equal (``out.csv`` and ``./dir/../out.csv``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import stat
from collections.abc import Callable, Iterator, Sequence

import click

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, writers are not serialised
    fcntl = None  # type: ignore[assignment]

__all__ = ["check_outputs", "locked", "note_input", "same_file", "special_kind"]

#: Extensions of the files commands write: an output so named that is a folder is refused.
_FILE_EXTENSIONS = frozenset(
    [".jsonl", ".csv", ".tsv", ".parquet", ".gz", ".zst", ".zstd", ".html", ".ndx", ".idx", ".json"]
)

#: Where the current command keeps the files its options read: ``(option, path)`` pairs.
_NOTED = "neardup.inputs"


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(os.path.abspath(path)))


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same inode, or the same normalized real path."""
    try:
        if os.path.samefile(a, b):
            return True
    except (OSError, ValueError):  # one does not exist (yet), or a path the system refuses
        pass
    return _real(a) == _real(b)


def special_kind(path: str, devices: bool = True) -> str | None:
    """What ``path`` names when it is neither a regular file nor a folder: "a FIFO (named pipe)",
    "a socket" or (with ``devices``) "a device"; None otherwise (or when it does not exist).
    Opening a FIFO without a writer waits for one forever: callers refuse them first."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if devices and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
        return "a device"
    return None


def note_input(option: str, path: str) -> None:
    """Notes a file read for an option of the running command (``--stopwords``), so that
    :func:`check_outputs` refuses an output naming it."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta.setdefault(_NOTED, []).append((option, path))


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _stdin_file() -> tuple[int, int] | None:
    """The identity of the regular file standard input reads (``- < x.jsonl``), if it is one."""
    try:
        st = os.fstat(0)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _piped_files() -> set[tuple[int, int]]:
    """The regular files open in the processes writing the pipe standard input reads (``cat
    x.jsonl | neardup dedup - -o x.jsonl``), as far as ``/proc`` shows them (Linux; empty
    elsewhere, or where standard input is no pipe). A process that has already written all of
    its file and exited cannot be seen."""
    try:
        st = os.fstat(0)
    except (OSError, ValueError):
        return set()
    if not stat.S_ISFIFO(st.st_mode) or not os.path.isdir("/proc/self/fd"):
        return set()
    pipe = (st.st_dev, st.st_ino)
    files: set[tuple[int, int]] = set()
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == me:
            continue
        seen: list[tuple[int, int]] = []
        writes_ours = False
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    fst = os.stat(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if (fst.st_dev, fst.st_ino) == pipe:
                    writes_ours = True
                elif stat.S_ISREG(fst.st_mode):
                    seen.append((fst.st_dev, fst.st_ino))
        except OSError:  # gone, or not ours to look at
            continue
        if writes_ours:
            files.update(seen)
    return files


def check_outputs(inputs: Sequence[str | None], outputs: Sequence[tuple[str, str | None]]) -> None:
    """Refuses (``click.UsageError``, status 2) an output that is an input or another output, or
    that names a device, FIFO or socket (outputs are renamed into place, which would replace it).

    Args:
        inputs: the paths the command reads (``None`` is left out; ``"-"``, stdin, counts
            when standard input is a regular file: ``- -o x.jsonl < x.jsonl``).
        outputs: ``(option, path)`` of every output the command writes, such as
            ``("--clusters", "c.csv")`` (``None`` and ``"-"``, stdout, are left out).
    """
    sources = [(p, p) for p in inputs if p is not None and p != "-"]
    # A glob's files are inputs too (an output named like one would replace it).
    sources += [
        (f"{p}: {match}", match)
        for p in inputs
        if p is not None and p != "-" and glob.has_magic(p) and not os.path.exists(p)
        for match in glob.glob(p, recursive=True)
    ]
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        sources += [(f"{option} {path}", path) for option, path in ctx.meta.get(_NOTED, [])]
    stdin = _stdin_file() if "-" in inputs else None
    piped = (
        _piped_files()
        if "-" in inputs and any(p not in (None, "-") and os.path.exists(p) for _, p in outputs)
        else set()
    )
    seen: list[tuple[str, str]] = []
    for option, path in outputs:
        if path is None or path == "-":
            continue
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            mode = None
        if (
            mode is not None
            and stat.S_ISDIR(mode)
            and os.path.splitext(path.rstrip("/\\"))[1].lower() in _FILE_EXTENSIONS
        ):
            # A folder named like a file: a file output would be renamed over it (only a
            # folder of .txt files, named without an extension, is written as a folder).
            raise click.UsageError(f"{path}: {option} is a folder; name a file")
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            # Outputs are renamed into place: that would replace a device or FIFO by a file.
            raise click.UsageError(
                f"{path}: {option} names a device, FIFO or socket; give a file (or - for stdout)"
            )
        if stdin is not None and mode is not None and _identity(path) == stdin:
            raise click.UsageError(
                f"{path}: {option} is the input (standard input is this file); neardup never overwrites its input"
            )
        if piped and mode is not None and _identity(path) in piped:
            raise click.UsageError(
                f"{path}: {option} is open in the process piping standard input (its input, "
                "it seems); neardup never overwrites its input: write to another file"
            )
        for name, source in sources:
            if same_file(path, source):
                raise click.UsageError(
                    f"{path}: {option} is the input ({name}); neardup never overwrites its input"
                )
            if mode is not None and stat.S_ISREG(mode) and _inside(path, source):
                raise click.UsageError(
                    f"{path}: {option} is a file of the input folder {name}; neardup never "
                    "overwrites its input"
                )
        for other_option, other in seen:
            if same_file(path, other):
                raise click.UsageError(
                    f"{path}: {option} names the same file as {other_option} {other}; give each output its own file"
                )
        seen.append((option, path))


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` lies inside ``folder``, a folder (links resolved)."""
    if not os.path.isdir(folder):
        return False
    inside = os.path.relpath(os.path.realpath(path), os.path.realpath(folder))
    return not inside.startswith(os.pardir) and inside != os.curdir


@contextlib.contextmanager
def locked(path: str, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Holds an exclusive lock on the file at ``path`` (``flock``), for a read-modify-replace.

    Writers replace the file by renaming a new one over it, so the lock is taken on the file
    the path names and taken again if the path names another file once it is held (a writer
    that held it has replaced it meanwhile). A path that is not a regular file is not locked:
    opening it is left to the caller, which reports what it is. ``waiting()`` is called once
    if another process holds the lock.
    """
    if fcntl is None:
        yield
        return
    while True:
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            yield
            return
        try:
            held = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if not stat.S_ISREG(held.st_mode):
            os.close(fd)  # before the caller runs: its error is the one to report
            yield
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting is not None:
                    waiting()
                    waiting = None
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                now = os.stat(path)
            except OSError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced while we waited: lock the file that is there now
    try:
        yield
    finally:
        os.close(fd)
