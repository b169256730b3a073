"""Issue 48: the end of a run. An update writes its outputs first and the index last, on one
machine and on Dask, so that an output that cannot be written leaves the index as it was; and a
run's success is decided by what it wrote: a signal that comes once the outputs are being
renamed into place ends nothing (status 0, the summary), one that comes before writes nothing
(status 130, the index unchanged). The signals are sent from inside the steps, not timed."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import neardup
from brute import family_corpus
from command import run
from neardup import DedupIndex

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

DASK = ["--workers", "1"]


def corpus(tmp_path: Path) -> tuple[Path, Path, list[str], list[str]]:
    """An index of half a corpus of near-duplicate families, the other half as new documents
    (``new.jsonl``, ids ``b0``...), and what one machine keeps of them and adds to the index
    (computed on a copy of the index)."""
    docs = family_corpus(30, seed=13)
    half = len(docs) // 2
    ndx = tmp_path / "x.ndx"
    DedupIndex.build(docs[:half], ndx, ids=[f"a{i}" for i in range(half)])
    new = [{"id": f"b{i}", "text": t} for i, t in enumerate(docs[half:])]
    src = tmp_path / "new.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in new), encoding="utf-8")
    copy = tmp_path / "copy" / "x.ndx"
    copy.parent.mkdir()
    shutil.copy(ndx, copy)
    single = neardup.dedup(new, against=DedupIndex.open(copy), id_field="id", update=True)
    kept = [i for i, k in zip(single.ids, single.keep) if k]
    assert 0 < len(kept) < len(new) and single.in_index.any()
    return ndx, src, kept, DedupIndex.open(copy).ids


def kept_ids(out: Path) -> list[str]:
    """The ids of a kept output: a JSONL file, or a folder of JSONL partitions."""
    files = sorted(out.glob("*.jsonl")) if out.is_dir() else [out]
    return [json.loads(line)["id"] for f in files for line in f.read_text().splitlines()]


def leftovers(folder: Path) -> list[str]:
    """Temporary outputs and files of the index's lock left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if "neardup-tmp" in p.name)


def outputs_of(tmp_path: Path, engine: list[str]) -> tuple[Path, Path]:
    # Files, as their names say, on one machine and on Dask alike.
    return tmp_path / "kept.jsonl", tmp_path / "clusters.csv"


def update(capsys, tmp_path: Path, engine: list[str], *more: str) -> tuple[int, str, str]:
    out, clusters = outputs_of(tmp_path, engine)
    return run(
        capsys,
        "dedup",
        tmp_path / "new.jsonl",
        "--against",
        tmp_path / "x.ndx",
        "--update",
        *engine,
        "-o",
        out,
        "--clusters",
        clusters,
        *more,
    )


# -- outputs first, index last -------------------------------------------------------------------


def test_a_dask_update_whose_output_cannot_be_written_leaves_the_index_as_it_was(
    tmp_path, capfd, monkeypatch
):
    # capfd: the workers' processes write to this process's standard error.
    capsys = capfd
    from neardup.cli import dedup_dask

    ndx, _, kept, grown = corpus(tmp_path)
    before = ndx.read_bytes()
    real = dedup_dask._parts

    def full_disk(frame, folder, fmt, force_ascii=True):
        def write(part):
            raise OSError(errno.ENOSPC, "No space left on device")

        return real(frame.map_partitions(write, meta=frame._meta), folder, fmt, force_ascii)

    monkeypatch.setattr(dedup_dask, "_parts", full_disk)
    code, _, err = update(capsys, tmp_path, DASK, "-q")
    assert code == 1, err
    # One line names the outputs being written; no worker's traceback.
    assert err.strip().splitlines() == [
        f"neardup: cannot write {tmp_path / 'kept.jsonl'}: No space left on device"
    ], err
    assert ndx.read_bytes() == before
    # --verbose shows Dask's own lines: the worker's failed task, with its traceback.
    code, _, err = update(capsys, tmp_path, DASK, "-q", "--verbose")
    assert code == 1 and "Compute Failed" in err and "Traceback" in err, err
    assert ndx.read_bytes() == before
    assert not (tmp_path / "kept.jsonl").exists() and not (tmp_path / "clusters.csv").exists()
    assert leftovers(tmp_path) == []
    # The rerun, with room, keeps what one machine keeps and grows the index as it does.
    monkeypatch.undo()
    code, _, err = update(capsys, tmp_path, DASK, "-q")
    assert code == 0, err
    assert kept_ids(tmp_path / "kept.jsonl") == kept
    assert DedupIndex.open(ndx).ids == grown
    # --verbose is for Dask's lines: refused on one machine.
    code, _, err = run(capsys, "dedup", "--sample", "--dry-run", "--verbose")
    assert code == 2 and "--verbose goes with --scheduler or --workers" in err


