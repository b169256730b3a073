"""The fault campaign of issue 30, rerun: dense corpora, special files, spools, symlinks, a
failing job, concurrent writers, kill -9, disk full, Ctrl-C, and the tracebacks it found.

Builds its inputs in a scratch folder, runs every case (the command, or a Python snippet of the
API) under ``timeout`` and ``prlimit --as=4000000000`` and counts what must never happen:

- aborts (a signal, "memory allocation of N bytes failed"), hangs past the timeout, tracebacks;
- leftover temporary files (``*neardup-tmp*``, ``*.tmp-*``) after a case;
- devices or FIFOs replaced, outputs replaced by a failing job, inputs changed;
- symlinked indexes not updated through the link, modes or owners not kept, lost updates;
- a disk filled (standard input spooled to a small tmpfs, where the machine allows mounting one);
- an exit status other than the one expected (0 done, 1 output failed, 2 bad input, 130 Ctrl-C).

    python benches/campaign.py                 # the campaign's sizes (200,000 documents)
    python benches/campaign.py --size 20000    # a quicker run of the same cases
    python benches/campaign.py --trials        # issue 48's repeated trials (campaign_trials.py)

Prints one line per case and the totals; exits 1 if any count of a failure is not zero.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

TIMEOUT = 60
AS_LIMIT = 4_000_000_000
NEARDUP = [sys.executable, "-m", "neardup"]


class Campaign:
    def __init__(self, root: Path, size: int) -> None:
        self.root, self.size = root, size
        self.counts: Counter[str] = Counter()
        self.cases = 0

    # -- running ------------------------------------------------------------------------------

    def run(
        self,
        name: str,
        args: list[Any],
        expect: tuple[int, ...],
        *,
        stdin: Any = None,
        shell: str | None = None,
        python: str | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        fsize: int | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """One case under timeout and prlimit; counts its failures and prints a line."""
        cwd = cwd or self.root
        limits = ["prlimit", f"--as={AS_LIMIT}"] + ([f"--fsize={fsize}"] if fsize else [])
        if python is not None:
            command = [*limits, sys.executable, "-c", textwrap.dedent(python)]
        elif shell is not None:
            command = ["bash", "-c", shell]
        else:
            command = [*limits, *NEARDUP, *map(str, args)]
        start = time.monotonic()
        try:
            done = subprocess.run(
                ["timeout", "-s", "KILL", str(TIMEOUT), *command] if shell is None else command,
                cwd=cwd,
                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                text=True,
                env={**os.environ, **(env or {})},
                timeout=TIMEOUT + 30,
                # SIGXFSZ ignored: a write past --fsize fails as on a full disk.
                preexec_fn=lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN),
            )
        except subprocess.TimeoutExpired as err:
            done = subprocess.CompletedProcess(command, 124, "", str(err))
        seconds = time.monotonic() - start
        self.cases += 1
        problems = self.judge(done, expect)
        status = "ok" if not problems else "FAIL " + ", ".join(problems)
        last = (done.stderr.strip().splitlines() or [""])[-1][:150]
        print(f"{name:58} rc={done.returncode:<4} {seconds:6.1f}s  {status}  | {last}", flush=True)
        return done

    def judge(self, done: subprocess.CompletedProcess[str], expect: tuple[int, ...]) -> list[str]:
        problems = []
        rc, err = done.returncode, done.stderr
        if rc in (124, 137) or rc == -signal.SIGKILL:
            problems.append("hang")
        elif rc < 0 or rc == 134 or "memory allocation of" in err or "panicked" in err:
            problems.append("abort")
        if "Traceback" in err or "Exception ignored" in err:
            problems.append("traceback")
        if rc not in expect and not problems:
            problems.append(f"status (expected {'/'.join(map(str, expect))})")
        leftovers = self.leftovers()
        if leftovers and "hang" in problems:
            # Killed by the timeout (kill -9): its files are the next run's to remove.
            for path in leftovers:
                _remove(path)
        elif leftovers:
            problems.append(f"leftover temporary files {leftovers[:3]}")
            for path in leftovers:
                _remove(path)
        for p in problems:
            self.counts[p.split(" (")[0].split(" [")[0]] += 1
        return problems

    def check(self, name: str, ok: bool, what: str) -> None:
        """A property checked after a case (an output kept, a mode kept ...)."""
        self.cases += 1
        if not ok:
            self.counts[what] += 1
        print(f"{name:58} {'ok' if ok else 'FAIL ' + what}", flush=True)

    def leftovers(self) -> list[Path]:
        return [
            p
            for p in self.root.rglob("*")
            if ("neardup-tmp" in p.name or ".tmp-" in p.name) and "keep-" not in p.name
        ]

    # -- inputs -------------------------------------------------------------------------------

    def near(self, name: str, n: int) -> Path:
        """``n`` short documents, each one word different from a shared text."""
        path = self.root / name
        if not path.exists():
            base = [f"word{i * 7919 % 1000}" for i in range(25)]
            with open(path, "w") as f:
                for i in range(n):
                    words = list(base)
                    words[i % 25] = f"unique{i}"
                    f.write(json.dumps({"id": i, "text": " ".join(words)}) + "\n")
        return path

    def plain(self, name: str, n: int, seed: int = 0) -> Path:
        path = self.root / name
        rng = random.Random(seed)
        vocab = [f"w{i}" for i in range(20000)]
        with open(path, "w") as f:
            for i in range(n):
                f.write(json.dumps({"id": i, "text": " ".join(rng.choices(vocab, k=20))}) + "\n")
        return path


def _remove(path: Path) -> None:
    try:
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    except OSError:
        pass


def dense_cases(c: Campaign) -> None:
    """Aborts and unbounded time on near-identical documents."""
    n = c.size
    near = c.near("near.jsonl", n)
    small = c.near("near-small.jsonl", max(n // 10, 1000))
    c.run(
        "index build near -o x.ndx (dedup index)", ["index", "build", near, "-o", "x.ndx"], (0, 2)
    )
    c.run("index build near -o x.idx", ["index", "build", near, "-o", "x.idx"], (0, 2))
    c.run("index build near-small -o one.ndx", ["index", "build", small, "-o", "one.ndx"], (0, 2))
    c.run("dedup near --dry-run", ["dedup", near, "--dry-run"], (0, 2))
    c.run(
        "dedup near --against one.ndx --dry-run",
        ["dedup", near, "--against", "one.ndx", "--dry-run"],
        (0, 2),
    )
    c.run("pairs near --max-pairs 0", ["pairs", near, "-o", "p.csv", "--max-pairs", "0"], (0, 1, 2))
    c.run("pairs near", ["pairs", near, "-o", "p.csv"], (0, 2))
    c.run("index build near-small -o small.idx", ["index", "build", small, "-o", "small.idx"], (0,))
    c.run("index add small.idx near", ["index", "add", "small.idx", near], (0, 2))
    fps = f"""
        import json, numpy as np, neardup
        texts = [json.loads(l)["text"] for l in open({str(near)!r})]
        fps = neardup.Simhasher().fingerprint_many(texts)
    """
    api = {
        "find_all k=8 max_pairs=None": "neardup.find_all(fps, 8, max_pairs=None)",
        "find_all k=16 max_pairs=None": "neardup.find_all(fps, 16, max_pairs=None)",
        "find_all k=8 (default limit)": "neardup.find_all(fps, 8)",
        "query_many k=8 (default limit)": "ix = neardup.SimhashIndex(k=8); ix.add(fps); ix.query_many(fps)",
        "query_many k=8 max_pairs=None": "ix = neardup.SimhashIndex(k=8); ix.add(fps); ix.query_many(fps, max_pairs=None)",
        "DedupIndex.build(near)": "neardup.DedupIndex.build(texts, 'api.ndx')",
    }
    for name, call in api.items():
        c.run(
            f"API {name}",
            [],
            (0,),
            python=fps
            + textwrap.indent(
                textwrap.dedent(f"""
                try:
                    {call}
                except (neardup.TooManyPairsError, MemoryError) as err:
                    print(type(err).__name__, err)
                """),
                "        ",
            ),
        )


def interrupt_cases(c: Campaign) -> None:
    """Ctrl-C during counting phases: KeyboardInterrupt (status 130) within seconds."""
    near = c.near("near.jsonl", c.size)
    calls = {
        "SIGINT find_all k=8": "neardup.find_all(fps, 8)",
        "SIGINT query_many k=8": "ix = neardup.SimhashIndex(k=8); ix.add(fps); ix.query_many(fps, max_pairs=None)",
    }
    prelude = f"""
        import json, sys, numpy as np, neardup
        texts = [json.loads(l)["text"] for l in open({str(near)!r})]
        fps = neardup.Simhasher().fingerprint_many(texts)
        print("ready", flush=True)
        try:
            CALL
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        except (neardup.TooManyPairsError, MemoryError) as err:
            print("refused", type(err).__name__, flush=True)
    """
    for name, call in calls.items():
        code = textwrap.dedent(prelude).replace("CALL", call)
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            text=True,
            cwd=c.root,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        assert child.stdout is not None
        child.stdout.readline()
        time.sleep(1.0)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        try:
            line = child.stdout.readline().strip()
            child.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            line = "hang"
        latency = time.monotonic() - sent
        ok = line in ("interrupted", "finished") or line.startswith("refused")
        c.check(f"{name} ({line}, {latency:.1f} s)", ok and latency < 10, "slow or ignored SIGINT")
    # The command: index build on the dense corpus, SIGINT then SIGTERM.
    for sig in (signal.SIGINT, signal.SIGTERM):
        child = subprocess.Popen(
            [*NEARDUP, "index", "build", str(near), "-o", "sig.ndx"],
            cwd=c.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(3)
        sent = time.monotonic()
        child.send_signal(sig)
        try:
            _, err = child.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            _, err = child.communicate()
        latency = time.monotonic() - sent
        c.check(
            f"{sig.name} index build near ({child.returncode}, {latency:.1f} s)",
            child.returncode in (130, 2, 0) and latency < 10 and "Traceback" not in err,
            "slow or ignored signal",
        )
        c.check(
            f"{sig.name} index build: no temporary file left",
            not c.leftovers(),
            "leftover temporary files",
        )


def output_cases(c: Campaign) -> None:
    """Symlinks, modes and owners, devices and FIFOs, failing jobs, stale temporaries, locks."""
    root = c.root
    src = c.plain("plain.jsonl", 2000)
    more = c.plain("more.jsonl", 2000, seed=1)
    # Symlinked indexes, private mode, another owner (as root).
    store = root / "store"
    store.mkdir(exist_ok=True)
    for kind, build in (
        ("idx", ["index", "build", src, "-o", store / "t.idx"]),
        ("ndx", ["index", "build", src, "-o", store / "t.ndx"]),
    ):
        c.run(f"index build {kind} for the symlink cases", build, (0,))
        target = store / f"t.{kind}"
        target.chmod(0o600)
        owner = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())
        if os.geteuid() == 0:
            os.chown(target, *owner)
        link = root / f"link.{kind}"
        _remove(link)
        link.symlink_to(target)
        if kind == "idx":
            c.run("index add through a symlink", ["index", "add", link, more], (0,))
        else:
            c.run(
                "dedup --against symlink --update",
                ["dedup", more, "--against", link, "--update", "-o", "k.jsonl"],
                (0,),
            )
        st = target.stat()
        c.check(f"{kind}: symlink still a link", link.is_symlink(), "symlink replaced")
        c.check(f"{kind}: target updated", _size_of(target, kind) == 4000, "update lost")
        c.check(f"{kind}: mode 0600 kept", stat.S_IMODE(st.st_mode) == 0o600, "mode changed")
        c.check(f"{kind}: owner kept", (st.st_uid, st.st_gid) == owner, "owner changed")
    c.run(
        "API SimhashIndex.save through a symlink",
        [],
        (0,),
        python=f"""
            import numpy as np, neardup, os, stat
            ix = neardup.SimhashIndex.load({str(root / "link.idx")!r})
            ix.add(np.arange(5, dtype=np.uint64) + 10**15)
            ix.save({str(root / "link.idx")!r})
            assert os.path.islink({str(root / "link.idx")!r})
            assert stat.S_IMODE(os.stat({str(store / "t.idx")!r}).st_mode) == 0o600
        """,
    )
    # Devices and FIFOs: the API and the command refuse them.
    fifo, node = root / "fifo.out", root / "node.out"
    for p in (fifo, node):
        _remove(p)
    os.mkfifo(fifo)
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        node = None  # type: ignore[assignment]
    specials = [p for p in (fifo, node) if p is not None]
    for p in specials:
        c.run(
            f"API save/build over {p.name}",
            [],
            (0,),
            python=f"""
                import neardup
                for call in (lambda: neardup.SimhashIndex(k=3).save({str(p)!r}),
                             lambda: neardup.DedupIndex.build(['a b c d'], {str(p)!r})):
                    try:
                        call()
                        raise SystemExit("replaced")
                    except ValueError as err:
                        print(err)
            """,
        )
        for option in (["-o", p], ["--clusters", p]):
            c.run(
                f"dedup {option[0]} {p.name}",
                ["dedup", src, *(["--dry-run"] if option[0] != "-o" else []), *option],
                (2,),
            )
    c.check("FIFO still a FIFO", stat.S_ISFIFO(fifo.stat().st_mode), "device or FIFO replaced")
    if node is not None:
        c.check(
            "device still a device", stat.S_ISCHR(node.stat().st_mode), "device or FIFO replaced"
        )
    # A failing job replaces no output.
    for name in ("k.jsonl", "c.csv"):
        (root / name).write_text("OLD\n")
    _remove(root / "r.html")
    (root / "r.html").mkdir()
    c.run(
        "dedup -o --clusters --report DIR",
        ["dedup", src, "-o", "k.jsonl", "--clusters", "c.csv", "--report", "r.html"],
        (2,),
    )
    c.check(
        "failing job: outputs kept",
        all((root / n).read_text() == "OLD\n" for n in ("k.jsonl", "c.csv")),
        "output replaced by a failing job",
    )
    _remove(root / "r.html")
    c.run(
        "dedup --update with a full disk (--fsize)",
        ["dedup", more, "--against", "store/t.ndx", "--update", "-o", "k.jsonl"],
        (1,),
        fsize=100_000,
    )
    c.check(
        "full disk --update: -o kept",
        (root / "k.jsonl").read_text() == "OLD\n",
        "output replaced by a failing job",
    )
    # Disk full writing three outputs at once.
    for out in ("full.jsonl", "full.jsonl.gz"):
        c.run(
            f"disk full: -o {out} --clusters --report",
            [
                "dedup",
                c.plain("big.jsonl", 20000, 5),
                "-o",
                out,
                "--clusters",
                "fc.csv",
                "--report",
                "fr.html",
            ],
            (1,),
            fsize=200_000,
        )
    # kill -9 mid-write, then a run writing the same outputs.
    big = c.plain("big.jsonl", 20000, 5)
    for args in (
        ["dedup", big, "-o", "kill.jsonl", "--clusters", "kill.csv"],
        ["index", "build", big, "-o", "kill.ndx"],
        ["index", "build", big, "-o", "kill.idx"],
    ):
        trials, left = 10, 0
        for t in range(trials):
            child = subprocess.Popen(
                [*NEARDUP, *map(str, args)],
                cwd=root,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.3 + 0.25 * t)
            child.send_signal(signal.SIGKILL)
            child.wait()
            left += bool(c.leftovers())
            done = subprocess.run(
                [*NEARDUP, *map(str, args)],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            if c.leftovers() or done.returncode != 0:
                print(
                    f"  rerun after kill -9: rc={done.returncode} {done.stderr[-200:]!r} {c.leftovers()}"
                )
                c.counts["leftover temporary files"] += 1
                for p in c.leftovers():
                    _remove(p)
        c.check(
            f"kill -9 {' '.join(map(str, args[:2]))}: {left}/{trials} left files, all removed by the next run",
            True,
            "",
        )
    # Concurrent updates: the API and the command, each with another batch.
    c.run(
        "index build conc.ndx",
        ["index", "build", c.plain("conc0.jsonl", 3000, 10), "-o", "conc.ndx"],
        (0,),
    )
    a, b = c.plain("conc1.jsonl", 3000, 11), c.plain("conc2.jsonl", 3000, 12)
    for path in (a, b):  # distinct ids per batch
        lines = path.read_text().splitlines()
        offset = 10_000 if path == a else 20_000
        path.write_text(
            "".join(
                json.dumps({**json.loads(line), "id": json.loads(line)["id"] + offset}) + "\n"
                for line in lines
            )
        )
    api = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import json, neardup
        from neardup.against import dedup_against
        rows = [json.loads(l) for l in open({str(a)!r})]
        ix = neardup.DedupIndex.open({str(root / "conc.ndx")!r})
        dedup_against([r["text"] for r in rows], ix, ids=[r["id"] for r in rows], update=True)
    """),
        ],
        cwd=root,
    )
    cmd = subprocess.Popen(
        [
            *NEARDUP,
            "dedup",
            str(b),
            "--against",
            "conc.ndx",
            "--update",
            "-o",
            "conc-k.jsonl",
            "-q",
        ],
        cwd=root,
    )
    api.wait(TIMEOUT)
    cmd.wait(TIMEOUT)
    ids = set(_ids(root / "conc.ndx"))
    c.check(
        "concurrent API and command updates: both batches kept",
        any(i >= 20_000 for i in ids) and any(10_000 <= i < 20_000 for i in ids),
        "update lost",
    )
    # Standard input: the same file behind a pipe; /dev/zero; a spool that would fill the disk.
    copy = root / "piped.jsonl"
    shutil.copy(src, copy)
    before = copy.read_bytes()
    c.run(
        "cat in | dedup - -o in",
        [],
        (2,),
        shell=f"(exec 3<{copy}; sleep 2; cat <&3) | {' '.join(NEARDUP)} dedup - -o {copy}",
    )
    c.check("piped input kept", copy.read_bytes() == before, "input changed")
    with open("/dev/zero", "rb") as zero:
        c.run(
            "dedup - --format parquet < /dev/zero",
            ["dedup", "-", "--format", "parquet", "-o", "z.parquet"],
            (2,),
            stdin=zero,
        )
    with open("/dev/zero", "rb") as zero:
        c.run("dedup - < /dev/zero (JSONL)", ["dedup", "-", "-o", "z.jsonl"], (2,), stdin=zero)
    small_tmp = root / "small-tmp"
    small_tmp.mkdir(exist_ok=True)
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(small_tmp)], capture_output=True
        ).returncode
        == 0
    )
    if mounted:
        try:
            c.run(
                "yes records | dedup - (TMPDIR on a 64 MB tmpfs)",
                [],
                (2,),
                shell=f'yes \'{{"text": "a b c d"}}\' | TMPDIR={small_tmp} timeout -s KILL {TIMEOUT} prlimit --as={AS_LIMIT} {" ".join(NEARDUP)} dedup - -o spool.jsonl',
            )
            st = os.statvfs(small_tmp)
            c.check("the spool's disk never filled", st.f_bavail > 0, "disk filled")
        finally:
            subprocess.run(["umount", str(small_tmp)], capture_output=True)
    else:
        print("(no tmpfs: the spool case that would fill a disk is not run)")


