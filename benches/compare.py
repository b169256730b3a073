"""neardup beside its peers: one command, the same documents, the same machine, one report.

    python benches/compare.py --out DIR [--sizes debian,100k,1m,10m] [--peers simhash,gaoya,...] [--quick]
    python benches/compare.py [--fingerprint-md benches/results/fingerprint.md]   # the fingerprint table alone

For every corpus size and every method (a peer with its own defaults, and again with features
matched to neardup's where its API allows), it measures in a child process of its own:

- fingerprinting (or sketching) throughput, documents/s and MB/s of UTF-8 text;
- near-duplicate search: build plus all pairs at k = 3 (fingerprint methods) or the LSH's own
  query of every document (MinHash methods), and queries/s against the built index;
- end to end: from process start to the kept document ids written (reading the JSONL, Python
  start-up and imports included), and the peak RSS of that work (``ru_maxrss`` read when the kept
  ids are written, before any extra measurement; the child is started through /usr/bin/time so
  that no large parent's pages count in it); ``neardup dedup --dry-run --clusters`` is timed
  the same way as neardup's own command;
- quality against the ground truth: precision, recall and F1 at Jaccard >= 0.8 for k = 1..8
  (MinHash methods: at their one LSH setting), and the share of reported pairs with Jaccard >= 0.5.

Numpy brute force (XOR and popcount, every pair) is the exact baseline for the search: the report
says whether neardup.find_all and simhash-pybind's find_all give exactly its pairs on neardup's
fingerprints. Above ``--brute-max`` fingerprints the exact baseline is the numpy pigeonhole scan
of benches/quality.py (k + 1 blocks, every candidate verified), which is exact too.

It installs nothing: peers that are not importable are skipped with a message in the report
(``pip install -r benches/requirements-peers.txt``). The `simhash` package, simhash-pybind and
python-simhash all install a module named ``simhash``: the first goes in the environment, the
other two with ``pip install --no-deps --target DIR`` into folders given by ``--simhash-pybind
DIR`` and ``--python-simhash DIR`` (default: ``$NEARDUP_PEERS/<name>``, NEARDUP_PEERS defaulting
to /tmp/neardup-peers); their child processes get that folder first on PYTHONPATH.

Sizes: ``debian`` is the 63,905 Debian descriptions with their exact truth (``--data``,
../shared/data); in a fresh clone, without them, it is the 3,000-document sample that ships with
neardup (``debian-sample``), its truth computed exactly (said in one line on stderr), and the
fingerprint table times that sample too. ``100k``, ``1m``, ``10m`` are the synthetic corpora of
benches/synth.py, read from ``--benchdata`` (corpus-N-s0.jsonl, truth-N-s0.tsv.gz) or generated
there from the Debian corpus (skipped with a message where neither is there); ``--corpus FILE [--truth FILE]`` adds a corpus of your own. A method whose time at a
size would exceed ``--budget`` seconds (extrapolated linearly from the size before) is skipped
there, and any child running past three budgets is stopped; the report says so.

Run it on a release build (``pip install .``), on a machine as quiet as you can get.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# A child that runs on one core pins itself before neardup starts any thread.
if "--pin" in sys.argv:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import best_of, timed  # noqa: E402

DATA = HERE.parent.parent / "shared" / "data"
BENCHDATA = Path(os.environ.get("NEARDUP_BENCHDATA", HERE.parent.parent / "benchdata"))
PEERS_DIR = Path(os.environ.get("NEARDUP_PEERS", "/tmp/neardup-peers"))
SIZES = {"100k": 100_000, "1m": 1_000_000, "10m": 10_000_000}
K = 3
MAX_K = 8
TOKEN = re.compile(r"[^\W_]+")  # neardup's tokens: runs of letters, numbers and marks
WORD = re.compile(r"\w+")  # the ground truth's tokens


# -- methods ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One contender: a peer (the import that tells whether it is installed) in one configuration."""

    name: str
    peer: str
    label: str
    family: str  # "simhash" (fingerprints, searched at k), "minhash" (an LSH), "fingerprint" (speed only)
    module: str
    path_option: str | None = None  # the --option naming its own --target folder
    params: dict[str, Any] = field(default_factory=dict)
    e2e: bool = True


METHODS = [
    Method(
        "neardup", "neardup", "neardup Simhasher() defaults, find_all k=3", "simhash", "neardup"
    ),
    Method(
        "neardup-threshold",
        "neardup",
        "neardup threshold=0.8: candidates within k=5 checked by word 3-shingle Jaccard",
        "minhash",
        "neardup",
    ),
    Method(
        "neardup-1core",
        "neardup",
        "neardup fingerprint_many, one core",
        "fingerprint",
        "neardup",
        e2e=False,
    ),
    Method(
        "pure-python",
        "neardup",
        "pure Python, same algorithm (benches/pure_python.py)",
        "fingerprint",
        "neardup",
        e2e=False,
    ),
    Method(
        "simhash",
        "simhash",
        "simhash pkg defaults (char 4-grams, MD5), SimhashIndex k=3",
        "simhash",
        "simhash",
        params={"features": "default"},
    ),
    Method(
        "simhash-matched",
        "simhash",
        "simhash pkg, neardup's word features, SimhashIndex k=3",
        "simhash",
        "simhash",
        params={"features": "matched"},
    ),
    Method(
        "simhash-pybind",
        "simhash-pybind",
        "simhash-pybind README pipeline (word 4-shingles, MD5), find_all 6 blocks k=3",
        "simhash",
        "simhash",
        "simhash_pybind",
        {"features": "default"},
    ),
    Method(
        "simhash-pybind-matched",
        "simhash-pybind",
        "simhash-pybind, neardup's word features (MD5), find_all 6 blocks k=3",
        "simhash",
        "simhash",
        "simhash_pybind",
        {"features": "matched"},
    ),
    Method(
        "python-simhash",
        "python-simhash",
        "python-simhash simhash_parallel, whitespace tokens (no search)",
        "simhash",
        "simhash",
        "python_simhash",
        {"features": "default"},
        e2e=False,
    ),
    Method(
        "python-simhash-matched",
        "python-simhash",
        "python-simhash simhash_parallel, neardup's word features (no search)",
        "simhash",
        "simhash",
        "python_simhash",
        {"features": "matched"},
        e2e=False,
    ),
    Method(
        "gaoya-simhash",
        "gaoya",
        "gaoya SimHashStringIndex defaults (words, no lowercase, k=5, 6 blocks)",
        "simhash",
        "gaoya",
        params={"hamming_distance": 5, "lowercase": False},
    ),
    Method(
        "gaoya-simhash-matched",
        "gaoya",
        "gaoya SimHashStringIndex, lowercase words, k=3, 6 blocks",
        "simhash",
        "gaoya",
        params={"hamming_distance": 3, "lowercase": True},
    ),
    Method(
        "gaoya-minhash",
        "gaoya",
        "gaoya MinHashStringIndex defaults (words, threshold 0.75, 20x5 bands)",
        "minhash",
        "gaoya",
        params={},
    ),
    Method(
        "gaoya-minhash-matched",
        "gaoya",
        "gaoya MinHashStringIndex, lowercase words, threshold 0.8, 20x5 bands",
        "minhash",
        "gaoya",
        params={"jaccard_threshold": 0.8, "lowercase": True},
    ),
    Method(
        "gaoya-minhash-w3",
        "gaoya",
        "gaoya MinHashStringIndex, lowercase word 3-shingles, threshold 0.8, 20x5 bands",
        "minhash",
        "gaoya",
        params={"jaccard_threshold": 0.8, "lowercase": True, "ngram_range": (3, 3)},
    ),
    Method(
        "datasketch",
        "datasketch",
        "datasketch MinHashLSH defaults (threshold 0.9, 128 perm), whitespace tokens",
        "minhash",
        "datasketch",
        params={"features": "default", "threshold": 0.9},
    ),
    Method(
        "datasketch-matched",
        "datasketch",
        "datasketch MinHashLSH, neardup's word features, threshold 0.8, 128 perm",
        "minhash",
        "datasketch",
        params={"features": "matched", "threshold": 0.8},
    ),
    Method(
        "datasketch-w3",
        "datasketch",
        "datasketch MinHashLSH, word 3-shingles (the truth's), threshold 0.8, 128 perm",
        "minhash",
        "datasketch",
        params={"features": "w3", "threshold": 0.8},
    ),
    Method(
        "rensa",
        "rensa",
        "rensa RMinHashLSH (0.8, 128 perm, 16 bands), whitespace tokens, LSH candidates",
        "minhash",
        "rensa",
        params={"features": "default"},
    ),
    Method(
        "rensa-matched",
        "rensa",
        "rensa RMinHashLSH (0.8, 128 perm, 16 bands), neardup's word features",
        "minhash",
        "rensa",
        params={"features": "matched"},
    ),
    Method(
        "rensa-w3",
        "rensa",
        "rensa RMinHashLSH (0.8, 128 perm, 16 bands), word 3-shingles (the truth's)",
        "minhash",
        "rensa",
        params={"features": "w3"},
    ),
]
BY_NAME = {m.name: m for m in METHODS}
PEER_NAMES = sorted({m.peer for m in METHODS} - {"neardup"})


