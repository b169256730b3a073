"""neardup.dask on a LocalCluster of 2 workers against the single-machine path.

Builds a corpus of N documents from the Debian one by small random word edits (the generator of
bench_dedup.py), writes it as Parquet partitions, then times, each in a fresh process:

- single machine: ``neardup dedup corpus.parquet -o kept.parquet`` (peak RSS from GNU time);
- Dask: ``neardup.dask.dedup`` on 2 worker processes of one thread, writing the kept rows as
  Parquet; peak memory is the largest sum of the RSS of the client, the scheduler (same
  process) and the workers, sampled every 0.1 s; per-stage seconds and counts from ``stats=``.

Usage (a release build: ``pip install .``)::

    python benches/bench_dask.py --n 1000000 [--n 5000000] [--partitions 32] [--data ../shared/data]

Without the Debian corpus in --data (a fresh clone) the documents are drawn from the 3,000-document
sample that ships with neardup (said in one line on stderr).

Writes the table to stdout and, with ``--out``, a JSON file of the measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402  (the Debian corpus or the shipped sample)


def dask_child(corpus: str, out: str, result: str, workers: int) -> None:
    import dask.dataframe as dd
    import psutil
    from distributed import Client

    import neardup.dask as ndd

    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        me = psutil.Process()
        while not stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total)
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    with ndd.local_cluster(workers) as cluster, Client(cluster):
        sampler.start()
        start = time.perf_counter()
        stats: dict = {}
        kept = ndd.dedup(
            dd.read_parquet(corpus), text_field="text", stats=stats
        )  # the defaults, as the command
        mid = time.perf_counter()
        kept.to_parquet(out, write_index=False, name_function=lambda i: f"part.{i:05d}.parquet")
        seconds = time.perf_counter() - start
        stats["seconds_write"] = time.perf_counter() - mid
        stop.set()
        sampler.join()
    stats.update(seconds=seconds, peak_rss_mb=peak[0] / 2**20)
    Path(result).write_text(json.dumps(stats))


def source_texts(data: Path) -> list[str]:
    """The texts the corpus is drawn from: the Debian corpus in ``data``, or the sample that ships
    with neardup where it is absent (one line on stderr)."""
    from bench_dedup import read_texts

    return read_texts(str(synth.debian_source(data)))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, action="append", help="corpus sizes (repeat)")
    ap.add_argument("--partitions", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", help="write the measurements as JSON here")
    ap.add_argument(
        "--data",
        type=Path,
        default=synth.DATA,
        help="folder of the Debian corpus the documents are drawn from",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        dask_child(*args.child, workers=args.workers)
        return

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench_dedup import make_big
    from harness import timed

    source = source_texts(args.data)
    rows = []
    for n in args.n or [1_000_000]:
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
            jsonl = Path(tmp) / "big.jsonl"
            make_big(source, n, jsonl)
            table = pa.Table.from_pylist(
                [json.loads(line) for line in jsonl.open(encoding="utf-8")]
            )
            jsonl.unlink()
            mb = sum(len(t.encode("utf-8")) for t in table.column("text").to_pylist()) / 1e6
            single = Path(tmp) / "big.parquet"
            pq.write_table(table, single)
            parts = Path(tmp) / "parts"
            parts.mkdir()
            step = -(-n // args.partitions)
            for i in range(args.partitions):
                pq.write_table(table.slice(i * step, step), parts / f"part.{i:04d}.parquet")
            del table
            seconds, rss, code, _ = timed(
                [
                    sys.executable,
                    "-m",
                    "neardup",
                    "dedup",
                    str(single),
                    "-o",
                    f"{tmp}/kept.parquet",
                    "--quiet",
                ],
                3600,
            )
            rows.append(
                {
                    "n": n,
                    "mb": mb,
                    "what": "single machine: neardup dedup (2 cores)",
                    "seconds": seconds,
                    "peak_rss_mb": rss,
                    "status": code,
                }
            )
            print(rows[-1], flush=True)
            result = Path(tmp) / "dask.json"
            start = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--workers",
                    str(args.workers),
                    "--child",
                    str(parts),
                    f"{tmp}/kept-dask",
                    str(result),
                ]
            )
            wall = time.perf_counter() - start
            stats = json.loads(result.read_text()) if proc.returncode == 0 else {}
            same = None
            if proc.returncode == 0 and code == 0:
                want_ids = (
                    pq.read_table(f"{tmp}/kept.parquet", columns=["id"]).column("id").to_pylist()
                )
                got_ids = pq.read_table(f"{tmp}/kept-dask", columns=["id"]).column("id").to_pylist()
                same = want_ids == got_ids
                stats["kept"], stats["same_kept_as_single_machine"] = len(got_ids), same
            rows.append(
                {
                    "n": n,
                    "mb": mb,
                    "what": f"neardup.dask, LocalCluster {args.workers} workers x 1 thread, {args.partitions} partitions",
                    "seconds": stats.get("seconds", float("nan")),
                    "wall_with_startup": wall,
                    "peak_rss_mb": stats.get("peak_rss_mb", float("nan")),
                    "status": proc.returncode,
                    "stats": stats,
                }
            )
            print(rows[-1], flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