@pytest.mark.parametrize("engine", [[], DASK], ids=["one machine", "dask"])
def test_an_update_renames_its_index_last_under_its_lock(tmp_path, capsys, monkeypatch, engine):
    import fcntl

    ndx, _, kept, grown = corpus(tmp_path)
    real = os.replace
    renamed: list[tuple[str, bool]] = []

    def spy(src, dst):
        fd = os.open(ndx, os.O_RDONLY)
        try:  # the lock is held while every output is renamed, the index included
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            free = True
        except BlockingIOError:
            free = False
        finally:
            os.close(fd)
        renamed.append((os.path.basename(dst), free))
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    code, _, err = update(capsys, tmp_path, engine, "-q")
    monkeypatch.undo()
    assert code == 0, err
    assert [name for name, _ in renamed] == [
        outputs_of(tmp_path, engine)[0].name,
        "clusters.csv",
        "x.ndx",
    ]
    assert not any(free for _, free in renamed)
    assert kept_ids(outputs_of(tmp_path, engine)[0]) == kept
    assert DedupIndex.open(ndx).ids == grown


# -- a signal at the end ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", [[], DASK], ids=["one machine", "dask"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_outputs_are_renamed_ends_nothing(
    tmp_path, capsys, monkeypatch, engine, sig
):
    ndx, _, kept, grown = corpus(tmp_path)
    real = os.replace
    calls = []

    def signalled(src, dst):  # the signal comes between the first rename and the second
        calls.append(dst)
        if len(calls) == 2:
            os.kill(os.getpid(), sig)
        real(src, dst)

    monkeypatch.setattr(os, "replace", signalled)
    code, out, err = update(capsys, tmp_path, engine)
    monkeypatch.undo()
    assert len(calls) == 3
    assert code == 0, err
    assert "interrupted" not in err
    assert f"kept {len(kept):,}" in out + err
    assert kept_ids(outputs_of(tmp_path, engine)[0]) == kept
    assert DedupIndex.open(ndx).ids == grown
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("engine", [[], DASK], ids=["one machine", "dask"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_before_the_renames_writes_nothing(tmp_path, capsys, monkeypatch, engine, sig):
    ndx, _, kept, grown = corpus(tmp_path)
    before = ndx.read_bytes()
    # The signal comes while the new index is written, the last step before the renames.
    name = "_write_streamed" if engine else "_write_appended"
    real = getattr(DedupIndex, name)

    def signalled(self, tmp, *args, **kwargs):
        os.kill(os.getpid(), sig)
        return real(self, tmp, *args, **kwargs)

    monkeypatch.setattr(DedupIndex, name, signalled)
    code, _, err = update(capsys, tmp_path, engine)
    assert code == 130 and "interrupted; no output written" in err, err
    assert ndx.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "new.jsonl", "x.ndx"]
    # The rerun writes everything.
    monkeypatch.undo()
    code, _, err = update(capsys, tmp_path, engine, "-q")
    assert code == 0, err
    assert kept_ids(outputs_of(tmp_path, engine)[0]) == kept
    assert DedupIndex.open(ndx).ids == grown
    clusters = outputs_of(tmp_path, engine)[1]
    table = pd.read_csv(clusters)
    assert table["kept"].sum() == len(kept)


def test_a_signal_while_the_local_cluster_starts_stops_the_run_once_it_is_up(
    tmp_path, capsys, monkeypatch
):
    # A cluster stopped half-way cannot be closed (distributed's exit handler then fails with
    # a traceback): the signal is held until it is up, and the run stops then, closing it.
    import neardup.dask

    ndx, _, _, _ = corpus(tmp_path)
    before = ndx.read_bytes()
    real = neardup.dask.local_cluster
    made = []

    def signalled(*args, **kwargs):
        cluster = real(*args, **kwargs)
        made.append(cluster)
        os.kill(os.getpid(), signal.SIGINT)  # as the cluster's last step returns
        return cluster

    monkeypatch.setattr(neardup.dask, "local_cluster", signalled)
    code, _, err = update(capsys, tmp_path, DASK)
    assert code == 130 and err.strip() == "neardup: interrupted; no output written", err
    assert len(made) == 1 and made[0].status.name == "closed"
    assert ndx.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "new.jsonl", "x.ndx"]


