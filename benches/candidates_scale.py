"""How the candidate pairs grow with the corpus, and what keeps them linear (issue 27, item 2).

    python benches/candidates_scale.py short:10000 short:100000 long:10000 ... [--options]

A corpus is ``short:N`` (the first N documents of ``--synth``, a ``benches/synth.py`` corpus, with
its truth; default ``../benchdata/synth/corpus-2000000-s0.jsonl``, made by
``python benches/synth.py 2000000 ../benchdata/synth``), ``long:N`` (``benches/synth_long.py``, generated once into ``--data``) or
``suite:NAME`` (a corpus of ``benches/corpora.py``). For each it prints, at the default
fingerprint (word unigrams, tf):

- ``pairs/doc``: pairs of distinct fingerprints within k, per document, k = 3..8 (what the
  candidate search enumerates), and the bits' bias (``bits out``: set in < 30% or > 70% of the
  distinct fingerprints; ``random``: mean distance of random pairs);
- ``recall``: share of the pairs at word-3-shingle Jaccard >= 0.8 within k.

With ``--options`` also, at k = 3..8 (recall / distinct candidate pairs per document):

- ``seedsR``: R independent fingerprints (each feature hash re-mixed by fmix64(h ^ seed)),
  a pair a candidate when within k in any of them;
- ``white``: each bit's tally (normalized by the document's total weight) compared with the
  corpus mean of that bit instead of 0 (every bit balanced);
- ``logtf``: weights 1 + ln tf;
- ``prefix``: no fingerprint: pairs sharing one of the rarest ``|s| - ceil(0.7 |s|) + 1`` hashes of
  their bottom-1024 sketches ``s`` (rarity: documents holding the hash), sizes within 0.7;
- ``radius``: the largest k whose pairs per document, estimated from a 20,000-document sample
  (pairs in the sample x (n / m)^2), stay under a budget (2, 5, 10 per document).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import candidates  # noqa: E402
import corpora  # noqa: E402
import neardup  # noqa: E402
import synth  # noqa: E402
import synth_long  # noqa: E402
from neardup import _core  # noqa: E402

KS = tuple(range(3, 9))
THRESHOLD = 0.8
SYNTH = HERE.parent.parent / "benchdata" / "synth" / "corpus-2000000-s0.jsonl"
DATA = HERE.parent.parent / "benchdata" / "scale"
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def load(spec: str, args: argparse.Namespace) -> tuple[list[str], np.ndarray]:
    """Texts and the sorted keys (a * n + b) of their pairs at Jaccard >= THRESHOLD."""
    kind, _, arg = spec.partition(":")
    if kind == "short":
        n = int(arg)
        texts = []
        with open(args.synth, encoding="utf-8") as f:
            for line in f:
                if len(texts) == n:
                    break
                texts.append(json.loads(line)["text"])
        import pandas as pd

        truth = args.synth.with_name(args.synth.name.replace("corpus-", "truth-")).with_suffix(
            ".tsv.gz"
        )
        frame = pd.read_csv(truth, sep="\t")
        a = frame["id_a"].str[1:].astype(np.int64).to_numpy()
        b = frame["id_b"].str[1:].astype(np.int64).to_numpy()
        ok = (frame["jaccard"].to_numpy() >= THRESHOLD) & (a < n) & (b < n)
        return texts, np.unique(np.minimum(a, b)[ok] * n + np.maximum(a, b)[ok])
    if kind == "long":
        n = int(arg)
        stem = f"long-{n}-s0"
        if not (args.data / f"{stem}.truth.tsv.gz").exists():
            t0 = time.perf_counter()
            texts, pairs = synth_long.generate(n, synth_long.load_sources(args.suite))
            synth_long.write(args.data, stem, texts, pairs)
            print(f"# generated {stem} in {time.perf_counter() - t0:.0f} s", flush=True)
        path = args.data / f"{stem}.jsonl"
    elif kind == "suite":
        path = args.suite / f"{arg}.jsonl"
        stem = arg
    else:
        raise SystemExit(f"unknown corpus {spec!r}")
    ids, texts = synth.read_corpus(path)
    truth = synth.load_truth(path.with_name(f"{stem}.truth.tsv.gz"), ids)
    return texts, truth.keys[truth.jaccard >= THRESHOLD]


def pair_hist(fps: np.ndarray, k: int, weighted: bool = False) -> np.ndarray:
    """Pairs of distinct fingerprints at each distance 1..k (index 0: pairs of equal ones, by
    copies, when weighted; else 0)."""
    distinct, counts = np.unique(fps, return_counts=True)
    i, j, d = _core.find_all(distinct, k, max_pairs=None)
    w = (counts[i] * counts[j]).astype(np.float64) if weighted else None
    hist = np.bincount(d, weights=w, minlength=k + 1).astype(np.int64)
    hist[0] = int((counts * (counts - 1) // 2).sum()) if weighted else 0
    return hist


def spread(fps: np.ndarray) -> tuple[int, float]:
    distinct = np.unique(fps)
    ones = ((distinct[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).mean(axis=0)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, len(fps), 200_000), rng.integers(0, len(fps), 200_000)
    return int(((ones < 0.3) | (ones > 0.7)).sum()), float(np.bitwise_count(fps[x] ^ fps[y]).mean())


def fmix64(h: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = h ^ (h >> np.uint64(33))
        h = h * np.uint64(0xFF51AFD7ED558CCD)
        h = h ^ (h >> np.uint64(33))
        h = h * np.uint64(0xC4CEB9FE1A85EC53)
        return h ^ (h >> np.uint64(33))


def tallies(table: candidates.FeatureTable, weights: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """(documents, 64) signed tallies divided by each document's total weight."""
    total = np.bincount(table.doc, weights=weights, minlength=table.docs)
    total[total == 0] = 1
    out = np.empty((table.docs, 64))
    for i in range(64):
        sign = ((hashes >> np.uint64(i)) & np.uint64(1)).astype(np.float64)[table.feature] * 2 - 1
        out[:, i] = np.bincount(table.doc, weights=sign * weights, minlength=table.docs) / total
    return out


