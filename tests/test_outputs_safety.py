"""Issue 30: what happens to outputs. Symlinks written through with their target's mode and
owner, devices and FIFOs never replaced (by the API either), no output replaced by a job that
fails, stale temporary files of killed runs removed, one lock for every writer of a dedup index,
a bounded spool of standard input, special files refused before they are opened, gzip outputs
without a name or a time in their header."""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import random
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import neardup
from command import run
from neardup.against import dedup_against
from neardup.io import base as io_base

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files and signals")

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
]


def write_jsonl(path: Path, first: int, n: int) -> Path:
    """``n`` documents with distinct ids from ``first``, each unlike the others."""
    rng = random.Random(first)
    lines = []
    for i in range(first, first + n):
        words = [f"{rng.choice(WORDS)}{rng.randrange(1000)}" for _ in range(12)]
        lines.append(json.dumps({"id": i, "text": " ".join(words)}))
    path.write_text("\n".join(lines) + "\n")
    return path


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "neardup-tmp" in p.name)


def dedup_index_ids(path: Path) -> set[int]:
    return set(neardup.DedupIndex.open(path).ids)


# -- symlinks, modes, owners --------------------------------------------------------------------


def test_a_symlinked_index_is_updated_through_the_link_keeping_its_mode(tmp_path, capsys):
    store = tmp_path / "store"
    store.mkdir()
    target = store / "corpus.idx"
    assert (
        run(capsys, "index", "build", write_jsonl(tmp_path / "a.jsonl", 0, 5), "-o", target)[0] == 0
    )
    target.chmod(0o600)
    link = tmp_path / "link.idx"
    link.symlink_to(target)
    assert run(capsys, "index", "add", link, write_jsonl(tmp_path / "b.jsonl", 100, 5))[0] == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert len(neardup.SimhashIndex.load(target)) == 10
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert temporaries(store) == [] and temporaries(tmp_path) == []


def test_a_symlinked_dedup_index_is_updated_through_the_link_by_the_command_and_the_api(
    tmp_path, capsys
):
    target = tmp_path / "real.ndx"
    assert (
        run(capsys, "index", "build", write_jsonl(tmp_path / "a.jsonl", 0, 5), "-o", target)[0] == 0
    )
    target.chmod(0o640)
    link = tmp_path / "link.ndx"
    link.symlink_to(target.name)  # relative: resolved in the link's folder
    args = ["dedup", write_jsonl(tmp_path / "b.jsonl", 100, 5), "--against", link, "--update"]
    assert run(capsys, *args, "-o", tmp_path / "kept.jsonl")[0] == 0
    assert link.is_symlink() and dedup_index_ids(target) == set(range(5)) | set(range(100, 105))
    index = neardup.DedupIndex.open(link)
    docs = [f"api document {i} " + " ".join(WORDS[i:] + WORDS[:i]) for i in range(3)]
    dedup_against(docs, index, update=True, ids=[200, 201, 202])
    assert link.is_symlink() and 200 in dedup_index_ids(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_simhash_index_save_writes_through_a_symlink(tmp_path):
    target = tmp_path / "t.idx"
    index = neardup.SimhashIndex(k=3)
    index.add(np.arange(10, dtype=np.uint64))
    index.save(target)
    target.chmod(0o600)
    link = tmp_path / "l.idx"
    link.symlink_to(target)
    index.add(np.arange(10, 20, dtype=np.uint64))
    index.save(link)
    assert link.is_symlink() and len(neardup.SimhashIndex.load(target)) == 20
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another owner needs root")
def test_an_update_keeps_the_owner_and_mode_of_a_private_index(tmp_path, capsys):
    idx = tmp_path / "private.idx"
    assert run(capsys, "index", "build", write_jsonl(tmp_path / "a.jsonl", 0, 5), "-o", idx)[0] == 0
    os.chown(idx, 65534, 65534)
    idx.chmod(0o600)
    assert run(capsys, "index", "add", idx, write_jsonl(tmp_path / "b.jsonl", 50, 5))[0] == 0
    st = idx.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o600)


# -- devices and FIFOs are never replaced -------------------------------------------------------


