"""Where `neardup.dedup` spends its CPU time, stage by stage, beside `fingerprint_many` on the
same texts in the same process: the first pass against the hashing limit, and the prefix
candidates (the lists, their runs) against the stars that compare them.

    python benches/bench_stages.py CORPUS.jsonl [CORPUS.jsonl ...] [--reps N] [--json]
        [--peers] [--limit N]

Each corpus is a JSONL file of ``{"text": ...}`` lines. Each figure is the least of ``--reps``
runs of CPU seconds of the process (every thread): ``fingerprint_many`` (the default
`Simhasher`, normalization included), then one `neardup.dedup` with its defaults, its stages
timed by wrapping the functions that run them: the digest (`FirstPass.digest`: the core's
first pass, the normalization in Python and the keeping of the sketches), the prefix lists (`PrefixLists`, cut once the pass is over), the
rest of the candidates (runs of shared prefix hashes) and the stars (every comparison), with the
pairs counted: those the runs hold (`prefix_pairs`, a pair once for each hash it shares), those
the stars list (`pairs_listed`: a center and a text meeting in the size window of a run, each
pair once) and those compared (`pairs_compared`, what the length and positional filters let
through, and the texts of one fingerprint). To
compare two builds, run this script with each in turn, alternating, on a quiet machine: the
ratios of one build against the other are what holds across machines.

With ``--peers`` each round also runs, on the same texts and in turn with `neardup.dedup`,
datasketch ``MinHashLSH(threshold=0.8, num_perm=128)`` and rensa ``RMinHashLSH(threshold=0.8,
num_perm=128, num_bands=16)`` over word 3-shingles, then connected components
(``bench_verified.py``'s ``datasketch_dedup`` and ``rensa_dedup``), CPU seconds of each call
alone, least of ``--reps``, and prints each one's kept documents and neardup's CPU over theirs.
``--limit N`` reads the first N documents of each corpus.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import neardup
import neardup.pipeline as pipeline
import neardup.prefix_lists as prefix_lists

HERE = Path(__file__).resolve().parent

STAGES = ("digest", "prefix_lists", "candidates", "stars")


def timed(spent: dict[str, float], name: str, fn: Any) -> Any:
    """``fn``, adding its CPU seconds to ``spent[name]``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - start

    return wrapper


def peer_functions() -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import bench_verified

    return {"datasketch": bench_verified.datasketch_dedup, "rensa": bench_verified.rensa_dedup}


def measure(path: Path, reps: int, peers: bool = False, limit: int | None = None) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line, _ in zip(f, range(limit or sys.maxsize))]
    runners = peer_functions() if peers else {}
    kept: dict[str, int] = {}
    spent: dict[str, float] = {}
    # The module (the package's attribute of that name is the function).
    dedup_module = importlib.import_module("neardup.dedup")
    digest = pipeline.FirstPass.digest
    pipeline.FirstPass.digest = timed(spent, "digest", digest)  # type: ignore[method-assign]
    finish = prefix_lists.PrefixLists._finish
    prefix_lists.PrefixLists._finish = timed(spent, "prefix_lists", finish)  # type: ignore[method-assign]
    candidates = dedup_module.find_candidates
    dedup_module.find_candidates = timed(spent, "candidates", candidates)
    stars = dedup_module.stars
    dedup_module.stars = timed(spent, "stars", stars)
    hasher = neardup.Simhasher()
    best: dict[str, float] = {}
    try:
        for _ in range(reps):
            spent.clear()
            start = time.process_time()
            hasher.fingerprint_many(texts)
            spent["fingerprint_many"] = time.process_time() - start
            start = time.process_time()
            result = neardup.dedup(texts)
            spent["dedup"] = time.process_time() - start
            kept["neardup"] = int(result.n_kept)
            for name, run in runners.items():
                start = time.process_time()
                roots = run(texts)
                spent[name] = time.process_time() - start
                kept[name] = len(set(roots.tolist()))
            # The lists are cut inside the candidates: the rest of the candidates apart.
            spent["candidates"] -= spent.get("prefix_lists", 0.0)
            for key, value in spent.items():
                best[key] = min(best.get(key, value), value)
    finally:
        pipeline.FirstPass.digest = digest  # type: ignore[method-assign]
        prefix_lists.PrefixLists._finish = finish  # type: ignore[method-assign]
        dedup_module.find_candidates = candidates
        dedup_module.stars = stars
    return {
        "corpus": path.stem,
        "documents": len(texts),
        "mb": sum(len(t.encode("utf-8")) for t in texts) / 1e6,
        "removed": int(result.n_removed),
        "prefix_pairs": int(result.stats.get("prefix_pairs", 0)),
        "pairs_listed": int(result.stats.get("pairs_listed", 0)),
        "pairs_compared": int(result.stats.get("pairs_compared", 0)),
        **{key: round(value, 3) for key, value in best.items()},
        **{f"kept_{name}": count for name, count in kept.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", type=Path)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON object a corpus")
    parser.add_argument("--peers", action="store_true", help="datasketch and rensa too")
    parser.add_argument("--limit", type=int, help="the first N documents of each corpus")
    args = parser.parse_args()
    if args.peers and not args.json:
        print(
            "| corpus | documents | MB | neardup | datasketch | rensa | neardup / datasketch "
            "| neardup / rensa | kept: neardup | datasketch | rensa |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
    elif not args.json:
        print(
            "| corpus | documents | MB | fingerprint_many | digest | digest / fingerprint_many "
            "| prefix lists | runs | stars | dedup | prefix pairs | listed | compared |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args.corpora:
        row = measure(path, args.reps, args.peers, args.limit)
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        if args.peers:
            print(
                f"| {row['corpus']} | {row['documents']:,} | {row['mb']:.1f} | {row['dedup']:.3f} "
                f"| {row['datasketch']:.2f} | {row['rensa']:.2f} "
                f"| {row['dedup'] / row['datasketch']:.3f} | {row['dedup'] / row['rensa']:.3f} "
                f"| {row['kept_neardup']:,} | {row['kept_datasketch']:,} | {row['kept_rensa']:,} |",
                flush=True,
            )
            continue
        print(
            f"| {row['corpus']} | {row['documents']:,} | {row['mb']:.1f} "
            f"| {row['fingerprint_many']:.3f} | {row['digest']:.3f} "
            f"| {row['digest'] / row['fingerprint_many']:.2f} "
            f"| {row.get('prefix_lists', 0.0):.3f} | {row['candidates']:.3f} "
            f"| {row['stars']:.3f} | {row['dedup']:.3f} "
            f"| {row['prefix_pairs']:,} | {row['pairs_listed']:,} | {row['pairs_compared']:,} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
