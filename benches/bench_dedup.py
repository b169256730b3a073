"""End-to-end dedup benchmark: the `neardup` command beside its peers, timed in the same run.

On the Debian corpus (../shared/data, 63,905 documents, with exact ground truth), each contender
runs as its own process, reading the gzipped JSONL from disk and reporting its near-duplicate
pairs; we time it from start to exit, read its peak RSS (wait4), and score its pairs against the
truth (Jaccard >= 0.8 on word 3-shingles, see ../shared/data/README.md):

- `neardup dedup` (the whole job: two passes, kept documents written), `neardup dedup --dry-run`
  (one pass: clusters found, nothing written) and `neardup pairs` (every pair within k, written
  with the documents' ids to a CSV file: the pairs scored);
- the `simhash` package: `Simhash(text)` with its defaults and `SimhashIndex(k)`, each document
  queried with `get_near_dups`;
- datasketch: `MinHash(num_perm=128)` over word 3-shingles, `MinHashLSH(threshold=0.8)`, each
  document queried;
- rensa (if installed): `RMinHash(128)` over the same shingles, `RMinHashLSH(0.8, 128, 16)`.

With ``--big N`` it also builds a corpus of N documents from the Debian one by random small edits
(0 to 3 words replaced, deleted or inserted) and runs `neardup dedup` on it alone (the peers would
take hours), for documents/s, MB/s and peak RSS at scale.

    python benches/bench_dedup.py [--k 3] [--peers simhash,datasketch,rensa] [--big 1000000]
                                  [--out benches/results/dedup.md]

Without the Debian corpus in --data (a fresh clone), it runs on the 3,000-document sample that
ships with neardup, its truth computed exactly in the run (synth.exact_truth), and says so.

Run it on a release build (`pip install .`), not an editable debug build.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import platform
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

from neardup.verify import THRESHOLD_K

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402  (shingles, the truth loader and the scorer)
from harness import publish, timed  # noqa: E402

DATA = HERE.parent.parent / "shared" / "data"


def shingles(text: str) -> list[str]:
    """The ground truth's word 3-shingles (benches/synth.py), sorted: the peers' input order."""
    return sorted(synth.shingles(text))


def _open_text(path: str | Path):
    return (
        gzip.open(path, "rt", encoding="utf-8")
        if str(path).endswith(".gz")
        else open(path, encoding="utf-8")
    )


def read_texts(path: str) -> list[str]:
    with _open_text(path) as f:
        return [json.loads(line)["text"] for line in f]


def load_corpus(path: Path) -> tuple[list[str], list[str]]:
    """(ids, texts) of a JSONL corpus, plain or gzipped."""
    ids, texts = [], []
    with _open_text(path) as f:
        for line in f:
            d = json.loads(line)
            ids.append(str(d["id"]))
            texts.append(d["text"])
    return ids, texts


# -- the peers, each run in a child process ----------------------------------------------------


def peer_simhash(texts: list[str], k: int) -> list[tuple[int, int]]:
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)
    # Simhash(text) builds {feature: count} and overflows under numpy 2 once a feature occurs
    # more than 255 times; its own features passed as a list (weight 1 each, repeats kept) give
    # the same fingerprint.
    tokenizer = Simhash(0)
    hashes = [Simhash(tokenizer._tokenize(t)) for t in texts]
    index = SimhashIndex([(str(i), h) for i, h in enumerate(hashes)], k=k)
    out = set()
    for i, h in enumerate(hashes):
        for j in index.get_near_dups(h):
            j = int(j)
            if j != i:
                out.add((min(i, j), max(i, j)))
    return sorted(out)


def lsh_pairs(lsh, sigs: list) -> list[tuple[int, int]]:
    """Every pair an LSH index returns when each document's sketch queries it, each once."""
    out = set()
    for i, m in enumerate(sigs):
        for j in lsh.query(m):
            if j != i:
                out.add((min(i, j), max(i, j)))
    return sorted(out)


def peer_datasketch(texts: list[str], k: int) -> list[tuple[int, int]]:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    sigs = []
    for i, t in enumerate(texts):
        m = MinHash(num_perm=128)
        m.update_batch([s.encode("utf-8") for s in shingles(t)])
        sigs.append(m)
        lsh.insert(i, m)
    return lsh_pairs(lsh, sigs)