def test_the_api_refuses_to_save_over_a_fifo_or_a_device(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    index = neardup.SimhashIndex(k=3)
    with pytest.raises(ValueError, match="device, FIFO or socket"):
        index.save(fifo)
    with pytest.raises(ValueError, match="device, FIFO or socket"):
        neardup.DedupIndex.build(["a b c d"], fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    node = tmp_path / "n"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        node = Path("/dev/null")  # not root: the real one, which the refusal leaves alone
    with pytest.raises(ValueError, match="device, FIFO or socket"):
        index.save(node)
    assert stat.S_ISCHR(node.stat().st_mode)
    with pytest.raises(IsADirectoryError):
        index.save(tmp_path)
    assert temporaries(tmp_path) == []


# -- a failing job replaces no output -----------------------------------------------------------


def test_a_job_that_fails_replaces_none_of_its_outputs(tmp_path, capsys, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", 0, 20)
    kept, clusters = tmp_path / "k.jsonl", tmp_path / "c.csv"
    kept.write_text("OLD\n")
    clusters.write_text("OLD\n")
    (tmp_path / "r.html").mkdir()
    code, _, err = run(
        capsys, "dedup", src, "-o", kept, "--clusters", clusters, "--report", tmp_path / "r.html"
    )
    assert code == 2 and "r.html: --report is a folder" in err
    assert kept.read_text() == "OLD\n" and clusters.read_text() == "OLD\n"

    # --update whose index cannot be written: -o and --clusters stay as they were.
    ndx = tmp_path / "x.ndx"
    assert run(capsys, "index", "build", src, "-o", ndx)[0] == 0
    before = ndx.read_bytes()

    def full(self, tmp, *args):
        raise OSError(28, "No space left on device", tmp)

    monkeypatch.setattr(neardup.DedupIndex, "_write_appended", full)
    new = write_jsonl(tmp_path / "new.jsonl", 100, 5)
    code, _, err = run(
        capsys, "dedup", new, "--against", ndx, "--update", "-o", kept, "--clusters", clusters
    )
    assert code == 1 and f"cannot write {ndx}: No space left on device" in err
    assert kept.read_text() == "OLD\n" and clusters.read_text() == "OLD\n"
    assert ndx.read_bytes() == before and temporaries(tmp_path) == []


# -- temporary files of killed runs -------------------------------------------------------------


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_later_run_removes_the_temporary_files_a_killed_run_left(tmp_path, capsys):
    from neardup.io.outputs import _host

    src = write_jsonl(tmp_path / "in.jsonl", 0, 20)
    out = tmp_path / "kept.jsonl"
    dead = tmp_path / f".kept.jsonl.{_host()}-{dead_pid()}.abc123.neardup-tmp"
    dead_dir = tmp_path / f".kept.jsonl.{_host()}-{dead_pid()}.def456.neardup-tmp"
    # A run still going (this process) and another output's: left alone.
    alive = tmp_path / f".kept.jsonl.{_host()}-{os.getpid()}.ghi789.neardup-tmp"
    other = tmp_path / f".other.jsonl.{_host()}-{dead_pid()}.jkl012.neardup-tmp"
    for path in (dead, alive, other):
        path.write_text("partial")
    dead_dir.mkdir()
    (dead_dir / "1.txt").write_text("partial")
    assert run(capsys, "dedup", src, "-o", out)[0] == 0
    assert temporaries(tmp_path) == sorted([alive.name, other.name])


def test_temporary_files_of_earlier_releases_are_removed_once_a_day_old(tmp_path, capsys):
    # Earlier releases named no machine and no process: .NAME.RANDOM.neardup-tmp (Python) and
    # NAME.tmp-PID-N (the core). Whether their run goes on cannot be asked, so they go once
    # untouched for a day (and, naming a process, when it is not running here).
    from neardup.io.outputs import OLD_STYLE_AGE

    src = write_jsonl(tmp_path / "in.jsonl", 0, 20)
    out = tmp_path / "kept.jsonl"
    old = time.time() - OLD_STYLE_AGE - 60
    stale = [
        tmp_path / ".kept.jsonl.k2j_x9q0.neardup-tmp",
        tmp_path / f"kept.jsonl.tmp-{dead_pid()}-3",
    ]
    stale_dir = tmp_path / ".kept.jsonl.abcd1234.neardup-tmp"
    kept = [
        tmp_path / ".kept.jsonl.zzzz0000.neardup-tmp",  # fresh: its run may still be writing
        tmp_path / f"kept.jsonl.tmp-{os.getpid()}-1",  # its process runs
        tmp_path / ".other.jsonl.q1w2e3r4.neardup-tmp",  # another output's
        tmp_path / ".kept.jsonl.notrandom.neardup-tmp",  # not a name neardup made (9 letters)
    ]
    for path in stale + kept:
        path.write_text("partial")
    stale_dir.mkdir()
    (stale_dir / "1.txt").write_text("partial")
    for path in [*stale, *kept[1:], stale_dir / "1.txt", stale_dir]:
        os.utime(path, (old, old))
    assert run(capsys, "dedup", src, "-o", out)[0] == 0
    left = sorted(p.name for p in tmp_path.iterdir() if p.name not in ("in.jsonl", "kept.jsonl"))
    assert left == sorted(p.name for p in kept)


def test_kill_9_during_an_index_save_leaves_a_file_the_next_save_removes(tmp_path):
    idx = tmp_path / "big.idx"
    code = f"""
import numpy as np, neardup
index = neardup.SimhashIndex(k=3)
index.add(np.random.default_rng(0).integers(0, 2**63, 3_000_000, dtype=np.int64).astype(np.uint64))
print("ready", flush=True)
while True:
    index.save({str(idx)!r})
"""
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while not temporaries(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert temporaries(tmp_path), "the save was killed before it wrote a temporary file"
    neardup.SimhashIndex(k=3).save(idx)
    assert temporaries(tmp_path) == []


# -- one lock for every writer of a dedup index -------------------------------------------------


def test_the_apis_update_waits_for_the_lock_the_command_takes(tmp_path):
    path = tmp_path / "x.ndx"
    neardup.DedupIndex.build(["the first document of the index, alone"], path, ids=[0])
    index = neardup.DedupIndex.open(path)
    holder = os.open(path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # as `neardup dedup --against x.ndx --update` holds it
    done = threading.Event()

    def update() -> None:
        dedup_against(["an api document about something else"], index, update=True, ids=[1])
        done.set()

    thread = threading.Thread(target=update)
    thread.start()
    try:
        assert not done.wait(1.0), "the update did not wait for the lock"
        # Meanwhile the holder replaces the file (another batch): the update must keep it.
        other = neardup.DedupIndex.open(path)
        neardup.DedupIndex._append(
            other,
            *_digested(other, ["a document the command added meanwhile"]),
        )
    finally:
        fcntl.flock(holder, fcntl.LOCK_UN)
        os.close(holder)
    thread.join(60)
    assert done.is_set()
    assert dedup_index_ids(path) == {0, 1, 2}


def _digested(index: neardup.DedupIndex, texts: list[str]):
    return index.digest(texts, 1), [2], np.arange(len(texts))


# -- standard input is spooled within the disk's free space -------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_spool_of_stdin_stops_before_the_disk_is_full(tmp_path, capsys, monkeypatch, fmt):
    st = os.statvfs(tempfile_dir())
    free = st.f_bavail * st.f_frsize
    # As if the disk had less than the reserve left: the spool stops at its first write.
    monkeypatch.setattr(io_base, "SPOOL_KEEP_FREE", free + (10 << 30))  # others may free some
    data = b"".join(
        json.dumps({"id": i, "text": f"document {i}"}).encode() + b"\n" for i in range(1000)
    )
    if fmt == "parquet":
        data = b"PAR1" + data  # past the check of its first bytes, to the spool
    args = ["dedup", "-", "-o", tmp_path / f"out.{fmt}"] + (
        ["--format", "parquet"] if fmt == "parquet" else []
    )
    code, _, err = run(capsys, *args, stdin=data, monkeypatch=monkeypatch)
    assert code == 2, err
    assert err.startswith("neardup: <stdin>: standard input is kept in a temporary file") and (
        "would have less than" in err and "TMPDIR" in err
    )
    assert not (tmp_path / f"out.{fmt}").exists() and temporaries(tmp_path) == []


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


def test_a_spool_within_the_reserve_is_read_twice(tmp_path, capsys, monkeypatch):
    data = b"".join(
        json.dumps({"id": i, "text": f"document number {i % 5}"}).encode() + b"\n"
        for i in range(50)
    )
    code, _, err = run(
        capsys, "dedup", "-", "-o", tmp_path / "out.jsonl", stdin=data, monkeypatch=monkeypatch
    )
    assert code == 0, err
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 5


def test_an_output_the_piping_process_reads_is_refused(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", 0, 20)
    before = src.read_bytes()
    # `sleep` keeps the pipe's writer (and its open file) alive while neardup checks.
    done = subprocess.run(
        f"(exec 3<{src}; sleep 2; cat <&3) | {sys.executable} -m neardup dedup - -o {src}",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "is open in the process piping standard input" in done.stderr
    assert src.read_bytes() == before


# -- special files are refused before they are opened -------------------------------------------


def neardup_in_child(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A child, so that a regression hangs one call (and times out), not the suite."""
    return subprocess.run(
        [sys.executable, "-m", "neardup", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "case",
    ["input", "stopwords", "query-file", "txt-folder", "socket"],
)
def test_a_fifo_or_socket_is_refused_not_waited_for(tmp_path, capsys, case):
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    src = write_jsonl(tmp_path / "in.jsonl", 0, 5)
    if case == "input":
        args, named = ["dedup", fifo, "--dry-run"], fifo
    elif case == "stopwords":
        args, named = ["dedup", src, "--dry-run", "--stopwords", fifo], fifo
    elif case == "query-file":
        assert run(capsys, "index", "build", src, "-o", tmp_path / "x.idx")[0] == 0
        args, named = ["index", "query", tmp_path / "x.idx", "--file", fifo], fifo
    elif case == "txt-folder":
        folder = tmp_path / "docs"
        folder.mkdir()
        (folder / "a.txt").write_text("a document")
        os.mkfifo(folder / "b.txt")
        args, named = ["dedup", folder, "--format", "txt", "--dry-run"], folder / "b.txt"
    else:
        named = tmp_path / "s.jsonl"
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(named))
        args = ["dedup", named, "--dry-run"]
    done = neardup_in_child(*args, cwd=tmp_path)
    if case == "socket":
        server.close()
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"neardup: {named}: is a ") and "Traceback" not in done.stderr


# -- gzip outputs hold no name and no time ------------------------------------------------------


def test_gzip_outputs_have_no_name_and_no_time_in_their_header(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", 0, 20)
    outs = []
    for n in range(2):
        out = tmp_path / f"run{n}" / "kept.jsonl.gz"
        out.parent.mkdir()
        assert run(capsys, "dedup", src, "-o", out, "--clusters", out.parent / "c.csv.gz")[0] == 0
        outs.append(out.read_bytes())
        for written in (out, out.parent / "c.csv.gz"):
            header = written.read_bytes()[:10]
            flags, mtime = header[3], int.from_bytes(header[4:8], "little")
            assert flags & 0x08 == 0 and mtime == 0, (written, header)
    assert outs[0] == outs[1]
    assert gzip.decompress(outs[0]).decode().count("\n") == 20


# -- disk full, several outputs -----------------------------------------------------------------


def test_a_full_disk_writing_several_outputs_is_one_clean_error(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", 0, 20_000)

    def small_files() -> None:
        # Writes past 200 KB fail with EFBIG, as a full disk fails them with ENOSPC.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    for out in ("kept.jsonl", "kept.jsonl.gz"):
        done = subprocess.run(
            [sys.executable, "-m", "neardup", "dedup", str(src), "-o", out]
            + ["--clusters", "c.csv", "--report", "r.html"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=small_files,
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith("neardup: ") and done.stderr.count("\n") == 1, done.stderr
        assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
        assert "neardup-tmp" not in done.stderr and f"{tmp_path}/" in done.stderr
        assert temporaries(tmp_path) == []
        assert not (tmp_path / out).exists() and not (tmp_path / "c.csv").exists()


@pytest.mark.parametrize("where", ["one machine", "Dask"])
@pytest.mark.parametrize("option", ["--clusters", "-o"])
def test_an_output_naming_a_file_of_the_input_folder_is_refused(tmp_path, capsys, where, option):
    # Issue 48: --clusters parts/part-000.parquet replaced an input on one machine (status 0)
    # and on Dask; -o on Dask too.
    pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")
    parts = tmp_path / "parts"
    parts.mkdir()
    for p in range(2):
        texts = [f"document {i} of part {p} with some words" for i in range(10)]
        pq.write_table(
            pa.table({"id": list(range(10)), "text": texts}), parts / f"part-00{p}.parquet"
        )
    before = {p.name: p.read_bytes() for p in parts.iterdir()}
    target = parts / "part-000.parquet"
    args = [parts, "-o", tmp_path / "kept.parquet", "--clusters", tmp_path / "c.parquet"]
    args[args.index(option) + 1] = target
    if where == "Dask":
        args += ["--workers", "2"]
    code, _, err = run(capsys, "dedup", *args)
    assert code == 2, err
    assert err.endswith(
        f"{target}: {option} is a file of the input folder {parts}; neardup never overwrites its input\n"
    ), err
    assert {p.name: p.read_bytes() for p in parts.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parts"]
