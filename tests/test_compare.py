"""benches/compare.py end to end on a tiny corpus made here, with a truth computed here by brute force."""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import neardup
from brute import pairs as brute_pairs

ROOT = Path(__file__).resolve().parent.parent
COMPARE = ROOT / "benches" / "compare.py"
SAMPLE = ROOT / "python" / "neardup" / "data" / "debian-sample.jsonl.gz"
# One configuration of each peer, so that the run stays short; the uninstalled ones are skipped.
METHODS = [
    "neardup",
    "pure-python",
    "simhash-matched",
    "simhash-pybind-matched",
    "python-simhash-matched",
    "gaoya-minhash-w3",
    "datasketch-w3",
    "rensa-w3",
]
PROBES = {
    "simhash-matched": "Simhash",
    "simhash-pybind-matched": "find_all",
    "python-simhash-matched": "simhash_parallel",
}


def shingle_set(text: str) -> set[str]:
    """Word 3-shingles of the lowercased text (a text of fewer than three words is one shingle)."""
    words = re.findall(r"\w+", text.lower())
    if len(words) < 3:
        return {" ".join(words)}
    return {" ".join(words[i : i + 3]) for i in range(len(words) - 2)}


@pytest.fixture(scope="module")
def tiny(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, list[str], dict[tuple[int, int], float]]:
    """240 Debian descriptions and 80 edited copies (one to four words changed), with every pair
    of Jaccard >= 0.5 found by comparing all pairs."""
    rng = random.Random(7)
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(240), f)]
    for _ in range(80):
        words = rng.choice(texts[:240]).split()
        for _ in range(rng.randint(1, 4)):
            words[rng.randrange(len(words))] = rng.choice(["foo", "bar", "tool", "data"])
        texts.append(" ".join(words))
    folder = tmp_path_factory.mktemp("tiny")
    corpus, truth_path = folder / "tiny.jsonl", folder / "tiny-truth.tsv.gz"
    ids = [f"doc{i}" for i in range(len(texts))]
    corpus.write_text(
        "".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in zip(ids, texts)),
        encoding="utf-8",
    )
    sets = [shingle_set(t) for t in texts]
    truth = {}
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            jac = len(sets[i] & sets[j]) / len(sets[i] | sets[j])
            if jac >= 0.5:
                truth[(i, j)] = jac
    with gzip.open(truth_path, "wt", encoding="utf-8") as f:
        f.write("id_a\tid_b\tjaccard\n")
        f.writelines(f"{ids[i]}\t{ids[j]}\t{jac:.6f}\n" for (i, j), jac in truth.items())
    return corpus, truth_path, texts, truth


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(COMPARE), *args], capture_output=True, text=True, timeout=120
    )


def table_row(report: str, label_start: str) -> list[str]:
    line = next(line for line in report.splitlines() if line.startswith(f"| {label_start}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def installed(method: str) -> bool:
    module = (
        "simhash"
        if method in PROBES
        else {"gaoya-minhash-w3": "gaoya", "datasketch-w3": "datasketch", "rensa-w3": "rensa"}.get(
            method, "neardup"
        )
    )
    if importlib.util.find_spec(module) is None:
        return False
    if method in PROBES:
        probe = f"import simhash, sys; sys.exit(0 if hasattr(simhash, {PROBES[method]!r}) else 1)"
        return subprocess.run([sys.executable, "-c", probe]).returncode == 0
    return True


def test_compare_end_to_end_on_a_tiny_corpus(tiny, tmp_path: Path) -> None:
    corpus, truth_path, texts, truth = tiny
    out = tmp_path / "report"
    done = run(
        "--out",
        str(out),
        "--sizes",
        "",
        "--corpus",
        str(corpus),
        "--truth",
        str(truth_path),
        "--quick",
        "--methods",
        ",".join(METHODS),
        "--simhash-pybind",
        str(tmp_path / "none"),
        "--python-simhash",
        str(tmp_path / "none"),
    )
    assert done.returncode == 0, done.stderr
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# neardup beside its peers")
    assert "## Targets" in report

    # neardup's row: its pairs at k=3 and their scores, recomputed here from brute-force distances.
    fps = neardup.Simhasher().fingerprint_many(texts)
    found = {(i, j) for i, j, _ in brute_pairs(fps, 3)}
    strong = {p for p, jac in truth.items() if jac >= 0.8}
    tp = len(found & strong)
    precision, recall = tp / len(found), tp / len(strong)
    f1 = 2 * precision * recall / (precision + recall)
    similar = len(found & set(truth)) / len(found)
    row = table_row(report, "neardup Simhasher()")
    assert row[8:13] == [
        f"{len(found):,}",
        f"{precision:.3f}",
        f"{recall:.3f}",
        f"{f1:.3f}",
        f"{similar:.3f}",
    ]
    assert f"numpy brute force, k=3, neardup's fingerprints): {len(found):,} pairs" in report
    assert (
        "neardup.find_all" in report
        and "same pairs: yes" in report
        and "same pairs: NO" not in report
    )
    assert row[0] and float(row[6]) > 0  # peak MB of a real process

    # Every installed peer has its row, every other one is named under "Not run" with the reason.
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))["scales"]["tiny"][
        "methods"
    ]
    for method in METHODS:
        if installed(method):
            assert method in results, method
            assert results[method]["documents"] == len(texts)
        else:
            assert method not in results
            assert re.search(rf"- `{re.escape(method)}`: .* is not installed", report), method
    assert results["pure-python"]["phases"]["fingerprint"] > 0
    if importlib.util.find_spec("matplotlib") is not None:
        png = out / "throughput.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "![throughput.png](throughput.png)" in report
    assert not list(out.glob(".*neardup-tmp"))  # outputs renamed into place, no temporary left

    # --replot writes the same report again from results.json, measuring nothing.
    (out / "report.md").unlink()
    assert run("--out", str(out), "--replot").returncode == 0
    assert (out / "report.md").read_text(encoding="utf-8") == report


def test_compare_refuses_an_unknown_size_or_peer(tmp_path: Path) -> None:
    for option, value, message in (
        ("--sizes", "7k", "unknown size '7k'"),
        ("--peers", "nope", "unknown peers: nope"),
    ):
        done = run("--out", str(tmp_path), option, value)
        assert done.returncode == 2
        assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "report.md").exists()
