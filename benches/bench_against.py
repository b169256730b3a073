"""Deduplicating new documents against a dedup index (issue 17): the error and the removal
precision and recall of the compact sketches, time and peak memory against rebuilding from
scratch, and the core at 10M documents.

    python benches/bench_against.py sketches [--suite NAME ...] [--no-synthetic] [--docs N]
    python benches/bench_against.py scale [--corpus FILE.jsonl] [--index-docs N] [--new-docs M]
    python benches/bench_against.py scale --index-corpus INDEX.jsonl --corpus NEW.jsonl [--tmp DIR] [--repeat R]
    python benches/bench_against.py shifted CORPUS.jsonl COPIES OUT.jsonl [--prefix FILE ...]
    python benches/bench_against.py core [--index-docs N] [--new-docs M]
    python benches/bench_against.py halves [--corpus FILE.jsonl] [--truth FILE.tsv.gz] [--candidates prefix|fingerprint ...]

- ``sketches``: for each compact sketch shape in ``SHAPES`` (bytes a document x bits per bin),
  on each corpus of the suite (``../benchdata/suite``, with its exact truth) and the first N
  documents of the 1M synthetic corpus (its truth ``truth-1000000-s0.tsv.gz``): the estimate
  against the exact word-3-shingle Jaccard over every pair at J >= 0.5, and, indexing the first
  80% and deduplicating the rest against it, removal precision (removed documents at exact
  J >= 0.8 with the document named) and recall (of the new documents with an earlier one at
  exact J >= 0.8, the share removed), beside the in-memory ``neardup.dedup`` of all.
- ``scale``: ``neardup index build A -o A.ndx`` once, the index opened in a fresh process, then
  ``neardup dedup B --against A.ndx`` beside ``neardup dedup A+B`` (rebuilding: a verified dedup
  of everything), each in a process of its own: wall and CPU seconds and peak resident MB
  (``wait4``); with ``--repeat R`` the two dedup commands alternate R times. A and B are the first N and next M documents of one corpus, or two given corpora.
- ``shifted``: a large corpus from a small one: copies with their letters shifted (far from
  each other, with the same families inside), after the ``--prefix`` corpora.
- ``core``: random fingerprints, keys and sketched 64-byte compact sketches straight into the
  core: the file's size, the time to open it, and the batch search of M new documents against N.
- ``halves``: the recall of against mode as issue 45 defines it: the first half of a corpus
  indexed (``DedupIndex.build``), the second half deduplicated against it; second-half documents
  kept although a first-half document at exact word-3-shingle Jaccard >= 0.8 exists, beside the
  same count in ``neardup.dedup`` of the whole corpus (default settings), and the ceiling: how many
  of those second-half documents have such a partner whose compact-sketch Jaccard (the index's
  estimate) reaches 0.8. Without ``--corpus``: every manual page of ``/usr/share/man`` (all
  languages and sections, one document per file, gunzipped, roff stripped by
  ``corpora.strip_roff``, empty pages and second paths to one file left out), sorted by path and
  then shuffled with ``random.Random(HALVES_SEED)`` so that both halves mix sections and
  languages, written to ``../benchdata/man-pages.jsonl`` with its exact truth (pairs at
  J >= 0.5, ``man-pages.truth.tsv.gz``) and reused while ``man-pages.done`` is there. A given
  corpus takes ``--truth`` (default ``FILE.truth.tsv.gz`` beside it), or its truth at 0.8 is
  computed. ``--candidates`` runs against mode once per value given, passing it as
  ``candidates=``; without it, once with the API's default.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402
import synth  # noqa: E402

DEFAULT_CORPUS = HERE.parent.parent / "benchdata" / "corpus-1000000-s0.jsonl"


def measured(args: list[str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak resident MB, stdout, CPU seconds) of a command in a process of its own, waited
    for by a small wrapper that reads its resource usage (``wait4``)."""
    wrapper = (
        "import os, subprocess, sys, time, json; t = time.perf_counter(); p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE);"
        " out = p.stdout.read(); _, s, u = os.wait4(p.pid, 0);"
        " print(json.dumps({'s': time.perf_counter() - t, 'cpu': u.ru_utime + u.ru_stime, 'mb': u.ru_maxrss / 1024, 'status': s,"
        " 'out': out.decode()}))"
    )
    proc = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True)
    got = json.loads(proc.stdout)
    if got["status"]:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr[-2000:]}")
    return got["s"], got["mb"], got["out"], got["cpu"]


