"""The repeated trials of issue 48's campaign: signals at random moments of ``--update`` (one
machine and Dask), ``kill -9`` during it, two Dask runs sharing ``--scratch``, memory limits on a
long record, an index replaced or truncated during a run, and crafted index files.

Each trial ends in one of the outcomes a run may have:

- ``wrote everything, 0``: status 0, the outputs and the index those of a run left alone;
- ``wrote nothing, 130`` (SIGINT), ``143`` (SIGTERM) or ``1``/``2`` (a one-line message): no
  output, the index unchanged (byte for byte), no temporary file;
- ``before the command started``: a signal that came while the interpreter itself was still
  starting, before the command's entry (:mod:`neardup.__main__`) handled it (SIGTERM kills it,
  SIGINT is a KeyboardInterrupt); nothing written, listed apart;
- anything else is a failure, described.

    python benches/campaign.py --trials                       # the issue's counts
    python benches/campaign.py --trials --sigint 10 --sigterm 10 --pairs 2 --dask-sigint 2 --dask-sigterm 2

Prints one line per trial and a table of outcomes by kind of trial.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

NEARDUP = [sys.executable, "-m", "neardup"]
INTERRUPTED = "neardup: interrupted; no output written"


class Trials:
    def __init__(self, root: Path, seed: int = 0) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.table: dict[str, Counter[str]] = defaultdict(Counter)

    def note(self, kind: str, outcome: str, detail: str = "") -> None:
        self.table[kind][outcome] += 1
        print(f"{kind:34} {outcome:40} {detail[:110]}", flush=True)

    def print_table(self) -> int:
        """Prints the outcomes by kind; returns the number of failures."""
        failures = 0
        print("\n| trials | outcome | count |\n| --- | --- | --- |")
        for kind, outcomes in self.table.items():
            for outcome, n in sorted(outcomes.items()):
                print(f"| {kind} | {outcome} | {n} |")
                failures += n if outcome.startswith("FAIL") else 0
        return failures

    # -- inputs -------------------------------------------------------------------------------

    def corpus(self, name: str, n: int, seed: int, copies_of: list[str] | None = None) -> Path:
        """``n`` documents of 30 words; with ``copies_of``, one in ten a copy of one of those
        texts with one word changed."""
        rng = random.Random(seed)
        vocabulary = [f"w{i}" for i in range(20_000)]
        path = self.root / name
        with open(path, "w") as f:
            for i in range(n):
                if copies_of and i % 10 == 0:
                    words = rng.choice(copies_of).split()
                    words[rng.randrange(len(words))] = "changed"
                    text = " ".join(words)
                else:
                    text = " ".join(rng.choices(vocabulary, k=30))
                f.write(json.dumps({"id": seed * 10_000_000 + i, "text": text}) + "\n")
        return path

    def parts(self, source: Path, name: str, count: int) -> Path:
        """``source`` cut into ``count`` files of a folder."""
        folder = self.root / name
        folder.mkdir(exist_ok=True)
        lines = source.read_text().splitlines(keepends=True)
        size = -(-len(lines) // count)
        for p in range(count):
            (folder / f"part-{p:03}.jsonl").write_text("".join(lines[p * size : (p + 1) * size]))
        return folder


def _texts(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.open()]


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if "neardup-tmp" in p.name or ".tmp-" in p.name]


def _index_rows(path: Path) -> tuple[int, list[Any]]:
    code = f"import neardup; ix = neardup.DedupIndex.open({str(path)!r}); print(len(ix)); print(ix.ids)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        return -1, []
    n, ids = done.stdout.splitlines()[:2]
    return int(n), sorted(json.loads(ids))


class Update:
    """A ``dedup BATCH --against X.ndx --update -o kept.jsonl`` and what it must write."""

    def __init__(self, t: Trials, dask: bool) -> None:
        self.t, self.dask = t, dask
        self.base = t.root / "base.ndx"
        if not self.base.exists():
            base = t.corpus("base.jsonl", 50_000, 1)
            t.corpus("batch.jsonl", 100_000, 2, copies_of=_texts(base)[:5000])
            subprocess.run(
                [*NEARDUP, "index", "build", base, "-o", self.base, "--quiet"], check=True
            )
            t.parts(t.root / "batch.jsonl", "batch-parts", 4)
        self.batch = t.root / ("batch-parts" if dask else "batch.jsonl")
        self.base_bytes = self.base.read_bytes()
        self.folder = t.root / ("update-dask" if dask else "update")
        self.folder.mkdir(exist_ok=True)
        # Python's start before the command's entry installs its first handlers, when a signal
        # is the interpreter's to handle: the trials' moments come after it.
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", "import neardup.__main__"], check=True)
        self.startup = time.monotonic() - start
        # The run left alone: what every completed trial must have written.
        done, self.seconds = self.run()
        assert done.returncode == 0, done.stderr
        self.kept = sorted((self.folder / "kept.jsonl").read_bytes().splitlines())
        self.index = (self.folder / "X.ndx").read_bytes()
        self.rows = _index_rows(self.folder / "X.ndx")

    def command(self) -> list[Any]:
        extra = ["--workers", "2"] if self.dask else []
        return [
            *NEARDUP,
            "dedup",
            self.batch,
            "--against",
            "X.ndx",
            "--update",
            "-o",
            "kept.jsonl",
            "--quiet",
            *extra,
        ]

    def reset(self) -> None:
        for p in self.folder.iterdir():
            if p.is_file():
                p.unlink()
        (self.folder / "X.ndx").write_bytes(self.base_bytes)

    def run(
        self, signum: int | None = None, at: float = 0.0
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        self.reset()
        start = time.monotonic()
        proc = subprocess.Popen(
            [str(a) for a in self.command()],
            cwd=self.folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # SIGINT as a terminal gives it (a background shell's children ignore it).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        if signum is not None:
            try:
                proc.wait(timeout=at)
            except subprocess.TimeoutExpired:
                proc.send_signal(signum)
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), (
            time.monotonic() - start
        )

    def written(self) -> str:
        """``everything``, ``nothing`` or what is wrong."""
        kept = self.folder / "kept.jsonl"
        index = (self.folder / "X.ndx").read_bytes()
        if not kept.exists() and index == self.base_bytes:
            return "nothing"
        same_kept = kept.exists() and sorted(kept.read_bytes().splitlines()) == self.kept
        if same_kept and (index == self.index or _index_rows(self.folder / "X.ndx") == self.rows):
            return "everything"
        grown = "index changed" if index != self.base_bytes else "index unchanged"
        return f"kept.jsonl {'present' if kept.exists() else 'absent'}, {grown}"

    def trial(self, signum: int) -> None:
        kind = f"{signal.Signals(signum).name} --update" + (" (Dask)" if self.dask else "")
        at = self.t.rng.uniform(self.startup, self.seconds * 1.1)
        done, _ = self.run(signum, at)
        rc, err = done.returncode, done.stderr.strip()
        wrote, left = self.written(), _leftovers(self.folder)
        detail = f"at {at:.2f} s: rc={rc} {err.splitlines()[-1][:70] if err else ''}"
        codes = (130,) if signum == signal.SIGINT else (130, 143)
        if left:
            self.t.note(kind, "FAIL temporary files left", f"{detail} {left[:2]}")
        elif rc == 0 and wrote == "everything":
            self.t.note(kind, "wrote everything, 0", detail)
        elif rc in codes and wrote == "nothing" and err == INTERRUPTED:
            self.t.note(kind, f"wrote nothing, {rc} and its message", detail)
        elif wrote == "nothing" and (
            (rc == -signum and not err)
            or (err.endswith("KeyboardInterrupt") and "cli/app.py" not in err)
        ):
            # The signal came while Python imported neardup, before the command ran.
            self.t.note(kind, "wrote nothing, before the command started", detail)
        else:
            self.t.note(kind, f"FAIL {wrote}", detail + " " + err[-300:].replace("\n", " | "))

    def killed(self) -> None:
        """kill -9 at a random moment: everything or nothing, and a rerun writes it all."""
        kind = "kill -9 --update" + (" (Dask)" if self.dask else "")
        at = self.t.rng.uniform(self.startup, self.seconds * 1.1)
        done, _ = self.run(signal.SIGKILL, at)
        wrote = self.written()
        if wrote == "nothing" or (done.returncode == 0 and wrote == "everything"):
            again, _ = self.run()
            redone = self.written()
            left = _leftovers(self.folder)
            ok = again.returncode == 0 and redone == "everything"
            outcome = f"{'wrote ' + wrote}, rerun {'right' if ok else 'WRONG'}"
            self.t.note(kind, outcome if ok else "FAIL " + outcome, f"at {at:.2f} s {left[:1]}")
        else:
            self.t.note(kind, f"FAIL {wrote}", f"at {at:.2f} s rc={done.returncode}")


def shared_scratch(t: Trials, pairs: int) -> None:
    """Two Dask runs on one --scratch, started 0.5 to 6 s apart: each keeps what one machine
    keeps."""
    kind = "two Dask runs, one --scratch"
    folder = t.root / "scratch-runs"
    folder.mkdir(exist_ok=True)
    inputs = []
    for name, seed in (("a", 3), ("b", 4)):
        source = t.corpus(f"scratch-{name}.jsonl", 30_000, seed)
        source = t.corpus(f"scratch-{name}.jsonl", 30_000, seed, copies_of=_texts(source)[:3000])
        want = folder / f"want-{name}.jsonl"
        subprocess.run([*NEARDUP, "dedup", source, "-o", want, "--quiet"], check=True)
        inputs.append(
            (name, t.parts(source, f"scratch-{name}", 4), sorted(want.read_bytes().splitlines()))
        )
    for trial in range(pairs):
        shared = folder / f"shared-{trial}"
        shared.mkdir()
        (shared / "spill.rows.000001.arrow").write_text("a user's own file\n")
        procs = []
        gap = t.rng.uniform(0.5, 6)
        for n, (name, parts, _) in enumerate(inputs):
            if n:
                time.sleep(gap)
            out = folder / f"kept-{name}-{trial}.jsonl"
            procs.append(
                subprocess.Popen(
                    [
                        str(a)
                        for a in [
                            *NEARDUP,
                            "dedup",
                            parts,
                            "--workers",
                            "2",
                            "--scratch",
                            shared,
                            "-o",
                            out,
                            "--quiet",
                        ]
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        problems = []
        for (name, _, want), proc in zip(inputs, procs):
            _, err = proc.communicate(timeout=600)
            out = folder / f"kept-{name}-{trial}.jsonl"
            if proc.returncode != 0:
                problems.append(f"{name}: rc={proc.returncode} {err.strip()[-120:]}")
            elif sorted(out.read_bytes().splitlines()) != want:
                problems.append(
                    f"{name}: kept {len(out.read_bytes().splitlines())}, one machine {len(want)}"
                )
        if (shared / "spill.rows.000001.arrow").read_text() != "a user's own file\n":
            problems.append("the user's file in --scratch was removed")
        rest = [p.name for p in shared.iterdir() if p.name != "spill.rows.000001.arrow"]
        if rest:
            problems.append(f"scratch left: {rest[:2]}")
        detail = f"{gap:.1f} s apart"
        if problems:
            t.note(kind, "FAIL " + problems[0][:60], detail + " " + "; ".join(problems))
        else:
            t.note(kind, "both kept one machine's answer", detail)


def memory_limits(t: Trials, record: Path | None) -> None:
    """prlimit --as from 400M to 2G on a record of about 60 MB: a result or one clean line."""
    kind = "prlimit --as, 60 MB record"
    if record is None:
        record = t.corpus("small-for-record.jsonl", 1, 5)
        rng = random.Random(6)
        vocabulary = [f"w{i}" for i in range(50_000)]
        text = " ".join(rng.choices(vocabulary, k=9_000_000))
        record = t.root / "line60.jsonl"
        record.write_text(json.dumps({"id": 1, "text": text}) + "\n")
    folder = t.root / "limits"
    folder.mkdir(exist_ok=True)
    commands = {
        "dedup": ["dedup", record, "-o", "o.jsonl"],
        "pairs": ["pairs", record, "-o", "p.jsonl"],
        "index build": ["index", "build", record, "-o", "x.ndx"],
    }
    for limit in (400, 600, 800, 1000, 1200, 2000):
        for name, args in commands.items():
            for p in folder.iterdir():
                p.unlink()
            done = subprocess.run(
                ["prlimit", f"--as={limit * 1_000_000}", *NEARDUP, *map(str, args)],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=300,
            )
            err = done.stderr.strip().splitlines()
            left = [p.name for p in folder.iterdir()]
            output = str(args[-1])
            detail = f"{limit}M {name}: rc={done.returncode} {err[-1][:90] if err else ''}"
            if done.returncode == 0 and left == [output]:
                t.note(kind, "wrote everything, 0", detail)
            elif (
                done.returncode == 1
                and len(err) == 1
                and "out of memory" in err[0]
                and err[0].endswith("; no output written")
                and not left
            ):
                t.note(kind, "wrote nothing, 1 and its message", detail)
            else:
                t.note(kind, f"FAIL rc={done.returncode}", f"{detail} files={left}")


def replaced_index(t: Trials, trials: int, window: tuple[float, float]) -> None:
    """``dedup --against X.ndx`` while ``cp other.ndx X.ndx`` or ``truncate -s 0 X.ndx`` runs,
    at a moment of ``window`` (from Python's start to the end of the run alone)."""
    kind = "index replaced or truncated"
    folder = t.root / "replaced"
    folder.mkdir(exist_ok=True)
    base = t.root / "base.ndx"
    other = folder / "other.ndx"
    if not other.exists():
        subprocess.run(
            [*NEARDUP, "index", "build", t.root / "batch.jsonl", "-o", other, "--quiet"], check=True
        )
    for trial in range(trials):
        for p in folder.glob("k*.jsonl"):
            p.unlink()
        index = folder / "X.ndx"
        index.write_bytes(base.read_bytes())
        how = ("cp", "truncate")[trial % 2]
        proc = subprocess.Popen(
            [
                *map(
                    str,
                    [
                        *NEARDUP,
                        "dedup",
                        t.root / "batch.jsonl",
                        "--against",
                        index,
                        "-o",
                        folder / "k.jsonl",
                        "--quiet",
                    ],
                )
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(t.rng.uniform(*window))
        if how == "cp":
            with open(index, "r+b") as f:  # cp writes into the file in place
                data = other.read_bytes()
                f.truncate(0)
                f.write(data)
        else:
            os.truncate(index, 0)
        _, err = proc.communicate(timeout=300)
        rc, err = proc.returncode, err.strip()
        left = _leftovers(folder)
        detail = f"{how}: rc={rc} {err.splitlines()[-1][:80] if err else ''}"
        kept = folder / "k.jsonl"
        if left:
            t.note(kind, "FAIL temporary files left", detail)
        elif rc == 0 and kept.exists():
            t.note(kind, "wrote everything, 0", detail)
        elif (
            rc in (1, 2)
            and not kept.exists()
            and len(err.splitlines()) == 1
            and err.startswith("neardup: ")
        ):
            t.note(kind, f"wrote nothing, {rc} and its message", detail)
        else:
            t.note(kind, f"FAIL rc={rc}", detail + " " + err[-200:].replace("\n", " | "))


def crafted_indexes(t: Trials, files: int) -> None:
    """Index files with one byte changed and the checksum made valid again."""
    kind = "crafted index files"
    folder = t.root / "crafted"
    folder.mkdir(exist_ok=True)
    small = t.corpus("crafted.jsonl", 300, 7)
    good = folder / "good.ndx"
    subprocess.run([*NEARDUP, "index", "build", small, "-o", good, "--quiet"], check=True)
    data = bytearray(good.read_bytes())
    for trial in range(files):
        edited = bytearray(data)
        at = t.rng.randrange(len(edited) - 8)
        edited[at] ^= 1 << t.rng.randrange(8)
        _reseal(edited)
        path = folder / "X.ndx"
        path.write_bytes(bytes(edited))
        for p in folder.glob("k*"):
            p.unlink()
        args = ["dedup", small, "--against", path, "-o", folder / "k.jsonl", "--quiet"]
        if trial % 2:
            args += ["--clusters", folder / "k-clusters.csv"]
        done = subprocess.run(
            [*NEARDUP, *map(str, args)], capture_output=True, text=True, timeout=120
        )
        err = done.stderr.strip().splitlines()
        left = _leftovers(folder)
        detail = f"byte {at}: rc={done.returncode} {err[-1][:80] if err else ''}"
        if left:
            t.note(kind, "FAIL temporary files left", detail)
        elif done.returncode == 0:
            t.note(kind, "read, 0", detail)
        elif done.returncode in (1, 2) and len(err) == 1 and not (folder / "k.jsonl").exists():
            t.note(kind, f"refused, {done.returncode} and its message", detail)
        else:
            t.note(kind, f"FAIL rc={done.returncode}", detail + " " + " | ".join(err[-3:]))


def _reseal(data: bytearray) -> None:
    """Writes the checksum of an index file's words (all but the last) into its last word."""
    words = np.frombuffer(bytes(data), dtype="<u8")
    h = 0x243F6A8885A308D3
    mask = (1 << 64) - 1
    for w in words[:-1].tolist():
        h = ((h ^ w) * 0x9E3779B97F4A7C15) & mask
        h ^= h >> 29
    data[-8:] = h.to_bytes(8, "little")


def run_trials(root: Path, args: Any) -> int:
    t = Trials(root, args.seed)
    start = time.monotonic()
    one = Update(t, dask=False)
    print(
        f"== signals during --update, one machine (the run alone: {one.seconds:.2f} s, "
        f"Python's start {one.startup:.2f} s)"
    )
    for _ in range(args.sigint):
        one.trial(signal.SIGINT)
    for _ in range(args.sigterm):
        one.trial(signal.SIGTERM)
    for _ in range(args.kills):
        one.killed()
    if args.dask_sigint or args.dask_sigterm or args.kills:
        dask = Update(t, dask=True)
        print(f"== signals during --update, Dask (the run alone: {dask.seconds:.2f} s)")
        for _ in range(args.dask_sigint):
            dask.trial(signal.SIGINT)
        for _ in range(args.dask_sigterm):
            dask.trial(signal.SIGTERM)
        for _ in range(args.kills // 2):
            dask.killed()
    print("== two Dask runs sharing --scratch")
    shared_scratch(t, args.pairs)
    print("== memory limits")
    memory_limits(t, Path(args.record) if args.record else None)
    print("== an index replaced or truncated during a run")
    replaced_index(t, args.replaced, (one.startup, one.seconds))
    print("== crafted index files")
    crafted_indexes(t, args.crafted)
    failures = t.print_table()
    print(f"\n{failures} failures, {time.monotonic() - start:.0f} s")
    return 1 if failures else 0
