import gzip
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# In CI, property tests draw the same examples every run (a red run can be replayed, a green one
# cannot turn red by luck), and a slow shared machine does not fail them for slow data generation.
settings.register_profile(
    "ci",
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Hugging Face datasets (test_ecosystem.py, the README's example) must never reach the network.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data" / "debian-descriptions.jsonl.gz"
SAMPLE = ROOT / "python" / "neardup" / "data" / "debian-sample.jsonl.gz"


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    """Real texts: the shared Debian corpus when it is beside the project, else the shipped sample."""
    path = SHARED_DATA if SHARED_DATA.exists() else SAMPLE
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]