def split(corpus: Path, first: int, second: int, tmp: Path) -> tuple[Path, Path, Path]:
    a, b, ab = tmp / "a.jsonl", tmp / "b.jsonl", tmp / "ab.jsonl"
    with (
        open(corpus, encoding="utf-8") as f,
        open(a, "w") as wa,
        open(b, "w") as wb,
        open(ab, "w") as wab,
    ):
        for i, line in enumerate(f):
            if i >= first + second:
                break
            (wa if i < first else wb).write(line)
            wab.write(line)
    return a, b, ab


#: The compact sketch shapes compared: (bytes, bits per bin). 1,024 bytes of 32-bit words keep
#: every set of up to 256 shingles whole.
SHAPES = [(64, 1), (64, 2), (64, 4), (64, 32), (128, 1), (1024, 32)]
SUITE = HERE.parent.parent / "benchdata" / "suite"
#: Pairs of the truth the Jaccard error is measured on, at most (a sample past it).
ERROR_PAIRS = 300_000


def _truth(path: Path, ids: list[str], cut: int) -> tuple[dict[tuple[str, str], float], set[str]]:
    """From the exact truth (pairs at word-3-shingle Jaccard >= 0.5), read as a stream: a
    deterministic sample of at most ``ERROR_PAIRS`` pairs of ``ids`` with their Jaccard, and the
    documents from row ``cut`` on that have an earlier document at Jaccard >= 0.8."""
    import gzip
    import random

    position = {d: i for i, d in enumerate(ids)}
    sample: dict[tuple[str, str], float] = {}
    seen = 0
    rng = random.Random(0)
    earlier: set[str] = set()
    with gzip.open(path, "rt") as f:
        next(f)
        for line in f:
            a, b, j = line.rstrip("\n").split("\t")
            pa, pb = position.get(a), position.get(b)
            if pa is None or pb is None:
                continue
            jac = float(j)
            if jac >= 0.8 and max(pa, pb) >= cut:
                earlier.add(a if pa > pb else b)
            seen += 1
            if len(sample) < ERROR_PAIRS:
                sample[a, b] = jac
            elif rng.random() < ERROR_PAIRS / seen:
                sample.pop(next(iter(sample)))
                sample[a, b] = jac
    return sample, earlier


