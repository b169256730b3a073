"""The scratch folder of one Dask run: a fresh subfolder of ``scratch=`` (``--scratch``), or of
the temporary folder, named for the run (``neardup-run-PID-RANDOM``) and holding a file that
names its machine and process. The run writes its files there and removes the folder when it
ends; a later run removes the folders of runs whose process is gone (a ``kill -9``). Nothing
outside a run's own folder is ever removed, so runs can share ``--scratch`` and a user's files
there are left alone."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator

from ..io.outputs import OLD_STYLE_AGE, _alive, _host

#: The start of every run folder's name.
PREFIX = "neardup-run-"

#: The file of a run folder that names its run: ``HOST PID``.
OWNER = "run.owner"

#: The default scratch folders of earlier releases (``neardup-dask-RANDOM`` in the temporary
#: folder), which name no process: removed once untouched for :data:`OLD_STYLE_AGE`.
OLD_PREFIX = "neardup-dask-"


@contextlib.contextmanager
def run_folder(scratch: str | os.PathLike[str] | None) -> Iterator[str]:
    """A fresh folder for this run's scratch files inside ``scratch`` (made if missing; default:
    the temporary folder), removed with everything in it when the run ends, however it ends.
    Removes first the folders that runs of dead processes left there."""
    parent = tempfile.gettempdir() if scratch is None else os.fspath(scratch)
    os.makedirs(parent, exist_ok=True)
    remove_stale_runs(parent)
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent)
    try:
        with open(os.path.join(folder, OWNER), "w", encoding="utf-8") as owner:
            owner.write(f"{_host()} {os.getpid()}\n")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stale(path: str, name: str) -> bool:
    """Whether the folder ``path`` (named ``name``) is a run folder whose run is over: its
    process, on this machine, is gone. A folder with no owner file yet (a run killed the moment
    it made it), or a default scratch folder of an earlier release, once untouched for a day."""
    if name.startswith(OLD_PREFIX):
        return os.path.dirname(path) == tempfile.gettempdir() and _old(path)
    try:
        with open(os.path.join(path, OWNER), encoding="utf-8") as owner:
            host, _, pid = owner.read().strip().partition(" ")
    except FileNotFoundError:
        return _old(path)
    except (OSError, UnicodeDecodeError):
        return False
    return host == _host() and pid.isdigit() and not _alive(int(pid))


def _old(path: str) -> bool:
    try:
        return time.time() - os.lstat(path).st_mtime > OLD_STYLE_AGE
    except OSError:
        return False


def remove_stale_runs(parent: str) -> list[str]:
    """Removes the run folders in ``parent`` that runs of dead processes left (see
    :func:`_stale`); returns their paths. Other runs' folders and every other file stay."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith((PREFIX, OLD_PREFIX)):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        if _stale(entry.path, entry.name):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed
