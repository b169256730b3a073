import gzip
import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "debian-descriptions.jsonl.gz"


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]