def _ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_an_interrupted_run_ends_its_workers_at_once_even_in_a_task():
    """An interrupted run does not wait for its workers' tasks to end before closing its local
    cluster (a worker in a task holds a graceful close for seconds): ``halt`` kills them."""
    import time

    from distributed import Client

    import neardup.dask
    from neardup.dask.cluster import halt

    with neardup.dask.local_cluster(1) as cluster, Client(cluster) as client:
        pids = [n.process.process.pid for n in cluster.workers.values()]
        busy = client.submit(time.sleep, 120)
        deadline = time.monotonic() + 30
        while not any(busy.key in keys for keys in client.processing().values()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not any(_ended(pid) for pid in pids)
        halt(cluster)
        deadline = time.monotonic() + 30
        while not all(_ended(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(_ended(pid) for pid in pids)
        assert busy.status != "finished"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_command_imports_its_modules_ends_it_with_its_message(tmp_path, sig):
    """The console script's entry handles both signals before it imports the command: a signal
    that comes while the modules load (sent here by the import of ``neardup.cli`` itself) ends
    the process with the command's message and status 130, where Python printed a
    KeyboardInterrupt traceback (SIGINT) or died without a word (SIGTERM)."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "a b c d e f"}\n', encoding="utf-8")
    child = f"""
import importlib.abc, os, sys
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "neardup.cli":
            os.kill(os.getpid(), {int(sig)})
        return None
sys.meta_path.insert(0, Finder())
from neardup.__main__ import main
sys.argv = ["neardup", "dedup", {str(src)!r}, "-o", {str(tmp_path / "out.jsonl")!r}]
sys.exit(main())
"""
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (130, "neardup: interrupted; no output written\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_the_command_imports_nothing_heavy_before_its_handlers():
    """What the console script imports before its handlers exist (``import neardup`` and its
    entry module) loads neither the core nor numpy, so that window stays milliseconds long."""
    probe = (
        "import sys; import neardup.__main__; "
        "print(sorted(m for m in sys.modules if m.startswith(('neardup.', 'numpy'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['neardup.__main__']"


def test_a_signal_that_surfaces_as_another_error_is_still_an_interruption(
    tmp_path, capsys, monkeypatch
):
    """A signal whose KeyboardInterrupt is raised while a class is being made (an import under
    way, when a descriptor's ``__set_name__`` runs) surfaces as a RuntimeError in Python 3.11;
    the run still ends with the interruption's message and status, not a traceback (found in
    the Dask signal trials: a signal while fsspec was imported)."""
    ndx, _, _, _ = corpus(tmp_path)
    before = ndx.read_bytes()
    real = DedupIndex._write_appended

    class Signalling:
        def __set_name__(self, owner: type, name: str) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            sum(range(1000))  # the handler runs here, inside __set_name__

    def importing(self, tmp, *args, **kwargs):
        type("Made", (), {"field": Signalling()})
        return real(self, tmp, *args, **kwargs)

    monkeypatch.setattr(DedupIndex, "_write_appended", importing)
    code, _, err = update(capsys, tmp_path, [])
    assert (code, err) == (130, "neardup: interrupted; no output written\n")
    assert ndx.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "new.jsonl", "x.ndx"]