def special_file_cases(c: Campaign) -> None:
    root = c.root
    src = c.plain("plain.jsonl", 2000)
    fifo = root / "in.fifo.jsonl"
    _remove(fifo)
    os.mkfifo(fifo)
    folder = root / "txt"
    folder.mkdir(exist_ok=True)
    (folder / "a.txt").write_text("a document")
    _remove(folder / "b.txt")
    os.mkfifo(folder / "b.txt")
    c.run("index build plain -o q.idx", ["index", "build", src, "-o", "q.idx"], (0,))
    for name, args in {
        "FIFO as INPUT": ["dedup", fifo, "--dry-run"],
        "FIFO in a folder of .txt": ["dedup", folder, "--format", "txt", "--dry-run"],
        "FIFO as --stopwords": ["dedup", src, "--dry-run", "--stopwords", fifo],
        "FIFO as index query --file": ["index", "query", "q.idx", "--file", fifo],
        "FIFO as index add INPUT": ["index", "add", "q.idx", fifo],
    }.items():
        c.run(name, args, (2,))


def message_cases(c: Campaign) -> None:
    """The tracebacks and unclear messages: each FILE:LINE: what is wrong, status 2."""
    root = c.root

    def w(name, text):
        return (root / name).write_bytes(text if isinstance(text, bytes) else text.encode())

    w("e.jsonl.gz", b"")
    w("e.jsonl.zst", b"")
    w("bigid.jsonl", '{"id": 18446744073709551616, "text": "a b c"}\n{"id": 1, "text": "a b c"}\n')
    w("bom.jsonl", b'\xef\xbb\xbf{"id": 1, "text": "a b c"}\n')
    w("hugeint.jsonl", '{"id": 1, "text": "a", "n": ' + "9" * 5000 + "}\n")
    w("mixed.jsonl", '{"id": 1, "text": "a b c"}\n{"id": "x", "text": "a b d"}\n')
    w("sur.jsonl", '{"id": "\\ud800", "text": "a b c"}\n')
    subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import pyarrow as pa, pyarrow.parquet as pq
        pq.write_table(pa.table({{"id": [1, 2], "text": pa.array(["a b c d", "a b c d"]).cast(pa.string_view())}}), {str(root / "view.parquet")!r})
    """),
        ],
        check=True,
    )
    for d in ("d.idx", "dir.html", "out.jsonl.d"):
        (root / d).mkdir(exist_ok=True)
    cases = {
        "string_view Parquet dedup -o": (["dedup", "view.parquet", "-o", "v.parquet"], (0,)),
        "string_view Parquet fingerprint -o": (
            ["fingerprint", "view.parquet", "-o", "vf.parquet"],
            (0,),
        ),
        "id 2**64 --clusters x.parquet": (
            ["dedup", "bigid.jsonl", "--dry-run", "--clusters", "b.parquet"],
            (2,),
        ),
        "id 2**64 pairs -o x.parquet": (["pairs", "bigid.jsonl", "-o", "b2.parquet"], (2,)),
        "zero-byte .gz": (["dedup", "e.jsonl.gz", "--dry-run"], (2,)),
        "zero-byte .zst": (["dedup", "e.jsonl.zst", "--dry-run"], (2,)),
        "JSONL with a BOM": (["dedup", "bom.jsonl", "-o", "bom-out.jsonl"], (0,)),
        "a 5000-digit number": (["dedup", "hugeint.jsonl", "--dry-run"], (2,)),
        "mixed id types, index build": (["index", "build", "mixed.jsonl", "-o", "mixed.ndx"], (2,)),
        "lone surrogate id, --clusters csv": (
            ["dedup", "sur.jsonl", "--dry-run", "--clusters", "s.csv"],
            (2,),
        ),
        "index add DIR": (["index", "add", "d.idx", "bom.jsonl"], (2,)),
        "--report DIR": (["dedup", "bom.jsonl", "--dry-run", "--report", "dir.html"], (2,)),
        "index build -o DIR": (["index", "build", "bom.jsonl", "-o", "d.idx"], (2,)),
    }
    for name, (args, expect) in cases.items():
        done = c.run(name, args, expect)
        if expect == (2,) and done.returncode == 2:
            text = done.stderr.strip()
            clear = text.startswith(("neardup: ", "Usage:", "Error:")) and "neardup-tmp" not in text
            c.check(
                f"  {name}: names what is wrong",
                clear and "sys.set_int_max_str_digits" not in text,
                "unclear message",
            )
    # A dedup index with a valid checksum and edited contents.
    done = c.run(
        "edited dedup index (valid checksum)",
        [],
        (0,),
        python=f"""
            import numpy as np, neardup
            from neardup import _core
            e = np.zeros(0, np.uint64)
            for meta in (b"not json", b'{{"format": "neardup-dedup-index", "hasher": {{"bogus": 1}}}}', b'[1]'):
                _core.DedupIndex.empty(16, 1, 3, 8, 0.8, False, meta).save_appended(
                    {str(root / "edited.ndx")!r}, e, e, np.zeros(0, np.uint32), np.zeros(0, np.uint32), np.zeros(0, np.int64))
                try:
                    neardup.DedupIndex.open({str(root / "edited.ndx")!r})
                    raise SystemExit("opened")
                except neardup.IndexFormatError:
                    pass
        """,
    )


def _size_of(path: Path, kind: str) -> int:
    code = (
        f"import neardup; print(len(neardup.SimhashIndex.load({str(path)!r})))"
        if kind == "idx"
        else f"import neardup; print(len(neardup.DedupIndex.open({str(path)!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return int(done.stdout or -1)


def _ids(path: Path) -> list[int]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import neardup; print(neardup.DedupIndex.open({str(path)!r}).ids)",
        ],
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout or "[]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200_000, help="documents of the dense corpus")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    trials = parser.add_argument_group("issue 48's repeated trials (benches/campaign_trials.py)")
    trials.add_argument("--trials", action="store_true", help="run the trials instead")
    trials.add_argument("--sigint", type=int, default=80, help="SIGINT trials of --update")
    trials.add_argument("--sigterm", type=int, default=60, help="SIGTERM trials of --update")
    trials.add_argument("--kills", type=int, default=10, help="kill -9 trials of --update")
    trials.add_argument(
        "--dask-sigint", type=int, default=80, help="SIGINT trials of --update on Dask"
    )
    trials.add_argument(
        "--dask-sigterm", type=int, default=60, help="SIGTERM trials of --update on Dask"
    )
    trials.add_argument("--pairs", type=int, default=8, help="pairs of runs on one --scratch")
    trials.add_argument("--replaced", type=int, default=10, help="indexes replaced in a run")
    trials.add_argument("--crafted", type=int, default=100, help="crafted index files")
    trials.add_argument("--record", help="a JSONL file of one long record (else made)")
    trials.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="neardup-campaign-"))
    if args.trials:
        from campaign_trials import run_trials

        try:
            return run_trials(root, args)
        finally:
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    c = Campaign(root, args.size)
    start = time.monotonic()
    try:
        for part in (dense_cases, interrupt_cases, output_cases, special_file_cases, message_cases):
            print(f"\n== {part.__doc__.splitlines()[0] if part.__doc__ else part.__name__}")
            part(c)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\n{c.cases} cases and checks in {time.monotonic() - start:.0f} s (size {args.size:,}):")
    names = [
        "abort",
        "hang",
        "traceback",
        "status",
        "leftover temporary files",
        "device or FIFO replaced",
        "output replaced by a failing job",
        "input changed",
        "symlink replaced",
        "update lost",
        "mode changed",
        "owner changed",
        "disk filled",
        "slow or ignored SIGINT",
        "slow or ignored signal",
        "unclear message",
    ]
    for name in names:
        print(f"  {name:36} {c.counts.get(name, 0)}")
    for name in sorted(set(c.counts) - set(names)):
        print(f"  {name:36} {c.counts[name]}")
    return 1 if sum(c.counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
