"""`python -m neardup`, the README's first command, on the sample that ships with the package."""

import gzip
import json
import re
import subprocess
import sys
from importlib import resources

import numpy as np

import neardup


def test_sample_demo_reports_every_pair_within_k():
    result = subprocess.run([sys.executable, "-m", "neardup", "--k", "3"], capture_output=True, text=True, check=True)
    reported = int(re.search(r"(\d+) near-duplicate pairs within k=3", result.stdout).group(1))
    with resources.files("neardup").joinpath("data/debian-sample.jsonl.gz").open("rb") as raw:
        texts = [json.loads(line)["text"] for line in gzip.open(raw, "rt", encoding="utf-8")]
    assert len(texts) == 3000
    fps = neardup.Simhasher().fingerprint_many(texts)
    # Brute force: every pair's distance with numpy's popcount.
    d = np.bitwise_count(fps[:, None] ^ fps[None, :])
    assert reported == int((np.triu(d <= 3, 1)).sum())
    assert reported > 100  # the sample holds families of templated descriptions
