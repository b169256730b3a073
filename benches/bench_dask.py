"""neardup.dask.dedup on a LocalCluster of 2 small workers against the single-machine command.

The corpus is the synthetic one of benches/synth.py (families of edited documents drawn from the
Debian descriptions), written as one Parquet file for the command and as Parquet parts for Dask.
Each run is its own process:

- single machine: ``neardup dedup corpus.parquet -o kept.parquet`` (both cores): wall and CPU
  seconds and peak RSS from GNU time;
- Dask: ``neardup.dask.dedup`` on ``neardup.dask.local_cluster(2, memory_limit="1.5GB")`` (2
  workers of one thread; with ``--stock-cluster``, Dask's own ``LocalCluster(n_workers=2,
  threads_per_worker=1, memory_limit="1.5GB")``, whose workers' allocator maps each block of
  128 KiB or more afresh), the kept rows written as Parquet parts by the workers. Sampled every
  0.1 s: the client's peak RSS (the client process, which also runs the scheduler), each worker's
  peak RSS, and the CPU seconds of every process of the run (client, scheduler, workers).

The kept ids of both runs are compared in order.

Usage (a release build: ``pip install .``)::

    python benches/bench_dask.py --n 1000000 [--n 2000000] [--part-rows 50000] [--out FILE.json]
    python benches/bench_dask.py --corpus long-40000-s0.jsonl --n 20000 --n 40000 --part-rows 2000

The synthetic corpus is generated into --corpora (default: a temporary folder), or reused there.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402


def dask_child(
    parts: str,
    out: str,
    result: str,
    candidates: str | None = None,
    settings: list[str] | None = None,
    stock: bool = False,
) -> None:
    import importlib
    import pkgutil

    import dask.dataframe as dd

    import neardup.dask as ndd
    from harness import ProcessSampler, small_cluster
    from neardup import pipeline, prefix_lists

    # Constants the client reads (say RARITY_TABLE=0: each partition's own rarity table): set
    # in every module of neardup.dask that holds the name (the one defining it, and any that
    # imported it), else in neardup.pipeline or neardup.prefix_lists, the one defining it.
    steps = [
        importlib.import_module(f"neardup.dask.{m.name}")
        for m in pkgutil.iter_modules(ndd.__path__)
    ]
    for setting in settings or []:
        name, value = setting.split("=")
        held = [m for m in steps if hasattr(m, name)]
        held = held or [m for m in (pipeline, prefix_lists) if hasattr(m, name)] or [pipeline]
        for module in held:
            setattr(module, name, int(value))

    sampler = ProcessSampler()

    # The time each stage of the dedup ended (its DEBUG log line) and the CPU seconds then: each
    # stage's worker peak and CPU.
    ends: list[tuple[float, str]] = []
    cpu_ends: list[float] = []

    class StageEnds(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("dask dedup: ") and " in " in record.getMessage():
                ends.append((time.perf_counter(), record.getMessage().split()[2]))
                cpu_ends.append(sampler.cpu_seconds())

    logger = logging.getLogger("neardup")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(StageEnds())

    with small_cluster(stock), sampler:
        start = time.perf_counter()
        cpu_start = sampler.cpu_seconds()
        stats: dict = {}
        kept = ndd.dedup(
            dd.read_parquet(parts), text_field="text", stats=stats, candidates=candidates
        )
        mid = time.perf_counter()
        kept.to_parquet(out, write_index=False, name_function=lambda i: f"part.{i:05d}.parquet")
        seconds = time.perf_counter() - start
        stats["seconds_write"] = time.perf_counter() - mid
        cpu_end = sampler.cpu_seconds()
        time.sleep(0.3)
    stage_peaks = {}
    begin = start
    for end, name in [*ends, (mid, "last"), (time.perf_counter(), "write")]:
        inside = [rss for t, rss in sampler.trace if begin <= t <= end]
        if name != "last":
            stage_peaks[name] = round(max(inside, default=0) / 2**20)
        begin = end
    marks = [cpu_start, *cpu_ends]
    stats.update(
        cpu_seconds_by_stage={
            name: round(b - a, 1) for (_, name), a, b in zip(ends, marks, marks[1:])
        },
        worker_peak_mb_by_stage=stage_peaks,
        seconds=seconds,
        cpu_seconds=cpu_end - cpu_start,
        client_peak_mb=sampler.client_peak_mb(),
        worker_peak_mb=sampler.worker_peak_mb(),
    )
    Path(result).write_text(json.dumps(stats))


def timed(cmd: list[str]) -> dict:
    """Wall and CPU seconds and peak RSS (MB) of a command, from GNU time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as f:
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", f.name, *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        seconds = time.perf_counter() - start
        user, system, rss = f.read().split()[-3:]
    return {
        "seconds": seconds,
        "cpu_seconds": float(user) + float(system),
        "peak_rss_mb": int(rss) / 1024,
        "status": proc.returncode,
        "stderr": proc.stderr[-400:],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, action="append", help="corpus sizes (repeat)")
    ap.add_argument("--part-rows", type=int, default=50_000, help="documents per Parquet part")
    ap.add_argument("--corpora", type=Path, help="folder of synthetic corpora (made or reused)")
    ap.add_argument(
        "--data",
        type=Path,
        default=synth.DATA,
        help="folder of the Debian corpus the synthetic one draws from (default: ../shared/data; "
        "without it, the sample that ships with neardup)",
    )
    ap.add_argument(
        "--corpus",
        type=Path,
        help="a JSONL corpus of {id, text} (say benches/synth_long.py's) to take the first N "
        "documents of, instead of the synthetic short texts",
    )
    ap.add_argument(
        "--candidates",
        choices=["fingerprint", "prefix"],
        help="the candidates mode of both runs (default: neardup's default)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=N",
        help="set a constant of neardup.dask's modules, neardup.pipeline or neardup.prefix_lists "
        "that the client reads in the Dask run (repeat), say RARITY_TABLE=0 for each "
        "partition's own rarity table",
    )
    ap.add_argument(
        "--stock-cluster",
        action="store_true",
        help="run on Dask's own LocalCluster, its workers' allocator as Dask sets it, instead "
        "of neardup.dask.local_cluster",
    )
    ap.add_argument("--out", help="write the measurements as JSON here")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        dask_child(
            *args.child, candidates=args.candidates, settings=args.set, stock=args.stock_cluster
        )
        return
    mode = ["--candidates", args.candidates] if args.candidates else []

    import pyarrow.json as pj
    import pyarrow.parquet as pq

    rows = []
    source = synth.debian_source(args.data) if args.corpus is None else None
    for n in args.n or [1_000_000]:
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
            if args.corpus is not None:
                table = pj.read_json(args.corpus).select(["id", "text"]).slice(0, n)
                n = len(table)
            else:
                corpora = args.corpora or Path(tmp)
                corpus = synth.generate(n, corpora, seed=0, source=source, jobs=1)
                table = pj.read_json(corpus.jsonl).select(["id", "text"])
            single = Path(tmp) / "corpus.parquet"
            pq.write_table(table, single)
            parts = Path(tmp) / "parts"
            parts.mkdir()
            step = args.part_rows
            for i in range(-(-n // step)):
                pq.write_table(table.slice(i * step, step), parts / f"part.{i:05d}.parquet")
            mb = table.column("text").nbytes / 1e6
            del table
            one = timed(
                [
                    sys.executable,
                    "-m",
                    "neardup",
                    "dedup",
                    str(single),
                    "-o",
                    f"{tmp}/kept.parquet",
                    "--quiet",
                    *mode,
                ]
            )
            one.update(
                n=n,
                mb=mb,
                candidates=args.candidates,
                what="single machine: neardup dedup (2 cores)",
            )
            print(json.dumps(one), flush=True)
            result = Path(tmp) / "dask.json"
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(parts),
                    f"{tmp}/kept-dask",
                    str(result),
                    *mode,
                    *(f"--set={s}" for s in args.set),
                    *(["--stock-cluster"] if args.stock_cluster else []),
                ]
            )
            stats = json.loads(result.read_text()) if proc.returncode == 0 else {}
            if proc.returncode == 0 and one["status"] == 0:
                want = pq.read_table(f"{tmp}/kept.parquet", columns=["id"]).column("id")
                got = pq.read_table(f"{tmp}/kept-dask", columns=["id"]).column("id")
                stats["kept"] = len(got)
                stats["same_kept_as_single_machine"] = want.to_pylist() == got.to_pylist()
            stats.update(
                n=n,
                mb=mb,
                candidates=args.candidates,
                settings=args.set,
                status=proc.returncode,
                cluster="LocalCluster" if args.stock_cluster else "neardup.dask.local_cluster",
                what=f"neardup.dask, 2 workers x 1 thread, 1.5 GB each, {-(-n // step)} parts",
            )
            print(json.dumps(stats), flush=True)
            rows += [one, stats]
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