def bits(t: np.ndarray, centre: np.ndarray | float = 0.0) -> np.ndarray:
    return ((t > centre).astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(
        axis=1, dtype=np.uint64
    )


def union_candidates(fp_sets: list[np.ndarray], k: int) -> np.ndarray:
    """Distinct document pairs (keys) within k in any of the fingerprint arrays, copies
    included (documents with equal fingerprints pair up)."""
    n = len(fp_sets[0])
    keys = []
    for fps in fp_sets:
        distinct, inverse = np.unique(fps, return_inverse=True)
        i, j, _ = _core.find_all(distinct, k, max_pairs=None)
        # expand groups: rows of each distinct value
        order = np.argsort(inverse, kind="stable")
        start = np.searchsorted(inverse[order], np.arange(len(distinct) + 1))
        size = np.diff(start)
        # within-group pairs
        for g in np.flatnonzero(size > 1):
            r = order[start[g] : start[g + 1]]
            x, y = np.triu_indices(len(r), 1)
            keys.append(np.minimum(r[x], r[y]) * n + np.maximum(r[x], r[y]))
        single = (size[i] == 1) & (size[j] == 1)
        ra, rb = order[start[i[single]]], order[start[j[single]]]
        keys.append(np.minimum(ra, rb) * n + np.maximum(ra, rb))
        for a, b in zip(i[~single], j[~single]):
            x, y = order[start[a] : start[a + 1]], order[start[b] : start[b + 1]]
            xx, yy = np.repeat(x, len(y)), np.tile(y, len(x))
            keys.append(np.minimum(xx, yy) * n + np.maximum(xx, yy))
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)