def matched(text: str) -> list[str]:
    """neardup's default features in Python: NFKC, case folding, runs of letters and numbers."""
    return TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def w3(text: str) -> list[str]:
    """The ground truth's features: distinct word 3-shingles of the lowercased text."""
    tokens = WORD.findall(text.lower())
    if len(tokens) < 3:
        return [" ".join(tokens)]
    return list({" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2)})


FEATURES: dict[str, Callable[[str], list[str]]] = {
    "default": str.split,
    "matched": matched,
    "w3": w3,
}


# -- the child: one method on one corpus ----------------------------------------------------------


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    """Ids and texts of a JSONL corpus (synth.read_corpus, imported when needed)."""
    import synth

    return synth.read_corpus(path)


def read_ids(path: Path) -> list[str]:
    """The ids of a JSONL corpus alone (the parent keeps no text: it would count in no child's
    memory, but it would take the machine's)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [str(json.loads(line)["id"]) for line in f]


def pairs_from_lists(lists: list[list[int]]) -> np.ndarray:
    """Row pairs (i < j, each once) from one list of matching rows per query row."""
    found = {(min(i, j), max(i, j)) for i, hits in enumerate(lists) for j in hits if j != i}
    return np.array(sorted(found), dtype=np.int64).reshape(-1, 2)


def pairs_from_values(fps: np.ndarray, value_pairs: Any) -> np.ndarray:
    """Row pairs from pairs of distinct fingerprint values (simhash-pybind's find_all), rows
    sharing one value included."""
    unique, inverse = np.unique(fps, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(inverse, minlength=len(unique)))]

    def rows_of(v: int | np.integer) -> np.ndarray:
        return order[starts[v] : starts[v + 1]]

    out = []
    vp = np.array(list(value_pairs), dtype=np.uint64).reshape(-1, 2)
    for a, b in zip(np.searchsorted(unique, vp[:, 0]), np.searchsorted(unique, vp[:, 1])):
        ra, rb = rows_of(a), rows_of(b)
        out.append(
            np.stack([np.minimum.outer(ra, rb).ravel(), np.maximum.outer(ra, rb).ravel()], 1)
        )
    for v in np.flatnonzero(np.diff(starts) > 1):
        r = np.sort(rows_of(v))
        a, b = np.triu_indices(len(r), 1)
        out.append(np.stack([r[a], r[b]], 1))
    if not out:
        return np.zeros((0, 2), np.int64)
    return np.unique(np.concatenate(out).astype(np.int64), axis=0)


def keep_first(n: int, pairs: np.ndarray) -> np.ndarray:
    """Rows kept by a dedup that keeps the first row of each connected component of the pairs."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(pairs), np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return np.sort(np.unique(labels, return_index=True)[1])


class Timer:
    """Named phase durations, in seconds. A fingerprinting phase that took under ``again`` seconds
    runs again, up to three times in all, and keeps its best time: a short phase on a shared
    machine is the most at the mercy of other jobs (every method gets the same rule)."""

    def __init__(self, again: float = 2.0) -> None:
        self.times: dict[str, float] = {}
        self.again = again

    def __call__(self, name: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = fn()
        self.times[name] = time.perf_counter() - start
        for _ in range(2 if name == "fingerprint" else 0):
            if self.times[name] >= self.again:
                break
            start = time.perf_counter()
            fn()
            self.times[name] = min(self.times[name], time.perf_counter() - start)
        return out


def timed_query(out: dict[str, Any], ask: Callable[[], int]) -> Callable[[], int]:
    """A method's query phase: ``ask`` answers the queries and counts what they find; the seconds
    it takes go to ``out["extra"]["query_seconds"]``."""

    def query() -> int:
        start = time.perf_counter()
        found = ask()
        out["extra"]["query_seconds"] = time.perf_counter() - start
        return found

    return query


def run_method(
    m: Method, texts: list[str], t: Timer, queries: int, ref: np.ndarray | None
) -> dict[str, Any]:
    """Runs one method: fills ``t`` with its phases and returns its outputs ("fps" and/or "pairs",
    "query" a callable timed after the end-to-end work, "extra" figures)."""
    n = len(texts)
    out: dict[str, Any] = {"extra": {}}
    query: Callable[[], int] | None
    if m.peer == "neardup":
        import neardup

        if m.name == "pure-python":
            import pure_python

            out["fps"] = t(
                "fingerprint",
                lambda: np.array([pure_python.fingerprint(d) for d in texts], dtype=np.uint64),
            )
            return out
        hasher = neardup.Simhasher()
        threads = 1 if m.name == "neardup-1core" else None
        fps = t("fingerprint", lambda: hasher.fingerprint_many(texts, threads=threads))
        if m.name == "neardup-threshold":
            from neardup.verify import THRESHOLD_K, Sketches

            def verified() -> tuple[np.ndarray, np.ndarray]:
                # Every pair within k whose word-3-shingle Jaccard is >= 0.8 (the F1 is that of pairs).
                i, j, _ = neardup.find_all(fps, THRESHOLD_K)
                rows = np.unique(np.concatenate([i, j]))
                sketches = Sketches(hasher, 3)
                sketches.add(rows, [texts[r] for r in rows.tolist()])
                ok = sketches.jaccard(i, j) >= 0.8
                return i[ok], j[ok]

            i, j = t("search", verified)
            out["pairs"] = np.stack([i, j], 1).astype(np.int64)
            out["query"] = None
            return out
        out["fps"] = fps
        if m.family == "fingerprint":
            return out
        i, j, _ = t("search", lambda: neardup.find_all(fps, K))
        out["pairs"] = np.stack([i, j], 1).astype(np.int64)

        def query() -> int:
            index = neardup.SimhashIndex(k=K, expected_size=n)
            index.add(fps)
            return timed_query(out, lambda: len(index.query_many(fps[:queries])[0]))()

    elif m.peer == "simhash":
        import logging

        from simhash import Simhash, SimhashIndex

        logging.getLogger("simhash").setLevel(logging.ERROR)
        tokenizer = Simhash(0)
        # Simhash(text) builds {feature: count} and overflows under numpy 2 once a feature occurs
        # more than 255 times; its own features as a list (repeats kept) give the same fingerprint.
        feats = tokenizer._tokenize if m.params["features"] == "default" else matched
        hashes = t("fingerprint", lambda: [Simhash(feats(d)) for d in texts])
        out["fps"] = np.array([h.value for h in hashes], dtype=np.uint64)

        def search() -> np.ndarray:
            index = SimhashIndex([(str(i), h) for i, h in enumerate(hashes)], k=K)
            out["index"] = index
            return pairs_from_lists([[int(j) for j in index.get_near_dups(h)] for h in hashes])

        out["pairs"] = t("search", search)

        query = timed_query(
            out, lambda: sum(len(out["index"].get_near_dups(h)) for h in hashes[:queries])
        )

    elif m.peer == "simhash-pybind":
        import simhash as pybind

        def fp(d: str) -> int:
            """Its README's pipeline (word 4-shingles) or neardup's features, each hashed by its MD5 helper."""
            if m.params["features"] == "default":
                return pybind.compute(
                    [
                        pybind.unsigned_hash(" ".join(s).encode())
                        for s in pybind.shingle(d.split(), 4)
                    ]
                )
            return pybind.compute([pybind.unsigned_hash(w.encode()) for w in matched(d)])

        fps = t("fingerprint", lambda: np.array([fp(d) for d in texts], dtype=np.uint64))
        out["fps"] = fps
        out["pairs"] = t(
            "search", lambda: pairs_from_values(fps, pybind.find_all(fps.tolist(), 6, K))
        )
        query = None
        if ref is not None:
            # find_all on neardup's fingerprints, for the exactness check and the 3x target.
            start = time.perf_counter()
            value_pairs = pybind.find_all(ref.tolist(), 6, K)
            out["extra"]["find_all_on_neardup_seconds"] = time.perf_counter() - start
            out["ref_pairs"] = pairs_from_values(ref, value_pairs)
    elif m.peer == "python-simhash":
        import simhash as pysimhash

        feats = FEATURES[m.params["features"]]
        out["fps"] = t(
            "fingerprint",
            lambda: np.array(
                pysimhash.simhash_parallel([feats(d) for d in texts]), dtype=np.uint64
            ),
        )
        query = None
    elif m.peer == "gaoya" and m.family == "simhash":
        from gaoya.simhash import SimHashStringIndex

        index = SimHashStringIndex(num_blocks=6, **m.params)
        out["fps"] = t(
            "fingerprint",
            lambda: np.array(index.index.par_bulk_doc2signatures(texts), dtype=np.uint64),
        )
        t("build", lambda: index.index.par_bulk_insert_docs(list(range(n)), texts))
        out["pairs"] = t("search", lambda: pairs_from_lists(index.index.par_bulk_query(texts)))

        query = timed_query(out, lambda: sum(map(len, index.index.par_bulk_query(texts[:queries]))))

    elif m.peer == "gaoya":
        from gaoya.minhash import MinHashStringIndex

        def sketch_and_build() -> MinHashStringIndex:
            made = MinHashStringIndex(**m.params)
            made.par_bulk_insert_docs(list(range(n)), texts)
            return made

        # gaoya sketches and inserts in one call: its "fingerprint" phase is sketch plus build.
        index = t("fingerprint", sketch_and_build)
        out["pairs"] = t("search", lambda: pairs_from_lists(index.par_bulk_query(texts)))

        query = timed_query(out, lambda: sum(map(len, index.par_bulk_query(texts[:queries]))))

    elif m.peer == "datasketch":
        from datasketch import MinHash, MinHashLSH

        feats = FEATURES[m.params["features"]]
        sketches = t(
            "fingerprint",
            lambda: MinHash.bulk(([f.encode() for f in feats(d)] for d in texts), num_perm=128),
        )
        lsh = MinHashLSH(threshold=m.params["threshold"], num_perm=128)

        def build() -> None:
            with lsh.insertion_session() as session:
                for i, s in enumerate(sketches):
                    session.insert(i, s)

        t("build", build)
        out["pairs"] = t("search", lambda: pairs_from_lists([lsh.query(s) for s in sketches]))

        query = timed_query(out, lambda: sum(len(lsh.query(s)) for s in sketches[:queries]))

    elif m.peer == "rensa":
        from rensa import RMinHash, RMinHashLSH

        feats = FEATURES[m.params["features"]]
        sketches = t(
            "fingerprint",
            lambda: RMinHash.from_token_sets((feats(d) for d in texts), num_perm=128, seed=42),
        )
        lsh = RMinHashLSH(0.8, 128, 16)
        t("build", lambda: lsh.insert_many(sketches))
        out["pairs"] = t("search", lambda: pairs_from_lists(lsh.query_all(sketches)))

        query = timed_query(out, lambda: sum(map(len, lsh.query_all(sketches[:queries]))))

    else:
        raise ValueError(f"unknown method {m.name}")
    out["query"] = query
    return out


def child(args: argparse.Namespace) -> None:
    """One method on one corpus: writes WORKDIR/NAME.json (figures), .fps.npy, .pairs.npy."""
    m = BY_NAME[args.child]
    work = Path(args.workdir)
    t = Timer()
    ids, texts = t("read", lambda: read_corpus(Path(args.corpus)))
    if args.limit:
        ids, texts = ids[: args.limit], texts[: args.limit]
    ref = np.load(args.ref_fps) if args.ref_fps else None
    out = run_method(m, texts, t, args.queries, ref)
    e2e = None
    if m.e2e and "pairs" in out:
        kept = t("cluster", lambda: keep_first(len(texts), out["pairs"]))
        with open(work / f"{m.name}.kept.txt", "w", encoding="utf-8") as f:
            f.write("\n".join(ids[i] for i in kept) + "\n")
        e2e = time.time() - args.started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_queries = None
    if out.get("query") is not None and args.queries:
        out["query"]()
        n_queries = min(args.queries, len(texts))
    if "fps" in out:
        np.save(work / f"{m.name}.fps.npy", out["fps"])
    if "pairs" in out:
        np.save(work / f"{m.name}.pairs.npy", out["pairs"])
    if "ref_pairs" in out:
        np.save(work / f"{m.name}.refpairs.npy", out["ref_pairs"])
    result = {
        "documents": len(texts),
        "bytes": sum(len(d.encode("utf-8")) for d in texts),
        "phases": t.times,
        "e2e_seconds": e2e,
        "peak_mb": peak_mb,
        "queries": n_queries,
        "pairs": int(len(out["pairs"])) if "pairs" in out else None,
        **out["extra"],
    }
    (work / f"{m.name}.json").write_text(json.dumps(result), encoding="utf-8")


# -- the parent: sizes, children, exact baseline, quality ------------------------------------------


@dataclass
class Scale:
    name: str
    corpus: Path
    truth: Path | None
    n: int = 0
    #: No truth file, compute the truth exactly (the shipped sample).
    exact: bool = False


def installed(m: Method, args: argparse.Namespace) -> str | None:
    """None when the method can run, otherwise why not."""
    env = child_env(m, args)
    attribute = {
        "simhash": "Simhash",
        "simhash-pybind": "find_all",
        "python-simhash": "simhash_parallel",
    }.get(m.peer)
    if m.path_option:
        # Its own folder first on the path: only a child process sees the module as the peer will.
        probe = f"import {m.module}, sys; sys.exit(0 if hasattr({m.module}, {attribute!r}) else 1)"
        if (
            subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True).returncode
            == 0
        ):
            return None
    else:
        try:
            module = importlib.import_module(m.module)
            if attribute is None or hasattr(module, attribute):
                return None
        except ImportError:
            pass
    where = (
        f" in {env['PYTHONPATH'].split(os.pathsep)[0]} (--{m.path_option.replace('_', '-')})"
        if m.path_option
        else ""
    )
    return f"{m.peer} is not installed{where}: see benches/requirements-peers.txt"


def child_env(m: Method, args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    if m.path_option:
        folder = getattr(args, m.path_option) or str(PEERS_DIR / m.peer)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (folder, str(HERE), env.get("PYTHONPATH", "")) if p
        )
    return env


def resolve_scales(
    args: argparse.Namespace, ap: argparse.ArgumentParser
) -> tuple[list[Scale], list[str]]:
    """The corpora asked for, and a message for each one that is not there."""
    import synth

    scales, missing = [], []
    for name in [s.strip().lower() for s in args.sizes.split(",") if s.strip()]:
        if name == "debian":
            corpus, truth_file = synth.debian_corpus(args.data)
            if (
                truth_file is None
            ):  # a fresh clone: the shipped sample, its truth computed in run_scale
                scales.append(Scale("debian-sample", corpus, None, exact=True))
            else:
                scales.append(Scale("debian", corpus, truth_file))
            continue
        if name not in SIZES:
            ap.error(f"unknown size {name!r} (debian, {', '.join(SIZES)})")
        n = SIZES[name]
        corpus, truth = (
            args.benchdata / f"corpus-{n}-s0.jsonl",
            args.benchdata / f"truth-{n}-s0.tsv.gz",
        )
        if not corpus.exists():
            source = args.data / synth.DEBIAN_JSONL_GZ.name
            if not source.is_file():
                missing.append(
                    f"{name}: {corpus} does not exist and the Debian corpus it is made from is not in "
                    f"{args.data} (--data DIR): skipped"
                )
                continue
            made = synth.generate(n, args.benchdata, seed=0, source=source)
            corpus, truth = Path(made.jsonl), Path(made.truth)
        scales.append(Scale(name, corpus, truth if truth.exists() else None))
    if args.corpus:
        for path in (args.corpus, args.truth):
            if path is not None and not path.is_file():
                ap.error(f"{path}: no such file")
        scales.append(Scale(args.corpus.stem, args.corpus, args.truth))
    return scales, missing


def brute_force(fps: np.ndarray, k: int, block: int = 512) -> np.ndarray:
    """Every pair of rows within k, by XOR and popcount of every pair, a block of rows at a time."""
    out = []
    for start in range(0, len(fps), block):
        rows = fps[start : start + block]
        d = np.bitwise_count(rows[:, None] ^ fps[None, start:])
        a, b = np.nonzero(np.triu(d <= k, 1))
        out.append(np.stack([a + start, b + start], 1))
    return np.concatenate(out).astype(np.int64) if out else np.zeros((0, 2), np.int64)


def keys_of(pairs: np.ndarray, n: int) -> np.ndarray:
    return np.unique(pairs[:, 0] * n + pairs[:, 1]) if len(pairs) else np.zeros(0, np.int64)


def quality_rows(
    fps: np.ndarray | None, pairs: np.ndarray | None, truth: Any, n: int
) -> list[dict]:
    """Scores for k = 1..MAX_K from fingerprints (pairs by neardup.find_all, checked exact against
    the baseline at k=3), or one score for the pairs a method reported (synth.score, the one
    scorer of the benchmarks)."""
    import neardup
    import synth

    def row(found: np.ndarray, k: int | None) -> dict:
        s = synth.score(found, truth)
        return {
            "k": k,
            "reported": s["reported"],
            "precision": s["precision"],
            "recall": s["recall"],
            "f1": s["f1"],
            "similar": s["loose"],
        }

    if fps is not None:
        i, j, d = neardup.find_all(fps, MAX_K)
        both = np.stack([i, j], 1)
        return [row(both[d <= k], k) for k in range(1, MAX_K + 1)]
    assert pairs is not None, "a method without fingerprints reports pairs"
    return [row(pairs, None)]


def run_scale(
    scale: Scale,
    methods: list[Method],
    args: argparse.Namespace,
    history: dict[str, tuple[int, float]],
    work: Path,
) -> dict[str, Any]:
    """Every method on one corpus; returns the figures of the scale."""
    import neardup

    ids = read_ids(scale.corpus)
    scale.n = len(ids)
    n = scale.n
    mb = scale.corpus.stat().st_size / 1e6
    print(f"== {scale.name}: {n:,} documents ({scale.corpus})", flush=True)
    import synth

    if scale.truth:
        truth = synth.load_truth(scale.truth, ids)
    elif scale.exact:
        truth = synth.exact_truth(read_corpus(scale.corpus)[1])
    else:
        truth = None
    del ids
    res: dict[str, Any] = {"n": n, "file_mb": mb, "methods": {}, "notes": []}
    ref_path = work / "neardup.fps.npy"
    for m in methods:
        if m.name in history:
            prev_n, prev_s = history[m.name]
            estimate = prev_s * min(n, args.sample if m.name == "pure-python" else n) / prev_n
            if estimate > args.budget:
                note = f"{m.name}: skipped at {scale.name} (about {estimate:,.0f} s from {prev_n:,} documents, budget {args.budget:,.0f} s)"
                res["notes"].append(note)
                print(note, flush=True)
                continue
        cmd = [
            sys.executable,
            __file__,
            "--child",
            m.name,
            "--corpus",
            str(scale.corpus),
            "--workdir",
            str(work),
            "--queries",
            str(args.queries),
            "--started",
            repr(time.time()),
        ]
        if m.name == "pure-python":
            cmd += ["--limit", str(min(args.sample, n))]
        if m.name == "neardup-1core":
            cmd += ["--pin"]
        if (
            m.peer == "simhash-pybind"
            and ref_path.exists()
            and m.params.get("features") == "matched"
        ):
            cmd += ["--ref-fps", str(ref_path)]
        seconds, rss, code, err = timed(cmd, 3 * args.budget, child_env(m, args))
        if code != 0:
            note = f"{m.name}: failed at {scale.name} (exit {code}): {err}"
            res["notes"].append(note)
            print(note, flush=True)
            history[m.name] = (n, float("inf"))
            continue
        fig = json.loads((work / f"{m.name}.json").read_text(encoding="utf-8"))
        fig["wall_seconds"] = seconds
        fig["time_peak_mb"] = rss
        history[m.name] = (fig["documents"], seconds)
        fps = np.load(work / f"{m.name}.fps.npy") if (work / f"{m.name}.fps.npy").exists() else None
        pairs = (
            np.load(work / f"{m.name}.pairs.npy")
            if (work / f"{m.name}.pairs.npy").exists()
            else None
        )
        if (work / f"{m.name}.refpairs.npy").exists():
            fig["ref_pairs"] = np.load(work / f"{m.name}.refpairs.npy")
        if truth is not None and m.family != "fingerprint" and fig["documents"] == n:
            fig["quality"] = quality_rows(fps if m.family == "simhash" else None, pairs, truth, n)
        if m.name == "neardup":
            fig["neardup_pairs"] = pairs
        res["methods"][m.name] = fig
        print(f"{m.name}: {seconds:.1f} s, {fig['phases']}", flush=True)
        for suffix in (".fps.npy", ".pairs.npy", ".refpairs.npy", ".json", ".kept.txt"):
            if m.name != "neardup" or suffix != ".fps.npy":
                (work / f"{m.name}{suffix}").unlink(missing_ok=True)

    # neardup's own command, end to end: reads the file in chunks, writes the clusters.
    # With --threshold 0.8 (candidates within k=5 checked by shingle Jaccard): the setting whose
    # F1 is neardup-threshold's.
    for key, extra, wanted in (
        ("cli", ["--k", str(K)], "neardup"),
        ("cli_threshold", ["--threshold", "0.8"], "neardup-threshold"),
    ):
        if wanted not in res["methods"]:
            continue
        clusters = work / "clusters.csv"
        seconds, rss, code, err = timed(
            [
                sys.executable,
                "-m",
                "neardup",
                "dedup",
                str(scale.corpus),
                "--dry-run",
                "--clusters",
                str(clusters),
                *extra,
                "--quiet",
            ],
            3 * args.budget,
        )
        if code == 0:
            res[key] = {"seconds": seconds, "peak_mb": rss}
        else:
            res["notes"].append(
                f"neardup dedup {' '.join(extra)} failed at {scale.name} (exit {code}): {err}"
            )
        clusters.unlink(missing_ok=True)

    # The exact baseline on neardup's fingerprints.
    if ref_path.exists():
        fps = np.load(ref_path)
        brute = n <= args.brute_max
        if brute:
            start = time.perf_counter()
            exact = brute_force(fps, K)
        else:
            import quality

            start = time.perf_counter()
            keys, _ = quality.pairs_within(fps, K)
            exact = np.stack([keys // n, keys % n], 1)
        seconds = time.perf_counter() - start
        exact_keys = keys_of(exact, n)
        nd = res["methods"]["neardup"]
        check = {
            "what": "numpy brute force" if brute else "numpy pigeonhole (k + 1 blocks, exact)",
            "seconds": seconds,
            "pairs": int(len(exact_keys)),
            "neardup_same": bool(np.array_equal(keys_of(nd.pop("neardup_pairs"), n), exact_keys)),
        }
        start = time.perf_counter()
        neardup.find_all(fps, K)
        check["neardup_seconds"] = time.perf_counter() - start
        pb = res["methods"].get("simhash-pybind-matched", {})
        if "ref_pairs" in pb:
            check["pybind_seconds"] = pb["find_all_on_neardup_seconds"]
            check["pybind_same"] = bool(np.array_equal(keys_of(pb.pop("ref_pairs"), n), exact_keys))
        res["exact"] = check
        ref_path.unlink()
    for fig in res["methods"].values():
        fig.pop("neardup_pairs", None)
        fig.pop("ref_pairs", None)
    return res


# -- the report --------------------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{cpu}, {len(os.sched_getaffinity(0))} cores available, {mem:.0f} GiB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}; load average over the last 15 minutes {os.getloadavg()[2]:.1f} "
        "(other jobs of the machine slow every method)"
    )


def fmt(x: float | None, spec: str = ",.0f", none: str = "") -> str:
    return none if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


def best_quality(fig: dict) -> dict | None:
    q = fig.get("quality")
    if not q:
        return None
    at_k = [r for r in q if r["k"] in (K, None)]
    return at_k[0] if at_k else None


def targets(results: dict[str, dict]) -> list[tuple[str, str, bool | None]]:
    """(target, measured at every size where it can be, met at all of them) for each target."""

    def rate(fig: dict) -> float:
        return fig["documents"] / fig["phases"]["fingerprint"]

    def ours(r: dict) -> float:
        """neardup's fingerprinting rate: the better of all cores and one core (same features)."""
        return max(
            rate(r["methods"][name])
            for name in ("neardup", "neardup-1core")
            if name in r["methods"]
        )

    def vs_simhash(r: dict) -> tuple[str, bool] | None:
        if "neardup" not in r["methods"] or "simhash" not in r["methods"]:
            return None
        x = ours(r) / rate(r["methods"]["simhash"])
        return f"{x:,.0f}x", x >= 100

    def vs_compiled(r: dict) -> tuple[str, bool] | None:
        found = [
            c
            for c in ("simhash-pybind-matched", "python-simhash-matched", "gaoya-simhash-matched")
            if c in r["methods"]
        ]
        if "neardup" not in r["methods"] or not found:
            return None
        best = max(found, key=lambda c: rate(r["methods"][c]))
        x = ours(r) / rate(r["methods"][best])
        return f"{x:.2f}x {best}", x >= 2

    def all_pairs(r: dict) -> tuple[str, bool] | None:
        e = r.get("exact", {})
        if "pybind_seconds" not in e:
            return None
        x = e["pybind_seconds"] / e["neardup_seconds"]
        return (
            f"{x:.1f}x ({r['n']:,} fingerprints); same pairs as {e['what']}: neardup {'yes' if e['neardup_same'] else 'NO'}, "
            f"pybind {'yes' if e['pybind_same'] else 'NO'}"
        ), x >= 3 and e["neardup_same"]

    def end_to_end(r: dict) -> tuple[str, bool] | None:
        """The command with --threshold (the setting of neardup's best F1) against every peer's
        end-to-end run; the plain command's ratio is shown beside it."""
        peers = {
            n: f["e2e_seconds"]
            for n, f in r["methods"].items()
            if not n.startswith("neardup") and f.get("e2e_seconds")
        }
        run = r.get("cli_threshold") or r.get("cli")
        if run is None or not peers:
            return None
        best = min(peers, key=lambda name: peers[name])
        x = peers[best] / run["seconds"]
        plain = (
            f"; plain k={K}: {peers[best] / r['cli']['seconds']:.1f}x"
            if "cli" in r and "cli_threshold" in r
            else ""
        )
        what = "--threshold 0.8" if "cli_threshold" in r else f"k={K}"
        return f"{what}: {x:.1f}x faster than {best} ({len(peers)} peer runs){plain}", x > 1

    def f1(r: dict) -> tuple[str, bool] | None:
        scores = {
            n: max(q["f1"] for q in f["quality"])
            for n, f in r["methods"].items()
            if f.get("quality")
        }
        peers = {n: v for n, v in scores.items() if not n.startswith("neardup")}
        mine = {n: v for n, v in scores.items() if n.startswith("neardup")}
        if not mine or not peers:
            return None
        best = max(peers, key=lambda name: peers[name])
        ours_name = max(mine, key=lambda name: mine[name])
        return f"{mine[ours_name]:.3f} {ours_name} vs {peers[best]:.3f} {best}", mine[
            ours_name
        ] >= peers[best] - 0.05

    def memory(r: dict) -> tuple[str, bool] | None:
        peers = {
            n: f["peak_mb"] * 2**20 / f["documents"]
            for n, f in r["methods"].items()
            if not n.startswith("neardup") and f.get("e2e_seconds")
        }
        runs = {
            key: r[key]["peak_mb"] * 2**20 / r["n"] for key in ("cli", "cli_threshold") if key in r
        }
        if not runs or not peers:
            return None
        best = min(peers, key=lambda name: peers[name])
        shown = ", ".join(
            f"{'--threshold' if key == 'cli_threshold' else 'plain'} {v:,.0f}"
            for key, v in runs.items()
        )
        return f"{shown} B/doc vs {peers[best]:,.0f} {best}", max(runs.values()) < peers[best]

    rows: list[tuple[str, str, bool | None]] = []
    for target, check in (
        ("fingerprinting >= 100x the `simhash` package", vs_simhash),
        ("fingerprinting >= 2x the fastest compiled peer, same features", vs_compiled),
        (
            "all pairs at k=3 >= 3x simhash-pybind find_all (the target is at 1M), exactly the exact baseline's pairs",
            all_pairs,
        ),
        ("end to end (`neardup dedup --threshold 0.8`) faster than every peer", end_to_end),
        ("F1 within 0.05 of the best peer (best over k = 1..8 / settings)", f1),
        ("peak memory per document (`neardup dedup`) below every peer's", memory),
    ):
        measured = [(s, m) for s, r in results.items() if (m := check(r)) is not None]
        if measured:
            rows.append(
                (
                    target,
                    "; ".join(f"{s}: {m[0]}" for s, m in measured),
                    all(m[1] for _, m in measured),
                )
            )
    return rows


def report(results: dict[str, dict], meta: dict[str, Any]) -> str:
    """The Markdown report of a run; ``meta`` holds its command, date, machine and skipped peers."""
    skipped = meta["skipped"]
    lines = [
        "# neardup beside its peers",
        "",
        f"Command: `{meta['command']}` ({meta['when']}).",
        f"Machine: {meta['machine']}. Every method runs in a child process of its own, one after the other.",
        "",
        "## Targets",
        "",
        "A target is met when it is met at every size where it is measured.",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    for target, measured, met in targets(results):
        lines.append(f"| {target} | {measured} | {'yes' if met else 'no'} |")
    lines += ["", "## Corpora", "", "| size | documents | file MB | truth |", "|---|---|---|---|"]
    for s, r in results.items():
        lines.append(
            f"| {s} | {r['n']:,} | {r['file_mb']:.0f} | {'yes' if r.get('has_truth') else 'no'} |"
        )
    for s, r in results.items():
        n = r["n"]
        lines += [
            "",
            f"## {s}: {n:,} documents",
            "",
            "Fingerprint: documents/s and MB/s of the fingerprinting (sketching) phase; search: build plus all pairs "
            "at k=3 (MinHash: build plus the LSH query of every document); e2e: process start to kept ids written; "
            "peak: RSS at that point.",
            "",
            "| method | docs/s | MB/s | search s | queries/s | e2e s | peak MB | bytes/doc | pairs | P | R | F1 | J>=0.5 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        base = r["methods"].get("pure-python")
        for name, f in r["methods"].items():
            fp = f["phases"].get("fingerprint")
            search = (
                sum(f["phases"].get(p, 0) for p in ("build", "search"))
                if "search" in f["phases"]
                else None
            )
            qps = f["queries"] / f["query_seconds"] if f.get("query_seconds") else None
            q = best_quality(f) or {}
            e2e = f.get("e2e_seconds")
            peak = f["peak_mb"] if (e2e or f["peak_mb"]) else None
            lines.append(
                f"| {BY_NAME[name].label} | {fmt(f['documents'] / fp if fp else None)} | {fmt(f['bytes'] / fp / 1e6 if fp else None, '.1f')} "
                f"| {fmt(search, '.2f')} | {fmt(qps)} | {fmt(e2e, '.2f')} | {fmt(peak)} | {fmt(peak * 2**20 / f['documents'] if peak else None)} "
                f"| {fmt(f.get('pairs'))} | {fmt(q.get('precision'), '.3f')} | {fmt(q.get('recall'), '.3f')} | {fmt(q.get('f1'), '.3f')} "
                f"| {fmt(q.get('similar'), '.3f')} |"
            )
        for key, what in (
            ("cli", "`neardup dedup --dry-run --clusters`"),
            ("cli_threshold", "`neardup dedup --dry-run --clusters --threshold 0.8`"),
        ):
            if key in r:
                c = r[key]
                lines.append(
                    f"| {what} (the command, reading in chunks) | | | | | {c['seconds']:.2f} "
                    f"| {c['peak_mb']:.0f} | {c['peak_mb'] * 2**20 / n:,.0f} | | | | | |"
                )
        if base:
            rate = base["documents"] / base["phases"]["fingerprint"]
            lines += [
                "",
                f"Fingerprinting vs pure Python ({base['documents']:,} documents): "
                + ", ".join(
                    f"{name} {f['documents'] / f['phases']['fingerprint'] / rate:,.0f}x"
                    for name, f in r["methods"].items()
                    if f["phases"].get("fingerprint") and name != "pure-python"
                ),
            ]
        if "exact" in r:
            e = r["exact"]
            line = (
                f"Exact baseline ({e['what']}, k=3, neardup's fingerprints): {e['pairs']:,} pairs in {e['seconds']:.2f} s; "
                f"neardup.find_all {e['neardup_seconds']:.3f} s, same pairs: {'yes' if e['neardup_same'] else 'NO'}"
            )
            if "pybind_seconds" in e:
                line += f"; simhash-pybind find_all {e['pybind_seconds']:.3f} s, same pairs: {'yes' if e['pybind_same'] else 'NO'}"
            lines += ["", line + "."]
        with_q = [
            (name, f)
            for name, f in r["methods"].items()
            if f.get("quality") and f["quality"][0]["k"] is not None
        ]
        if with_q:
            lines += [
                "",
                "F1 by k (fingerprints within k bits; pairs by neardup.find_all, exact):",
                "",
                "| method | " + " | ".join(f"k={k}" for k in range(1, MAX_K + 1)) + " |",
                "|---|" + "---|" * MAX_K,
            ]
            for name, f in with_q:
                lines.append(
                    f"| {name} | " + " | ".join(f"{q['f1']:.3f}" for q in f["quality"]) + " |"
                )
        if r["notes"]:
            lines += [""] + [f"- {note}" for note in r["notes"]]
    if skipped:
        lines += ["", "## Not run", ""] + [f"- {s}" for s in skipped]
    lines += ["", "## Methods", ""] + [f"- `{m.name}`: {m.label}" for m in METHODS]
    lines += [
        "",
        "MinHash methods report the pairs their LSH returns for each document (gaoya and datasketch verify "
        "candidates against their threshold; rensa's RMinHashLSH.query_all returns band candidates). gaoya sketches and "
        "inserts in one call, so its fingerprint phase includes the build. Queries/s: the first queries of the corpus "
        "against the built index (gaoya: from the text).",
    ]
    return "\n".join(lines) + "\n"


def plots(results: dict[str, dict], out: Path, reserve: Callable[[Path], str]) -> list[str]:
    """Writes the PNG plots; returns their file names (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("matplotlib is not installed: no plots (pip install matplotlib)", flush=True)
        return []
    names = [m.name for m in METHODS]
    written = []

    colors = [plt.get_cmap("tab20")(i) for i in range(20)]
    markers = "osD^v<>PX*"

    def by_size(
        value: Callable[[dict, dict], float | None],
        ylabel: str,
        title: str,
        file: str,
        command: Callable[[dict], float | None] | None = None,
    ) -> None:
        fig, ax = plt.subplots(figsize=(9, 5.5))
        series = [
            (
                name,
                [
                    (r["n"], value(r, r["methods"][name]))
                    for r in results.values()
                    if name in r["methods"]
                ],
            )
            for name in names
        ]
        if command is not None:
            series.insert(
                0, ("neardup dedup (command)", [(r["n"], command(r)) for r in results.values()])
            )
        for number, (name, pts) in enumerate(series):
            pts = [(x, y) for x, y in pts if y]
            if pts:
                ax.plot(
                    *zip(*pts),
                    marker=markers[number % len(markers)],
                    color=colors[number % len(colors)],
                    label=name,
                    linewidth=2.5 if name.startswith("neardup") else 1.2,
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("documents in the corpus")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        fig.savefig(reserve(out / file), format="png", dpi=110)
        plt.close(fig)
        written.append(file)

    by_size(
        lambda r, f: (
            f["documents"] / f["phases"]["fingerprint"] if "fingerprint" in f["phases"] else None
        ),
        "documents/s (fingerprinting or sketching)",
        "Fingerprinting throughput by corpus size",
        "throughput.png",
    )
    by_size(
        lambda r, f: f["peak_mb"] * 2**20 / f["documents"] if f.get("e2e_seconds") else None,
        "peak RSS bytes per document (end to end)",
        "Memory by corpus size",
        "memory.png",
        lambda r: r["cli"]["peak_mb"] * 2**20 / r["n"] if "cli" in r else None,
    )
    with_truth = [
        (s, r) for s, r in results.items() if any(f.get("quality") for f in r["methods"].values())
    ]
    if with_truth:
        s, r = with_truth[0]
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for name, f in r["methods"].items():
            q = best_quality(f)
            t = f.get(
                "e2e_seconds"
            )  # methods without a search (python-simhash) have no end-to-end time
            if q and t:
                ax.scatter(t, q["f1"], s=50 if name.startswith("neardup") else 25)
                ax.annotate(
                    name, (t, q["f1"]), fontsize=7, xytext=(4, 2), textcoords="offset points"
                )
        for key, name, label in (
            ("cli", "neardup", "neardup dedup (command)"),
            ("cli_threshold", "neardup-threshold", "neardup dedup --threshold 0.8 (command)"),
        ):
            nd_q = best_quality(r["methods"][name]) if name in r["methods"] else None
            if key in r and nd_q is not None:
                ax.scatter(r[key]["seconds"], nd_q["f1"], marker="*", s=120)
                ax.annotate(
                    label,
                    (r[key]["seconds"], nd_q["f1"]),
                    fontsize=7,
                    xytext=(4, -9),
                    textcoords="offset points",
                )
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("seconds end to end (process start to kept ids written)")
        ax.set_ylabel("F1 at Jaccard >= 0.8 (k = 3 / the LSH setting)")
        ax.set_title(f"Time vs F1, {s} ({r['n']:,} documents)")
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(reserve(out / "time_vs_f1.png"), format="png", dpi=110)
        plt.close(fig)
        written.append("time_vs_f1.png")
    return written


# -- the fingerprint-only table (benches/results/fingerprint.md) ------------------------------------


def fingerprint_table(args: argparse.Namespace) -> str:
    """Fingerprinting speed of neardup (one core, all cores, kernel only) against pure Python and
    the `simhash` package on the Debian corpus, best of --repeat runs; slow baselines on --sample."""
    import neardup
    import pure_python
    import synth

    source = synth.debian_source(args.data)
    corpus_name = (
        "Debian package descriptions"
        if source != synth.DEBIAN_SAMPLE
        else f"Debian package descriptions ({source.name}, the sample that ships with neardup)"
    )
    _, docs = read_corpus(source)
    sample = docs[: args.sample]
    size, sample_size = sum(len(d.encode()) for d in docs), sum(len(d.encode()) for d in sample)
    hasher, raw = neardup.Simhasher(), neardup.Simhasher(unicode_form=None, casefold=False)
    normalized = [hasher.normalize(d) for d in docs]
    assert np.array_equal(hasher.fingerprint_many(docs), raw.fingerprint_many(normalized))
    assert [pure_python.fingerprint(d) for d in sample[:500]] == hasher.fingerprint_many(
        sample[:500]
    ).tolist()
    rows = [
        (
            "pure Python, same algorithm",
            len(sample),
            sample_size,
            best_of(1, lambda: [pure_python.fingerprint(d) for d in sample]),
        )
    ]
    try:
        from simhash import Simhash

        rows.append(
            (
                "simhash (PyPI), its defaults",
                len(sample),
                sample_size,
                best_of(1, lambda: [Simhash(d).value for d in sample]),
            )
        )
    except ImportError:
        print("simhash not installed: pip install simhash", file=sys.stderr)
    for label, threads in (("one core", 1), (f"all cores ({os.cpu_count()})", None)):
        for what, h, texts in (
            ("fingerprint_many (normalization included)", hasher, docs),
            ("kernel only (normalized text)", raw, normalized),
        ):
            if threads == 1:
                cmd = [
                    sys.executable,
                    __file__,
                    "--pin",
                    "--one-core",
                    "kernel" if h is raw else "e2e",
                    "--data",
                    str(args.data),
                    "--repeat",
                    str(args.repeat),
                ]
                seconds = float(
                    subprocess.run(cmd, check=True, capture_output=True, text=True)
                    .stdout.strip()
                    .splitlines()[-1]
                )
            else:
                seconds = best_of(args.repeat, lambda: h.fingerprint_many(texts))  # noqa: B023 (called at once)
            rows.append((f"neardup {what}, {label}", len(docs), size, seconds))
    base_rate = rows[0][1] / rows[0][3]
    lines = [
        "# Fingerprinting speed",
        "",
        f"Corpus: {corpus_name}, {len(docs)} documents, {size / 1e6:.1f} MB (slow baselines on the first "
        f"{len(sample)}). Settings: `Simhasher()` defaults.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, neardup {neardup.__version__}. "
        f"Best of {args.repeat} runs.",
        f"Command: `python benches/compare.py --fingerprint-md benches/results/fingerprint.md` ({time.strftime('%Y-%m-%d')}); "
        "`python benches/compare.py --out DIR` runs the whole peer comparison.",
        "",
        "| what | documents/s | MB/s | vs pure Python |",
        "|---|---|---|---|",
    ]
    for name, n_docs, n_bytes, seconds in rows:
        lines.append(
            f"| {name} | {n_docs / seconds:,.0f} | {n_bytes / seconds / 1e6:.1f} | {n_docs / seconds / base_rate:,.0f}x |"
        )
    return "\n".join(lines) + "\n"


def one_core(args: argparse.Namespace) -> None:
    import neardup
    import synth

    _, docs = read_corpus(synth.debian_source(args.data))
    hasher = neardup.Simhasher()
    if args.one_core == "kernel":
        docs = [hasher.normalize(d) for d in docs]
        hasher = neardup.Simhasher(unicode_form=None, casefold=False)
    print(best_of(args.repeat, lambda: hasher.fingerprint_many(docs, threads=1)))


# -- main --------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, help="folder for report.md and the PNG plots")
    ap.add_argument(
        "--sizes",
        default="debian,100k,1m",
        help="comma-separated: debian, 100k, 1m, 10m (default %(default)s)",
    )
    ap.add_argument(
        "--peers",
        default=",".join(PEER_NAMES),
        help="comma-separated peers (default: all of %(default)s)",
    )
    ap.add_argument("--methods", help="comma-separated method names, instead of whole peers")
    ap.add_argument("--quick", action="store_true", help="debian only, a 60 s budget, 200 queries")
    ap.add_argument(
        "--budget",
        type=float,
        default=600,
        help="seconds one method may take at one size (default %(default)s)",
    )
    ap.add_argument(
        "--queries",
        type=int,
        default=2000,
        help="queries timed against each index (default %(default)s)",
    )
    ap.add_argument(
        "--sample", type=int, default=3000, help="documents the pure-Python baseline fingerprints"
    )
    ap.add_argument(
        "--brute-max", type=int, default=200_000, help="largest corpus checked by numpy brute force"
    )
    ap.add_argument(
        "--data", type=Path, default=DATA, help="folder of the Debian corpus and its truth"
    )
    ap.add_argument(
        "--benchdata", type=Path, default=BENCHDATA, help="folder of the synthetic corpora"
    )
    ap.add_argument("--corpus", type=Path, help="also run on this JSONL corpus")
    ap.add_argument(
        "--truth", type=Path, help="its truth (gzipped TSV id_a, id_b, jaccard with a header)"
    )
    ap.add_argument(
        "--simhash-pybind",
        dest="simhash_pybind",
        help="folder simhash-pybind is installed in (pip --target)",
    )
    ap.add_argument(
        "--python-simhash",
        dest="python_simhash",
        help="folder python-simhash is installed in (pip --target)",
    )
    ap.add_argument(
        "--replot",
        action="store_true",
        help="write report.md and the plots again from DIR/results.json, measuring nothing",
    )
    ap.add_argument(
        "--fingerprint-md", type=Path, help="only the fingerprint-speed table, written to this file"
    )
    ap.add_argument("--repeat", type=int, default=5, help=argparse.SUPPRESS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--one-core", help=argparse.SUPPRESS)
    ap.add_argument("--pin", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--ref-fps", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--started", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.one_core:
        return one_core(args)
    from neardup.io import Outputs

    if args.replot and args.out is None:
        ap.error("--replot needs --out DIR (the folder of results.json)")
    if args.fingerprint_md or args.out is None:
        # Without --out: the fingerprint-speed table alone, printed (what this script did first).
        text = fingerprint_table(args)
        print(text)
        if args.fingerprint_md is None:
            return
        with Outputs() as outputs:
            tmp = outputs.reserve(str(args.fingerprint_md))
            Path(tmp).write_text(text, encoding="utf-8")
            outputs.commit()
        return
    if args.replot:
        try:
            saved = json.loads((args.out / "results.json").read_text(encoding="utf-8"))
            scales_saved, meta = saved["scales"], saved["meta"]
        except (OSError, ValueError, KeyError) as err:
            ap.error(f"--replot: cannot read {args.out / 'results.json'}: {err!r}")
        write_report(args.out, scales_saved, meta)
        return
    if args.quick:
        if "--sizes" not in sys.argv:
            args.sizes = "debian"
        args.budget, args.queries = min(args.budget, 60), min(args.queries, 200)
    if args.methods:
        unknown = set(args.methods.split(",")) - set(BY_NAME)
        if unknown:
            ap.error(f"unknown methods: {', '.join(sorted(unknown))} (known: {', '.join(BY_NAME)})")
        methods = [BY_NAME[n] for n in args.methods.split(",")]
    else:
        peers = {p.strip() for p in args.peers.split(",") if p.strip()}
        unknown = peers - set(PEER_NAMES)
        if unknown:
            ap.error(
                f"unknown peers: {', '.join(sorted(unknown))} (known: {', '.join(PEER_NAMES)})"
            )
        methods = [m for m in METHODS if m.peer == "neardup" or m.peer in peers]
    scales, missing = resolve_scales(args, ap)
    skipped = []
    why_not: dict[str, str | None] = {}
    for m in list(methods):
        why = why_not[m.peer] = why_not[m.peer] if m.peer in why_not else installed(m, args)
        if why:
            print(f"{m.name}: {why}: skipped", flush=True)
            skipped.append(f"`{m.name}`: {why}")
            methods.remove(m)
    skipped += missing
    for note in missing:
        print(note, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    history: dict[str, tuple[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="neardup-compare-") as tmp:
        for scale in scales:
            results[scale.name] = run_scale(scale, methods, args, history, Path(tmp))
            results[scale.name]["has_truth"] = scale.truth is not None or scale.exact
    import neardup

    meta = {
        "command": "python benches/compare.py "
        + " ".join(a if a and " " not in a else repr(a) for a in sys.argv[1:]),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{machine()}; neardup {neardup.__version__}",
        "skipped": skipped,
    }
    print(write_report(args.out, results, meta))


def write_report(out: Path, results: dict[str, dict], meta: dict[str, Any]) -> str:
    """Writes report.md, the plots and results.json (what --replot reads) into ``out``, atomically."""
    from neardup.io import Outputs

    with Outputs() as outputs:
        written = plots(results, out, lambda p: outputs.reserve(str(p)))
        text = report(results, meta) + "".join(f"\n![{p}]({p})\n" for p in written)
        Path(outputs.reserve(str(out / "report.md"))).write_text(text, encoding="utf-8")
        saved = json.dumps({"meta": meta, "scales": results}, indent=1, default=float)
        Path(outputs.reserve(str(out / "results.json"))).write_text(saved, encoding="utf-8")
        outputs.commit()
    return text


if __name__ == "__main__":
    main()
