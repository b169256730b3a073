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

import neardup


def _sample_texts() -> list[str]:
    with resources.files("neardup").joinpath("data/debian-sample.jsonl.gz").open("rb") as raw:
        return [json.loads(line)["text"] for line in gzip.open(raw, "rt", encoding="utf-8")]


def _components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cluster labels (smallest member) by plain union-find over the pairs."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(i.tolist(), j.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(x) for x in range(n)])


def test_sample_dry_run_reports_the_brute_force_clusters():
    result = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", "--sample", "--dry-run", "--json", "--k", "3"],
        capture_output=True, text=True, check=True,
    )
    report = json.loads(result.stdout)
    texts = _sample_texts()
    assert len(texts) == 3000 == report["documents"]
    fps = neardup.Simhasher().fingerprint_many(texts)
    # Brute force: every pair's distance with numpy's popcount, then union-find.
    d = np.bitwise_count(fps[:, None] ^ fps[None, :])
    i, j = np.nonzero(np.triu(d <= 3, 1))
    labels = _components(len(texts), i, j)
    sizes = np.bincount(labels)
    assert report["clusters"] == int((sizes >= 2).sum()) > 100  # the sample holds templated families
    assert report["removed"] == len(texts) - int((sizes > 0).sum())


def test_console_script_is_the_module_command():
    (script,) = [e for e in metadata.entry_points(group="console_scripts") if e.name == "neardup"]
    assert script.value == "neardup.cli:main"
    help_text = subprocess.run([sys.executable, "-m", "neardup", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("dedup", "fingerprint", "pairs", "index", "plan", "explain"):
        assert command in help_text


def test_the_readme_first_command_runs_on_the_sample(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Install.*?```bash\n(.*?)```", readme, flags=re.S).group(1)
    command = [line.split("#")[0].split() for line in block.splitlines() if line.startswith("neardup ")][0]
    assert command[:3] == ["neardup", "dedup", "--sample"]
    result = subprocess.run([sys.executable, "-m", "neardup", *command[1:]], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "3000 documents" in result.stdout and "removed" in result.stdout
    outputs = [a for a in command if "." in a and not a.startswith("-")]
    assert outputs and all((tmp_path / name).stat().st_size > 0 for name in outputs)