def prefix_candidates(
    texts: list[str], t: float = 0.7, size: int = 1024, by_rarity: bool = True, sample: int = 0
) -> tuple[np.ndarray, float, np.ndarray]:
    """Distinct pairs sharing one of the first |s| - ceil(t |s|) + 1 hashes of their bottom-size
    sketches s in one global order (rarest first, by the documents holding each hash, or by
    hash value alone), sizes within t, copies left out; the index entries per document and the content keys."""
    n = len(texts)
    offsets, hashes, content = _core.shingle_sketches(
        [neardup.Simhasher().normalize(x) for x in texts], 3, size, None
    )
    sizes = np.diff(offsets.astype(np.int64))
    doc = np.repeat(np.arange(n, dtype=np.int64), sizes)
    if by_rarity and sample:
        # Rarity counted on a sample of documents only (hashes it lacks count 0): any global
        # order keeps the guarantee, only the candidates' number depends on it.
        rows = np.random.default_rng(0).choice(n, min(n, sample), replace=False)
        seen, seen_df = np.unique(hashes[np.isin(doc, rows)], return_counts=True)
        at = np.minimum(np.searchsorted(seen, hashes), max(0, len(seen) - 1))
        df = np.where(seen[at] == hashes, seen_df[at], 0) if len(seen) else np.zeros(len(hashes))
        r = df.astype(np.int64) << np.int64(32) | hashes.astype(np.int64)  # order (df, hash)
    elif by_rarity:
        tokens, inverse, df = np.unique(hashes, return_inverse=True, return_counts=True)
        rank = np.empty(len(tokens), np.int64)
        rank[np.lexsort((tokens, df))] = np.arange(len(tokens))
        r = rank[inverse.reshape(-1)]
        del inverse
    else:
        r = hashes.astype(np.int64)
    order = np.lexsort((r, doc))
    r = r[order]
    pos = np.arange(len(r)) - np.repeat(offsets[:-1].astype(np.int64), sizes)
    p = sizes - np.ceil(t * sizes - 1e-9).astype(np.int64) + 1
    keep = pos < p[doc]
    pr, pd_ = r[keep], doc[keep]
    entries = len(pr) / n
    del r, pos, keep, doc
    o = np.lexsort((pd_, pr))
    pr, pd_ = pr[o], pd_[o]
    starts = np.flatnonzero(np.r_[True, pr[1:] != pr[:-1]])
    lens = np.diff(np.r_[starts, len(pr)])
    keys = []
    for st, ln in zip(starts[lens >= 2].tolist(), lens[lens >= 2].tolist()):
        run = pd_[st : st + ln]
        x, y = np.triu_indices(ln, 1)
        a, b = run[x], run[y]
        ok = (sizes[a] >= t * sizes[b]) & (sizes[b] >= t * sizes[a])
        keys.append(a[ok] * n + b[ok])
    pairs = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
    # Copies (equal content keys) are collapsed before any search: not candidates.
    pairs = pairs[content[pairs // n] != content[pairs % n]]
    return pairs, entries, content


def report(name: str, n: int, label: str, true: np.ndarray, found: dict, cands: dict) -> None:
    cells = " | ".join(f"{found[k]:.3f} / {cands[k] / n:.3g}" for k in sorted(found) if k in cands)
    print(f"| {name} | {label} | {cells} |", flush=True)


def run(spec: str, args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    texts, true = load(spec, args)
    n = len(texts)
    fps = neardup.Simhasher().fingerprint_many(texts)
    a, b = true // n, true % n
    hist = pair_hist(fps, max(KS))
    cum = np.cumsum(hist)
    out, mean = spread(fps)
    dist = np.bitwise_count(fps[a] ^ fps[b])
    distinct = np.unique(fps)
    i, j, _ = _core.find_all(distinct, max(KS), max_pairs=None)
    degree = np.sort(np.bincount(np.r_[i, j], minlength=len(distinct)))[::-1]
    top = degree[: max(1, len(degree) // 100)].sum() / max(1, degree.sum())
    print(
        f"# {spec}: at k = {max(KS)} the 1% most connected distinct fingerprints hold {top:.0%} "
        f"of the pair ends; {np.mean(degree > 0):.0%} have a neighbour; uniform random 64-bit "
        f"values would give {sum(math.comb(64, d) for d in range(max(KS) + 1)) / 2**64 * (n - 1):.2g} "
        "per document",
        flush=True,
    )
    del i, j, degree
    print(
        f"| {spec} | {n:,} | {len(np.unique(fps)):,} | {len(true):,} | {out} | {mean:.1f} | "
        + " | ".join(f"{cum[k] / n:.3g}" for k in KS)
        + " | "
        + " | ".join(f"{(dist <= k).mean():.3f}" for k in KS)
        + f" | {time.perf_counter() - t0:.0f} s |",
        flush=True,
    )
    if not args.options:
        return
    # (a) radius from a sample's density.
    rng = np.random.default_rng(0)
    m = min(n, 20_000)
    sample = fps[rng.choice(n, m, replace=False)]
    est = np.cumsum(pair_hist(sample, max(KS))) * (n * (n - 1)) / max(1, m * (m - 1))
    for budget in (2, 5, 10):
        fit = [k for k in KS if est[k] / n <= budget]
        k = max(fit) if fit else min(KS) - 1
        rec = float((dist <= k).mean()) if k >= 0 else 0.0
        real = cum[k] / n if k >= min(KS) else float("nan")
        print(
            f"| {spec} | radius <= {budget}/doc | k = {k}: estimated {est[k] / n if k >= 0 else 0:.3g}, "
            f"real {real:.3g} / doc, recall {rec:.3f} |",
            flush=True,
        )
    # (d) prefix filtering on the sketches.
    for t, size, rarity, sample in args.prefix:
        t1 = time.perf_counter()
        pk, entries, content = prefix_candidates(texts, t, size, rarity, sample)
        found = np.isin(true, pk) | (content[a] == content[b])
        print(
            f"| {spec} | prefix t = {t}, bottom-{size}, {'rarest' if rarity else 'hash order'}"
            f"{f' (counted on {sample:,} documents)' if sample else ''} | "
            f"recall {found.mean():.3f} / {len(pk) / n:.3g} per doc "
            f"({len(pk) / max(1, len(true)):.2g}x the true pairs), "
            f"{entries:.0f} entries per doc, {time.perf_counter() - t1:.0f} s |",
            flush=True,
        )
    if n > args.max_python:
        return
    # (b), (c): fingerprints computed here from the core's features.
    table = candidates.FeatureTable.build(texts, "word", 1)
    tf = table.tf.astype(np.float64)
    variants: dict[str, list[np.ndarray]] = {"default": [fps]}
    base = tallies(table, tf, table.hashes)
    assert np.array_equal(bits(base), fps), "the tallies here must reproduce the core's"
    variants["white"] = [bits(base, base.mean(axis=0))]
    del base
    logt = tallies(table, 1 + np.log(tf), table.hashes)
    variants["logtf"] = [bits(logt)]
    variants["logtf+white"] = [bits(logt, logt.mean(axis=0))]
    del logt
    seeded = [fps]
    for s in (1, 2, 3):
        h = fmix64(table.hashes ^ np.uint64((s * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF))
        seeded.append(bits(tallies(table, tf, h)))
    variants["seeds2"] = seeded[:2]
    variants["seeds4"] = seeded
    for label, fsets in variants.items():
        found, cands = {}, {}
        for k in KS:
            if len(fsets) > 1 and k > 6:
                continue
            ck = union_candidates(fsets, k)
            cands[k] = len(ck)
            found[k] = float(np.isin(true, ck).mean())
        b0, m0 = spread(fsets[0])
        report(spec, n, f"{label} (bits out {b0}, random {m0:.1f})", true, found, cands)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="+")
    ap.add_argument("--options", action="store_true")
    ap.add_argument("--synth", type=Path, default=SYNTH)
    ap.add_argument("--suite", type=Path, default=corpora.DEFAULT_OUT)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--max-python", type=int, default=100_000)
    ap.add_argument(
        "--prefix",
        nargs="*",
        default=["0.7:1024:rare", "0.6:128:rare", "0.7:1024:hash"],
        help="prefix-filtering variants T:SIZE:rare|rare@SAMPLE|hash",
    )
    args = ap.parse_args(argv)
    args.prefix = [
        (float(t), int(z), o.startswith("rare"), int(o[5:] or 0) if o.startswith("rare@") else 0)
        for t, z, o in (v.split(":") for v in args.prefix)
    ]
    print(
        "| corpus | documents | distinct fps | pairs >= 0.8 | bits out | random | "
        + " | ".join(f"pairs/doc k={k}" for k in KS)
        + " | "
        + " | ".join(f"recall k={k}" for k in KS)
        + " | time |"
    )
    for spec in args.corpora:
        run(spec, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