def _error_rows(texts: list[str], ids: list[str], truth: dict[tuple[str, str], float]) -> list[str]:
    """The compact estimate against the exact Jaccard over the truth's pairs, per shape."""
    import neardup
    from neardup import _core

    norm = neardup.Simhasher()
    offsets, hashes, _ = _core.shingle_sketches(
        [norm.normalize(t) for t in texts], 3, 1 << 20, None
    )
    at = {d: i for i, d in enumerate(ids)}
    # Texts without shingles (empty files) are found by their content key, not compared.
    sized = offsets[1:] > offsets[:-1]
    pairs = [(at[a], at[b], j) for (a, b), j in truth.items() if sized[at[a]] and sized[at[b]]]
    ia = np.array([p[0] for p in pairs], np.int64)
    ib = np.array([p[1] for p in pairs], np.int64)
    exact = np.array([p[2] for p in pairs])
    out = []
    for nbytes, bits in SHAPES:
        lens, words = _core.compact_sketches(offsets[:-1], offsets[1:], hashes, nbytes // 4, bits)
        w = words.reshape(-1, nbytes // 4)
        got = _core.compact_jaccard(
            np.ascontiguousarray(lens[ia]),
            np.ascontiguousarray(w[ia].reshape(-1)),
            np.ascontiguousarray(lens[ib]),
            np.ascontiguousarray(w[ib].reshape(-1)),
            nbytes // 4,
            bits,
        )
        err = got - exact
        sa, sb = lens[ia] == 2**32 - 1, lens[ib] == 2**32 - 1
        kept, both_binned, mixed = ~sa & ~sb, sa & sb, sa ^ sb
        near = (exact >= 0.7) & (exact < 0.9)

        def spread(rows: np.ndarray, err: np.ndarray = err) -> str:
            if not rows.any():
                return "| |"
            e = err[rows]
            return f"{np.abs(e).mean():.4f} | {e.std():.4f} / {e.mean():+.4f} ({int(rows.sum()):,})"

        out.append(
            f"| {nbytes} x {bits} | {len(pairs):,}: {kept.mean() if len(ia) else 0:.3f} / "
            f"{both_binned.mean() if len(ia) else 0:.3f} / {mixed.mean() if len(ia) else 0:.3f} | "
            f"{spread(kept)} | {spread(both_binned & near)} |"
        )
    return out


def _removal_rows(texts: list[str], ids: list[str], earlier: set[str], tmp: Path) -> list[str]:
    """The first 80% indexed, the rest deduplicated against it with each shape; removal
    precision (by the exact Jaccard of the texts) and recall (of ``earlier``), beside the
    in-memory verified dedup of all."""
    import neardup

    cut = len(texts) * 4 // 5
    by_id = dict(zip(ids, texts))
    shingles: dict[str, frozenset[str]] = {}

    def exact(a: str, b: str) -> float:
        for d in (a, b):
            if d not in shingles:
                shingles[d] = synth.neardup_shingles(by_id[d])
        x, y = shingles[a], shingles[b]
        return synth.jaccard(x, y) if x or y else 1.0

    def row(name: str, removed: dict[str, Any], per_doc: float | None, seconds: float) -> str:
        good = sum(exact(a, b) >= 0.8 for a, b in removed.items())
        hit = sum(a in earlier for a in removed)
        size = f"{per_doc:.1f}" if per_doc is not None else ""
        return (
            f"| {name} | {len(removed):,} | {good / max(len(removed), 1):.4f} | "
            f"{hit / max(len(earlier), 1):.4f} | {size} | {seconds:.1f} |"
        )

    out = []
    start = time.perf_counter()
    full = neardup.dedup(texts)
    kept_ids = [ids[int(r)] for r in full.kept_row]
    removed = {ids[r]: kept_ids[r] for r in range(cut, len(texts)) if not full.keep[r]}
    out.append(
        row(
            "neardup.dedup of all (bottom-1,024, in memory)",
            removed,
            None,
            time.perf_counter() - start,
        )
    )
    for nbytes, bits in SHAPES:
        start = time.perf_counter()
        path = tmp / f"a{nbytes}x{bits}.ndx"
        # The compact sketches alone: their estimates are what this table measures.
        index = neardup.DedupIndex.build(
            texts[:cut], path, ids=ids[:cut], sketch_bytes=nbytes, sketch_bits=bits, exact=False
        )
        got = neardup.against.dedup_against(texts[cut:], index, ids=ids[cut:])
        removed = {d["id"]: d["duplicate_of"] for d in got.removed()}
        out.append(
            row(
                f"index, {nbytes} bytes x {bits} bits",
                removed,
                os.path.getsize(path) / max(len(index), 1),
                time.perf_counter() - start,
            )
        )
    out.append(
        f"\n({len(earlier):,} new documents have an earlier document at exact Jaccard >= 0.8)"
    )
    return out


def sketches(args: argparse.Namespace) -> None:
    """Jaccard error and removal precision and recall of each compact sketch shape."""
    corpora: list[tuple[str, Path, Path, int]] = [
        (name, SUITE / f"{name}.jsonl", SUITE / f"{name}.truth.tsv.gz", 0) for name in args.suite
    ]
    if args.synthetic:
        corpora.append(
            (
                "synthetic",
                DEFAULT_CORPUS,
                DEFAULT_CORPUS.parent / "truth-1000000-s0.tsv.gz",
                args.docs,
            )
        )
    print(
        "Shapes: bytes a document x bits per bin (1,024 x 32 keeps every set of up to 256 shingles whole).\n"
    )
    for name, corpus, truth_path, limit in corpora:
        texts, ids = [], []
        with open(corpus, encoding="utf-8") as f:
            for i, line in enumerate(f):
                if limit and i >= limit:
                    break
                rec = json.loads(line)
                texts.append(rec["text"])
                ids.append(str(rec["id"]))
        truth, earlier = _truth(truth_path, ids, len(ids) * 4 // 5)
        print(f"### {name}: {len(texts):,} documents\n")
        print(
            "Jaccard error over every pair at exact J >= 0.5 (the estimate minus the exact Jaccard):\n"
        )
        print(
            "| shape | pairs: both kept / both binned / one of each (not compared) | both kept: mean abs error | sd / mean of the error (pairs) | both binned, J in [0.7, 0.9): mean abs error | sd / mean (pairs) |"
        )
        print("|---|---|---|---|---|---|")
        print("\n".join(_error_rows(texts, ids, truth)))
        print(
            "\nFirst 80% indexed, the last 20% deduplicated against it; precision: removed documents at exact Jaccard >= 0.8 with the one named; recall: of the new documents with an earlier one at >= 0.8, the share removed:\n"
        )
        print("| run | removed | precision | recall | bytes/document | seconds |")
        print("|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory() as tmp:
            print("\n".join(_removal_rows(texts, ids, earlier, Path(tmp))))
        print(flush=True)


def shifted(args: argparse.Namespace) -> None:
    """Writes copies of a corpus whose letters are shifted (a -> b ... z -> a, once per copy):
    the same families and lengths, the copies far apart from each other and from the original,
    each id prefixed by its shift."""
    with open(args.out, "w", encoding="utf-8") as out:
        for source in args.prefix or []:
            with open(source, encoding="utf-8") as f:
                out.writelines(f)
        for shift in range(1, args.copies + 1):
            letters = "abcdefghijklmnopqrstuvwxyz"
            table = str.maketrans(
                letters + letters.upper(),
                letters[shift:] + letters[:shift] + (letters[shift:] + letters[:shift]).upper(),
            )
            with open(args.corpus, encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    rec["id"] = f"x{shift}-{rec['id']}"
                    rec["text"] = rec["text"].translate(table)
                    out.write(json.dumps(rec, ensure_ascii=False) + "\n")


def scale(args: argparse.Namespace) -> None:
    exe = [sys.executable, "-m", "neardup"]
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        if args.index_corpus is not None:
            # Given corpora: the index's, the new one, and both for the rebuild.
            a, b, ab = args.index_corpus, args.corpus, Path(tmp) / "ab.jsonl"
            with open(ab, "w", encoding="utf-8") as out:
                for part in (a, b):
                    with open(part, encoding="utf-8") as f:
                        out.writelines(f)
            args.index_docs = sum(1 for _ in open(a, encoding="utf-8"))
            args.new_docs = sum(1 for _ in open(b, encoding="utf-8"))
        else:
            a, b, ab = split(args.corpus, args.index_docs, args.new_docs, Path(tmp))
        ndx = Path(tmp) / "a.ndx"
        build = measured([*exe, "index", "build", str(a), "--id-field", "id", "-o", str(ndx), "-q"])
        opened = measured(
            [
                sys.executable,
                "-c",
                "import sys, time, neardup; t = time.perf_counter(); "
                "i = neardup.DedupIndex.open(sys.argv[1]); print(time.perf_counter() - t, len(i))",
                str(ndx),
            ]
        )
        against_cmd = [
            *exe,
            "dedup",
            str(b),
            "--id-field",
            "id",
            "--against",
            str(ndx),
            "-o",
            str(Path(tmp) / "kept.jsonl"),
            "--json",
        ]
        full_cmd = [
            *exe,
            "dedup",
            str(ab),
            "--id-field",
            "id",
            "-o",
            str(Path(tmp) / "all.jsonl"),
            "--json",
        ]
        # The two commands alternate, so that a change in the machine's load falls on both.
        runs = [(measured(against_cmd), measured(full_cmd)) for _ in range(args.repeat)]
        summary = json.loads(runs[0][0][2])
        total = json.loads(runs[0][1][2])
        print(
            f"### {args.new_docs:,} new documents against an index of {args.index_docs:,} ({args.corpus.name}), {os.cpu_count()} cores\n"
        )
        print(
            f"index file: {ndx.stat().st_size / 1e6:.1f} MB, {ndx.stat().st_size / summary['index_size']:.1f} bytes per indexed document; "
            f"opened (mapped, checksum read) in {float(opened[2].split()[0]):.2f} s in a fresh process\n"
        )
        print("| run | wall seconds | CPU seconds | peak MB | removed |")
        print("|---|---|---|---|---|")
        print(
            f"| neardup index build A -o A.ndx (once) | {build[0]:.1f} | {build[3]:.1f} | {build[1]:.0f} | |"
        )
        for against, full in runs:
            print(
                f"| neardup dedup B --against A.ndx | {against[0]:.1f} | {against[3]:.1f} | {against[1]:.0f} | "
                f"{json.loads(against[2])['removed']:,} of {summary['documents']:,} |"
            )
            print(
                f"| neardup dedup A+B (rebuild) | {full[0]:.1f} | {full[3]:.1f} | {full[1]:.0f} | "
                f"{json.loads(full[2])['removed']:,} of {total['documents']:,} |"
            )

        def ratios(field: int, pick: Any) -> float:
            return pick([f[field] for _, f in runs]) / pick([a[field] for a, _ in runs])

        best, median = min, lambda v: float(np.median(v))
        print(
            f"\nagainst the index, {len(runs)} alternating run(s) of each: {ratios(0, best):.1f}x faster than rebuilding "
            f"(wall, best against best), {ratios(0, median):.1f}x (median against median); {ratios(3, best):.1f}x and "
            f"{ratios(3, median):.1f}x by CPU time; {1 / ratios(1, max):.2f}x its peak memory"
        )


def core(args: argparse.Namespace) -> None:
    import neardup
    from neardup import _core

    rng = np.random.default_rng(0)
    n, m, words = args.index_docs, args.new_docs, 16
    meta = neardup.against._settings_bytes(neardup.Simhasher())
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        path = os.path.join(tmp, "core.ndx")
        sketched = np.full(n, 2**32 - 1, np.uint32)
        start = time.perf_counter()
        _core.DedupIndex.empty(words, 1, 3, 8, 0.8, False, meta).save_appended(
            path,
            rng.integers(0, 2**64, n, dtype=np.uint64),
            rng.integers(0, 2**64, 2 * n, dtype=np.uint64),  # content keys: two words each
            sketched,
            rng.integers(0, 2**32, n * words, dtype=np.uint32),
            np.arange(n, dtype=np.int64),
        )
        written = time.perf_counter() - start
        del sketched
        start = time.perf_counter()
        index = _core.DedupIndex.load(path, True)
        opened = time.perf_counter() - start
        old = index.fingerprints()
        # New documents: half unrelated, half within 4 bits of an indexed one.
        fps = rng.integers(0, 2**64, m, dtype=np.uint64)
        near = rng.choice(n, m // 2, replace=False)
        flips = np.zeros(m // 2, np.uint64)
        for _ in range(4):
            flips |= np.uint64(1) << rng.integers(0, 64, m // 2).astype(np.uint64)
        fps[: m // 2] = old[near] ^ flips
        del old
        keys = rng.integers(0, 2**64, 2 * m, dtype=np.uint64)
        new_lens = np.full(m, 2**32 - 1, np.uint32)
        new_words = rng.integers(0, 2**32, m * words, dtype=np.uint32)
        import resource

        def cpu() -> float:
            u = resource.getrusage(resource.RUSAGE_SELF)
            return u.ru_utime + u.ru_stime

        start, cpu_start = time.perf_counter(), cpu()
        kept, index_row, _ = index.dedup(fps, keys, new_lens, new_words, 8, 0.8)
        seconds, cpu_seconds = time.perf_counter() - start, cpu() - cpu_start

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"core, {n:,} indexed and {m:,} new documents (random; half of the new within 4 bits of an indexed one), k = 8, 64-byte sketches, {os.cpu_count()} cores:"
        )
        print(
            f"file {os.path.getsize(path) / 1e6:.0f} MB ({os.path.getsize(path) / n:.1f} bytes per document), written in {written:.1f} s, "
            f"opened (mapped, checksum read) in {opened:.2f} s; batch search {seconds:.1f} s ({cpu_seconds:.1f} CPU s); process peak {peak:.0f} MB"
        )


MAN_ROOT = Path("/usr/share/man")
MAN_CORPUS = HERE.parent.parent / "benchdata" / "man-pages.jsonl"
#: The shuffle of the manual pages, sorted by path, into corpus order.
HALVES_SEED = 45
#: The near-duplicate Jaccard of issue 45.
NEAR = 0.8


def _read_man(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def build_man_pages(root: Path = MAN_ROOT, seed: int = HALVES_SEED) -> list[corpora.Doc]:
    """Every manual page under ``root`` (all languages and sections), one document per file,
    roff stripped: each file once (by its real path, so symbolic links add nothing), empty
    pages (``.so`` redirections among them) left out, sorted by path, then shuffled."""
    paths = sorted(
        {
            Path(os.path.realpath(Path(d) / f))
            for d, _, files in os.walk(root)
            for f in files
            if (Path(d) / f).is_file()
        }
    )
    pages = []
    for path in paths:
        try:
            text = corpora.strip_roff(_read_man(path))
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        if text.strip():
            pages.append((str(path), text))
    random.Random(seed).shuffle(pages)
    return [corpora.Doc(f"man-{i:06d}", text, source) for i, (source, text) in enumerate(pages)]


def _halves_inputs(
    args: argparse.Namespace,
) -> tuple[list[str], list[str], synth.Truth, float]:
    """(ids, texts, exact truth, the least Jaccard it lists) of the corpus, the manual pages built
    and cached if none given."""
    corpus, truth_path = args.corpus, args.truth
    if corpus is None:
        corpus = MAN_CORPUS
        truth_path = truth_path or corpus.with_name("man-pages.truth.tsv.gz")
        if not corpus.with_name("man-pages.done").exists():
            start = time.perf_counter()
            docs = build_man_pages()
            done = corpora.write_corpus(docs, corpus.parent, "man-pages")
            print(
                f"(built {corpus} and its truth: {done['documents']:,} pages, "
                f"{done['pairs_50']:,} pairs at J >= 0.5, {time.perf_counter() - start:.0f} s)\n"
            )
    elif truth_path is None and corpus.with_name(corpus.stem + ".truth.tsv.gz").exists():
        truth_path = corpus.with_name(corpus.stem + ".truth.tsv.gz")
    ids, texts = synth.read_corpus(corpus)
    if truth_path is not None:
        return ids, texts, synth.load_truth(truth_path, ids), synth.LOOSE
    start = time.perf_counter()
    truth = synth.exact_truth(texts, NEAR, synth.neardup_shingles)
    print(f"(exact truth at J >= {NEAR} computed in {time.perf_counter() - start:.0f} s)\n")
    return ids, texts, truth, NEAR


def _timed(run: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds of the process, every thread) of ``run()``."""
    start, cpu = time.perf_counter(), time.process_time()
    got = run()
    return got, time.perf_counter() - start, time.process_time() - cpu


def halves(args: argparse.Namespace) -> None:
    """Against-mode recall (issue 45): the first half indexed, the second deduplicated against
    it, beside the dedup of the whole corpus; and the ceiling the compact sketches set."""
    import neardup
    from neardup import _core

    ids, texts, truth, floor = _halves_inputs(args)
    n = len(texts)
    cut = n // 2
    a, b = truth.keys // max(n, 1), truth.keys % max(n, 1)  # a < b: b in the second half
    across = (a < cut) & (b >= cut)
    near = across & (truth.jaccard >= NEAR - 1e-9)
    partners: dict[int, list[int]] = {}
    for x, y in zip(a[near].tolist(), b[near].tolist()):
        partners.setdefault(y, []).append(x)
    with_partner = np.array(sorted(partners), dtype=np.int64)

    def missed(keep: np.ndarray) -> int:
        """Second-half documents (rows of ``keep``, from ``cut`` on) kept although a first-half
        one at exact J >= 0.8 exists."""
        return int(keep[with_partner - cut].sum()) if len(with_partner) else 0

    def missed_kept(keep: np.ndarray, held: np.ndarray) -> tuple[int, int]:
        """(second-half documents kept (``keep``) although a first-half one at exact J >= 0.8
        is kept too (``held``, by first-half row), how many have such a partner): pairs of
        near-duplicates both left."""
        have = [y for y in partners if any(held[x] for x in partners[y])]
        return sum(bool(keep[y - cut]) for y in have), len(have)

    label = args.corpus or MAN_CORPUS
    print(f"### {label.name}: {n:,} documents, {os.cpu_count()} cores\n")
    print(f"documents: first half (indexed) {cut:,}, second half {n - cut:,}")
    print(
        f"truth pairs across the halves: {int(across.sum()):,} at J >= {floor}, "
        f"{int(near.sum()):,} at J >= {NEAR}"
    )
    print(f"second-half documents with a first-half partner at J >= {NEAR}: {len(partners):,}\n")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        path = Path(tmp) / "a.ndx"
        index, wall, cpu = _timed(
            lambda: neardup.DedupIndex.build(
                texts[:cut],
                path,
                ids=ids[:cut],
                sketch_bytes=args.sketch_bytes,
                exact=not args.compact,
            )
        )
        size = path.stat().st_size
        print(
            f"index build: {wall:.1f} s wall, {cpu:.1f} s CPU; {len(index):,} of {cut:,} first-half "
            f"documents held ({index.sketch_bytes} bytes x {index.sketch_bits} bits, k = {index.k}"
            f"{', exact sets' if index.exact else ''}); "
            f"file {size:,} bytes: {size / max(len(index), 1):.1f} bytes per indexed document, "
            f"{size / max(cut, 1):.1f} per first-half document"
        )
        held = set(index.ids)
        in_index = sum(any(ids[x] in held for x in partners[y]) for y in partners)
        held_rows = np.array([ids[x] in held for x in range(cut)])
        print(
            f"  (of the {len(partners):,}, {in_index:,} have a partner at J >= {NEAR} that the index "
            "holds; the build's dedup removed the others' partners)"
        )
        second = [{"id": ids[r], "text": texts[r]} for r in range(cut, n)]
        for candidates in args.candidates or [None]:
            extra = {} if candidates is None else {"candidates": candidates}
            name = "API default" if candidates is None else f"candidates={candidates!r}"
            try:
                got, wall, cpu = _timed(
                    lambda extra=extra: neardup.dedup(second, against=index, **extra)
                )
            except (TypeError, ValueError) as err:
                print(f"against mode, {name}: refused by the API ({err})")
                continue
            both, have = missed_kept(got.keep, held_rows)
            print(
                f"against mode, {name}: {wall:.1f} s wall, {cpu:.1f} s CPU; removed {got.n_removed:,}; "
                f"kept although a first-half partner at J >= {NEAR} exists: {missed(got.keep):,} "
                f"of {len(partners):,}; kept although the index holds one: {both:,} of {have:,}"
            )
    full, wall, cpu = _timed(lambda: neardup.dedup(texts))
    both, have = missed_kept(full.keep[cut:], full.keep[:cut])
    print(
        f"neardup.dedup of all (default settings): {wall:.1f} s wall, {cpu:.1f} s CPU; removed "
        f"{int((~full.keep).sum()):,} of {n:,}; second-half documents kept although a first-half "
        f"partner at J >= {NEAR} exists: {missed(full.keep[cut:]):,} of {len(partners):,}; "
        f"although a kept one exists: {both:,} of {have:,}"
    )
    # The ceiling: the compact sketches made as the index makes them, compared as it compares.
    rows = sorted({r for y, xs in partners.items() for r in (y, *xs)})
    at = {r: i for i, r in enumerate(rows)}
    sketches = index.digest([texts[r] for r in rows])
    words = index.sketch_bytes // 4
    w = sketches.words.reshape(-1, words)
    pairs = [(at[x], at[y]) for y, xs in partners.items() for x in xs]
    ia = np.array([p[0] for p in pairs], np.int64)
    ib = np.array([p[1] for p in pairs], np.int64)
    estimate = _core.compact_jaccard(
        np.ascontiguousarray(sketches.lens[ia]),
        np.ascontiguousarray(w[ia].reshape(-1)),
        np.ascontiguousarray(sketches.lens[ib]),
        np.ascontiguousarray(w[ib].reshape(-1)),
        words,
        index.sketch_bits,
    )
    reached = {rows[i] for i in ib[estimate >= index.threshold].tolist()}
    print(
        f"ceiling: of the {len(partners):,} second-half documents with a first-half partner at "
        f"exact J >= {NEAR}, {len(reached):,} have one whose compact-sketch Jaccard is >= "
        f"{index.threshold:g} ({len(partners) - len(reached):,} have none: the sketch's error alone "
        f"leaves them kept; {len(pairs):,} pairs, {int((estimate >= index.threshold).sum()):,} "
        "estimated >= the threshold)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    q = sub.add_parser("sketches")
    q.add_argument(
        "--suite", nargs="*", default=["short", "long", "code", "chinese", "dups", "edits"]
    )
    q.add_argument("--synthetic", action=argparse.BooleanOptionalAction, default=True)
    q.add_argument("--docs", type=int, default=200_000)
    s = sub.add_parser("scale")
    s.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    s.add_argument("--index-docs", type=int, default=900_000)
    s.add_argument("--new-docs", type=int, default=100_000)
    s.add_argument("--tmp", default=None)
    s.add_argument(
        "--repeat", type=int, default=1, help="runs of each dedup command, alternating (default 1)"
    )
    s.add_argument(
        "--index-corpus",
        type=Path,
        default=None,
        help="index this corpus whole and deduplicate all of --corpus against it",
    )
    h = sub.add_parser("shifted")
    h.add_argument("corpus", type=Path)
    h.add_argument("copies", type=int)
    h.add_argument("out", type=Path)
    h.add_argument("--prefix", nargs="*", type=Path, help="corpora written first, as they are")
    c = sub.add_parser("core")
    c.add_argument("--index-docs", type=int, default=10_000_000)
    c.add_argument("--new-docs", type=int, default=1_000_000)
    c.add_argument("--tmp", default=None)
    v = sub.add_parser("halves")
    v.add_argument(
        "--corpus", type=Path, default=None, help="default: the manual pages of /usr/share/man"
    )
    v.add_argument("--truth", type=Path, default=None)
    v.add_argument(
        "--candidates",
        nargs="+",
        choices=["prefix", "fingerprint"],
        default=None,
        help="candidates= of the against run (one run per value); default: left out",
    )
    v.add_argument(
        "--sketch-bytes", type=int, default=64, help="the index's sketch_bytes (default 64)"
    )
    v.add_argument(
        "--compact",
        action="store_true",
        help="build the index without exact sets (exact=False): Jaccards from compact sketches",
    )
    v.add_argument("--tmp", default=None)
    args = parser.parse_args()
    {"sketches": sketches, "scale": scale, "shifted": shifted, "core": core, "halves": halves}[
        args.what
    ](args)


if __name__ == "__main__":
    main()
