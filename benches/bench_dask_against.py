"""neardup.dask.against on a LocalCluster of 2 small workers: the client's peak memory and the
CPU of the run, for two versions of neardup side by side (say the release installed globally and
a work tree's), at several sizes of the new corpus against one index.

The index is built once from the first ``--index-docs`` documents of a JSONL corpus (``neardup
index build``); the new documents are the next N, written as Parquet parts. Each run is its own
process (``--child``), with the Python given (``--python``, repeat to compare): a
``LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1.5GB")``, ``dedup_against`` on
the parts, the kept rows written as Parquet parts by the workers. Sampled every 0.1 s: the
client's peak RSS (the client process, which also runs the scheduler), each worker's peak RSS
and the CPU seconds of every process of the run. The kept ids of the runs are compared in order.

Usage (release builds)::

    python benches/bench_dask_against.py --corpus /tmp/pf-corp/synth-4m.jsonl \\
        --index-docs 1000000 --n 200000 --n 1000000 \\
        --python /root/.pyenv/versions/3.11.7/bin/python --python /work/venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(parts: str, index: str, out: str, result: str, update: str) -> None:
    import dask.dataframe as dd

    from harness import ProcessSampler, small_cluster
    from neardup.dask.against import dedup_against

    with small_cluster(), ProcessSampler() as sampler:
        time.sleep(0.3)
        start = time.perf_counter()
        cpu_start = sampler.cpu_seconds()
        client_start = sampler.client_peak_mb()
        kept = dedup_against(
            dd.read_parquet(parts), index, text_field="text", id_field="id", update=update == "1"
        )
        mid = time.perf_counter()
        kept.to_parquet(out, write_index=False, name_function=lambda i: f"part.{i:05d}.parquet")
        seconds = time.perf_counter() - start
        cpu_seconds = sampler.cpu_seconds() - cpu_start
        time.sleep(0.3)
    stats = {
        "seconds": seconds,
        "seconds_matching": mid - start,
        "cpu_seconds": cpu_seconds,
        "client_start_mb": client_start,
        "client_peak_mb": sampler.client_peak_mb(),
        "worker_peak_mb": sampler.worker_peak_mb(),
    }
    Path(result).write_text(json.dumps(stats))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, help="JSONL corpus of {id, text}")
    ap.add_argument("--index-docs", type=int, default=1_000_000)
    ap.add_argument("--n", type=int, action="append", help="new documents (repeat)")
    ap.add_argument("--part-rows", type=int, default=50_000)
    ap.add_argument("--python", action="append", help="the Python of each version (repeat)")
    ap.add_argument("--update", action="store_true", help="append the kept rows to the index")
    ap.add_argument("--tmp", default=os.environ.get("TMPDIR"))
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return

    import pyarrow.json as pj
    import pyarrow.parquet as pq

    pythons = args.python or [sys.executable]
    sizes = args.n or [200_000]
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        # The first --index-docs lines for the index, the next max(N) for the new documents.
        old, fresh = Path(tmp) / "old.jsonl", Path(tmp) / "new.jsonl"
        with open(args.corpus, "rb") as f, open(old, "wb") as a, open(fresh, "wb") as b:
            for i, line in enumerate(f):
                if i >= args.index_docs + max(sizes):
                    break
                (a if i < args.index_docs else b).write(line)
        table = pj.read_json(fresh, read_options=pj.ReadOptions(block_size=64 << 20))
        table = table.select(["id", "text"])
        index = Path(tmp) / "old.ndx"
        start = time.perf_counter()
        subprocess.run(
            [pythons[-1], "-m", "neardup", "index", "build", str(old), "-o", str(index), "-q"],
            check=True,
        )
        print(
            json.dumps(
                {"index_docs": args.index_docs, "build_seconds": time.perf_counter() - start}
            ),
            flush=True,
        )
        for n in sizes:
            parts = Path(tmp) / f"parts-{n}"
            parts.mkdir()
            new = table.slice(0, n)
            step = args.part_rows
            for i in range(-(-n // step)):
                pq.write_table(new.slice(i * step, step), parts / f"part.{i:05d}.parquet")
            kept_ids = []
            for v, python in enumerate(pythons):
                at = str(index)
                if args.update:  # each run appends to a copy of its own
                    at = f"{tmp}/copy-{v}.ndx"
                    subprocess.run(["cp", str(index), at], check=True)
                out, result = f"{tmp}/kept-{n}-{v}", f"{tmp}/result-{n}-{v}.json"
                proc = subprocess.run(
                    [
                        "nice",
                        python,
                        __file__,
                        "--child",
                        str(parts),
                        at,
                        out,
                        result,
                        "1" if args.update else "0",
                    ]
                )
                stats = json.loads(Path(result).read_text()) if proc.returncode == 0 else {}
                if proc.returncode == 0:
                    kept_ids.append(pq.read_table(out, columns=["id"]).column("id").to_pylist())
                    stats["kept"] = len(kept_ids[-1])
                    stats["same_kept_as_first"] = kept_ids[-1] == kept_ids[0]
                if args.update:
                    stats["index_bytes_same_as_first"] = (
                        Path(at).read_bytes() == Path(f"{tmp}/copy-0.ndx").read_bytes()
                    )
                stats.update(n=n, python=python, status=proc.returncode, update=args.update)
                print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    main()
