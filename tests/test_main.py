"""`python -m neardup` is the `neardup` command, and the README's first command runs on the
sample that ships with the package."""

import gzip
import json
import re
import subprocess
import sys
from importlib import metadata, resources
from pathlib import Path

import numpy as np
import pytest

import neardup
import reference


def _sample_texts() -> list[str]:
    with resources.files("neardup").joinpath("data/debian-sample.jsonl.gz").open("rb") as raw:
        return [json.loads(line)["text"] for line in gzip.open(raw, "rt", encoding="utf-8")]


def _stars(d: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Greedy stars in row order by brute force: each row not yet removed is kept and removes
    every later free row marked in its row of ``near``."""
    n = len(d)
    kept = np.full(n, -1)
    for c in range(n):
        if kept[c] == -1:
            free = (kept == -1) & near[c]
            free[c] = True
            kept[free] = c
    return kept


@pytest.mark.parametrize("verified", [False, True])
def test_sample_dry_run_reports_the_brute_force_stars(verified):
    k = 8 if verified else 3
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup",
            "dedup",
            "--sample",
            "--dry-run",
            "--json",
            # Verified: fingerprint candidates, whose pairs within k the brute force below takes.
            *(["--candidates", "fingerprint"] if verified else ["--no-verify"]),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(result.stdout)
    texts = _sample_texts()
    assert len(texts) == 3000 == report["documents"] and report["k"] == k
    fps = neardup.Simhasher().fingerprint_many(texts)
    assert (fps != 0).all()  # every text has features: copies need no special case here
    # Brute force: every pair's distance with numpy's popcount; with verification, the exact
    # word-3-shingle Jaccard of every pair within k, from the reference tokenizer.
    d = np.bitwise_count(fps[:, None] ^ fps[None, :])
    near = d <= k
    if verified:
        shingles = [set(reference.features(reference.normalize(t), "word", 3)) for t in texts]
        for a, b in zip(*np.nonzero(np.triu(near, 1))):
            x, y = shingles[a], shingles[b]
            near[a, b] = near[b, a] = len(x & y) >= 0.8 * len(x | y)
    kept = _stars(d, near)
    removed = kept != np.arange(len(texts))
    assert report["removed"] == int(removed.sum())
    assert (
        report["clusters"] == len(np.unique(kept[removed])) > 100
    )  # the sample holds templated families


def test_console_script_is_the_module_command():
    (script,) = [e for e in metadata.entry_points(group="console_scripts") if e.name == "neardup"]
    assert script.value == "neardup.__main__:main"
    help_text = subprocess.run(
        [sys.executable, "-m", "neardup", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in ("dedup", "fingerprint", "pairs", "index", "plan", "explain"):
        assert command in help_text


def test_the_readme_first_command_runs_on_the_sample(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Install.*?```bash\n(.*?)```", readme, flags=re.S).group(1)
    command = [
        line.split("#")[0].split() for line in block.splitlines() if line.startswith("neardup ")
    ][0]
    assert command[:3] == ["neardup", "dedup", "--sample"]
    result = subprocess.run(
        [sys.executable, "-m", "neardup", *command[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "3,000 documents" in result.stdout and "removed" in result.stdout
    outputs = [a for a in command if "." in a and not a.startswith("-")]
    assert outputs and all((tmp_path / name).stat().st_size > 0 for name in outputs)