def peer_rensa(texts: list[str], k: int) -> list[tuple[int, int]]:
    from rensa import RMinHash, RMinHashLSH

    lsh = RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)
    sigs = []
    for i, t in enumerate(texts):
        m = RMinHash(num_perm=128, seed=42)
        m.update(shingles(t))
        sigs.append(m)
        lsh.insert(i, m)
    return lsh_pairs(lsh, sigs)


PEERS = {"simhash": peer_simhash, "datasketch": peer_datasketch, "rensa": peer_rensa}


def child(name: str, path: str, k: int, out: str) -> None:
    texts = read_texts(path)
    found = PEERS[name](texts, k)
    np.save(out, np.array(found, dtype=np.int64).reshape(-1, 2))


def neardup_cmd() -> list[str]:
    return [sys.executable, "-m", "neardup"]


def make_big(source: list[str], n: int, path: Path, seed: int = 0) -> None:
    """n documents, each a Debian description with 0 to 3 random word edits."""
    rng = random.Random(seed)
    words = [t.split() for t in source]
    vocab = [w for ws in words[:2000] for w in ws]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            src = rng.randrange(len(words))
            ws = list(words[src])
            for _ in range(rng.randint(0, 3)):
                op = rng.randrange(3)
                pos = rng.randrange(len(ws) + 1)
                if op == 0 and pos < len(ws):
                    ws[pos] = rng.choice(vocab)
                elif op == 1 and pos < len(ws) and len(ws) > 1:
                    del ws[pos]
                else:
                    ws.insert(pos, rng.choice(vocab))
            f.write(json.dumps({"id": f"{src}#{i}", "text": " ".join(ws)}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument(
        "--corpus", type=Path, help="JSONL corpus (plain or .gz; default: the Debian one in --data)"
    )
    ap.add_argument(
        "--truth", type=Path, help="its truth TSV (id_a, id_b, jaccard), e.g. from benches/synth.py"
    )
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--peers", default="simhash,datasketch,rensa")
    ap.add_argument(
        "--big",
        type=int,
        default=0,
        help="also run neardup on a corpus of this many edited documents",
    )
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--pairs-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.input, args.k, args.pairs_out)
        return

    if args.corpus is not None:
        corpus, truth_file = args.corpus, args.truth
    else:
        corpus, truth_file = synth.debian_corpus(args.data)
    ids, texts = load_corpus(corpus)
    truth = (
        synth.load_truth(truth_file, ids) if truth_file is not None else synth.exact_truth(texts)
    )
    row = {doc_id: i for i, doc_id in enumerate(ids)}
    n = len(ids)
    corpus_name = (
        f"`{corpus.name}`" if args.corpus is not None or truth_file is None else "Debian corpus"
    )
    raw_mb = (
        sum(len(json.dumps({"id": i, "text": t}).encode()) + 1 for i, t in zip(ids, texts)) / 1e6
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:

        def score(pairs: np.ndarray) -> dict:
            return synth.score(pairs, truth)

        # neardup: the whole dedup job, then the pairs it finds (scored)
        seconds, rss, code, err = timed(
            neardup_cmd() + ["dedup", str(corpus), "-o", f"{tmp}/kept.jsonl.gz", "--quiet"],
            args.timeout,
        )
        assert code == 0, err
        rows.append(
            (f"neardup dedup (-o kept.jsonl.gz; verified, k={THRESHOLD_K})", seconds, rss, None)
        )
        seconds, rss, code, err = timed(
            neardup_cmd()
            + ["dedup", str(corpus), "--dry-run", "--no-verify", "--k", str(args.k), "--quiet"],
            args.timeout,
        )
        assert code == 0, err
        rows.append((f"neardup dedup --dry-run --no-verify (k={args.k})", seconds, rss, None))

        def scored_pairs(label: str, extra: list[str]) -> None:
            seconds, rss, code, err = timed(
                neardup_cmd() + ["pairs", str(corpus), "-o", f"{tmp}/pairs.csv", "--quiet", *extra],
                args.timeout,
            )
            assert code == 0, err
            with open(f"{tmp}/pairs.csv", newline="", encoding="utf-8") as f:
                found = [(row[r["id_a"]], row[r["id_b"]]) for r in csv.DictReader(f)]
            pairs = np.sort(np.array(found, dtype=np.int64).reshape(-1, 2), axis=1)
            rows.append((label, seconds, rss, score(pairs)))

        scored_pairs(f"neardup pairs --no-verify (k={args.k})", ["--no-verify", "--k", str(args.k)])
        # The default: candidates within k = THRESHOLD_K checked by word-3-shingle Jaccard >= 0.8.
        seconds, rss, code, err = timed(
            neardup_cmd() + ["dedup", str(corpus), "--dry-run", "--quiet"], args.timeout
        )
        assert code == 0, err
        rows.append((f"neardup dedup --dry-run (verified, k={THRESHOLD_K})", seconds, rss, None))
        scored_pairs(f"neardup pairs (verified, k={THRESHOLD_K})", [])
        print(rows, flush=True)

        for name in [p for p in args.peers.split(",") if p]:
            try:
                __import__(
                    {"simhash": "simhash", "datasketch": "datasketch", "rensa": "rensa"}[name]
                )
            except ImportError:
                print(f"{name}: not installed, skipped", flush=True)
                continue
            out = f"{tmp}/{name}.npy"
            cmd = [
                sys.executable,
                __file__,
                "--child",
                name,
                "--input",
                str(corpus),
                "--k",
                str(args.k),
                "--pairs-out",
                out,
                "--data",
                str(args.data),
            ]
            seconds, rss, code, err = timed(cmd, args.timeout)
            if code != 0:
                rows.append((f"{name} (failed or timed out: {code})", seconds, rss, None))
                continue
            label = {
                "simhash": f"simhash SimhashIndex (k={args.k})",
                "datasketch": "datasketch MinHashLSH (0.8, 128 perm)",
                "rensa": "rensa RMinHashLSH (0.8, 128 perm)",
            }[name]
            rows.append((label, seconds, rss, score(np.load(out))))
            print(rows[-1], flush=True)

        big_rows = []
        if args.big:
            big = Path(tmp) / "big.jsonl"
            make_big(texts, args.big, big)
            size_mb = big.stat().st_size / 1e6
            seconds, rss, code, err = timed(
                neardup_cmd()
                + ["dedup", str(big), "-o", f"{tmp}/big-kept.jsonl", "--k", str(args.k), "--quiet"],
                args.timeout,
            )
            big_rows.append(
                (
                    f"neardup dedup, {args.big:,} edited documents ({size_mb:.0f} MB JSONL)",
                    seconds,
                    rss,
                    args.big,
                    size_mb,
                    code,
                )
            )
            seconds, rss, code, err = timed(
                neardup_cmd() + ["dedup", str(big), "--dry-run", "--k", str(args.k), "--quiet"],
                args.timeout,
            )
            big_rows.append(
                ("neardup dedup --dry-run, same corpus", seconds, rss, args.big, size_mb, code)
            )
            print(big_rows, flush=True)

    fastest_peer = min(
        (s for name, s, _, _ in rows if not name.startswith("neardup")), default=None
    )
    lines = [
        "# Dedup end to end: neardup beside its peers",
        "",
        f"{corpus_name}: {n:,} documents, {raw_mb:.1f} MB of JSONL; truth: "
        f"{int((truth.jaccard >= 0.8).sum()):,} pairs with Jaccard >= 0.8 on word 3-shingles. Each contender is one process, "
        "timed from start to exit (Python start-up and reading the file included).",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        f"Command: `python benches/bench_dedup.py --k {args.k}"
        + (f" --big {args.big}" if args.big else "")
        + (f" --corpus {args.corpus} --truth {args.truth}" if args.corpus else "")
        + "`",
        "",
        "| contender | seconds | documents/s | MB/s | peak RSS (MB) | pairs | precision | recall | F1 | time vs fastest peer |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, seconds, rss, s in rows:
        ratio = (
            f"{fastest_peer / seconds:.1f}x faster"
            if fastest_peer and name.startswith("neardup")
            else ""
        )
        if s is None:
            q = "| | | | "
        else:
            q = f"| {s['reported']:,} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} "
        lines.append(
            f"| {name} | {seconds:.2f} | {n / seconds:,.0f} | {raw_mb / seconds:.1f} | {rss:.0f} {q}| {ratio} |"
        )
    if big_rows:
        lines += [
            "",
            "| at scale | seconds | documents/s | MB/s | peak RSS (MB) |",
            "|---|---|---|---|---|",
        ]
        for name, seconds, rss, count, size_mb, code in big_rows:
            lines.append(
                f"| {name}{'' if code == 0 else f' (exit {code})'} | {seconds:.1f} | {count / seconds:,.0f} | {size_mb / seconds:.1f} | {rss:.0f} |"
            )
    publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
