import gzip
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data" / "debian-descriptions.jsonl.gz"
SAMPLE = ROOT / "python" / "neardup" / "data" / "debian-sample.jsonl.gz"


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    """Real texts: the shared Debian corpus when it is beside the project, else the shipped sample."""
    path = SHARED_DATA if SHARED_DATA.exists() else SAMPLE
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]
