"""Issue 48: a Dask run's scratch files belong to it. Each run writes in a fresh subfolder of
``scratch=`` (or of the temporary folder), ``neardup-run-PID-RANDOM`` with a file naming its
machine and process, removed when it ends; a later run removes the folders of dead processes;
nothing else in the folder is touched. Two runs sharing a folder give their own answers."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")

import neardup  # noqa: E402
import neardup.dask as ndd  # noqa: E402
from neardup import DedupIndex  # noqa: E402
from neardup.dask import steps  # noqa: E402
from neardup.dask.against import dedup_against  # noqa: E402
from neardup.io.outputs import _host  # noqa: E402


def families(seed: int, n: int = 60) -> pd.DataFrame:
    """Texts in families of near-duplicates (a word changed, a word added), shuffled."""
    rng = random.Random(seed)
    words = [f"w{seed}x{i}" for i in range(300)]
    texts = []
    for _ in range(n):
        base = [rng.choice(words) for _ in range(rng.randint(10, 30))]
        texts.append(" ".join(base))
        for _ in range(rng.randint(0, 3)):
            edit = list(base)
            edit[rng.randrange(len(edit))] = rng.choice(words)
            if rng.random() < 0.3:
                edit.append(rng.choice(words))
            texts.append(" ".join(edit))
    rng.shuffle(texts)
    return pd.DataFrame({"id": [f"d{seed}-{i}" for i in range(len(texts))], "text": texts})


def kept_on_dask(df: pd.DataFrame, scratch: Path | None, partitions: int = 3) -> list[str]:
    kept = ndd.dedup(dd.from_pandas(df, npartitions=partitions), id_field="id", scratch=scratch)
    return kept.compute()["id"].tolist()


def kept_on_one_machine(df: pd.DataFrame) -> list[str]:
    return df["id"][neardup.dedup(df["text"].tolist()).keep].tolist()


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_within_another_sharing_its_scratch_folder(tmp_path, monkeypatch):
    # Run B starts and ends while run A is between two steps, in the same --scratch: each keeps
    # its single-machine answer, and each wrote in a folder of its own, named for it.
    a, b = families(1), families(2, n=80)
    scratch = tmp_path / "scratch"
    real = steps.STEPS["candidates"]
    inner: dict[str, object] = {}

    def b_inside(run):
        if "b" not in inner:
            inner["b"] = None
            inner["folders"] = sorted(os.listdir(scratch))
            inner["owner"] = (Path(run.folder) / "run.owner").read_text()
            inner["b"] = kept_on_dask(b, scratch, partitions=2)
        real(run)

    monkeypatch.setitem(steps.STEPS, "candidates", b_inside)
    got_a = kept_on_dask(a, scratch)
    assert got_a == kept_on_one_machine(a)
    assert inner["b"] == kept_on_one_machine(b)
    assert len(inner["folders"]) == 1
    assert inner["folders"][0].startswith(f"neardup-run-{os.getpid()}-")
    assert inner["owner"] == f"{_host()} {os.getpid()}\n"
    assert os.listdir(scratch) == []


def test_two_commands_at_once_sharing_a_scratch_folder(tmp_path):
    # Two `neardup dedup --workers 1 --scratch S` started together, each with its local cluster:
    # each writes what one machine keeps of its input.
    corpora = [families(3, n=150), families(4, n=150)]
    scratch = tmp_path / "scratch"
    children = []
    for i, df in enumerate(corpora):
        df.to_json(tmp_path / f"in{i}.jsonl", orient="records", lines=True)
        args = [sys.executable, "-m", "neardup", "dedup", str(tmp_path / f"in{i}.jsonl")]
        args += ["--workers", "1", "--scratch", str(scratch), "-o", str(tmp_path / f"out{i}")]
        children.append(subprocess.Popen(args, stderr=subprocess.PIPE, text=True))
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    for i, df in enumerate(corpora):
        out = sorted((tmp_path / f"out{i}").glob("*.jsonl"))
        got = pd.concat(pd.read_json(p, lines=True, dtype=False) for p in out)["id"].tolist()
        assert got == kept_on_one_machine(df)
    assert os.listdir(scratch) == []


def test_a_users_files_in_the_scratch_folder_are_left_alone(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    mine = {
        "spill.rows.000001.arrow": b"my spill",
        "digest.000000.arrow": b"my digest",
        "against.000000.arrow": b"mine",
        "kept.000000.arrow": b"mine too",
        "notes.txt": b"hello",
    }
    for name, data in mine.items():
        (scratch / name).write_bytes(data)
    (scratch / "neardup-run-project").mkdir()  # a folder of the user's, with no owner file
    df = families(5)
    assert kept_on_dask(df, scratch) == kept_on_one_machine(df)
    # Against an index, with an update: the same.
    half = len(df) // 2
    index = DedupIndex.build(
        df["text"][:half].tolist(), tmp_path / "x.ndx", ids=list(df["id"][:half])
    )
    dedup_against(
        dd.from_pandas(df[half:], npartitions=2), index, id_field="id", update=True, scratch=scratch
    )
    assert len(DedupIndex.open(tmp_path / "x.ndx")) > half
    assert {p.name: p.read_bytes() for p in scratch.iterdir() if p.is_file()} == mine
    assert sorted(p.name for p in scratch.iterdir() if p.is_dir()) == ["neardup-run-project"]


def test_a_later_run_removes_the_folders_of_dead_runs_only(tmp_path):
    scratch = tmp_path / "scratch"
    dead, alive = dead_pid(), os.getpid()
    folders = {
        "dead": (f"neardup-run-{dead}-abc", f"{_host()} {dead}\n"),
        "alive": (f"neardup-run-{alive}-def", f"{_host()} {alive}\n"),
        "elsewhere": (f"neardup-run-{dead}-ghi", f"another-machine {dead}\n"),
    }
    for name, owner in folders.values():
        (scratch / name).mkdir(parents=True)
        (scratch / name / "run.owner").write_text(owner)
        (scratch / name / "spill.rows.000000.arrow").write_bytes(b"x" * 100)
    # A run killed the moment it made its folder (no owner file): removed once a day old.
    young, old = scratch / f"neardup-run-{dead}-new", scratch / f"neardup-run-{dead}-old"
    young.mkdir()
    old.mkdir()
    os.utime(old, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    df = families(6)
    assert kept_on_dask(df, scratch) == kept_on_one_machine(df)
    assert sorted(os.listdir(scratch)) == sorted(
        [folders["alive"][0], folders["elsewhere"][0], young.name]
    )


def test_the_default_scratch_is_a_run_folder_of_the_temporary_folder(tmp_path, monkeypatch):
    # Without scratch=, the run's folder is made in the temporary folder and removed; the
    # default scratch folders of earlier releases (neardup-dask-*) go once a day old.
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    old, young = temp / "neardup-dask-old12345", temp / "neardup-dask-new12345"
    for folder in (old, young):
        folder.mkdir()
        (folder / "digest.000000.arrow").write_bytes(b"x")
    os.utime(old, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    seen: list[str] = []
    real = steps.STEPS["digest"]

    def spy(run):
        seen.append(run.folder)
        real(run)

    monkeypatch.setitem(steps.STEPS, "digest", spy)
    df = families(7)
    assert kept_on_dask(df, None) == kept_on_one_machine(df)
    assert len(seen) == 1 and Path(seen[0]).parent == temp
    assert Path(seen[0]).name.startswith(f"neardup-run-{os.getpid()}-")
    assert sorted(os.listdir(temp)) == [young.name]
    shutil.rmtree(young)
